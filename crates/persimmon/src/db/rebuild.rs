//! The background work after open: the tally (PM point index), the DRAM
//! point index's rebuild from the ordered index's node slabs, the ordered
//! index's walk, and the sweep that frees segments found dead.
//!
//! Stages, signalled through `tally_signal` (each waits for the one before):
//! 1. lanes recovered (their tails and counters, from the segment headers);
//! 2. `REBUILD_TALLIED`: live bytes and the key count are exact — by a pass
//!    over the index (PM) or once the DRAM index has entered every key;
//! 3. `REBUILD_SWEPT`: every segment found dead has been handed to an epoch.
//!
//! Invariants:
//! - The tally holds the locks of every home bucket whose keys may live in
//!   the buckets it counts (`Index::reach`), so no writer changes them
//!   meanwhile; `tally_cursor` advances only past
//!   counted buckets, and writers account by it (see `space`).
//! - A delete marker the tally meets is left over from a crash (no delete is
//!   in flight under those locks) and is cleared.
//! - The DRAM rebuild enters a key under its bucket lock, only if no writer
//!   entered it first, and counts its record live as it does; the index is
//!   marked complete only after the last key is entered.
//! - After a clean close with no write since open, the DRAM rebuild must
//!   find the count recorded at the close; otherwise (or on any damage) the
//!   problem is reported and nothing is freed in this open.

use std::sync::atomic::{AtomicBool, Ordering};

use crossbeam_epoch as epoch;

use super::engine::{Engine, ORDERED_SEQ, TALLY_SEQ};
use super::write::Locked;
use crate::error::Result;
use crate::index::{self, Index, SegRef};
use crate::layout::{self, Slot};
use crate::ordered::Ordered;

/// Buckets the tally counts under one set of locks.
const TALLY_CHUNK: u64 = 64;

/// Rebuild stages signalled through `tally_signal`.
pub(super) const REBUILD_TALLIED: u8 = 1;
pub(super) const REBUILD_SWEPT: u8 = 2;

/// Sets a flag when dropped (also on unwinding).
struct SetOnDrop<'a>(&'a AtomicBool);

impl Drop for SetOnDrop<'_> {
    fn drop(&mut self) {
        self.0.store(true, Ordering::Release);
    }
}

impl Engine {
    /// The ordered index's walk after open (its own thread): search hints,
    /// free node slots, orphans unlinked under their keys' bucket locks.
    /// With the DRAM point index, the keys are entered first.
    pub(super) fn ordered_walk(&self) {
        let Some(o) = &self.ordered else {
            return;
        };
        let _ended = SetOnDrop(&self.ordered_walk_ended);
        if !self.point_index.is_complete() {
            if !self.enter_from_slabs(o) {
                return;
            }
            self.point_index.set_complete();
        }
        // The point index answers every key here (the scan has entered them).
        let present = |k: &[u8], _node: u64| Ok(self.get_with(k, |_| ())?.is_some());
        let orphan = |k: &[u8]| self.repair_orphan(k);
        if let Err(e) = o.walk(&self.pool, &present, &orphan, &self.stop) {
            self.ordered_walk_errors
                .lock()
                .push(format!("ordered index walk after open stopped: {e}"));
        }
    }

    /// DRAM point index rebuild: enters every key from a scan of the node
    /// slabs (sequential reads, no link chasing) and reports damage. Returns
    /// false when the engine is stopping (the scan did not finish).
    fn enter_from_slabs(&self, o: &Ordered) -> bool {
        let mut enter = |k: &[u8], node: u64| self.enter_from_node(k, node).map(|_| ());
        let mut damage = Vec::new();
        o.scan_live(&self.pool, &self.stop, &mut enter, &mut damage);
        if self.stop.load(Ordering::Acquire) {
            return false;
        }
        let entered = self.base_count.load(Ordering::Acquire);
        // After a clean close (and no write since open) the rebuild must
        // find the keys counted at the close: a record word lost to
        // damage would otherwise pass for an orphan.
        if let Some(n) = self.pool.clean_key_count {
            if entered != n && !self.point_index.written_in_rebuild() {
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
        true
    }

    /// DRAM point index rebuild: enters `key` (whose node the slab scan
    /// stands on) under its bucket lock, unless a writer did already or the
    /// node names no record (any more). Counts the record live. Returns
    /// whether the key is present.
    fn enter_from_node(&self, key: &[u8], node: u64) -> Result<bool> {
        let h = self.hash(key);
        let fp = index::fingerprint(h);
        self.with_locked_at(key, h, ORDERED_SEQ, Some(node), |ctx, found, free, _| {
            debug_assert!(!self.point_index.is_complete(), "entering after completion");
            let Some(f) = found else {
                return Ok(Locked::Done(false));
            };
            if f.in_index {
                return Ok(Locked::Done(true));
            }
            let addr = match self.claim(free, fp, ctx.seg) {
                Ok(a) => a,
                Err(retry) => return Ok(retry),
            };
            self.point_index.mirror(addr, f.node, f.slot);
            let seg = self.pool.segment_of(f.slot.offset());
            self.pool.add_live(seg, f.header.total_bytes());
            self.count_extent_live(f.slot.offset());
            self.note_deadline(f.slot.offset(), &f.header);
            self.base_count.fetch_add(1, Ordering::AcqRel);
            Ok(Locked::Done(true))
        })
    }

    /// Unlinks the node of `key` if the point index does not hold the key
    /// (checked under the key's bucket lock). With the DRAM point index a
    /// node whose record word names a record is kept even then: it is the
    /// key's persistent truth, and the rebuild only missed it because it
    /// could not enter it (damage it reported); unlinking it would lose the
    /// key for good. Returns whether it unlinked the node.
    fn repair_orphan(&self, key: &[u8]) -> Result<bool> {
        let Some(o) = &self.ordered else {
            return Ok(false);
        };
        let h = self.hash(key);
        self.with_locked(key, h, ORDERED_SEQ, |_ctx, found, _free, guard| {
            // (A skiplist search only where nodes carry records.)
            let holds_record = self.point_index.truth_in_nodes()
                && o.find(&self.pool, key, index::fingerprint(h))?
                    .is_some_and(|node| self.node_names_record(node));
            if found.is_some() || holds_record {
                return Ok(Locked::Done(false));
            }
            Ok(Locked::Done(o.remove(&self.pool, key, 0, guard)?))
        })
    }

    /// Whether ordered-index node `node` is the persistent truth of a record:
    /// with the DRAM point index, its record word names one (with the PM
    /// point index the word is unused).
    pub(super) fn node_names_record(&self, node: u64) -> bool {
        self.point_index.truth_in_nodes() && self.node_word(node).names_record()
    }

    /// The record word of ordered-index node `node`.
    pub(super) fn node_word(&self, node: u64) -> Slot {
        Slot(self.pool.pm.load_u64(node))
    }

    pub(super) fn wait_tally(&self) {
        if self.tally_done.load(Ordering::Acquire) {
            return;
        }
        self.wait_rebuild(REBUILD_TALLIED);
    }

    pub(super) fn wait_rebuild(&self, stage: u8) {
        let (m, cv) = &self.tally_signal;
        let mut done = m.lock().unwrap_or_else(|e| e.into_inner());
        while *done < stage {
            done = cv.wait(done).unwrap_or_else(|e| e.into_inner());
        }
    }

    fn signal_rebuild(&self, stage: u8) {
        let (m, cv) = &self.tally_signal;
        let mut done = m.lock().unwrap_or_else(|e| e.into_inner());
        debug_assert!(stage > *done, "rebuild stages advance one way");
        if stage >= REBUILD_TALLIED {
            self.tally_done.store(true, Ordering::Release);
        }
        *done = stage;
        cv.notify_all();
    }

    /// Background rebuild after open: recover lanes, then make live bytes
    /// and the key count exact (the tally, or waiting for the DRAM index's
    /// rebuild), then free segments with nothing live.
    pub(super) fn rebuild(&self) {
        for lane in self.lanes.iter().map(|l| &**l).chain([&self.cleaner_lane]) {
            lane.recover(&self.pool);
        }
        let counted = if self.point_index.needs_tally() {
            self.tally()
        } else {
            self.await_entered()
        };
        if !counted {
            return;
        }
        self.signal_rebuild(REBUILD_TALLIED);
        let guard = epoch::pin();
        for s in 0..self.pool.segment_count() {
            self.maybe_free(s, &guard);
        }
        drop(guard);
        self.signal_rebuild(REBUILD_SWEPT);
    }

    /// PM point index: counts live bytes per segment and keys by one pass
    /// over the index. Returns false when the engine is stopping.
    fn tally(&self) -> bool {
        let dir = self.index.dir.load_full();
        let mut segs = dir.segments();
        segs.sort_by_key(|s| s.offset);
        let mut keys = 0u64;
        for seg in &segs {
            for b in (0..self.index.buckets).step_by(TALLY_CHUNK as usize) {
                if self.stop.load(Ordering::Acquire) {
                    return false;
                }
                let end = (b + TALLY_CHUNK).min(self.index.buckets);
                keys += self.tally_buckets(seg, b..end);
            }
        }
        if !self.clean_open {
            self.base_count.store(keys, Ordering::Release);
        }
        true
    }

    /// Counts buckets `range` of `seg` (the home locks of every key they
    /// may hold held); returns the keys they hold.
    fn tally_buckets(&self, seg: &SegRef, range: std::ops::Range<u64>) -> u64 {
        let buckets = self.index.buckets;
        let pm = &self.pool.pm;
        // Keys in bucket b have their home in b - reach ..= b.
        let reach = self.index.reach();
        let mut homes: Vec<u64> = (range.start + buckets - reach..range.end + buckets)
            .map(|b| seg.bucket_offset(b % buckets))
            .collect();
        let held = self.index.locks.lock_many(pm, &mut homes, TALLY_SEQ);
        debug_assert!(
            seg.bucket_offset(range.start) >= self.tally_cursor.load(Ordering::Acquire),
            "each bucket is tallied once"
        );
        let mut keys = 0;
        for bucket in range.map(|b| seg.bucket_offset(b)) {
            keys += self.tally_bucket(seg, bucket);
            self.tally_cursor
                .store(bucket + layout::BUCKET_BYTES, Ordering::Release);
        }
        self.index.locks.unlock_all(pm, held);
        keys
    }

    /// Counts the bucket at `bucket` of `seg` (the caller holds the home
    /// locks of its keys); returns the keys it holds.
    fn tally_bucket(&self, seg: &SegRef, bucket: u64) -> u64 {
        let pm = &self.pool.pm;
        let mut keys = 0;
        for addr in self.index.slots(bucket) {
            let s = Slot(pm.load_u64(addr));
            if s.is_marker() {
                // No delete is in flight here (we hold every home lock
                // of the bucket): a marker is left over from a crash.
                pm.store_u64(addr, 0);
                continue;
            }
            if !Index::is_live_entry(seg, s) {
                continue;
            }
            match self.record_header(s.offset()) {
                Ok(h) => {
                    self.pool
                        .add_live(self.pool.segment_of(s.offset()), h.total_bytes());
                    self.count_extent_live(s.offset());
                    self.note_deadline(s.offset(), &h);
                    keys += 1;
                }
                Err(e) => self.tally_errors.lock().push(e.to_string()),
            }
        }
        keys
    }

    /// DRAM point index: the scan of the node slabs enters the keys and
    /// counts them; this waits for it. If the scan failed, live bytes are not
    /// known for every record, so nothing is freed in this open. Returns
    /// false when the engine is stopping before the index is complete.
    fn await_entered(&self) -> bool {
        while !self.ordered_walk_ended.load(Ordering::Acquire) && !self.point_index.is_complete() {
            if self.stop.load(Ordering::Acquire) {
                return false;
            }
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        if self.point_index.is_complete() {
            return true;
        }
        if self.stop.load(Ordering::Acquire) {
            return false;
        }
        self.reclaim_blocked.store(true, Ordering::Release);
        self.tally_errors.lock().push(
            "the DRAM point index was not rebuilt completely (the scan of the ordered index failed): \
             reads of keys it misses go to the ordered index, and no segment is freed in this open"
                .into(),
        );
        true
    }
}
