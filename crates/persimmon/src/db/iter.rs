//! `Db::iter`: every key-value pair, in hash order, bucket by bucket.
//!
//! Invariants: the iterator holds no lock between calls and pins an epoch
//! only while it reads one bucket; it walks hash space by the 16-bit prefix
//! of the next segment, so a split while it runs can return a key twice but
//! never skips one present throughout; every value it returns was durable
//! when read (persist=0 slots are helped first). With the DRAM point index
//! it starts only once the index is complete. Expired keys are skipped; a
//! bucket holding a record of a batch still publishing is read again once
//! the batch is whole (so no part of a batch is returned without the rest).

use std::collections::VecDeque;

use crossbeam_epoch as epoch;

use super::engine::Engine;
use super::read::{ReadLock, Visible};
use crate::error::Result;
use crate::index::Index;
use crate::layout::{RecordHeader, Slot};

/// Iterator returned by [`Db::iter`].
pub struct Iter<'a> {
    engine: &'a Engine,
    /// Position in hash space: the top 16 bits of the next hashes to visit.
    prefix16: u32,
    bucket: u64,
    buffer: VecDeque<Result<(Vec<u8>, Vec<u8>)>>,
    done: bool,
    /// What a visible record yields: (key, value) normally.
    pick: Pick,
}

/// What an iterator yields for a visible record (or skips it: `None`).
pub(super) type Pick = fn(&Engine, u64, &RecordHeader) -> Option<Result<(Vec<u8>, Vec<u8>)>>;

impl<'a> Iter<'a> {
    pub(super) fn new(engine: &'a Engine) -> Iter<'a> {
        Self::picking(engine, |e, off, h| Some(e.record_pair(off, h)))
    }

    /// An iterator that yields `pick` of each visible record.
    pub(super) fn picking(engine: &'a Engine, pick: Pick) -> Iter<'a> {
        if !engine.point_index.is_complete() {
            engine.wait_tally();
        }
        Iter {
            engine,
            prefix16: 0,
            bucket: 0,
            buffer: VecDeque::new(),
            done: false,
            pick,
        }
    }

    fn refill(&mut self) {
        let e = self.engine;
        let _guard = epoch::pin();
        let seg = e.index.dir.load().lookup((self.prefix16 as u64) << 48);
        let pm = e.ipm();
        // Locked reads: slots are stored already marked persisted and made
        // durable under the writer's lock, so read the bucket under the read
        // locks of both homes its keys can have (this bucket and the one
        // before it).
        let _read: Vec<ReadLock> = if e.two_phase {
            Vec::new()
        } else {
            let prev = if self.bucket == 0 {
                e.index.buckets - 1
            } else {
                self.bucket - 1
            };
            e.index
                .locks
                .read_lock_many(
                    pm,
                    &mut vec![seg.bucket_offset(self.bucket), seg.bucket_offset(prev)],
                )
                .into_iter()
                .map(|held| ReadLock {
                    locks: &e.index.locks,
                    pm,
                    held,
                })
                .collect()
        };
        let mut items = Vec::new();
        for addr in e.index.slots(seg.bucket_offset(self.bucket)) {
            let v = pm.load_u64(addr);
            let s = Slot(v);
            if !Index::is_live_entry(&seg, s) {
                continue;
            }
            if !s.persisted() {
                e.help_persist(pm, addr, v);
            }
            let h = match e.record_header(s.offset()) {
                Ok(h) => h,
                Err(err) => {
                    items.push(Err(err));
                    continue;
                }
            };
            match e.visibility(s.offset(), &h) {
                Ok(Visible::Yes) => items.extend((self.pick)(e, s.offset(), &h)),
                Ok(Visible::Absent) => {}
                Ok(Visible::AfterBatch) => {
                    // Not an answer until its batch is whole: read the
                    // bucket again afterwards.
                    e.batches.wait_published(h.seq);
                    return;
                }
                Err(err) => items.push(Err(err)),
            }
        }
        self.buffer.extend(items);
        self.bucket += 1;
        if self.bucket == e.index.buckets {
            self.bucket = 0;
            let next = (seg.prefix + 1) << (16 - seg.depth as u32);
            if next >= 1 << 16 {
                self.done = true;
            } else {
                self.prefix16 = next as u32;
            }
        }
    }
}

impl Engine {
    /// The key and value of the record at `off`, copied out.
    fn record_pair(&self, off: u64, h: &RecordHeader) -> Result<(Vec<u8>, Vec<u8>)> {
        Ok((
            self.record_key(off, h)?.to_vec(),
            self.record_value(off, h)?.into_owned(),
        ))
    }
}

impl Iterator for Iter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(self.engine.settle(item));
            }
            if self.done {
                return None;
            }
            self.refill();
        }
    }
}
