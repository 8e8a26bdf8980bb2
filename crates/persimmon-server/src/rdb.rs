//! Redis's `DUMP`/`RESTORE` serialization format, so values move between
//! Redis 7.0 and Persimmon: [`dump`] writes a payload Redis 7.0's `RESTORE`
//! accepts, [`restore`] reads the payloads Redis 7.0's `DUMP` writes (and the
//! older encodings it still accepts) for strings, hashes and sorted sets.
//!
//! A payload is `type byte, object, RDB version (u16 LE), CRC64 (u64 LE)`,
//! the checksum taken over everything before it. [`dump`] writes a string as
//! type 0 (integers in Redis's integer encodings, nothing compressed), a hash
//! as type 4 (plain pairs), a sorted set as type 5 (binary doubles), RDB
//! version 10 (Redis 7.0's).
//!
//! Rooms: `primitives` reads the RDB primitives (lengths, strings,
//! doubles) off the untrusted bytes and writes them; `lzf` undoes LZF
//! compression; `packed` reads the
//! ziplist, listpack and zipmap blobs older and smaller objects are stored
//! in; `crc64` is Redis's checksum.
//!
//! Invariants: [`restore`] never panics and never allocates from a length
//! read from the payload before checking it against the bytes that remain
//! (LZF output, which can legitimately outgrow its input, is bounded by
//! LZF's own maximum ratio). A payload is accepted only if it parses
//! exactly: every byte between the type and the footer is consumed, hash
//! fields and sorted set members are unique, scores are never NaN, and
//! hashes and sorted sets are not empty. Every refusal carries the text
//! Redis replies (`ERR DUMP payload version or checksum are wrong`,
//! `ERR Bad data format`), or says which type Persimmon does not store yet.

mod crc64;
mod lzf;
mod packed;
mod primitives;
#[cfg(test)]
mod tests;

use packed::Entry;
use primitives::Input;
use std::cmp::Ordering;

/// The RDB version [`dump`] writes and the newest [`restore`] accepts.
pub const RDB_VERSION: u16 = 10;

const TYPE_STRING: u8 = 0;
const TYPE_LIST: u8 = 1;
const TYPE_SET: u8 = 2;
const TYPE_ZSET: u8 = 3;
const TYPE_HASH: u8 = 4;
const TYPE_ZSET_2: u8 = 5;
const TYPE_MODULE: u8 = 6;
const TYPE_MODULE_2: u8 = 7;
const TYPE_HASH_ZIPMAP: u8 = 9;
const TYPE_LIST_ZIPLIST: u8 = 10;
const TYPE_SET_INTSET: u8 = 11;
const TYPE_ZSET_ZIPLIST: u8 = 12;
const TYPE_HASH_ZIPLIST: u8 = 13;
const TYPE_LIST_QUICKLIST: u8 = 14;
const TYPE_STREAM_LISTPACKS: u8 = 15;
const TYPE_HASH_LISTPACK: u8 = 16;
const TYPE_ZSET_LISTPACK: u8 = 17;
const TYPE_LIST_QUICKLIST_2: u8 = 18;
const TYPE_STREAM_LISTPACKS_2: u8 = 19;

/// The footer: RDB version (2 bytes) and CRC64 (8 bytes).
const FOOTER_BYTES: usize = 10;

/// A value as `DUMP`/`RESTORE` carry it.
///
/// [`restore`] gives a hash's pairs in payload order and a sorted set's
/// members sorted by (score, member); [`dump`] expects a sorted set in that
/// order too (it writes the members last to first, as Redis does).
#[derive(Clone, Debug, PartialEq)]
pub enum RdbValue {
    String(Vec<u8>),
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    ZSet(Vec<(f64, Vec<u8>)>),
}

/// Why a payload was refused: the error text to reply, as Redis words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdbError(pub String);

impl RdbError {
    fn checksum() -> RdbError {
        RdbError("ERR DUMP payload version or checksum are wrong".into())
    }

    fn bad() -> RdbError {
        RdbError("ERR Bad data format".into())
    }

    fn unsupported(what: &str, plural: &str) -> RdbError {
        RdbError(format!(
            "ERR DUMP payload holds {what}: persimmon does not store {plural} yet"
        ))
    }
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RdbError {}

/// Serializes `value` as a `DUMP` payload Redis 7.0 can `RESTORE`.
pub fn dump(value: &RdbValue) -> Vec<u8> {
    let mut out = Vec::new();
    match value {
        RdbValue::String(s) => {
            out.push(TYPE_STRING);
            primitives::put_string(&mut out, s);
        }
        RdbValue::Hash(pairs) => {
            out.push(TYPE_HASH);
            primitives::put_len(&mut out, pairs.len() as u64);
            for (field, value) in pairs {
                primitives::put_string(&mut out, field);
                primitives::put_string(&mut out, value);
            }
        }
        RdbValue::ZSet(members) => {
            out.push(TYPE_ZSET_2);
            primitives::put_len(&mut out, members.len() as u64);
            for (score, member) in members.iter().rev() {
                primitives::put_string(&mut out, member);
                out.extend_from_slice(&score.to_le_bytes());
            }
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Reads a `DUMP` payload: checks its footer as Redis does, then decodes
/// the object.
pub fn restore(payload: &[u8]) -> Result<RdbValue, RdbError> {
    let body = check_footer(payload)?;
    let (&kind, object) = body.split_first().ok_or_else(RdbError::bad)?;
    let mut input = Input::new(object);
    let value = decode(kind, &mut input)?;
    input.finish()?;
    Ok(value)
}

/// The payload less its footer, if the version is one Redis 7.0 reads and
/// the checksum matches.
fn check_footer(payload: &[u8]) -> Result<&[u8], RdbError> {
    let body_len = payload
        .len()
        .checked_sub(FOOTER_BYTES)
        .ok_or_else(RdbError::checksum)?;
    let (body, footer) = payload.split_at(body_len);
    let version = u16::from_le_bytes([footer[0], footer[1]]);
    if version > RDB_VERSION {
        return Err(RdbError::checksum());
    }
    let mut crc = [0u8; 8];
    crc.copy_from_slice(&footer[2..]);
    if crc64::crc64(&payload[..body_len + 2]) != u64::from_le_bytes(crc) {
        return Err(RdbError::checksum());
    }
    Ok(body)
}

fn decode(kind: u8, input: &mut Input<'_>) -> Result<RdbValue, RdbError> {
    match kind {
        TYPE_STRING => Ok(RdbValue::String(input.string()?.into_owned())),
        TYPE_HASH => hash_pairs(input),
        TYPE_ZSET | TYPE_ZSET_2 => zset_pairs(input, kind == TYPE_ZSET_2),
        TYPE_HASH_ZIPMAP => hash_from(packed::zipmap(&input.string()?)?),
        TYPE_HASH_ZIPLIST => hash_from(packed::ziplist(&input.string()?)?),
        TYPE_HASH_LISTPACK => hash_from(packed::listpack(&input.string()?)?),
        TYPE_ZSET_ZIPLIST => zset_from(packed::ziplist(&input.string()?)?),
        TYPE_ZSET_LISTPACK => zset_from(packed::listpack(&input.string()?)?),
        TYPE_LIST | TYPE_LIST_ZIPLIST | TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            Err(RdbError::unsupported("a list", "lists"))
        }
        TYPE_SET | TYPE_SET_INTSET => Err(RdbError::unsupported("a set", "sets")),
        TYPE_STREAM_LISTPACKS | TYPE_STREAM_LISTPACKS_2 => {
            Err(RdbError::unsupported("a stream", "streams"))
        }
        TYPE_MODULE | TYPE_MODULE_2 => {
            Err(RdbError::unsupported("a module value", "module values"))
        }
        _ => Err(RdbError::bad()),
    }
}

/// Type 4: a count of pairs, then field and value strings.
fn hash_pairs(input: &mut Input<'_>) -> Result<RdbValue, RdbError> {
    let count = input.count(2)?;
    let mut pairs = Vec::with_capacity(count);
    for _ in 0..count {
        let field = input.string()?.into_owned();
        let value = input.string()?.into_owned();
        pairs.push((field, value));
    }
    hash(pairs)
}

/// Types 3 and 5: a count, then member strings each followed by its score
/// (as text in type 3, as a binary double in type 5).
fn zset_pairs(input: &mut Input<'_>, binary: bool) -> Result<RdbValue, RdbError> {
    let count = input.count(2)?;
    let mut members = Vec::with_capacity(count);
    for _ in 0..count {
        let member = input.string()?.into_owned();
        let score = if binary {
            input.binary_double()?
        } else {
            input.text_double()?
        };
        members.push((score, member));
    }
    zset(members)
}

/// A hash from a packed blob's entries: field, value, field, value...
fn hash_from(entries: Vec<Entry<'_>>) -> Result<RdbValue, RdbError> {
    let pairs = in_pairs(entries)?;
    hash(
        pairs
            .map(|(f, v)| (f.into_bytes(), v.into_bytes()))
            .collect(),
    )
}

/// A sorted set from a packed blob's entries: member, score, member...
fn zset_from(entries: Vec<Entry<'_>>) -> Result<RdbValue, RdbError> {
    let members = in_pairs(entries)?.map(|(m, s)| Ok((s.score()?, m.into_bytes())));
    zset(members.collect::<Result<_, RdbError>>()?)
}

/// The entries two by two, if there is an even number of them.
fn in_pairs(
    entries: Vec<Entry<'_>>,
) -> Result<impl Iterator<Item = (Entry<'_>, Entry<'_>)>, RdbError> {
    if !entries.len().is_multiple_of(2) {
        return Err(RdbError::bad());
    }
    let mut entries = entries.into_iter();
    Ok(std::iter::from_fn(move || {
        Some((entries.next()?, entries.next()?))
    }))
}

/// A hash if it is not empty and its fields are unique.
fn hash(pairs: Vec<(Vec<u8>, Vec<u8>)>) -> Result<RdbValue, RdbError> {
    let mut fields: Vec<&[u8]> = pairs.iter().map(|(f, _)| f.as_slice()).collect();
    check_unique(&mut fields)?;
    Ok(RdbValue::Hash(pairs))
}

/// A sorted set, sorted by (score, member), if it is not empty, its members
/// are unique and no score is NaN.
fn zset(mut members: Vec<(f64, Vec<u8>)>) -> Result<RdbValue, RdbError> {
    if members.iter().any(|(score, _)| score.is_nan()) {
        return Err(RdbError::bad());
    }
    let mut names: Vec<&[u8]> = members.iter().map(|(_, m)| m.as_slice()).collect();
    check_unique(&mut names)?;
    members.sort_by(|a, b| {
        a.0.partial_cmp(&b.0)
            .unwrap_or(Ordering::Equal)
            .then_with(|| a.1.cmp(&b.1))
    });
    Ok(RdbValue::ZSet(members))
}

/// Refuses an empty collection or one with a name twice (sorts `names`).
fn check_unique(names: &mut [&[u8]]) -> Result<(), RdbError> {
    names.sort_unstable();
    if names.is_empty() || names.windows(2).any(|w| w[0] == w[1]) {
        return Err(RdbError::bad());
    }
    Ok(())
}
