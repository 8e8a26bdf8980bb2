//! The packed blobs Redis stores small collections in, read into their
//! entries: listpacks (Redis 7), ziplists (Redis 3.2 to 6.2), zipmaps
//! (hashes before Redis 2.6) and intsets (sets of integers); and listpacks
//! written, for the nodes of a dumped list.
//!
//! - Listpack: `total bytes: u32 LE, count: u16 LE` (65535: unknown),
//!   entries, `0xff`. An entry is its encoding and data, then its own
//!   length again ("backlen", 1 to 5 bytes, 7 bits each, read backwards).
//! - Ziplist: `total bytes: u32 LE, offset of the last entry: u32 LE,
//!   count: u16 LE` (65535: unknown), entries, `0xff`. An entry is the
//!   previous entry's length (1 byte, or `0xfe` and a u32 LE), then its
//!   encoding and data.
//! - Zipmap: `count: u8` (254 or more: unknown), then `length, field,
//!   length, free, value, free bytes` per pair, `0xff`; a length is one byte
//!   below 254, or `0xfe` and a u32 LE.
//!
//! - Intset: `encoding: u32 LE` (2, 4 or 8: bytes per integer), `count:
//!   u32 LE`, then the integers, little-endian.
//!
//! Invariants: each reader checks every header against the blob's size
//! and every entry against the bytes left before the terminator, as Redis's
//! deep integrity check does: the blob must be exactly as long as it says,
//! every entry's recorded lengths must agree, the terminator must be the
//! last byte and the count (when known) must match. Entries borrow from the
//! blob.

use super::primitives::{int_text, parse_score};
use super::value::RdbError;

/// One entry of a packed blob: bytes, or an integer standing for its
/// decimal text.
#[derive(Debug, PartialEq)]
pub(super) enum Entry<'a> {
    Bytes(&'a [u8]),
    Int(i64),
}

impl Entry<'_> {
    pub(super) fn into_bytes(self) -> Vec<u8> {
        match self {
            Entry::Bytes(b) => b.to_vec(),
            Entry::Int(v) => int_text(v).into_owned(),
        }
    }

    /// The entry read as a sorted set score.
    pub(super) fn score(&self) -> Result<f64, RdbError> {
        match self {
            Entry::Bytes(b) => parse_score(b),
            Entry::Int(v) => Ok(*v as f64),
        }
    }
}

const END: u8 = 0xff;
const UNKNOWN_COUNT: u16 = u16::MAX;

const LISTPACK_HEADER: usize = 6;
const ZIPLIST_HEADER: usize = 10;

/// Bytes `at..at + n` of `blob`, if it has them.
fn slice(blob: &[u8], at: usize, n: usize) -> Result<&[u8], RdbError> {
    at.checked_add(n)
        .and_then(|end| blob.get(at..end))
        .ok_or_else(RdbError::bad)
}

fn le_u32(blob: &[u8], at: usize) -> Result<u32, RdbError> {
    let mut b = [0u8; 4];
    b.copy_from_slice(slice(blob, at, 4)?);
    Ok(u32::from_le_bytes(b))
}

fn le_u16(blob: &[u8], at: usize) -> Result<u16, RdbError> {
    Ok(u16::from_le_bytes([byte(blob, at)?, byte(blob, at + 1)?]))
}

fn byte(blob: &[u8], at: usize) -> Result<u8, RdbError> {
    blob.get(at).copied().ok_or_else(RdbError::bad)
}

/// A little-endian signed integer of `n` bytes at `at`, sign-extended.
fn le_int(blob: &[u8], at: usize, n: usize) -> Result<i64, RdbError> {
    let mut b = [0u8; 8];
    b[..n].copy_from_slice(slice(blob, at, n)?);
    let shift = 64 - 8 * n as u32;
    Ok(i64::from_le_bytes(b) << shift >> shift)
}

/// The blob's declared total must be its size and its last byte `0xff`;
/// returns where the terminator is.
fn check_frame(blob: &[u8], header: usize) -> Result<usize, RdbError> {
    if blob.len() < header + 1
        || le_u32(blob, 0)? as usize != blob.len()
        || blob[blob.len() - 1] != END
    {
        return Err(RdbError::bad());
    }
    Ok(blob.len() - 1)
}

fn check_count(declared: u16, found: usize) -> Result<(), RdbError> {
    if declared != UNKNOWN_COUNT && usize::from(declared) != found {
        return Err(RdbError::bad());
    }
    Ok(())
}

/// A listpack's entries.
pub(super) fn listpack(blob: &[u8]) -> Result<Vec<Entry<'_>>, RdbError> {
    let end = check_frame(blob, LISTPACK_HEADER)?;
    let declared = le_u16(blob, 4)?;
    let mut entries = Vec::new();
    let mut at = LISTPACK_HEADER;
    while blob[at] != END {
        let area = &blob[..end];
        let (entry, size) = listpack_entry(area, at)?;
        let backlen = backlen(size);
        if slice(area, at + size, backlen.len())? != backlen.as_slice() {
            return Err(RdbError::bad());
        }
        entries.push(entry);
        at += size + backlen.len();
    }
    if at != end {
        return Err(RdbError::bad());
    }
    check_count(declared, entries.len())?;
    Ok(entries)
}

/// The listpack entry at `at` and its size less its backlen.
fn listpack_entry(area: &[u8], at: usize) -> Result<(Entry<'_>, usize), RdbError> {
    let first = byte(area, at)?;
    let int = |n: usize| -> Result<(Entry<'_>, usize), RdbError> {
        Ok((Entry::Int(le_int(area, at + 1, n)?), 1 + n))
    };
    let string = |head: usize, len: usize| -> Result<(Entry<'_>, usize), RdbError> {
        Ok((Entry::Bytes(slice(area, at + head, len)?), head + len))
    };
    match first {
        0x00..=0x7f => Ok((Entry::Int(i64::from(first)), 1)),
        0x80..=0xbf => string(1, usize::from(first & 0x3f)),
        0xc0..=0xdf => {
            let raw = i64::from(first & 0x1f) << 8 | i64::from(byte(area, at + 1)?);
            let value = if raw >= 1 << 12 { raw - (1 << 13) } else { raw };
            Ok((Entry::Int(value), 2))
        }
        0xe0..=0xef => string(
            2,
            usize::from(first & 0x0f) << 8 | usize::from(byte(area, at + 1)?),
        ),
        0xf0 => string(5, le_u32(area, at + 1)? as usize),
        0xf1 => int(2),
        0xf2 => int(3),
        0xf3 => int(4),
        0xf4 => int(8),
        _ => Err(RdbError::bad()),
    }
}

/// How a listpack entry of `size` bytes records its size after itself
/// (Redis's thresholds, including its 16383 and 2097151 boundaries).
fn backlen(size: usize) -> Vec<u8> {
    let size = size as u64;
    let groups = match size {
        0..=127 => 1,
        128..=16382 => 2,
        16383..=2097150 => 3,
        2097151..=268435454 => 4,
        _ => 5,
    };
    (0..groups)
        .rev()
        .enumerate()
        .map(|(i, shift)| {
            let bits = (size >> (7 * shift)) as u8;
            if i == 0 {
                bits
            } else {
                (bits & 0x7f) | 0x80
            }
        })
        .collect()
}

/// A listpack of `entries`, each stored as Redis's `lpAppend` stores it:
/// an integer's canonical text in the smallest integer encoding, any other
/// string as bytes. The count is 65535 (unknown) past 65534 entries.
pub(super) fn listpack_encode(entries: &[&[u8]]) -> Vec<u8> {
    let mut out = vec![0; LISTPACK_HEADER];
    for e in entries {
        let start = out.len();
        match canonical_i64(e) {
            Some(v) => put_lp_int(&mut out, v),
            None => put_lp_string(&mut out, e),
        }
        let size = out.len() - start;
        out.extend_from_slice(&backlen(size));
    }
    out.push(END);
    let total = out.len() as u32;
    out[..4].copy_from_slice(&total.to_le_bytes());
    let count = u16::try_from(entries.len()).unwrap_or(UNKNOWN_COUNT);
    out[4..6].copy_from_slice(&count.to_le_bytes());
    out
}

/// The integer `s` spells if `s` is its canonical decimal text (Redis's
/// `string2ll`: no plus, no leading zero, no `-0`).
fn canonical_i64(s: &[u8]) -> Option<i64> {
    if s.is_empty() || s.len() > 20 {
        return None;
    }
    let v: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (v.to_string().as_bytes() == s).then_some(v)
}

fn put_lp_int(out: &mut Vec<u8>, v: i64) {
    let (head, n): (u8, usize) = match v {
        0..=127 => return out.push(v as u8),
        -4096..=4095 => {
            let raw = (v as u16) & 0x1fff;
            return out.extend_from_slice(&[0xc0 | (raw >> 8) as u8, raw as u8]);
        }
        -32768..=32767 => (0xf1, 2),
        -8_388_608..=8_388_607 => (0xf2, 3),
        -2_147_483_648..=2_147_483_647 => (0xf3, 4),
        _ => (0xf4, 8),
    };
    out.push(head);
    out.extend_from_slice(&v.to_le_bytes()[..n]);
}

fn put_lp_string(out: &mut Vec<u8>, s: &[u8]) {
    let len = s.len();
    if len < 64 {
        out.push(0x80 | len as u8);
    } else if len < 4096 {
        out.extend_from_slice(&[0xe0 | (len >> 8) as u8, len as u8]);
    } else {
        out.push(0xf0);
        out.extend_from_slice(&(len as u32).to_le_bytes());
    }
    out.extend_from_slice(s);
}

/// An intset's integers, if its header agrees with its size.
pub(super) fn intset(blob: &[u8]) -> Result<Vec<i64>, RdbError> {
    let width = le_u32(blob, 0)? as usize;
    let count = le_u32(blob, 4)? as usize;
    if ![2, 4, 8].contains(&width)
        || count.checked_mul(width) != Some(blob.len().saturating_sub(8))
        || blob.len() < 8
    {
        return Err(RdbError::bad());
    }
    (0..count)
        .map(|i| le_int(blob, 8 + i * width, width))
        .collect()
}

/// A ziplist's entries.
pub(super) fn ziplist(blob: &[u8]) -> Result<Vec<Entry<'_>>, RdbError> {
    let end = check_frame(blob, ZIPLIST_HEADER)?;
    let tail = le_u32(blob, 4)? as usize;
    let declared = le_u16(blob, 8)?;
    if tail > end {
        return Err(RdbError::bad());
    }
    let area = &blob[..end];
    let mut entries = Vec::new();
    let (mut at, mut previous, mut last) = (ZIPLIST_HEADER, 0, None);
    while blob[at] != END {
        let (prevlen, prevlen_size) = ziplist_prevlen(area, at)?;
        if prevlen != previous {
            return Err(RdbError::bad());
        }
        let (entry, size) = ziplist_entry(area, at + prevlen_size)?;
        entries.push(entry);
        last = Some(at);
        previous = prevlen_size + size;
        at += previous;
    }
    if at != end || last.is_some_and(|last| last != tail) {
        return Err(RdbError::bad());
    }
    check_count(declared, entries.len())?;
    Ok(entries)
}

/// The previous entry's length as recorded at `at`, and the bytes used.
fn ziplist_prevlen(area: &[u8], at: usize) -> Result<(usize, usize), RdbError> {
    match byte(area, at)? {
        0xfe => Ok((le_u32(area, at + 1)? as usize, 5)),
        short => Ok((usize::from(short), 1)),
    }
}

/// The ziplist entry whose encoding is at `at`, and its size from there.
fn ziplist_entry(area: &[u8], at: usize) -> Result<(Entry<'_>, usize), RdbError> {
    let first = byte(area, at)?;
    let int = |n: usize| -> Result<(Entry<'_>, usize), RdbError> {
        Ok((Entry::Int(le_int(area, at + 1, n)?), 1 + n))
    };
    let string = |head: usize, len: usize| -> Result<(Entry<'_>, usize), RdbError> {
        Ok((Entry::Bytes(slice(area, at + head, len)?), head + len))
    };
    match first {
        0x00..=0x3f => string(1, usize::from(first & 0x3f)),
        0x40..=0x7f => string(
            2,
            usize::from(first & 0x3f) << 8 | usize::from(byte(area, at + 1)?),
        ),
        0x80..=0xbf => {
            let mut len = [0u8; 4];
            len.copy_from_slice(slice(area, at + 1, 4)?);
            string(5, u32::from_be_bytes(len) as usize)
        }
        0xc0 => int(2),
        0xd0 => int(4),
        0xe0 => int(8),
        0xf0 => int(3),
        0xfe => int(1),
        0xf1..=0xfd => Ok((Entry::Int(i64::from(first & 0x0f) - 1), 1)),
        _ => Err(RdbError::bad()),
    }
}

/// A zipmap's entries (field, value, field, value...).
pub(super) fn zipmap(blob: &[u8]) -> Result<Vec<Entry<'_>>, RdbError> {
    let declared = byte(blob, 0)?;
    if blob.len() < 2 || blob[blob.len() - 1] != END {
        return Err(RdbError::bad());
    }
    let area = &blob[..blob.len() - 1];
    let mut entries = Vec::new();
    let mut at = 1;
    while blob[at] != END {
        let (field_len, size) = zipmap_len(area, at)?;
        let field = slice(area, at + size, field_len)?;
        at += size + field_len;
        let (value_len, size) = zipmap_len(area, at)?;
        let free = usize::from(byte(area, at + size)?);
        let value = slice(area, at + size + 1, value_len)?;
        slice(area, at + size + 1 + value_len, free)?;
        at += size + 1 + value_len + free;
        entries.push(Entry::Bytes(field));
        entries.push(Entry::Bytes(value));
    }
    let pairs = entries.len() / 2;
    if at != area.len() || pairs == 0 || (declared != 254 && usize::from(declared) != pairs) {
        return Err(RdbError::bad());
    }
    Ok(entries)
}

/// A zipmap length at `at` and the bytes it takes.
fn zipmap_len(area: &[u8], at: usize) -> Result<(usize, usize), RdbError> {
    match byte(area, at)? {
        0xfe => Ok((le_u32(area, at + 1)? as usize, 5)),
        END => Err(RdbError::bad()),
        short => Ok((usize::from(short), 1)),
    }
}
