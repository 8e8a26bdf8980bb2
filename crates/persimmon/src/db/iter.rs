//! `Db::iter`: every key-value pair, in hash order, bucket by bucket.
//!
//! Invariants: the iterator holds no lock between calls and pins an epoch
//! only while it reads one bucket; it walks hash space by the 16-bit prefix
//! of the next segment, so a split while it runs can return a key twice but
//! never skips one present throughout; every value it returns was durable
//! when read (persist=0 slots are helped first). With the DRAM point index
//! it starts only once the index is complete.

use std::collections::VecDeque;

use crossbeam_epoch as epoch;

use super::read::ReadLock;
use super::Engine;
use crate::error::Result;
use crate::index::Index;
use crate::layout::Slot;

/// Iterator returned by [`Db::iter`].
pub struct Iter<'a> {
    engine: &'a Engine,
    /// Position in hash space: the top 16 bits of the next hashes to visit.
    prefix16: u32,
    bucket: u64,
    buffer: VecDeque<Result<(Vec<u8>, Vec<u8>)>>,
    done: bool,
}

impl<'a> Iter<'a> {
    pub(super) fn new(engine: &'a Engine) -> Iter<'a> {
        if !engine.point_index.is_complete() {
            engine.wait_tally();
        }
        Iter {
            engine,
            prefix16: 0,
            bucket: 0,
            buffer: VecDeque::new(),
            done: false,
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
        for addr in e.index.slots(seg.bucket_offset(self.bucket)) {
            let v = pm.load_u64(addr);
            let s = Slot(v);
            if !Index::is_live_entry(&seg, s) {
                continue;
            }
            if !s.persisted() {
                e.help_persist(pm, addr, v);
            }
            let item = e.record_header(s.offset()).and_then(|h| {
                Ok((
                    e.record_key(s.offset(), &h)?.to_vec(),
                    e.record_value(s.offset(), &h)?.to_vec(),
                ))
            });
            self.buffer.push_back(item);
        }
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

impl Iterator for Iter<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        loop {
            if let Some(item) = self.buffer.pop_front() {
                return Some(item);
            }
            if self.done {
                return None;
            }
            self.refill();
        }
    }
}
