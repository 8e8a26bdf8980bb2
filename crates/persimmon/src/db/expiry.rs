//! Key expiry: deadlines in milliseconds of Unix time, stored in the record
//! (`REC_FLAG_DEADLINE`, 8 bytes between the header and the key), checked on every read,
//! and reclaimed in the background from a DRAM min-heap of
//! `(deadline, record offset)`.
//!
//! Invariants:
//! - From its deadline on a key is absent to every read (`get`, `contains`,
//!   iteration, ranges, `update`'s closure, transactions): the read compares
//!   the record's deadline with the engine's clock. A record without the
//!   flag costs the reader one flag test.
//! - The heap is a hint, never the truth: an entry is acted on only when,
//!   under the key's bucket lock, the key's word still names that very record
//!   and its deadline has passed. Entries made stale by an overwrite, a
//!   delete or the cleaner's relocation are dropped then, or earlier by a
//!   compaction when the heap has doubled (so it stays within about twice
//!   the keys with deadlines, plus 4096). Every live record
//!   with a deadline has an entry: writes add one, the cleaner adds one for
//!   each copy, and after open the tally (PM index) or the DRAM rebuild adds
//!   one for each record it counts.
//! - A deadline already passed when written deletes the key at once; one
//!   past `MAX_DEADLINE_MS` is refused.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use crossbeam_epoch as epoch;

use super::write::{Locked, Update};
use super::{check_key, Engine, EXPIRY_SEQ};
use crate::error::{Error, Result};
use crate::index;
use crate::layout::{get_u64, RecordHeader};
use crate::options::Clock;

/// The latest deadline accepted: 9999-12-31T23:59:59.999Z.
pub const MAX_DEADLINE_MS: u64 = 253_402_300_799_999;
/// Most due entries one pass of the expiry thread takes from the heap.
const PASS_ENTRIES: usize = 1024;
/// Heap growth that never triggers a compaction (entries).
const COMPACT_SLACK: u64 = 4096;
/// Longest the expiry thread sleeps between passes.
const MAX_SLEEP: Duration = Duration::from_millis(100);

/// A key's time to live, as [`Db::ttl`](super::Db::ttl) reports it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ttl {
    /// The key is absent (or expired).
    Missing,
    /// The key has no deadline.
    Persistent,
    /// The key expires at `at_ms` (ms of Unix time), `remaining_ms` from now.
    Expires { at_ms: u64, remaining_ms: u64 },
}

/// The heap of deadlines and the clock.
pub(super) struct Expiry {
    clock: Clock,
    heap: parking_lot::Mutex<BinaryHeap<Reverse<(u64, u64)>>>,
    /// Keys the background expiry deleted.
    reclaimed: AtomicU64,
    /// Heap entries left by the last compaction (the next one runs when the
    /// heap has grown past twice this, plus `COMPACT_SLACK`).
    compacted_len: AtomicU64,
}

impl Expiry {
    pub(super) fn new(clock: Clock) -> Expiry {
        Expiry {
            clock,
            heap: parking_lot::Mutex::new(BinaryHeap::new()),
            reclaimed: AtomicU64::new(0),
            compacted_len: AtomicU64::new(0),
        }
    }

    #[inline]
    pub(super) fn now_ms(&self) -> u64 {
        self.clock.now_ms()
    }

    /// Remembers that the record at `offset` expires at `deadline`.
    pub(super) fn note(&self, deadline: u64, offset: u64) {
        self.heap.lock().push(Reverse((deadline, offset)));
    }

    /// Takes up to `max` entries due at `now`.
    fn take_due(&self, now: u64, max: usize) -> Vec<(u64, u64)> {
        let mut heap = self.heap.lock();
        let mut due = Vec::new();
        while due.len() < max {
            match heap.peek() {
                Some(Reverse((d, _))) if *d <= now => {
                    due.push(heap.pop().expect("peeked").0);
                }
                _ => break,
            }
        }
        due
    }

    /// The earliest deadline in the heap.
    fn next_due(&self) -> Option<u64> {
        self.heap.lock().peek().map(|Reverse((d, _))| *d)
    }

    /// Whether the heap has grown enough since the last compaction that
    /// stale entries (overwritten or deleted keys) may dominate it.
    fn wants_compaction(&self) -> bool {
        self.pending() > 2 * self.compacted_len.load(Ordering::Relaxed) + COMPACT_SLACK
    }

    pub(super) fn pending(&self) -> u64 {
        self.heap.lock().len() as u64
    }

    pub(super) fn reclaimed(&self) -> u64 {
        self.reclaimed.load(Ordering::Relaxed)
    }
}

impl Engine {
    /// Whether a deadline written now keeps the key (`false`: it has passed
    /// already, so the key is deleted instead); refuses absurd deadlines.
    pub(super) fn check_deadline(&self, deadline: u64) -> Result<bool> {
        if deadline > MAX_DEADLINE_MS {
            return Err(Error::DeadlineTooFar {
                deadline_ms: deadline,
                max_ms: MAX_DEADLINE_MS,
            });
        }
        Ok(deadline > self.expiry.now_ms())
    }

    /// The deadline of the record at `off`, if it has one.
    #[inline]
    pub(super) fn record_deadline(&self, off: u64, h: &RecordHeader) -> Result<Option<u64>> {
        match h.deadline_at() {
            None => Ok(None),
            Some(at) => Ok(Some(get_u64(self.pool.pm.slice(off + at, 8)?, 0))),
        }
    }

    /// Whether the record at `off` has a deadline that has passed.
    #[inline]
    pub(super) fn expired(&self, off: u64, h: &RecordHeader) -> Result<bool> {
        Ok(self
            .record_deadline(off, h)?
            .is_some_and(|d| d <= self.expiry.now_ms()))
    }

    /// The deadline of the record at `off` while it has not passed.
    pub(super) fn live_deadline(&self, off: u64, h: &RecordHeader) -> Result<Option<u64>> {
        Ok(self
            .record_deadline(off, h)?
            .filter(|&d| d > self.expiry.now_ms()))
    }

    /// After open: the tally or the DRAM rebuild met a live record; a
    /// deadline it carries goes into the heap.
    pub(super) fn note_deadline(&self, off: u64, h: &RecordHeader) {
        if let Ok(Some(d)) = self.record_deadline(off, h) {
            self.expiry.note(d, off);
        }
    }

    pub(super) fn ttl(&self, key: &[u8]) -> Result<Ttl> {
        let now = self.expiry.now_ms();
        let found = self.read_record(key, |off, h, _| self.record_deadline(off, h))?;
        Ok(match found {
            None => Ttl::Missing,
            Some(deadline) => match deadline? {
                None => Ttl::Persistent,
                Some(at_ms) => Ttl::Expires {
                    at_ms,
                    remaining_ms: at_ms.saturating_sub(now),
                },
            },
        })
    }

    /// Sets (`Some`) or clears (`None`) the deadline of `key`, rewriting its
    /// record with the same value. Returns whether the key was present
    /// (`clear_only`: whether it had a deadline to clear). A deadline
    /// already passed deletes the key.
    pub(super) fn set_deadline(
        &self,
        key: &[u8],
        deadline: Option<u64>,
        clear_only: bool,
    ) -> Result<bool> {
        if let Some(d) = deadline {
            self.check_deadline(d)?;
        }
        self.update_with_deadline(key, |current, had| match current {
            None => (Update::Keep, false),
            Some(_) if clear_only && had.is_none() => (Update::Keep, false),
            Some(v) => (
                Update::PutExpiring {
                    value: v.to_vec(),
                    deadline,
                },
                true,
            ),
        })
    }

    /// One pass of active expiry: deletes the keys whose heap entries are
    /// due and still name their current record, then compacts the heap if
    /// it has doubled. Returns how many keys it deleted.
    pub(super) fn expire_due(&self) -> Result<u64> {
        let mut deleted = 0;
        loop {
            let due = self.expiry.take_due(self.expiry.now_ms(), PASS_ENTRIES);
            if due.is_empty() {
                if self.expiry.wants_compaction() {
                    self.compact_heap();
                }
                return Ok(deleted);
            }
            for (_, off) in due {
                if self.stop.load(Ordering::Acquire) {
                    return Ok(deleted);
                }
                deleted += self.expire_record(off)? as u64;
            }
        }
    }

    /// Deletes the key of the record at `off` if its word still names that
    /// record and the record's deadline has passed.
    fn expire_record(&self, off: u64) -> Result<bool> {
        let key = {
            let _pin = epoch::pin();
            // The entry may be stale: the segment may hold other bytes now.
            let Ok(h) = self.record_header(off) else {
                return Ok(false);
            };
            if h.deadline_at().is_none() || self.verify_record(off, &h).is_err() {
                return Ok(false);
            }
            self.record_key(off, &h)?.to_vec()
        };
        if check_key(&key).is_err() {
            return Ok(false);
        }
        let h = self.hash(&key);
        let fp = index::fingerprint(h);
        let gone = self.with_locked(&key, h, EXPIRY_SEQ, |_, found, _, guard| {
            let Some(f) = found.filter(|f| f.slot.offset() == off) else {
                return Ok(Locked::Done(false));
            };
            if !self.expired(off, &f.header)? {
                return Ok(Locked::Done(false));
            }
            self.remove(0, &key, &f, fp, guard);
            Ok(Locked::Done(true))
        })?;
        if gone {
            self.expiry.reclaimed.fetch_add(1, Ordering::Relaxed);
        }
        Ok(gone)
    }

    /// Drops the heap entries whose record no key names any more (the key
    /// was overwritten, deleted or its record moved): an overwrite-heavy
    /// workload with long deadlines would otherwise grow the heap without
    /// bound. Entries added meanwhile are kept; a key rewritten while its
    /// entry is checked has an entry of its own.
    fn compact_heap(&self) {
        let entries = std::mem::take(&mut *self.expiry.heap.lock()).into_vec();
        let kept: Vec<Reverse<(u64, u64)>> = entries
            .into_iter()
            // An entry whose key reads as absent because it just expired
            // is due, not stale: keep it for the next pass.
            .filter(|Reverse((d, off))| {
                self.names_current_record(*off) || *d <= self.expiry.now_ms()
            })
            .collect();
        self.expiry
            .compacted_len
            .store(kept.len() as u64, Ordering::Relaxed);
        self.expiry.heap.lock().extend(kept);
    }

    /// Whether the record at `off` is its key's current record.
    fn names_current_record(&self, off: u64) -> bool {
        let key = {
            let _pin = epoch::pin();
            match self.record_header(off) {
                Ok(h) if h.deadline_at().is_some() && self.verify_record(off, &h).is_ok() => {
                    match self.record_key(off, &h) {
                        Ok(k) => k.to_vec(),
                        Err(_) => return false,
                    }
                }
                _ => return false,
            }
        };
        // An error reading the key keeps the entry (it is checked again
        // when due, under the lock).
        self.read_record(&key, |at, _, _| at == off)
            .map_or(true, |r| r.unwrap_or(false))
    }

    /// The background expiry thread: after the rebuild (which fills the
    /// heap), a pass whenever the earliest deadline is due, at least every
    /// 100 ms, until the `Db` closes.
    pub(super) fn expiry_loop(&self) {
        // Not `wait_tally`: a rebuild stopped by the close never signals.
        while !self.tally_done.load(Ordering::Acquire) {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            self.idle(Duration::from_millis(5));
        }
        while !self.stop.load(Ordering::Acquire) {
            let _ = self.expire_due();
            let now = self.expiry.now_ms();
            let sleep = match self.expiry.next_due() {
                Some(d) if d > now => Duration::from_millis(d - now).min(MAX_SLEEP),
                Some(_) => Duration::from_millis(1),
                None => MAX_SLEEP,
            };
            self.idle(sleep);
        }
    }
}
