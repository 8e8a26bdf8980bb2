//! What operators see of each command that runs: the `MONITOR` feed, the
//! slow log and the latency events. The dispatch calls [`before`] and
//! [`after`] around every handler call (in `dispatch::run`, the one place
//! every command, queued `EXEC` command and script command passes).
//!
//! Invariants:
//! - With no monitor attached, the slow log off or the command faster than
//!   its threshold, and the latency monitor off or the command faster than
//!   its threshold, a command costs three relaxed loads and two compares
//!   here (its time is measured by the dispatch).
//! - The monitor feed shows a command after it ran (so `MULTI`, the queued
//!   commands, then `EXEC`), with the arguments the client sent; a row
//!   flagged `skip_monitor` (EVAL, FCALL: their own commands follow them)
//!   is shown before it runs; `admin` rows are never shown; a script's
//!   commands are shown as the `lua` client's.
//! - The slow log keeps commands as the client sent them (not as they
//!   propagate), never `skip_slowlog` rows (`EXEC`: its commands are
//!   logged one by one) nor a script's own commands; a command that
//!   blocked is logged when it replies ([`blocked_replied`]).
//! - A pipeline's grouped runs (`pipeline.rs`) bypass the dispatch: they
//!   are not taken while [`wants_each`] says a view needs every command.

use persimmon_resp::Args;

use crate::clock::unix_time;
use crate::session::{Session, Spec};
use crate::slowlog::{trimmed, Entry};

/// Before row `spec` runs: a `skip_monitor` row is fed to the monitors.
#[inline]
pub fn before(s: &Session, spec: &Spec, args: &Args<'_>) {
    if s.shared.monitors.any() && spec.flags.contains(&"skip_monitor") {
        feed(s, args);
    }
}

/// After row `spec` ran for `nanos`: the monitors, the slow log, the
/// latency events.
#[inline]
pub fn after(s: &mut Session, spec: &Spec, args: &Args<'_>, nanos: u64) {
    if s.shared.monitors.any()
        && !spec.flags.contains(&"skip_monitor")
        && !spec.flags.contains(&"admin")
    {
        feed(s, args);
    }
    let micros = nanos / 1000;
    let slower_than = s.shared.settings.slowlog_slower_than();
    if slower_than >= 0 && micros >= slower_than as u64 {
        slow(s, spec, args, micros);
    }
    let threshold = s.shared.settings.latency_threshold();
    if threshold > 0 && micros / 1000 >= threshold {
        let event = match spec.flags.contains(&"fast") {
            true => "fast-command",
            false => "command",
        };
        s.shared
            .latency
            .add(event, unix_time().as_secs(), micros / 1000);
    }
}

/// Whether every request must run through the dispatch on its own, not
/// in a pipeline's grouped run (`pipeline.rs`), so these views see it: a
/// monitor is attached, or the slow log keeps every command. (Otherwise a
/// grouped run's commands share the run's time, and are not slow-logged
/// one by one.)
#[inline]
pub fn wants_each(s: &Session) -> bool {
    s.shared.monitors.any() || s.shared.settings.slowlog_slower_than() == 0
}

/// A command that blocked replied: its slow-log entry, kept since it
/// blocked, is logged now.
pub fn blocked_replied(s: &mut Session) {
    if let Some(entry) = s.slow_pending.take() {
        let max = s.shared.settings.slowlog_max_len();
        s.shared.slowlog.push(entry, max);
    }
}

fn feed(s: &Session, args: &Args<'_>) {
    let words: Vec<&[u8]> = args.iter().collect();
    let source = match s.in_script {
        true => "lua".to_string(),
        false => s.info.addr.to_string(),
    };
    let limit = s.shared.settings.output_buffer_limit();
    s.shared.monitors.feed(s.store.db, &source, &words, limit);
}

fn slow(s: &mut Session, spec: &Spec, args: &Args<'_>, micros: u64) {
    if spec.flags.contains(&"skip_slowlog") || s.in_script {
        return;
    }
    let words: Vec<&[u8]> = args.iter().collect();
    let hidden = crate::redact::redacted(&words).unwrap_or_default();
    let name = s
        .info
        .name
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clone();
    let entry = Entry {
        id: 0,
        unix_secs: unix_time().as_secs(),
        micros,
        args: trimmed(&words, &hidden),
        addr: s.info.addr.to_string(),
        name,
    };
    if s.flow == crate::session::Flow::Block {
        s.slow_pending = Some(entry);
        return;
    }
    let max = s.shared.settings.slowlog_max_len();
    s.shared.slowlog.push(entry, max);
}
