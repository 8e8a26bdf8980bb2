//! The log cleaner: copies the live records out of mostly dead log segments
//! so that the segments can be freed, keeping an overwrite-heavy workload in
//! bounded space.
//!
//! Invariants:
//! - A record is relocated only while its key's home bucket lock is held and
//!   the key's slot still names it; the copy (same bytes: header with its
//!   original sequence number, key, value) is durable before the slot is
//!   switched to it with the same two-phase write a put uses. A crash before
//!   the switch leaves an unreferenced copy (dead space), after it a dead
//!   original; never a lost or doubled key.
//! - The cleaner holds locks with an internal sequence number (lane 255),
//!   which no record carries, so no put is ever eliminated against it.
//! - The victim is freed like any segment: when its live bytes reach zero,
//!   through an epoch, after every reader that might hold an offset into it.
//! - A live record whose deadline has passed is not copied: its key is
//!   deleted (the cleaner's share of reclaiming expired keys); a copied
//!   record with a deadline gets a new entry in the expiry heap.
//! - The cleaner appends to its own lane (254), which may use the pool's
//!   spare segments: it can make room even when the pool is full.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_epoch as epoch;

use super::write::Locked;
use super::{Engine, CLEANER_SEQ};
use crate::error::Result;
use crate::layout::{self, SegmentKind};
use crate::log::walk_segment;

/// Start cleaning when more than this share of sealed log space is dead…
const START_GARBAGE_PERCENT: u64 = 50;
/// …and stop when it is below this.
const STOP_GARBAGE_PERCENT: u64 = 35;
/// A segment whose live share is above this is not worth copying.
const MAX_VICTIM_LIVE_PERCENT: u64 = 90;

/// Figures the cleaning policy works from.
#[derive(Debug, Default)]
pub(super) struct LogSpace {
    /// Sealed log segments (not a lane's active one).
    pub sealed_segments: u64,
    /// Their record capacity and live bytes.
    pub sealed_capacity: u64,
    pub sealed_live: u64,
    /// Segments free or still to be had by growing the file.
    pub available_segments: u64,
    pub total_segments: u64,
}

impl Engine {
    fn segment_capacity(&self) -> u64 {
        self.pool.segment_bytes - layout::SEGMENT_HEADER_BYTES
    }

    /// Whether segment `s` is a sealed log segment the cleaner may take.
    fn cleanable(&self, s: u32) -> Option<u64> {
        if self.pool.kind(s) != SegmentKind::Log as u8 || !self.pool.is_sealed(s) {
            return None;
        }
        Some(self.pool.live_bytes(s))
    }

    pub(super) fn log_space(&self) -> LogSpace {
        let n = self.pool.segment_count();
        let headroom = self.pool.growth_headroom() as u64;
        let mut space = LogSpace {
            total_segments: n as u64 + headroom,
            available_segments: headroom,
            ..LogSpace::default()
        };
        for s in 0..n {
            if self.pool.kind(s) == SegmentKind::Free as u8 {
                space.available_segments += 1;
            }
            if let Some(live) = self.cleanable(s) {
                space.sealed_segments += 1;
                space.sealed_capacity += self.segment_capacity();
                space.sealed_live += live;
            }
        }
        space
    }

    /// Sealed log segments with dead space, least live first.
    fn victims(&self, max_live: u64) -> Vec<u32> {
        let mut v: Vec<(u64, u32)> = (0..self.pool.segment_count())
            .filter_map(|s| self.cleanable(s).map(|live| (live, s)))
            .filter(|&(live, _)| live <= max_live)
            .collect();
        v.sort_unstable();
        v.into_iter().map(|(_, s)| s).collect()
    }

    /// Moves the live records of segment `seg` to the cleaner's lane.
    /// Returns the bytes copied.
    pub(super) fn clean_segment(&self, seg: u32) -> Result<u64> {
        let mut records = Vec::new();
        {
            // Pinned while reading the victim: once we have seen it sealed
            // and in use, it cannot be freed and reused under us.
            let _pin = epoch::pin();
            if self.cleanable(seg).is_none() {
                return Ok(0);
            }
            walk_segment(&self.pool, seg, |r| records.push((r.offset, r.header)));
        }
        let mut moved = 0;
        for (off, walked) in records {
            if self.pool.live_bytes(seg) == 0 || self.stop.load(Ordering::Acquire) {
                break;
            }
            let key = {
                let _pin = epoch::pin();
                if self.cleanable(seg).is_none() {
                    break;
                }
                self.record_key(off, &walked)?.to_vec()
            };
            let h = self.hash(&key);
            moved += self.with_locked(&key, h, CLEANER_SEQ, |_ctx, found, _free, guard| {
                let Some(f) = found.filter(|f| f.in_index) else {
                    return Ok(Locked::Done(0));
                };
                if f.slot.offset() != off {
                    return Ok(Locked::Done(0)); // a newer record holds the key
                }
                // The header as read under the lock (`f.header`), not the one
                // walked earlier: only this one is known to be the key's.
                let header = f.header;
                if self.expired(off, &header)? {
                    // An expired key is deleted, not copied.
                    self.remove(0, &key, &f, f.slot.fingerprint(), guard);
                    return Ok(Locked::Done(0));
                }
                let total = header.total_bytes();
                let pm = &self.pool.pm;
                let len = 4 + header.body_len();
                let src = pm.slice(off, len)?;
                // Later cleaner segments' bases must exceed the copied number.
                self.cleaner_lane.raise(header.seq);
                let (at, sealed) = self.cleaner_lane.append(&self.pool, total, |at| {
                    pm.write_persistent(at, src);
                })?;
                if let Some(old) = sealed {
                    self.maybe_free(old, guard);
                }
                // The copy is durable (`append` fenced) and byte for byte the
                // original before any word names it.
                debug_assert_eq!(pm.slice(at, len).ok(), Some(src));
                self.republish(0, &f, (at, total), &header, guard);
                Ok(Locked::Done(total))
            })?;
        }
        // A victim that was already dead on arrival still needs handing over.
        self.maybe_free(seg, &epoch::pin());
        self.cleaned_segments.fetch_add(1, Ordering::Relaxed);
        self.cleaned_bytes.fetch_add(moved, Ordering::Relaxed);
        Ok(moved)
    }

    /// Cleans every sealed log segment that has any dead space, now, on
    /// the calling thread. Returns how many segments it cleaned.
    pub(super) fn clean_now(&self) -> Result<usize> {
        self.wait_tally();
        let capacity = self.segment_capacity();
        let victims = self.victims(capacity.saturating_sub(1));
        for &s in &victims {
            self.clean_segment(s)?;
        }
        Ok(victims.len())
    }

    /// The background cleaner: runs after the rebuild until the `Db` closes.
    pub(super) fn cleaner_loop(&self, bytes_per_sec: u64) {
        let mut active = false;
        // Victims that could not be emptied (damaged records, errors): not
        // tried again while their live bytes stay the same.
        let mut stuck: std::collections::HashMap<u32, u64> = Default::default();
        while !self.stop.load(Ordering::Acquire) {
            let space = self.log_space();
            let garbage = space.sealed_capacity - space.sealed_live.min(space.sealed_capacity);
            let urgent = space.available_segments <= (space.total_segments / 32).max(4);
            let percent = |p: u64| space.sealed_capacity * p / 100;
            active = if active {
                garbage > percent(STOP_GARBAGE_PERCENT)
            } else {
                garbage > percent(START_GARBAGE_PERCENT)
            };
            // When space is short, any segment with dead space is worth it.
            let max_live = if urgent {
                self.segment_capacity() - 1
            } else {
                self.segment_capacity() * MAX_VICTIM_LIVE_PERCENT / 100
            };
            let victim = (active || (urgent && garbage > 0))
                .then(|| {
                    self.victims(max_live)
                        .into_iter()
                        .find(|s| stuck.get(s) != Some(&self.pool.live_bytes(*s)))
                })
                .flatten();
            let Some(victim) = victim else {
                active = false;
                self.idle(Duration::from_millis(20));
                continue;
            };
            let started = Instant::now();
            let result = self.clean_segment(victim);
            let live = self.pool.live_bytes(victim);
            if self.cleanable(victim).is_some() && live > 0 {
                stuck.insert(victim, live);
            } else {
                stuck.remove(&victim);
            }
            match result {
                Ok(moved) if moved > 0 && !urgent && bytes_per_sec > 0 => {
                    // Rate limit: spend at least moved / rate on this segment.
                    let budget = Duration::from_secs_f64(moved as f64 / bytes_per_sec as f64);
                    if let Some(rest) = budget.checked_sub(started.elapsed()) {
                        self.idle(rest);
                    }
                }
                Ok(moved) if moved > 0 => {}
                Ok(_) => self.idle(Duration::from_millis(5)),
                Err(_) => self.idle(Duration::from_millis(100)), // e.g. pool full: retry later
            }
        }
    }

    /// Sleeps up to `d`, waking early when the `Db` closes.
    pub(super) fn idle(&self, d: Duration) {
        let end = Instant::now() + d;
        while !self.stop.load(Ordering::Acquire) {
            let now = Instant::now();
            if now >= end {
                return;
            }
            std::thread::sleep((end - now).min(Duration::from_millis(10)));
        }
    }
}
