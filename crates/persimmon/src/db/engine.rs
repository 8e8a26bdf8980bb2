//! The engine's state: what an open pool's `Db` shares with its background
//! threads, which every room's `impl Engine` block reads and writes; and
//! what every room needs besides (the key hash, this thread's lane, the
//! point index's memory, the checks of keys and values, the sequence
//! numbers of internal lock holders).
//!
//! The state's fields are visible to all of `db` and to nothing outside it
//! (but the pool, the index and the ordered index): the invariants that
//! bind them are kept by the rooms of `db` together, listed in its header.
//!
//! Invariants:
//! - Internal lock holders take sequence numbers of `INTERNAL_LANE` (255),
//!   which no record carries, so no put is ever eliminated against them.
//! - A thread keeps its lane for its life (a ticket drawn once), and no
//!   lane hands out a number before every lane was raised above the
//!   pool-wide floor (`lane`), so no lane repeats a number a record of an
//!   earlier session carries, even one the cleaner moved (see `log`).
//! - Dropping the engine marks the pool clean only after the tally has
//!   finished (the key count it records is exact), and writes the
//!   segment-header copy after that mark, as the session's last write.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Condvar, Mutex, Weak};

use crossbeam_utils::CachePadded;

use super::deadlines::Expiry;
use super::merge_queue::MergeQueue;
use super::placement::IndexPlacement;
use crate::batch_table::{BatchRecovery, BatchTable};
use crate::error::{Error, Result};
use crate::index::Index;
use crate::layout::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
use crate::log::{Lane, INTERNAL_LANE};
use crate::ordered::Ordered;
use crate::pmem::PmemFile;
use crate::pool::Pool;
use crate::tier::Tier;

/// Lock-holder sequence numbers of the engine's internal work (lane 255).
pub(super) const SPLIT_SEQ: u64 = (INTERNAL_LANE << 56) | 1;
pub(super) const TALLY_SEQ: u64 = (INTERNAL_LANE << 56) | 2;
pub(super) const CHECK_SEQ: u64 = (INTERNAL_LANE << 56) | 3;
pub(super) const ORDERED_SEQ: u64 = (INTERNAL_LANE << 56) | 4;
pub(super) const READ_SEQ: u64 = (INTERNAL_LANE << 56) | 5;
pub(super) const CLEANER_SEQ: u64 = (INTERNAL_LANE << 56) | 6;
pub(super) const BATCH_SEQ: u64 = (INTERNAL_LANE << 56) | 7;
pub(super) const EXPIRY_SEQ: u64 = (INTERNAL_LANE << 56) | 8;

static NEXT_THREAD_TICKET: AtomicU64 = AtomicU64::new(0);
thread_local! {
    pub(super) static THREAD_TICKET: u64 = NEXT_THREAD_TICKET.fetch_add(1, Ordering::Relaxed);
}

pub(crate) struct Engine {
    pub(crate) pool: Pool,
    pub(crate) index: Index,
    /// Where the point index lives (pool or DRAM).
    pub(super) point_index: IndexPlacement,
    /// No segment may be freed: live bytes are not known for all records
    /// (the DRAM point index's rebuild failed).
    pub(super) reclaim_blocked: AtomicBool,
    /// The ordered index, when the pool keeps one.
    pub(crate) ordered: Option<Ordered>,
    pub(super) ordered_walk_errors: parking_lot::Mutex<Vec<String>>,
    /// The ordered index's walk after open has ended (finished or failed).
    pub(super) ordered_walk_ended: AtomicBool,
    /// One cache line (pair) each: lanes of different threads must not
    /// share lines (their counters and tails are written on every put).
    pub(super) lanes: Vec<CachePadded<Lane>>,
    /// The log cleaner's own lane.
    pub(super) cleaner_lane: Lane,
    /// Largest base sequence counter of any segment found at open.
    pub(super) base_seq_floor: u64,
    /// Raises every lane above the pool-wide floor once, before the first
    /// sequence number is drawn (see `log` module invariants).
    pub(super) seq_floor_ready: std::sync::Once,
    pub(super) seed: u64,
    pub(super) verify_reads: bool,
    /// Concurrent write elimination is on.
    pub(super) eliminate: bool,
    /// Two-phase atomic write with lock-free reads is on (else: locked
    /// reads, slots stored already persisted).
    pub(super) two_phase: bool,
    /// The key count at open is known (clean close, PM point index).
    pub(super) clean_open: bool,
    /// The tally has passed every bucket below this slot address.
    pub(super) tally_cursor: AtomicU64,
    pub(super) tally_done: AtomicBool,
    pub(super) tally_signal: (Mutex<u8>, Condvar),
    pub(super) base_count: AtomicU64,
    pub(super) count_deltas: Box<[CachePadded<AtomicI64>]>,
    pub(super) stop: AtomicBool,
    /// The background expiry is held (`Db::hold_expiry`): keys past their
    /// deadline read as absent but are not reclaimed until it is released.
    pub(super) expiry_held: AtomicBool,
    pub(super) me: Weak<Engine>,
    pub(super) split_mutex: parking_lot::Mutex<()>,
    /// Held by the cleaner while a chunk's copies are counted live but not
    /// all switched yet, and by `check` (which counts live bytes against
    /// what the index names) before it locks the buckets.
    pub(super) chunk_mutex: parking_lot::Mutex<()>,
    pub(super) eliminated_puts: AtomicU64,
    pub(super) splits: AtomicU64,
    pub(super) cleaned_segments: AtomicU64,
    pub(super) cleaned_bytes: AtomicU64,
    pub(super) tally_errors: parking_lot::Mutex<Vec<String>>,
    /// Batches committing now (the superblock's commit table, DRAM side).
    pub(super) batches: BatchTable,
    /// What recovery at open did to batches a crash interrupted.
    pub(super) batch_recovery: BatchRecovery,
    /// Key deadlines: the clock and the heap of the background expiry.
    pub(super) expiry: Expiry,
    /// The SSD tier, when the pool was created with one.
    pub(super) tier: Option<Tier>,
    /// Extents the tier cleaner moved, and patched values it merged.
    pub(super) tier_moved: AtomicU64,
    pub(super) tier_merges: AtomicU64,
    /// Keys whose patches wait for the background merge.
    pub(super) merges: parking_lot::Mutex<MergeQueue>,
}

impl Drop for Engine {
    fn drop(&mut self) {
        if self.tally_done.load(Ordering::Acquire) {
            if let Some(l) = self.ordered.as_ref().and_then(|o| o.leaves()) {
                // Before the clean mark: the copy names this session, which
                // the mark then vouches for.
                l.save_map(&self.pool);
            }
            let keys = self.count_now();
            self.pool.mark_clean(keys);
            // After the clean mark, the session's last write to the pool:
            // the copy names the file as this close leaves it.
            self.pool.save_scan_copy();
        }
    }
}

pub(super) fn check_key(key: &[u8]) -> Result<()> {
    if key.len() > MAX_KEY_BYTES {
        return Err(Error::KeyTooLarge {
            len: key.len(),
            max: MAX_KEY_BYTES,
        });
    }
    Ok(())
}

pub(super) fn check_value(value: &[u8]) -> Result<()> {
    if value.len() > MAX_VALUE_BYTES {
        return Err(Error::ValueTooLarge {
            len: value.len(),
            max: MAX_VALUE_BYTES,
        });
    }
    Ok(())
}

impl Engine {
    /// `done`, once everything it made or read is durable (in the disk
    /// domain: the write-ahead log synced past everything appended so far;
    /// at once elsewhere, and on a thread that defers its waits). Every
    /// call of the public API returns through here, so a write is durable
    /// when its call returns, and a read returns nothing a crash could take
    /// back — as in persistent memory, and as Redis's `appendfsync always`
    /// replies only after its `fsync`.
    pub(crate) fn settle<T>(&self, done: Result<T>) -> Result<T> {
        let value = done?;
        self.pool.pm.durable_point()?;
        Ok(value)
    }

    #[inline]
    pub(super) fn hash(&self, key: &[u8]) -> u64 {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed)
    }

    /// This thread's lane (and its index), once every lane starts above the
    /// pool-wide sequence floor.
    #[inline]
    pub(super) fn lane(&self) -> (usize, &Lane) {
        self.seq_floor_ready.call_once(|| {
            self.cleaner_lane.recover(&self.pool);
            let floor = self.base_seq_floor.max(self.cleaner_lane.walked_max());
            for lane in &self.lanes {
                lane.raise(floor);
            }
        });
        let i = THREAD_TICKET.with(|t| *t as usize) % self.lanes.len();
        (i, &self.lanes[i])
    }

    /// The memory of the point index's slots: the pool, or DRAM.
    #[inline]
    pub(super) fn ipm(&self) -> &PmemFile {
        self.point_index.slots(&self.pool.pm)
    }
}
