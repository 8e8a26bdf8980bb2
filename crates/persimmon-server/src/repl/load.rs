//! Loading a master's RDB file on a replica: every database emptied, then
//! every key of the file written with its deadline, through the same code
//! as `RESTORE` (so each key is one atomic, durable engine write).
//!
//! Invariants: nothing is deleted before the file's header and checksum
//! were checked (a torn transfer leaves the old data alone); a key whose
//! deadline has passed is not written; a key of a database this server
//! does not have (`databases`) fails the load, naming it.

use persimmon_types::rdb::file::{read_file, Item};
use persimmon_types::Error;

use crate::dispatch::execute_words;
use crate::session::Session;

/// Replaces every database's keys with the file's. Returns how many keys
/// were written.
pub fn load(s: &mut Session, file: &[u8]) -> Result<u64, Error> {
    let mut flushed = false;
    let mut written = 0u64;
    let now = s.store.now_ms();
    let saved = s.store.db;
    let result = read_file::<Error>(file, |item| {
        if !flushed {
            flush_all(s)?;
            flushed = true;
        }
        match item {
            Item::Aux(..) => {}
            Item::Select(db) => {
                if db >= s.shared.keyspace.dbs.count() {
                    return Err(Error::new(format!(
                        "ERR the master's RDB file has database {db}; this server has {} (raise `databases`)",
                        s.shared.keyspace.dbs.count()
                    )));
                }
                s.store.db = db;
            }
            Item::Key {
                key,
                value,
                deadline,
            } => {
                if deadline.is_some_and(|d| d <= now) {
                    return Ok(());
                }
                s.store.atomic(|st| {
                    st.delete(&key)?;
                    persimmon_types::transfer::write_value(st, &key, &value, deadline)
                })?;
                written += 1;
            }
        }
        Ok(())
    });
    s.store.db = saved;
    result?;
    if !flushed {
        flush_all(s)?;
    }
    Ok(written)
}

/// FLUSHALL, as the master client runs it.
fn flush_all(s: &mut Session) -> Result<(), Error> {
    execute_words(s, &[b"FLUSHALL"]);
    let reply = std::mem::take(&mut s.out.buf);
    if reply.starts_with(b"-") {
        return Err(Error::new(
            String::from_utf8_lossy(&reply[1..]).trim_end().to_string(),
        ));
    }
    Ok(())
}
