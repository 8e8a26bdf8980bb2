//! A collection's elements all at once, as plain data ([`Whole`]): what
//! the commands that are O(size) in Redis too (DUMP, RESTORE, COPY, SORT,
//! OBJECT ENCODING) read and write, and what a value in the whole-value
//! encoding of earlier versions decodes to. (Reading and writing a
//! collection whole: `collection::read_whole`, `write_whole`.)
//!
//! Invariant: decoding never trusts the lengths in a stored body: one that
//! does not parse exactly is reported as damaged.

use crate::error::Error;
use crate::value::{hash_fields, items, zset_entries, Kind, Stored};

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
