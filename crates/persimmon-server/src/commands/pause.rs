//! CLIENT PAUSE and CLIENT UNPAUSE (the pause itself, and how a held
//! client waits, is `pause.rs`; the connection checks it before each
//! request).
//!
//! Invariants:
//! - The arguments are checked as Redis checks them (the timeout in
//!   milliseconds, an integer at least 0; the mode `WRITE` or `ALL`, `ALL`
//!   when none is given) before anything is paused.
//! - While a pause is on, the engine's background expiry is held (as Redis
//!   stops expiring keys; expired keys still read as absent); when it ends
//!   (UNPAUSE, or its time is up) the keys that expired meanwhile are
//!   reclaimed at once and the expiry goes on.

use std::time::{Duration, Instant};

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::pause::Kind;
use crate::session::{blocking, is, syntax, Session};
use crate::shared::Shared;

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
    s.shared.keyspace.db.hold_expiry(true);
    // The pause ends by itself at `until` (unless extended): then the
    // expiry goes on.
    if let Ok(runtime) = tokio::runtime::Handle::try_current() {
        let shared = s.shared.clone();
        runtime.spawn(async move {
            tokio::time::sleep_until(until.into()).await;
            if shared.pause.holding(true).is_none() {
                resume_expiry(&shared);
            }
        });
    }
    s.out.ok();
    Ok(())
}

/// CLIENT UNPAUSE
pub fn client_unpause(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared.pause.unpause();
    resume_expiry(&s.shared);
    s.out.ok();
    Ok(())
}

/// After a pause: the keys that expired during it are reclaimed now (and
/// counted in `expired_keys`), then the background expiry goes on.
fn resume_expiry(shared: &Shared) {
    let db = &shared.keyspace.db;
    db.hold_expiry(false);
    let _ = blocking(|| db.expire_now());
}
