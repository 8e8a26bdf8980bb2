//! The command table: one row per command and per subcommand, with its
//! `COMMAND` metadata (arity, flags, key positions, the Redis version that
//! added it, group, summary) and its handler. A subcommand's row is named
//! `container|sub` (`config|get`, as Redis 7 names it) and follows its
//! container's row; the container's own handler answers the subcommands
//! the table does not have. The dispatch (`dispatch.rs`), `COMMAND`,
//! `INFO commandstats` and `CLIENT LIST` read everything they know of a
//! command from its row. Adding a command or a subcommand is one row here
//! and one handler in the module of its family (with its key finder, for a
//! `movablekeys` row).
//!
//! Invariants:
//! - Every check the dispatch makes (arity, authentication, `MULTI`
//!   queuing, settings, read-only replicas) and every count reads the row
//!   the request resolves to: a subcommand's own, never its container's.
//! - The flags that steer the dispatch (`write`, `denyoom`,
//!   `may_replicate`, `no_multi`, `no_auth`, `multi_control`, `swaps_dbs`)
//!   are Persimmon's decisions; the others report what Redis 7 reports.
//! - Multi-key writes (MSET, MSETNX, DEL of several keys, MOVE, and the
//!   commands in an EXEC) are one atomic unit of the store: one crash-atomic
//!   engine batch (see `store.rs`). Multi-key reads (MGET, EXISTS) read key
//!   by key, each read atomic (MGET through `Store::get_many`, one batched
//!   engine read per 64 keys, each key still read on its own).
//! - Scans of the whole pool (KEYS, SCAN snapshots, FLUSHDB, DBSIZE and
//!   INFO right after a crash) and ordered scans that may return more than
//!   1024 keys (KRANGE, KPREFIX) run under `blocking`, so they do not stall
//!   the other clients on the same worker.

use super::{
    acl, bitfield, bits, blocking, cluster, command, config, connection, dump, expire, geo,
    hash_walk, hashes, hll, info, keys, latency, lcs, lists, memory, migrate, monitor, multi,
    object, ordered, pause, pubsub, randomkey, rename, replication, scripting, server, sets,
    slowlog, sort, stream_groups, stream_read, streams, strings, zset_ops, zset_range, zsets,
};
use crate::session::{self, CommandTable, Keys, Spec};

/// One table row: `spec!(name, arity, flags, keys, since, group, handler,
/// summary)`, where keys is `[first, last, step]` or, for a `movablekeys`
/// row, `[first, last, step; finder]`, and since is a Redis version or `-`
/// (Persimmon's own command).
macro_rules! spec {
    ($name:literal, $arity:expr, [$($flag:literal),*], $keys:tt, $since:tt, $group:literal, $handler:expr, $summary:literal) => {
        Spec {
            name: $name,
            arity: $arity,
            flags: &[$($flag),*],
            keys: keys!($keys),
            since: since!($since),
            group: $group,
            summary: $summary,
            handler: $handler,
        }
    };
}

macro_rules! keys {
    ([$first:expr, $last:expr, $step:expr]) => {
        Keys {
            first: $first,
            last: $last,
            step: $step,
            find: None,
        }
    };
    ([$first:expr, $last:expr, $step:expr; $find:expr]) => {
        Keys {
            first: $first,
            last: $last,
            step: $step,
            find: Some($find),
        }
    };
}

macro_rules! since {
    (-) => {
        None
    };
    ($version:literal) => {
        Some($version)
    };
}

/// Every command the server knows, in `COMMAND` order.
#[rustfmt::skip]
pub static COMMANDS: CommandTable = CommandTable::new(&[
    // Connection and server.
    spec!("ping",          -1, ["fast"],                     [0,  0, 0], "1.0.0", "connection", connection::ping,     "Returns the server's liveliness response."),
    spec!("echo",           2, ["fast"],                     [0,  0, 0], "1.0.0", "connection", connection::echo,     "Returns the given string."),
    spec!("hello",         -1, ["no_auth", "fast"],          [0,  0, 0], "6.0.0", "connection", connection::hello,    "Handshakes with the server: protocol version, authentication, client name."),
    spec!("auth",          -2, ["no_auth", "fast"],          [0,  0, 0], "1.0.0", "connection", connection::auth,     "Authenticates the connection."),
    spec!("select",         2, ["fast"],                     [0,  0, 0], "1.0.0", "connection", keys::select,         "Changes the selected database (0 to databases - 1)."),
    spec!("readonly",       1, ["fast", "loading", "stale", "@connection"], [0, 0, 0], "3.0.0", "cluster", connection::cluster_mode, "Cluster replica reads: refused, the server is not a cluster."),
    spec!("readwrite",      1, ["fast", "loading", "stale", "@connection"], [0, 0, 0], "3.0.0", "cluster", connection::cluster_mode, "Ends cluster replica reads: refused, the server is not a cluster."),
    spec!("quit",          -1, ["no_auth", "fast", "multi_control"], [0, 0, 0], "1.0.0", "connection", connection::quit, "Closes the connection."),
    spec!("client",        -2, [],                           [0,  0, 0], "2.4.0", "connection", session::not_a_subcommand, "Client connection commands (ID, SETNAME, GETNAME, LIST, INFO, SETINFO, KILL, UNBLOCK, REPLY)."),
      spec!("client|id",             2, ["noscript", "loading", "stale"],            [0,  0, 0], "5.0.0",  "connection", connection::client_id,         "Returns the id of the connection."),
      spec!("client|setname",        3, ["noscript", "loading", "stale"],            [0,  0, 0], "2.6.9",  "connection", connection::client_setname,    "Names the connection (printable ASCII, no blanks)."),
      spec!("client|getname",        2, ["noscript", "loading", "stale"],            [0,  0, 0], "2.6.9",  "connection", connection::client_getname,    "Returns the name of the connection (nil when it has none)."),
      spec!("client|setinfo",        4, ["noscript", "loading", "stale"],            [0,  0, 0], "7.2.0",  "connection", connection::client_setinfo,    "Sets the client library's name or version (LIB-NAME, LIB-VER)."),
      spec!("client|list",          -2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.4.0",  "connection", connection::client_list,       "Describes the connections, one line each (TYPE, ID)."),
      spec!("client|info",           2, ["noscript", "loading", "stale"],            [0,  0, 0], "6.2.0",  "connection", connection::client_info,       "Describes the connection, as a CLIENT LIST line."),
      spec!("client|no-evict",       3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "7.0.0",  "connection", connection::client_no_evict,   "Replies OK to ON or OFF (nothing is evicted)."),
      spec!("client|unblock",       -3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "5.0.0",  "connection", connection::client_unblock,    "Ends the wait of a client blocked on keys, as a timeout or with an error (TIMEOUT, ERROR)."),
      spec!("client|kill",          -3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.4.0",  "connection", connection::client_kill,       "Closes connections, by address or by filters (ID, TYPE, USER, ADDR, LADDR, SKIPME)."),
      spec!("client|reply",          3, ["noscript", "loading", "stale"],            [0,  0, 0], "3.2.0",  "connection", connection::client_reply,      "Turns the replies to the connection ON, OFF, or off for the next command (SKIP)."),
      spec!("client|pause",         -3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "3.0.0",  "connection", pause::client_pause,       "Holds the clients' commands (ALL) or their writes (WRITE) back for that many milliseconds."),
      spec!("client|unpause",        2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.2.0",  "connection", pause::client_unpause,     "Ends CLIENT PAUSE: the held clients' commands run."),
      spec!("client|help",          -2, ["loading", "stale"],                        [0,  0, 0], "5.0.0",  "connection", connection::client_help,       "Describes the CLIENT subcommands."),
    spec!("command",       -1, ["loading", "stale"],         [0,  0, 0], "2.8.13", "server",     command::command,     "Returns details about the commands (COUNT, INFO, DOCS, LIST, GETKEYS)."),
      spec!("command|count",         2, ["loading", "stale"],                        [0,  0, 0], "2.8.13", "server",     command::count,                "Returns the number of commands."),
      spec!("command|info",         -2, ["loading", "stale"],                        [0,  0, 0], "2.8.13", "server",     command::info,                 "Returns arity, flags, key positions and categories of commands (all without names)."),
      spec!("command|docs",         -2, ["loading", "stale"],                        [0,  0, 0], "7.0.0",  "server",     command::docs,                 "Returns summary, version and group of commands (all without names)."),
      spec!("command|list",         -2, ["loading", "stale"],                        [0,  0, 0], "7.0.0",  "server",     command::list,                 "Returns the names of the commands and subcommands (FILTERBY MODULE, ACLCAT, PATTERN)."),
      spec!("command|getkeys",      -4, ["loading", "stale"],                        [0,  0, 0], "2.8.13", "server",     command::getkeys,              "Returns the keys of a command and its arguments."),
      spec!("command|getkeysandflags", -4, ["loading", "stale"],                      [0,  0, 0], "7.0.0",  "server",     command::getkeysandflags,      "Returns the keys of a command and its arguments, each with its key-spec flags (RW, access...)."),
      spec!("command|help",          2, ["loading", "stale"],                        [0,  0, 0], "5.0.0",  "server",     command::help,                 "Describes the COMMAND subcommands."),
    spec!("config",        -2, [],                           [0,  0, 0], "2.0.0", "server",     session::not_a_subcommand, "Reads and changes the server's settings (GET, SET, RESETSTAT, REWRITE)."),
      spec!("config|get",           -3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.0.0",  "server",     config::get,                   "Returns the parameters whose names match glob patterns, with their values."),
      spec!("config|set",           -4, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.0.0",  "server",     config::set,                   "Changes parameters: all of the pairs given, or none."),
      spec!("config|resetstat",      2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.0.0",  "server",     config::resetstat,             "Zeroes the statistics INFO reports (stats, commandstats, errorstats)."),
      spec!("config|rewrite",        2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.8.0",  "server",     config::rewrite,               "Writes the parameters changed at run time into the config file."),
      spec!("config|help",           2, ["loading", "stale"],                        [0,  0, 0], "5.0.0",  "server",     config::help,                  "Describes the CONFIG subcommands."),
    spec!("monitor",        1, ["admin", "noscript", "loading", "stale"], [0, 0, 0], "1.0.0", "server", monitor::monitor, "Streams every command the server runs to this connection, as it runs."),
    spec!("slowlog",       -2, [],                           [0,  0, 0], "2.2.12", "server",    session::not_a_subcommand, "The commands that ran longer than slowlog-log-slower-than (GET, LEN, RESET)."),
      spec!("slowlog|get",          -2, ["admin", "loading", "stale"],               [0,  0, 0], "2.2.12", "server",     slowlog::get,                  "Returns the newest entries of the slow log (10, or the count given; -1: all)."),
      spec!("slowlog|len",           2, ["admin", "loading", "stale"],               [0,  0, 0], "2.2.12", "server",     slowlog::len,                  "Returns the number of entries in the slow log."),
      spec!("slowlog|reset",         2, ["admin", "loading", "stale"],               [0,  0, 0], "2.2.12", "server",     slowlog::reset,                "Empties the slow log."),
      spec!("slowlog|help",          2, ["loading", "stale"],                        [0,  0, 0], "6.2.0",  "server",     slowlog::help,                 "Describes the SLOWLOG subcommands."),
    spec!("latency",       -2, [],                           [0,  0, 0], "2.8.13", "server",    session::not_a_subcommand, "Latency events past latency-monitor-threshold and per-command histograms (LATEST, HISTORY, RESET, DOCTOR, GRAPH, HISTOGRAM)."),
      spec!("latency|latest",        2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.8.13", "server",     latency::latest,               "Returns each event's latest sample and its maximum."),
      spec!("latency|history",       3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.8.13", "server",     latency::history,              "Returns an event's samples (time, milliseconds)."),
      spec!("latency|reset",        -2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.8.13", "server",     latency::reset,                "Forgets the named events (all without names); the number forgotten."),
      spec!("latency|doctor",        2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.8.13", "server",     latency::doctor,               "Returns a report of the latency events."),
      spec!("latency|graph",         3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "2.8.13", "server",     latency::graph,                "Returns an event's samples as an ASCII graph."),
      spec!("latency|histogram",    -2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "7.0.0",  "server",     latency::histogram,            "Returns the named commands' calls and latency histograms (all commands called, without names)."),
      spec!("latency|help",          2, ["loading", "stale"],                        [0,  0, 0], "2.8.13", "server",     latency::help,                 "Describes the LATENCY subcommands."),
    spec!("acl",           -2, [],                           [0,  0, 0], "6.0.0", "server",     session::not_a_subcommand, "Users and their permissions (SETUSER, GETUSER, DELUSER, LIST, USERS, WHOAMI, CAT, GENPASS, LOG, DRYRUN, SAVE, LOAD)."),
      spec!("acl|setuser",          -3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::setuser,                  "Creates a user or changes its rules (all the rules or none)."),
      spec!("acl|getuser",           3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::getuser,                  "Returns a user's flags, password hashes, commands, keys, channels and selectors."),
      spec!("acl|deluser",          -3, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::deluser,                  "Deletes users and closes their connections."),
      spec!("acl|list",              2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::list,                     "Returns every user as an ACL file line."),
      spec!("acl|users",             2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::users,                    "Returns the user names."),
      spec!("acl|whoami",            2, ["noscript", "loading", "stale"],            [0,  0, 0], "6.0.0",  "server",     acl::whoami,                   "Returns the connection's user."),
      spec!("acl|cat",              -2, ["noscript", "loading", "stale"],            [0,  0, 0], "6.0.0",  "server",     acl::cat,                      "Returns the ACL categories, or the commands of one."),
      spec!("acl|genpass",          -2, ["noscript", "loading", "stale"],            [0,  0, 0], "6.0.0",  "server",     acl::genpass,                  "Returns a random password (256 bits by default) in hex."),
      spec!("acl|log",              -2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::log,                      "Returns the recent permission denials and failed logins (count, RESET)."),
      spec!("acl|dryrun",           -4, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "7.0.0",  "server",     acl::dryrun,                   "Tells whether a user may run a command, without running it."),
      spec!("acl|save",              2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::save,                     "Writes the users to the ACL file (atomically)."),
      spec!("acl|load",              2, ["admin", "noscript", "loading", "stale"],   [0,  0, 0], "6.0.0",  "server",     acl::load,                     "Replaces the users with the ACL file's."),
      spec!("acl|help",              2, ["loading", "stale"],                        [0,  0, 0], "6.0.0",  "server",     acl::help,                     "Describes the ACL subcommands."),
    spec!("debug",         -2, ["admin", "noscript", "loading", "stale"], [0, 0, 0], "1.0.0", "server", object::debug, "A key's low-level summary (OBJECT key, HELP); Redis's other DEBUG subcommands are refused."),
    spec!("info",          -1, ["loading", "stale"],         [0,  0, 0], "1.0.0", "server",     info::info,           "Returns information and statistics about the server."),
    spec!("dbsize",         1, ["readonly"],                 [0,  0, 0], "1.0.0", "server",     keys::dbsize,         "Returns the number of keys in the selected database (one walk of its keys)."),
    spec!("shutdown",      -1, ["admin", "no_multi"],        [0,  0, 0], "1.0.0", "server",     server::shutdown,     "Closes the pool cleanly and stops the server."),
    // Strings.
    spec!("get",            2, ["readonly", "fast"],         [1,  1, 1], "1.0.0", "string",     strings::get,         "Returns the string value of a key."),
    spec!("set",           -3, ["write", "denyoom"],         [1,  1, 1], "1.0.0", "string",     strings::set,         "Sets the string value of a key (NX, XX, GET, EX, PX, EXAT, PXAT, KEEPTTL)."),
    spec!("setex",          4, ["write", "denyoom"],         [1,  1, 1], "2.0.0", "string",     strings::setex,       "Sets the string value and the time to live (seconds) of a key."),
    spec!("psetex",         4, ["write", "denyoom"],         [1,  1, 1], "2.6.0", "string",     strings::psetex,      "Sets the string value and the time to live (milliseconds) of a key."),
    spec!("getex",         -2, ["write", "fast"],            [1,  1, 1], "6.2.0", "string",     strings::getex,       "Returns the string value of a key after setting its expiration (EX, PX, EXAT, PXAT, PERSIST)."),
    spec!("setnx",          3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "string",     strings::setnx,       "Sets the string value of a key only when the key does not exist."),
    spec!("getset",         3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "string",     strings::getset,      "Returns the previous string value of a key after setting it to a new value."),
    spec!("getdel",         2, ["write", "fast"],            [1,  1, 1], "6.2.0", "string",     strings::getdel,      "Returns the string value of a key after deleting the key."),
    spec!("mget",          -2, ["readonly", "fast"],         [1, -1, 1], "1.0.0", "string",     strings::mget,        "Returns the string values of one or more keys."),
    spec!("mset",          -3, ["write", "denyoom"],         [1, -1, 2], "1.0.1", "string",     strings::mset,        "Sets the string values of one or more keys, atomically (one engine batch)."),
    spec!("msetnx",        -3, ["write", "denyoom"],         [1, -1, 2], "1.0.1", "string",     strings::msetnx,      "Sets the string values of one or more keys only when none of them exists."),
    spec!("incr",           2, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "string",     strings::incr,        "Increments the integer value of a key by one."),
    spec!("incrby",         3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "string",     strings::incrby,      "Increments the integer value of a key by a number."),
    spec!("decr",           2, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "string",     strings::decr,        "Decrements the integer value of a key by one."),
    spec!("decrby",         3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "string",     strings::decrby,      "Decrements a number from the integer value of a key."),
    spec!("append",         3, ["write", "denyoom", "fast"], [1,  1, 1], "2.0.0", "string",     strings::append,      "Appends a string to the value of a key."),
    spec!("strlen",         2, ["readonly", "fast"],         [1,  1, 1], "2.2.0", "string",     strings::strlen,      "Returns the length of a string value."),
    spec!("getrange",       4, ["readonly"],                 [1,  1, 1], "2.4.0", "string",     strings::getrange,    "Returns a substring of the string stored at a key."),
    spec!("setrange",       4, ["write", "denyoom"],         [1,  1, 1], "2.2.0", "string",     strings::setrange,    "Overwrites a part of a string value from an offset."),
    // Keys.
    spec!("del",           -2, ["write"],                    [1, -1, 1], "1.0.0", "generic",    keys::del,            "Deletes one or more keys."),
    spec!("unlink",        -2, ["write", "fast"],            [1, -1, 1], "4.0.0", "generic",    keys::del,            "Deletes one or more keys (the same as DEL)."),
    spec!("exists",        -2, ["readonly", "fast"],         [1, -1, 1], "1.0.0", "generic",    keys::exists,         "Counts how many of the given keys exist."),
    spec!("type",           2, ["readonly", "fast"],         [1,  1, 1], "1.0.0", "generic",    keys::type_,          "Returns the type of the value stored at a key."),
    spec!("scan",          -2, ["readonly"],                 [0,  0, 0], "2.8.0", "generic",    keys::scan,           "Iterates over the key names (MATCH, COUNT, TYPE)."),
    spec!("krange",        -3, ["readonly"],                 [0,  0, 0], -,       "generic",    ordered::krange,      "Returns the keys from start (inclusive) to end (exclusive) in byte order; - and + are the open ends (REV, LIMIT, WITHVALUES). Needs the ordered index."),
    spec!("kprefix",       -2, ["readonly"],                 [0,  0, 0], -,       "generic",    ordered::kprefix,     "Returns the keys that start with a prefix in byte order (REV, LIMIT, WITHVALUES). Needs the ordered index."),
    spec!("keys",           2, ["readonly", "@dangerous"],                 [0,  0, 0], "1.0.0", "generic",    keys::keys,           "Returns all key names that match a pattern (one pass over the pool)."),
    spec!("flushdb",       -1, ["write", "@keyspace", "@dangerous"],                    [0,  0, 0], "1.0.0", "server",     keys::flushdb,        "Deletes every key of the selected database (ASYNC and SYNC both delete at once)."),
    spec!("flushall",      -1, ["write", "@keyspace", "@dangerous"],                    [0,  0, 0], "1.0.0", "server",     keys::flushall,       "Deletes every key of every database."),
    spec!("move",           3, ["write", "fast"],            [1,  1, 1], "1.0.0", "generic",    keys::move_,          "Moves a key to another database (atomically, with its time to live)."),
    spec!("swapdb",         3, ["write", "fast", "swaps_dbs", "no_multi"], [0, 0, 0], "4.0.0", "server", keys::swapdb, "Swaps two databases (one durable write of the database map; not inside MULTI)."),
    // Expiry.
    spec!("ttl",            2, ["readonly", "fast"],         [1,  1, 1], "1.0.0", "generic",    expire::ttl,          "Returns the time to live of a key in seconds (-1: none, -2: no key)."),
    spec!("pttl",           2, ["readonly", "fast"],         [1,  1, 1], "2.6.0", "generic",    expire::pttl,         "Returns the time to live of a key in milliseconds (-1: none, -2: no key)."),
    spec!("expiretime",     2, ["readonly", "fast"],         [1,  1, 1], "7.0.0", "generic",    expire::expiretime,   "Returns the expiration time of a key as a Unix timestamp in seconds."),
    spec!("pexpiretime",    2, ["readonly", "fast"],         [1,  1, 1], "7.0.0", "generic",    expire::pexpiretime,  "Returns the expiration time of a key as a Unix timestamp in milliseconds."),
    spec!("expire",        -3, ["write", "fast"],            [1,  1, 1], "1.0.0", "generic",    expire::expire,       "Sets the time to live of a key in seconds (NX, XX, GT, LT)."),
    spec!("pexpire",       -3, ["write", "fast"],            [1,  1, 1], "2.6.0", "generic",    expire::pexpire,      "Sets the time to live of a key in milliseconds (NX, XX, GT, LT)."),
    spec!("expireat",      -3, ["write", "fast"],            [1,  1, 1], "1.2.0", "generic",    expire::expireat,     "Sets the expiration time of a key as a Unix timestamp in seconds (NX, XX, GT, LT)."),
    spec!("pexpireat",     -3, ["write", "fast"],            [1,  1, 1], "2.6.0", "generic",    expire::pexpireat,    "Sets the expiration time of a key as a Unix timestamp in milliseconds (NX, XX, GT, LT)."),
    spec!("persist",        2, ["write", "fast"],            [1,  1, 1], "2.2.0", "generic",    expire::persist,      "Removes the expiration time of a key."),
    // Transactions.
    spec!("eval",          -3, ["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "movablekeys"], [0, 0, 0; scripting::eval_keys], "2.6.0", "scripting", scripting::eval, "Runs a Lua script; its writes are one atomic, durable unit."),
    spec!("evalsha",       -3, ["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "movablekeys"], [0, 0, 0; scripting::eval_keys], "2.6.0", "scripting", scripting::evalsha, "Runs a cached Lua script by its SHA1."),
    spec!("eval_ro",       -3, ["noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly", "movablekeys"], [0, 0, 0; scripting::eval_keys], "7.0.0", "scripting", scripting::eval_ro, "Runs a read-only Lua script."),
    spec!("evalsha_ro",    -3, ["noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly", "movablekeys"], [0, 0, 0; scripting::eval_keys], "7.0.0", "scripting", scripting::evalsha_ro, "Runs a cached read-only Lua script by its SHA1."),
    spec!("script",        -2, [],                           [0,  0, 0], "2.6.0", "scripting",  scripting::script,    "Manages the Lua script cache (LOAD, EXISTS, FLUSH, KILL)."),
      spec!("script|load",    3, ["noscript", "stale"],      [0,  0, 0], "2.6.0", "scripting",  scripting::script_load,   "Compiles a script and caches it; replies its SHA1."),
      spec!("script|exists", -3, ["noscript"],               [0,  0, 0], "2.6.0", "scripting",  scripting::script_exists, "Tells which SHA1s are cached."),
      spec!("script|flush",  -2, ["noscript"],               [0,  0, 0], "2.6.0", "scripting",  scripting::script_flush,  "Empties the script cache (a fresh interpreter)."),
      spec!("script|kill",    2, ["noscript", "allow_busy"], [0,  0, 0], "2.6.0", "scripting",  scripting::script_kill,   "Stops the running script if it has not written."),
    spec!("fcall",         -3, ["noscript", "skip_monitor", "may_replicate", "no_mandatory_keys", "stale", "movablekeys"], [0, 0, 0; scripting::eval_keys], "7.0.0", "scripting", scripting::fcall, "Calls a function of a loaded library; its writes are one atomic, durable unit."),
    spec!("fcall_ro",      -3, ["noscript", "skip_monitor", "no_mandatory_keys", "stale", "readonly", "movablekeys"], [0, 0, 0; scripting::eval_keys], "7.0.0", "scripting", scripting::fcall_ro, "Calls a no-writes function."),
    spec!("function",      -2, [],                           [0,  0, 0], "7.0.0", "scripting",  scripting::function,  "Manages function libraries (LOAD, DELETE, LIST, DUMP, RESTORE, FLUSH, STATS, KILL)."),
      spec!("function|load",    -3, ["noscript", "write", "denyoom"], [0, 0, 0], "7.0.0", "scripting", scripting::function_load,    "Loads a library of functions (REPLACE to replace it)."),
      spec!("function|delete",   3, ["noscript", "write"],            [0, 0, 0], "7.0.0", "scripting", scripting::function_delete,  "Deletes a library and its functions."),
      spec!("function|list",    -2, ["noscript"],                     [0, 0, 0], "7.0.0", "scripting", scripting::function_list,    "Lists the libraries (LIBRARYNAME pattern, WITHCODE)."),
      spec!("function|dump",     2, ["noscript"],                     [0, 0, 0], "7.0.0", "scripting", scripting::function_dump,    "Dumps every library into one payload (Persimmon's format)."),
      spec!("function|restore", -2, ["noscript", "write", "denyoom"], [0, 0, 0], "7.0.0", "scripting", scripting::function_restore, "Restores libraries from a payload (FLUSH, APPEND, REPLACE)."),
      spec!("function|flush",   -2, ["noscript", "write"],            [0, 0, 0], "7.0.0", "scripting", scripting::function_flush,   "Deletes every library."),
      spec!("function|stats",    2, ["noscript", "allow_busy"],       [0, 0, 0], "7.0.0", "scripting", scripting::function_stats,   "The running function and the number of libraries and functions."),
      spec!("function|kill",     2, ["noscript", "allow_busy"],       [0, 0, 0], "7.0.0", "scripting", scripting::function_kill,    "Stops the running function if it has not written."),
    spec!("multi",          1, ["noscript", "loading", "stale", "fast", "multi_control"], [0, 0, 0], "1.2.0", "transactions", multi::multi,       "Starts a transaction."),
    spec!("exec",           1, ["noscript", "loading", "stale", "multi_control", "skip_slowlog"], [0, 0, 0], "1.2.0", "transactions", multi::exec,        "Runs the queued commands as one atomic, durable batch (nil when a watched key changed)."),
    spec!("discard",        1, ["noscript", "loading", "stale", "fast", "multi_control"], [0, 0, 0], "2.0.0", "transactions", multi::discard,     "Discards the queued commands."),
    spec!("watch",         -2, ["fast", "multi_control"],    [1, -1, 1], "2.2.0", "transactions", multi::watch,       "Makes the next EXEC conditional on the keys not changing."),
    spec!("unwatch",        1, ["fast"],                     [0,  0, 0], "2.2.0", "transactions", multi::unwatch,     "Forgets every watched key."),
    // Hashes.
    spec!("hset",          -4, ["write", "denyoom", "fast"], [1,  1, 1], "2.0.0", "hash",       hashes::hset,         "Creates or modifies the value of fields in a hash."),
    spec!("hmset",         -4, ["write", "denyoom", "fast"], [1,  1, 1], "2.0.0", "hash",       hashes::hmset,        "Sets the values of multiple fields (replies OK)."),
    spec!("hsetnx",         4, ["write", "denyoom", "fast"], [1,  1, 1], "2.0.0", "hash",       hashes::hsetnx,       "Sets the value of a field only when the field does not exist."),
    spec!("hget",           3, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "hash",       hashes::hget,         "Returns the value of a field in a hash."),
    spec!("hmget",         -3, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "hash",       hashes::hmget,        "Returns the values of fields in a hash."),
    spec!("hgetall",        2, ["readonly"],                 [1,  1, 1], "2.0.0", "hash",       hashes::hgetall,      "Returns all fields and values of a hash."),
    spec!("hdel",          -3, ["write", "fast"],            [1,  1, 1], "2.0.0", "hash",       hashes::hdel,         "Deletes fields from a hash (and the key with its last field)."),
    spec!("hexists",        3, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "hash",       hashes::hexists,      "Determines whether a field exists in a hash."),
    spec!("hlen",           2, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "hash",       hashes::hlen,         "Returns the number of fields in a hash."),
    spec!("hkeys",          2, ["readonly"],                 [1,  1, 1], "2.0.0", "hash",       hashes::hkeys,        "Returns all fields in a hash."),
    spec!("hvals",          2, ["readonly"],                 [1,  1, 1], "2.0.0", "hash",       hashes::hvals,        "Returns all values in a hash."),
    spec!("hstrlen",        3, ["readonly", "fast"],         [1,  1, 1], "3.2.0", "hash",       hashes::hstrlen,      "Returns the length of the value of a field."),
    spec!("hincrby",        4, ["write", "denyoom", "fast"], [1,  1, 1], "2.0.0", "hash",       hashes::hincrby,      "Increments the integer value of a field by a number."),
    // Sorted sets (issue 17: a member tree and a score tree; ranks O(log n)).
    spec!("zadd",          -4, ["write", "denyoom", "fast"], [1,  1, 1], "1.2.0", "sorted_set", zsets::zadd,          "Adds members to a sorted set, or updates their scores (NX, XX, GT, LT, CH, INCR)."),
    spec!("zincrby",        4, ["write", "denyoom", "fast"], [1,  1, 1], "1.2.0", "sorted_set", zsets::zincrby,       "Increments the score of a member in a sorted set."),
    spec!("zrem",          -3, ["write", "fast"],            [1,  1, 1], "1.2.0", "sorted_set", zsets::zrem,          "Removes members from a sorted set (and the key with its last member)."),
    spec!("zcard",          2, ["readonly", "fast"],         [1,  1, 1], "1.2.0", "sorted_set", zsets::zcard,         "Returns the number of members in a sorted set."),
    spec!("zscore",         3, ["readonly", "fast"],         [1,  1, 1], "1.2.0", "sorted_set", zsets::zscore,        "Returns the score of a member in a sorted set."),
    spec!("zmscore",       -3, ["readonly", "fast"],         [1,  1, 1], "6.2.0", "sorted_set", zsets::zmscore,       "Returns the score of each of several members in a sorted set."),
    spec!("zrank",          3, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "sorted_set", zsets::zrank,         "Returns the index of a member in a sorted set ordered by ascending scores."),
    spec!("zrevrank",       3, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "sorted_set", zsets::zrevrank,      "Returns the index of a member in a sorted set ordered by descending scores."),
    spec!("zrange",        -4, ["readonly"],                 [1,  1, 1], "1.2.0", "sorted_set", zset_range::zrange,   "Returns members in a range of indexes, scores or members (BYSCORE, BYLEX, REV, LIMIT, WITHSCORES)."),
    spec!("zrangestore",   -5, ["write", "denyoom"],         [1,  2, 1], "6.2.0", "sorted_set", zset_range::zrangestore, "Stores a range of members of a sorted set in another key."),
    spec!("zrevrange",     -4, ["readonly"],                 [1,  1, 1], "1.2.0", "sorted_set", zset_range::zrevrange, "Returns members in a range of indexes, highest scores first (WITHSCORES)."),
    spec!("zrangebyscore", -4, ["readonly"],                 [1,  1, 1], "1.0.5", "sorted_set", zset_range::zrangebyscore, "Returns members in a range of scores (WITHSCORES, LIMIT)."),
    spec!("zrevrangebyscore", -4, ["readonly"],              [1,  1, 1], "2.2.0", "sorted_set", zset_range::zrevrangebyscore, "Returns members in a range of scores, highest first (WITHSCORES, LIMIT)."),
    spec!("zrangebylex",   -4, ["readonly"],                 [1,  1, 1], "2.8.9", "sorted_set", zset_range::zrangebylex, "Returns members in a lexicographical range (LIMIT)."),
    spec!("zrevrangebylex", -4, ["readonly"],                [1,  1, 1], "2.8.9", "sorted_set", zset_range::zrevrangebylex, "Returns members in a lexicographical range, highest first (LIMIT)."),
    spec!("zcount",         4, ["readonly", "fast"],         [1,  1, 1], "2.0.0", "sorted_set", zset_range::zcount,   "Counts the members in a range of scores."),
    spec!("zlexcount",      4, ["readonly", "fast"],         [1,  1, 1], "2.8.9", "sorted_set", zset_range::zlexcount, "Counts the members in a lexicographical range."),
    spec!("zremrangebyrank", 4, ["write"],                   [1,  1, 1], "2.0.0", "sorted_set", zset_range::zremrangebyrank, "Removes the members in a range of indexes."),
    spec!("zremrangebyscore", 4, ["write"],                  [1,  1, 1], "1.2.0", "sorted_set", zset_range::zremrangebyscore, "Removes the members in a range of scores."),
    spec!("zremrangebylex", 4, ["write"],                    [1,  1, 1], "2.8.9", "sorted_set", zset_range::zremrangebylex, "Removes the members in a lexicographical range."),
    spec!("zrandmember",   -2, ["readonly"],                 [1,  1, 1], "6.2.0", "sorted_set", zset_ops::zrandmember, "Returns random members of a sorted set (count: distinct if positive, repeating if negative; WITHSCORES)."),
    spec!("zscan",         -3, ["readonly"],                 [1,  1, 1], "2.8.0", "sorted_set", zset_ops::zscan,      "Iterates over the members and scores of a sorted set (MATCH, COUNT; all in one call, cursor 0)."),
    spec!("zunion",        -3, ["readonly", "movablekeys"],  [0,  0, 0; zset_ops::numkeys_keys], "6.2.0", "sorted_set", zset_ops::zunion,     "Returns the union of sorted sets or sets (WEIGHTS, AGGREGATE, WITHSCORES)."),
    spec!("zinter",        -3, ["readonly", "movablekeys"],  [0,  0, 0; zset_ops::numkeys_keys], "6.2.0", "sorted_set", zset_ops::zinter,     "Returns the intersection of sorted sets or sets (WEIGHTS, AGGREGATE, WITHSCORES)."),
    spec!("zdiff",         -3, ["readonly", "movablekeys"],  [0,  0, 0; zset_ops::numkeys_keys], "6.2.0", "sorted_set", zset_ops::zdiff,      "Returns the members of the first sorted set not in the others (WITHSCORES)."),
    spec!("zunionstore",   -4, ["write", "denyoom", "movablekeys"], [1, 1, 1; zset_ops::store_keys], "2.0.0", "sorted_set", zset_ops::zunionstore, "Stores the union of sorted sets or sets in a key (WEIGHTS, AGGREGATE)."),
    spec!("zinterstore",   -4, ["write", "denyoom", "movablekeys"], [1, 1, 1; zset_ops::store_keys], "2.0.0", "sorted_set", zset_ops::zinterstore, "Stores the intersection of sorted sets or sets in a key (WEIGHTS, AGGREGATE)."),
    spec!("zdiffstore",    -4, ["write", "denyoom", "movablekeys"], [1, 1, 1; zset_ops::store_keys], "6.2.0", "sorted_set", zset_ops::zdiffstore, "Stores the difference of sorted sets or sets in a key."),
    spec!("zintercard",    -3, ["readonly", "movablekeys"],  [0,  0, 0; zset_ops::numkeys_keys], "7.0.0", "sorted_set", zset_ops::zintercard, "Counts the members of the intersection of sorted sets or sets (LIMIT)."),
    // Streams (four trees: entries by id, the stream's record and groups, pending entries, consumers).
    spec!("xadd",          -5, ["write", "denyoom", "fast"], [1,  1, 1], "5.0.0", "stream",     streams::xadd,        "Appends an entry to a stream, creating it if needed (NOMKSTREAM, MAXLEN, MINID, LIMIT)."),
    spec!("xrange",        -4, ["readonly"],                 [1,  1, 1], "5.0.0", "stream",     streams::xrange,      "Returns the entries with ids in a range (COUNT)."),
    spec!("xrevrange",     -4, ["readonly"],                 [1,  1, 1], "5.0.0", "stream",     streams::xrevrange,   "Returns the entries with ids in a range, highest first (COUNT)."),
    spec!("xlen",           2, ["readonly", "fast"],         [1,  1, 1], "5.0.0", "stream",     streams::xlen,        "Returns the number of entries of a stream."),
    spec!("xdel",          -3, ["write", "fast"],            [1,  1, 1], "5.0.0", "stream",     streams::xdel,        "Deletes entries by id; returns how many were there."),
    spec!("xtrim",         -4, ["write"],                    [1,  1, 1], "5.0.0", "stream",     streams::xtrim,       "Deletes entries from the head of a stream (MAXLEN, MINID, LIMIT)."),
    spec!("xsetid",        -3, ["write", "denyoom", "fast"], [1,  1, 1], "5.0.0", "stream",     streams::xsetid,      "Sets a stream's last id (ENTRIESADDED, MAXDELETEDID)."),
    spec!("xread",         -4, ["readonly", "blocking", "movablekeys"], [0, 0, 0; stream_read::read_keys], "5.0.0", "stream", stream_read::xread, "Returns entries after given ids from several streams, or blocks until one gets some (COUNT, BLOCK)."),
    spec!("xreadgroup",    -7, ["write", "blocking", "movablekeys"], [0, 0, 0; stream_read::read_keys], "5.0.0", "stream", stream_read::xreadgroup, "Reads entries as a consumer of a group, new ones or its pending history, or blocks (COUNT, BLOCK, NOACK)."),
    spec!("xack",          -4, ["write", "fast"],            [1,  1, 1], "5.0.0", "stream",     stream_groups::xack,  "Removes entries from a group's pending entries list."),
    spec!("xpending",      -3, ["readonly"],                 [1,  1, 1], "5.0.0", "stream",     stream_groups::xpending, "Describes a group's pending entries: a summary, or a range (IDLE, consumer)."),
    spec!("xclaim",        -6, ["write", "fast"],            [1,  1, 1], "5.0.0", "stream",     stream_groups::xclaim, "Takes pending entries for a consumer (IDLE, TIME, RETRYCOUNT, FORCE, JUSTID, LASTID)."),
    spec!("xautoclaim",    -6, ["write", "fast"],            [1,  1, 1], "6.2.0", "stream",     stream_groups::xautoclaim, "Takes pending entries idle long enough, scanning from an id (COUNT, JUSTID)."),
    spec!("xgroup",        -2, [],                           [0,  0, 0], "5.0.0", "stream",     session::not_a_subcommand, "Manages consumer groups (CREATE, SETID, DESTROY, CREATECONSUMER, DELCONSUMER)."),
      spec!("xgroup|create",        -5, ["write", "denyoom"],                       [2,  2, 1], "5.0.0",  "stream",     stream_groups::xgroup_create,  "Creates a consumer group (MKSTREAM, ENTRIESREAD)."),
      spec!("xgroup|setid",         -5, ["write"],                                  [2,  2, 1], "5.0.0",  "stream",     stream_groups::xgroup_setid,   "Sets a group's last delivered id (ENTRIESREAD)."),
      spec!("xgroup|destroy",        4, ["write"],                                  [2,  2, 1], "5.0.0",  "stream",     stream_groups::xgroup_destroy, "Destroys a consumer group."),
      spec!("xgroup|createconsumer", 5, ["write", "denyoom"],                       [2,  2, 1], "6.2.0",  "stream",     stream_groups::xgroup_createconsumer, "Creates a consumer in a group."),
      spec!("xgroup|delconsumer",    5, ["write"],                                  [2,  2, 1], "5.0.0",  "stream",     stream_groups::xgroup_delconsumer, "Deletes a consumer from a group; returns its pending count."),
      spec!("xgroup|help",           2, ["loading", "stale"],                        [0,  0, 0], "5.0.0",  "stream",     stream_groups::xgroup_help,    "Describes the XGROUP subcommands."),
    spec!("xinfo",         -2, [],                           [0,  0, 0], "5.0.0", "stream",     session::not_a_subcommand, "Describes streams, their groups and consumers (STREAM, GROUPS, CONSUMERS)."),
      spec!("xinfo|stream",         -3, ["readonly"],                               [2,  2, 1], "5.0.0",  "stream",     streams::xinfo_stream,         "Describes a stream (FULL, COUNT)."),
      spec!("xinfo|groups",          3, ["readonly"],                               [2,  2, 1], "5.0.0",  "stream",     stream_groups::xinfo_groups,   "Describes a stream's consumer groups."),
      spec!("xinfo|consumers",       4, ["readonly"],                               [2,  2, 1], "5.0.0",  "stream",     stream_groups::xinfo_consumers, "Describes a group's consumers."),
      spec!("xinfo|help",            2, ["loading", "stale"],                        [0,  0, 0], "5.0.0",  "stream",     stream_groups::xinfo_help,     "Describes the XINFO subcommands."),
    // Geo (issue 34: positions are sorted-set members scored by their 52-bit geohash).
    spec!("geoadd",        -5, ["write", "denyoom"],         [1,  1, 1], "3.2.0", "geo",        geo::geoadd,          "Adds members at longitude, latitude positions to a sorted set, or moves them (NX, XX, CH)."),
    spec!("geodist",       -4, ["readonly"],                 [1,  1, 1], "3.2.0", "geo",        geo::geodist,         "Returns the distance between two members of a geospatial index (m, km, ft, mi)."),
    spec!("geohash",       -2, ["readonly"],                 [1,  1, 1], "3.2.0", "geo",        geo::geohash,         "Returns members' positions as standard 11-character geohash strings."),
    spec!("geopos",        -2, ["readonly"],                 [1,  1, 1], "3.2.0", "geo",        geo::geopos,          "Returns the longitude and latitude of members of a geospatial index."),
    spec!("georadius",     -6, ["write", "denyoom", "movablekeys"], [1, 1, 1; geo::radius_keys], "3.2.0", "geo", geo::georadius, "Returns or stores the members within a radius of a point (WITHDIST, WITHHASH, WITHCOORD, COUNT, ANY, ASC, DESC, STORE, STOREDIST)."),
    spec!("georadius_ro",  -6, ["readonly"],                 [1,  1, 1], "3.2.10", "geo",       geo::georadius_ro,    "GEORADIUS without STORE and STOREDIST."),
    spec!("georadiusbymember", -5, ["write", "denyoom", "movablekeys"], [1, 1, 1; geo::radius_keys], "3.2.0", "geo", geo::georadiusbymember, "Returns or stores the members within a radius of a member (GEORADIUS's options)."),
    spec!("georadiusbymember_ro", -5, ["readonly"],          [1,  1, 1], "3.2.10", "geo",       geo::georadiusbymember_ro, "GEORADIUSBYMEMBER without STORE and STOREDIST."),
    spec!("geosearch",     -7, ["readonly"],                 [1,  1, 1], "6.2.0", "geo",        geo::geosearch,       "Returns the members within a radius or a box around a member or a point (FROMMEMBER, FROMLONLAT, BYRADIUS, BYBOX, ASC, DESC, COUNT, ANY, WITH...)."),
    spec!("geosearchstore", -8, ["write", "denyoom"],        [1,  2, 1], "6.2.0", "geo",        geo::geosearchstore,  "Stores the members GEOSEARCH finds in a sorted set, with their geohash scores or distances (STOREDIST); atomically."),
    // Lists and sets (collections, issue 17).
    spec!("lpush",         -3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "list",       lists::lpush,         "Prepends elements to a list (the last given ends up first)."),
    spec!("rpush",         -3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "list",       lists::rpush,         "Appends elements to a list."),
    spec!("lpushx",        -3, ["write", "denyoom", "fast"], [1,  1, 1], "2.2.0", "list",       lists::lpushx,        "Prepends elements to a list only when the list exists."),
    spec!("rpushx",        -3, ["write", "denyoom", "fast"], [1,  1, 1], "2.2.0", "list",       lists::rpushx,        "Appends elements to a list only when the list exists."),
    spec!("lpop",          -2, ["write", "fast"],            [1,  1, 1], "1.0.0", "list",       lists::lpop,          "Removes and returns the first element(s) of a list (and the key with its last element)."),
    spec!("rpop",          -2, ["write", "fast"],            [1,  1, 1], "1.0.0", "list",       lists::rpop,          "Removes and returns the last element(s) of a list (and the key with its last element)."),
    spec!("llen",           2, ["readonly", "fast"],         [1,  1, 1], "1.0.0", "list",       lists::llen,          "Returns the length of a list."),
    spec!("lrange",         4, ["readonly"],                 [1,  1, 1], "1.0.0", "list",       lists::lrange,        "Returns a range of elements of a list by index."),
    spec!("lindex",         3, ["readonly"],                 [1,  1, 1], "1.0.0", "list",       lists::lindex,        "Returns the element of a list at an index."),
    spec!("lset",           4, ["write", "denyoom"],         [1,  1, 1], "1.0.0", "list",       lists::lset,          "Sets the element of a list at an index."),
    spec!("lrem",           4, ["write"],                    [1,  1, 1], "1.0.0", "list",       lists::lrem,          "Removes matching elements from a list (count: from the head, from the tail when negative, all when 0)."),
    spec!("ltrim",          4, ["write"],                    [1,  1, 1], "1.0.0", "list",       lists::ltrim,         "Keeps only a range of elements of a list."),
    spec!("linsert",        5, ["write", "denyoom"],         [1,  1, 1], "2.2.0", "list",       lists::linsert,       "Inserts an element before or after the first occurrence of a pivot in a list."),
    spec!("lpos",          -3, ["readonly"],                 [1,  1, 1], "6.0.6", "list",       lists::lpos,          "Returns the index (or with COUNT the indexes) of matching elements of a list (RANK, COUNT, MAXLEN)."),
    spec!("sadd",          -3, ["write", "denyoom", "fast"], [1,  1, 1], "1.0.0", "set",        sets::sadd,           "Adds members to a set."),
    spec!("srem",          -3, ["write", "fast"],            [1,  1, 1], "1.0.0", "set",        sets::srem,           "Removes members from a set (and the key with its last member)."),
    spec!("smembers",       2, ["readonly"],                 [1,  1, 1], "1.0.0", "set",        sets::smembers,       "Returns every member of a set."),
    spec!("sismember",      3, ["readonly", "fast"],         [1,  1, 1], "1.0.0", "set",        sets::sismember,      "Determines whether a member belongs to a set."),
    spec!("smismember",    -3, ["readonly", "fast"],         [1,  1, 1], "6.2.0", "set",        sets::smismember,     "Determines whether each of several members belongs to a set."),
    spec!("scard",          2, ["readonly", "fast"],         [1,  1, 1], "1.0.0", "set",        sets::scard,          "Returns the number of members of a set."),
    spec!("spop",          -2, ["write", "fast"],            [1,  1, 1], "1.0.0", "set",        sets::spop,           "Removes and returns random members of a set (and the key with its last member)."),
    spec!("srandmember",   -2, ["readonly"],                 [1,  1, 1], "1.0.0", "set",        sets::srandmember,    "Returns random members of a set (negative count: repeats allowed)."),
    spec!("smove",          4, ["write", "fast"],            [1,  2, 1], "1.0.0", "set",        sets::smove,          "Moves a member from one set to another (atomically)."),
    spec!("sinter",        -2, ["readonly"],                 [1, -1, 1], "1.0.0", "set",        sets::sinter,         "Returns the intersection of sets."),
    spec!("sinterstore",   -3, ["write", "denyoom"],         [1, -1, 1], "1.0.0", "set",        sets::sinterstore,    "Stores the intersection of sets in a key (replacing it; deleting it when empty)."),
    spec!("sintercard",    -3, ["readonly", "movablekeys"],  [0,  0, 0; sets::sintercard_keys], "7.0.0", "set",        sets::sintercard,     "Returns the number of members of the intersection of sets (LIMIT)."),
    spec!("sunion",        -2, ["readonly"],                 [1, -1, 1], "1.0.0", "set",        sets::sunion,         "Returns the union of sets."),
    spec!("sunionstore",   -3, ["write", "denyoom"],         [1, -1, 1], "1.0.0", "set",        sets::sunionstore,    "Stores the union of sets in a key (replacing it; deleting it when empty)."),
    spec!("sdiff",         -2, ["readonly"],                 [1, -1, 1], "1.0.0", "set",        sets::sdiff,          "Returns the members of the first set that are in none of the others."),
    spec!("sdiffstore",    -3, ["write", "denyoom"],         [1, -1, 1], "1.0.0", "set",        sets::sdiffstore,     "Stores the difference of sets in a key (replacing it; deleting it when empty)."),
    spec!("sscan",         -3, ["readonly"],                 [1,  1, 1], "2.8.0", "set",        sets::sscan,          "Iterates over the members of a set (MATCH, COUNT; the cursor is a rank in member order)."),
    // Pops and blocking pops (blocking.rs; waiters in ../blocking.rs).
    spec!("lmove",          5, ["write", "denyoom"],         [1,  2, 1], "6.2.0", "list",       blocking::lmove,      "Pops an element from a list, pushes it to another list (or the same one) and returns it, atomically."),
    spec!("rpoplpush",      3, ["write", "denyoom"],         [1,  2, 1], "1.2.0", "list",       blocking::rpoplpush,  "Pops the last element of a list, pushes it to the head of another list and returns it (LMOVE RIGHT LEFT)."),
    spec!("lmpop",         -4, ["write", "movablekeys"],     [0,  0, 0; blocking::mpop_keys], "7.0.0", "list",       blocking::lmpop,      "Pops elements from the first non-empty list of several (COUNT)."),
    spec!("zpopmin",       -2, ["write", "fast"],            [1,  1, 1], "5.0.0", "sorted_set", blocking::zpopmin,    "Removes and returns the members with the lowest scores of a sorted set."),
    spec!("zpopmax",       -2, ["write", "fast"],            [1,  1, 1], "5.0.0", "sorted_set", blocking::zpopmax,    "Removes and returns the members with the highest scores of a sorted set."),
    spec!("zmpop",         -4, ["write", "movablekeys"],     [0,  0, 0; blocking::mpop_keys], "7.0.0", "sorted_set", blocking::zmpop,      "Removes and returns members from the first non-empty sorted set of several (MIN, MAX, COUNT)."),
    spec!("blpop",         -3, ["write", "noscript", "blocking"], [1, -2, 1], "2.0.0", "list",  blocking::blpop,      "Pops the first element of the first non-empty list, or blocks until one is pushed or the timeout passes."),
    spec!("brpop",         -3, ["write", "noscript", "blocking"], [1, -2, 1], "2.0.0", "list",  blocking::brpop,      "Pops the last element of the first non-empty list, or blocks until one is pushed or the timeout passes."),
    spec!("blmove",         6, ["write", "denyoom", "noscript", "blocking"], [1, 2, 1], "6.2.0", "list", blocking::blmove, "LMOVE, or blocks until the source list gets an element or the timeout passes."),
    spec!("brpoplpush",     4, ["write", "denyoom", "noscript", "blocking"], [1, 2, 1], "2.2.0", "list", blocking::brpoplpush, "RPOPLPUSH, or blocks until the source list gets an element or the timeout passes."),
    spec!("blmpop",        -5, ["write", "blocking", "movablekeys"], [0, 0, 0; blocking::bmpop_keys], "7.0.0", "list", blocking::blmpop,    "LMPOP, or blocks until one of the lists gets an element or the timeout passes."),
    spec!("bzpopmin",      -3, ["write", "noscript", "fast", "blocking"], [1, -2, 1], "5.0.0", "sorted_set", blocking::bzpopmin, "Pops the lowest-scored member of the first non-empty sorted set, or blocks until one is added or the timeout passes."),
    spec!("bzpopmax",      -3, ["write", "noscript", "fast", "blocking"], [1, -2, 1], "5.0.0", "sorted_set", blocking::bzpopmax, "Pops the highest-scored member of the first non-empty sorted set, or blocks until one is added or the timeout passes."),
    spec!("bzmpop",        -5, ["write", "blocking", "movablekeys"], [0, 0, 0; blocking::bmpop_keys], "7.0.0", "sorted_set", blocking::bzmpop, "ZMPOP, or blocks until one of the sorted sets gets a member or the timeout passes."),
    // Server (issue 16).
      spec!("function|help",   2, ["loading", "stale"],            [0, 0, 0], "7.0.0", "scripting", scripting::function,         "Describes the FUNCTION subcommands."),
      spec!("script|help",     2, ["loading", "stale"],  [0,  0, 0], "5.0.0", "scripting",  scripting::script,        "Describes the SCRIPT subcommands."),
    spec!("memory",        -2, [],                           [0,  0, 0], "4.0.0", "server",     session::not_a_subcommand, "Memory figures: USAGE of a key, STATS, DOCTOR."),
      spec!("memory|usage",         -3, ["readonly"],                                [2,  2, 1], "4.0.0",  "server",     memory::usage,                 "Returns the bytes a key's record takes in the pool (SAMPLES is accepted)."),
      spec!("memory|stats",          2, [],                                          [0,  0, 0], "4.0.0",  "server",     memory::stats,                 "Returns the memory figures of INFO memory, as a map."),
      spec!("memory|doctor",         2, [],                                          [0,  0, 0], "4.0.0",  "server",     memory::doctor,                "Returns a short report on the memory the server uses."),
      spec!("memory|purge",          2, [],                                          [0,  0, 0], "4.0.0",  "server",     memory::purge,                 "Replies OK: the pool is not an allocator's heap, there is nothing to purge."),
      spec!("memory|malloc-stats",   2, [],                                          [0,  0, 0], "4.0.0",  "server",     memory::malloc_stats,          "Replies that the system allocator has no statistics to show."),
      spec!("memory|help",           2, ["loading", "stale"],                        [0,  0, 0], "4.0.0",  "server",     memory::help,                  "Describes the MEMORY subcommands."),
    spec!("cluster",       -2, [],                           [0,  0, 0], "3.0.0", "cluster",    session::not_a_subcommand, "Cluster commands: this server has no cluster support (every subcommand says so)."),
      spec!("cluster|info",          2, ["loading", "stale"],                        [0,  0, 0], "3.0.0",  "cluster",    cluster::disabled,             "Would describe the cluster's state."),
      spec!("cluster|keyslot",       3, ["loading", "stale"],                        [0,  0, 0], "3.0.0",  "cluster",    cluster::disabled,             "Would return the hash slot of a key."),
      spec!("cluster|myid",          2, ["loading", "stale"],                        [0,  0, 0], "3.0.0",  "cluster",    cluster::disabled,             "Would return this node's id."),
      spec!("cluster|nodes",         2, ["loading", "stale"],                        [0,  0, 0], "3.0.0",  "cluster",    cluster::disabled,             "Would return the cluster's nodes."),
      spec!("cluster|shards",        2, ["loading", "stale"],                        [0,  0, 0], "7.0.0",  "cluster",    cluster::disabled,             "Would return the cluster's shards."),
      spec!("cluster|slots",         2, ["loading", "stale"],                        [0,  0, 0], "3.0.0",  "cluster",    cluster::disabled,             "Would return the mapping of hash slots to nodes."),
      spec!("cluster|help",          2, ["loading", "stale"],                        [0,  0, 0], "5.0.0",  "cluster",    cluster::disabled,             "Would describe the CLUSTER subcommands."),
    spec!("lolwut",        -1, ["readonly", "fast"],         [0,  0, 0], "5.0.0", "server",     server::lolwut,       "Replies the server's version (no drawing)."),
    spec!("time",           1, ["loading", "stale", "fast"], [0,  0, 0], "2.6.0", "server",     server::time,         "Returns the server time."),
    spec!("lastsave",       1, ["loading", "stale", "fast"], [0,  0, 0], "1.0.0", "server",     server::lastsave,     "Returns the Unix time of the last SAVE or BGSAVE (the server's start before any)."),
    spec!("save",           1, ["admin", "noscript", "no_multi"], [0,  0, 0], "1.0.0", "server",     server::save,         "Replies OK: every write is already durable; sets LASTSAVE."),
    spec!("bgsave",        -1, ["admin", "noscript"],        [0,  0, 0], "1.0.0", "server",     server::bgsave,       "Replies as Redis does: every write is already durable; sets LASTSAVE."),
    spec!("bgrewriteaof",   1, ["admin", "noscript"],        [0,  0, 0], "1.0.0", "server",     server::bgrewriteaof, "Replies as Redis does: every write is already durable (there is no AOF)."),
    spec!("wait",           3, ["noscript"],                 [0,  0, 0], "3.0.0", "generic",    replication::wait,    "Blocks until that many replicas acknowledged the client's last write, or the timeout (ms; 0: none) passes; replies how many did."),
    // Strings and bits (issue 16).
    spec!("incrbyfloat",    3, ["write", "denyoom", "fast"], [1,  1, 1], "2.6.0", "string",     strings::incrbyfloat, "Increments the floating point value of a key by a number (x87 extended precision, as Redis on x86-64)."),
    spec!("substr",         4, ["readonly"],                 [1,  1, 1], "1.0.0", "string",     strings::getrange,    "Returns a substring of the string stored at a key (the old name of GETRANGE)."),
    spec!("lcs",           -3, ["readonly"],                 [1,  2, 1], "7.0.0", "string",     lcs::lcs,             "Finds the longest common subsequence of two strings (LEN, IDX, MINMATCHLEN, WITHMATCHLEN)."),
    spec!("setbit",         4, ["write", "denyoom"],         [1,  1, 1], "2.2.0", "bitmap",     bits::setbit,         "Sets or clears the bit at an offset of a string value; returns the previous bit."),
    spec!("getbit",         3, ["readonly", "fast"],         [1,  1, 1], "2.2.0", "bitmap",     bits::getbit,         "Returns the bit at an offset of a string value."),
    spec!("bitcount",      -2, ["readonly"],                 [1,  1, 1], "2.6.0", "bitmap",     bits::bitcount,       "Counts the set bits in a string, or in a range of it (BYTE, BIT)."),
    spec!("bitpos",        -3, ["readonly"],                 [1,  1, 1], "2.8.7", "bitmap",     bits::bitpos,         "Finds the first set or clear bit in a string, or in a range of it (BYTE, BIT)."),
    spec!("bitfield",      -2, ["write", "denyoom"],         [1,  1, 1], "3.2.0", "bitmap",     bitfield::bitfield,   "Reads, sets and increments integers of 1 to 64 bits at bit offsets of a string (GET, SET, INCRBY, OVERFLOW WRAP|SAT|FAIL)."),
    spec!("bitfield_ro",   -2, ["readonly", "fast"],         [1,  1, 1], "6.0.0", "bitmap",     bitfield::bitfield_ro, "BITFIELD with GET operations only."),
    spec!("pfadd",         -2, ["write", "denyoom", "fast"], [1,  1, 1], "2.8.9", "hyperloglog", hll::pfadd,         "Adds elements to a HyperLogLog (Redis's representation); 1 when it changed."),
    spec!("pfcount",       -2, ["readonly", "may_replicate"],                 [1, -1, 1], "2.8.9", "hyperloglog", hll::pfcount,       "Returns the approximate number of distinct elements in the union of HyperLogLogs."),
    spec!("pfdebug",        3, ["write", "denyoom", "admin"], [2, 2, 1], "2.8.9", "hyperloglog", hll::pfdebug,       "HyperLogLog internals: GETREG (the registers), ENCODING (sparse or dense), TODENSE."),
    spec!("pfmerge",       -2, ["write", "denyoom"],         [1, -1, 1], "2.8.9", "hyperloglog", hll::pfmerge,       "Merges HyperLogLogs into the first one (created when missing), atomically."),
    spec!("bitop",         -4, ["write", "denyoom"],         [2, -1, 1], "2.6.0", "bitmap",     bits::bitop,          "Stores AND, OR, XOR or NOT of strings in a key (atomically)."),
    spec!("hincrbyfloat",   4, ["write", "denyoom", "fast"], [1,  1, 1], "2.6.0", "hash",       hashes::hincrbyfloat, "Increments the floating point value of a field by a number (x87 extended precision)."),
    spec!("hrandfield",    -2, ["readonly"],                 [1,  1, 1], "6.2.0", "hash",       hash_walk::hrandfield, "Returns random fields of a hash (count: distinct if positive, repeating if negative; WITHVALUES)."),
    spec!("hscan",         -3, ["readonly"],                 [1,  1, 1], "2.8.0", "hash",       hash_walk::hscan,     "Iterates over the fields and values of a hash (MATCH, COUNT; the cursor is a rank in field order)."),
    // Keyspace (issue 16).
    spec!("rename",         3, ["write"],                    [1,  2, 1], "1.0.0", "generic",    rename::rename,       "Renames a key, with its time to live, replacing the destination (atomically)."),
    spec!("renamenx",       3, ["write", "fast"],            [1,  2, 1], "1.0.0", "generic",    rename::renamenx,     "Renames a key only when the new name does not exist (atomically)."),
    spec!("migrate",       -6, ["write", "movablekeys"],     [3,  3, 1; migrate::migrate_keys], "2.6.0", "generic", migrate::migrate, "Moves keys to another server (RESTORE there, then deleted here unless COPY)."),
    spec!("copy",          -3, ["write", "denyoom"],         [1,  2, 1], "6.2.0", "generic",    rename::copy,         "Copies a key's value and time to live to another key, maybe in another database (DB, REPLACE)."),
    spec!("randomkey",      1, ["readonly"],                 [0,  0, 0], "1.0.0", "generic",    randomkey::randomkey, "Returns a random key of the selected database (walks up to all of its keys)."),
    spec!("touch",         -2, ["readonly", "fast"],         [1, -1, 1], "3.2.1", "generic",    object::touch,        "Counts how many of the given keys exist (no access time is kept)."),
    spec!("object",        -2, [],                           [0,  0, 0], "2.2.3", "generic",    session::not_a_subcommand, "Reports the encoding Redis would use for a key's value, its reference count, idle time (always 0) and frequency."),
      spec!("object|encoding",       3, ["readonly"],                                [2,  2, 1], "2.2.3",  "generic",    object::encoding,              "Returns the encoding Redis would use for a key's value."),
      spec!("object|refcount",       3, ["readonly"],                                [2,  2, 1], "2.2.3",  "generic",    object::refcount,              "Returns the reference count Redis would show for a key's value."),
      spec!("object|idletime",       3, ["readonly"],                                [2,  2, 1], "2.2.3",  "generic",    object::idletime,              "Returns 0: no access time is kept."),
      spec!("object|freq",           3, ["readonly"],                                [2,  2, 1], "4.0.0",  "generic",    object::freq,                  "Replies Redis's error for a server without an LFU eviction policy."),
      spec!("object|help",           2, ["loading", "stale"],                        [0,  0, 0], "6.2.0",  "generic",    object::help,                  "Describes the OBJECT subcommands."),
    spec!("dump",           2, ["readonly"],                 [1,  1, 1], "2.6.0", "generic",    dump::dump,           "Returns a key's value serialized in Redis's DUMP format."),
    spec!("restore",       -4, ["write", "denyoom"],         [1,  1, 1], "2.6.0", "generic",    dump::restore,        "Creates a key from a DUMP payload (REPLACE, ABSTTL, IDLETIME, FREQ)."),
    // SORT (issue 16).
    spec!("sort",          -2, ["write", "denyoom", "movablekeys", "@set", "@sortedset", "@list", "@dangerous"], [1, 1, 1; sort::sort_keys], "1.0.0", "generic", sort::sort, "Sorts the elements of a list, set or sorted set (BY, LIMIT, GET, ASC|DESC, ALPHA, STORE); one atomic unit."),
    // Replication (issue 21; ../repl/).
    spec!("replicaof",      3, ["admin", "noscript", "stale", "no_async_loading"], [0, 0, 0], "5.0.0", "server", replication::replicaof, "Follows a master (host port), or stops following (NO ONE) keeping the data."),
    spec!("slaveof",        3, ["admin", "noscript", "stale", "no_async_loading"], [0, 0, 0], "1.0.0", "server", replication::replicaof, "The old name of REPLICAOF."),
    spec!("role",           1, ["noscript", "loading", "stale", "fast"], [0, 0, 0], "2.8.12", "server", replication::role, "Returns the replication role: master with its offset and replicas, or slave with its master and link state."),
    spec!("replconf",      -1, ["admin", "noscript", "loading", "stale", "allow_busy"], [0, 0, 0], "3.0.0", "server", replication::replconf, "A replica's handshake and acknowledgements (listening-port, ip-address, capa, ack, getack)."),
    spec!("psync",         -3, ["admin", "noscript", "no_multi"], [0, 0, 0], "2.8.0", "server", replication::psync, "Starts replication: +CONTINUE from the backlog, else +FULLRESYNC and a snapshot; then the write stream."),
    spec!("sync",           1, ["admin", "noscript", "no_multi"], [0, 0, 0], "1.0.0", "server", replication::sync, "Starts replication the old way: a snapshot, then the write stream."),
    spec!("sort_ro",       -2, ["readonly", "movablekeys", "@set", "@sortedset", "@list", "@dangerous"], [1,  1, 1; sort::sort_keys], "7.0.0", "generic",    sort::sort_ro,        "Sorts the elements of a list, set or sorted set, without STORE."),
    // Pub/sub (pubsub.rs; the registry in ../pubsub.rs).
    spec!("subscribe",     -2, ["pubsub", "noscript", "loading", "stale"], [0, 0, 0], "2.0.0", "pubsub", pubsub::subscribe, "Listens for messages published to channels."),
    spec!("unsubscribe",   -1, ["pubsub", "noscript", "loading", "stale"], [0, 0, 0], "2.0.0", "pubsub", pubsub::unsubscribe, "Stops listening to channels (all of them without arguments)."),
    spec!("psubscribe",    -2, ["pubsub", "noscript", "loading", "stale"], [0, 0, 0], "2.0.0", "pubsub", pubsub::psubscribe, "Listens for messages published to channels that match glob patterns."),
    spec!("punsubscribe",  -1, ["pubsub", "noscript", "loading", "stale"], [0, 0, 0], "2.0.0", "pubsub", pubsub::punsubscribe, "Stops listening to patterns (all of them without arguments)."),
    spec!("publish",        3, ["pubsub", "loading", "stale", "fast", "may_replicate"], [0, 0, 0], "2.0.0", "pubsub", pubsub::publish, "Posts a message to a channel; returns the number of clients that received it."),
    spec!("ssubscribe",    -2, ["pubsub", "noscript", "loading", "stale"], [0, 0, 0], "7.0.0", "pubsub", pubsub::ssubscribe, "Listens for messages published to shard channels."),
    spec!("sunsubscribe",  -1, ["pubsub", "noscript", "loading", "stale"], [0, 0, 0], "7.0.0", "pubsub", pubsub::sunsubscribe, "Stops listening to shard channels (all of them without arguments)."),
    spec!("spublish",       3, ["pubsub", "loading", "stale", "fast", "may_replicate"], [0, 0, 0], "7.0.0", "pubsub", pubsub::spublish, "Posts a message to a shard channel; returns the number of shard subscribers reached."),
    spec!("pubsub",        -2, [],                           [0,  0, 0], "2.8.0", "pubsub",     session::not_a_subcommand, "Pub/sub introspection (CHANNELS, NUMSUB, NUMPAT, SHARDCHANNELS, SHARDNUMSUB)."),
      spec!("pubsub|channels",      -2, ["pubsub", "loading", "stale"],              [0,  0, 0], "2.8.0",  "pubsub",     pubsub::channels,              "Returns the channels with subscribers, all or those matching a pattern."),
      spec!("pubsub|numsub",        -2, ["pubsub", "loading", "stale"],              [0,  0, 0], "2.8.0",  "pubsub",     pubsub::numsub,                "Returns the number of subscribers of each channel given."),
      spec!("pubsub|numpat",        -2, ["pubsub", "loading", "stale"],              [0,  0, 0], "2.8.0",  "pubsub",     pubsub::numpat,                "Returns the number of pattern subscriptions."),
      spec!("pubsub|shardchannels", -2, ["pubsub", "loading", "stale"],              [0,  0, 0], "7.0.0",  "pubsub",     pubsub::shardchannels,         "Returns the shard channels with subscribers, all or those matching a pattern."),
      spec!("pubsub|shardnumsub",   -2, ["pubsub", "loading", "stale"],              [0,  0, 0], "7.0.0",  "pubsub",     pubsub::shardnumsub,           "Returns the number of subscribers of each shard channel given."),
      spec!("pubsub|help",          -2, ["loading", "stale"],                        [0,  0, 0], "6.2.0",  "pubsub",     pubsub::help,                  "Describes the PUBSUB subcommands."),
    spec!("reset",          1, ["no_auth", "noscript", "loading", "stale", "fast", "multi_control"], [0, 0, 0], "6.2.0", "connection", pubsub::reset, "Resets the connection: out of MULTI, nothing watched or subscribed, database 0, RESP2, no name."),
]);

#[cfg(test)]
mod tests {
    use super::*;
    use crate::session::MAX_NAME_BYTES;

    #[test]
    fn command_names_are_unique_lowercase_and_short() {
        let mut seen = std::collections::HashSet::new();
        for s in COMMANDS.rows() {
            assert!(seen.insert(s.name), "{} twice", s.name);
            assert_eq!(s.name, s.name.to_ascii_lowercase());
            assert!(s.name.len() <= MAX_NAME_BYTES);
            assert_ne!(s.arity, 0);
        }
        assert_eq!(
            COMMANDS.lookup(b"GeT").map(|i| COMMANDS.row(i).name),
            Some("get")
        );
        let get = COMMANDS.lookup(b"CONFIG|get").map(|i| COMMANDS.row(i).name);
        assert_eq!(get, Some("config|get"));
        assert_eq!(COMMANDS.lookup(b"nosuchcommandatall"), None);
    }

    #[test]
    fn every_subcommand_has_its_container_and_every_movable_row_a_finder() {
        for (i, s) in COMMANDS.rows().iter().enumerate() {
            if let Some(container) = s.container_name() {
                let c = COMMANDS.lookup(container.as_bytes());
                let c = c.unwrap_or_else(|| panic!("{}: no {container}", s.name));
                assert!(COMMANDS.subcommands(c).contains(&i), "{}", s.name);
                assert!(c < i, "{} before {container}", s.name);
                assert_eq!(s.group, COMMANDS.row(c).group, "{}", s.name);
            }
            let movable = s.flags.contains(&"movablekeys");
            assert_eq!(movable, s.keys.find.is_some(), "{}", s.name);
        }
    }

    #[test]
    fn containers_have_no_dispatch_flags_and_take_a_subcommand() {
        // No container writes, refuses MULTI or runs before AUTH; their
        // subcommands do not either (the dispatch reads the subcommand's
        // row), but FUNCTION's that change the libraries and XGROUP's, which
        // write and propagate like any write.
        let steering = [
            "write",
            "denyoom",
            "may_replicate",
            "no_multi",
            "no_auth",
            "multi_control",
            "swaps_dbs",
        ];
        let containers: Vec<usize> = COMMANDS
            .commands()
            .filter(|&i| COMMANDS.is_container(i))
            .collect();
        assert_eq!(containers.len(), 14);
        for c in containers {
            let spec = COMMANDS.row(c);
            // Only COMMAND runs without a subcommand (it lists them all).
            assert!(spec.arity <= -2 || spec.name == "command", "{}", spec.name);
            for &i in std::iter::once(&c).chain(COMMANDS.subcommands(c)) {
                let spec = COMMANDS.row(i);
                let writes = [
                    "function|load",
                    "function|delete",
                    "function|restore",
                    "function|flush",
                    "xgroup|create",
                    "xgroup|setid",
                    "xgroup|destroy",
                    "xgroup|createconsumer",
                    "xgroup|delconsumer",
                ];
                for flag in steering {
                    if writes.contains(&spec.name) && (flag == "write" || flag == "denyoom") {
                        continue;
                    }
                    assert!(!spec.flags.contains(&flag), "{}: {flag}", spec.name);
                }
            }
        }
    }

    #[test]
    fn requests_resolve_to_their_subcommand_rows() {
        let resolve = |words: &[&str]| {
            COMMANDS
                .resolve(words.iter().map(|w| w.as_bytes()))
                .map(|r| {
                    r.map(|i| COMMANDS.row(i).name)
                        .map_err(|i| COMMANDS.row(i).name)
                })
        };
        assert_eq!(resolve(&["CONFIG", "get", "x"]), Some(Ok("config|get")));
        assert_eq!(resolve(&["config"]), Some(Ok("config")));
        assert_eq!(resolve(&["config", "nosuch"]), Some(Err("config")));
        assert_eq!(resolve(&["get", "k"]), Some(Ok("get")));
        assert_eq!(resolve(&["config|get", "x"]), None);
        assert_eq!(resolve(&["nosuch"]), None);
        let long = "x".repeat(40);
        assert_eq!(resolve(&["memory", &long]), Some(Err("memory")));
    }
}
