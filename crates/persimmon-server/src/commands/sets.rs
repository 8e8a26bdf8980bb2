//! Set commands over a collection (`coll`, `Kind::Set`): tree 0 holds each
//! member as a key with an empty value, in member byte order. Every
//! command runs in one atomic unit of the client's `Store`, so it is
//! atomic and crash-atomic, the multi-key ones (SMOVE, SINTER..., the
//! STORE variants) included. A membership test or change costs O(height)
//! page reads per member; SMEMBERS walks the set once; SINTER walks its
//! smallest set and looks each member up in the others; SUNION and SDIFF
//! walk their sets.
//!
//! Invariants: members are unique; a set loses its key with its last
//! member, as in Redis (a missing key is an empty set, in every command
//! that reads several sets too); SPOP and SRANDMEMBER pick members
//! uniformly at random by rank, SRANDMEMBER with a positive count returns
//! distinct members; a STORE variant replaces its destination whatever it
//! held (and its time to live), or deletes it when the result is empty.
//! Replies list members in byte order (Redis promises no order), except
//! random picks. A reply that passes the output limit closes the
//! connection, as in Redis.

use std::collections::BTreeSet;

use persimmon_resp::Args;
use persimmon_types::coll::{self, Coll, Kind};
use persimmon_types::error::check_key;
use persimmon_types::store::Store;
use persimmon_types::Error;
use persimmon_types::{random, set};

use super::hash_walk::{one_random, picks, scan, write_picks, Picks};
use super::hashes::reply_from_collection;
use super::lists::positive_arg;
use crate::notify;
use crate::session::{int_arg_within, is, keys_after_count, syntax, Session};

pub fn sadd(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let members: Vec<&[u8]> = a.from(2).collect();
    let added = set::add(&mut s.store, a.get(1), &members)?;
    if added > 0 {
        notify::event(s, notify::SET, "sadd", a.get(1));
    }
    s.out.int(added as i64);
    Ok(())
}

pub fn srem(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let members: Vec<&[u8]> = a.from(2).collect();
    let removed = set::remove(&mut s.store, a.get(1), &members)?;
    if removed > 0 {
        notify::event(s, notify::SET, "srem", a.get(1));
        notify::if_emptied(s, a.get(1));
    }
    s.out.int(removed as i64);
    Ok(())
}

pub fn smembers(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let limit = s.shared.settings.output_buffer_limit();
    reply_from_collection(
        s,
        a.get(1),
        Kind::Set,
        |out| out.set(0),
        |st, c, r| {
            r.set(c.len() as usize);
            c.walk(st, 0, 0, false, |m, _| {
                r.bulk(m);
                Ok(r.len() <= limit)
            })
        },
    )
}

pub fn sismember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let found = set::contains(&mut s.store, a.get(1), a.get(2))?;
    s.out.int(found as i64);
    Ok(())
}

pub fn smismember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let found = coll::with(&mut s.store, a.get(1), Kind::Set, |st, c| {
        a.from(2)
            .map(|m| Ok(c.get(st, 0, m)?.is_some()))
            .collect::<Result<Vec<_>, Error>>()
    })?
    .unwrap_or_else(|| vec![false; a.len() - 2]);
    s.out.array(found.len());
    for f in found {
        s.out.int(f as i64);
    }
    Ok(())
}

pub fn scard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = set::len(&mut s.store, a.get(1))?;
    s.out.int(n as i64);
    Ok(())
}

/// Up to `max` members of `c` from rank `from` on.
fn members_from(
    st: &mut Store,
    c: &mut Coll,
    from: u64,
    max: usize,
) -> Result<Vec<Vec<u8>>, Error> {
    let mut out = Vec::new();
    if from < c.len() {
        c.walk(st, 0, from, false, |m, _| {
            out.push(m.to_vec());
            Ok(out.len() < max)
        })?;
    }
    Ok(out)
}

/// Removes `k` members of `c` drawn uniformly at random and returns them;
/// taking them all deletes the key at once.
fn pop(st: &mut Store, key: &[u8], c: &mut Coll, k: u64) -> Result<Vec<Vec<u8>>, Error> {
    if k >= c.len() {
        let all = members_from(st, c, 0, usize::MAX)?;
        // The meta goes; the reclaimer deletes the pages of a big set.
        *c = Coll::new(st.engine_key(key).into_owned(), Kind::Set);
        st.delete(key)?;
        return Ok(all);
    }
    let mut taken = Vec::with_capacity(k as usize);
    for _ in 0..k {
        let (m, _) = c
            .at(st, 0, random::below(c.len()))?
            .ok_or_else(coll::page::damaged)?;
        c.remove(st, 0, &m)?;
        taken.push(m);
    }
    Ok(taken)
}

/// SPOP key [count]: one random member as a bulk string, or with a count a
/// set of up to `count` distinct members (nil, or an empty set with a
/// count, for a missing key).
pub fn spop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(syntax());
    }
    let count = if a.len() == 3 {
        Some(positive_arg(a.get(2))?)
    } else {
        None
    };
    let key = a.get(1);
    let taken = coll::with(&mut s.store, key, Kind::Set, |st, c| {
        pop(st, key, c, count.unwrap_or(1))
    })?;
    // As Redis: the random choice propagates as SREM of what was taken.
    match taken.as_ref().filter(|t| !t.is_empty()) {
        Some(t) => {
            let mut words = vec![b"SREM".to_vec(), key.to_vec()];
            words.extend(t.iter().map(|m| m.to_vec()));
            s.repl.rewrite(s.store.db, words);
        }
        None => s.repl.nothing(),
    }
    match (count, taken) {
        (None, Some(t)) => s.out.bulk(&t[0]),
        (None, None) => s.out.null(),
        (Some(_), t) => {
            let t = t.unwrap_or_default();
            s.out.set(t.len());
            for m in &t {
                s.out.bulk(m);
            }
        }
    }
    s.output_over_limit();
    Ok(())
}

/// SRANDMEMBER key [count]: one random member, or with a count up to
/// `count` distinct members (negative: exactly `-count` members, repeats
/// allowed).
pub fn srandmember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(syntax());
    }
    if a.len() == 2 {
        return one_random(s, a.get(1), Kind::Set);
    }
    let count = int_arg_within(a.get(2), -i64::MAX, i64::MAX)?;
    let limit = s.shared.settings.output_buffer_limit();
    reply_from_collection(
        s,
        a.get(1),
        Kind::Set,
        |out| out.array(0),
        |st, c, r| {
            let p: Picks = picks(c.len(), count);
            write_picks(st, c, r, p, 1, limit, |r, m, _| r.bulk(m))
        },
    )
}

/// SSCAN key cursor [MATCH pattern] [COUNT count] (see `hash_walk::scan`).
pub fn sscan(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    scan(s, a, Kind::Set)
}

/// SMOVE source destination member: moves the member in one unit; 0 when
/// the source lacks it. Redis's order: a missing source answers 0 before
/// the destination's type is checked.
pub fn smove(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (src, dst, member) = (a.get(1), a.get(2), a.get(3));
    let moved = s.store.atomic(|st| {
        let Some(mut from) = Coll::open(st, src, Kind::Set)? else {
            return Ok(false);
        };
        let mut to = Coll::open_or_new(st, dst, Kind::Set)?;
        if src == dst {
            return Ok(from.get(st, 0, member)?.is_some());
        }
        if from.remove(st, 0, member)?.is_none() {
            return Ok(false);
        }
        from.save(st)?;
        to.add(st, 0, member)?;
        to.save(st)?;
        Ok(true)
    })?;
    s.out.int(moved as i64);
    Ok(())
}

/// The sets at `keys`, `None` for a missing key; WRONGTYPE if any key
/// holds another type (Redis checks every key, even after a missing one).
fn open_all(st: &mut Store, keys: &[&[u8]]) -> Result<Vec<Option<Coll>>, Error> {
    keys.iter().map(|k| Coll::open(st, k, Kind::Set)).collect()
}

/// How members are batched while walking a set that other sets are probed
/// against.
const BATCH: usize = 256;

/// The members of every set (a missing one is empty), in byte order;
/// at most `limit` of them (0: no limit).
fn intersection(
    st: &mut Store,
    sets: Vec<Option<Coll>>,
    limit: u64,
) -> Result<Vec<Vec<u8>>, Error> {
    let Some(mut sets) = sets.into_iter().collect::<Option<Vec<Coll>>>() else {
        return Ok(Vec::new());
    };
    sets.sort_by_key(Coll::len);
    let (first, others) = sets.split_first_mut().expect("at least one key");
    filtered(st, first, others, true, limit)
}

/// The members of `first` that are in every one of `others` (`inside`) or
/// in none of them, in byte order; at most `limit` (0: no limit).
fn filtered(
    st: &mut Store,
    first: &mut Coll,
    others: &mut [Coll],
    inside: bool,
    limit: u64,
) -> Result<Vec<Vec<u8>>, Error> {
    let mut out = Vec::new();
    let mut rank = 0;
    loop {
        let batch = members_from(st, first, rank, BATCH)?;
        if batch.is_empty() {
            return Ok(out);
        }
        rank += batch.len() as u64;
        for m in batch {
            let mut keep = true;
            for o in others.iter_mut() {
                if o.get(st, 0, &m)?.is_some() != inside {
                    keep = false;
                    break;
                }
            }
            if keep {
                out.push(m);
                if out.len() as u64 == limit {
                    return Ok(out);
                }
            }
        }
    }
}

fn union(st: &mut Store, sets: Vec<Option<Coll>>) -> Result<Vec<Vec<u8>>, Error> {
    let mut all = BTreeSet::new();
    for mut c in sets.into_iter().flatten() {
        c.walk(st, 0, 0, false, |m, _| {
            if !all.contains(m) {
                all.insert(m.to_vec());
            }
            Ok(true)
        })?;
    }
    Ok(all.into_iter().collect())
}

/// The members of the first set in none of the others.
fn difference(st: &mut Store, sets: Vec<Option<Coll>>) -> Result<Vec<Vec<u8>>, Error> {
    let mut sets = sets.into_iter();
    let Some(Some(mut first)) = sets.next() else {
        return Ok(Vec::new());
    };
    let mut others: Vec<Coll> = sets.flatten().collect();
    filtered(st, &mut first, &mut others, false, 0)
}

/// SINTER, SUNION, SDIFF.
#[derive(Clone, Copy)]
enum Op {
    Inter,
    Union,
    Diff,
}

/// The result of `op` over the sets at `keys`, inside the running unit.
fn combine(st: &mut Store, op: Op, keys: &[&[u8]]) -> Result<Vec<Vec<u8>>, Error> {
    let sets = open_all(st, keys)?;
    match op {
        Op::Inter => intersection(st, sets, 0),
        Op::Union => union(st, sets),
        Op::Diff => difference(st, sets),
    }
}

/// SINTER/SUNION/SDIFF key [key ...]: the resulting set.
fn read_combined(s: &mut Session, a: Args<'_>, op: Op) -> Result<(), Error> {
    let keys: Vec<&[u8]> = a.from(1).collect();
    let members = s.store.atomic(|st| combine(st, op, &keys))?;
    s.out.set(members.len());
    for m in &members {
        s.out.bulk(m);
    }
    s.output_over_limit();
    Ok(())
}

/// The STORE variants: the result replaces `destination` (of any type, its
/// time to live gone), or deletes it when empty; replies its size.
fn store_combined(s: &mut Session, a: Args<'_>, op: Op) -> Result<(), Error> {
    let dst = a.get(1);
    let keys: Vec<&[u8]> = a.from(2).collect();
    let n = s.store.atomic(|st| {
        let members = combine(st, op, &keys)?;
        store_set(st, dst, &members)?;
        Ok(members.len())
    })?;
    s.out.int(n as i64);
    Ok(())
}

/// Replaces whatever `key` holds with a set of `members` (nothing when
/// there are none), inside the running unit.
fn store_set(st: &mut Store, key: &[u8], members: &[Vec<u8>]) -> Result<(), Error> {
    st.delete(key)?;
    if members.is_empty() {
        return Ok(());
    }
    let ek = st.engine_key(key).into_owned();
    check_key(&ek)?;
    let mut c = Coll::new(ek, Kind::Set);
    for m in members {
        c.insert(st, 0, m, b"")?;
    }
    c.save(st)
}

pub fn sinter(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    read_combined(s, a, Op::Inter)
}

pub fn sunion(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    read_combined(s, a, Op::Union)
}

pub fn sdiff(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    read_combined(s, a, Op::Diff)
}

pub fn sinterstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    store_combined(s, a, Op::Inter)
}

pub fn sunionstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    store_combined(s, a, Op::Union)
}

pub fn sdiffstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    store_combined(s, a, Op::Diff)
}

/// Where SINTERCARD's keys are (its row's key finder): after numkeys.
pub fn sintercard_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    keys_after_count(words, 1)
}

/// SINTERCARD numkeys key [key ...] [LIMIT limit]: the intersection's size,
/// counting stopped at `limit` (0: no limit). Redis's checks and texts.
pub fn sintercard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let numkeys = int_arg_within(a.get(1), 1, i64::MAX)
        .map_err(|_| Error::new("ERR numkeys should be greater than 0"))?;
    if numkeys as u64 > (a.len() - 2) as u64 {
        return Err(Error::new(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let mut limit = 0u64;
    let mut i = 2 + numkeys as usize;
    while i < a.len() {
        if is(a.get(i), "LIMIT") && i + 1 < a.len() {
            i += 1;
            limit = int_arg_within(a.get(i), 0, i64::MAX)
                .map_err(|_| Error::new("ERR LIMIT can't be negative"))? as u64;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    let keys: Vec<&[u8]> = (2..2 + numkeys as usize).map(|i| a.get(i)).collect();
    let n = s.store.atomic(|st| {
        let sets = open_all(st, &keys)?;
        Ok(intersection(st, sets, limit)?.len())
    })?;
    s.out.int(n as i64);
    Ok(())
}
