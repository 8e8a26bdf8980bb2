//! The DRAM side of key expiry: the clock deadlines are measured against,
//! and the min-heap of `(deadline, record offset, seq)` the background
//! expiry takes due records from (the protocol is in `expiry`).
//!
//! Invariants:
//! - An entry names a record, never a key: `(offset, seq)` stays that
//!   record's for good (records are never moved in place), so an entry
//!   whose record died can only be stale, never name another record.
//! - A record's death does not search the heap: it goes into the set of
//!   dead pairs, and `take_due` and `compact` drop the entries that set
//!   names. `compact` runs only when the dead outnumber half the heap and
//!   its slack, so each O(heap) pass follows at least heap/2 deaths and the
//!   heap stays within max(2 × live, live + slack) after a pass.
//! - Writers hold the heap's lock only to push an entry or a death; a
//!   compaction filters the heap with the lock released.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashSet};
use std::hash::{BuildHasherDefault, Hasher};
use std::sync::atomic::{AtomicU64, Ordering};

use crate::options::Clock;

/// One heap entry: the record at `offset` (written with sequence number
/// `seq`; the pair names one record for good, as records are never moved in
/// place) expires at `deadline`.
type Entry = (u64, u64, u64);

/// The deadlines of live records, and the records that died since.
#[derive(Default)]
struct Deadlines {
    heap: BinaryHeap<Reverse<Entry>>,
    /// `(offset, seq)` of records with a deadline that were overwritten,
    /// deleted or moved: their heap entries are stale.
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

/// The heap of deadlines and the clock.
pub(super) struct Expiry {
    clock: Clock,
    deadlines: parking_lot::Mutex<Deadlines>,
    /// Keys the background expiry deleted.
    pub(super) reclaimed: AtomicU64,
}

impl Expiry {
    pub(super) fn new(clock: Clock) -> Expiry {
        Expiry {
            clock,
            deadlines: parking_lot::Mutex::new(Deadlines::default()),
            reclaimed: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(super) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Remembers that the record at `offset` (sequence `seq`) expires at
    /// `deadline`.
    pub(super) fn note(&self, deadline: u64, offset: u64, seq: u64) {
        self.deadlines
            .lock()
            .heap
            .push(Reverse((deadline, offset, seq)));
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
