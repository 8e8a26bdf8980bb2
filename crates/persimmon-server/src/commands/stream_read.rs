//! XREAD and XREADGROUP (COUNT, BLOCK, NOACK, `$`, `>`, history ids,
//! several streams), and the serving of clients blocked in them once a
//! write reaches one of their streams (`blocking.rs` holds the registry,
//! `commands/blocking.rs` the serving loop that calls [`attempt`]).
//!
//! Invariants:
//! - Arguments, every key's type, every group and every id are checked
//!   before anything is read or delivered, as Redis does; each stream is
//!   then read in its own atomic unit (a delivery to a consumer — the
//!   group's last id, entries-read, the PEL — is one unit).
//! - A read blocks only when no stream could serve it, never inside a
//!   transaction or a script (nil at once there), and only with BLOCK.
//! - A blocked XREAD is served from a stream that got an entry after the
//!   id it waits past; a missing key or one of another type keeps it
//!   waiting. A blocked XREADGROUP is served new entries as `>` reads
//!   them; its stream deleted or retyped ends it with `UNBLOCKED`, its
//!   group destroyed with `NOGROUP`, as in Redis 7.0. Such a delivery
//!   propagates as the non-blocking XREADGROUP (COUNT n) that makes it.

use std::time::{Duration, Instant};

use persimmon_resp::{Args, Reply};
use persimmon_types::error::wrongtype;
use persimmon_types::store::Store;
use persimmon_types::stream::consume::{read_history, read_new, Who};
use persimmon_types::stream::groups::{self, touch_consumer};
use persimmon_types::stream::id::parse_strict;
use persimmon_types::stream::{entries, with_stream, StreamId};
use persimmon_types::Error;

use super::streams::{count_arg, entry_reply, now_ms};
use crate::blocking::{Attempt, GroupRead, Op, Outcome, Served, StreamHits, StreamWait};
use crate::repl::client::ClientRepl;
use crate::session::{is, syntax, Flow, Session};

/// Where a read starts on one stream.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Start {
    /// Entries after this id (XREAD's ids and `$`, XREADGROUP's history).
    After(StreamId),
    /// `>`: the group's undelivered entries.
    New,
}

/// XREAD's and XREADGROUP's arguments.
struct ReadArgs {
    count: usize,
    /// BLOCK: `Some(None)` waits forever.
    block: Option<Option<Instant>>,
    group: Option<GroupRead>,
    keys: Vec<Vec<u8>>,
    ids: Vec<Vec<u8>>,
}

/// BLOCK's milliseconds: 0 forever (`None`).
fn block_arg(arg: &[u8]) -> Result<Option<Instant>, Error> {
    let ms = persimmon_resp::parse_i64(arg)
        .ok_or_else(|| Error::new("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(Error::new("ERR timeout is negative"));
    }
    Ok(match ms {
        0 => None,
        ms => Some(Instant::now() + Duration::from_millis(ms as u64)),
    })
}

fn parse(a: &Args<'_>, grouped: bool) -> Result<ReadArgs, Error> {
    let name = if grouped { "XREADGROUP" } else { "XREAD" };
    let mut r = ReadArgs {
        count: 0,
        block: None,
        group: None,
        keys: Vec::new(),
        ids: Vec::new(),
    };
    let mut noack = false;
    let mut streams = None;
    let mut i = 1;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = a.get(i);
        if is(opt, "BLOCK") && more > 0 {
            r.block = Some(block_arg(a.get(i + 1))?);
            i += 1;
        } else if is(opt, "COUNT") && more > 0 {
            r.count = count_arg(a.get(i + 1))?;
            i += 1;
        } else if is(opt, "STREAMS") && more > 0 {
            let n = a.len() - i - 1;
            if !n.is_multiple_of(2) {
                return Err(Error::new(format!(
                    "ERR Unbalanced {name} list of streams: for each stream key an ID or '$' must be specified."
                )));
            }
            streams = Some((i + 1, n / 2));
            break;
        } else if is(opt, "GROUP") && more >= 2 {
            if !grouped {
                return Err(Error::new(
                    "ERR The GROUP option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            r.group = Some(GroupRead {
                group: a.get(i + 1).to_vec(),
                consumer: a.get(i + 2).to_vec(),
                noack: false,
            });
            i += 2;
        } else if is(opt, "NOACK") {
            if !grouped {
                return Err(Error::new(
                    "ERR The NOACK option is only supported by XREADGROUP. You called XREAD instead.",
                ));
            }
            noack = true;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    let Some((from, n)) = streams else {
        return Err(syntax());
    };
    if grouped && r.group.is_none() {
        return Err(Error::new("ERR Missing GROUP option for XREADGROUP"));
    }
    if let Some(g) = r.group.as_mut() {
        g.noack = noack;
    }
    r.keys = (from..from + n).map(|j| a.get(j).to_vec()).collect();
    r.ids = (from + n..from + 2 * n)
        .map(|j| a.get(j).to_vec())
        .collect();
    Ok(r)
}

fn nogroup(key: &[u8], g: &[u8]) -> Error {
    Error::new(format!(
        "NOGROUP No such key '{}' or consumer group '{}' in XREADGROUP with GROUP option",
        String::from_utf8_lossy(key),
        String::from_utf8_lossy(g)
    ))
}

/// Checks one stream's type, group and id; returns where its read starts.
fn resolve(
    st: &mut Store,
    key: &[u8],
    raw: &[u8],
    group: Option<&GroupRead>,
) -> Result<Start, Error> {
    let last = with_stream(st, key, |st, c| {
        if let Some(g) = group {
            if groups::group(st, c, &g.group)?.is_none() {
                return Err(nogroup(key, &g.group));
            }
        }
        Ok(entries::meta(st, c)?.last_id)
    })?;
    if let (Some(g), None) = (group, last) {
        return Err(nogroup(key, &g.group));
    }
    match raw {
        b"$" if group.is_some() => Err(Error::new(
            "ERR The $ ID is meaningless in the context of XREADGROUP: you want to read the history of this consumer by specifying a proper ID, or use the > ID to get new messages. The $ ID would just return an empty result set.",
        )),
        b"$" => Ok(Start::After(last.unwrap_or(StreamId::ZERO))),
        b">" if group.is_none() => Err(Error::new(
            "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option.",
        )),
        b">" => Ok(Start::New),
        _ => parse_strict(raw).map(Start::After),
    }
}

/// One stream's read now: `None` when it has nothing to serve (XREAD past
/// its last entry, `>` with nothing new); history reads always serve.
fn read_one(
    st: &mut Store,
    key: &[u8],
    start: Start,
    count: usize,
    group: Option<&GroupRead>,
) -> Result<Option<StreamHits>, Error> {
    let now = now_ms();
    let found = with_stream(st, key, |st, c| {
        let Some(g) = group else {
            let Start::After(after) = start else {
                return Ok(None);
            };
            let Some(from) = after.incr() else {
                return Ok(None);
            };
            let found = entries::range(st, c, from, StreamId::MAX, count, false)?;
            return Ok((!found.is_empty())
                .then(|| found.into_iter().map(|e| (e.id, Some(e.fields))).collect()));
        };
        let Some(group) = groups::group(st, c, &g.group)? else {
            return Err(nogroup(key, &g.group));
        };
        let who = Who {
            group: &g.group,
            consumer: &g.consumer,
            now,
        };
        match start {
            Start::After(after) => {
                touch_consumer(st, c, &g.group, &g.consumer, now)?;
                read_history(st, c, who, after, count).map(Some)
            }
            Start::New => {
                let found = read_new(st, c, who, group, count, g.noack)?;
                if found.is_empty() {
                    return Ok(None);
                }
                touch_consumer(st, c, &g.group, &g.consumer, now)?;
                Ok(Some(
                    found.into_iter().map(|e| (e.id, Some(e.fields))).collect(),
                ))
            }
        }
    })?;
    Ok(found.flatten())
}

/// `[key, entries]` for each stream served (a map in RESP3).
fn reply_hits(out: &mut Reply, hits: &[(Vec<u8>, StreamHits)]) {
    match out.resp3 {
        true => out.map(hits.len()),
        false => out.array(hits.len()),
    }
    for (key, found) in hits {
        if !out.resp3 {
            out.array(2);
        }
        out.bulk(key);
        out.array(found.len());
        for (id, fields) in found {
            entry_reply(out, *id, fields.as_ref());
        }
    }
}

fn read(s: &mut Session, a: &Args<'_>, grouped: bool) -> Result<(), Error> {
    let r = parse(a, grouped)?;
    if r.block.is_some() && s.in_script {
        // As Redis: a script may not block, whatever the data.
        let name = if grouped { "xreadgroup" } else { "xread" };
        return Err(Error::new(format!(
            "ERR {name} command is not allowed with BLOCK option from scripts"
        )));
    }
    let mut starts = Vec::with_capacity(r.keys.len());
    for (key, raw) in r.keys.iter().zip(&r.ids) {
        starts.push(resolve(&mut s.store, key, raw, r.group.as_ref())?);
    }
    let mut hits = Vec::new();
    for (key, &start) in r.keys.iter().zip(&starts) {
        if let Some(found) = read_one(&mut s.store, key, start, r.count, r.group.as_ref())? {
            hits.push((key.clone(), found));
        }
    }
    if !hits.is_empty() {
        if let Some(g) = r
            .group
            .as_ref()
            .filter(|_| starts.iter().all(|s| *s == Start::New))
        {
            propagate_deliveries(s, g, &hits)?;
        }
        reply_hits(&mut s.out, &hits);
        s.output_over_limit();
        return Ok(());
    }
    let Some(deadline) = r.block else {
        s.out.null_array();
        return Ok(());
    };
    if s.store.in_unit() {
        s.repl.nothing();
        s.out.null_array();
        return Ok(());
    }
    let after = r
        .keys
        .iter()
        .zip(&starts)
        .map(|(k, st)| (k.clone(), after_id(*st)))
        .collect();
    let op = Op::StreamRead(StreamWait {
        after,
        count: r.count,
        group: r.group,
    });
    s.repl.nothing();
    let reg = s
        .shared
        .blocked
        .register(s.info.id, s.store.db, r.keys, op, deadline);
    s.blocked = Some(reg);
    s.flow = Flow::Block;
    Ok(())
}

/// What an XREADGROUP `>` that delivered `hits` propagates, as Redis 7.0
/// writes it: per entry delivered `XCLAIM key group consumer 0 id TIME now
/// RETRYCOUNT 1 FORCE JUSTID LASTID last`; with NOACK (no pending entry to
/// claim) per stream `XGROUP SETID key group last ENTRIESREAD n` — so a
/// replica's pending entries and group are the master's, not a read of
/// its own.
fn propagate_deliveries(
    s: &mut Session,
    g: &GroupRead,
    hits: &[(Vec<u8>, StreamHits)],
) -> Result<(), Error> {
    let now = now_ms().to_string();
    for (key, found) in hits {
        let state = with_stream(&mut s.store, key, |st, c| groups::group(st, c, &g.group))?;
        let Some(Some(group)) = state else {
            continue;
        };
        let last = group.last_id.to_string();
        let word = |w: &str| w.as_bytes().to_vec();
        if !g.noack {
            for (id, _) in found {
                let claim = vec![
                    word("XCLAIM"),
                    key.clone(),
                    g.group.clone(),
                    g.consumer.clone(),
                    word("0"),
                    word(&id.to_string()),
                    word("TIME"),
                    word(&now),
                    word("RETRYCOUNT"),
                    word("1"),
                    word("FORCE"),
                    word("JUSTID"),
                    word("LASTID"),
                    word(&last),
                ];
                s.repl.rewrite(s.store.db, claim);
            }
        }
        if !g.noack {
            continue;
        }
        let setid = vec![
            word("XGROUP"),
            word("SETID"),
            key.clone(),
            g.group.clone(),
            word(&last),
            word("ENTRIESREAD"),
            word(&group.entries_read.to_string()),
        ];
        s.repl.rewrite(s.store.db, setid);
    }
    Ok(())
}

fn after_id(start: Start) -> StreamId {
    match start {
        Start::After(id) => id,
        Start::New => StreamId::MAX,
    }
}

/// XREAD [COUNT count] [BLOCK milliseconds] STREAMS key [key ...] id [id ...]
pub fn xread(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    read(s, &a, false)
}

/// XREADGROUP GROUP group consumer [COUNT count] [BLOCK milliseconds] [NOACK] STREAMS key [key ...] id [id ...]
pub fn xreadgroup(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    read(s, &a, true)
}

/// Where the keys of XREAD and XREADGROUP are (their rows' key finder):
/// the first half of the arguments after STREAMS.
pub fn read_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    let at = words.iter().position(|w| is(w, "STREAMS"))?;
    let n = words.len() - at - 1;
    if n == 0 || !n.is_multiple_of(2) {
        return None;
    }
    Some((at + 1..at + 1 + n / 2).collect())
}

// --- Serving blocked readers -------------------------------------------------------

fn unblocked_gone() -> Error {
    Error::new("UNBLOCKED the stream key no longer exists")
}

/// What serving the blocked read `w` from `key` finds.
pub fn attempt(st: &mut Store, repl: &mut ClientRepl, key: &[u8], w: &StreamWait) -> Attempt {
    let served = match &w.group {
        None => {
            let after = w
                .after
                .iter()
                .find(|(k, _)| k == key)
                .map_or(StreamId::MAX, |(_, id)| *id);
            match read_one(st, key, Start::After(after), w.count, None) {
                Ok(found) => found,
                Err(e) if e == wrongtype() => None,
                Err(e) => return Attempt::Done(Outcome::Failed(e)),
            }
        }
        Some(g) => match group_attempt(st, key, w.count, g) {
            Ok(found) => {
                if let Some(found) = &found {
                    propagate_delivery(st, repl, key, g, found.len());
                }
                found
            }
            Err(e) => return Attempt::Done(Outcome::Failed(e)),
        },
    };
    match served {
        Some(found) => Attempt::Done(Outcome::Served(Served::Stream {
            key: key.to_vec(),
            found,
        })),
        None => Attempt::Skip,
    }
}

/// What a delivery to a blocked group reader propagates: the
/// non-blocking read that delivers the same `n` entries on a replica.
fn propagate_delivery(st: &Store, repl: &mut ClientRepl, key: &[u8], g: &GroupRead, n: usize) {
    let mut words: Vec<Vec<u8>> = vec![
        b"XREADGROUP".to_vec(),
        b"GROUP".to_vec(),
        g.group.clone(),
        g.consumer.clone(),
        b"COUNT".to_vec(),
        n.to_string().into_bytes(),
    ];
    if g.noack {
        words.push(b"NOACK".to_vec());
    }
    words.extend([b"STREAMS".to_vec(), key.to_vec(), b">".to_vec()]);
    repl.rewrite(st.db, words);
}

fn group_attempt(
    st: &mut Store,
    key: &[u8],
    count: usize,
    g: &GroupRead,
) -> Result<Option<StreamHits>, Error> {
    let exists = with_stream(st, key, |st, c| {
        Ok(groups::group(st, c, &g.group)?.is_some())
    });
    match exists {
        Err(e) if e == wrongtype() => Err(unblocked_gone()),
        Err(e) => Err(e),
        Ok(None) => Err(unblocked_gone()),
        Ok(Some(false)) => Err(Error::new(
            "NOGROUP the consumer group this client was blocked on no longer exists",
        )),
        Ok(Some(true)) => read_one(st, key, Start::New, count, Some(g)),
    }
}

/// The reply of a blocked read served from one stream.
pub fn reply_served(out: &mut Reply, key: &[u8], found: &StreamHits) {
    reply_hits(out, &[(key.to_vec(), found.clone())]);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_the_first_half_after_streams() {
        let w: Vec<&[u8]> = vec![b"xread", b"COUNT", b"2", b"STREAMS", b"a", b"b", b"0", b"0"];
        assert_eq!(read_keys(&w), Some(vec![4, 5]));
        let w: Vec<&[u8]> = vec![b"xread", b"STREAMS", b"a", b"b", b"0"];
        assert_eq!(read_keys(&w), None);
        let w: Vec<&[u8]> = vec![b"xread", b"STREAMS"];
        assert_eq!(read_keys(&w), None);
    }
}
