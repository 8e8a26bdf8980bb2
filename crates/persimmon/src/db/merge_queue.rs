//! The SSD tier's to-do list between foreground writes and its background
//! thread (`tier_clean`): the keys whose patches wait for a merge, and the
//! data files a cleaning pass could not empty.
//!
//! Invariants:
//! - `order` and `queued` hold the same keys, each once: a value patched
//!   many times before its merge is merged once, in the order it was first
//!   queued.
//! - A file in `stuck` is not taken as a victim again while its live bytes
//!   stay what they were when the pass gave up on it (a damaged value, an
//!   expired key not yet deleted), so one bad value does not make every
//!   pass rewrite the same file.

use std::collections::{HashMap, HashSet, VecDeque};

/// Keys queued for merging, in order, without duplicates; and the data
/// files the cleaner could not empty (with their live bytes then).
#[derive(Default)]
pub(super) struct MergeQueue {
    pub(super) order: VecDeque<Vec<u8>>,
    pub(super) queued: HashSet<Vec<u8>>,
    pub(super) stuck: HashMap<u32, u64>,
}
