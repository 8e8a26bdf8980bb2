//! The CONFIG subcommands, one handler each: GET, SET, RESETSTAT, REWRITE,
//! HELP over the run-time settings (`settings.rs` says which parameters
//! are live, accepted with no effect, or fixed).
//!
//! Invariants:
//! - CONFIG SET changes all the pairs it is given or none, with Redis's
//!   error texts (`settings::Settings::set`).
//! - CONFIG REWRITE writes the parameters changed at run time into the
//!   TOML file the server started with, keeping its comments and layout
//!   (`config_rewrite.rs`); without a file it fails as Redis does.
//! - CONFIG RESETSTAT zeroes what Redis zeroes: the `INFO stats` counters,
//!   `commandstats` and `errorstats` (not the gauges: clients, memory).

use std::sync::atomic::Ordering;

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::session::{is, syntax, Counters, Session};

const CONFIG_HELP: [&str; 11] = [
    "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "GET <pattern> [<pattern> ...]",
    "    The parameters whose names match the glob-like patterns, with their values.",
    "SET <directive> <value> [<directive> <value> ...]",
    "    Change the parameters; all of them or, if one is refused, none.",
    "RESETSTAT",
    "    Zero the statistics INFO reports (stats, commandstats, errorstats).",
    "REWRITE",
    "    Write the parameters changed by CONFIG SET into the config file.",
    "HELP",
    "    Print this help.",
];

/// CONFIG RESETSTAT
pub fn resetstat(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    reset_stats(s);
    s.out.ok();
    Ok(())
}

/// CONFIG HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&CONFIG_HELP);
    Ok(())
}

/// CONFIG REWRITE: the changed parameters into the config file.
pub fn rewrite(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let Some(path) = &s.shared.config_file else {
        return Err(Error::new(
            "ERR The server is running without a config file",
        ));
    };
    let settings = &s.shared.settings;
    let mut entries = crate::config_rewrite::changed_entries(settings);
    entries.push(replicaof_entry(s));
    if s.shared.acl.aclfile().is_none() {
        entries.push(users_entry(s));
    }
    crate::config_rewrite::rewrite(path, settings, &entries)
        .map_err(|e| Error::new(format!("ERR Rewriting config file: {e}")))?;
    s.out.ok();
    Ok(())
}

/// The `replicaof` key as the server follows now: `host port`, or removed
/// when it follows no master (as Redis rewrites its `replicaof` line).
fn replicaof_entry(s: &Session) -> crate::config_rewrite::Entry {
    let now = s
        .shared
        .repl
        .lock_state()
        .master
        .as_ref()
        .map(|m| format!("{} {}", m.host, m.port));
    crate::config_rewrite::Entry {
        name: "replicaof".into(),
        value: now.map(String::into_bytes),
        form: crate::settings::TomlForm::Text,
        top_level: true,
    }
}

/// The `user` list: every user as `ACL LIST` shows it, without `user`.
fn users_entry(s: &Session) -> crate::config_rewrite::Entry {
    let lines: Vec<String> = s
        .shared
        .acl
        .list()
        .into_iter()
        .map(|(name, described)| format!("{name} {described}"))
        .collect();
    crate::config_rewrite::Entry {
        name: "user".into(),
        value: Some(lines.join("\n").into_bytes()),
        form: crate::settings::TomlForm::Lines,
        top_level: true,
    }
}

/// CONFIG GET pattern ...: a map of the matching parameters.
pub fn get(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let patterns: Vec<&[u8]> = a.from(2).collect();
    let hits = s.shared.settings.get(&patterns);
    s.out.map(hits.len());
    for (name, value) in hits {
        s.out.bulk(&name);
        s.out.bulk(&value);
    }
    Ok(())
}

/// CONFIG SET name value [name value ...].
pub fn set(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() % 2 == 1 {
        return Err(syntax());
    }
    let args: Vec<&[u8]> = a.from(2).collect();
    let pairs: Vec<(&[u8], &[u8])> = args.chunks(2).map(|p| (p[0], p[1])).collect();
    s.shared
        .settings
        .set(&pairs)
        .map_err(|e| Error::new(format!("ERR {e}")))?;
    // As in Redis 7, requirepass is the default user's password.
    if let Some((_, password)) = pairs.iter().rev().find(|(n, _)| is(n, "requirepass")) {
        s.shared.acl.set_requirepass(s.commands, password);
    }
    s.out.ok();
    Ok(())
}

/// Zeroes the server's statistics and this connection's pending counts
/// (other connections' pending counts are dropped when they publish).
fn reset_stats(s: &mut Session) {
    for counter in s.shared.stats.resettable() {
        counter.store(0, Ordering::Relaxed);
    }
    s.counters = Counters::default();
    let shared = s.shared.clone();
    shared.command_stats.reset(&mut s.tally, &mut s.out.errors);
}
