//! Key-space commands: DEL, UNLINK, EXISTS, TYPE, TTL, SCAN, KEYS, FLUSHDB
//! (and EXPIRE & co., refused: no key expires).
//!
//! KEYS and FLUSHDB walk the whole pool (O(n)); SCAN walks it once per scan
//! (see `scan.rs`) and answers each call from the snapshot.
//!
//! Invariants: every walk of the whole pool runs under `blocking` (the
//! worker's other clients go on) and stops early once the server is
//! stopping; KEYS never queues a reply past the output limit, it closes the
//! client instead, as Redis does.

use crate::glob;
use crate::protocol::Args;
use crate::session::{blocking, int_arg, is, may_exist, read, syntax, Error, Flow, Session};

pub fn del(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut deleted = 0;
    for key in a.from(1) {
        if may_exist(key) && s.shared.db.delete(key)? {
            deleted += 1;
        }
    }
    s.out.int(deleted);
    Ok(())
}

pub fn exists(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut n = 0;
    for key in a.from(1) {
        if read(&s.shared.db, key, |_| ())?.is_some() {
            n += 1;
        }
    }
    s.out.int(n);
    Ok(())
}

pub fn type_(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let name = read(&s.shared.db, a.get(1), |v| v.type_name())?.unwrap_or("none");
    s.out.simple(name);
    Ok(())
}

/// TTL and PTTL: -1 for every existing key (nothing expires), -2 for a
/// missing one.
pub fn ttl(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let exists = read(&s.shared.db, a.get(1), |_| ())?.is_some();
    s.out.int(if exists { -1 } else { -2 });
    Ok(())
}

/// EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT: refused, there is no expiry.
pub fn expire(_s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    Err(Error::new(
        "ERR persimmon has no key expiry: EXPIRE, PEXPIRE, EXPIREAT and PEXPIREAT are not supported",
    ))
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
            .step(&shared.db, || shared.is_stopping(), cursor, count)
    })?;
    let mut shown = Vec::with_capacity(keys.len());
    for key in &keys {
        if pattern.is_some_and(|p| !glob::matches(p, key)) {
            continue;
        }
        if let Some(t) = &type_filter {
            let name = read(&s.shared.db, key, |v| v.type_name())?;
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
    let limit = shared.settings.output_buffer_limit();
    let found = blocking(|| -> Result<Option<Vec<Vec<u8>>>, Error> {
        let mut found = Vec::new();
        let mut bytes = 0usize;
        for (i, item) in shared.db.iter().enumerate() {
            if i % 4096 == 0 && shared.is_stopping() {
                break;
            }
            let (key, _) = item?;
            if glob::matches(pattern, &key) {
                bytes += key.len() + 16;
                if bytes > limit {
                    return Ok(None);
                }
                found.push(key);
            }
        }
        Ok(Some(found))
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

pub fn flush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match a.len() {
        1 => {}
        2 if is(a.get(1), "ASYNC") || is(a.get(1), "SYNC") => {}
        _ => return Err(syntax()),
    }
    let shared = s.shared.clone();
    blocking(|| -> Result<(), Error> {
        // Deleting behind the iterator is safe: it copies one bucket at a
        // time and holds nothing between calls.
        for (i, item) in shared.db.iter().enumerate() {
            if i % 4096 == 0 && shared.is_stopping() {
                break;
            }
            let (key, _) = item?;
            shared.db.delete(&key)?;
        }
        Ok(())
    })?;
    s.out.ok();
    Ok(())
}
