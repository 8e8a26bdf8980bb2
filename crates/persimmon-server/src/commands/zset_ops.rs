//! Sorted-set commands over several keys or the whole set: ZUNION, ZINTER,
//! ZDIFF and their STORE forms (WEIGHTS, AGGREGATE SUM|MIN|MAX,
//! WITHSCORES; a set counts as a sorted set whose scores are all 1),
//! ZINTERCARD, ZRANDMEMBER and ZSCAN.
//!
//! Each command reads (and, for STORE, writes) its keys in one atomic
//! unit. ZINTER and ZDIFF walk one input and look members up in the
//! others (O(k log n)); ZUNION walks every input. ZRANDMEMBER picks ranks
//! of tree 1 (O(log n) each). ZSCAN returns the whole set in one call with
//! cursor 0, as Redis does for a small set.
//!
//! Invariants: errors in Redis's order (numkeys, the key types, then the
//! options); a weighted score or a SUM that is NaN (`inf - inf`) counts as
//! 0, as in Redis, so no NaN is stored; every collection opened is saved in
//! the unit (a legacy value converted on open stays consistent).

use std::collections::HashMap;

use persimmon_resp::Args;
use persimmon_types::coll::{self, decode_score, split_score_key, Coll, Kind};
use persimmon_types::error::wrongtype;
use persimmon_types::random;
use persimmon_types::store::Store;
use persimmon_types::zset::with_zset;
use persimmon_types::Error;

use super::zset_range::store_entries;
use super::zsets::range_reply;
use crate::session::{int_arg, int_arg_within, is, keys_after_count, syntax, Session};

#[derive(Clone, Copy, PartialEq)]
enum SetOp {
    Union,
    Inter,
    Diff,
}

#[derive(Clone, Copy)]
enum Aggregate {
    Sum,
    Min,
    Max,
}

impl Aggregate {
    /// Redis's `zunionInterAggregate`: a NaN sum is 0.
    fn apply(self, acc: f64, x: f64) -> f64 {
        match self {
            Aggregate::Sum => {
                let s = acc + x;
                if s.is_nan() {
                    0.0
                } else {
                    s
                }
            }
            Aggregate::Min => acc.min(x),
            Aggregate::Max => acc.max(x),
        }
    }
}

/// The options after the keys.
#[derive(Clone)]
struct Options {
    weights: Vec<f64>,
    aggregate: Aggregate,
    with_scores: bool,
}

/// An input: a sorted set or a set (scores 1), opened in the unit.
struct Input {
    coll: Coll,
    weight: f64,
}

/// The sorted set or set at `key` (`None`: missing; WRONGTYPE otherwise).
fn open_input(st: &mut Store, key: &[u8]) -> Result<Option<Coll>, Error> {
    if !persimmon_types::error::may_exist(&st.engine_key(key)) {
        return Ok(None);
    }
    match Coll::open(st, key, Kind::ZSet) {
        Err(e) if e == wrongtype() => Coll::open(st, key, Kind::Set),
        r => r,
    }
}

/// The weighted score of `member` in `input` (NaN counts as 0).
fn weighted(input: &Input, score: f64) -> f64 {
    let x = input.weight * score;
    if x.is_nan() {
        0.0
    } else {
        x
    }
}

impl Input {
    fn score(&mut self, st: &mut Store, member: &[u8]) -> Result<Option<f64>, Error> {
        let v = self.coll.get(st, 0, member)?;
        Ok(v.map(|v| self.raw_score(&v)))
    }

    fn raw_score(&self, v: &[u8]) -> f64 {
        match self.coll.kind {
            Kind::ZSet => decode_score(v),
            _ => 1.0,
        }
    }

    /// Every member and its (unweighted) score, in member order.
    fn members(&mut self, st: &mut Store) -> Result<Vec<(Vec<u8>, f64)>, Error> {
        let zset = self.coll.kind == Kind::ZSet;
        let mut out = Vec::with_capacity(self.coll.len() as usize);
        self.coll.walk(st, 0, 0, false, |k, v| {
            out.push((k.to_vec(), if zset { decode_score(v) } else { 1.0 }));
            Ok(true)
        })?;
        Ok(out)
    }
}

/// Parses the options after the keys (from `j`), as Redis does.
fn parse_options(
    a: &Args<'_>,
    mut j: usize,
    keys: usize,
    op: SetOp,
    store: bool,
) -> Result<Options, Error> {
    let mut o = Options {
        weights: vec![1.0; keys],
        aggregate: Aggregate::Sum,
        with_scores: false,
    };
    while j < a.len() {
        let left = a.len() - j;
        let arg = a.get(j);
        if op != SetOp::Diff && left > keys && is(arg, "WEIGHTS") {
            for i in 0..keys {
                let w = a.get(j + 1 + i);
                o.weights[i] = super::zsets::score_arg(w)
                    .map_err(|_| Error::new("ERR weight value is not a float"))?;
            }
            j += 1 + keys;
        } else if op != SetOp::Diff && left >= 2 && is(arg, "AGGREGATE") {
            let v = a.get(j + 1);
            o.aggregate = match () {
                _ if is(v, "SUM") => Aggregate::Sum,
                _ if is(v, "MIN") => Aggregate::Min,
                _ if is(v, "MAX") => Aggregate::Max,
                _ => return Err(syntax()),
            };
            j += 2;
        } else if !store && is(arg, "WITHSCORES") {
            o.with_scores = true;
            j += 1;
        } else {
            return Err(syntax());
        }
    }
    Ok(o)
}

/// The number of input keys at `a[at]`, checked as Redis does.
fn numkeys(a: &Args<'_>, at: usize, name: &str) -> Result<usize, Error> {
    let n = int_arg(a.get(at))?;
    if n < 1 {
        return Err(Error::new(format!(
            "ERR at least 1 input key is needed for '{name}' command"
        )));
    }
    if n as u64 > (a.len() - at - 1) as u64 {
        return Err(syntax());
    }
    Ok(n as usize)
}

/// Opens the inputs `keys`; `None` stands for a missing key.
fn open_inputs(st: &mut Store, keys: &[&[u8]]) -> Result<Vec<Option<Coll>>, Error> {
    keys.iter().map(|k| open_input(st, k)).collect()
}

/// The result of `op` over `inputs`, sorted by score then member.
fn compute(
    st: &mut Store,
    inputs: &mut [Input],
    op: SetOp,
    agg: Aggregate,
) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    let mut out: Vec<(f64, Vec<u8>)> = match op {
        SetOp::Union => union(st, inputs, agg)?,
        SetOp::Inter => inter(st, inputs, agg, usize::MAX)?,
        SetOp::Diff => diff(st, inputs)?,
    };
    for e in &mut out {
        if e.0 == 0.0 {
            e.0 = 0.0;
        }
    }
    out.sort_by(|x, y| x.0.total_cmp(&y.0).then_with(|| x.1.cmp(&y.1)));
    Ok(out)
}

fn union(
    st: &mut Store,
    inputs: &mut [Input],
    agg: Aggregate,
) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    inputs.sort_by_key(|i| i.coll.len());
    let mut acc: HashMap<Vec<u8>, f64> = HashMap::new();
    for input in inputs.iter_mut() {
        for (m, score) in input.members(st)? {
            let x = weighted(input, score);
            acc.entry(m)
                .and_modify(|a| *a = agg.apply(*a, x))
                .or_insert(x);
        }
    }
    Ok(acc.into_iter().map(|(m, sc)| (sc, m)).collect())
}

/// The intersection, at most `limit` members (ZINTERCARD's LIMIT).
fn inter(
    st: &mut Store,
    inputs: &mut [Input],
    agg: Aggregate,
    limit: usize,
) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    inputs.sort_by_key(|i| i.coll.len());
    let (first, rest) = inputs.split_first_mut().expect("at least one input");
    let mut out = Vec::new();
    'members: for (m, score) in first.members(st)? {
        let mut acc = weighted(first, score);
        for other in rest.iter_mut() {
            match other.score(st, &m)? {
                Some(x) => acc = agg.apply(acc, weighted(other, x)),
                None => continue 'members,
            }
        }
        out.push((acc, m));
        if out.len() >= limit {
            break;
        }
    }
    Ok(out)
}

fn diff(st: &mut Store, inputs: &mut [Input]) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    let (first, rest) = inputs.split_first_mut().expect("at least one input");
    let mut out = Vec::new();
    'members: for (m, score) in first.members(st)? {
        for other in rest.iter_mut() {
            if other.score(st, &m)?.is_some() {
                continue 'members;
            }
        }
        out.push((score, m));
    }
    Ok(out)
}

/// Runs `op` over the keys in the running unit: opens them (WRONGTYPE
/// first), then checks the options, computes, and saves what it opened.
fn run_op(
    st: &mut Store,
    keys: &[&[u8]],
    options: &Result<Options, Error>,
    op: SetOp,
) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    let opened = open_inputs(st, keys)?;
    let o = options.clone()?;
    let empty = match op {
        SetOp::Inter => opened.iter().any(Option::is_none),
        SetOp::Diff => opened[0].is_none(),
        SetOp::Union => opened.iter().all(Option::is_none),
    };
    let mut inputs: Vec<Input> = opened
        .into_iter()
        .zip(&o.weights)
        .filter_map(|(c, &weight)| c.map(|coll| Input { coll, weight }))
        .collect();
    let out = if empty {
        Vec::new()
    } else {
        compute(st, &mut inputs, op, o.aggregate)?
    };
    for i in inputs {
        i.coll.save(st)?;
    }
    Ok(out)
}

/// ZUNION/ZINTER/ZDIFF numkeys key ... and their STORE forms.
fn set_op(s: &mut Session, a: Args<'_>, op: SetOp, name: &str, store: bool) -> Result<(), Error> {
    let at = if store { 2 } else { 1 };
    let n = numkeys(&a, at, name)?;
    let keys: Vec<&[u8]> = (0..n).map(|i| a.get(at + 1 + i)).collect();
    let options = parse_options(&a, at + 1 + n, n, op, store);
    let dst = a.get(1);
    let result = s.store.atomic(|st| {
        let out = run_op(st, &keys, &options, op)?;
        if store {
            store_entries(st, dst, &out)?;
        }
        Ok(out)
    })?;
    if store {
        s.out.int(result.len() as i64);
    } else {
        let with_scores = options.map(|o| o.with_scores).unwrap_or(false);
        range_reply(s, &result, with_scores);
    }
    Ok(())
}

pub fn zunion(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_op(s, a, SetOp::Union, "zunion", false)
}

pub fn zinter(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_op(s, a, SetOp::Inter, "zinter", false)
}

pub fn zdiff(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_op(s, a, SetOp::Diff, "zdiff", false)
}

pub fn zunionstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_op(s, a, SetOp::Union, "zunionstore", true)
}

pub fn zinterstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_op(s, a, SetOp::Inter, "zinterstore", true)
}

pub fn zdiffstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_op(s, a, SetOp::Diff, "zdiffstore", true)
}

/// Where the keys of ZUNION, ZINTER, ZDIFF and ZINTERCARD are (their rows'
/// key finder): after numkeys.
pub fn numkeys_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    keys_after_count(words, 1)
}

/// Where the keys of ZUNIONSTORE, ZINTERSTORE and ZDIFFSTORE are (their
/// rows' key finder): the destination, then the keys after numkeys.
pub fn store_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    keys_after_count(words, 2).map(|keys| std::iter::once(1).chain(keys).collect())
}

/// ZINTERCARD numkeys key [key ...] [LIMIT limit]
pub fn zintercard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    // As Redis's zunionInterDiffGenericCommand: an integer, then at least 1.
    let n = int_arg(a.get(1))?;
    if n < 1 {
        return Err(Error::new(
            "ERR at least 1 input key is needed for 'zintercard' command",
        ));
    }
    if n as u64 > (a.len() - 2) as u64 {
        return Err(Error::new(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let n = n as usize;
    let mut limit = 0i64;
    let mut j = 2 + n;
    while j < a.len() {
        if is(a.get(j), "LIMIT") && j + 1 < a.len() {
            limit = int_arg(a.get(j + 1))
                .ok()
                .filter(|&l| l >= 0)
                .ok_or_else(|| Error::new("ERR LIMIT can't be negative"))?;
            j += 2;
        } else {
            return Err(syntax());
        }
    }
    let limit = if limit == 0 {
        usize::MAX
    } else {
        limit as usize
    };
    let keys: Vec<&[u8]> = (0..n).map(|i| a.get(2 + i)).collect();
    let count = s.store.atomic(|st| {
        let opened = open_inputs(st, &keys)?;
        let missing = opened.iter().any(Option::is_none);
        let mut inputs: Vec<Input> = opened
            .into_iter()
            .flatten()
            .map(|coll| Input { coll, weight: 1.0 })
            .collect();
        let n = if missing {
            0
        } else {
            inter(st, &mut inputs, Aggregate::Sum, limit)?.len()
        };
        for i in inputs {
            i.coll.save(st)?;
        }
        Ok(n)
    })?;
    s.out.int(count as i64);
    Ok(())
}

/// The entry at `rank` of tree 1 as `(score, member)`.
fn entry_at(st: &mut Store, c: &mut Coll, rank: u64) -> Result<(f64, Vec<u8>), Error> {
    let (k, _) = c.at(st, 1, rank)?.ok_or_else(coll::page::damaged)?;
    let (score, m) = split_score_key(&k);
    Ok((score, m.to_vec()))
}

/// `picks` distinct ranks below `n` (a partial Fisher-Yates shuffle over
/// a sparse map of swapped places).
fn distinct_ranks(n: u64, picks: u64) -> Vec<u64> {
    let mut swapped: HashMap<u64, u64> = HashMap::new();
    (0..picks)
        .map(|i| {
            let j = i + random::below(n - i);
            let at_j = *swapped.get(&j).unwrap_or(&j);
            let at_i = *swapped.get(&i).unwrap_or(&i);
            swapped.insert(j, at_i);
            at_j
        })
        .collect()
}

/// ZRANDMEMBER key [count [WITHSCORES]]
pub fn zrandmember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() == 2 {
        let picked = with_zset(&mut s.store, a.get(1), |st, c| {
            let rank = random::below(c.len());
            entry_at(st, c, rank)
        })?;
        match picked {
            Some((_, m)) => s.out.bulk(&m),
            None => s.out.null(),
        }
        return Ok(());
    }
    let count = int_arg_within(a.get(2), -i64::MAX, i64::MAX)?;
    let with_scores = match a.len() {
        3 => false,
        4 if is(a.get(3), "WITHSCORES") => true,
        _ => return Err(syntax()),
    };
    if with_scores && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(Error::new("ERR value is out of range"));
    }
    let limit = s.shared.settings.output_buffer_limit();
    let picked = with_zset(&mut s.store, a.get(1), |st, c| {
        random_entries(st, c, count, limit)
    })?;
    range_reply(s, &picked.unwrap_or_default(), with_scores);
    Ok(())
}

/// ZRANDMEMBER's picks: `-count` draws with repetition, or up to `count`
/// distinct members (all of them, in order, when `count` covers the set).
/// Repeated draws stop once they pass `limit` bytes (the reply would close
/// the connection anyway).
fn random_entries(
    st: &mut Store,
    c: &mut Coll,
    count: i64,
    limit: usize,
) -> Result<Vec<(f64, Vec<u8>)>, Error> {
    let n = c.len();
    let mut out = Vec::new();
    if count < 0 {
        let mut bytes = 0;
        for _ in 0..count.unsigned_abs() {
            let e = entry_at(st, c, random::below(n))?;
            bytes += e.1.len() + 32;
            out.push(e);
            if bytes > limit {
                break;
            }
        }
    } else if count as u64 >= n {
        out = super::zset_range::collect(st, c, full_span(n), false, 0, -1)?;
    } else {
        for rank in distinct_ranks(n, count as u64) {
            out.push(entry_at(st, c, rank)?);
        }
    }
    Ok(out)
}

fn full_span(n: u64) -> super::zset_range::Span {
    super::zset_range::Span {
        tree: 1,
        lo: 0,
        hi: n,
    }
}

/// ZSCAN key cursor [MATCH pattern] [COUNT count]: members and scores,
/// the cursor a rank in member order (see `hash_walk::scan`).
pub fn zscan(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    super::hash_walk::scan(s, a, Kind::ZSet)
}
