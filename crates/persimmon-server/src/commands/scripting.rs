//! Scripting commands: EVAL, EVALSHA, EVAL_RO, EVALSHA_RO, SCRIPT
//! LOAD|EXISTS|FLUSH|KILL|HELP, FCALL, FCALL_RO and FUNCTION
//! LOAD|DELETE|LIST|DUMP|RESTORE|FLUSH|STATS|KILL|HELP. The interpreter, the sandbox and how a
//! script runs are in `script/`.
//!
//! Invariants:
//! - The arguments are checked as Redis checks them (numkeys within the
//!   arguments, not negative) before any script runs.
//! - A script's keys are `numkeys` words after the script (`COMMAND
//!   GETKEYS` finds them with [`eval_keys`]).

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::script::{self, Call};
use crate::session::{int_arg, is, subcommand_syntax, unknown_subcommand, Session};

/// The keys of `EVAL script numkeys key ... arg ...` (and EVALSHA, FCALL).
pub fn eval_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    let n = persimmon_resp::parse_i64(words.get(2)?)?;
    let n = usize::try_from(n).ok()?;
    (3usize.checked_add(n)? <= words.len()).then(|| (3..3 + n).collect())
}

fn call_of<'a>(a: &Args<'a>, by_sha: bool, read_only: bool) -> Result<Call<'a>, Error> {
    call_with(a, by_sha, read_only, false)
}

fn call_with<'a>(
    a: &Args<'a>,
    by_sha: bool,
    read_only: bool,
    function: bool,
) -> Result<Call<'a>, Error> {
    let n = match function {
        true => int_arg(a.get(2)).map_err(|_| Error::new("ERR Bad number of keys provided"))?,
        false => int_arg(a.get(2))?,
    };
    if n < 0 {
        return Err(Error::new("ERR Number of keys can't be negative"));
    }
    let n = n as usize;
    if n > a.len() - 3 {
        return Err(Error::new(
            "ERR Number of keys can't be greater than number of args",
        ));
    }
    let words: Vec<&'a [u8]> = a.iter().collect();
    Ok(Call {
        body: (!by_sha).then(|| a.get(1)),
        sha: a.get(1),
        function,
        keys: words[3..3 + n].to_vec(),
        argv: words[3 + n..].to_vec(),
        read_only,
        command: words,
    })
}

pub fn eval(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    script::run(s, call_of(&a, false, false)?)
}

pub fn eval_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    script::run(s, call_of(&a, false, true)?)
}

pub fn evalsha(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    script::run(s, call_of(&a, true, false)?)
}

pub fn evalsha_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    script::run(s, call_of(&a, true, true)?)
}

/// SCRIPT with a subcommand the table does not have, or HELP.
pub fn script(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() == 2 && is(a.get(1), "HELP") {
        s.out.simple_lines(&[
            "SCRIPT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "EXISTS <sha1> [<sha1> ...]",
            "    Return information about the existence of the scripts in the script cache.",
            "FLUSH [ASYNC|SYNC]",
            "    Flush the Lua scripts cache. Very dangerous on replicas.",
            "KILL",
            "    Kill the currently executing Lua script.",
            "LOAD <script>",
            "    Load a script into the scripts cache without executing it.",
            "HELP",
            "    Print this help.",
        ]);
        return Ok(());
    }
    Err(unknown_subcommand("script", a.get(1)))
}

pub fn script_load(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let shared = s.shared.clone();
    let sha = crate::session::blocking(|| shared.scripts.load(a.get(2)))?;
    s.out.bulk(sha.as_bytes());
    Ok(())
}

pub fn script_exists(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let shared = s.shared.clone();
    let found = crate::session::blocking(|| {
        a.from(2)
            .map(|sha| shared.scripts.exists(sha))
            .collect::<Result<Vec<bool>, Error>>()
    })?;
    s.out.array(found.len());
    for f in found {
        s.out.int(f as i64);
    }
    Ok(())
}

pub fn script_flush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(subcommand_syntax("script", a.get(1)));
    }
    if a.len() == 3 && !(is(a.get(2), "ASYNC") || is(a.get(2), "SYNC")) {
        return Err(Error::new(
            "ERR SCRIPT FLUSH only support SYNC|ASYNC option",
        ));
    }
    let shared = s.shared.clone();
    crate::session::blocking(|| shared.scripts.flush())?;
    s.out.ok();
    Ok(())
}

pub fn script_kill(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared.scripts.kill_kind(false)?;
    s.out.ok();
    Ok(())
}

pub fn fcall(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    script::run(s, call_with(&a, true, false, true)?)
}

pub fn fcall_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    script::run(s, call_with(&a, true, true, true)?)
}

/// FUNCTION with a subcommand the table does not have, or HELP.
pub fn function(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() == 2 && is(a.get(1), "HELP") {
        s.out.simple_lines(&[
            "FUNCTION <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
            "LOAD [REPLACE] <FUNCTION CODE>",
            "DELETE <LIBRARY NAME>",
            "LIST [LIBRARYNAME PATTERN] [WITHCODE]",
            "FLUSH [ASYNC|SYNC]",
            "STATS",
            "KILL",
            "DUMP",
            "RESTORE <PAYLOAD> [FLUSH|APPEND|REPLACE]",
            "HELP",
        ]);
        return Ok(());
    }
    Err(unknown_subcommand("function", a.get(1)))
}

fn engine_call<R>(s: &Session, f: impl FnOnce(&script::Scripts) -> R) -> R {
    let shared = s.shared.clone();
    crate::session::blocking(|| f(&shared.scripts))
}

pub fn function_load(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut replace = false;
    for opt in a.iter().skip(2).take(a.len() - 3) {
        if is(opt, "REPLACE") {
            replace = true;
        } else {
            return Err(Error::new(format!(
                "ERR Unknown option given: {}",
                String::from_utf8_lossy(opt)
            )));
        }
    }
    let code = a.get(a.len() - 1);
    let name = engine_call(s, |e| e.load_library(code, replace))?;
    s.out.bulk(name.as_bytes());
    Ok(())
}

pub fn function_delete(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    engine_call(s, |e| e.delete_library(a.get(2)))?;
    s.out.ok();
    Ok(())
}

pub fn function_flush(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(subcommand_syntax("function", a.get(1)));
    }
    if a.len() == 3 && !(is(a.get(2), "ASYNC") || is(a.get(2), "SYNC")) {
        return Err(Error::new(
            "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
        ));
    }
    engine_call(s, |e| e.flush_libraries())?;
    s.out.ok();
    Ok(())
}

pub fn function_kill(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.shared.scripts.kill_kind(true)?;
    s.out.ok();
    Ok(())
}

pub fn function_list(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut with_code = false;
    let mut pattern: Option<&[u8]> = None;
    let mut i = 2;
    while i < a.len() {
        if is(a.get(i), "WITHCODE") && !with_code {
            with_code = true;
        } else if is(a.get(i), "LIBRARYNAME") && pattern.is_none() {
            if i + 1 >= a.len() {
                return Err(Error::new("ERR library name argument was not given"));
            }
            i += 1;
            pattern = Some(a.get(i));
        } else {
            return Err(Error::new(format!(
                "ERR Unknown argument {}",
                String::from_utf8_lossy(a.get(i))
            )));
        }
        i += 1;
    }
    let libs = engine_call(s, |e| e.libraries())?;
    let libs: Vec<_> = libs
        .into_iter()
        .filter(|l| pattern.is_none_or(|p| crate::glob::matches(p, l.name.as_bytes())))
        .collect();
    s.out.array(libs.len());
    for lib in libs {
        s.out.map(if with_code { 4 } else { 3 });
        s.out.bulk(b"library_name");
        s.out.bulk(lib.name.as_bytes());
        s.out.bulk(b"engine");
        s.out.bulk(b"LUA");
        s.out.bulk(b"functions");
        s.out.array(lib.functions.len());
        for (name, description, flags) in &lib.functions {
            s.out.map(3);
            s.out.bulk(b"name");
            s.out.bulk(name.as_bytes());
            s.out.bulk(b"description");
            match description {
                Some(d) => s.out.bulk(d.as_bytes()),
                None => s.out.null(),
            }
            s.out.bulk(b"flags");
            s.out.set(flags.len());
            for f in flags {
                s.out.bulk(f.as_bytes());
            }
        }
        if with_code {
            s.out.bulk(b"library_code");
            s.out.bulk(&lib.code);
        }
    }
    Ok(())
}

pub fn function_dump(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let payload = engine_call(s, |e| e.dump_libraries())?;
    s.out.bulk(&payload);
    Ok(())
}

pub fn function_restore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let policy =
        match a.len() {
            3 => script::RestorePolicy::Append,
            4 if is(a.get(3), "APPEND") => script::RestorePolicy::Append,
            4 if is(a.get(3), "REPLACE") => script::RestorePolicy::Replace,
            4 if is(a.get(3), "FLUSH") => script::RestorePolicy::Flush,
            4 => return Err(Error::new(
                "ERR Wrong restore policy given, value should be either FLUSH, APPEND or REPLACE.",
            )),
            _ => return Err(subcommand_syntax("function", a.get(1))),
        };
    engine_call(s, |e| e.restore_libraries(a.get(2), policy))?;
    s.out.ok();
    Ok(())
}

pub fn function_stats(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let (running, libraries, functions) = s.shared.scripts.stats();
    s.out.map(2);
    s.out.bulk(b"running_script");
    match running {
        None => s.out.null(),
        Some((name, command, ms)) => {
            s.out.map(3);
            s.out.bulk(b"name");
            s.out.bulk(name.as_bytes());
            s.out.bulk(b"command");
            s.out.array(command.len());
            for w in &command {
                s.out.bulk(w);
            }
            s.out.bulk(b"duration_ms");
            s.out.int(ms as i64);
        }
    }
    s.out.bulk(b"engines");
    s.out.map(1);
    s.out.bulk(b"LUA");
    s.out.map(2);
    s.out.bulk(b"libraries_count");
    s.out.int(libraries as i64);
    s.out.bulk(b"functions_count");
    s.out.int(functions as i64);
    Ok(())
}
