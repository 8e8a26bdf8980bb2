//! The snapshot of a full resynchronisation: every key of every database
//! as an RDB file (`rdb::file`), with the stream's id and offset in its
//! AUX fields (`repl-id`, `repl-offset`), as Redis 7.0 writes them.
//!
//! Consistency: [`build`] is called holding the stream's lock (see
//! `mod.rs`), so no write command runs while it reads and the file is the
//! data at exactly the stream's offset; only the engine's own expiry can
//! remove a key meanwhile, and a key gone when read is skipped (its
//! deadline passed on the replica too, since deadlines are absolute).
//!
//! Every deadline written is also noted for the expiry of its key
//! (`expiry`): all of them, since the file holds every key.
//!
//! Invariant: each key is read as one atomic unit (value and deadline
//! together), through the same code as `DUMP`.

use std::sync::Arc;

use persimmon_types::rdb::file::Writer;
use persimmon_types::store::Store;
use persimmon_types::Error;

use crate::session::REDIS_COMPAT_VERSION;
use crate::shared::Shared;

/// The RDB file of everything the pool holds now.
pub fn build(
    shared: &Arc<Shared>,
    replid: &str,
    offset: u64,
    deadlines: &mut super::expiry::Deadlines,
) -> Result<Vec<u8>, Error> {
    deadlines.clear();
    let mut w = Writer::new();
    w.aux("redis-ver", REDIS_COMPAT_VERSION.as_bytes());
    w.aux("redis-bits", b"64");
    let ctime = crate::clock::unix_time().as_secs().to_string();
    w.aux("ctime", ctime.as_bytes());
    w.aux("used-mem", b"0");
    w.aux("repl-stream-db", b"0");
    w.aux("repl-id", replid.as_bytes());
    w.aux("repl-offset", offset.to_string().as_bytes());
    w.aux("aof-base", b"0");
    let mut store = Store::new(shared.keyspace.clone());
    for db in 0..shared.keyspace.dbs.count() {
        let keys = keys_of_db(shared, db)?;
        if keys.is_empty() {
            continue;
        }
        w.select(db, keys.len() as u64, 0);
        store.db = db;
        for key in keys {
            let read = store.atomic(|st| {
                let Some(value) = persimmon_types::transfer::read_value(st, &key)? else {
                    return Ok(None);
                };
                let deadline = match st.ttl(&key)? {
                    persimmon::Ttl::Expires { at_ms, .. } => Some(at_ms),
                    _ => None,
                };
                Ok(Some((value, deadline)))
            })?;
            if let Some((value, deadline)) = read {
                w.key(&key, &value, deadline);
                if let Some(at) = deadline {
                    deadlines.add(at, db, &key);
                }
            }
        }
    }
    Ok(w.finish())
}

/// The Redis keys of database `db`.
fn keys_of_db(shared: &Shared, db: usize) -> Result<Vec<Vec<u8>>, Error> {
    let mut keys = Vec::new();
    persimmon_types::dbs::keys_of(
        &shared.keyspace.db,
        shared.keyspace.dbs.namespace(db),
        || shared.is_stopping(),
        |k| {
            keys.push(k.to_vec());
            Ok(true)
        },
    )?;
    Ok(keys)
}
