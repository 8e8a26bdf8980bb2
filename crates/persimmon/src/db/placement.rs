//! Where the point index lives, as a type: in the pool ([`IndexPlacement::Pm`],
//! MPKV's placement) or in DRAM ([`IndexPlacement::Dram`], HybridIndex+'s).
//! The engine asks this type what differs between them — which memory holds
//! the slots, which persistent word names a key's record, whether a miss is
//! an answer yet, how a split adds a segment — and never branches on the
//! placement itself. (Where a value lives, and a DRAM cache in front of it,
//! are meant to become types of the same shape next to this one.)
//!
//! Invariants:
//! - PM: a slot in the pool is the persistent truth of its key; the index is
//!   complete from the first moment after open (a miss is an answer); live
//!   bytes and the key count are rebuilt by the tally after open.
//! - DRAM: the persistent truth of a key is its ordered-index node's record
//!   word, written with the same two-phase protocol as a PM slot. A DRAM slot
//!   is stored only after that word is durable, already marked persisted,
//!   and names the same record; `nodes` holds, at every slot's address, the
//!   node of the slot's key. The index starts empty at each open and is
//!   complete once the rebuild has entered every key (`complete`, set once,
//!   never cleared); until then a miss is no answer and the ordered index is
//!   asked under the key's bucket lock. The rebuild counts each key and its
//!   record as it enters it, so the accounting covers exactly what the index
//!   holds from the start: there is no tally.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{Error, Result};
use crate::index::{Directory, DramSpace, SegRef};
use crate::layout::{self, SegmentHeader, SegmentKind, Slot};
use crate::options::PointIndex;
use crate::pmem::PmemFile;
use crate::pool::Pool;
use crate::segment_scan::ScanResult;

/// Where the point index lives (chosen when the pool was created).
pub(crate) enum IndexPlacement {
    /// Index segments in the pool.
    Pm,
    /// Index segments in DRAM, rebuilt after every open.
    Dram(DramIndex),
}

/// The DRAM placement's state.
pub(crate) struct DramIndex {
    space: DramSpace,
    /// The rebuild after open has entered every key: a miss is an answer.
    complete: AtomicBool,
    /// A write changed the key set before the rebuild was complete.
    written_in_rebuild: AtomicBool,
}

/// An entry of a splitting segment's high half: (bucket, slot within the
/// bucket, address of the slot).
pub(super) type HighEntry = (u64, usize, u64);

impl IndexPlacement {
    /// The placement `pool` was created with, and the directory of its index:
    /// PM rebuilds the directory from the index segments' headers (or creates
    /// the first segment of a new pool); DRAM starts with one empty segment.
    pub(super) fn open(pool: &Pool, scan: &ScanResult) -> Result<(IndexPlacement, Directory)> {
        if pool.sb.flags & layout::SB_FLAG_DRAM_POINT_INDEX != 0 {
            if let Some(&(s, _, _)) = scan.index_segments.first() {
                return Err(Error::corruption(
                    pool.segment_offset(s),
                    "an index segment in a pool whose point index lives in DRAM",
                ));
            }
            let space = DramSpace::new(pool.segment_bytes, pool.pool_bytes_max)?;
            let dir = first_segment(space.alloc_segment()?);
            let dram = DramIndex {
                space,
                complete: AtomicBool::new(false),
                written_in_rebuild: AtomicBool::new(false),
            };
            return Ok((IndexPlacement::Dram(dram), dir));
        }
        let dir = if scan.index_segments.is_empty() {
            if scan.has_records {
                return Err(Error::corruption(
                    layout::SUPERBLOCK_BYTES,
                    "the pool holds records but no index segment",
                ));
            }
            create_first_index_segment(pool)?
        } else {
            let segs: Vec<(u64, u8, u64)> = scan
                .index_segments
                .iter()
                .map(|&(i, d, p)| (pool.segment_offset(i), d, p))
                .collect();
            Directory::rebuild(&segs).map_err(|e| Error::corruption(layout::SUPERBLOCK_BYTES, e))?
        };
        Ok((IndexPlacement::Pm, dir))
    }

    pub(super) fn kind(&self) -> PointIndex {
        match self {
            IndexPlacement::Pm => PointIndex::Pm,
            IndexPlacement::Dram(_) => PointIndex::Dram,
        }
    }

    /// The memory the slots live in: the pool's, or DRAM.
    #[inline]
    pub(super) fn slots<'a>(&'a self, pool_pm: &'a PmemFile) -> &'a PmemFile {
        match self {
            IndexPlacement::Pm => pool_pm,
            IndexPlacement::Dram(d) => &d.space.slots,
        }
    }

    /// Whether the index holds every key, so that a miss is an answer.
    #[inline]
    pub(super) fn is_complete(&self) -> bool {
        match self {
            IndexPlacement::Pm => true,
            IndexPlacement::Dram(d) => d.complete.load(Ordering::Acquire),
        }
    }

    /// Records that the rebuild has entered every key (DRAM; PM always is).
    pub(super) fn set_complete(&self) {
        if let IndexPlacement::Dram(d) = self {
            d.complete.store(true, Ordering::Release);
        }
    }

    /// Whether live bytes and the key count must be rebuilt by a tally over
    /// the index after open (PM), rather than counted by the index's own
    /// rebuild as it enters each key (DRAM).
    #[inline]
    pub(super) fn needs_tally(&self) -> bool {
        matches!(self, IndexPlacement::Pm)
    }

    /// The key count this open may start from: the one the last clean close
    /// recorded (PM), or none (DRAM: the rebuild counts the keys it enters).
    pub(super) fn clean_key_count(&self, pool: &Pool) -> Option<u64> {
        pool.clean_key_count.filter(|_| self.needs_tally())
    }

    /// Whether a key's persistent truth is its node's record word (so a
    /// node naming a record whose key the index lacks is damage).
    pub(super) fn truth_in_nodes(&self) -> bool {
        matches!(self, IndexPlacement::Dram(_))
    }

    /// The ordered-index node remembered next to slot `addr` (DRAM), or
    /// `None` (PM keeps no node per slot).
    #[inline]
    pub(super) fn node_of(&self, addr: u64) -> Option<u64> {
        match self {
            IndexPlacement::Pm => None,
            IndexPlacement::Dram(d) => Some(d.space.nodes.load_u64(addr)),
        }
    }

    /// The persistent word a write of the key at slot `addr` (node `node`)
    /// stores its record or delete marker in: the slot itself (PM), or the
    /// node's record word (DRAM). Call it before the write changes anything:
    /// with DRAM, a write before the rebuild is complete is remembered (the
    /// rebuild's clean-close key check cannot hold after one).
    #[inline]
    pub(super) fn word_to_persist(&self, addr: u64, node: u64) -> u64 {
        match self {
            IndexPlacement::Pm => addr,
            IndexPlacement::Dram(d) => {
                if !d.complete.load(Ordering::Acquire) {
                    d.written_in_rebuild.store(true, Ordering::Release);
                }
                debug_assert_ne!(node, 0, "a DRAM entry's key has a node");
                node
            }
        }
    }

    /// DRAM: remembers `node` (a leaf entry that moved) next to slot `addr`.
    #[inline]
    pub(super) fn set_node(&self, addr: u64, node: u64) {
        if let IndexPlacement::Dram(d) = self {
            d.space.nodes.store_u64(addr, node);
        }
    }

    /// DRAM: stores `slot` (already durable in the node's record word, marked
    /// persisted) and its `node` at slot `addr`. PM: nothing to mirror.
    #[inline]
    pub(super) fn mirror(&self, addr: u64, node: u64, slot: Slot) {
        if let IndexPlacement::Dram(d) = self {
            debug_assert!(slot.persisted(), "a DRAM slot mirrors a durable word");
            d.space.nodes.store_u64(addr, node);
            d.space.slots.store_u64(addr, slot.0);
        }
    }

    /// DRAM: clears slot `addr` after its key's delete is durable in the node.
    /// PM: nothing (the slot was the persistent word and is cleared already).
    #[inline]
    pub(super) fn unmirror(&self, addr: u64) {
        if let IndexPlacement::Dram(d) = self {
            d.space.slots.store_u64(addr, Slot::EMPTY.0);
        }
    }

    /// DRAM: whether a write changed the key set before the rebuild was
    /// complete. PM: false.
    pub(super) fn written_in_rebuild(&self) -> bool {
        match self {
            IndexPlacement::Pm => false,
            IndexPlacement::Dram(d) => d.written_in_rebuild.load(Ordering::Acquire),
        }
    }

    /// A split's new segment: holds `high` (entries of the splitting
    /// segment, read from [`slots`](Self::slots)) at their bucket and slot.
    /// PM writes it into the pool and commits its header (depth `depth`,
    /// prefix `high_prefix`); DRAM copies the slots and their nodes. Returns
    /// the new segment's offset. Every lock is held: no writer runs.
    pub(super) fn add_split_segment(
        &self,
        pool: &Pool,
        high: &[HighEntry],
        depth: u8,
        high_prefix: u64,
    ) -> Result<u64> {
        match self {
            IndexPlacement::Pm => split_into_pool(pool, high, depth, high_prefix),
            IndexPlacement::Dram(d) => {
                let new_off = d.space.alloc_segment()?;
                let to = SegRef {
                    offset: new_off,
                    depth,
                    prefix: high_prefix,
                };
                for &(b, i, addr) in high {
                    let at = to.bucket_offset(b) + i as u64 * layout::SLOT_BYTES;
                    d.space.nodes.store_u64(at, d.space.nodes.load_u64(addr));
                    d.space.slots.store_u64(at, d.space.slots.load_u64(addr));
                }
                Ok(new_off)
            }
        }
    }

    /// DRAM the index occupies (0 for PM).
    pub(super) fn dram_bytes(&self) -> u64 {
        match self {
            IndexPlacement::Pm => 0,
            IndexPlacement::Dram(d) => d.space.bytes(),
        }
    }
}

/// PM: writes the high half of a splitting segment into a new pool segment
/// and commits it; returns its offset.
fn split_into_pool(pool: &Pool, high: &[HighEntry], depth: u8, high_prefix: u64) -> Result<u64> {
    let pm = &pool.pm;
    let new_index = pool.reserve(1)?;
    let new_off = pool.segment_offset(new_index);
    let area = (pool.segment_bytes - layout::SEGMENT_HEADER_BYTES) as usize;
    let mut buf = vec![0u8; area];
    for &(b, i, addr) in high {
        let s = Slot(pm.load_u64(addr));
        let at = (b * layout::BUCKET_BYTES) as usize + i * 8;
        // Every writer has finished: the entry is durable.
        buf[at..at + 8].copy_from_slice(&s.with_persist().0.to_le_bytes());
    }
    pm.write_persistent(new_off + layout::SEGMENT_HEADER_BYTES, &buf);
    // Persist point: the new segment's buckets are durable.
    pm.fence();
    // Persist point (inside commit): the header names the new segment; from
    // here a recovery routes the high half to it and treats the old
    // segment's copies as stale.
    pool.commit(
        new_index,
        SegmentHeader {
            kind: SegmentKind::Index,
            lane_or_depth: depth as u32,
            run_segments: 1,
            base_seq_or_prefix: high_prefix,
        },
    );
    Ok(new_off)
}

/// PM: the first index segment of a new pool, empty and committed.
fn create_first_index_segment(pool: &Pool) -> Result<Directory> {
    let seg = pool.reserve(1)?;
    let off = pool.segment_offset(seg);
    pool.pm.zero_persistent(
        off + layout::SEGMENT_HEADER_BYTES,
        (pool.segment_bytes - layout::SEGMENT_HEADER_BYTES) as usize,
    );
    // Persist point: empty buckets are durable before the header names them.
    pool.pm.fence();
    pool.commit(
        seg,
        SegmentHeader {
            kind: SegmentKind::Index,
            lane_or_depth: 0,
            run_segments: 1,
            base_seq_or_prefix: 0,
        },
    );
    Ok(first_segment(off))
}

/// The directory of a new index: one segment at `offset`.
fn first_segment(offset: u64) -> Directory {
    Directory {
        depth: 0,
        entries: vec![SegRef {
            offset,
            depth: 0,
            prefix: 0,
        }],
    }
}
