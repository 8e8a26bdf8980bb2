//! Atomic write batches: puts and deletes of many keys that commit
//! all-or-nothing, durable on return; also the commit of a transaction
//! (the same, after validating the keys it read); and grouped writes, the
//! same machinery without the undo record: many independent writes that
//! share their two fences (`BatchMode::Grouped`, below).
//!
//! Commit of a batch (persist points in order; docs/design.md §6a):
//! 1. lock the home buckets of every key (ascending lock order, like every
//!    multi-lock holder), look the keys up, claim slots and link
//!    ordered-index nodes for new keys; validate a transaction's reads;
//! 2. append every record (puts; tombstones for deletes of present keys),
//!    all carrying the batch's sequence number and `REC_FLAG_BATCH`, and the
//!    undo record (each word the batch will change, with its old value),
//!    flushing each — **fence A**;
//! 3. begin the commit-table entry (undo record, sequence) — **fence B**;
//! 4. register the batch as publishing; store every new word (persist bit
//!    0), flushing each — **fence C**;
//! 5. without deletes: free the entry — **fence D**, the commit point;
//!    with deletes: mark the entry committed — **fence D**, the commit
//!    point; clear the deleted keys' words — **fence E**; free the entry —
//!    **fence F**;
//! 6. set persist bits, mirror DRAM slots, unregister, account, unlink the
//!    deleted keys' nodes, unlock.
//!
//! So a batch costs at most 6 fences whatever its size (4 without deletes),
//! plus, on a pool with the ordered index, the link fences of each new
//! key's node and the unlink fences of each deleted key's node.
//!
//! Invariants:
//! - Nothing a batch writes is named by any word before fence B, so an
//!   error up to there gives back the claims and nodes and leaves only dead
//!   records (taken back out of the live bytes).
//! - After fence B no step can fail: the rest is stores, flushes and fences.
//! - A reader never sees part of a batch: from registration to
//!   unregistration every changed word names a record of the batch (a
//!   tombstone for a delete), and a reader meeting one waits for the batch
//!   and reads again. Readers of other keys never wait.
//! - The old records stay counted live until the commit point, so the
//!   segments the undo record points into cannot be freed before it.
//!
//! A **grouped write** (`Db::write_grouped`) plans, locks and reserves
//! exactly as above, then:
//! 2. appends every put's record (no batch flag: readers never wait on
//!    it; one sequence number for the group, as a batch), flushing each —
//!    **fence G1** (no undo record, no commit-table entry);
//! 3. stores every put's new word (persist bit 0) and every delete's
//!    delete marker, flushing each — **fence G2**: every key is durable;
//! 4. sets persist bits, clears the deleted words, mirrors DRAM slots,
//!    accounts, unlinks deleted keys' nodes, unlocks.
//!
//! So 2 fences per group, not 2 per key (1 for a group of deletes only:
//! G1 has nothing to wait for). It is *not* atomic: a crash
//! before G2 completes leaves each key old or new, independently (any mix),
//! and readers may see some keys new before others. It is all-or-nothing
//! on error (every error comes before G1's stores are named by any word:
//! limits, allocation, reservation) and durable on return.

use std::collections::HashMap;

use crossbeam_epoch::{self as epoch, Guard};

use super::engine::{check_key, check_value, Engine};
use super::write::{Found, FreeSlots, Locked, RecordParts};
use crate::batch_table::{encode_pairs, UNDO_DELETES};
use crate::error::{Error, Result};
use crate::index::locks::{BucketLocks, Held};
use crate::index::{self, SegRef};
use crate::layout::{
    Slot, FORMAT_VERSION_BATCHES, REC_FLAG_BATCH, REC_FLAG_RMW, REC_FLAG_TOMBSTONE, REC_FLAG_UNDO,
};
use crate::log::Lane;
use crate::pmem::PmemFile;

/// Most operations one batch may hold.
pub const MAX_BATCH_OPS: usize = 100_000;
/// Most bytes of keys and values one batch may hold (64 MiB).
pub const MAX_BATCH_BYTES: usize = 64 << 20;

/// A set of puts and deletes that [`Db::write`](super::Db::write) applies
/// atomically. Later operations on the same key replace earlier ones.
#[derive(Debug, Clone, Default)]
pub struct WriteBatch {
    ops: Vec<BatchOp>,
    bytes: usize,
}

#[derive(Debug, Clone)]
pub(super) enum BatchOp {
    Put {
        key: Vec<u8>,
        value: Vec<u8>,
        deadline: Option<u64>,
    },
    Delete {
        key: Vec<u8>,
    },
}

impl BatchOp {
    pub(super) fn key(&self) -> &[u8] {
        match self {
            BatchOp::Put { key, .. } | BatchOp::Delete { key } => key,
        }
    }
}

impl WriteBatch {
    pub fn new() -> WriteBatch {
        WriteBatch::default()
    }

    /// Stores `value` under `key` (without a deadline).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> &mut Self {
        self.push(BatchOp::Put {
            key: key.to_vec(),
            value: value.to_vec(),
            deadline: None,
        })
    }

    /// Stores `value` under `key`, expiring at `deadline_ms` (ms of Unix
    /// time; one already passed deletes the key).
    pub fn put_with_deadline(&mut self, key: &[u8], value: &[u8], deadline_ms: u64) -> &mut Self {
        self.push(BatchOp::Put {
            key: key.to_vec(),
            value: value.to_vec(),
            deadline: Some(deadline_ms),
        })
    }

    /// Deletes `key` (nothing when absent).
    pub fn delete(&mut self, key: &[u8]) -> &mut Self {
        self.push(BatchOp::Delete { key: key.to_vec() })
    }

    pub(super) fn push(&mut self, op: BatchOp) -> &mut Self {
        self.bytes += op.key().len();
        if let BatchOp::Put { value, .. } = &op {
            self.bytes += value.len();
        }
        self.ops.push(op);
        self
    }

    /// Operations in the batch.
    pub fn len(&self) -> usize {
        self.ops.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ops.is_empty()
    }

    /// Bytes of keys and values in the batch.
    pub fn payload_bytes(&self) -> usize {
        self.bytes
    }

    pub fn clear(&mut self) {
        self.ops.clear();
        self.bytes = 0;
    }

    pub(super) fn ops(&self) -> &[BatchOp] {
        &self.ops
    }
}

/// Refuses a batch over the documented limits.
fn check_limits(ops: &[BatchOp]) -> Result<()> {
    if ops.len() > MAX_BATCH_OPS {
        return Err(Error::BatchTooLarge {
            what: "operations",
            len: ops.len(),
            max: MAX_BATCH_OPS,
        });
    }
    let bytes: usize = ops
        .iter()
        .map(|op| match op {
            BatchOp::Put { key, value, .. } => key.len() + value.len(),
            BatchOp::Delete { key } => key.len(),
        })
        .sum();
    if bytes > MAX_BATCH_BYTES {
        return Err(Error::BatchTooLarge {
            what: "bytes of keys and values",
            len: bytes,
            max: MAX_BATCH_BYTES,
        });
    }
    Ok(())
}

/// Which record holds a key's value: every write of the key (a put, a
/// delete, a new deadline, an expiry) gives it another version, so two reads
/// that return equal versions saw the same write. Opaque; compare only. (A
/// move of the record by the log cleaner also changes it: a check against
/// an old version then fails spuriously, never the other way round.)
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Version {
    pub(super) offset: u64,
    pub(super) seq: u64,
}

/// A key a transaction read and the version it saw (`None`: absent).
pub(super) struct ReadCheck<'a> {
    pub(super) key: &'a [u8],
    pub(super) version: Option<Version>,
}

/// How a commit ended.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Commit {
    Done,
    /// A key read by the transaction changed since: nothing was written.
    Conflict,
}

/// How a commit makes its writes durable.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(super) enum BatchMode {
    /// All or nothing across a crash: undo record and commit-table entry
    /// (fences A to F).
    Atomic,
    /// Each key old or new after a crash, independently; two shared fences
    /// (G1, G2) for the whole group.
    Grouped,
}

/// One key of the batch after deduplication (`value: None`: delete).
struct Planned<'a> {
    key: &'a [u8],
    h: u64,
    fp: u16,
    value: Option<&'a [u8]>,
    deadline: Option<u64>,
    /// Record flags of its value's placement (`REC_FLAG_EXTERNAL`).
    flags: u32,
}

/// Where a planned key's new word goes, and what it held.
struct Target {
    /// The key's slot (0 for a key known only through its node, before the
    /// DRAM index is rebuilt).
    addr: u64,
    node: u64,
    found: Option<Found>,
    claimed: bool,
    linked: bool,
}

/// The records a batch wrote, in plan order (`None`: nothing for that
/// planned key), and its undo record.
struct Written {
    records: Vec<Option<(u64, u64)>>,
    /// The undo record (atomic batches only).
    undo: Option<(u64, u64)>,
    words: Vec<u64>,
}

/// Why the locked part must start over.
enum Retry {
    Split(SegRef),
    /// An ordered-index leaf (at this offset) is full.
    SplitLeaf(u64),
    Fail(Error),
}

/// Bucket locks held by a batch, released when dropped.
struct HeldLocks<'a> {
    locks: &'a BucketLocks,
    pm: &'a PmemFile,
    held: Vec<Held>,
}

impl Drop for HeldLocks<'_> {
    fn drop(&mut self) {
        self.locks
            .unlock_all(self.pm, std::mem::take(&mut self.held));
    }
}

impl Engine {
    /// Commits `ops` atomically after checking that every key in `reads`
    /// still has the version read (transactions; empty for a plain batch).
    /// `rmw`: the records are read-modify-writes (never eliminated).
    pub(super) fn commit_batch(
        &self,
        ops: &[BatchOp],
        reads: &[ReadCheck],
        rmw: bool,
    ) -> Result<Commit> {
        self.commit_ops(ops, reads, rmw, BatchMode::Atomic)
    }

    /// Applies `ops` as a grouped write: each key durable on return, every
    /// key's write sharing the group's two fences; not atomic across keys
    /// (see the module header). Nothing is written on error.
    pub(super) fn write_grouped(&self, ops: &[BatchOp]) -> Result<()> {
        self.commit_ops(ops, &[], false, BatchMode::Grouped)
            .map(|_| ())
    }

    fn commit_ops(
        &self,
        ops: &[BatchOp],
        reads: &[ReadCheck],
        rmw: bool,
        mode: BatchMode,
    ) -> Result<Commit> {
        check_limits(ops)?;
        let plan = self.plan(ops)?;
        if plan.is_empty() && reads.is_empty() {
            return Ok(Commit::Done);
        }
        // Large values' extents are durable before anything is locked; the
        // plan's values become the records' value fields.
        let values: Vec<&[u8]> = plan.iter().filter_map(|p| p.value).collect();
        let stored = self.stored_values(&values)?;
        let mut stored_at = stored.iter();
        let plan: Vec<Planned> = plan
            .into_iter()
            .map(|mut p| {
                if p.value.is_some() {
                    let s = stored_at.next().expect("one stored value per put");
                    p.value = Some(&s.field);
                    p.flags = s.flags;
                }
                p
            })
            .collect();
        // A grouped write needs format 4 only for deadlines (as a put).
        let raise = match mode {
            BatchMode::Atomic => !plan.is_empty(),
            BatchMode::Grouped => plan.iter().any(|p| p.deadline.is_some()),
        };
        if raise {
            self.pool.raise_version(FORMAT_VERSION_BATCHES);
        }
        let (lane_index, lane) = self.lane();
        let flags = match mode {
            BatchMode::Atomic => REC_FLAG_BATCH | if rmw { REC_FLAG_RMW } else { 0 },
            // Plain records: readers never wait on them.
            BatchMode::Grouped => 0,
        };
        let w = BatchWriter {
            lane,
            lane_index,
            seq: lane.next_seq(&self.pool),
            flags,
            mode,
        };
        let entry = (mode == BatchMode::Atomic && !plan.is_empty()).then(|| self.batches.acquire());
        let result = self.commit_locked(&w, &plan, reads, entry);
        if let Some(i) = entry {
            self.batches.release(i);
        }
        result
    }

    /// Checks and deduplicates the operations (the last one on a key wins;
    /// a deadline already passed turns a put into a delete).
    fn plan<'a>(&self, ops: &'a [BatchOp]) -> Result<Vec<Planned<'a>>> {
        let mut plan: Vec<Planned> = Vec::with_capacity(ops.len());
        let mut at: HashMap<&[u8], usize> = HashMap::with_capacity(ops.len());
        for op in ops {
            let key = op.key();
            check_key(key)?;
            let (value, deadline) = match op {
                BatchOp::Put {
                    value, deadline, ..
                } => {
                    check_value(value)?;
                    self.check_ordered_key(key)?;
                    match deadline {
                        Some(d) if !self.check_deadline(*d)? => (None, None),
                        _ => (Some(&value[..]), *deadline),
                    }
                }
                BatchOp::Delete { .. } => (None, None),
            };
            let h = self.hash(key);
            let p = Planned {
                key,
                h,
                fp: index::fingerprint(h),
                value,
                deadline,
                flags: 0,
            };
            match at.get(key) {
                Some(&i) => plan[i] = p,
                None => {
                    at.insert(key, plan.len());
                    plan.push(p);
                }
            }
        }
        Ok(plan)
    }

    /// Locks, validates, reserves, writes and publishes; starts over after
    /// a split, a directory change or a pool full that an epoch can relieve.
    fn commit_locked(
        &self,
        w: &BatchWriter,
        plan: &[Planned],
        reads: &[ReadCheck],
        entry: Option<usize>,
    ) -> Result<Commit> {
        let read_h: Vec<u64> = reads.iter().map(|r| self.hash(r.key)).collect();
        loop {
            let guard = epoch::pin();
            let dir = self.index.dir.load();
            let segs: Vec<SegRef> = plan.iter().map(|p| dir.lookup(p.h)).collect();
            let read_segs: Vec<SegRef> = read_h.iter().map(|&h| dir.lookup(h)).collect();
            drop(dir);
            self.prefetch_homes(plan, &segs);
            let Some(held) = self.lock_homes(plan, &segs, &read_h, &read_segs) else {
                continue;
            };
            // Leaf entries looked up or reserved stay put until the end.
            let pins = self.ordered.as_ref().and_then(|o| o.scope());
            if !self.reads_current(reads, &read_h, &read_segs)? {
                return Ok(Commit::Conflict);
            }
            if entry.is_none() && w.mode == BatchMode::Atomic {
                return Ok(Commit::Done); // a read-only transaction
            }
            let outcome = self.reserve(plan, &segs, &guard).and_then(|targets| {
                match self.write_records(w, plan, &targets, &guard) {
                    Ok(written) => Ok((targets, written)),
                    Err(e) => {
                        self.give_back_all(plan, &targets, &guard);
                        Err(Retry::Fail(e))
                    }
                }
            });
            match outcome {
                Ok((targets, written)) => {
                    match entry {
                        Some(entry) => {
                            self.publish_batch(w, entry, plan, &targets, &written, &guard)
                        }
                        None => self.publish_grouped(w, plan, &targets, &written, &guard),
                    }
                    drop(pins);
                    drop(held);
                    return Ok(Commit::Done);
                }
                Err(Retry::Split(seg)) => {
                    drop(pins);
                    drop(held);
                    drop(guard);
                    self.split(seg)?;
                }
                Err(Retry::SplitLeaf(leaf)) => {
                    drop(pins);
                    drop(held);
                    drop(guard);
                    let puts: Vec<&[u8]> = plan
                        .iter()
                        .filter(|p| p.value.is_some())
                        .map(|p| p.key)
                        .collect();
                    self.split_leaf(leaf, &puts)?;
                }
                Err(Retry::Fail(e)) if self.relievable(&e) => {
                    drop(pins);
                    drop(held);
                    drop(guard);
                    self.reclaim_pending()?;
                }
                Err(Retry::Fail(e)) => return Err(e),
            }
        }
    }

    /// Prefetches every planned key's bucket pair, then the first lines of
    /// the records its fingerprint names — what the locked lookups read —
    /// so that their cache misses overlap (as `get_many` does for reads).
    /// Reads only: a hint.
    fn prefetch_homes(&self, plan: &[Planned], segs: &[SegRef]) {
        let pm = self.ipm();
        for (p, seg) in plan.iter().zip(segs) {
            for bucket in self.index.probe(seg, p.h) {
                pm.prefetch(bucket);
            }
        }
        for (p, seg) in plan.iter().zip(segs) {
            self.prefetch_records(seg, p.h, p.key.len());
        }
    }

    /// Locks the home bucket of every key; `None` when a split moved one of
    /// them meanwhile (nothing is held then).
    fn lock_homes(
        &self,
        plan: &[Planned],
        segs: &[SegRef],
        read_h: &[u64],
        read_segs: &[SegRef],
    ) -> Option<HeldLocks<'_>> {
        let pm = self.ipm();
        let keys = plan
            .iter()
            .map(|p| p.h)
            .zip(segs)
            .chain(read_h.iter().copied().zip(read_segs));
        let mut homes: Vec<u64> = keys
            .clone()
            .map(|(h, seg)| self.index.probe(seg, h)[0])
            .collect();
        let held = HeldLocks {
            locks: &self.index.locks,
            pm,
            held: self.index.locks.lock_many(pm, &mut homes, BATCH_LOCK_SEQ),
        };
        let dir = self.index.dir.load();
        keys.into_iter()
            .all(|(h, seg)| dir.lookup(h) == *seg)
            .then_some(held)
    }

    /// Whether every key a transaction read still has the version it read
    /// (homes locked).
    fn reads_current(
        &self,
        reads: &[ReadCheck],
        read_h: &[u64],
        read_segs: &[SegRef],
    ) -> Result<bool> {
        for ((r, &h), seg) in reads.iter().zip(read_h).zip(read_segs) {
            let probe = self.index.probe(seg, h);
            let mut free = FreeSlots::default();
            let found =
                self.lookup_locked(seg, &probe, r.key, index::fingerprint(h), None, &mut free)?;
            let now = match found {
                Some(f) if !self.expired(f.slot.offset(), &f.header)? => Some(Version {
                    offset: f.slot.offset(),
                    seq: f.header.seq,
                }),
                _ => None,
            };
            if now != r.version {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Finds each planned key's entry and reserves what a new key needs (a
    /// claimed slot, a linked node). On failure gives all of it back.
    fn reserve(
        &self,
        plan: &[Planned],
        segs: &[SegRef],
        guard: &Guard,
    ) -> std::result::Result<Vec<Option<Target>>, Retry> {
        let mut targets = Vec::with_capacity(plan.len());
        for (p, seg) in plan.iter().zip(segs) {
            match self.reserve_one(p, seg, guard) {
                Ok(t) => targets.push(t),
                Err(e) => {
                    self.give_back_all(plan, &targets, guard);
                    return Err(e);
                }
            }
        }
        Ok(targets)
    }

    fn reserve_one(
        &self,
        p: &Planned,
        seg: &SegRef,
        guard: &Guard,
    ) -> std::result::Result<Option<Target>, Retry> {
        let probe = self.index.probe(seg, p.h);
        loop {
            let mut free = FreeSlots::default();
            let found = self
                .lookup_locked(seg, &probe, p.key, p.fp, None, &mut free)
                .map_err(Retry::Fail)?;
            if p.value.is_none() {
                return Ok(found.map(|f| Target {
                    addr: f.addr,
                    node: f.node,
                    found: Some(f),
                    claimed: false,
                    linked: false,
                }));
            }
            let (addr, claimed) = match found.as_ref().filter(|f| f.in_index) {
                Some(f) => (f.addr, false),
                None => match self.claim::<()>(free.as_slice(), p.fp, *seg) {
                    Ok(a) => (a, true),
                    Err(Locked::Split(s)) => return Err(Retry::Split(s)),
                    Err(_) => continue, // taken meanwhile: look again
                },
            };
            let (node, linked) = match &found {
                Some(f) => (f.node, false),
                None => match self
                    .ordered_insert(p.key, p.fp, claimed.then_some(addr), guard)
                    .map_err(Retry::Fail)?
                {
                    Ok(placed) => placed,
                    Err(leaf) => return Err(Retry::SplitLeaf(leaf)),
                },
            };
            return Ok(Some(Target {
                addr,
                node,
                found,
                claimed,
                linked,
            }));
        }
    }

    /// Gives back the claimed slots and linked nodes of `targets`.
    fn give_back_all(&self, plan: &[Planned], targets: &[Option<Target>], guard: &Guard) {
        for (p, t) in plan.iter().zip(targets) {
            if let Some(t) = t {
                if t.claimed {
                    self.ipm().store_u64(t.addr, Slot::EMPTY.0);
                }
                self.ordered_undo(p.key, t.node, t.linked, guard);
            }
        }
    }

    /// Appends the batch's records and its undo record and fences once
    /// (fence A). On failure the records written are taken back out of the
    /// live bytes (nothing names them).
    fn write_records(
        &self,
        w: &BatchWriter,
        plan: &[Planned],
        targets: &[Option<Target>],
        guard: &Guard,
    ) -> Result<Written> {
        let mut parts: Vec<RecordParts> = Vec::with_capacity(plan.len() + 1);
        let mut part_of = Vec::with_capacity(plan.len());
        let mut pairs = Vec::with_capacity(plan.len());
        let mut words = Vec::with_capacity(plan.len());
        let atomic = w.mode == BatchMode::Atomic;
        for (p, t) in plan.iter().zip(targets) {
            let Some(t) = t else {
                part_of.push(None);
                words.push(0);
                continue;
            };
            let word = self.point_index.word_to_persist(t.addr, t.node);
            words.push(word);
            if !atomic && p.value.is_none() {
                // A grouped delete writes no tombstone: its marker is the
                // whole of it, as for a single delete.
                part_of.push(None);
                continue;
            }
            let tomb = if p.value.is_none() {
                REC_FLAG_TOMBSTONE
            } else {
                0
            };
            let value = p.value.unwrap_or_default();
            part_of.push(Some(parts.len()));
            parts.push(RecordParts::new(
                p.key,
                value,
                w.flags | tomb | p.flags,
                w.seq,
                p.deadline,
            ));
            if atomic {
                let deletes = if p.value.is_none() { UNDO_DELETES } else { 0 };
                pairs.push((word | deletes, self.pool.pm.load_u64(word)));
            }
        }
        let undo_value = encode_pairs(&pairs);
        if atomic {
            parts.push(RecordParts::new(
                &[],
                &undo_value,
                REC_FLAG_UNDO,
                w.seq,
                None,
            ));
        }
        // Persist point (fence A; G1 of a grouped write), issued by
        // `append_parts` with the lane held: every record (and the undo
        // record) is durable; no word names any of them yet. (A grouped
        // write of deletes only has no record to wait for.)
        let placed = self.append_parts(w.lane, &parts, guard)?;
        let records = part_of.iter().map(|i| i.map(|i| placed[i])).collect();
        Ok(Written {
            records,
            undo: atomic.then(|| *placed.last().expect("the undo record is placed")),
            words,
        })
    }

    /// Appends `parts` and fences once (fence A): large ones to runs of
    /// their own first, then the small ones to the lane under one hold,
    /// whose fence (issued before the lane is released, so no record
    /// another thread appends to the lane can be durable before these)
    /// covers the large ones too. Nothing, not even the fence, when `parts`
    /// is empty. Returns `(offset, total)` of each; on failure takes back
    /// what it appended.
    fn append_parts(
        &self,
        lane: &Lane,
        parts: &[RecordParts],
        guard: &Guard,
    ) -> Result<Vec<(u64, u64)>> {
        let mut placed = vec![(0, 0); parts.len()];
        if parts.is_empty() {
            return Ok(placed);
        }
        let half = self.pool.segment_bytes / 2;
        let totals: Vec<u64> = parts.iter().map(RecordParts::total).collect();
        let mut result = Ok(());
        for i in (0..parts.len()).filter(|&i| totals[i] > half) {
            result = self
                .write_large(lane, &parts[i])
                .map(|at| placed[i] = (at, totals[i]));
            if result.is_err() {
                break;
            }
        }
        let small: Vec<usize> = (0..parts.len()).filter(|&i| totals[i] <= half).collect();
        let small_totals: Vec<u64> = small.iter().map(|&i| totals[i]).collect();
        let (mut offsets, mut sealed) = (Vec::new(), Vec::new());
        let pm = &self.pool.pm;
        if result.is_ok() {
            result = lane.append_many(
                &self.pool,
                &small_totals,
                &mut offsets,
                &mut sealed,
                |j, at| parts[small[j]].store(pm, at),
            );
        }
        for (j, &off) in offsets.iter().enumerate() {
            placed[small[j]] = (off, small_totals[j]);
        }
        for s in sealed {
            self.maybe_free(s, guard);
        }
        if let Err(e) = result {
            for &(off, total) in placed.iter().filter(|p| p.1 != 0) {
                self.sub_live(off, total, guard);
            }
            return Err(e);
        }
        Ok(placed)
    }
}

/// Lock-holder number of a batch's bucket locks. A batch's records carry
/// their own sequence number; holding with an internal one (lane 255, no
/// record carries it) keeps single puts from being eliminated against a
/// batch, whose atomicity they would otherwise split.
const BATCH_LOCK_SEQ: u64 = super::engine::BATCH_SEQ;

/// Who writes a batch: its lane, its one sequence number and the flags of
/// its records.
struct BatchWriter<'a> {
    lane: &'a Lane,
    lane_index: usize,
    seq: u64,
    flags: u32,
    mode: BatchMode,
}

impl Engine {
    /// Fences B to F: begins the entry, publishes every word, commits,
    /// finishes the deletes; then the DRAM side. Cannot fail.
    fn publish_batch(
        &self,
        w: &BatchWriter,
        entry: usize,
        plan: &[Planned],
        targets: &[Option<Target>],
        written: &Written,
        guard: &Guard,
    ) {
        let pm = &self.pool.pm;
        let undo = written.undo.expect("an atomic batch has an undo record");
        self.batches.begin(&self.pool, entry, undo.0, w.seq);
        self.batches.start_publishing(entry, w.seq);
        let live = || {
            plan.iter()
                .zip(targets)
                .zip(&written.records)
                .zip(&written.words)
                .filter_map(|(((p, t), r), &w)| Some((p, t.as_ref()?, (*r)?, w)))
        };
        for (p, _, (off, _), word) in live() {
            pm.store_u64(word, Slot::new(p.fp, off, !self.two_phase).0);
            pm.flush(word, 8);
        }
        // Persist point (fence C): every new word is durable.
        pm.fence();
        let deletes = live().any(|(p, ..)| p.value.is_none());
        if !deletes {
            // Fence D: the commit point.
            self.batches.finish(&self.pool, entry);
        } else {
            // Fence D: the commit point; the deleted keys' words still name
            // their tombstones.
            self.batches.commit_with_deletes(&self.pool, entry);
        }
        for (p, t, (off, _), word) in live() {
            let slot = Slot::new(p.fp, off, true);
            pm.store_u64(word, slot.0);
            // DRAM readers see tombstones too until every delete is done.
            if t.addr != 0 {
                self.point_index.mirror(t.addr, t.node, slot);
            }
        }
        if deletes {
            for (_, _, _, word) in live().filter(|(p, ..)| p.value.is_none()) {
                pm.store_u64(word, Slot::EMPTY.0);
                pm.flush(word, 8);
            }
            // Fence E: the deletes are final.
            pm.fence();
            // Fence F: nothing left to recover.
            self.batches.finish(&self.pool, entry);
            for (_, t, _, _) in live().filter(|(p, ..)| p.value.is_none()) {
                if t.found.as_ref().is_some_and(|f| f.in_index) {
                    self.point_index.unmirror(t.addr);
                }
            }
        }
        self.batches.end_publishing(entry);
        self.settle_batch(w, live(), written, guard);
    }

    /// After the commit: accounting, deadlines, unlinking deleted keys'
    /// nodes, taking back tombstones and the undo record.
    fn settle_batch<'p>(
        &self,
        w: &BatchWriter,
        live: impl Iterator<Item = (&'p Planned<'p>, &'p Target, (u64, u64), u64)>,
        written: &Written,
        guard: &Guard,
    ) {
        for (p, t, (off, total), _) in live {
            let old = t.found.as_ref();
            if p.value.is_some() {
                self.replaced(w.lane_index, t.addr, Some((off, total)), old, guard);
                if let Some(d) = p.deadline {
                    self.expiry.note(d, off, w.seq);
                }
                continue;
            }
            self.replaced(w.lane_index, t.addr, None, old, guard);
            self.sub_live(off, total, guard);
            if let Some(o) = &self.ordered {
                // As for a single delete: a node left behind is an orphan.
                let _ = o.remove(&self.pool, p.key, t.node, guard);
            }
        }
        if let Some((off, total)) = written.undo {
            self.sub_live(off, total, guard);
        }
    }

    /// Fence G2 of a grouped write: every put's new word and every
    /// delete's marker, then one fence; then the persist bits, the deleted
    /// words cleared, the DRAM side and the accounting. Cannot fail.
    fn publish_grouped(
        &self,
        w: &BatchWriter,
        plan: &[Planned],
        targets: &[Option<Target>],
        written: &Written,
        guard: &Guard,
    ) {
        let pm = &self.pool.pm;
        let live = || {
            plan.iter()
                .zip(targets)
                .zip(&written.records)
                .zip(&written.words)
                .filter_map(|(((p, t), r), &w)| Some((p, t.as_ref()?, *r, w)))
        };
        for (p, _, record, word) in live() {
            let new = match record {
                Some((off, _)) => Slot::new(p.fp, off, !self.two_phase),
                // Locked reads (ablation): no reader sees the word before
                // the fence, so a delete clears it at once.
                None if !self.two_phase => Slot::EMPTY,
                None => Slot::delete_marker(p.fp),
            };
            pm.store_u64(word, new.0);
            pm.flush(word, 8);
        }
        // Persist point (fence G2): every key of the group is durable.
        pm.fence();
        for (p, t, record, word) in live() {
            let old = t.found.as_ref();
            match record {
                Some((off, total)) => {
                    let slot = Slot::new(p.fp, off, true);
                    // Only readers helping to persist may have touched it.
                    pm.store_u64(word, slot.0);
                    if t.addr != 0 {
                        self.point_index.mirror(t.addr, t.node, slot);
                    }
                    self.replaced(w.lane_index, t.addr, Some((off, total)), old, guard);
                    if let Some(d) = p.deadline {
                        self.expiry.note(d, off, w.seq);
                    }
                }
                None => {
                    // A marker on media reads as absent: 0 need not be
                    // flushed (as a single delete).
                    pm.store_u64(word, Slot::EMPTY.0);
                    if old.is_some_and(|f| f.in_index) {
                        self.point_index.unmirror(t.addr);
                    }
                    self.replaced(w.lane_index, t.addr, None, old, guard);
                    if let Some(o) = &self.ordered {
                        // As for a single delete: a node left behind is an
                        // orphan.
                        let _ = o.remove(&self.pool, p.key, t.node, guard);
                    }
                }
            }
        }
    }
}
