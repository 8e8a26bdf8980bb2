//! A collection read or written whole: for the commands that are O(size)
//! in Redis too (DUMP, RESTORE, COPY, SORT, OBJECT ENCODING).
//!
//! Invariant: `write` always creates a new tree id (a copy never shares
//! pages with its source).

use super::{split_score_key, Coll, Kind};
use crate::error::Error;
use crate::store::Store;
use crate::value::{hash_fields, items, zset_entries, Stored};

/// A collection's elements, in its order (a hash and a set by field or
/// member bytes, a sorted set by score then member, a list head first).
#[derive(Clone, Debug, PartialEq)]
pub enum Whole {
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    ZSet(Vec<(f64, Vec<u8>)>),
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
}

impl Whole {
    pub fn kind(&self) -> Kind {
        match self {
            Whole::Hash(_) => Kind::Hash,
            Whole::ZSet(_) => Kind::ZSet,
            Whole::List(_) => Kind::List,
            Whole::Set(_) => Kind::Set,
        }
    }
}

/// The elements of collection `c`.
pub fn read(st: &mut Store, c: &mut Coll) -> Result<Whole, Error> {
    let tree = if c.kind == Kind::ZSet { 1 } else { 0 };
    let mut entries = Vec::with_capacity(c.len() as usize);
    c.walk(st, tree, 0, false, |k, v| {
        entries.push((k.to_vec(), v.to_vec()));
        Ok(true)
    })?;
    Ok(match c.kind {
        Kind::Hash => Whole::Hash(entries),
        Kind::Set => Whole::Set(entries.into_iter().map(|(k, _)| k).collect()),
        Kind::List => Whole::List(entries.into_iter().map(|(_, v)| v).collect()),
        Kind::ZSet => Whole::ZSet(
            entries
                .iter()
                .map(|(k, _)| {
                    let (score, m) = split_score_key(k);
                    (score, m.to_vec())
                })
                .collect(),
        ),
    })
}

/// A value in the whole-value encoding of earlier versions (tags 0x02 to
/// 0x05), in [`Whole`]'s order; `None` for any other value.
pub fn from_legacy(v: Stored<'_>) -> Result<Option<Whole>, Error> {
    fn bad<E>(_: E) -> Error {
        Error::new("ERR the value stored at this key is damaged (it does not decode)")
    }
    let owned = |items: Vec<&[u8]>| items.into_iter().map(<[u8]>::to_vec).collect::<Vec<_>>();
    Ok(Some(match v {
        Stored::Hash(body) => {
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = hash_fields(body)
                .map_err(bad)?
                .into_iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect();
            pairs.sort();
            Whole::Hash(pairs)
        }
        Stored::Set(body) => {
            let mut members = owned(items(body).map_err(bad)?);
            members.sort();
            Whole::Set(members)
        }
        Stored::List(body) => Whole::List(owned(items(body).map_err(bad)?)),
        Stored::ZSet(body) => Whole::ZSet(
            zset_entries(body)
                .map_err(bad)?
                .into_iter()
                .map(|(s, m)| (s, m.to_vec()))
                .collect(),
        ),
        Stored::String(_) | Stored::Coll(..) => return Ok(None),
    }))
}

/// Builds a new collection holding `whole` at engine key `ek` and saves
/// it (the caller has deleted or checked what was there). An empty `whole`
/// writes nothing.
pub fn write(st: &mut Store, ek: Vec<u8>, whole: &Whole) -> Result<(), Error> {
    let mut c = Coll::new(ek, whole.kind());
    fill(st, &mut c, whole)?;
    c.save(st)
}

/// Adds `whole`'s elements to `c`, a new collection of its kind (RESTORE,
/// SORT STORE, the conversion of an old whole value).
pub fn fill(st: &mut Store, c: &mut Coll, whole: &Whole) -> Result<(), Error> {
    debug_assert_eq!(c.kind, whole.kind());
    match whole {
        Whole::Hash(pairs) => {
            for (f, v) in pairs {
                c.insert(st, 0, f, v)?;
            }
        }
        Whole::Set(members) => {
            for m in members {
                c.insert(st, 0, m, b"")?;
            }
        }
        Whole::List(items) => {
            for (i, e) in items.iter().enumerate() {
                c.insert_at(st, i as u64, e)?;
            }
        }
        Whole::ZSet(entries) => {
            for (score, m) in entries {
                super::zset_put(st, c, m, *score)?;
            }
        }
    }
    Ok(())
}
