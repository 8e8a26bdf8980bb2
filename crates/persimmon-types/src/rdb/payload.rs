//! The `DUMP`/`RESTORE` payload: `type byte, object, RDB version (u16
//! LE), CRC64 (u64 LE)`, written by [`dump`] and read by [`restore`] (see
//! `rdb/mod.rs` for the encodings of each type).

use std::cmp::Ordering;

use super::crc64;
use super::packed::{self, Entry};
use super::primitives::{self, Input};
use super::value::{RdbError, RdbValue};

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
const TYPE_SET_LISTPACK: u8 = 20;
const TYPE_STREAM_LISTPACKS_3: u8 = 21;

/// A quicklist node holding one element as plain bytes.
const NODE_PLAIN: u64 = 1;
/// A quicklist node holding a listpack.
const NODE_PACKED: u64 = 2;
/// The most bytes of elements [`dump`] puts in one list node (Redis's
/// default `list-max-listpack-size -2`: 8 KiB listpacks).
pub const LIST_NODE_BYTES: usize = 8192;

/// The footer: RDB version (2 bytes) and CRC64 (8 bytes).
pub(super) const FOOTER_BYTES: usize = 10;

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
        RdbValue::List(elements) => dump_list(&mut out, elements),
        RdbValue::Stream(s) => {
            out.push(TYPE_STREAM_LISTPACKS_2);
            super::stream::encode(&mut out, s);
        }
        RdbValue::Set(members) => {
            out.push(TYPE_SET);
            primitives::put_len(&mut out, members.len() as u64);
            for m in members {
                primitives::put_string(&mut out, m);
            }
        }
    }
    out.extend_from_slice(&RDB_VERSION.to_le_bytes());
    let crc = crc64::crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// Type 18: the elements in listpack nodes of up to [`LIST_NODE_BYTES`]
/// (a longer element gets a node of its own).
fn dump_list(out: &mut Vec<u8>, elements: &[Vec<u8>]) {
    let mut nodes: Vec<Vec<&[u8]>> = Vec::new();
    let mut bytes = usize::MAX;
    for e in elements {
        if bytes.saturating_add(e.len()) > LIST_NODE_BYTES {
            nodes.push(Vec::new());
            bytes = 0;
        }
        bytes += e.len() + 2;
        nodes.last_mut().expect("a node").push(e);
    }
    out.push(TYPE_LIST_QUICKLIST_2);
    primitives::put_len(out, nodes.len() as u64);
    for node in nodes {
        primitives::put_len(out, NODE_PACKED);
        primitives::put_string(out, &packed::listpack_encode(&node));
    }
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

pub(super) fn decode(kind: u8, input: &mut Input<'_>) -> Result<RdbValue, RdbError> {
    match kind {
        TYPE_STRING => Ok(RdbValue::String(input.string()?.into_owned())),
        TYPE_HASH => hash_pairs(input),
        TYPE_ZSET | TYPE_ZSET_2 => zset_pairs(input, kind == TYPE_ZSET_2),
        TYPE_HASH_ZIPMAP => hash_from(packed::zipmap(&input.string()?)?),
        TYPE_HASH_ZIPLIST => hash_from(packed::ziplist(&input.string()?)?),
        TYPE_HASH_LISTPACK => hash_from(packed::listpack(&input.string()?)?),
        TYPE_ZSET_ZIPLIST => zset_from(packed::ziplist(&input.string()?)?),
        TYPE_ZSET_LISTPACK => zset_from(packed::listpack(&input.string()?)?),
        TYPE_LIST => list(
            (0..input.count(1)?)
                .map(|_| Ok(input.string()?.into_owned()))
                .collect::<Result<_, _>>()?,
        ),
        TYPE_LIST_ZIPLIST => list(bytes_of(packed::ziplist(&input.string()?)?)),
        TYPE_LIST_QUICKLIST | TYPE_LIST_QUICKLIST_2 => {
            quicklist(input, kind == TYPE_LIST_QUICKLIST_2)
        }
        TYPE_SET => set((0..input.count(1)?)
            .map(|_| Ok(input.string()?.into_owned()))
            .collect::<Result<_, _>>()?),
        TYPE_SET_INTSET => set(packed::intset(&input.string()?)?
            .into_iter()
            .map(|v| v.to_string().into_bytes())
            .collect()),
        TYPE_SET_LISTPACK => set(bytes_of(packed::listpack(&input.string()?)?)),
        TYPE_STREAM_LISTPACKS => super::stream::decode(input, 1),
        TYPE_STREAM_LISTPACKS_2 => super::stream::decode(input, 2),
        TYPE_STREAM_LISTPACKS_3 => super::stream::decode(input, 3),
        TYPE_MODULE | TYPE_MODULE_2 => {
            Err(RdbError::unsupported("a module value", "module values"))
        }
        _ => Err(RdbError::bad()),
    }
}

/// Types 14 (ziplist nodes) and 18 (each node a container kind, then a
/// listpack or, for a plain node, one element); empty nodes are skipped, as
/// Redis skips them.
fn quicklist(input: &mut Input<'_>, version_2: bool) -> Result<RdbValue, RdbError> {
    let nodes = input.count(1)?;
    let mut elements = Vec::new();
    for _ in 0..nodes {
        let container = if version_2 {
            input.plain_len()?
        } else {
            NODE_PACKED
        };
        let blob = input.string()?;
        match (container, version_2) {
            (NODE_PLAIN, _) => elements.push(blob.into_owned()),
            (NODE_PACKED, true) => elements.extend(bytes_of(packed::listpack(&blob)?)),
            (NODE_PACKED, false) => elements.extend(bytes_of(packed::ziplist(&blob)?)),
            _ => return Err(RdbError::bad()),
        }
    }
    list(elements)
}

fn bytes_of(entries: Vec<Entry<'_>>) -> Vec<Vec<u8>> {
    entries.into_iter().map(Entry::into_bytes).collect()
}

/// A list if it is not empty.
fn list(elements: Vec<Vec<u8>>) -> Result<RdbValue, RdbError> {
    if elements.is_empty() {
        return Err(RdbError::bad());
    }
    Ok(RdbValue::List(elements))
}

/// A set if it is not empty and its members are unique.
fn set(members: Vec<Vec<u8>>) -> Result<RdbValue, RdbError> {
    let mut names: Vec<&[u8]> = members.iter().map(Vec::as_slice).collect();
    check_unique(&mut names)?;
    Ok(RdbValue::Set(members))
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
