//! What consumers do to a group: read new entries (`>`), re-read their
//! own history, claim pending entries from others (XCLAIM, XAUTOCLAIM).
//!
//! Invariants: every delivery of a new entry advances the group's last id
//! and its entries-read counter (`Counters::advance`) and, unless NOACK,
//! adds the entry to the PEL under the reading consumer; a pending entry
//! whose stream entry is gone is never claimed (XCLAIM drops it, XAUTOCLAIM
//! drops it and reports its id).

use crate::coll::Coll;
use crate::error::Error;
use crate::store::Store;

use super::entries::{self, Entry, Fields};
use super::groups::{self, counters, Group, Nack};
use super::id::StreamId;

/// Who reads or claims: a consumer of a group, at a time (Unix ms).
#[derive(Clone, Copy, Debug)]
pub struct Who<'a> {
    pub group: &'a [u8],
    pub consumer: &'a [u8],
    pub now: u64,
}

/// Delivers up to `count` (0: all) entries after the group's last id
/// (`group`, its record) to the consumer (XREADGROUP `>`); `noack` leaves
/// them out of the PEL.
pub fn read_new(
    st: &mut Store,
    c: &mut Coll,
    who: Who<'_>,
    mut group: Group,
    count: usize,
    noack: bool,
) -> Result<Vec<Entry>, Error> {
    let (g, consumer, now) = (who.group, who.consumer, who.now);
    let Some(start) = group.last_id.incr() else {
        return Ok(Vec::new());
    };
    let found = entries::range(st, c, start, StreamId::MAX, count, false)?;
    if found.is_empty() {
        return Ok(found);
    }
    let ctr = counters(st, c)?;
    for e in &found {
        ctr.advance(&mut group, e.id);
        if !noack {
            let nack = Nack {
                consumer: consumer.to_vec(),
                delivery_time: now,
                delivery_count: 1,
            };
            groups::pel_set(st, c, g, e.id, &nack)?;
        }
    }
    groups::put_group(st, c, g, &group)?;
    Ok(found)
}

/// The consumer's pending entries after `after`, at most `count` (0: all)
/// (XREADGROUP with an id): each one's fields, `None` for an entry gone
/// from the stream. Each delivered one counts as delivered again, now.
pub fn read_history(
    st: &mut Store,
    c: &mut Coll,
    who: Who<'_>,
    after: StreamId,
    count: usize,
) -> Result<Vec<(StreamId, Option<Fields>)>, Error> {
    let (g, consumer, now) = (who.group, who.consumer, who.now);
    let Some(start) = after.incr() else {
        return Ok(Vec::new());
    };
    let ids = groups::consumer_pel(st, c, g, consumer, start, StreamId::MAX, count)?;
    let mut out = Vec::with_capacity(ids.len());
    for id in ids {
        let fields = entries::get(st, c, id)?;
        if fields.is_some() {
            if let Some(mut n) = groups::pel_get(st, c, g, id)? {
                n.delivery_time = now;
                n.delivery_count += 1;
                groups::pel_set(st, c, g, id, &n)?;
            }
        }
        out.push((id, fields));
    }
    Ok(out)
}

/// XCLAIM's options, resolved.
#[derive(Clone, Copy, Debug, Default)]
pub struct ClaimOptions {
    pub min_idle: u64,
    /// The delivery time to set (IDLE or TIME, else now).
    pub delivery_time: u64,
    pub retry_count: Option<u64>,
    pub force: bool,
    pub justid: bool,
    pub last_id: Option<StreamId>,
}

/// How a claim updates the entries it takes.
#[derive(Clone, Copy, Debug)]
struct Takeover {
    time: u64,
    retry: Option<u64>,
    justid: bool,
}

/// Takes the pending entry `id` for the consumer, as XCLAIM and
/// XAUTOCLAIM do once it qualifies.
fn take_over(
    st: &mut Store,
    c: &mut Coll,
    who: Who<'_>,
    id: StreamId,
    mut n: Nack,
    how: Takeover,
) -> Result<(), Error> {
    n.delivery_time = how.time;
    match how.retry {
        Some(r) => n.delivery_count = r,
        None if !how.justid => n.delivery_count += 1,
        None => {}
    }
    n.consumer = who.consumer.to_vec();
    groups::pel_set(st, c, who.group, id, &n)
}

/// XCLAIM: the entries claimed, with their fields unless JUSTID.
pub fn claim(
    st: &mut Store,
    c: &mut Coll,
    who: Who<'_>,
    ids: &[StreamId],
    o: ClaimOptions,
) -> Result<Vec<(StreamId, Option<Fields>)>, Error> {
    let (g, consumer, now) = (who.group, who.consumer, who.now);
    if let Some(last) = o.last_id {
        let mut group = groups::group(st, c, g)?.ok_or_else(crate::coll::page::damaged)?;
        if last > group.last_id {
            group.last_id = last;
            groups::put_group(st, c, g, &group)?;
        }
    }
    let mut out = Vec::new();
    for &id in ids {
        let fields = entries::get(st, c, id)?;
        let nack = match groups::pel_get(st, c, g, id)? {
            Some(n) => n,
            None if o.force && fields.is_some() => Nack {
                consumer: Vec::new(),
                delivery_time: now,
                delivery_count: 0,
            },
            None => continue,
        };
        let Some(fields) = fields else {
            groups::pel_remove(st, c, g, id)?;
            continue;
        };
        if o.min_idle > 0 && now.saturating_sub(nack.delivery_time) < o.min_idle {
            continue;
        }
        groups::create_consumer(st, c, g, consumer, now)?;
        let how = Takeover {
            time: o.delivery_time,
            retry: o.retry_count,
            justid: o.justid,
        };
        take_over(st, c, who, id, nack, how)?;
        out.push((id, (!o.justid).then_some(fields)));
    }
    Ok(out)
}

/// What XAUTOCLAIM found: the next start id (0-0: the scan is over), the
/// entries claimed (fields unless JUSTID) and the ids dropped because
/// their entries are gone.
pub struct AutoClaimed {
    pub next: StreamId,
    pub claimed: Vec<(StreamId, Option<Fields>)>,
    pub deleted: Vec<StreamId>,
}

/// XAUTOCLAIM: scans the PEL from `start`, at most `count × 10` entries,
/// claiming up to `count` idle for at least `min_idle` ms (an id dropped
/// counts against `count` too, as in Redis 7.0).
pub fn autoclaim(
    st: &mut Store,
    c: &mut Coll,
    who: Who<'_>,
    min_idle: u64,
    start: StreamId,
    count: usize,
    justid: bool,
) -> Result<AutoClaimed, Error> {
    let (g, consumer, now) = (who.group, who.consumer, who.now);
    let attempts = count.saturating_mul(10);
    let scanned = groups::pel_range(st, c, g, start, StreamId::MAX, attempts.saturating_add(1))?;
    groups::create_consumer(st, c, g, consumer, now)?;
    let mut out = AutoClaimed {
        next: StreamId::ZERO,
        claimed: Vec::new(),
        deleted: Vec::new(),
    };
    let mut done = scanned.len();
    for (i, (id, nack)) in scanned.iter().enumerate() {
        if i >= attempts || out.claimed.len() + out.deleted.len() >= count {
            done = i;
            break;
        }
        let Some(fields) = entries::get(st, c, *id)? else {
            groups::pel_remove(st, c, g, *id)?;
            out.deleted.push(*id);
            continue;
        };
        if min_idle > 0 && now.saturating_sub(nack.delivery_time) < min_idle {
            continue;
        }
        let how = Takeover {
            time: now,
            retry: None,
            justid,
        };
        take_over(st, c, who, *id, nack.clone(), how)?;
        out.claimed.push((*id, (!justid).then_some(fields)));
    }
    if let Some((id, _)) = scanned.get(done) {
        out.next = *id;
    }
    Ok(out)
}
