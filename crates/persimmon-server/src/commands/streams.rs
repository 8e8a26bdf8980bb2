//! The stream commands on entries: XADD (NOMKSTREAM, MAXLEN/MINID with
//! `=`/`~`, LIMIT, `*`, `ms-*`, explicit ids), XRANGE, XREVRANGE, XLEN,
//! XDEL, XTRIM, XSETID, XINFO STREAM [FULL]; and the replies every stream
//! family shares (an entry, a list of entries). Reading as a consumer and
//! XREAD: `stream_read`; groups: `stream_groups`.
//!
//! A stream is a collection of four trees (`persimmon_types::stream`);
//! every command here is one atomic unit of the client's store
//! (`with_stream` / `with_new_stream`): atomic, crash-atomic, durable on
//! return. A range costs O(log n + k).
//!
//! Invariants: XADD propagates the id it chose (`*`, `ms-*` replaced),
//! so a replica holds the same entries. Errors are Redis 7.0's words,
//! checked in its order (the
//! arguments left to right, then the key's type, then the stream's
//! state); an error leaves nothing written (XADD on a missing key with a
//! refused id creates no key). Replies are built inside the unit into a
//! scratch buffer and copied out once it committed.

use persimmon_resp::{parse_i64, Args, Reply};
use persimmon_types::coll::Coll;
use persimmon_types::store::Store;
use persimmon_types::stream::entries::{self, Meta};
use persimmon_types::stream::groups::{self, counters, UNKNOWN};
use persimmon_types::stream::id::{self, parse_interval, parse_parts, parse_strict, Seq};
use persimmon_types::stream::{
    with_new_stream, with_stream, Entry, Fields, NewId, NodeLimits, StreamId, Trim, TrimSpec,
};
use persimmon_types::Error;

use crate::clock::unix_time;
use crate::notify;
use crate::session::{arity, int_arg, is, syntax, Session};

// --- Shared pieces ------------------------------------------------------------

/// The time now in Unix ms (delivery and seen times, `*` ids).
pub(super) fn now_ms() -> u64 {
    unix_time().as_millis() as u64
}

/// An id as a bulk string.
pub(super) fn id_reply(out: &mut Reply, id: StreamId) {
    out.bulk(id.to_string().as_bytes());
}

/// One entry: `[id, [field, value, ...]]`, or `[id, nil]` for an entry
/// gone from the stream (a pending id read back).
pub(super) fn entry_reply(out: &mut Reply, id: StreamId, fields: Option<&Fields>) {
    out.array(2);
    id_reply(out, id);
    match fields {
        Some(fields) => {
            out.array(fields.len() * 2);
            for (f, v) in fields {
                out.bulk(f);
                out.bulk(v);
            }
        }
        None => out.null_array(),
    }
}

pub(super) fn entries_reply(out: &mut Reply, found: &[Entry]) {
    out.array(found.len());
    for e in found {
        entry_reply(out, e.id, Some(&e.fields));
    }
}

/// Runs `build` on the stream at `key` in one unit, its reply built in a
/// scratch buffer and queued once the unit committed; `missing` replies
/// for a missing key (or fails).
pub(super) fn reply_from_stream(
    s: &mut Session,
    key: &[u8],
    missing: impl FnOnce(&mut Reply) -> Result<(), Error>,
    mut build: impl FnMut(&mut Store, &mut Coll, &mut Reply) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut r = Reply {
        buf: Vec::new(),
        resp3: s.out.resp3,
        errors: Default::default(),
    };
    let found = with_stream(&mut s.store, key, |st, c| {
        r.buf.clear();
        build(st, c, &mut r)
    })?;
    match found {
        Some(()) => s.out.buf.extend_from_slice(&r.buf),
        None => missing(&mut s.out)?,
    }
    s.output_over_limit();
    Ok(())
}

/// `ERR no such key` (XSETID, XINFO on a missing key).
pub(super) fn no_such_key() -> Error {
    Error::new("ERR no such key")
}

/// A count option: an integer, negative read as 0.
pub(super) fn count_arg(arg: &[u8]) -> Result<usize, Error> {
    Ok(int_arg(arg)?.max(0) as usize)
}

/// The node limits the settings hold now.
fn node_limits(s: &Session) -> NodeLimits {
    let read = |name: &str, default: u64| {
        s.shared
            .settings
            .value(name)
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse().ok())
            .unwrap_or(default)
    };
    NodeLimits {
        max_entries: read("stream-node-max-entries", 100),
        max_bytes: read("stream-node-max-bytes", 4096),
    }
}

// --- XADD and XTRIM arguments -----------------------------------------------------

/// What XADD's and XTRIM's options say.
struct AddArgs {
    trim: Option<TrimSpec>,
    nomkstream: bool,
    /// XADD's id and the index of the argument after it.
    id: Option<(NewId, usize)>,
}

fn both_strategies() -> Error {
    Error::new("ERR syntax error, MAXLEN and MINID options at the same time are not compatible")
}

/// MAXLEN/MINID `[=|~] threshold` at `i` (the option's name): the trim
/// and the index of its last argument.
fn strategy(a: &Args<'_>, i: usize, minid: bool) -> Result<(Trim, bool, usize), Error> {
    let more = a.len() - 1 - i;
    let mut j = i + 1;
    let mut approx = false;
    if more >= 2 && (a.get(j) == b"~" || a.get(j) == b"=") {
        approx = a.get(j) == b"~";
        j += 1;
    }
    let trim = if minid {
        Trim::MinId(parse_strict(a.get(j))?)
    } else {
        let n = int_arg(a.get(j))?;
        if n < 0 {
            return Err(Error::new("ERR The MAXLEN argument must be >= 0."));
        }
        Trim::MaxLen(n as u64)
    };
    Ok((trim, approx, j))
}

/// XADD's id argument: `*`, `ms-*` or an id.
fn new_id(arg: &[u8]) -> Result<NewId, Error> {
    if arg == b"*" {
        return Ok(NewId::Auto);
    }
    match parse_parts(arg, 0, true)? {
        (ms, Seq::Auto) => Ok(NewId::AutoSeq(ms)),
        (ms, Seq::Given(seq)) => Ok(NewId::Given(StreamId::new(ms, seq))),
    }
}

/// Parses XADD's (`xadd`) or XTRIM's options from argument 2 on.
fn add_or_trim_args(a: &Args<'_>, xadd: bool, limits: NodeLimits) -> Result<AddArgs, Error> {
    let mut trim: Option<(Trim, bool)> = None;
    let mut limit = None;
    let mut out = AddArgs {
        trim: None,
        nomkstream: false,
        id: None,
    };
    let mut i = 2;
    while i < a.len() {
        let more = a.len() - 1 - i;
        let opt = a.get(i);
        if (is(opt, "MAXLEN") || is(opt, "MINID")) && more > 0 {
            if trim.is_some() {
                return Err(both_strategies());
            }
            let (t, approx, last) = strategy(a, i, is(opt, "MINID"))?;
            trim = Some((t, approx));
            i = last;
        } else if is(opt, "LIMIT") && more > 0 {
            let n = int_arg(a.get(i + 1))?;
            if n < 0 {
                return Err(Error::new("ERR The LIMIT argument must be >= 0."));
            }
            limit = Some(n as u64);
            i += 1;
        } else if xadd && is(opt, "NOMKSTREAM") {
            out.nomkstream = true;
        } else if xadd {
            out.id = Some((new_id(opt)?, i + 1));
            break;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    if limit.is_some_and(|n| n > 0) && trim.is_none() {
        return Err(Error::new(
            "ERR syntax error, LIMIT cannot be used without specifying a trimming strategy",
        ));
    }
    if !xadd && trim.is_none() {
        return Err(Error::new(
            "ERR syntax error, XTRIM must be called with a trimming strategy",
        ));
    }
    if let Some((t, approx)) = trim {
        if limit.is_some() && !approx {
            return Err(Error::new(
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ));
        }
        // Without LIMIT, `~` does at most 100 nodes' worth of work.
        let limit = match (limit, approx) {
            (Some(n), _) => n,
            (None, true) if limits.max_entries == 0 => 10_000,
            (None, true) => limits.max_entries.saturating_mul(100).min(1_000_000),
            (None, false) => 0,
        };
        out.trim = Some(TrimSpec {
            trim: t,
            approx,
            limit,
        });
    }
    Ok(out)
}

// --- XADD XTRIM XDEL XLEN ----------------------------------------------------------

/// XADD key [NOMKSTREAM] [MAXLEN|MINID [=|~] threshold [LIMIT count]] *|id field value [field value ...]
pub fn xadd(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let limits = node_limits(s);
    let args = add_or_trim_args(&a, true, limits)?;
    let Some((how, first_field)) = args.id else {
        return Err(arity("xadd"));
    };
    let n = a.len() - first_field;
    if n < 2 || n % 2 == 1 {
        return Err(arity("xadd"));
    }
    if how == NewId::Given(StreamId::ZERO) {
        return Err(Error::new(
            "ERR The ID specified in XADD must be greater than 0-0",
        ));
    }
    let fields: Vec<(&[u8], &[u8])> = (first_field..a.len())
        .step_by(2)
        .map(|i| (a.get(i), a.get(i + 1)))
        .collect();
    let now = now_ms();
    let mut add = |st: &mut Store, c: &mut Coll| {
        let id = entries::add(st, c, how, &fields, now, limits)?;
        if let Some(spec) = args.trim {
            entries::trim(st, c, spec)?;
        }
        Ok(id)
    };
    let key = a.get(1);
    let id = match args.nomkstream {
        true => with_stream(&mut s.store, key, add)?,
        false => Some(with_new_stream(&mut s.store, key, &mut add)?),
    };
    match id {
        Some(id) => {
            if how != NewId::Given(id) {
                propagate_id(s, &a, first_field - 1, id);
            }
            notify::event(s, notify::STREAM, "xadd", key);
            id_reply(&mut s.out, id);
        }
        None => {
            s.repl.nothing();
            s.out.null();
        }
    }
    Ok(())
}

/// Propagates XADD with the id it chose in place of `*` or `ms-*`, so a
/// replica adds the same entry.
fn propagate_id(s: &mut Session, a: &Args<'_>, at: usize, id: StreamId) {
    let mut words: Vec<Vec<u8>> = (0..a.len()).map(|i| a.get(i).to_vec()).collect();
    words[at] = id.to_string().into_bytes();
    s.repl.rewrite(s.store.db, words);
}

/// XTRIM key MAXLEN|MINID [=|~] threshold [LIMIT count]
pub fn xtrim(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let args = add_or_trim_args(&a, false, node_limits(s))?;
    let spec = args.trim.expect("XTRIM always has a strategy");
    let n = with_stream(&mut s.store, a.get(1), |st, c| entries::trim(st, c, spec))?;
    if n.unwrap_or(0) > 0 {
        notify::event(s, notify::STREAM, "xtrim", a.get(1));
    }
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

/// XDEL key id [id ...]
pub fn xdel(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let ids = strict_ids(&a, 2)?;
    let n = with_stream(&mut s.store, a.get(1), |st, c| entries::delete(st, c, &ids))?;
    if n.unwrap_or(0) > 0 {
        notify::event(s, notify::STREAM, "xdel", a.get(1));
    }
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

/// XLEN key
pub fn xlen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_stream(&mut s.store, a.get(1), |_, c| Ok(c.len()))?;
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

// --- XRANGE XREVRANGE ------------------------------------------------------------

/// An interval's ends, `(` excluding one.
fn interval(start: &[u8], end: &[u8]) -> Result<(StreamId, StreamId), Error> {
    let (mut lo, ex) = parse_interval(start, 0)?;
    if ex {
        lo = lo
            .incr()
            .ok_or_else(|| Error::new("ERR invalid start ID for the interval"))?;
    }
    let (mut hi, ex) = parse_interval(end, u64::MAX)?;
    if ex {
        hi = hi
            .decr()
            .ok_or_else(|| Error::new("ERR invalid end ID for the interval"))?;
    }
    Ok((lo, hi))
}

fn range_command(s: &mut Session, a: &Args<'_>, rev: bool) -> Result<(), Error> {
    let (start, end) = match rev {
        false => (a.get(2), a.get(3)),
        true => (a.get(3), a.get(2)),
    };
    let (lo, hi) = interval(start, end)?;
    let mut count = None;
    let mut j = 4;
    while j < a.len() {
        if is(a.get(j), "COUNT") && j + 1 < a.len() {
            count = Some(
                parse_i64(a.get(j + 1))
                    .ok_or_else(crate::session::not_integer)?
                    .max(0),
            );
            j += 2;
        } else {
            return Err(syntax());
        }
    }
    if count == Some(0) {
        s.out.null_array();
        return Ok(());
    }
    let count = count.unwrap_or(0) as usize;
    reply_from_stream(
        s,
        a.get(1),
        |out| {
            out.array(0);
            Ok(())
        },
        |st, c, out| {
            let found = entries::range(st, c, lo, hi, count, rev)?;
            entries_reply(out, &found);
            Ok(())
        },
    )
}

/// XRANGE key start end [COUNT count]
pub fn xrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, &a, false)
}

/// XREVRANGE key end start [COUNT count]
pub fn xrevrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, &a, true)
}

// --- XSETID ------------------------------------------------------------------------

/// XSETID key last-id [ENTRIESADDED entries-added] [MAXDELETEDID max-deleted-id]
pub fn xsetid(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let id = parse_strict(a.get(2))?;
    let mut added = None;
    let mut max_deleted = None;
    let mut i = 3;
    while i < a.len() {
        let more = a.len() - 1 - i;
        if is(a.get(i), "ENTRIESADDED") && more > 0 {
            let n = int_arg(a.get(i + 1))?;
            if n < 0 {
                return Err(Error::new("ERR entries_added must be positive"));
            }
            added = Some(n as u64);
        } else if is(a.get(i), "MAXDELETEDID") && more > 0 {
            let m = parse_strict(a.get(i + 1))?;
            if id < m {
                return Err(Error::new(
                    "ERR The ID specified in XSETID is smaller than the provided max_deleted_entry_id",
                ));
            }
            max_deleted = Some(m);
        } else {
            return Err(syntax());
        }
        i += 2;
    }
    let done = with_stream(&mut s.store, a.get(1), |st, c| {
        let mut m = entries::meta(st, c)?;
        set_id(st, c, &mut m, id, added, max_deleted)?;
        entries::put_meta(st, c, &m)
    })?;
    done.ok_or_else(no_such_key)?;
    notify::event(s, notify::STREAM, "xsetid", a.get(1));
    s.out.ok();
    Ok(())
}

fn set_id(
    st: &mut Store,
    c: &mut Coll,
    m: &mut Meta,
    id: StreamId,
    added: Option<u64>,
    max_deleted: Option<StreamId>,
) -> Result<(), Error> {
    let len = c.len();
    if len > 0 {
        let top = entries::at(st, c, len - 1)?.map_or(StreamId::ZERO, |e| e.id);
        if id < top {
            return Err(Error::new(
                "ERR The ID specified in XSETID is smaller than the target stream top item",
            ));
        }
        if added.is_some_and(|n| n < len) {
            return Err(Error::new(
                "ERR The entries_added specified in XSETID is smaller than the target stream length",
            ));
        }
    }
    m.last_id = id;
    if let Some(n) = added {
        m.entries_added = n;
    }
    if let Some(d) = max_deleted.filter(|d| !d.is_zero()) {
        m.max_deleted = d;
    }
    Ok(())
}

// --- XINFO STREAM ----------------------------------------------------------------

/// XINFO STREAM key [FULL [COUNT count]]
pub fn xinfo_stream(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut full = None;
    if a.len() > 3 {
        if !is(a.get(3), "FULL") {
            return Err(syntax());
        }
        let mut count = 10;
        if a.len() > 4 {
            if a.len() != 6 || !is(a.get(4), "COUNT") {
                return Err(syntax());
            }
            let n = int_arg(a.get(5))?;
            count = if n < 0 { 10 } else { n as usize };
        }
        full = Some(count);
    }
    reply_from_stream(
        s,
        a.get(2),
        |_| Err(no_such_key()),
        |st, c, out| match full {
            None => stream_summary(st, c, out),
            Some(count) => stream_full(st, c, out, count),
        },
    )
}

/// The fields both forms of XINFO STREAM begin with.
fn stream_head(st: &mut Store, c: &mut Coll, out: &mut Reply, pairs: usize) -> Result<(), Error> {
    let m = entries::meta(st, c)?;
    let nodes = entries::nodes(st, c)?;
    out.map(pairs);
    out.bulk(b"length");
    out.int(c.len() as i64);
    out.bulk(b"radix-tree-keys");
    out.int(nodes as i64);
    out.bulk(b"radix-tree-nodes");
    out.int(if nodes == 0 { 1 } else { nodes as i64 + 1 });
    out.bulk(b"last-generated-id");
    id_reply(out, m.last_id);
    out.bulk(b"max-deleted-entry-id");
    id_reply(out, m.max_deleted);
    out.bulk(b"entries-added");
    out.int(m.entries_added as i64);
    out.bulk(b"recorded-first-entry-id");
    id_reply(out, entries::first_id(st, c)?);
    Ok(())
}

fn edge_entry(
    st: &mut Store,
    c: &mut Coll,
    out: &mut Reply,
    rank: Option<u64>,
) -> Result<(), Error> {
    match rank.map(|r| entries::at(st, c, r)).transpose()?.flatten() {
        Some(e) => entry_reply(out, e.id, Some(&e.fields)),
        None => out.null(),
    }
    Ok(())
}

fn stream_summary(st: &mut Store, c: &mut Coll, out: &mut Reply) -> Result<(), Error> {
    stream_head(st, c, out, 10)?;
    out.bulk(b"groups");
    out.int(groups::groups(st, c)?.len() as i64);
    let len = c.len();
    out.bulk(b"first-entry");
    edge_entry(st, c, out, (len > 0).then_some(0))?;
    out.bulk(b"last-entry");
    edge_entry(st, c, out, len.checked_sub(1))
}

fn stream_full(st: &mut Store, c: &mut Coll, out: &mut Reply, count: usize) -> Result<(), Error> {
    stream_head(st, c, out, 9)?;
    out.bulk(b"entries");
    let found = entries::range(st, c, StreamId::ZERO, StreamId::MAX, count, false)?;
    entries_reply(out, &found);
    out.bulk(b"groups");
    let all = groups::groups(st, c)?;
    let ctr = counters(st, c)?;
    out.array(all.len());
    for (name, group) in all {
        out.map(7);
        out.bulk(b"name");
        out.bulk(&name);
        out.bulk(b"last-delivered-id");
        id_reply(out, group.last_id);
        out.bulk(b"entries-read");
        read_counter(out, group.entries_read);
        out.bulk(b"lag");
        lag_reply(out, ctr.lag(&group).0);
        out.bulk(b"pel-count");
        out.int(groups::pel_count(st, c, &name)? as i64);
        out.bulk(b"pending");
        let pel = groups::pel_range(st, c, &name, StreamId::ZERO, StreamId::MAX, count)?;
        out.array(pel.len());
        for (id, n) in &pel {
            out.array(4);
            id_reply(out, *id);
            out.bulk(&n.consumer);
            out.int(n.delivery_time as i64);
            out.int(n.delivery_count as i64);
        }
        full_consumers(st, c, out, &name, count)?;
    }
    Ok(())
}

fn full_consumers(
    st: &mut Store,
    c: &mut Coll,
    out: &mut Reply,
    g: &[u8],
    count: usize,
) -> Result<(), Error> {
    out.bulk(b"consumers");
    let all = groups::consumers(st, c, g)?;
    out.array(all.len());
    for k in all {
        out.map(4);
        out.bulk(b"name");
        out.bulk(&k.name);
        out.bulk(b"seen-time");
        out.int(k.seen_time as i64);
        out.bulk(b"pel-count");
        out.int(k.pending as i64);
        out.bulk(b"pending");
        let ids = groups::consumer_pel(st, c, g, &k.name, StreamId::ZERO, StreamId::MAX, count)?;
        out.array(ids.len());
        for id in ids {
            let n =
                groups::pel_get(st, c, g, id)?.ok_or_else(persimmon_types::coll::page::damaged)?;
            out.array(3);
            id_reply(out, id);
            out.int(n.delivery_time as i64);
            out.int(n.delivery_count as i64);
        }
    }
    Ok(())
}

/// An entries-read counter (nil when unknown).
pub(super) fn read_counter(out: &mut Reply, n: i64) {
    match n {
        UNKNOWN => out.null(),
        n => out.int(n),
    }
}

/// A lag (nil when unknown).
pub(super) fn lag_reply(out: &mut Reply, lag: Option<i64>) {
    match lag {
        Some(n) => out.int(n),
        None => out.null(),
    }
}

/// Parses every id of `a` from `from` on, strictly (XDEL, XACK).
pub(super) fn strict_ids(a: &Args<'_>, from: usize) -> Result<Vec<StreamId>, Error> {
    (from..a.len())
        .map(|i| id::parse_strict(a.get(i)))
        .collect()
}
