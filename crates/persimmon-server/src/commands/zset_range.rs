//! Sorted-set ranges: ZRANGE (BYSCORE BYLEX REV LIMIT WITHSCORES),
//! ZRANGESTORE, ZREVRANGE, ZRANGEBYSCORE, ZREVRANGEBYSCORE, ZRANGEBYLEX,
//! ZREVRANGEBYLEX, ZCOUNT, ZLEXCOUNT, ZREMRANGEBYRANK, ZREMRANGEBYSCORE,
//! ZREMRANGEBYLEX.
//!
//! Every range becomes a span of ranks `[lo, hi)` of one tree, found in
//! O(log n): by rank and by score in tree 1 (ordered by score, member), a
//! score bound being the rank of an 8-byte score key (with no member, it
//! sorts before every member of that score); by lex in tree 0 (ordered by
//! member bytes, which is the order Redis's BYLEX assumes: all scores
//! equal). A reply then walks `k` entries from one rank: O(log n + k).
//!
//! Invariants: arguments are checked in Redis's order (options, then the
//! range, then the key's type); reads collect their reply inside the unit
//! and write it after, so a retried unit never writes twice.

use persimmon_resp::Args;
use persimmon_types::coll::{self, decode_score, split_score_key, Coll, Kind};
use persimmon_types::store::Store;
use persimmon_types::zset::with_zset;
use persimmon_types::Error;

use super::zsets::{range_reply, score_arg};
use crate::session::{int_arg, is, syntax, Session};

/// A score bound: the score and whether it is exclusive.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) struct ScoreBound(pub f64, pub bool);

/// A lex bound: `-`, `+`, `[member` or `(member`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(super) enum LexBound<'a> {
    Min,
    Max,
    In(&'a [u8]),
    Ex(&'a [u8]),
}

/// What a range selects.
#[derive(Clone, Copy, Debug)]
pub(super) enum By<'a> {
    Rank(i64, i64),
    Score(ScoreBound, ScoreBound),
    Lex(LexBound<'a>, LexBound<'a>),
}

/// A score bound argument: `1.5`, `(1.5` (exclusive), `-inf`, `+inf`.
fn score_bound(arg: &[u8]) -> Result<ScoreBound, Error> {
    let err = || Error::new("ERR min or max is not a float");
    match arg.strip_prefix(b"(") {
        Some(rest) => Ok(ScoreBound(score_arg(rest).map_err(|_| err())?, true)),
        None => Ok(ScoreBound(score_arg(arg).map_err(|_| err())?, false)),
    }
}

/// A lex bound argument.
fn lex_bound(arg: &[u8]) -> Result<LexBound<'_>, Error> {
    match arg {
        b"-" => Ok(LexBound::Min),
        b"+" => Ok(LexBound::Max),
        [b'[', rest @ ..] => Ok(LexBound::In(rest)),
        [b'(', rest @ ..] => Ok(LexBound::Ex(rest)),
        _ => Err(Error::new("ERR min or max not valid string range item")),
    }
}

pub(super) fn score_range<'a>(min: &[u8], max: &[u8]) -> Result<By<'a>, Error> {
    Ok(By::Score(score_bound(min)?, score_bound(max)?))
}

pub(super) fn lex_range<'a>(min: &'a [u8], max: &'a [u8]) -> Result<By<'a>, Error> {
    Ok(By::Lex(lex_bound(min)?, lex_bound(max)?))
}

/// The 8-byte score-tree key that sorts before every entry of score `x`,
/// or (`after`) after every one of them.
fn score_edge(x: f64, after: bool) -> Vec<u8> {
    let x = if x == 0.0 { 0.0 } else { x };
    let head: [u8; 8] = coll::score_key(x, b"")[..8].try_into().expect("8 bytes");
    (u64::from_be_bytes(head) + after as u64)
        .to_be_bytes()
        .to_vec()
}

/// The tree-0 rank where a lex bound falls, as a lower or an upper edge.
fn lex_rank(st: &mut Store, c: &mut Coll, b: LexBound<'_>, lower: bool) -> Result<u64, Error> {
    Ok(match b {
        LexBound::Min => 0,
        LexBound::Max => c.len(),
        LexBound::In(m) | LexBound::Ex(m) => {
            let (r, found) = c.rank(st, 0, m)?;
            let past = matches!(b, LexBound::In(_)) != lower;
            r + (found && past) as u64
        }
    })
}

/// A span of ranks `[lo, hi)` of one tree.
#[derive(Clone, Copy, Debug)]
pub(super) struct Span {
    pub tree: usize,
    pub lo: u64,
    pub hi: u64,
}

/// Where range `by` falls in `c` (`rev`: a rank range counts from the top).
pub(super) fn span(st: &mut Store, c: &mut Coll, by: By<'_>, rev: bool) -> Result<Span, Error> {
    let len = c.len();
    let (tree, lo, hi) = match by {
        By::Rank(start, end) => match rank_span(len, start, end) {
            None => (1, 0, 0),
            Some((a, b)) if rev => (1, len - 1 - b, len - a),
            Some((a, b)) => (1, a, b + 1),
        },
        By::Score(min, max) => {
            let lo = c.rank(st, 1, &score_edge(min.0, min.1))?.0;
            let hi = c.rank(st, 1, &score_edge(max.0, !max.1))?.0;
            (1, lo, hi)
        }
        By::Lex(min, max) => (0, lex_rank(st, c, min, true)?, lex_rank(st, c, max, false)?),
    };
    Ok(Span {
        tree,
        lo,
        hi: hi.max(lo),
    })
}

/// Redis's index sanitizing for a rank range: the first and last index
/// (inclusive), or `None` when it is empty.
fn rank_span(len: u64, start: i64, end: i64) -> Option<(u64, u64)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 { len + end } else { end };
    if start > end || start >= len {
        return None;
    }
    Some((start as u64, end.min(len - 1) as u64))
}

/// The entries of `span`, skipping `offset` and taking at most `limit`
/// (negative: all) in the walk's direction. A negative offset selects
/// nothing (Redis skips forever).
pub(super) fn collect(
    st: &mut Store,
    c: &mut Coll,
    span: Span,
    rev: bool,
    offset: i64,
    limit: i64,
) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    let n = span.hi - span.lo;
    if offset < 0 || offset as u64 >= n || limit == 0 {
        return Ok(Vec::new());
    }
    let avail = n - offset as u64;
    let count = if limit < 0 {
        avail
    } else {
        avail.min(limit as u64)
    } as usize;
    let from = if rev {
        span.hi - 1 - offset as u64
    } else {
        span.lo + offset as u64
    };
    let mut out = Vec::with_capacity(count.min(1 << 16));
    c.walk(st, span.tree, from, rev, |k, v| {
        out.push(match span.tree {
            0 => (decode_score(v), k.to_vec()),
            _ => {
                let (score, m) = split_score_key(k);
                (score, m.to_vec())
            }
        });
        Ok(out.len() < count)
    })?;
    Ok(out)
}

/// A parsed ZRANGE-family request.
struct Request<'a> {
    key: &'a [u8],
    by: By<'a>,
    rev: bool,
    offset: i64,
    limit: i64,
    with_scores: bool,
}

/// The range kind and direction a command fixes (`None`: ZRANGE's own
/// options choose).
#[derive(Clone, Copy, PartialEq)]
enum RangeKind {
    Rank,
    Score,
    Lex,
}

/// Parses `a[first..]` = `key min max [options]` as Redis's
/// `zrangeGenericCommand` does; `store`: ZRANGESTORE (no WITHSCORES).
fn parse<'a>(
    a: &Args<'a>,
    first: usize,
    store: bool,
    fixed_kind: Option<RangeKind>,
    fixed_rev: Option<bool>,
) -> Result<Request<'a>, Error> {
    let (mut kind, mut rev) = (fixed_kind, fixed_rev);
    let (mut offset, mut limit, mut with_scores) = (0, -1, false);
    let mut j = first + 3;
    while j < a.len() {
        let arg = a.get(j);
        let left = a.len() - j - 1;
        if !store && is(arg, "WITHSCORES") {
            with_scores = true;
        } else if is(arg, "LIMIT") && left >= 2 {
            offset = int_arg(a.get(j + 1))?;
            limit = int_arg(a.get(j + 2))?;
            j += 2;
        } else if fixed_rev.is_none() && is(arg, "REV") {
            rev = Some(true);
        } else if fixed_kind.is_none() && is(arg, "BYLEX") {
            kind = Some(RangeKind::Lex);
        } else if fixed_kind.is_none() && is(arg, "BYSCORE") {
            kind = Some(RangeKind::Score);
        } else {
            return Err(syntax());
        }
        j += 1;
    }
    let kind = kind.unwrap_or(RangeKind::Rank);
    let rev = rev.unwrap_or(false);
    if limit != -1 && kind == RangeKind::Rank {
        return Err(Error::new(
            "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX",
        ));
    }
    if with_scores && kind == RangeKind::Lex {
        return Err(Error::new(
            "ERR syntax error, WITHSCORES not supported in combination with BYLEX",
        ));
    }
    let (mut min, mut max) = (a.get(first + 1), a.get(first + 2));
    if rev && kind != RangeKind::Rank {
        std::mem::swap(&mut min, &mut max);
    }
    let by = match kind {
        RangeKind::Rank => By::Rank(int_arg(min)?, int_arg(max)?),
        RangeKind::Score => score_range(min, max)?,
        RangeKind::Lex => lex_range(min, max)?,
    };
    Ok(Request {
        key: a.get(first),
        by,
        rev,
        offset,
        limit,
        with_scores,
    })
}

/// The entries a request selects (empty for a missing key).
fn select(store: &mut Store, r: &Request<'_>) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    let picked = with_zset(store, r.key, |st, c| {
        let span = span(st, c, r.by, r.rev)?;
        collect(st, c, span, r.rev, r.offset, r.limit)
    })?;
    Ok(picked.unwrap_or_default())
}

fn range_command(
    s: &mut Session,
    a: Args<'_>,
    kind: Option<RangeKind>,
    rev: Option<bool>,
) -> Result<(), Error> {
    let r = parse(&a, 1, false, kind, rev)?;
    let picked = select(&mut s.store, &r)?;
    range_reply(s, &picked, r.with_scores);
    Ok(())
}

/// ZRANGE key min max [BYSCORE|BYLEX] [REV] [LIMIT offset count] [WITHSCORES]
pub fn zrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, a, None, None)
}

pub fn zrevrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, a, Some(RangeKind::Rank), Some(true))
}

pub fn zrangebyscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, a, Some(RangeKind::Score), Some(false))
}

pub fn zrevrangebyscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, a, Some(RangeKind::Score), Some(true))
}

pub fn zrangebylex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, a, Some(RangeKind::Lex), Some(false))
}

pub fn zrevrangebylex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    range_command(s, a, Some(RangeKind::Lex), Some(true))
}

/// Replaces whatever `dst` holds with a sorted set of `entries` (none:
/// `dst` is deleted), inside the running unit; its time to live goes.
pub(super) fn store_entries(
    st: &mut Store,
    dst: &[u8],
    entries: &[(f64, Vec<u8>)],
) -> Result<(), Error> {
    persimmon_types::error::check_key(dst)?;
    let ek = st.engine_key(dst).into_owned();
    st.unit_write(&ek, None)?;
    if entries.is_empty() {
        return Ok(());
    }
    let mut c = Coll::new(ek, Kind::ZSet);
    for (score, m) in entries {
        coll::zset_put(st, &mut c, m, *score)?;
    }
    c.save(st)
}

/// ZRANGESTORE dst src min max [BYSCORE|BYLEX] [REV] [LIMIT offset count]
pub fn zrangestore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let r = parse(&a, 2, true, None, None)?;
    let dst = a.get(1);
    let n = s.store.atomic(|st| {
        let picked = select(st, &r)?;
        store_entries(st, dst, &picked)?;
        Ok(picked.len())
    })?;
    s.out.int(n as i64);
    Ok(())
}

/// How many members of the set at `key` fall in `by` (0: key missing).
fn count_in(s: &mut Session, key: &[u8], by: By<'_>) -> Result<(), Error> {
    let n = with_zset(&mut s.store, key, |st, c| {
        let sp = span(st, c, by, false)?;
        Ok(sp.hi - sp.lo)
    })?;
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

/// ZCOUNT key min max: two ranks, O(log n).
pub fn zcount(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let by = score_range(a.get(2), a.get(3))?;
    count_in(s, a.get(1), by)
}

/// ZLEXCOUNT key min max: two ranks, O(log n).
pub fn zlexcount(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let by = lex_range(a.get(2), a.get(3))?;
    count_in(s, a.get(1), by)
}

/// Removes the members in `by` from the set at `key`; replies how many.
fn remove_range(s: &mut Session, key: &[u8], by: By<'_>) -> Result<(), Error> {
    let n = with_zset(&mut s.store, key, |st, c| {
        let sp = span(st, c, by, false)?;
        let gone = collect(st, c, sp, false, 0, -1)?;
        for (_, m) in &gone {
            coll::zset_remove(st, c, m)?;
        }
        Ok(gone.len())
    })?;
    s.out.int(n.unwrap_or(0) as i64);
    Ok(())
}

pub fn zremrangebyrank(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let by = By::Rank(int_arg(a.get(2))?, int_arg(a.get(3))?);
    remove_range(s, a.get(1), by)
}

pub fn zremrangebyscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let by = score_range(a.get(2), a.get(3))?;
    remove_range(s, a.get(1), by)
}

pub fn zremrangebylex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let by = lex_range(a.get(2), a.get(3))?;
    remove_range(s, a.get(1), by)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_parse_like_redis() {
        assert_eq!(score_bound(b"(3").unwrap(), ScoreBound(3.0, true));
        assert_eq!(score_bound(b"3").unwrap(), ScoreBound(3.0, false));
        assert!(score_bound(b"(x").is_err());
        assert_eq!(lex_bound(b"-").unwrap(), LexBound::Min);
        assert_eq!(lex_bound(b"[a").unwrap(), LexBound::In(b"a"));
        assert_eq!(lex_bound(b"(").unwrap(), LexBound::Ex(b""));
        assert!(lex_bound(b"a").is_err());
        assert!(lex_bound(b"").is_err());
    }

    #[test]
    fn score_edges_bracket_a_score() {
        for x in [f64::NEG_INFINITY, -1.5, 0.0, -0.0, 2.0, f64::INFINITY] {
            let k = coll::score_key(if x == 0.0 { 0.0 } else { x }, b"member");
            assert!(score_edge(x, false) < k);
            assert!(score_edge(x, true) > k);
        }
        assert!(score_edge(1.0, true) <= coll::score_key(1.0000000000000002, b""));
    }

    #[test]
    fn rank_spans_sanitize_like_redis() {
        assert_eq!(rank_span(5, 0, -1), Some((0, 4)));
        assert_eq!(rank_span(5, -100, 1), Some((0, 1)));
        assert_eq!(rank_span(5, 3, 1), None);
        assert_eq!(rank_span(5, 5, 9), None);
        assert_eq!(rank_span(0, 0, -1), None);
    }
}
