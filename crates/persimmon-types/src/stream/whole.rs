//! A stream read out whole and written whole, in the form Redis's
//! serialization carries it (`rdb::stream::StreamDump`): DUMP, RESTORE,
//! replication snapshots. O(size), as in Redis.
//!
//! Invariants: writing fills a new, empty stream in id order with Redis's
//! default node size; every pending id lands under the consumer that owns
//! it in the dump, with the group PEL's delivery time and count (a group
//! PEL id no consumer owns, or a consumer's id missing from the group PEL,
//! is left out: every pending entry here has exactly one owner).

use crate::coll::Coll;
use crate::error::Error;
use crate::rdb::stream::{self as dump, ConsumerDump, GroupDump, StreamDump};
use crate::store::Store;

use super::entries::{self, Meta, NodeLimits};
use super::groups::{self, Group, Nack};
use super::StreamId;

/// Everything in stream `c`.
pub fn read(st: &mut Store, c: &mut Coll) -> Result<StreamDump, Error> {
    let m = entries::meta(st, c)?;
    let all = entries::range(st, c, StreamId::ZERO, StreamId::MAX, 0, false)?;
    let mut out = StreamDump {
        entries: all.into_iter().map(|e| (out_id(e.id), e.fields)).collect(),
        last_id: out_id(m.last_id),
        max_deleted: out_id(m.max_deleted),
        entries_added: m.entries_added,
        groups: Vec::new(),
        estimate_reads: false,
    };
    for (name, g) in groups::groups(st, c)? {
        let pel = groups::pel_range(st, c, &name, StreamId::ZERO, StreamId::MAX, 0)?
            .into_iter()
            .map(|(id, n)| (out_id(id), n.delivery_time, n.delivery_count))
            .collect();
        let mut consumers = Vec::new();
        for k in groups::consumers(st, c, &name)? {
            let pending =
                groups::consumer_pel(st, c, &name, &k.name, StreamId::ZERO, StreamId::MAX, 0)?;
            consumers.push(ConsumerDump {
                name: k.name,
                seen_time: k.seen_time,
                pending: pending.into_iter().map(out_id).collect(),
            });
        }
        out.groups.push(GroupDump {
            name,
            last_id: out_id(g.last_id),
            entries_read: g.entries_read,
            pel,
            consumers,
        });
    }
    Ok(out)
}

/// Fills `c`, a new stream, with `s`.
pub fn write(st: &mut Store, c: &mut Coll, s: &StreamDump) -> Result<(), Error> {
    let limits = NodeLimits::default();
    for (id, fields) in &s.entries {
        let refs: Vec<(&[u8], &[u8])> = fields.iter().map(|(f, v)| (&f[..], &v[..])).collect();
        entries::add(st, c, entries::NewId::Given(in_id(*id)), &refs, 0, limits)?;
    }
    let mut m = entries::meta(st, c)?;
    m = Meta {
        last_id: in_id(s.last_id).max(m.last_id),
        max_deleted: in_id(s.max_deleted),
        entries_added: s.entries_added.max(s.entries.len() as u64),
        ..m
    };
    entries::put_meta(st, c, &m)?;
    let ctr = groups::counters(st, c)?;
    for g in &s.groups {
        let last_id = in_id(g.last_id);
        let entries_read = match s.estimate_reads {
            true => ctr.distance(last_id),
            false => g.entries_read,
        };
        let group = Group {
            last_id,
            entries_read,
        };
        groups::put_group(st, c, &g.name, &group)?;
        write_group(st, c, g)?;
    }
    Ok(())
}

fn write_group(st: &mut Store, c: &mut Coll, g: &GroupDump) -> Result<(), Error> {
    for k in &g.consumers {
        groups::touch_consumer(st, c, &g.name, &k.name, k.seen_time)?;
        for id in &k.pending {
            let Some(&(_, time, count)) = g.pel.iter().find(|(p, _, _)| p == id) else {
                continue;
            };
            let nack = Nack {
                consumer: k.name.clone(),
                delivery_time: time,
                delivery_count: count,
            };
            groups::pel_set(st, c, &g.name, in_id(*id), &nack)?;
        }
    }
    Ok(())
}

fn out_id(id: StreamId) -> dump::StreamId {
    dump::StreamId::new(id.ms, id.seq)
}

fn in_id(id: dump::StreamId) -> StreamId {
    StreamId::new(id.ms, id.seq)
}
