//! Key expiry: deadlines in milliseconds of Unix time, stored in the record
//! (`REC_FLAG_DEADLINE`, 8 bytes between the header and the key), checked on every read,
//! and reclaimed in the background from a DRAM min-heap of
//! `(deadline, record offset, seq)`.
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
//!   compaction: each record that had a deadline and stops being its key's
//!   is put in a DRAM set of dead `(offset, seq)` pairs as it dies, and
//!   when that set holds more than half the heap and more than 4096, the
//!   stale entries are dropped (no PM read), so after each background pass
//!   the heap holds at most twice the keys with deadlines, or those keys
//!   plus 4096 when that is more. Every live record
//!   with a deadline has an entry: writes add one, the cleaner adds one for
//!   each copy, and after open the tally (PM index) or the DRAM rebuild adds
//!   one for each record it counts; and no death mark drops it, though a
//!   pair can name a second record (a batch's records share their seq, and
//!   a copy can land where a batch-mate died): adding an entry takes its
//!   pair's old mark back (`deadlines`).
//! - A deadline already passed when written deletes the key at once; one
//!   past `MAX_DEADLINE_MS` is refused.
//! - The listener (`Db::on_expired`), if any, hears of each key the
//!   background expiry deleted, after its delete returned (durable), on
//!   the expiry thread; a key found expired by a read and deleted later is
//!   heard of then.
//! - While the expiry is held (`Db::hold_expiry`, for a server's client
//!   pause) the background thread reclaims nothing; expired keys still read
//!   as absent.

use std::sync::atomic::Ordering;
use std::time::Duration;

use crossbeam_epoch as epoch;

use super::engine::{check_key, Engine, EXPIRY_SEQ};
use super::write::{Locked, Update};
use crate::error::{Error, Result};
use crate::index;
use crate::layout::{get_u64, RecordHeader, REC_FLAG_DEADLINE};

/// The latest deadline accepted: 9999-12-31T23:59:59.999Z.
pub const MAX_DEADLINE_MS: u64 = 253_402_300_799_999;
/// Most due entries one pass of the expiry thread takes from the heap.
const PASS_ENTRIES: usize = 1024;
/// Stale entries that never trigger a compaction on their own.
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
            self.expiry.note(d, off, h.seq);
        }
    }

    /// The record at `off` stops being its key's (overwritten, deleted,
    /// moved): its heap entry, if it has one, is stale from now on.
    #[inline]
    pub(super) fn forget_deadline(&self, off: u64, h: &RecordHeader) {
        if h.flags & REC_FLAG_DEADLINE != 0 {
            self.expiry.forget(off, h.seq);
        }
    }

    pub(super) fn ttl(&self, key: &[u8]) -> Result<Ttl> {
        let now = self.expiry.now_ms();
        let found = self.read_record(key, |off, h| self.record_deadline(off, h))?;
        Ok(match found {
            None => Ttl::Missing,
            Some(deadline) => match deadline {
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
    /// it has doubled (`slack`: see `Expiry::compact`). Returns how many
    /// keys it deleted.
    pub(super) fn expire_due(&self, slack: u64) -> Result<u64> {
        let mut deleted = 0;
        loop {
            let due = self.expiry.take_due(self.expiry.now_ms(), PASS_ENTRIES);
            if due.is_empty() {
                self.expiry.compact(slack);
                return Ok(deleted);
            }
            for (_, off, _) in due {
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
            if let Some(listener) = self.expiry.listener.get() {
                listener(&key);
            }
        }
        Ok(gone)
    }

    /// The background expiry thread: after the rebuild (which fills the
    /// heap), a pass whenever the earliest deadline is due, at least every
    /// 100 ms, until the `Db` closes; no pass while the expiry is held.
    pub(super) fn expiry_loop(&self) {
        // Not `wait_tally`: a rebuild stopped by the close never signals.
        while !self.tally_done.load(Ordering::Acquire) {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            self.idle(Duration::from_millis(5));
        }
        while !self.stop.load(Ordering::Acquire) {
            if !self.expiry_held.load(Ordering::Acquire) {
                let _ = self.expire_due(COMPACT_SLACK);
            }
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
