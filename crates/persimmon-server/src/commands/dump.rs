//! DUMP and RESTORE: a key's value as Redis's serialized payload (`rdb.rs`
//! is the format), so values move between Redis 7.0 and Persimmon: strings,
//! hashes, sorted sets, lists and sets.
//!
//! DUMP reads a collection whole (`coll::read_key`, O(size) as in Redis);
//! RESTORE writes one through `coll::write_whole`, under a new tree id.
//!
//! RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]: `ttl`
//! 0 is no deadline, else milliseconds from now (a Unix time in ms with
//! ABSTTL); a deadline already passed creates nothing (with REPLACE it
//! still deletes the old value). IDLETIME and FREQ are checked as Redis
//! checks them, then ignored: Persimmon keeps no access time or frequency
//! (see `object.rs`).
//!
//! Invariants: DUMP and RESTORE are each one atomic unit; RESTORE refuses
//! in Redis's order — options, an existing key without REPLACE
//! (`BUSYKEY`), the ttl, the payload — so a refused RESTORE writes nothing;
//! a payload is decoded whole before anything is written.

use persimmon_resp::Args;
use persimmon_types::rdb;
use persimmon_types::transfer::{read_value, write_value};
use persimmon_types::Error;

use crate::session::{int_arg, is, syntax, Session};

/// DUMP key: the payload, or nil for a missing key.
pub fn dump(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let key = a.get(1);
    match s.store.atomic(|st| read_value(st, key))? {
        None => s.out.null(),
        Some(v) => s.out.bulk(&rdb::dump(&v)),
    }
    Ok(())
}

/// RESTORE's options.
#[derive(Default)]
struct RestoreOptions {
    replace: bool,
    absttl: bool,
}

fn restore_options(a: &Args<'_>) -> Result<RestoreOptions, Error> {
    let mut o = RestoreOptions::default();
    let (mut idletime, mut freq) = (false, false);
    let mut i = 4;
    while i < a.len() {
        let (opt, more) = (a.get(i), i + 1 < a.len());
        if is(opt, "REPLACE") {
            o.replace = true;
        } else if is(opt, "ABSTTL") {
            o.absttl = true;
        } else if is(opt, "IDLETIME") && more && !freq {
            i += 1;
            if int_arg(a.get(i))? < 0 {
                return Err(Error::new("ERR Invalid IDLETIME value, must be >= 0"));
            }
            idletime = true;
        } else if is(opt, "FREQ") && more && !idletime {
            i += 1;
            if !(0..=255).contains(&int_arg(a.get(i))?) {
                return Err(Error::new(
                    "ERR Invalid FREQ value, must be >= 0 and <= 255",
                ));
            }
            freq = true;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    Ok(o)
}

/// The deadline RESTORE gives the key: `Ok(None)` for none.
fn restore_deadline(arg: &[u8], absttl: bool, now_ms: u64) -> Result<Option<u64>, Error> {
    let ttl = int_arg(arg)?;
    if ttl < 0 {
        return Err(Error::new("ERR Invalid TTL value, must be >= 0"));
    }
    Ok(match (ttl as u64, absttl) {
        (0, _) => None,
        (at, true) => Some(at),
        (ms, false) => Some(now_ms.saturating_add(ms)),
    })
}

/// As Redis: a relative ttl propagates as an absolute one (ABSTTL), so a
/// replica applying it later gives the key the same deadline.
fn propagate_restore(s: &mut Session, a: &Args<'_>, o: &RestoreOptions, now: u64) {
    let ttl = int_arg(a.get(2)).unwrap_or(0);
    if o.absttl || ttl <= 0 {
        return;
    }
    let mut words: Vec<Vec<u8>> = a.iter().map(<[u8]>::to_vec).collect();
    words[2] = now.saturating_add(ttl as u64).to_string().into_bytes();
    words.push(b"ABSTTL".to_vec());
    s.repl.rewrite(s.store.db, words);
}

pub fn restore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let o = restore_options(&a)?;
    let key = a.get(1);
    let now = s.store.now_ms();
    // Decided now, reported in Redis's order once the key is seen.
    let deadline = restore_deadline(a.get(2), o.absttl, now);
    let value = rdb::restore(a.get(3)).map_err(|e| Error::new(e.0));
    s.store.atomic(|st| {
        let exists = st.exists(key)?;
        if exists && !o.replace {
            return Err(Error::new("BUSYKEY Target key name already exists."));
        }
        let deadline = deadline.clone()?;
        let value = value.as_ref().map_err(Clone::clone)?;
        if exists {
            st.delete(key)?;
        }
        if deadline.is_some_and(|d| d <= now) {
            return Ok(());
        }
        write_value(st, key, value, deadline)
    })?;
    propagate_restore(s, &a, &o, now);
    s.out.ok();
    Ok(())
}
