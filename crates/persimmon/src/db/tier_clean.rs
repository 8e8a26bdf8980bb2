//! The SSD tier's background work: merging patched values (MixStore's
//! delayed merge) and cleaning data files, so an overwrite-heavy workload
//! runs in bounded SSD space.
//!
//! Data files are log-structured: an overwrite or delete leaves its old
//! extent dead where it is, and a file whose extents are all dead is
//! deleted. The cleaner empties mostly-dead files: it picks sealed files at
//! most `VICTIM_LIVE_PERCENT` live, walks the index for the keys whose
//! extents lie in them, and rewrites each such value as a new extent in
//! the active file. (The index walk costs O(keys) per pass; a pass takes
//! several victims at once and starts only when dead bytes in sealed files
//! exceed `START_DEAD_PERCENT` of their capacity and `START_DEAD_FILES`
//! files' worth — so SSD space stays within about 4/3 of the live data plus
//! a few files, and a workload that overwrites little pays no cleaning.)
//!
//! Invariants:
//! - A rewrite is optimistic: the value is read and its new extent written
//!   and synced without any lock; then, under the key's bucket lock, the
//!   new record (same key, flags, sequence number and deadline; new field)
//!   is published only if the key still names the record that was read.
//!   Otherwise the new extent is dead bytes. Foreground writers never wait
//!   for SSD I/O of the cleaner.
//! - The rewrite appends on the cleaner's lane, as the PM cleaner does
//!   (its records keep their original sequence numbers).

use std::collections::HashSet;
use std::sync::atomic::Ordering;
use std::time::Duration;

use super::engine::{Engine, CLEANER_SEQ};
use super::iter::Iter;
use super::write::{Found, Locked, RecordParts};
use crate::error::{Error, Result};
use crate::layout::{RecordHeader, REC_FLAG_EXTERNAL};
use crate::tier::extent::ExternalValue;
use crate::tier::files::FILE_BYTES;

/// A sealed file at most this share live is a cleaning victim.
const VICTIM_LIVE_PERCENT: u64 = 50;
/// Clean when sealed files hold more than this many files' worth of dead
/// bytes (or any, when asked to clean now).
const START_DEAD_FILES: u64 = 2;
/// …and more than this share of the sealed files' capacity.
const START_DEAD_PERCENT: u64 = 25;
/// Most victims one pass takes (one index walk).
const VICTIMS_PER_PASS: usize = 16;

impl Engine {
    /// Queues `key` for the background merge of its patches.
    pub(super) fn queue_merge(&self, key: &[u8]) {
        let mut q = self.merges.lock();
        if q.queued.insert(key.to_vec()) {
            q.order.push_back(key.to_vec());
        }
    }

    fn next_merge(&self) -> Option<Vec<u8>> {
        let mut q = self.merges.lock();
        let key = q.order.pop_front()?;
        q.queued.remove(&key);
        Some(key)
    }

    /// Merges every queued key's patches now; returns how many it merged.
    pub(super) fn merge_queued(&self) -> Result<u64> {
        let mut merged = 0;
        while let Some(key) = self.next_merge() {
            if self.rewrite_external(&key, |ev| ev.patch_count > 0)? {
                merged += 1;
                self.tier_merges.fetch_add(1, Ordering::Relaxed);
            }
        }
        Ok(merged)
    }

    /// Rewrites the value of `key` as a new extent if it is on the tier and
    /// `want` says so. Returns whether it did.
    pub(super) fn rewrite_external(
        &self,
        key: &[u8],
        want: impl Fn(&ExternalValue) -> bool,
    ) -> Result<bool> {
        let seen = self.read_record(key, |off, h| {
            if h.flags & REC_FLAG_EXTERNAL == 0 {
                return Ok(None);
            }
            let field = self.record_field(off, h)?;
            let ev = ExternalValue::decode(field).map_err(|d| Error::corruption(off, d))?;
            if !want(&ev) {
                return Ok(None);
            }
            let value = self.assemble_external(off, field)?;
            Ok(Some((off, *h, self.record_deadline(off, h)?, value)))
        })?;
        let Some(Some((off, header, deadline, value))) = seen else {
            return Ok(false);
        };
        let stored = self.stored_value(&value)?;
        let flags = (header.flags & !REC_FLAG_EXTERNAL) | stored.flags;
        let rec = RecordParts::new(key, &stored.field, flags, header.seq, deadline);
        let h = self.hash(key);
        self.with_locked(key, h, CLEANER_SEQ, |_ctx, found, _free, guard| {
            // The very record read: same offset *and* same header (offsets
            // are reused once a segment is freed; the header's CRC covers
            // the sequence number, deadline, key and value field).
            let unchanged = |f: &Found| f.in_index && f.slot.offset() == off && f.header == header;
            let Some(f) = found.filter(unchanged) else {
                return Ok(Locked::Done(false)); // written meanwhile: keep theirs
            };
            self.cleaner_lane.raise(header.seq);
            let placed = self.write_record(&self.cleaner_lane, &rec, guard)?;
            self.republish(0, &f, placed, &RecordHeader::decode(&rec.header), guard);
            Ok(Locked::Done(true))
        })
    }

    /// One cleaning pass over the data files at most `max_live_percent`
    /// live; returns the extents moved.
    pub(super) fn clean_data_files(
        &self,
        max_live_percent: u64,
        min_dead: u64,
        min_dead_percent: u64,
    ) -> Result<u64> {
        let Some(tier) = self.tier() else {
            return Ok(0);
        };
        let files = tier.victims();
        let dead: u64 = files
            .iter()
            .map(|&(_, live, cap)| cap.saturating_sub(live))
            .sum();
        let capacity: u64 = files.iter().map(|&(_, _, cap)| cap).sum();
        if dead <= min_dead || dead * 100 <= capacity * min_dead_percent {
            return Ok(0);
        }
        // A victim a pass could not empty (a damaged value, an expired key
        // not yet deleted) is not taken again while its live bytes stay.
        let stuck = self.merges.lock().stuck.clone();
        let victims: HashSet<u32> = files
            .iter()
            .filter(|&&(_, live, cap)| live * 100 <= cap * max_live_percent)
            .filter(|&&(no, live, _)| stuck.get(&no) != Some(&live))
            .take(VICTIMS_PER_PASS)
            .map(|&(no, _, _)| no)
            .collect();
        if victims.is_empty() {
            return Ok(0);
        }
        let mut moved = 0;
        let mut failed = 0u64;
        for item in Iter::picking(self, |e, off, h| e.external_key(off, h)) {
            if self.stop.load(Ordering::Acquire) {
                break;
            }
            // One bad value must not stop the cleaning of the rest.
            let rewritten = item.and_then(|(key, _)| {
                self.rewrite_external(&key, |ev| victims.contains(&ev.extent.file))
            });
            match rewritten {
                Ok(true) => moved += 1,
                Ok(false) => {}
                Err(_) => failed += 1,
            }
        }
        self.tier_moved.fetch_add(moved, Ordering::Relaxed);
        let mut work = self.merges.lock();
        for no in &victims {
            match tier.file_live(*no) {
                Some(live) if live > 0 => work.stuck.insert(*no, live),
                _ => work.stuck.remove(no),
            };
        }
        drop(work);
        self.sweep_data_files();
        if failed > 0 && moved == 0 {
            return Err(Error::corruption(
                0,
                format!("{failed} values could not be moved"),
            ));
        }
        Ok(moved)
    }

    /// The key of an external record (for the cleaner's index walk).
    fn external_key(&self, off: u64, h: &RecordHeader) -> Option<Result<(Vec<u8>, Vec<u8>)>> {
        (h.flags & REC_FLAG_EXTERNAL != 0)
            .then(|| self.record_key(off, h).map(|k| (k.to_vec(), Vec::new())))
    }

    /// Merges queued values and cleans every data file with dead bytes,
    /// now, on the calling thread (tests, tools). Returns extents moved.
    pub(super) fn clean_tier_now(&self) -> Result<u64> {
        self.wait_tally();
        if let Some(t) = self.tier() {
            t.seal_active();
        }
        let merged = self.merge_queued()?;
        Ok(merged + self.clean_data_files(99, 0, 0)?)
    }

    /// The tier's background thread: runs after the rebuild until the `Db`
    /// closes.
    pub(super) fn tier_loop(&self) {
        while !self.tally_done.load(Ordering::Acquire) {
            if self.stop.load(Ordering::Acquire) {
                return;
            }
            self.idle(Duration::from_millis(20));
        }
        let min_dead = START_DEAD_FILES * FILE_BYTES;
        while !self.stop.load(Ordering::Acquire) {
            self.sweep_data_files();
            let work = self.merge_queued().and_then(|m| {
                Ok(m + self.clean_data_files(VICTIM_LIVE_PERCENT, min_dead, START_DEAD_PERCENT)?)
            });
            match work {
                Ok(0) => self.idle(Duration::from_millis(50)),
                Ok(_) => {}
                Err(_) => self.idle(Duration::from_millis(500)), // e.g. the disk is full
            }
        }
    }
}
