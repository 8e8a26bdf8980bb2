//! The `Db`: a key-value store on one pool file, and the `Engine` behind it.
//!
//! This room holds the public type, the engine's state and its invariants;
//! each protocol lives in a room of its own, an `impl Engine` block:
//! - `open`: opening a pool and starting the background work after open;
//! - `read`: point reads (lock-free, or under the bucket lock while a DRAM
//!   index is rebuilt) and record decoding;
//! - `read_many`: batched point reads (`get_many`), their misses overlapped;
//! - `write`: put, delete, update, the bucket-locked lookup and publishing;
//! - `space`: live-byte and key accounting, freeing dead segments;
//! - `split`: index segment splits;
//! - `rebuild`: the tally, the DRAM index rebuild and the ordered walk after
//!   open;
//! - `cleaner`: the log cleaner; `check`: `Db::check`; `stats`: `Db::stats`;
//!   `iter`: `Db::iter`; `range`: ordered reads;
//! - `batch`: atomic write batches (and the commit of a transaction);
//!   `txn`: optimistic transactions; `expiry`: key deadlines and the
//!   background expiry (`deadlines`: their heap and clock);
//! - `placement`: where the point index lives (PM or DRAM), as a type;
//!   `tiered`: where a value lives (in its record, or on the SSD tier);
//!   `patch`: range writes (patches on PM for tiered values);
//!   `tier_clean`: the tier's background merge and data-file cleaning
//!   (`merge_queue`: what waits for it).
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
//! then stores 0. With the point index in DRAM, steps 5–6 and the delete
//! write the key's ordered-index node's record word instead of the slot, and
//! the DRAM slot is stored afterwards (see `placement`).
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
//! - Internal lock holders (split, tally, check, ordered walk, locked reads,
//!   cleaner) carry sequence numbers of lane 255, which no record carries,
//!   so no put is ever eliminated against them.

use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex, Weak};
use std::thread::JoinHandle;

use crossbeam_utils::CachePadded;

use crate::batch_table::{BatchRecovery, BatchTable};
use crate::error::{Error, Result};
use crate::index::Index;
use crate::layout::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::log::{Lane, INTERNAL_LANE};
use crate::options::PointIndex;
use crate::ordered::Ordered;
use crate::pmem::{Durability, PmemFile};
use crate::pool::Pool;

mod batch;
mod check;
mod cleaner;
mod deadlines;
mod expiry;
mod iter;
mod merge_queue;
mod open;
mod patch;
mod placement;
mod range;
mod read;
mod read_many;
mod rebuild;
mod space;
mod split;
mod stats;
#[cfg(test)]
mod tests;
mod tier_clean;
mod tiered;
mod txn;
mod write;

pub use batch::Version;
pub use batch::{WriteBatch, MAX_BATCH_BYTES, MAX_BATCH_OPS};
pub use check::CheckReport;
pub use expiry::{Ttl, MAX_DEADLINE_MS};
pub use iter::Iter;
use placement::IndexPlacement;
pub use range::{prefix_end, Range, RangeKeys};
use rebuild::REBUILD_SWEPT;
pub use stats::{StatValue, Stats};
pub use txn::{Transaction, Versioned, DEFAULT_TRANSACTION_ATTEMPTS};
pub use write::Update;

/// Lock-holder sequence numbers of the engine's internal work (lane 255).
const SPLIT_SEQ: u64 = (INTERNAL_LANE << 56) | 1;
const TALLY_SEQ: u64 = (INTERNAL_LANE << 56) | 2;
const CHECK_SEQ: u64 = (INTERNAL_LANE << 56) | 3;
const ORDERED_SEQ: u64 = (INTERNAL_LANE << 56) | 4;
const READ_SEQ: u64 = (INTERNAL_LANE << 56) | 5;
const CLEANER_SEQ: u64 = (INTERNAL_LANE << 56) | 6;
const BATCH_SEQ: u64 = (INTERNAL_LANE << 56) | 7;
const EXPIRY_SEQ: u64 = (INTERNAL_LANE << 56) | 8;

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
    expiry_thread: Option<JoinHandle<()>>,
    /// The SSD tier's merge and file cleaning (tiered pools only).
    tier_thread: Option<JoinHandle<()>>,
}

pub(crate) struct Engine {
    pub(crate) pool: Pool,
    pub(crate) index: Index,
    /// Where the point index lives (pool or DRAM).
    point_index: IndexPlacement,
    /// No segment may be freed: live bytes are not known for all records
    /// (the DRAM point index's rebuild failed).
    reclaim_blocked: AtomicBool,
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
    /// The key count at open is known (clean close, PM point index).
    clean_open: bool,
    /// The tally has passed every bucket below this slot address.
    tally_cursor: AtomicU64,
    tally_done: AtomicBool,
    tally_signal: (Mutex<u8>, Condvar),
    base_count: AtomicU64,
    count_deltas: Box<[CachePadded<AtomicI64>]>,
    stop: AtomicBool,
    me: Weak<Engine>,
    split_mutex: parking_lot::Mutex<()>,
    /// Held by the cleaner while a chunk's copies are counted live but not
    /// all switched yet, and by `check` (which counts live bytes against
    /// what the index names) before it locks the buckets.
    chunk_mutex: parking_lot::Mutex<()>,
    eliminated_puts: AtomicU64,
    splits: AtomicU64,
    cleaned_segments: AtomicU64,
    cleaned_bytes: AtomicU64,
    tally_errors: parking_lot::Mutex<Vec<String>>,
    /// Batches committing now (the superblock's commit table, DRAM side).
    batches: BatchTable,
    /// What recovery at open did to batches a crash interrupted.
    batch_recovery: BatchRecovery,
    /// Key deadlines: the clock and the heap of the background expiry.
    expiry: deadlines::Expiry,
    /// The SSD tier, when the pool was created with one.
    tier: Option<crate::tier::Tier>,
    /// Extents the tier cleaner moved, and patched values it merged.
    tier_moved: AtomicU64,
    tier_merges: AtomicU64,
    /// Keys whose patches wait for the background merge.
    merges: parking_lot::Mutex<merge_queue::MergeQueue>,
}

impl Db {
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

    /// Reads many keys at once, overlapping their cache misses; calls
    /// `f(i, value)` for each key in order (`None`: absent or expired).
    ///
    /// Each key is read exactly as by [`Db::get_with`] (never half of an
    /// atomic batch, never a value a crash could undo), at its own instant:
    /// the keys are not read as one snapshot. Keys may repeat. `f` runs while
    /// the value is protected from reclamation; keep it short and do not call
    /// back into the `Db` from it. On an error the read stops: `f` has been
    /// called for exactly the keys before the failing one.
    pub fn get_many_with(&self, keys: &[&[u8]], f: impl FnMut(usize, Option<&[u8]>)) -> Result<()> {
        self.engine.get_many_with(keys, f)
    }

    /// The values of `keys`, copied out, in order ([`Db::get_many_with`]).
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out = vec![None; keys.len()];
        self.engine
            .get_many_with(keys, |i, v| out[i] = v.map(<[u8]>::to_vec))?;
        Ok(out)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.engine.get_with(key, |_| ())?.is_some())
    }

    /// Stores `value` under `key`. Durable when this returns.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.engine.put(key, value, None)
    }

    /// Stores `value` under `key`, to expire at `deadline_ms` (milliseconds
    /// of Unix time, as [`now_ms`](Self::now_ms) counts them). From then on
    /// the key reads as absent and is deleted in the background. A deadline
    /// already passed deletes the key at once; one past
    /// [`MAX_DEADLINE_MS`] is refused. Durable when this returns.
    pub fn put_with_deadline(&self, key: &[u8], value: &[u8], deadline_ms: u64) -> Result<()> {
        self.engine.put(key, value, Some(deadline_ms))
    }

    /// Sets the deadline of `key` (ms of Unix time; one already passed
    /// deletes it). Returns whether the key was present. Rewrites the
    /// key's record with the same value. Durable when this returns.
    pub fn expire_at(&self, key: &[u8], deadline_ms: u64) -> Result<bool> {
        self.engine.set_deadline(key, Some(deadline_ms), false)
    }

    /// Removes the deadline of `key`; returns whether it had one.
    pub fn persist(&self, key: &[u8]) -> Result<bool> {
        self.engine.set_deadline(key, None, true)
    }

    /// The time to live of `key`.
    pub fn ttl(&self, key: &[u8]) -> Result<Ttl> {
        self.engine.ttl(key)
    }

    /// Now, in milliseconds of Unix time, by the clock deadlines are
    /// measured against ([`Options::clock`](crate::Options::clock)).
    pub fn now_ms(&self) -> u64 {
        self.engine.expiry.now_ms()
    }

    /// Applies every operation of `batch` atomically: after a crash at any
    /// instant the store shows all of them or none; no reader sees part of
    /// it (a reader meeting a key of a batch that is still publishing waits
    /// the few microseconds until the batch is whole, then reads it; reads
    /// of other keys never wait). Durable when this returns. At most
    /// [`MAX_BATCH_OPS`] operations and [`MAX_BATCH_BYTES`] of keys and
    /// values; a later operation on a key replaces an earlier one.
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        self.engine
            .commit_batch(batch.ops(), &[], false)
            .map(|_| ())
    }

    /// Applies every operation of `batch` as independent writes that share
    /// their fences: two fences for the whole group (the records, then the
    /// words that name them), where a `put` per key costs two each. For a
    /// server's pipeline of plain writes (group commit).
    ///
    /// Crash semantics, precisely:
    /// - **Not atomic across keys.** After a crash at any instant before
    ///   this returns, each key of the batch holds its old value or its new
    ///   one (for a delete: old or absent), independently of the others —
    ///   any mix. While it runs, readers may see some keys new and others
    ///   still old (each key's read is atomic, as with `put`).
    /// - **Durable on return:** once it returns `Ok`, every key holds its
    ///   new value across any crash.
    /// - **All or nothing on error:** every error (a key or value over its
    ///   limit, [`MAX_BATCH_OPS`]/[`MAX_BATCH_BYTES`], a full pool) comes
    ///   before any key changed: on `Err` nothing was written.
    ///
    /// As with [`write`](Self::write), a later operation on a key replaces
    /// an earlier one. Use [`write`](Self::write) when the keys must change
    /// together.
    pub fn write_grouped(&self, batch: &WriteBatch) -> Result<()> {
        self.engine.write_grouped(batch.ops())
    }

    /// Runs `f` as an optimistic transaction: its reads (`tx.get`) see the
    /// store and its own writes; at commit the keys it read are checked
    /// unchanged (a write or an expiry since is a conflict) and its writes
    /// commit as one atomic batch. On conflict `f` runs again, up to
    /// [`DEFAULT_TRANSACTION_ATTEMPTS`] times, then
    /// [`Error::TransactionConflict`]. An error returned by `f` ends it with
    /// nothing written. Serializable for the keys it reads and writes.
    pub fn transaction<R>(&self, f: impl FnMut(&mut Transaction) -> Result<R>) -> Result<R> {
        self.engine.transaction(DEFAULT_TRANSACTION_ATTEMPTS, f)
    }

    /// [`transaction`](Self::transaction) with its own bound on attempts.
    pub fn transaction_with_attempts<R>(
        &self,
        attempts: u32,
        f: impl FnMut(&mut Transaction) -> Result<R>,
    ) -> Result<R> {
        self.engine.transaction(attempts, f)
    }

    /// The value of `key` with its deadline and [`Version`], read together
    /// from one record (absent or expired: `None`). With
    /// [`write_if`](Self::write_if) this is an optimistic transaction whose
    /// reads and writes the caller holds itself (a server's MULTI/EXEC and
    /// WATCH).
    pub fn get_versioned(&self, key: &[u8]) -> Result<Option<Versioned>> {
        self.engine.get_versioned(key)
    }

    /// The [`Version`] of `key` (absent or expired: `None`).
    pub fn version(&self, key: &[u8]) -> Result<Option<Version>> {
        self.engine.version(key)
    }

    /// Applies `batch` as [`write`](Self::write) does, but only if every key
    /// of `expected` still has the version given (`None`: absent) — checked
    /// with the keys' locks held until the batch is published, so the check
    /// and the writes are one atomic step. Returns `false`, with nothing
    /// written, when a key changed (a write, a delete or an expiry since).
    pub fn write_if(
        &self,
        batch: &WriteBatch,
        expected: &[(&[u8], Option<Version>)],
    ) -> Result<bool> {
        self.engine.write_if(batch, expected)
    }

    /// Runs one pass of active expiry on the calling thread: deletes every
    /// key whose deadline has passed. Returns how many it deleted. (The
    /// background expiry does this on its own; this is for tests and tools.)
    #[doc(hidden)]
    pub fn expire_now(&self) -> Result<u64> {
        self.engine.wait_tally();
        self.engine.expire_due(0)
    }

    /// Writes `bytes` at byte offset `at` of the value of `key` (Redis's
    /// SETRANGE): a gap past the value's end is zero-filled, a missing key
    /// starts empty. Returns the value's new length. Durable when this
    /// returns. On the SSD tier the write is a patch on PM, merged into the
    /// value's extent later in the background (MixStore's delayed merge);
    /// reads see it at once.
    pub fn write_range(&self, key: &[u8], at: u64, bytes: &[u8]) -> Result<u64> {
        let len = self
            .engine
            .range_write(key, &[], patch::At::Offset(at), bytes)?;
        Ok(len.expect("every value starts with the empty head"))
    }

    /// Appends `bytes` to the value of `key` (a missing key starts empty);
    /// returns the new length. Like [`write_range`](Self::write_range) at
    /// the value's end.
    pub fn append(&self, key: &[u8], bytes: &[u8]) -> Result<u64> {
        let len = self.engine.range_write(key, &[], patch::At::End, bytes)?;
        Ok(len.expect("every value starts with the empty head"))
    }

    /// [`write_range`](Self::write_range) (`at: Some`) or
    /// [`append`](Self::append) (`None`), done only if the value starts
    /// with `head`; a missing key starts as `head`. `None`: the value does
    /// not start with `head`, nothing was written. (The server's typed
    /// values: `head` is the string type tag.)
    pub fn write_range_after(
        &self,
        key: &[u8],
        head: &[u8],
        at: Option<u64>,
        bytes: &[u8],
    ) -> Result<Option<u64>> {
        let at = at.map_or(patch::At::End, patch::At::Offset);
        self.engine.range_write(key, head, at, bytes)
    }

    /// Deletes `key`; returns whether it existed. Durable when this returns.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.engine.delete(key)
    }

    /// [`update`](Self::update) whose closure also sees the key's deadline
    /// (ms of Unix time; `None`: none).
    pub fn update_with_deadline<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>, Option<u64>) -> (Update, R),
    ) -> Result<R> {
        self.engine.update_with_deadline(key, f)
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
        Iter::new(&self.engine)
    }

    /// Where this pool's point index lives (chosen when it was created).
    pub fn point_index(&self) -> PointIndex {
        self.engine.point_index.kind()
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

    /// The SSD tier's data directory, when the pool has one (opened with
    /// `Options::data_dir`); `None` for a pool kept wholly in memory.
    pub fn data_dir(&self) -> Option<&Path> {
        self.engine.tier().map(|t| t.dir.as_path())
    }

    /// Merges every value's pending patches and empties every data file of
    /// the SSD tier that has dead bytes, on the calling thread; returns the
    /// values rewritten. (The tier's background thread does this when dead
    /// space grows; this is for tests and tools.)
    #[doc(hidden)]
    pub fn clean_tier_now(&self) -> Result<u64> {
        self.engine.clean_tier_now()
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
        if let Some(h) = self.expiry_thread.take() {
            let _ = h.join();
        }
        if let Some(h) = self.tier_thread.take() {
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
            if let Some(l) = self.ordered.as_ref().and_then(|o| o.leaves()) {
                // Before the clean mark: the copy names this session, which
                // the mark then vouches for.
                l.save_map(&self.pool);
            }
            let keys = self.count_now();
            self.pool.mark_clean(keys);
            // After the clean mark, the session's last write to the pool:
            // the copy names the file as this close leaves it.
            self.pool.save_scan_copy();
        }
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

impl Engine {
    #[inline]
    fn hash(&self, key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed)
    }

    /// This thread's lane (and its index), once every lane starts above the
    /// pool-wide sequence floor.
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
        self.point_index.slots(&self.pool.pm)
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
