//! Key-space commands: DEL, UNLINK, EXISTS, TYPE, SCAN, KEYS, and the
//! database commands SELECT, DBSIZE, FLUSHDB, FLUSHALL, MOVE, SWAPDB.
//!
//! KEYS, DBSIZE, FLUSHDB and FLUSHALL walk the database's keys (O(n)); SCAN
//! walks the pool once per scan (see `scan.rs`) and answers each call from
//! the snapshot, keeping the selected database's keys.
//!
//! Invariants: every walk runs under `blocking` (the worker's other clients
//! go on) and stops early once the server is stopping; KEYS never queues a
//! reply past the output limit, it closes the client instead, as Redis
//! does. MOVE is one atomic unit (the key is in exactly one database after
//! a crash); SWAPDB is one durable write of the map record, made while no
//! other command runs (the dispatch holds the map exclusively).

use persimmon_resp::Args;
use persimmon_types::dbs::{self, keys_of};
use persimmon_types::Error;

use crate::glob;
use crate::notify;
use crate::session::{blocking, int_arg, is, syntax, Flow, Session};

pub fn del(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    // Several keys go as one atomic unit (all deleted, or none after a
    // crash), as Redis deletes them in one step.
    // The positions of the keys that were there.
    let deleted: Vec<usize> = if a.len() == 2 || a.len() > persimmon::MAX_BATCH_OPS {
        // One key; or more than one engine batch holds: key by key, each
        // delete atomic, the whole not.
        let mut deleted = Vec::new();
        for i in 1..a.len() {
            if s.store.delete(a.get(i))? {
                deleted.push(i);
            }
        }
        deleted
    } else {
        s.store.atomic(|st| {
            let mut deleted = Vec::new();
            for i in 1..a.len() {
                if st.delete(a.get(i))? {
                    deleted.push(i);
                }
            }
            Ok(deleted)
        })?
    };
    if deleted.is_empty() {
        // Nothing changed: nothing to propagate, as Redis.
        s.repl.nothing();
    }
    for &i in &deleted {
        notify::event(s, notify::GENERIC, "del", a.get(i));
    }
    s.out.int(deleted.len() as i64);
    Ok(())
}

pub fn exists(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut n = 0;
    for key in a.from(1) {
        if s.store.exists(key)? {
            n += 1;
        }
    }
    s.out.int(n);
    Ok(())
}

pub fn type_(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let name = s.store.get(a.get(1), |v| v.type_name())?.unwrap_or("none");
    s.out.simple(name);
    Ok(())
}

pub fn scan(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let cursor: u64 = std::str::from_utf8(a.get(1))
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(|| Error::new("ERR invalid cursor"))?;
    let mut pattern = None;
    let mut count = 10usize;
    let mut type_filter = None;
    let mut i = 2;
    while i < a.len() {
        let opt = a.get(i);
        if i + 1 >= a.len() {
            return Err(syntax());
        }
        let value = a.get(i + 1);
        if is(opt, "MATCH") {
            pattern = Some(value);
        } else if is(opt, "COUNT") {
            let n = int_arg(value)?;
            if n < 1 {
                return Err(syntax());
            }
            count = n.min(1 << 20) as usize;
        } else if is(opt, "TYPE") {
            type_filter = Some(value.to_ascii_lowercase());
        } else {
            return Err(syntax());
        }
        i += 2;
    }
    let shared = s.shared.clone();
    let (keys, next) = blocking(|| {
        shared
            .scan
            .step(&shared.keyspace.db, || shared.is_stopping(), cursor, count)
    })?;
    let ns = s.store.namespace();
    let mut shown = Vec::with_capacity(keys.len());
    for key in keys.iter().filter_map(|k| dbs::key_in(ns, k)) {
        if pattern.is_some_and(|p| !glob::matches(p, key)) {
            continue;
        }
        if let Some(t) = &type_filter {
            let name = s.store.get(key, |v| v.type_name())?;
            if name.is_none_or(|n| n.as_bytes() != t.as_slice()) {
                continue;
            }
        }
        shown.push(key);
    }
    s.out.array(2);
    s.out.bulk(next.to_string().as_bytes());
    s.out.array(shown.len());
    for key in shown {
        s.out.bulk(key);
    }
    Ok(())
}

pub fn keys(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let pattern = a.get(1);
    let shared = s.shared.clone();
    let ns = s.store.namespace();
    let limit = shared.settings.output_buffer_limit();
    let found = blocking(|| -> Result<Option<Vec<Vec<u8>>>, Error> {
        let mut found = Vec::new();
        let mut bytes = 0usize;
        let mut over = false;
        keys_of(
            &shared.keyspace.db,
            ns,
            || shared.is_stopping(),
            |key| {
                if glob::matches(pattern, key) {
                    bytes += key.len() + 16;
                    if bytes > limit {
                        over = true;
                        return Ok(false);
                    }
                    found.push(key.to_vec());
                }
                Ok(true)
            },
        )?;
        Ok((!over).then_some(found))
    })?;
    match found {
        Some(found) => {
            s.out.array(found.len());
            for key in &found {
                s.out.bulk(key);
            }
        }
        // The reply alone would break the output limit.
        None => {
            s.flow = Flow::OutputLimit;
        }
    }
    Ok(())
}

/// The Redis keys of the selected database, walked under `blocking`.
fn all_keys(s: &Session, ns: u32) -> Result<Vec<Vec<u8>>, Error> {
    let shared = s.shared.clone();
    blocking(|| {
        let mut keys = Vec::new();
        keys_of(
            &shared.keyspace.db,
            ns,
            || shared.is_stopping(),
            |key| {
                keys.push(key.to_vec());
                Ok(true)
            },
        )?;
        Ok(keys)
    })
}

/// FLUSHDB and FLUSHALL's optional ASYNC or SYNC (both delete at once).
fn flush_mode(a: &Args<'_>) -> Result<(), Error> {
    match a.len() {
        1 => Ok(()),
        2 if is(a.get(1), "ASYNC") || is(a.get(1), "SYNC") => Ok(()),
        _ => Err(syntax()),
    }
}

/// Deletes every key of database `db` (through the running unit inside
/// EXEC, so the flush is part of its batch).
fn flush_db(s: &mut Session, db: usize) -> Result<(), Error> {
    let ns = s.shared.keyspace.dbs.namespace(db);
    let mut keys = all_keys(s, ns)?;
    // Inside EXEC: keys the transaction itself wrote are not in the pool yet.
    keys.extend(s.store.unit_keys(ns));
    s.store.in_db(db, |st| {
        for key in &keys {
            st.delete(key)?;
        }
        Ok(())
    })
}

pub fn flushdb(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    flush_mode(&a)?;
    flush_db(s, s.store.db)?;
    s.out.ok();
    Ok(())
}

pub fn flushall(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    flush_mode(&a)?;
    for db in 0..s.shared.keyspace.dbs.count() {
        flush_db(s, db)?;
    }
    s.out.ok();
    Ok(())
}

pub fn dbsize(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let ns = s.store.namespace();
    let shared = s.shared.clone();
    let mut n: i64 = 0;
    blocking(|| {
        keys_of(
            &shared.keyspace.db,
            ns,
            || shared.is_stopping(),
            |_| {
                n += 1;
                Ok(true)
            },
        )
    })?;
    n += s.store.unit_count_delta(ns);
    s.out.int(n.max(0));
    Ok(())
}

/// A database index argument: `ERR value is not an integer...` when not a
/// number, `ERR DB index is out of range` past the last database.
pub fn db_index(s: &Session, arg: &[u8]) -> Result<usize, Error> {
    let n = int_arg(arg)?;
    usize::try_from(n)
        .ok()
        .filter(|&n| n < s.shared.keyspace.dbs.count())
        .ok_or_else(|| Error::new("ERR DB index is out of range"))
}

pub fn select(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    s.store.db = db_index(s, a.get(1))?;
    if !s.in_script {
        // A script's SELECT lasts only for the script.
        s.info
            .db
            .store(s.store.db, std::sync::atomic::Ordering::Relaxed);
    }
    s.out.ok();
    Ok(())
}

/// MOVE key db: 1 when the key moved (with its deadline), 0 when it is
/// missing here or present there.
pub fn move_(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    let to = db_index(s, a.get(2))?;
    if to == s.store.db {
        return Err(Error::new(
            "ERR source and destination objects are the same",
        ));
    }
    let moved = s.store.atomic(|st| {
        let Some((value, deadline)) = st.read_ttl(key, |v, d| (v.encode(), d))? else {
            return Ok(false);
        };
        if st.in_db(to, |st| st.exists(key))? {
            return Ok(false);
        }
        st.in_db(to, |st| {
            st.put(key, &value, deadline)?;
            let to_ek = st.engine_key(key).into_owned();
            persimmon_types::coll::moved(st, &value, &to_ek)
        })?;
        st.delete(key)?;
        Ok(true)
    })?;
    if moved {
        notify::event(s, notify::GENERIC, "move_from", key);
        notify::event_in(s, to, notify::GENERIC, "move_to", key);
    }
    s.out.int(moved as i64);
    Ok(())
}

/// SWAPDB a b: exchanges the two databases' namespaces in the map (one
/// durable write; every client sees the swap at once).
pub fn swapdb(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    // Both are parsed (as Redis's 32-bit ints) before either is checked.
    let parse = |arg: &[u8], which: &str| {
        persimmon_resp::parse_i64(arg)
            .and_then(|n| i32::try_from(n).ok())
            .ok_or_else(|| Error::new(format!("ERR invalid {which} DB index")))
    };
    let (x, y) = (parse(a.get(1), "first")?, parse(a.get(2), "second")?);
    let in_range = |n: i32| {
        usize::try_from(n)
            .ok()
            .filter(|&n| n < s.shared.keyspace.dbs.count())
            .ok_or_else(|| Error::new("ERR DB index is out of range"))
    };
    let (x, y) = (in_range(x)?, in_range(y)?);
    if x != y {
        let record = s.shared.keyspace.dbs.swapped_record(x, y);
        s.shared.keyspace.db.put(dbs::MAP_KEY, &record)?;
        s.shared.keyspace.dbs.apply_swap(x, y);
        super::blocking::swapped(s, x, y);
    }
    s.out.ok();
    Ok(())
}
