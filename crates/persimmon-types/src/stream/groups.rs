//! Consumer groups: each group's record, its pending entries list (PEL),
//! its consumers and each consumer's own pending ids; and Redis 7.0's
//! entries-read and lag bookkeeping.
//!
//! | tree | key | value |
//! |---|---|---|
//! | 1 | `01` + group | `last delivered id (16), entries read i64 LE` (-1: unknown) |
//! | 2 | `g` + id (16) | `delivery time u64 LE, delivery count u64 LE, consumer` |
//! | 3 | `00` + `g` + consumer | `seen time u64 LE` |
//! | 3 | `01` + `g` + `len u32 BE` + consumer + id (16) | empty |
//!
//! where `g` is `len u32 BE` + the group's name, so one group's keys are
//! one contiguous run of its tree.
//!
//! Invariants: a PEL entry of group g owned by consumer c has exactly one
//! consumer key `01 g c id` and c exists; destroying a group or deleting
//! a consumer removes every key of it; a pending id may name an entry
//! XDEL or a trim removed since (Redis keeps it too).

use crate::coll::Coll;
use crate::error::Error;
use crate::store::Store;

use super::entries::{first_id, meta, Meta, T_META};
use super::id::StreamId;

const T_PEL: usize = 2;
const T_CONSUMERS: usize = 3;

/// The unknown entries-read counter.
pub const UNKNOWN: i64 = -1;

/// A group's record.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Group {
    pub last_id: StreamId,
    pub entries_read: i64,
}

/// One pending entry.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Nack {
    pub consumer: Vec<u8>,
    pub delivery_time: u64,
    pub delivery_count: u64,
}

fn len_prefixed(name: &[u8]) -> Vec<u8> {
    let mut k = Vec::with_capacity(name.len() + 4);
    k.extend_from_slice(&(name.len() as u32).to_be_bytes());
    k.extend_from_slice(name);
    k
}

fn group_key(g: &[u8]) -> Vec<u8> {
    let mut k = vec![1];
    k.extend_from_slice(g);
    k
}

fn pel_key(g: &[u8], id: StreamId) -> Vec<u8> {
    let mut k = len_prefixed(g);
    k.extend_from_slice(&id.key());
    k
}

fn consumer_key(g: &[u8], name: &[u8]) -> Vec<u8> {
    let mut k = vec![0];
    k.extend_from_slice(&len_prefixed(g));
    k.extend_from_slice(name);
    k
}

fn consumer_pel_prefix(g: &[u8], name: &[u8]) -> Vec<u8> {
    let mut k = vec![1];
    k.extend_from_slice(&len_prefixed(g));
    k.extend_from_slice(&len_prefixed(name));
    k
}

/// The least key above every key starting with `prefix` (`None`: none).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xFF {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// How many keys of tree `t` start with `prefix`.
fn count_prefix(st: &mut Store, c: &mut Coll, t: usize, prefix: &[u8]) -> Result<u64, Error> {
    let (from, _) = c.rank(st, t, prefix)?;
    let to = match prefix_end(prefix) {
        Some(end) => c.rank(st, t, &end)?.0,
        None => c.len_of(t),
    };
    Ok(to - from)
}

/// Keys and values, in key order.
type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Keys (less `prefix`) and values of tree `t` starting with `prefix`,
/// from `prefix + from` on, at most `count` (0: all).
fn scan_prefix(
    st: &mut Store,
    c: &mut Coll,
    t: usize,
    prefix: &[u8],
    from: &[u8],
    count: usize,
) -> Result<Pairs, Error> {
    let mut start = prefix.to_vec();
    start.extend_from_slice(from);
    let (rank, _) = c.rank(st, t, &start)?;
    let mut out = Vec::new();
    if rank >= c.len_of(t) {
        return Ok(out);
    }
    c.walk(st, t, rank, false, |k, v| {
        let Some(rest) = k.strip_prefix(prefix) else {
            return Ok(false);
        };
        out.push((rest.to_vec(), v.to_vec()));
        Ok(count == 0 || out.len() < count)
    })?;
    Ok(out)
}

// --- Groups ---------------------------------------------------------------

fn decode_group(b: &[u8]) -> Result<Group, Error> {
    if b.len() != 24 {
        return Err(crate::coll::page::damaged());
    }
    Ok(Group {
        last_id: StreamId::from_key(&b[..16])?,
        entries_read: i64::from_le_bytes(b[16..24].try_into().expect("8 bytes")),
    })
}

pub fn group(st: &mut Store, c: &mut Coll, g: &[u8]) -> Result<Option<Group>, Error> {
    c.get(st, T_META, &group_key(g))?
        .map(|b| decode_group(&b))
        .transpose()
}

pub fn put_group(st: &mut Store, c: &mut Coll, g: &[u8], group: &Group) -> Result<(), Error> {
    let mut v = group.last_id.key().to_vec();
    v.extend_from_slice(&group.entries_read.to_le_bytes());
    c.insert(st, T_META, &group_key(g), &v).map(|_| ())
}

/// Every group, in name order.
pub fn groups(st: &mut Store, c: &mut Coll) -> Result<Vec<(Vec<u8>, Group)>, Error> {
    scan_prefix(st, c, T_META, &[1], b"", 0)?
        .into_iter()
        .map(|(name, v)| Ok((name, decode_group(&v)?)))
        .collect()
}

/// XGROUP CREATE: false when the group exists.
pub fn create_group(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    last_id: StreamId,
    entries_read: i64,
) -> Result<bool, Error> {
    if group(st, c, g)?.is_some() {
        return Ok(false);
    }
    put_group(
        st,
        c,
        g,
        &Group {
            last_id,
            entries_read,
        },
    )?;
    Ok(true)
}

/// XGROUP DESTROY: removes the group and all its keys; false when absent.
pub fn destroy_group(st: &mut Store, c: &mut Coll, g: &[u8]) -> Result<bool, Error> {
    if c.remove(st, T_META, &group_key(g))?.is_none() {
        return Ok(false);
    }
    let gp = len_prefixed(g);
    for (rest, _) in scan_prefix(st, c, T_PEL, &gp, b"", 0)? {
        c.remove(st, T_PEL, &[&gp[..], &rest].concat())?;
    }
    for tag in [0u8, 1] {
        let prefix = [&[tag][..], &gp].concat();
        for (rest, _) in scan_prefix(st, c, T_CONSUMERS, &prefix, b"", 0)? {
            c.remove(st, T_CONSUMERS, &[&prefix[..], &rest].concat())?;
        }
    }
    Ok(true)
}

// --- Consumers --------------------------------------------------------------

/// A consumer of a group: its name, seen time, pending count.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Consumer {
    pub name: Vec<u8>,
    pub seen_time: u64,
    pub pending: u64,
}

pub fn consumer_exists(st: &mut Store, c: &mut Coll, g: &[u8], name: &[u8]) -> Result<bool, Error> {
    Ok(c.get(st, T_CONSUMERS, &consumer_key(g, name))?.is_some())
}

/// Creates the consumer (seen now) when missing; returns whether it did.
pub fn create_consumer(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    name: &[u8],
    now: u64,
) -> Result<bool, Error> {
    if consumer_exists(st, c, g, name)? {
        return Ok(false);
    }
    c.insert(st, T_CONSUMERS, &consumer_key(g, name), &now.to_le_bytes())?;
    Ok(true)
}

/// The consumer is seen now (created when missing).
pub fn touch_consumer(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    name: &[u8],
    now: u64,
) -> Result<(), Error> {
    c.insert(st, T_CONSUMERS, &consumer_key(g, name), &now.to_le_bytes())
        .map(|_| ())
}

/// The consumer's pending count.
pub fn consumer_pending(st: &mut Store, c: &mut Coll, g: &[u8], name: &[u8]) -> Result<u64, Error> {
    count_prefix(st, c, T_CONSUMERS, &consumer_pel_prefix(g, name))
}

/// The group's consumers, in name order.
pub fn consumers(st: &mut Store, c: &mut Coll, g: &[u8]) -> Result<Vec<Consumer>, Error> {
    let prefix = [&[0u8][..], &len_prefixed(g)].concat();
    let mut out = Vec::new();
    for (name, v) in scan_prefix(st, c, T_CONSUMERS, &prefix, b"", 0)? {
        let seen_time =
            u64::from_le_bytes(v.get(..8).and_then(|b| b.try_into().ok()).unwrap_or([0; 8]));
        let pending = consumer_pending(st, c, g, &name)?;
        out.push(Consumer {
            name,
            seen_time,
            pending,
        });
    }
    Ok(out)
}

/// XGROUP DELCONSUMER: removes the consumer and its pending entries;
/// returns how many it had (`None`: no such consumer).
pub fn delete_consumer(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    name: &[u8],
) -> Result<Option<u64>, Error> {
    if c.remove(st, T_CONSUMERS, &consumer_key(g, name))?.is_none() {
        return Ok(None);
    }
    let ids = consumer_pel(st, c, g, name, StreamId::ZERO, StreamId::MAX, 0)?;
    for &id in &ids {
        pel_remove(st, c, g, id)?;
    }
    Ok(Some(ids.len() as u64))
}

// --- Pending entries ----------------------------------------------------------

fn encode_nack(n: &Nack) -> Vec<u8> {
    let mut v = Vec::with_capacity(16 + n.consumer.len());
    v.extend_from_slice(&n.delivery_time.to_le_bytes());
    v.extend_from_slice(&n.delivery_count.to_le_bytes());
    v.extend_from_slice(&n.consumer);
    v
}

fn decode_nack(b: &[u8]) -> Result<Nack, Error> {
    if b.len() < 16 {
        return Err(crate::coll::page::damaged());
    }
    Ok(Nack {
        delivery_time: u64::from_le_bytes(b[..8].try_into().expect("8 bytes")),
        delivery_count: u64::from_le_bytes(b[8..16].try_into().expect("8 bytes")),
        consumer: b[16..].to_vec(),
    })
}

pub fn pel_get(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    id: StreamId,
) -> Result<Option<Nack>, Error> {
    c.get(st, T_PEL, &pel_key(g, id))?
        .map(|b| decode_nack(&b))
        .transpose()
}

/// Sets the pending entry `id` (moving it between consumers' lists).
pub fn pel_set(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    id: StreamId,
    n: &Nack,
) -> Result<(), Error> {
    let old = c.insert(st, T_PEL, &pel_key(g, id), &encode_nack(n))?;
    let old = old.map(|b| decode_nack(&b)).transpose()?;
    if let Some(o) = old.as_ref().filter(|o| o.consumer != n.consumer) {
        let mut k = consumer_pel_prefix(g, &o.consumer);
        k.extend_from_slice(&id.key());
        c.remove(st, T_CONSUMERS, &k)?;
    }
    if old.is_none_or(|o| o.consumer != n.consumer) {
        let mut k = consumer_pel_prefix(g, &n.consumer);
        k.extend_from_slice(&id.key());
        c.insert(st, T_CONSUMERS, &k, b"")?;
    }
    Ok(())
}

/// Removes the pending entry `id` (XACK); returns whether it was there.
pub fn pel_remove(st: &mut Store, c: &mut Coll, g: &[u8], id: StreamId) -> Result<bool, Error> {
    let Some(old) = c.remove(st, T_PEL, &pel_key(g, id))? else {
        return Ok(false);
    };
    let old = decode_nack(&old)?;
    let mut k = consumer_pel_prefix(g, &old.consumer);
    k.extend_from_slice(&id.key());
    c.remove(st, T_CONSUMERS, &k)?;
    Ok(true)
}

/// The group's pending entries with ids in `start..=end`, at most `count`
/// (0: all), in id order.
pub fn pel_range(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    start: StreamId,
    end: StreamId,
    count: usize,
) -> Result<Vec<(StreamId, Nack)>, Error> {
    let mut out = Vec::new();
    if start > end {
        return Ok(out);
    }
    let gp = len_prefixed(g);
    let (rank, _) = c.rank(st, T_PEL, &pel_key(g, start))?;
    if rank >= c.len_of(T_PEL) {
        return Ok(out);
    }
    c.walk(st, T_PEL, rank, false, |k, v| {
        let Some(rest) = k.strip_prefix(&gp[..]) else {
            return Ok(false);
        };
        let id = StreamId::from_key(rest)?;
        if id > end {
            return Ok(false);
        }
        out.push((id, decode_nack(v)?));
        Ok(count == 0 || out.len() < count)
    })?;
    Ok(out)
}

/// The consumer's pending ids in `start..=end`, at most `count` (0: all).
pub fn consumer_pel(
    st: &mut Store,
    c: &mut Coll,
    g: &[u8],
    name: &[u8],
    start: StreamId,
    end: StreamId,
    count: usize,
) -> Result<Vec<StreamId>, Error> {
    let mut ids = Vec::new();
    if start > end {
        return Ok(ids);
    }
    let prefix = consumer_pel_prefix(g, name);
    for (rest, _) in scan_prefix(st, c, T_CONSUMERS, &prefix, &start.key(), 0)? {
        let id = StreamId::from_key(&rest)?;
        if id > end || (count > 0 && ids.len() >= count) {
            break;
        }
        ids.push(id);
    }
    Ok(ids)
}

/// XPENDING's summary: the count, the lowest and highest ids, and each
/// consumer with pending entries and how many.
pub struct Summary {
    pub count: u64,
    pub bounds: Option<(StreamId, StreamId)>,
    pub consumers: Vec<(Vec<u8>, u64)>,
}

pub fn pel_summary(st: &mut Store, c: &mut Coll, g: &[u8]) -> Result<Summary, Error> {
    let gp = len_prefixed(g);
    let (from, _) = c.rank(st, T_PEL, &gp)?;
    let count = count_prefix(st, c, T_PEL, &gp)?;
    let mut bounds = None;
    if count > 0 {
        let lo = c
            .at(st, T_PEL, from)?
            .ok_or_else(crate::coll::page::damaged)?;
        let hi = c
            .at(st, T_PEL, from + count - 1)?
            .ok_or_else(crate::coll::page::damaged)?;
        bounds = Some((
            StreamId::from_key(&lo.0[gp.len()..])?,
            StreamId::from_key(&hi.0[gp.len()..])?,
        ));
    }
    let consumers = consumers(st, c, g)?
        .into_iter()
        .filter(|k| k.pending > 0)
        .map(|k| (k.name, k.pending))
        .collect();
    Ok(Summary {
        count,
        bounds,
        consumers,
    })
}

/// The group's pending count.
pub fn pel_count(st: &mut Store, c: &mut Coll, g: &[u8]) -> Result<u64, Error> {
    count_prefix(st, c, T_PEL, &len_prefixed(g))
}

// --- Entries read and lag -----------------------------------------------------

/// The stream's state the counters are computed from.
pub struct Counters {
    pub meta: Meta,
    pub len: u64,
    pub first_id: StreamId,
}

pub fn counters(st: &mut Store, c: &mut Coll) -> Result<Counters, Error> {
    Ok(Counters {
        meta: meta(st, c)?,
        len: c.len(),
        first_id: first_id(st, c)?,
    })
}

impl Counters {
    /// Whether an entry XDEL removed may lie at or after `start`.
    pub fn tombstones_from(&self, start: StreamId) -> bool {
        self.len > 0 && !self.meta.max_deleted.is_zero() && start <= self.meta.max_deleted
    }

    /// How many entries were ever added up to `id`, when that is known.
    pub fn distance(&self, id: StreamId) -> i64 {
        let m = &self.meta;
        let added = m.entries_added as i64;
        if m.entries_added == 0 {
            return 0;
        }
        if self.len == 0 && id <= m.last_id {
            return added;
        }
        if id == m.last_id {
            return added;
        }
        if id > m.last_id {
            return UNKNOWN;
        }
        if m.max_deleted.is_zero() || m.max_deleted < self.first_id {
            if id < self.first_id {
                return added - self.len as i64;
            }
            if id == self.first_id {
                return added - self.len as i64 + 1;
            }
        }
        UNKNOWN
    }

    /// A group's lag (`None`: unknown) and its entries-read counter as the
    /// lag's computation leaves it.
    pub fn lag(&self, group: &Group) -> (Option<i64>, i64) {
        let added = self.meta.entries_added as i64;
        if added == 0 {
            return (Some(0), group.entries_read);
        }
        if group.entries_read != UNKNOWN && !self.tombstones_from(group.last_id) {
            return (Some(added - group.entries_read), group.entries_read);
        }
        match self.distance(group.last_id) {
            UNKNOWN => (None, group.entries_read),
            read => (Some(added - read), read),
        }
    }

    /// The group's counter after delivering entry `id` past its last id.
    pub fn advance(&self, group: &mut Group, id: StreamId) {
        if group.entries_read != UNKNOWN && !self.tombstones_from(id) {
            group.entries_read += 1;
        } else if self.meta.entries_added > 0 {
            group.entries_read = self.distance(id);
        }
        group.last_id = id;
    }
}
