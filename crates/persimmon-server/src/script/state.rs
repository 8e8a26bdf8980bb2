//! The scripting state every connection shares (`Shared::scripts`): the
//! one Lua 5.1 interpreter (mlua, vendored) with Redis's API and sandbox
//! set up in it, the script cache, the function libraries, and the run
//! state other clients see (the time limit, `BUSY`, `SCRIPT KILL`).
//! It knows nothing of sessions: running a script is `script::run`'s.
//!
//! Invariants:
//! - One script runs at a time: the engine's lock is held for the whole
//!   run; a client that wants the engine while another script is past its
//!   limit gets `BUSY` instead of waiting.
//! - The sandbox: no `os`, `io`, `loadfile`, `dofile`, `print`, no binary
//!   chunks; scripts run in a read-only global table whose missing names
//!   are errors ("Script attempted to access nonexistent global
//!   variable"); the library tables are read-only; a killed script cannot
//!   catch its end with `pcall`.
//! - A library being loaded sees only `redis.register_function`,
//!   `redis.log` and the constants; a failed load changes no library.

use std::cell::RefCell;
use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering::Relaxed};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use mlua::{Function, HookTriggers, Lua, LuaOptions, MultiValue, StdLib, Table, Value, VmState};
use persimmon_types::Error;

use super::libs;
use super::numbers::number_text;

/// The Redis version scripts see (`redis.REDIS_VERSION`): the one the
/// server follows (`session::REDIS_COMPAT_VERSION`; a test in `script`
/// keeps them equal, this module being below the session).
pub(super) const REDIS_VERSION: &str = "7.0.15";

/// The commands that run while a script is past its time limit (Redis's
/// `allow_busy` flag).
const ALLOW_BUSY: &[&str] = &[
    "auth",
    "discard",
    "function|kill",
    "function|stats",
    "hello",
    "multi",
    "quit",
    "replconf",
    "reset",
    "script|kill",
    "shutdown",
    "unwatch",
    "watch",
];

/// What other clients see of the running script.
#[derive(Default)]
pub struct RunFlags {
    /// While a library loads: when it started (ms since the epoch, + 1).
    pub(super) loading_since_ms: AtomicU64,
    pub(super) running: AtomicBool,
    pub(super) busy: AtomicBool,
    /// 0: run on; 1: `SCRIPT KILL`; 2: `SHUTDOWN`.
    pub(super) kill: AtomicU8,
    pub(super) wrote: AtomicBool,
    pub(super) function: AtomicBool,
    pub(super) started_ms: AtomicU64,
    pub(super) threshold_ms: AtomicU64,
}

/// The scripting state every connection shares (`Shared::scripts`).
pub struct Scripts {
    pub(super) engine: Mutex<Option<Engine>>,
    pub(super) flags: Arc<RunFlags>,
    pub(super) epoch: Instant,
    pub(super) cached: AtomicUsize,
    /// The libraries and functions loaded (`FUNCTION STATS`, which runs
    /// while a script holds the engine).
    pub(super) library_count: AtomicUsize,
    pub(super) function_count: AtomicUsize,
    /// The running script's name (a function's) and command.
    pub(super) running: Mutex<(String, Vec<Vec<u8>>)>,
}

impl Default for Scripts {
    fn default() -> Self {
        Scripts {
            engine: Mutex::new(None),
            flags: Arc::default(),
            epoch: Instant::now(),
            cached: AtomicUsize::new(0),
            library_count: AtomicUsize::new(0),
            function_count: AtomicUsize::new(0),
            running: Mutex::default(),
        }
    }
}

pub(super) struct Engine {
    /// The run state (for a library's load time limit).
    pub(super) flags: Arc<RunFlags>,
    pub(super) epoch: Instant,
    pub(super) lua: Lua,
    /// The real globals, where KEYS and ARGV go.
    pub(super) base: Table,
    /// The read-only environment scripts run in.
    pub(super) env: Table,
    /// Calls a function under the error handler: `(f) -> ok, value`.
    pub(super) runner: Function,
    /// The `redis` table behind its read-only face: `call` and `pcall`
    /// are set in it for each run of a script (scoped to the run).
    pub(super) redis: Table,
    pub(super) cache: HashMap<String, Function>,
    /// The cached scripts whose shebang declares `no-writes`.
    pub(super) no_writes: std::collections::HashSet<String>,
    /// Makes a library's environment: `(register_function) -> env`.
    pub(super) lib_env: Function,
    /// The function libraries, by name.
    pub(super) libraries: BTreeMap<String, Library>,
}

/// A function library (`FUNCTION LOAD`): its code and its functions.
pub struct Library {
    pub code: Vec<u8>,
    pub functions: Vec<Func>,
}

/// A function a library registered.
#[derive(Clone)]
pub struct Func {
    pub name: String,
    pub(super) callback: Function,
    pub flags: Vec<String>,
    pub description: Option<String>,
}

/// The script running on this thread: what `redis.call` needs besides
/// the session.
#[derive(Clone, Copy)]
pub(super) struct Ctx {
    pub(super) read_only: bool,
    /// The script declared `allow-oom` (or `no-writes`).
    pub(super) allow_oom: bool,
    pub(super) resp3: bool,
    /// `redis.set_repl` flags (bit 2: replicas).
    pub(super) repl: u8,
}

thread_local! {
    pub(super) static CTX: RefCell<Option<Ctx>> = const { RefCell::new(None) };
}

pub(super) fn now_ms(epoch: Instant) -> u64 {
    epoch.elapsed().as_millis() as u64
}

impl Scripts {
    /// Whether a script has run past its time limit: other clients get
    /// `BUSY`.
    pub fn busy(&self) -> bool {
        self.flags.busy.load(Relaxed)
    }

    /// The `BUSY` refusal for `row` (a command or `container|sub` name)
    /// while a script is past its limit, if it is refused.
    pub fn refusal(&self, row: &str) -> Option<Error> {
        if !self.busy() || ALLOW_BUSY.contains(&row) {
            return None;
        }
        let kill = match self.flags.function.load(Relaxed) {
            true => "FUNCTION KILL",
            false => "SCRIPT KILL",
        };
        Some(Error::new(format!(
            "BUSY Redis is busy running a script. You can only call {kill} or SHUTDOWN NOSAVE."
        )))
    }

    /// `SCRIPT KILL` (`function` false) or `FUNCTION KILL`: each stops
    /// only its own kind of script.
    pub fn kill_kind(&self, function: bool) -> Result<(), Error> {
        let f = &self.flags;
        if !f.running.load(Relaxed) {
            return Err(Error::new("NOTBUSY No scripts in execution right now."));
        }
        if f.function.load(Relaxed) != function {
            let (what, kill) = match function {
                true => ("script", "SCRIPT KILL"),
                false => ("function", "FUNCTION KILL"),
            };
            return Err(Error::new(format!(
                "BUSY Redis is busy running a {what}. You can only call {kill} or SHUTDOWN NOSAVE."
            )));
        }
        if f.wrote.load(Relaxed) {
            return Err(Error::new(
                "UNKILLABLE Sorry the script already executed write commands against the \
                 dataset. You can either wait the script termination or kill the server in a \
                 hard way using the SHUTDOWN NOSAVE command.",
            ));
        }
        f.kill.store(1, Relaxed);
        Ok(())
    }

    /// `SHUTDOWN`: a running script stops and writes nothing.
    pub fn stop_for_shutdown(&self) {
        if self.flags.running.load(Relaxed) {
            self.flags.kill.store(2, Relaxed);
        }
    }

    /// Scripts in the cache (`INFO memory`).
    pub fn cached(&self) -> usize {
        self.cached.load(Relaxed)
    }

    /// The engine, waiting while another client's script runs (`BUSY`
    /// once that one is past its limit).
    pub(super) fn engine(&self) -> Result<MutexGuard<'_, Option<Engine>>, Error> {
        loop {
            match self.engine.try_lock() {
                Ok(g) => return Ok(g),
                Err(std::sync::TryLockError::Poisoned(p)) => {
                    let mut g = p.into_inner();
                    *g = None;
                    return Ok(g);
                }
                Err(std::sync::TryLockError::WouldBlock) => {
                    if let Some(e) = self.refusal("eval") {
                        return Err(e);
                    }
                    std::thread::sleep(Duration::from_millis(1));
                }
            }
        }
    }

    /// Whether a script declares `no-writes` (its shebang's flags; an
    /// `EVALSHA` script's as it was cached; a function's, by `name`), so
    /// `CLIENT PAUSE WRITE` lets it run. Unknown scripts may write.
    pub fn declares_no_writes(&self, body: Option<&[u8]>, name: &[u8], function: bool) -> bool {
        let no_writes = |flags: &[String]| flags.iter().any(|f| f == "no-writes");
        if let Some(body) = body {
            return shebang_flags(body).is_ok_and(|(flags, _)| no_writes(&flags));
        }
        let Ok(g) = self.engine() else {
            return false;
        };
        let Some(engine) = g.as_ref() else {
            return false;
        };
        let name = String::from_utf8_lossy(name);
        match function {
            true => engine.function(&name).is_some_and(|f| no_writes(&f.flags)),
            false => engine.no_writes.contains(&name.to_ascii_lowercase()),
        }
    }

    /// Whether `sha` (40 hex digits, any case) is cached.
    pub fn exists(&self, sha: &[u8]) -> Result<bool, Error> {
        let g = self.engine()?;
        let sha = String::from_utf8_lossy(sha).to_ascii_lowercase();
        Ok(g.as_ref().is_some_and(|e| e.cache.contains_key(&sha)))
    }

    /// `SCRIPT LOAD`: compiles and caches `body`; its SHA1.
    pub fn load(&self, body: &[u8]) -> Result<String, Error> {
        let mut g = self.engine()?;
        let engine = self.ready(&mut g)?;
        let sha = sha1_hex(body);
        self.compile(engine, &sha, body)?;
        Ok(sha)
    }

    /// `SCRIPT FLUSH`: a fresh interpreter, no cached scripts.
    pub fn flush(&self) -> Result<(), Error> {
        let mut g = self.engine()?;
        if let Some(e) = g.as_mut() {
            e.cache.clear();
            e.no_writes.clear();
            let _ = e.lua.gc_collect();
        }
        self.cached.store(0, Relaxed);
        Ok(())
    }

    pub(super) fn ready<'g>(&self, g: &'g mut Option<Engine>) -> Result<&'g mut Engine, Error> {
        if g.is_none() {
            let e = Engine::new(self.flags.clone(), self.epoch)
                .map_err(|e| Error::new(format!("ERR starting Lua: {e}")))?;
            *g = Some(e);
        }
        Ok(g.as_mut().expect("just made"))
    }

    pub(super) fn compile(
        &self,
        engine: &mut Engine,
        sha: &str,
        body: &[u8],
    ) -> Result<Function, Error> {
        if let Some(f) = engine.cache.get(sha) {
            return Ok(f.clone());
        }
        let (flags, code) = shebang_flags(body)?;
        if flags.iter().any(|f| f == "no-writes") {
            engine.no_writes.insert(sha.to_string());
        }
        let f = engine
            .lua
            .load(code.as_ref())
            .set_name("@user_script")
            .set_environment(engine.env.clone())
            .into_function()
            .map_err(|e| {
                Error::new(format!(
                    "ERR Error compiling script (new function): {}",
                    lua_message(&e)
                ))
            })?;
        engine.cache.insert(sha.to_string(), f.clone());
        self.cached.store(engine.cache.len(), Relaxed);
        Ok(f)
    }
}

/// The SHA1 of `body` in lowercase hex.
pub fn sha1_hex(body: &[u8]) -> String {
    sha1_smol::Sha1::from(body).digest().to_string()
}

/// The text of a Lua error without mlua's decorations.
pub(super) fn lua_message(e: &mlua::Error) -> String {
    let text = lua_message_full(e);
    match text.find("\nstack traceback:") {
        Some(at) => text[..at].to_string(),
        None => text,
    }
}

fn lua_message_full(e: &mlua::Error) -> String {
    match e {
        mlua::Error::SyntaxError { message, .. } => message.clone(),
        mlua::Error::RuntimeError(m) => m.clone(),
        mlua::Error::CallbackError { cause, .. } => lua_message_full(cause),
        mlua::Error::MemoryError(m) => m.clone(),
        other => other.to_string(),
    }
}

pub(super) fn err_table(lua: &Lua, text: &str) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set("err", text)?;
    Ok(Value::Table(t))
}

fn arg_error(name: &str) -> mlua::Result<Value> {
    Err(mlua::Error::RuntimeError(format!(
        "wrong number or type of arguments to redis.{name}"
    )))
}

/// The script-side setup: the sandbox, the read-only tables, the wrappers
/// of `pcall` (a killed script cannot catch its end) and `redis.call`.
const PRELUDE: &str = r#"
local killed, redis, libs = ...
local base = _G
local error_, type_, select_, unpack_, tostring_ = error, type, select, unpack, tostring
local setmetatable_, rawset_, loadstring_, setfenv_ = setmetatable, rawset, loadstring, setfenv
local pcall_, xpcall_ = pcall, xpcall
local protected = setmetatable_({}, {__mode = 'k'})
local function deny() error_("Attempt to modify a readonly table", 2) end
local locked = setmetatable_({}, {__newindex = deny})
protected[locked] = true
local function readonly(real)
  local proxy = setmetatable_({}, {__index = real, __newindex = deny, __metatable = locked})
  protected[proxy] = true
  return proxy
end
local env = {}
setmetatable_(env, {
  __index = function(_, k)
    local v = base[k]
    if v == nil then
      error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
    end
    return v
  end,
  __newindex = deny,
  __metatable = locked,
})
protected[env] = true
local function pack(...) return {n = select_('#', ...), ...} end
base.pcall = function(...)
  local r = pack(pcall_(...))
  if not r[1] and killed() then error_(r[2], 0) end
  return unpack_(r, 1, r.n)
end
base.xpcall = function(...)
  local r = pack(xpcall_(...))
  if not r[1] and killed() then error_(r[2], 0) end
  return unpack_(r, 1, r.n)
end
base.setmetatable = function(t, m)
  if protected[t] then error_("Attempt to modify a readonly table", 2) end
  return setmetatable_(t, m)
end
base.rawset = function(t, k, v)
  if protected[t] then error_("Attempt to modify a readonly table", 2) end
  return rawset_(t, k, v)
end
base.loadstring = function(s, name)
  if type_(s) == 'string' and s:byte(1) == 27 then return nil, 'binary chunks are not allowed' end
  local f, e = loadstring_(s, name)
  if f then setfenv_(f, env) end
  return f, e
end
base.loadfile = nil
base.dofile = nil
base.print = nil
base.load = nil
base.module = nil
base.require = nil
base.newproxy = nil
for name, t in pairs(libs) do base[name] = readonly(t) end
base.redis = readonly(redis)
base.string = readonly(string)
base.table = readonly(table)
base.math = readonly(math)
base._G = env
local runner = function(f, handler, keys, argv)
  return xpcall_(function() return f(keys, argv) end, handler)
end
local redis_face = base.redis
local function missing(_, k)
  error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
end
local function lib_env(register, loading)
  -- While the library loads, only redis.register_function, redis.log and
  -- the constants are there; afterwards its functions see what scripts see.
  local lr = setmetatable_({register_function = register, log = redis_face.log,
      LOG_DEBUG = 0, LOG_VERBOSE = 1, LOG_NOTICE = 2, LOG_WARNING = 3,
      REDIS_VERSION = redis_face.REDIS_VERSION, REDIS_VERSION_NUM = redis_face.REDIS_VERSION_NUM},
    {__index = missing, __newindex = deny, __metatable = locked})
  protected[lr] = true
  local e = {}
  setmetatable_(e, {
    __index = function(_, k)
      if loading() then
        if k == 'redis' then return lr end
        error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
      end
      if k == 'redis' then return redis_face end
      local v = base[k]
      if v == nil then
        error_("Script attempted to access nonexistent global variable '" .. tostring_(k) .. "'", 2)
      end
      return v
    end,
    __newindex = deny,
    __metatable = locked,
  })
  protected[e] = true
  return e
end
return env, runner, lib_env
"#;

impl Engine {
    fn new(flags: Arc<RunFlags>, epoch: Instant) -> mlua::Result<Engine> {
        let lua = Lua::new_with(
            StdLib::TABLE | StdLib::STRING | StdLib::MATH,
            LuaOptions::new(),
        )?;
        let redis = redis_table(&lua)?;
        let libs = lua.create_table()?;
        libs.set("cjson", libs::cjson(&lua)?)?;
        libs.set("bit", libs::bit(&lua)?)?;
        libs.set("cmsgpack", libs::cmsgpack(&lua)?)?;
        let f = flags.clone();
        let killed = lua.create_function(move |_, ()| Ok(f.kill.load(Relaxed) != 0))?;
        let (env, runner, lib_env): (Table, Function, Function) = lua
            .load(PRELUDE)
            .set_name("=prelude")
            .call((killed, redis.clone(), libs))?;
        let f = flags.clone();
        lua.set_hook(
            HookTriggers::new().every_nth_instruction(100_000),
            move |_, _| {
                let loading = f.loading_since_ms.load(Relaxed);
                if loading != 0 && now_ms(epoch) + 1 > loading + LOAD_TIME_LIMIT_MS {
                    return Err(mlua::Error::RuntimeError("FUNCTION LOAD timeout".into()));
                }
                if !f.running.load(Relaxed) {
                    return Ok(VmState::Continue);
                }
                let elapsed = now_ms(epoch).saturating_sub(f.started_ms.load(Relaxed));
                if elapsed >= f.threshold_ms.load(Relaxed) {
                    f.busy.store(true, Relaxed);
                }
                match f.kill.load(Relaxed) {
                    0 => Ok(VmState::Continue),
                    _ => Err(mlua::Error::RuntimeError(
                        "Script killed by user with SCRIPT KILL...".into(),
                    )),
                }
            },
        );
        let base = lua.globals();
        Ok(Engine {
            flags,
            epoch,
            lua,
            base,
            env,
            runner,
            redis,
            lib_env,
            cache: HashMap::new(),
            no_writes: Default::default(),
            libraries: BTreeMap::new(),
        })
    }
}

fn set_ctx(f: impl FnOnce(&mut Ctx)) {
    CTX.with(|c| {
        if let Some(ctx) = c.borrow_mut().as_mut() {
            f(ctx)
        }
    })
}

/// The `redis` table (before it is made read-only).
fn redis_table(lua: &Lua) -> mlua::Result<Table> {
    let r = lua.create_table()?;
    r.set(
        "error_reply",
        lua.create_function(|lua, v: Value| match v {
            Value::String(s) => {
                let mut text = s.as_bytes().to_vec();
                if text.first() == Some(&b'-') {
                    text.remove(0);
                }
                err_table(lua, &String::from_utf8_lossy(&text))
            }
            _ => arg_error("error_reply"),
        })?,
    )?;
    r.set(
        "status_reply",
        lua.create_function(|lua, v: Value| match v {
            Value::String(s) => {
                let t = lua.create_table()?;
                t.raw_set("ok", s)?;
                Ok(Value::Table(t))
            }
            _ => arg_error("status_reply"),
        })?,
    )?;
    r.set(
        "sha1hex",
        lua.create_function(|_, a: MultiValue| {
            if a.len() != 1 {
                return Err(mlua::Error::RuntimeError(
                    "wrong number of arguments".into(),
                ));
            }
            let bytes = match &a[0] {
                Value::String(s) => s.as_bytes().to_vec(),
                Value::Number(x) => number_text(*x).into_bytes(),
                Value::Integer(i) => i.to_string().into_bytes(),
                _ => Vec::new(),
            };
            Ok(sha1_hex(&bytes))
        })?,
    )?;
    r.set(
        "log",
        lua.create_function(|_, a: MultiValue| {
            if a.len() < 2 {
                return Err(mlua::Error::RuntimeError(
                    "redis.log() requires two arguments or more.".into(),
                ));
            }
            let level = match &a[0] {
                Value::Integer(i) => *i,
                Value::Number(x) => *x as i64,
                _ => {
                    return Err(mlua::Error::RuntimeError(
                        "First argument must be a number (log level).".into(),
                    ))
                }
            };
            if !(0..=3).contains(&level) {
                return Err(mlua::Error::RuntimeError("Invalid debug level.".into()));
            }
            if level >= 2 {
                let parts: Vec<String> = a
                    .iter()
                    .skip(1)
                    .map(|v| match v {
                        Value::String(s) => s.to_string_lossy(),
                        Value::Number(x) => number_text(*x),
                        Value::Integer(i) => i.to_string(),
                        other => other.type_name().to_string(),
                    })
                    .collect();
                eprintln!("persimmon: script log: {}", parts.join(" "));
            }
            Ok(())
        })?,
    )?;
    r.set(
        "setresp",
        lua.create_function(|_, a: MultiValue| {
            let v = one_int_arg(&a, "redis.setresp()", 0)?;
            if v != 2 && v != 3 {
                return Err(mlua::Error::RuntimeError(
                    "RESP version must be 2 or 3.".into(),
                ));
            }
            set_ctx(|c| c.resp3 = v == 3);
            Ok(())
        })?,
    )?;
    r.set(
        "set_repl",
        lua.create_function(|_, a: MultiValue| {
            let v = one_int_arg(&a, "redis.set_repl()", -1)?;
            if !(0..=3).contains(&v) {
                return Err(mlua::Error::RuntimeError(
                    "Invalid replication flags. Use REPL_AOF, REPL_REPLICA, REPL_ALL or REPL_NONE."
                        .into(),
                ));
            }
            set_ctx(|c| c.repl = v as u8);
            Ok(())
        })?,
    )?;
    r.set("replicate_commands", lua.create_function(|_, ()| Ok(true))?)?;
    r.set("breakpoint", lua.create_function(|_, ()| Ok(false))?)?;
    r.set("debug", lua.create_function(|_, _: MultiValue| Ok(()))?)?;
    for (name, v) in [
        ("LOG_DEBUG", 0),
        ("LOG_VERBOSE", 1),
        ("LOG_NOTICE", 2),
        ("LOG_WARNING", 3),
        ("REPL_NONE", 0),
        ("REPL_AOF", 1),
        ("REPL_SLAVE", 2),
        ("REPL_REPLICA", 2),
        ("REPL_ALL", 3),
    ] {
        r.set(name, v)?;
    }
    let version = REDIS_VERSION;
    let num = version
        .split('.')
        .fold(0i64, |acc, p| acc * 256 + p.parse::<i64>().unwrap_or(0));
    r.set("REDIS_VERSION", version)?;
    r.set("REDIS_VERSION_NUM", num)?;
    Ok(r)
}

/// The flags of a script's `#!lua flags=a,b` first line (none without a
/// shebang), and the code to compile (the shebang line blanked, so line
/// numbers stay).
pub(super) fn shebang_flags(
    body: &[u8],
) -> Result<(Vec<String>, std::borrow::Cow<'_, [u8]>), Error> {
    if !body.starts_with(b"#!") {
        return Ok((Vec::new(), std::borrow::Cow::Borrowed(body)));
    }
    let end = body.iter().position(|&b| b == b'\n').unwrap_or(body.len());
    let line = String::from_utf8_lossy(&body[2..end]).into_owned();
    let mut parts = line.split(' ').filter(|p| !p.is_empty());
    let engine = parts.next().unwrap_or("");
    if engine != "lua" {
        return Err(Error::new(format!(
            "ERR Unexpected engine in script shebang: {engine}"
        )));
    }
    let mut flags = vec!["shebang".to_string()];
    for part in parts {
        let Some(list) = part.strip_prefix("flags=") else {
            return Err(Error::new(format!(
                "ERR Unknown lua shebang option: {part}"
            )));
        };
        for flag in list.split(',').filter(|f| !f.is_empty()) {
            if !SCRIPT_FLAGS.contains(&flag) {
                return Err(Error::new(format!(
                    "ERR Unexpected flag in script shebang: {flag}"
                )));
            }
            flags.push(flag.to_string());
        }
    }
    Ok((flags, std::borrow::Cow::Owned(body[end..].to_vec())))
}

/// How long a library's code may run while it loads (Redis's limit).
const LOAD_TIME_LIMIT_MS: u64 = 500;

/// The flags a script or function may declare.
const SCRIPT_FLAGS: &[&str] = &[
    "no-writes",
    "allow-oom",
    "allow-stale",
    "no-cluster",
    "allow-cross-slot-keys",
];

impl Engine {
    pub(super) fn function(&self, name: &str) -> Option<Func> {
        self.libraries
            .values()
            .flat_map(|l| l.functions.iter())
            .find(|f| f.name.eq_ignore_ascii_case(name))
            .cloned()
    }
}

fn valid_name(name: &str) -> bool {
    !name.is_empty() && name.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
}

/// A library as `FUNCTION LIST` shows it.
pub struct LibraryInfo {
    pub name: String,
    pub code: Vec<u8>,
    pub functions: Vec<(String, Option<String>, Vec<String>)>,
}

/// What `FUNCTION RESTORE` does with the libraries already there.
#[derive(Clone, Copy, PartialEq, Eq)]
pub enum RestorePolicy {
    Append,
    Replace,
    Flush,
}

const DUMP_MAGIC: &[u8] = b"PSMNFN1";

impl Scripts {
    /// `FUNCTION LOAD [REPLACE] code`: the library's name.
    pub fn load_library(&self, code: &[u8], replace: bool) -> Result<String, Error> {
        let mut g = self.engine()?;
        let engine = self.ready(&mut g)?;
        let name = load_into(engine, code, replace);
        self.count_libraries(engine);
        name
    }

    /// `FUNCTION DELETE name`.
    pub fn delete_library(&self, name: &[u8]) -> Result<(), Error> {
        let mut g = self.engine()?;
        let engine = self.ready(&mut g)?;
        let name = String::from_utf8_lossy(name).into_owned();
        let removed = engine.libraries.remove(&name);
        self.count_libraries(engine);
        removed
            .map(|_| ())
            .ok_or_else(|| Error::new("ERR Library not found"))
    }

    /// `FUNCTION FLUSH`.
    pub fn flush_libraries(&self) -> Result<(), Error> {
        let mut g = self.engine()?;
        if let Some(e) = g.as_mut() {
            e.libraries.clear();
            self.count_libraries(e);
        }
        Ok(())
    }

    /// The libraries, by name.
    pub fn libraries(&self) -> Result<Vec<LibraryInfo>, Error> {
        let g = self.engine()?;
        Ok(g.as_ref()
            .map(|e| {
                e.libraries
                    .iter()
                    .map(|(name, l)| LibraryInfo {
                        name: name.clone(),
                        code: l.code.clone(),
                        functions: l
                            .functions
                            .iter()
                            .map(|f| (f.name.clone(), f.description.clone(), f.flags.clone()))
                            .collect(),
                    })
                    .collect()
            })
            .unwrap_or_default())
    }

    /// `FUNCTION DUMP`: every library's code in one payload (Persimmon's
    /// own format, not Redis's).
    pub fn dump_libraries(&self) -> Result<Vec<u8>, Error> {
        let mut out = DUMP_MAGIC.to_vec();
        for lib in self.libraries()? {
            out.extend_from_slice(&(lib.code.len() as u64).to_le_bytes());
            out.extend_from_slice(&lib.code);
        }
        Ok(out)
    }

    /// `FUNCTION RESTORE payload [policy]`: all of the payload's libraries
    /// or none.
    pub fn restore_libraries(&self, payload: &[u8], policy: RestorePolicy) -> Result<(), Error> {
        let bad = || Error::new("ERR payload version or checksum are wrong");
        let mut rest = payload.strip_prefix(DUMP_MAGIC).ok_or_else(bad)?;
        let mut codes = Vec::new();
        while !rest.is_empty() {
            let len = rest.get(..8).ok_or_else(bad)?;
            let len = u64::from_le_bytes(len.try_into().map_err(|_| bad())?) as usize;
            let code = rest
                .get(8..8usize.checked_add(len).ok_or_else(bad)?)
                .ok_or_else(bad)?;
            codes.push(code.to_vec());
            rest = &rest[8 + len..];
        }
        let mut g = self.engine()?;
        let engine = self.ready(&mut g)?;
        let before: Vec<(String, Vec<u8>)> = engine
            .libraries
            .iter()
            .map(|(n, l)| (n.clone(), l.code.clone()))
            .collect();
        if policy == RestorePolicy::Flush {
            engine.libraries.clear();
        }
        for code in &codes {
            if let Err(e) = load_into(engine, code, policy == RestorePolicy::Replace) {
                engine.libraries.clear();
                for (_, code) in &before {
                    let _ = load_into(engine, code, true);
                }
                self.count_libraries(engine);
                return Err(restore_wording(e));
            }
        }
        self.count_libraries(engine);
        Ok(())
    }

    /// `FUNCTION STATS`: the running function (name, command, ms) and
    /// the counts of libraries and functions.
    #[allow(clippy::type_complexity)]
    pub fn stats(&self) -> (Option<(String, Vec<Vec<u8>>, u64)>, usize, usize) {
        let f = &self.flags;
        let running = (f.running.load(Relaxed) && f.function.load(Relaxed)).then(|| {
            let (name, command) = self
                .running
                .lock()
                .unwrap_or_else(|p| p.into_inner())
                .clone();
            let ms = now_ms(self.epoch).saturating_sub(f.started_ms.load(Relaxed));
            (name, command, ms)
        });
        (
            running,
            self.library_count.load(Relaxed),
            self.function_count.load(Relaxed),
        )
    }

    /// Notes the libraries' and functions' counts after a change.
    fn count_libraries(&self, engine: &Engine) {
        self.library_count.store(engine.libraries.len(), Relaxed);
        self.function_count.store(
            engine.libraries.values().map(|l| l.functions.len()).sum(),
            Relaxed,
        );
    }
}

/// A load's error as `FUNCTION RESTORE` words it: Redis names a library
/// that already exists without quotes there (`FUNCTION LOAD` quotes it).
fn restore_wording(e: Error) -> Error {
    let name =
        e.0.strip_prefix("ERR Library '")
            .and_then(|rest| rest.strip_suffix("' already exists"));
    match name {
        Some(name) => Error::new(format!("ERR Library {name} already exists")),
        None => e,
    }
}

/// A library's `#!engine name=... ` line, split as Redis splits it
/// (quotes decoded): the engine's name and the library's, if given.
fn library_metadata(line: &[u8]) -> Result<(String, Option<String>), Error> {
    if !line.starts_with(b"#!") {
        return Err(Error::new("ERR Missing library metadata"));
    }
    let parts = persimmon_resp::split_args(line)
        .ok()
        .filter(|p| !p.is_empty())
        .ok_or_else(|| Error::new("ERR Invalid library metadata"))?;
    let text = |b: &[u8]| String::from_utf8_lossy(b).into_owned();
    let engine_name = text(&parts[0][2..]);
    let mut name = None;
    for part in &parts[1..] {
        let part = text(part);
        let Some(n) = part.get(..5).filter(|p| p.eq_ignore_ascii_case("name=")) else {
            return Err(Error::new(format!(
                "ERR Invalid metadata value given: {part}"
            )));
        };
        if name.is_some() {
            return Err(Error::new(
                "ERR Invalid metadata value, name argument was given multiple times",
            ));
        }
        name = Some(part[n.len()..].to_string());
    }
    Ok((engine_name, name))
}

fn load_into(engine: &mut Engine, code: &[u8], replace: bool) -> Result<String, Error> {
    let end = code.iter().position(|&b| b == b'\n').unwrap_or(code.len());
    let (engine_name, name) = library_metadata(&code[..end])?;
    if !engine_name.eq_ignore_ascii_case("lua") {
        return Err(Error::new(format!("ERR Engine '{engine_name}' not found")));
    }
    let Some(name) = name else {
        return Err(Error::new("ERR Library name was not given"));
    };
    if !valid_name(&name) {
        return Err(Error::new(
            "ERR Library names can only contain letters, numbers, or underscores(_) and must be \
             at least one character long",
        ));
    }
    if engine.libraries.contains_key(&name) && !replace {
        return Err(Error::new(format!("ERR Library '{name}' already exists")));
    }
    let registered: Arc<Mutex<Vec<Func>>> = Arc::default();
    let loading = Arc::new(AtomicBool::new(true));
    let (reg, on) = (registered.clone(), loading.clone());
    let lua = &engine.lua;
    let lua_err = |e: mlua::Error| Error::new(format!("ERR {}", lua_message(&e)));
    let register = lua
        .create_function(move |_, a: MultiValue| {
            if !on.load(Relaxed) {
                return Err(mlua::Error::RuntimeError(
                    "redis.register_function can only be called on FUNCTION LOAD command".into(),
                ));
            }
            let f = registration(a)?;
            let mut reg = reg.lock().unwrap_or_else(|p| p.into_inner());
            if reg.iter().any(|r| r.name == f.name) {
                return Err(mlua::Error::RuntimeError(
                    "Function already exists in the library".into(),
                ));
            }
            reg.push(f);
            Ok(())
        })
        .map_err(lua_err)?;
    let on = loading.clone();
    let is_loading = lua
        .create_function(move |_, ()| Ok(on.load(Relaxed)))
        .map_err(lua_err)?;
    let env: Table = engine
        .lib_env
        .call((register, is_loading))
        .map_err(lua_err)?;
    let body = code[end.min(code.len())..].to_vec();
    let chunk = lua
        .load(&body[..])
        .set_name("@user_function")
        .set_environment(env)
        .into_function()
        .map_err(|e| Error::new(format!("ERR Error compiling function: {}", lua_message(&e))))?;
    let flags = engine.flags.clone();
    flags
        .loading_since_ms
        .store(now_ms(engine.epoch) + 1, Relaxed);
    let ran = chunk.call::<()>(());
    flags.loading_since_ms.store(0, Relaxed);
    loading.store(false, Relaxed);
    ran.map_err(|e| {
        Error::new(format!(
            "ERR Error registering functions: {}",
            lua_message(&e)
        ))
    })?;
    let functions = std::mem::take(&mut *registered.lock().unwrap_or_else(|p| p.into_inner()));
    if functions.is_empty() {
        return Err(Error::new("ERR No functions registered"));
    }
    for f in &functions {
        let owner = engine
            .libraries
            .iter()
            .find(|(lib, l)| **lib != name && l.functions.iter().any(|g| g.name == f.name));
        if owner.is_some() {
            return Err(Error::new(format!(
                "ERR Function {} already exists",
                f.name
            )));
        }
    }
    engine.libraries.insert(
        name.clone(),
        Library {
            code: code.to_vec(),
            functions,
        },
    );
    Ok(name)
}

/// The function `redis.register_function` was given: `(name, callback)`
/// or `{function_name=, callback=, flags=, description=}`.
fn registration(a: MultiValue) -> mlua::Result<Func> {
    let fail = |t: &str| mlua::Error::RuntimeError(t.to_string());
    let (name, callback, flags, description) = match a.len() {
        2 => {
            let name = match &a[0] {
                Value::String(s) => s.to_string_lossy(),
                _ => {
                    return Err(fail(
                        "first argument to redis.register_function must be a string",
                    ))
                }
            };
            let Value::Function(cb) = &a[1] else {
                return Err(fail(
                    "second argument to redis.register_function must be a function",
                ));
            };
            (name, cb.clone(), Vec::new(), None)
        }
        1 => {
            let Value::Table(t) = &a[0] else {
                return Err(fail("calling redis.register_function with a single argument is only applicable to Lua table (representing named arguments)."));
            };
            let mut name = None;
            let mut callback = None;
            let mut flags = Vec::new();
            let mut description = None;
            for pair in t.clone().pairs::<String, Value>() {
                let (k, v) = pair?;
                match (k.as_str(), v) {
                    ("function_name", Value::String(s)) => name = Some(s.to_string_lossy()),
                    ("callback", Value::Function(f)) => callback = Some(f),
                    ("description", Value::String(s)) => description = Some(s.to_string_lossy()),
                    ("flags", Value::Table(fl)) => {
                        for f in fl.sequence_values::<Value>() {
                            let f = match f? {
                                Value::String(f) => f.to_string_lossy(),
                                _ => return Err(fail("unknown flag given")),
                            };
                            if !SCRIPT_FLAGS.contains(&f.as_str()) {
                                return Err(fail("unknown flag given"));
                            }
                            flags.push(f);
                        }
                    }
                    ("function_name", _) => return Err(fail("function_name argument given to redis.register_function must be a string")),
                    ("callback", _) => return Err(fail("callback argument given to redis.register_function must be a function")),
                    ("description", _) => return Err(fail("description argument given to redis.register_function must be a string")),
                    ("flags", _) => return Err(fail("flags argument to redis.register_function must be a table representing function flags")),
                    (other, _) => return Err(fail(&format!("unknown argument given to redis.register_function: {other}"))),
                }
            }
            let name = name
                .ok_or_else(|| fail("redis.register_function must get a function name argument"))?;
            let callback = callback
                .ok_or_else(|| fail("redis.register_function must get a callback argument"))?;
            (name, callback, flags, description)
        }
        _ => return Err(fail("wrong number of arguments to redis.register_function")),
    };
    if !valid_name(&name) {
        return Err(fail("Library names can only contain letters, numbers, or underscores(_) and must be at least one character long"));
    }
    Ok(Func {
        name,
        callback,
        flags,
        description,
    })
}

/// The one argument of `name` as an integer (a number truncated, any other
/// value `other`); an error naming `name` unless there is exactly one.
fn one_int_arg(a: &MultiValue, name: &str, other: i64) -> mlua::Result<i64> {
    if a.len() != 1 {
        return Err(mlua::Error::RuntimeError(format!(
            "{name} requires one argument."
        )));
    }
    Ok(match &a[0] {
        Value::Integer(i) => *i,
        Value::Number(x) => *x as i64,
        _ => other,
    })
}
