//! Set commands over a set stored whole (see `value.rs`, tag `0x05`):
//! reads decode it in place, writes rebuild it inside one update of the key
//! through the client's `Store`, so each command is atomic. O(size of the
//! set) per command; issue 17 replaces the storage with one record per
//! member.
//!
//! Invariants: members are unique (a stored set that repeats one is
//! reported as damaged); a set loses its key with its last member, as in
//! Redis (a missing key is an empty set); SPOP and SRANDMEMBER pick members
//! uniformly at random, SRANDMEMBER with a positive count returns distinct
//! members; a reply is sent only whole (a negative SRANDMEMBER count too
//! large for the output limit closes the connection, as in Redis).

use persimmon::Update;

use super::lists::positive_arg;
use crate::protocol::Args;
use crate::random;
use crate::session::{check_key, int_arg_within, syntax, wrongtype, Error, Session};
use crate::store::Store;
use crate::value::{SetBuilder, Stored, MAX_STRING_BYTES};

fn damaged() -> Error {
    Error::new("ERR the set stored at this key is damaged (it does not decode)")
}

/// The set in `old`; empty for a missing key.
fn open<'a>(old: Option<Stored<'a>>) -> Result<SetBuilder<'a>, Error> {
    match old {
        None => Ok(SetBuilder::new()),
        Some(Stored::Set(body)) => SetBuilder::open(body).map_err(|_| damaged()),
        Some(_) => Err(wrongtype()),
    }
}

/// What to store for `set`: the set, or a delete when it is empty; the
/// error when it would pass the value limit.
fn store(set: &SetBuilder<'_>) -> Result<Update, Error> {
    let len = set.encoded_len();
    if len - 1 > MAX_STRING_BYTES {
        return Err(Error::new(format!(
            "ERR the set would take {len} bytes; persimmon stores at most {} bytes per value \
             (64 MiB)",
            MAX_STRING_BYTES + 1
        )));
    }
    Ok(if set.is_empty() {
        Update::Delete
    } else {
        Update::Put(set.encode())
    })
}

/// Runs `f` over the set at `key` in place; `None` when the key is missing.
fn with_set<R>(
    store: &mut Store,
    key: &[u8],
    f: impl FnOnce(&SetBuilder<'_>) -> R,
) -> Result<Option<R>, Error> {
    store
        .get(key, |v| match v {
            Stored::Set(body) => SetBuilder::open(body)
                .map(|set| f(&set))
                .map_err(|_| damaged()),
            _ => Err(wrongtype()),
        })?
        .transpose()
}

pub fn sadd(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    check_key(key)?;
    let added = s.store.try_update(key, |old| {
        let mut set = open(old)?;
        let added = a.from(2).filter(|m| set.add(m)).count() as i64;
        if added == 0 {
            return Ok((Update::Keep, 0));
        }
        Ok((store(&set)?, added))
    })?;
    s.out.int(added);
    Ok(())
}

pub fn srem(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let removed = s.store.try_update(a.get(1), |old| {
        if old.is_none() {
            return Ok((Update::Keep, 0));
        }
        let mut set = open(old)?;
        let removed = a.from(2).filter(|m| set.remove(m)).count() as i64;
        if removed == 0 {
            return Ok((Update::Keep, 0));
        }
        Ok((store(&set)?, removed))
    })?;
    s.out.int(removed);
    Ok(())
}

pub fn smembers(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let out = &mut s.out;
    let found = with_set(&mut s.store, a.get(1), |set| {
        out.set(set.len());
        for m in set.members() {
            out.bulk(m);
        }
    })?;
    if found.is_none() {
        s.out.set(0);
    }
    s.output_over_limit();
    Ok(())
}

pub fn sismember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let member = a.get(2);
    let found = with_set(&mut s.store, a.get(1), |set| set.contains(member))?;
    s.out.int(found.unwrap_or(false) as i64);
    Ok(())
}

pub fn smismember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let wanted: Vec<&[u8]> = a.from(2).collect();
    let found = with_set(&mut s.store, a.get(1), |set| {
        wanted.iter().map(|m| set.contains(m)).collect::<Vec<_>>()
    })?
    .unwrap_or_else(|| vec![false; wanted.len()]);
    s.out.array(found.len());
    for f in found {
        s.out.int(f as i64);
    }
    Ok(())
}

pub fn scard(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_set(&mut s.store, a.get(1), |set| set.len())?.unwrap_or(0);
    s.out.int(n as i64);
    Ok(())
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
    let out = &mut s.out;
    s.store.try_update(a.get(1), |old| {
        if old.is_none() {
            match count {
                None => out.null(),
                Some(_) => out.set(0),
            }
            return Ok((Update::Keep, ()));
        }
        let mut set = open(old)?;
        if count == Some(0) {
            out.set(0);
            return Ok((Update::Keep, ()));
        }
        let n = count.map_or(1, |c| c.min(set.len() as u64) as usize);
        let taken: Vec<&[u8]> = (0..n)
            .map(|_| set.remove_at(random::index_below(set.len())))
            .collect();
        match count {
            None => out.bulk(taken[0]),
            Some(_) => {
                out.set(n);
                for m in taken {
                    out.bulk(m);
                }
            }
        }
        Ok((store(&set)?, ()))
    })
}

/// SRANDMEMBER key [count]: one random member, or with a count up to
/// `count` distinct members (negative: exactly `-count` members, repeats
/// allowed).
pub fn srandmember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(syntax());
    }
    if a.len() == 2 {
        let out = &mut s.out;
        let found = with_set(&mut s.store, a.get(1), |set| {
            out.bulk(set.members()[random::index_below(set.len())])
        })?;
        if found.is_none() {
            s.out.null();
        }
        return Ok(());
    }
    let count = int_arg_within(a.get(2), -i64::MAX, i64::MAX)?;
    let limit = s.shared.settings.output_buffer_limit();
    let out = &mut s.out;
    let found = with_set(&mut s.store, a.get(1), |set| {
        let members = set.members();
        if count < 0 {
            let n = count.unsigned_abs();
            out.array(n as usize);
            for _ in 0..n {
                out.bulk(members[random::index_below(members.len())]);
                if out.len() > limit {
                    break;
                }
            }
            return;
        }
        // The first `n` places of a partial Fisher-Yates shuffle.
        let n = (count as u64).min(members.len() as u64) as usize;
        let mut picked = members.to_vec();
        for i in 0..n {
            let j = i + random::index_below(picked.len() - i);
            picked.swap(i, j);
        }
        out.array(n);
        for m in &picked[..n] {
            out.bulk(m);
        }
    })?;
    if found.is_none() {
        s.out.array(0);
    }
    s.output_over_limit();
    Ok(())
}
