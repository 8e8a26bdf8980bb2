//! The byte format of a leaf (design.md §3, `layout:leaf`; constants in
//! `layout`): reading a slot's header, writing a new leaf with its two
//! persist points, the entry addresses, and the key of a record an entry
//! names. Nothing here is concurrent: callers hold what protects the bytes.

use crate::error::{Error, Result};
use crate::layout::{
    self, Slot, LEAF_BODY_BYTES, LEAF_ENTRY_BYTES, LEAF_HEADER_BYTES, LEAF_INLINE_LOW,
    LEAF_LOW_CRC, LEAF_LOW_INLINE, LEAF_MAGIC,
};
use crate::pool::Pool;

/// What reading a leaf's header found.
pub(super) enum Header {
    Free,
    Leaf(Vec<u8>),
}

#[inline]
pub(super) fn entry_at(leaf: u64, i: usize) -> u64 {
    leaf + (LEAF_HEADER_BYTES + i * LEAF_ENTRY_BYTES) as u64
}

fn low_crc(low: &[u8]) -> u32 {
    layout::node_crc(low)
}

/// The key of the record at `off` (a word read from a leaf: untrusted; a
/// record whose value length is damaged still has its key read).
pub(crate) fn record_key(pool: &Pool, off: u64) -> Result<&[u8]> {
    let h = pool.record_key_header(off)?;
    pool.pm.slice(off + h.key_at(), h.key_len as usize)
}

/// Whether the record at `off` is whole: its header sane and its CRC32C
/// matching.
pub(crate) fn intact_record(pool: &Pool, off: u64) -> Result<()> {
    pool.verify_record(off, &pool.record_header(off)?)
}

/// Reads the header of the leaf slot at `leaf` (class `class`).
pub(super) fn read_header(pool: &Pool, leaf: u64, class: u32) -> Result<Header> {
    let w0 = pool.pm.load_u64(leaf + layout::LEAF_WORD0 as u64);
    if w0 as u32 != LEAF_MAGIC {
        return Ok(Header::Free);
    }
    let len = (w0 >> 32) as usize;
    let at = if len <= LEAF_INLINE_LOW {
        leaf + LEAF_LOW_INLINE as u64
    } else {
        leaf + LEAF_BODY_BYTES as u64
    };
    if (at - leaf) as usize + len > 1 << class {
        return Err(Error::corruption(leaf, "leaf low key longer than its slot"));
    }
    let low = pool.pm.slice(at, len)?;
    let crc = pool.pm.load_u64(leaf + LEAF_LOW_CRC as u64) as u32;
    if crc != low_crc(low) {
        return Err(Error::corruption(leaf, "leaf low key CRC32C mismatch"));
    }
    Ok(Header::Leaf(low.to_vec()))
}

/// Writes a new leaf at `leaf` (`bytes` long): entries `(word, prefix)`,
/// low key `low`; everything but word 0 first, then word 0 (see the module
/// header for the two persist points).
pub(super) fn write_leaf(pool: &Pool, leaf: u64, bytes: usize, low: &[u8], entries: &[(u64, u64)]) {
    let pm = &pool.pm;
    let mut buf = vec![0u8; bytes];
    buf[LEAF_LOW_CRC..LEAF_LOW_CRC + 4].copy_from_slice(&low_crc(low).to_le_bytes());
    let low_at = if low.len() <= LEAF_INLINE_LOW {
        LEAF_LOW_INLINE
    } else {
        LEAF_BODY_BYTES
    };
    buf[low_at..low_at + low.len()].copy_from_slice(low);
    for (i, &(word, prefix)) in entries.iter().enumerate() {
        let at = LEAF_HEADER_BYTES + i * LEAF_ENTRY_BYTES;
        // Copies are durable with this leaf: marked persisted.
        buf[at..at + 8].copy_from_slice(&Slot(word).with_persist().0.to_le_bytes());
        buf[at + 8..at + 16].copy_from_slice(&prefix.to_be_bytes());
    }
    pm.write(leaf + 8, &buf[8..]);
    pm.flush(leaf, bytes);
    // Persist point: the leaf's entries and low key are durable.
    pm.fence();
    pm.store_u64(leaf, LEAF_MAGIC as u64 | (low.len() as u64) << 32);
    pm.flush(leaf, 8);
    // Persist point: the leaf exists.
    pm.fence();
}
