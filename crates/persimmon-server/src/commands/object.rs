//! What Redis keeps about a key besides its value, as far as Persimmon
//! can tell: the OBJECT subcommands (ENCODING, REFCOUNT, IDLETIME, FREQ,
//! HELP), one handler each, TOUCH, and DEBUG OBJECT (Redis's one-line
//! summary; DEBUG's other subcommands, which test Redis's internals, are
//! refused).
//!
//! - ENCODING and REFCOUNT report what Redis would show for the value's
//!   contents (`encoding.rs`; reporting only, Persimmon stores values its
//!   own way). ENCODING reads a collection whole (O(size)).
//! - IDLETIME is always 0: Persimmon records neither when a key was last
//!   read nor when it was last written, so it cannot tell an idle key
//!   from a busy one.
//! - FREQ replies Redis's error for a server without an LFU
//!   `maxmemory-policy` (Persimmon has no eviction policy at all).
//! - TOUCH counts the keys that exist; there is no access time to update.
//!
//! Invariants: every subcommand reads the key through the store and never
//! writes; a missing key is a null reply, before any other check, as in
//! Redis.

use persimmon_resp::Args;
use persimmon_types::value::{Kind, Stored};
use persimmon_types::Error;

use crate::encoding::{self, Thresholds};
use crate::session::Session;

const OBJECT_HELP: [&str; 15] = [
    "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "ENCODING <key>",
    "    Return the kind of internal representation used in order to store the value",
    "    associated with a <key>.",
    "FREQ <key>",
    "    Return the access frequency index of the <key>. The returned integer is",
    "    proportional to the logarithm of the recent access frequency of the key.",
    "IDLETIME <key>",
    "    Return the idle time of the <key>, that is the approximated number of",
    "    seconds elapsed since the last access to the key.",
    "REFCOUNT <key>",
    "    Return the number of references of the value associated with the specified",
    "    <key>.",
    "HELP",
    "    Prints this help.",
];

const NO_LFU: &str = "ERR An LFU maxmemory policy is not selected, access frequency not tracked. \
Please note that when switching between policies at runtime LRU and LFU data will take some time \
to adjust.";

/// What an OBJECT subcommand replies about an existing key.
enum About {
    Text(&'static str),
    Int(i64),
}

/// OBJECT HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&OBJECT_HELP);
    Ok(())
}

/// OBJECT ENCODING key
pub fn encoding(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    describe(s, &a, "encoding")
}

/// OBJECT REFCOUNT key
pub fn refcount(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    describe(s, &a, "refcount")
}

/// OBJECT IDLETIME key
pub fn idletime(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    describe(s, &a, "idletime")
}

/// OBJECT FREQ key
pub fn freq(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    describe(s, &a, "freq")
}

/// What subcommand `name` replies about the key `a[2]` (null when missing).
fn describe(s: &mut Session, a: &Args<'_>, name: &str) -> Result<(), Error> {
    let thresholds = Thresholds::of(&s.shared.settings);
    let key = a.get(2);
    let about = s.store.atomic(|st| -> Result<Option<About>, Error> {
        let stream = st.get(key, |v| matches!(v, Stored::Coll(Kind::Stream, _)))?;
        if name == "encoding" && stream == Some(true) {
            return Ok(Some(About::Text("stream")));
        }
        if name == "encoding" {
            if let Some(w) = persimmon_types::coll::read_key(st, key)? {
                return Ok(Some(About::Text(thresholds.collection(&w))));
            }
        }
        let about = st.get(key, |v| match name {
            // `read_key` took every collection: only a string is left.
            "encoding" => match v {
                Stored::String(s) => Ok(About::Text(encoding::string_encoding(s))),
                other => Err(damaged(other)),
            },
            "refcount" => Ok(About::Int(encoding::refcount(v))),
            "idletime" => Ok(About::Int(0)),
            _ => Err(Error::new(NO_LFU)),
        })?;
        about.transpose()
    })?;
    match about {
        None => s.out.null(),
        Some(About::Text(t)) => s.out.bulk(t.as_bytes()),
        Some(About::Int(n)) => s.out.int(n),
    }
    Ok(())
}

fn damaged(v: Stored<'_>) -> Error {
    Error::new(format!(
        "ERR the {} stored at this key is damaged (it does not decode)",
        v.type_name()
    ))
}

const DEBUG_HELP: [&str; 5] = [
    "DEBUG <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "OBJECT <key>",
    "    Show low-level info about the `key` and associated value.",
    "HELP",
    "    Print this help.",
];

/// DEBUG OBJECT key: `Value at:... refcount:... encoding:...
/// serializedlength:... lru:... lru_seconds_idle:...` (the length is the
/// value's stored bytes; no access time is kept). DEBUG HELP; any other
/// subcommand is refused.
pub fn debug(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let sub = a.get(1);
    if sub.eq_ignore_ascii_case(b"help") && a.len() == 2 {
        s.out.simple_lines(&DEBUG_HELP);
        return Ok(());
    }
    if !sub.eq_ignore_ascii_case(b"object") || a.len() != 3 {
        return Err(crate::session::subcommand_syntax("debug", sub));
    }
    let thresholds = Thresholds::of(&s.shared.settings);
    let key = a.get(2);
    let found = s
        .store
        .atomic(|st| -> Result<Option<(&'static str, i64, usize)>, Error> {
            let collection =
                persimmon_types::coll::read_key(st, key)?.map(|w| thresholds.collection(&w));
            st.get(key, |v| {
                let encoding = match (&v, collection) {
                    (_, Some(e)) => e,
                    (Stored::String(s), None) => encoding::string_encoding(s),
                    _ => "unknown",
                };
                (encoding, encoding::refcount(v), v.encoded_len())
            })
        })?;
    let Some((encoding, refcount, len)) = found else {
        return Err(Error::new("ERR no such key"));
    };
    let line = format!(
        "Value at:0x0 refcount:{refcount} encoding:{encoding} serializedlength:{len} lru:0 \
         lru_seconds_idle:0"
    );
    s.out.simple(&line);
    Ok(())
}

/// TOUCH key [key ...]: how many of the keys exist.
pub fn touch(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut n = 0;
    for key in a.from(1) {
        n += s.store.exists(key)? as i64;
    }
    s.out.int(n);
    Ok(())
}
