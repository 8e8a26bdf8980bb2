//! Range writes (`Db::write_range`, `Db::append`; Redis's SETRANGE and
//! APPEND) and MixStore's delayed merge: a small write into a value on the
//! SSD tier is not a rewrite of its extent. The new record carries the same
//! extent descriptor plus one more patch (offset, bytes) on PM; readers
//! apply the patches at once. When a value's patches pass
//! `MERGE_PATCH_BYTES` or `MERGE_PATCHES`, its key is queued for the tier's
//! background thread, which writes the merged value as a new extent
//! (`tier_clean`); past `INLINE_MERGE_BYTES` (the thread fell behind) the
//! writer merges inline.
//!
//! Cost of a patch: one PM record of descriptor + tail + every pending
//! patch (so a patch's PM bytes grow with the patches before it, up to the
//! merge trigger) and no SSD I/O; a merge: one extent read (usually a cache
//! hit), one extent write and sync, one PM record.
//!
//! Invariants:
//! - A patch record names the same extent as the record it replaces, under
//!   the key's bucket lock; the extent's accounting does not change.
//! - A value on PM (or a missing key) takes the ordinary update path: the
//!   new value may cross the threshold and move to the tier.

use super::engine::{check_key, Engine};
use super::write::{Locked, RecordParts, Update};
use crate::error::{Error, Result};
use crate::layout::{RecordHeader, MAX_VALUE_BYTES, REC_FLAG_EXTERNAL, REC_FLAG_RMW};
use crate::tier::extent::{ExternalValue, PATCH_HEADER_BYTES};

/// Pending patch bytes that queue a value for merging…
pub(super) const MERGE_PATCH_BYTES: usize = 64 << 10;
/// …or this many patches.
pub(super) const MERGE_PATCHES: u32 = 32;
/// Pending patch bytes past which the writer merges itself.
const INLINE_MERGE_BYTES: usize = 1 << 20;

/// What the locked part of a patch found.
enum Patched {
    Done(u64),
    /// The value does not start with the expected head (the server's type
    /// tag): nothing written.
    WrongHead,
    /// The key's value is not on the tier (now): take the update path.
    NotExternal,
}

/// Where a range write goes: at a byte offset, or at the value's end.
#[derive(Clone, Copy)]
pub(super) enum At {
    Offset(u64),
    End,
}

impl Engine {
    /// Writes `bytes` at `at` of the value of `key` (zero-filling any gap),
    /// provided the value starts with `head`; a missing key starts as
    /// `head`. Returns the new length, or `None` (nothing written) when the
    /// value does not start with `head`.
    pub(super) fn range_write(
        &self,
        key: &[u8],
        head: &[u8],
        at: At,
        bytes: &[u8],
    ) -> Result<Option<u64>> {
        check_key(key)?;
        if let At::Offset(o) = at {
            let end = o.saturating_add(bytes.len() as u64);
            if end > MAX_VALUE_BYTES as u64 {
                return Err(Error::ValueTooLarge {
                    len: end.min(usize::MAX as u64) as usize,
                    max: MAX_VALUE_BYTES,
                });
            }
        }
        match self.patch_external(key, head, at, bytes)? {
            Patched::Done(len) => return Ok(Some(len)),
            Patched::WrongHead => return Ok(None),
            Patched::NotExternal => {}
        }
        self.update(key, |old| {
            let mut v = old.map_or_else(|| head.to_vec(), <[u8]>::to_vec);
            if !v.starts_with(head) {
                return (Update::Keep, None);
            }
            let at = match at {
                At::Offset(o) => o as usize,
                At::End => v.len(),
            };
            if at + bytes.len() > MAX_VALUE_BYTES {
                return (Update::Keep, Some(Err(at + bytes.len())));
            }
            splice(&mut v, at, bytes);
            let len = v.len() as u64;
            (Update::Put(v), Some(Ok(len)))
        })?
        .transpose()
        .map_err(|len| Error::ValueTooLarge {
            len,
            max: MAX_VALUE_BYTES,
        })
    }

    /// The patch path: under the key's lock, if its value is on the tier,
    /// write a record with one more patch at `at` (`None`: at the value's
    /// end), or the merged value when the patches have grown too large.
    fn patch_external(&self, key: &[u8], head: &[u8], at: At, bytes: &[u8]) -> Result<Patched> {
        if self.tier().is_none() {
            return Ok(Patched::NotExternal);
        }
        let h = self.hash(key);
        let (lane_index, lane) = self.lane();
        let seq = lane.next_seq(&self.pool);
        self.with_locked(key, h, seq, |_ctx, found, _free, guard| {
            let Some(f) = found.filter(|f| f.in_index) else {
                return Ok(Locked::Done(Patched::NotExternal));
            };
            let off = f.slot.offset();
            if f.header.flags & REC_FLAG_EXTERNAL == 0 || self.expired(off, &f.header)? {
                return Ok(Locked::Done(Patched::NotExternal));
            }
            let field = self.record_field(off, &f.header)?;
            let ev = ExternalValue::decode(field).map_err(|d| Error::corruption(off, d))?;
            if !head.is_empty() {
                let extent = self.tier_extent(off, &ev.extent)?;
                let seen = ev
                    .head(&extent, head.len())
                    .map_err(|d| Error::corruption(off, d))?;
                if seen != head {
                    return Ok(Locked::Done(Patched::WrongHead));
                }
            }
            let at = match at {
                At::Offset(o) => o as u32,
                At::End => ev.value_len,
            };
            if at as u64 + bytes.len() as u64 > MAX_VALUE_BYTES as u64 {
                return Err(Error::ValueTooLarge {
                    len: at as usize + bytes.len(),
                    max: MAX_VALUE_BYTES,
                });
            }
            let pending = ev.patch_bytes() + PATCH_HEADER_BYTES + bytes.len();
            let deadline = self.record_deadline(off, &f.header)?;
            let (stored, merged) = if pending > INLINE_MERGE_BYTES {
                let mut v = self.assemble_external(off, field)?;
                splice(&mut v, at as usize, bytes);
                let s = self.stored_value(&v)?;
                (s.field.into_owned(), s.written)
            } else {
                (ev.with_patch(at, bytes), None)
            };
            let new_len = ev.value_len.max(at + bytes.len() as u32) as u64;
            let flags = REC_FLAG_RMW | REC_FLAG_EXTERNAL;
            let rec = RecordParts::new(key, &stored, flags, seq, deadline);
            let placed = self.write_record(lane, &rec, guard)?;
            self.republish(
                lane_index,
                &f,
                placed,
                &RecordHeader::decode(&rec.header),
                guard,
            );
            drop(merged); // counted live by `replaced`: no longer in flight
            if pending >= MERGE_PATCH_BYTES || ev.patch_count + 1 >= MERGE_PATCHES {
                self.queue_merge(key);
            }
            Ok(Locked::Done(Patched::Done(new_len)))
        })
    }
}

/// Writes `bytes` at `at` of `v`, zero-filling a gap.
fn splice(v: &mut Vec<u8>, at: usize, bytes: &[u8]) {
    if v.len() < at + bytes.len() {
        v.resize(at + bytes.len(), 0);
    }
    v[at..at + bytes.len()].copy_from_slice(bytes);
}
