//! Where a value lives, as the engine sees it: wholly in its record (the
//! default), or, on a pool with an SSD tier, as an extent on SSD that the
//! record names (`REC_FLAG_EXTERNAL`; MixStore's split of large aligned
//! data to SSD, small and unaligned data on PM).
//!
//! Write: a value at or above the tier's threshold has its aligned prefix
//! written as an extent and made durable (group commit) *before* the
//! record naming it is appended; the record holds the descriptor and the
//! tail. Read: the record's field is decoded, the extent read through the
//! ACS cache (verified), the tail appended and pending patches applied.
//!
//! Invariants:
//! - An extent is durable before any record names it; a write that fails
//!   or is eliminated after its extent was written leaves dead bytes in a
//!   data file, never a record without its extent.
//! - Extent live bytes follow the key-level accounting (`account`): a key
//!   that goes from record `old` to record `new` (once the tally passed its
//!   bucket) counts `new`'s extent live and `old`'s dead, nothing when both
//!   name the same extent (a move by the cleaner, a patch). The tally and
//!   the DRAM rebuild count the extents of the records they count. So a
//!   file's live bytes are the extent bytes live records name.
//! - Data files are deleted only after the tally, through the epoch, when
//!   `Tier::delete_file` finds them still reclaimable, and only once every
//!   fence made before is durable (`defer_delete`: in the disk domain the
//!   records that stopped naming the file may still be in the log's
//!   unsynced tail).

use std::borrow::Cow;
use std::sync::atomic::Ordering;
use std::sync::Weak;

use crossbeam_epoch::Guard;

use super::engine::Engine;
use crate::error::{Error, Result};
use crate::layout::REC_FLAG_EXTERNAL;
use crate::pmem::wal::Durable;
use crate::tier::extent::{self, Extent, ExternalValue};
use crate::tier::{Tier, Written, EXTENT_ALIGN};

/// A value as a record will hold it: the bytes of the record's value field
/// and its flags, and the extent written for it (in flight until dropped,
/// which the caller does after publishing).
pub(super) struct StoredValue<'a> {
    pub(super) field: Cow<'a, [u8]>,
    pub(super) flags: u32,
    pub(super) written: Option<Written>,
}

impl<'a> StoredValue<'a> {
    /// `value` wholly in its record.
    fn in_record(value: &'a [u8]) -> StoredValue<'a> {
        StoredValue {
            field: Cow::Borrowed(value),
            flags: 0,
            written: None,
        }
    }
}

impl Engine {
    /// The tier, when the pool has one.
    #[inline]
    pub(super) fn tier(&self) -> Option<&Tier> {
        self.tier.as_ref()
    }

    /// How `value` will be stored: in the record, or (large, on a tiered
    /// pool) as a durable extent plus the descriptor and tail in the record.
    pub(super) fn stored_value<'a>(&self, value: &'a [u8]) -> Result<StoredValue<'a>> {
        if self
            .tier()
            .is_none_or(|t| (value.len() as u64) < t.threshold)
        {
            return Ok(StoredValue::in_record(value));
        }
        Ok(self
            .stored_values(&[value])?
            .pop()
            .expect("one value in, one out"))
    }

    /// [`stored_value`](Self::stored_value) for several values at once:
    /// their extents are written first and synced together.
    pub(super) fn stored_values<'a>(&self, values: &[&'a [u8]]) -> Result<Vec<StoredValue<'a>>> {
        let mut out = Vec::with_capacity(values.len());
        for &value in values {
            let Some(tier) = self.tier().filter(|t| value.len() as u64 >= t.threshold) else {
                out.push(StoredValue::in_record(value));
                continue;
            };
            let aligned = value.len() - value.len() % EXTENT_ALIGN as usize;
            let w = tier.write_unsynced(&value[..aligned])?;
            let field = extent::encode(&w.extent, value.len() as u32, &value[aligned..], 0);
            out.push(StoredValue {
                field: Cow::Owned(field),
                flags: REC_FLAG_EXTERNAL,
                written: Some(w),
            });
        }
        if let Some(tier) = self.tier() {
            tier.make_durable(out.iter().filter_map(|s| s.written.as_ref()))?;
            for (s, value) in out.iter().zip(values) {
                if let Some(w) = &s.written {
                    tier.cache_written(&w.extent, &value[..w.extent.bytes as usize]);
                }
            }
        }
        Ok(out)
    }

    /// The whole value of an external record whose field is `field`.
    pub(super) fn assemble_external(&self, off: u64, field: &[u8]) -> Result<Vec<u8>> {
        let ev = ExternalValue::decode(field).map_err(|d| Error::corruption(off, d))?;
        let bytes = self.tier_extent(off, &ev.extent)?;
        ev.assemble(&bytes).map_err(|d| Error::corruption(off, d))
    }

    /// The verified bytes of extent `e`, which the record at `off` names
    /// (through the cache).
    pub(super) fn tier_extent(&self, off: u64, e: &Extent) -> Result<crate::tier::ExtentBytes> {
        match self.tier() {
            Some(t) => t.read_extent(e),
            None => Err(Error::corruption(
                off,
                "a record names an SSD extent but the pool has no tier",
            )),
        }
    }

    /// The extent the record at `off` names, if it is external.
    pub(super) fn extent_at(&self, off: u64) -> Option<Extent> {
        let h = self.record_header(off).ok()?;
        if h.flags & REC_FLAG_EXTERNAL == 0 {
            return None;
        }
        let field = self.record_field(off, &h).ok()?;
        ExternalValue::decode(field).ok().map(|ev| ev.extent)
    }

    /// Extent accounting for a key that went from record `old` to `new`
    /// (offsets; the bucket is tallied).
    pub(super) fn account_extents(&self, new: Option<u64>, old: Option<u64>, guard: &Guard) {
        let Some(tier) = self.tier() else { return };
        let new = new.and_then(|o| self.extent_at(o));
        let old = old.and_then(|o| self.extent_at(o));
        if new.map(|e| e.key()) == old.map(|e| e.key()) {
            return;
        }
        if let Some(e) = new {
            tier.count(&e, true);
        }
        if let Some(file) = old.and_then(|e| tier.count(&e, false)) {
            self.delete_file_later(file.no, guard);
        }
    }

    /// The tally (or DRAM rebuild) counts the extent of the live record at
    /// `off`.
    pub(super) fn count_extent_live(&self, off: u64) {
        if let (Some(tier), Some(e)) = (self.tier(), self.extent_at(off)) {
            tier.count(&e, true);
        }
    }

    /// Deletes data file `no` once every reader pinned now has moved on
    /// and every fence made so far is durable.
    pub(super) fn delete_file_later(&self, no: u32, guard: &Guard) {
        if !self.tally_done.load(Ordering::Acquire) || self.reclaim_blocked.load(Ordering::Acquire)
        {
            return;
        }
        let fenced = Durable::now(self.pool.pm.wal());
        defer_delete(self.me.clone(), no, fenced, guard);
    }

    /// After the tally: deletes the data files nothing names (left by a
    /// crash, or emptied while the tally ran).
    pub(super) fn sweep_data_files(&self) {
        let Some(tier) = self.tier() else { return };
        let guard = crossbeam_epoch::pin();
        for f in tier.reclaimable() {
            self.delete_file_later(f.no, &guard);
        }
    }
}

/// Through the epoch, deletes data file `no` once `fenced` is durable:
/// in the disk domain the records that stopped naming the file may still
/// be in the log's unsynced tail. Until then it goes round the epoch again
/// (the log syncs its tail on its own soon); it never waits, since
/// deferred work runs on whatever thread collects garbage, which may be
/// one the log's syncer waits for.
fn defer_delete(me: Weak<Engine>, no: u32, fenced: Durable, guard: &Guard) {
    guard.defer(move || {
        let Some(engine) = me.upgrade() else { return };
        if engine.stop.load(Ordering::Acquire) {
            // The Db is closing and waits for this reference to go; the
            // next open's tally deletes the file (nothing names it).
            return;
        }
        if !fenced.is_done() {
            defer_delete(me, no, fenced, &crossbeam_epoch::pin());
            return;
        }
        if let Some(t) = engine.tier() {
            t.delete_file(no);
        }
    });
    guard.flush();
}
