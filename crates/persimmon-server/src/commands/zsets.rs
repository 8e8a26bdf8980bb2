//! Sorted-set commands on single members: ZADD (NX XX GT LT CH INCR),
//! ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZPOPMIN and
//! ZPOPMAX, plus what the other sorted-set rooms share (score arguments,
//! score text, range replies) and the pop seam for the blocking commands.
//! Ranges are in `zset_range.rs`, the multi-key and random commands in
//! `zset_ops.rs`.
//!
//! A sorted set is a `coll` collection of kind `ZSet`: tree 0 member →
//! score, tree 1 `score_key(score, member)` → empty, changed only through
//! `coll::zset_put` / `coll::zset_remove`, which keep the two in step.
//! Every command runs in one atomic unit of the store: O(log n) page reads
//! per member (a rank is a counted-tree rank in tree 1).
//!
//! Invariants: no NaN score is ever stored (ZADD refuses a NaN argument and
//! an INCR that would produce one), so the stored order is total; a sorted
//! set loses its key with its last member, as in Redis; a member is at
//! most [`MAX_MEMBER_BYTES`] (the member sits in both trees, and the two
//! roots of a small set share the meta record).

use crate::session::{is, syntax, Session};
use persimmon_resp::Args;
use persimmon_types::coll::{self, score_key, split_score_key, Coll, Kind};
use persimmon_types::error::check_key;
use persimmon_types::store::Store;
use persimmon_types::value::MAX_STRING_BYTES;
use persimmon_types::Error;

/// The longest member a sorted set takes: the meta record holds both
/// roots of a small set, so a member must fit twice in one engine value.
pub const MAX_MEMBER_BYTES: usize = MAX_STRING_BYTES / 2 - 1024;

/// A member as stored: refuses one longer than [`MAX_MEMBER_BYTES`].
pub(super) fn check_member(m: &[u8]) -> Result<(), Error> {
    if m.len() > MAX_MEMBER_BYTES {
        return Err(Error::new(format!(
            "ERR sorted set member is {} bytes; persimmon stores members of at most {MAX_MEMBER_BYTES} bytes",
            m.len()
        )));
    }
    Ok(())
}

pub(super) fn not_float() -> Error {
    Error::new("ERR value is not a valid float")
}

pub(super) fn nan_error() -> Error {
    Error::new("ERR resulting score is not a number (NaN)")
}

/// A score argument: a float or ±inf; never NaN, no blanks.
pub(super) fn score_arg(arg: &[u8]) -> Result<f64, Error> {
    let text = std::str::from_utf8(arg).map_err(|_| not_float())?;
    if text.is_empty() || text.trim() != text {
        return Err(not_float());
    }
    match text.parse::<f64>() {
        Ok(x) if !x.is_nan() => Ok(x),
        _ => Err(not_float()),
    }
}

/// A score as Redis 7.0 writes it: C's `%.17g` (17 significant digits,
/// trailing zeros dropped, exponent form below 1e-4 and from 1e17), `inf`,
/// `-inf`.
pub(super) fn score_text(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{x:.16e}");
    let (mantissa, exp) = sci.split_once('e').expect("an exponent");
    let exp: i32 = exp.parse().expect("a number");
    if !(-4..17).contains(&exp) {
        let sign = if exp < 0 { '-' } else { '+' };
        return format!("{}e{sign}{:02}", trim_zeros(mantissa), exp.abs());
    }
    trim_zeros(&format!("{x:.*}", (16 - exp) as usize)).to_string()
}

/// `%g`'s removal of trailing zeros (and of a point left alone).
fn trim_zeros(s: &str) -> &str {
    if s.contains('.') {
        s.trim_end_matches('0').trim_end_matches('.')
    } else {
        s
    }
}

/// Runs `f` on the sorted set at `key` in one unit; `None`: key missing
/// (as is a key too long to exist).
pub(super) fn with_zset<R>(
    store: &mut Store,
    key: &[u8],
    f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    if !persimmon_types::error::may_exist(&store.engine_key(key)) {
        return Ok(None);
    }
    coll::with(store, key, Kind::ZSet, f)
}

/// The score of `member` in `c`.
pub(super) fn score_of(st: &mut Store, c: &mut Coll, member: &[u8]) -> Result<Option<f64>, Error> {
    Ok(c.get(st, 0, member)?.map(|v| coll::decode_score(&v)))
}

/// Writes `(score, member)` entries as a range reply, with scores when
/// asked: RESP3 pairs, RESP2 flat (the connection closes if it passes the
/// output limit).
pub(super) fn range_reply(s: &mut Session, entries: &[(f64, Vec<u8>)], with_scores: bool) {
    if with_scores && s.out.resp3 {
        s.out.array(entries.len());
        for (score, member) in entries {
            s.out.array(2);
            s.out.bulk(member);
            s.out.double(*score, &score_text(*score));
        }
    } else {
        s.out.array(entries.len() * if with_scores { 2 } else { 1 });
        for (score, member) in entries {
            s.out.bulk(member);
            if with_scores {
                s.out.bulk(score_text(*score).as_bytes());
            }
        }
    }
    s.output_over_limit();
}

/// ZADD's options.
#[derive(Default, Clone, Copy)]
struct ZaddOptions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
    ch: bool,
    incr: bool,
}

impl ZaddOptions {
    /// Parses the options from `a[2..]`; returns them and the index of the
    /// first score.
    fn parse(a: &Args<'_>) -> Result<(ZaddOptions, usize), Error> {
        let mut o = ZaddOptions::default();
        let mut i = 2;
        while i < a.len() {
            let opt = a.get(i);
            match () {
                _ if is(opt, "NX") => o.nx = true,
                _ if is(opt, "XX") => o.xx = true,
                _ if is(opt, "GT") => o.gt = true,
                _ if is(opt, "LT") => o.lt = true,
                _ if is(opt, "CH") => o.ch = true,
                _ if is(opt, "INCR") => o.incr = true,
                _ => break,
            }
            i += 1;
        }
        let pairs = a.len() - i;
        if pairs == 0 || !pairs.is_multiple_of(2) {
            return Err(syntax());
        }
        if o.nx && o.xx {
            return Err(Error::new(
                "ERR XX and NX options at the same time are not compatible",
            ));
        }
        if (o.gt && o.lt) || (o.nx && (o.gt || o.lt)) {
            return Err(Error::new(
                "ERR GT, LT, and/or NX options at the same time are not compatible",
            ));
        }
        if o.incr && pairs != 2 {
            return Err(Error::new(
                "ERR INCR option supports a single increment-element pair",
            ));
        }
        Ok((o, i))
    }
}

/// What ZADD did: members added, scores changed, and the last score it
/// set or found (INCR's reply; `None`: nothing done).
#[derive(Default)]
struct ZaddOutcome {
    added: i64,
    changed: i64,
    score: Option<f64>,
}

/// Applies one `score member` pair of ZADD to `c`, as Redis's `zsetAdd`.
fn zadd_one(
    st: &mut Store,
    c: &mut Coll,
    (score, member): (f64, &[u8]),
    o: ZaddOptions,
    out: &mut ZaddOutcome,
) -> Result<(), Error> {
    let current = score_of(st, c, member)?;
    if (o.nx && current.is_some()) || (o.xx && current.is_none()) {
        return Ok(());
    }
    let new = match (o.incr, current) {
        (true, Some(c)) => c + score,
        _ => score,
    };
    if new.is_nan() {
        return Err(nan_error());
    }
    match current {
        Some(c) if (o.gt && new <= c) || (o.lt && new >= c) => return Ok(()),
        Some(c) if new == c => {}
        Some(_) => out.changed += 1,
        None => out.added += 1,
    }
    if current != Some(new) {
        coll::zset_put(st, c, member, new)?;
    }
    out.score = Some(new);
    Ok(())
}

/// ZADD key [NX|XX] [GT|LT] [CH] [INCR] score member [score member ...]
pub fn zadd(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let (o, mut i) = ZaddOptions::parse(&a)?;
    let mut changes = Vec::with_capacity((a.len() - i) / 2);
    while i < a.len() {
        changes.push((score_arg(a.get(i))?, a.get(i + 1)));
        i += 2;
    }
    zadd_apply(s, key, &changes, o)
}

/// ZINCRBY key increment member: ZADD INCR of one member.
pub fn zincrby(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let o = ZaddOptions {
        incr: true,
        ..ZaddOptions::default()
    };
    let change = (score_arg(a.get(2))?, a.get(3));
    zadd_apply(s, a.get(1), &[change], o)
}

/// Applies ZADD's `changes` in one unit and replies.
fn zadd_apply(
    s: &mut Session,
    key: &[u8],
    changes: &[(f64, &[u8])],
    o: ZaddOptions,
) -> Result<(), Error> {
    check_key(key)?;
    for (_, m) in changes {
        check_member(m)?;
    }
    let out = coll::with_new(&mut s.store, key, Kind::ZSet, |st, c| {
        let mut out = ZaddOutcome::default();
        for &change in changes {
            zadd_one(st, c, change, o, &mut out)?;
        }
        Ok(out)
    })?;
    if o.incr {
        match out.score {
            Some(x) => s.out.double(x, &score_text(x)),
            None => s.out.null(),
        }
    } else {
        s.out.int(out.added + if o.ch { out.changed } else { 0 });
    }
    Ok(())
}

/// ZREM key member [member ...]
pub fn zrem(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let removed = with_zset(&mut s.store, a.get(1), |st, c| {
        let mut removed = 0;
        for m in a.from(2) {
            removed += coll::zset_remove(st, c, m)?.is_some() as i64;
        }
        Ok(removed)
    })?;
    s.out.int(removed.unwrap_or(0));
    Ok(())
}

pub fn zcard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_zset(&mut s.store, a.get(1), |_, c| Ok(c.len()))?;
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

fn score_or_null(s: &mut Session, score: Option<f64>) {
    match score {
        Some(x) => s.out.double(x, &score_text(x)),
        None => s.out.null(),
    }
}

pub fn zscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let member = a.get(2);
    let score = with_zset(&mut s.store, a.get(1), |st, c| score_of(st, c, member))?;
    score_or_null(s, score.flatten());
    Ok(())
}

/// ZMSCORE key member [member ...]: a score or nil for each.
pub fn zmscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let scores = with_zset(&mut s.store, a.get(1), |st, c| {
        a.from(2)
            .map(|m| score_of(st, c, m))
            .collect::<Result<Vec<_>, _>>()
    })?
    .unwrap_or_else(|| vec![None; a.len() - 2]);
    s.out.array(scores.len());
    for score in scores {
        score_or_null(s, score);
    }
    Ok(())
}

pub fn zrank(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    rank_reply(s, a, false)
}

pub fn zrevrank(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    rank_reply(s, a, true)
}

/// ZRANK / ZREVRANK: the member's rank in tree 1 (O(log n)), or nil.
fn rank_reply(s: &mut Session, a: Args<'_>, rev: bool) -> Result<(), Error> {
    let member = a.get(2);
    let rank = with_zset(&mut s.store, a.get(1), |st, c| {
        let Some(score) = score_of(st, c, member)? else {
            return Ok(None);
        };
        let (rank, _) = c.rank(st, 1, &score_key(score, member))?;
        Ok(Some(if rev { c.len() - 1 - rank } else { rank }))
    })?;
    match rank.flatten() {
        Some(r) => s.out.int(r as i64),
        None => s.out.null(),
    }
    Ok(())
}

// Seam for blocking.rs: the pops BZPOPMIN, BZPOPMAX and ZMPOP build on.

/// Popped members and their scores, in pop order.
pub(crate) type Popped = Vec<(Vec<u8>, f64)>;

/// Removes and returns up to `count` members with the lowest scores (the
/// highest with `max`), in pop order, in one atomic unit. `None`: the key
/// is missing; WRONGTYPE for a key of another type.
pub(crate) fn zset_pop(
    store: &mut Store,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Popped>, Error> {
    with_zset(store, key, |st, c| {
        let mut popped = Vec::new();
        while popped.len() < count && !c.is_empty() {
            let rank = if max { c.len() - 1 } else { 0 };
            let Some((k, _)) = c.at(st, 1, rank)? else {
                break;
            };
            let (score, member) = split_score_key(&k);
            coll::zset_remove(st, c, member)?;
            popped.push((member.to_vec(), score));
        }
        Ok(popped)
    })
}

/// A score as the replies write it (the same text as ZSCORE's).
pub(crate) fn score_reply_text(x: f64) -> String {
    score_text(x)
}

#[cfg(test)]
mod tests {
    use super::{score_arg, score_text};

    #[test]
    fn scores_parse_and_print_like_redis() {
        assert_eq!(score_arg(b"1.5").unwrap(), 1.5);
        assert_eq!(score_arg(b"-inf").unwrap(), f64::NEG_INFINITY);
        assert_eq!(score_arg(b"+inf").unwrap(), f64::INFINITY);
        assert!(score_arg(b"nan").is_err());
        assert!(score_arg(b" 1").is_err());
        assert!(score_arg(b"").is_err());
        assert!(score_arg(b"x").is_err());
        assert_eq!(score_text(1.0), "1");
        assert_eq!(score_text(2.5), "2.5");
        assert_eq!(score_text(f64::NEG_INFINITY), "-inf");
        // C's printf("%.17g"), as redis-server 7.0 replies scores.
        for (x, text) in [
            (1.1, "1.1000000000000001"),
            (0.1, "0.10000000000000001"),
            (1e300, "1.0000000000000001e+300"),
            (1e-5, "1.0000000000000001e-05"),
            (123456789012345678.0, "1.2345678901234568e+17"),
            (0.0001, "0.0001"),
            (-3.75e-7, "-3.7500000000000001e-07"),
            (1e16, "10000000000000000"),
            (1e17, "1e+17"),
            (0.9527121470089592, "0.95271214700895923"),
            (5e-324, "4.9406564584124654e-324"),
            (f64::MAX, "1.7976931348623157e+308"),
        ] {
            assert_eq!(score_text(x), text, "{x:e}");
        }
    }
}
