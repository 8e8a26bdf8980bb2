//! Hash commands over a collection (`coll`, `Kind::Hash`): tree 0 maps each
//! field to its value, in field byte order. Every command runs in one
//! atomic unit of the client's `Store` (`coll::with`, `coll::with_new`), so
//! it is atomic and crash-atomic. A point read or write (HGET, HSET of `k`
//! fields, HDEL, HINCRBY...) costs O(k × height) page reads; HGETALL, HKEYS
//! and HVALS walk the fields once. (HRANDFIELD and HSCAN: `hash_walk`.)
//!
//! Invariants: a hash loses its key with its last field, as in Redis
//! (clients take a missing key for an empty hash); a field and value that
//! would not fit one engine value are refused before anything is written.
//! Replies list fields in byte order (Redis promises no order).
//! HINCRBYFLOAT adds in x87 extended precision (`longdouble`), as Redis
//! does on x86-64. A read's reply is built inside its unit into a scratch
//! buffer and copied out once the unit committed (a unit may run again).

use persimmon_resp::{parse_i64, Args, Reply};
use persimmon_types::coll::{self, check_element, Coll, Kind};
use persimmon_types::error::check_key;
use persimmon_types::hash;
use persimmon_types::store::Store;
use persimmon_types::Error;

use crate::longdouble::LongDouble;
use crate::notify;
use crate::session::{arity, int_arg, overflow, Session};

/// Replies what `build` writes from the collection at `key`, built inside
/// its unit into a scratch buffer (a unit that runs again starts it over)
/// and sent once the unit has ended; `missing` writes the reply for a
/// missing key. The connection closes when the reply passed the output
/// limit (`build` stops early there).
pub(super) fn reply_from_collection(
    s: &mut Session,
    key: &[u8],
    kind: Kind,
    missing: impl FnOnce(&mut Reply),
    mut build: impl FnMut(&mut Store, &mut Coll, &mut Reply) -> Result<(), Error>,
) -> Result<(), Error> {
    let mut r = Reply {
        buf: Vec::new(),
        resp3: s.out.resp3,
        errors: Default::default(),
    };
    let found = coll::with(&mut s.store, key, kind, |st, c| {
        r.buf.clear();
        build(st, c, &mut r)
    })?;
    match found {
        Some(()) => s.out.buf.extend_from_slice(&r.buf),
        None => missing(&mut s.out),
    }
    s.output_over_limit();
    Ok(())
}

/// HSET/HMSET: sets field-value pairs; returns how many fields are new.
fn set_fields(s: &mut Session, a: &Args<'_>, name: &str) -> Result<i64, Error> {
    if !a.len().is_multiple_of(2) {
        return Err(arity(name));
    }
    let pairs: Vec<(&[u8], &[u8])> = (2..a.len())
        .step_by(2)
        .map(|i| (a.get(i), a.get(i + 1)))
        .collect();
    Ok(hash::set(&mut s.store, a.get(1), &pairs)? as i64)
}

pub fn hset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let added = set_fields(s, &a, "hset")?;
    notify::event(s, notify::HASH, "hset", a.get(1));
    s.out.int(added);
    Ok(())
}

pub fn hmset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_fields(s, &a, "hmset")?;
    notify::event(s, notify::HASH, "hset", a.get(1));
    s.out.ok();
    Ok(())
}

pub fn hsetnx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, field, value) = (a.get(1), a.get(2), a.get(3));
    check_key(key)?;
    check_element(field, value)?;
    let added = coll::with_new(&mut s.store, key, Kind::Hash, |st, c| {
        if c.get(st, 0, field)?.is_some() {
            return Ok(false);
        }
        c.insert(st, 0, field, value)?;
        Ok(true)
    })?;
    if added {
        notify::event(s, notify::HASH, "hset", key);
    }
    s.out.int(added as i64);
    Ok(())
}

pub fn hdel(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let fields: Vec<&[u8]> = a.from(2).collect();
    let removed = hash::delete(&mut s.store, a.get(1), &fields)?;
    if removed > 0 {
        notify::event(s, notify::HASH, "hdel", a.get(1));
        notify::if_emptied(s, a.get(1));
    }
    s.out.int(removed as i64);
    Ok(())
}

/// Replaces the number in `field` with `f(current)` (a missing field reads
/// as `None`), creating the hash if needed; returns what was stored.
fn update_field<R>(
    s: &mut Session,
    key: &[u8],
    field: &[u8],
    f: impl Fn(Option<&[u8]>) -> Result<(Vec<u8>, R), Error>,
) -> Result<R, Error> {
    check_key(key)?;
    coll::with_new(&mut s.store, key, Kind::Hash, |st, c| {
        let old = c.get(st, 0, field)?;
        let (text, r) = f(old.as_deref())?;
        check_element(field, &text)?;
        c.insert(st, 0, field, &text)?;
        Ok(r)
    })
}

pub fn hincrby(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let delta = int_arg(a.get(3))?;
    let n = update_field(s, a.get(1), a.get(2), |old| {
        let current = match old {
            None => 0,
            Some(v) => {
                parse_i64(v).ok_or_else(|| Error::new("ERR hash value is not an integer"))?
            }
        };
        let n = current.checked_add(delta).ok_or_else(overflow)?;
        Ok((n.to_string().into_bytes(), n))
    })?;
    notify::event(s, notify::HASH, "hincrby", a.get(1));
    s.out.int(n);
    Ok(())
}

/// HINCRBYFLOAT: the number in the field plus the increment, added in x87
/// extended precision and written as Redis writes it (`longdouble`).
pub fn hincrbyfloat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let incr =
        LongDouble::parse(a.get(3)).ok_or_else(|| Error::new("ERR value is not a valid float"))?;
    if !incr.is_finite() {
        return Err(Error::new("ERR value is NaN or Infinity"));
    }
    let text = update_field(s, a.get(1), a.get(2), |old| {
        let current = match old {
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
        Ok((text.clone(), text))
    })?;
    // As Redis: the result, not the increment.
    let words = vec![
        b"HSET".to_vec(),
        a.get(1).to_vec(),
        a.get(2).to_vec(),
        text.clone(),
    ];
    s.repl.rewrite(s.store.db, words);
    s.out.bulk(&text);
    Ok(())
}

/// The value of `field` in the hash at `key` (`None`: no such field).
fn field_value(s: &mut Session, key: &[u8], field: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    hash::get(&mut s.store, key, field)
}

pub fn hget(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match field_value(s, a.get(1), a.get(2))? {
        Some(v) => s.out.bulk(&v),
        None => s.out.null(),
    }
    Ok(())
}

pub fn hmget(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let values = coll::with(&mut s.store, a.get(1), Kind::Hash, |st, c| {
        a.from(2)
            .map(|f| c.get(st, 0, f))
            .collect::<Result<Vec<_>, _>>()
    })?
    .unwrap_or_else(|| vec![None; a.len() - 2]);
    s.out.array(values.len());
    for v in values {
        match v {
            Some(v) => s.out.bulk(&v),
            None => s.out.null(),
        }
    }
    Ok(())
}

/// HGETALL, HKEYS, HVALS: what to list of each field.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Listing {
    Pairs,
    Fields,
    Values,
}

/// Lists the hash at `key` in field order. Stops early once the reply
/// passes the output limit (the connection is then closed).
fn list(s: &mut Session, a: Args<'_>, what: Listing) -> Result<(), Error> {
    let limit = s.shared.settings.output_buffer_limit();
    let missing = |out: &mut Reply| header(out, what, 0);
    reply_from_collection(s, a.get(1), Kind::Hash, missing, |st, c, r| {
        header(r, what, c.len() as usize);
        c.walk(st, 0, 0, false, |f, v| {
            if what != Listing::Values {
                r.bulk(f);
            }
            if what != Listing::Fields {
                r.bulk(v);
            }
            Ok(r.len() <= limit)
        })
    })
}

fn header(out: &mut Reply, what: Listing, n: usize) {
    match what {
        Listing::Pairs => out.map(n),
        _ => out.array(n),
    }
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
    let found = field_value(s, a.get(1), a.get(2))?.is_some();
    s.out.int(found as i64);
    Ok(())
}

pub fn hlen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = hash::len(&mut s.store, a.get(1))?;
    s.out.int(n as i64);
    Ok(())
}

pub fn hstrlen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let n = field_value(s, a.get(1), a.get(2))?.map_or(0, |v| v.len());
    s.out.int(n as i64);
    Ok(())
}
