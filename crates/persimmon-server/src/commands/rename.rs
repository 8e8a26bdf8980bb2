//! Commands that give one key's value to another key: RENAME, RENAMENX
//! (the source goes) and COPY (it stays; the copy may go to another
//! database).
//!
//! RENAME moves the stored record as it is (a collection's meta keeps its
//! tree id: `coll::moved` carries the registry entry of an external one);
//! COPY copies a collection deep, under a new tree id (`Coll::copy_to`,
//! O(size) as in Redis), so a copy never shares pages with its source.
//!
//! Invariants: each command is one atomic unit (`Store::atomic`), so after
//! a crash either all of its writes happened or none; inside the unit every
//! decision (missing source, existing destination) is made before the
//! first write. The destination takes the source's deadline, or none when
//! the source has none (never the deadline the destination had).

use persimmon_resp::Args;
use persimmon_types::coll::Coll;
use persimmon_types::store::Store;
use persimmon_types::value::Stored;
use persimmon_types::Error;

use super::keys::db_index;
use crate::notify;
use crate::session::{int_arg_within, is, syntax, Session};

fn no_such_key() -> Error {
    Error::new("ERR no such key")
}

/// RENAME key newkey: OK, or `ERR no such key`.
pub fn rename(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if rename_generic(s, &a, false)? {
        notify_renamed(s, &a);
    }
    s.out.ok();
    Ok(())
}

/// RENAMENX key newkey: 1 when renamed, 0 when newkey exists.
pub fn renamenx(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let renamed = rename_generic(s, &a, true)?;
    if renamed {
        notify_renamed(s, &a);
    }
    s.out.int(renamed as i64);
    Ok(())
}

/// The events of a rename that happened (none for a key renamed to
/// itself, as Redis).
fn notify_renamed(s: &mut Session, a: &Args<'_>) {
    if a.get(1) != a.get(2) {
        notify::event(s, notify::GENERIC, "rename_from", a.get(1));
        notify::event(s, notify::GENERIC, "rename_to", a.get(2));
    }
}

/// Moves `a[1]`'s value and deadline to `a[2]`; with `nx` only when `a[2]`
/// is missing. Returns whether it renamed (the same key: a no-op that
/// counts as renamed for RENAME, not for RENAMENX, as in Redis).
fn rename_generic(s: &mut Session, a: &Args<'_>, nx: bool) -> Result<bool, Error> {
    let (from, to) = (a.get(1), a.get(2));
    s.store.atomic(|st| {
        let Some((value, deadline)) = st.read_ttl(from, |v, d| (v.encode(), d))? else {
            return Err(no_such_key());
        };
        if from == to {
            return Ok(!nx);
        }
        if nx && st.exists(to)? {
            return Ok(false);
        }
        st.put(to, &value, deadline)?;
        let to_ek = st.engine_key(to).into_owned();
        persimmon_types::coll::moved(st, &value, &to_ek)?;
        st.delete(from)?;
        Ok(true)
    })
}

/// COPY's options: the destination database and REPLACE.
struct CopyOptions {
    db: usize,
    replace: bool,
}

fn copy_options(s: &Session, a: &Args<'_>) -> Result<CopyOptions, Error> {
    let mut o = CopyOptions {
        db: s.store.db,
        replace: false,
    };
    let mut i = 3;
    while i < a.len() {
        if is(a.get(i), "REPLACE") {
            o.replace = true;
        } else if is(a.get(i), "DB") && i + 1 < a.len() {
            i += 1;
            o.db = copy_db(s, a.get(i))?;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    Ok(o)
}

/// COPY's DB argument: an integer in C `int` range (Redis's wording when
/// not), then a database.
fn copy_db(s: &Session, arg: &[u8]) -> Result<usize, Error> {
    int_arg_within(arg, i32::MIN.into(), i32::MAX.into())?;
    db_index(s, arg)
}

/// COPY source destination [DB n] [REPLACE]: 1 when copied, 0 when the
/// source is missing or the destination exists (without REPLACE).
pub fn copy(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (from, to) = (a.get(1), a.get(2));
    let o = copy_options(s, &a)?;
    if o.db == s.store.db && from == to {
        return Err(Error::new(
            "ERR source and destination objects are the same",
        ));
    }
    let copied = s.store.atomic(|st| copy_unit(st, from, to, &o))?;
    if copied {
        notify::event_in(s, o.db, notify::GENERIC, "copy_to", to);
    }
    s.out.int(copied as i64);
    Ok(())
}

/// COPY's unit: decides, then writes the copy and its deadline.
fn copy_unit(st: &mut Store, from: &[u8], to: &[u8], o: &CopyOptions) -> Result<bool, Error> {
    let Some((value, deadline)) = st.read_ttl(from, |v, d| (v.encode(), d))? else {
        return Ok(false);
    };
    let source = match Stored::decode(&value) {
        Stored::Coll(kind, _) => Coll::open(st, from, kind)?,
        _ => None,
    };
    st.in_db(o.db, |st| {
        if st.exists(to)? {
            if !o.replace {
                return Ok(false);
            }
            st.delete(to)?;
        }
        let Some(mut c) = source else {
            st.put(to, &value, deadline)?;
            return Ok(true);
        };
        let ek = st.engine_key(to).into_owned();
        persimmon_types::error::check_key(&ek)?;
        c.copy_to(st, ek)?;
        if deadline.is_some() {
            st.set_deadline(to, deadline)?;
        }
        Ok(true)
    })
}
