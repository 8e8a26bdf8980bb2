//! Stream entry ids: `ms-seq`, two unsigned 64-bit numbers ordered as a
//! pair; their text forms (strict, interval and XADD's `ms-*`), their tree
//! keys and their arithmetic.
//!
//! Invariants: a tree key is the id as 16 bytes big-endian (ms, then
//! seq), so byte order is id order; parsing never panics and refuses
//! anything but decimal digits within u64 (no sign, no blank).

use std::fmt;

use crate::error::Error;

/// One stream entry id.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };
    pub const MAX: StreamId = StreamId {
        ms: u64::MAX,
        seq: u64::MAX,
    };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The id as its 16-byte tree key.
    pub fn key(self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }

    /// The id a 16-byte tree key holds (the first 16 bytes of `k`).
    pub fn from_key(k: &[u8]) -> Result<StreamId, Error> {
        if k.len() < 16 {
            return Err(crate::coll::page::damaged());
        }
        let ms = u64::from_be_bytes(k[..8].try_into().expect("8 bytes"));
        let seq = u64::from_be_bytes(k[8..16].try_into().expect("8 bytes"));
        Ok(StreamId { ms, seq })
    }

    /// The next id (`None` past the last possible one).
    pub fn incr(self) -> Option<StreamId> {
        match (self.seq.checked_add(1), self.ms.checked_add(1)) {
            (Some(seq), _) => Some(StreamId { ms: self.ms, seq }),
            (None, Some(ms)) => Some(StreamId { ms, seq: 0 }),
            (None, None) => None,
        }
    }

    /// The previous id (`None` before 0-0).
    pub fn decr(self) -> Option<StreamId> {
        match (self.seq.checked_sub(1), self.ms.checked_sub(1)) {
            (Some(seq), _) => Some(StreamId { ms: self.ms, seq }),
            (None, Some(ms)) => Some(StreamId { ms, seq: u64::MAX }),
            (None, None) => None,
        }
    }

    pub fn is_zero(self) -> bool {
        self == StreamId::ZERO
    }
}

impl fmt::Display for StreamId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.ms, self.seq)
    }
}

/// Redis's error for an id that does not parse.
pub fn invalid_id() -> Error {
    Error::new("ERR Invalid stream ID specified as stream command argument")
}

/// A decimal u64: digits only, no sign, within range.
fn number(s: &[u8]) -> Option<u64> {
    if s.is_empty() || !s.iter().all(u8::is_ascii_digit) {
        return None;
    }
    std::str::from_utf8(s).ok()?.parse().ok()
}

/// The sequence part of an id that may be `ms-*` (XADD): `None` for `*`.
pub enum Seq {
    Given(u64),
    Auto,
}

/// `ms[-seq]`, a missing seq read as `missing_seq`; with `auto_seq`,
/// `ms-*` too. The longest text taken is 127 bytes, as in Redis.
pub fn parse_parts(arg: &[u8], missing_seq: u64, auto_seq: bool) -> Result<(u64, Seq), Error> {
    if arg.len() > 127 {
        return Err(invalid_id());
    }
    let (ms, seq) = match arg.iter().position(|&b| b == b'-') {
        Some(dash) => (&arg[..dash], Some(&arg[dash + 1..])),
        None => (arg, None),
    };
    let ms = number(ms).ok_or_else(invalid_id)?;
    let seq = match seq {
        None => Seq::Given(missing_seq),
        Some(b"*") if auto_seq => Seq::Auto,
        Some(s) => Seq::Given(number(s).ok_or_else(invalid_id)?),
    };
    Ok((ms, seq))
}

/// A strict id (`-` and `+` refused), a missing seq read as 0.
pub fn parse_strict(arg: &[u8]) -> Result<StreamId, Error> {
    match parse_parts(arg, 0, false)? {
        (ms, Seq::Given(seq)) => Ok(StreamId { ms, seq }),
        (_, Seq::Auto) => Err(invalid_id()),
    }
}

/// One end of an interval: `-` (0-0), `+` (the last id) or an id whose
/// missing seq reads as `missing_seq` (0 for a start, u64::MAX for an end).
pub fn parse_bound(arg: &[u8], missing_seq: u64) -> Result<StreamId, Error> {
    match arg {
        b"-" => Ok(StreamId::ZERO),
        b"+" => Ok(StreamId::MAX),
        _ => match parse_parts(arg, missing_seq, false)? {
            (ms, Seq::Given(seq)) => Ok(StreamId { ms, seq }),
            (_, Seq::Auto) => Err(invalid_id()),
        },
    }
}

/// An interval end as XRANGE reads it: an optional `(` makes it exclusive
/// (not with `-` or `+`). Returns the id and whether it was exclusive.
pub fn parse_interval(arg: &[u8], missing_seq: u64) -> Result<(StreamId, bool), Error> {
    match arg.strip_prefix(b"(") {
        Some(rest) if rest != b"-" && rest != b"+" => Ok((parse_bound(rest, missing_seq)?, true)),
        Some(_) => Err(invalid_id()),
        None => Ok((parse_bound(arg, missing_seq)?, false)),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_sort_as_ids_and_round_trip() {
        let ids = [
            StreamId::new(0, 0),
            StreamId::new(0, 1),
            StreamId::new(1, 0),
            StreamId::new(1, u64::MAX),
            StreamId::new(256, 0),
            StreamId::MAX,
        ];
        for w in ids.windows(2) {
            assert!(w[0].key() < w[1].key());
            assert!(w[0] < w[1]);
        }
        for id in ids {
            assert_eq!(StreamId::from_key(&id.key()).unwrap(), id);
        }
        assert_eq!(StreamId::new(1, 2).key()[7], 1, "ms is big-endian first");
    }

    #[test]
    fn parsing_refuses_what_redis_refuses() {
        assert_eq!(parse_strict(b"5").unwrap(), StreamId::new(5, 0));
        assert_eq!(parse_strict(b"5-3").unwrap(), StreamId::new(5, 3));
        for bad in [
            &b"1-x"[..],
            b"-1",
            b"18446744073709551616-0",
            b"1-18446744073709551616",
            b"",
            b"+",
            b"-",
            b"1--1",
            b" 1",
            b"1-",
        ] {
            assert!(parse_strict(bad).is_err(), "{bad:?}");
        }
        assert_eq!(parse_bound(b"-", 0).unwrap(), StreamId::ZERO);
        assert_eq!(parse_bound(b"+", 0).unwrap(), StreamId::MAX);
        assert_eq!(
            parse_bound(b"7", u64::MAX).unwrap(),
            StreamId::new(7, u64::MAX)
        );
        assert_eq!(
            parse_interval(b"(7-1", 0).unwrap(),
            (StreamId::new(7, 1), true)
        );
        assert!(parse_interval(b"(-", 0).is_err());
        assert!(matches!(parse_parts(b"3-*", 0, true), Ok((3, Seq::Auto))));
        assert!(parse_parts(b"3-*", 0, false).is_err());
    }

    #[test]
    fn increments_carry_and_stop_at_the_ends() {
        assert_eq!(StreamId::new(1, u64::MAX).incr(), Some(StreamId::new(2, 0)));
        assert_eq!(StreamId::MAX.incr(), None);
        assert_eq!(StreamId::new(2, 0).decr(), Some(StreamId::new(1, u64::MAX)));
        assert_eq!(StreamId::ZERO.decr(), None);
    }
}
