//! Server commands: SHUTDOWN, TIME, LASTSAVE, SAVE, BGSAVE, BGREWRITEAOF,
//! LOLWUT, and the FUNCTION and SCRIPT subcommands, one handler each
//! (COMMAND, CONFIG, INFO, MEMORY and the replication commands, WAIT among
//! them, have modules of their own; DBSIZE is in `keys`).
//!
//! Invariants:
//! - SHUTDOWN only asks the listener to stop; the listener closes the pool
//!   once every connection task has ended, so no write is cut in half.
//! - SAVE, BGSAVE and BGREWRITEAOF have nothing to do: every write is
//!   durable in the pool before its reply is sent. They reply as Redis
//!   does when it succeeds, and SAVE and BGSAVE set the time LASTSAVE
//!   reports.
//! - FUNCTION knows no libraries (scripts are not supported): FLUSH and
//!   LIST succeed on the empty set, the subcommands that would add or run
//!   one are refused (they have no rows: FUNCTION's own handler refuses
//!   them). SCRIPT likewise: KILL is `NOTBUSY`, FLUSH succeeds, EXISTS
//!   finds nothing, LOAD is refused.

use std::sync::atomic::Ordering;

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::clock::unix_time;
use crate::session::{int_arg, is, syntax, Flow, Session};
use crate::shared::Shared;

pub fn shutdown(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    for opt in a.from(1) {
        if is(opt, "ABORT") {
            return Err(Error::new("ERR No shutdown in progress."));
        }
        if !(is(opt, "NOSAVE") || is(opt, "SAVE") || is(opt, "NOW") || is(opt, "FORCE")) {
            return Err(syntax());
        }
    }
    eprintln!(
        "persimmon: SHUTDOWN from client {} ({}), closing the pool",
        s.info.id, s.info.addr
    );
    s.shared.scripts.stop_for_shutdown();
    s.shared.request_shutdown();
    s.flow = Flow::Shutdown;
    Ok(())
}

/// LOLWUT [VERSION n]: Redis replies its version after a drawing (none
/// for versions it has no drawing for); this is the no-drawing reply.
pub fn lolwut(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() >= 3 && is(a.get(1), "VERSION") {
        int_arg(a.get(2))?;
    }
    let text = format!(
        "Persimmon ver. {} (Redis {} commands)\n",
        env!("CARGO_PKG_VERSION"),
        crate::session::REDIS_COMPAT_VERSION
    );
    s.out.verbatim(text.as_bytes());
    Ok(())
}

pub fn time(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let now = unix_time();
    s.out.array(2);
    s.out.bulk(now.as_secs().to_string().as_bytes());
    s.out.bulk(now.subsec_micros().to_string().as_bytes());
    Ok(())
}

pub fn lastsave(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let at = s.shared.stats.last_save.load(Ordering::Relaxed);
    s.out.int(at as i64);
    Ok(())
}

/// Records a save: every write is already durable, so there is nothing
/// else to do.
fn saved(shared: &Shared) {
    let st = &shared.stats;
    st.last_save.store(unix_time().as_secs(), Ordering::Relaxed);
    st.saves.fetch_add(1, Ordering::Relaxed);
}

pub fn save(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    saved(&s.shared);
    s.out.ok();
    Ok(())
}

/// BGSAVE [SCHEDULE].
pub fn bgsave(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match a.len() {
        1 => {}
        2 if is(a.get(1), "SCHEDULE") => {}
        _ => return Err(syntax()),
    }
    saved(&s.shared);
    s.out.simple("Background saving started");
    Ok(())
}

pub fn bgrewriteaof(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared.stats.aof_rewrites.fetch_add(1, Ordering::Relaxed);
    s.out
        .simple("Background append only file rewriting started");
    Ok(())
}
