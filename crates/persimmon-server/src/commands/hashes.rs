//! Hash commands. A hash is one stored value (see `value.rs`): reads decode
//! it in place, writes rebuild it inside one `Db::update` closure, so every
//! hash command is atomic. Cost is O(size of the hash) per command, which
//! suits small hashes such as YCSB's 10-field records.
//!
//! Invariants: a hash loses its key with its last field, as in Redis
//! (clients take a missing key for an empty hash); a change that would pass
//! the value limit is refused whole and the stored hash stays as it was.
//! HINCRBYFLOAT adds in x87 extended precision (`longdouble`), as Redis
//! does on x86-64. (HRANDFIELD and HSCAN: `hash_walk`.)

use persimmon::Update;

use crate::longdouble::LongDouble;
use crate::protocol::{parse_i64, Args};
use crate::session::{arity, check_key, int_arg, overflow, wrongtype, Error, Session};
use crate::store::Store;
use crate::value::{hash_fields, HashBuilder, Stored, MAX_STRING_BYTES};

fn damaged_hash() -> Error {
    Error::new("ERR the hash stored at this key is damaged (it does not decode)")
}

/// The hash stored at a key as a builder; empty for a missing key.
fn open<'a>(old: Option<Stored<'a>>) -> Result<HashBuilder<'a>, Error> {
    match old {
        None => Ok(HashBuilder::new(Vec::new())),
        Some(Stored::Hash(body)) => Ok(HashBuilder::new(
            hash_fields(body).map_err(|_| damaged_hash())?,
        )),
        Some(_) => Err(wrongtype()),
    }
}

/// Encodes `h` for storing, or the error when it grew too large.
fn store(h: &HashBuilder<'_>) -> Result<Update, Error> {
    let len = h.encoded_len();
    if len - 1 > MAX_STRING_BYTES {
        return Err(Error::new(format!(
            "ERR the hash would take {len} bytes; persimmon stores at most {} bytes per value \
             (64 MiB)",
            MAX_STRING_BYTES + 1
        )));
    }
    Ok(if h.is_empty() {
        Update::Delete
    } else {
        Update::Put(h.encode())
    })
}

/// HSET/HMSET: sets field-value pairs; returns how many fields are new.
fn set_fields(s: &mut Session, a: &Args<'_>, name: &str) -> Result<i64, Error> {
    if !a.len().is_multiple_of(2) {
        return Err(arity(name));
    }
    let key = a.get(1);
    check_key(key)?;
    s.store.try_update(key, |old| {
        let mut h = open(old)?;
        let mut added = 0;
        let mut i = 2;
        while i < a.len() {
            added += h.set(a.get(i), a.get(i + 1)) as i64;
            i += 2;
        }
        Ok((store(&h)?, added))
    })
}

pub fn hset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let added = set_fields(s, &a, "hset")?;
    s.out.int(added);
    Ok(())
}

pub fn hmset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_fields(s, &a, "hmset")?;
    s.out.ok();
    Ok(())
}

pub fn hsetnx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, field, value) = (a.get(1), a.get(2), a.get(3));
    check_key(key)?;
    let added = s.store.try_update(key, |old| {
        let mut h = open(old)?;
        if h.get(field).is_some() {
            return Ok((Update::Keep, false));
        }
        h.set(field, value);
        Ok((store(&h)?, true))
    })?;
    s.out.int(added as i64);
    Ok(())
}

pub fn hdel(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let removed = s.store.try_update(key, |old| {
        if old.is_none() {
            return Ok((Update::Keep, 0));
        }
        let mut h = open(old)?;
        let removed = a.from(2).filter(|f| h.remove(f)).count() as i64;
        if removed == 0 {
            return Ok((Update::Keep, 0));
        }
        Ok((store(&h)?, removed))
    })?;
    s.out.int(removed);
    Ok(())
}

pub fn hincrby(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, field) = (a.get(1), a.get(2));
    let delta = int_arg(a.get(3))?;
    check_key(key)?;
    let n = s.store.try_update(key, |old| {
        let mut h = open(old)?;
        let current = match h.get(field) {
            None => 0,
            Some(v) => {
                parse_i64(v).ok_or_else(|| Error::new("ERR hash value is not an integer"))?
            }
        };
        let n = current.checked_add(delta).ok_or_else(overflow)?;
        let text = n.to_string().into_bytes();
        h.set(field, &text);
        Ok((store(&h)?, n))
    })?;
    s.out.int(n);
    Ok(())
}

/// Runs `f` over the fields of the hash at `key` in place; `None` when the
/// key is missing.
pub(super) fn with_fields<R>(
    store: &mut Store,
    key: &[u8],
    f: impl FnOnce(&[(&[u8], &[u8])]) -> R,
) -> Result<Option<R>, Error> {
    store
        .get(key, |v| match v {
            Stored::Hash(body) => hash_fields(body)
                .map(|fields| f(&fields))
                .map_err(|_| damaged_hash()),
            _ => Err(wrongtype()),
        })?
        .transpose()
}

pub fn hget(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let field = a.get(2);
    let out = &mut s.out;
    let found = with_fields(&mut s.store, a.get(1), |fields| {
        match fields.iter().find(|(f, _)| *f == field) {
            Some((_, v)) => out.bulk(v),
            None => out.null(),
        }
    });
    if let Ok(None) = found {
        out.null();
    }
    found.map(|_| ())
}

pub fn hmget(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let wanted: Vec<&[u8]> = a.from(2).collect();
    let out = &mut s.out;
    let found = with_fields(&mut s.store, a.get(1), |fields| {
        let h = HashBuilder::new(fields.to_vec());
        out.array(wanted.len());
        for f in &wanted {
            match h.get(f) {
                Some(v) => out.bulk(v),
                None => out.null(),
            }
        }
    });
    if let Ok(None) = found {
        out.array(wanted.len());
        for _ in &wanted {
            out.null();
        }
    }
    found.map(|_| ())
}

/// HGETALL, HKEYS, HVALS: what to list of each field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listing {
    Pairs,
    Fields,
    Values,
}

fn list(s: &mut Session, a: Args<'_>, what: Listing) -> Result<(), Error> {
    let out = &mut s.out;
    let found = with_fields(&mut s.store, a.get(1), |fields| {
        match what {
            Listing::Pairs => out.map(fields.len()),
            _ => out.array(fields.len()),
        }
        for (f, v) in fields {
            if what != Listing::Values {
                out.bulk(f);
            }
            if what != Listing::Fields {
                out.bulk(v);
            }
        }
    });
    if let Ok(None) = found {
        match what {
            Listing::Pairs => out.map(0),
            _ => out.array(0),
        }
    }
    found?;
    s.output_over_limit();
    Ok(())
}

pub fn hgetall(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    list(s, a, Listing::Pairs)
}

pub fn hkeys(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    list(s, a, Listing::Fields)
}

pub fn hvals(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    list(s, a, Listing::Values)
}

pub fn hexists(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let field = a.get(2);
    let found = with_fields(&mut s.store, a.get(1), |fields| {
        fields.iter().any(|(f, _)| *f == field)
    })?;
    s.out.int(found.unwrap_or(false) as i64);
    Ok(())
}

pub fn hlen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = with_fields(&mut s.store, a.get(1), |fields| fields.len())?.unwrap_or(0);
    s.out.int(n as i64);
    Ok(())
}

pub fn hstrlen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let field = a.get(2);
    let n = with_fields(&mut s.store, a.get(1), |fields| {
        fields
            .iter()
            .find(|(f, _)| *f == field)
            .map_or(0, |(_, v)| v.len())
    })?
    .unwrap_or(0);
    s.out.int(n as i64);
    Ok(())
}

/// HINCRBYFLOAT: the number in the field plus the increment, added in x87
/// extended precision and written as Redis writes it (`longdouble`).
pub fn hincrbyfloat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, field) = (a.get(1), a.get(2));
    let incr =
        LongDouble::parse(a.get(3)).ok_or_else(|| Error::new("ERR value is not a valid float"))?;
    if !incr.is_finite() {
        return Err(Error::new("ERR value is NaN or Infinity"));
    }
    check_key(key)?;
    let text = s.store.try_update(key, |old| {
        let mut h = open(old)?;
        let current = match h.get(field) {
            None => LongDouble::ZERO,
            Some(v) => {
                LongDouble::parse(v).ok_or_else(|| Error::new("ERR hash value is not a float"))?
            }
        };
        let sum = current
            .add(incr)
            .filter(|x| x.is_finite())
            .ok_or_else(|| Error::new("ERR increment would produce NaN or Infinity"))?;
        let text = sum.human().into_bytes();
        h.set(field, &text);
        Ok((store(&h)?, text))
    })?;
    s.out.bulk(&text);
    Ok(())
}
