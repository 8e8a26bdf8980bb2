//! The pool: superblock, segments and free-space tracking.
//!
//! A pool file is a 4 KiB superblock followed by equal segments. Each segment
//! starts with a 64-byte header whose first word (the state word) commits it
//! as free, log, index or the head of a large-record run.
//!
//! Invariants:
//! - The file length is always `SUPERBLOCK_BYTES + n * segment_bytes`.
//! - A segment becomes non-free only through [`Pool::allocate`]: header body
//!   persisted, then the state word persisted; nothing is written into the
//!   segment before that. It becomes free through [`Pool::release`], which
//!   persists state word 0 (continuation segments of a run first, head last).
//! - Free-space and live-byte tables live in DRAM only; they are rebuilt
//!   after open (headers synchronously, live bytes in the background).
//! - The headers are read at open by [`scan_headers`], or after a clean
//!   close taken from that close's copy of the same scan
//!   ([`scan_copy`](crate::scan_copy), checked before it is trusted); both
//!   give one [`ScanResult`] (`segment_scan`), which [`Pool::adopt`]s the
//!   same way.

use std::collections::BTreeSet;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, AtomicU8, Ordering};
use std::sync::Arc;

use crate::error::{Error, Result};
use crate::layout::{self, SegmentHeader, SegmentKind, Superblock, SuperblockError};
use crate::options::Domain;
use crate::options::{FlushMode, Options, PointIndex};
use crate::pmem::wal::{self, Replay, Wal};
use crate::pmem::{self, Durability, PersistObserver, PmemFile};
use crate::scan_copy;
use crate::segment_scan::{scan_headers, ScanResult, KIND_CONTINUATION, KIND_FREEING};
use crate::tier::ident::{self, TierSettings};

/// DRAM state of one segment, a cache line of its own: the lanes' active
/// segments are neighbours (allocated one after the other), and every
/// append adds to its segment's live bytes, so sharing lines would bounce
/// them between the writing cores.
#[repr(align(64))]
pub(crate) struct SegmentInfo {
    /// `SegmentKind as u8`, or `KIND_CONTINUATION` / `KIND_DAMAGED` /
    /// `KIND_FREEING`.
    kind: AtomicU8,
    /// Bytes of records in this segment that the index references.
    live_bytes: AtomicU64,
    /// No more records will be appended (not a lane's active segment).
    sealed: AtomicBool,
    /// Which of its records are known dead (a hint for the cleaner).
    dead: crate::dead_hints::DeadBits,
}

pub(crate) struct Pool {
    pub pm: PmemFile,
    pub sb: Superblock,
    pub path: PathBuf,
    pub segment_bytes: u64,
    pub pool_bytes_max: u64,
    /// Per segment DRAM state, changed only through `Pool`'s methods.
    segments: Vec<SegmentInfo>,
    free: parking_lot::Mutex<BTreeSet<u32>>,
    /// Key count recorded by the last clean close, if the pool was closed cleanly.
    pub clean_key_count: Option<u64>,
    /// Segments handed to an epoch for release and not yet released.
    pub releases_pending: AtomicU64,
    /// This open's number (from the superblock's open count).
    pub open_count: u64,
    /// Segments only the cleaner may take (so it can free space in a full pool).
    pub spare_segments: u32,
    /// Until this time (ms since the epoch) the file is not grown: the file
    /// system reported it full.
    growth_stalled_until_ms: AtomicU64,
    /// The format version the superblock says now (raised in place by
    /// [`Pool::raise_version`]).
    version: AtomicU32,
    raise_lock: parking_lot::Mutex<()>,
    /// The SSD tier's settings, when the pool was created with one.
    pub tier: Option<TierSettings>,
    /// This open took the segment headers from their copy beside the pool
    /// (`scan_copy`), not from the pool.
    pub scan_from_copy: bool,
}

fn now_millis() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_millis() as u64)
        .unwrap_or(0)
}

fn now_unix_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_secs())
        .unwrap_or(0)
}

fn random_u64() -> u64 {
    use std::hash::{BuildHasher, Hasher};
    let mut h = std::collections::hash_map::RandomState::new().build_hasher();
    h.write_u64(now_unix_secs());
    h.write_u32(std::process::id());
    h.finish()
}

impl Pool {
    /// Opens `path`, creating it first when allowed. Validates the superblock
    /// before mapping; a file that fails validation is never written.
    pub fn open(
        path: &Path,
        opts: &Options,
        observer: Option<Arc<dyn PersistObserver>>,
    ) -> Result<(Pool, ScanResult)> {
        validate_options(opts)?;
        if !path.exists() {
            if !opts.create {
                return Err(Error::NotFound {
                    path: path.to_path_buf(),
                });
            }
            create_pool_file(path, opts)?;
        }
        let file = open_exclusive(path)?;
        let durability = match opts.domain {
            Domain::Detect => pmem::detect_durability(&file, opts.flush_mode == FlushMode::Eadr),
            Domain::Disk => Durability::Disk,
        };
        let replayed = replay_log(&file, path, opts)?;
        let meta = file
            .metadata()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?;
        let file_len = meta.len();
        let (mut sb, staged) = read_superblock(&file, path, file_len)?;
        let seg = sb.segment_bytes;
        check_geometry(path, file_len, seg)?;
        check_flags_allow(path, &sb, opts)?;
        let pool_bytes_max = opts.pool_bytes_max.max(file_len);
        let wal = if durability == Durability::Disk {
            // Raised before the log holds anything: a build that cannot
            // replay the log refuses the pool instead of opening a state
            // older than what it acknowledged.
            if !staged && sb.format_version < layout::FORMAT_VERSION_DISK_LOG {
                sb.format_version = layout::FORMAT_VERSION_DISK_LOG;
                write_superblock_to_file(&file, path, &sb, opts.disk_observer.as_ref())?;
            }
            let for_applier = file
                .try_clone()
                .map_err(|e| Error::io("duplicate pool descriptor", e))?;
            Some(Wal::open(
                path,
                for_applier,
                sb.pool_id,
                opts.disk_log_bytes,
                (opts.disk_checkpoint_bytes, opts.disk_checkpoint_interval),
                (layout::SUPERBLOCK_BYTES, seg),
                replayed,
                opts.disk_observer.clone(),
            )?)
        } else {
            if replayed != Replay::default() || wal::log_path(path).exists() {
                // Replayed into the pool, which no longer needs its log.
                let _ = std::fs::remove_file(wal::log_path(path));
            }
            None
        };
        let pm = PmemFile::map(file, pool_bytes_max, durability, wal, observer)?;
        let max_segments = ((pool_bytes_max - layout::SUPERBLOCK_BYTES) / seg) as usize;
        let segments = (0..max_segments)
            .map(|_| SegmentInfo {
                kind: AtomicU8::new(SegmentKind::Free as u8),
                live_bytes: AtomicU64::new(0),
                sealed: AtomicBool::new(false),
                dead: Default::default(),
            })
            .collect();
        let tier = tier_settings(path, &sb, &pm, opts)?;
        let clean_state = pm.load_u64(layout::SB_CLEAN_STATE);
        let closed_session = pm.load_u64(layout::SB_OPEN_COUNT);
        let open_count = closed_session.wrapping_add(1);
        let mut pool = Pool {
            pm,
            sb,
            path: path.to_path_buf(),
            segment_bytes: seg,
            pool_bytes_max,
            segments,
            free: parking_lot::Mutex::new(BTreeSet::new()),
            clean_key_count: (clean_state & 1 == 1).then_some(clean_state >> 1),
            releases_pending: AtomicU64::new(0),
            open_count,
            spare_segments: if opts.cleaner { 2 } else { 0 },
            growth_stalled_until_ms: AtomicU64::new(0),
            version: AtomicU32::new(sb.format_version),
            raise_lock: parking_lot::Mutex::new(()),
            tier,
            scan_from_copy: false,
        };
        if staged {
            // A crash interrupted a version raise after the staged copy was
            // durable: finish it.
            pool.write_fixed_superblock(&sb);
        }
        // After a clean close, the headers as that close left them, from
        // their copy beside the pool (one small read); else from the pool.
        let copy = (clean_state & 1 == 1)
            .then(|| {
                let file = scan_copy::FileId::of(&meta);
                scan_copy::load(
                    path,
                    &sb.pool_id,
                    closed_session,
                    file,
                    pool.segment_count(),
                )
            })
            .flatten();
        pool.scan_from_copy = copy.is_some();
        let scan = copy
            .unwrap_or_else(|| scan_headers(&pool.pm, pool.segment_bytes, pool.segment_count()));
        pool.adopt(&scan);
        // From here on the pool is open: a crash must not be taken for a clean close.
        pool.pm.store_u64(layout::SB_CLEAN_STATE, 0);
        pool.pm.store_u64(layout::SB_OPEN_COUNT, open_count);
        pool.pm.persist(layout::SB_CLEAN_STATE, 16);
        Ok((pool, scan))
    }

    /// The format version the superblock says now.
    pub fn format_version(&self) -> u32 {
        self.version.load(Ordering::Acquire)
    }

    /// Raises the pool's format version to at least `version` (before the
    /// first record that needs it is written). Crash-safe: the new fixed
    /// bytes are staged and persisted first, then rewritten in place, then
    /// the stage is cleared; an open that finds the fixed bytes torn uses
    /// the stage.
    pub fn raise_version(&self, version: u32) {
        if self.format_version() >= version {
            return;
        }
        let _one = self.raise_lock.lock();
        if self.format_version() >= version {
            return;
        }
        let sb = Superblock {
            format_version: version,
            ..self.sb
        };
        self.pm.write(layout::SB_STAGED, &sb.encode());
        // Persist point: the stage is durable before the fixed bytes change.
        self.pm.persist(layout::SB_STAGED, layout::SB_FIXED_BYTES);
        self.write_fixed_superblock(&sb);
        self.version.store(version, Ordering::Release);
    }

    /// Rewrites the fixed superblock bytes with `sb`, persists them, then
    /// clears the staged copy.
    fn write_fixed_superblock(&self, sb: &Superblock) {
        self.pm.write(0, &sb.encode());
        // Persist point: the new fixed bytes are durable before the stage
        // that could repair them is cleared.
        self.pm.persist(0, layout::SB_FIXED_BYTES);
        self.pm
            .write(layout::SB_STAGED, &[0u8; layout::SB_FIXED_BYTES]);
        self.pm.persist(layout::SB_STAGED, layout::SB_FIXED_BYTES);
    }

    /// Number of segments the file holds now.
    pub fn segment_count(&self) -> u32 {
        ((self.pm.len() - layout::SUPERBLOCK_BYTES) / self.segment_bytes) as u32
    }

    /// Decodes the record header at `offset` (an offset read from a slot or
    /// a leaf entry, so untrusted), checked as far as reading the record's
    /// key needs: a possible record offset and key length.
    #[inline]
    pub fn record_key_header(&self, offset: u64) -> Result<layout::RecordHeader> {
        if offset < layout::SUPERBLOCK_BYTES || !offset.is_multiple_of(layout::RECORD_ALIGN) {
            return Err(Error::corruption(
                offset,
                "slot names an impossible record offset",
            ));
        }
        let h = layout::RecordHeader::decode(self.pm.slice(offset, layout::RECORD_HEADER_BYTES)?);
        if h.key_len as usize > layout::MAX_KEY_BYTES {
            return Err(Error::corruption(
                offset,
                "record header has impossible lengths",
            ));
        }
        Ok(h)
    }

    /// [`record_key_header`](Self::record_key_header), and sanity-checked
    /// whole: value length, flags, the record inside the pool.
    #[inline]
    pub fn record_header(&self, offset: u64) -> Result<layout::RecordHeader> {
        let h = self.record_key_header(offset)?;
        if h.value_len as usize > layout::MAX_VALUE_BYTES {
            return Err(Error::corruption(
                offset,
                "record header has impossible lengths",
            ));
        }
        if h.flags & !layout::REC_KNOWN_FLAGS != 0 {
            return Err(Error::corruption(offset, "record header has unknown flags"));
        }
        if offset + h.total_bytes() > self.pm.len() {
            return Err(Error::corruption(offset, "record runs past the pool end"));
        }
        Ok(h)
    }

    /// Checks the CRC32C of the record at `offset` (header `h`, from
    /// [`record_header`](Self::record_header)) over the bytes it covers.
    pub fn verify_record(&self, offset: u64, h: &layout::RecordHeader) -> Result<()> {
        let body = self.pm.slice(offset + 4, h.body_len())?;
        if layout::record_crc(body) != h.crc {
            return Err(Error::corruption(offset, "record CRC32C mismatch"));
        }
        Ok(())
    }

    #[inline]
    pub fn segment_offset(&self, index: u32) -> u64 {
        layout::SUPERBLOCK_BYTES + index as u64 * self.segment_bytes
    }

    /// Segment index holding pool offset `offset` (which must be past the superblock).
    #[inline]
    pub fn segment_of(&self, offset: u64) -> u32 {
        ((offset - layout::SUPERBLOCK_BYTES) / self.segment_bytes) as u32
    }

    #[inline]
    pub fn kind(&self, index: u32) -> u8 {
        self.segments[index as usize].kind.load(Ordering::Acquire)
    }

    /// Bytes of records in segment `index` that the index references.
    #[inline]
    pub fn live_bytes(&self, index: u32) -> u64 {
        self.segments[index as usize]
            .live_bytes
            .load(Ordering::SeqCst)
    }

    /// Notes (a hint, `dead_hints`) that the record at `offset`, `total`
    /// bytes, will never be named again.
    #[inline]
    pub fn mark_dead(&self, offset: u64, total: u64) {
        let seg = self.segment_of(offset);
        let rel = offset - self.segment_offset(seg);
        self.segments[seg as usize]
            .dead
            .mark(self.segment_bytes, rel, total);
    }

    /// Whether the record at `offset`, `total` bytes, is known dead.
    #[inline]
    pub fn known_dead(&self, offset: u64, total: u64) -> bool {
        let seg = self.segment_of(offset);
        let rel = offset - self.segment_offset(seg);
        self.segments[seg as usize].dead.is_marked(rel, total)
    }

    /// Counts `bytes` more of segment `index` live.
    #[inline]
    pub fn add_live(&self, index: u32, bytes: u64) {
        self.segments[index as usize]
            .live_bytes
            .fetch_add(bytes, Ordering::SeqCst);
    }

    /// Counts `bytes` of segment `index` dead; returns whether none is live
    /// any more.
    #[inline]
    pub fn sub_live(&self, index: u32, bytes: u64) -> bool {
        let before = self.segments[index as usize]
            .live_bytes
            .fetch_sub(bytes, Ordering::SeqCst);
        debug_assert!(before >= bytes, "segment {index}: live bytes below 0");
        before == bytes
    }

    /// Whether no more records will be appended to segment `index`.
    #[inline]
    pub fn is_sealed(&self, index: u32) -> bool {
        self.segments[index as usize].sealed.load(Ordering::SeqCst)
    }

    /// Marks segment `index` as taking no more records.
    #[inline]
    pub fn seal(&self, index: u32) {
        self.segments[index as usize]
            .sealed
            .store(true, Ordering::SeqCst);
    }

    /// Moves a sealed log segment or large run with nothing live to
    /// `KIND_FREEING`, once: returns whether this call did (the caller then
    /// hands it to an epoch for [`release`](Self::release)).
    pub fn begin_freeing(&self, index: u32) -> bool {
        let Some(kind) = self.dead_kind(index) else {
            return false;
        };
        self.segments[index as usize]
            .kind
            .compare_exchange(kind, KIND_FREEING, Ordering::AcqRel, Ordering::Acquire)
            .is_ok()
    }

    /// The kind of segment `index` if it is dead: a sealed log segment or
    /// large run with no live record (what `begin_freeing` may take).
    pub fn dead_kind(&self, index: u32) -> Option<u8> {
        let info = &self.segments[index as usize];
        if !info.sealed.load(Ordering::SeqCst) || info.live_bytes.load(Ordering::SeqCst) != 0 {
            return None;
        }
        let kind = info.kind.load(Ordering::Acquire);
        (kind == SegmentKind::Log as u8 || kind == SegmentKind::Large as u8).then_some(kind)
    }

    /// Takes over what a header scan (or its copy) found: each segment's
    /// kind, log segments and large runs sealed, the free set.
    fn adopt(&mut self, scan: &ScanResult) {
        let mut free = BTreeSet::new();
        for (i, &kind) in scan.kinds.iter().enumerate() {
            let info = &self.segments[i];
            info.kind.store(kind, Ordering::Relaxed);
            if kind == SegmentKind::Log as u8 || kind == SegmentKind::Large as u8 {
                info.sealed.store(true, Ordering::Relaxed);
            }
            if kind == SegmentKind::Free as u8 {
                free.insert(i as u32);
            }
        }
        *self.free.lock() = free;
    }

    /// Allocates `run` contiguous segments (1 for log and index segments),
    /// growing the file if needed, and commits `header` on the first one.
    pub fn allocate(&self, header: SegmentHeader) -> Result<u32> {
        self.allocate_as(header, false)
    }

    /// Like [`allocate`](Self::allocate); the cleaner (`cleaner = true`) may
    /// also take the spare segments kept back from everyone else, so it can
    /// always make progress in a full pool.
    pub fn allocate_as(&self, header: SegmentHeader, cleaner: bool) -> Result<u32> {
        let first = self.take_free_run(header.run_segments.max(1), cleaner)?;
        self.commit(first, header);
        Ok(first)
    }

    /// Takes `run` contiguous free segments without writing anything: on
    /// media they stay free until [`commit`](Self::commit). The caller may
    /// fill them first (an index segment's buckets must be durable before its
    /// header names it).
    pub fn reserve(&self, run: u32) -> Result<u32> {
        self.take_free_run(run, false)
    }

    /// Commits `header` on reserved segment `first`.
    pub fn commit(&self, first: u32, header: SegmentHeader) {
        let run = header.run_segments.max(1);
        let off = self.segment_offset(first);
        let body = header.encode_body();
        self.pm.write(off + 8, &body);
        self.pm.flush(off + 8, body.len());
        // Persist point: header body durable before the state word names it.
        self.pm.fence();
        self.pm.store_u64(off, header.state_word(&body));
        self.pm.flush(off, 8);
        // Persist point: the segment is now owned (kind durable).
        self.pm.fence();
        for c in 0..run {
            let info = &self.segments[(first + c) as usize];
            if header.kind == SegmentKind::Log {
                info.dead.clear();
            }
            info.live_bytes.store(0, Ordering::Relaxed);
            info.sealed.store(false, Ordering::Relaxed);
            let k = if c == 0 {
                header.kind as u8
            } else {
                KIND_CONTINUATION
            };
            info.kind.store(k, Ordering::Release);
        }
    }

    /// Segments the file can still grow by: up to `pool_bytes_max`, or none
    /// for a while after the file system said it was full.
    pub fn growth_headroom(&self) -> u32 {
        let cap = ((self.pool_bytes_max - layout::SUPERBLOCK_BYTES) / self.segment_bytes) as u32;
        if now_millis() < self.growth_stalled_until_ms.load(Ordering::Acquire) {
            0
        } else {
            cap - self.segment_count()
        }
    }

    fn take_free_run(&self, run: u32, cleaner: bool) -> Result<u32> {
        let mut free = self.free.lock();
        let full = || Error::PoolFull {
            pool_bytes_max: self.pool_bytes_max,
        };
        loop {
            let headroom = self.growth_headroom();
            let available = free.len() as u64 + headroom as u64;
            if !cleaner && available < (run + self.spare_segments) as u64 {
                return Err(full());
            }
            if let Some(first) = find_run(&free, run) {
                for c in 0..run {
                    free.remove(&(first + c));
                }
                return Ok(first);
            }
            if headroom == 0 {
                return Err(full());
            }
            // Grow: at least what is missing, at least 1/64 of the pool, at
            // least 16 segments; never past the maximum. If the file system
            // is full, try just what is missing before giving up. (1/64:
            // the unused tail a load leaves is at most 1.6 % of the pool;
            // growing is cheap, the new part is mapped in place.)
            let have = self.segment_count();
            let mut want = (have / GROWTH_DIVISOR).max(16).max(run).min(headroom);
            loop {
                match self.pm.grow(self.segment_offset(have + want)) {
                    Ok(_) => break,
                    Err(Error::Io { ref source, .. })
                        if source.raw_os_error() == Some(libc::ENOSPC) =>
                    {
                        if want > run {
                            want = run;
                            continue;
                        }
                        // Treat the file as at its maximum for a second, so
                        // the spare segments and the cleaner's urgency count
                        // what is really there.
                        self.growth_stalled_until_ms
                            .store(now_millis() + 1000, Ordering::Release);
                        return Err(full());
                    }
                    Err(other) => return Err(other),
                }
            }
            for s in have..have + want {
                free.insert(s);
            }
        }
    }

    /// Returns a segment (or a large run) to the free set. The caller
    /// guarantees nothing references it and no reader can still see it.
    pub fn release(&self, first: u32) {
        let mut run = 1;
        while (first + run) < self.segment_count() && self.kind(first + run) == KIND_CONTINUATION {
            run += 1;
        }
        // Continuation segments hold record bytes where a header would be:
        // clear their state words first, so a crash never leaves one of them
        // looking like a header while the head is already free.
        for c in (1..run).rev() {
            let off = self.segment_offset(first + c);
            self.pm.store_u64(off, 0);
            self.pm.flush(off, 8);
        }
        if run > 1 {
            // Persist point: continuation state words are 0.
            self.pm.fence();
        }
        let off = self.segment_offset(first);
        self.pm.store_u64(off, 0);
        self.pm.flush(off, 8);
        // Persist point: the segment (run) is free.
        self.pm.fence();
        let mut free = self.free.lock();
        for c in 0..run {
            let i = &self.segments[(first + c) as usize];
            i.live_bytes.store(0, Ordering::Relaxed);
            i.sealed.store(false, Ordering::Relaxed);
            i.kind.store(SegmentKind::Free as u8, Ordering::Release);
            free.insert(first + c);
        }
        drop(free);
        // Every release comes from a hand-over to the epoch that counted it.
        self.releases_pending.fetch_sub(1, Ordering::AcqRel);
    }

    /// Writes the copy of the segment headers for the next open (at a
    /// clean close, after [`mark_clean`](Self::mark_clean), the session's
    /// last write to the pool): the scan the next open would make, and the
    /// file's identity as this close leaves it.
    pub fn save_scan_copy(&self) {
        let Ok(meta) = self.pm.metadata() else {
            return;
        };
        let scan = scan_headers(&self.pm, self.segment_bytes, self.segment_count());
        let file = scan_copy::FileId::of(&meta);
        scan_copy::save(&self.path, &self.sb.pool_id, self.open_count, file, &scan);
    }

    /// Records the key count as of a clean close (bit 0 = clean).
    pub fn mark_clean(&self, keys: u64) {
        self.pm.store_u64(layout::SB_CLEAN_STATE, (keys << 1) | 1);
        // Persist point: a later open trusts this key count.
        self.pm.persist(layout::SB_CLEAN_STATE, 8);
    }
}

fn find_run(free: &BTreeSet<u32>, run: u32) -> Option<u32> {
    if run == 1 {
        return free.iter().next().copied();
    }
    let mut start = None;
    let mut len = 0;
    let mut prev = None;
    for &s in free {
        if prev.is_some_and(|p: u32| p + 1 == s) {
            len += 1;
        } else {
            start = Some(s);
            len = 1;
        }
        if len == run {
            return start;
        }
        prev = Some(s);
    }
    None
}

fn validate_options(opts: &Options) -> Result<()> {
    if !layout::valid_segment_bytes(opts.segment_bytes) {
        return Err(Error::InvalidOptions(format!(
            "segment_bytes {} must be a power of two between {} and {}",
            opts.segment_bytes,
            layout::MIN_SEGMENT_BYTES,
            layout::MAX_SEGMENT_BYTES
        )));
    }
    if opts.lanes == 0 || opts.lanes > 254 {
        return Err(Error::InvalidOptions(format!(
            "lanes {} must be in 1..=254 (lane 254 is the cleaner's, 255 internal)",
            opts.lanes
        )));
    }
    let min = layout::SUPERBLOCK_BYTES + 2 * opts.segment_bytes;
    if opts.pool_bytes_max < min {
        return Err(Error::InvalidOptions(format!(
            "pool_bytes_max {} is below the minimum of {min} (superblock and two segments)",
            opts.pool_bytes_max
        )));
    }
    if opts.pool_bytes_max / opts.segment_bytes > MAX_SEGMENTS {
        return Err(Error::InvalidOptions(format!(
            "pool_bytes_max {} is more than {MAX_SEGMENTS} segments of {} bytes; use larger segments",
            opts.pool_bytes_max, opts.segment_bytes
        )));
    }
    if opts.data_dir.is_some() && opts.tier_threshold < crate::tier::EXTENT_ALIGN {
        return Err(Error::InvalidOptions(format!(
            "tier_threshold {} is below one extent block ({} bytes)",
            opts.tier_threshold,
            crate::tier::EXTENT_ALIGN
        )));
    }
    // Checked in every domain: a setting that cannot work is refused before
    // anything is created, wherever the pool lives.
    wal::CheckpointPolicy::for_ring(
        wal::ring_capacity(opts.disk_log_bytes),
        opts.disk_checkpoint_bytes,
        opts.disk_checkpoint_interval,
    )?;
    if opts.pool_bytes_max > Slot_MAX_POOL {
        return Err(Error::InvalidOptions(format!(
            "pool_bytes_max {} exceeds what a slot can address ({Slot_MAX_POOL})",
            opts.pool_bytes_max
        )));
    }
    Ok(())
}

/// The tier settings of the pool at `path` (from its superblock), checked
/// against the directory `opts` asks for: the pool remembers its own, and a
/// different one is refused.
fn tier_settings(
    path: &Path,
    sb: &Superblock,
    pm: &PmemFile,
    opts: &Options,
) -> Result<Option<TierSettings>> {
    let settings = match sb.flags & layout::SB_FLAG_TIERED {
        0 => None,
        _ => {
            let raw = pm.slice(layout::SB_TIER, layout::SB_TIER_BYTES)?;
            let decoded = TierSettings::decode(raw).map_err(|d| Error::CorruptSuperblock {
                path: path.to_path_buf(),
                detail: d.into(),
            })?;
            Some(decoded.ok_or_else(|| Error::CorruptSuperblock {
                path: path.to_path_buf(),
                detail: "the pool is tiered but its tier settings are missing".into(),
            })?)
        }
    };
    let Some(asked) = &opts.data_dir else {
        return Ok(settings);
    };
    let Some(own) = &settings else {
        return Err(Error::DataDir {
            path: asked.clone(),
            detail: format!(
                "{} was created without an SSD tier (the tier is chosen when a pool is created)",
                path.display()
            ),
        });
    };
    if asked.canonicalize().ok().as_ref() != Some(&own.dir) {
        return Err(Error::DataDir {
            path: asked.clone(),
            detail: format!(
                "{} keeps its values in {}, not here (omit the data directory to use the pool's own)",
                path.display(),
                own.dir.display()
            ),
        });
    }
    Ok(settings)
}

/// The pool grows by at least 1/GROWTH_DIVISOR of its size at a time.
const GROWTH_DIVISOR: u32 = 64;

/// Most segments a pool may have (DRAM tables hold one entry per segment).
const MAX_SEGMENTS: u64 = 1 << 22;

#[allow(non_upper_case_globals)]
const Slot_MAX_POOL: u64 = layout::Slot::MAX_OFFSET;

/// The superblock, and whether it came from the staged copy (the fixed
/// bytes were torn by a crash during a version raise).
fn read_superblock(file: &File, path: &Path, file_len: u64) -> Result<(Superblock, bool)> {
    let primary = read_fixed_superblock(file, path, file_len);
    if let Err(Error::CorruptSuperblock { .. }) = &primary {
        let mut buf = [0u8; layout::SB_FIXED_BYTES];
        if file_len >= layout::SUPERBLOCK_BYTES
            && file.read_exact_at(&mut buf, layout::SB_STAGED).is_ok()
        {
            if let Ok(sb) = Superblock::decode(&buf) {
                return Ok((sb, true));
            }
        }
    }
    primary.map(|sb| (sb, false))
}

fn read_fixed_superblock(file: &File, path: &Path, file_len: u64) -> Result<Superblock> {
    if file_len < layout::SB_FIXED_BYTES as u64 {
        if file_len >= 8 {
            let mut magic = [0u8; 8];
            file.read_exact_at(&mut magic, 0)
                .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
            if magic == layout::MAGIC {
                return Err(Error::Truncated {
                    path: path.to_path_buf(),
                    detail: format!("only {file_len} bytes, shorter than the superblock"),
                });
            }
        }
        return Err(Error::NotAPool {
            path: path.to_path_buf(),
        });
    }
    let mut buf = [0u8; layout::SB_FIXED_BYTES];
    file.read_exact_at(&mut buf, 0)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    Superblock::decode(&buf).map_err(|e| match e {
        SuperblockError::Short | SuperblockError::BadMagic => Error::NotAPool {
            path: path.to_path_buf(),
        },
        SuperblockError::Damaged(detail) => Error::CorruptSuperblock {
            path: path.to_path_buf(),
            detail,
        },
        SuperblockError::Version(found) => Error::UnsupportedVersion {
            path: path.to_path_buf(),
            found,
            supported: layout::FORMAT_VERSION,
        },
    })
}

/// The superblock of a new pool created with `opts`.
fn new_superblock(opts: &Options) -> Superblock {
    let dram = opts.point_index == PointIndex::Dram;
    let leaves = dram && opts.ordered_layout == crate::options::OrderedLayout::Leaves;
    // A point index in PM gets three-choice buckets (a higher load factor,
    // §4), except in the Baseline layout (lock words in the buckets), which
    // keeps the paper's bucket pairs.
    let three_choice = !dram && opts.mechanisms.volatile_lock_table;
    let flag = |on: bool, bit: u64| if on { bit } else { 0 };
    Superblock {
        // The lowest version that expresses the pool, so a pool without
        // the newer features stays readable by older builds.
        format_version: if three_choice {
            layout::FORMAT_VERSION_THREE_CHOICE
        } else if leaves {
            layout::FORMAT_VERSION_LEAVES
        } else if dram {
            3
        } else if opts.ordered_index {
            2
        } else {
            1
        },
        segment_bytes: opts.segment_bytes,
        hash_seed: random_u64(),
        pool_id: {
            let mut id = [0u8; 16];
            id[..8].copy_from_slice(&random_u64().to_le_bytes());
            id[8..].copy_from_slice(&random_u64().rotate_left(17).to_le_bytes());
            id
        },
        created_unix_secs: now_unix_secs(),
        flags: flag(
            !opts.mechanisms.volatile_lock_table,
            layout::SB_FLAG_PM_BUCKET_LOCKS,
        ) | flag(opts.ordered_index, layout::SB_FLAG_ORDERED_INDEX)
            | flag(dram, layout::SB_FLAG_DRAM_POINT_INDEX)
            | flag(leaves, layout::SB_FLAG_LEAVES)
            | flag(three_choice, layout::SB_FLAG_THREE_CHOICE),
    }
}

/// Publishes the finished file `tmp` under `path` (only if that name is
/// still free) and makes the name durable.
fn link_into_place(tmp: &Path, path: &Path) -> Result<()> {
    // A hard link creates the name only if it is absent: two processes
    // creating the same pool at once end up sharing the first one.
    match std::fs::hard_link(tmp, path) {
        Ok(()) => {}
        Err(e) if e.kind() == std::io::ErrorKind::AlreadyExists => {}
        Err(e) => {
            return Err(Error::io(
                format!("link {} to {}", tmp.display(), path.display()),
                e,
            ))
        }
    }
    let _ = std::fs::remove_file(tmp);
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
    Ok(())
}

/// Replays the write-ahead log beside the pool at `path` into the pool file
/// and empties the log, without opening the pool: the pool file then holds
/// what an open in the disk domain would start from (for tools and the
/// crash harness, which inspect pool files). Refused while the pool is open.
pub fn replay_log_file(path: &Path) -> Result<Replay> {
    let file = open_exclusive(path)?;
    replay_log(&file, path, &Options::default())
}

/// Replays the write-ahead log beside the pool, if there is one, into the
/// pool file (before anything of the pool is read): the pool file then
/// holds every line a synced record of the log held.
fn replay_log(file: &File, path: &Path, opts: &Options) -> Result<Replay> {
    if !wal::log_path(path).exists() {
        return Ok(Replay::default());
    }
    let file_len = file
        .metadata()
        .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
        .len();
    let (sb, _) = read_superblock(file, path, file_len)?;
    let grain = (layout::SUPERBLOCK_BYTES, sb.segment_bytes);
    wal::replay(path, file, &sb.pool_id, grain, opts.disk_observer.as_ref())
}

/// Writes `sb` as the pool's fixed superblock straight into the file,
/// before it is mapped, with the stage protocol of
/// [`Pool::raise_version`]: the stage durable first, then the fixed bytes,
/// then the stage cleared.
fn write_superblock_to_file(
    file: &File,
    path: &Path,
    sb: &Superblock,
    observer: Option<&Arc<dyn wal::DiskObserver>>,
) -> Result<()> {
    let io = |e| Error::io(format!("raise the format version of {}", path.display()), e);
    let bytes = sb.encode();
    let zeros = [0u8; layout::SB_FIXED_BYTES];
    for (at, data) in [
        (layout::SB_STAGED, &bytes[..]),
        (0, &bytes[..]),
        (layout::SB_STAGED, &zeros[..]),
    ] {
        if let Some(o) = observer {
            o.wrote(wal::DiskFile::Pool, at, data);
        }
        file.write_all_at(data, at).map_err(io)?;
        file.sync_data().map_err(io)?;
        if let Some(o) = observer {
            o.synced(wal::DiskFile::Pool);
        }
    }
    Ok(())
}

/// Opens the pool file for reading and writing and takes its exclusive
/// lock: a second opener (another process) is refused with `Locked`.
fn open_exclusive(path: &Path) -> Result<File> {
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .open(path)
        .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
    match pmem::try_lock_exclusive(&file) {
        Ok(true) => Ok(file),
        Ok(false) => Err(Error::Locked {
            path: path.to_path_buf(),
        }),
        Err(e) => Err(Error::io(format!("lock {}", path.display()), e)),
    }
}

/// The file is the superblock plus a whole number of segments.
fn check_geometry(path: &Path, file_len: u64, seg: u64) -> Result<()> {
    if file_len < layout::SUPERBLOCK_BYTES + seg
        || !(file_len - layout::SUPERBLOCK_BYTES).is_multiple_of(seg)
    {
        return Err(Error::Truncated {
            path: path.to_path_buf(),
            detail: format!(
                "{file_len} bytes is not the 4096-byte superblock plus a whole number of {seg}-byte segments"
            ),
        });
    }
    Ok(())
}

/// The options agree with what the pool was created with (bucket-lock
/// placement; no ablation on a DRAM point index).
fn check_flags_allow(path: &Path, sb: &Superblock, opts: &Options) -> Result<()> {
    let wants_pm_locks = !opts.mechanisms.volatile_lock_table;
    let has_pm_locks = sb.flags & layout::SB_FLAG_PM_BUCKET_LOCKS != 0;
    if wants_pm_locks != has_pm_locks {
        return Err(Error::InvalidOptions(format!(
            "{}: the pool was created {} persistent bucket locks; open it with mechanisms.volatile_lock_table = {}",
            path.display(),
            if has_pm_locks { "with" } else { "without" },
            !has_pm_locks
        )));
    }
    if sb.flags & layout::SB_FLAG_DRAM_POINT_INDEX != 0
        && opts.mechanisms != crate::options::Mechanisms::ALL
    {
        return Err(Error::InvalidOptions(format!(
            "{}: the pool keeps its point index in DRAM, which runs with all three MPKV mechanisms on; open it without ablation",
            path.display()
        )));
    }
    Ok(())
}

/// Creates a new pool at `path`: built under a temporary name, synced, then
/// linked into place, so a crash during creation never leaves a half-made
/// pool under the real name.
fn create_pool_file(path: &Path, opts: &Options) -> Result<()> {
    if opts.point_index == PointIndex::Dram && !opts.ordered_index {
        return Err(Error::InvalidOptions(
            "the DRAM point index is rebuilt from the ordered index: create the pool with the ordered index too (--ordered-index)".into(),
        ));
    }
    if opts.point_index == PointIndex::Dram && opts.mechanisms != crate::options::Mechanisms::ALL {
        return Err(Error::InvalidOptions(
            "the DRAM point index runs with all three MPKV mechanisms on (no ablation)".into(),
        ));
    }
    let seg = opts.segment_bytes;
    let initial = opts
        .pool_bytes_initial
        .clamp(layout::SUPERBLOCK_BYTES + 2 * seg, opts.pool_bytes_max);
    let segments = ((initial - layout::SUPERBLOCK_BYTES).div_ceil(seg))
        .min((opts.pool_bytes_max - layout::SUPERBLOCK_BYTES) / seg);
    let len = layout::SUPERBLOCK_BYTES + segments * seg;
    let mut tmp_name = path.file_name().unwrap_or_default().to_os_string();
    tmp_name.push(format!(".creating.{}", std::process::id()));
    let tmp = path.with_file_name(tmp_name);
    let file = OpenOptions::new()
        .read(true)
        .write(true)
        .create(true)
        .truncate(true)
        .open(&tmp)
        .map_err(|e| Error::io(format!("create {}", tmp.display()), e))?;
    let mut claimed: Option<PathBuf> = None;
    let result = (|| {
        pmem::allocate_file(&file, len)
            .map_err(|e| Error::io(format!("allocate {len} bytes for {}", tmp.display()), e))?;
        // Written through a plain shared mapping and synced whole below,
        // whatever domain the pool will open in.
        let pm = PmemFile::map(
            file.try_clone()
                .map_err(|e| Error::io("duplicate pool descriptor", e))?,
            len,
            Durability::ProcessCrash,
            None,
            None,
        )?;
        let mut sb = new_superblock(opts);
        if let Some(dir) = &opts.data_dir {
            // The directory is claimed (its identity file durable) before the
            // pool that names it exists under its real name.
            let settings = TierSettings {
                dir: ident::claim(dir, &sb.pool_id)?,
                threshold: opts.tier_threshold,
            };
            claimed = Some(settings.dir.clone());
            let tier = settings.encode()?;
            pm.write(layout::SB_TIER, &tier);
            pm.persist(layout::SB_TIER, tier.len());
            sb.flags |= layout::SB_FLAG_TIERED;
            sb.format_version = sb.format_version.max(layout::FORMAT_VERSION_TIER);
        }
        let bytes = sb.encode();
        pm.write(0, &bytes);
        pm.persist(0, bytes.len());
        drop(pm);
        file.sync_all()
            .map_err(|e| Error::io(format!("sync {}", tmp.display()), e))?;
        link_into_place(&tmp, path)
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
        if let Some(dir) = claimed {
            let _ = std::fs::remove_file(dir.join(ident::IDENT_FILE));
        }
    }
    result
}
