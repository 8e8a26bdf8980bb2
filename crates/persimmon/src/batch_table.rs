//! The batch commit table: the superblock's 64 entries that make an atomic
//! batch all-or-nothing across a crash, the DRAM registry that keeps a
//! batch invisible to readers until it is whole, and the recovery at open.
//!
//! An entry (`layout::SB_BATCH_TABLE`, 16 bytes) moves through three states,
//! each an 8-byte store made durable by a fence before the next step:
//! 1. free (word 0 = 0);
//! 2. **begun** — word 0 = the undo record's offset, word 1 = the batch's
//!    sequence number. Stored only after the batch's records and its undo
//!    record are durable, and before any word names a batch record. A crash
//!    here is undone at open: every word the undo record lists gets its old
//!    value back.
//! 3. **committed** — word 0 | 1 (only for batches that delete keys): the
//!    new words are durable; the deleted keys' words still name tombstones.
//!    A crash here is finished at open: those words are cleared.
//!
//! Back to free (word 0 = 0, fenced) is the commit point of a batch without
//! deletes, and the end of one with deletes.
//!
//! Invariants:
//! - An entry that is not free names a record that verifies, carries
//!   `REC_FLAG_UNDO` and the entry's sequence number, whenever any word
//!   names a record of its batch; recovery that finds otherwise knows no
//!   word was touched (begun was never durable) and only frees the entry.
//! - While an entry is not free its batch holds the bucket locks of all its
//!   keys: no other writer changes the words the undo record lists, no split
//!   moves them, no record they name is freed. So at open the words hold
//!   either their old or their new values, and restoring or clearing them is
//!   exact.
//! - A batch registers its sequence number in the DRAM registry before its
//!   first word changes and unregisters only when every word is final; a
//!   reader that meets a `REC_FLAG_BATCH` record whose number is registered
//!   waits and reads again.

use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};

use crate::error::{Error, Result};
use crate::layout::{
    self, RecordHeader, Slot, BATCH_ENTRY_BYTES, BATCH_TABLE_ENTRIES, REC_FLAG_TOMBSTONE,
    REC_FLAG_UNDO, SB_BATCH_TABLE,
};
use crate::log::verified_record;
use crate::pool::Pool;

/// Bit 0 of an entry's word 0: committed, deleted keys still to clear.
const COMMITTED: u64 = 1;
/// Bit 0 of an undo pair's address: the op deletes its key.
pub(crate) const UNDO_DELETES: u64 = 1;

/// DRAM side of the table: which entries are taken, and which batches are
/// publishing.
pub(crate) struct BatchTable {
    /// Bit i set: entry i is taken.
    taken: parking_lot::Mutex<u64>,
    freed: parking_lot::Condvar,
    /// Per entry: the sequence number of the batch publishing through it, or 0.
    publishing: [AtomicU64; BATCH_TABLE_ENTRIES],
    /// Number of batches publishing now (readers skip the scan when 0).
    active: AtomicUsize,
}

impl Default for BatchTable {
    fn default() -> Self {
        BatchTable {
            taken: parking_lot::Mutex::new(0),
            freed: parking_lot::Condvar::new(),
            publishing: std::array::from_fn(|_| AtomicU64::new(0)),
            active: AtomicUsize::new(0),
        }
    }
}

fn entry_addr(i: usize) -> u64 {
    SB_BATCH_TABLE + i as u64 * BATCH_ENTRY_BYTES
}

impl BatchTable {
    /// Takes a free entry, waiting while all 64 are in use.
    pub fn acquire(&self) -> usize {
        let mut taken = self.taken.lock();
        loop {
            if *taken != u64::MAX {
                let i = (!*taken).trailing_zeros() as usize;
                *taken |= 1 << i;
                return i;
            }
            self.freed.wait(&mut taken);
        }
    }

    pub fn release(&self, i: usize) {
        let mut taken = self.taken.lock();
        debug_assert!(*taken & (1 << i) != 0, "an entry is released once");
        *taken &= !(1 << i);
        self.freed.notify_one();
    }

    /// State 2: the undo record at `undo` (durable) covers batch `seq`.
    pub fn begin(&self, pool: &Pool, i: usize, undo: u64, seq: u64) {
        let at = entry_addr(i);
        debug_assert_eq!(pool.pm.load_u64(at), 0, "a taken entry starts free");
        pool.pm.store_u64(at + 8, seq);
        pool.pm.store_u64(at, undo);
        // Persist point: the batch can be undone from here on.
        pool.pm.persist(at, BATCH_ENTRY_BYTES as usize);
    }

    /// State 3: the new words are durable; deleted keys still to clear.
    pub fn commit_with_deletes(&self, pool: &Pool, i: usize) {
        let at = entry_addr(i);
        let w = pool.pm.load_u64(at);
        debug_assert!(w != 0 && w & COMMITTED == 0, "commit follows begin");
        pool.pm.store_u64(at, w | COMMITTED);
        // Persist point: the batch is committed.
        pool.pm.persist(at, 8);
    }

    /// Back to free: the commit point of a batch without deletes.
    pub fn finish(&self, pool: &Pool, i: usize) {
        let at = entry_addr(i);
        debug_assert_ne!(pool.pm.load_u64(at), 0, "finish follows begin");
        pool.pm.store_u64(at, 0);
        // Persist point: nothing about this batch is left to recover.
        pool.pm.persist(at, 8);
    }

    /// Batch `seq` starts changing words through entry `i`.
    pub fn start_publishing(&self, i: usize, seq: u64) {
        self.publishing[i].store(seq, Ordering::SeqCst);
        self.active.fetch_add(1, Ordering::SeqCst);
    }

    /// Every word of the batch through entry `i` is final.
    pub fn end_publishing(&self, i: usize) {
        self.publishing[i].store(0, Ordering::SeqCst);
        self.active.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether batch `seq` is still publishing (a reader that met one of its
    /// records must then wait and read again).
    #[inline]
    pub fn is_publishing(&self, seq: u64) -> bool {
        self.active.load(Ordering::SeqCst) != 0
            && self
                .publishing
                .iter()
                .any(|p| p.load(Ordering::SeqCst) == seq)
    }

    /// Waits until batch `seq` is no longer publishing.
    pub fn wait_published(&self, seq: u64) {
        let mut spins = 0u32;
        while self.is_publishing(seq) {
            spins += 1;
            if spins < 64 {
                std::hint::spin_loop();
            } else {
                std::thread::yield_now();
            }
        }
    }
}

/// What recovery at open did.
#[derive(Debug, Default, Clone, Copy, PartialEq, Eq)]
pub struct BatchRecovery {
    /// Batches a crash interrupted before their commit: undone.
    pub undone: u64,
    /// Batches a crash interrupted after their commit: deletes finished.
    pub finished: u64,
}

/// An undo record's pairs: `(word address | UNDO_DELETES, old word)`.
pub(crate) fn encode_pairs(pairs: &[(u64, u64)]) -> Vec<u8> {
    let mut v = Vec::with_capacity(pairs.len() * 16);
    for &(addr, old) in pairs {
        v.extend_from_slice(&addr.to_le_bytes());
        v.extend_from_slice(&old.to_le_bytes());
    }
    v
}

/// Recovers every entry a crash left: undoes batches begun but not
/// committed, finishes the deletes of committed ones, frees the entries.
/// Runs at open, before anything reads the index.
pub(crate) fn recover(pool: &Pool) -> Result<BatchRecovery> {
    let mut report = BatchRecovery::default();
    for i in 0..BATCH_TABLE_ENTRIES {
        let at = entry_addr(i);
        let w = pool.pm.load_u64(at);
        if w == 0 {
            continue;
        }
        let seq = pool.pm.load_u64(at + 8);
        let committed = w & COMMITTED != 0;
        match undo_pairs(pool, w & !COMMITTED, seq) {
            Some(pairs) if committed => {
                finish_deletes(pool, &pairs, seq);
                report.finished += 1;
            }
            Some(pairs) => {
                restore(pool, &pairs);
                report.undone += 1;
            }
            // Begun was never durable: no word was touched.
            None if !committed => {}
            None => {
                return Err(Error::corruption(
                    w & !COMMITTED,
                    "a committed batch's undo record does not verify",
                ))
            }
        }
        pool.pm.fence();
        pool.pm.store_u64(at, 0);
        pool.pm.persist(at, 8);
    }
    Ok(report)
}

/// The pairs of the undo record at `off` if it verifies and belongs to
/// batch `seq`.
fn undo_pairs(pool: &Pool, off: u64, seq: u64) -> Option<Vec<(u64, u64)>> {
    let h = verified_header(pool, off)?;
    if h.flags & REC_FLAG_UNDO == 0 || h.seq != seq || h.value_len % 16 != 0 {
        return None;
    }
    let value_at = off + h.value_at();
    let bytes = pool.pm.slice(value_at, h.value_len as usize).ok()?;
    let pairs: Vec<(u64, u64)> = bytes
        .chunks_exact(16)
        .map(|c| (layout::get_u64(c, 0), layout::get_u64(c, 8)))
        .collect();
    let sane = |a: u64| {
        let a = a & !UNDO_DELETES;
        a >= layout::SUPERBLOCK_BYTES && a.is_multiple_of(8) && a + 8 <= pool.pm.len()
    };
    pairs.iter().all(|&(a, _)| sane(a)).then_some(pairs)
}

/// The header of the record at `off` when it lies in the pool and its CRC
/// verifies.
fn verified_header(pool: &Pool, off: u64) -> Option<RecordHeader> {
    if off < layout::SUPERBLOCK_BYTES || !off.is_multiple_of(layout::RECORD_ALIGN) {
        return None;
    }
    verified_record(pool, off, pool.pm.len())
}

/// Undo: every listed word gets its old value back (a word that named a
/// record was durable before the batch took its lock: marked persisted).
fn restore(pool: &Pool, pairs: &[(u64, u64)]) {
    for &(addr, old) in pairs {
        let addr = addr & !UNDO_DELETES;
        let old = if Slot(old).names_record() {
            Slot(old).with_persist().0
        } else {
            old
        };
        pool.pm.store_u64(addr, old);
        pool.pm.flush(addr, 8);
    }
}

/// Finish: the deleted keys' words that still name a tombstone of batch
/// `seq` are cleared.
fn finish_deletes(pool: &Pool, pairs: &[(u64, u64)], seq: u64) {
    for &(addr, _) in pairs.iter().filter(|p| p.0 & UNDO_DELETES != 0) {
        let addr = addr & !UNDO_DELETES;
        let s = Slot(pool.pm.load_u64(addr));
        let tombstone = s.names_record()
            && verified_header(pool, s.offset())
                .is_some_and(|h| h.flags & REC_FLAG_TOMBSTONE != 0 && h.seq == seq);
        if tombstone {
            pool.pm.store_u64(addr, Slot::EMPTY.0);
            pool.pm.flush(addr, 8);
        }
    }
}
