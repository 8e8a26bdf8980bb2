//! The RDB primitives: lengths, strings (plain, integer-encoded,
//! LZF-compressed) and doubles, read off untrusted bytes and written for
//! `payload::dump`.
//!
//! Invariants: every read checks the bytes that remain before it takes
//! them, so a length past the end is an error, never an out-of-bounds index
//! or an allocation of that length.

use std::borrow::Cow;

use super::lzf;
use super::value::RdbError;

/// A length's first byte: its two top bits say how it is stored.
const LEN_6BIT: u8 = 0;
const LEN_14BIT: u8 = 1;
const LEN_ENCODED: u8 = 3;
const LEN_32BIT: u8 = 0x80;
const LEN_64BIT: u8 = 0x81;

/// The special string encodings (the low six bits after `LEN_ENCODED`).
const ENC_INT8: u8 = 0;
const ENC_INT16: u8 = 1;
const ENC_INT32: u8 = 2;
const ENC_LZF: u8 = 3;

/// The first byte of an integer-encoded string, less the encoding.
const INT_PREFIX: u8 = LEN_ENCODED << 6;

/// Longest string Redis tries to store as an integer.
const MAX_INT_STRING: usize = 11;

/// A length as read: a plain length, or the number of a special encoding.
enum Len {
    Plain(u64),
    Encoded(u8),
}

/// A cursor over untrusted bytes.
pub(super) struct Input<'a> {
    rest: &'a [u8],
}

impl<'a> Input<'a> {
    pub(super) fn new(bytes: &'a [u8]) -> Input<'a> {
        Input { rest: bytes }
    }

    /// Succeeds only if every byte was read.
    pub(super) fn finish(&self) -> Result<(), RdbError> {
        if self.rest.is_empty() {
            Ok(())
        } else {
            Err(RdbError::bad())
        }
    }

    pub(super) fn byte(&mut self) -> Result<u8, RdbError> {
        Ok(self.take(1)?[0])
    }

    /// The next `n` bytes, if there are that many.
    pub(super) fn take(&mut self, n: u64) -> Result<&'a [u8], RdbError> {
        let n = usize::try_from(n).map_err(|_| RdbError::bad())?;
        if n > self.rest.len() {
            return Err(RdbError::bad());
        }
        let (taken, rest) = self.rest.split_at(n);
        self.rest = rest;
        Ok(taken)
    }

    fn array<const N: usize>(&mut self) -> Result<[u8; N], RdbError> {
        let mut out = [0u8; N];
        out.copy_from_slice(self.take(N as u64)?);
        Ok(out)
    }

    fn len(&mut self) -> Result<Len, RdbError> {
        let first = self.byte()?;
        match first >> 6 {
            LEN_6BIT => return Ok(Len::Plain(u64::from(first & 0x3f))),
            LEN_14BIT => {
                let low = self.byte()?;
                return Ok(Len::Plain(u64::from(first & 0x3f) << 8 | u64::from(low)));
            }
            LEN_ENCODED => return Ok(Len::Encoded(first & 0x3f)),
            _ => {}
        }
        match first {
            LEN_32BIT => Ok(Len::Plain(u64::from(u32::from_be_bytes(self.array()?)))),
            LEN_64BIT => Ok(Len::Plain(u64::from_be_bytes(self.array()?))),
            _ => Err(RdbError::bad()),
        }
    }

    /// A plain length.
    pub(super) fn plain_len(&mut self) -> Result<u64, RdbError> {
        match self.len()? {
            Len::Plain(n) => Ok(n),
            Len::Encoded(_) => Err(RdbError::bad()),
        }
    }

    /// A count of elements each at least `min_bytes` long, refused if the
    /// bytes that remain cannot hold that many.
    pub(super) fn count(&mut self, min_bytes: usize) -> Result<usize, RdbError> {
        let count = self.plain_len()?;
        let fits = (self.rest.len() / min_bytes.max(1)) as u64;
        if count > fits {
            return Err(RdbError::bad());
        }
        usize::try_from(count).map_err(|_| RdbError::bad())
    }

    /// A string in any of its encodings.
    pub(super) fn string(&mut self) -> Result<Cow<'a, [u8]>, RdbError> {
        match self.len()? {
            Len::Plain(n) => Ok(Cow::Borrowed(self.take(n)?)),
            Len::Encoded(ENC_INT8) => Ok(int_text(i64::from(i8::from_le_bytes(self.array()?)))),
            Len::Encoded(ENC_INT16) => Ok(int_text(i64::from(i16::from_le_bytes(self.array()?)))),
            Len::Encoded(ENC_INT32) => Ok(int_text(i64::from(i32::from_le_bytes(self.array()?)))),
            Len::Encoded(ENC_LZF) => {
                let compressed_len = self.plain_len()?;
                let len = self.plain_len()?;
                let compressed = self.take(compressed_len)?;
                Ok(Cow::Owned(lzf::decompress(compressed, len)?))
            }
            Len::Encoded(_) => Err(RdbError::bad()),
        }
    }

    /// A score as a little-endian binary double (type 5).
    pub(super) fn binary_double(&mut self) -> Result<f64, RdbError> {
        Ok(f64::from_le_bytes(self.array()?))
    }

    /// A score as text after a length byte, 253/254/255 standing for
    /// NaN, +inf and -inf (type 3).
    pub(super) fn text_double(&mut self) -> Result<f64, RdbError> {
        match self.byte()? {
            253 => Ok(f64::NAN),
            254 => Ok(f64::INFINITY),
            255 => Ok(f64::NEG_INFINITY),
            n => parse_score(self.take(u64::from(n))?),
        }
    }
}

/// An integer's decimal text.
pub(super) fn int_text(value: i64) -> Cow<'static, [u8]> {
    Cow::Owned(value.to_string().into_bytes())
}

/// A score written as text: a decimal, `inf` or `-inf` (any case, as Redis
/// and C's `strtod` accept them).
pub(super) fn parse_score(text: &[u8]) -> Result<f64, RdbError> {
    std::str::from_utf8(text)
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .ok_or_else(RdbError::bad)
}

/// Writes a length as Redis does: 6, 14, 32 or 64 bits.
pub(super) fn put_len(out: &mut Vec<u8>, len: u64) {
    if len < 1 << 6 {
        out.push(len as u8);
    } else if len < 1 << 14 {
        out.push((LEN_14BIT << 6) | (len >> 8) as u8);
        out.push(len as u8);
    } else if let Ok(len) = u32::try_from(len) {
        out.push(LEN_32BIT);
        out.extend_from_slice(&len.to_be_bytes());
    } else {
        out.push(LEN_64BIT);
        out.extend_from_slice(&len.to_be_bytes());
    }
}

/// Writes a string as Redis does without compression: a string that is an
/// integer's canonical text and fits 32 bits in the smallest integer
/// encoding, any other as length and bytes.
pub(super) fn put_string(out: &mut Vec<u8>, s: &[u8]) {
    if let Some(value) = canonical_int(s) {
        if let Ok(v) = i8::try_from(value) {
            out.push(INT_PREFIX | ENC_INT8);
            out.extend_from_slice(&v.to_le_bytes());
            return;
        }
        if let Ok(v) = i16::try_from(value) {
            out.push(INT_PREFIX | ENC_INT16);
            out.extend_from_slice(&v.to_le_bytes());
            return;
        }
        if let Ok(v) = i32::try_from(value) {
            out.push(INT_PREFIX | ENC_INT32);
            out.extend_from_slice(&v.to_le_bytes());
            return;
        }
    }
    put_len(out, s.len() as u64);
    out.extend_from_slice(s);
}

/// The integer `s` spells, if `s` is exactly its canonical decimal text
/// (no sign on zero, no leading zeros or plus) and short enough.
fn canonical_int(s: &[u8]) -> Option<i64> {
    if s.len() > MAX_INT_STRING {
        return None;
    }
    let value: i64 = std::str::from_utf8(s).ok()?.parse().ok()?;
    (value.to_string().as_bytes() == s).then_some(value)
}
