//! The disk domain's write-ahead line log (`<pool>.wal`): how a pool on an
//! ordinary file system keeps persistent-memory semantics at memory speed.
//!
//! The pool's pages live in memory, in a *private* mapping of the pool
//! file: the kernel never writes a store of ours into the file. A fence
//! appends the cache lines its thread flushed since its last fence — each
//! line's 64 bytes as memory holds them at the fence — to this log, in one
//! record, with no sync. A call that must return durably waits until the
//! log is synced past its last record; one `fdatasync` serves every waiter
//! (the syncer thread). The applier copies synced records' lines into the
//! pool file (`pwrite`), syncs it, and moves the log's start past them.
//! Open replays the log from its start over the pool file.
//!
//! Why a private mapping: with a shared one the kernel may write a page back
//! whenever it likes, and a page written back can hold a store made after
//! a fence whose record is not synced yet — a published slot reaching the
//! file before the record it names. The pool file must only ever hold what
//! a synced prefix of the log says (the write-ahead rule), so only the
//! applier writes it.
//!
//! On media (the unit tests `header_layout` here and `record_layout` in
//! `record`, the room of the record format, check these offsets):
//!
//! | bytes | what |
//! |---|---|
//! | 0..512, 512..1024 | header slots A and B: magic `PSMWAL01`, version, pool id, sequence, capacity, start LSN, CRC32C; the valid slot with the higher sequence wins |
//! | 4096.. | the ring: `capacity` bytes; LSN `n` is at `4096 + n % capacity` |
//!
//! A record (8-aligned, never across the ring's end): magic, kind (lines or
//! pad), its LSN, its length, its line count, CRC32C of the header and the
//! payload; then each line's pool offset (`u64`), then each line's 64 bytes.
//!
//! Invariants:
//! - LSNs grow by exactly the bytes appended; a record's LSN is written in
//!   it, so replay tells this lap's records from an older lap's and stops at
//!   the first record that is torn, missing or from another lap.
//! - A thread's records reach the log in the order of its fences, and a
//!   line is copied while the append lock is held, so a later record of any
//!   thread holds every store an earlier record of that line held (or a
//!   newer one): replaying a prefix in order gives what persistent memory
//!   gives after the same fences, with later stores evicted early or not.
//! - The pool file holds what its last checkpoint made durable plus lines
//!   of synced records only; the log's start moves past a record only after
//!   the pool file holding its lines was synced. So checkpoint + replay of
//!   the synced log from its start is the state after a prefix of fences,
//!   and a crash at any moment (during a replay too) replays to it again.
//! - Appends never overrun the start: a full ring makes appenders wait for
//!   the applier. The log's size is therefore `4096 + capacity` bytes, and
//!   a replay reads at most `capacity` bytes.
//! - When the applier checkpoints is its [`CheckpointPolicy`] (by default:
//!   a quarter of the ring unapplied, or 500 ms since the last checkpoint,
//!   or the ring half full); an appender waiting for room gets a checkpoint
//!   whatever the policy says, so no setting leaves it waiting for a timer.
//!   The policy decides how much of the ring is in use at steady state, and
//!   so how much a replay after a crash reads.
//! - A failed sync poisons the log: every waiter, and every later append,
//!   gets the error (a page cache that failed to write may have dropped the
//!   bytes; nothing later may claim durability on top of them).

use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::task::Waker;
use std::time::{Duration, Instant};

use parking_lot::{Condvar, Mutex};

use crate::error::{Error, Result};

mod observer;
mod record;

pub use observer::{DiskFile, DiskObserver};
use record::{encode_fence, end_gap, parse_record, LineImages, MAX_RECORD_BYTES};
pub use record::{record_bytes, LINE_BYTES, RECORD_HEADER_BYTES};

/// Header slots: two sectors.
const HEADER_SLOT_BYTES: u64 = 512;
/// Where the ring starts.
pub const RING_OFFSET: u64 = 4096;
const MAGIC: &[u8; 8] = b"PSMWAL01";
const VERSION: u32 = 1;
/// Header slot fields.
const H_VERSION: usize = 8;
const H_POOL_ID: usize = 16;
const H_SEQ: usize = 32;
const H_CAPACITY: usize = 40;
const H_START: usize = 48;
const H_CRC: usize = 56;
const H_BYTES: usize = 60;

/// The smallest ring the log accepts (a fence of a whole segment's lines
/// fits many times over).
pub const MIN_CAPACITY: u64 = 8 << 20;

/// The ring a log asked to be `log_bytes` gets: at least [`MIN_CAPACITY`],
/// in whole 4 KiB pages.
pub fn ring_capacity(log_bytes: u64) -> u64 {
    log_bytes.max(MIN_CAPACITY).saturating_add(4095) / 4096 * 4096
}

/// What a checkpoint threshold leaves free of the ring at least: one
/// largest record and the pad that may precede it at the ring's end.
pub const CHECKPOINT_HEADROOM: u64 = 2 * MAX_RECORD_BYTES as u64;

/// When the applier checkpoints (the disk domain's
/// [`Options::disk_checkpoint_bytes`](crate::Options::disk_checkpoint_bytes)
/// and [`disk_checkpoint_interval`](crate::Options::disk_checkpoint_interval)).
///
/// A checkpoint starts when more than `bytes` synced bytes are unapplied;
/// or when anything synced is unapplied and either the ring is more than
/// `max(capacity / 2, bytes)` full, an appender waits for room, or
/// `interval` has passed since the last checkpoint.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct CheckpointPolicy {
    /// Unapplied synced bytes past which a checkpoint starts.
    pub bytes: u64,
    /// The longest synced bytes wait for a checkpoint.
    pub interval: Duration,
}

impl CheckpointPolicy {
    /// The policy for a ring of `capacity` bytes: `bytes` defaults to a
    /// quarter of the ring and is clamped to leave
    /// [`CHECKPOINT_HEADROOM`] free; more than the ring is refused.
    pub fn for_ring(
        capacity: u64,
        bytes: Option<u64>,
        interval: Duration,
    ) -> Result<CheckpointPolicy> {
        let bytes = match bytes {
            None => capacity / CHECKPOINT_SHARE,
            Some(b) if b > capacity => {
                return Err(Error::InvalidOptions(format!(
                    "disk_checkpoint_bytes {b} exceeds the write-ahead log's ring of {capacity} bytes (disk_log_bytes, at least {MIN_CAPACITY}, in whole 4 KiB pages): a checkpoint could never be due; raise disk_log_bytes or lower disk_checkpoint_bytes"
                )))
            }
            Some(b) => b.min(capacity - CHECKPOINT_HEADROOM),
        };
        Ok(CheckpointPolicy { bytes, interval })
    }
}

/// The log file's path beside the pool.
pub fn log_path(pool: &Path) -> PathBuf {
    let mut name = pool.file_name().unwrap_or_default().to_os_string();
    name.push(".wal");
    pool.with_file_name(name)
}

/// One header slot as it is on media.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Header {
    pool_id: [u8; 16],
    seq: u64,
    capacity: u64,
    start: u64,
}

impl Header {
    fn encode(&self) -> [u8; HEADER_SLOT_BYTES as usize] {
        let mut b = [0u8; HEADER_SLOT_BYTES as usize];
        b[..8].copy_from_slice(MAGIC);
        b[H_VERSION..H_VERSION + 4].copy_from_slice(&VERSION.to_le_bytes());
        b[H_POOL_ID..H_POOL_ID + 16].copy_from_slice(&self.pool_id);
        b[H_SEQ..H_SEQ + 8].copy_from_slice(&self.seq.to_le_bytes());
        b[H_CAPACITY..H_CAPACITY + 8].copy_from_slice(&self.capacity.to_le_bytes());
        b[H_START..H_START + 8].copy_from_slice(&self.start.to_le_bytes());
        let crc = crc32c::crc32c(&b[..H_CRC]);
        b[H_CRC..H_BYTES].copy_from_slice(&crc.to_le_bytes());
        b
    }

    fn decode(b: &[u8]) -> Option<Header> {
        let u64_at = |at: usize| u64::from_le_bytes(b[at..at + 8].try_into().expect("8 bytes"));
        let u32_at = |at: usize| u32::from_le_bytes(b[at..at + 4].try_into().expect("4 bytes"));
        if &b[..8] != MAGIC
            || u32_at(H_VERSION) != VERSION
            || crc32c::crc32c(&b[..H_CRC]) != u32_at(H_CRC)
        {
            return None;
        }
        Some(Header {
            pool_id: b[H_POOL_ID..H_POOL_ID + 16].try_into().expect("16 bytes"),
            seq: u64_at(H_SEQ),
            capacity: u64_at(H_CAPACITY),
            start: u64_at(H_START),
        })
    }
}

/// The newest valid header of `file`, if any slot is valid.
fn read_header(file: &File) -> Result<Option<Header>> {
    let mut b = [0u8; 2 * HEADER_SLOT_BYTES as usize];
    let n = read_up_to(file, &mut b, 0).map_err(|e| Error::io("read the log's header", e))?;
    let slots = b[..n].chunks_exact(HEADER_SLOT_BYTES as usize);
    Ok(slots.filter_map(Header::decode).max_by_key(|h| h.seq))
}

/// Reads as many bytes as the file has, up to `buf.len()`.
pub(super) fn read_up_to(file: &File, buf: &mut [u8], offset: u64) -> std::io::Result<usize> {
    let mut done = 0;
    while done < buf.len() {
        match file.read_at(&mut buf[done..], offset + done as u64)? {
            0 => break,
            n => done += n,
        }
    }
    Ok(done)
}

/// What a replay found and did.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Replay {
    /// Log bytes replayed (records of this lap from the start).
    pub bytes: u64,
    /// Records applied.
    pub records: u64,
    /// Distinct pool lines written.
    pub lines: u64,
    pub nanos: u64,
}

/// Replays the log beside `pool_path` (if there is one) into `pool`, syncs
/// the pool, and empties the log (its start moves past what was applied).
/// `pool_id` pairs the two files: a log of another pool is refused, never
/// applied.
pub fn replay(
    pool_path: &Path,
    pool: &File,
    pool_id: &[u8; 16],
    grain: (u64, u64),
    observer: Option<&Arc<dyn DiskObserver>>,
) -> Result<Replay> {
    let started = Instant::now();
    let path = log_path(pool_path);
    let file = match OpenOptions::new().read(true).write(true).open(&path) {
        Ok(f) => f,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(Replay::default()),
        Err(e) => return Err(Error::io(format!("open {}", path.display()), e)),
    };
    let Some(header) = read_header(&file)? else {
        // Created but never given a valid header: nothing was appended.
        return Ok(Replay::default());
    };
    if &header.pool_id != pool_id {
        return Err(Error::InvalidOptions(format!(
            "{} belongs to another pool (its pool id differs from {}'s): move it away to open the pool without it",
            path.display(),
            pool_path.display()
        )));
    }
    let capacity = header.capacity;
    let mut ring = vec![0u8; capacity as usize];
    let n = read_up_to(&file, &mut ring, RING_OFFSET)
        .map_err(|e| Error::io(format!("read {}", path.display()), e))?;
    ring.truncate(n);
    let mut images = LineImages::default();
    let mut lsn = header.start;
    let mut records = 0;
    while lsn - header.start < capacity {
        if let Some(gap) = end_gap(lsn, capacity) {
            lsn += gap;
            continue;
        }
        let at = (lsn % capacity) as usize;
        let end = (capacity as usize).min(ring.len());
        let Some(rec) = ring.get(at..end).and_then(|b| parse_record(b, lsn)) else {
            break;
        };
        images.take_record(&rec);
        lsn += rec.bytes;
        records += 1;
    }
    let lines = images
        .write_into(pool, grain, observer)
        .map_err(|e| Error::io(format!("replay {} into the pool", path.display()), e))?;
    let mut report = Replay {
        bytes: lsn - header.start,
        records,
        lines: lines as u64,
        nanos: 0,
    };
    // Everything replayed is in the pool file, synced: the log starts anew,
    // a whole ring past its old start, so no record left in the ring (an
    // unsynced tail past the point replay stopped) can claim a position of
    // the new lap.
    let next = Header {
        seq: header.seq + 1,
        start: header.start + capacity,
        ..header
    };
    write_header(&file, &next, observer)
        .map_err(|e| Error::io(format!("write {}'s header", path.display()), e))?;
    report.nanos = started.elapsed().as_nanos() as u64;
    Ok(report)
}

/// Syncs the directory holding `path`, so a file just created there stays
/// (best effort: a directory that cannot be opened is left as it is).
fn sync_parent_dir(path: &std::path::Path) {
    if let Some(dir) = path.parent().filter(|d| !d.as_os_str().is_empty()) {
        if let Ok(d) = File::open(dir) {
            let _ = d.sync_all();
        }
    }
}

/// Writes zeros over `from..to` of `file` and syncs it: the ring's blocks
/// are then written ones, so a sync of the log writes only the log's bytes
/// (a preallocated, never written block would make every first write to
/// it a change of the file system's metadata, which `fdatasync` commits).
fn zero_fill(file: &File, from: u64, to: u64) -> std::io::Result<()> {
    let zeros = vec![0u8; 1 << 20];
    let mut at = from;
    while at < to {
        let n = (to - at).min(zeros.len() as u64) as usize;
        file.write_all_at(&zeros[..n], at)?;
        at += n as u64;
    }
    file.sync_all()
}

/// Writes `h` into its slot (the sequence picks it) and syncs the log.
fn write_header(
    file: &File,
    h: &Header,
    observer: Option<&Arc<dyn DiskObserver>>,
) -> std::io::Result<()> {
    let slot = (h.seq % 2) * HEADER_SLOT_BYTES;
    let bytes = h.encode();
    if let Some(o) = observer {
        o.wrote(DiskFile::Log, slot, &bytes);
    }
    file.write_all_at(&bytes, slot)?;
    file.sync_data()?;
    if let Some(o) = observer {
        o.synced(DiskFile::Log);
    }
    Ok(())
}

/// Log positions, all LSNs.
#[derive(Debug, Default)]
struct Positions {
    /// Appended (the next record's LSN).
    next: u64,
    /// Written and synced.
    synced: u64,
    /// Lines of records below this are in the pool file, synced; the
    /// header says the log starts here.
    start: u64,
    /// Highest LSN a waiter asked to be synced.
    wanted: u64,
    /// Waits registered since the last sync took its batch.
    waiters: usize,
    /// The syncer waits for a sync to be wanted (only then does a waiter
    /// wake it).
    syncer_idle: bool,
    /// An appender waits for room (the applier checkpoints whatever its
    /// thresholds say; the next checkpoint clears it).
    room_wanted: bool,
    /// The log failed a sync (or write): every later durability wait fails.
    poisoned: Option<String>,
    closing: bool,
}

/// The bytes appended and not yet written to the file.
#[derive(Default)]
struct Pending {
    buf: Vec<u8>,
    /// LSN of `buf[0]`.
    from: u64,
}

/// Synced records not yet applied to the pool file.
#[derive(Default)]
struct Unapplied {
    chunks: Vec<(u64, Vec<u8>)>,
    bytes: u64,
}

/// Figures for `stats`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct LogFigures {
    pub capacity: u64,
    /// Bytes between the log's start and its end now.
    pub used: u64,
    pub appended: u64,
    pub syncs: u64,
    pub checkpoints: u64,
    pub replayed: Replay,
}

/// The open log of one pool.
pub struct Wal {
    file: File,
    pool: File,
    path: PathBuf,
    pool_id: [u8; 16],
    capacity: u64,
    policy: CheckpointPolicy,
    /// Pool file lengths are whole multiples of this past `grain.0`
    /// (the superblock and the segment size).
    grain: (u64, u64),
    pending: Mutex<Pending>,
    pos: Mutex<Positions>,
    /// `pos.next`, readable without the lock.
    next: AtomicU64,
    /// `pos.synced` and whether `pos.poisoned` is set, readable without the
    /// lock, and by a `Durable` after the log closed.
    outcome: Arc<Outcome>,
    checkpointing: Mutex<()>,
    /// Notified when `synced` or `start` move, when a sync is wanted, and
    /// when the log closes.
    moved: Condvar,
    wakers: Mutex<Vec<Waker>>,
    unapplied: Mutex<Unapplied>,
    header_seq: AtomicU64,
    syncs: AtomicU64,
    /// The last sync's waiters and how long it took (group commit's
    /// gathering, `gather`).
    last_batch: std::sync::atomic::AtomicUsize,
    last_sync_nanos: AtomicU64,
    checkpoints: AtomicU64,
    appended_bytes: AtomicU64,
    replayed: Replay,
    observer: Option<Arc<dyn DiskObserver>>,
    threads: Mutex<Vec<std::thread::JoinHandle<()>>>,
}

/// How long the syncer waits before it syncs bytes nobody waits for (so
/// the applier gets them).
const IDLE_SYNC: Duration = Duration::from_millis(20);
/// Group commit gathers writers for at most this long before a sync, and
/// stops once none has arrived for `QUIET` (`Wal::gather`).
const MAX_GATHER: Duration = Duration::from_millis(1);
const QUIET: Duration = Duration::from_micros(20);
/// By default the applier checkpoints when this share of the ring is
/// synced but not applied, or when anything is and the last checkpoint was
/// this long ago ([`CheckpointPolicy`]).
pub const CHECKPOINT_SHARE: u64 = 4;
pub const DEFAULT_CHECKPOINT_INTERVAL: Duration = Duration::from_millis(500);

impl Wal {
    /// Opens (creating) the log beside `pool_path` for a pool that was just
    /// replayed (its log is empty) and starts the syncer and the applier.
    /// `pool` is a descriptor of the pool file the applier writes. The ring
    /// is [`ring_capacity`]`(log_bytes)`; `checkpoint_bytes` and
    /// `checkpoint_interval` make its [`CheckpointPolicy`].
    #[allow(clippy::too_many_arguments)]
    pub fn open(
        pool_path: &Path,
        pool: File,
        pool_id: [u8; 16],
        log_bytes: u64,
        (checkpoint_bytes, checkpoint_interval): (Option<u64>, Duration),
        grain: (u64, u64),
        replayed: Replay,
        observer: Option<Arc<dyn DiskObserver>>,
    ) -> Result<Arc<Wal>> {
        let capacity = ring_capacity(log_bytes);
        let policy = CheckpointPolicy::for_ring(capacity, checkpoint_bytes, checkpoint_interval)?;
        let path = log_path(pool_path);
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(false)
            .open(&path)
            .map_err(|e| Error::io(format!("open {}", path.display()), e))?;
        let io = |what: &str, e| Error::io(format!("{what} {}", path.display()), e);
        let old = read_header(&file)?;
        let len = file.metadata().map_err(|e| io("stat", e))?.len();
        if len < RING_OFFSET + capacity {
            zero_fill(&file, len, RING_OFFSET + capacity).map_err(|e| io("allocate", e))?;
            if let Some(o) = &observer {
                o.resized(DiskFile::Log, RING_OFFSET + capacity);
                o.synced(DiskFile::Log);
            }
        }
        // The replay left the log empty at a start no record in the ring
        // claims (it moved the start a whole ring past the old one, and
        // appends never run a ring past the start), whatever the capacity.
        let (start, seq) = old.map_or((0, 0), |h| (h.start, h.seq));
        let header = Header {
            pool_id,
            seq: seq + 1,
            capacity,
            start,
        };
        write_header(&file, &header, observer.as_ref())
            .map_err(|e| io("write the header of", e))?;
        sync_parent_dir(&path);
        let wal = Arc::new(Wal {
            file,
            pool,
            path,
            pool_id,
            capacity,
            policy,
            grain,
            pending: Mutex::new(Pending {
                buf: Vec::new(),
                from: start,
            }),
            pos: Mutex::new(Positions {
                next: start,
                synced: start,
                start,
                wanted: start,
                ..Positions::default()
            }),
            next: AtomicU64::new(start),
            outcome: Arc::new(Outcome {
                synced: AtomicU64::new(start),
                failed: AtomicBool::new(false),
            }),
            checkpointing: Mutex::new(()),
            moved: Condvar::new(),
            wakers: Mutex::new(Vec::new()),
            unapplied: Mutex::new(Unapplied::default()),
            header_seq: AtomicU64::new(header.seq),
            syncs: AtomicU64::new(0),
            last_batch: std::sync::atomic::AtomicUsize::new(0),
            last_sync_nanos: AtomicU64::new(0),
            checkpoints: AtomicU64::new(0),
            appended_bytes: AtomicU64::new(0),
            replayed,
            observer,
            threads: Mutex::new(Vec::new()),
        });
        let spawn = |name: &str, f: fn(&Wal)| {
            let weak = Arc::downgrade(&wal);
            std::thread::Builder::new()
                .name(name.into())
                .spawn(move || run_while_open(weak, f))
                .map_err(|e| Error::io(format!("start the log's {name} thread"), e))
        };
        let syncer = spawn("persimmon-wal-sync", Wal::sync_round)?;
        let applier = spawn("persimmon-wal-apply", Wal::apply_round)?;
        wal.threads.lock().extend([syncer, applier]);
        Ok(wal)
    }

    /// The pool file was extended to `len` bytes (for the simulator: the
    /// new length is durable once the applier next syncs the pool file;
    /// until then a crash may leave the old one, which replay extends).
    pub fn pool_resized(&self, len: u64) {
        if let Some(o) = &self.observer {
            o.resized(DiskFile::Pool, len);
        }
    }

    /// Appends a fence's `lines` (pool offsets, 64-aligned, ascending), each
    /// with the contents `read_line` gives for it *now* — read under the
    /// append lock, so a later record of a line holds what an earlier one
    /// did or newer. Returns the LSN after the fence's records: once the
    /// log is synced past it, the lines are durable. Waits while the ring
    /// is full (the applier makes room).
    pub fn append(&self, lines: &[u64], mut read_line: impl FnMut(u64, &mut [u8])) -> Result<u64> {
        debug_assert!(!lines.is_empty());
        debug_assert!(lines.windows(2).all(|w| w[0] < w[1]), "sorted, no repeats");
        let mut scratch = Vec::new();
        loop {
            let mut pending = self.pending.lock();
            let lsn = pending.from + pending.buf.len() as u64;
            scratch.clear();
            encode_fence(lines, &mut read_line, lsn, self.capacity, &mut scratch);
            let end = lsn + scratch.len() as u64;
            let mut pos = self.pos.lock();
            if let Some(e) = &pos.poisoned {
                return Err(poisoned(e));
            }
            if end - pos.start <= self.capacity {
                pending.buf.extend_from_slice(&scratch);
                pos.next = end;
                self.next.store(end, Ordering::Release);
                drop(pos);
                drop(pending);
                self.appended_bytes
                    .fetch_add(scratch.len() as u64, Ordering::Relaxed);
                return Ok(end);
            }
            if scratch.len() as u64 > self.capacity / 2 {
                // Never with a ring of at least `MIN_CAPACITY`: a fence
                // flushes at most a segment's lines, mostly zeros.
                let why = format!(
                    "a fence of {} lines needs {} bytes of the write-ahead log's {}-byte ring",
                    lines.len(),
                    scratch.len(),
                    self.capacity
                );
                drop(pos);
                self.poison(why.clone());
                return Err(Error::InvalidOptions(why));
            }
            // Full: what was read is dropped (it is read again, under the
            // lock, once there is room); ask for a sync, which the applier
            // needs, and wait for it to move the start.
            drop(pending);
            pos.wanted = pos.wanted.max(lsn);
            pos.room_wanted = true;
            self.moved.notify_all();
            self.moved.wait_for(&mut pos, IDLE_SYNC);
        }
    }

    /// Waits until the log is synced at least to `lsn`.
    pub fn wait_synced(&self, lsn: u64) -> Result<()> {
        let mut pos = self.pos.lock();
        if let Some(e) = &pos.poisoned {
            // Even if synced this far: a write the failure refused
            // appended nothing, and waits for no more than this.
            return Err(poisoned(e));
        }
        if pos.synced >= lsn {
            return Ok(());
        }
        pos.wanted = pos.wanted.max(lsn);
        pos.waiters += 1;
        if pos.syncer_idle {
            self.moved.notify_all();
        }
        while pos.synced < lsn {
            if let Some(e) = &pos.poisoned {
                return Err(poisoned(e));
            }
            self.moved.wait(&mut pos);
        }
        Ok(())
    }

    /// Whether the log is synced to `lsn`; if not, `waker` is woken once it
    /// is (or the log fails), and a sync is asked for.
    pub fn poll_synced(&self, lsn: u64, waker: &Waker) -> Option<Result<()>> {
        {
            let mut pos = self.pos.lock();
            if let Some(e) = &pos.poisoned {
                return Some(Err(poisoned(e)));
            }
            if pos.synced >= lsn {
                return Some(Ok(()));
            }
            pos.wanted = pos.wanted.max(lsn);
            pos.waiters += 1;
            self.wakers.lock().push(waker.clone());
            if pos.syncer_idle {
                self.moved.notify_all();
            }
        }
        None
    }

    /// The LSN the next record gets: everything appended so far ends there
    /// (read without the lock: it may be a moment old).
    pub fn appended(&self) -> u64 {
        self.next.load(Ordering::Acquire)
    }

    pub fn figures(&self) -> LogFigures {
        let pos = self.pos.lock();
        LogFigures {
            capacity: self.capacity,
            used: pos.next - pos.start,
            appended: self.appended_bytes.load(Ordering::Relaxed),
            syncs: self.syncs.load(Ordering::Relaxed),
            checkpoints: self.checkpoints.load(Ordering::Relaxed),
            replayed: self.replayed,
        }
    }

    /// One round of the syncer: waits until a sync is wanted (or bytes have
    /// waited `IDLE_SYNC`), writes what was appended, syncs, and wakes the
    /// waiters.
    fn sync_round(&self) {
        let since = Instant::now();
        {
            let mut pos = self.pos.lock();
            loop {
                if pos.closing {
                    return;
                }
                let wanted = pos.wanted > pos.synced;
                let idle = pos.next > pos.synced && since.elapsed() >= IDLE_SYNC;
                if pos.poisoned.is_none() && (wanted || idle) {
                    break;
                }
                pos.syncer_idle = true;
                self.moved.wait_for(&mut pos, IDLE_SYNC);
                pos.syncer_idle = false;
            }
        }
        self.gather();
        if let Err(e) = self.write_and_sync() {
            self.poison(format!("sync {}: {e}", self.path.display()));
        }
    }

    /// Group commit's gathering: before a sync starts, gives the writers on
    /// their way a moment — until as many wait as the last sync served and
    /// a quarter more, and never longer than the last sync took (a writer
    /// arriving during a sync would wait that long anyway) — stopping as
    /// soon as nobody arrived for `QUIET`. Waiters do not wake the syncer
    /// while it gathers or syncs (each wake is a system call and a switch);
    /// it looks at their count between naps. Then it takes the batch.
    fn gather(&self) {
        let started = Instant::now();
        let limit =
            Duration::from_nanos(self.last_sync_nanos.load(Ordering::Relaxed)).min(MAX_GATHER);
        let last = self.last_batch.load(Ordering::Relaxed);
        let target = last + last / 4;
        let mut pos = self.pos.lock();
        while pos.waiters < target && started.elapsed() < limit && !pos.closing {
            let before = pos.waiters;
            self.moved.wait_for(&mut pos, QUIET);
            if pos.waiters == before {
                break;
            }
        }
        self.last_batch.store(pos.waiters, Ordering::Relaxed);
        pos.waiters = 0;
    }

    /// Marks the log failed and wakes everyone who waits.
    fn poison(&self, why: String) {
        let mut pos = self.pos.lock();
        pos.poisoned.get_or_insert(why);
        self.outcome.failed.store(true, Ordering::Release);
        self.moved.notify_all();
        drop(pos);
        self.wake_all();
    }

    /// Writes the pending bytes into the ring, syncs the log, and publishes
    /// the new synced position.
    fn write_and_sync(&self) -> std::io::Result<()> {
        let (from, buf) = {
            let mut pending = self.pending.lock();
            let from = pending.from;
            let buf = std::mem::take(&mut pending.buf);
            pending.from = from + buf.len() as u64;
            (from, buf)
        };
        let mut lsn = from;
        let mut rest = &buf[..];
        while !rest.is_empty() {
            let room = (self.capacity - lsn % self.capacity) as usize;
            let (now, later) = rest.split_at(room.min(rest.len()));
            let at = RING_OFFSET + lsn % self.capacity;
            if let Some(o) = &self.observer {
                o.wrote(DiskFile::Log, at, now);
            }
            self.file.write_all_at(now, at)?;
            lsn += now.len() as u64;
            rest = later;
        }
        let sync_started = Instant::now();
        self.file.sync_data()?;
        self.last_sync_nanos
            .store(sync_started.elapsed().as_nanos() as u64, Ordering::Relaxed);
        if let Some(o) = &self.observer {
            o.synced(DiskFile::Log);
        }
        self.syncs.fetch_add(1, Ordering::Relaxed);
        let end = from + buf.len() as u64;
        {
            let mut unapplied = self.unapplied.lock();
            unapplied.bytes += buf.len() as u64;
            unapplied.chunks.push((from, buf));
        }
        {
            let mut pos = self.pos.lock();
            debug_assert!(end >= pos.synced, "the synced position only grows");
            pos.synced = end;
            self.outcome.synced.store(end, Ordering::Release);
            self.moved.notify_all();
        }
        self.wake_all();
        Ok(())
    }

    fn wake_all(&self) {
        for w in std::mem::take(&mut *self.wakers.lock()) {
            w.wake();
        }
    }

    /// One round of the applier: waits until the [`CheckpointPolicy`] says
    /// a checkpoint is due (enough of the ring is synced and unapplied, or
    /// some is and the ring is filling, an appender waits for room, or the
    /// interval has passed), then checkpoints.
    fn apply_round(&self) {
        let since = Instant::now();
        {
            let mut pos = self.pos.lock();
            loop {
                if pos.closing {
                    return;
                }
                let unapplied = pos.synced - pos.start;
                let filling = pos.next - pos.start > (self.capacity / 2).max(self.policy.bytes);
                let due = unapplied > self.policy.bytes
                    || (unapplied > 0
                        && (filling || pos.room_wanted || since.elapsed() >= self.policy.interval));
                if pos.poisoned.is_none() && due {
                    break;
                }
                self.moved.wait_for(&mut pos, IDLE_SYNC);
            }
        }
        if let Err(e) = self.checkpoint() {
            self.poison(format!("checkpoint into the pool file: {e}"));
        }
    }

    /// Applies every synced record not yet applied to the pool file, syncs
    /// it, and moves the log's start past them.
    fn checkpoint(&self) -> std::io::Result<()> {
        // One checkpoint at a time: a later one must not move the start
        // past lines an earlier one has not synced into the pool yet.
        let _one = self.checkpointing.lock();
        let chunks = {
            let mut u = self.unapplied.lock();
            u.bytes = 0;
            std::mem::take(&mut u.chunks)
        };
        let Some(end) = chunks.last().map(|(from, buf)| from + buf.len() as u64) else {
            return Ok(());
        };
        let mut images = LineImages::default();
        for (from, buf) in &chunks {
            let mut lsn = *from;
            let mut at = 0usize;
            while at < buf.len() {
                if let Some(gap) = end_gap(lsn, self.capacity) {
                    at += gap as usize;
                    lsn += gap;
                    continue;
                }
                let rec = parse_record(&buf[at..], lsn).ok_or_else(|| {
                    std::io::Error::other(format!("record at {lsn} does not parse back"))
                })?;
                images.take_record(&rec);
                at += rec.bytes as usize;
                lsn += rec.bytes;
            }
        }
        images.write_into(&self.pool, self.grain, self.observer.as_ref())?;
        let seq = self.header_seq.fetch_add(1, Ordering::Relaxed) + 1;
        let header = Header {
            pool_id: self.pool_id,
            seq,
            capacity: self.capacity,
            start: end,
        };
        write_header(&self.file, &header, self.observer.as_ref())?;
        self.checkpoints.fetch_add(1, Ordering::Relaxed);
        let mut pos = self.pos.lock();
        pos.start = end;
        // Appenders still short of room ask again when they wake.
        pos.room_wanted = false;
        self.moved.notify_all();
        Ok(())
    }

    /// Syncs and applies everything appended so far: the pool file then
    /// holds every fenced line.
    pub fn settle(&self) -> Result<()> {
        let appended = self.pos.lock().next;
        self.wait_synced(appended)?;
        self.checkpoint()
            .map_err(|e| Error::io("checkpoint at close", e))
    }

    /// [`settle`](Self::settle)s, then stops the threads (a clean close).
    pub fn close(&self) -> Result<()> {
        let result = self.settle();
        self.pos.lock().closing = true;
        self.moved.notify_all();
        for t in std::mem::take(&mut *self.threads.lock()) {
            let _ = t.join();
        }
        result
    }
}

impl Drop for Wal {
    fn drop(&mut self) {
        let mut pos = self.pos.lock();
        pos.closing = true;
        self.moved.notify_all();
    }
}

/// Everything appended to a log up to one moment, as something to wait
/// for ([`crate::Db::durable`]): `.await` it (any executor), or
/// [`wait`](Self::wait) on it.
#[derive(Clone)]
pub struct Durable {
    /// Weak: a `Durable` kept after the pool closed must not keep the log
    /// (and its descriptor of the locked pool file) open.
    wal: Option<Weak<Wal>>,
    /// The log's synced position and failure, which outlive it.
    outcome: Option<Arc<Outcome>>,
    lsn: u64,
}

/// What a `Durable` reads of its log without a lock.
struct Outcome {
    synced: AtomicU64,
    /// Set with the log's failure: nothing is done any more (a write whose
    /// append the failure refused left the appended position where it was).
    failed: AtomicBool,
}

impl Durable {
    /// Everything `wal` appended so far (nothing to wait for without a log).
    pub fn now(wal: Option<&Arc<Wal>>) -> Durable {
        Durable {
            lsn: wal.map_or(0, |w| w.appended()),
            wal: wal.map(Arc::downgrade),
            outcome: wal.map(|w| w.outcome.clone()),
        }
    }

    /// Whether it is durable already (a sync may still be under way: then
    /// await it or [`wait`](Self::wait)).
    pub fn is_done(&self) -> bool {
        self.outcome.as_ref().is_none_or(|o| {
            !o.failed.load(Ordering::Acquire) && o.synced.load(Ordering::Acquire) >= self.lsn
        })
    }

    /// The log to wait on, while the pool is open; else the outcome: done
    /// without a log, and once the log closed, whether its close synced
    /// this far.
    fn open_log(&self) -> std::result::Result<Arc<Wal>, Result<()>> {
        let Some(weak) = &self.wal else {
            return Err(Ok(()));
        };
        match weak.upgrade() {
            Some(wal) => Ok(wal),
            None if self.is_done() => Err(Ok(())),
            None => Err(Err(poisoned(
                "the pool closed before this write was synced",
            ))),
        }
    }

    /// Blocks until it is durable.
    pub fn wait(&self) -> Result<()> {
        match self.open_log() {
            Ok(w) => w.wait_synced(self.lsn),
            Err(done) => done,
        }
    }
}

impl std::future::Future for Durable {
    type Output = Result<()>;

    fn poll(
        self: std::pin::Pin<&mut Self>,
        cx: &mut std::task::Context<'_>,
    ) -> std::task::Poll<Result<()>> {
        let wal = match self.open_log() {
            Ok(w) => w,
            Err(done) => return std::task::Poll::Ready(done),
        };
        match wal.poll_synced(self.lsn, cx.waker()) {
            Some(done) => std::task::Poll::Ready(done),
            None => std::task::Poll::Pending,
        }
    }
}

fn poisoned(e: &str) -> Error {
    Error::io(
        "the write-ahead log",
        std::io::Error::other(format!(
            "an earlier sync failed ({e}); writes since then are not durable and the pool must be reopened"
        )),
    )
}

/// Runs `round` until the log closes or goes.
fn run_while_open(weak: Weak<Wal>, round: fn(&Wal)) {
    loop {
        let Some(wal) = weak.upgrade() else { return };
        if wal.pos.lock().closing {
            return;
        }
        round(&wal);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn header_layout() {
        let h = Header {
            pool_id: [3; 16],
            seq: 9,
            capacity: 1 << 20,
            start: 4242,
        };
        let b = h.encode();
        assert_eq!(&b[..8], b"PSMWAL01");
        assert_eq!(u32::from_le_bytes(b[8..12].try_into().unwrap()), 1);
        assert_eq!(&b[16..32], &[3; 16]);
        assert_eq!(u64::from_le_bytes(b[32..40].try_into().unwrap()), 9);
        assert_eq!(u64::from_le_bytes(b[40..48].try_into().unwrap()), 1 << 20);
        assert_eq!(u64::from_le_bytes(b[48..56].try_into().unwrap()), 4242);
        assert_eq!(Header::decode(&b), Some(h));
        let mut torn = b;
        torn[50] ^= 1;
        assert_eq!(Header::decode(&torn), None);
    }

    #[test]
    fn a_failed_log_leaves_nothing_done() {
        let dir = tempfile::tempdir().unwrap();
        let pool_path = dir.path().join("p.pool");
        let pool = File::options()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&pool_path)
            .unwrap();
        pool.set_len(1 << 20).unwrap();
        let wal = Wal::open(
            &pool_path,
            pool,
            [1; 16],
            MIN_CAPACITY,
            (None, Duration::from_millis(500)),
            (4096, 64 << 10),
            Replay::default(),
            None,
        )
        .unwrap();
        let before = Durable::now(Some(&wal));
        assert!(before.is_done(), "nothing appended yet");
        wal.poison("a test's failure".into());
        // A write the failure refused appended nothing, so the position it
        // would wait for is already synced: it must still not be done.
        let after = Durable::now(Some(&wal));
        assert!(!after.is_done());
        assert!(after.wait().is_err());
        assert!(!before.is_done(), "the failure reaches older points too");
        assert!(wal.append(&[0], |_, dst| dst.fill(7)).is_err());
        wal.close().unwrap_err();
    }

    #[test]
    fn checkpoint_policy_defaults_clamps_and_refuses() {
        let ring = ring_capacity(64 << 20);
        assert_eq!(ring, 64 << 20);
        assert_eq!(ring_capacity(1 << 20), MIN_CAPACITY);
        assert_eq!(ring_capacity(MIN_CAPACITY + 1), MIN_CAPACITY + 4096);
        assert_eq!(ring_capacity(u64::MAX) % 4096, 0);
        let interval = Duration::from_millis(7);
        let p = CheckpointPolicy::for_ring(ring, None, interval).unwrap();
        assert_eq!(p.bytes, ring / CHECKPOINT_SHARE);
        assert_eq!(p.interval, interval);
        let p = CheckpointPolicy::for_ring(ring, Some(0), interval).unwrap();
        assert_eq!(p.bytes, 0);
        let p = CheckpointPolicy::for_ring(ring, Some(ring / 2), interval).unwrap();
        assert_eq!(p.bytes, ring / 2);
        // Within one largest record (and its pad) of the ring: clamped.
        for near in [ring - CHECKPOINT_HEADROOM + 1, ring] {
            let p = CheckpointPolicy::for_ring(ring, Some(near), interval).unwrap();
            assert_eq!(p.bytes, ring - CHECKPOINT_HEADROOM);
        }
        let e = CheckpointPolicy::for_ring(ring, Some(ring + 1), interval).unwrap_err();
        assert!(matches!(e, Error::InvalidOptions(_)), "{e}");
        assert!(e.to_string().contains("disk_checkpoint_bytes"), "{e}");
    }
}
