//! The ACL subcommands (SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI,
//! CAT, GENPASS, LOG, DRYRUN, SAVE, LOAD, HELP), one handler each, over
//! the server's user registry (`acl/`).
//!
//! Invariants:
//! - Replies have Redis 7.0's shapes (GETUSER's map of flags, passwords,
//!   commands, keys, channels, selectors; LOG's entries as maps).
//! - Clients follow their user: DELUSER and LOAD close the clients of the
//!   users they remove (the caller after its reply), and a SETUSER that
//!   takes a channel away closes that user's clients subscribed to it.

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::acl::log::{Context, Reason};
use crate::acl::{self, categories, selector::Selector, user::User};
use crate::client::ClientInfo;
use crate::session::{arity, int_arg, is, subcommand_syntax, Flow, Session};

const ACL_HELP: [&str; 28] = [
    "ACL <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CAT [<category>]",
    "    List all commands that belong to <category>, or all command categories",
    "    when no category is specified.",
    "DELUSER <username> [<username> ...]",
    "    Delete a list of users.",
    "DRYRUN <username> <command> [<arg> ...]",
    "    Returns whether the user can execute the given command without executing the command.",
    "GETUSER <username>",
    "    Get the user's details.",
    "GENPASS [<bits>]",
    "    Generate a secure 256-bit user password. The optional `bits` argument can",
    "    be used to specify a different size.",
    "LIST",
    "    Show users details in config file format.",
    "LOAD",
    "    Reload users from the ACL file.",
    "LOG [<count> | RESET]",
    "    Show the ACL log entries.",
    "SAVE",
    "    Save the current config to the ACL file.",
    "SETUSER <username> <attribute> [<attribute> ...]",
    "    Create or modify a user with the specified attributes.",
    "USERS",
    "    List all the registered usernames.",
    "WHOAMI",
    "    Return the current connection username.",
    "HELP",
];

/// ACL HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let mut lines = ACL_HELP.to_vec();
    lines.push("    Print this help.");
    s.out.simple_lines(&lines);
    Ok(())
}

/// ACL WHOAMI
pub fn whoami(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.bulk(s.user.name.as_bytes());
    Ok(())
}

/// ACL USERS: the user names, sorted.
pub fn users(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let list = s.shared.acl.list();
    s.out.array(list.len());
    for (name, _) in list {
        s.out.bulk(name.as_bytes());
    }
    Ok(())
}

/// ACL LIST: each user as an ACL file line.
pub fn list(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let list = s.shared.acl.list();
    s.out.array(list.len());
    for (name, described) in list {
        s.out.bulk(format!("user {name} {described}").as_bytes());
    }
    Ok(())
}

/// ACL SETUSER name rule ...
pub fn setuser(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let rules: Vec<&[u8]> = a.from(3).collect();
    let all = s.shared.settings.acl_pubsub_all_channels();
    let user = s
        .shared
        .acl
        .set_user(s.commands, a.get(2), &rules, all)
        .map_err(Error::new)?;
    close_revoked_subscribers(s, &user);
    s.out.ok();
    Ok(())
}

/// Closes the clients of `user` subscribed to a channel or pattern its
/// rules no longer allow.
fn close_revoked_subscribers(s: &mut Session, user: &User) {
    let clients = clients_of(s, &user.name);
    for c in clients {
        let (channels, patterns) = s.shared.pubsub.subscriptions_of(c.id);
        if !acl::may_stay_subscribed(user, &channels, &patterns) {
            close(s, &c);
        }
    }
}

fn clients_of(s: &Session, name: &str) -> Vec<std::sync::Arc<ClientInfo>> {
    let clients = s.shared.clients.lock().unwrap_or_else(|e| e.into_inner());
    clients
        .values()
        .filter(|c| c.user_name() == name)
        .cloned()
        .collect()
}

/// Closes client `c` (the caller after its reply).
fn close(s: &mut Session, c: &ClientInfo) {
    if c.id == s.info.id {
        s.flow = Flow::Close;
    } else {
        c.kill();
    }
}

/// ACL DELUSER name ...: how many were deleted; their clients are closed.
pub fn deluser(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let names: Vec<&[u8]> = a.from(2).collect();
    let deleted = s.shared.acl.delete(&names).map_err(Error::new)?;
    for name in &deleted {
        for c in clients_of(s, name) {
            close(s, &c);
        }
    }
    s.out.int(deleted.len() as i64);
    Ok(())
}

/// ACL GETUSER name: the user's flags, passwords, root selector and added
/// selectors; nil for no such user.
pub fn getuser(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let Some(user) = s.shared.acl.user(a.get(2)) else {
        s.out.null();
        return Ok(());
    };
    let rules = user.rules().clone();
    let out = &mut s.out;
    out.map(6);
    out.bulk(b"flags");
    let flags = rules.flags();
    out.array(flags.len());
    for f in flags {
        out.bulk(f.as_bytes());
    }
    out.bulk(b"passwords");
    out.array(rules.passwords.len());
    for p in &rules.passwords {
        out.bulk(p.as_bytes());
    }
    selector_fields(out, &rules.root);
    out.bulk(b"selectors");
    out.array(rules.selectors.len());
    for sel in &rules.selectors {
        out.map(3);
        selector_fields(out, sel);
    }
    Ok(())
}

/// A selector's `commands`, `keys` and `channels` fields.
fn selector_fields(out: &mut persimmon_resp::Reply, sel: &Selector) {
    for (field, value) in [
        ("commands", sel.command_rules()),
        ("keys", sel.key_rules()),
        ("channels", sel.channel_rules()),
    ] {
        out.bulk(field.as_bytes());
        out.bulk(value.as_bytes());
    }
}

/// ACL CAT [category]: the categories, or the commands of one.
pub fn cat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    match a.len() {
        2 => {
            s.out.array(categories::NAMES.len());
            for n in categories::NAMES {
                s.out.bulk(n.as_bytes());
            }
        }
        3 => {
            let mask = categories::bit(a.get(2)).ok_or_else(|| {
                Error::new(format!(
                    "ERR Unknown category '{}'",
                    String::from_utf8_lossy(a.get(2))
                ))
            })?;
            let names: Vec<&str> = s
                .commands
                .rows()
                .iter()
                .filter(|spec| categories::of(spec.flags, spec.group) & mask != 0)
                .map(|spec| spec.name)
                .collect();
            s.out.array(names.len());
            for n in names {
                s.out.bulk(n.as_bytes());
            }
        }
        _ => return Err(subcommand_syntax("acl", a.get(1))),
    }
    Ok(())
}

/// ACL GENPASS [bits]: a random password of `bits` bits (256 by default)
/// in hex.
pub fn genpass(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let bits = match a.len() {
        2 => 256,
        3 => int_arg(a.get(2))
            .ok()
            .filter(|b| (1..=4096).contains(b))
            .ok_or_else(|| {
                Error::new(
                    "ERR ACL GENPASS argument must be the number of bits for the output \
                     password, a positive number up to 4096",
                )
            })?,
        _ => return Err(subcommand_syntax("acl", a.get(1))),
    };
    let chars = (bits as usize).div_ceil(4);
    let bytes = random_bytes(chars.div_ceil(2)).map_err(|e| Error::new(format!("ERR {e}")))?;
    let hex: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    s.out.bulk(&hex.as_bytes()[..chars]);
    Ok(())
}

fn random_bytes(n: usize) -> std::io::Result<Vec<u8>> {
    use std::io::Read;
    let mut buf = vec![0; n];
    std::fs::File::open("/dev/urandom")?.read_exact(&mut buf)?;
    Ok(buf)
}

/// ACL LOG [count | RESET]
pub fn log(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let count = match a.len() {
        2 => None,
        3 if is(a.get(2), "RESET") => {
            s.shared.acl.log.reset();
            s.out.ok();
            return Ok(());
        }
        3 => Some(
            int_arg(a.get(2))
                .ok()
                .filter(|n| *n >= 0)
                .ok_or_else(|| Error::new("ERR value is out of range, must be positive"))?
                as usize,
        ),
        _ => return Err(subcommand_syntax("acl", a.get(1))),
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    let out = &mut s.out;
    s.shared.acl.log.with_newest(count, |entries| {
        let entries: Vec<_> = entries.collect();
        out.array(entries.len());
        for e in entries {
            log_entry(out, e, now);
        }
    });
    Ok(())
}

fn log_entry(out: &mut persimmon_resp::Reply, e: &acl::log::Entry, now_ms: u64) {
    let ev = &e.event;
    out.map(10);
    out.bulk(b"count");
    out.int(e.count as i64);
    for (field, value) in [
        ("reason", ev.reason.name()),
        ("context", ev.context.name()),
        ("object", &ev.object),
        ("username", &ev.username),
    ] {
        out.bulk(field.as_bytes());
        out.bulk(value.as_bytes());
    }
    out.bulk(b"age-seconds");
    let age = now_ms.saturating_sub(e.created_ms) as f64 / 1000.0;
    out.double(age, &format!("{age:.3}"));
    out.bulk(b"client-info");
    out.bulk(ev.client_info.trim_end().as_bytes());
    out.bulk(b"entry-id");
    out.int(e.id as i64);
    out.bulk(b"timestamp-created");
    out.int(e.created_ms as i64);
    out.bulk(b"timestamp-last-updated");
    out.int(e.updated_ms as i64);
}

/// ACL DRYRUN user command arg ...: OK, or why the user may not run it.
pub fn dryrun(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let name = a.get(2);
    let user = s.shared.acl.user(name).ok_or_else(|| {
        Error::new(format!(
            "ERR User '{}' not found",
            String::from_utf8_lossy(name)
        ))
    })?;
    let words: Vec<&[u8]> = a.from(3).collect();
    let index = match s.commands.resolve(words.iter().copied()) {
        Some(Ok(i) | Err(i)) => i,
        None => {
            return Err(Error::new(format!(
                "ERR Command '{}' not found",
                String::from_utf8_lossy(words[0])
            )))
        }
    };
    let spec = s.commands.row(index);
    if !spec.arity_ok(words.len()) {
        return Err(arity(spec.name));
    }
    match acl::check(&user, s.commands, index, &words) {
        Ok(()) => s.out.ok(),
        Err(d) => s
            .out
            .bulk(acl::dry_run_text(&d, spec.name, &words).as_bytes()),
    }
    Ok(())
}

/// ACL SAVE
pub fn save(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared
        .acl
        .save()
        .map_err(|e| Error::new(format!("ERR {e}")))?;
    s.out.ok();
    Ok(())
}

/// ACL LOAD: every user from the ACL file; the clients of the users it
/// replaced are closed.
pub fn load(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let all = s.shared.settings.acl_pubsub_all_channels();
    let gone = s
        .shared
        .acl
        .load(s.commands, all)
        .map_err(|e| Error::new(format!("ERR {e}")))?;
    for name in &gone {
        for c in clients_of(s, name) {
            close(s, &c);
        }
    }
    s.user = s
        .shared
        .acl
        .user(s.user.name.as_bytes())
        .unwrap_or_else(|| s.user.clone());
    s.out.ok();
    Ok(())
}

/// The `ACL LOG` event for a failed authentication as `user`.
pub fn auth_failure(user: &[u8], client_info: String) -> acl::log::Event {
    acl::log::Event {
        reason: Reason::Auth,
        context: Context::Toplevel,
        object: "AUTH".into(),
        username: String::from_utf8_lossy(user).into_owned(),
        client_info,
    }
}
