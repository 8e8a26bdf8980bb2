//! Bit commands on string values: SETBIT, GETBIT, BITCOUNT, BITPOS, BITOP.
//! Bit 0 is the most significant bit of the first byte, as in Redis; a
//! missing key reads as an empty string, and bits past a string's end read
//! as 0.
//!
//! Invariants:
//! - Arguments are checked in Redis's order, so the same bad request gets
//!   the same error (BITCOUNT and BITPOS of a missing key answer before
//!   their range is parsed, as Redis does).
//! - SETBIT rewrites the value inside one `update` closure (atomic; the
//!   stored bytes other than the bit, and the key's time to live, kept);
//!   setting a bit to what it already is writes nothing.
//! - A bit offset is Redis's (0 to 2^32 - 1) and, for SETBIT, also within
//!   what the server can store ([`MAX_STRING_BYTES`]); the error says which
//!   limit was hit.
//! - BITOP reads its sources and writes its destination in one atomic unit.

use persimmon::Update;
use persimmon_resp::Args;
use persimmon_types::error::{check_key, wrongtype};
use persimmon_types::store::Store;
use persimmon_types::value::{self, Stored, MAX_STRING_BYTES};
use persimmon_types::Error;

use crate::session::{int_arg, is, syntax, Session};

/// Redis's bound on bit offsets: 512 MiB (its `proto-max-bulk-len`) of bits.
const REDIS_MAX_BIT_OFFSET: u64 = (512 << 20) * 8;

fn bad_offset() -> Error {
    Error::new("ERR bit offset is not an integer or out of range")
}

/// A bit offset as Redis reads it (GETBIT's bound).
fn bit_offset(arg: &[u8]) -> Result<u64, Error> {
    match int_arg(arg) {
        Ok(n) if (0..REDIS_MAX_BIT_OFFSET as i64).contains(&n) => Ok(n as u64),
        _ => Err(bad_offset()),
    }
}

/// A bit offset SETBIT can write: Redis's bound and the server's.
fn writable_offset(arg: &[u8]) -> Result<u64, Error> {
    let offset = bit_offset(arg)?;
    if offset / 8 >= MAX_STRING_BYTES as u64 {
        return Err(Error::new(format!(
            "ERR bit offset is out of range: persimmon stores at most {MAX_STRING_BYTES} bytes \
             per string (its 64 MiB value limit less the 1-byte type tag), so a bit offset must \
             be below {}",
            MAX_STRING_BYTES as u64 * 8
        )));
    }
    Ok(offset)
}

/// The mask of bit `offset` within its byte.
fn mask(offset: u64) -> u8 {
    0x80 >> (offset % 8)
}

pub fn setbit(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let offset = writable_offset(a.get(2))?;
    let on = match int_arg(a.get(3)) {
        Ok(b @ (0 | 1)) => b == 1,
        _ => return Err(Error::new("ERR bit is not an integer or out of range")),
    };
    check_key(key)?;
    let byte = (offset / 8) as usize;
    let was = s.store.try_update(key, |old| {
        let body: &[u8] = match old {
            None => b"",
            Some(Stored::String(body)) => body,
            Some(_) => return Err(wrongtype()),
        };
        let was = body.get(byte).is_some_and(|b| b & mask(offset) != 0);
        if old.is_some() && byte < body.len() && was == on {
            return Ok((Update::Keep, was));
        }
        let len = body.len().max(byte + 1);
        let mut v = Vec::with_capacity(1 + len);
        v.push(value::TAG_STRING);
        v.extend_from_slice(body);
        v.resize(1 + len, 0);
        if on {
            v[1 + byte] |= mask(offset);
        } else {
            v[1 + byte] &= !mask(offset);
        }
        Ok((Update::Put(v), was))
    })?;
    s.out.int(was as i64);
    Ok(())
}

pub fn getbit(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let offset = bit_offset(a.get(2))?;
    let byte = (offset / 8) as usize;
    let bit = s
        .store
        .get(a.get(1), |v| match v {
            Stored::String(body) => Ok(body.get(byte).is_some_and(|b| b & mask(offset) != 0)),
            _ => Err(wrongtype()),
        })?
        .transpose()?
        .unwrap_or(false);
    s.out.int(bit as i64);
    Ok(())
}

/// Runs `f` on the string at `key`; `None` when the key is missing.
fn with_string<R>(
    store: &mut Store,
    key: &[u8],
    f: impl FnOnce(&[u8]) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    store
        .get(key, |v| match v {
            Stored::String(body) => f(body),
            _ => Err(wrongtype()),
        })?
        .transpose()
}

/// Whether a range's unit argument says BIT (`true`) or BYTE.
fn unit_is_bit(arg: &[u8]) -> Result<bool, Error> {
    if is(arg, "BIT") {
        Ok(true)
    } else if is(arg, "BYTE") {
        Ok(false)
    } else {
        Err(syntax())
    }
}

/// A start/end range of a string of `len` bytes, resolved as Redis does
/// (negative from the end, clamped), as inclusive bit positions; `None`
/// when empty.
fn bit_range(len: usize, start: i64, end: i64, in_bits: bool) -> Option<(u64, u64)> {
    let total = len as i64 * if in_bits { 8 } else { 1 };
    let from_end = |i: i64| if i < 0 { (total + i).max(0) } else { i };
    let (start, end) = (from_end(start), from_end(end).min(total - 1));
    if start > end {
        return None;
    }
    let (start, end) = (start as u64, end as u64);
    Some(if in_bits {
        (start, end)
    } else {
        (start * 8, end * 8 + 7)
    })
}

/// The bytes of bit range `lo..=hi` with the bits outside the range
/// cleared (after `flip` inverted every byte): first, middle, last.
fn edges(body: &[u8], lo: u64, hi: u64, flip: bool) -> (u8, &[u8], Option<u8>) {
    let (first, last) = ((lo / 8) as usize, (hi / 8) as usize);
    let byte = |i: usize| if flip { !body[i] } else { body[i] };
    let head_mask = 0xFF >> (lo % 8);
    let tail_mask = 0xFF << (7 - hi % 8);
    if first == last {
        return (byte(first) & head_mask & tail_mask, &[], None);
    }
    (
        byte(first) & head_mask,
        &body[first + 1..last],
        Some(byte(last) & tail_mask),
    )
}

fn count_ones(body: &[u8], lo: u64, hi: u64) -> u64 {
    let (first, middle, last) = edges(body, lo, hi, false);
    let middle: u64 = middle.iter().map(|b| b.count_ones() as u64).sum();
    first.count_ones() as u64 + middle + last.map_or(0, |b| b.count_ones() as u64)
}

/// BITCOUNT key [start end [BYTE|BIT]].
pub fn bitcount(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_string(&mut s.store, a.get(1), |body| {
        let (lo, hi) = match a.len() {
            2 => match body.len() {
                0 => return Ok(0),
                len => (0, len as u64 * 8 - 1),
            },
            4 | 5 => {
                let (start, end) = (int_arg(a.get(2))?, int_arg(a.get(3))?);
                if start < 0 && end < 0 && start > end {
                    return Ok(0);
                }
                let in_bits = a.len() == 5 && unit_is_bit(a.get(4))?;
                match bit_range(body.len(), start, end, in_bits) {
                    Some(r) => r,
                    None => return Ok(0),
                }
            }
            _ => return Err(syntax()),
        };
        Ok(count_ones(body, lo, hi))
    })?;
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

/// The first bit equal to `bit` in `lo..=hi`.
fn first_bit(body: &[u8], bit: bool, lo: u64, hi: u64) -> Option<u64> {
    // Looking for a 0 is looking for a 1 in the inverted bytes.
    let (first, middle, last) = edges(body, lo, hi, !bit);
    let at = |byte_index: u64, b: u8| byte_index * 8 + b.leading_zeros() as u64;
    if first != 0 {
        return Some(at(lo / 8, first));
    }
    let skip = if bit { 0x00 } else { 0xFF };
    if let Some(i) = middle.iter().position(|&b| b != skip) {
        let b = if bit { middle[i] } else { !middle[i] };
        return Some(at(lo / 8 + 1 + i as u64, b));
    }
    last.filter(|&b| b != 0).map(|b| at(hi / 8, b))
}

/// BITPOS key bit [start [end [BYTE|BIT]]].
pub fn bitpos(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let bit = match int_arg(a.get(2))? {
        b @ (0 | 1) => b == 1,
        _ => return Err(Error::new("ERR The bit argument must be 1 or 0.")),
    };
    let pos = with_string(&mut s.store, a.get(1), |body| {
        let (start, end, in_bits) = match a.len() {
            3 => (0, -1, false),
            4..=6 => {
                let start = int_arg(a.get(3))?;
                let in_bits = a.len() == 6 && unit_is_bit(a.get(5))?;
                let end = if a.len() >= 5 { int_arg(a.get(4))? } else { -1 };
                (start, end, in_bits)
            }
            _ => return Err(syntax()),
        };
        let Some((lo, hi)) = bit_range(body.len(), start, end, in_bits) else {
            return Ok(-1);
        };
        Ok(match first_bit(body, bit, lo, hi) {
            Some(p) => p as i64,
            // No clear bit in the range: without an explicit end the string
            // counts as followed by clear bits, so the next one is the answer.
            None if !bit && a.len() <= 4 => hi as i64 + 1,
            None => -1,
        })
    })?;
    // A missing key is an endless run of clear bits.
    s.out.int(pos.unwrap_or(if bit { -1 } else { 0 }));
    Ok(())
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum BitOp {
    And,
    Or,
    Xor,
    Not,
}

impl BitOp {
    fn named(arg: &[u8]) -> Result<BitOp, Error> {
        let ops = [
            ("AND", BitOp::And),
            ("OR", BitOp::Or),
            ("XOR", BitOp::Xor),
            ("NOT", BitOp::Not),
        ];
        ops.iter()
            .find(|(name, _)| is(arg, name))
            .map(|&(_, op)| op)
            .ok_or_else(syntax)
    }

    /// The result of the operation over `sources` (missing ones empty),
    /// as long as the longest; shorter sources count as zero-padded.
    fn apply(self, sources: &[Vec<u8>]) -> Vec<u8> {
        let len = sources.iter().map(Vec::len).max().unwrap_or(0);
        let byte = |src: &Vec<u8>, i: usize| src.get(i).copied().unwrap_or(0);
        let mut out = match sources.first() {
            Some(first) => (0..len).map(|i| byte(first, i)).collect(),
            None => Vec::new(),
        };
        if self == BitOp::Not {
            out.iter_mut().for_each(|b| *b = !*b);
        }
        for src in sources.iter().skip(1) {
            for (i, o) in out.iter_mut().enumerate() {
                match self {
                    BitOp::And => *o &= byte(src, i),
                    BitOp::Or => *o |= byte(src, i),
                    BitOp::Xor => *o ^= byte(src, i),
                    BitOp::Not => unreachable!("NOT has one source"),
                }
            }
        }
        out
    }
}

/// BITOP AND|OR|XOR|NOT destkey srckey [srckey ...]: stores the result
/// (without a time to live) and replies its length; an empty result
/// deletes the destination.
pub fn bitop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let op = BitOp::named(a.get(1))?;
    if op == BitOp::Not && a.len() != 4 {
        return Err(Error::new(
            "ERR BITOP NOT must be called with a single source key.",
        ));
    }
    let dest = a.get(2);
    check_key(dest)?;
    let len = s.store.atomic(|st| {
        let mut sources = Vec::with_capacity(a.len() - 3);
        for key in a.from(3) {
            sources.push(with_string(st, key, |body| Ok(body.to_vec()))?.unwrap_or_default());
        }
        let result = op.apply(&sources);
        if result.is_empty() {
            st.delete(dest)?;
        } else {
            st.put(dest, &value::string(&result), None)?;
        }
        Ok(result.len())
    })?;
    s.out.int(len as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn ranges_follow_redis() {
        // "foobar" is 6 bytes.
        assert_eq!(bit_range(6, 0, -1, false), Some((0, 47)));
        assert_eq!(bit_range(6, 1, 1, false), Some((8, 15)));
        assert_eq!(bit_range(6, 5, 30, true), Some((5, 30)));
        assert_eq!(bit_range(6, -100, 100, true), Some((0, 47)));
        assert_eq!(bit_range(6, 3, 2, false), None);
        assert_eq!(bit_range(0, 0, -1, false), None);
    }

    #[test]
    fn counts_and_positions_respect_partial_bytes() {
        let body = [0b1111_0000u8, 0xFF, 0b0000_1111];
        assert_eq!(count_ones(&body, 0, 23), 16);
        assert_eq!(count_ones(&body, 2, 21), 12);
        assert_eq!(count_ones(&body, 5, 5), 0);
        assert_eq!(first_bit(&body, false, 0, 23), Some(4));
        assert_eq!(first_bit(&body, true, 4, 23), Some(8));
        assert_eq!(first_bit(&body, false, 8, 19), Some(16));
        assert_eq!(first_bit(&body, true, 16, 19), None);
        assert_eq!(first_bit(&body, true, 16, 20), Some(20));
        assert_eq!(first_bit(&[0xFF, 0xFF], false, 0, 15), None);
    }

    #[test]
    fn bitop_pads_short_sources_with_zeros() {
        let srcs = vec![vec![0xF0, 0x0F], vec![0xFF]];
        assert_eq!(BitOp::And.apply(&srcs), vec![0xF0, 0x00]);
        assert_eq!(BitOp::Or.apply(&srcs), vec![0xFF, 0x0F]);
        assert_eq!(BitOp::Xor.apply(&srcs), vec![0x0F, 0x0F]);
        assert_eq!(BitOp::Not.apply(&srcs[..1]), vec![0x0F, 0xF0]);
        assert_eq!(BitOp::And.apply(&[vec![], vec![]]), Vec::<u8>::new());
    }
}
