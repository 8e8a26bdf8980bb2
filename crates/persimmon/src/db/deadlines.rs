//! The DRAM side of key expiry: the clock deadlines are measured against,
//! and the min-heap of `(deadline, record offset, seq)` the background
//! expiry takes due records from (the protocol is in `expiry`).
//!
//! Invariants:
//! - An entry names a record, never a key, by `(offset, seq)`. One record
//!   sits at an offset at a time, but a pair can come back for another: a
//!   batch's records (a grouped write's, a transaction's) share one
//!   sequence number and the cleaner's copies keep it, so once a segment is
//!   freed and reused, a copy can land where a batch-mate, or an earlier
//!   copy of itself, died. A death is marked before its segment can be
//!   freed, so a mark a `note` finds on its pair is the earlier record's,
//!   and the note takes it back: a mark stands only for the death of the
//!   record its pair names now, and never drops a live record's entry. The
//!   earlier record's entry stays, unmarked, until it is due: the expiry
//!   acts only on the record its key's word names, once that record's own
//!   deadline has passed.
//! - A record's death does not search the heap: it goes into the set of
//!   dead pairs, and `take_due` and `compact` drop the entries that set
//!   names. `compact` runs only when the dead outnumber half the heap and
//!   its slack, so each O(heap) pass follows at least heap/2 deaths and the
//!   heap stays within max(2 × live, live + slack) after a pass (plus the
//!   rare entries a reused pair left unmarked).
//! - Writers hold the heap's lock only to push an entry (taking its pair's
//!   mark back) or a death; a compaction filters the heap with the lock
//!   released.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::options::Clock;

/// One heap entry: the record at `offset` (written with sequence number
/// `seq`; the pair names one record at a time, see the invariants) expires
/// at `deadline`.
type Entry = (u64, u64, u64);

/// The deadlines of live records, and the records that died since.
#[derive(Default)]
struct Deadlines {
    heap: BinaryHeap<Reverse<Entry>>,
    /// `(offset, seq)` of records with a deadline that were overwritten,
    /// deleted or moved: their heap entries are stale (until a record noted
    /// later takes the pair back).
    dead: HashSet<(u64, u64), BuildHasherDefault<PairHasher>>,
}

/// A hasher for `(offset, seq)` pairs, which are unique and well spread
/// already: one multiply instead of SipHash (which showed as 9 % of a
/// put-only run with deadlines).
#[derive(Default)]
struct PairHasher(u64);

impl Hasher for PairHasher {
    fn write(&mut self, bytes: &[u8]) {
        for chunk in bytes.chunks(8) {
            let mut word = [0u8; 8];
            word[..chunk.len()].copy_from_slice(chunk);
            self.write_u64(u64::from_le_bytes(word));
        }
    }

    #[inline]
    fn write_u64(&mut self, v: u64) {
        self.0 = (self.0.rotate_left(29) ^ v).wrapping_mul(0x9E37_79B9_7F4A_7C15);
    }

    #[inline]
    fn finish(&self) -> u64 {
        self.0
    }
}

/// What the background expiry calls with each key it deleted.
pub type ExpiredListener = Box<dyn Fn(&[u8]) + Send + Sync>;

/// The heap of deadlines and the clock.
pub(super) struct Expiry {
    clock: Clock,
    deadlines: parking_lot::Mutex<Deadlines>,
    /// Keys the background expiry deleted.
    pub(super) reclaimed: AtomicU64,
    /// Set at most once ([`Db::on_expired`](super::Db::on_expired)).
    pub(super) listener: std::sync::OnceLock<ExpiredListener>,
}

impl Expiry {
    pub(super) fn new(clock: Clock) -> Expiry {
        Expiry {
            clock,
            deadlines: parking_lot::Mutex::new(Deadlines::default()),
            reclaimed: AtomicU64::new(0),
            listener: std::sync::OnceLock::new(),
        }
    }

    #[inline]
    pub(super) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Remembers that the record at `offset` (sequence `seq`) expires at
    /// `deadline`. A death mark of the pair was an earlier record's (a
    /// batch-mate's, or an earlier copy's, that died there): taken back, so
    /// that `take_due` or `compact` cannot drop this entry for it.
    pub(super) fn note(&self, deadline: u64, offset: u64, seq: u64) {
        let mut d = self.deadlines.lock();
        d.dead.remove(&(offset, seq));
        d.heap.push(Reverse((deadline, offset, seq)));
    }

    /// The record at `offset` (sequence `seq`), which had a deadline, is no
    /// longer its key's: its entry is stale.
    pub(super) fn forget(&self, offset: u64, seq: u64) {
        self.deadlines.lock().dead.insert((offset, seq));
    }

    /// Takes up to `max` entries due at `now`, dropping stale ones.
    pub(super) fn take_due(&self, now: u64, max: usize) -> Vec<Entry> {
        let mut d = self.deadlines.lock();
        let mut due = Vec::new();
        while due.len() < max {
            match d.heap.peek() {
                Some(Reverse(e)) if e.0 <= now => {
                    let e = d.heap.pop().expect("peeked").0;
                    if !d.dead.remove(&(e.1, e.2)) {
                        due.push(e);
                    }
                }
                _ => break,
            }
        }
        due
    }

    /// The earliest deadline in the heap.
    pub(super) fn next_due(&self) -> Option<u64> {
        self.deadlines.lock().heap.peek().map(|Reverse(e)| e.0)
    }

    /// Drops the stale entries when they are more than half the heap and
    /// more than `slack` (an overwrite-heavy workload with long deadlines
    /// would otherwise grow it without bound): after a pass the heap holds
    /// at most max(2 × live, live + slack) entries, and each compaction's
    /// O(heap) work follows at least heap/2 deaths. DRAM work only; writers
    /// wait only while the heap and the dead set are taken out and put
    /// back. An entry added meanwhile and its death, if it died meanwhile,
    /// land in the new heap and set. `slack`: `COMPACT_SLACK` for the
    /// background passes (small heaps are not worth a pass); none for an
    /// explicit `expire_now`, whose caller asks for the heap to be tidied.
    pub(super) fn compact(&self, slack: u64) {
        let (heap, dead) = {
            let mut d = self.deadlines.lock();
            if d.dead.len() as u64 <= (d.heap.len() as u64 / 2).max(slack) {
                return;
            }
            (std::mem::take(&mut d.heap), std::mem::take(&mut d.dead))
        };
        let kept: Vec<Reverse<Entry>> = heap
            .into_vec()
            .into_iter()
            .filter(|Reverse(e)| !dead.contains(&(e.1, e.2)))
            .collect();
        self.deadlines.lock().heap.extend(kept);
    }

    pub(super) fn pending(&self) -> u64 {
        self.deadlines.lock().heap.len() as u64
    }

    pub(super) fn reclaimed(&self) -> u64 {
        self.reclaimed.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    //! Regression: a death mark outlived its record and dropped the entry of
    //! the next record its pair named — a batch-mate (one sequence number per
    //! batch) that the cleaner copied to the offset where the first died
    //! (the engine-level story: tests/expiry_entry_survives_a_reused_pair.rs).
    //! `compact` dropped the new entry along with the stale one, and
    //! `take_due` spent the mark on it when it was due first; either way the
    //! live record had no entry. A note now takes its pair's mark back.

    use super::*;
    use crate::options::ManualClock;

    const T0: u64 = 1_700_000_000_000;
    /// Where `a` died and its batch-mate `b` was copied, and their batch's
    /// sequence number.
    const AT: u64 = 4096;
    const SEQ: u64 = 7;

    fn expiry() -> Expiry {
        Expiry::new(Clock::Manual(ManualClock::new(T0)))
    }

    #[test]
    fn compact_keeps_the_entry_of_a_record_noted_at_a_dead_pair() {
        let e = expiry();
        e.note(T0 + 300, AT, SEQ); // a
        for other in 1..=3 {
            e.note(T0 + 500, AT + other * 1024, other);
            e.forget(AT + other * 1024, other);
        }
        e.forget(AT, SEQ); // a overwritten
        e.note(T0 + 100, AT, SEQ); // b copied where a was
        e.compact(0);
        assert!(e.pending() < 5, "the three dead entries are compacted away");
        assert_eq!(e.take_due(T0 + 100, 10), vec![(T0 + 100, AT, SEQ)]);
    }

    #[test]
    fn take_due_hands_out_a_record_noted_at_a_dead_pair() {
        let e = expiry();
        e.note(T0 + 300, AT, SEQ); // a
        e.forget(AT, SEQ); // a overwritten
        e.note(T0 + 100, AT, SEQ); // b copied where a was, due first
        assert_eq!(e.take_due(T0 + 100, 10), vec![(T0 + 100, AT, SEQ)]);
    }
}
