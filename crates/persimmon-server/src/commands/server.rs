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
use crate::session::{
    exact_arity, int_arg, is, not_a_subcommand, subcommand_syntax, syntax, Flow, Session,
};
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

const FUNCTION_HELP: [&str; 11] = [
    "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "LIST [LIBRARYNAME <pattern>] [WITHCODE]",
    "    The libraries loaded: always none (persimmon runs no scripts).",
    "FLUSH [ASYNC|SYNC]",
    "    Delete every library: there are none, so this only replies OK.",
    "LOAD, DELETE, DUMP, RESTORE, STATS, KILL",
    "    Refused: persimmon has no scripting engine.",
    "HELP",
    "    Print this help.",
    "",
    "FCALL and EVAL are not supported either.",
];

/// FUNCTION FLUSH [ASYNC|SYNC]: there is nothing to delete.
pub fn function_flush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match a.len() {
        2 => {}
        3 if is(a.get(2), "ASYNC") || is(a.get(2), "SYNC") => {}
        3 => {
            return Err(Error::new(
                "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
            ))
        }
        _ => return Err(subcommand_syntax("function", a.get(1))),
    }
    s.out.ok();
    Ok(())
}

/// FUNCTION LIST [LIBRARYNAME pattern] [WITHCODE]: no libraries.
pub fn function_list(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    function_list_options(&a)?;
    s.out.array(0);
    Ok(())
}

/// FUNCTION HELP
pub fn function_help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&FUNCTION_HELP);
    Ok(())
}

/// FUNCTION with a subcommand the table does not have: the ones that would
/// add, show or run a library are refused, the others are unknown.
pub fn function(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let sub = a.get(1);
    if ["LOAD", "DELETE", "DUMP", "RESTORE", "STATS", "KILL"]
        .iter()
        .any(|name| is(sub, name))
    {
        return Err(Error::new(format!(
            "ERR FUNCTION {} is not supported: persimmon has no scripting engine",
            String::from_utf8_lossy(sub).to_ascii_uppercase()
        )));
    }
    not_a_subcommand(s, a)
}

const SCRIPT_HELP: [&str; 11] = [
    "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "EXISTS <sha1> [<sha1> ...]",
    "    0 for each: the script cache is always empty (persimmon runs no scripts).",
    "FLUSH [ASYNC|SYNC]",
    "    Empty the script cache: it is empty, so this only replies OK.",
    "KILL",
    "    Kill the running script: none ever runs (NOTBUSY).",
    "LOAD <script>",
    "    Refused: persimmon has no scripting engine.",
    "HELP",
    "    Print this help.",
];

/// SCRIPT KILL: no script ever runs, so Redis's `NOTBUSY` (what Sentinel
/// gets when it sends SCRIPT KILL to an instance it thinks busy).
pub fn script_kill(_s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    Err(Error::new("NOTBUSY No scripts in execution right now."))
}

/// SCRIPT FLUSH [ASYNC|SYNC]: the cache is always empty.
pub fn script_flush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match a.len() {
        2 => {}
        3 if is(a.get(2), "ASYNC") || is(a.get(2), "SYNC") => {}
        3 => {
            return Err(Error::new(
                "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
            ))
        }
        _ => return Err(subcommand_syntax("script", a.get(1))),
    }
    s.out.ok();
    Ok(())
}

/// SCRIPT EXISTS sha1 [sha1 ...]: 0 for each.
pub fn script_exists(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() < 3 {
        return Err(subcommand_syntax("script", a.get(1)));
    }
    s.out.array(a.len() - 2);
    for _ in a.from(2) {
        s.out.int(0);
    }
    Ok(())
}

/// SCRIPT HELP
pub fn script_help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&SCRIPT_HELP);
    Ok(())
}

/// SCRIPT with a subcommand the table does not have: LOAD is refused, the
/// others are unknown.
pub fn script(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if is(a.get(1), "LOAD") {
        exact_arity(&a, 3, "script|load")?;
        return Err(Error::new(
            "ERR SCRIPT LOAD is not supported: persimmon has no scripting engine",
        ));
    }
    not_a_subcommand(s, a)
}

/// Checks FUNCTION LIST's options (WITHCODE, LIBRARYNAME pattern).
fn function_list_options(a: &Args<'_>) -> Result<(), Error> {
    let (mut with_code, mut library) = (false, false);
    let mut i = 2;
    while i < a.len() {
        let opt = a.get(i);
        if !with_code && is(opt, "WITHCODE") {
            with_code = true;
        } else if !library && is(opt, "LIBRARYNAME") {
            if i + 1 >= a.len() {
                return Err(Error::new("ERR library name argument was not given"));
            }
            library = true;
            i += 1;
        } else {
            return Err(Error::new(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(opt)
            )));
        }
        i += 1;
    }
    Ok(())
}
