//! Sorted sets: a collection (`coll`, `Kind::ZSet`) of two trees — tree 0
//! member → score, tree 1 `score_key(score, member)` → empty, changed only
//! through `zset_put` / `zset_remove`, which keep the two in step. A
//! member's score or rank costs O(log n) page reads (a rank is a counted
//! tree's rank in tree 1). The calls a Rust program makes in-process, and
//! the ones the server's sorted-set commands are built on.
//!
//! Every call is one atomic unit of the store (or part of the running
//! one): atomic, crash-atomic, durable on return.
//!
//! Invariants: no NaN score is ever stored (an addition that would give
//! one is refused), so the order is total: by score, then member bytes; a
//! sorted set loses its key with its last member, as in Redis; a member is
//! at most [`MAX_MEMBER_BYTES`] (it sits in both trees, and the two roots
//! of a small set share the meta record).

use crate::coll::collection::{with, with_new, zset_put, zset_remove, Coll};
use crate::coll::score::{decode_score, score_key, split_score_key};
use crate::error::{check_key, Error};
use crate::index::positions;
use crate::store::Store;
use crate::value::{Kind, MAX_STRING_BYTES};

/// The longest member a sorted set takes: the meta record holds both
/// roots of a small set, so a member must fit twice in one engine value.
pub const MAX_MEMBER_BYTES: usize = MAX_STRING_BYTES / 2 - 1024;

/// Refuses a member longer than [`MAX_MEMBER_BYTES`].
pub fn check_member(m: &[u8]) -> Result<(), Error> {
    if m.len() > MAX_MEMBER_BYTES {
        return Err(Error::new(format!(
            "ERR sorted set member is {} bytes; persimmon stores members of at most {MAX_MEMBER_BYTES} bytes",
            m.len()
        )));
    }
    Ok(())
}

/// An addition whose result is not a number.
pub fn nan_error() -> Error {
    Error::new("ERR resulting score is not a number (NaN)")
}

/// Runs `f` on the sorted set at `key` in one unit; `None`: key missing
/// (as is a key too long to exist).
pub fn with_zset<R>(
    st: &mut Store,
    key: &[u8],
    f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    with(st, key, Kind::ZSet, f)
}

/// The score of `member` in `c`.
pub fn score_of(st: &mut Store, c: &mut Coll, member: &[u8]) -> Result<Option<f64>, Error> {
    Ok(c.get(st, 0, member)?.map(|v| decode_score(&v)))
}

/// Members and their scores, in the order a call gives them.
pub type Scored = Vec<(Vec<u8>, f64)>;

/// How [`add_with`] treats each member (ZADD's NX, XX, GT, LT, INCR).
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct AddOptions {
    /// Only add new members.
    pub nx: bool,
    /// Only update existing members.
    pub xx: bool,
    /// Only update a score to a greater one (new members are added).
    pub gt: bool,
    /// Only update a score to a smaller one (new members are added).
    pub lt: bool,
    /// The given score is an increment.
    pub incr: bool,
}

/// What [`add_with`] did: members added, scores changed, and the last score
/// it set or found (INCR's reply; `None`: nothing done).
#[derive(Default, Clone, Copy, Debug, PartialEq)]
pub struct AddOutcome {
    pub added: u64,
    pub changed: u64,
    pub score: Option<f64>,
}

/// Applies one `(score, member)` to `c` under `o`, as Redis's `zsetAdd`.
fn add_one(
    st: &mut Store,
    c: &mut Coll,
    (score, member): (f64, &[u8]),
    o: AddOptions,
    out: &mut AddOutcome,
) -> Result<(), Error> {
    if o == AddOptions::default() {
        // A plain ZADD needs no score before it writes: the member's old
        // score comes back from the write (one path down the tree, not two).
        match zset_put(st, c, member, score)? {
            None => out.added += 1,
            Some(old) if old != score => out.changed += 1,
            Some(_) => {}
        }
        out.score = Some(score);
        return Ok(());
    }
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
        zset_put(st, c, member, new)?;
    }
    out.score = Some(new);
    Ok(())
}

/// Adds or updates each `(score, member)` under `o`, creating the sorted
/// set if needed (ZADD with options; the caller refuses option mixes Redis
/// refuses). A NaN score is refused before anything changes.
pub fn add_with(
    st: &mut Store,
    key: &[u8],
    changes: &[(f64, &[u8])],
    o: AddOptions,
) -> Result<AddOutcome, Error> {
    check_key(key)?;
    for (score, m) in changes {
        check_member(m)?;
        if score.is_nan() {
            return Err(nan_error());
        }
    }
    with_new(st, key, Kind::ZSet, |st, c| {
        let mut out = AddOutcome::default();
        for &change in changes {
            add_one(st, c, change, o, &mut out)?;
        }
        Ok(out)
    })
}

/// Adds each `(score, member)`, or sets its score; returns how many
/// members are new (ZADD).
pub fn add(st: &mut Store, key: &[u8], pairs: &[(f64, &[u8])]) -> Result<u64, Error> {
    Ok(add_with(st, key, pairs, AddOptions::default())?.added)
}

/// Removes `members`; returns how many were there (ZREM).
pub fn remove(st: &mut Store, key: &[u8], members: &[&[u8]]) -> Result<u64, Error> {
    let removed = with_zset(st, key, |st, c| {
        let mut removed = 0;
        for m in members {
            removed += zset_remove(st, c, m)?.is_some() as u64;
        }
        Ok(removed)
    })?;
    Ok(removed.unwrap_or(0))
}

/// The score of `member` (ZSCORE).
pub fn score(st: &mut Store, key: &[u8], member: &[u8]) -> Result<Option<f64>, Error> {
    Ok(with_zset(st, key, |st, c| score_of(st, c, member))?.flatten())
}

/// The rank of `member`, lowest score first (highest first with `rev`):
/// ZRANK, ZREVRANK.
pub fn rank(st: &mut Store, key: &[u8], member: &[u8], rev: bool) -> Result<Option<u64>, Error> {
    let rank = with_zset(st, key, |st, c| {
        let Some(score) = score_of(st, c, member)? else {
            return Ok(None);
        };
        let (rank, _) = c.rank(st, 1, &score_key(score, member))?;
        Ok(Some(if rev { c.len() - 1 - rank } else { rank }))
    })?;
    Ok(rank.flatten())
}

/// The members and scores at ranks `start..=stop` (negative: from the
/// highest), lowest score first (ZRANGE by index).
pub fn range(st: &mut Store, key: &[u8], start: i64, stop: i64) -> Result<Scored, Error> {
    let found = with_zset(st, key, |st, c| {
        let Some((from, to)) = positions(start, stop, c.len()) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity((to - from + 1) as usize);
        c.walk(st, 1, from, false, |k, _| {
            let (score, member) = split_score_key(k);
            out.push((member.to_vec(), score));
            Ok((out.len() as u64) < to - from + 1)
        })?;
        Ok(out)
    })?;
    Ok(found.unwrap_or_default())
}

/// The number of members (ZCARD; 0 for a missing key).
pub fn len(st: &mut Store, key: &[u8]) -> Result<u64, Error> {
    Ok(with_zset(st, key, |_, c| Ok(c.len()))?.unwrap_or(0))
}

/// Removes and returns up to `count` members with the lowest scores (the
/// highest with `max`), in pop order (ZPOPMIN, ZPOPMAX). `None`: the key
/// is missing; `WRONGTYPE` for a key of another type.
pub fn pop(st: &mut Store, key: &[u8], max: bool, count: usize) -> Result<Option<Scored>, Error> {
    with_zset(st, key, |st, c| {
        let mut popped = Vec::new();
        while popped.len() < count && !c.is_empty() {
            let rank = if max { c.len() - 1 } else { 0 };
            let Some((k, _)) = c.at(st, 1, rank)? else {
                break;
            };
            let (score, member) = split_score_key(&k);
            zset_remove(st, c, member)?;
            popped.push((member.to_vec(), score));
        }
        Ok(popped)
    })
}
