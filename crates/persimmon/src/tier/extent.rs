//! The value field of a record whose value lives on the SSD tier (record
//! flag `REC_FLAG_EXTERNAL`): an extent descriptor, the value's unaligned
//! tail, and the partial updates not yet merged into the extent (MixStore's
//! delayed merge). Drawn byte by byte in docs/design.md §6c.
//!
//! ```text
//!  0  u32 file          data file number
//!  4  u32 extent_bytes  bytes on SSD (a multiple of EXTENT_ALIGN, > 0)
//!  8  u64 offset        extent's byte offset in the file (aligned)
//! 16  u32 extent_crc    CRC32C of the extent bytes
//! 20  u32 value_len     the value's length after every patch
//! 24  u32 tail_len      bytes of tail after the descriptor
//! 28  u32 patches       number of patches after the tail
//! 32  tail bytes
//!     patches: { u32 offset, u32 len, len bytes } each, in write order
//! ```
//!
//! Invariants:
//! - The value is `extent ++ tail` with each patch applied in order (a
//!   patch past the end extends the value, zero-filled in between); its
//!   length is `value_len`. Any field that breaks this is corruption, never
//!   a panic.
//! - The whole field is covered by the record's CRC (it is the record's
//!   value bytes); the extent by `extent_crc`.

use super::key::{extent_key, ExtentKey, EXTENT_ALIGN, MAX_FILES, MAX_FILE_OFFSET};
use crate::layout::{get_u32, get_u64, put_u32, put_u64};

/// Bytes of the descriptor at the start of the value field.
pub const DESCRIPTOR_BYTES: usize = 32;
/// Bytes of a patch's header (offset, length).
pub const PATCH_HEADER_BYTES: usize = 8;

/// Where a value's aligned prefix lives on the SSD tier.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Extent {
    pub file: u32,
    pub offset: u64,
    pub bytes: u32,
    pub crc: u32,
}

impl Extent {
    /// The cache key of this extent.
    pub fn key(&self) -> ExtentKey {
        extent_key(self.file, self.offset)
    }
}

/// A decoded value field (borrowing the record's bytes).
#[derive(Debug)]
pub struct ExternalValue<'a> {
    pub extent: Extent,
    pub value_len: u32,
    pub tail: &'a [u8],
    pub patch_count: u32,
    /// The encoded patches (after the tail).
    pub patches: &'a [u8],
}

/// Why a value field does not decode.
pub type FieldError = &'static str;

impl<'a> ExternalValue<'a> {
    /// Decodes a value field; checks every length against the field.
    pub fn decode(field: &'a [u8]) -> Result<ExternalValue<'a>, FieldError> {
        if field.len() < DESCRIPTOR_BYTES {
            return Err("external value field shorter than its descriptor");
        }
        let extent = Extent {
            file: get_u32(field, 0),
            bytes: get_u32(field, 4),
            offset: get_u64(field, 8),
            crc: get_u32(field, 16),
        };
        if extent.bytes == 0
            || !(extent.bytes as u64).is_multiple_of(EXTENT_ALIGN)
            || !extent.offset.is_multiple_of(EXTENT_ALIGN)
        {
            return Err("extent descriptor is not aligned");
        }
        // Inside what an extent key can name (no two extents share a key).
        if extent.file >= MAX_FILES || extent.offset >= MAX_FILE_OFFSET {
            return Err("extent descriptor names an impossible file or offset");
        }
        if get_u32(field, 20) as usize > crate::layout::MAX_VALUE_BYTES {
            return Err("external value longer than any value");
        }
        let tail_len = get_u32(field, 24) as usize;
        let rest = &field[DESCRIPTOR_BYTES..];
        if tail_len > rest.len() {
            return Err("external value tail runs past its record");
        }
        Ok(ExternalValue {
            extent,
            value_len: get_u32(field, 20),
            tail: &rest[..tail_len],
            patch_count: get_u32(field, 28),
            patches: &rest[tail_len..],
        })
    }

    /// Bytes of patches waiting to be merged.
    pub fn patch_bytes(&self) -> usize {
        self.patches.len()
    }

    /// The whole value: `extent` (its bytes, already verified) with the
    /// tail appended and every patch applied.
    pub fn assemble(&self, extent: &[u8]) -> Result<Vec<u8>, FieldError> {
        debug_assert_eq!(extent.len(), self.extent.bytes as usize);
        let mut v = Vec::with_capacity(self.value_len as usize);
        v.extend_from_slice(extent);
        v.extend_from_slice(self.tail);
        self.each_patch(|at, bytes| {
            if v.len() < at + bytes.len() {
                v.resize(at + bytes.len(), 0);
            }
            v[at..at + bytes.len()].copy_from_slice(bytes);
        })?;
        if v.len() != self.value_len as usize {
            return Err("external value's length disagrees with its descriptor");
        }
        Ok(v)
    }

    /// The first `n` bytes of the value (`n` at most the extent's length):
    /// the extent's, with the patches that reach them applied.
    pub fn head(&self, extent: &[u8], n: usize) -> Result<Vec<u8>, FieldError> {
        let mut h = extent[..n.min(extent.len())].to_vec();
        self.each_patch(|at, bytes| {
            for (i, &b) in bytes.iter().enumerate() {
                if let Some(slot) = h.get_mut(at + i) {
                    *slot = b;
                }
            }
        })?;
        Ok(h)
    }

    /// Calls `f(offset, bytes)` for each patch in order, checking each
    /// against the field and the value's length.
    fn each_patch(&self, mut f: impl FnMut(usize, &[u8])) -> Result<(), FieldError> {
        let mut p = self.patches;
        for _ in 0..self.patch_count {
            if p.len() < PATCH_HEADER_BYTES {
                return Err("external value patch header runs past its record");
            }
            let at = get_u32(p, 0) as usize;
            let len = get_u32(p, 4) as usize;
            let bytes = p
                .get(PATCH_HEADER_BYTES..PATCH_HEADER_BYTES + len)
                .ok_or("external value patch runs past its record")?;
            if at + len > self.value_len as usize {
                return Err("external value patch reaches past the value's length");
            }
            f(at, bytes);
            p = &p[PATCH_HEADER_BYTES + len..];
        }
        match p.is_empty() {
            true => Ok(()),
            false => Err("external value has bytes after its last patch"),
        }
    }

    /// The value field with one more patch (`bytes` at `at`) appended.
    pub fn with_patch(&self, at: u32, bytes: &[u8]) -> Vec<u8> {
        let value_len = self.value_len.max(at + bytes.len() as u32);
        let mut f = encode(&self.extent, value_len, self.tail, self.patch_count + 1);
        f.extend_from_slice(self.patches);
        let mut h = [0u8; PATCH_HEADER_BYTES];
        put_u32(&mut h, 0, at);
        put_u32(&mut h, 4, bytes.len() as u32);
        f.extend_from_slice(&h);
        f.extend_from_slice(bytes);
        f
    }
}

/// The value field of a value whose first `extent.bytes` bytes are in
/// `extent` and whose rest is `tail`; `patch_count` patches are to follow
/// (the caller appends them).
pub fn encode(extent: &Extent, value_len: u32, tail: &[u8], patch_count: u32) -> Vec<u8> {
    let mut f = vec![0u8; DESCRIPTOR_BYTES];
    put_u32(&mut f, 0, extent.file);
    put_u32(&mut f, 4, extent.bytes);
    put_u64(&mut f, 8, extent.offset);
    put_u32(&mut f, 16, extent.crc);
    put_u32(&mut f, 20, value_len);
    put_u32(&mut f, 24, tail.len() as u32);
    put_u32(&mut f, 28, patch_count);
    f.extend_from_slice(tail);
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    fn extent() -> Extent {
        Extent {
            file: 3,
            offset: 8192,
            bytes: 4096,
            crc: 7,
        }
    }

    #[test]
    fn value_field_round_trips_with_tail_and_patches() {
        let base: Vec<u8> = (0..4096u32).map(|i| i as u8).collect();
        let f = encode(&extent(), 4100, b"tail", 0);
        let v = ExternalValue::decode(&f).unwrap();
        assert_eq!(v.extent, extent());
        let mut want = base.clone();
        want.extend_from_slice(b"tail");
        assert_eq!(v.assemble(&base).unwrap(), want);
        // A patch inside, then one past the end (zero fill between).
        let f = v.with_patch(10, b"XY");
        let v = ExternalValue::decode(&f).unwrap();
        let f = v.with_patch(4102, b"!");
        let v = ExternalValue::decode(&f).unwrap();
        assert_eq!(v.patch_count, 2);
        want[10..12].copy_from_slice(b"XY");
        want.extend_from_slice(&[0, 0, b'!']);
        assert_eq!(v.assemble(&base).unwrap(), want);
    }

    #[test]
    fn damaged_fields_are_errors_not_panics() {
        let good = encode(&extent(), 4100, b"tail", 0);
        assert!(ExternalValue::decode(&good[..20]).is_err());
        let mut bad = good.clone();
        put_u32(&mut bad, 24, 1000); // tail past the field
        assert!(ExternalValue::decode(&bad).is_err());
        let mut bad = good.clone();
        put_u32(&mut bad, 4, 100); // unaligned extent
        assert!(ExternalValue::decode(&bad).is_err());
        let mut bad = good.clone();
        put_u32(&mut bad, 28, 1); // a patch that is not there
        let v = ExternalValue::decode(&bad).unwrap();
        assert!(v.assemble(&[0u8; 4096]).is_err());
        let mut bad = good;
        put_u32(&mut bad, 20, 5000); // length disagrees
        let v = ExternalValue::decode(&bad).unwrap();
        assert!(v.assemble(&[0u8; 4096]).is_err());
    }
}
