//! BITFIELD and BITFIELD_RO: integers of 1 to 64 bits (signed `i1`..`i64`,
//! unsigned `u1`..`u63`) at any bit offset of a string value, read (GET),
//! written (SET, replying the old value) and incremented (INCRBY, replying
//! the new value), with Redis's overflow policies (OVERFLOW WRAP, SAT,
//! FAIL) applied to the operations after each OVERFLOW.
//!
//! Invariants:
//! - Every argument is checked before anything is read or written, with
//!   Redis's error texts, so a bad request changes nothing.
//! - The operations run in order on one copy of the string inside one
//!   `update` closure: a BITFIELD is atomic, and its writes are durable
//!   before the reply. A write grows the string (zero bytes) to its
//!   farthest bit first, even when FAIL then skips it, as Redis does.
//! - Overflow is decided in 128-bit arithmetic, so no intermediate
//!   overflows; the results (wrapped or saturated values) are Redis's,
//!   including a negative SET value on an unsigned field (above the range
//!   as Redis sees it: SAT gives the maximum).

use persimmon::Update;
use persimmon_resp::Args;
use persimmon_types::error::{check_key, wrongtype};
use persimmon_types::value::{self, Stored, MAX_STRING_BYTES};
use persimmon_types::Error;

use crate::session::{int_arg, is, syntax, Session};

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Overflow {
    Wrap,
    Sat,
    Fail,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum OpKind {
    Get,
    Set(i64),
    IncrBy(i64),
}

#[derive(Clone, Copy, Debug)]
struct Op {
    kind: OpKind,
    signed: bool,
    bits: u32,
    offset: u64,
    overflow: Overflow,
}

/// Redis's bound on bit offsets: 512 MiB (its `proto-max-bulk-len`) of bits.
const MAX_BIT_OFFSET: u64 = (512 << 20) * 8;

pub fn bitfield(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    run(s, &a, false)
}

pub fn bitfield_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    run(s, &a, true)
}

fn run(s: &mut Session, a: &Args<'_>, read_only: bool) -> Result<(), Error> {
    let key = a.get(1);
    let ops = parse(a)?;
    let writes = ops.iter().any(|op| op.kind != OpKind::Get);
    let results = if !writes {
        let results = s
            .store
            .get(key, |v| match v {
                Stored::String(body) => Ok(ops.iter().map(|op| Some(get(body, op))).collect()),
                _ => Err(wrongtype()),
            })?
            .transpose()?;
        results.unwrap_or_else(|| vec![Some(0); ops.len()])
    } else {
        if read_only {
            return Err(Error::new(
                "ERR BITFIELD_RO only supports the GET subcommand",
            ));
        }
        write(s, key, &ops)?
    };
    s.out.array(results.len());
    for r in results {
        match r {
            Some(n) => s.out.int(n),
            None => s.out.null(),
        }
    }
    Ok(())
}

/// The operations of a request, or the first argument's error.
fn parse(a: &Args<'_>) -> Result<Vec<Op>, Error> {
    let mut ops = Vec::new();
    let mut overflow = Overflow::Wrap;
    let mut j = 2;
    while j < a.len() {
        let left = a.len() - j - 1;
        let sub = a.get(j);
        let kind = if is(sub, "GET") && left >= 2 {
            OpKind::Get
        } else if (is(sub, "SET") || is(sub, "INCRBY")) && left >= 3 {
            OpKind::Set(0)
        } else if is(sub, "OVERFLOW") && left >= 1 {
            let policy = a.get(j + 1);
            overflow = match () {
                _ if is(policy, "WRAP") => Overflow::Wrap,
                _ if is(policy, "SAT") => Overflow::Sat,
                _ if is(policy, "FAIL") => Overflow::Fail,
                _ => return Err(Error::new("ERR Invalid OVERFLOW type specified")),
            };
            j += 2;
            continue;
        } else {
            return Err(syntax());
        };
        let (signed, bits) = field_type(a.get(j + 1))?;
        let offset = bit_offset(a.get(j + 2), bits)?;
        let kind = match kind {
            OpKind::Get => OpKind::Get,
            _ => {
                let n = int_arg(a.get(j + 3))?;
                if is(sub, "SET") {
                    OpKind::Set(n)
                } else {
                    OpKind::IncrBy(n)
                }
            }
        };
        ops.push(Op {
            kind,
            signed,
            bits,
            offset,
            overflow,
        });
        j += if kind == OpKind::Get { 3 } else { 4 };
    }
    Ok(ops)
}

/// `i1`..`i64` or `u1`..`u63`: (signed, bits).
fn field_type(arg: &[u8]) -> Result<(bool, u32), Error> {
    let bad = || {
        Error::new(
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not \
             supported but i64 is.",
        )
    };
    let (&sign, digits) = arg.split_first().ok_or_else(bad)?;
    let signed = match sign {
        b'i' => true,
        b'u' => false,
        _ => return Err(bad()),
    };
    let bits = persimmon_resp::parse_i64(digits).ok_or_else(bad)?;
    let max = if signed { 64 } else { 63 };
    if !(1..=max).contains(&bits) {
        return Err(bad());
    }
    Ok((signed, bits as u32))
}

/// A bit offset, or `#n` for the n-th field of this width.
fn bit_offset(arg: &[u8], bits: u32) -> Result<u64, Error> {
    let bad = || Error::new("ERR bit offset is not an integer or out of range");
    let (scaled, digits) = match arg.split_first() {
        Some((b'#', rest)) => (true, rest),
        _ => (false, arg),
    };
    let n = persimmon_resp::parse_i64(digits).ok_or_else(bad)?;
    let n = if scaled {
        n.checked_mul(bits as i64).ok_or_else(bad)?
    } else {
        n
    };
    if n < 0 || n as u64 >= MAX_BIT_OFFSET {
        return Err(bad());
    }
    Ok(n as u64)
}

/// Runs the operations on the string at `key` (created when missing).
fn write(s: &mut Session, key: &[u8], ops: &[Op]) -> Result<Vec<Option<i64>>, Error> {
    check_key(key)?;
    let farthest = ops
        .iter()
        .filter(|op| op.kind != OpKind::Get)
        .map(|op| (op.offset + op.bits as u64 - 1) / 8)
        .max()
        .unwrap_or(0);
    if farthest >= MAX_STRING_BYTES as u64 {
        return Err(Error::new(format!(
            "ERR bit offset is out of range: persimmon stores at most {MAX_STRING_BYTES} bytes \
             per string"
        )));
    }
    s.store.try_update(key, |old| {
        let body: &[u8] = match old {
            None => b"",
            Some(Stored::String(body)) => body,
            Some(_) => return Err(wrongtype()),
        };
        let mut bytes = body.to_vec();
        let grown = bytes.len() <= farthest as usize;
        if grown {
            bytes.resize(farthest as usize + 1, 0);
        }
        let results: Vec<Option<i64>> = ops.iter().map(|op| apply(&mut bytes, op)).collect();
        if !grown && bytes == body {
            return Ok((Update::Keep, results));
        }
        let mut v = Vec::with_capacity(1 + bytes.len());
        v.push(value::TAG_STRING);
        v.extend_from_slice(&bytes);
        Ok((Update::Put(v), results))
    })
}

/// Reads `bits` bits at bit `offset` (most significant first; past the end
/// reads 0) as an unsigned number.
fn read_bits(bytes: &[u8], offset: u64, bits: u32) -> u64 {
    let mut v = 0u64;
    for i in 0..bits as u64 {
        let at = offset + i;
        let bit = bytes
            .get((at / 8) as usize)
            .is_some_and(|b| b & (0x80 >> (at % 8)) != 0);
        v = (v << 1) | bit as u64;
    }
    v
}

fn write_bits(bytes: &mut [u8], offset: u64, bits: u32, v: u64) {
    for i in 0..bits as u64 {
        let at = offset + i;
        let mask = 0x80 >> (at % 8);
        let byte = &mut bytes[(at / 8) as usize];
        if (v >> (bits as u64 - 1 - i)) & 1 == 1 {
            *byte |= mask;
        } else {
            *byte &= !mask;
        }
    }
}

/// The field's value as a number of its type.
fn get(bytes: &[u8], op: &Op) -> i64 {
    let raw = read_bits(bytes, op.offset, op.bits);
    if op.signed {
        sign_extend(raw, op.bits)
    } else {
        raw as i64
    }
}

fn sign_extend(raw: u64, bits: u32) -> i64 {
    let shift = 64 - bits;
    ((raw << shift) as i64) >> shift
}

/// Runs one operation on `bytes` (already long enough for a write);
/// `None` when FAIL refused it.
fn apply(bytes: &mut [u8], op: &Op) -> Option<i64> {
    let old = get(bytes, op);
    let (new, reply) = match op.kind {
        OpKind::Get => return Some(old),
        OpKind::Set(v) => (checked(op, v, 0)?, old),
        OpKind::IncrBy(incr) => {
            let new = checked(op, old, incr)?;
            (new, new)
        }
    };
    let raw = if op.bits == 64 {
        new as u64
    } else {
        (new as u64) & ((1u64 << op.bits) - 1)
    };
    write_bits(bytes, op.offset, op.bits, raw);
    Some(reply)
}

/// `value + incr` in the field's type under its overflow policy: the
/// result, or `None` when FAIL refuses it. For an unsigned field `value`
/// is taken as Redis takes it (the 64-bit pattern as unsigned).
fn checked(op: &Op, value: i64, incr: i64) -> Option<i64> {
    let bits = op.bits;
    let (min, max, value) = if op.signed {
        let max = (1i128 << (bits - 1)) - 1;
        (-max - 1, max, value as i128)
    } else {
        (0, (1i128 << bits) - 1, value as u64 as i128)
    };
    let sum = value + incr as i128;
    if min <= value && value <= max && min <= sum && sum <= max {
        return Some(sum as i64);
    }
    let up = value > max || (value >= min && sum > max);
    match op.overflow {
        Overflow::Fail => None,
        Overflow::Sat => Some(if up { max as i64 } else { min as i64 }),
        Overflow::Wrap => {
            let raw = (value as u64).wrapping_add(incr as u64);
            Some(if op.signed {
                if bits == 64 {
                    raw as i64
                } else {
                    sign_extend(raw & ((1u64 << bits) - 1), bits)
                }
            } else {
                (raw & ((1u64 << bits) - 1)) as i64
            })
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn op(signed: bool, bits: u32, overflow: Overflow) -> Op {
        Op {
            kind: OpKind::Get,
            signed,
            bits,
            offset: 0,
            overflow,
        }
    }

    #[test]
    fn overflow_policies_follow_redis() {
        use Overflow::*;
        // Unsigned 8 bits.
        assert_eq!(checked(&op(false, 8, Wrap), 250, 10), Some(4));
        assert_eq!(checked(&op(false, 8, Sat), 250, 10), Some(255));
        assert_eq!(checked(&op(false, 8, Fail), 250, 10), None);
        assert_eq!(checked(&op(false, 8, Sat), 5, -10), Some(0));
        assert_eq!(checked(&op(false, 8, Wrap), 5, -10), Some(251));
        // SET of a negative value on an unsigned field: above, as Redis sees it.
        assert_eq!(checked(&op(false, 8, Sat), -1, 0), Some(255));
        assert_eq!(checked(&op(false, 8, Wrap), -1, 0), Some(255));
        // Signed.
        assert_eq!(checked(&op(true, 8, Wrap), 127, 1), Some(-128));
        assert_eq!(checked(&op(true, 8, Sat), 127, 1), Some(127));
        assert_eq!(checked(&op(true, 8, Sat), -128, -1), Some(-128));
        assert_eq!(checked(&op(true, 8, Fail), 100, 100), None);
        assert_eq!(checked(&op(true, 64, Wrap), i64::MAX, 1), Some(i64::MIN));
        assert_eq!(checked(&op(true, 64, Sat), i64::MIN, -1), Some(i64::MIN));
        assert_eq!(checked(&op(true, 5, Wrap), 300, 0), Some(12));
        assert_eq!(checked(&op(false, 63, Sat), i64::MAX, 1), Some(i64::MAX));
    }

    #[test]
    fn bits_are_msb_first_at_any_offset() {
        let mut b = vec![0u8; 3];
        write_bits(&mut b, 5, 8, 0xAB);
        assert_eq!(b, [0b0000_0101, 0b0101_1000, 0]);
        assert_eq!(read_bits(&b, 5, 8), 0xAB);
        assert_eq!(sign_extend(read_bits(&b, 5, 4), 4), -6);
        assert_eq!(read_bits(&b, 20, 10), 0, "past the end reads 0");
    }
}
