//! The dispatch: how a request becomes a handler call. It resolves the
//! request to its row of the session's table (for a container such as
//! CONFIG, the row of the subcommand `args[1]` names, in any case:
//! `config|get`), checks what every command gets checked (arity,
//! authentication, pub/sub context, `MULTI` queuing, settings such as
//! `maxmemory` and `min-replicas-to-write`, read-only replicas), holds the
//! database map and the replication stream's lock as the command needs,
//! runs the handler, counts it, collects what it propagates, and serves
//! the clients blocked on keys it wrote.
//!
//! Invariants:
//! - Every check, the count (`INFO commandstats`) and `CLIENT LIST`'s
//!   `cmd=` use the resolved row: a subcommand's own (`config|get`). A
//!   subcommand the table does not have resolves to its container's row,
//!   whose handler replies Redis's `unknown subcommand`; a container
//!   without a subcommand argument gets its own row's arity check.
//! - A handler runs only with an argument count its row allows, and before
//!   `AUTH` only if its row has `no_auth`.
//! - A handler runs only if the connection's user may run it on those keys
//!   and channels ([`permitted`], the one ACL check, see `acl/`): at the
//!   top level, when MULTI queues it and again when EXEC runs it, and for
//!   each `redis.call` of a script (both through [`run_queued`]).
//! - A failed command's reply is its error alone: whatever the handler
//!   queued before failing is dropped (an engine error after the update
//!   closure ran).
//! - Inside `MULTI` every command but the `multi_control` rows is queued;
//!   every command runs holding the database map (see
//!   `persimmon_types::dbs`), a row that `swaps_dbs` holding it exclusively.
//! - A command that may write takes the replication stream's turn before
//!   the map (see `repl/`), and appends its propagation before letting it
//!   go, so the stream has the writes in the order they took effect.
//! - Every request is counted for `INFO commandstats` as Redis counts it:
//!   a call (whether it replied an error, and for some calls the time,
//!   see `cmdstats`) when the handler ran, a refusal when a check stopped
//!   it.
//! - Every handler call is timed (two clock reads) and shown to the
//!   operators' views (`observe.rs`: monitors, slow log, latency events)
//!   in `run`, the one place every command passes.
//! - After every command, while the map is still held, the clients blocked
//!   on keys the command wrote are served (`commands/blocking.rs`), so a
//!   pushed element goes to a waiting BLPOP before the pusher's next
//!   command and before its reply leaves, as in Redis.
//!
//! The table is the session's (`Session::commands`), not imported: EXEC's
//! handler runs queued commands through here, and the table names that
//! handler.

use std::time::Instant;

use persimmon_resp::{Args, Request};
use persimmon_types::Error;

use crate::acl::log::Context;
use crate::commands::blocking::serve_ready;
use crate::commands::pubsub::DRAIN_BYTES;
use crate::session::{arity, shown, Session, Spec};

/// Redis's text for a command the table does not have (the first
/// arguments shown, up to about 128 bytes).
fn unknown_command(args: &Args<'_>) -> String {
    let mut text = String::new();
    for arg in args.from(1) {
        if text.len() >= 128 {
            break;
        }
        let room = 128 - text.len();
        text.push_str(&format!("'{}' ", shown(arg, room)));
    }
    format!(
        "ERR unknown command '{}', with args beginning with: {text}",
        shown(args.get(0), 128)
    )
}

/// The row request `args` runs as (see `CommandTable::resolve`): its
/// command's, its subcommand's, or for a subcommand the table does not
/// have, its container's. `None`: no such command.
fn row_of(s: &Session, args: &Args<'_>) -> Option<usize> {
    s.commands.resolve(args.iter()).map(|(Ok(i) | Err(i))| i)
}

/// Runs one request (at least one argument) and queues its reply; inside
/// `MULTI`, queues the request instead (or runs it, for the commands that
/// steer the transaction). Counts it as Redis does (`INFO commandstats`):
/// a call when the handler ran (whether it failed; its time when
/// `Tally::times` picks it), a refusal when a check stopped it.
pub fn execute(s: &mut Session, args: Args<'_>) {
    if s.pubsub.has_mailbox() {
        // Messages published before this command go before its reply.
        while s.pubsub.drain(&mut s.out, DRAIN_BYTES) {}
    }
    let mark = s.out.len();
    execute_one(s, args);
    crate::notify::flush(s);
    apply_reply_mode(s, mark);
}

/// `CLIENT REPLY OFF|SKIP`: drops the reply the command queued past `mark`.
fn apply_reply_mode(s: &mut Session, mark: usize) {
    use crate::session::ReplyMode;
    match s.reply_mode {
        ReplyMode::On => return,
        ReplyMode::Off => {}
        ReplyMode::SkipNext => s.reply_mode = ReplyMode::Skip,
        ReplyMode::Skip => s.reply_mode = ReplyMode::On,
    }
    // Pub/sub output (confirmations, messages) is sent all the same.
    let mut kept = Vec::new();
    for r in std::mem::take(&mut s.pushed) {
        if r.start >= mark && r.end <= s.out.len() {
            kept.extend_from_slice(&s.out.buf[r]);
        }
    }
    s.out.buf.truncate(mark);
    s.out.buf.extend_from_slice(&kept);
}

fn execute_one(s: &mut Session, args: Args<'_>) {
    let index = match checked(s, &args) {
        Ok(index) => index,
        Err((index, e)) => {
            if let Some(index) = index {
                s.tally.rejected(index);
            }
            if let Some(m) = &mut s.multi {
                m.failed = true;
            }
            if s.multi.is_some() && index.is_some_and(|i| s.commands.row(i).name == "exec") {
                // A refused EXEC ends the transaction, as Redis's does.
                s.multi = None;
                s.store.watched.clear();
                let text = e.0.trim_start_matches('-');
                s.out.error(&format!(
                    "EXECABORT Transaction discarded because of: {text}"
                ));
                return;
            }
            s.out.error(&e.0);
            return;
        }
    };
    let spec = s.commands.row(index);
    if let Some(m) = &mut s.multi {
        if !spec.flags.contains(&"multi_control") {
            m.queued.push(Request::of(&args));
            s.out.simple("QUEUED");
            return;
        }
    }
    // The stream's lock for a command that may write (see `repl`).
    let shared = s.commands.propagates(index).then(|| s.shared.clone());
    let mut turn = shared.as_ref().and_then(|sh| sh.repl.turn());
    let map = s.map.take().expect("the map is back between commands");
    if s.commands.swaps_dbs(index) {
        let _held = hold_in_turn(|| map.exclusive(), &shared, &mut turn);
        s.repl.active = turn.is_some();
        run(s, index, args);
        serve_ready(s);
    } else {
        {
            let _held = hold_in_turn(|| map.shared(), &shared, &mut turn);
            s.repl.active = turn.is_some();
            run(s, index, args);
            serve_ready(s);
        }
        if std::mem::take(&mut s.exec_escalate) {
            // An EXEC that kept losing to other writers: again, alone.
            let _held = hold_in_turn(|| map.exclusive(), &shared, &mut turn);
            s.repl.active = turn.is_some();
            s.exec_exclusive = true;
            run(s, index, args);
            s.exec_exclusive = false;
            serve_ready(s);
        }
    }
    s.map = Some(map);
    for step in std::mem::take(&mut s.repl_steps) {
        match turn.as_mut() {
            Some(stream) => crate::repl::role::finish(&s.shared, step, stream),
            None => crate::repl::role::finish_now(&s.shared, step),
        }
    }
    if let Some(stream) = turn.as_mut() {
        let replica = s.shared.repl.is_replica();
        let transaction = matches!(
            spec.name,
            "exec" | "eval" | "evalsha" | "fcall" | "xreadgroup"
        );
        crate::repl::client::flush(stream, &mut s.repl, transaction, replica);
    }
    s.repl.active = false;
}

/// The database map as `take` holds it, with the stream's turn taken first
/// when the command needs one it does not have (see `needs_turn`).
fn hold_in_turn<'t, G>(
    take: impl Fn() -> G,
    shared: &'t Option<std::sync::Arc<crate::shared::Shared>>,
    turn: &mut Option<std::sync::MutexGuard<'t, crate::repl::stream::Stream>>,
) -> G {
    loop {
        let held = take();
        if !needs_turn(shared, turn) {
            return held;
        }
        drop(held);
        *turn = shared.as_ref().and_then(|sh| sh.repl.turn());
    }
}

/// Whether a write holding the map must first take the stream's turn:
/// replication was turned on between its look and its taking the map (the
/// map is given back first: the turn is always taken before the map).
fn needs_turn(
    shared: &Option<std::sync::Arc<crate::shared::Shared>>,
    turn: &Option<std::sync::MutexGuard<'_, crate::repl::stream::Stream>>,
) -> bool {
    turn.is_none() && shared.as_ref().is_some_and(|sh| sh.repl.is_active())
}

/// The row of request `args` when it is exactly `name` with `argc`
/// arguments and would run now, as [`execute`] would run it, with no check
/// in the way: authenticated (or no password), outside `MULTI`, not
/// refused by the settings. `None` otherwise: then `execute` must run it
/// (and gives any refusal). For the pipeline's runs (`pipeline.rs`).
pub fn runnable_as(s: &Session, args: &Args<'_>, name: &str, argc: usize) -> Option<usize> {
    if args.len() != argc || !args.get(0).eq_ignore_ascii_case(name.as_bytes()) {
        return None;
    }
    let index = row_of(s, args)?;
    let spec = s.commands.row(index);
    let authenticated = s.authenticated || !s.shared.acl.auth_required();
    (spec.arity_ok(argc)
        && authenticated
        && s.user.unrestricted()
        && s.multi.is_none()
        && !s.pubsub.has_mailbox()
        && s.reply_mode == crate::session::ReplyMode::On
        && !crate::notify::enabled(s)
        && refused_by_settings(s, spec).is_none())
    .then_some(index)
}

/// The row of a request that may run: known, with an allowed argument
/// count, authenticated (or allowed before), and allowed in a transaction.
/// A refusal names the row when there is one.
fn checked(s: &mut Session, args: &Args<'_>) -> Result<usize, (Option<usize>, Error)> {
    let Some(index) = row_of(s, args) else {
        return Err((None, Error::new(unknown_command(args))));
    };
    let spec = s.commands.row(index);
    s.info
        .last_command
        .store(index + 1, std::sync::atomic::Ordering::Relaxed);
    let refuse = |e: Error| Err((Some(index), e));
    if !spec.arity_ok(args.len()) {
        return refuse(arity(spec.name));
    }
    if !s.authenticated && !spec.allowed_before_auth() && s.shared.acl.auth_required() {
        return refuse(Error::new("NOAUTH Authentication required."));
    }
    let context = match s.multi {
        Some(_) => Context::Multi,
        None => Context::Toplevel,
    };
    if let Err(e) = permitted(s, index, args, context) {
        return refuse(e);
    }
    if s.pubsub.active() && !s.out.resp3 && !crate::pubsub::allowed_while_subscribed(spec.name) {
        // Named as before subcommands had rows (`client`, where Redis 7
        // names the subcommand: `client|list`).
        return refuse(Error::new(format!(
            "ERR Can't execute '{}': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
             RESET are allowed in this context",
            spec.command_name()
        )));
    }
    if s.multi.is_some() && spec.flags.contains(&"no_multi") {
        return refuse(Error::new("ERR Command not allowed inside a transaction"));
    }
    if let Some(e) = refused_by_settings(s, spec) {
        return refuse(e);
    }
    if !s.repl.from_master
        && spec.flags.contains(&"write")
        && crate::repl::role::refuses_writes(&s.shared)
    {
        return refuse(Error::new(
            "READONLY You can't write against a read only replica.",
        ));
    }
    Ok(index)
}

/// The ACL check (`acl::check`) of request `args` of row `index` for the
/// connection's user, on every path a command takes; a refusal is logged
/// in `ACL LOG` and worded for `context`. One atomic load for a user
/// allowed everything. The master's stream on a replica is not checked,
/// as in Redis (whatever the local `default` user may run).
fn permitted(s: &Session, index: usize, args: &Args<'_>, context: Context) -> Result<(), Error> {
    if s.user.unrestricted() || s.repl.from_master {
        return Ok(());
    }
    let words: Vec<&[u8]> = args.iter().collect();
    let denial = match crate::acl::check(&s.user, s.commands, index, &words) {
        Ok(()) => return Ok(()),
        Err(d) => d,
    };
    let spec = s.commands.row(index);
    let mut client_info = String::new();
    crate::commands::connection::describe_client(s, &s.info, &mut client_info);
    let event = crate::acl::log::Event {
        reason: denial.reason,
        context,
        object: crate::acl::object(&denial, spec.name, &words),
        username: s.user.name.clone(),
        client_info,
    };
    s.shared
        .acl
        .log
        .add(event, s.shared.settings.acllog_max_len());
    Err(Error::new(crate::acl::error_text(
        &denial, spec.name, context,
    )))
}

/// Redis's refusals that depend on settings: `MASTERDOWN` for a command
/// not flagged `stale` on a replica whose link is down while
/// `replica-serve-stale-data` is `no`, `NOREPLICAS` for a write
/// while fewer good replicas than `min-replicas-to-write` are attached,
/// `OOM` for a command that may grow the data while the memory in use is
/// above `maxmemory`.
pub fn refused_by_settings(s: &Session, spec: &Spec) -> Option<Error> {
    if let Some(e) = s.shared.scripts.refusal(spec.name) {
        return Some(e);
    }
    settings_refusal(s, spec)
}

/// [`refused_by_settings`] but for a running script's `BUSY` (a script's
/// own commands are checked with this).
pub fn settings_refusal(s: &Session, spec: &Spec) -> Option<Error> {
    if s.shared.repl.is_replica()
        && !spec.flags.contains(&"stale")
        && crate::repl::role::refuses_stale(&s.shared)
    {
        return Some(Error::new(
            "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.",
        ));
    }
    // The settings first: two relaxed loads, where the flags are string
    // compares (this runs for every command).
    write_refusal(
        s,
        s.shared.settings.needs_replicas() && spec.flags.contains(&"write"),
        s.shared.settings.maxmemory() > 0 && spec.flags.contains(&"denyoom"),
    )
}

/// `NOREPLICAS` (when `writes`) or `OOM` (when `grows`) if the settings
/// refuse such a command now: for a command's row, or for a script that
/// declared it may write (its shebang flags) before it starts.
pub fn write_refusal(s: &Session, writes: bool, grows: bool) -> Option<Error> {
    if writes
        && s.shared.settings.needs_replicas()
        && !crate::repl::role::enough_replicas(&s.shared)
    {
        return Some(Error::new("NOREPLICAS Not enough good replicas to write."));
    }
    if grows && s.shared.settings.maxmemory() > 0 && over_maxmemory(s) {
        return Some(Error::new(
            "OOM command not allowed when used memory > 'maxmemory'.",
        ));
    }
    None
}

/// Whether `used_memory` (INFO's figure, read at most every 100 ms) is
/// above `maxmemory` (0: no cap).
fn over_maxmemory(s: &Session) -> bool {
    use std::sync::atomic::Ordering::Relaxed;
    let max = s.shared.settings.maxmemory();
    if max == 0 {
        return false;
    }
    let st = &s.shared.stats;
    let now = s.shared.now_ms() + 1;
    let seen_at = st.used_memory_seen_at.load(Relaxed);
    if seen_at == 0 || now.saturating_sub(seen_at) >= 100 {
        let stats = crate::session::blocking(|| s.shared.keyspace.db.stats());
        st.used_memory_seen
            .store(stats.used_bytes + stats.dram_index_bytes, Relaxed);
        st.used_memory_seen_at.store(now, Relaxed);
    }
    st.used_memory_seen.load(Relaxed) > max
}

/// The error that ends an `EXEC` whose queued commands the settings now
/// refuse (Redis checks the whole transaction when EXEC arrives), if any.
pub fn exec_refused(s: &Session, queued: &[Request]) -> Option<Error> {
    queued
        .iter()
        .filter_map(|q| row_of(s, &q.args()))
        .find_map(|i| refused_by_settings(s, s.commands.row(i)))
        .map(|e| {
            let text = e.0.trim_start_matches('-').to_string();
            Error::new(format!(
                "EXECABORT Transaction discarded because of: {text}"
            ))
        })
}

/// Runs a checked request (the map lock held by the caller) and counts it.
/// Returns whether the handler failed.
fn run(s: &mut Session, index: usize, args: Args<'_>) -> bool {
    let spec = s.commands.row(index);
    let errors = s.out.errors.seen();
    let repl_mark = s.repl.cmds.len();
    s.repl.rewritten = false;
    crate::observe::before(s, spec, &args);
    let started = Instant::now();
    let failed = call_handler(s, index, args);
    let nanos = started.elapsed().as_nanos() as u64;
    collect_propagation(s, spec, &args, failed, repl_mark);
    s.counters.commands += 1;
    s.tally
        .called(index, Some(nanos), s.out.errors.seen() != errors);
    crate::observe::after(s, spec, &args, nanos);
    failed
}

/// Calls row `index`'s handler; returns whether it failed. A handler may
/// queue part of its reply before it fails (an engine error after the
/// update closure ran): the error replaces all of it.
fn call_handler(s: &mut Session, index: usize, args: Args<'_>) -> bool {
    let mark = s.out.len();
    let result = (s.commands.row(index).handler)(s, args);
    if let Err(e) = &result {
        s.out.buf.truncate(mark);
        s.out.error(&e.0);
    }
    result.is_err()
}

/// Runs request `args` of row `index` (checked by `runnable_as`) in the
/// running unit without counting it: `unit_run` counts a run once it
/// committed. A request that fails leaves nothing in the unit. Returns
/// whether it replied an error.
pub fn run_in_unit(s: &mut Session, index: usize, args: Args<'_>) -> bool {
    let errors = s.out.errors.seen();
    s.store.mark();
    if call_handler(s, index, args) {
        s.store.roll_back();
    }
    s.out.errors.seen() != errors
}

/// After a handler: keeps what it propagates — its rewrites, or its
/// request when it is a write that chose none — or drops it all when it
/// failed.
fn collect_propagation(s: &mut Session, spec: &Spec, args: &Args<'_>, failed: bool, mark: usize) {
    let p = &mut s.repl;
    if !p.active {
        return;
    }
    if failed {
        p.cmds.truncate(mark);
    } else if !p.rewritten && !p.from_master && spec.replicated() {
        let words = args.iter().map(<[u8]>::to_vec).collect();
        p.cmds.push((s.store.db, words));
    }
    p.rewritten = false;
}

/// Runs one queued request of an `EXEC` (checked when it was queued, and
/// for permissions again now: the user's rules may have changed) or of a
/// script's `redis.call` (`context` says which) in the running unit; a
/// request that fails leaves nothing in it.
pub fn run_queued(s: &mut Session, args: Args<'_>, context: Context) {
    s.store.mark();
    let failed = match row_of(s, &args) {
        Some(index) => match permitted(s, index, &args, context) {
            Ok(()) => run(s, index, args),
            Err(e) => {
                s.tally.rejected(index);
                s.out.error(&e.0);
                true
            }
        },
        None => {
            s.out.error(&unknown_command(&args));
            true
        }
    };
    if failed {
        s.store.roll_back();
    }
}

/// Runs one command given as its words (the command name first) in `s`,
/// as [`execute`] runs a request.
pub fn execute_words(s: &mut Session, words: &[&[u8]]) {
    let request = Request::from_words(words);
    execute(s, request.args());
}

/// For `CLIENT PAUSE` (`pause.rs`): whether request `args` may write as a
/// `WRITE` pause sees it — a `write` or `may_replicate` row, an `EXEC`
/// whose queue holds one, a script that does not declare `no-writes` —
/// or `None` when no pause holds it back: a request the checks refuse at
/// once (unknown, wrong number of arguments) replies at once.
pub fn pause_writes(s: &Session, args: &Args<'_>) -> Option<bool> {
    let index = row_of(s, args)?;
    let spec = s.commands.row(index);
    if !spec.arity_ok(args.len()) {
        return None;
    }
    let writes = match spec.name {
        "exec" => s.multi.as_ref().is_some_and(|m| {
            m.queued.iter().any(|q| {
                let q = q.args();
                row_of(s, &q).is_some_and(|i| request_writes(s, s.commands.row(i), &q))
            })
        }),
        _ => request_writes(s, spec, args),
    };
    Some(writes)
}

/// Whether one request of row `spec` may write, as `CLIENT PAUSE WRITE`
/// sees it (see [`pause_writes`]).
fn request_writes(s: &Session, spec: &Spec, args: &Args<'_>) -> bool {
    let scripts = &s.shared.scripts;
    match spec.name {
        "eval" => !scripts.declares_no_writes(Some(args.get(1)), b"", false),
        "evalsha" => !scripts.declares_no_writes(None, args.get(1), false),
        "fcall" => !scripts.declares_no_writes(None, args.get(1), true),
        _ => spec.flags.contains(&"write") || spec.flags.contains(&"may_replicate"),
    }
}
