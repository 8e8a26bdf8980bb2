//! The COMMAND subcommands, one handler each: what the command table says
//! about each command, in Redis 7's shapes (COMMAND, COUNT, INFO, DOCS,
//! LIST [FILTERBY], GETKEYS, HELP).
//!
//! Invariants:
//! - Everything here is read from the table through `Session::commands`
//!   (the table sits above the handlers; importing it would close a loop),
//!   so every row, present and future, appears in every reply.
//! - As in Redis 7, a command's subcommands are rows of their own
//!   (`config|get`): COMMAND, INFO without names and DOCS give the commands,
//!   each with its subcommands inside (INFO's tenth field, DOCS'
//!   `subcommands` map); COUNT counts the commands; LIST names every row,
//!   each subcommand after its container; INFO and DOCS answer for a
//!   subcommand named `container|sub`.
//! - Keys (GETKEYS) are where the row of the request (a subcommand's, for
//!   a container) puts them (`Keys::positions`): its key finder's for the
//!   `movablekeys` rows, else its first key, last key and step.

use persimmon_resp::{Args, Reply};
use persimmon_types::Error;

use crate::glob;
use crate::session::{is, not_a_subcommand, syntax, CommandTable, Session, Spec};

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
        "geo" => Some("@geo"),
        "stream" => Some("@stream"),
        _ => None,
    };
    out.extend(group);
    out.push(if flag("fast") { "@fast" } else { "@slow" });
    if flag("blocking") {
        out.push("@blocking");
    }
    if flag("admin") {
        out.push("@dangerous");
    }
    out
}

/// Writes row `index`'s `COMMAND INFO` entry (Redis 7's ten fields, the
/// last its subcommands' entries).
fn command_entry(out: &mut Reply, commands: &CommandTable, index: usize) {
    let spec = commands.row(index);
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
    let subcommands = commands.subcommands(index);
    out.array(subcommands.len());
    for &sub in subcommands {
        command_entry(out, commands, sub);
    }
}

/// Writes row `index`'s `COMMAND DOCS` map (summary, since, group, and a
/// container's subcommands: their names and docs).
fn docs_entry(out: &mut Reply, commands: &CommandTable, index: usize) {
    let spec = commands.row(index);
    let subcommands = commands.subcommands(index);
    out.map(2 + spec.since.is_some() as usize + !subcommands.is_empty() as usize);
    out.bulk(b"summary");
    out.bulk(spec.summary.as_bytes());
    if let Some(since) = spec.since {
        out.bulk(b"since");
        out.bulk(since.as_bytes());
    }
    out.bulk(b"group");
    out.bulk(group(spec).as_bytes());
    if !subcommands.is_empty() {
        out.bulk(b"subcommands");
        out.map(subcommands.len());
        for &sub in subcommands {
            out.bulk(commands.row(sub).name.as_bytes());
            docs_entry(out, commands, sub);
        }
    }
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

/// COMMAND: every command's entry. With a subcommand the table does not
/// have: Redis's `unknown subcommand`.
pub fn command(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 1 {
        return not_a_subcommand(s, a);
    }
    let commands = s.commands;
    s.out.array(commands.commands().count());
    for index in commands.commands() {
        command_entry(&mut s.out, commands, index);
    }
    Ok(())
}

/// COMMAND COUNT: how many commands (subcommands aside).
pub fn count(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.int(s.commands.commands().count() as i64);
    Ok(())
}

/// COMMAND HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&COMMAND_HELP);
    Ok(())
}

/// The rows COMMAND INFO and DOCS answer for: every command without names
/// (`None` for a name the table does not have).
fn named_rows(commands: &CommandTable, a: &Args<'_>) -> Vec<Option<usize>> {
    if a.len() == 2 {
        commands.commands().map(Some).collect()
    } else {
        a.from(2).map(|n| commands.lookup(n)).collect()
    }
}

/// COMMAND INFO [name ...]: every command without names; a null entry for
/// a name the table does not have.
pub fn info(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let commands = s.commands;
    let rows = named_rows(commands, &a);
    s.out.array(rows.len());
    for row in rows {
        match row {
            Some(index) => command_entry(&mut s.out, commands, index),
            None => s.out.null_array(),
        }
    }
    Ok(())
}

/// COMMAND DOCS [name ...]: every command without names; names the table
/// does not have are left out.
pub fn docs(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let commands = s.commands;
    let rows: Vec<usize> = named_rows(commands, &a).into_iter().flatten().collect();
    s.out.map(rows.len());
    for index in rows {
        s.out.bulk(commands.row(index).name.as_bytes());
        docs_entry(&mut s.out, commands, index);
    }
    Ok(())
}

/// COMMAND LIST [FILTERBY MODULE name | ACLCAT category | PATTERN pattern]:
/// every command, each followed by its subcommands.
pub fn list(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
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
    let commands = s.commands;
    let names: Vec<&str> = commands
        .commands()
        .flat_map(|i| std::iter::once(i).chain(commands.subcommands(i).iter().copied()))
        .map(|i| commands.row(i))
        .filter(|spec| keep(spec))
        .map(|spec| spec.name)
        .collect();
    s.out.array(names.len());
    for name in names {
        s.out.bulk(name.as_bytes());
    }
    Ok(())
}

/// COMMAND GETKEYS name arg ...: the keys of that request, where its row
/// (a subcommand's, for a container) puts them.
pub fn getkeys(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let words: Vec<&[u8]> = a.from(2).collect();
    let Some(Ok(index)) = s.commands.resolve(words.iter().copied()) else {
        return Err(Error::new("ERR Invalid command specified"));
    };
    let spec = s.commands.row(index);
    if spec.keys.first == 0 && spec.keys.find.is_none() {
        return Err(Error::new("ERR The command has no key arguments"));
    }
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
