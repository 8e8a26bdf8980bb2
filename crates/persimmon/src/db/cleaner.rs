//! The log cleaner: copies the live records out of mostly dead log segments
//! so that the segments can be freed, keeping an overwrite-heavy workload in
//! bounded space.
//!
//! A victim is cleaned a chunk of records at a time (`CHUNK_RECORDS`): the
//! chunk's bucket lines are prefetched together, records no slot names
//! (most of a victim) are dropped — without a look at the index when a
//! writer marked them dead (`dead_hints`), else after a look at their
//! bucket pair without a lock — the live ones are copied under **one fence**, then switched one
//! by one under their bucket locks, unfenced, and **one fence** makes every
//! switch of the chunk durable. So a chunk costs two fences, not two per
//! record.
//!
//! Invariants:
//! - A record is relocated only while its key's home bucket lock is held and
//!   the key's slot still names it; the copy (same bytes: header with its
//!   original sequence number, key, value) is durable before the slot is
//!   switched to it. A crash before the switch is durable leaves either
//!   word on media — both name the same bytes, durably — never a lost or
//!   doubled key; a copy no word names is dead space.
//! - The victim (and with it the original) is not freed before the fence
//!   that makes the chunk's switches durable: the chunk holds an epoch pin
//!   until then, and freeing goes through the epoch.
//! - A record with a deadline is moved alone (its own two fences), and not
//!   at all once the deadline has passed: its key is deleted (the cleaner's
//!   share of reclaiming expired keys); a copied record with a deadline gets
//!   a new entry in the expiry heap.
//! - The cleaner holds locks with an internal sequence number (lane 255),
//!   which no record carries, so no put is ever eliminated against it.
//! - The victim is freed like any segment: when its live bytes reach zero,
//!   through an epoch, after every reader that might hold an offset into it.
//! - The cleaner appends to its own lane (254), which may use the pool's
//!   spare segments: it can make room even when the pool is full.

use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use crossbeam_epoch::{self as epoch, Guard};

use super::engine::{Engine, CLEANER_SEQ};
use super::write::Locked;
use crate::error::Result;
use crate::index::{self, SegRef};
use crate::layout::{self, RecordHeader, SegmentKind, Slot, REC_FLAG_DEADLINE};
use crate::log::walk_segment;

/// Start cleaning when more than this share of sealed log space is dead…
const START_GARBAGE_PERCENT: u64 = 50;
/// …and stop when it is below this.
const STOP_GARBAGE_PERCENT: u64 = 35;
/// A segment whose live share is above this is not worth copying.
const MAX_VICTIM_LIVE_PERCENT: u64 = 90;
/// Records of a victim handled together: their buckets are prefetched
/// together, their copies share one fence and their switches another.
const CHUNK_RECORDS: usize = 32;

/// A record of a victim that a slot named when the chunk began.
struct Candidate<'v> {
    off: u64,
    header: RecordHeader,
    /// Its key, read in place (the chunk's epoch pin keeps the victim).
    key: &'v [u8],
    h: u64,
    /// The index segment its key routed to when the chunk began.
    seg: SegRef,
}

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

    /// Moves the live records of segment `seg` to the cleaner's lane, a
    /// chunk of records at a time. Returns the bytes copied.
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
        for chunk in records.chunks(CHUNK_RECORDS) {
            if self.pool.live_bytes(seg) == 0 || self.stop.load(Ordering::Acquire) {
                break;
            }
            match self.clean_chunk(seg, chunk)? {
                Some(m) => moved += m,
                None => break,
            }
        }
        // A victim that was already dead on arrival still needs handing over.
        self.maybe_free(seg, &epoch::pin());
        self.cleaned_segments.fetch_add(1, Ordering::Relaxed);
        self.cleaned_bytes.fetch_add(moved, Ordering::Relaxed);
        Ok(moved)
    }

    /// Relocates the live records among `chunk` (records of victim `seg`):
    /// their buckets are prefetched together, the records no slot names are
    /// dropped without a lock, the rest are copied under one fence and
    /// switched under another. `None` when the victim is no longer
    /// cleanable.
    fn clean_chunk(&self, seg: u32, chunk: &[(u64, RecordHeader)]) -> Result<Option<u64>> {
        // Held to the end: the victim's bytes (keys, sources) stay mapped
        // and unreused, and it cannot be freed before the switches' fence.
        let guard = epoch::pin();
        if self.cleanable(seg).is_none() {
            return Ok(None);
        }
        let pm = &self.pool.pm;
        let mut live = Vec::with_capacity(chunk.len());
        {
            let dir = self.index.dir.load();
            for &(off, header) in chunk {
                if self.pool.known_dead(off, header.total_bytes()) {
                    continue;
                }
                let key = self.record_key(off, &header)?;
                let h = self.hash(key);
                let seg = dir.lookup(h);
                for bucket in self.index.probe(&seg, h) {
                    self.ipm().prefetch(bucket);
                }
                live.push(Candidate {
                    off,
                    header,
                    key,
                    h,
                    seg,
                });
            }
            live.retain(|c| self.slot_names(&c.seg, c.h, c.off));
            // The live ones' lock lines load while their copies are written.
            for c in &live {
                self.index.locks.prefetch(self.index.probe(&c.seg, c.h)[0]);
            }
        }
        let mut moved = 0;
        // A record with a deadline may have expired: its key is deleted,
        // not copied, one at a time.
        for c in live
            .iter()
            .filter(|c| c.header.flags & REC_FLAG_DEADLINE != 0)
        {
            moved += self.relocate_one(c)?;
        }
        live.retain(|c| c.header.flags & REC_FLAG_DEADLINE == 0);
        if live.is_empty() {
            return Ok(Some(moved));
        }
        // `check` must not see the copies counted live before they are named.
        let _chunk = self.chunk_mutex.lock();
        let copies = self.copy_chunk(&live, &guard)?;
        let mut failed = None;
        for (c, &at) in live.iter().zip(&copies) {
            let total = c.header.total_bytes();
            let switched = match failed {
                Some(_) => Ok(false),
                None => self.switch_copy(c, at),
            };
            match switched {
                Ok(true) => moved += total,
                Ok(false) => self.sub_live(at, total, &guard),
                Err(e) => {
                    self.sub_live(at, total, &guard);
                    failed = Some(e);
                }
            }
        }
        // Persist point: every switch of the chunk is durable before the
        // victim can be freed (the guard, held until here, keeps it).
        pm.fence();
        drop(guard);
        match failed {
            Some(e) => Err(e),
            None => Ok(Some(moved)),
        }
    }

    /// Whether a slot of `h`'s bucket pair in `seg` names record `off`
    /// (read without a lock: a record no slot names is dead for good).
    fn slot_names(&self, seg: &SegRef, h: u64, off: u64) -> bool {
        let fp = index::fingerprint(h);
        let pm = self.ipm();
        self.index.probe(seg, h).into_iter().any(|bucket| {
            self.index.slots(bucket).any(|addr| {
                let s = Slot(pm.load_u64(addr));
                s.names_record() && s.fingerprint() == fp && s.offset() == off
            })
        })
    }

    /// Appends copies of the chunk's records to the cleaner's lane, under
    /// one fence issued while the lane is held (the tier's thread appends to
    /// the same lane); returns their offsets (each counted live).
    fn copy_chunk(&self, live: &[Candidate], guard: &Guard) -> Result<Vec<u64>> {
        let pm = &self.pool.pm;
        let totals: Vec<u64> = live.iter().map(|c| c.header.total_bytes()).collect();
        let mut sources = Vec::with_capacity(live.len());
        for c in live {
            sources.push(pm.slice(c.off, 4 + c.header.body_len())?);
            // Later cleaner segments' bases must exceed the copied numbers.
            self.cleaner_lane.raise(c.header.seq);
        }
        let mut offsets = Vec::with_capacity(live.len());
        let mut sealed = Vec::new();
        // Persist point (`append_many` fences before it releases the lane):
        // the copies are durable (and byte for byte the originals) before any
        // word names one, and before any later record of the lane is.
        let appended = self.cleaner_lane.append_many(
            &self.pool,
            &totals,
            &mut offsets,
            &mut sealed,
            |i, at| pm.write_persistent(at, sources[i]),
        );
        for s in sealed {
            self.maybe_free(s, guard);
        }
        if let Err(e) = appended {
            for (&at, &total) in offsets.iter().zip(&totals) {
                self.sub_live(at, total, guard);
            }
            return Err(e);
        }
        debug_assert!(offsets
            .iter()
            .zip(&sources)
            .all(|(&at, src)| pm.slice(at, src.len()).ok() == Some(*src)));
        Ok(offsets)
    }

    /// Switches `c`'s key to its copy at `at` if its slot still names the
    /// original (bucket lock held); whether it did.
    fn switch_copy(&self, c: &Candidate, at: u64) -> Result<bool> {
        let total = c.header.total_bytes();
        self.with_locked(c.key, c.h, CLEANER_SEQ, |_ctx, found, _free, guard| {
            let Some(f) = found.filter(|f| f.in_index && f.slot.offset() == c.off) else {
                return Ok(Locked::Done(false)); // a newer record holds the key
            };
            // The header as read under the lock (`f.header`): only this
            // one is known to be the key's.
            self.relocate(&f, (at, total), &f.header, guard);
            Ok(Locked::Done(true))
        })
    }

    /// Moves one record alone (two fences of its own), deleting its key
    /// instead if its deadline has passed. Returns the bytes copied.
    fn relocate_one(&self, c: &Candidate) -> Result<u64> {
        self.with_locked(c.key, c.h, CLEANER_SEQ, |_ctx, found, _free, guard| {
            let Some(f) = found.filter(|f| f.in_index && f.slot.offset() == c.off) else {
                return Ok(Locked::Done(0)); // a newer record holds the key
            };
            let header = f.header;
            if self.expired(c.off, &header)? {
                // An expired key is deleted, not copied.
                self.remove(0, c.key, &f, f.slot.fingerprint(), guard);
                return Ok(Locked::Done(0));
            }
            let total = header.total_bytes();
            let pm = &self.pool.pm;
            let src = pm.slice(c.off, 4 + header.body_len())?;
            self.cleaner_lane.raise(header.seq);
            let (at, sealed) = self.cleaner_lane.append(&self.pool, total, |at| {
                pm.write_persistent(at, src);
            })?;
            if let Some(old) = sealed {
                self.maybe_free(old, guard);
            }
            debug_assert_eq!(pm.slice(at, src.len()).ok(), Some(src));
            self.republish(0, &f, (at, total), &header, guard);
            Ok(Locked::Done(total))
        })
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
