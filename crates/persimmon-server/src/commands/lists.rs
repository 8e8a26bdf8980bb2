//! List commands over a list stored whole (see `value.rs`, tag `0x04`):
//! reads decode it in place, writes rebuild it inside one update of the key
//! through the client's `Store`, so each command is atomic. O(length of the
//! list) per command, pushes and pops included; issue 17 replaces the
//! storage with one record per element.
//!
//! Invariants: a list loses its key with its last element, as in Redis (a
//! missing key is an empty list); a push keeps the key's time to live; a
//! change that would pass the value limit is refused whole and the stored
//! list stays as it was; arguments are checked in Redis's order (LPOP's
//! count before the key, LINDEX's and LSET's index after it).

use persimmon::Update;

use crate::protocol::{parse_i64, Args};
use crate::session::{arity, check_key, int_arg, wrongtype, Error, Session};
use crate::store::Store;
use crate::value::{items, items_encoded_len, list_encode, Stored, MAX_STRING_BYTES};

fn damaged() -> Error {
    Error::new("ERR the list stored at this key is damaged (it does not decode)")
}

/// A count that must not be negative (Redis gives one text for a negative
/// count and for one that is not an integer).
pub(super) fn positive_arg(arg: &[u8]) -> Result<u64, Error> {
    parse_i64(arg)
        .and_then(|n| u64::try_from(n).ok())
        .ok_or_else(|| Error::new("ERR value is out of range, must be positive"))
}

/// The elements of the list in `old`, head first; none for a missing key.
fn open<'a>(old: Option<Stored<'a>>) -> Result<Vec<&'a [u8]>, Error> {
    match old {
        None => Ok(Vec::new()),
        Some(Stored::List(body)) => items(body).map_err(|_| damaged()),
        Some(_) => Err(wrongtype()),
    }
}

/// What to store for `elements`: the list, or a delete when it is empty;
/// the error when it would pass the value limit.
pub(super) fn store(elements: &[&[u8]]) -> Result<Update, Error> {
    let len = items_encoded_len(elements);
    if len - 1 > MAX_STRING_BYTES {
        return Err(Error::new(format!(
            "ERR the list would take {len} bytes; persimmon stores at most {} bytes per value \
             (64 MiB)",
            MAX_STRING_BYTES + 1
        )));
    }
    Ok(if elements.is_empty() {
        Update::Delete
    } else {
        Update::Put(list_encode(elements))
    })
}

/// Runs `f` over the elements of the list at `key` in place; `None` when
/// the key is missing.
fn with_elements<R>(
    store: &mut Store,
    key: &[u8],
    f: impl FnOnce(&[&[u8]]) -> R,
) -> Result<Option<R>, Error> {
    store
        .get(key, |v| match v {
            Stored::List(body) => items(body).map(|e| f(&e)).map_err(|_| damaged()),
            _ => Err(wrongtype()),
        })?
        .transpose()
}

/// The position of Redis index `index` (negative: from the tail) in a list
/// of `len`, if it is inside.
fn at(index: i64, len: usize) -> Option<usize> {
    let i = if index < 0 { len as i64 + index } else { index };
    usize::try_from(i).ok().filter(|&i| i < len)
}

/// The inclusive positions of Redis range `start..=end` in a list of
/// `len`; `None` when the range is empty.
fn range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 { len + end } else { end.min(len - 1) };
    if start > end || start >= len {
        return None;
    }
    Some((start as usize, end as usize))
}

/// LPUSH/RPUSH/LPUSHX/RPUSHX: the new length (0 when `existing_only` and
/// the key is missing).
fn push(s: &mut Session, a: &Args<'_>, head: bool, existing_only: bool) -> Result<(), Error> {
    let key = a.get(1);
    check_key(key)?;
    let new: Vec<&[u8]> = a.from(2).collect();
    let n = s.store.try_update(key, |old| {
        if old.is_none() && existing_only {
            return Ok((Update::Keep, 0));
        }
        let old = open(old)?;
        let list: Vec<&[u8]> = if head {
            new.iter().rev().chain(&old).copied().collect()
        } else {
            old.iter().chain(&new).copied().collect()
        };
        Ok((store(&list)?, list.len() as i64))
    })?;
    s.out.int(n);
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
/// key).
fn pop(s: &mut Session, a: &Args<'_>, head: bool, name: &str) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(arity(name));
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
                Some(_) => out.null_array(),
            }
            return Ok((Update::Keep, ()));
        }
        let mut list = open(old)?;
        if count == Some(0) {
            out.array(0);
            return Ok((Update::Keep, ()));
        }
        let n = count.map_or(1, |c| c.min(list.len() as u64) as usize);
        let taken: Vec<&[u8]> = if head {
            list.drain(..n).collect()
        } else {
            list.drain(list.len() - n..).rev().collect()
        };
        match count {
            None => out.bulk(taken[0]),
            Some(_) => {
                out.array(n);
                for e in taken {
                    out.bulk(e);
                }
            }
        }
        Ok((store(&list)?, ()))
    })
}

pub fn lpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    pop(s, &a, true, "lpop")
}

pub fn rpop(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    pop(s, &a, false, "rpop")
}

pub fn llen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_elements(&mut s.store, a.get(1), |l| l.len())?.unwrap_or(0);
    s.out.int(n as i64);
    Ok(())
}

pub fn lrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (start, end) = (int_arg(a.get(2))?, int_arg(a.get(3))?);
    let out = &mut s.out;
    let found = with_elements(&mut s.store, a.get(1), |list| {
        match range(start, end, list.len()) {
            Some((from, to)) => {
                out.array(to - from + 1);
                for e in &list[from..=to] {
                    out.bulk(e);
                }
            }
            None => out.array(0),
        }
    })?;
    if found.is_none() {
        s.out.array(0);
    }
    s.output_over_limit();
    Ok(())
}

pub fn lindex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let out = &mut s.out;
    let found = with_elements(&mut s.store, a.get(1), |list| {
        let index = int_arg(a.get(2))?;
        match at(index, list.len()) {
            Some(i) => out.bulk(list[i]),
            None => out.null(),
        }
        Ok(())
    })?;
    match found {
        Some(r) => r,
        None => {
            s.out.null();
            Ok(())
        }
    }
}

pub fn lset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let value = a.get(3);
    s.store.try_update(a.get(1), |old| {
        if old.is_none() {
            return Err(Error::new("ERR no such key"));
        }
        let mut list = open(old)?;
        let index = int_arg(a.get(2))?;
        let i = at(index, list.len()).ok_or_else(|| Error::new("ERR index out of range"))?;
        list[i] = value;
        Ok((store(&list)?, ()))
    })?;
    s.out.ok();
    Ok(())
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
    let removed = s.store.try_update(a.get(1), |old| {
        if old.is_none() {
            return Ok((Update::Keep, 0));
        }
        let mut list = open(old)?;
        if count < 0 {
            list.reverse();
        }
        let mut removed = 0;
        list.retain(|e| {
            let drop = *e == target && removed < limit;
            removed += drop as u64;
            !drop
        });
        if removed == 0 {
            return Ok((Update::Keep, 0));
        }
        if count < 0 {
            list.reverse();
        }
        Ok((store(&list)?, removed as i64))
    })?;
    s.out.int(removed);
    Ok(())
}

pub fn ltrim(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (start, end) = (int_arg(a.get(2))?, int_arg(a.get(3))?);
    s.store.try_update(a.get(1), |old| {
        if old.is_none() {
            return Ok((Update::Keep, ()));
        }
        let list = open(old)?;
        let kept = match range(start, end, list.len()) {
            Some((from, to)) => &list[from..=to],
            None => &[],
        };
        if kept.len() == list.len() {
            return Ok((Update::Keep, ()));
        }
        Ok((store(kept)?, ()))
    })?;
    s.out.ok();
    Ok(())
}

// Seam for blocking.rs: the pops the blocking commands (and LMOVE, LMPOP,
// RPOPLPUSH) are built on, over whatever the list storage is. Keep these
// shapes when the storage changes; `commands/blocking.rs` uses nothing
// else of this file.

/// Pops up to `count` elements from the head (or the tail) of the list at
/// `key`, in pop order, deleting the key with its last element; `None` when
/// the key is missing, WRONGTYPE when it holds another type. `count` 0 pops
/// nothing and writes nothing (`Some` of none for a list: a type probe).
/// One atomic update of the key.
pub(crate) fn list_pop(
    store: &mut Store,
    key: &[u8],
    head: bool,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, Error> {
    store.try_update(key, |old| {
        if old.is_none() {
            return Ok((Update::Keep, None));
        }
        let mut list = open(old)?;
        if count == 0 {
            return Ok((Update::Keep, Some(Vec::new())));
        }
        let n = count.min(list.len());
        let taken: Vec<Vec<u8>> = if head {
            list.drain(..n).map(<[u8]>::to_vec).collect()
        } else {
            list.drain(list.len() - n..)
                .rev()
                .map(<[u8]>::to_vec)
                .collect()
        };
        Ok((self::store(&list)?, Some(taken)))
    })
}

/// LMOVE: pops one element from the head (or tail) of `src` and pushes it
/// onto the head (or tail) of `dst` (which may be `src`), as one atomic
/// unit. As Redis: `None` when `src` is missing; WRONGTYPE when `src`, or
/// then `dst`, holds another type — `dst` is checked before anything is
/// popped, so nothing changes then.
pub(crate) fn list_move(
    store: &mut Store,
    src: &[u8],
    dst: &[u8],
    from_head: bool,
    to_head: bool,
) -> Result<Option<Vec<u8>>, Error> {
    store.atomic(|st| {
        if with_elements(st, src, |_| ())?.is_none() {
            return Ok(None);
        }
        with_elements(st, dst, |_| ())?;
        let Some(value) = list_pop(st, src, from_head, 1)?.and_then(|mut v| v.pop()) else {
            return Ok(None);
        };
        st.try_update(dst, |old| {
            let old = open(old)?;
            let one: &[u8] = &value;
            let list: Vec<&[u8]> = if to_head {
                std::iter::once(one).chain(old.iter().copied()).collect()
            } else {
                old.iter().copied().chain(std::iter::once(one)).collect()
            };
            Ok((self::store(&list)?, ()))
        })?;
        Ok(Some(value))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_ranges_follow_redis() {
        assert_eq!(at(0, 3), Some(0));
        assert_eq!(at(-1, 3), Some(2));
        assert_eq!(at(-3, 3), Some(0));
        assert_eq!(at(-4, 3), None);
        assert_eq!(at(3, 3), None);
        assert_eq!(at(i64::MIN, 3), None);
        assert_eq!(at(0, 0), None);
        assert_eq!(range(0, -1, 3), Some((0, 2)));
        assert_eq!(range(-100, 100, 3), Some((0, 2)));
        assert_eq!(range(1, 0, 3), None);
        assert_eq!(range(3, 5, 3), None);
        assert_eq!(range(0, -4, 3), None);
        assert_eq!(range(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(range(0, -1, 0), None);
    }

    #[test]
    fn store_deletes_an_empty_list_and_refuses_one_past_the_limit() {
        assert_eq!(store(&[]).unwrap(), Update::Delete);
        let big = vec![0u8; MAX_STRING_BYTES - 8];
        assert!(matches!(store(&[&big]), Ok(Update::Put(_))));
        let e = store(&[&big, b"x"]).unwrap_err();
        assert!(e.0.contains("persimmon stores at most"), "{}", e.0);
    }
}
