//! Lists: a collection (`coll`, `Kind::List`) of one positional counted
//! tree whose entry of rank `i` is the element at index `i`. A push or a
//! pop is one `insert_at` / `remove_at` at rank 0 or at the length, a
//! range a `walk` from a rank: O(height) page reads, plus the elements
//! visited. The calls a Rust program makes in-process, and the pieces the
//! server's list commands are built on.
//!
//! Every unit-level call here is one atomic unit of the store (or part of
//! the running one): atomic, crash-atomic, durable on return.
//!
//! Invariants: a list loses its key with its last element, as in Redis (a
//! missing key reads as an empty list); a write keeps the key's time to
//! live; an element longer than [`MAX_ELEMENT`] is refused before
//! anything changes; indexes and ranges follow Redis (negative counts
//! from the tail, a range is clamped to the list).

use crate::coll::collection::{with, with_new, Coll};
use crate::error::{check_key, may_exist, Error};
use crate::index::positions;
use crate::store::Store;
use crate::value::Kind;

/// The longest element a list stores: one engine value less room for the
/// page (or meta record) that holds it alone.
pub const MAX_ELEMENT: usize = persimmon::MAX_VALUE_BYTES - 64;

/// Which end of a list a push or a pop works at.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum End {
    /// Index 0 (LPUSH, LPOP).
    Head,
    /// The last index (RPUSH, RPOP).
    Tail,
}

impl End {
    /// `Head` when `head`, else `Tail`.
    pub fn head_if(head: bool) -> End {
        if head {
            End::Head
        } else {
            End::Tail
        }
    }
}

/// A list whose length and pages disagree.
pub fn damaged() -> Error {
    Error::new("ERR the list stored at this key is damaged (its length and its pages disagree)")
}

/// Refuses an element longer than [`MAX_ELEMENT`].
pub fn check_element(e: &[u8]) -> Result<(), Error> {
    if e.len() > MAX_ELEMENT {
        return Err(Error::new(format!(
            "ERR element is {} bytes; persimmon stores at most {MAX_ELEMENT} bytes per list \
             element (its 64 MiB value limit less a page header)",
            e.len()
        )));
    }
    Ok(())
}

/// Runs `f` on the list at `key` in one unit; `None` when the key is
/// missing (a key too long to exist included).
pub fn with_list<R>(
    st: &mut Store,
    key: &[u8],
    f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    with(st, key, Kind::List, f)
}

/// Inserts `new` one by one at `end` of `c` (at the head each becomes the
/// first); returns the new length.
pub fn push_into(st: &mut Store, c: &mut Coll, new: &[&[u8]], end: End) -> Result<u64, Error> {
    for e in new {
        let rank = if end == End::Head { 0 } else { c.len() };
        c.insert_at(st, rank, e)?;
    }
    Ok(c.len())
}

/// Removes up to `count` elements from `end` of `c`, in the order they
/// leave.
pub fn pop_from(
    st: &mut Store,
    c: &mut Coll,
    end: End,
    count: usize,
) -> Result<Vec<Vec<u8>>, Error> {
    let n = (count as u64).min(c.len()) as usize;
    let mut out = Vec::with_capacity(n);
    for _ in 0..n {
        let rank = if end == End::Head { 0 } else { c.len() - 1 };
        let (_, e) = c.remove_at(st, rank)?.ok_or_else(damaged)?;
        out.push(e);
    }
    Ok(out)
}

/// Pushes `elements` at `end`, creating the list if needed (LPUSH,
/// RPUSH); returns the new length.
pub fn push(st: &mut Store, key: &[u8], end: End, elements: &[&[u8]]) -> Result<u64, Error> {
    check_key(key)?;
    elements.iter().try_for_each(|e| check_element(e))?;
    with_new(st, key, Kind::List, |st, c| push_into(st, c, elements, end))
}

/// [`push`] only onto an existing list (LPUSHX, RPUSHX); 0 when the key
/// is missing.
pub fn push_if_exists(
    st: &mut Store,
    key: &[u8],
    end: End,
    elements: &[&[u8]],
) -> Result<u64, Error> {
    check_key(key)?;
    elements.iter().try_for_each(|e| check_element(e))?;
    Ok(with(st, key, Kind::List, |st, c| push_into(st, c, elements, end))?.unwrap_or(0))
}

/// Pops up to `count` elements from `end`, in the order they leave.
/// `None`: the key is missing; `WRONGTYPE` when it holds another type. A
/// count of 0 pops nothing (and still checks the type).
pub fn pop(
    st: &mut Store,
    key: &[u8],
    end: End,
    count: usize,
) -> Result<Option<Vec<Vec<u8>>>, Error> {
    with_list(st, key, |st, c| pop_from(st, c, end, count))
}

/// Moves one element from `from` of list `src` to `to` of list `dst` and
/// returns it (LMOVE). `None` when `src` is missing (whatever `dst`
/// holds); as in Redis, `WRONGTYPE` for `src`, then for `dst`, before
/// anything moves. `src == dst` rotates the list.
pub fn move_one(
    st: &mut Store,
    src: &[u8],
    dst: &[u8],
    from: End,
    to: End,
) -> Result<Option<Vec<u8>>, Error> {
    if !may_exist(&st.engine_key(src)) {
        return Ok(None);
    }
    st.atomic(|st| {
        let Some(mut source) = Coll::open(st, src, Kind::List)? else {
            return Ok(None);
        };
        let mut target = if src == dst {
            None
        } else {
            Some(Coll::open_or_new(st, dst, Kind::List)?)
        };
        let e = pop_from(st, &mut source, from, 1)?
            .pop()
            .ok_or_else(damaged)?;
        push_into(st, target.as_mut().unwrap_or(&mut source), &[&e], to)?;
        source.save(st)?;
        if let Some(target) = target {
            target.save(st)?;
        }
        Ok(Some(e))
    })
}

/// The elements at Redis range `start..=stop` (negative: from the tail),
/// head first (LRANGE).
pub fn range(st: &mut Store, key: &[u8], start: i64, stop: i64) -> Result<Vec<Vec<u8>>, Error> {
    let found = with_list(st, key, |st, c| {
        let Some((from, to)) = positions(start, stop, c.len()) else {
            return Ok(Vec::new());
        };
        let mut out = Vec::with_capacity((to - from + 1) as usize);
        c.walk(st, 0, from, false, |_, e| {
            out.push(e.to_vec());
            Ok((out.len() as u64) < to - from + 1)
        })?;
        if (out.len() as u64) < to - from + 1 {
            return Err(damaged());
        }
        Ok(out)
    })?;
    Ok(found.unwrap_or_default())
}

/// The number of elements (LLEN; 0 for a missing key).
pub fn len(st: &mut Store, key: &[u8]) -> Result<u64, Error> {
    Ok(with_list(st, key, |_, c| Ok(c.len()))?.unwrap_or(0))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn elements_past_the_limit_are_refused() {
        assert!(check_element(&vec![0u8; MAX_ELEMENT]).is_ok());
        let e = check_element(&vec![0u8; MAX_ELEMENT + 1]).unwrap_err();
        assert!(e.0.starts_with("ERR element is"), "{}", e.0);
    }
}
