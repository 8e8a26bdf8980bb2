//! The flags Redis 7's key specs give each key of a command, as `COMMAND
//! GETKEYSANDFLAGS` reports them: how the key is reached (`RO` read only,
//! `RW` read and written, `OW` overwritten, `RM` removed) and what happens
//! to its value (`access`, `update`, `insert`, `delete`).
//!
//! Invariants: a pure function of the command's row name, the key's
//! position among the request's keys and the row's flags. Commands whose
//! keys differ (a destination, a source emptied) are listed; every other
//! `readonly` row's keys are `RO access`, every other write's `RW access
//! update`.

use crate::session::Spec;

const RO_ACCESS: &[&str] = &["RO", "access"];
const RW_ACCESS_UPDATE: &[&str] = &["RW", "access", "update"];
const RW_ACCESS_DELETE: &[&str] = &["RW", "access", "delete"];
const RW_INSERT: &[&str] = &["RW", "insert"];
const RW_UPDATE: &[&str] = &["RW", "update"];
const OW_UPDATE: &[&str] = &["OW", "update"];
const OW_INSERT: &[&str] = &["OW", "insert"];
const RM_DELETE: &[&str] = &["RM", "delete"];

/// The flags of the key at `index` of `count` keys of a `spec` request.
pub fn of(spec: &Spec, index: usize, count: usize) -> &'static [&'static str] {
    let first = index == 0;
    let last = index + 1 == count;
    match spec.name {
        "set" | "setex" | "psetex" | "mset" | "msetnx" => OW_UPDATE,
        "setnx" => OW_INSERT,
        "del" | "unlink" => RM_DELETE,
        "getdel" | "lpop" | "rpop" | "spop" | "zpopmin" | "zpopmax" | "blpop" | "brpop"
        | "bzpopmin" | "bzpopmax" | "lmpop" | "zmpop" | "blmpop" | "bzmpop" => RW_ACCESS_DELETE,
        "lpush" | "rpush" | "lpushx" | "rpushx" | "sadd" | "pfadd" | "linsert" => RW_INSERT,
        "hset" | "hsetnx" | "hmset" | "zadd" | "geoadd" | "setrange" | "setbit" => RW_UPDATE,
        "lmove" | "rpoplpush" | "blmove" | "brpoplpush" | "smove" => match first {
            true => RW_ACCESS_DELETE,
            false => RW_INSERT,
        },
        "rename" | "renamenx" => match first {
            true => RW_ACCESS_DELETE,
            false => OW_INSERT,
        },
        "copy" => match first {
            true => RO_ACCESS,
            false => OW_INSERT,
        },
        // The destination first, then the sources.
        "sinterstore" | "sunionstore" | "sdiffstore" | "zunionstore" | "zinterstore"
        | "zdiffstore" | "zrangestore" | "bitop" | "geosearchstore" => match first {
            true => OW_UPDATE,
            false => RO_ACCESS,
        },
        "pfmerge" => match first {
            true => RW_ACCESS_UPDATE,
            false => RO_ACCESS,
        },
        // SORT ... STORE dest, GEORADIUS ... STORE dest: the store last.
        "sort" | "georadius" | "georadiusbymember" => match !first && last {
            true => OW_UPDATE,
            false => RO_ACCESS,
        },
        _ if spec.flags.contains(&"readonly") => RO_ACCESS,
        _ => RW_ACCESS_UPDATE,
    }
}
