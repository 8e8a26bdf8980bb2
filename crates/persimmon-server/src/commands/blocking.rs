//! The blocking list and sorted-set commands and the pops they build on:
//! LMOVE RPOPLPUSH LMPOP ZPOPMIN ZPOPMAX ZMPOP, and BLPOP BRPOP BLMOVE
//! BRPOPLPUSH BLMPOP BZPOPMIN BZPOPMAX BZMPOP; and the serving of blocked
//! clients once a command has written keys they wait on (see `blocking.rs`
//! for the registry and its invariants, `conn.rs` for the wait).
//!
//! Invariants:
//! - Every pop goes through the data layer (`list::pop`,
//!   `list::move_one`, `zset::pop`): nothing here knows how lists
//!   or sorted sets are stored.
//! - A blocking command first does what its non-blocking form does; it
//!   blocks only when none of its keys exists, and never inside a
//!   transaction (EXEC), where it replies nil at once, as Redis does.
//! - The reply of a blocking command has one writer (`reply_served`),
//!   whether the command was served at once or, later, by another client's
//!   write; the waiter writes it in its own protocol (RESP2/RESP3).
//! - Serving runs after the writing command, with the database map held
//!   (namespaces cannot change under it) and outside any atomic unit:
//!   each pop for a waiter is its own atomic, durable engine write.
//! - Arguments are checked in Redis's order: BLPOP's timeout before the
//!   keys' types; BLMPOP's numkeys, direction and COUNT before its timeout.

use std::time::{Duration, Instant};

use persimmon_resp::{parse_i64, Args, Reply};
use persimmon_types::dbs;
use persimmon_types::error::wrongtype;
use persimmon_types::list::{self, End};
use persimmon_types::store::Store;
use persimmon_types::{zset, Error};

use super::stream_read;
use super::zsets::score_reply_text;
use crate::blocking::{Attempt, Op, Outcome, Registration, Served};
use crate::clock::unix_time;
use crate::longdouble::LongDouble;
use crate::repl::client::ClientRepl;
use crate::session::{is, keys_after_count, syntax, Flow, Session};

// --- Arguments -----------------------------------------------------------

/// LEFT or RIGHT (any case): whether it names the head.
fn end_arg(arg: &[u8]) -> Result<bool, Error> {
    if is(arg, "LEFT") {
        Ok(true)
    } else if is(arg, "RIGHT") {
        Ok(false)
    } else {
        Err(syntax())
    }
}

/// MIN or MAX (any case): whether it names the highest scores.
fn min_max_arg(arg: &[u8]) -> Result<bool, Error> {
    if is(arg, "MIN") {
        Ok(false)
    } else if is(arg, "MAX") {
        Ok(true)
    } else {
        Err(syntax())
    }
}

/// A count that must not be negative (ZPOPMIN's; Redis gives one text for
/// a negative count and for one that is not an integer).
fn positive_count(arg: &[u8]) -> Result<usize, Error> {
    parse_i64(arg)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| Error::new("ERR value is out of range, must be positive"))
}

/// `numkeys key ...` of the MPOP commands, numkeys at `at`: the keys and
/// the index of the argument after them (the direction), which must exist.
fn numkeys_and_keys(a: &Args<'_>, at: usize) -> Result<(Vec<Vec<u8>>, usize), Error> {
    let n = parse_i64(a.get(at))
        .filter(|&n| n >= 1)
        .ok_or_else(|| Error::new("ERR numkeys should be greater than 0"))?;
    let after = (at as u64).saturating_add(n as u64).saturating_add(1);
    if after >= a.len() as u64 {
        return Err(syntax());
    }
    let after = after as usize;
    Ok(((at + 1..after).map(|i| a.get(i).to_vec()).collect(), after))
}

/// The `[COUNT n]` that may follow the direction (from `from`); 1 without.
fn count_option(a: &Args<'_>, from: usize) -> Result<usize, Error> {
    let mut count = None;
    let mut j = from;
    while j < a.len() {
        if count.is_none() && is(a.get(j), "COUNT") && j + 1 < a.len() {
            let n = parse_i64(a.get(j + 1))
                .filter(|&n| n >= 1)
                .ok_or_else(|| Error::new("ERR count should be greater than 0"))?;
            count = Some(n as usize);
            j += 2;
        } else {
            return Err(syntax());
        }
    }
    Ok(count.unwrap_or(1))
}

/// Milliseconds C's `(long long)` gives for `x` (a whole number): itself
/// when it fits, else `i64::MIN` (x86-64's "integer indefinite").
fn c_long_long(x: f64) -> i64 {
    if (-9.223_372_036_854_776e18..9.223_372_036_854_776e18).contains(&x) {
        x as i64
    } else {
        i64::MIN
    }
}

/// A blocking command's timeout, in seconds (a float, Redis's
/// `getTimeoutFromObjectOrReply`): `ceil(seconds × 1000)` ms, 0 waiting
/// forever (`None`). The deadline, measured on the monotonic clock.
fn timeout_arg(arg: &[u8]) -> Result<Option<Instant>, Error> {
    let seconds = LongDouble::parse(arg)
        .ok_or_else(|| Error::new("ERR timeout is not a float or out of range"))?;
    let ms = match seconds {
        LongDouble::Infinite { neg } => c_long_long(if neg { -1.0 } else { 1.0 } * f64::INFINITY),
        LongDouble::Finite { neg, mant, exp } => {
            // Below 2^-16 s the product is under 1 ms: ceil makes it 1 (0
            // for a negative one, as -0).
            let seconds = match (mant, exp) {
                (0, _) => 0.0,
                (_, e) if e < -80 => f64::MIN_POSITIVE,
                (m, e) => m as f64 * 2f64.powi(e.min(4096) as i32),
            };
            let signed = if neg { -seconds } else { seconds };
            c_long_long((signed * 1000.0).ceil())
        }
    };
    if ms < 0 {
        return Err(Error::new("ERR timeout is negative"));
    }
    if ms == 0 {
        return Ok(None);
    }
    let now = Instant::now();
    // Redis adds the Unix time in ms: past i64 that wraps to a deadline
    // already gone (the client times out at once).
    let unix_ms = unix_time().as_millis() as i64;
    if ms > i64::MAX - unix_ms {
        return Ok(Some(now));
    }
    // A deadline too far for the clock is none.
    Ok(now.checked_add(Duration::from_millis(ms as u64)))
}

// --- Pops and replies ----------------------------------------------------

/// Pops for `op` at `key`; `None` when the key is missing. What it took
/// is propagated through `repl` as a plain pop.
fn pop_at(
    store: &mut Store,
    repl: &mut ClientRepl,
    key: &[u8],
    op: &Op,
) -> Result<Option<Served>, Error> {
    let served = pop_at_unpropagated(store, key, op)?;
    if let Some(words) = served.as_ref().and_then(|sv| plain_pop(key, op, sv)) {
        repl.rewrite(store.db, words);
    }
    Ok(served)
}

/// What a pop for `op` at `key` that took `served` propagates: the plain
/// pop that has the same effect (Redis's rewrite of blocking and multi-key
/// pops), so a replica never blocks and pops the same key.
fn plain_pop(key: &[u8], op: &Op, served: &Served) -> Option<Vec<Vec<u8>>> {
    let side = |head: bool| {
        if head {
            b"LEFT".to_vec()
        } else {
            b"RIGHT".to_vec()
        }
    };
    Some(match (op, served) {
        (
            Op::ListMove {
                dst,
                from_head,
                to_head,
            },
            _,
        ) => vec![
            b"LMOVE".to_vec(),
            key.to_vec(),
            dst.clone(),
            side(*from_head),
            side(*to_head),
        ],
        (Op::ListPop { head, .. }, Served::List { elements, .. }) => vec![
            if *head {
                b"LPOP".to_vec()
            } else {
                b"RPOP".to_vec()
            },
            key.to_vec(),
            elements.len().to_string().into_bytes(),
        ],
        (Op::ZSetPop { max, .. }, Served::ZSet { entries, .. }) => vec![
            if *max {
                b"ZPOPMAX".to_vec()
            } else {
                b"ZPOPMIN".to_vec()
            },
            key.to_vec(),
            entries.len().to_string().into_bytes(),
        ],
        // A pop's outcome always matches its operation.
        _ => return None,
    })
}

fn pop_at_unpropagated(store: &mut Store, key: &[u8], op: &Op) -> Result<Option<Served>, Error> {
    Ok(match op {
        // Served by `stream_read::attempt`, never popped.
        Op::StreamRead(_) => None,
        Op::ListPop { head, count } => {
            list::pop(store, key, End::head_if(*head), count.unwrap_or(1))?.map(|elements| {
                Served::List {
                    key: key.to_vec(),
                    elements,
                }
            })
        }
        Op::ListMove {
            dst,
            from_head,
            to_head,
        } => list::move_one(
            store,
            key,
            dst,
            End::head_if(*from_head),
            End::head_if(*to_head),
        )?
        .map(Served::Moved),
        Op::ZSetPop { max, count } => {
            zset::pop(store, key, *max, count.unwrap_or(1))?.map(|entries| Served::ZSet {
                key: key.to_vec(),
                entries,
            })
        }
    })
}

/// Pops for `op` from the first of `keys` that exists, in Redis's order: a
/// missing key is passed over, one of another type fails the command.
fn pop_first(s: &mut Session, keys: &[Vec<u8>], op: &Op) -> Result<Option<Served>, Error> {
    for key in keys {
        if let Some(served) = pop_at(&mut s.store, &mut s.repl, key, op)? {
            return Ok(Some(served));
        }
    }
    Ok(None)
}

fn score(out: &mut Reply, x: f64) {
    out.double(x, &score_reply_text(x));
}

/// The reply of a pop for `op` (a single pop: `[key, element]`,
/// `[key, member, score]`; with a count: `[key, [elements]]`,
/// `[key, [[member, score], ...]]`; a move: the element).
fn reply_served(out: &mut Reply, op: &Op, served: &Served) {
    let single = matches!(
        op,
        Op::ListPop { count: None, .. } | Op::ZSetPop { count: None, .. }
    );
    match served {
        Served::Moved(element) => out.bulk(element),
        Served::Stream { key, found } => stream_read::reply_served(out, key, found),
        Served::List { key, elements } => {
            out.array(2);
            out.bulk(key);
            if !single {
                out.array(elements.len());
            }
            for e in elements {
                out.bulk(e);
            }
        }
        Served::ZSet { key, entries } if single => {
            out.array(1 + 2 * entries.len());
            out.bulk(key);
            for (member, x) in entries {
                out.bulk(member);
                score(out, *x);
            }
        }
        Served::ZSet { key, entries } => {
            out.array(2);
            out.bulk(key);
            out.array(entries.len());
            for (member, x) in entries {
                out.array(2);
                out.bulk(member);
                score(out, *x);
            }
        }
    }
}

/// Queues the reply of a blocked command that ended with `outcome` (the
/// connection calls this when the wait is over).
pub fn reply_blocked(s: &mut Session, reg: &Registration, outcome: Outcome) {
    match outcome {
        Outcome::Served(served) => reply_served(&mut s.out, &reg.waiter.op, &served),
        Outcome::Failed(e) => {
            // The blocked command is this connection's last one: its call
            // counts as failed now, as in Redis.
            let last = s
                .info
                .last_command
                .load(std::sync::atomic::Ordering::Relaxed);
            if let Some(row) = last.checked_sub(1) {
                s.tally.failed_later(row);
            }
            s.out.error(&e.0)
        }
        // BLMOVE's too: Redis replies a nil array to every timed-out pop.
        Outcome::TimedOut => s.out.null_array(),
    }
}

/// Pops for `op` from the first of `keys` that exists and replies; when
/// none exists, blocks until `deadline` — or, inside a transaction,
/// replies nil at once.
fn pop_or_block(
    s: &mut Session,
    keys: Vec<Vec<u8>>,
    op: Op,
    deadline: Option<Instant>,
) -> Result<(), Error> {
    if let Some(served) = pop_first(s, &keys, &op)? {
        reply_served(&mut s.out, &op, &served);
        return Ok(());
    }
    // Nothing popped now: nothing propagates (a pop for this client later
    // propagates as a plain pop when it happens; a blocking request must
    // never reach a replica, where it would block the master's stream).
    s.repl.nothing();
    if s.store.in_unit() {
        match op {
            Op::ListMove { .. } => s.out.null(),
            _ => s.out.null_array(),
        }
        return Ok(());
    }
    let reg = s
        .shared
        .blocked
        .register(s.info.id, s.store.db, keys, op, deadline);
    s.blocked = Some(reg);
    s.flow = Flow::Block;
    Ok(())
}

// --- Serving blocked clients -----------------------------------------------

/// What serving the waiter `op` from `key` finds. A key of another type
/// than the waiter pops passes it over (it keeps waiting); BLMOVE onto a
/// destination of another type ends the wait with WRONGTYPE, as in Redis.
fn attempt(store: &mut Store, repl: &mut ClientRepl, key: &[u8], op: &Op) -> Attempt {
    if let Op::StreamRead(w) = op {
        return stream_read::attempt(store, repl, key, w);
    }
    match pop_at(store, repl, key, op) {
        Ok(Some(served)) => Attempt::Done(Outcome::Served(served)),
        Ok(None) => Attempt::Empty,
        Err(e) if e == wrongtype() => {
            let source_is_list = matches!(list::pop(store, key, End::Head, 0), Ok(Some(_)));
            match op {
                Op::ListMove { .. } if source_is_list => Attempt::Done(Outcome::Failed(e)),
                _ => Attempt::Skip,
            }
        }
        Err(e) => Attempt::Done(Outcome::Failed(e)),
    }
}

/// Serves the clients blocked on `key` of database `db`, first blocked
/// first, until the key runs dry.
fn serve_key(s: &mut Session, db: usize, key: &[u8]) {
    let shared = s.shared.clone();
    for w in shared.blocked.queue(db, key) {
        let (store, repl) = (&mut s.store, &mut s.repl);
        let go_on = shared
            .blocked
            .serve(&w, |w| store.in_db(db, |st| attempt(st, repl, key, &w.op)));
        if !go_on {
            break;
        }
    }
}

/// Serves the clients blocked on the keys the last command wrote (the
/// store's signalled keys), and then on what serving wrote in turn (a
/// BLMOVE's destination), until nothing is left. The dispatch calls this
/// after every command, holding the map; it costs nothing when no key was
/// signalled.
pub fn serve_ready(s: &mut Session) {
    while s.store.has_ready() {
        for ek in s.store.take_ready() {
            let Some((ns, key)) = dbs::split(&ek) else {
                continue;
            };
            let dbs = &s.shared.keyspace.dbs;
            let Some(db) = (0..dbs.count()).find(|&d| dbs.namespace(d) == ns) else {
                continue;
            };
            serve_key(s, db, key);
        }
    }
}

/// A blocked client's own look at its keys, right after it blocked and
/// now and then while it waits: serves each key's waiters as a write would
/// (itself, when it is first in line), holding the map like a command.
pub fn recheck_blocked(s: &mut Session, reg: &Registration) {
    // Serving pops writes: it holds the replication stream's lock as a
    // write command does, and propagates the pops (`repl/`).
    let shared = s.shared.clone();
    let mut turn = shared.repl.turn();
    let map = s.map.take().expect("the map is back between commands");
    {
        let _held = loop {
            let held = map.shared();
            if turn.is_some() || !shared.repl.is_active() {
                break held;
            }
            // Replication turned on meanwhile: the turn comes first.
            drop(held);
            turn = shared.repl.turn();
        };
        s.repl.active = turn.is_some();
        for key in &reg.waiter.keys {
            serve_key(s, reg.waiter.db, key);
        }
        serve_ready(s);
    }
    s.map = Some(map);
    if let Some(stream) = turn.as_mut() {
        crate::repl::client::flush(stream, &mut s.repl, false, shared.repl.is_replica());
    }
    s.repl.active = false;
}

/// SWAPDB exchanged databases `a` and `b`: every key waited on in either
/// may hold something else now; signals them all.
pub(crate) fn swapped(s: &mut Session, a: usize, b: usize) {
    for db in [a, b] {
        for key in s.shared.blocked.keys_in(db) {
            s.store.in_db(db, |st| st.signal_ready(&key));
        }
    }
}

// --- Non-blocking commands -------------------------------------------------

fn move_now(s: &mut Session, a: &Args<'_>, from_head: bool, to_head: bool) -> Result<(), Error> {
    match list::move_one(
        &mut s.store,
        a.get(1),
        a.get(2),
        End::head_if(from_head),
        End::head_if(to_head),
    )? {
        Some(element) => s.out.bulk(&element),
        None => s.out.null(),
    }
    Ok(())
}

/// LMOVE source destination LEFT|RIGHT LEFT|RIGHT
pub fn lmove(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let from_head = end_arg(a.get(3))?;
    let to_head = end_arg(a.get(4))?;
    move_now(s, &a, from_head, to_head)
}

/// RPOPLPUSH source destination (LMOVE source destination RIGHT LEFT)
pub fn rpoplpush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    move_now(s, &a, false, true)
}

/// LMPOP numkeys key [key ...] LEFT|RIGHT [COUNT n]
pub fn lmpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (keys, at) = numkeys_and_keys(&a, 1)?;
    let head = end_arg(a.get(at))?;
    let count = count_option(&a, at + 1)?;
    let op = Op::ListPop {
        head,
        count: Some(count),
    };
    match pop_first(s, &keys, &op)? {
        Some(served) => reply_served(&mut s.out, &op, &served),
        None => s.out.null_array(),
    }
    Ok(())
}

/// ZPOPMIN/ZPOPMAX key [count]: a flat array of member, score, ... (in
/// RESP3 with a count, an array of [member, score] pairs); an empty array
/// for a missing key.
fn zpop(s: &mut Session, a: &Args<'_>, max: bool) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(syntax());
    }
    let count = match a.len() {
        3 => Some(positive_count(a.get(2))?),
        _ => None,
    };
    let entries = zset::pop(&mut s.store, a.get(1), max, count.unwrap_or(1))?.unwrap_or_default();
    let nested = s.out.resp3 && count.is_some();
    s.out.array(entries.len() * if nested { 1 } else { 2 });
    for (member, x) in &entries {
        if nested {
            s.out.array(2);
        }
        s.out.bulk(member);
        score(&mut s.out, *x);
    }
    Ok(())
}

pub fn zpopmin(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    zpop(s, &a, false)
}

pub fn zpopmax(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    zpop(s, &a, true)
}

/// ZMPOP numkeys key [key ...] MIN|MAX [COUNT n]
pub fn zmpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (keys, at) = numkeys_and_keys(&a, 1)?;
    let max = min_max_arg(a.get(at))?;
    let count = count_option(&a, at + 1)?;
    let op = Op::ZSetPop {
        max,
        count: Some(count),
    };
    match pop_first(s, &keys, &op)? {
        Some(served) => reply_served(&mut s.out, &op, &served),
        None => s.out.null_array(),
    }
    Ok(())
}

// --- Blocking commands -----------------------------------------------------

/// The keys between the command name and the trailing timeout.
fn keys_before_timeout(a: &Args<'_>) -> Vec<Vec<u8>> {
    (1..a.len() - 1).map(|i| a.get(i).to_vec()).collect()
}

/// BLPOP/BRPOP key [key ...] timeout
fn bpop(s: &mut Session, a: &Args<'_>, head: bool) -> Result<(), Error> {
    let deadline = timeout_arg(a.get(a.len() - 1))?;
    let op = Op::ListPop { head, count: None };
    pop_or_block(s, keys_before_timeout(a), op, deadline)
}

pub fn blpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    bpop(s, &a, true)
}

pub fn brpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    bpop(s, &a, false)
}

fn bmove(
    s: &mut Session,
    a: &Args<'_>,
    from_head: bool,
    to_head: bool,
    deadline: Option<Instant>,
) -> Result<(), Error> {
    let op = Op::ListMove {
        dst: a.get(2).to_vec(),
        from_head,
        to_head,
    };
    pop_or_block(s, vec![a.get(1).to_vec()], op, deadline)
}

/// BLMOVE source destination LEFT|RIGHT LEFT|RIGHT timeout
pub fn blmove(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let from_head = end_arg(a.get(3))?;
    let to_head = end_arg(a.get(4))?;
    let deadline = timeout_arg(a.get(5))?;
    bmove(s, &a, from_head, to_head, deadline)
}

/// BRPOPLPUSH source destination timeout
pub fn brpoplpush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let deadline = timeout_arg(a.get(3))?;
    bmove(s, &a, false, true, deadline)
}

/// BLMPOP timeout numkeys key [key ...] LEFT|RIGHT [COUNT n]
pub fn blmpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (keys, at) = numkeys_and_keys(&a, 2)?;
    let head = end_arg(a.get(at))?;
    let count = count_option(&a, at + 1)?;
    let deadline = timeout_arg(a.get(1))?;
    let op = Op::ListPop {
        head,
        count: Some(count),
    };
    pop_or_block(s, keys, op, deadline)
}

/// BZPOPMIN/BZPOPMAX key [key ...] timeout
fn bzpop(s: &mut Session, a: &Args<'_>, max: bool) -> Result<(), Error> {
    let deadline = timeout_arg(a.get(a.len() - 1))?;
    let op = Op::ZSetPop { max, count: None };
    pop_or_block(s, keys_before_timeout(a), op, deadline)
}

pub fn bzpopmin(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    bzpop(s, &a, false)
}

pub fn bzpopmax(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    bzpop(s, &a, true)
}

/// BZMPOP timeout numkeys key [key ...] MIN|MAX [COUNT n]
pub fn bzmpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (keys, at) = numkeys_and_keys(&a, 2)?;
    let max = min_max_arg(a.get(at))?;
    let count = count_option(&a, at + 1)?;
    let deadline = timeout_arg(a.get(1))?;
    let op = Op::ZSetPop {
        max,
        count: Some(count),
    };
    pop_or_block(s, keys, op, deadline)
}

/// Where the keys of LMPOP and ZMPOP are (their rows' key finder): after
/// numkeys.
pub fn mpop_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    keys_after_count(words, 1)
}

/// Where the keys of BLMPOP and BZMPOP are (their rows' key finder): after
/// the timeout and numkeys.
pub fn bmpop_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    keys_after_count(words, 2)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ms_until(deadline: Option<Instant>) -> Option<u128> {
        deadline.map(|d| d.saturating_duration_since(Instant::now()).as_millis())
    }

    #[test]
    fn timeouts_parse_as_redis_parses_them() {
        let text = |arg: &str| timeout_arg(arg.as_bytes()).map_err(|e| e.0.into_owned());
        assert_eq!(text("0").unwrap(), None);
        assert_eq!(text("-0").unwrap(), None);
        // ceil(-0.0001 * 1000) is -0: forever, as in Redis.
        assert_eq!(text("-0.0000001").unwrap(), None);
        let near = ms_until(text("0.0001").unwrap()).unwrap();
        assert!(near <= 1, "{near}");
        let half = ms_until(text("0.5").unwrap()).unwrap();
        assert!((400..=500).contains(&half), "{half}");
        assert!(ms_until(text("0x10").unwrap()).unwrap() > 15_000);
        for bad in ["", "x", " 1", "1 ", "nan", "1e"] {
            assert_eq!(
                text(bad).unwrap_err(),
                "ERR timeout is not a float or out of range"
            );
        }
        for negative in ["-1", "-0.01", "inf", "-inf", "1e300"] {
            assert_eq!(
                text(negative).unwrap_err(),
                "ERR timeout is negative",
                "{negative}"
            );
        }
        // Past i64 once the Unix time is added: a deadline already gone.
        assert_eq!(ms_until(text("9223371000000000").unwrap()), Some(0));
    }

    #[test]
    fn mpop_keys_follow_numkeys() {
        let args: Vec<&[u8]> = vec![b"lmpop", b"2", b"a", b"b", b"LEFT"];
        assert_eq!(mpop_keys(&args), Some(vec![2, 3]));
        let args: Vec<&[u8]> = vec![b"blmpop", b"0", b"1", b"a", b"LEFT"];
        assert_eq!(bmpop_keys(&args), Some(vec![3]));
        let args: Vec<&[u8]> = vec![b"zmpop", b"3", b"a", b"MIN"];
        assert_eq!(mpop_keys(&args), None);
        let args: Vec<&[u8]> = vec![b"zmpop", b"0", b"a", b"MIN"];
        assert_eq!(mpop_keys(&args), None);
    }
}
