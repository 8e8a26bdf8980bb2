//! The words of a pool image as the parser reads them: little-endian
//! integers at byte offsets, the slot word that names a record (an index
//! slot, a skiplist node's or a leaf entry's record word), and a key's
//! record word in the ordered index.
//!
//! Invariants: the slot word's layout is the engine's (docs/design.md §3),
//! written down here a second time on purpose, so that a change on either
//! side shows up as a disagreement; 0 is an empty word and offset
//! `MARKER_OFFSET` a delete marker, neither names a record. The readers
//! take offsets their callers checked against the image's length.

/// Slot word bits: fingerprint 48..64, offset/8 in 1..48, persist bit 0.
pub const MARKER_OFFSET: u64 = 8;

pub fn slot_offset(word: u64) -> u64 {
    ((word >> 1) & ((1u64 << 47) - 1)) << 3
}

pub fn slot_fingerprint(word: u64) -> u16 {
    (word >> 48) as u16
}

pub(super) fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

pub(super) fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

/// A key's record word in the ordered index (DRAM point index): a linked
/// skiplist node's, or a leaf entry in its leaf's range.
#[derive(Clone, Debug)]
pub struct NodeWord {
    /// The skiplist node, or the leaf holding the entry.
    pub node: u64,
    /// Where the record word is (the node's `NODE_RECORD`, or the entry).
    pub at: u64,
    /// The node's key, or the key of the record the entry names.
    pub key: Vec<u8>,
    pub word: u64,
}

impl NodeWord {
    /// Neither 0 nor a delete marker, and without its persist bit: the
    /// first phase of a two-phase write (or of a delete's marker) whose
    /// second store did not reach media.
    pub fn half_done(&self) -> bool {
        self.word != 0 && self.word & 1 == 0
    }
}
