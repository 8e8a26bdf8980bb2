//! The pool a workload's options make: the superblock flags the harness
//! creates it with (`poolfile::create`), and whether it keeps its ordered
//! index in leaves.
//!
//! Invariants: the flags follow from the options alone (mechanisms,
//! ordered index, point index placement, ordered layout), as the engine
//! derives them when it creates a pool for the same options, so a pool the
//! harness writes by hand is one the engine could have created itself;
//! every open then checks that the engine found what the options asked for
//! (`Ctx`).

use persimmon::{Options, OrderedLayout, PointIndex};

use crate::poolfile;

/// Whether `options` create a pool whose ordered index is kept in leaves
/// (the DRAM point index and `OrderedLayout::Leaves`, format version 6).
pub(super) fn leaf_pool(options: &Options) -> bool {
    options.ordered_index
        && options.point_index == PointIndex::Dram
        && options.ordered_layout == OrderedLayout::Leaves
}

/// Superblock flags a pool for `options` must be created with.
pub(super) fn pool_flags(options: &Options) -> u64 {
    let mut flags = 0;
    if !options.mechanisms.volatile_lock_table {
        flags |= poolfile::FLAG_PERSISTENT_LOCKS;
    }
    if options.ordered_index {
        flags |= poolfile::FLAG_ORDERED_INDEX;
    }
    if options.point_index == PointIndex::Dram {
        flags |= poolfile::FLAG_DRAM_POINT_INDEX;
    }
    if leaf_pool(options) {
        flags |= poolfile::FLAG_LEAVES;
    }
    // As the engine creates them: a PM point index with the DRAM lock table
    // gets three-choice buckets.
    if options.point_index == PointIndex::Pm && options.mechanisms.volatile_lock_table {
        flags |= poolfile::FLAG_THREE_CHOICE;
    }
    flags
}
