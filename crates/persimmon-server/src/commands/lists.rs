//! List commands over `persimmon_types::list` (a positional counted tree
//! per list: a push or a pop is O(height), LINDEX and LSET one `at` /
//! `set_at`, LRANGE and LPOS a `walk` from a rank). LREM, LINSERT and LPOS
//! scan for their element, LTRIM removes what it drops one by one:
//! O(elements visited or removed), as in Redis.
//!
//! Invariants: every command runs in one atomic unit of the client's
//! `Store` (`coll::with`, or `store.atomic` for two keys), which re-runs it
//! on a conflict, so no closure writes to the reply buffer; the list rules
//! (the key goes with the last element, the time to live stays, elements
//! past `list::MAX_ELEMENT` are refused) are `persimmon_types::list`'s;
//! arguments are checked in Redis's order (LPOP's count and LPOS's options
//! before the key, LINDEX's and LSET's index after it).
//!
//! The blocking commands (`blocking.rs`: LMOVE, RPOPLPUSH, LMPOP and the
//! blocking pops) pop through `list::pop` and `list::move_one`.

use persimmon_resp::{parse_i64, Args, Reply};
use persimmon_types::coll::Coll;
use persimmon_types::index::{position, positions};
use persimmon_types::list::{self, check_element, damaged, with_list, End};
use persimmon_types::store::Store;
use persimmon_types::Error;

use crate::notify;
use crate::session::{arity, int_arg, int_arg_within, is, syntax, Session};

/// A count that must not be negative (Redis gives one text for a negative
/// count and for one that is not an integer).
pub(super) fn positive_arg(arg: &[u8]) -> Result<u64, Error> {
    positive_with(arg, "ERR value is out of range, must be positive")
}

/// [`positive_arg`] with Redis's `msg` for both failures.
fn positive_with(arg: &[u8], msg: &'static str) -> Result<u64, Error> {
    parse_i64(arg)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| Error::new(msg))
}

/// LPUSH/RPUSH/LPUSHX/RPUSHX: the new length (0 when `existing_only` and
/// the key is missing).
fn push(s: &mut Session, a: &Args<'_>, head: bool, existing_only: bool) -> Result<(), Error> {
    let new: Vec<&[u8]> = a.from(2).collect();
    let end = End::head_if(head);
    let n = if existing_only {
        list::push_if_exists(&mut s.store, a.get(1), end, &new)?
    } else {
        list::push(&mut s.store, a.get(1), end, &new)?
    };
    if n > 0 {
        let event = if head { "lpush" } else { "rpush" };
        notify::event(s, notify::LIST, event, a.get(1));
    }
    s.out.int(n as i64);
    Ok(())
}

pub fn lpush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    push(s, &a, true, false)
}

pub fn rpush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    push(s, &a, false, false)
}

pub fn lpushx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    push(s, &a, true, true)
}

pub fn rpushx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    push(s, &a, false, true)
}

/// LPOP/RPOP key [count]: one element as a bulk string, or with a count an
/// array of up to `count` (nil, or a nil array with a count, for a missing
/// key; an empty array for a count of 0).
fn pop(s: &mut Session, a: &Args<'_>, head: bool, name: &str) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(arity(name));
    }
    let count = if a.len() == 3 {
        Some(positive_arg(a.get(2))?)
    } else {
        None
    };
    let n = usize::try_from(count.unwrap_or(1)).unwrap_or(usize::MAX);
    let popped = list::pop(&mut s.store, a.get(1), End::head_if(head), n)?;
    if popped.as_ref().is_some_and(|p| !p.is_empty()) {
        let event = if head { "lpop" } else { "rpop" };
        notify::event(s, notify::LIST, event, a.get(1));
        notify::if_emptied(s, a.get(1));
    }
    match (popped, count) {
        (None, None) => s.out.null(),
        (None, Some(_)) => s.out.null_array(),
        (Some(mut p), None) => s.out.bulk(&p.pop().ok_or_else(damaged)?),
        (Some(p), Some(_)) => {
            s.out.array(p.len());
            p.iter().for_each(|e| s.out.bulk(e));
        }
    }
    Ok(())
}

pub fn lpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    pop(s, &a, true, "lpop")
}

pub fn rpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    pop(s, &a, false, "rpop")
}

pub fn llen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = list::len(&mut s.store, a.get(1))?;
    s.out.int(n as i64);
    Ok(())
}

/// An empty reply buffer in the session's protocol, for a reply built
/// inside a unit (cleared at each attempt) and copied out after it.
fn local_reply(s: &Session) -> Reply {
    let mut r = Reply::new();
    r.resp3 = s.out.resp3;
    r
}

pub fn lrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (start, end) = (int_arg(a.get(2))?, int_arg(a.get(3))?);
    let mut r = local_reply(s);
    with_list(&mut s.store, a.get(1), |st, c| {
        r.buf.clear();
        let Some((from, to)) = positions(start, end, c.len()) else {
            return Ok(());
        };
        let mut left = to - from + 1;
        r.array(left as usize);
        c.walk(st, 0, from, false, |_, e| {
            r.bulk(e);
            left -= 1;
            Ok(left > 0)
        })?;
        if left > 0 {
            return Err(damaged());
        }
        Ok(())
    })?;
    if r.buf.is_empty() {
        s.out.array(0);
    } else {
        s.out.buf.extend_from_slice(&r.buf);
    }
    s.output_over_limit();
    Ok(())
}

pub fn lindex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let found = with_list(&mut s.store, a.get(1), |st, c| {
        let index = int_arg(a.get(2))?;
        match position(index, c.len()) {
            Some(i) => Ok(Some(c.at(st, 0, i)?.ok_or_else(damaged)?.1)),
            None => Ok(None),
        }
    })?;
    match found.flatten() {
        Some(e) => s.out.bulk(&e),
        None => s.out.null(),
    }
    Ok(())
}

pub fn lset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let value = a.get(3);
    let done = with_list(&mut s.store, a.get(1), |st, c| {
        let index = int_arg(a.get(2))?;
        let i = position(index, c.len()).ok_or_else(|| Error::new("ERR index out of range"))?;
        check_element(value)?;
        c.set_at(st, i, value)?;
        Ok(())
    })?;
    done.ok_or_else(|| Error::new("ERR no such key"))?;
    s.out.ok();
    Ok(())
}

/// The ranks of the first `limit` elements of `c` equal to `target`, from
/// the head (from the tail with `rev`), in the order met.
fn matches(
    st: &mut Store,
    c: &mut Coll,
    target: &[u8],
    rev: bool,
    limit: u64,
) -> Result<Vec<u64>, Error> {
    let len = c.len();
    let (mut i, mut found) = (0u64, Vec::new());
    c.walk(st, 0, if rev { len - 1 } else { 0 }, rev, |_, e| {
        if e == target {
            found.push(if rev { len - 1 - i } else { i });
        }
        i += 1;
        Ok((found.len() as u64) < limit)
    })?;
    Ok(found)
}

/// LREM key count element: removes the first `count` matches (from the
/// tail when negative; every match when 0).
pub fn lrem(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let count = int_arg(a.get(2))?;
    let target = a.get(3);
    let limit = match count.unsigned_abs() {
        0 => u64::MAX,
        n => n,
    };
    let removed = with_list(&mut s.store, a.get(1), |st, c| {
        let mut ranks = matches(st, c, target, count < 0, limit)?;
        // Highest rank first, so no removal shifts a rank still to go.
        ranks.sort_unstable_by(|x, y| y.cmp(x));
        for &r in &ranks {
            c.remove_at(st, r)?.ok_or_else(damaged)?;
        }
        Ok(ranks.len() as i64)
    })?;
    s.out.int(removed.unwrap_or(0));
    Ok(())
}

pub fn ltrim(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (start, end) = (int_arg(a.get(2))?, int_arg(a.get(3))?);
    with_list(&mut s.store, a.get(1), |st, c| {
        let len = c.len();
        let (from, to) = positions(start, end, len).unwrap_or((len, len));
        let tail = if from == len { 0 } else { len - 1 - to };
        for _ in 0..tail {
            c.remove_at(st, c.len() - 1)?.ok_or_else(damaged)?;
        }
        for _ in 0..from {
            c.remove_at(st, 0)?.ok_or_else(damaged)?;
        }
        Ok(())
    })?;
    s.out.ok();
    Ok(())
}

/// LINSERT key BEFORE|AFTER pivot element: the new length, -1 when the
/// pivot is not in the list, 0 when the key is missing.
pub fn linsert(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let after = match a.get(2) {
        w if is(w, "after") => true,
        w if is(w, "before") => false,
        _ => return Err(syntax()),
    };
    let (pivot, element) = (a.get(3), a.get(4));
    let n = with_list(&mut s.store, a.get(1), |st, c| {
        let Some(&rank) = matches(st, c, pivot, false, 1)?.first() else {
            return Ok(-1);
        };
        check_element(element)?;
        c.insert_at(st, rank + after as u64, element)?;
        Ok(c.len() as i64)
    })?;
    s.out.int(n.unwrap_or(0));
    Ok(())
}

/// LPOS's options: the match to start from (negative: counting from the
/// tail), how many to return (`None`: one, as an integer; 0: all), and how
/// many elements to look at (0: all).
struct PosOptions {
    rank: i64,
    count: Option<u64>,
    maxlen: u64,
}

fn pos_options(a: &Args<'_>) -> Result<PosOptions, Error> {
    let mut o = PosOptions {
        rank: 1,
        count: None,
        maxlen: 0,
    };
    let mut j = 3;
    while j < a.len() {
        let (opt, more) = (a.get(j), j + 1 < a.len());
        if is(opt, "rank") && more {
            o.rank = int_arg_within(a.get(j + 1), -i64::MAX, i64::MAX)?;
            if o.rank == 0 {
                return Err(Error::new(
                    "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                     second ... or use negative to start from the end of the list",
                ));
            }
        } else if is(opt, "count") && more {
            o.count = Some(positive_with(a.get(j + 1), "ERR COUNT can't be negative")?);
        } else if is(opt, "maxlen") && more {
            o.maxlen = positive_with(a.get(j + 1), "ERR MAXLEN can't be negative")?;
        } else {
            return Err(syntax());
        }
        j += 2;
    }
    Ok(o)
}

/// The indexes LPOS answers in list `c`, in the order met.
fn match_positions(
    st: &mut Store,
    c: &mut Coll,
    target: &[u8],
    o: &PosOptions,
) -> Result<Vec<u64>, Error> {
    let len = c.len();
    let rev = o.rank < 0;
    let skip = o.rank.unsigned_abs() - 1;
    let want = match o.count {
        None => 1,
        Some(0) => u64::MAX,
        Some(n) => n,
    };
    let maxlen = if o.maxlen == 0 { u64::MAX } else { o.maxlen };
    let (mut i, mut seen, mut found) = (0u64, 0u64, Vec::new());
    c.walk(st, 0, if rev { len - 1 } else { 0 }, rev, |_, e| {
        if e == target {
            seen += 1;
            if seen > skip {
                found.push(if rev { len - 1 - i } else { i });
            }
        }
        i += 1;
        Ok((found.len() as u64) < want && i < maxlen)
    })?;
    Ok(found)
}

/// LPOS key element [RANK rank] [COUNT num-matches] [MAXLEN len].
pub fn lpos(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let o = pos_options(&a)?;
    let found = with_list(&mut s.store, a.get(1), |st, c| {
        match_positions(st, c, a.get(2), &o)
    })?;
    let found = found.unwrap_or_default();
    match (o.count, found.first()) {
        (Some(_), _) => {
            s.out.array(found.len());
            found.iter().for_each(|&i| s.out.int(i as i64));
        }
        (None, Some(&i)) => s.out.int(i as i64),
        (None, None) => s.out.null(),
    }
    Ok(())
}
