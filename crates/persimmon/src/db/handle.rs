//! The `Db`, the public type: a handle on one open pool. Each method hands
//! its call to the engine room that implements it (`Db::open` is in
//! `open`, the ordered reads in `range`); the `Db` itself holds only the
//! engine and the threads of the work after open, and dropping it stops
//! them and closes the pool.
//!
//! Invariants:
//! - The engine outlives every call: the `Db` lets go of it only in its
//!   drop, after the background threads have been stopped and joined.
//! - The pool is closed (the engine dropped) by the `Db`'s drop, on the
//!   dropping thread, unless an epoch-deferred free still holds the engine
//!   after two seconds; so a reopen right after a drop finds the pool
//!   closed.

use std::path::{Path, PathBuf};
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::thread::JoinHandle;

use super::batch::{Version, WriteBatch};
use super::check::CheckReport;
use super::engine::Engine;
use super::expiry::Ttl;
use super::iter::Iter;
use super::patch;
use super::rebuild::REBUILD_SWEPT;
use super::stats::Stats;
use super::txn::{Transaction, Versioned, DEFAULT_TRANSACTION_ATTEMPTS};
use super::write::Update;
use crate::error::Result;
use crate::options::PointIndex;
use crate::pmem::wal::Durable;
use crate::pmem::Durability;

/// A Persimmon key-value store on one pool file.
///
/// `Db` is `Send + Sync`: share it (for example in an `Arc`) and call it from
/// any number of threads. Dropping it closes the pool cleanly.
pub struct Db {
    pub(super) engine: EngineHandle,
    pub(super) background: Option<JoinHandle<()>>,
    pub(super) ordered_walk: Option<JoinHandle<()>>,
    pub(super) expiry_thread: Option<JoinHandle<()>>,
    /// The SSD tier's merge and file cleaning (tiered pools only).
    pub(super) tier_thread: Option<JoinHandle<()>>,
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
        self.durable_on_return(self.engine.get_with(key, f))
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
        self.durable_on_return(self.engine.get_many_with(keys, f))
    }

    /// The values of `keys`, copied out, in order ([`Db::get_many_with`]).
    pub fn get_many(&self, keys: &[&[u8]]) -> Result<Vec<Option<Vec<u8>>>> {
        let mut out = vec![None; keys.len()];
        self.get_many_with(keys, |i, v| out[i] = v.map(<[u8]>::to_vec))?;
        Ok(out)
    }

    /// `done`, once every write it made, and every write it may have
    /// read, is durable (`Engine::settle`).
    fn durable_on_return<T>(&self, done: Result<T>) -> Result<T> {
        self.engine.settle(done)
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        Ok(self.get_with(key, |_| ())?.is_some())
    }

    /// Stores `value` under `key`. Durable when this returns.
    pub fn put(&self, key: &[u8], value: &[u8]) -> Result<()> {
        self.durable_on_return(self.engine.put(key, value, None))
    }

    /// Stores `value` under `key`, to expire at `deadline_ms` (milliseconds
    /// of Unix time, as [`now_ms`](Self::now_ms) counts them). From then on
    /// the key reads as absent and is deleted in the background. A deadline
    /// already passed deletes the key at once; one past
    /// [`MAX_DEADLINE_MS`] is refused. Durable when this returns.
    ///
    /// [`MAX_DEADLINE_MS`]: super::expiry::MAX_DEADLINE_MS
    pub fn put_with_deadline(&self, key: &[u8], value: &[u8], deadline_ms: u64) -> Result<()> {
        self.durable_on_return(self.engine.put(key, value, Some(deadline_ms)))
    }

    /// Sets the deadline of `key` (ms of Unix time; one already passed
    /// deletes it). Returns whether the key was present. Rewrites the
    /// key's record with the same value. Durable when this returns.
    pub fn expire_at(&self, key: &[u8], deadline_ms: u64) -> Result<bool> {
        self.durable_on_return(self.engine.set_deadline(key, Some(deadline_ms), false))
    }

    /// Removes the deadline of `key`; returns whether it had one.
    pub fn persist(&self, key: &[u8]) -> Result<bool> {
        self.durable_on_return(self.engine.set_deadline(key, None, true))
    }

    /// The time to live of `key`.
    pub fn ttl(&self, key: &[u8]) -> Result<Ttl> {
        self.durable_on_return(self.engine.ttl(key))
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
    ///
    /// [`MAX_BATCH_OPS`]: super::batch::MAX_BATCH_OPS
    /// [`MAX_BATCH_BYTES`]: super::batch::MAX_BATCH_BYTES
    pub fn write(&self, batch: &WriteBatch) -> Result<()> {
        let written = self.engine.commit_batch(batch.ops(), &[], false);
        self.durable_on_return(written.map(|_| ()))
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
    ///
    /// [`MAX_BATCH_OPS`]: super::batch::MAX_BATCH_OPS
    /// [`MAX_BATCH_BYTES`]: super::batch::MAX_BATCH_BYTES
    pub fn write_grouped(&self, batch: &WriteBatch) -> Result<()> {
        self.durable_on_return(self.engine.write_grouped(batch.ops()))
    }

    /// Runs `f` as an optimistic transaction: its reads (`tx.get`) see the
    /// store and its own writes; at commit the keys it read are checked
    /// unchanged (a write or an expiry since is a conflict) and its writes
    /// commit as one atomic batch. On conflict `f` runs again, up to
    /// [`DEFAULT_TRANSACTION_ATTEMPTS`] times, then
    /// [`Error::TransactionConflict`]. An error returned by `f` ends it with
    /// nothing written. Serializable for the keys it reads and writes.
    ///
    /// [`Error::TransactionConflict`]: crate::error::Error::TransactionConflict
    pub fn transaction<R>(&self, f: impl FnMut(&mut Transaction) -> Result<R>) -> Result<R> {
        self.durable_on_return(self.engine.transaction(DEFAULT_TRANSACTION_ATTEMPTS, f))
    }

    /// [`transaction`](Self::transaction) with its own bound on attempts.
    pub fn transaction_with_attempts<R>(
        &self,
        attempts: u32,
        f: impl FnMut(&mut Transaction) -> Result<R>,
    ) -> Result<R> {
        self.durable_on_return(self.engine.transaction(attempts, f))
    }

    /// The value of `key` with its deadline and [`Version`], read together
    /// from one record (absent or expired: `None`). With
    /// [`write_if`](Self::write_if) this is an optimistic transaction whose
    /// reads and writes the caller holds itself (a server's MULTI/EXEC and
    /// WATCH).
    pub fn get_versioned(&self, key: &[u8]) -> Result<Option<Versioned>> {
        self.durable_on_return(self.engine.get_versioned(key))
    }

    /// The [`Version`] of `key` (absent or expired: `None`).
    pub fn version(&self, key: &[u8]) -> Result<Option<Version>> {
        self.durable_on_return(self.engine.version(key))
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
        self.durable_on_return(self.engine.write_if(batch, expected))
    }

    /// Holds (`true`) or releases the background expiry: while held,
    /// keys past their deadline read as absent but are not reclaimed (nor
    /// counted in `keys_expired`). A server holds it during a client pause,
    /// as Redis stops expiring keys then.
    pub fn hold_expiry(&self, held: bool) {
        self.engine
            .expiry_held
            .store(held, std::sync::atomic::Ordering::Release);
    }

    /// Runs one pass of active expiry on the calling thread: deletes every
    /// key whose deadline has passed. Returns how many it deleted. (The
    /// background expiry does this on its own; this is for tests and tools.)
    #[doc(hidden)]
    pub fn expire_now(&self) -> Result<u64> {
        self.engine.wait_tally();
        self.durable_on_return(self.engine.expire_due(0))
    }

    /// Writes `bytes` at byte offset `at` of the value of `key` (Redis's
    /// SETRANGE): a gap past the value's end is zero-filled, a missing key
    /// starts empty. Returns the value's new length. Durable when this
    /// returns. On the SSD tier the write is a patch on PM, merged into the
    /// value's extent later in the background (MixStore's delayed merge);
    /// reads see it at once.
    pub fn write_range(&self, key: &[u8], at: u64, bytes: &[u8]) -> Result<u64> {
        let len = self.durable_on_return(self.engine.range_write(
            key,
            &[],
            patch::At::Offset(at),
            bytes,
        ))?;
        Ok(len.expect("every value starts with the empty head"))
    }

    /// Appends `bytes` to the value of `key` (a missing key starts empty);
    /// returns the new length. Like [`write_range`](Self::write_range) at
    /// the value's end.
    pub fn append(&self, key: &[u8], bytes: &[u8]) -> Result<u64> {
        let len =
            self.durable_on_return(self.engine.range_write(key, &[], patch::At::End, bytes))?;
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
        self.durable_on_return(self.engine.range_write(key, head, at, bytes))
    }

    /// Deletes `key`; returns whether it existed. Durable when this returns.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        self.durable_on_return(self.engine.delete(key))
    }

    /// [`update`](Self::update) whose closure also sees the key's deadline
    /// (ms of Unix time; `None`: none).
    pub fn update_with_deadline<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>, Option<u64>) -> (Update, R),
    ) -> Result<R> {
        self.durable_on_return(self.engine.update_with_deadline(key, f))
    }

    /// Atomic read-modify-write: `f` sees the current value (or `None`) while
    /// the key is locked and decides what to store; its second result is
    /// returned. Durable when this returns. `f` must not call into the `Db`.
    pub fn update<R>(&self, key: &[u8], f: impl FnOnce(Option<&[u8]>) -> (Update, R)) -> Result<R> {
        self.durable_on_return(self.engine.update(key, f))
    }

    /// Everything written so far, by any thread, as something to wait for:
    /// ready at once outside the disk domain; in it, once the write-ahead
    /// log is synced past it. A thread that defers its durability waits
    /// ([`defer_durability_waits`](crate::pmem::defer_durability_waits), as the
    /// RESP server's workers do) awaits this before it acknowledges a write
    /// (or a read that saw one); no other caller needs it.
    pub fn durable(&self) -> Durable {
        Durable::now(self.engine.pool.pm.wal())
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

    /// Calls `listener` with each key the background expiry deletes, on the
    /// expiry thread, once the delete is durable (keep it short: the next
    /// key waits). One listener per open `Db`: `false` (and `listener`
    /// dropped) when one is set already.
    pub fn on_expired(&self, listener: impl Fn(&[u8]) + Send + Sync + 'static) -> bool {
        self.engine.expiry.listener.set(Box::new(listener)).is_ok()
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
        self.durable_on_return(self.engine.clean_tier_now())
    }

    /// Runs the log cleaner once over every sealed log segment that has dead
    /// space, on the calling thread; returns how many segments it cleaned.
    /// (The background cleaner does this on its own when space runs high;
    /// this is for tests and tools.)
    #[doc(hidden)]
    pub fn clean_now(&self) -> Result<usize> {
        self.durable_on_return(self.engine.clean_now())
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
        // Bounded, as a guard against a reference that never goes; a
        // deferred free can take a while (a data file's unlink and its
        // directory's sync on a loaded disk took over 2 s here).
        let deadline = std::time::Instant::now() + std::time::Duration::from_secs(30);
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
pub(super) struct EngineHandle(pub(super) Option<Arc<Engine>>);

impl std::ops::Deref for EngineHandle {
    type Target = Engine;

    fn deref(&self) -> &Engine {
        self.0
            .as_deref()
            .expect("the engine is taken only when the Db drops")
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
