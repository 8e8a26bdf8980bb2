//! COMMAND: what the command table says about each command, in Redis 7's
//! shapes (COMMAND, COUNT, INFO, DOCS, LIST [FILTERBY], GETKEYS, HELP).
//!
//! Invariants:
//! - Everything here is read from the table through `Session::commands`
//!   (the table sits above the handlers; importing it would close a loop),
//!   so every row, present and future, appears in every reply.
//! - Keys (GETKEYS) are where the request's row puts them
//!   (`Keys::positions`): its key finder's for the `movablekeys` rows
//!   (SORT's STORE, the keys after a count), else its first key, last key
//!   and step, as Redis's legacy key ranges.

use crate::glob;
use crate::session::{arity, exact_arity, is, syntax, unknown_subcommand, Session, Spec};
use persimmon_resp::Args;
use persimmon_resp::Reply;
use persimmon_types::Error;

/// Flags of the table that steer the dispatch and are not Redis's (not
/// shown by COMMAND).
const INTERNAL_FLAGS: [&str; 2] = ["multi_control", "swaps_dbs"];

/// Redis's name of a command group (`sorted-set`, not `sorted_set`).
fn group(spec: &Spec) -> String {
    spec.group.replace('_', "-")
}

/// A command's ACL categories, as Redis derives them from its flags and
/// group.
fn categories(spec: &Spec) -> Vec<&'static str> {
    let flag = |f: &str| spec.flags.contains(&f);
    let mut out = Vec::new();
    if flag("admin") {
        out.push("@admin");
    }
    if flag("write") {
        out.push("@write");
    }
    if flag("readonly") {
        out.push("@read");
    }
    let group = match spec.group {
        "string" => Some("@string"),
        "hash" => Some("@hash"),
        "sorted_set" | "sorted-set" => Some("@sortedset"),
        "list" => Some("@list"),
        "set" => Some("@set"),
        "generic" => Some("@keyspace"),
        "connection" => Some("@connection"),
        "transactions" => Some("@transaction"),
        "scripting" => Some("@scripting"),
        _ => None,
    };
    out.extend(group);
    out.push(if flag("fast") { "@fast" } else { "@slow" });
    if flag("admin") {
        out.push("@dangerous");
    }
    out
}

/// Writes one command's `COMMAND INFO` entry (Redis 7's ten fields).
fn command_entry(out: &mut Reply, spec: &Spec) {
    out.array(10);
    out.bulk(spec.name.as_bytes());
    out.int(spec.arity as i64);
    let flags: Vec<&str> = spec
        .flags
        .iter()
        .copied()
        .filter(|f| !INTERNAL_FLAGS.contains(f))
        .collect();
    out.set(flags.len());
    for f in flags {
        out.simple(f);
    }
    out.int(spec.keys.first as i64);
    out.int(spec.keys.last as i64);
    out.int(spec.keys.step as i64);
    let categories = categories(spec);
    out.set(categories.len());
    for c in categories {
        out.simple(c);
    }
    out.array(0); // tips
    out.array(0); // key specs
    out.array(0); // subcommands
}

/// Writes one command's `COMMAND DOCS` map (summary, since, group).
fn docs_entry(out: &mut Reply, spec: &Spec) {
    out.map(2 + spec.since.is_some() as usize);
    out.bulk(b"summary");
    out.bulk(spec.summary.as_bytes());
    if let Some(since) = spec.since {
        out.bulk(b"since");
        out.bulk(since.as_bytes());
    }
    out.bulk(b"group");
    out.bulk(group(spec).as_bytes());
}

const COMMAND_HELP: [&str; 17] = [
    "COMMAND <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "(no subcommand)",
    "    Describe every command (as INFO does).",
    "COUNT",
    "    How many commands the server has.",
    "LIST [FILTERBY (MODULE <name>|ACLCAT <category>|PATTERN <pattern>)]",
    "    The names of the commands, all or those the filter keeps.",
    "INFO [<command-name> ...]",
    "    Arity, flags, key positions and categories of the named commands (all without names).",
    "DOCS [<command-name> ...]",
    "    Summary, version and group of the named commands (all without names).",
    "GETKEYS <full-command>",
    "    The keys the given command (name and arguments) would use.",
    "HELP",
    "    Print this help.",
    "",
    "Commands are named in any case; unknown names give nil (INFO) or nothing (DOCS).",
];

pub fn command(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let commands = s.commands.rows();
    if a.len() == 1 {
        s.out.array(commands.len());
        for spec in commands {
            command_entry(&mut s.out, spec);
        }
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
        command_list(s, &a)?;
    } else if is(sub, "GETKEYS") {
        command_getkeys(s, &a)?;
    } else if is(sub, "HELP") {
        exact_arity(&a, 2, "command|help")?;
        s.out.simple_lines(&COMMAND_HELP);
    } else {
        return Err(unknown_subcommand("command", sub));
    }
    Ok(())
}

/// COMMAND INFO [name ...]: every command without names; a null entry for
/// a name the table does not have.
fn command_info(s: &mut Session, a: &Args<'_>) {
    let specs: Vec<Option<&Spec>> = if a.len() == 2 {
        s.commands.rows().iter().map(Some).collect()
    } else {
        a.from(2).map(|n| s.commands.named(n)).collect()
    };
    s.out.array(specs.len());
    for spec in specs {
        match spec {
            Some(spec) => command_entry(&mut s.out, spec),
            None => s.out.null_array(),
        }
    }
}

/// COMMAND DOCS [name ...]: every command without names; names the table
/// does not have are left out.
fn command_docs(s: &mut Session, a: &Args<'_>) {
    let specs: Vec<&Spec> = if a.len() == 2 {
        s.commands.rows().iter().collect()
    } else {
        a.from(2).filter_map(|n| s.commands.named(n)).collect()
    };
    s.out.map(specs.len());
    for spec in specs {
        s.out.bulk(spec.name.as_bytes());
        docs_entry(&mut s.out, spec);
    }
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern].
fn command_list(s: &mut Session, a: &Args<'_>) -> Result<(), Error> {
    let keep: Box<dyn Fn(&Spec) -> bool> = match a.len() {
        2 => Box::new(|_| true),
        5 if is(a.get(2), "FILTERBY") => {
            let arg = a.get(4).to_ascii_lowercase();
            match a.get(3) {
                t if is(t, "MODULE") => Box::new(|_| false),
                t if is(t, "ACLCAT") => {
                    let wanted = format!("@{}", String::from_utf8_lossy(&arg));
                    Box::new(move |spec| categories(spec).contains(&wanted.as_str()))
                }
                t if is(t, "PATTERN") => {
                    Box::new(move |spec| glob::matches(&arg, spec.name.as_bytes()))
                }
                _ => return Err(syntax()),
            }
        }
        _ => return Err(syntax()),
    };
    let names: Vec<&str> = s
        .commands
        .rows()
        .iter()
        .filter(|spec| keep(spec))
        .map(|spec| spec.name)
        .collect();
    s.out.array(names.len());
    for name in names {
        s.out.bulk(name.as_bytes());
    }
    Ok(())
}

/// COMMAND GETKEYS name arg ...: the keys of that request.
fn command_getkeys(s: &mut Session, a: &Args<'_>) -> Result<(), Error> {
    if a.len() < 4 {
        return Err(arity("command|getkeys"));
    }
    let Some(spec) = s.commands.named(a.get(2)) else {
        return Err(Error::new("ERR Invalid command specified"));
    };
    if spec.keys.first == 0 && spec.keys.find.is_none() {
        return Err(Error::new("ERR The command has no key arguments"));
    }
    let words: Vec<&[u8]> = a.from(2).collect();
    if !spec.arity_ok(words.len()) {
        return Err(Error::new(
            "ERR Invalid number of arguments specified for command",
        ));
    }
    let positions = spec
        .keys
        .positions(&words)
        .ok_or_else(|| Error::new("ERR Invalid arguments specified for command"))?;
    s.out.array(positions.len());
    for p in positions {
        s.out.bulk(words[p]);
    }
    Ok(())
}
