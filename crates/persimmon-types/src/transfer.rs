//! A key's value taken out whole and put back, in the form Redis's
//! serialization carries it ([`RdbValue`]): what `DUMP` and `RESTORE`,
//! replication snapshots and a replica's load of its master's RDB move.
//!
//! Invariants: a collection is read whole (`coll::read_key`, O(size) as in
//! Redis) and written under a new tree id (`coll::whole::write`); a value
//! written with a deadline gets it in the same unit, so a caller inside an
//! atomic unit writes value and deadline together or not at all.

use crate::coll::{self, whole::Whole};
use crate::error::Error;
use crate::rdb::{RdbError, RdbValue};
use crate::store::Store;
use crate::stream;
use crate::value::{self, Kind, Stored};

/// The value at `key` as the codec carries it (`None`: missing).
pub fn read_value(st: &mut Store, key: &[u8]) -> Result<Option<RdbValue>, Error> {
    if st.get(key, |v| matches!(v, Stored::Coll(Kind::Stream, _)))? == Some(true) {
        let s = stream::with_stream(st, key, stream::whole::read)?;
        return Ok(s.map(|s| RdbValue::Stream(Box::new(s))));
    }
    if let Some(w) = coll::read_key(st, key)? {
        return Ok(Some(to_rdb(w)));
    }
    let string = st.get(key, |v| match v {
        Stored::String(s) => Some(RdbValue::String(s.to_vec())),
        _ => None,
    })?;
    Ok(string.flatten())
}

fn to_rdb(w: Whole) -> RdbValue {
    match w {
        Whole::Hash(pairs) => RdbValue::Hash(pairs),
        Whole::ZSet(entries) => RdbValue::ZSet(entries),
        Whole::List(elements) => RdbValue::List(elements),
        Whole::Set(members) => RdbValue::Set(members),
    }
}

/// Writes a decoded payload at `key` (missing now) with `deadline`.
pub fn write_value(
    st: &mut Store,
    key: &[u8],
    v: &RdbValue,
    deadline: Option<u64>,
) -> Result<(), Error> {
    let whole = match v {
        RdbValue::String(s) => return st.put(key, &value::string(s), deadline),
        RdbValue::Hash(pairs) => Whole::Hash(pairs.clone()),
        RdbValue::ZSet(entries) => Whole::ZSet(entries.clone()),
        RdbValue::List(elements) => Whole::List(elements.clone()),
        RdbValue::Set(members) => Whole::Set(members.clone()),
        RdbValue::Stream(s) => {
            let mut c = coll::Coll::new(st.engine_key(key).into_owned(), Kind::Stream);
            stream::whole::write(st, &mut c, s)?;
            c.save(st)?;
            if deadline.is_some() {
                st.set_deadline(key, deadline)?;
            }
            return Ok(());
        }
    };
    let ek = st.engine_key(key).into_owned();
    coll::write_whole(st, ek, &whole)?;
    if deadline.is_some() {
        st.set_deadline(key, deadline)?;
    }
    Ok(())
}

impl From<RdbError> for Error {
    fn from(e: RdbError) -> Error {
        Error::new(e.0)
    }
}
