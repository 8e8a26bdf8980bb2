//! The segments both layouts keep their nodes or leaves in: a *slab* is
//! one `Ordered` segment cut into slots of `1 << class` bytes.
//!
//! Invariants:
//! - A slab is zeroed durably before its header commits it, so a slot that
//!   never held a node or leaf reads 0 after any crash (a skiplist node's
//!   record word, a leaf's word 0): the scans after open tell used slots
//!   from free ones by it, and a reused segment carries no old bytes.
//! - The header names the size class (and whether the slab holds the
//!   skiplist's head node), so the layouts find their slabs at open from
//!   the header scan alone.

use crate::error::Result;
use crate::layout::{SegmentHeader, SegmentKind, SEGMENT_HEADER_BYTES};
use crate::pool::Pool;

/// Zeroes the slab of reserved segment `seg` durably (its header does not
/// name it yet): an ordered segment holds nothing but nodes or leaves and
/// zeros, so a slot that never held one reads 0 (a skiplist node's record
/// word, a leaf's word 0; the scans after open rely on it, and a reused
/// segment would otherwise carry old bytes).
pub(super) fn zero_slab(pool: &Pool, seg: u32) {
    pool.pm.zero_persistent(
        pool.segment_offset(seg) + SEGMENT_HEADER_BYTES,
        (pool.segment_bytes - SEGMENT_HEADER_BYTES) as usize,
    );
    // Persist point: the zeros are durable before the header names the slab.
    pool.pm.fence();
}

/// Commits reserved segment `seg` as an ordered segment of slots of
/// `1 << class` bytes (`head`: the skiplist's head node is its first slot).
pub(super) fn commit_slab(pool: &Pool, seg: u32, class: u32, head: bool) {
    pool.commit(
        seg,
        SegmentHeader {
            kind: SegmentKind::Ordered,
            lane_or_depth: class,
            run_segments: 1,
            base_seq_or_prefix: head as u64,
        },
    );
}

/// A new ordered segment of slots of `1 << class` bytes: reserved, zeroed
/// durably, committed.
pub(super) fn new_slab(pool: &Pool, class: u32) -> Result<u32> {
    let seg = pool.reserve(1)?;
    zero_slab(pool, seg);
    commit_slab(pool, seg, class, false);
    Ok(seg)
}
