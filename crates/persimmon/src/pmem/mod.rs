//! The pmem layer: the only code that maps the pool and writes into it.
//!
//! Public outside the crate: the durability level, the observer hook and the
//! persistence counters. The mapping itself (`PmemFile`) is crate-private:
//! its safe methods rely on the engine's protocols for exclusive ranges.
//!
//! Everything above this module names pool locations by [`PmOffset`]-style
//! `u64` offsets and goes through the methods here to store, flush and fence.
//! That single door is what lets the crash simulator (a [`PersistObserver`])
//! see every persist, and what keeps all `unsafe` of the engine in one place.
//!
//! Invariants:
//! - The mapping starts at a fixed address for the life of the `PmemFile`:
//!   address space for `reserved_bytes` is reserved at open (`PROT_NONE`), and
//!   growth maps new file space *in place* after the current end, so offsets
//!   and references handed out earlier stay valid while the pool grows.
//! - `mapped_bytes` only grows, and only after the new range is mapped; every
//!   access is bounds-checked against it.
//! - A byte range returned by [`PmemFile::slice`] is only read; the engine's
//!   protocols (append-only records, epoch-protected reuse) guarantee no one
//!   writes it while the view is alive.
//! - Durability: after `write*` + `flush` of a range and a later `fence` on
//!   the same thread, the range is in the persistence domain — at once on
//!   persistent memory and tmpfs; in [`Durability::Disk`] once the
//!   write-ahead log is synced past the fence's record ([`wal`]), which
//!   [`PmemFile::durable_point`] waits for; for [`Durability::Msync`] (a
//!   mapped file without a log), `fence` runs `msync` on the ranges flushed
//!   since the last fence.
//! - In the disk domain the mapping is private: no store reaches the pool
//!   file except through the log's applier (the write-ahead rule).

mod close_sweep;
pub mod counters;
pub(crate) mod cpu;
pub mod wal;

use std::cell::RefCell;
use std::fs::File;
use std::os::fd::AsRawFd;
use std::ptr::NonNull;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
pub use counters::{process_counters, thread_counters, PmemCounters};
pub(crate) use cpu::{FlushInstruction, NtCopy, CACHE_LINE_BYTES};

/// Writes at least this long go through non-temporal stores.
pub(crate) const NT_THRESHOLD_BYTES: usize = 256;

/// How far a persisted write survives.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Durability {
    /// DAX mapping with `MAP_SYNC` (or eADR): flushed data survives power loss.
    PowerFail,
    /// A pool on an ordinary file system: fences go to a write-ahead log
    /// ([`wal`]), and a write is durable (it survives power loss) once its
    /// call returns, which waits for a sync of the log shared with every
    /// concurrent writer.
    Disk,
    /// tmpfs or page cache: data survives a process crash, not power loss.
    ProcessCrash,
    /// A mapped file without a log on an ordinary file system (a PDV file):
    /// every fence runs `msync`, so data survives power loss (slowly).
    Msync,
}

impl Durability {
    pub fn name(self) -> &'static str {
        match self {
            Durability::PowerFail => "power-fail",
            Durability::Disk => "disk",
            Durability::ProcessCrash => "process-crash",
            Durability::Msync => "msync",
        }
    }

    /// What a write acknowledged in this domain survives, in a few words.
    pub fn survives(self) -> &'static str {
        match self {
            Durability::PowerFail | Durability::Disk | Durability::Msync => {
                "a process crash and power loss"
            }
            Durability::ProcessCrash => "a process crash, not power loss or a reboot",
        }
    }
}

/// Sees every store, flush and fence the engine issues on one pool.
///
/// The crash simulator implements this to keep a model of what is durable.
/// Offsets are pool offsets; `data` is what was just stored there.
pub trait PersistObserver: Send + Sync {
    /// A regular (cached) store of `data` at `offset`.
    fn store(&self, offset: u64, data: &[u8]);
    /// A non-temporal store of `data` at `offset` (durable at the next fence).
    fn nt_store(&self, offset: u64, data: &[u8]);
    /// A write-back of the cache line containing `offset`.
    fn flush(&self, offset: u64);
    /// A store fence.
    fn fence(&self);
}

/// A pool file mapped into memory.
pub(crate) struct PmemFile {
    file: File,
    base: NonNull<u8>,
    reserved_bytes: u64,
    mapped_bytes: AtomicU64,
    grow_lock: parking_lot::Mutex<()>,
    durability: Durability,
    map_sync: bool,
    flush: FlushInstruction,
    nt: NtCopy,
    observer: Option<Arc<dyn PersistObserver>>,
    /// DRAM, not a pool: flushes and fences do nothing and nothing is
    /// counted as persistent-memory traffic (see [`PmemFile::volatile`]).
    volatile: bool,
    /// The disk domain's log: fences append the flushed lines to it.
    wal: Option<Arc<wal::Wal>>,
}

// SAFETY: the raw base pointer refers to a shared file mapping that lives as
// long as `self`; all mutation goes through atomics or through ranges whose
// exclusive use the engine's protocols guarantee (see module invariants).
unsafe impl Send for PmemFile {}
// SAFETY: as above; concurrent access is to disjoint ranges or via atomics.
unsafe impl Sync for PmemFile {}

const TMPFS_MAGIC: i64 = 0x0102_1994;
const PAGE_BYTES: u64 = 4096;

thread_local! {
    /// Page ranges flushed since this thread's last fence (msync durability).
    static MSYNC_PENDING: RefCell<Vec<(usize, usize)>> = const { RefCell::new(Vec::new()) };
    /// Disk domain: (log, line offset) of the lines this thread flushed
    /// since its last fence on that log.
    static LINES_PENDING: RefCell<Vec<(usize, u64)>> = const { RefCell::new(Vec::new()) };
    /// This thread's writes return before they are durable: whoever
    /// acknowledges them waits (see [`defer_durability_waits`]).
    static DEFER_WAITS: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// Makes the engine calls of this thread return without waiting for their
/// writes to be durable (in the disk domain; elsewhere they are durable
/// when stored). A thread that calls this takes the duty over: before it
/// acknowledges a write to anyone, it waits for the log (`Db::durable`).
/// The RESP server's worker threads do, so that one connection's wait does
/// not stall the others on its thread.
pub fn defer_durability_waits(defer: bool) {
    DEFER_WAITS.with(|d| d.set(defer));
}

/// How a pool file is to be kept durable, from where it lives: `MAP_SYNC`
/// (DAX) or eADR is persistent memory, tmpfs is process-crash, any other
/// file system is the disk domain.
pub(crate) fn detect_durability(file: &File, eadr: bool) -> Durability {
    let fd = file.as_raw_fd();
    if probe_map_sync(fd) || eadr {
        Durability::PowerFail
    } else if is_tmpfs(fd) {
        Durability::ProcessCrash
    } else {
        Durability::Disk
    }
}

impl PmemFile {
    /// Maps `file` (already locked and validated by the caller) with address
    /// space reserved for `reserve_bytes`, kept durable as `durability` says
    /// (a `Disk` file with `wal`, its log; without one, `Disk` means msync).
    pub fn map(
        file: File,
        reserve_bytes: u64,
        durability: Durability,
        wal: Option<Arc<wal::Wal>>,
        observer: Option<Arc<dyn PersistObserver>>,
    ) -> Result<PmemFile> {
        let file_len = file
            .metadata()
            .map_err(|e| Error::io("stat pool file", e))?
            .len();
        let reserve = reserve_bytes.max(file_len).div_ceil(PAGE_BYTES) * PAGE_BYTES;
        let fd = file.as_raw_fd();
        // SAFETY: anonymous PROT_NONE reservation; no memory is touched.
        let base = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                reserve as usize,
                libc::PROT_NONE,
                libc::MAP_PRIVATE | libc::MAP_ANONYMOUS | libc::MAP_NORESERVE,
                -1,
                0,
            )
        };
        if base == libc::MAP_FAILED {
            return Err(Error::io(
                format!("reserve {reserve} bytes of address space"),
                std::io::Error::last_os_error(),
            ));
        }
        let base = NonNull::new(base as *mut u8).expect("mmap returned null");
        let map_sync = durability == Durability::PowerFail && probe_map_sync(fd);
        let durability = match (durability, &wal) {
            (Durability::Disk, None) => Durability::Msync,
            (d, _) => d,
        };
        debug_assert!(wal.is_none() || durability == Durability::Disk);
        let eadr = durability == Durability::PowerFail && !map_sync;
        let pm = PmemFile {
            file,
            base,
            reserved_bytes: reserve,
            mapped_bytes: AtomicU64::new(0),
            grow_lock: parking_lot::Mutex::new(()),
            durability,
            map_sync,
            flush: if eadr {
                FlushInstruction::None
            } else {
                cpu::detect_flush()
            },
            nt: cpu::detect_nt(),
            observer,
            volatile: false,
            wal,
        };
        pm.map_range(0, file_len)?;
        pm.mapped_bytes.store(file_len, Ordering::Release);
        Ok(pm)
    }

    /// Growable DRAM with the same interface (an anonymous memory file,
    /// `memfd`): for structures that live in DRAM but are addressed like
    /// pool memory (the DRAM point index). Its flushes and fences are no-ops
    /// and it is invisible to observers and counters; nothing in it
    /// survives the process.
    pub fn volatile(name: &str, reserve_bytes: u64) -> Result<PmemFile> {
        let cname = std::ffi::CString::new(name).expect("memfd name without NUL");
        // SAFETY: plain syscall; the returned descriptor is owned below.
        let fd = unsafe { libc::memfd_create(cname.as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(Error::io(
                format!("create the in-memory file {name}"),
                std::io::Error::last_os_error(),
            ));
        }
        // SAFETY: `fd` is a fresh descriptor nobody else owns.
        let file = unsafe { <File as std::os::fd::FromRawFd>::from_raw_fd(fd) };
        let mut pm = PmemFile::map(file, reserve_bytes, Durability::PowerFail, None, None)?;
        pm.volatile = true;
        pm.flush = FlushInstruction::None;
        Ok(pm)
    }

    fn map_range(&self, from: u64, to: u64) -> Result<()> {
        if to <= from {
            return Ok(());
        }
        let flags = if self.map_sync {
            libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC | libc::MAP_FIXED
        } else if self.wal.is_some() {
            // The write-ahead rule: only the log's applier writes the file.
            libc::MAP_PRIVATE | libc::MAP_FIXED
        } else {
            libc::MAP_SHARED | libc::MAP_FIXED
        };
        // SAFETY: `from..to` lies inside our reservation (checked by callers
        // against `reserved_bytes`) and is currently PROT_NONE, so MAP_FIXED
        // replaces only our own reservation, never memory in use.
        let p = unsafe {
            libc::mmap(
                self.base.as_ptr().add(from as usize) as *mut libc::c_void,
                (to - from) as usize,
                libc::PROT_READ | libc::PROT_WRITE,
                flags,
                self.file.as_raw_fd(),
                from as libc::off_t,
            )
        };
        if p == libc::MAP_FAILED {
            return Err(Error::io(
                format!("map pool bytes {from}..{to}"),
                std::io::Error::last_os_error(),
            ));
        }
        Ok(())
    }

    /// Extends the file to `new_len` bytes and maps the new part in place.
    /// Readers of the existing part are never paused. Returns the new length.
    pub fn grow(&self, new_len: u64) -> Result<u64> {
        let _g = self.grow_lock.lock();
        let old = self.len();
        if new_len <= old {
            return Ok(old);
        }
        if new_len > self.reserved_bytes {
            return Err(Error::InvalidOptions(format!(
                "cannot grow pool to {new_len} bytes: only {} bytes of address space reserved",
                self.reserved_bytes
            )));
        }
        // SAFETY: plain syscall on our own descriptor.
        let rc = unsafe {
            libc::posix_fallocate(
                self.file.as_raw_fd(),
                old as libc::off_t,
                (new_len - old) as libc::off_t,
            )
        };
        if rc != 0 {
            // Give back anything half-allocated so the file stays a whole
            // number of segments.
            let _ = self.file.set_len(old);
            return Err(Error::io(
                format!("extend pool file from {old} to {new_len} bytes"),
                std::io::Error::from_raw_os_error(rc),
            ));
        }
        if let Some(wal) = &self.wal {
            wal.pool_resized(new_len);
        }
        self.map_range(old, new_len)?;
        self.mapped_bytes.store(new_len, Ordering::Release);
        Ok(new_len)
    }

    /// The mapped file's metadata (from its descriptor, not its path).
    pub fn metadata(&self) -> std::io::Result<std::fs::Metadata> {
        self.file.metadata()
    }

    /// Bytes currently mapped (the file length).
    #[inline]
    pub fn len(&self) -> u64 {
        self.mapped_bytes.load(Ordering::Acquire)
    }

    pub fn durability(&self) -> Durability {
        self.durability
    }

    pub fn flush_instruction(&self) -> FlushInstruction {
        self.flush
    }

    pub fn nt_copy(&self) -> NtCopy {
        self.nt
    }

    #[inline(always)]
    fn check(&self, offset: u64, len: usize) {
        let end = offset.checked_add(len as u64);
        assert!(
            matches!(end, Some(e) if e <= self.len()),
            "pmem access {offset:#x}+{len} outside the mapped {} bytes",
            self.len()
        );
    }

    /// The address of pool offset `offset` in this process.
    ///
    /// # Safety
    /// `offset` must be at most the mapped length (`self.len()`), so that the
    /// pointer stays inside the reservation (`add` must not leave it). What
    /// the caller then does through the pointer needs its own argument.
    #[inline(always)]
    unsafe fn ptr(&self, offset: u64) -> *mut u8 {
        debug_assert!(offset <= self.len(), "pointer past the mapping");
        // SAFETY: the caller guarantees `offset` lies within the reservation.
        unsafe { self.base.as_ptr().add(offset as usize) }
    }

    /// A read-only view of `len` bytes at `offset`, or a corruption error if
    /// the range is outside the pool (offsets read from media are untrusted).
    #[inline]
    pub fn slice(&self, offset: u64, len: usize) -> Result<&[u8]> {
        match offset.checked_add(len as u64) {
            Some(end) if end <= self.len() => {
                // SAFETY: in bounds of the live mapping, which outlives `&self`;
                // the engine never writes a range while views of it are live
                // (append-only records, epoch-deferred reuse).
                Ok(unsafe { std::slice::from_raw_parts(self.ptr(offset), len) })
            }
            _ => Err(Error::corruption(
                offset,
                format!("range of {len} bytes runs past the pool end {}", self.len()),
            )),
        }
    }

    /// Asks the CPU to bring the line holding `offset` into its caches
    /// (a hint: no effect on contents or durability; ignored past the end).
    #[inline(always)]
    pub fn prefetch(&self, offset: u64) {
        if offset >= self.len() {
            return;
        }
        #[cfg(target_arch = "x86_64")]
        // SAFETY: in bounds of the live mapping; a prefetch reads nothing
        // the program can observe.
        unsafe {
            use std::arch::x86_64::{_mm_prefetch, _MM_HINT_T0};
            _mm_prefetch::<_MM_HINT_T0>(self.ptr(offset) as *const i8);
        }
    }

    /// The 8-byte word at `offset` (8-aligned) as an atomic.
    #[inline(always)]
    fn atomic(&self, offset: u64) -> &AtomicU64 {
        self.check(offset, 8);
        assert!(offset.is_multiple_of(8), "unaligned atomic at {offset:#x}");
        // SAFETY: in bounds, 8-byte aligned (the mapping is page aligned) and
        // the mapping outlives `&self`; AtomicU64 has the layout of u64.
        unsafe { &*(self.ptr(offset) as *const AtomicU64) }
    }

    /// Atomic load (acquire) of the 8-byte word at `offset`.
    #[inline(always)]
    pub fn load_u64(&self, offset: u64) -> u64 {
        self.atomic(offset).load(Ordering::Acquire)
    }

    /// Atomic store (release) of an 8-byte word. Not durable until flushed
    /// and fenced.
    #[inline(always)]
    pub fn store_u64(&self, offset: u64, value: u64) {
        self.atomic(offset).store(value, Ordering::Release);
        if self.volatile {
            return;
        }
        counters::add_bytes(8, false);
        if let Some(o) = &self.observer {
            o.store(offset, &value.to_le_bytes());
        }
    }

    /// Compare-and-swap of an 8-byte word; `Ok(old)` when it was replaced.
    #[inline(always)]
    pub fn cas_u64(&self, offset: u64, current: u64, new: u64) -> Result<u64, u64> {
        let r =
            self.atomic(offset)
                .compare_exchange(current, new, Ordering::AcqRel, Ordering::Acquire);
        if r.is_ok() && !self.volatile {
            counters::add_bytes(8, false);
            if let Some(o) = &self.observer {
                o.store(offset, &new.to_le_bytes());
            }
        }
        r
    }

    /// Regular (cached) copy of `data` to `offset`. The range must not be
    /// visible to any reader yet. Not durable until flushed and fenced.
    #[inline]
    pub fn write(&self, offset: u64, data: &[u8]) {
        self.check(offset, data.len());
        // SAFETY: bounds checked; the engine writes only ranges it owns
        // exclusively (fresh log space or a slot it holds the lock for).
        unsafe { std::ptr::copy_nonoverlapping(data.as_ptr(), self.ptr(offset), data.len()) };
        if self.volatile {
            return;
        }
        counters::add_bytes(data.len() as u64, false);
        if let Some(o) = &self.observer {
            o.store(offset, data);
        }
    }

    /// Copies `data` to `offset` so that one [`fence`](Self::fence) makes it
    /// durable: non-temporal stores for writes of [`NT_THRESHOLD_BYTES`] and
    /// more, regular stores plus flushes below that.
    #[inline]
    pub fn write_persistent(&self, offset: u64, data: &[u8]) {
        // (The disk domain copies flushed lines into its log at the fence:
        // cached stores serve that copy better than non-temporal ones.)
        if data.len() < NT_THRESHOLD_BYTES
            || self.nt == NtCopy::Plain
            || self.volatile
            || self.wal.is_some()
        {
            self.write(offset, data);
            self.flush(offset, data.len());
            return;
        }
        self.check(offset, data.len());
        // SAFETY: bounds checked; exclusive range as for `write`.
        unsafe { cpu::nt_copy(self.nt, self.flush, self.ptr(offset), data) };
        counters::add_bytes(data.len() as u64, true);
        let head_tail_lines = lines_partial(offset, data.len());
        if self.flush != FlushInstruction::None {
            counters::add_flushes(head_tail_lines);
        }
        if let Some(o) = &self.observer {
            o.nt_store(offset, data);
        }
        self.note_msync(offset, data.len());
    }

    /// Writes `len` zero bytes at `offset` so that one fence makes them durable.
    pub fn zero_persistent(&self, offset: u64, len: usize) {
        const CHUNK: usize = 64 << 10;
        let zeros = [0u8; CHUNK];
        let mut done = 0;
        while done < len {
            let n = CHUNK.min(len - done);
            self.write_persistent(offset + done as u64, &zeros[..n]);
            done += n;
        }
    }

    /// Writes back every cache line of `offset..offset+len`.
    #[inline]
    pub fn flush(&self, offset: u64, len: usize) {
        if len == 0 || self.volatile {
            return;
        }
        self.check(offset, len);
        let first = offset & !(CACHE_LINE_BYTES as u64 - 1);
        let end = offset + len as u64;
        let mut line = first;
        let mut n = 0;
        while line < end {
            // SAFETY: every line start is inside the checked range's lines,
            // which are inside the page-granular mapping.
            unsafe { cpu::flush_line(self.flush, self.ptr(line)) };
            if let Some(o) = &self.observer {
                o.flush(line);
            }
            line += CACHE_LINE_BYTES as u64;
            n += 1;
        }
        if self.flush != FlushInstruction::None {
            counters::add_flushes(n);
        }
        self.note_msync(offset, len);
        if let Some(wal) = &self.wal {
            let id = Arc::as_ptr(wal) as usize;
            LINES_PENDING.with(|p| {
                let mut p = p.borrow_mut();
                let mut line = first;
                while line < end {
                    if p.last() != Some(&(id, line)) {
                        p.push((id, line));
                    }
                    line += CACHE_LINE_BYTES as u64;
                }
            });
        }
    }

    /// Store fence: everything flushed or stored non-temporally before it on
    /// this thread is durable after it (in the disk domain: once the log is
    /// synced past the record this fence appends; see
    /// [`durable_point`](Self::durable_point)).
    #[inline]
    pub fn fence(&self) {
        if self.volatile {
            return;
        }
        cpu::store_fence();
        counters::add_fence();
        if self.durability == Durability::Msync {
            self.run_msync();
        }
        if let Some(wal) = &self.wal {
            self.log_fence(wal);
        }
        if let Some(o) = &self.observer {
            o.fence();
        }
    }

    /// Disk domain: appends the lines this thread flushed since its last
    /// fence, as memory holds them now, to the log.
    fn log_fence(&self, wal: &Arc<wal::Wal>) {
        let id = Arc::as_ptr(wal) as usize;
        let mut lines: Vec<u64> = LINES_PENDING.with(|p| {
            let mut p = p.borrow_mut();
            let mut mine = Vec::new();
            p.retain(|&(w, line)| {
                if w == id {
                    mine.push(line);
                }
                w != id
            });
            mine
        });
        if lines.is_empty() {
            return;
        }
        lines.sort_unstable();
        lines.dedup();
        // An append that fails poisons the log: the wait at the end of the
        // call reports it.
        let _ = wal.append(&lines, |off, dst| {
            // SAFETY: `off` is a line start inside the mapping (it was
            // flushed, which bounds-checked it) and lines never shrink; the
            // copy may race other threads' stores to the line, which is the
            // early eviction the model allows (see `wal`'s invariants).
            unsafe {
                std::ptr::copy_nonoverlapping(self.ptr(off), dst.as_mut_ptr(), wal::LINE_BYTES)
            }
        });
    }

    /// Disk domain, at a clean close: appends the lines whose memory
    /// differs from the pool file once everything fenced is applied — the
    /// stores left unflushed on purpose (see `close_sweep`).
    fn log_unfenced_stores(&self, wal: &Arc<wal::Wal>) -> Result<()> {
        wal.settle()?;
        let len = self.len();
        let runs = close_sweep::written_pages(self.base.as_ptr(), len);
        // SAFETY: the first `len` bytes are mapped; no operation is in
        // flight at close, so nothing writes them while they are read.
        let memory = unsafe { std::slice::from_raw_parts(self.base.as_ptr(), len as usize) };
        let lines = close_sweep::changed_lines(&self.file, memory, &runs)
            .map_err(|e| Error::io("compare the mapping with the pool file", e))?;
        if lines.is_empty() {
            return Ok(());
        }
        wal.append(&lines, |off, dst| {
            dst.copy_from_slice(&memory[off as usize..off as usize + wal::LINE_BYTES])
        })?;
        Ok(())
    }

    /// Returns once every fence made on this file before the call is
    /// durable: at once outside the disk domain, and on a thread that
    /// defers its waits (`defer_durability_waits`); else once the log is
    /// synced past everything appended so far — by any thread, since a
    /// write may be completed by another (write combining). The end of
    /// every engine call that writes.
    pub fn durable_point(&self) -> Result<()> {
        let Some(wal) = &self.wal else {
            return Ok(());
        };
        if DEFER_WAITS.with(|d| d.get()) {
            return Ok(());
        }
        // Also reports a failed log when nothing is left to sync.
        wal.wait_synced(wal.appended())
    }

    /// The log of the disk domain, if this file has one.
    pub fn wal(&self) -> Option<&Arc<wal::Wal>> {
        self.wal.as_ref()
    }

    /// `flush` then `fence`.
    #[inline]
    pub fn persist(&self, offset: u64, len: usize) {
        self.flush(offset, len);
        self.fence();
    }

    #[inline]
    fn note_msync(&self, offset: u64, len: usize) {
        if self.durability != Durability::Msync {
            return;
        }
        // SAFETY: callers pass a range they have bounds-checked (`check`);
        // only the address is computed here, nothing is accessed.
        let at = unsafe { self.ptr(offset) } as usize;
        let start = at & !(PAGE_BYTES as usize - 1);
        let end = (at + len).div_ceil(PAGE_BYTES as usize) * PAGE_BYTES as usize;
        MSYNC_PENDING.with(|p| {
            let mut p = p.borrow_mut();
            if let Some(last) = p.last_mut() {
                if start <= last.1 && end >= last.0 {
                    last.0 = last.0.min(start);
                    last.1 = last.1.max(end);
                    return;
                }
            }
            p.push((start, end));
        });
    }

    fn run_msync(&self) {
        MSYNC_PENDING.with(|p| {
            for (start, end) in p.borrow_mut().drain(..) {
                // SAFETY: page-aligned range inside a mapping of this process;
                // msync only writes dirty pages back to the file.
                unsafe { libc::msync(start as *mut libc::c_void, end - start, libc::MS_SYNC) };
            }
        });
    }
}

impl Drop for PmemFile {
    fn drop(&mut self) {
        if let Some(wal) = &self.wal {
            // A clean close: every fenced line, then every store no fence
            // carried, reaches the pool file. A failure leaves the log to
            // replay at the next open.
            if let Err(e) = self.log_unfenced_stores(wal) {
                eprintln!("persimmon: logging the stores no fence carried: {e}");
            }
            if let Err(e) = wal.close() {
                eprintln!("persimmon: closing the write-ahead log: {e}");
            }
        }
        // SAFETY: unmaps exactly the reservation made in `map`; no references
        // into it outlive `self` (they borrow from it).
        unsafe {
            libc::munmap(
                self.base.as_ptr() as *mut libc::c_void,
                self.reserved_bytes as usize,
            )
        };
    }
}

fn lines_partial(offset: u64, len: usize) -> u64 {
    let line = CACHE_LINE_BYTES as u64;
    let end = offset + len as u64;
    !offset.is_multiple_of(line) as u64
        + (!end.is_multiple_of(line) && end / line != offset / line) as u64
}

/// Whether the file system under `fd` accepts `MAP_SYNC` (DAX).
fn probe_map_sync(fd: i32) -> bool {
    // SAFETY: a one-page probe mapping that is unmapped at once.
    unsafe {
        let p = libc::mmap(
            std::ptr::null_mut(),
            PAGE_BYTES as usize,
            libc::PROT_READ | libc::PROT_WRITE,
            libc::MAP_SHARED_VALIDATE | libc::MAP_SYNC,
            fd,
            0,
        );
        if p == libc::MAP_FAILED {
            return false;
        }
        libc::munmap(p, PAGE_BYTES as usize);
        true
    }
}

fn is_tmpfs(fd: i32) -> bool {
    // SAFETY: fstatfs fills a zeroed plain-data struct.
    unsafe {
        let mut st: libc::statfs = std::mem::zeroed();
        libc::fstatfs(fd, &mut st) == 0 && st.f_type as i64 == TMPFS_MAGIC
    }
}

/// Takes an exclusive, non-blocking `flock` on the pool file. Returns false
/// when another open file description holds it.
pub(crate) fn try_lock_exclusive(file: &File) -> std::io::Result<bool> {
    // SAFETY: plain syscall on a valid descriptor.
    let rc = unsafe { libc::flock(file.as_raw_fd(), libc::LOCK_EX | libc::LOCK_NB) };
    if rc == 0 {
        return Ok(true);
    }
    let err = std::io::Error::last_os_error();
    if err.raw_os_error() == Some(libc::EWOULDBLOCK) {
        Ok(false)
    } else {
        Err(err)
    }
}

/// Allocates file space for `len` bytes (so a full tmpfs fails here with an
/// error, never later with SIGBUS on a store).
pub(crate) fn allocate_file(file: &File, len: u64) -> std::io::Result<()> {
    // SAFETY: plain syscall on a valid descriptor.
    let rc = unsafe { libc::posix_fallocate(file.as_raw_fd(), 0, len as libc::off_t) };
    if rc == 0 {
        Ok(())
    } else {
        Err(std::io::Error::from_raw_os_error(rc))
    }
}

/// Raises this process's soft limit on open files to its hard limit (the
/// SSD tier keeps one descriptor per 64 MiB data file; the usual soft
/// limit of 1024 would cap a tier near 64 GiB). Best effort.
pub(crate) fn raise_open_files_limit() {
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    // SAFETY: plain syscalls with a valid pointer to a local struct.
    unsafe {
        if libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) == 0 && lim.rlim_cur < lim.rlim_max {
            lim.rlim_cur = lim.rlim_max;
            let _ = libc::setrlimit(libc::RLIMIT_NOFILE, &lim);
        }
    }
}
