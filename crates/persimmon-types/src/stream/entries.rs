//! A stream's entries and its own record: XADD's id choice and node
//! bookkeeping, ranges in either direction, XDEL and trimming.
//!
//! | tree | key | value |
//! |---|---|---|
//! | 0 | id (16 bytes BE) | `varint node, varint n`, then `n` times `varint len, field, varint len, value` |
//! | 1 | `00` | the stream record: `last id (16), entries added u64 LE, max deleted id (16), tail node u64 LE, tail count u64 LE, tail bytes u64 LE` |
//!
//! *Nodes* stand for Redis's listpacks: an entry joins the tail node
//! until it holds `stream-node-max-entries` entries (or about
//! `stream-node-max-bytes`), then a new node number starts. Trimming with
//! `~` removes whole nodes from the head, as Redis does, so approximate
//! trims leave the same lengths.
//!
//! Invariants: every entry's id is at most the record's last id; the
//! record exists from the stream's first write on (an empty stream keeps
//! its key); node numbers never decrease along the ids.

use crate::coll::page::{put_varint, Reader};
use crate::coll::Coll;
use crate::error::Error;
use crate::store::Store;

use super::id::StreamId;

pub const T_ENTRIES: usize = 0;
pub const T_META: usize = 1;
const META_KEY: &[u8] = &[0];

/// Fields and values of one entry, in the order given.
pub type Fields = Vec<(Vec<u8>, Vec<u8>)>;

/// One entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: StreamId,
    pub fields: Fields,
}

/// The stream's own record (tree 1, key `00`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Meta {
    pub last_id: StreamId,
    pub entries_added: u64,
    pub max_deleted: StreamId,
    pub tail_node: u64,
    pub tail_count: u64,
    pub tail_bytes: u64,
}

impl Meta {
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(64);
        out.extend_from_slice(&self.last_id.key());
        out.extend_from_slice(&self.entries_added.to_le_bytes());
        out.extend_from_slice(&self.max_deleted.key());
        for n in [self.tail_node, self.tail_count, self.tail_bytes] {
            out.extend_from_slice(&n.to_le_bytes());
        }
        out
    }

    pub fn decode(b: &[u8]) -> Result<Meta, Error> {
        let mut r = Reader::new(b);
        let last_id = StreamId::from_key(r.take(16)?)?;
        let entries_added = r.u64()?;
        let max_deleted = StreamId::from_key(r.take(16)?)?;
        let (tail_node, tail_count, tail_bytes) = (r.u64()?, r.u64()?, r.u64()?);
        Ok(Meta {
            last_id,
            entries_added,
            max_deleted,
            tail_node,
            tail_count,
            tail_bytes,
        })
    }
}

/// The stream's record (a new stream's is all zero).
pub fn meta(st: &mut Store, c: &mut Coll) -> Result<Meta, Error> {
    match c.get(st, T_META, META_KEY)? {
        Some(b) => Meta::decode(&b),
        None => Ok(Meta::default()),
    }
}

pub fn put_meta(st: &mut Store, c: &mut Coll, m: &Meta) -> Result<(), Error> {
    c.insert(st, T_META, META_KEY, &m.encode()).map(|_| ())
}

fn encode_entry(node: u64, fields: &[(&[u8], &[u8])]) -> Vec<u8> {
    let mut out = Vec::new();
    put_varint(&mut out, node);
    put_varint(&mut out, fields.len() as u64);
    for (f, v) in fields {
        put_varint(&mut out, f.len() as u64);
        out.extend_from_slice(f);
        put_varint(&mut out, v.len() as u64);
        out.extend_from_slice(v);
    }
    out
}

/// An entry's node number and fields.
pub fn decode_entry(b: &[u8]) -> Result<(u64, Fields), Error> {
    let mut r = Reader::new(b);
    let node = r.varint()?;
    let n = r.varint()?;
    let mut fields = Vec::with_capacity(n.min(1024) as usize);
    for _ in 0..n {
        let f = r.bytes()?.to_vec();
        let v = r.bytes()?.to_vec();
        fields.push((f, v));
    }
    Ok((node, fields))
}

fn node_of(b: &[u8]) -> Result<u64, Error> {
    Reader::new(b).varint()
}

/// How XADD picks the new entry's id.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum NewId {
    /// `*`: the time now, or the last id's next.
    Auto,
    /// `ms-*`: this ms, the next free seq.
    AutoSeq(u64),
    Given(StreamId),
}

/// `stream-node-max-entries` and `stream-node-max-bytes` (0: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct NodeLimits {
    pub max_entries: u64,
    pub max_bytes: u64,
}

impl Default for NodeLimits {
    fn default() -> NodeLimits {
        NodeLimits {
            max_entries: 100,
            max_bytes: 4096,
        }
    }
}

fn equal_or_smaller() -> Error {
    Error::new("ERR The ID specified in XADD is equal or smaller than the target stream top item")
}

/// The id XADD gives a new entry after `last`.
fn next_id(last: StreamId, how: NewId, now_ms: u64) -> Result<StreamId, Error> {
    let id = match how {
        NewId::Given(id) => id,
        NewId::AutoSeq(ms) if ms == last.ms => {
            StreamId::new(ms, last.seq.checked_add(1).ok_or_else(equal_or_smaller)?)
        }
        NewId::AutoSeq(ms) => StreamId::new(ms, 0),
        NewId::Auto if now_ms > last.ms => StreamId::new(now_ms, 0),
        NewId::Auto => last.incr().ok_or_else(equal_or_smaller)?,
    };
    if id <= last {
        return Err(equal_or_smaller());
    }
    Ok(id)
}

/// The bytes an entry adds to its node, about as a listpack counts them.
fn entry_bytes(fields: &[(&[u8], &[u8])]) -> u64 {
    fields
        .iter()
        .map(|(f, v)| f.len() as u64 + v.len() as u64 + 4)
        .sum::<u64>()
        + 8
}

/// Appends an entry (XADD); returns its id. The caller has checked that
/// there is at least one field.
pub fn add(
    st: &mut Store,
    c: &mut Coll,
    how: NewId,
    fields: &[(&[u8], &[u8])],
    now_ms: u64,
    limits: NodeLimits,
) -> Result<StreamId, Error> {
    let mut m = meta(st, c)?;
    if m.last_id == StreamId::MAX {
        return Err(Error::new(
            "ERR The stream has exhausted the last possible ID, unable to add more items",
        ));
    }
    let id = next_id(m.last_id, how, now_ms)?;
    let bytes = entry_bytes(fields);
    let full = (limits.max_entries > 0 && m.tail_count >= limits.max_entries)
        || (limits.max_bytes > 0 && m.tail_bytes + bytes >= limits.max_bytes);
    if m.tail_count > 0 && full {
        m.tail_node += 1;
        m.tail_count = 0;
        m.tail_bytes = 0;
    }
    c.insert(st, T_ENTRIES, &id.key(), &encode_entry(m.tail_node, fields))?;
    m.last_id = id;
    m.entries_added += 1;
    m.tail_count += 1;
    m.tail_bytes += bytes;
    put_meta(st, c, &m)?;
    Ok(id)
}

/// Writes a new, empty stream's record (XGROUP CREATE MKSTREAM).
pub fn create_empty(st: &mut Store, c: &mut Coll) -> Result<(), Error> {
    put_meta(st, c, &Meta::default())
}

/// Entries with ids in `start..=end`, at most `count` (0: all), lowest
/// first (highest first with `rev`).
pub fn range(
    st: &mut Store,
    c: &mut Coll,
    start: StreamId,
    end: StreamId,
    count: usize,
    rev: bool,
) -> Result<Vec<Entry>, Error> {
    let mut out = Vec::new();
    if start > end {
        return Ok(out);
    }
    let from = match rev {
        false => c.rank(st, T_ENTRIES, &start.key())?.0,
        true => match c.rank(st, T_ENTRIES, &end.key())? {
            (r, true) => r,
            (0, false) => return Ok(out),
            (r, false) => r - 1,
        },
    };
    if from >= c.len() {
        return Ok(out);
    }
    c.walk(st, T_ENTRIES, from, rev, |k, v| {
        let id = StreamId::from_key(k)?;
        if (!rev && id > end) || (rev && id < start) {
            return Ok(false);
        }
        out.push(Entry {
            id,
            fields: decode_entry(v)?.1,
        });
        Ok(count == 0 || out.len() < count)
    })?;
    Ok(out)
}

/// The fields of entry `id`, if it is there.
pub fn get(st: &mut Store, c: &mut Coll, id: StreamId) -> Result<Option<Fields>, Error> {
    c.get(st, T_ENTRIES, &id.key())?
        .map(|v| decode_entry(&v).map(|(_, f)| f))
        .transpose()
}

/// The entry at position `rank` (0: the first).
pub fn at(st: &mut Store, c: &mut Coll, rank: u64) -> Result<Option<Entry>, Error> {
    match c.at(st, T_ENTRIES, rank)? {
        Some((k, v)) => Ok(Some(Entry {
            id: StreamId::from_key(&k)?,
            fields: decode_entry(&v)?.1,
        })),
        None => Ok(None),
    }
}

/// The first entry's id (0-0 for an empty stream), as Redis records it.
pub fn first_id(st: &mut Store, c: &mut Coll) -> Result<StreamId, Error> {
    Ok(at(st, c, 0)?.map_or(StreamId::ZERO, |e| e.id))
}

/// Deletes the entries `ids` (XDEL); returns how many were there.
pub fn delete(st: &mut Store, c: &mut Coll, ids: &[StreamId]) -> Result<u64, Error> {
    let mut m = meta(st, c)?;
    let mut deleted = 0;
    for &id in ids {
        if c.remove(st, T_ENTRIES, &id.key())?.is_some() {
            deleted += 1;
            m.max_deleted = m.max_deleted.max(id);
        }
    }
    if deleted > 0 {
        put_meta(st, c, &m)?;
    }
    Ok(deleted)
}

/// What a trim keeps.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Trim {
    /// At most this many entries.
    MaxLen(u64),
    /// Only ids at or above this one.
    MinId(StreamId),
}

/// How XADD and XTRIM trim: `approx` (`~`) removes whole nodes only, at
/// most `limit` entries (0: no limit).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct TrimSpec {
    pub trim: Trim,
    pub approx: bool,
    pub limit: u64,
}

/// Whether the head entry `id` goes under `trim` with `len` entries.
fn head_goes(trim: Trim, len: u64, id: StreamId) -> bool {
    match trim {
        Trim::MaxLen(n) => len > n,
        Trim::MinId(min) => id < min,
    }
}

/// The head node's ids (its entries from the first on).
fn head_node(st: &mut Store, c: &mut Coll) -> Result<Vec<StreamId>, Error> {
    let mut ids = Vec::new();
    let mut node = None;
    c.walk(st, T_ENTRIES, 0, false, |k, v| {
        let n = node_of(v)?;
        if *node.get_or_insert(n) != n {
            return Ok(false);
        }
        ids.push(StreamId::from_key(k)?);
        Ok(true)
    })?;
    Ok(ids)
}

/// Trims from the head (XTRIM, XADD's MAXLEN/MINID); returns how many
/// entries went.
pub fn trim(st: &mut Store, c: &mut Coll, spec: TrimSpec) -> Result<u64, Error> {
    let mut deleted = 0;
    if spec.approx {
        loop {
            let ids = head_node(st, c)?;
            let (Some(&last), n) = (ids.last(), ids.len() as u64) else {
                break;
            };
            if spec.limit > 0 && deleted + n > spec.limit {
                break;
            }
            let whole = match spec.trim {
                Trim::MaxLen(max) => c.len() - n >= max,
                Trim::MinId(min) => last < min,
            };
            if !whole {
                break;
            }
            for id in ids {
                c.remove(st, T_ENTRIES, &id.key())?;
            }
            deleted += n;
        }
    } else {
        while let Some(e) = c.at(st, T_ENTRIES, 0)? {
            if !head_goes(spec.trim, c.len(), StreamId::from_key(&e.0)?) {
                break;
            }
            c.remove(st, T_ENTRIES, &e.0)?;
            deleted += 1;
        }
    }
    if deleted > 0 && c.len_of(T_ENTRIES) == 0 {
        // The tail node went too: the next entry starts a new one.
        let mut m = meta(st, c)?;
        m.tail_node += 1;
        m.tail_count = 0;
        m.tail_bytes = 0;
        put_meta(st, c, &m)?;
    }
    Ok(deleted)
}

/// The number of nodes holding entries (XINFO's radix-tree-keys).
pub fn nodes(st: &mut Store, c: &mut Coll) -> Result<u64, Error> {
    let len = c.len();
    if len == 0 {
        return Ok(0);
    }
    let first = c
        .at(st, T_ENTRIES, 0)?
        .map(|(_, v)| node_of(&v))
        .transpose()?;
    let last = c
        .at(st, T_ENTRIES, len - 1)?
        .map(|(_, v)| node_of(&v))
        .transpose()?;
    Ok(match (first, last) {
        (Some(a), Some(b)) => b.saturating_sub(a) + 1,
        _ => 0,
    })
}
