//! DUMP and RESTORE: a key's value as Redis's serialized payload (`rdb.rs`
//! is the format), so values move between Redis 7.0 and Persimmon: strings,
//! hashes and sorted sets (a list or a set is refused, by DUMP and by
//! RESTORE, until the codec carries them).
//!
//! RESTORE key ttl payload [REPLACE] [ABSTTL] [IDLETIME s] [FREQ f]: `ttl`
//! 0 is no deadline, else milliseconds from now (a Unix time in ms with
//! ABSTTL); a deadline already passed creates nothing (with REPLACE it
//! still deletes the old value). IDLETIME and FREQ are checked as Redis
//! checks them, then ignored: Persimmon keeps no access time or frequency
//! (see `object.rs`).
//!
//! Invariants: RESTORE is one atomic read-modify-write of its key, and
//! refuses in Redis's order — options, an existing key without REPLACE
//! (`BUSYKEY`), the ttl, the payload — so a refused RESTORE writes nothing;
//! a payload is decoded whole before anything is written.

use persimmon::Update;

use crate::protocol::Args;
use crate::rdb::{self, RdbValue};
use crate::session::{int_arg, is, syntax, Error, Session};
use crate::value::{self, hash_fields, zset_encode, zset_entries, zset_order, HashBuilder, Stored};

/// DUMP key: the payload, or nil for a missing key.
pub fn dump(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match s
        .store
        .get(a.get(1), |v| to_rdb(v).map(|v| rdb::dump(&v)))?
    {
        None => s.out.null(),
        Some(payload) => s.out.bulk(&payload?),
    }
    Ok(())
}

/// A stored value as the codec carries it.
fn to_rdb(v: Stored<'_>) -> Result<RdbValue, Error> {
    let damaged = |what: &str| {
        Error::new(format!(
            "ERR the {what} stored at this key is damaged (it does not decode)"
        ))
    };
    Ok(match v {
        Stored::String(s) => RdbValue::String(s.to_vec()),
        Stored::Hash(body) => RdbValue::Hash(
            hash_fields(body)
                .map_err(|_| damaged("hash"))?
                .into_iter()
                .map(|(f, v)| (f.to_vec(), v.to_vec()))
                .collect(),
        ),
        Stored::ZSet(body) => RdbValue::ZSet(
            zset_entries(body)
                .map_err(|_| damaged("sorted set"))?
                .into_iter()
                .map(|(score, m)| (score, m.to_vec()))
                .collect(),
        ),
        Stored::List(_) | Stored::Set(_) | Stored::Coll(..) => {
            return Err(Error::new(format!(
                "ERR persimmon cannot DUMP a {} yet: DUMP and RESTORE carry strings, hashes and \
                 sorted sets",
                v.type_name()
            )))
        }
    })
}

/// A decoded payload as the server stores it.
fn from_rdb(v: &RdbValue) -> Vec<u8> {
    match v {
        RdbValue::String(s) => value::string(s),
        RdbValue::Hash(pairs) => {
            HashBuilder::new(pairs.iter().map(|(f, v)| (&f[..], &v[..])).collect()).encode()
        }
        RdbValue::ZSet(entries) => {
            let mut sorted: Vec<(f64, &[u8])> = entries.iter().map(|(x, m)| (*x, &m[..])).collect();
            sorted.sort_by(zset_order);
            zset_encode(&sorted)
        }
    }
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

pub fn restore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let o = restore_options(&a)?;
    let now = s.store.now_ms();
    // Decided now, reported in Redis's order once the key is seen.
    let deadline = restore_deadline(a.get(2), o.absttl, now);
    let value = rdb::restore(a.get(3)).map_err(|e| Error::new(e.0));
    s.store.update(a.get(1), |old| {
        if old.is_some() && !o.replace {
            return (
                Update::Keep,
                Err(Error::new("BUSYKEY Target key name already exists.")),
            );
        }
        let (deadline, value) = match (&deadline, &value) {
            (Err(e), _) | (Ok(_), Err(e)) => return (Update::Keep, Err(e.clone())),
            (Ok(d), Ok(v)) => (*d, v),
        };
        if deadline.is_some_and(|d| d <= now) {
            let gone = if old.is_some() {
                Update::Delete
            } else {
                Update::Keep
            };
            return (gone, Ok(()));
        }
        let value = from_rdb(value);
        (Update::PutExpiring { value, deadline }, Ok(()))
    })??;
    s.out.ok();
    Ok(())
}
