//! MONITOR: the client becomes one of the monitors, fed every command the
//! server runs from now on (`monitor.rs` keeps the feed, `observe.rs`
//! feeds it, the connection writes it; RESET or closing ends it).
//!
//! Invariant: a client is a monitor at most once (MONITOR again only
//! replies OK).

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::session::Session;

/// MONITOR
pub fn monitor(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    if s.monitor.is_none() {
        s.monitor = Some(s.shared.monitors.watch(s.info.clone()));
    }
    s.out.ok();
    Ok(())
}
