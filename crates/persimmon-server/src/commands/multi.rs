//! Transactions: MULTI, EXEC, DISCARD, WATCH, UNWATCH.
//!
//! `MULTI` starts queueing (the dispatch queues every command but these);
//! `EXEC` runs the queued commands as one atomic unit of the store: their
//! writes go to an overlay and commit as one crash-atomic engine batch,
//! only if every key the commands read and every watched key still has the
//! version it had (read at `WATCH` time for watched keys). On a conflict
//! with a watched key `EXEC` replies nil and writes nothing; on a conflict
//! with a key only read, the commands run again from the start (their
//! replies are rebuilt), so an `EXEC` is serializable.
//!
//! Invariants:
//! - An `EXEC` that fails part way is impossible: nothing reaches the pool
//!   before the one batch, and the batch is all-or-nothing across a crash.
//!   A command that fails inside `EXEC` (a wrong type, say) fails alone, as
//!   in Redis, having written nothing: handlers decide before they write.
//! - Durable before the reply: the batch is durable when `write_if`
//!   returns, and the reply is queued after.
//! - A watched key is a database and a Redis key, resolved to its engine
//!   key when checked, so `SWAPDB` and `FLUSHDB` touch it as in Redis.
//! - After `EXEC` or `DISCARD` (whatever the outcome) nothing is watched and
//!   the client is out of the transaction.
//! - No starvation: after a few conflicts an `EXEC` runs again holding the
//!   database map exclusively, so no other client's command runs meanwhile.
//! - A failed command inside `EXEC` is rolled back in the unit (its
//!   changes undone) before the next one runs.

use persimmon_resp::Args;
use persimmon_types::store::{conflict, ATOMIC_ATTEMPTS};
use persimmon_types::Error;

use crate::dispatch::{exec_refused, run_queued};
use crate::session::{Multi, Session};

pub fn multi(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    if s.multi.is_some() {
        return Err(Error::new("ERR MULTI calls can not be nested"));
    }
    s.multi = Some(Multi::default());
    s.out.ok();
    Ok(())
}

pub fn discard(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    if s.multi.take().is_none() {
        return Err(Error::new("ERR DISCARD without MULTI"));
    }
    s.store.watched.clear();
    s.out.ok();
    Ok(())
}

pub fn watch(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if s.multi.is_some() {
        return Err(Error::new("ERR WATCH inside MULTI is not allowed"));
    }
    let db = s.store.db;
    for key in a.from(1) {
        if s.store.watched.iter().any(|w| w.db == db && w.key == key) {
            continue;
        }
        let version = s.store.version_in(db, key)?;
        s.store.watched.push(persimmon_types::store::Watched {
            db,
            key: key.to_vec(),
            version,
        });
    }
    s.out.ok();
    Ok(())
}

pub fn unwatch(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.store.watched.clear();
    s.out.ok();
    Ok(())
}

pub fn exec(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let Some(multi) = s.multi.take() else {
        return Err(Error::new("ERR EXEC without MULTI"));
    };
    let watched = std::mem::take(&mut s.store.watched);
    if multi.failed {
        return Err(Error::new(
            "EXECABORT Transaction discarded because of previous errors.",
        ));
    }
    if let Some(e) = exec_refused(s, &multi.queued) {
        return Err(e);
    }
    let selected = s.store.db;
    let attempts = match s.exec_exclusive {
        true => ATOMIC_ATTEMPTS,
        false => SHARED_ATTEMPTS,
    };
    let propagated = s.repl.cmds.len();
    let noted = s.notes.len();
    for _ in 0..attempts {
        // An attempt that did not commit propagates and notifies nothing.
        s.repl.cmds.truncate(propagated);
        s.notes.truncate(noted);
        if watched_changed(s, &watched)? {
            s.out.null_array();
            return Ok(());
        }
        let mark = s.out.len();
        s.store.begin();
        s.out.array(multi.queued.len());
        for q in &multi.queued {
            run_queued(s, q.args(), crate::acl::log::Context::Multi);
        }
        let expected = watched_versions(s, &watched);
        let committed = s.store.commit(&expected);
        if !matches!(committed, Ok(true)) {
            // Nothing was written: the reply and the selected database go
            // back to what they were before EXEC.
            s.out.buf.truncate(mark);
            s.store.db = selected;
        }
        match committed {
            Ok(true) => return Ok(()),
            Err(e) => return Err(e),
            // Someone changed a key the commands read: run them again.
            Ok(false) => {}
        }
    }
    s.repl.cmds.truncate(propagated);
    s.notes.truncate(noted);
    if !s.exec_exclusive {
        // Run again with every other command held off (the dispatch sees
        // the flag); the transaction is as it was.
        s.multi = Some(multi);
        s.store.watched = watched;
        s.exec_escalate = true;
        return Ok(());
    }
    Err(conflict())
}

/// Attempts an EXEC makes alongside other commands before it runs again
/// alone (holding the database map exclusively), where only the engine's
/// own background work (expiry, the cleaner's moves) can still conflict.
const SHARED_ATTEMPTS: u32 = 8;

/// The engine key and `WATCH`-time version of each watched key, as the map
/// resolves them now.
fn watched_versions(
    s: &Session,
    watched: &[persimmon_types::store::Watched],
) -> Vec<(Vec<u8>, Option<persimmon::Version>)> {
    watched
        .iter()
        .map(|w| {
            let ns = s.shared.keyspace.dbs.namespace(w.db);
            (persimmon_types::dbs::engine_key(ns, &w.key), w.version)
        })
        .collect()
}

/// Whether any watched key has another version now.
fn watched_changed(
    s: &Session,
    watched: &[persimmon_types::store::Watched],
) -> Result<bool, Error> {
    for w in watched {
        if s.store.version_in(w.db, &w.key)? != w.version {
            return Ok(true);
        }
    }
    Ok(false)
}
