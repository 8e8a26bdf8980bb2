//! The write path: put, delete and update under the key's home bucket lock,
//! the lookup under that lock, record appends and publishing.
//!
//! Persist points, in order, of a put (see `db` and docs/design.md §6): the
//! record is written and durable (`write_record`'s fence) under the bucket
//! lock before the lookup reads the candidates' keys (`with_locked_early`:
//! the fence overlaps their prefetched misses), and before any word names
//! it; the
//! word that names it is durable (`publish_word`'s fence) before the put
//! returns; its persist bit is set after that fence, unflushed.
//!
//! Invariants:
//! - Every write holds its key's home bucket lock from the lookup to the
//!   publish, so a key's persistent word changes under that lock only; an
//!   empty slot is claimed by CAS to a delete marker (absent to readers).
//! - A claimed slot or a linked ordered-index node that the write does not
//!   go on to publish is given back (slot cleared, node unlinked; a node
//!   left by a crash is an orphan the next open's walk unlinks).
//! - A put is eliminated only against a holder it saw before that holder
//!   started publishing (`mark_publishing`), whose record the slot names,
//!   and never against a read-modify-write (`REC_FLAG_RMW`).
//! - An `update` closure runs at most once; a decision taken on a value
//!   that a retry could make stale is not applied (the caller gets
//!   `PoolFull`).

use std::sync::atomic::Ordering;

use crossbeam_epoch::{self as epoch, Guard};

use super::engine::{check_key, check_value, Engine};
use crate::error::{Error, Result};
use crate::index::locks::{BucketLocks, Held};
use crate::index::{self, SegRef};
use crate::layout::{
    self, RecordHeader, SegmentHeader, SegmentKind, Slot, RECORD_HEADER_BYTES, REC_FLAG_RMW,
};
use crate::log::Lane;
use crate::ordered::Inserted;
use crate::pmem;

/// What an [`Db::update`](super::Db::update) closure decides.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Update {
    /// Leave the key as it is.
    Keep,
    /// Store this value (the key keeps its deadline, if it has one).
    Put(Vec<u8>),
    /// Store this value with this deadline (ms of Unix time; `None`: none).
    /// A deadline already passed deletes the key.
    PutExpiring {
        value: Vec<u8>,
        deadline: Option<u64>,
    },
    /// Delete the key (no-op when absent).
    Delete,
}

/// A key's current record, as a write finds it under the bucket lock.
pub(super) struct Found {
    /// Its slot (meaningful only when `in_index`).
    pub(super) addr: u64,
    pub(super) slot: Slot,
    pub(super) header: RecordHeader,
    /// DRAM point index: the key's ordered-index node (else 0).
    pub(super) node: u64,
    /// The point index holds it (always, except with the DRAM point index
    /// before its rebuild is done: then a key may be known only through its
    /// node, and its record is not yet counted live).
    pub(super) in_index: bool,
}

impl Found {
    /// The record this entry makes live in the accounting, if any.
    pub(super) fn counted(&self) -> Option<(u64, u64)> {
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

/// Outcome of the locked part of a write.
pub(super) enum Locked<R> {
    Done(R),
    /// The key's buckets have no free slot: split this segment and retry.
    Split(SegRef),
    /// Free slots seen by the scan were taken by writers of the neighbour
    /// bucket meanwhile: look again before deciding to split.
    Rescan,
    /// The key's ordered-index leaf (at this offset) is full: split it with
    /// no lock held and retry.
    SplitLeaf(u64),
}

/// The free slots of a key's buckets, with the word each held when seen (a
/// claim compares against it), the preferred bucket's first.
#[derive(Default)]
pub(super) struct FreeSlots {
    slots: [(u64, u64); index::MAX_PROBE * layout::SLOTS_PER_BUCKET],
    len: usize,
    /// Free slots per probed bucket, in probe order.
    per_bucket: [usize; index::MAX_PROBE],
}

impl FreeSlots {
    fn push(&mut self, bucket: usize, addr: u64, word: u64) {
        self.slots[self.len] = (addr, word);
        self.len += 1;
        self.per_bucket[bucket] += 1;
    }

    /// Moves the free slots of probed bucket `first` ahead of the others
    /// (which keep their order).
    fn put_first(&mut self, first: usize) {
        if first > 0 {
            let start: usize = self.per_bucket[..first].iter().sum();
            let n = self.per_bucket[first];
            self.slots[..start + n].rotate_right(n);
        }
    }

    pub(super) fn as_slice(&self) -> &[(u64, u64)] {
        &self.slots[..self.len]
    }
}

/// What the locked part of a write knows about its lock.
pub(super) struct LockCtx {
    pub(super) seg: SegRef,
    /// A holder seen *before it started publishing*, or 0 (see `BucketLocks::lock`).
    pub(super) observed: u64,
    pub(super) held: Held,
}

impl Engine {
    /// Runs `body` with the home bucket of `h` locked and the key's slot
    /// looked up; splits and retries when `body` asks for room.
    pub(super) fn with_locked<R>(
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
    pub(super) fn with_locked_at<R>(
        &self,
        key: &[u8],
        h: u64,
        seq: u64,
        node: Option<u64>,
        body: impl FnMut(&LockCtx, Option<Found>, &[(u64, u64)], &Guard) -> Result<Locked<R>>,
    ) -> Result<R> {
        self.with_locked_early(key, h, seq, node, |_| Ok(()), body)
    }

    /// [`with_locked_at`](Self::with_locked_at), running `early` with the
    /// lock held after the bucket pair's candidate records were asked for
    /// (prefetched) and before they are read: work that does not depend on
    /// the lookup (a put's record append and its fence) overlaps their
    /// cache misses. `early` runs in every attempt; an error from it ends
    /// the write like one from `body`.
    pub(super) fn with_locked_early<R>(
        &self,
        key: &[u8],
        h: u64,
        seq: u64,
        node: Option<u64>,
        mut early: impl FnMut(&Guard) -> Result<()>,
        mut body: impl FnMut(&LockCtx, Option<Found>, &[(u64, u64)], &Guard) -> Result<Locked<R>>,
    ) -> Result<R> {
        let fp = index::fingerprint(h);
        let pm = self.ipm();
        loop {
            let guard = epoch::pin();
            let seg = self.index.dir.load().lookup(h);
            let probe = self.index.probe(&seg, h);
            // The bucket lines load while the lock is taken (its line may
            // miss too): misses overlapped instead of one after another.
            for &bucket in probe.iter() {
                pm.prefetch(bucket);
            }
            let (held, observed) = self.index.locks.lock(pm, probe[0], seq);
            let lock = BucketLock {
                locks: &self.index.locks,
                pm,
                held,
            };
            // Leaf entries this attempt pins stay put until it ends; declared
            // after the lock, so dropped before it (a pin never outlives the
            // bucket lock: the next holder of the key pins it again).
            let pins = self.ordered.as_ref().and_then(|o| o.scope());
            if self.index.dir.load().lookup(h) != seg {
                continue;
            }
            self.prefetch_records(&seg, h, key.len());
            let mut free = FreeSlots::default();
            let step = early(&guard).and_then(|()| {
                let found = self.lookup_locked(&seg, &probe, key, fp, node, &mut free)?;
                let ctx = LockCtx {
                    seg,
                    observed: if self.eliminate { observed } else { 0 },
                    held,
                };
                body(&ctx, found, free.as_slice(), &guard)
            });
            match step {
                Ok(Locked::Done(r)) => return Ok(r),
                Ok(Locked::Split(seg)) => {
                    drop(pins);
                    drop(lock);
                    drop(guard);
                    self.split(seg)?;
                }
                Ok(Locked::SplitLeaf(leaf)) => {
                    drop(pins);
                    drop(lock);
                    drop(guard);
                    self.split_leaf(leaf, &[key])?;
                }
                Ok(Locked::Rescan) => {}
                Err(e) if self.relievable(&e) => {
                    // Dead segments are waiting for their epoch: unpin, let it
                    // pass, and try again.
                    drop(pins);
                    drop(lock);
                    drop(guard);
                    self.reclaim_pending()?;
                }
                Err(e) => return Err(e),
            }
        }
    }

    /// The key's entry in its buckets `probe` of `seg` (home bucket
    /// locked); their free slots (empty ones and stale copies left by a
    /// split) go to `free`, those of the bucket a new entry should take
    /// first ([`Index::preferred`](crate::index::Index::preferred)) first. With the DRAM point index before its rebuild is complete,
    /// a key the index misses is looked up in the ordered index (at `node`
    /// when given) and returned as found but not `in_index`.
    #[inline]
    pub(super) fn lookup_locked(
        &self,
        seg: &SegRef,
        probe: &[u64],
        key: &[u8],
        fp: u16,
        node: Option<u64>,
        free: &mut FreeSlots,
    ) -> Result<Option<Found>> {
        let pm = self.ipm();
        let mut found = None;
        for (i, &bucket) in probe.iter().enumerate() {
            for addr in self.index.slots(bucket) {
                let v = pm.load_u64(addr);
                let s = Slot(v);
                if s.is_empty() || !seg.owns_fingerprint(s.fingerprint()) {
                    free.push(i, addr, v);
                    continue;
                }
                if s.is_marker() || s.fingerprint() != fp || found.is_some() {
                    continue;
                }
                let hdr = self.record_header(s.offset())?;
                if self.record_key(s.offset(), &hdr)? == key {
                    let node = self.pinned_node(key, fp, addr, s)?;
                    found = Some(Found {
                        addr,
                        slot: s,
                        header: hdr,
                        node,
                        in_index: true,
                    });
                }
            }
            if found.is_some() {
                // Free slots serve only a key not found: the buckets after
                // the key's are not read (most keys sit in their home).
                break;
            }
        }
        free.put_first(self.index.preferred(&free.per_bucket[..probe.len()]));
        // Under the lock the answer is stable: the rebuild enters keys
        // under their bucket locks before it reports itself complete.
        if found.is_none() && !self.point_index.is_complete() {
            found = match self.find_in_ordered(key, fp, node)? {
                Some((node, slot, header)) => Some(Found {
                    addr: 0,
                    slot,
                    header,
                    node: self.pin_entry(key, fp, Some(node), slot)?,
                    in_index: false,
                }),
                None => None,
            };
        }
        Ok(found)
    }

    /// The ordered-index record word of the key at DRAM slot `addr` (which
    /// names `s`): the node remembered next to the slot, or with leaves the
    /// key's entry, pinned (the remembered one is a hint a split may have
    /// outdated; it is brought up to date). 0 with the PM point index.
    #[inline]
    fn pinned_node(&self, key: &[u8], fp: u16, addr: u64, s: Slot) -> Result<u64> {
        let hint = self.point_index.node_of(addr);
        if self.ordered.as_ref().is_none_or(|o| o.leaves().is_none()) {
            return Ok(hint.unwrap_or(0));
        }
        let entry = self.pin_entry(key, fp, hint, s)?;
        if Some(entry) != hint {
            self.point_index.set_node(addr, entry);
        }
        Ok(entry)
    }

    /// Leaves: pins the entry of `key` naming record `s` (`hint` first).
    /// Other layouts: `hint` as it is.
    fn pin_entry(&self, key: &[u8], fp: u16, hint: Option<u64>, s: Slot) -> Result<u64> {
        let Some(l) = self.ordered.as_ref().and_then(|o| o.leaves()) else {
            return Ok(hint.unwrap_or(0));
        };
        l.pin(&self.pool, key, fp, hint, s.offset())?
            .ok_or_else(|| {
                Error::corruption(
                    s.offset(),
                    "the DRAM point index names a record whose key has no leaf entry",
                )
            })
    }

    /// Splits ordered-index leaf `leaf` (no lock held) to make room for
    /// the new keys among `pending`.
    pub(super) fn split_leaf(&self, leaf: u64, pending: &[&[u8]]) -> Result<()> {
        match self.ordered.as_ref().and_then(|o| o.leaves()) {
            Some(l) => l.split(&self.pool, leaf, pending),
            None => Ok(()),
        }
    }

    /// Claims one of `free` (free slots of the key's buckets in `seg`) for a
    /// new key by CAS to a delete marker (absent to readers) and returns its
    /// address; or, when none can be had, what the write must do instead:
    /// split `seg` (the buckets have no free slot) or look again (the free
    /// slots it saw were taken meanwhile by writers of other home buckets).
    #[inline]
    pub(super) fn claim<R>(
        &self,
        free: &[(u64, u64)],
        fp: u16,
        seg: SegRef,
    ) -> std::result::Result<u64, Locked<R>> {
        let marker = Slot::delete_marker(fp).0;
        match free
            .iter()
            .find(|&&(addr, cur)| self.ipm().cas_u64(addr, cur, marker).is_ok())
        {
            Some(&(addr, _)) => Ok(addr),
            None if free.is_empty() => Err(Locked::Split(seg)),
            None => Err(Locked::Rescan),
        }
    }

    /// Appends a record; returns its offset and total size. The record is
    /// durable and counted live in its segment.
    #[inline]
    pub(super) fn write_record(
        &self,
        lane: &Lane,
        rec: &RecordParts,
        guard: &Guard,
    ) -> Result<(u64, u64)> {
        let total = rec.total();
        let pm = &self.pool.pm;
        if rec.deadline.is_some() {
            // Older builds would not see the deadline: lock them out first.
            self.pool.raise_version(layout::FORMAT_VERSION_BATCHES);
        }
        if total > self.pool.segment_bytes / 2 {
            let at = self.write_large(lane, rec)?;
            // Persist point: the large record is durable before a slot names it.
            pm.fence();
            return Ok((at, total));
        }
        let (at, sealed) = lane.append(&self.pool, total, |at| rec.store(pm, at))?;
        // The record reads back as written (it is durable: `append` fenced).
        debug_assert_eq!(
            pm.slice(at, RECORD_HEADER_BYTES).ok(),
            Some(&rec.header[..])
        );
        if let Some(old) = sealed {
            self.maybe_free(old, guard);
        }
        Ok((at, total))
    }

    /// Writes and flushes a record too large for a log segment into a run of
    /// segments of its own, counted live and sealed. **No fence**: the
    /// caller fences before anything names it.
    pub(super) fn write_large(&self, lane: &Lane, rec: &RecordParts) -> Result<u64> {
        let total = rec.total();
        let run = (layout::SEGMENT_HEADER_BYTES + total).div_ceil(self.pool.segment_bytes);
        let first = self.pool.allocate(SegmentHeader {
            kind: SegmentKind::Large,
            lane_or_depth: lane.id as u32,
            run_segments: run as u32,
            base_seq_or_prefix: RecordHeader::decode(&rec.header).seq & crate::log::COUNTER_MASK,
        })?;
        let at = self.pool.segment_offset(first) + layout::SEGMENT_HEADER_BYTES;
        rec.store(&self.pool.pm, at);
        self.pool.add_live(first, total);
        self.pool.seal(first);
        Ok(at)
    }

    /// Publishes record `off` of the key whose slot is `addr` (and whose
    /// ordered-index node is `node`, with the DRAM point index).
    #[inline]
    pub(super) fn publish(&self, addr: u64, node: u64, fp: u16, off: u64) {
        // The persistent truth first (the slot, or with the DRAM point index
        // the node's record word); a DRAM slot mirrors it once it is durable.
        let word = self.point_index.word_to_persist(addr, node);
        self.publish_word(word, fp, off);
        self.point_index
            .mirror(addr, node, Slot::new(fp, off, true));
    }

    /// Makes record `at` (`total` bytes, header `h`) its key's in place of
    /// the entry `f` it had (bucket lock held): publish, accounting, and the
    /// new record's deadline entry, if it has one. What a move (the log
    /// cleaner, the tier cleaner) and a patch of an existing key share.
    pub(super) fn republish(
        &self,
        lane_index: usize,
        f: &Found,
        (at, total): (u64, u64),
        h: &RecordHeader,
        guard: &Guard,
    ) {
        self.publish(f.addr, f.node, f.slot.fingerprint(), at);
        self.replaced(lane_index, f.addr, Some((at, total)), Some(f), guard);
        self.note_deadline(at, h);
    }

    /// Makes record `at` — a byte-for-byte copy of the record `f` names,
    /// already durable — its key's (bucket lock held), like
    /// [`republish`](Self::republish) but with **no fence**: the word is
    /// stored with its persist bit set and flushed, and the caller fences
    /// once for a whole chunk of such switches. Sound because both records
    /// hold the same bytes: until that fence a crash may keep either word,
    /// and each names the same value durably; the caller keeps the
    /// original's segment from being freed (an epoch pin) until the fence.
    pub(super) fn relocate(
        &self,
        f: &Found,
        (at, total): (u64, u64),
        h: &RecordHeader,
        guard: &Guard,
    ) {
        let pm = &self.pool.pm;
        let word = self.point_index.word_to_persist(f.addr, f.node);
        let slot = Slot::new(f.slot.fingerprint(), at, true);
        pm.store_u64(word, slot.0);
        pm.flush(word, 8);
        self.point_index.mirror(f.addr, f.node, slot);
        self.replaced(0, f.addr, Some((at, total)), Some(f), guard);
        self.note_deadline(at, h);
    }

    /// Stores record `off` into the pool word `addr` (a slot, or a node's
    /// record word) with the two-phase atomic write.
    #[inline]
    pub(super) fn publish_word(&self, addr: u64, fp: u16, off: u64) {
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
        debug_assert_ne!(
            Slot(pm.load_u64(addr)).offset(),
            off,
            "a record is published once"
        );
        pm.store_u64(addr, slot.0);
        pm.flush(addr, 8);
        // Persist point: the slot names the record durably; the write is done.
        pm.fence();
        // Only readers helping to persist may have touched it since (they
        // set the persist bit and nothing else).
        debug_assert_eq!(Slot(pm.load_u64(addr)).with_persist(), slot.with_persist());
        pm.store_u64(addr, slot.with_persist().0);
    }

    /// The ordered index limits keys to half a segment.
    pub(super) fn check_ordered_key(&self, key: &[u8]) -> Result<()> {
        match &self.ordered {
            Some(o) if key.len() > o.max_key() => Err(Error::KeyTooLarge {
                len: key.len(),
                max: o.max_key(),
            }),
            _ => Ok(()),
        }
    }

    /// Gives `key` its place in the ordered index (a new key, before the
    /// point index names it): a linked node, or a reserved leaf entry.
    /// Returns the key's record word in the ordered index (0 without one)
    /// and whether it was placed now; or `Err(leaf)` when its leaf is full
    /// and must be split first. On failure or `Err(leaf)` the claimed slot
    /// `addr` is given back.
    pub(super) fn ordered_insert(
        &self,
        key: &[u8],
        fp: u16,
        addr: Option<u64>,
        guard: &Guard,
    ) -> Result<std::result::Result<(u64, bool), u64>> {
        let Some(o) = &self.ordered else {
            return Ok(Ok((0, false)));
        };
        let give_back = || {
            if let Some(a) = addr {
                self.ipm().store_u64(a, 0);
            }
        };
        match o
            .insert(&self.pool, key, fp, guard)
            .inspect_err(|_| give_back())?
        {
            Inserted::Word { word, new } => Ok(Ok((word, new))),
            Inserted::Full(leaf) => {
                give_back();
                Ok(Err(leaf))
            }
        }
    }

    /// Undoes [`ordered_insert`](Self::ordered_insert) after a failed write
    /// (best effort: a skiplist node left behind is an orphan, skipped by
    /// readers and unlinked by the next open's walk; a reserved leaf entry
    /// is free again).
    pub(super) fn ordered_undo(&self, key: &[u8], node: u64, linked: bool, guard: &Guard) {
        if let (true, Some(o)) = (linked, &self.ordered) {
            let _ = o.remove(&self.pool, key, node, guard);
        }
    }

    /// Stores `value` under `key`, with a deadline (ms of Unix time) or
    /// none. A deadline already passed deletes the key instead.
    pub(super) fn put(&self, key: &[u8], value: &[u8], deadline: Option<u64>) -> Result<()> {
        check_key(key)?;
        check_value(value)?;
        self.check_ordered_key(key)?;
        if let Some(d) = deadline {
            if !self.check_deadline(d)? {
                return self.delete(key).map(|_| ());
            }
        }
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        let (lane_index, lane) = self.lane();
        let seq = lane.next_seq(&self.pool);
        // A large value's extent is durable, and the CRC over the record
        // computed, before taking the lock. (`stored` lives until the put
        // returns: its extent stays in flight until counted live.)
        let stored = self.stored_value(value)?;
        let rec = RecordParts::new(key, &stored.field, stored.flags, seq, deadline);
        // The record is written (and fenced) under the lock but before the
        // lookup reads the candidates' keys: the fence and those misses
        // overlap. Written once; a retry (split) publishes the same record.
        let written = std::cell::Cell::new(None);
        let write_early = |guard: &Guard| {
            if written.get().is_none() {
                written.set(Some(self.write_record(lane, &rec, guard)?));
            }
            Ok(())
        };
        let outcome =
            self.with_locked_early(key, h, seq, None, write_early, |ctx, found, free, guard| {
                let (off, total) = written
                    .get()
                    .expect("the record is written before the lookup");
                let held = ctx.held;
                if let Some(f) = &found {
                    if ctx.observed != 0
                        && f.header.seq == ctx.observed
                        && f.header.flags & REC_FLAG_RMW == 0
                    {
                        // Concurrent write elimination: the holder we waited for
                        // stored this key while we were in flight; order our put
                        // just before it. Our record stays dead.
                        self.eliminated_puts.fetch_add(1, Ordering::Relaxed);
                        written.set(None);
                        self.sub_live(off, total, guard);
                        return Ok(Locked::Done(()));
                    }
                }
                let (addr, claimed) = match found.as_ref().filter(|f| f.in_index) {
                    Some(f) => (f.addr, false),
                    None => match self.claim(free, fp, ctx.seg) {
                        Ok(a) => (a, true),
                        Err(retry) => return Ok(retry),
                    },
                };
                // From here on nothing fails: the slot and the ordered-index
                // entry need no giving back.
                let node = match &found {
                    None => match self.ordered_insert(key, fp, claimed.then_some(addr), guard)? {
                        Ok((node, _linked)) => node,
                        Err(leaf) => return Ok(Locked::SplitLeaf(leaf)),
                    },
                    Some(f) => f.node,
                };
                // Waiters that first see us from here on started after our
                // value may have become visible: they must not be eliminated.
                self.index.locks.mark_publishing(&held, seq);
                written.set(None);
                self.publish(addr, node, fp, off);
                self.replaced(lane_index, addr, Some((off, total)), found.as_ref(), guard);
                if let Some(d) = deadline {
                    self.expiry.note(d, off, seq);
                }
                Ok(Locked::Done(()))
            });
        if let Some((off, total)) = written.get() {
            // Written but never published (the write failed): dead.
            self.sub_live(off, total, &epoch::pin());
        }
        outcome
    }

    pub(super) fn delete(&self, key: &[u8]) -> Result<bool> {
        check_key(key)?;
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        let (lane_index, lane) = self.lane();
        let seq = lane.next_seq(&self.pool);
        self.with_locked(key, h, seq, |_ctx, found, _free, guard| {
            let Some(f) = found else {
                return Ok(Locked::Done(false));
            };
            // An expired key is removed too, but it was absent already.
            let present = !self.expired(f.slot.offset(), &f.header)?;
            self.remove(lane_index, key, &f, fp, guard);
            Ok(Locked::Done(present))
        })
    }

    /// Deletes the entry `f` of `key` (bucket lock held), then its node in
    /// the ordered index.
    pub(super) fn remove(&self, lane_index: usize, key: &[u8], f: &Found, fp: u16, guard: &Guard) {
        let pm = &self.pool.pm;
        // The persistent word that names the record: the slot, or with the
        // DRAM point index the node's record word.
        let word = self.point_index.word_to_persist(f.addr, f.node);
        debug_assert_eq!(
            Slot(pm.load_u64(word)).offset(),
            f.slot.offset(),
            "the persistent word names the record being deleted"
        );
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
        if f.in_index {
            self.point_index.unmirror(f.addr);
        }
        self.replaced(lane_index, f.addr, None, Some(f), guard);
        if let Some(o) = &self.ordered {
            // The delete is durable already. If the skiplist cannot unlink
            // the node (it found damage, which `check` reports), the node is
            // an orphan: readers skip it, the next open's walk unlinks it.
            let _ = o.remove(&self.pool, key, f.node, guard);
        }
    }

    pub(super) fn update<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>) -> (Update, R),
    ) -> Result<R> {
        self.update_with_deadline(key, |value, _| f(value))
    }

    /// [`update`](Self::update) whose closure also sees the key's deadline.
    pub(super) fn update_with_deadline<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(Option<&[u8]>, Option<u64>) -> (Update, R),
    ) -> Result<R> {
        check_key(key)?;
        self.check_ordered_key(key)?;
        let h = self.hash(key);
        let (lane_index, lane) = self.lane();
        let w = KeyWrite {
            key,
            fp: index::fingerprint(h),
            seq: lane.next_seq(&self.pool),
            lane_index,
            lane,
        };
        let mut f = Some(f);
        self.with_locked(key, h, w.seq, |ctx, found, free, guard| {
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
                None => match self.claim(free, w.fp, ctx.seg) {
                    Ok(a) => Some(a),
                    Err(retry) => return Ok(retry),
                },
            };
            let (node, linked) = match (&found, claimed) {
                (None, Some(a)) => match self.ordered_insert(key, w.fp, Some(a), guard)? {
                    Ok(placed) => placed,
                    Err(leaf) => return Ok(Locked::SplitLeaf(leaf)),
                },
                (Some(fd), _) => (fd.node, false),
                (None, None) => (0, false),
            };
            let reserved = Reserved {
                slot: claimed,
                node,
                linked,
            };
            // Gives the reserved slot back if the closure panics.
            let mut claim_guard = ClaimGuard {
                pm: self.ipm(),
                addr: claimed,
            };
            let (current, deadline) = match &found {
                Some(fd) if !self.expired(fd.slot.offset(), &fd.header)? => (
                    Some(self.record_value(fd.slot.offset(), &fd.header)?),
                    self.record_deadline(fd.slot.offset(), &fd.header)?,
                ),
                _ => (None, None),
            };
            let f = f.take().expect("update closure runs once");
            let (decision, result) = f(current.as_deref(), deadline);
            claim_guard.addr = None;
            self.apply_update(&w, decision, found, &reserved, guard)?;
            Ok(Locked::Done(result))
        })
    }

    /// Carries out an `update` closure's decision (the bucket lock held).
    fn apply_update(
        &self,
        w: &KeyWrite,
        decision: Update,
        found: Option<Found>,
        reserved: &Reserved,
        guard: &Guard,
    ) -> Result<()> {
        let decided = self
            .decide(decision, found.as_ref())
            .inspect_err(|_| self.give_back(w.key, reserved, guard))?;
        let (value, deadline) = match decided {
            Decided::Store(value, deadline) => (value, deadline),
            other => {
                self.give_back(w.key, reserved, guard);
                if let (Decided::Delete, Some(fd)) = (other, &found) {
                    self.remove(w.lane_index, w.key, fd, w.fp, guard);
                }
                return Ok(());
            }
        };
        let stored = check_value(&value).and_then(|()| self.stored_value(&value));
        let written = stored.and_then(|s| {
            let flags = REC_FLAG_RMW | s.flags;
            let rec = RecordParts::new(w.key, &s.field, flags, w.seq, deadline);
            self.write_record(w.lane, &rec, guard)
                .map(|placed| (placed, s))
        });
        let ((off, total), _in_flight) =
            written.inspect_err(|_| self.give_back(w.key, reserved, guard))?;
        let addr = reserved
            .slot
            .or(found.as_ref().map(|fd| fd.addr))
            .expect("an updated key has a slot: its own or a claimed one");
        self.publish(addr, reserved.node, w.fp, off);
        self.replaced(
            w.lane_index,
            addr,
            Some((off, total)),
            found.as_ref(),
            guard,
        );
        if let Some(d) = deadline {
            self.expiry.note(d, off, w.seq);
        }
        Ok(())
    }

    /// What an `update` decision comes to: a deadline already passed
    /// deletes, and a plain `Put` keeps the key's live deadline (Redis's
    /// INCR, APPEND).
    fn decide(&self, decision: Update, found: Option<&Found>) -> Result<Decided> {
        Ok(match decision {
            Update::Keep => Decided::Keep,
            Update::Delete => Decided::Delete,
            Update::PutExpiring {
                deadline: Some(d), ..
            } if !self.check_deadline(d)? => Decided::Delete,
            Update::PutExpiring { value, deadline } => Decided::Store(value, deadline),
            Update::Put(value) => {
                let deadline = match found {
                    Some(fd) => self.live_deadline(fd.slot.offset(), &fd.header)?,
                    None => None,
                };
                Decided::Store(value, deadline)
            }
        })
    }

    /// After the key at slot `addr` went from the entry a write found
    /// (`old`, if any) to record `new` (or to none): live bytes and the key
    /// count (`account`), and the old record's deadline entry, if it had
    /// one, is stale from now on.
    #[inline]
    pub(super) fn replaced(
        &self,
        lane: usize,
        addr: u64,
        new: Option<(u64, u64)>,
        old: Option<&Found>,
        guard: &Guard,
    ) {
        if let Some(f) = old {
            self.forget_deadline(f.slot.offset(), &f.header);
        }
        self.account(lane, addr, new, old.and_then(Found::counted), guard);
    }

    /// Gives back what a write reserved for a new key and did not publish.
    fn give_back(&self, key: &[u8], reserved: &Reserved, guard: &Guard) {
        if let Some(a) = reserved.slot {
            self.ipm().store_u64(a, Slot::EMPTY.0);
        }
        self.ordered_undo(key, reserved.node, reserved.linked, guard);
    }
}

/// The parts of one record to write: its encoded header, key, value and
/// deadline (which the header's flags and CRC already cover).
pub(super) struct RecordParts<'a> {
    pub(super) header: [u8; RECORD_HEADER_BYTES],
    pub(super) key: &'a [u8],
    pub(super) value: &'a [u8],
    pub(super) deadline: Option<u64>,
}

impl<'a> RecordParts<'a> {
    /// The record of `key` and `value` with `flags`, sequence number `seq`
    /// and `deadline`; its header (and CRC) is computed here.
    pub(super) fn new(
        key: &'a [u8],
        value: &'a [u8],
        flags: u32,
        seq: u64,
        deadline: Option<u64>,
    ) -> RecordParts<'a> {
        RecordParts {
            header: RecordHeader::encode(key, value, flags, seq, deadline),
            key,
            value,
            deadline,
        }
    }

    /// Bytes it occupies in the log.
    pub(super) fn total(&self) -> u64 {
        RecordHeader::decode(&self.header).total_bytes()
    }

    /// Stores and flushes it at `at` (no fence).
    pub(super) fn store(&self, pm: &pmem::PmemFile, at: u64) {
        let deadline = self.deadline.map(u64::to_le_bytes);
        let ext: &[u8] = deadline.as_ref().map_or(&[], |d| &d[..]);
        let n = RECORD_HEADER_BYTES + ext.len() + self.key.len() + self.value.len();
        if n <= 512 {
            let mut buf = [0u8; 512];
            let mut at_buf = 0;
            for part in [&self.header[..], ext, self.key, self.value] {
                buf[at_buf..at_buf + part.len()].copy_from_slice(part);
                at_buf += part.len();
            }
            pm.write_persistent(at, &buf[..n]);
        } else {
            let mut head = Vec::with_capacity(n - self.value.len());
            head.extend_from_slice(&self.header);
            head.extend_from_slice(ext);
            head.extend_from_slice(self.key);
            pm.write_persistent(at, &head);
            pm.write_persistent(at + head.len() as u64, self.value);
        }
    }
}

/// An `update` decision as it is carried out.
enum Decided {
    Keep,
    Delete,
    /// This value, with this deadline (or none).
    Store(Vec<u8>, Option<u64>),
}

/// One write's identity: its key, fingerprint, sequence number and lane.
struct KeyWrite<'a> {
    key: &'a [u8],
    fp: u16,
    seq: u64,
    lane_index: usize,
    lane: &'a Lane,
}

/// What a write reserved for a new key before deciding: a claimed slot and
/// a linked ordered-index node (each given back if it does not publish).
struct Reserved {
    slot: Option<u64>,
    node: u64,
    linked: bool,
}
