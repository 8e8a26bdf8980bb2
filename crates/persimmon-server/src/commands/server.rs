//! Server commands: COMMAND, CONFIG, DBSIZE, SHUTDOWN (INFO has its own
//! module).
//!
//! Invariants:
//! - COMMAND reads the table through `Session::commands` instead of
//!   importing it: the table sits above the handlers, and an import would
//!   close a loop.
//! - The configuration is fixed at startup (CONFIG SET is refused), so what
//!   CONFIG GET shows is what the server runs with.
//! - SHUTDOWN only asks the listener to stop; the listener closes the pool
//!   once every connection task has ended, so no write is cut in half.

use std::sync::atomic::Ordering;

use crate::glob;
use crate::protocol::Args;
use crate::reply::Reply;
use crate::session::{
    arity, exact_arity, is, syntax, unknown_subcommand, Error, Flow, Session, Spec,
};
use crate::shared::Shared;

/// Writes one command's `COMMAND INFO` entry (Redis 7's ten fields).
fn command_entry(out: &mut Reply, spec: &Spec) {
    out.array(10);
    out.bulk(spec.name.as_bytes());
    out.int(spec.arity as i64);
    out.set(spec.flags.len());
    for f in spec.flags {
        out.simple(f);
    }
    out.int(spec.first_key as i64);
    out.int(spec.last_key as i64);
    out.int(spec.step as i64);
    let mut categories = vec![match spec.group {
        "string" => "@string",
        "hash" => "@hash",
        "sorted_set" => "@sortedset",
        "list" => "@list",
        "set" => "@set",
        "generic" => "@keyspace",
        "connection" => "@connection",
        _ => "@admin",
    }];
    if spec.flags.contains(&"write") {
        categories.push("@write");
    }
    if spec.flags.contains(&"readonly") {
        categories.push("@read");
    }
    categories.push(if spec.flags.contains(&"fast") {
        "@fast"
    } else {
        "@slow"
    });
    out.set(categories.len());
    for c in categories {
        out.simple(c);
    }
    out.array(0); // tips
    out.array(0); // key specs
    out.array(0); // subcommands
}

/// The entries of every command in the table.
fn command_entries(out: &mut Reply, commands: &[Spec]) {
    out.array(commands.len());
    for spec in commands {
        command_entry(out, spec);
    }
}

const COMMAND_HELP: [&str; 11] = [
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Return details about all commands.",
    "COUNT",
    "    Return the total number of commands.",
    "DOCS [<command-name> ...]",
    "    Return documentation details about commands.",
    "INFO [<command-name> ...]",
    "    Return details about the given commands, or all of them.",
    "LIST",
    "    Return the names of all commands.",
];

pub fn command(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let commands = s.commands;
    if a.len() == 1 {
        command_entries(&mut s.out, commands);
        return Ok(());
    }
    let sub = a.get(1);
    if is(sub, "COUNT") {
        exact_arity(&a, 2, "command|count")?;
        s.out.int(commands.len() as i64);
    } else if is(sub, "INFO") {
        command_info(s, &a);
    } else if is(sub, "DOCS") {
        command_docs(s, &a);
    } else if is(sub, "LIST") {
        s.out.array(commands.len());
        for spec in commands {
            s.out.bulk(spec.name.as_bytes());
        }
    } else if is(sub, "HELP") {
        s.out.simple_lines(&COMMAND_HELP);
    } else {
        return Err(unknown_subcommand("command", sub));
    }
    Ok(())
}

/// COMMAND INFO [name ...]: every command without names; a null entry for
/// a name the table does not have.
fn command_info(s: &mut Session, a: &Args<'_>) {
    if a.len() == 2 {
        command_entries(&mut s.out, s.commands);
        return;
    }
    s.out.array(a.len() - 2);
    for name in a.from(2) {
        match s.command_named(name) {
            Some(spec) => command_entry(&mut s.out, spec),
            None => s.out.null_array(),
        }
    }
}

/// COMMAND DOCS [name ...]: every command without names; names the table
/// does not have are left out.
fn command_docs(s: &mut Session, a: &Args<'_>) {
    let specs: Vec<&Spec> = if a.len() == 2 {
        s.commands.iter().collect()
    } else {
        a.from(2).filter_map(|n| s.command_named(n)).collect()
    };
    s.out.map(specs.len());
    for spec in specs {
        s.out.bulk(spec.name.as_bytes());
        s.out.map(3);
        s.out.bulk(b"summary");
        s.out.bulk(spec.summary.as_bytes());
        s.out.bulk(b"since");
        s.out.bulk(b"1.0.0");
        s.out.bulk(b"group");
        s.out.bulk(spec.group.as_bytes());
    }
}

/// The parameters `CONFIG GET` knows, with their current values.
fn config_params(shared: &Shared) -> Vec<(&'static str, String)> {
    let c = &shared.config;
    let l = &c.limits;
    let yes_no = |b: bool| if b { "yes" } else { "no" }.to_string();
    let pool_dir = c
        .pool
        .parent()
        .map(|p| p.display().to_string())
        .filter(|p| !p.is_empty())
        .unwrap_or_else(|| ".".into());
    vec![
        ("bind", c.bind.to_string()),
        ("port", shared.local_addr.port().to_string()),
        ("protected-mode", yes_no(c.protected_mode)),
        ("maxclients", l.maxclients.to_string()),
        ("proto-max-bulk-len", l.proto_max_bulk_len.to_string()),
        (
            "client-query-buffer-limit",
            l.query_buffer_limit.to_string(),
        ),
        (
            "client-output-buffer-limit",
            format!(
                "normal {} 0 0 replica 0 0 0 pubsub 0 0 0",
                l.output_buffer_limit
            ),
        ),
        (
            "client-output-stall-secs",
            l.output_stall.as_secs().to_string(),
        ),
        ("timeout", "0".into()),
        ("databases", "1".into()),
        // Persistence is the pool's: every write is durable when it is
        // acknowledged; there is no RDB snapshot or AOF to configure.
        ("save", String::new()),
        ("appendonly", "no".into()),
        ("appendfsync", "no".into()),
        ("maxmemory", "0".into()),
        ("maxmemory-policy", "noeviction".into()),
        ("dir", pool_dir),
        ("pool", c.pool.display().to_string()),
        ("durability", shared.db.durability().name().to_string()),
        ("ordered-index", yes_no(shared.db.has_ordered_index())),
        ("point-index", shared.db.point_index().name().to_string()),
        ("worker-threads", c.worker_threads.to_string()),
    ]
}

pub fn config(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let sub = a.get(1);
    if is(sub, "GET") {
        if a.len() < 3 {
            return Err(arity("config|get"));
        }
        let params = config_params(&s.shared);
        let patterns: Vec<Vec<u8>> = a.from(2).map(|p| p.to_ascii_lowercase()).collect();
        let hits: Vec<&(&str, String)> = params
            .iter()
            .filter(|(name, _)| patterns.iter().any(|p| glob::matches(p, name.as_bytes())))
            .collect();
        s.out.map(hits.len());
        for (name, value) in hits {
            s.out.bulk(name.as_bytes());
            s.out.bulk(value.as_bytes());
        }
    } else if is(sub, "SET") {
        return Err(Error::new(
            "ERR CONFIG SET is not supported: persimmon serve takes its settings from flags and \
             the config file at startup",
        ));
    } else if is(sub, "RESETSTAT") {
        let st = &s.shared.stats;
        for counter in [
            &st.total_connections_received,
            &st.rejected_connections,
            &st.total_commands_processed,
            &st.total_error_replies,
            &st.keyspace_hits,
            &st.keyspace_misses,
            &st.net_input_bytes,
            &st.net_output_bytes,
            &st.protocol_errors,
            &st.query_buffer_limit_disconnections,
            &st.output_buffer_limit_disconnections,
        ] {
            counter.store(0, Ordering::Relaxed);
        }
        s.out.ok();
    } else if is(sub, "HELP") {
        let lines = [
            "CONFIG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "GET <pattern>",
            "    Return parameters matching the glob-like <pattern> and their values.",
            "RESETSTAT",
            "    Reset statistics reported by the INFO command.",
            "HELP",
            "    Print this help.",
        ];
        s.out.simple_lines(&lines);
    } else {
        return Err(unknown_subcommand("config", sub));
    }
    Ok(())
}

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
