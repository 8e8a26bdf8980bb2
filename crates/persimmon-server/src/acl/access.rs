//! What a request touches, for the permission check: each key with what it
//! needs (read, write, both, either) and each channel. Keys are found
//! where the command table puts them (`Keys::positions`: the range, or the
//! row's key finder); what each needs follows the row's flags, refined by
//! name for the commands whose keys differ (a source read and a
//! destination written, an existence check, a write that also reads).
//!
//! Invariants:
//! - A request whose words do not reach its keys (a syntax error the
//!   handler will report) has no keys here: the check lets it through and
//!   the handler refuses it, as Redis does.
//! - A `readonly` row's keys need read, a `write` row's need write, unless
//!   the tables below say otherwise.

use crate::acl::commands::Commands;
use crate::acl::selector::Need;

/// Commands that only test a key's existence or size: read or write will
/// do (Redis's key specs without ACCESS).
const EITHER: &[&str] = &[
    "exists",
    "type",
    "touch",
    "strlen",
    "hlen",
    "llen",
    "scard",
    "zcard",
    "xlen",
    "hexists",
    "hstrlen",
    "sismember",
    "smismember",
    "memory|usage",
    "ttl",
    "pttl",
    "expiretime",
    "pexpiretime",
    "object|encoding",
    "object|freq",
    "object|idletime",
    "object|refcount",
];

/// Writes that also return or use the value they change (ACCESS + write).
const READ_WRITE: &[&str] = &[
    "incr",
    "incrby",
    "incrbyfloat",
    "decr",
    "decrby",
    "getset",
    "getdel",
    "getex",
    "lpop",
    "rpop",
    "spop",
    "zpopmin",
    "zpopmax",
    "blpop",
    "brpop",
    "bzpopmin",
    "bzpopmax",
    "lmpop",
    "zmpop",
    "blmpop",
    "bzmpop",
    "hincrby",
    "hincrbyfloat",
    "zincrby",
    "eval",
    "evalsha",
    "fcall",
    "migrate",
    "lset",
    "linsert",
    "ltrim",
    "lrem",
    "hsetnx",
    "msetnx",
    "setnx",
];

/// Commands whose first key is a destination written and the others
/// sources read.
const DEST_FIRST: &[&str] = &[
    "sunionstore",
    "sinterstore",
    "sdiffstore",
    "zunionstore",
    "zinterstore",
    "zdiffstore",
    "zrangestore",
    "geosearchstore",
    "bitop",
    "pfmerge",
];

/// Commands whose first key is a source read (and written, for moves) and
/// the others destinations written.
const SOURCE_FIRST: &[&str] = &[
    "copy",
    "sort",
    "georadius",
    "georadiusbymember",
    "rename",
    "renamenx",
    "lmove",
    "blmove",
    "rpoplpush",
    "brpoplpush",
    "smove",
];

/// Whether `arg` is `word` (ASCII, any case).
fn is(arg: &[u8], word: &str) -> bool {
    arg.eq_ignore_ascii_case(word.as_bytes())
}

/// The keys of request `words` (the name first) of row `row`, each with
/// what it needs.
pub fn keys(table: &dyn Commands, row: usize, words: &[&[u8]]) -> Vec<(usize, Need)> {
    let Some(positions) = table.key_positions(row, words) else {
        return Vec::new();
    };
    let name = table.name(row);
    let base = base_need(name, table.flags(row), words);
    positions
        .iter()
        .filter(|&&p| p < words.len())
        .enumerate()
        .map(|(n, &p)| (p, positional_need(name, n, base)))
        .collect()
}

/// What every key of the request needs, the positional tables aside.
fn base_need(name: &str, flags: &[&str], words: &[&[u8]]) -> Need {
    if EITHER.contains(&name) {
        return Need::Either;
    }
    if READ_WRITE.contains(&name) {
        return Need::ReadWrite;
    }
    match name {
        "set" if words.iter().skip(3).any(|w| is(w, "GET")) => Need::ReadWrite,
        "bitfield" => bitfield_need(words),
        _ if flags.contains(&"write") => Need::Write,
        _ => Need::Read,
    }
}

/// BITFIELD: only GETs read; any SET or INCRBY reads and writes.
fn bitfield_need(words: &[&[u8]]) -> Need {
    if words
        .iter()
        .skip(2)
        .any(|w| is(w, "SET") || is(w, "INCRBY"))
    {
        Need::ReadWrite
    } else {
        Need::Read
    }
}

/// The need of the `n`th key (0: the first) of command `name`.
fn positional_need(name: &str, n: usize, base: Need) -> Need {
    if DEST_FIRST.contains(&name) {
        return match (n, name) {
            (0, "pfmerge") => Need::ReadWrite,
            (0, _) => Need::Write,
            _ => Need::Read,
        };
    }
    if SOURCE_FIRST.contains(&name) {
        return match (n, name) {
            (0, "copy" | "sort" | "georadius" | "georadiusbymember") => Need::Read,
            (0, _) => Need::ReadWrite,
            _ => Need::Write,
        };
    }
    base
}

/// The channels of a request, each with whether it is a pattern
/// (PSUBSCRIBE's, checked literally).
pub fn channels(name: &str, words: &[&[u8]]) -> Vec<(usize, bool)> {
    match name {
        "publish" | "spublish" => (words.len() > 1)
            .then_some((1, false))
            .into_iter()
            .collect(),
        "subscribe" | "ssubscribe" => (1..words.len()).map(|i| (i, false)).collect(),
        "psubscribe" => (1..words.len()).map(|i| (i, true)).collect(),
        _ => Vec::new(),
    }
}
