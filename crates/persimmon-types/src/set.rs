//! Sets: a collection (`coll`, `Kind::Set`) whose tree 0 holds each member
//! as a key with an empty value, in member byte order. The calls a Rust
//! program makes in-process, and the ones the server's set commands are
//! built on.
//!
//! Every call is one atomic unit of the store (or part of the running
//! one): atomic, crash-atomic, durable on return.
//!
//! Invariants: members are unique; a set loses its key with its last
//! member, as in Redis (a missing key reads as an empty set); a member
//! that would not fit one engine value is refused before anything is
//! written.

use crate::coll::collection::{check_element, with, with_new};
use crate::error::{check_key, Error};
use crate::store::Store;
use crate::value::Kind;

/// Adds `members`, creating the set if needed; returns how many are new
/// (SADD).
pub fn add(st: &mut Store, key: &[u8], members: &[&[u8]]) -> Result<u64, Error> {
    check_key(key)?;
    for m in members {
        check_element(m, b"")?;
    }
    with_new(st, key, Kind::Set, |st, c| {
        let mut added = 0;
        for m in members {
            added += c.add(st, 0, m)? as u64;
        }
        Ok(added)
    })
}

/// Removes `members`; returns how many were there (SREM).
pub fn remove(st: &mut Store, key: &[u8], members: &[&[u8]]) -> Result<u64, Error> {
    let removed = with(st, key, Kind::Set, |st, c| {
        let mut removed = 0;
        for m in members {
            removed += c.remove(st, 0, m)?.is_some() as u64;
        }
        Ok(removed)
    })?;
    Ok(removed.unwrap_or(0))
}

/// Whether `member` is in the set (SISMEMBER).
pub fn contains(st: &mut Store, key: &[u8], member: &[u8]) -> Result<bool, Error> {
    let found = with(st, key, Kind::Set, |st, c| {
        Ok(c.get(st, 0, member)?.is_some())
    })?;
    Ok(found.unwrap_or(false))
}

/// Every member, in byte order (SMEMBERS).
pub fn members(st: &mut Store, key: &[u8]) -> Result<Vec<Vec<u8>>, Error> {
    let found = with(st, key, Kind::Set, |st, c| {
        let mut out = Vec::with_capacity(c.len() as usize);
        c.walk(st, 0, 0, false, |m, _| {
            out.push(m.to_vec());
            Ok(true)
        })?;
        Ok(out)
    })?;
    Ok(found.unwrap_or_default())
}

/// The number of members (SCARD; 0 for a missing key).
pub fn len(st: &mut Store, key: &[u8]) -> Result<u64, Error> {
    Ok(with(st, key, Kind::Set, |_, c| Ok(c.len()))?.unwrap_or(0))
}
