//! Streams in Redis's serialization: types 15 (Redis 5 to 6.2), 19 (7.0)
//! and 21 (7.2) read, type 19 written.
//!
//! The object is: the number of nodes, each `master id (16 bytes BE) as a
//! string, listpack`; the length; the last id (`ms`, `seq` as lengths);
//! from type 19 the first id, the max deleted id and entries-added; the
//! groups, each `name, last id, entries read (type 19+; u64::MAX for
//! unknown)`, its PEL (`count`, each `id (16 bytes), delivery time (u64
//! LE ms), delivery count`) and its consumers (`count`, each `name, seen
//! time (u64 LE)`, type 21's active time, then its pending ids). A
//! listpack node holds a master entry (`count, deleted, n, n fields, 0`)
//! and entries `flags, ms diff, seq diff, [n, fields and values | values
//! of the master's fields when flag 2], lp-count`; flag 1 marks a deleted
//! entry.
//!
//! Invariants: decoding checks every count against the bytes left and
//! that the live entries number the declared length; ids come back in
//! increasing order or the payload is refused.

use super::packed::{self, Entry};
use super::primitives::{self, Input};
pub use super::value::{ConsumerDump, DumpEntry, GroupDump, StreamDump, StreamId};
use super::value::{RdbError, RdbValue};

/// The unknown entries-read counter.
const UNKNOWN: i64 = -1;
const DELETED: i64 = 1;
const SAME_FIELDS: i64 = 2;
/// Entries [`encode`] puts in one node (Redis's default).
const NODE_ENTRIES: usize = 100;

fn int(e: Option<Entry<'_>>) -> Result<i64, RdbError> {
    match e.ok_or_else(RdbError::bad)? {
        Entry::Int(v) => Ok(v),
        Entry::Bytes(b) => std::str::from_utf8(b)
            .ok()
            .and_then(|t| t.parse().ok())
            .ok_or_else(RdbError::bad),
    }
}

fn bytes(e: Option<Entry<'_>>) -> Result<Vec<u8>, RdbError> {
    Ok(e.ok_or_else(RdbError::bad)?.into_bytes())
}

fn id_of(raw: &[u8]) -> Result<StreamId, RdbError> {
    if raw.len() != 16 {
        return Err(RdbError::bad());
    }
    let half = |b: &[u8]| u64::from_be_bytes(b.try_into().expect("8 bytes"));
    Ok(StreamId::new(half(&raw[..8]), half(&raw[8..])))
}

/// The live entries of one listpack node whose master id is `master`.
fn node(master: StreamId, blob: &[u8], out: &mut Vec<DumpEntry>) -> Result<(), RdbError> {
    let mut it = packed::listpack(blob)?.into_iter();
    let (_count, _deleted) = (int(it.next())?, int(it.next())?);
    let n = usize::try_from(int(it.next())?).map_err(|_| RdbError::bad())?;
    let master_fields = (0..n)
        .map(|_| bytes(it.next()))
        .collect::<Result<Vec<_>, _>>()?;
    if int(it.next())? != 0 {
        return Err(RdbError::bad());
    }
    while let Some(flags) = it.next() {
        let flags = int(Some(flags))?;
        let ms = master.ms.wrapping_add(int(it.next())? as u64);
        let seq = master.seq.wrapping_add(int(it.next())? as u64);
        let fields = if flags & SAME_FIELDS != 0 {
            let mut f = Vec::with_capacity(n);
            for name in &master_fields {
                f.push((name.clone(), bytes(it.next())?));
            }
            f
        } else {
            let k = int(it.next())?;
            (0..k)
                .map(|_| Ok((bytes(it.next())?, bytes(it.next())?)))
                .collect::<Result<Vec<_>, RdbError>>()?
        };
        int(it.next())?;
        if flags & DELETED == 0 {
            out.push((StreamId::new(ms, seq), fields));
        }
    }
    Ok(())
}

fn read_id(input: &mut Input<'_>) -> Result<StreamId, RdbError> {
    Ok(StreamId::new(input.plain_len()?, input.plain_len()?))
}

fn time(input: &mut Input<'_>) -> Result<u64, RdbError> {
    let b = input.take(8)?;
    Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
}

/// Reads a stream object of `version` 1 (type 15), 2 (19) or 3 (21).
pub(super) fn decode(input: &mut Input<'_>, version: u8) -> Result<RdbValue, RdbError> {
    let mut s = StreamDump::default();
    for _ in 0..input.count(2)? {
        let master = id_of(&input.string()?)?;
        node(master, &input.string()?, &mut s.entries)?;
    }
    if !s.entries.windows(2).all(|w| w[0].0 < w[1].0) {
        return Err(RdbError::bad());
    }
    let length = input.plain_len()?;
    s.last_id = read_id(input)?;
    if version >= 2 {
        read_id(input)?; // the first id: the first entry's, recomputed
        s.max_deleted = read_id(input)?;
        s.entries_added = input.plain_len()?;
    } else {
        s.entries_added = length;
    }
    if length != s.entries.len() as u64 {
        return Err(RdbError::bad());
    }
    for _ in 0..input.count(3)? {
        s.groups.push(group(input, version)?);
    }
    s.estimate_reads = version == 1;
    Ok(RdbValue::Stream(Box::new(s)))
}

fn group(input: &mut Input<'_>, version: u8) -> Result<GroupDump, RdbError> {
    let name = input.string()?.into_owned();
    let last_id = read_id(input)?;
    let entries_read = match version {
        1 => UNKNOWN,
        _ => match input.plain_len()? {
            u64::MAX => UNKNOWN,
            n => i64::try_from(n).map_err(|_| RdbError::bad())?,
        },
    };
    let mut pel = Vec::new();
    for _ in 0..input.count(25)? {
        let id = id_of(input.take(16)?)?;
        pel.push((id, time(input)?, input.plain_len()?));
    }
    let mut consumers = Vec::new();
    for _ in 0..input.count(10)? {
        let name = input.string()?.into_owned();
        let seen_time = time(input)?;
        if version >= 3 {
            time(input)?;
        }
        let mut pending = Vec::new();
        for _ in 0..input.count(16)? {
            pending.push(id_of(input.take(16)?)?);
        }
        consumers.push(ConsumerDump {
            name,
            seen_time,
            pending,
        });
    }
    Ok(GroupDump {
        name,
        last_id,
        entries_read,
        pel,
        consumers,
    })
}

fn put_id(out: &mut Vec<u8>, id: StreamId) {
    primitives::put_len(out, id.ms);
    primitives::put_len(out, id.seq);
}

/// One node of `entries` (at least one) as a listpack.
fn encode_node(entries: &[DumpEntry]) -> Vec<u8> {
    let master = entries[0].0;
    let names: Vec<&[u8]> = entries[0].1.iter().map(|(f, _)| &f[..]).collect();
    let text = |v: i64| v.to_string().into_bytes();
    let mut items: Vec<Vec<u8>> = vec![
        text(entries.len() as i64),
        text(0),
        text(names.len() as i64),
    ];
    items.extend(names.iter().map(|n| n.to_vec()));
    items.push(text(0));
    for (id, fields) in entries {
        let same =
            fields.len() == names.len() && fields.iter().zip(&names).all(|((f, _), n)| f == n);
        items.push(text(if same { SAME_FIELDS } else { 0 }));
        items.push(text(id.ms.wrapping_sub(master.ms) as i64));
        items.push(text(id.seq.wrapping_sub(master.seq) as i64));
        if same {
            items.extend(fields.iter().map(|(_, v)| v.clone()));
            items.push(text(fields.len() as i64 + 3));
        } else {
            items.push(text(fields.len() as i64));
            for (f, v) in fields {
                items.push(f.clone());
                items.push(v.clone());
            }
            items.push(text(2 * fields.len() as i64 + 4));
        }
    }
    let refs: Vec<&[u8]> = items.iter().map(Vec::as_slice).collect();
    packed::listpack_encode(&refs)
}

/// Writes `s` as a type 19 object (the type byte is the caller's).
pub(super) fn encode(out: &mut Vec<u8>, s: &StreamDump) {
    let nodes: Vec<&[DumpEntry]> = s.entries.chunks(NODE_ENTRIES).collect();
    primitives::put_len(out, nodes.len() as u64);
    for n in &nodes {
        primitives::put_string(out, &n[0].0.key());
        primitives::put_string(out, &encode_node(n));
    }
    primitives::put_len(out, s.entries.len() as u64);
    put_id(out, s.last_id);
    put_id(out, s.entries.first().map_or(StreamId::ZERO, |e| e.0));
    put_id(out, s.max_deleted);
    primitives::put_len(out, s.entries_added);
    primitives::put_len(out, s.groups.len() as u64);
    for g in &s.groups {
        primitives::put_string(out, &g.name);
        put_id(out, g.last_id);
        primitives::put_len(
            out,
            if g.entries_read < 0 {
                u64::MAX
            } else {
                g.entries_read as u64
            },
        );
        primitives::put_len(out, g.pel.len() as u64);
        for (id, t, count) in &g.pel {
            out.extend_from_slice(&id.key());
            out.extend_from_slice(&t.to_le_bytes());
            primitives::put_len(out, *count);
        }
        primitives::put_len(out, g.consumers.len() as u64);
        for k in &g.consumers {
            primitives::put_string(out, &k.name);
            out.extend_from_slice(&k.seen_time.to_le_bytes());
            primitives::put_len(out, k.pending.len() as u64);
            for id in &k.pending {
                out.extend_from_slice(&id.key());
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sample() -> StreamDump {
        let e = |ms: u64, f: &[(&str, &str)]| {
            let fields = f
                .iter()
                .map(|(a, b)| (a.as_bytes().to_vec(), b.as_bytes().to_vec()))
                .collect();
            (StreamId::new(ms, 0), fields)
        };
        let mut entries: Vec<DumpEntry> =
            (1..=250).map(|i| e(i, &[("n", "1"), ("x", "y")])).collect();
        entries.push(e(300, &[("other", "-5")]));
        StreamDump {
            entries,
            last_id: StreamId::new(301, 7),
            max_deleted: StreamId::new(299, 0),
            entries_added: 260,
            groups: vec![GroupDump {
                name: b"g".to_vec(),
                last_id: StreamId::new(2, 0),
                entries_read: UNKNOWN,
                pel: vec![(StreamId::new(1, 0), 1234, 2), (StreamId::new(2, 0), 99, 1)],
                consumers: vec![ConsumerDump {
                    name: b"c".to_vec(),
                    seen_time: 77,
                    pending: vec![StreamId::new(1, 0), StreamId::new(2, 0)],
                }],
            }],
            estimate_reads: false,
        }
    }

    #[test]
    fn a_dumped_stream_restores_whole() {
        let s = sample();
        let payload = crate::rdb::dump(&RdbValue::Stream(Box::new(s.clone())));
        assert_eq!(payload[0], 19, "Redis 7.0's type");
        assert_eq!(
            crate::rdb::restore(&payload).unwrap(),
            RdbValue::Stream(Box::new(s))
        );
    }

    #[test]
    fn a_short_stream_payload_is_refused() {
        let payload = crate::rdb::dump(&RdbValue::Stream(Box::new(sample())));
        // Cut inside the object, footer recomputed: bad data, not a panic.
        let body = &payload[..payload.len() - 40];
        let mut cut = body.to_vec();
        cut.extend_from_slice(&crate::rdb::RDB_VERSION.to_le_bytes());
        let crc = super::super::crc64::crc64(&cut);
        cut.extend_from_slice(&crc.to_le_bytes());
        assert!(crate::rdb::restore(&cut).is_err());
    }
}
