//! Point reads and record decoding.
//!
//! Invariants:
//! - A read takes no lock (with the two-phase write) and acts on no slot or
//!   record word a crash could still undo: one seen with persist=0 is
//!   flushed, fenced and marked persisted first (`help_persist`).
//! - A read re-checks the directory after its lookup: a split may have
//!   moved the key to a new segment meanwhile, and then it looks again.
//! - With the DRAM point index before its rebuild is complete, a miss is no
//!   answer: the read is repeated under the key's bucket lock, where the
//!   ordered index is asked too (`get_locked`), so no read goes back in time.
//! - An offset read from a slot is untrusted: the record header is checked
//!   against the pool's bounds and limits before its bytes are used.

use std::borrow::Cow;

use crossbeam_epoch as epoch;

use super::engine::{check_key, Engine, READ_SEQ};
use super::write::Locked;
use crate::error::{Error, Result};
use crate::index::locks::{BucketLocks, Held};
use crate::index::{self, SegRef};
use crate::layout::{self, RecordHeader, Slot, REC_FLAG_EXTERNAL};
use crate::pmem::{self, PmemFile};

/// Record lines prefetched per candidate at most.
const RECORD_LINES: u64 = 3;

/// Releases a bucket read lock when dropped (locked reads only).
pub(super) struct ReadLock<'a> {
    pub(super) locks: &'a BucketLocks,
    pub(super) pm: &'a pmem::PmemFile,
    pub(super) held: Held,
}

impl Drop for ReadLock<'_> {
    fn drop(&mut self) {
        self.locks.read_unlock(self.pm, self.held);
    }
}

/// What a reader may do with a record it found.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Visible {
    Yes,
    /// Expired, or a batch's tombstone: the key is absent.
    Absent,
    /// A record of a batch still publishing: wait for it, then read again.
    AfterBatch,
}

impl Engine {
    /// Flushes a slot word (in `pm`) seen with persist=0 and marks it
    /// persisted, so the caller may act on it.
    #[inline]
    pub(super) fn help_persist(&self, pm: &PmemFile, addr: u64, value: u64) {
        pm.flush(addr, 8);
        pm.fence();
        let _ = pm.cas_u64(addr, value, value | Slot::PERSIST_BIT);
    }

    /// Decodes and sanity-checks the record header at `offset` (an offset
    /// read from a slot, so untrusted): [`Pool::record_header`].
    #[inline]
    pub(super) fn record_header(&self, offset: u64) -> Result<RecordHeader> {
        self.pool.record_header(offset)
    }

    #[inline]
    pub(super) fn record_key(&self, offset: u64, h: &RecordHeader) -> Result<&[u8]> {
        self.pool.pm.slice(offset + h.key_at(), h.key_len as usize)
    }

    /// The record's value bytes as stored (for an external value: its
    /// descriptor, tail and patches).
    #[inline]
    pub(super) fn record_field(&self, offset: u64, h: &RecordHeader) -> Result<&[u8]> {
        self.pool
            .pm
            .slice(offset + h.value_at(), h.value_len as usize)
    }

    /// The value of the record at `offset`: its bytes in place, or, for a
    /// value on the SSD tier, assembled from its extent, tail and patches.
    #[inline]
    pub(super) fn record_value(&self, offset: u64, h: &RecordHeader) -> Result<Cow<'_, [u8]>> {
        let field = self.record_field(offset, h)?;
        if self.verify_reads {
            self.verify_record(offset, h)?;
        }
        if h.flags & REC_FLAG_EXTERNAL != 0 {
            return self.assemble_external(offset, field).map(Cow::Owned);
        }
        Ok(Cow::Borrowed(field))
    }

    #[inline]
    pub(super) fn verify_record(&self, offset: u64, h: &RecordHeader) -> Result<()> {
        self.pool.verify_record(offset, h)
    }

    /// The probe of `h` in `seg`, the one place that walks a key's probe
    /// window (the buckets of [`Index::probe`](crate::index::Index::probe),
    /// in order): calls `f(slot address, slot word)` for every slot whose
    /// fingerprint is `h`'s (delete markers included) until `f` returns
    /// `Some`. Reads only; `f` decides what a candidate means.
    #[inline(always)]
    pub(super) fn probe_candidates<T>(
        &self,
        pm: &PmemFile,
        seg: &SegRef,
        h: u64,
        mut f: impl FnMut(u64, u64) -> Result<Option<T>>,
    ) -> Result<Option<T>> {
        let fp = index::fingerprint(h);
        for bucket in self.index.probe(seg, h) {
            for addr in self.index.slots(bucket) {
                let v = pm.load_u64(addr);
                let s = Slot(v);
                if s.is_empty() || s.fingerprint() != fp {
                    continue;
                }
                if let Some(t) = f(addr, v)? {
                    return Ok(Some(t));
                }
            }
        }
        Ok(None)
    }

    /// Starts loading the records that `h`'s buckets in `seg` name under
    /// its fingerprint: the lines holding a record's header, a key of
    /// `key_len` bytes and the value's start, at most `RECORD_LINES`. A
    /// hint only: a stale or damaged offset costs a useless prefetch.
    pub(super) fn prefetch_records(&self, seg: &SegRef, h: u64, key_len: usize) {
        let span = (layout::RECORD_HEADER_BYTES + key_len) as u64 + 64;
        let _ = self.probe_candidates(self.ipm(), seg, h, |_, v| {
            let s = Slot(v);
            if !s.is_marker() {
                let first = s.offset() & !63;
                let end = (s.offset() + span).min(first + RECORD_LINES * 64);
                for line in (first..end).step_by(64) {
                    self.pool.pm.prefetch(line);
                }
            }
            Ok(None::<()>)
        });
    }

    /// Lock-free lookup in `seg`: the record of `key`, helping persist its
    /// slot (or a delete marker in the way) when needed.
    pub(super) fn find_lockfree(
        &self,
        seg: &SegRef,
        h: u64,
        key: &[u8],
    ) -> Result<Option<(u64, RecordHeader)>> {
        let pm = self.ipm();
        self.probe_candidates(pm, seg, h, |addr, v| {
            let s = Slot(v);
            if s.is_marker() {
                if !s.persisted() {
                    self.help_persist(pm, addr, v);
                }
                return Ok(None);
            }
            let off = s.offset();
            let hdr = self.record_header(off)?;
            if self.record_key(off, &hdr)? == key {
                if !s.persisted() {
                    self.help_persist(pm, addr, v);
                }
                return Ok(Some((off, hdr)));
            }
            if self.verify_reads {
                // A damaged key must not pass for "some other key": with
                // verification on, a fingerprint match gets its CRC checked.
                self.verify_record(off, &hdr)?;
            }
            Ok(None)
        })
    }

    pub(super) fn get_with<R>(&self, key: &[u8], f: impl FnOnce(&[u8]) -> R) -> Result<Option<R>> {
        self.read_record(key, |off, h| Ok(f(&self.record_value(off, h)?)))
    }

    /// The point read: calls `f` with the key's record (offset, header)
    /// unless the key is absent or expired (`f` reads the value if it needs
    /// it). A record of a batch that is still publishing is not an answer:
    /// the read waits for the batch and looks again.
    pub(super) fn read_record<R>(
        &self,
        key: &[u8],
        f: impl FnOnce(u64, &RecordHeader) -> Result<R>,
    ) -> Result<Option<R>> {
        check_key(key)?;
        self.read_record_hashed(key, self.hash(key), f)
    }

    /// [`Engine::read_record`] of a key already checked, whose hash is `h`
    /// (batched reads hash their keys ahead).
    #[inline]
    pub(super) fn read_record_hashed<R>(
        &self,
        key: &[u8],
        h: u64,
        f: impl FnOnce(u64, &RecordHeader) -> Result<R>,
    ) -> Result<Option<R>> {
        loop {
            let _guard = epoch::pin();
            // Read before the index: once it is set, the DRAM index holds
            // every key (a miss read after it would not be an answer).
            let filled = self.point_index.is_complete();
            let seg = self.index.dir.load().lookup(h);
            let _read = (!self.two_phase).then(|| {
                let pm = self.ipm();
                let bucket = self.index.probe(&seg, h)[0];
                ReadLock {
                    locks: &self.index.locks,
                    pm,
                    held: self.index.locks.read_lock(pm, bucket),
                }
            });
            let found = self.find_lockfree(&seg, h, key)?;
            // A split may have moved the key to a new segment after we chose
            // this one (and writers may then reuse the old copy's slot).
            if self.index.dir.load().lookup(h) != seg {
                continue;
            }
            let Some((off, hdr)) = found else {
                return match filled {
                    true => Ok(None),
                    false => self.get_locked(key, h, f),
                };
            };
            return match self.visibility(off, &hdr)? {
                Visible::Yes => Ok(Some(f(off, &hdr)?)),
                Visible::Absent => Ok(None),
                Visible::AfterBatch => {
                    self.batches.wait_published(hdr.seq);
                    continue;
                }
            };
        }
    }

    /// What a reader that found the record at `off` may answer. A record
    /// with no flags (the common case) is visible at once.
    #[inline]
    pub(super) fn visibility(&self, off: u64, h: &RecordHeader) -> Result<Visible> {
        if h.flags & !layout::REC_FLAG_RMW == 0 {
            return Ok(Visible::Yes);
        }
        if h.flags & layout::REC_FLAG_BATCH != 0 && self.batches.is_publishing(h.seq) {
            // The rest of its batch may not be visible yet.
            return Ok(Visible::AfterBatch);
        }
        if h.flags & layout::REC_FLAG_TOMBSTONE != 0 || self.expired(off, h)? {
            return Ok(Visible::Absent);
        }
        Ok(Visible::Yes)
    }

    /// DRAM point index before its rebuild is done, after a miss: the read
    /// again under the key's bucket lock, which looks at the key's node too.
    /// The lock matters: a writer stores the node's record word before the
    /// DRAM slot, so without it a reader could return a value that a later
    /// reader, finding the index complete but the slot not yet stored,
    /// would not see.
    pub(super) fn get_locked<R>(
        &self,
        key: &[u8],
        h: u64,
        f: impl FnOnce(u64, &RecordHeader) -> Result<R>,
    ) -> Result<Option<R>> {
        let mut f = Some(f);
        self.with_locked(key, h, READ_SEQ, |_, found, _, _| {
            let Some(found) = found else {
                return Ok(Locked::Done(None));
            };
            let (off, hdr) = (found.slot.offset(), &found.header);
            // Under the lock no batch of this key is publishing.
            if self.visibility(off, hdr)? != Visible::Yes {
                return Ok(Locked::Done(None));
            }
            let f = f.take().expect("the lookup body runs to completion once");
            Ok(Locked::Done(Some(f(off, hdr)?)))
        })
    }

    /// DRAM point index before its rebuild is done: the record of `key`
    /// (fingerprint `fp`) through its ordered-index record word (`node`
    /// when the caller knows it). Returns the word's address, the word
    /// (marked persisted) and the record's header. The caller is pinned.
    pub(super) fn find_in_ordered(
        &self,
        key: &[u8],
        fp: u16,
        node: Option<u64>,
    ) -> Result<Option<(u64, Slot, RecordHeader)>> {
        let Some(o) = &self.ordered else {
            return Ok(None);
        };
        // A leaf entry remembered by the caller may have moved (a split)
        // and been reused: it counts only if it still names this key.
        let still_names =
            |n: u64| o.leaves().is_none() || o.key_of(&self.pool, n).is_ok_and(|k| k == key);
        let node = match node.filter(|&n| still_names(n)) {
            Some(n) => n,
            None => match o.find(&self.pool, key, fp)? {
                Some(n) => n,
                None => return Ok(None),
            },
        };
        let pm = &self.pool.pm;
        let v = pm.load_u64(node);
        let s = Slot(v);
        if s.is_empty() {
            return Ok(None);
        }
        if !s.persisted() {
            // The same two-phase word as a slot: never act on a value a
            // crash could still undo.
            self.help_persist(pm, node, v);
        }
        if s.is_marker() {
            return Ok(None);
        }
        let hdr = self.record_header(s.offset())?;
        if self.record_key(s.offset(), &hdr)? != key || s.fingerprint() != fp {
            return Err(Error::corruption(
                node,
                "an ordered-index node's record word names a record of another key",
            ));
        }
        Ok(Some((node, s.with_persist(), hdr)))
    }
}
