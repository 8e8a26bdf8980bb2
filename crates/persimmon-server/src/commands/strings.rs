//! String commands. Plain `SET` and `MSET` are engine puts; everything that
//! reads before it writes runs inside one `Db::update` closure.
//!
//! Invariants:
//! - Every string is stored with its type tag (`value::string`) and checked
//!   against `MAX_STRING_BYTES` before the engine sees it, so the error
//!   names the server's limit (the engine's less the tag).
//! - A read-modify-write (INCR, APPEND, SETRANGE, SET NX/XX/GET, GETSET,
//!   GETDEL) decides inside its update closure: atomic against every other
//!   client, and a refused one leaves the value as it was.

use persimmon::Update;
use persimmon_resp::{parse_i64, Args};
use persimmon_types::error::{check_key, too_large, wrongtype};
use persimmon_types::store::Store;
use persimmon_types::value::{self, Stored, MAX_STRING_BYTES};
use persimmon_types::Error;

use super::expire;
use crate::longdouble::LongDouble;
use crate::notify;
use crate::session::{arity, int_arg, is, not_integer, overflow, syntax, Session};

fn check_len(len: usize) -> Result<(), Error> {
    if len > MAX_STRING_BYTES {
        return Err(too_large(len));
    }
    Ok(())
}

pub fn get(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let out = &mut s.out;
    let found = s.store.get(a.get(1), |v| match v {
        Stored::String(body) => {
            out.bulk(body);
            Ok(())
        }
        _ => Err(wrongtype()),
    })?;
    match found {
        Some(r) => {
            s.counters.hits += 1;
            r
        }
        None => {
            s.counters.misses += 1;
            s.out.null();
            Ok(())
        }
    }
}

pub fn set(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, body) = (a.get(1), a.get(2));
    let opts = SetOptions::parse(&a)?;
    let deadline = opts
        .expiry
        .map(|(unit, arg)| expire::deadline_of(arg, unit, s.store.now_ms(), "set"))
        .transpose()?;
    check_key(key)?;
    check_len(body.len())?;
    if !(opts.nx || opts.xx || opts.get || opts.keep_ttl) {
        let absent = notify::absent_if_watched(s, key);
        value::string_into(body, &mut s.scratch);
        s.store.put(key, &s.scratch, deadline)?;
        propagate_set(s, key, body, deadline);
        notify_set(s, key, deadline, absent);
        s.out.ok();
        return Ok(());
    }
    let out = &mut s.out;
    let mut wrote = false;
    let mut absent = false;
    let result = s.store.update(key, |old| {
        if opts.get && matches!(old, Some(v) if !matches!(v, Stored::String(_))) {
            return (Update::Keep, Err(wrongtype()));
        }
        let exists = old.is_some();
        absent = !exists;
        // NX writes only a new key, XX only an existing one.
        let write = (!opts.nx || !exists) && (!opts.xx || exists);
        if opts.get {
            match old {
                Some(Stored::String(prev)) => out.bulk(prev),
                _ => out.null(),
            }
        } else if write {
            out.ok();
        } else {
            out.null();
        }
        if !write {
            return (Update::Keep, Ok(()));
        }
        wrote = true;
        let value = value::string(body);
        match opts.keep_ttl {
            true => (Update::Put(value), Ok(())),
            false => (Update::PutExpiring { value, deadline }, Ok(())),
        }
    })?;
    match wrote {
        true => {
            propagate_set(s, key, body, deadline);
            notify_set(s, key, deadline, absent);
        }
        false => s.repl.nothing(),
    }
    result
}

/// The events of a SET that wrote: `new` when it created the key, `set`,
/// and `expire` when it gave a deadline, as Redis sends them.
fn notify_set(s: &mut Session, key: &[u8], deadline: Option<u64>, absent: bool) {
    notify::created(s, absent, key);
    notify::event(s, notify::STRING, "set", key);
    if deadline.is_some() {
        notify::event(s, notify::GENERIC, "expire", key);
    }
}

/// What a SET that wrote propagates: with a deadline, `SET key value PXAT
/// ms` (absolute, so a replica applying it later gives it the same
/// deadline, as Redis rewrites it); without one, the request itself.
fn propagate_set(s: &mut Session, key: &[u8], body: &[u8], deadline: Option<u64>) {
    if let Some(d) = deadline {
        let words = vec![
            b"SET".to_vec(),
            key.to_vec(),
            body.to_vec(),
            b"PXAT".to_vec(),
            d.to_string().into_bytes(),
        ];
        s.repl.rewrite(s.store.db, words);
    }
}

/// SET's options, checked for the combinations Redis refuses.
#[derive(Default)]
struct SetOptions<'a> {
    nx: bool,
    xx: bool,
    get: bool,
    keep_ttl: bool,
    expiry: Option<(expire::Unit, &'a [u8])>,
}

impl<'a> SetOptions<'a> {
    fn parse(a: &Args<'a>) -> Result<SetOptions<'a>, Error> {
        let mut o = SetOptions::default();
        let mut i = 3;
        while i < a.len() {
            let opt = a.get(i);
            let next = (i + 1 < a.len()).then(|| a.get(i + 1));
            // Another kind of expiry than one given already is refused; the
            // same kind again replaces it, as in Redis.
            let unit = expire::Unit::named(opt);
            let timed = o.keep_ttl || o.expiry.is_some_and(|(u, _)| Some(u) != unit);
            if is(opt, "NX") && !o.xx {
                o.nx = true;
            } else if is(opt, "XX") && !o.nx {
                o.xx = true;
            } else if is(opt, "GET") {
                o.get = true;
            } else if is(opt, "KEEPTTL") && o.expiry.is_none() {
                o.keep_ttl = true;
            } else if let (Some(unit), false, Some(arg)) = (unit, timed, next) {
                o.expiry = Some((unit, arg));
                i += 1;
            } else {
                return Err(syntax());
            }
            i += 1;
        }
        Ok(o)
    }
}

/// SETEX and PSETEX: SET with EX or PX.
fn set_expiring(
    s: &mut Session,
    a: &Args<'_>,
    unit: expire::Unit,
    name: &str,
) -> Result<(), Error> {
    let (key, body) = (a.get(1), a.get(3));
    let deadline = expire::deadline_of(a.get(2), unit, s.store.now_ms(), name)?;
    check_key(key)?;
    check_len(body.len())?;
    let absent = notify::absent_if_watched(s, key);
    value::string_into(body, &mut s.scratch);
    s.store.put(key, &s.scratch, Some(deadline))?;
    propagate_set(s, key, body, Some(deadline));
    notify_set(s, key, Some(deadline), absent);
    s.out.ok();
    Ok(())
}

pub fn setex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_expiring(s, &a, expire::Unit::Ex, "setex")
}

pub fn psetex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    set_expiring(s, &a, expire::Unit::Px, "psetex")
}

/// GETEX key [EX|PX|EXAT|PXAT time | PERSIST].
pub fn getex(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let (mut expiry, mut persist) = (None, false);
    let mut i = 2;
    while i < a.len() {
        let (opt, next) = (a.get(i), (i + 1 < a.len()).then(|| a.get(i + 1)));
        let unit = expire::Unit::named(opt);
        if is(opt, "PERSIST") && expiry.is_none() {
            persist = true;
        } else if let (Some(unit), false, Some(arg)) = (
            unit,
            persist || expiry.is_some_and(|(u, _)| Some(u) != unit),
            next,
        ) {
            expiry = Some((unit, arg));
            i += 1;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    let now = s.store.now_ms();
    if expiry.is_none() && !persist {
        return get(s, a);
    }
    let out = &mut s.out;
    // The deadline set (`Some(None)`: removed), for propagation.
    let mut applied: Option<Option<u64>> = None;
    let found = s.store.update_ttl(key, |old, current| {
        let body = match old {
            None => return (Update::Keep, Ok(None)),
            Some(Stored::String(body)) => body,
            Some(_) => return (Update::Keep, Err(wrongtype())),
        };
        let deadline = match expiry.map(|(u, arg)| expire::deadline_of(arg, u, now, "getex")) {
            Some(Err(e)) => return (Update::Keep, Err(e)),
            Some(Ok(d)) => Some(d),
            None => None,
        };
        out.bulk(body);
        if deadline.is_none() && current.is_none() {
            // PERSIST of a key without a deadline changes nothing.
            return (Update::Keep, Ok(Some(())));
        }
        let value = value::string(body);
        applied = Some(deadline);
        (Update::PutExpiring { value, deadline }, Ok(Some(())))
    })?;
    // As Redis: GETEX propagates as PEXPIREAT or PERSIST.
    let words: Option<Vec<Vec<u8>>> = match applied {
        Some(Some(d)) => Some(vec![
            b"PEXPIREAT".to_vec(),
            key.to_vec(),
            d.to_string().into_bytes(),
        ]),
        Some(None) => Some(vec![b"PERSIST".to_vec(), key.to_vec()]),
        None => None,
    };
    match words {
        Some(w) => s.repl.rewrite(s.store.db, w),
        None => s.repl.nothing(),
    }
    if found?.is_none() {
        s.out.null();
    }
    Ok(())
}

pub fn setnx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, body) = (a.get(1), a.get(2));
    check_key(key)?;
    check_len(body.len())?;
    let created = s.store.update(key, |old| match old {
        Some(_) => (Update::Keep, false),
        None => (Update::Put(value::string(body)), true),
    })?;
    if created {
        notify_set(s, key, None, true);
    }
    s.out.int(created as i64);
    Ok(())
}

pub fn getset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, body) = (a.get(1), a.get(2));
    check_key(key)?;
    check_len(body.len())?;
    let out = &mut s.out;
    s.store.update(key, |old| match old {
        Some(
            Stored::Hash(_) | Stored::ZSet(_) | Stored::List(_) | Stored::Set(_) | Stored::Coll(..),
        ) => (Update::Keep, Err(wrongtype())),
        Some(Stored::String(prev)) => {
            out.bulk(prev);
            (Update::Put(value::string(body)), Ok(()))
        }
        None => {
            out.null();
            (Update::Put(value::string(body)), Ok(()))
        }
    })?
}

pub fn getdel(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let out = &mut s.out;
    s.store.update(key, |old| match old {
        Some(
            Stored::Hash(_) | Stored::ZSet(_) | Stored::List(_) | Stored::Set(_) | Stored::Coll(..),
        ) => (Update::Keep, Err(wrongtype())),
        Some(Stored::String(prev)) => {
            out.bulk(prev);
            (Update::Delete, Ok(()))
        }
        None => {
            out.null();
            (Update::Keep, Ok(()))
        }
    })?
}

/// Keys MGET hands the engine per batched read (`Store::get_many`), so a
/// reply cut short by the output limit reads at most this many keys more.
const MGET_BATCH: usize = 64;

/// One batched read per [`MGET_BATCH`] keys; the reply stops at the key
/// that takes it over the output limit, as a key-by-key MGET would (the
/// keys after it are not counted as hits or misses).
pub fn mget(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    s.out.array(a.len() - 1);
    let keys: Vec<&[u8]> = a.from(1).collect();
    let limit = s.shared.settings.output_buffer_limit();
    let mut over = false;
    for batch in keys.chunks(MGET_BATCH) {
        let (out, counters) = (&mut s.out, &mut s.counters);
        s.store.get_many(batch, |_, v| {
            if over {
                return;
            }
            match v {
                Some(Stored::String(body)) => out.bulk(body),
                // MGET answers nil for a key of another type, like Redis.
                Some(_) => out.null(),
                None => out.null(),
            }
            match v {
                Some(_) => counters.hits += 1,
                None => counters.misses += 1,
            }
            over = out.len() > limit;
        })?;
        if over {
            // Marks the client for closing, as the output limit does.
            let _ = s.output_over_limit();
            return Ok(());
        }
    }
    Ok(())
}

/// Checks MSET-style key/value pairs before anything is written.
fn check_pairs(a: &Args<'_>, name: &str) -> Result<(), Error> {
    if a.len().is_multiple_of(2) {
        return Err(arity(name));
    }
    for (i, arg) in a.iter().enumerate().skip(1) {
        if i % 2 == 1 {
            check_key(arg)?;
        } else {
            check_len(arg.len())?;
        }
    }
    Ok(())
}

/// Puts MSET-style key/value pairs, all or none (one engine batch).
fn put_pairs(s: &mut Session, a: &Args<'_>) -> Result<(), Error> {
    let pairs: Vec<(&[u8], Vec<u8>)> = (1..a.len())
        .step_by(2)
        .map(|i| (a.get(i), value::string(a.get(i + 1))))
        .collect();
    s.store.put_many(&pairs)
}

pub fn mset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    check_pairs(&a, "mset")?;
    put_pairs(s, &a)?;
    for i in (1..a.len()).step_by(2) {
        notify::event(s, notify::STRING, "set", a.get(i));
    }
    s.out.ok();
    Ok(())
}

/// MSETNX: the check that no key exists and the puts are one atomic unit.
pub fn msetnx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    check_pairs(&a, "msetnx")?;
    let set = s.store.atomic(|st| {
        for i in (1..a.len()).step_by(2) {
            if st.exists(a.get(i))? {
                return Ok(false);
            }
        }
        for i in (1..a.len()).step_by(2) {
            st.put(a.get(i), &value::string(a.get(i + 1)), None)?;
        }
        Ok(true)
    })?;
    for i in (1..a.len()).step_by(2).filter(|_| set) {
        notify::event(s, notify::STRING, "set", a.get(i));
    }
    s.out.int(set as i64);
    Ok(())
}

/// INCRBY and friends: the integer in the string, plus `delta`, atomically.
fn incr_by(s: &mut Session, key: &[u8], delta: i64) -> Result<(), Error> {
    check_key(key)?;
    let n = s.store.try_update(key, |old| {
        let current = match old {
            None => 0,
            Some(Stored::String(body)) => parse_i64(body).ok_or_else(not_integer)?,
            Some(_) => return Err(wrongtype()),
        };
        let n = current.checked_add(delta).ok_or_else(overflow)?;
        Ok((Update::Put(value::string(n.to_string().as_bytes())), n))
    })?;
    notify::event(s, notify::STRING, "incrby", key);
    s.out.int(n);
    Ok(())
}

pub fn incr(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    incr_by(s, a.get(1), 1)
}

pub fn decr(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    incr_by(s, a.get(1), -1)
}

pub fn incrby(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let delta = int_arg(a.get(2))?;
    incr_by(s, a.get(1), delta)
}

pub fn decrby(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let delta = int_arg(a.get(2))?
        .checked_neg()
        .ok_or_else(|| Error::new("ERR decrement would overflow"))?;
    incr_by(s, a.get(1), delta)
}

fn not_float() -> Error {
    Error::new("ERR value is not a valid float")
}

/// INCRBYFLOAT: the number in the string plus the increment, added in
/// x87 extended precision and written as Redis writes it (`longdouble`).
pub fn incrbyfloat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    check_key(key)?;
    let text = s.store.try_update(key, |old| {
        let current = match old {
            None => LongDouble::ZERO,
            Some(Stored::String(body)) => LongDouble::parse(body).ok_or_else(not_float)?,
            Some(_) => return Err(wrongtype()),
        };
        let incr = LongDouble::parse(a.get(2)).ok_or_else(not_float)?;
        let sum = current
            .add(incr)
            .filter(|x| x.is_finite())
            .ok_or_else(|| Error::new("ERR increment would produce NaN or Infinity"))?;
        let text = sum.human();
        Ok((Update::Put(value::string(text.as_bytes())), text))
    })?;
    // As Redis: the result, not the increment (no float drift on replicas).
    let words = vec![
        b"SET".to_vec(),
        key.to_vec(),
        text.as_bytes().to_vec(),
        b"KEEPTTL".to_vec(),
    ];
    s.repl.rewrite(s.store.db, words);
    notify::event(s, notify::STRING, "incrbyfloat", key);
    s.out.bulk(text.as_bytes());
    Ok(())
}

pub fn append(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, tail) = (a.get(1), a.get(2));
    check_key(key)?;
    // A range write on the engine: on the SSD tier, a patch on PM merged
    // into the value's extent later (no rewrite of a large value).
    let fast = s
        .store
        .write_range_after(key, &[value::TAG_STRING], None, tail)?;
    let len = match fast {
        Some(n) => n as usize - 1,
        // Not a tagged string: a hash or sorted set (WRONGTYPE), or a value
        // written outside the server, rewritten tagged.
        None => rewrite_string(&mut s.store, key, None, tail)?,
    };
    notify::event(s, notify::STRING, "append", key);
    s.out.int(len as i64);
    Ok(())
}

/// APPEND (`at: None`) or SETRANGE of a value that is not a tagged string:
/// the whole value rewritten with the tag (a foreign value is a string).
fn rewrite_string(
    store: &mut Store,
    key: &[u8],
    at: Option<usize>,
    patch: &[u8],
) -> Result<usize, Error> {
    store.try_update(key, |old| {
        let prev: &[u8] = match old {
            None => b"",
            Some(Stored::String(body)) => body,
            Some(_) => return Err(wrongtype()),
        };
        let at = at.unwrap_or(prev.len());
        let len = prev.len().max(at + patch.len());
        check_len(len)?;
        let mut v = Vec::with_capacity(len + 1);
        v.push(value::TAG_STRING);
        v.extend_from_slice(prev);
        v.resize(len + 1, 0);
        v[1 + at..1 + at + patch.len()].copy_from_slice(patch);
        Ok((Update::Put(v), len))
    })
}

pub fn strlen(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let len = s
        .store
        .get(a.get(1), |v| match v {
            Stored::String(body) => Ok(body.len()),
            _ => Err(wrongtype()),
        })?
        .transpose()?
        .unwrap_or(0);
    s.out.int(len as i64);
    Ok(())
}

/// Redis's GETRANGE index rules (negative from the end, clamped).
fn range(len: usize, start: i64, end: i64) -> Option<(usize, usize)> {
    if start < 0 && end < 0 && start > end {
        return None;
    }
    let len_i = len as i64;
    let mut start = if start < 0 { len_i + start } else { start };
    let mut end = if end < 0 { len_i + end } else { end };
    start = start.max(0);
    end = end.max(0);
    if end >= len_i {
        end = len_i - 1;
    }
    if start > end || len == 0 {
        return None;
    }
    Some((start as usize, end as usize))
}

pub fn getrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let start = int_arg(a.get(2))?;
    let end = int_arg(a.get(3))?;
    let out = &mut s.out;
    let found = s.store.get(a.get(1), |v| match v {
        Stored::String(body) => {
            match range(body.len(), start, end) {
                Some((from, to)) => out.bulk(&body[from..=to]),
                None => out.bulk(b""),
            }
            Ok(())
        }
        _ => Err(wrongtype()),
    })?;
    match found {
        Some(r) => r,
        None => {
            s.out.bulk(b"");
            Ok(())
        }
    }
}

pub fn setrange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (key, patch) = (a.get(1), a.get(3));
    let offset = int_arg(a.get(2))?;
    if offset < 0 {
        return Err(Error::new("ERR offset is out of range"));
    }
    let offset = offset as u64;
    if !patch.is_empty() && offset + patch.len() as u64 > MAX_STRING_BYTES as u64 {
        return Err(Error::new(format!(
            "ERR string exceeds maximum allowed size ({MAX_STRING_BYTES} bytes: persimmon's 64 MiB \
             value limit less the 1-byte type tag)"
        )));
    }
    check_key(key)?;
    let len = if patch.is_empty() {
        // Nothing to write: the length, without creating the key.
        s.store
            .get(key, |v| match v {
                Stored::String(body) => Ok(body.len()),
                _ => Err(wrongtype()),
            })?
            .transpose()?
            .unwrap_or(0)
    } else {
        let at = 1 + offset; // past the type tag
        let n = match s
            .store
            .write_range_after(key, &[value::TAG_STRING], Some(at), patch)?
        {
            Some(n) => n as usize - 1,
            None => rewrite_string(&mut s.store, key, Some(offset as usize), patch)?,
        };
        notify::event(s, notify::STRING, "setrange", key);
        n
    };
    s.out.int(len as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::range;

    #[test]
    fn getrange_follows_redis() {
        // "Hello World": GETRANGE 0 3 = "Hell", -3 -1 = "rld", 0 -1 = all,
        // 10 100 = "d", 5 3 = "", -1 -5 = "".
        assert_eq!(range(11, 0, 3), Some((0, 3)));
        assert_eq!(range(11, -3, -1), Some((8, 10)));
        assert_eq!(range(11, 0, -1), Some((0, 10)));
        assert_eq!(range(11, 10, 100), Some((10, 10)));
        assert_eq!(range(11, 5, 3), None);
        assert_eq!(range(11, -1, -5), None);
        assert_eq!(range(0, 0, -1), None);
        assert_eq!(range(11, -100, 2), Some((0, 2)));
    }
}
