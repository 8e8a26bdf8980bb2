//! Sorted-set commands on single members: ZADD (NX XX GT LT CH INCR),
//! ZINCRBY, ZREM, ZCARD, ZSCORE, ZMSCORE, ZRANK, ZREVRANK, ZPOPMIN and
//! ZPOPMAX, plus what the other sorted-set rooms share (score arguments,
//! score text, range replies). The sorted-set rules and operations are
//! `persimmon_types::zset`'s.
//! Ranges are in `zset_range.rs`, the multi-key and random commands in
//! `zset_ops.rs`.
//!
//! Every command runs in one atomic unit of the store: O(log n) page reads
//! per member (see `persimmon_types::zset` for the layout).
//!
//! Invariants: a score argument is never NaN (`score_arg` refuses it, and
//! `zset::add_with` refuses an INCR that would produce one); scores are
//! written as Redis 7.0 writes them (`score_text`).

use persimmon_resp::Args;
use persimmon_types::zset::{self, score_of, with_zset, AddOptions};
use persimmon_types::Error;

use crate::notify;
use crate::session::{is, syntax, Session};

pub(super) fn not_float() -> Error {
    Error::new("ERR value is not a valid float")
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

/// ZADD's options: how members are added (`zset::AddOptions`) and CH,
/// which only changes the reply (GEOADD builds them too).
#[derive(Default, Clone, Copy)]
pub(super) struct ZaddOptions {
    pub add: AddOptions,
    pub ch: bool,
}

impl ZaddOptions {
    /// Parses the options from `a[2..]`; returns them and the index of the
    /// first score.
    fn parse(a: &Args<'_>) -> Result<(ZaddOptions, usize), Error> {
        let mut z = ZaddOptions::default();
        let o = &mut z.add;
        let mut i = 2;
        while i < a.len() {
            let opt = a.get(i);
            match () {
                _ if is(opt, "NX") => o.nx = true,
                _ if is(opt, "XX") => o.xx = true,
                _ if is(opt, "GT") => o.gt = true,
                _ if is(opt, "LT") => o.lt = true,
                _ if is(opt, "CH") => z.ch = true,
                _ if is(opt, "INCR") => o.incr = true,
                _ => break,
            }
            i += 1;
        }
        let o = z.add;
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
        Ok((z, i))
    }
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
        add: AddOptions {
            incr: true,
            ..AddOptions::default()
        },
        ch: false,
    };
    let change = (score_arg(a.get(2))?, a.get(3));
    zadd_apply(s, a.get(1), &[change], o)
}

/// Applies ZADD's `changes` in one unit and replies (ZADD, ZINCRBY,
/// GEOADD).
pub(super) fn zadd_apply(
    s: &mut Session,
    key: &[u8],
    changes: &[(f64, &[u8])],
    o: ZaddOptions,
) -> Result<(), Error> {
    let out = zset::add_with(&mut s.store, key, changes, o.add)?;
    if out.added + out.changed > 0 {
        let event = if o.add.incr { "zincr" } else { "zadd" };
        notify::event(s, notify::ZSET, event, key);
    }
    if o.add.incr {
        match out.score {
            Some(x) => s.out.double(x, &score_text(x)),
            None => s.out.null(),
        }
    } else {
        s.out
            .int((out.added + if o.ch { out.changed } else { 0 }) as i64);
    }
    Ok(())
}

/// ZREM key member [member ...]
pub fn zrem(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let members: Vec<&[u8]> = a.from(2).collect();
    let removed = zset::remove(&mut s.store, a.get(1), &members)?;
    if removed > 0 {
        notify::event(s, notify::ZSET, "zrem", a.get(1));
        notify::if_emptied(s, a.get(1));
    }
    s.out.int(removed as i64);
    Ok(())
}

pub fn zcard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = zset::len(&mut s.store, a.get(1))?;
    s.out.int(n as i64);
    Ok(())
}

fn score_or_null(s: &mut Session, score: Option<f64>) {
    match score {
        Some(x) => s.out.double(x, &score_text(x)),
        None => s.out.null(),
    }
}

pub fn zscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let score = zset::score(&mut s.store, a.get(1), a.get(2))?;
    score_or_null(s, score);
    Ok(())
}

/// The scores of `a[2..]` in the sorted set at `a[1]`, read in one unit
/// (`None`: no such member, or no such key); WRONGTYPE for another type.
pub(super) fn member_scores(s: &mut Session, a: &Args<'_>) -> Result<Vec<Option<f64>>, Error> {
    Ok(with_zset(&mut s.store, a.get(1), |st, c| {
        a.from(2)
            .map(|m| score_of(st, c, m))
            .collect::<Result<Vec<_>, _>>()
    })?
    .unwrap_or_else(|| vec![None; a.len() - 2]))
}

/// ZMSCORE key member [member ...]: a score or nil for each.
pub fn zmscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let scores = member_scores(s, &a)?;
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

/// ZRANK / ZREVRANK: the member's rank (O(log n)), or nil.
fn rank_reply(s: &mut Session, a: Args<'_>, rev: bool) -> Result<(), Error> {
    match zset::rank(&mut s.store, a.get(1), a.get(2), rev)? {
        Some(r) => s.out.int(r as i64),
        None => s.out.null(),
    }
    Ok(())
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
