//! Bucket locks: the MPKV volatile lock table, or (ablation) reader-writer
//! lock words inside the persistent buckets as in the paper's Baseline.
//!
//! Invariants:
//! - A writer holds the lock of its key's *home* bucket for the whole locked
//!   part of a write; every multi-lock holder (tally pairs, splits, check)
//!   takes its locks in ascending order (table index, or bucket offset), so
//!   no cycle can form.
//! - The DRAM table word of a bucket always names the current writer's
//!   sequence number while it holds the bucket (in the persistent-lock mode it
//!   is an information board next to the real lock): waiters read it for
//!   concurrent write elimination. Bit 55 (`PUBLISHING`) is set by the holder
//!   just before its value can become visible.
//! - Persistent lock words are never flushed: they carry the pool's open
//!   generation, and a word from an earlier generation reads as unlocked, so
//!   a crash never leaves a bucket locked.

use std::sync::atomic::{AtomicU64, Ordering};

use crossbeam_utils::CachePadded;

use crate::layout::{BUCKET_BYTES, SLOTS_PER_BUCKET, SLOT_BYTES};
use crate::pmem::PmemFile;

/// Number of lock words in the volatile lock table.
pub(crate) const LOCK_WORDS: usize = 4096;
/// Flag in a lock word: the holder has started publishing its value.
/// Bit 55 is never part of a sequence number (`log::COUNTER_MASK`).
pub(crate) const PUBLISHING: u64 = 1 << 55;

/// Offset of the lock word inside a bucket in the persistent-lock layout.
pub(crate) const PM_LOCK_SLOT_OFFSET: u64 = (SLOTS_PER_BUCKET as u64 - 1) * SLOT_BYTES;
/// Persistent lock word: open-count tag in bits 40..64, writer bit 39,
/// writer-waiting bit 38 (new readers hold back), readers in bits 0..32.
const PM_TAG_SHIFT: u32 = 40;
const PM_WRITER: u64 = 1 << 39;
const PM_WAITING: u64 = 1 << 38;
const PM_READERS: u64 = 0xffff_ffff;
const PM_STATE: u64 = PM_WRITER | PM_WAITING | PM_READERS;

/// A 64-bit finaliser (from splitmix64) to spread bucket offsets over locks.
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

/// One DRAM lock: the writer's sequence number (0 when free) and, for
/// locked reads, a reader count on the same cache line.
struct Word {
    writer: AtomicU64,
    readers: AtomicU64,
}

/// The volatile lock table (DRAM only), one entry per cache line.
pub(crate) struct LockTable {
    words: Box<[CachePadded<Word>]>,
}

impl LockTable {
    fn new() -> LockTable {
        LockTable {
            words: (0..LOCK_WORDS)
                .map(|_| {
                    CachePadded::new(Word {
                        writer: AtomicU64::new(0),
                        readers: AtomicU64::new(0),
                    })
                })
                .collect(),
        }
    }

    /// Lock word for the bucket at pool offset `bucket_offset`.
    #[inline]
    pub fn index_of(bucket_offset: u64) -> usize {
        (mix64(bucket_offset) >> (64 - 12)) as usize
    }
}

/// A held lock, to pass back to `unlock`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Held {
    pub table_index: usize,
    bucket: u64,
}

/// The lock discipline of one open pool.
pub(crate) struct BucketLocks {
    table: LockTable,
    /// Lock words live in the persistent buckets (Baseline ablation).
    in_pm: bool,
    /// Readers take read locks (two-phase atomic write switched off).
    locked_reads: bool,
    /// Open generation, in bits 40..64 of every persistent lock word.
    generation: u64,
}

#[inline]
fn backoff(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl BucketLocks {
    /// `open_count` tags persistent lock words (its low 24 bits).
    pub fn new(in_pm: bool, locked_reads: bool, open_count: u64) -> BucketLocks {
        BucketLocks {
            table: LockTable::new(),
            in_pm,
            locked_reads,
            generation: (open_count & 0xff_ffff) << PM_TAG_SHIFT,
        }
    }

    pub fn in_pm(&self) -> bool {
        self.in_pm
    }

    /// A persistent lock word's state bits, 0 when it belongs to an earlier
    /// open generation.
    #[inline]
    fn pm_state(&self, word: u64) -> u64 {
        if word & !((1 << PM_TAG_SHIFT) - 1) == self.generation {
            word & PM_STATE
        } else {
            0
        }
    }

    /// Takes the write lock of the bucket at `bucket` for `seq`. Returns the
    /// lock and the sequence number of the last holder seen while waiting
    /// *before that holder started publishing* (0 if none).
    pub fn lock(&self, pm: &PmemFile, bucket: u64, seq: u64) -> (Held, u64) {
        let table_index = LockTable::index_of(bucket);
        let w = &self.table.words[table_index];
        let mut observed = 0;
        let mut spins = 0;
        let mut note = |cur: u64| {
            if cur != 0 && cur & PUBLISHING == 0 {
                observed = cur;
            }
        };
        if self.in_pm {
            let at = bucket + PM_LOCK_SLOT_OFFSET;
            loop {
                let word = pm.load_u64(at);
                let state = self.pm_state(word);
                if state & (PM_WRITER | PM_READERS) == 0 {
                    if pm.cas_u64(at, word, self.generation | PM_WRITER).is_ok() {
                        break;
                    }
                } else if state & PM_WAITING == 0 {
                    // Ask new readers to hold back so we are not starved.
                    let _ = pm.cas_u64(at, word, self.generation | state | PM_WAITING);
                }
                note(w.writer.load(Ordering::Acquire));
                backoff(&mut spins);
            }
            // Post our number on the board for waiters (write elimination).
            w.writer.store(seq, Ordering::SeqCst);
        } else {
            loop {
                match w
                    .writer
                    .compare_exchange_weak(0, seq, Ordering::SeqCst, Ordering::Relaxed)
                {
                    Ok(_) => break,
                    Err(cur) => {
                        note(cur);
                        backoff(&mut spins);
                    }
                }
            }
            if self.locked_reads {
                while w.readers.load(Ordering::SeqCst) != 0 {
                    backoff(&mut spins);
                }
            }
        }
        (
            Held {
                table_index,
                bucket,
            },
            observed,
        )
    }

    /// Starts loading the lock word of the bucket at `bucket` (a lock taken
    /// soon after then need not wait for its line). The persistent lock
    /// words live in the bucket line itself.
    #[inline]
    pub fn prefetch(&self, bucket: u64) {
        if self.in_pm {
            return;
        }
        crate::pmem::cpu::prefetch_ref(&self.table.words[LockTable::index_of(bucket)]);
    }

    /// Marks the holder as publishing (its value may become visible from
    /// now on). Only the holder calls this.
    #[inline]
    pub fn mark_publishing(&self, held: &Held, seq: u64) {
        self.table.words[held.table_index]
            .writer
            .store(seq | PUBLISHING, Ordering::SeqCst);
    }

    pub fn unlock(&self, pm: &PmemFile, held: Held) {
        self.table.words[held.table_index]
            .writer
            .store(0, Ordering::Release);
        if self.in_pm {
            pm.store_u64(held.bucket + PM_LOCK_SLOT_OFFSET, self.generation);
        }
    }

    /// Takes the read lock of the bucket at `bucket` (locked reads only).
    pub fn read_lock(&self, pm: &PmemFile, bucket: u64) -> Held {
        let table_index = LockTable::index_of(bucket);
        let mut spins = 0;
        if self.in_pm {
            let at = bucket + PM_LOCK_SLOT_OFFSET;
            loop {
                let word = pm.load_u64(at);
                let state = self.pm_state(word);
                if state & (PM_WRITER | PM_WAITING) == 0
                    && state & PM_READERS < PM_READERS
                    && pm.cas_u64(at, word, self.generation | (state + 1)).is_ok()
                {
                    break;
                }
                backoff(&mut spins);
            }
        } else {
            let w = &self.table.words[table_index];
            loop {
                while w.writer.load(Ordering::SeqCst) != 0 {
                    backoff(&mut spins);
                }
                w.readers.fetch_add(1, Ordering::SeqCst);
                if w.writer.load(Ordering::SeqCst) == 0 {
                    break;
                }
                w.readers.fetch_sub(1, Ordering::SeqCst);
            }
        }
        Held {
            table_index,
            bucket,
        }
    }

    pub fn read_unlock(&self, pm: &PmemFile, held: Held) {
        if self.in_pm {
            let at = held.bucket + PM_LOCK_SLOT_OFFSET;
            loop {
                let word = pm.load_u64(at);
                let state = self.pm_state(word);
                debug_assert!(state & PM_READERS > 0);
                if pm.cas_u64(at, word, self.generation | (state - 1)).is_ok() {
                    break;
                }
            }
        } else {
            self.table.words[held.table_index]
                .readers
                .fetch_sub(1, Ordering::SeqCst);
        }
    }

    /// Read-locks every bucket in `buckets`, in the same order `lock_many`
    /// takes write locks.
    pub fn read_lock_many(&self, pm: &PmemFile, buckets: &mut Vec<u64>) -> Vec<Held> {
        if self.in_pm {
            buckets.sort_unstable();
            buckets.dedup();
            buckets.iter().map(|&b| self.read_lock(pm, b)).collect()
        } else {
            let mut idx: Vec<(usize, u64)> = buckets
                .iter()
                .map(|&b| (LockTable::index_of(b), b))
                .collect();
            idx.sort_unstable_by_key(|e| e.0);
            idx.dedup_by_key(|e| e.0);
            idx.iter().map(|&(_, b)| self.read_lock(pm, b)).collect()
        }
    }

    /// Locks every bucket in `buckets` (pool offsets, any order): what a
    /// split, the tally or a check needs. In the DRAM layout the table is
    /// shared by all buckets, so this takes the table words they map to.
    pub fn lock_many(&self, pm: &PmemFile, buckets: &mut Vec<u64>, seq: u64) -> Vec<Held> {
        if self.in_pm {
            buckets.sort_unstable();
            buckets.dedup();
            buckets.iter().map(|&b| self.lock(pm, b, seq).0).collect()
        } else {
            let mut idx: Vec<(usize, u64)> = buckets
                .iter()
                .map(|&b| (LockTable::index_of(b), b))
                .collect();
            idx.sort_unstable_by_key(|e| e.0);
            idx.dedup_by_key(|e| e.0);
            idx.iter().map(|&(_, b)| self.lock(pm, b, seq).0).collect()
        }
    }

    /// Locks everything: every table word (DRAM layout) or every bucket of
    /// the given segments (persistent layout).
    pub fn lock_all(&self, pm: &PmemFile, segments: &[u64], buckets: u64, seq: u64) -> Vec<Held> {
        if self.in_pm {
            let mut all: Vec<u64> = segments
                .iter()
                .flat_map(|&s| (0..buckets).map(move |b| bucket_at(s, b)))
                .collect();
            self.lock_many(pm, &mut all, seq)
        } else {
            // One representative bucket per table word is enough: lock all
            // words in index order.
            (0..LOCK_WORDS)
                .map(|i| {
                    let w = &self.table.words[i];
                    let mut spins = 0;
                    while w
                        .writer
                        .compare_exchange_weak(0, seq, Ordering::SeqCst, Ordering::Relaxed)
                        .is_err()
                    {
                        backoff(&mut spins);
                    }
                    Held {
                        table_index: i,
                        bucket: 0,
                    }
                })
                .collect()
        }
    }

    pub fn unlock_all(&self, pm: &PmemFile, held: Vec<Held>) {
        for h in held {
            self.unlock(pm, h);
        }
    }
}

#[inline]
fn bucket_at(segment: u64, b: u64) -> u64 {
    segment + crate::layout::SEGMENT_HEADER_BYTES + b * BUCKET_BYTES
}
