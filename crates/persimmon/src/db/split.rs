//! Index segment splits (CCEH style): a segment where a key's buckets have
//! no free slot is split into two of depth + 1; the high half's entries move to
//! a new segment, the low half stays, and the directory is swapped whole.
//!
//! Invariants:
//! - A split holds every lock of the segment's buckets (`lock_all`), so no
//!   writer runs in it; readers never wait and re-check the directory after
//!   a lookup, so a key moved meanwhile is looked up again.
//! - Splits are serialised (`split_mutex`); one whose segment was split
//!   already returns at once.
//! - PM: the new segment's buckets are durable before its header names it;
//!   the old segment's copies become stale by the new header alone (a
//!   recovery routes the high half to the new segment).
//! - With the PM point index a split waits for the tally after open (it
//!   moves slots the tally has not passed yet).

use std::sync::atomic::Ordering;
use std::sync::Arc;

use super::engine::{Engine, SPLIT_SEQ};
use super::placement::HighEntry;
use crate::error::{Error, Result};
use crate::index::{self, Directory, Index, SegRef};
use crate::layout::Slot;

impl Engine {
    /// Splits index segment `seg` into two of depth + 1 (CCEH style).
    pub(super) fn split(&self, seg: SegRef) -> Result<()> {
        loop {
            match self.split_once(seg) {
                Err(e) if self.relievable(&e) => self.reclaim_pending()?,
                other => return other,
            }
        }
    }

    pub(super) fn split_once(&self, seg: SegRef) -> Result<()> {
        if self.point_index.needs_tally() {
            // (The DRAM index has no tally; its rebuild splits as it goes.)
            self.wait_tally();
        }
        let _serial = self.split_mutex.lock();
        let dir = self.index.dir.load_full();
        if !dir.entries.contains(&seg) {
            return Ok(()); // someone split it already
        }
        if seg.depth >= index::MAX_DEPTH {
            return Err(Error::IndexFull {
                detail: format!(
                    "index segment at depth {} (the maximum) has no free slot in a key's buckets",
                    seg.depth
                ),
            });
        }
        let pm = self.ipm();
        let held = self
            .index
            .locks
            .lock_all(pm, &[seg.offset], self.index.buckets, SPLIT_SEQ);
        let result = self.split_locked(&dir, seg);
        self.index.locks.unlock_all(pm, held);
        result
    }

    pub(super) fn split_locked(&self, dir: &Directory, seg: SegRef) -> Result<()> {
        let depth = seg.depth + 1;
        let high_prefix = (seg.prefix << 1) | 1;
        let high = self.high_half(seg, depth);
        let new_off = self
            .point_index
            .add_split_segment(&self.pool, &high, depth, high_prefix)?;
        let low = SegRef {
            offset: seg.offset,
            depth,
            prefix: seg.prefix << 1,
        };
        let high = SegRef {
            offset: new_off,
            depth,
            prefix: high_prefix,
        };
        self.index
            .dir
            .store(Arc::new(dir.with_split(seg, low, high)));
        self.splits.fetch_add(1, Ordering::Relaxed);
        Ok(())
    }

    /// The entries of `seg` whose fingerprint has the high bit at `depth`:
    /// (bucket, slot within it, slot word).
    fn high_half(&self, seg: SegRef, depth: u8) -> Vec<HighEntry> {
        let pm = self.ipm();
        let mut out = Vec::new();
        for b in 0..self.index.buckets {
            for (i, addr) in self.index.slots(seg.bucket_offset(b)).enumerate() {
                let s = Slot(pm.load_u64(addr));
                if Index::is_live_entry(&seg, s)
                    && (s.fingerprint() >> (16 - depth as u32)) & 1 == 1
                {
                    out.push((b, i, addr));
                }
            }
        }
        out
    }
}
