//! CLIENT PAUSE and CLIENT UNPAUSE (the pause itself, and how a held
//! client waits, is `pause.rs`; the connection checks it before each
//! request).
//!
//! Invariant: the arguments are checked as Redis checks them (the timeout
//! in milliseconds, an integer at least 0; the mode `WRITE` or `ALL`,
//! `ALL` when none is given) before anything is paused.

use std::time::{Duration, Instant};

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::pause::Kind;
use crate::session::{is, syntax, Session};

/// CLIENT PAUSE timeout [WRITE|ALL]
pub fn client_pause(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let ms = persimmon_resp::parse_i64(a.get(2))
        .ok_or_else(|| Error::new("ERR timeout is not an integer or out of range"))?;
    if ms < 0 {
        return Err(Error::new("ERR timeout is negative"));
    }
    let kind = match a.len() {
        3 => Kind::All,
        4 if is(a.get(3), "WRITE") => Kind::Write,
        4 if is(a.get(3), "ALL") => Kind::All,
        _ => return Err(syntax()),
    };
    let until = Instant::now() + Duration::from_millis(ms as u64);
    s.shared.pause.pause(kind, until);
    s.out.ok();
    Ok(())
}

/// CLIENT UNPAUSE
pub fn client_unpause(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared.pause.unpause();
    s.out.ok();
    Ok(())
}
