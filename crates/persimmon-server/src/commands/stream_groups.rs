//! The consumer-group commands: XGROUP CREATE|SETID|DESTROY|
//! CREATECONSUMER|DELCONSUMER|HELP, XACK, XPENDING (summary and extended,
//! IDLE, consumer), XCLAIM (IDLE TIME RETRYCOUNT FORCE JUSTID LASTID),
//! XAUTOCLAIM (COUNT JUSTID), XINFO GROUPS|CONSUMERS|HELP. Reading as a
//! consumer (XREADGROUP) is in `stream_read`.
//!
//! Groups, their pending entries and consumers are keys of the stream's
//! trees (`persimmon_types::stream::groups`): each command is one atomic
//! unit, O(log n) per id it names plus O(k) for what it lists.
//!
//! Invariants: errors are Redis 7.0's words in its order (arguments, then
//! the key's type, then a missing key or group); XCLAIM parses every id
//! and option before it claims anything, so it either fails whole or
//! replies what it claimed.

use persimmon_resp::{Args, Reply};
use persimmon_types::coll::Coll;
use persimmon_types::store::Store;
use persimmon_types::stream::consume::{autoclaim, claim, ClaimOptions, Who};
use persimmon_types::stream::groups::{self, counters, Group, UNKNOWN};
use persimmon_types::stream::id::{parse_bound, parse_interval, parse_strict};
use persimmon_types::stream::{entries, with_new_stream, with_stream, StreamId};
use persimmon_types::Error;

use super::streams::{
    entry_reply, id_reply, lag_reply, no_such_key, now_ms, read_counter, reply_from_stream,
    strict_ids,
};
use crate::notify;
use crate::session::{int_arg, is, syntax, Session};

fn lossy(b: &[u8]) -> std::borrow::Cow<'_, str> {
    String::from_utf8_lossy(b)
}

/// XGROUP's and XINFO CONSUMERS' error for a missing group.
fn no_group(key: &[u8], g: &[u8]) -> Error {
    Error::new(format!(
        "NOGROUP No such consumer group '{}' for key name '{}'",
        lossy(g),
        lossy(key)
    ))
}

/// XPENDING's, XCLAIM's and XAUTOCLAIM's error for a missing key or group.
fn no_key_or_group(key: &[u8], g: &[u8]) -> Error {
    Error::new(format!(
        "NOGROUP No such key '{}' or consumer group '{}'",
        lossy(key),
        lossy(g)
    ))
}

fn needs_key() -> Error {
    Error::new(
        "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically.",
    )
}

/// A long long argument with Redis's custom message.
fn long_arg(arg: &[u8], message: &'static str) -> Result<i64, Error> {
    persimmon_resp::parse_i64(arg).ok_or_else(|| Error::new(message))
}

/// The group at `g` of stream `c`, or XGROUP's NOGROUP.
fn need_group(st: &mut Store, c: &mut Coll, key: &[u8], g: &[u8]) -> Result<Group, Error> {
    groups::group(st, c, g)?.ok_or_else(|| no_group(key, g))
}

// --- XGROUP ----------------------------------------------------------------------

/// CREATE's and SETID's options from argument 5: MKSTREAM (CREATE only)
/// and ENTRIESREAD.
fn group_options(a: &Args<'_>, create: bool) -> Result<(bool, i64), Error> {
    let (mut mkstream, mut read) = (false, UNKNOWN);
    let mut i = 5;
    while i < a.len() {
        if create && is(a.get(i), "MKSTREAM") {
            mkstream = true;
            i += 1;
        } else if is(a.get(i), "ENTRIESREAD") && i + 1 < a.len() {
            read = int_arg(a.get(i + 1))?;
            if read < 0 && read != UNKNOWN {
                return Err(Error::new(
                    "ERR value for ENTRIESREAD must be positive or -1",
                ));
            }
            i += 2;
        } else {
            return Err(syntax());
        }
    }
    Ok((mkstream, read))
}

/// An XGROUP id: `$` (the stream's last id), `-`, `+` or an id.
fn group_id(st: &mut Store, c: &mut Coll, arg: &[u8]) -> Result<StreamId, Error> {
    match arg {
        b"$" => Ok(entries::meta(st, c)?.last_id),
        _ => parse_bound(arg, 0),
    }
}

/// XGROUP CREATE key group id|$ [MKSTREAM] [ENTRIESREAD entries-read]
pub fn xgroup_create(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (mkstream, read) = group_options(&a, true)?;
    if a.get(4) != b"$" {
        parse_bound(a.get(4), 0)?;
    }
    let (key, g) = (a.get(2), a.get(3));
    let mut create = |st: &mut Store, c: &mut Coll| {
        let id = group_id(st, c, a.get(4))?;
        if !groups::create_group(st, c, g, id, read)? {
            return Err(Error::new("BUSYGROUP Consumer Group name already exists"));
        }
        Ok(())
    };
    match mkstream {
        true => with_new_stream(&mut s.store, key, &mut create)?,
        false => with_stream(&mut s.store, key, create)?.ok_or_else(needs_key)?,
    }
    notify::event(s, notify::STREAM, "xgroup-create", key);
    s.out.ok();
    Ok(())
}

/// XGROUP SETID key group id|$ [ENTRIESREAD entries-read]
pub fn xgroup_setid(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (_, read) = group_options(&a, false)?;
    if a.get(4) != b"$" {
        parse_bound(a.get(4), 0)?;
    }
    let (key, g) = (a.get(2), a.get(3));
    with_stream(&mut s.store, key, |st, c| {
        need_group(st, c, key, g)?;
        let last_id = group_id(st, c, a.get(4))?;
        groups::put_group(
            st,
            c,
            g,
            &Group {
                last_id,
                entries_read: read,
            },
        )
    })?
    .ok_or_else(needs_key)?;
    notify::event(s, notify::STREAM, "xgroup-setid", a.get(2));
    s.out.ok();
    Ok(())
}

/// XGROUP DESTROY key group
pub fn xgroup_destroy(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let done = with_stream(&mut s.store, a.get(2), |st, c| {
        groups::destroy_group(st, c, a.get(3))
    })?
    .ok_or_else(needs_key)?;
    if done {
        notify::event(s, notify::STREAM, "xgroup-destroy", a.get(2));
    }
    s.out.int(done as i64);
    Ok(())
}

/// XGROUP CREATECONSUMER key group consumer
pub fn xgroup_createconsumer(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, g) = (a.get(2), a.get(3));
    let now = now_ms();
    let created = with_stream(&mut s.store, key, |st, c| {
        need_group(st, c, key, g)?;
        groups::create_consumer(st, c, g, a.get(4), now)
    })?
    .ok_or_else(needs_key)?;
    if created {
        notify::event(s, notify::STREAM, "xgroup-createconsumer", key);
    }
    s.out.int(created as i64);
    Ok(())
}

/// XGROUP DELCONSUMER key group consumer
pub fn xgroup_delconsumer(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, g) = (a.get(2), a.get(3));
    let pending = with_stream(&mut s.store, key, |st, c| {
        need_group(st, c, key, g)?;
        groups::delete_consumer(st, c, g, a.get(4))
    })?
    .ok_or_else(needs_key)?;
    if pending.is_some() {
        notify::event(s, notify::STREAM, "xgroup-delconsumer", key);
    }
    s.out.int(pending.unwrap_or(0) as i64);
    Ok(())
}

/// XGROUP HELP
pub fn xgroup_help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    help(
        &mut s.out,
        "XGROUP",
        &[
            "CREATE <key> <groupname> <id|$> [option]",
            "    Create a new consumer group. Options are:",
            "    * MKSTREAM",
            "      Create the empty stream if it does not exist.",
            "    * ENTRIESREAD entries_read",
            "      Set the group's entries_read counter (internal use).",
            "CREATECONSUMER <key> <groupname> <consumer>",
            "    Create a new consumer in the specified group.",
            "DELCONSUMER <key> <groupname> <consumer>",
            "    Remove the specified consumer.",
            "DESTROY <key> <groupname>",
            "    Remove the specified group.",
            "SETID <key> <groupname> <id|$> [ENTRIESREAD entries_read]",
            "    Set the current group ID and entries_read counter.",
        ],
    );
    Ok(())
}

fn help(out: &mut Reply, name: &str, lines: &[&str]) {
    let head = format!("{name} <subcommand> [<arg> [value] [opt] ...]. Subcommands are:");
    let mut all = vec![head.as_str()];
    all.extend_from_slice(lines);
    all.push("HELP");
    all.push("    Print this help.");
    out.simple_lines(&all);
}

// --- XACK ---------------------------------------------------------------------

/// XACK key group id [id ...]
pub fn xack(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let ids = strict_ids(&a, 3)?;
    let g = a.get(2);
    let n = with_stream(&mut s.store, a.get(1), |st, c| {
        if groups::group(st, c, g)?.is_none() {
            return Ok(0);
        }
        let mut n = 0;
        for &id in &ids {
            n += groups::pel_remove(st, c, g, id)? as i64;
        }
        Ok(n)
    })?;
    s.out.int(n.unwrap_or(0));
    Ok(())
}

// --- XPENDING ---------------------------------------------------------------------

/// XPENDING's extended form: IDLE, the range, COUNT, the consumer.
struct Extended {
    min_idle: u64,
    start: StreamId,
    end: StreamId,
    count: usize,
    consumer: Option<Vec<u8>>,
}

fn extended_args(a: &Args<'_>) -> Result<Option<Extended>, Error> {
    if a.len() != 3 && !(6..=9).contains(&a.len()) {
        return Err(syntax());
    }
    if a.len() < 6 {
        return Ok(None);
    }
    let mut at = 3;
    let mut min_idle = 0;
    if is(a.get(3), "IDLE") {
        min_idle = int_arg(a.get(4))?.max(0) as u64;
        if a.len() < 8 {
            return Err(syntax());
        }
        at += 2;
    }
    let count = int_arg(a.get(at + 2))?.max(0) as usize;
    let (mut start, ex) = parse_interval(a.get(at), 0)?;
    if ex {
        start = start
            .incr()
            .ok_or_else(|| Error::new("ERR invalid start ID for the interval"))?;
    }
    let (mut end, ex) = parse_interval(a.get(at + 1), u64::MAX)?;
    if ex {
        end = end
            .decr()
            .ok_or_else(|| Error::new("ERR invalid end ID for the interval"))?;
    }
    let consumer = (at + 3 < a.len()).then(|| a.get(at + 3).to_vec());
    Ok(Some(Extended {
        min_idle,
        start,
        end,
        count,
        consumer,
    }))
}

/// XPENDING key group [[IDLE min-idle-time] start end count [consumer]]
pub fn xpending(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let ext = extended_args(&a)?;
    let (key, g) = (a.get(1), a.get(2));
    let now = now_ms();
    let mut found_group = true;
    reply_from_stream(
        s,
        key,
        |_| Err(no_key_or_group(key, g)),
        |st, c, out| {
            if groups::group(st, c, g)?.is_none() {
                found_group = false;
                return Ok(());
            }
            match &ext {
                None => pending_summary(st, c, out, g),
                Some(x) => pending_extended(st, c, out, g, x, now),
            }
        },
    )?;
    if !found_group {
        return Err(no_key_or_group(key, g));
    }
    Ok(())
}

fn pending_summary(st: &mut Store, c: &mut Coll, out: &mut Reply, g: &[u8]) -> Result<(), Error> {
    let sum = groups::pel_summary(st, c, g)?;
    out.array(4);
    out.int(sum.count as i64);
    let Some((lo, hi)) = sum.bounds else {
        out.null();
        out.null();
        out.null_array();
        return Ok(());
    };
    id_reply(out, lo);
    id_reply(out, hi);
    out.array(sum.consumers.len());
    for (name, n) in &sum.consumers {
        out.array(2);
        out.bulk(name);
        out.bulk(n.to_string().as_bytes());
    }
    Ok(())
}

fn pending_extended(
    st: &mut Store,
    c: &mut Coll,
    out: &mut Reply,
    g: &[u8],
    x: &Extended,
    now: u64,
) -> Result<(), Error> {
    let mut rows = Vec::new();
    if x.count > 0 {
        let all = match &x.consumer {
            None => groups::pel_range(st, c, g, x.start, x.end, 0)?,
            Some(name) => {
                let ids = groups::consumer_pel(st, c, g, name, x.start, x.end, 0)?;
                let mut v = Vec::with_capacity(ids.len());
                for id in ids {
                    if let Some(n) = groups::pel_get(st, c, g, id)? {
                        v.push((id, n));
                    }
                }
                v
            }
        };
        for (id, n) in all {
            let idle = now.saturating_sub(n.delivery_time);
            if x.min_idle > 0 && idle < x.min_idle {
                continue;
            }
            rows.push((id, n, idle));
            if rows.len() >= x.count {
                break;
            }
        }
    }
    out.array(rows.len());
    for (id, n, idle) in rows {
        out.array(4);
        id_reply(out, id);
        out.bulk(&n.consumer);
        out.int(idle as i64);
        out.int(n.delivery_count as i64);
    }
    Ok(())
}

// --- XCLAIM XAUTOCLAIM ----------------------------------------------------------------

/// XCLAIM's ids (from argument 5 until one does not parse) and options.
fn claim_args(a: &Args<'_>, now: u64) -> Result<(Vec<StreamId>, ClaimOptions), Error> {
    let min_idle = long_arg(a.get(4), "ERR Invalid min-idle-time argument for XCLAIM")?.max(0);
    let mut ids = Vec::new();
    let mut j = 5;
    while j < a.len() {
        match parse_strict(a.get(j)) {
            Ok(id) => ids.push(id),
            Err(_) => break,
        }
        j += 1;
    }
    let mut o = ClaimOptions {
        min_idle: min_idle as u64,
        ..ClaimOptions::default()
    };
    let mut time: Option<i64> = None;
    while j < a.len() {
        let more = a.len() - 1 - j;
        let opt = a.get(j);
        if is(opt, "FORCE") {
            o.force = true;
        } else if is(opt, "JUSTID") {
            o.justid = true;
        } else if is(opt, "IDLE") && more > 0 {
            j += 1;
            let idle = long_arg(a.get(j), "ERR Invalid IDLE option argument for XCLAIM")?;
            time = Some((now as i64).saturating_sub(idle));
        } else if is(opt, "TIME") && more > 0 {
            j += 1;
            time = Some(long_arg(
                a.get(j),
                "ERR Invalid TIME option argument for XCLAIM",
            )?);
        } else if is(opt, "RETRYCOUNT") && more > 0 {
            j += 1;
            let n = long_arg(
                a.get(j),
                "ERR Invalid RETRYCOUNT option argument for XCLAIM",
            )?;
            o.retry_count = u64::try_from(n).ok();
        } else if is(opt, "LASTID") && more > 0 {
            j += 1;
            o.last_id = Some(parse_strict(a.get(j))?);
        } else {
            return Err(Error::new(format!(
                "ERR Unrecognized XCLAIM option '{}'",
                lossy(opt)
            )));
        }
        j += 1;
    }
    o.delivery_time = match time {
        Some(t) if t >= 0 && t as u64 <= now => t as u64,
        _ => now,
    };
    Ok((ids, o))
}

/// The claimed entries (ids only with JUSTID).
fn claimed_reply(out: &mut Reply, claimed: &[(StreamId, Option<entries::Fields>)], justid: bool) {
    out.array(claimed.len());
    for (id, fields) in claimed {
        match justid {
            true => id_reply(out, *id),
            false => entry_reply(out, *id, fields.as_ref()),
        }
    }
}

/// XCLAIM key group consumer min-idle-time id [id ...] [IDLE ms] [TIME unix-time-milliseconds] [RETRYCOUNT count] [FORCE] [JUSTID] [LASTID lastid]
pub fn xclaim(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, g, consumer) = (a.get(1), a.get(2), a.get(3));
    let group_there = with_stream(&mut s.store, key, |st, c| {
        Ok(groups::group(st, c, g)?.is_some())
    })?;
    if group_there != Some(true) {
        return Err(no_key_or_group(key, g));
    }
    let now = now_ms();
    let (ids, o) = claim_args(&a, now)?;
    reply_from_stream(
        s,
        key,
        |_| Err(no_key_or_group(key, g)),
        |st, c, out| {
            let who = Who {
                group: g,
                consumer,
                now,
            };
            let claimed = claim(st, c, who, &ids, o)?;
            claimed_reply(out, &claimed, o.justid);
            Ok(())
        },
    )
}

/// XAUTOCLAIM key group consumer min-idle-time start [COUNT count] [JUSTID]
pub fn xautoclaim(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, g, consumer) = (a.get(1), a.get(2), a.get(3));
    let group_there = with_stream(&mut s.store, key, |st, c| {
        Ok(groups::group(st, c, g)?.is_some())
    })?;
    let min_idle = long_arg(
        a.get(4),
        "ERR Invalid min-idle-time argument for XAUTOCLAIM",
    )?
    .max(0) as u64;
    let start = parse_bound(a.get(5), 0)?;
    let (mut count, mut justid) = (100usize, false);
    let mut j = 6;
    while j < a.len() {
        if is(a.get(j), "COUNT") && j + 1 < a.len() {
            let n = persimmon_resp::parse_i64(a.get(j + 1))
                .filter(|n| (1..=i64::MAX / 10).contains(n))
                .ok_or_else(|| Error::new("ERR COUNT must be > 0"))?;
            count = n as usize;
            j += 2;
        } else if is(a.get(j), "JUSTID") {
            justid = true;
            j += 1;
        } else {
            return Err(syntax());
        }
    }
    if group_there != Some(true) {
        return Err(no_key_or_group(key, g));
    }
    let now = now_ms();
    reply_from_stream(
        s,
        key,
        |_| Err(no_key_or_group(key, g)),
        |st, c, out| {
            let who = Who {
                group: g,
                consumer,
                now,
            };
            let r = autoclaim(st, c, who, min_idle, start, count, justid)?;
            out.array(3);
            id_reply(out, r.next);
            claimed_reply(out, &r.claimed, justid);
            out.array(r.deleted.len());
            for id in &r.deleted {
                id_reply(out, *id);
            }
            Ok(())
        },
    )
}

// --- XINFO GROUPS CONSUMERS HELP ------------------------------------------------------

/// XINFO GROUPS key
pub fn xinfo_groups(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    reply_from_stream(
        s,
        a.get(2),
        |_| Err(no_such_key()),
        |st, c, out| {
            let all = groups::groups(st, c)?;
            let ctr = counters(st, c)?;
            out.array(all.len());
            for (name, group) in all {
                out.map(6);
                out.bulk(b"name");
                out.bulk(&name);
                out.bulk(b"consumers");
                out.int(groups::consumers(st, c, &name)?.len() as i64);
                out.bulk(b"pending");
                out.int(groups::pel_count(st, c, &name)? as i64);
                out.bulk(b"last-delivered-id");
                id_reply(out, group.last_id);
                out.bulk(b"entries-read");
                read_counter(out, group.entries_read);
                out.bulk(b"lag");
                lag_reply(out, ctr.lag(&group).0);
            }
            Ok(())
        },
    )
}

/// XINFO CONSUMERS key group
pub fn xinfo_consumers(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, g) = (a.get(2), a.get(3));
    let now = now_ms();
    reply_from_stream(
        s,
        key,
        |_| Err(no_such_key()),
        |st, c, out| {
            need_group(st, c, key, g)?;
            let all = groups::consumers(st, c, g)?;
            out.array(all.len());
            for k in all {
                out.map(3);
                out.bulk(b"name");
                out.bulk(&k.name);
                out.bulk(b"pending");
                out.int(k.pending as i64);
                out.bulk(b"idle");
                out.int(now.saturating_sub(k.seen_time) as i64);
            }
            Ok(())
        },
    )
}

/// XINFO HELP
pub fn xinfo_help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    help(
        &mut s.out,
        "XINFO",
        &[
            "CONSUMERS <key> <groupname>",
            "    Show consumers of <groupname>.",
            "GROUPS <key>",
            "    Show the stream consumer groups.",
            "STREAM <key> [FULL [COUNT <count>]",
            "    Show information about the stream.",
        ],
    );
    Ok(())
}
