//! The SLOWLOG subcommands, one handler each: GET, LEN, RESET, HELP. The
//! log itself, and what an entry keeps, is `slowlog.rs`; what is logged
//! is decided after each command (`observe.rs`).
//!
//! Invariant: an entry is replied as Redis 7.0 replies it: id, Unix time,
//! microseconds, the arguments, the client's address and name.

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::session::{int_arg, Session};

/// Entries `SLOWLOG GET` replies without a count.
const DEFAULT_COUNT: usize = 10;

const SLOWLOG_HELP: [&str; 12] = [
    "SLOWLOG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET [<count>]",
    "    Return top <count> entries from the slowlog (default: 10, -1 mean all).",
    "    Entries are made of:",
    "    id, timestamp, time in microseconds, arguments array, client IP and port,",
    "    client name",
    "LEN",
    "    Return the length of the slowlog.",
    "RESET",
    "    Reset the slowlog.",
    "HELP",
    "    Print this help.",
];

/// SLOWLOG GET [count]: the newest `count` entries (10; -1: all).
pub fn get(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(crate::session::arity("slowlog|get"));
    }
    let count = match a.len() {
        3 => match int_arg(a.get(2))? {
            -1 => None,
            n if n < -1 => {
                return Err(Error::new(
                    "ERR count should be greater than or equal to -1",
                ))
            }
            n => Some(n as usize),
        },
        _ => Some(DEFAULT_COUNT),
    };
    let entries = s.shared.slowlog.newest(count);
    s.out.array(entries.len());
    for e in entries {
        s.out.array(6);
        s.out.int(e.id as i64);
        s.out.int(e.unix_secs as i64);
        s.out.int(e.micros as i64);
        s.out.array(e.args.len());
        for arg in &e.args {
            s.out.bulk(arg);
        }
        s.out.bulk(e.addr.as_bytes());
        s.out.bulk(&e.name);
    }
    Ok(())
}

/// SLOWLOG LEN
pub fn len(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.int(s.shared.slowlog.len() as i64);
    Ok(())
}

/// SLOWLOG RESET
pub fn reset(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared.slowlog.reset();
    s.out.ok();
    Ok(())
}

/// SLOWLOG HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&SLOWLOG_HELP);
    Ok(())
}
