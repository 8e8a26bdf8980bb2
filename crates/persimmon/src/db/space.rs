//! Space accounting and reclamation: live bytes per segment, the key count,
//! and freeing segments whose records are all dead.
//!
//! Invariants:
//! - A record is counted live from its append until the word naming it is
//!   overwritten or deleted; a segment is freed only when sealed with 0 live
//!   bytes, and only through an epoch (after every reader that might hold an
//!   offset into it has unpinned).
//! - Until the tally after open has passed a bucket (PM point index), a
//!   writer leaves that bucket's old records to the tally and takes its new
//!   record back out (the tally will count it), so nothing is counted twice.
//! - Nothing is freed before the tally is done, nor in an open whose DRAM
//!   rebuild could not count every record (`reclaim_blocked`).
//! - The key count is `base_count` plus the per-lane deltas; `len` waits for
//!   the tally unless the count at open was known.

use std::sync::atomic::Ordering;

use crossbeam_epoch::{self as epoch, Guard};

use super::engine::Engine;
use crate::error::{Error, Result};

impl Engine {
    /// Whether the tally has passed the bucket holding slot `addr` (the
    /// caller holds a lock that keeps this answer stable).
    #[inline]
    pub(super) fn tallied(&self, addr: u64) -> bool {
        // The DRAM point index counts exactly what it holds, from the start.
        !self.point_index.needs_tally()
            || self.tally_done.load(Ordering::Acquire)
            || addr < self.tally_cursor.load(Ordering::Acquire)
    }

    #[inline]
    pub(super) fn sub_live(&self, offset: u64, total: u64, guard: &Guard) {
        let seg = self.pool.segment_of(offset);
        if self.pool.sub_live(seg, total) {
            self.maybe_free(seg, guard);
        }
    }

    /// Accounting after slot `addr` took record `new` (and dropped `old`).
    #[inline]
    pub(super) fn account(
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
            // Its key moved on: the cleaner need not look it up.
            self.pool.mark_dead(off, total);
            if tallied {
                self.sub_live(off, total, guard);
            }
        }
        if tallied {
            self.account_extents(new.map(|n| n.0), old.map(|o| o.0), guard);
        }
        if self.clean_open || tallied {
            let delta = new.is_some() as i64 - old.is_some() as i64;
            if delta != 0 {
                self.count_deltas[lane].fetch_add(delta, Ordering::Relaxed);
            }
        }
    }

    /// Frees segment `seg` through an epoch if it is sealed and holds no
    /// live record.
    pub(super) fn maybe_free(&self, seg: u32, guard: &Guard) {
        if !self.tally_done.load(Ordering::Acquire) || self.reclaim_blocked.load(Ordering::Acquire)
        {
            return;
        }
        if !self.pool.begin_freeing(seg) {
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

    /// Whether `e` is a full pool that segments waiting for their epoch may
    /// relieve: the caller unpins, calls `reclaim_pending` and tries again.
    pub(super) fn relievable(&self, e: &Error) -> bool {
        matches!(e, Error::PoolFull { .. })
            && self.pool.releases_pending.load(Ordering::Acquire) > 0
    }

    /// Drives the epoch until some segment handed to it is released, for
    /// a writer that found the pool full. Fails with `PoolFull` when nothing
    /// is released within a short while.
    pub(super) fn reclaim_pending(&self) -> Result<()> {
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

    pub(super) fn count_now(&self) -> u64 {
        let d: i64 = self
            .count_deltas
            .iter()
            .map(|c| c.load(Ordering::Relaxed))
            .sum();
        (self.base_count.load(Ordering::Acquire) as i64 + d).max(0) as u64
    }

    pub(super) fn len(&self) -> u64 {
        if !self.clean_open {
            self.wait_tally();
        }
        self.count_now()
    }
}
