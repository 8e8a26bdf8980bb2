//! Sorted-set commands, the subset YCSB's Java Redis binding uses (it
//! indexes every record in the sorted set `_indices`: ZADD on insert, ZREM
//! on delete, ZRANGEBYSCORE for scans) plus ZCARD, ZSCORE and ZRANGE by
//! index. A sorted set is one stored value kept in (score, member) order
//! (see `value.rs`), rewritten whole by each write inside one
//! `Db::update`: atomic, and O(size) per write.
//!
//! Invariants: no NaN score is ever stored (ZADD refuses a NaN argument and
//! an INCR that would produce one), so the stored order is total; a sorted
//! set loses its key with its last member, as in Redis.

use std::collections::HashMap;

use persimmon::Update;

use crate::protocol::Args;
use crate::session::{check_key, int_arg, is, syntax, wrongtype, Error, Session};
use crate::store::Store;
use crate::value::{
    zset_encode, zset_encoded_len, zset_entries, zset_order, Entries, Stored, MAX_STRING_BYTES,
};

fn damaged() -> Error {
    Error::new("ERR the sorted set stored at this key is damaged (it does not decode)")
}

fn not_float() -> Error {
    Error::new("ERR value is not a valid float")
}

/// A score argument: a float or ±inf; never NaN, no blanks.
fn score_arg(arg: &[u8]) -> Result<f64, Error> {
    let text = std::str::from_utf8(arg).map_err(|_| not_float())?;
    if text.is_empty() || text.trim() != text {
        return Err(not_float());
    }
    match text.parse::<f64>() {
        Ok(x) if !x.is_nan() => Ok(x),
        _ => Err(not_float()),
    }
}

/// A score as Redis writes it: shortest round-trip form, `inf`, `-inf`.
fn score_text(x: f64) -> String {
    format!("{x}")
}

/// The sorted set at a key as entries; empty for a missing key.
fn open(old: Option<Stored<'_>>) -> Result<Entries<'_>, Error> {
    match old {
        None => Ok(Vec::new()),
        Some(Stored::ZSet(body)) => zset_entries(body).map_err(|_| damaged()),
        Some(_) => Err(wrongtype()),
    }
}

/// What to store for `entries` (already sorted).
fn store(entries: &[(f64, &[u8])]) -> Result<Update, Error> {
    if entries.is_empty() {
        return Ok(Update::Delete);
    }
    let len = zset_encoded_len(entries);
    if len - 1 > MAX_STRING_BYTES {
        return Err(Error::new(format!(
            "ERR the sorted set would take {len} bytes; persimmon stores at most {} bytes per \
             value (64 MiB)",
            MAX_STRING_BYTES + 1
        )));
    }
    Ok(Update::Put(zset_encode(entries)))
}

/// ZADD's options.
#[derive(Default)]
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
/// set (INCR's reply; `None`: nothing done).
type ZaddOutcome = (i64, i64, Option<f64>);

/// Applies ZADD's `changes` to `entries`; returns what it did and, when
/// anything changed, the new entries in order.
fn zadd_merge<'a>(
    entries: &[(f64, &'a [u8])],
    changes: &[(f64, &'a [u8])],
    o: &ZaddOptions,
) -> Result<(ZaddOutcome, Option<Entries<'a>>), Error> {
    let mut scores: HashMap<&[u8], f64> = entries.iter().map(|&(sc, m)| (m, sc)).collect();
    let (mut added, mut changed) = (0i64, 0i64);
    let mut incr_result = None;
    for &(score, member) in changes {
        let current = scores.get(member).copied();
        if (o.nx && current.is_some()) || (o.xx && current.is_none()) {
            continue;
        }
        let new = match (o.incr, current) {
            (true, Some(c)) => c + score,
            _ => score,
        };
        if new.is_nan() {
            return Err(Error::new("ERR resulting score is not a number (NaN)"));
        }
        if let Some(c) = current {
            if (o.gt && new <= c) || (o.lt && new >= c) {
                continue;
            }
            if new != c {
                changed += 1;
            }
        } else {
            added += 1;
        }
        scores.insert(member, new);
        incr_result = Some(new);
    }
    if added == 0 && changed == 0 {
        return Ok(((added, changed, incr_result), None));
    }
    let mut sorted: Entries<'a> = scores.into_iter().map(|(m, sc)| (sc, m)).collect();
    sorted.sort_by(zset_order);
    Ok(((added, changed, incr_result), Some(sorted)))
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
    check_key(key)?;
    let (added, changed, incr_result) =
        s.store
            .try_update(key, |old| match zadd_merge(&open(old)?, &changes, &o)? {
                (outcome, None) => Ok((Update::Keep, outcome)),
                (outcome, Some(sorted)) => Ok((store(&sorted)?, outcome)),
            })?;
    if o.incr {
        match incr_result {
            Some(x) => s.out.double(x, &score_text(x)),
            None => s.out.null(),
        }
    } else {
        s.out.int(if o.ch { added + changed } else { added });
    }
    Ok(())
}

pub fn zrem(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let removed = s.store.try_update(key, |old| {
        let mut entries = open(old)?;
        let before = entries.len();
        let gone: std::collections::HashSet<&[u8]> = a.from(2).collect();
        entries.retain(|(_, m)| !gone.contains(m));
        let removed = (before - entries.len()) as i64;
        if removed == 0 {
            return Ok((Update::Keep, 0));
        }
        Ok((store(&entries)?, removed))
    })?;
    s.out.int(removed);
    Ok(())
}

/// Runs `f` over the entries of the sorted set at `key` (empty if missing).
fn with_entries<R>(
    store: &mut Store,
    key: &[u8],
    f: impl FnOnce(&[(f64, &[u8])]) -> R,
) -> Result<R, Error> {
    // Called once: on the stored entries, or on none for a missing key.
    let mut f = Some(f);
    let found = store
        .get(key, |v| match v {
            Stored::ZSet(body) => match zset_entries(body) {
                Ok(e) => Ok(f.take().map(|f| f(&e))),
                Err(_) => Err(damaged()),
            },
            _ => Err(wrongtype()),
        })?
        .transpose()?
        .flatten();
    match (found, f) {
        (Some(r), _) => Ok(r),
        (None, Some(f)) => Ok(f(&[])),
        (None, None) => unreachable!("the closure ran, so it returned a result"),
    }
}

pub fn zcard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_entries(&mut s.store, a.get(1), |e| e.len())?;
    s.out.int(n as i64);
    Ok(())
}

pub fn zscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let member = a.get(2);
    let score = with_entries(&mut s.store, a.get(1), |e| {
        e.iter().find(|(_, m)| *m == member).map(|(sc, _)| *sc)
    })?;
    match score {
        Some(x) => s.out.double(x, &score_text(x)),
        None => s.out.null(),
    }
    Ok(())
}

/// Writes entries as a range reply, with scores when asked (the
/// connection closes if it passes the output limit).
fn range_reply(s: &mut Session, entries: &[(f64, Vec<u8>)], with_scores: bool) {
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

/// A ZRANGEBYSCORE bound: `1.5`, `(1.5` (exclusive), `-inf`, `+inf`.
fn bound(arg: &[u8]) -> Result<(f64, bool), Error> {
    let err = || Error::new("ERR min or max is not a float");
    match arg.strip_prefix(b"(") {
        Some(rest) => Ok((score_arg(rest).map_err(|_| err())?, true)),
        None => Ok((score_arg(arg).map_err(|_| err())?, false)),
    }
}

/// ZRANGEBYSCORE key min max [WITHSCORES] [LIMIT offset count]
pub fn zrangebyscore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (min, min_open) = bound(a.get(2))?;
    let (max, max_open) = bound(a.get(3))?;
    let mut with_scores = false;
    let mut limit: Option<(i64, i64)> = None;
    let mut i = 4;
    while i < a.len() {
        if is(a.get(i), "WITHSCORES") {
            with_scores = true;
            i += 1;
        } else if is(a.get(i), "LIMIT") && i + 2 < a.len() {
            limit = Some((int_arg(a.get(i + 1))?, int_arg(a.get(i + 2))?));
            i += 3;
        } else {
            return Err(syntax());
        }
    }
    let picked: Vec<(f64, Vec<u8>)> = with_entries(&mut s.store, a.get(1), |e| {
        let inside = e.iter().filter(|(sc, _)| {
            (if min_open { *sc > min } else { *sc >= min })
                && (if max_open { *sc < max } else { *sc <= max })
        });
        let (offset, count) = limit.unwrap_or((0, -1));
        if offset < 0 {
            return Vec::new();
        }
        let count = if count < 0 {
            usize::MAX
        } else {
            count as usize
        };
        inside
            .skip(offset as usize)
            .take(count)
            .map(|(sc, m)| (*sc, m.to_vec()))
            .collect()
    })?;
    range_reply(s, &picked, with_scores);
    Ok(())
}

/// ZRANGE key start stop [WITHSCORES] (by index; BYSCORE, BYLEX, REV and
/// LIMIT are not supported).
pub fn zrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let start = int_arg(a.get(2))?;
    let stop = int_arg(a.get(3))?;
    let with_scores = match a.len() {
        4 => false,
        5 if is(a.get(4), "WITHSCORES") => true,
        _ => {
            return Err(Error::new(
                "ERR persimmon supports ZRANGE key start stop [WITHSCORES] only (use \
                 ZRANGEBYSCORE for score ranges)",
            ))
        }
    };
    let picked: Vec<(f64, Vec<u8>)> = with_entries(&mut s.store, a.get(1), |e| {
        let len = e.len() as i64;
        let from = if start < 0 {
            (len + start).max(0)
        } else {
            start
        };
        let to = if stop < 0 {
            len + stop
        } else {
            stop.min(len - 1)
        };
        if from > to || from >= len {
            return Vec::new();
        }
        e[from as usize..=to as usize]
            .iter()
            .map(|(sc, m)| (*sc, m.to_vec()))
            .collect()
    })?;
    range_reply(s, &picked, with_scores);
    Ok(())
}

// Seam for blocking.rs: the pop the blocking commands (and ZPOPMIN,
// ZPOPMAX, ZMPOP) are built on, and the score text of their replies, over
// whatever the sorted-set storage is. Keep these shapes when the storage
// changes; `commands/blocking.rs` uses nothing else of this file.

/// Pops up to `count` members with the lowest (or, `max`, the highest)
/// scores from the sorted set at `key`, in pop order, deleting the key with
/// its last member; `None` when the key is missing, WRONGTYPE when it holds
/// another type. `count` 0 pops nothing and writes nothing (`Some` of none
/// for a sorted set: a type probe). One atomic update of the key.
#[allow(clippy::type_complexity)] // the seam's shape, spelled out on purpose
pub(crate) fn zset_pop(
    store: &mut Store,
    key: &[u8],
    max: bool,
    count: usize,
) -> Result<Option<Vec<(Vec<u8>, f64)>>, Error> {
    store.try_update(key, |old| {
        if old.is_none() {
            return Ok((Update::Keep, None));
        }
        let mut entries = open(old)?;
        if count == 0 {
            return Ok((Update::Keep, Some(Vec::new())));
        }
        let n = count.min(entries.len());
        let taken: Vec<(Vec<u8>, f64)> = if max {
            let len = entries.len();
            entries
                .drain(len - n..)
                .rev()
                .map(|(sc, m)| (m.to_vec(), sc))
                .collect()
        } else {
            entries.drain(..n).map(|(sc, m)| (m.to_vec(), sc)).collect()
        };
        Ok((self::store(&entries)?, Some(taken)))
    })
}

/// A score as the replies write it (the same text as ZSCORE's).
pub(crate) fn score_reply_text(x: f64) -> String {
    score_text(x)
}

#[cfg(test)]
mod tests {
    use super::{bound, score_arg, score_text};

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
        assert_eq!(bound(b"(3").unwrap(), (3.0, true));
        assert_eq!(bound(b"3").unwrap(), (3.0, false));
        assert!(bound(b"(x").is_err());
    }
}
