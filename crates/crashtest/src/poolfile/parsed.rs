//! An image as the parser sees it (`parse`): the kind of every segment,
//! the live records and where their values are, and the segment geometry
//! that turns pool offsets into segments.
//!
//! Invariants: plain data computed once from one image's bytes, never
//! written back; segment `i` starts at `SUPERBLOCK_BYTES + i *
//! segment_bytes` (`segment_offset`, undone by `segment_of`); a
//! `LiveRecord`'s offsets lie inside the image it was parsed from (its CRC
//! verified there), so `value` and `extent` read only within that image.

use std::collections::{BTreeMap, BTreeSet};

use persimmon::format::SUPERBLOCK_BYTES;

use super::words::{get_u32, get_u64};

/// Record flag: the value field is an SSD extent's descriptor, the
/// value's unaligned tail and pending patches (`persimmon::tier::extent`).
pub const REC_FLAG_EXTERNAL: u32 = 32;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum SegKind {
    Free,
    Log {
        lane: u32,
        base: u64,
    },
    Index {
        depth: u8,
        prefix: u64,
    },
    Large {
        run: u32,
    },
    /// Ordered-index nodes of `1 << class` bytes; `head`: the skiplist's
    /// head node is its first slot.
    Ordered {
        class: u32,
        head: bool,
    },
    Continuation,
    Damaged,
}

/// A live slot and the record it names.
#[derive(Clone, Debug)]
pub struct LiveRecord {
    /// The word naming the record: an index slot, or with the DRAM point
    /// index its node's record word.
    pub slot_addr: u64,
    pub record: u64,
    /// Bytes covered by the CRC end here (before the padding).
    pub body_end: u64,
    /// The value starts here (after the key, and the deadline before it).
    pub value_at: u64,
    pub key: Vec<u8>,
    /// The record header's flags (`REC_FLAG_EXTERNAL`, ...).
    pub flags: u32,
}

/// Where an external value's aligned prefix lives on the SSD tier: the
/// first 16 bytes of its record's value field (u32 data file number, u32
/// extent bytes, u64 byte offset in the file; docs/design.md §6c).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ExtentAt {
    pub file: u32,
    pub offset: u64,
    pub bytes: u32,
}

pub struct Parsed {
    pub segment_bytes: u64,
    pub segments: Vec<SegKind>,
    pub live: Vec<LiveRecord>,
    /// Index segments that own no directory entry (never reachable).
    pub orphan_index_segments: Vec<u32>,
}

impl LiveRecord {
    /// The record's value bytes in `img`.
    pub fn value<'a>(&self, img: &'a [u8]) -> &'a [u8] {
        &img[self.value_at as usize..self.body_end as usize]
    }

    /// The SSD extent an external record's value field names.
    pub fn extent(&self, img: &[u8]) -> Option<ExtentAt> {
        let field = self.value(img);
        (self.flags & REC_FLAG_EXTERNAL != 0 && field.len() >= 16).then(|| ExtentAt {
            file: get_u32(field, 0),
            bytes: get_u32(field, 4),
            offset: get_u64(field, 8),
        })
    }
}

impl Parsed {
    pub fn segment_offset(&self, i: u32) -> u64 {
        SUPERBLOCK_BYTES + i as u64 * self.segment_bytes
    }

    pub fn segment_of(&self, off: u64) -> u32 {
        ((off - SUPERBLOCK_BYTES) / self.segment_bytes) as u32
    }

    /// Heads (log segments, large runs) that hold no live record and are not
    /// their lane's newest log segment: recovery must find them reclaimable.
    pub fn dead_heads(&self) -> Vec<u32> {
        let used: BTreeSet<u32> = self
            .live
            .iter()
            .map(|r| self.segment_of(r.record))
            .collect();
        let mut newest: BTreeMap<u32, (u64, u32)> = BTreeMap::new();
        for (i, k) in self.segments.iter().enumerate() {
            if let SegKind::Log { lane, base } = *k {
                let e = newest.entry(lane).or_insert((base, i as u32));
                if base >= e.0 {
                    *e = (base, i as u32);
                }
            }
        }
        let active: BTreeSet<u32> = newest.values().map(|v| v.1).collect();
        self.segments
            .iter()
            .enumerate()
            .filter(|(i, k)| {
                let i = *i as u32;
                match k {
                    SegKind::Log { .. } => !used.contains(&i) && !active.contains(&i),
                    SegKind::Large { .. } => !used.contains(&i),
                    _ => false,
                }
            })
            .map(|(i, _)| i as u32)
            .collect()
    }
}
