//! The `Db`: point operations over the MPKV index and the lane logs.
//!
//! Write path of a `put` (every persist point in order; see docs/design.md):
//! 1. take the home bucket's volatile lock (DRAM) with this put's sequence
//!    number; remember the last holder seen while waiting;
//! 2. if the key's slot now names a record carrying that holder's number,
//!    the two puts overlapped: this one is ordered first and returns
//!    (concurrent write elimination) — nothing written;
//! 3. for a new key, claim an empty slot by CAS to a delete marker (absent
//!    to readers);
//! 4. append the record to the lane's segment, flush, **fence** — the record
//!    is durable, no slot names it yet;
//! 5. store `<fp, offset, persist=0>` in the slot, flush, **fence** — the put
//!    is durable; a crash from here on keeps it;
//! 6. store `<fp, offset, persist=1>` (not flushed: readers that see 0 flush
//!    the slot themselves before using it), unlock, return.
//!
//! A delete stores a delete marker, flushes, **fences** (durable: absent),
//! then stores 0.
//!
//! Invariants:
//! - A reader (`get`) takes no lock and writes nothing to PM unless it meets
//!   a slot with persist=0, which it flushes, fences and marks persisted
//!   before using: no reader returns data (or an absence) that a crash could
//!   undo.
//! - Records are reclaimed segment by segment: a sealed segment whose live
//!   bytes reach 0 is freed through an epoch, after every reader that might
//!   hold an offset into it has moved on.
//! - Live bytes and the key count are exact once the background tally after
//!   open has finished; until then a writer applies its own accounting only
//!   to buckets the tally has already passed (the tally holds the bucket's
//!   locks while it passes).

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;

use crossbeam_epoch::{self as epoch, Guard};
use crossbeam_utils::CachePadded;

use crate::error::{Error, Result};
use crate::index::locks::{BucketLocks, Held};
use crate::index::{self, Directory, DramSpace, Index, SegRef};
use crate::layout::{
    self, RecordHeader, SegmentHeader, SegmentKind, Slot, RECORD_HEADER_BYTES, REC_FLAG_RMW,
};
use crate::log::{walk_segment, Lane, CLEANER_LANE, INTERNAL_LANE};

mod cleaner;
mod range;
#[cfg(test)]
mod tests;
use crate::options::{Options, PointIndex};
use crate::ordered::Ordered;
use crate::pmem::{self, Durability, PersistObserver, PmemFile};
use crate::pool::{Pool, KIND_CONTINUATION, KIND_DAMAGED, KIND_FREEING};
pub use range::{prefix_end, Range, RangeKeys};

/// Longest key accepted, in bytes (64 KiB).
pub const MAX_KEY_BYTES: usize = 64 << 10;
/// Longest value accepted, in bytes (64 MiB).
pub const MAX_VALUE_BYTES: usize = 64 << 20;

/// What an [`Db::update`] closure decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Leave the key as it is.
    Keep,
    /// Store this value.
    Put(Vec<u8>),
    /// Delete the key (no-op when absent).
    Delete,
}

const SPLIT_SEQ: u64 = (INTERNAL_LANE << 56) | 1;
const TALLY_SEQ: u64 = (INTERNAL_LANE << 56) | 2;
const CHECK_SEQ: u64 = (INTERNAL_LANE << 56) | 3;
const ORDERED_SEQ: u64 = (INTERNAL_LANE << 56) | 4;
const READ_SEQ: u64 = (INTERNAL_LANE << 56) | 5;

/// Rebuild stages signalled through `tally_signal`.
const REBUILD_TALLIED: u8 = 1;
const REBUILD_SWEPT: u8 = 2;

static NEXT_THREAD_TICKET: AtomicU64 = AtomicU64::new(0);
thread_local! {
    static THREAD_TICKET: u64 = NEXT_THREAD_TICKET.fetch_add(1, Ordering::Relaxed);
}

/// A Persimmon key-value store on one pool file.
///
/// `Db` is `Send + Sync`: share it (for example in an `Arc`) and call it from
/// any number of threads. Dropping it closes the pool cleanly.
pub struct Db {
    engine: EngineHandle,
    background: Option<JoinHandle<()>>,
    ordered_walk: Option<JoinHandle<()>>,
}

pub(crate) struct Engine {
    pub(crate) pool: Pool,
    pub(crate) index: Index,
    /// The point index's segments when it lives in DRAM (else in the pool).
    dram: Option<DramSpace>,
    /// DRAM point index: the walk after open has entered every key, so a
    /// miss in it is an answer (until then the ordered index is asked).
    dram_filled: AtomicBool,
    /// No segment may be freed: live bytes are not known for all records
    /// (the DRAM point index's rebuild failed).
    reclaim_blocked: AtomicBool,
    /// DRAM point index: a write changed the key count before the rebuild
    /// was done.
    written_in_rebuild: AtomicBool,
    /// The ordered index, when the pool keeps one.
    pub(crate) ordered: Option<Ordered>,
    ordered_walk_errors: parking_lot::Mutex<Vec<String>>,
    /// The ordered index's walk after open has ended (finished or failed).
    ordered_walk_ended: AtomicBool,
    /// One cache line (pair) each: lanes of different threads must not
    /// share lines (their counters and tails are written on every put).
    lanes: Vec<CachePadded<Lane>>,
    /// The log cleaner's own lane.
    cleaner_lane: Lane,
    /// Largest base sequence counter of any segment found at open.
    base_seq_floor: u64,
    /// Raises every lane above the pool-wide floor once, before the first
    /// sequence number is drawn (see `log` module invariants).
    seq_floor_ready: std::sync::Once,
    seed: u64,
    verify_reads: bool,
    /// Concurrent write elimination is on.
    eliminate: bool,
    /// Two-phase atomic write with lock-free reads is on (else: locked
    /// reads, slots stored already persisted).
    two_phase: bool,
    clean_open: bool,
    tally_cursor: AtomicU64,
    tally_done: AtomicBool,
    tally_signal: (Mutex<u8>, Condvar),
    base_count: AtomicU64,
    count_deltas: Box<[CachePadded<AtomicI64>]>,
    stop: AtomicBool,
    me: Weak<Engine>,
    split_mutex: parking_lot::Mutex<()>,
    eliminated_puts: AtomicU64,
    splits: AtomicU64,
    cleaned_segments: AtomicU64,
    cleaned_bytes: AtomicU64,
    tally_errors: parking_lot::Mutex<Vec<String>>,
}

/// Figures about a pool; see [`Db::stats`].
#[derive(Clone, Debug)]
pub struct Stats {
    /// Keys stored; exact once `rebuild_done` (before, after a crash or with
    /// the DRAM point index, the keys counted so far).
    pub keys: u64,
    /// Current size of the pool file in bytes.
    pub pool_bytes: u64,
    /// Largest size the pool may grow to (this open).
    pub pool_bytes_max: u64,
    /// Bytes of segments in use (log, index, large-record runs).
    pub used_bytes: u64,
    /// Bytes of records the index references.
    pub live_bytes: u64,
    pub segment_bytes: u64,
    pub segments_total: u32,
    pub segments_free: u32,
    pub segments_log: u32,
    pub segments_index: u32,
    pub segments_large: u32,
    pub segments_damaged: u32,
    /// Depth of the DRAM directory (log2 of its entries).
    pub index_depth: u8,
    pub lanes: usize,
    pub durability: Durability,
    pub flush_instruction: &'static str,
    pub nt_copy: &'static str,
    /// Puts that returned without writing because an overlapping put of the
    /// same key wrote after them (concurrent write elimination).
    pub eliminated_puts: u64,
    /// Index segment splits since open.
    pub index_splits: u64,
    /// Log segments the cleaner processed since open, and bytes it copied.
    pub cleaned_segments: u64,
    pub cleaned_bytes: u64,
    /// Whether the background rebuild after open (live bytes, key count) is done.
    pub rebuild_done: bool,
    /// The pool keeps the ordered index.
    pub ordered_index: bool,
    /// Ordered index: nodes allocated and node segments.
    pub ordered_nodes: u64,
    pub segments_ordered: u32,
    /// Ordered index: the walk after open (search hints, free node slots,
    /// orphan repair) has finished.
    pub ordered_walk_done: bool,
    /// Where the point index lives.
    pub point_index: PointIndex,
    /// The point index answers every point read: always with
    /// [`PointIndex::Pm`]; with [`PointIndex::Dram`], once its rebuild from
    /// the ordered index after open is done (until then the ordered index
    /// serves the reads it misses).
    pub point_index_ready: bool,
    /// DRAM the point index occupies with [`PointIndex::Dram`] (0 otherwise).
    pub dram_index_bytes: u64,
    /// Persistence counters of the whole process.
    pub pmem: pmem::PmemCounters,
}

/// Result of [`Db::check`].
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub keys: u64,
    pub index_segments: u32,
    pub log_segments: u32,
    pub large_records: u32,
    pub live_bytes: u64,
    /// Segments with no live record still waiting for their epoch to pass.
    pub reclaimable_segments: u32,
    /// Ordered index: linked nodes, and nodes whose key the point index does
    /// not hold (left by a crash between the two; the walk after open
    /// unlinks them).
    pub ordered_nodes: u64,
    pub ordered_orphans: u64,
    /// Every inconsistency found; empty when the pool is consistent.
    pub errors: Vec<String>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// A key's current record, as a write finds it under the bucket lock.
struct Found {
    /// Its slot (meaningful only when `in_index`).
    addr: u64,
    slot: Slot,
    header: RecordHeader,
    /// DRAM point index: the key's ordered-index node (else 0).
    node: u64,
    /// The point index holds it (always, except with the DRAM point index
    /// before its rebuild is done: then a key may be known only through its
    /// node, and its record is not yet counted live).
    in_index: bool,
}

impl Found {
    /// The record this entry makes live in the accounting, if any.
    fn counted(&self) -> Option<(u64, u64)> {
        self.in_index
            .then(|| (self.slot.offset(), self.header.total_bytes()))
    }
}

/// Stores 0 into a reserved slot when dropped while still armed.
struct ClaimGuard<'a> {
    pm: &'a pmem::PmemFile,
    addr: Option<u64>,
}

impl Drop for ClaimGuard<'_> {
    fn drop(&mut self) {
        if let Some(a) = self.addr {
            self.pm.store_u64(a, Slot::EMPTY.0);
        }
    }
}

/// Releases a bucket write lock when dropped.
struct BucketLock<'a> {
    locks: &'a BucketLocks,
    pm: &'a pmem::PmemFile,
    held: Held,
}

impl Drop for BucketLock<'_> {
    fn drop(&mut self) {
        self.locks.unlock(self.pm, self.held);
    }
}

/// Releases a bucket read lock when dropped (locked reads only).
struct ReadLock<'a> {
    locks: &'a BucketLocks,
    pm: &'a pmem::PmemFile,
    held: Held,
}

impl Drop for ReadLock<'_> {
    fn drop(&mut self) {
        self.locks.read_unlock(self.pm, self.held);
    }
}

impl Db {
    /// Opens the pool at `path`, creating it when it does not exist (unless
    /// `options.create` is false). Serves requests at once: no index or log
    /// scan happens before this returns; live-space accounting is rebuilt
    /// by a background thread.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Self::open_observed(path.as_ref(), options, None)
    }

    /// Like [`open`](Self::open), with every store, flush and fence on the
    /// pool reported to `observer` (the crash simulator's hook).
    #[doc(hidden)]
    pub fn open_observed(
        path: &Path,
        options: Options,
        observer: Option<Arc<dyn PersistObserver>>,
    ) -> Result<Db> {
        let (pool, scan) = Pool::open(path, &options, observer)?;
        let dram = if pool.sb.flags & layout::SB_FLAG_DRAM_POINT_INDEX != 0 {
            if let Some(&(s, _, _)) = scan.index_segments.first() {
                return Err(Error::corruption(
                    pool.segment_offset(s),
                    "an index segment in a pool whose point index lives in DRAM",
                ));
            }
            Some(DramSpace::new(pool.segment_bytes, pool.pool_bytes_max)?)
        } else {
            None
        };
        let dir = if let Some(d) = &dram {
            first_segment(d.alloc_segment()?)
        } else if scan.index_segments.is_empty() {
            if scan.has_records {
                return Err(Error::corruption(
                    layout::SUPERBLOCK_BYTES,
                    "the pool holds records but no index segment",
                ));
            }
            create_first_index_segment(&pool)?
        } else {
            let segs: Vec<(u64, u8, u64)> = scan
                .index_segments
                .iter()
                .map(|&(i, d, p)| (pool.segment_offset(i), d, p))
                .collect();
            Directory::rebuild(&segs).map_err(|e| Error::corruption(layout::SUPERBLOCK_BYTES, e))?
        };
        let lanes: Vec<CachePadded<Lane>> = (0..options.lanes)
            .map(|i| {
                let active = scan.active_log[i].map(|(s, _)| s);
                CachePadded::new(Lane::new(i as u8, scan.lane_max_seq[i], active))
            })
            .collect();
        let cleaner_active = scan.active_log[CLEANER_LANE as usize].map(|(s, _)| s);
        let cleaner_lane = Lane::new(
            CLEANER_LANE,
            scan.lane_max_seq[CLEANER_LANE as usize],
            cleaner_active,
        );
        let base_seq_floor = scan.lane_max_seq.iter().copied().max().unwrap_or(0);
        // The DRAM point index counts its keys as its rebuild enters them.
        let clean_count = pool.clean_key_count.filter(|_| dram.is_none());
        let mech = options.mechanisms;
        let locks = BucketLocks::new(
            !mech.volatile_lock_table,
            !mech.lock_free_reads,
            pool.open_count,
        );
        let index = Index::new(dir, pool.segment_bytes, locks);
        let seed = pool.sb.hash_seed;
        let ordered = if pool.sb.flags & layout::SB_FLAG_ORDERED_INDEX != 0 {
            if scan.ordered_segments.is_empty() && scan.has_records {
                return Err(Error::corruption(
                    layout::SUPERBLOCK_BYTES,
                    "the pool holds records but its ordered index has no segment (damaged head?)",
                ));
            }
            Some(Ordered::open(&pool, &scan.ordered_segments, seed)?)
        } else if let Some(&(s, _, _)) = scan.ordered_segments.first() {
            return Err(Error::corruption(
                pool.segment_offset(s),
                "an ordered-index segment in a pool created without the ordered index",
            ));
        } else {
            None
        };
        let lane_count = lanes.len();
        let engine = Arc::new_cyclic(|me| Engine {
            pool,
            index,
            dram,
            dram_filled: AtomicBool::new(false),
            reclaim_blocked: AtomicBool::new(false),
            written_in_rebuild: AtomicBool::new(false),
            ordered,
            ordered_walk_errors: parking_lot::Mutex::new(Vec::new()),
            ordered_walk_ended: AtomicBool::new(false),
            lanes,
            cleaner_lane,
            base_seq_floor,
            seq_floor_ready: std::sync::Once::new(),
            seed,
            verify_reads: options.verify_reads,
            eliminate: mech.write_elimination,
            two_phase: mech.lock_free_reads,
            clean_open: clean_count.is_some(),
            tally_cursor: AtomicU64::new(0),
            tally_done: AtomicBool::new(false),
            tally_signal: (Mutex::new(0), Condvar::new()),
            base_count: AtomicU64::new(clean_count.unwrap_or(0)),
            count_deltas: (0..lane_count)
                .map(|_| CachePadded::new(AtomicI64::new(0)))
                .collect(),
            stop: AtomicBool::new(false),
            me: me.clone(),
            split_mutex: parking_lot::Mutex::new(()),
            eliminated_puts: AtomicU64::new(0),
            splits: AtomicU64::new(0),
            cleaned_segments: AtomicU64::new(0),
            cleaned_bytes: AtomicU64::new(0),
            tally_errors: parking_lot::Mutex::new(Vec::new()),
        });
        let bg = engine.clone();
        let (run_cleaner, cleaner_rate) = (options.cleaner, options.cleaner_bytes_per_sec);
        let background = std::thread::Builder::new()
            .name("persimmon-background".into())
            .spawn(move || {
                bg.rebuild();
                if run_cleaner {
                    bg.cleaner_loop(cleaner_rate);
                }
            })
            .map_err(|e| Error::io("spawn the rebuild thread", e))?;
        if engine.ordered.as_ref().is_some_and(|o| o.walk_done()) {
            // A new ordered index: nothing to walk, nothing to enter.
            engine.dram_filled.store(true, Ordering::Release);
            engine.ordered_walk_ended.store(true, Ordering::Release);
        }
        let ordered_walk = match &engine.ordered {
            Some(o) if !o.walk_done() => {
                let walker = engine.clone();
                Some(
                    std::thread::Builder::new()
                        .name("persimmon-ordered".into())
                        .spawn(move || walker.ordered_walk())
                        .map_err(|e| Error::io("spawn the ordered-index walk", e))?,
                )
            }
            _ => None,
        };
        Ok(Db {
            engine: EngineHandle(Some(engine)),
            background: Some(background),
            ordered_walk,
        })
    }

    /// The value of `key`, copied out.
    pub fn get(&self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        self.get_with(key, |v| v.to_vec())
    }

    /// Calls `f` with the value of `key` in place (no copy) and returns its
    /// result. `f` runs while the value is protected from reclamation; keep
    /// it short and do not call back into the `Db` from it.
    pub fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.engine.get_with(key, f)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.engine.get_with(key, |_| ())?.is_some())
    }

    /// Stores `value` under `key`. Durable when this returns.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.engine.put(key, value)
    }

    /// Deletes `key`; returns whether it existed. Durable when this returns.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.engine.delete(key)
    }

    /// Atomic read-modify-write: `f` sees the current value (or `None`) while
    /// the key is locked and decides what to store; its second result is
    /// returned. Durable when this returns. `f` must not call into the `Db`.
    pub fn update<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> (Update, R)) -> Result<R> {
        self.engine.update(key, f)
    }

    /// Number of keys, in O(1). Right after an open that followed a crash it
    /// waits for the background rebuild to count them (one pass over the
    /// index); after a clean close the count is known at once.
    pub fn len(&self) -> u64 {
        self.engine.len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// Iterates over all key-value pairs in no particular order.
    ///
    /// Guarantees under concurrent writes: the iterator never fails because
    /// of them; every key present for the whole iteration is returned at
    /// least once (exactly once unless an index segment splits while the
    /// iteration runs); a value returned is one the key held, durably, at
    /// some moment during the iteration. Keys inserted or deleted meanwhile
    /// may or may not appear. With the DRAM point index, right after open
    /// this waits until the index is rebuilt.
    pub fn iter(&self) -> Iter<'_> {
        if self.engine.dram.is_some() {
            self.engine.wait_tally();
        }
        Iter {
            engine: &self.engine,
            prefix16: 0,
            bucket: 0,
            buffer: std::collections::VecDeque::new(),
            done: false,
        }
    }

    /// Where this pool's point index lives (chosen when it was created).
    pub fn point_index(&self) -> PointIndex {
        if self.engine.dram.is_some() {
            PointIndex::Dram
        } else {
            PointIndex::Pm
        }
    }

    /// Figures about the pool.
    pub fn stats(&self) -> Stats {
        self.engine.stats()
    }

    /// Walks the whole pool and verifies it: every index entry names a record
    /// with a valid CRC in a log segment, in the right segment and bucket,
    /// once; live bytes per segment and the key count match; every live
    /// record lies inside its segment's valid record prefix. Writers wait
    /// while it runs; readers do not.
    pub fn check(&self) -> Result<CheckReport> {
        self.engine.check()
    }

    /// How far a persisted write survives on this pool's file system.
    pub fn durability(&self) -> Durability {
        self.engine.pool.pm.durability()
    }

    /// Path of the pool file.
    pub fn path(&self) -> &Path {
        &self.engine.pool.path
    }

    /// Runs the log cleaner once over every sealed log segment that has dead
    /// space, on the calling thread; returns how many segments it cleaned.
    /// (The background cleaner does this on its own when space runs high;
    /// this is for tests and tools.)
    #[doc(hidden)]
    pub fn clean_now(&self) -> Result<usize> {
        self.engine.clean_now()
    }

    /// Blocks until the background rebuild after open has finished: live
    /// bytes and the key count are exact and every segment found dead has
    /// been handed to the epoch for release; with the ordered index, its
    /// walk after open has also ended (search hints rebuilt, orphans
    /// unlinked, free node slots known).
    pub fn wait_for_rebuild(&self) {
        self.engine.wait_rebuild(REBUILD_SWEPT);
        if self.ordered_walk.is_some() {
            while !self.engine.ordered_walk_ended.load(Ordering::Acquire) {
                std::thread::sleep(std::time::Duration::from_millis(1));
            }
        }
    }

    /// Closes the pool cleanly (the same as dropping the `Db`, but reports
    /// nothing can go wrong: kept for symmetry with `open`).
    pub fn close(self) {}
}

impl Drop for Db {
    fn drop(&mut self) {
        self.engine.stop.store(true, Ordering::Release);
        if let Some(h) = self.background.take() {
            let _ = h.join();
        }
        if let Some(h) = self.ordered_walk.take() {
            let _ = h.join();
        }
        // Close the pool here and now, not on whichever thread happens to
        // run one of its epoch-deferred frees (they hold the engine for a
        // moment): a reopen right after the drop must not find the pool
        // still locked.
        let Some(mut engine) = self.engine.0.take() else {
            return;
        };
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        loop {
            match Arc::try_unwrap(engine) {
                Ok(last) => return drop(last),
                Err(shared) if std::time::Instant::now() < deadline => {
                    engine = shared;
                    std::thread::yield_now();
                }
                Err(_) => return,
            }
        }
    }
}

/// The `Db`'s reference to its engine (taken in `Drop` only).
struct EngineHandle(Option<Arc<Engine>>);

impl std::ops::Deref for EngineHandle {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        self.0
            .as_deref()
            .expect("the engine is taken only when the Db drops")
    }
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.tally_done.load(Ordering::Acquire) {
            let keys = self.count_now();
            self.pool.mark_clean(keys);
        }
    }
}

fn create_first_index_segment(pool: &Pool) -> Result<Directory> {
    let seg = pool.reserve(1)?;
    let off = pool.segment_offset(seg);
    pool.pm.zero_persistent(
        off + layout::SEGMENT_HEADER_BYTES,
        (pool.segment_bytes - layout::SEGMENT_HEADER_BYTES) as usize,
    );
    // Persist point: empty buckets are durable before the header names them.
    pool.pm.fence();
    pool.commit(
        seg,
        SegmentHeader {
            kind: SegmentKind::Index,
            lane_or_depth: 0,
            run_segments: 1,
            base_seq_or_prefix: 0,
        },
    );
    Ok(first_segment(off))
}

/// The directory of a new index: one segment at `offset`.
fn first_segment(offset: u64) -> Directory {
    Directory {
        depth: 0,
        entries: vec![SegRef {
            offset,
            depth: 0,
            prefix: 0,
        }],
    }
}

fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: MAX_KEY_BYTES,
        });
    }
    Ok(())
}

fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

/// Sets a flag when dropped (also on unwinding).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

/// Outcome of the locked part of a write.
enum Locked<R> {
    Done(R),
    /// The bucket pair has no free slot: split this segment and retry.
    Split(SegRef),
    /// Free slots seen by the scan were taken by writers of the neighbour
    /// bucket meanwhile: look again before deciding to split.
    Rescan,
}

/// What the locked part of a write knows about its lock.
struct LockCtx {
    seg: SegRef,
    /// A holder seen *before it started publishing*, or 0 (see `BucketLocks::lock`).
    observed: u64,
    held: Held,
}

impl Engine {
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed)
    }

    #[inline]
    fn lane(&self) -> (usize, &Lane) {
        self.seq_floor_ready.call_once(|| {
            self.cleaner_lane.recover(&self.pool);
            let floor = self.base_seq_floor.max(self.cleaner_lane.walked_max());
            for lane in &self.lanes {
                lane.raise(floor);
            }
        });
        let i = THREAD_TICKET.with(|t| *t as usize) % self.lanes.len();
        (i, &self.lanes[i])
    }

    /// The memory of the point index's slots: the pool, or DRAM.
    #[inline]
    fn ipm(&self) -> &PmemFile {
        match &self.dram {
            Some(d) => &d.slots,
            None => &self.pool.pm,
        }
    }

    /// Flushes a slot word (in `pm`) seen with persist=0 and marks it
    /// persisted, so the caller may act on it.
    #[inline]
    fn help_persist(&self, pm: &PmemFile, addr: u64, value: u64) {
        pm.flush(addr, 8);
        pm.fence();
        let _ = pm.cas_u64(addr, value, value | Slot::PERSIST_BIT);
    }

    /// Decodes and sanity-checks the record header at `offset` (an offset
    /// read from a slot, so untrusted).
    fn record_header(&self, offset: u64) -> Result<RecordHeader> {
        if offset < layout::SUPERBLOCK_BYTES || !offset.is_multiple_of(layout::RECORD_ALIGN) {
            return Err(Error::corruption(
                offset,
                "slot names an impossible record offset",
            ));
        }
        let h = RecordHeader::decode(self.pool.pm.slice(offset, RECORD_HEADER_BYTES)?);
        if h.key_len as usize > MAX_KEY_BYTES || h.value_len as usize > MAX_VALUE_BYTES {
            return Err(Error::corruption(
                offset,
                "record header has impossible lengths",
            ));
        }
        if offset + h.total_bytes() > self.pool.pm.len() {
            return Err(Error::corruption(offset, "record runs past the pool end"));
        }
        Ok(h)
    }

    #[inline]
    fn record_key(&self, offset: u64, h: &RecordHeader) -> Result<&[u8]> {
        self.pool
            .pm
            .slice(offset + RECORD_HEADER_BYTES as u64, h.key_len as usize)
    }

    #[inline]
    fn record_value(&self, offset: u64, h: &RecordHeader) -> Result<&[u8]> {
        let v = self.pool.pm.slice(
            offset + RECORD_HEADER_BYTES as u64 + h.key_len as u64,
            h.value_len as usize,
        )?;
        if self.verify_reads {
            self.verify_record(offset, h)?;
        }
        Ok(v)
    }

    fn verify_record(&self, offset: u64, h: &RecordHeader) -> Result<()> {
        let body = self.pool.pm.slice(
            offset + 4,
            RECORD_HEADER_BYTES - 4 + h.key_len as usize + h.value_len as usize,
        )?;
        if layout::record_crc(body) != h.crc {
            return Err(Error::corruption(offset, "record CRC32C mismatch"));
        }
        Ok(())
    }

    /// Lock-free lookup in `seg`: the record of `key`, helping persist its
    /// slot (or a delete marker in the way) when needed.
    fn find_lockfree(
        &self,
        seg: &SegRef,
        h: u64,
        key: &[u8],
    ) -> Result<Option<(u64, RecordHeader)>> {
        let fp = index::fingerprint(h);
        let pm = self.ipm();
        for bucket in self.index.probe(seg, h) {
            for addr in self.index.slots(bucket) {
                let v = pm.load_u64(addr);
                let s = Slot(v);
                if s.is_empty() || s.fingerprint() != fp {
                    continue;
                }
                if s.is_marker() {
                    if !s.persisted() {
                        self.help_persist(pm, addr, v);
                    }
                    continue;
                }
                let off = s.offset();
                let hdr = self.record_header(off)?;
                if self.record_key(off, &hdr)? == key {
                    if !s.persisted() {
                        self.help_persist(pm, addr, v);
                    }
                    return Ok(Some((off, hdr)));
                }
                if self.verify_reads {
                    // A damaged key must not pass for "some other key": with
                    // verification on, a fingerprint match gets its CRC checked.
                    self.verify_record(off, &hdr)?;
                }
            }
        }
        Ok(None)
    }

    fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        check_key(key)?;
        let h = self.hash(key);
        loop {
            let _guard = epoch::pin();
            // Read before the index: once it is set, the DRAM index holds
            // every key (a miss read after it would not be an answer).
            let filled = self.dram.is_none() || self.dram_filled.load(Ordering::Acquire);
            let seg = self.index.dir.load().lookup(h);
            let _read = (!self.two_phase).then(|| {
                let pm = self.ipm();
                let bucket = self.index.probe(&seg, h)[0];
                ReadLock {
                    locks: &self.index.locks,
                    pm,
                    held: self.index.locks.read_lock(pm, bucket),
                }
            });
            let found = self.find_lockfree(&seg, h, key)?;
            // A split may have moved the key to a new segment after we chose
            // this one (and writers may then reuse the old copy's slot).
            if self.index.dir.load().lookup(h) != seg {
                continue;
            }
            return match found {
                None if !filled => self.get_locked(key, h, f),
                None => Ok(None),
                Some((off, hdr)) => Ok(Some(f(self.record_value(off, &hdr)?))),
            };
        }
    }

    /// DRAM point index before its rebuild is done, after a miss: the read
    /// again under the key's bucket lock, which looks at the key's node too.
    /// The lock matters: a writer stores the node's record word before the
    /// DRAM slot, so without it a reader could return a value that a later
    /// reader, finding the index complete but the slot not yet stored,
    /// would not see.
    fn get_locked<R>(&self, key: &[u8], h: u64, f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        let mut f = Some(f);
        self.with_locked(key, h, READ_SEQ, |_, found, _, _| {
            let Some(found) = found else {
                return Ok(Locked::Done(None));
            };
            let value = self.record_value(found.slot.offset(), &found.header)?;
            let f = f.take().expect("the lookup body runs to completion once");
            Ok(Locked::Done(Some(f(value))))
        })
    }

    /// DRAM point index before its rebuild is done: the record of `key`
    /// through its ordered-index node (`node` when the caller knows it).
    /// Returns the node, its record word (marked persisted) and the record's
    /// header. The caller is pinned.
    fn find_in_ordered(
        &self,
        key: &[u8],
        node: Option<u64>,
    ) -> Result<Option<(u64, Slot, RecordHeader)>> {
        let Some(o) = &self.ordered else {
            return Ok(None);
        };
        let node = match node {
            Some(n) => n,
            None => match o.find(&self.pool, key)? {
                Some(n) => n,
                None => return Ok(None),
            },
        };
        let pm = &self.pool.pm;
        let addr = Ordered::record_word(node);
        let v = pm.load_u64(addr);
        let s = Slot(v);
        if s.is_empty() {
            return Ok(None);
        }
        if !s.persisted() {
            // The same two-phase word as a slot: never act on a value a
            // crash could still undo.
            self.help_persist(pm, addr, v);
        }
        if s.is_marker() {
            return Ok(None);
        }
        let hdr = self.record_header(s.offset())?;
        if self.record_key(s.offset(), &hdr)? != key
            || s.fingerprint() != index::fingerprint(self.hash(key))
        {
            return Err(Error::corruption(
                node,
                "an ordered-index node's record word names a record of another key",
            ));
        }
        Ok(Some((node, s.with_persist(), hdr)))
    }

    /// Runs `body` with the home bucket of `h` locked and the key's slot
    /// looked up; splits and retries when `body` asks for room.
    fn with_locked<R>(
        &self,
        key: &[u8],
        h: u64,
        seq: u64,
        body: impl FnMut(&LockCtx, Option<Found>, &[(u64, u64)], &Guard) -> Result<Locked<R>>,
    ) -> Result<R> {
        self.with_locked_at(key, h, seq, None, body)
    }

    /// [`with_locked`](Self::with_locked); with the DRAM point index before
    /// its rebuild is done, a key the index misses is looked up in the
    /// ordered index (at `node` when given) and passed to `body` as found
    /// but not `in_index`.
    fn with_locked_at<R>(
        &self,
        key: &[u8],
        h: u64,
        seq: u64,
        node: Option<u64>,
        mut body: impl FnMut(&LockCtx, Option<Found>, &[(u64, u64)], &Guard) -> Result<Locked<R>>,
    ) -> Result<R> {
        let fp = index::fingerprint(h);
        let pm = self.ipm();
        loop {
            let guard = epoch::pin();
            let seg = self.index.dir.load().lookup(h);
            let probe = self.index.probe(&seg, h);
            let (held, observed) = self.index.locks.lock(pm, probe[0], seq);
            let lock = BucketLock {
                locks: &self.index.locks,
                pm,
                held,
            };
            if self.index.dir.load().lookup(h) != seg {
                continue;
            }
            let mut found = None;
            let mut free = [(0u64, 0u64); 2 * layout::SLOTS_PER_BUCKET];
            let mut free_count = 0;
            for bucket in probe {
                for addr in self.index.slots(bucket) {
                    let v = pm.load_u64(addr);
                    let s = Slot(v);
                    if s.is_empty() || !seg.owns_fingerprint(s.fingerprint()) {
                        free[free_count] = (addr, v);
                        free_count += 1;
                        continue;
                    }
                    if s.is_marker() || s.fingerprint() != fp || found.is_some() {
                        continue;
                    }
                    let hdr = self.record_header(s.offset())?;
                    if self.record_key(s.offset(), &hdr)? == key {
                        found = Some(Found {
                            addr,
                            slot: s,
                            header: hdr,
                            node: self.dram.as_ref().map_or(0, |d| d.nodes.load_u64(addr)),
                            in_index: true,
                        });
                    }
                }
            }
            // Under the lock the answer is stable: the rebuild enters keys
            // under their bucket locks before it reports itself done.
            if found.is_none() && self.dram.is_some() && !self.dram_filled.load(Ordering::Acquire) {
                found = self
                    .find_in_ordered(key, node)?
                    .map(|(node, slot, header)| Found {
                        addr: 0,
                        slot,
                        header,
                        node,
                        in_index: false,
                    });
            }
            let ctx = LockCtx {
                seg,
                observed: if self.eliminate { observed } else { 0 },
                held,
            };
            match body(&ctx, found, &free[..free_count], &guard) {
                Ok(Locked::Done(r)) => return Ok(r),
                Ok(Locked::Split(seg)) => {
                    drop(lock);
                    drop(guard);
                    self.split(seg)?;
                }
                Ok(Locked::Rescan) => {}
                Err(Error::PoolFull { .. })
                    if self.pool.releases_pending.load(Ordering::Acquire) > 0 =>
                {
                    // Dead segments are waiting for their epoch: unpin, let it
                    // pass, and try again.
                    drop(lock);
                    drop(guard);
                    self.reclaim_pending()?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// Claims one of `free` for a new key by CAS to a delete marker (absent
    /// to readers). Returns its address.
    fn claim(&self, free: &[(u64, u64)], fp: u16) -> Option<u64> {
        let marker = Slot::delete_marker(fp).0;
        free.iter()
            .find(|&&(addr, cur)| self.ipm().cas_u64(addr, cur, marker).is_ok())
            .map(|&(addr, _)| addr)
    }

    /// Appends a record; returns its offset and total size. The record is
    /// durable and counted live in its segment.
    fn write_record(
        &self,
        lane: &Lane,
        key: &[u8],
        value: &[u8],
        header: &[u8; RECORD_HEADER_BYTES],
        guard: &Guard,
    ) -> Result<(u64, u64)> {
        let seq = RecordHeader::decode(header).seq;
        let total = layout::record_bytes(key.len(), value.len());
        let pm = &self.pool.pm;
        let write = |at: u64| {
            if total <= 512 {
                let mut buf = [0u8; 512];
                let n = RECORD_HEADER_BYTES + key.len() + value.len();
                buf[..RECORD_HEADER_BYTES].copy_from_slice(header);
                buf[RECORD_HEADER_BYTES..RECORD_HEADER_BYTES + key.len()].copy_from_slice(key);
                buf[RECORD_HEADER_BYTES + key.len()..n].copy_from_slice(value);
                pm.write_persistent(at, &buf[..n]);
            } else {
                let mut head = Vec::with_capacity(RECORD_HEADER_BYTES + key.len());
                head.extend_from_slice(header);
                head.extend_from_slice(key);
                pm.write_persistent(at, &head);
                pm.write_persistent(at + head.len() as u64, value);
            }
        };
        if total > self.pool.segment_bytes / 2 {
            // A large record gets a run of segments of its own.
            let run = (layout::SEGMENT_HEADER_BYTES + total).div_ceil(self.pool.segment_bytes);
            let first = self.pool.allocate(SegmentHeader {
                kind: SegmentKind::Large,
                lane_or_depth: lane.id as u32,
                run_segments: run as u32,
                base_seq_or_prefix: seq & crate::log::COUNTER_MASK,
            })?;
            let at = self.pool.segment_offset(first) + layout::SEGMENT_HEADER_BYTES;
            write(at);
            // Persist point: the large record is durable before a slot names it.
            pm.fence();
            let info = &self.pool.segments[first as usize];
            info.live_bytes.fetch_add(total, Ordering::SeqCst);
            info.sealed.store(true, Ordering::SeqCst);
            return Ok((at, total));
        }
        let (at, sealed) = lane.append(&self.pool, total, write)?;
        if let Some(old) = sealed {
            self.maybe_free(old, guard);
        }
        Ok((at, total))
    }

    /// Whether the tally has passed the bucket holding slot `addr` (the
    /// caller holds a lock that keeps this answer stable).
    #[inline]
    fn tallied(&self, addr: u64) -> bool {
        // The DRAM point index counts exactly what it holds, from the start.
        self.dram.is_some()
            || self.tally_done.load(Ordering::Acquire)
            || addr < self.tally_cursor.load(Ordering::Acquire)
    }

    #[inline]
    fn sub_live(&self, offset: u64, total: u64, guard: &Guard) {
        let seg = self.pool.segment_of(offset);
        let info = &self.pool.segments[seg as usize];
        if info.live_bytes.fetch_sub(total, Ordering::SeqCst) == total {
            self.maybe_free(seg, guard);
        }
    }

    /// Accounting after slot `addr` took record `new` (and dropped `old`).
    fn account(
        &self,
        lane: usize,
        addr: u64,
        new: Option<(u64, u64)>,
        old: Option<(u64, u64)>,
        guard: &Guard,
    ) {
        let tallied = self.tallied(addr);
        if let Some((off, total)) = new {
            if !tallied {
                // The tally will count it when it reaches this bucket.
                self.sub_live(off, total, guard);
            }
        }
        if let Some((off, total)) = old {
            if tallied {
                self.sub_live(off, total, guard);
            }
        }
        if self.clean_open || tallied {
            let delta = new.is_some() as i64 - old.is_some() as i64;
            if delta != 0 {
                self.count_deltas[lane].fetch_add(delta, Ordering::Relaxed);
            }
        }
    }

    /// Publishes record `off` of the key whose slot is `addr` (and whose
    /// ordered-index node is `node`, with the DRAM point index).
    #[inline]
    fn publish(&self, addr: u64, node: u64, fp: u16, off: u64) {
        match &self.dram {
            None => self.publish_word(addr, fp, off),
            Some(d) => {
                self.note_rebuild_write();
                // The node's record word is the persistent truth; the DRAM
                // slot is stored once it is durable, already marked so.
                self.publish_word(Ordered::record_word(node), fp, off);
                d.nodes.store_u64(addr, node);
                d.slots.store_u64(addr, Slot::new(fp, off, true).0);
            }
        }
    }

    /// DRAM point index: remembers that a write ran before the rebuild was
    /// done (called before the write changes anything the rebuild reads).
    #[inline]
    fn note_rebuild_write(&self) {
        if !self.dram_filled.load(Ordering::Acquire) {
            self.written_in_rebuild.store(true, Ordering::Release);
        }
    }

    /// Stores record `off` into the pool word `addr` (a slot, or a node's
    /// record word) with the two-phase atomic write.
    #[inline]
    fn publish_word(&self, addr: u64, fp: u16, off: u64) {
        let pm = &self.pool.pm;
        let slot = Slot::new(fp, off, false);
        if !self.two_phase {
            // Ablation: readers lock the bucket, so the slot goes in with its
            // persist bit set and is durable before the lock is released.
            pm.store_u64(addr, slot.with_persist().0);
            pm.flush(addr, 8);
            pm.fence();
            return;
        }
        pm.store_u64(addr, slot.0);
        pm.flush(addr, 8);
        // Persist point: the slot names the record durably; the write is done.
        pm.fence();
        pm.store_u64(addr, slot.with_persist().0);
    }

    /// The ordered index limits keys to half a segment.
    fn check_ordered_key(&self, key: &[u8]) -> Result<()> {
        match &self.ordered {
            Some(o) if key.len() > o.max_key() => Err(Error::KeyTooLarge {
                len: key.len(),
                max: o.max_key(),
            }),
            _ => Ok(()),
        }
    }

    /// Links `key` into the ordered index (a new key, before the point index
    /// names it). On failure the claimed slot `addr` is given back.
    /// Returns the key's node (0 without the ordered index) and whether it
    /// was linked now.
    fn ordered_insert(&self, key: &[u8], addr: Option<u64>, guard: &Guard) -> Result<(u64, bool)> {
        let Some(o) = &self.ordered else {
            return Ok((0, false));
        };
        o.insert(&self.pool, key, guard).inspect_err(|_| {
            if let Some(a) = addr {
                self.ipm().store_u64(a, 0);
            }
        })
    }

    /// Undoes [`ordered_insert`](Self::ordered_insert) after a failed write
    /// (best effort: a node left behind is an orphan, skipped by readers and
    /// unlinked by the next open's walk).
    fn ordered_undo(&self, key: &[u8], linked: bool, guard: &Guard) {
        if let (true, Some(o)) = (linked, &self.ordered) {
            let _ = o.remove(&self.pool, key, guard);
        }
    }

    fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.check_ordered_key(key)?;
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        let (lane_index, lane) = self.lane();
        let seq = lane.next_seq(&self.pool);
        // The CRC over the value is computed before taking the lock.
        let header = RecordHeader::encode(key, value, 0, seq);
        self.with_locked(key, h, seq, |ctx, found, free, guard| {
            let held = ctx.held;
            if let Some(f) = &found {
                if ctx.observed != 0
                    && f.header.seq == ctx.observed
                    && f.header.flags & REC_FLAG_RMW == 0
                {
                    // Concurrent write elimination: the holder we waited for
                    // stored this key while we were in flight; order our put
                    // just before it.
                    self.eliminated_puts.fetch_add(1, Ordering::Relaxed);
                    return Ok(Locked::Done(()));
                }
            }
            let (addr, claimed) = match found.as_ref().filter(|f| f.in_index) {
                Some(f) => (f.addr, false),
                None => match self.claim(free, fp) {
                    Some(a) => (a, true),
                    None if free.is_empty() => return Ok(Locked::Split(ctx.seg)),
                    None => return Ok(Locked::Rescan),
                },
            };
            let (node, linked) = match &found {
                None => self.ordered_insert(key, Some(addr), guard)?,
                Some(f) => (f.node, false),
            };
            let (off, total) = match self.write_record(lane, key, value, &header, guard) {
                Ok(r) => r,
                Err(e) => {
                    if claimed {
                        self.ipm().store_u64(addr, 0);
                    }
                    self.ordered_undo(key, linked, guard);
                    return Err(e);
                }
            };
            // Waiters that first see us from here on started after our
            // value may have become visible: they must not be eliminated.
            self.index.locks.mark_publishing(&held, seq);
            self.publish(addr, node, fp, off);
            let old = found.and_then(|f| f.counted());
            self.account(lane_index, addr, Some((off, total)), old, guard);
            Ok(Locked::Done(()))
        })
    }

    fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        let (lane_index, lane) = self.lane();
        let seq = lane.next_seq(&self.pool);
        self.with_locked(key, h, seq, |_ctx, found, _free, guard| {
            let Some(f) = found else {
                return Ok(Locked::Done(false));
            };
            self.remove(lane_index, key, &f, fp, guard);
            Ok(Locked::Done(true))
        })
    }

    /// Deletes the entry `f` of `key` (bucket lock held), then its node in
    /// the ordered index.
    fn remove(&self, lane_index: usize, key: &[u8], f: &Found, fp: u16, guard: &Guard) {
        let pm = &self.pool.pm;
        // The persistent word that names the record: the slot, or with the
        // DRAM point index the node's record word.
        let word = match &self.dram {
            Some(_) => {
                self.note_rebuild_write();
                Ordered::record_word(f.node)
            }
            None => f.addr,
        };
        if self.two_phase {
            pm.store_u64(word, Slot::delete_marker(fp).0);
            pm.flush(word, 8);
            // Persist point: the delete is durable (a marker reads as absent).
            pm.fence();
            pm.store_u64(word, Slot::EMPTY.0);
        } else {
            // Ablation (locked reads): no reader sees the slot before the
            // fence, so it can be cleared directly.
            pm.store_u64(word, Slot::EMPTY.0);
            pm.flush(word, 8);
            pm.fence();
        }
        if let (Some(d), true) = (&self.dram, f.in_index) {
            d.slots.store_u64(f.addr, Slot::EMPTY.0);
        }
        self.account(lane_index, f.addr, None, f.counted(), guard);
        if let Some(o) = &self.ordered {
            // The delete is durable already. If the skiplist cannot unlink
            // the node (it found damage, which `check` reports), the node is
            // an orphan: readers skip it, the next open's walk unlinks it.
            let _ = o.remove(&self.pool, key, guard);
        }
    }

    fn update<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> (Update, R)) -> Result<R> {
        check_key(key)?;
        self.check_ordered_key(key)?;
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        let (lane_index, lane) = self.lane();
        let seq = lane.next_seq(&self.pool);
        let mut f = Some(f);
        self.with_locked(key, h, seq, |ctx, found, free, guard| {
            if f.is_none() {
                // The closure ran in an attempt that then met a full pool:
                // its decision was taken on a value that may be stale now,
                // so it is not applied; the caller sees the pool full.
                return Err(Error::PoolFull {
                    pool_bytes_max: self.pool.pool_bytes_max,
                });
            }
            // Make sure a new key has a slot (and its ordered-index node)
            // before asking the closure, which may run only once.
            let claimed = match found.as_ref().filter(|f| f.in_index) {
                Some(_) => None,
                None => match self.claim(free, fp) {
                    Some(a) => Some(a),
                    None if free.is_empty() => return Ok(Locked::Split(ctx.seg)),
                    None => return Ok(Locked::Rescan),
                },
            };
            let (node, linked) = match (&found, claimed) {
                (None, Some(a)) => self.ordered_insert(key, Some(a), guard)?,
                (Some(fd), _) => (fd.node, false),
                (None, None) => (0, false),
            };
            // Gives the reserved slot back if the closure panics.
            let mut claim_guard = ClaimGuard {
                pm: self.ipm(),
                addr: claimed,
            };
            let release_claim = || {
                if let Some(a) = claimed {
                    self.ipm().store_u64(a, 0);
                }
            };
            let current = match &found {
                Some(fd) => Some(self.record_value(fd.slot.offset(), &fd.header)?),
                None => None,
            };
            let (decision, result) = (f.take().expect("update closure runs once"))(current);
            claim_guard.addr = None;
            match decision {
                Update::Keep => {
                    release_claim();
                    self.ordered_undo(key, linked, guard);
                }
                Update::Delete => {
                    release_claim();
                    self.ordered_undo(key, linked, guard);
                    if let Some(fd) = &found {
                        self.remove(lane_index, key, fd, fp, guard);
                    }
                }
                Update::Put(value) => {
                    if let Err(e) = check_value(&value) {
                        release_claim();
                        self.ordered_undo(key, linked, guard);
                        return Err(e);
                    }
                    let addr = claimed.or(found.as_ref().map(|fd| fd.addr)).expect("slot");
                    let header = RecordHeader::encode(key, &value, REC_FLAG_RMW, seq);
                    let (off, total) = match self.write_record(lane, key, &value, &header, guard) {
                        Ok(r) => r,
                        Err(e) => {
                            release_claim();
                            self.ordered_undo(key, linked, guard);
                            return Err(e);
                        }
                    };
                    self.publish(addr, node, fp, off);
                    let old = found.and_then(|fd| fd.counted());
                    self.account(lane_index, addr, Some((off, total)), old, guard);
                }
            }
            Ok(Locked::Done(result))
        })
    }

    /// Frees segment `seg` through an epoch if it is sealed and holds no
    /// live record.
    fn maybe_free(&self, seg: u32, guard: &Guard) {
        if !self.tally_done.load(Ordering::Acquire) || self.reclaim_blocked.load(Ordering::Acquire)
        {
            return;
        }
        let info = &self.pool.segments[seg as usize];
        if !info.sealed.load(Ordering::SeqCst) || info.live_bytes.load(Ordering::SeqCst) != 0 {
            return;
        }
        let kind = info.kind.load(Ordering::Acquire);
        if kind != SegmentKind::Log as u8 && kind != SegmentKind::Large as u8 {
            return;
        }
        if info
            .kind
            .compare_exchange(kind, KIND_FREEING, Ordering::AcqRel, Ordering::Acquire)
            .is_err()
        {
            return;
        }
        self.pool.releases_pending.fetch_add(1, Ordering::AcqRel);
        let me = self.me.clone();
        guard.defer(move || {
            if let Some(engine) = me.upgrade() {
                engine.pool.release(seg);
            }
        });
        guard.flush();
    }

    /// Drives the epoch until some segment handed to it is released, for
    /// a writer that found the pool full. Fails with `PoolFull` when nothing
    /// is released within a short while.
    fn reclaim_pending(&self) -> Result<()> {
        // Another thread may hold its epoch pinned for a while (copying a
        // large value): wait up to two seconds before calling the pool full.
        let before = self.pool.releases_pending.load(Ordering::Acquire);
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(2);
        let mut attempt = 0u32;
        while std::time::Instant::now() < deadline {
            let guard = epoch::pin();
            guard.flush();
            drop(guard);
            let now = self.pool.releases_pending.load(Ordering::Acquire);
            if now < before || now == 0 {
                return Ok(());
            }
            attempt += 1;
            if attempt > 10 {
                std::thread::sleep(std::time::Duration::from_micros(200));
            }
        }
        Err(Error::PoolFull {
            pool_bytes_max: self.pool.pool_bytes_max,
        })
    }

    /// Splits index segment `seg` into two of depth + 1 (CCEH style).
    fn split(&self, seg: SegRef) -> Result<()> {
        loop {
            match self.split_once(seg) {
                Err(Error::PoolFull { .. })
                    if self.pool.releases_pending.load(Ordering::Acquire) > 0 =>
                {
                    self.reclaim_pending()?
                }
                other => return other,
            }
        }
    }

    fn split_once(&self, seg: SegRef) -> Result<()> {
        if self.dram.is_none() {
            // (The DRAM index has no tally; its rebuild splits as it goes.)
            self.wait_tally();
        }
        let _serial = self.split_mutex.lock();
        let dir = self.index.dir.load_full();
        if !dir.entries.contains(&seg) {
            return Ok(()); // someone split it already
        }
        if seg.depth >= index::MAX_DEPTH {
            return Err(Error::IndexFull {
                detail: format!(
                    "index segment at depth {} (the maximum) has no free slot in a bucket pair",
                    seg.depth
                ),
            });
        }
        let pm = self.ipm();
        let held = self
            .index
            .locks
            .lock_all(pm, &[seg.offset], self.index.buckets, SPLIT_SEQ);
        let result = self.split_locked(&dir, seg);
        self.index.locks.unlock_all(pm, held);
        result
    }

    fn split_locked(&self, dir: &Directory, seg: SegRef) -> Result<()> {
        let depth = seg.depth + 1;
        let high_prefix = (seg.prefix << 1) | 1;
        let new_off = match &self.dram {
            Some(d) => self.split_dram(d, seg, depth)?,
            None => self.split_pm(seg, depth, high_prefix)?,
        };
        let low = SegRef {
            offset: seg.offset,
            depth,
            prefix: seg.prefix << 1,
        };
        let high = SegRef {
            offset: new_off,
            depth,
            prefix: high_prefix,
        };
        self.index
            .dir
            .store(Arc::new(dir.with_split(seg, low, high)));
        self.splits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The entries of `seg` whose fingerprint has the high bit at `depth`:
    /// (bucket, slot within it, slot word).
    fn high_half(&self, seg: SegRef, depth: u8) -> Vec<(u64, usize, u64)> {
        let pm = self.ipm();
        let mut out = Vec::new();
        for b in 0..self.index.buckets {
            for (i, addr) in self.index.slots(seg.bucket_offset(b)).enumerate() {
                let s = Slot(pm.load_u64(addr));
                if Index::is_live_entry(&seg, s)
                    && (s.fingerprint() >> (16 - depth as u32)) & 1 == 1
                {
                    out.push((b, i, addr));
                }
            }
        }
        out
    }

    /// DRAM point index: copies the high half of `seg` (slots and their
    /// nodes) into a new DRAM segment; returns its offset.
    fn split_dram(&self, d: &DramSpace, seg: SegRef, depth: u8) -> Result<u64> {
        let new_off = d.alloc_segment()?;
        let to = SegRef {
            offset: new_off,
            depth,
            prefix: 0,
        };
        for (b, i, addr) in self.high_half(seg, depth) {
            let at = to.bucket_offset(b) + i as u64 * layout::SLOT_BYTES;
            d.nodes.store_u64(at, d.nodes.load_u64(addr));
            d.slots.store_u64(at, d.slots.load_u64(addr));
        }
        Ok(new_off)
    }

    /// Pool point index: writes the high half of `seg` into a new pool
    /// segment and commits it; returns its offset.
    fn split_pm(&self, seg: SegRef, depth: u8, high_prefix: u64) -> Result<u64> {
        let pm = &self.pool.pm;
        let new_index = self.pool.reserve(1)?;
        let new_off = self.pool.segment_offset(new_index);
        let area = (self.pool.segment_bytes - layout::SEGMENT_HEADER_BYTES) as usize;
        let mut buf = vec![0u8; area];
        for (b, i, addr) in self.high_half(seg, depth) {
            let s = Slot(pm.load_u64(addr));
            let at = (b * layout::BUCKET_BYTES) as usize + i * 8;
            // Every writer has finished: the entry is durable.
            buf[at..at + 8].copy_from_slice(&s.with_persist().0.to_le_bytes());
        }
        pm.write_persistent(new_off + layout::SEGMENT_HEADER_BYTES, &buf);
        // Persist point: the new segment's buckets are durable.
        pm.fence();
        // Persist point (inside commit): the header names the new segment; from
        // here a recovery routes the high half to it and treats the old
        // segment's copies as stale.
        self.pool.commit(
            new_index,
            SegmentHeader {
                kind: SegmentKind::Index,
                lane_or_depth: depth as u32,
                run_segments: 1,
                base_seq_or_prefix: high_prefix,
            },
        );
        Ok(new_off)
    }

    /// The ordered index's walk after open (its own thread): search hints,
    /// free node slots, orphans unlinked under their keys' bucket locks.
    fn ordered_walk(&self) {
        let Some(o) = &self.ordered else {
            return;
        };
        let _ended = SetOnDrop(&self.ordered_walk_ended);
        if self.dram.is_some() {
            // Enter the keys from a scan of the node slabs first (sequential
            // reads, no link chasing); the walk then finds them entered.
            let mut enter = |k: &[u8], node: u64| self.enter_from_node(k, node).map(|_| ());
            let mut damage = Vec::new();
            o.scan_live(&self.pool, &self.stop, &mut enter, &mut damage);
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            let entered = self.base_count.load(Ordering::Acquire);
            // After a clean close (and no write since open) the rebuild must
            // find the keys counted at the close: a record word lost to
            // damage would otherwise pass for an orphan.
            if let Some(n) = self.pool.clean_key_count {
                if entered != n && !self.written_in_rebuild.load(Ordering::Acquire) {
                    damage.push(format!(
                        "the pool was closed cleanly with {n} keys, the rebuild found {entered}"
                    ));
                }
            }
            if !damage.is_empty() {
                // Records of skipped nodes are not counted live: free nothing.
                self.reclaim_blocked.store(true, Ordering::Release);
                let mut errors = self.ordered_walk_errors.lock();
                errors.push(format!(
                    "DRAM point index rebuild: {} problem(s) below (keys of skipped nodes read as absent; no segment is freed in this open)",
                    damage.len()
                ));
                errors.extend(damage.into_iter().take(100));
            }
            self.dram_filled.store(true, Ordering::Release);
        }
        // (With the DRAM point index the scan has entered every key by now,
        // so the index answers here too.)
        let present = |k: &[u8], _node: u64| Ok(self.get_with(k, |_| ())?.is_some());
        let orphan = |k: &[u8]| self.repair_orphan(k);
        if let Err(e) = o.walk(&self.pool, &present, &orphan, &self.stop) {
            self.ordered_walk_errors
                .lock()
                .push(format!("ordered index walk after open stopped: {e}"));
        }
    }

    /// DRAM point index rebuild: enters `key` (whose node the slab scan
    /// stands on) under its bucket lock, unless a writer did already or the
    /// node names no record (any more). Counts the record live. Returns
    /// whether the key is present.
    fn enter_from_node(&self, key: &[u8], node: u64) -> Result<bool> {
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        self.with_locked_at(key, h, ORDERED_SEQ, Some(node), |ctx, found, free, _| {
            let Some(f) = found else {
                return Ok(Locked::Done(false));
            };
            if f.in_index {
                return Ok(Locked::Done(true));
            }
            let addr = match self.claim(free, fp) {
                Some(a) => a,
                None if free.is_empty() => return Ok(Locked::Split(ctx.seg)),
                None => return Ok(Locked::Rescan),
            };
            let d = self.dram.as_ref().expect("DRAM point index");
            d.nodes.store_u64(addr, f.node);
            d.slots.store_u64(addr, f.slot.0);
            let info = &self.pool.segments[self.pool.segment_of(f.slot.offset()) as usize];
            info.live_bytes
                .fetch_add(f.header.total_bytes(), Ordering::SeqCst);
            self.base_count.fetch_add(1, Ordering::AcqRel);
            Ok(Locked::Done(true))
        })
    }

    /// Unlinks the node of `key` if the point index does not hold the key
    /// (checked under the key's bucket lock; with the DRAM point index, a
    /// node that names a record counts as held). Returns whether it did.
    fn repair_orphan(&self, key: &[u8]) -> Result<bool> {
        let Some(o) = &self.ordered else {
            return Ok(false);
        };
        let h = self.hash(key);
        self.with_locked(key, h, ORDERED_SEQ, |_ctx, found, _free, guard| {
            if found.is_some() {
                return Ok(Locked::Done(false));
            }
            Ok(Locked::Done(o.remove(&self.pool, key, guard)?))
        })
    }

    fn wait_tally(&self) {
        if self.tally_done.load(Ordering::Acquire) {
            return;
        }
        self.wait_rebuild(REBUILD_TALLIED);
    }

    fn wait_rebuild(&self, stage: u8) {
        let (m, cv) = &self.tally_signal;
        let mut done = m.lock().unwrap_or_else(|e| e.into_inner());
        while *done < stage {
            done = cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn signal_rebuild(&self, stage: u8) {
        let (m, cv) = &self.tally_signal;
        let mut done = m.lock().unwrap_or_else(|e| e.into_inner());
        if stage >= REBUILD_TALLIED {
            self.tally_done.store(true, Ordering::Release);
        }
        *done = stage;
        cv.notify_all();
    }

    fn count_now(&self) -> u64 {
        let d: i64 = self
            .count_deltas
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        (self.base_count.load(Ordering::Acquire) as i64 + d).max(0) as u64
    }

    fn len(&self) -> u64 {
        if !self.clean_open {
            self.wait_tally();
        }
        self.count_now()
    }

    /// Background rebuild after open: recover lanes, then count live bytes
    /// per segment and keys by one pass over the index; then free segments
    /// with nothing live.
    fn rebuild(&self) {
        for lane in self.lanes.iter().map(|l| &**l).chain([&self.cleaner_lane]) {
            lane.recover(&self.pool);
        }
        if self.dram.is_some() {
            return self.rebuild_dram();
        }
        let dir = self.index.dir.load_full();
        let mut segs = dir.segments();
        segs.sort_by_key(|s| s.offset);
        let buckets = self.index.buckets;
        let pm = &self.pool.pm;
        let mut keys = 0u64;
        for seg in &segs {
            for b in 0..buckets {
                if self.stop.load(Ordering::Acquire) {
                    return;
                }
                let bucket = seg.bucket_offset(b);
                let prev = seg.bucket_offset(if b == 0 { buckets - 1 } else { b - 1 });
                // Keys in bucket b have home b or b-1: hold both locks.
                let held = self
                    .index
                    .locks
                    .lock_many(pm, &mut vec![bucket, prev], TALLY_SEQ);
                for addr in self.index.slots(bucket) {
                    let s = Slot(pm.load_u64(addr));
                    if s.is_marker() {
                        // No delete is in flight here (we hold both home
                        // locks): a marker is left over from a crash.
                        pm.store_u64(addr, 0);
                        continue;
                    }
                    if !Index::is_live_entry(seg, s) {
                        continue;
                    }
                    match self.record_header(s.offset()) {
                        Ok(h) => {
                            let info =
                                &self.pool.segments[self.pool.segment_of(s.offset()) as usize];
                            info.live_bytes.fetch_add(h.total_bytes(), Ordering::SeqCst);
                            keys += 1;
                        }
                        Err(e) => self.tally_errors.lock().push(e.to_string()),
                    }
                }
                self.tally_cursor
                    .store(bucket + layout::BUCKET_BYTES, Ordering::Release);
                self.index.locks.unlock_all(pm, held);
            }
        }
        if !self.clean_open {
            self.base_count.store(keys, Ordering::Release);
        }
        self.signal_rebuild(REBUILD_TALLIED);
        let guard = epoch::pin();
        for s in 0..self.pool.segment_count() {
            self.maybe_free(s, &guard);
        }
        drop(guard);
        self.signal_rebuild(REBUILD_SWEPT);
    }

    /// Background rebuild after open, DRAM point index: the scan of the
    /// node slabs enters the keys and counts them; this waits for it, then
    /// frees segments with nothing live. If the scan failed, live bytes are
    /// not known for every record, so nothing is freed in this open.
    fn rebuild_dram(&self) {
        while !self.ordered_walk_ended.load(Ordering::Acquire)
            && !self.dram_filled.load(Ordering::Acquire)
        {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if self.stop.load(Ordering::Acquire) && !self.dram_filled.load(Ordering::Acquire) {
            return;
        }
        if !self.dram_filled.load(Ordering::Acquire) {
            self.reclaim_blocked.store(true, Ordering::Release);
            self.tally_errors.lock().push(
                "the DRAM point index was not rebuilt completely (the scan of the ordered index failed): \
                 reads of keys it misses go to the ordered index, and no segment is freed in this open"
                    .into(),
            );
        }
        self.signal_rebuild(REBUILD_TALLIED);
        let guard = epoch::pin();
        for s in 0..self.pool.segment_count() {
            self.maybe_free(s, &guard);
        }
        drop(guard);
        self.signal_rebuild(REBUILD_SWEPT);
    }

    fn stats(&self) -> Stats {
        // Never waits: before the rebuild is done the count may be partial
        // (`rebuild_done` says which).
        let keys = self.count_now();
        let n = self.pool.segment_count();
        let (mut free, mut log, mut idx, mut large, mut damaged, mut live) = (0, 0, 0, 0, 0, 0u64);
        for s in 0..n {
            let info = &self.pool.segments[s as usize];
            live += info.live_bytes.load(Ordering::Relaxed);
            match info.kind.load(Ordering::Relaxed) {
                k if k == SegmentKind::Free as u8 => free += 1,
                k if k == SegmentKind::Log as u8 => log += 1,
                k if k == SegmentKind::Index as u8 => idx += 1,
                k if k == SegmentKind::Large as u8 || k == KIND_CONTINUATION => large += 1,
                k if k == SegmentKind::Ordered as u8 => {}
                KIND_DAMAGED => damaged += 1,
                _ => log += 1, // freeing: still in use until its epoch passes
            }
        }
        let seg = self.pool.segment_bytes;
        let (ordered_nodes, ordered_segments) = self
            .ordered
            .as_ref()
            .map(|o| o.heap_figures())
            .unwrap_or((0, 0));
        Stats {
            keys,
            pool_bytes: self.pool.pm.len(),
            pool_bytes_max: self.pool.pool_bytes_max,
            used_bytes: layout::SUPERBLOCK_BYTES + (n - free) as u64 * seg,
            live_bytes: live,
            segment_bytes: seg,
            segments_total: n,
            segments_free: free,
            segments_log: log,
            segments_index: idx,
            segments_large: large,
            segments_damaged: damaged,
            index_depth: self.index.dir.load().depth,
            lanes: self.lanes.len(),
            durability: self.pool.pm.durability(),
            flush_instruction: self.pool.pm.flush_instruction().name(),
            nt_copy: self.pool.pm.nt_copy().name(),
            eliminated_puts: self.eliminated_puts.load(Ordering::Relaxed),
            index_splits: self.splits.load(Ordering::Relaxed),
            cleaned_segments: self.cleaned_segments.load(Ordering::Relaxed),
            cleaned_bytes: self.cleaned_bytes.load(Ordering::Relaxed),
            rebuild_done: self.tally_done.load(Ordering::Acquire),
            ordered_index: self.ordered.is_some(),
            ordered_nodes,
            segments_ordered: ordered_segments as u32,
            ordered_walk_done: self.ordered.as_ref().is_none_or(|o| o.walk_done()),
            point_index: if self.dram.is_some() {
                PointIndex::Dram
            } else {
                PointIndex::Pm
            },
            point_index_ready: self.dram.is_none() || self.dram_filled.load(Ordering::Acquire),
            dram_index_bytes: self.dram.as_ref().map_or(0, |d| d.bytes()),
            pmem: pmem::process_counters(),
        }
    }

    fn check(&self) -> Result<CheckReport> {
        self.wait_tally();
        // No split may add a segment between listing and locking them.
        let _serial = self.split_mutex.lock();
        let pm = self.ipm();
        let segments: Vec<u64> = self
            .index
            .dir
            .load()
            .segments()
            .iter()
            .map(|s| s.offset)
            .collect();
        let held = self
            .index
            .locks
            .lock_all(pm, &segments, self.index.buckets, CHECK_SEQ);
        let report = self.check_locked();
        self.index.locks.unlock_all(pm, held);
        Ok(report)
    }

    fn check_locked(&self) -> CheckReport {
        let mut r = CheckReport::default();
        let pm = &self.pool.pm;
        let ipm = self.ipm();
        let n = self.pool.segment_count();
        let mut expected_live = vec![0u64; n as usize];
        let mut walk_end: std::collections::HashMap<u32, u64> = Default::default();
        let mut point_keys: std::collections::HashSet<Vec<u8>> = Default::default();
        r.errors.extend(self.tally_errors.lock().iter().cloned());
        r.errors
            .extend(self.ordered_walk_errors.lock().iter().cloned());
        for s in 0..n {
            match self.pool.kind(s) {
                KIND_DAMAGED => r.errors.push(format!(
                    "segment {s} at {:#x}: damaged header",
                    self.pool.segment_offset(s)
                )),
                k if k == SegmentKind::Log as u8 => r.log_segments += 1,
                k if k == SegmentKind::Large as u8 => r.large_records += 1,
                _ => {}
            }
        }
        let dir = self.index.dir.load_full();
        let segs = dir.segments();
        r.index_segments = segs.len() as u32;
        for seg in &segs {
            for b in 0..self.index.buckets {
                for addr in self.index.slots(seg.bucket_offset(b)) {
                    let s = Slot(ipm.load_u64(addr));
                    if !Index::is_live_entry(seg, s) {
                        continue;
                    }
                    let off = s.offset();
                    let mut err = |m: String| r.errors.push(format!("slot at {addr:#x}: {m}"));
                    if off < layout::SUPERBLOCK_BYTES || off >= pm.len() {
                        err(format!("record offset {off:#x} outside the pool"));
                        continue;
                    }
                    let rs = self.pool.segment_of(off);
                    let kind = self.pool.kind(rs);
                    let in_log = kind == SegmentKind::Log as u8;
                    let in_large = kind == SegmentKind::Large as u8
                        && off == self.pool.segment_offset(rs) + layout::SEGMENT_HEADER_BYTES;
                    if !in_log && !in_large {
                        err(format!("record {off:#x} is not in a log segment or large run (segment {rs}, kind {kind})"));
                        continue;
                    }
                    let h = match self.record_header(off) {
                        Ok(h) => h,
                        Err(e) => {
                            err(e.to_string());
                            continue;
                        }
                    };
                    if let Err(e) = self.verify_record(off, &h) {
                        err(e.to_string());
                        continue;
                    }
                    let Ok(key) = self.record_key(off, &h) else {
                        err("key unreadable".into());
                        continue;
                    };
                    let kh = self.hash(key);
                    if index::fingerprint(kh) != s.fingerprint() {
                        err("fingerprint does not match the record's key".into());
                    }
                    if dir.lookup(kh) != *seg {
                        err("entry sits in the wrong index segment".into());
                    }
                    let probe = self.index.probe(seg, kh);
                    if !probe
                        .iter()
                        .any(|&p| (p..p + layout::BUCKET_BYTES).contains(&addr))
                    {
                        err("entry sits outside its key's bucket pair".into());
                    }
                    // The first slot of the pair naming this key must be this one.
                    let first = probe.iter().flat_map(|&p| self.index.slots(p)).find(|&a| {
                        let o = Slot(ipm.load_u64(a));
                        Index::is_live_entry(seg, o)
                            && o.fingerprint() == s.fingerprint()
                            && self
                                .record_header(o.offset())
                                .and_then(|oh| self.record_key(o.offset(), &oh).map(|k| k == key))
                                .unwrap_or(false)
                    });
                    if first != Some(addr) {
                        err("key appears in more than one slot".into());
                    }
                    if let (Some(d), Some(o)) = (&self.dram, &self.ordered) {
                        // The DRAM entry mirrors its node's record word.
                        let node = d.nodes.load_u64(addr);
                        match o.node_key(&self.pool, node) {
                            Ok(k) if k == key => {}
                            Ok(_) => err("its node holds another key".into()),
                            Err(e) => err(format!("its node: {e}")),
                        }
                        let word = Slot(pm.load_u64(Ordered::record_word(node)));
                        if word.with_persist() != s.with_persist() {
                            err(format!(
                                "its node names {:#x}, the DRAM index {off:#x}",
                                word.offset()
                            ));
                        }
                    }
                    if in_log {
                        let end = *walk_end
                            .entry(rs)
                            .or_insert_with(|| walk_segment(&self.pool, rs, |_| {}));
                        if off + h.total_bytes() > end {
                            r.errors.push(format!(
                                "record {off:#x} lies past the valid record prefix of segment {rs} (ends {end:#x})"
                            ));
                        }
                    }
                    expected_live[rs as usize] += h.total_bytes();
                    if self.ordered.is_some() {
                        point_keys.insert(key.to_vec());
                    }
                    r.keys += 1;
                    r.live_bytes += h.total_bytes();
                }
            }
        }
        for s in 0..n {
            let info = &self.pool.segments[s as usize];
            let kind = info.kind.load(Ordering::Acquire);
            let live = info.live_bytes.load(Ordering::SeqCst);
            if live != expected_live[s as usize] {
                r.errors.push(format!(
                    "segment {s}: live bytes tracked {live}, index references {}",
                    expected_live[s as usize]
                ));
            }
            if kind == KIND_FREEING
                || ((kind == SegmentKind::Log as u8 || kind == SegmentKind::Large as u8)
                    && info.sealed.load(Ordering::SeqCst)
                    && live == 0)
            {
                r.reclaimable_segments += 1;
            }
        }
        if let Some(o) = &self.ordered {
            let listed = o.check(&self.pool, &mut r.errors);
            r.ordered_nodes = listed.len() as u64;
            let mut in_list = 0u64;
            for (k, node) in &listed {
                if point_keys.contains(k) {
                    in_list += 1;
                    continue;
                }
                r.ordered_orphans += 1;
                let word = Slot(pm.load_u64(Ordered::record_word(*node)));
                if self.dram.is_some() && !word.is_empty() && !word.is_marker() {
                    r.errors.push(format!(
                        "ordered index: node {node:#x} names record {:#x}, but the DRAM point index does not hold its key",
                        word.offset()
                    ));
                }
            }
            if in_list != point_keys.len() as u64 {
                r.errors.push(format!(
                    "ordered index lists {in_list} of the {} keys in the point index",
                    point_keys.len()
                ));
            }
        }
        let count = self.count_now();
        if count != r.keys {
            r.errors.push(format!(
                "key count {count} does not match {} keys in the index",
                r.keys
            ));
        }
        r
    }
}

/// Iterator returned by [`Db::iter`].
pub struct Iter<'a> {
    engine: &'a Engine,
    /// Position in hash space: the top 16 bits of the next hashes to visit.
    prefix16: u32,
    bucket: u64,
    buffer: std::collections::VecDeque<Result<(Vec<u8>, Vec<u8>)>>,
    done: bool,
}

impl Iter<'_> {
    fn refill(&mut self) {
        let e = self.engine;
        let _guard = epoch::pin();
        let seg = e.index.dir.load().lookup((self.prefix16 as u64) << 48);
        let pm = e.ipm();
        // Locked reads: slots are stored already marked persisted and made
        // durable under the writer's lock, so read the bucket under the read
        // locks of both homes its keys can have (this bucket and the one
        // before it).
        let _read: Vec<ReadLock> = if e.two_phase {
            Vec::new()
        } else {
            let prev = if self.bucket == 0 {
                e.index.buckets - 1
            } else {
                self.bucket - 1
            };
            e.index
                .locks
                .read_lock_many(
                    pm,
                    &mut vec![seg.bucket_offset(self.bucket), seg.bucket_offset(prev)],
                )
                .into_iter()
                .map(|held| ReadLock {
                    locks: &e.index.locks,
                    pm,
                    held,
                })
                .collect()
        };
        for addr in e.index.slots(seg.bucket_offset(self.bucket)) {
            let v = pm.load_u64(addr);
            let s = Slot(v);
            if !Index::is_live_entry(&seg, s) {
                continue;
            }
            if !s.persisted() {
                e.help_persist(pm, addr, v);
            }
            let item = e.record_header(s.offset()).and_then(|h| {
                Ok((
                    e.record_key(s.offset(), &h)?.to_vec(),
                    e.record_value(s.offset(), &h)?.to_vec(),
                ))
            });
            self.buffer.push_back(item);
        }
        self.bucket += 1;
        if self.bucket == e.index.buckets {
            self.bucket = 0;
            let next = (seg.prefix + 1) << (16 - seg.depth as u32);
            if next >= 1 << 16 {
                self.done = true;
            } else {
                self.prefix16 = next as u32;
            }
        }
    }
}

impl Iterator for Iter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            self.refill();
        }
    }
}

/// Path of the pool a `Db` has open (for messages).
impl std::fmt::Debug for Db {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Db").field("path", &self.path()).finish()
    }
}

#[allow(dead_code)]
fn _assert_send_sync() {
    fn is<T: Send + Sync>() {}
    is::<Db>();
    let _: Option<PathBuf> = None;
}
