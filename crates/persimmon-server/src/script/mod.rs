//! Running Lua scripts (`EVAL`, `EVALSHA`, `EVAL_RO`, `EVALSHA_RO`,
//! `FCALL`, `FCALL_RO`) for a session: `redis.call` and `redis.pcall`
//! (commands through the dispatch), the error handler and the reply. The
//! interpreter, its sandbox, the cache, the libraries and the run state
//! other clients see are in `state`; the RESP <-> Lua conversions in
//! `convert`; cjson, cmsgpack and bit in `libs`.
//!
//! Invariants:
//! - One script runs at a time (the engine's lock); a script's
//!   `redis.call`s run through the dispatch (`dispatch::run_queued`, as
//!   EXEC's queued commands) inside one atomic unit of the store begun
//!   before the script and committed after it: all of the script's writes
//!   or none survive a crash, durable before the reply. A command that
//!   fails inside the script is rolled back alone; the writes before a
//!   script error are kept (as Redis keeps them) and commit with the unit.
//!   Inside EXEC the script runs once in the transaction's unit, which
//!   EXEC commits.
//!   The unit's reads are checked at commit: if another client changed a
//!   key the script read, the script runs again from the start (its reply
//!   and propagation rebuilt), and after a few conflicts alone (the
//!   dispatch's escalation, as EXEC). A script queued in MULTI runs
//!   once inside EXEC's unit, which commits it with the other commands.
//! - A script killed by `SHUTDOWN` writes nothing (its unit is dropped).
//! - Tables are converted with raw accesses only (see `convert`).
//! - The caller's selected database is restored after the script; the
//!   script's effects propagate as the write commands it ran, wrapped in
//!   MULTI/EXEC when there are several (the dispatch does the wrapping).
//! - `redis.call` reaches the session only through a function scoped to
//!   one run of a script (mlua's `scope`): it cannot outlive the run.

pub mod convert;
mod libs;
mod numbers;
pub mod state;

pub use numbers::double_text;
use state::{err_table, lua_message, now_ms, sha1_hex, shebang_flags, Ctx, CTX};
pub use state::{RestorePolicy, Scripts};

use std::cell::RefCell;
use std::sync::atomic::Ordering::Relaxed;

use mlua::{Lua, MultiValue, Table, Value};
use persimmon_resp::Request;
use persimmon_types::Error;

use crate::session::Session;

/// The Redis commands a script may not call (Redis 7's `noscript` flag).
const NOSCRIPT: &[&str] = &[
    "acl",
    "auth",
    "bgrewriteaof",
    "bgsave",
    "blmove",
    "blpop",
    "brpop",
    "brpoplpush",
    "bzpopmax",
    "bzpopmin",
    "blmpop",
    "bzmpop",
    "client",
    "cluster",
    "config",
    "debug",
    "discard",
    "eval",
    "eval_ro",
    "evalsha",
    "evalsha_ro",
    "exec",
    "failover",
    "fcall",
    "fcall_ro",
    "function",
    "hello",
    "latency",
    "module",
    "monitor",
    "multi",
    "psubscribe",
    "psync",
    "punsubscribe",
    "quit",
    "replconf",
    "replicaof",
    "reset",
    "role",
    "save",
    "script",
    "shutdown",
    "slaveof",
    "ssubscribe",
    "subscribe",
    "sunsubscribe",
    "sync",
    "unsubscribe",
    "unwatch",
    "wait",
    "watch",
];

/// A Lua number as a command argument: an integer when it is one,
/// otherwise its shortest round-trip form.
fn number_arg(x: f64) -> String {
    if x.fract() == 0.0 && x.abs() < 1e17 {
        format!("{}", x as i64)
    } else {
        double_text(x)
    }
}

/// An error `redis.call` raises: the reply's text, as is (the Lua error
/// handler turns it into the script's error table).
#[derive(Debug)]
struct Raised(String);

impl std::fmt::Display for Raised {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Raised {}

fn raised(text: &str) -> mlua::Error {
    mlua::Error::external(Raised(text.to_string()))
}

/// A redis lib call's arguments as command words.
fn words_of(args: MultiValue) -> mlua::Result<Vec<Vec<u8>>> {
    let mut words: Vec<Vec<u8>> = Vec::with_capacity(args.len());
    for v in args {
        match v {
            Value::String(s) => words.push(s.as_bytes().to_vec()),
            Value::Integer(i) => words.push(i.to_string().into_bytes()),
            Value::Number(x) => words.push(number_arg(x).into_bytes()),
            _ => {
                return Err(raised(
                    "ERR Lua redis lib command arguments must be strings or integers",
                ))
            }
        }
    }
    Ok(words)
}

/// `redis.acl_check_cmd(name, arg...)`: whether the script's user may run
/// that command with those arguments (`acl::check`, without logging).
fn acl_check(cell: &RefCell<&mut Session>, args: MultiValue) -> mlua::Result<Value> {
    let words = words_of(args)?;
    let Ok(s) = cell.try_borrow() else {
        return Err(raised("ERR redis.acl_check_cmd reentered"));
    };
    let words: Vec<&[u8]> = words.iter().map(Vec::as_slice).collect();
    let Some(Ok(index) | Err(index)) = s.commands.resolve(words.iter().copied()) else {
        return Err(raised(
            "ERR Invalid command passed to redis.acl_check_cmd()",
        ));
    };
    if !s.commands.row(index).arity_ok(words.len()) {
        return Err(raised(
            "ERR Invalid number of arguments passed to redis.acl_check_cmd()",
        ));
    }
    let allowed = crate::acl::check(&s.user, s.commands, index, &words).is_ok();
    Ok(Value::Boolean(allowed))
}

/// `redis.call` (`raise`: a command's error is raised) and `redis.pcall`
/// (it is returned as `{err=...}`). Bad arguments are raised by both.
fn raw_call(
    cell: &RefCell<&mut Session>,
    lua: &Lua,
    args: MultiValue,
    raise: bool,
) -> mlua::Result<Value> {
    let Some(ctx) = CTX.with(|c| *c.borrow()) else {
        return Err(raised("ERR redis.call is only for scripts"));
    };
    let words = words_of(args)?;
    if words.is_empty() {
        return Err(raised(
            "ERR Please specify at least one argument for this redis lib call",
        ));
    }
    let Ok(mut s) = cell.try_borrow_mut() else {
        return Err(raised("ERR redis.call reentered"));
    };
    let s: &mut Session = &mut s;
    let request = Request::from_words(&words);
    let a = request.args();
    let fail = |text: &str| -> mlua::Result<Value> {
        match raise {
            true => Err(raised(text)),
            false => err_table(lua, text),
        }
    };
    if NOSCRIPT.contains(
        &String::from_utf8_lossy(&words[0])
            .to_ascii_lowercase()
            .as_str(),
    ) {
        return fail("ERR This Redis command is not allowed from script");
    }
    let Some(index) = s.commands.resolve(a.iter()).map(|(Ok(i) | Err(i))| i) else {
        return fail("ERR Unknown Redis command called from script");
    };
    let spec = s.commands.row(index);
    if !spec.arity_ok(a.len()) {
        return fail("ERR Wrong number of args calling Redis command from script");
    }
    // `no_multi` rows (SWAPDB, SAVE...) cannot run inside a unit either.
    if NOSCRIPT.contains(&spec.command_name())
        || spec.flags.contains(&"noscript")
        || spec.flags.contains(&"no_multi")
    {
        return fail("ERR This Redis command is not allowed from script");
    }
    let write = spec.flags.contains(&"write");
    // PUBLISH and the other `may_replicate` rows too, as in Redis.
    if (write || spec.flags.contains(&"may_replicate")) && ctx.read_only {
        return fail("ERR Write commands are not allowed from read-only scripts.");
    }
    if let Some(e) = crate::dispatch::settings_refusal(s, spec) {
        if !(ctx.allow_oom && e.0.starts_with("OOM")) {
            s.tally.rejected(index);
            return fail(&e.0);
        }
    }
    if write && !s.repl.from_master && crate::repl::role::refuses_writes(&s.shared) {
        return fail("READONLY You can't write against a read only replica.");
    }
    if write {
        s.shared.scripts.flags.wrote.store(true, Relaxed);
    }
    let resp3 = std::mem::replace(&mut s.out.resp3, ctx.resp3);
    let mark = s.out.len();
    let repl_mark = s.repl.cmds.len();
    s.in_script = true;
    crate::dispatch::run_queued(s, a, crate::acl::log::Context::Lua);
    s.in_script = false;
    s.out.resp3 = resp3;
    if ctx.repl & 2 == 0 {
        s.repl.cmds.truncate(repl_mark);
    }
    let bytes = s.out.buf.split_off(mark);
    if raise && bytes.first() == Some(&b'-') {
        let text = String::from_utf8_lossy(&bytes[1..]);
        return Err(raised(text.trim_end()));
    }
    convert::reply_to_lua(lua, &bytes)
}

/// The message of an error from Rust: a [`Raised`] reply's text as is,
/// any other with `ERR `.
fn rust_error_text(e: &mlua::Error) -> String {
    match e {
        mlua::Error::CallbackError { cause, .. } => rust_error_text(cause),
        mlua::Error::ExternalError(inner) => match inner.downcast_ref::<Raised>() {
            Some(r) => r.0.clone(),
            None => format!("ERR {inner}"),
        },
        other => format!("ERR {}", lua_message(other)),
    }
}

/// The handler scripts' errors go through: an error table with the place
/// it was raised (the first frame of the script's own code).
fn error_handler(lua: &Lua, e: Value) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    match &e {
        Value::Table(src) => match src.raw_get::<Value>("err")? {
            Value::String(s) => t.raw_set("err", s)?,
            _ => t.raw_set("err", "ERR unknown error")?,
        },
        Value::String(s) => {
            let mut text = b"ERR ".to_vec();
            text.extend_from_slice(&s.as_bytes());
            t.raw_set("err", lua.create_string(&text)?)?;
        }
        Value::Error(err) => t.raw_set("err", rust_error_text(err))?,
        other => t.raw_set("err", format!("ERR {}", other.type_name()))?,
    }
    for level in 1..64 {
        let Some(d) = lua.inspect_stack(level) else {
            break;
        };
        let src = d.source();
        let Some(source) = src.source.as_deref() else {
            continue;
        };
        if source.starts_with("@user_") {
            t.raw_set("source", source)?;
            t.raw_set("line", d.curr_line())?;
            break;
        }
    }
    Ok(t)
}

/// What a script call is: its code (by body, SHA1 or function name),
/// keys, arguments.
pub struct Call<'a> {
    /// The body (`EVAL`), or `None` with `sha` given (`EVALSHA`).
    pub body: Option<&'a [u8]>,
    pub sha: &'a [u8],
    /// `FCALL`: `sha` is the function's name.
    pub function: bool,
    pub keys: Vec<&'a [u8]>,
    pub argv: Vec<&'a [u8]>,
    pub read_only: bool,
    /// The whole request (`FUNCTION STATS` shows it).
    pub command: Vec<&'a [u8]>,
}

fn string_array(lua: &Lua, items: &[&[u8]]) -> mlua::Result<Table> {
    let t = lua.create_table_with_capacity(items.len(), 0)?;
    for (i, item) in items.iter().enumerate() {
        t.raw_set(i + 1, lua.create_string(item)?)?;
    }
    Ok(t)
}

/// Attempts a script makes alongside other clients before it runs alone.
const SHARED_ATTEMPTS: u32 = 8;

/// Runs a script for `s` and queues its reply (see the module's
/// invariants). `Err` for the refusals before the script starts.
pub fn run(s: &mut Session, call: Call<'_>) -> Result<(), Error> {
    let shared = s.shared.clone();
    crate::session::blocking(|| run_locked(s, &shared.scripts, call))
}

fn run_locked(s: &mut Session, scripts: &Scripts, call: Call<'_>) -> Result<(), Error> {
    let mut g = scripts.engine()?;
    let engine = scripts.ready(&mut g)?;
    let mut read_only = call.read_only;
    // Declared flags (a shebang, a function's): `None` for a script
    // without a shebang, which is checked command by command only.
    let mut declared: Option<Vec<String>> = None;
    let (sha, f) = match call.body {
        _ if call.function => {
            let name = String::from_utf8_lossy(call.sha).into_owned();
            let Some(func) = engine.function(&name) else {
                return Err(Error::new("ERR Function not found"));
            };
            let no_writes = func.flags.iter().any(|f| f == "no-writes");
            if call.read_only && !no_writes {
                return Err(Error::new(
                    "ERR Can not execute a script with write flag using *_ro command.",
                ));
            }
            read_only |= no_writes;
            declared = Some(func.flags.clone());
            (name, func.callback)
        }
        Some(body) => {
            let sha = sha1_hex(body);
            let (flags, _) = shebang_flags(body)?;
            if !flags.is_empty() {
                declared = Some(flags.clone());
            }
            if flags.iter().any(|f| f == "no-writes") {
                read_only = true;
            } else if call.read_only && !flags.is_empty() {
                return Err(Error::new(
                    "ERR Can not execute a script with write flag using *_ro command.",
                ));
            }
            let f = scripts.compile(engine, &sha, body)?;
            (sha, f)
        }
        None => {
            let sha = String::from_utf8_lossy(call.sha).to_ascii_lowercase();
            match engine.cache.get(&sha) {
                Some(f) => (sha, f.clone()),
                None => return Err(Error::new("NOSCRIPT No matching script. Please use EVAL.")),
            }
        }
    };
    let has = |flag: &str| {
        declared
            .as_ref()
            .is_some_and(|d| d.iter().any(|f| f == flag))
    };
    let allow_oom = has("allow-oom") || has("no-writes");
    if declared.is_some() && !has("no-writes") {
        if let Some(e) = crate::dispatch::write_refusal(s, true, !has("allow-oom")) {
            return Err(e);
        }
    }
    let lua_err = |e: mlua::Error| Error::new(format!("ERR {}", lua_message(&e)));
    let keys = string_array(&engine.lua, &call.keys).map_err(lua_err)?;
    let argv = string_array(&engine.lua, &call.argv).map_err(lua_err)?;
    if !call.function {
        engine.base.raw_set("KEYS", keys.clone()).map_err(lua_err)?;
        engine.base.raw_set("ARGV", argv.clone()).map_err(lua_err)?;
    }
    let handler = engine.lua.create_function(error_handler).map_err(lua_err)?;

    let threshold = s
        .shared
        .settings
        .value("busy-reply-threshold")
        .and_then(|v| persimmon_resp::parse_i64(&v))
        .unwrap_or(5000)
        .max(0) as u64;
    let flags = &scripts.flags;
    // Inside a running unit (a script queued in MULTI, a harness's call):
    // the script is part of that unit, run once; the unit's owner commits.
    let nested = s.store.in_unit();
    let attempts = match (nested, s.exec_exclusive) {
        (true, _) => 1,
        (false, true) => persimmon_types::store::ATOMIC_ATTEMPTS,
        (false, false) => SHARED_ATTEMPTS,
    };
    let caller_db = s.store.db;
    let out_mark = s.out.len();
    let repl_mark = s.repl.cmds.len();
    let notes_mark = s.notes.len();
    for _ in 0..attempts {
        s.out.buf.truncate(out_mark);
        s.repl.cmds.truncate(repl_mark);
        s.notes.truncate(notes_mark);
        flags.threshold_ms.store(threshold, Relaxed);
        flags.started_ms.store(now_ms(scripts.epoch), Relaxed);
        flags.wrote.store(false, Relaxed);
        flags.kill.store(0, Relaxed);
        flags.function.store(call.function, Relaxed);
        if call.function {
            *scripts.running.lock().unwrap_or_else(|p| p.into_inner()) = (
                sha.clone(),
                call.command.iter().map(|w| w.to_vec()).collect(),
            );
        }
        flags.running.store(true, Relaxed);
        CTX.with(|c| {
            *c.borrow_mut() = Some(Ctx {
                read_only,
                allow_oom,
                resp3: false,
                repl: 3,
            })
        });
        if !nested {
            s.store.begin();
        }
        let cell = RefCell::new(&mut *s);
        let result: mlua::Result<(bool, Value)> = engine
            .lua
            .scope(|scope| {
                let call = scope
                    .create_function(|lua, args: MultiValue| raw_call(&cell, lua, args, true))?;
                let pcall = scope
                    .create_function(|lua, args: MultiValue| raw_call(&cell, lua, args, false))?;
                let acl_check_cmd =
                    scope.create_function(|_, args: MultiValue| acl_check(&cell, args))?;
                engine.redis.raw_set("call", call)?;
                engine.redis.raw_set("pcall", pcall)?;
                engine.redis.raw_set("acl_check_cmd", acl_check_cmd)?;
                let r =
                    engine
                        .runner
                        .call((f.clone(), handler.clone(), keys.clone(), argv.clone()));
                engine.redis.raw_set("call", Value::Nil)?;
                engine.redis.raw_set("pcall", Value::Nil)?;
                engine.redis.raw_set("acl_check_cmd", Value::Nil)?;
                Ok(r)
            })
            .and_then(|r| r);
        CTX.with(|c| *c.borrow_mut() = None);
        let killed = flags.kill.load(Relaxed);
        flags.running.store(false, Relaxed);
        flags.busy.store(false, Relaxed);
        s.store.db = caller_db;
        match (killed, result) {
            (2, _) => {
                // Nested, the error rolls the script back in its unit
                // (`dispatch::run_queued`).
                if !nested {
                    s.store.abort();
                }
                s.repl.cmds.truncate(repl_mark);
                s.notes.truncate(notes_mark);
                return Err(Error::new("ERR Script killed by SHUTDOWN"));
            }
            (1, _) => s.out.error(&format!(
                "ERR Script killed by user with {}... script: {sha}.",
                if call.function {
                    "FUNCTION KILL"
                } else {
                    "SCRIPT KILL"
                }
            )),
            (_, Ok((true, v))) => convert::lua_to_reply(&v, &mut s.out),
            (_, Ok((false, Value::Table(t)))) => s.out.error(&traced(&t, &sha)),
            (_, Ok((false, other))) => s.out.error(&format!("ERR {}", other.type_name())),
            (_, Err(e)) => s.out.error(&format!("ERR {}", lua_message(&e))),
        }
        // Keep the interpreter's memory in check between scripts with one
        // incremental step (a full collection after every script cost a
        // fifth of a short script's time); Lua's own pacing does the rest.
        let _ = engine.lua.gc_step();
        if nested {
            s.repl.rewritten = true;
            return Ok(());
        }
        match s.store.commit(&[]) {
            Ok(true) => {
                // The script's commands propagate, not the script.
                s.repl.rewritten = true;
                return Ok(());
            }
            Ok(false) => {}
            Err(e) => {
                s.out.buf.truncate(out_mark);
                s.repl.cmds.truncate(repl_mark);
                s.notes.truncate(notes_mark);
                return Err(e);
            }
        }
    }
    s.out.buf.truncate(out_mark);
    s.repl.cmds.truncate(repl_mark);
    s.notes.truncate(notes_mark);
    if !s.exec_exclusive {
        s.exec_escalate = true;
        s.repl.rewritten = true;
        return Ok(());
    }
    Err(persimmon_types::store::conflict())
}

/// An error raised out of a script, with where: `... script: sha, on
/// @user_script:line.`
fn traced(t: &Table, sha: &str) -> String {
    let err = match t.raw_get::<Value>("err") {
        Ok(Value::String(s)) => s.to_string_lossy(),
        _ => "ERR unknown error".to_string(),
    };
    let source: Option<String> = t.raw_get("source").ok();
    let line: Option<i64> = t.raw_get("line").ok();
    match source {
        Some(source) => format!("{err} script: {sha}, on {source}:{}.", line.unwrap_or(0)),
        None => format!("{err} script: {sha}."),
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn scripts_see_the_servers_redis_version() {
        assert_eq!(
            super::state::REDIS_VERSION,
            crate::session::REDIS_COMPAT_VERSION
        );
    }
}
