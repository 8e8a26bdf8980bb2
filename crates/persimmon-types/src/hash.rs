//! Hashes: a collection (`coll`, `Kind::Hash`) whose tree 0 maps each field
//! to its value, in field byte order. The calls a Rust program makes
//! in-process, and the ones the server's hash commands are built on.
//!
//! Every call is one atomic unit of the store (or part of the running
//! one): atomic, crash-atomic, durable on return (see the crate header).
//!
//! Invariants: a hash loses its key with its last field, as in Redis (a
//! missing key reads as an empty hash); a field and value that would not
//! fit one engine value are refused before anything is written
//! ([`check_element`](crate::coll::collection::check_element)); a key of
//! another type is `WRONGTYPE`, never overwritten.

use crate::coll::collection::{check_element, with, with_new};
use crate::error::{check_key, Error};
use crate::store::Store;
use crate::value::Kind;

/// Fields and their values, in field order.
pub type Pairs = Vec<(Vec<u8>, Vec<u8>)>;

/// Sets each `(field, value)` pair, creating the hash if needed; returns
/// how many fields are new (HSET).
pub fn set(st: &mut Store, key: &[u8], pairs: &[(&[u8], &[u8])]) -> Result<u64, Error> {
    check_key(key)?;
    for (field, value) in pairs {
        check_element(field, value)?;
    }
    with_new(st, key, Kind::Hash, |st, c| {
        let mut added = 0;
        for (field, value) in pairs {
            added += c.insert(st, 0, field, value)?.is_none() as u64;
        }
        Ok(added)
    })
}

/// The value of `field` (`None`: no such field, or no hash).
pub fn get(st: &mut Store, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    Ok(with(st, key, Kind::Hash, |st, c| c.get(st, 0, field))?.flatten())
}

/// Removes `fields`; returns how many were there (HDEL).
pub fn delete(st: &mut Store, key: &[u8], fields: &[&[u8]]) -> Result<u64, Error> {
    let removed = with(st, key, Kind::Hash, |st, c| {
        let mut removed = 0;
        for field in fields {
            removed += c.remove(st, 0, field)?.is_some() as u64;
        }
        Ok(removed)
    })?;
    Ok(removed.unwrap_or(0))
}

/// The number of fields (HLEN; 0 for a missing key).
pub fn len(st: &mut Store, key: &[u8]) -> Result<u64, Error> {
    Ok(with(st, key, Kind::Hash, |_, c| Ok(c.len()))?.unwrap_or(0))
}

/// Up to `count` fields and their values from position `cursor` on, in
/// field order, and the cursor of the next call (0 once the hash is
/// done). A field present for the whole scan is returned once, unless
/// fields before it were added or removed meanwhile (the cursor is a
/// position, as HSCAN's is here).
pub fn scan(st: &mut Store, key: &[u8], cursor: u64, count: usize) -> Result<(u64, Pairs), Error> {
    let found = with(st, key, Kind::Hash, |st, c| {
        let mut pairs = Vec::new();
        if cursor < c.len() && count > 0 {
            c.walk(st, 0, cursor, false, |f, v| {
                pairs.push((f.to_vec(), v.to_vec()));
                Ok(pairs.len() < count)
            })?;
        }
        let next = cursor + pairs.len() as u64;
        Ok((if next >= c.len() { 0 } else { next }, pairs))
    })?;
    Ok(found.unwrap_or((0, Vec::new())))
}
