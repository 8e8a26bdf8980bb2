//! The run-time settings: every parameter `CONFIG GET` shows and `CONFIG
//! SET` may change, with Redis's names, value syntax and error texts, and
//! the limits that take effect at once (atomics the connections read).
//!
//! Parameters come in four kinds of access:
//! - *Live*, applied at once: `maxmemory` (write commands that may grow the
//!   data — Redis's `denyoom` ones — are refused with `OOM` while the
//!   memory in use, as `INFO memory`'s `used_memory` counts it, is above it;
//!   Persimmon evicts nothing, whatever `maxmemory-policy` says),
//!   `min-replicas-to-write` and `min-replicas-max-lag` (with both above 0,
//!   a master refuses write commands with `NOREPLICAS` while fewer replicas
//!   than that acknowledged within the lag), `replica-read-only`,
//!   `replica-serve-stale-data` (`no`: a replica whose link is down refuses
//!   the commands not flagged `stale` with `MASTERDOWN`),
//!   `notify-keyspace-events` (`notify.rs`),
//!   `repl-ping-replica-period`, `repl-backlog-size` (from the next replica
//!   that attaches), `masterauth` (the next connection to the master;
//!   `repl/` reads these four when it needs them),
//!   `maxclients` (new connections),
//!   `proto-max-bulk-len`, `client-query-buffer-limit`,
//!   `client-output-buffer-limit` (its `normal` class: the hard limit;
//!   its `pubsub` class: hard, soft and soft seconds for the messages
//!   waiting for a subscriber, see `pubsub.rs`; 0 is no limit, as in Redis), `client-output-stall-secs`, `requirepass`
//!   (new connections and AUTH; connections already in stay in, as in Redis),
//!   `protected-mode` (new connections), `slowlog-log-slower-than` and
//!   `slowlog-max-len` (`slowlog.rs`), `latency-monitor-threshold`
//!   (`latency.rs`), `acl-pubsub-default` (the channels of users created
//!   or reset from then on), `acllog-max-len` (`ACL LOG`'s length).
//! - *Accepted with no effect*: Redis settings that clients and Redis's
//!   own test suite set, checked as Redis checks them and reported back by
//!   `CONFIG GET`, but nothing in Persimmon acts on them: the encoding
//!   thresholds (`hash-max-listpack-entries`/`-value`,
//!   `zset-max-listpack-entries`/`-value`, their `ziplist` aliases,
//!   `set-max-intset-entries`: only `OBJECT ENCODING` reads them, to report
//!   the encoding Redis would use, see `encoding.rs`), `list-max-listpack-size`,
//!   `list-compress-depth`, `stream-node-max-bytes`/`-entries`,
//!   `hll-sparse-max-bytes`), the `lazyfree-*` switches, persistence
//!   (`save`, `appendonly`, `appendfsync`: every write is durable before
//!   its reply anyway), `maxmemory-policy` and `maxmemory-samples`, `timeout`,
//!   `tcp-keepalive`, `hz`, `dynamic-hz`, `activerehashing`,
//!   `active-expire-effort`, `latency-tracking` and its percentiles,
//!   `busy-reply-threshold` (`lua-time-limit`), `loglevel`, and the other
//!   replication settings (`repl-timeout`: the links use Redis's default,
//!   60 s), and the rest of Redis 7.0's parameters (clustering, TLS, AOF
//!   and RDB files, defragmentation, ...), so `CONFIG GET *` lists what
//!   Redis 7.0 lists.
//! - *Immutable*: fixed at startup (`bind`, `port`, `databases`, the pool's
//!   own settings, Redis's startup-only parameters such as `daemonize`):
//!   `can't set immutable config`, unless the value given is the one it
//!   has (nothing changes).
//! - *Hidden*: Redis's test-only parameters (`key-load-delay`), shown by
//!   `CONFIG GET` only when named, never by a pattern.
//! - *Protected*: `dir`, as in Redis without `enable-protected-configs`.
//!
//! The config file's `[settings]` table holds parameters by these names;
//! they are applied at start as one `CONFIG SET` each, and the values
//! after that are the *startup* values `CONFIG REWRITE` compares with.
//!
//! Invariants:
//! - `CONFIG SET` is all or nothing: every pair is checked before any is
//!   applied, under the one lock that also guards the values, so no reader
//!   sees half of a SET and two SETs never interleave.
//! - A value is stored in its normal form (`1mb` is `1048576`, `YES` is
//!   `yes`), so `CONFIG GET` shows what the server runs with.
//! - The live limits are relaxed atomics: connections read them once per
//!   batch of requests (or per accepted connection), never under the lock.

use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU32, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard, OnceLock};
use std::time::Duration;

/// How a parameter's value is written.
#[derive(Clone, Copy, Debug)]
enum Kind {
    /// `yes` or `no`.
    Bool,
    /// An integer within the bounds.
    Int(i64, i64),
    /// A byte count (`64`, `1kb`, `2mb`, `1g`) within the bounds.
    Memory(u64, u64),
    /// One of the names.
    Enum(&'static [&'static str]),
    /// Any bytes.
    Text,
    /// `save`: pairs of seconds (at least 1) and changes (at least 0).
    Save,
    /// `client-output-buffer-limit`: `class hard soft seconds` groups.
    OutputLimit,
    /// `latency-tracking-info-percentiles`: numbers from 0 to 100.
    Percentiles,
    /// `notify-keyspace-events`: class letters (`notify.rs`).
    KeyspaceEvents,
    /// `maxmemory-clients`: a byte count or a percentage (`10%`).
    MemoryOrPercent,
}

/// How a parameter's value is written in the TOML config file.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TomlForm {
    /// `true`/`false` (the value is `yes`/`no`).
    Bool,
    /// An integer (the value's digits).
    Int,
    /// A string.
    Text,
    /// A list of strings (the value's lines): the `user` key.
    Lines,
}

impl TomlForm {
    fn of(kind: Kind) -> TomlForm {
        match kind {
            Kind::Bool => TomlForm::Bool,
            Kind::Int(..) | Kind::Memory(..) => TomlForm::Int,
            _ => TomlForm::Text,
        }
    }
}

/// What setting a parameter does.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Access {
    Live,
    NoEffect,
    Immutable,
    Protected,
}

/// One parameter: its name, Redis's older name for it, syntax, access and
/// default.
struct Param {
    name: &'static str,
    alias: Option<&'static str>,
    kind: Kind,
    access: Access,
    default: &'static str,
    /// Left out of `CONFIG GET` patterns (shown when named).
    hidden: bool,
}

const fn param(name: &'static str, kind: Kind, access: Access, default: &'static str) -> Param {
    Param {
        name,
        alias: None,
        kind,
        access,
        default,
        hidden: false,
    }
}

const fn hidden(name: &'static str, kind: Kind, access: Access, default: &'static str) -> Param {
    Param {
        hidden: true,
        ..param(name, kind, access, default)
    }
}

const fn aliased(
    name: &'static str,
    alias: &'static str,
    kind: Kind,
    access: Access,
    default: &'static str,
) -> Param {
    Param {
        name,
        alias: Some(alias),
        kind,
        access,
        default,
        hidden: false,
    }
}

const INT_MAX: i64 = i32::MAX as i64;
const LONG_MAX: i64 = i64::MAX;
const BOOL: Kind = Kind::Bool;
const TEXT: Kind = Kind::Text;
use Access::{Immutable, Live, NoEffect, Protected};

const MAXMEMORY_POLICIES: &[&str] = &[
    "volatile-lru",
    "volatile-lfu",
    "volatile-random",
    "volatile-ttl",
    "allkeys-lru",
    "allkeys-lfu",
    "allkeys-random",
    "noeviction",
];
const CLUSTER_PREFERRED_ENDPOINT_TYPE: &[&str] = &["ip", "hostname", "unknown-endpoint"];
const OOM_SCORE_ADJ: &[&str] = &["no", "yes", "relative", "absolute"];
const PROPAGATION_ERROR_BEHAVIOR: &[&str] = &["ignore", "panic", "panic-on-replicas"];
const REPL_DISKLESS_LOAD: &[&str] = &["disabled", "on-empty-db", "swapdb"];
const SANITIZE_DUMP_PAYLOAD: &[&str] = &["no", "yes", "clients"];
const SHUTDOWN_ON_SIGINT: &[&str] = &["default", "save", "nosave", "now", "force"];
const SHUTDOWN_ON_SIGTERM: &[&str] = &["default", "save", "nosave", "now", "force"];
const LOGLEVELS: &[&str] = &["debug", "verbose", "notice", "warning"];
const APPENDFSYNC: &[&str] = &["always", "everysec", "no"];
const ACL_PUBSUB_DEFAULTS: &[&str] = &["allchannels", "resetchannels"];
const TLS_AUTH_CLIENTS: &[&str] = &["yes", "optional", "no"];

/// Checks and installs a new TLS configuration from the settings' values
/// (read through the function given, by name) before a `CONFIG SET` of a
/// `tls-*` parameter stores them (`tls::TlsState::configure`).
pub type TlsHook = Box<dyn Fn(&dyn Fn(&str) -> String) -> Result<(), String> + Send + Sync>;

/// Every parameter, in the order `CONFIG GET *` lists them. Defaults that
/// depend on the startup configuration are filled in by [`Settings::new`].
#[rustfmt::skip]
static PARAMS: &[Param] = &[
    // Connections and limits (live).
    param("bind",                              TEXT,                          Immutable, ""),
    param("port",                              Kind::Int(0, 65535),           Immutable, ""),
    param("protected-mode",                    BOOL,                          Live,      ""),
    param("requirepass",                       TEXT,                          Live,      ""),
    param("acl-pubsub-default",                Kind::Enum(ACL_PUBSUB_DEFAULTS), Live,    "resetchannels"),
    param("acllog-max-len",                    Kind::Int(0, LONG_MAX),        Live,      "128"),
    param("maxclients",                        Kind::Int(1, u32::MAX as i64), Live,      ""),
    param("proto-max-bulk-len",                Kind::Memory(1 << 20, LONG_MAX as u64), Live, ""),
    param("client-query-buffer-limit",         Kind::Memory(1 << 20, LONG_MAX as u64), Live, ""),
    param("client-output-buffer-limit",        Kind::OutputLimit,             Live,      ""),
    param("client-output-stall-secs",          Kind::Int(1, INT_MAX),         Live,      ""),
    param("timeout",                           Kind::Int(0, INT_MAX),         NoEffect,  "0"),
    param("tcp-keepalive",                     Kind::Int(0, INT_MAX),         NoEffect,  "300"),
    param("databases",                         Kind::Int(1, INT_MAX),         Immutable, "1"),
    // Persistence: every write is durable before its reply; there is no
    // RDB snapshot or AOF to configure.
    param("save",                              Kind::Save,                    NoEffect,  ""),
    param("appendonly",                        BOOL,                          NoEffect,  "no"),
    param("appendfsync",                       Kind::Enum(APPENDFSYNC),       NoEffect,  "no"),
    param("dir",                               TEXT,                          Protected, ""),
    // Memory.
    param("maxmemory",                         Kind::Memory(0, u64::MAX),     Live,      "0"),
    param("maxmemory-policy",                  Kind::Enum(MAXMEMORY_POLICIES), NoEffect, "noeviction"),
    param("maxmemory-samples",                 Kind::Int(1, INT_MAX),         NoEffect,  "5"),
    param("lazyfree-lazy-eviction",            BOOL,                          NoEffect,  "no"),
    param("lazyfree-lazy-expire",              BOOL,                          NoEffect,  "no"),
    param("lazyfree-lazy-server-del",          BOOL,                          NoEffect,  "no"),
    param("lazyfree-lazy-user-del",            BOOL,                          NoEffect,  "no"),
    param("lazyfree-lazy-user-flush",          BOOL,                          NoEffect,  "no"),
    // Encodings (Persimmon stores every value as one record).
    aliased("hash-max-listpack-entries", "hash-max-ziplist-entries", Kind::Int(0, LONG_MAX), NoEffect, "512"),
    aliased("hash-max-listpack-value",   "hash-max-ziplist-value",   Kind::Memory(0, LONG_MAX as u64), NoEffect, "64"),
    param("set-max-intset-entries",            Kind::Int(0, LONG_MAX),        NoEffect,  "512"),
    aliased("zset-max-listpack-entries", "zset-max-ziplist-entries", Kind::Int(0, LONG_MAX), NoEffect, "128"),
    aliased("zset-max-listpack-value",   "zset-max-ziplist-value",   Kind::Memory(0, LONG_MAX as u64), NoEffect, "64"),
    aliased("list-max-listpack-size",    "list-max-ziplist-size",    Kind::Int(i32::MIN as i64, INT_MAX), NoEffect, "-2"),
    param("list-compress-depth",               Kind::Int(0, INT_MAX),         NoEffect,  "0"),
    param("stream-node-max-bytes",             Kind::Memory(0, LONG_MAX as u64), NoEffect, "4096"),
    param("stream-node-max-entries",           Kind::Int(0, LONG_MAX),        NoEffect,  "100"),
    param("hll-sparse-max-bytes",              Kind::Memory(0, LONG_MAX as u64), NoEffect, "3000"),
    // Background work, latency and logging.
    param("hz",                                Kind::Int(0, INT_MAX),         NoEffect,  "10"),
    param("dynamic-hz",                        BOOL,                          NoEffect,  "yes"),
    param("activerehashing",                   BOOL,                          NoEffect,  "yes"),
    param("active-expire-effort",              Kind::Int(1, 10),              NoEffect,  "1"),
    aliased("busy-reply-threshold", "lua-time-limit", Kind::Int(0, LONG_MAX), NoEffect, "5000"),
    param("latency-tracking",                  BOOL,                          NoEffect,  "yes"),
    param("latency-tracking-info-percentiles", Kind::Percentiles,             NoEffect,  "50 99 99.9"),
    param("latency-monitor-threshold",         Kind::Int(0, LONG_MAX),        Live,      "0"),
    param("slowlog-log-slower-than",           Kind::Int(-1, LONG_MAX),       Live,      "10000"),
    param("slowlog-max-len",                   Kind::Int(0, LONG_MAX),        Live,      "128"),
    param("loglevel",                          Kind::Enum(LOGLEVELS),         NoEffect,  "notice"),
    param("notify-keyspace-events",            Kind::KeyspaceEvents,          Live,      ""),
    // Replication (`repl/`).
    aliased("min-replicas-to-write", "min-slaves-to-write", Kind::Int(0, INT_MAX), Live, "0"),
    aliased("min-replicas-max-lag",  "min-slaves-max-lag",  Kind::Int(0, INT_MAX), Live, "10"),
    aliased("replica-serve-stale-data", "slave-serve-stale-data", BOOL, Live, "yes"),
    aliased("replica-read-only",     "slave-read-only",     BOOL,                  Live,     "yes"),
    aliased("repl-ping-replica-period", "repl-ping-slave-period", Kind::Int(1, INT_MAX), Live, "10"),
    param("masterauth",                        TEXT,                          Live,      ""),
    param("repl-timeout",                      Kind::Int(1, INT_MAX),         NoEffect,  "60"),
    param("repl-backlog-size",                 Kind::Memory(1, LONG_MAX as u64), Live, "1048576"),
    // The rest of Redis 7.0's parameters: checked as Redis checks them and
    // reported, with no effect here (clustering, TLS, AOF and RDB files,
    // defragmentation, ACL files, process management, ...); the immutable
    // ones are Redis's startup-only parameters.
    param("aclfile",                              TEXT,                                Immutable,  ""),
    param("active-defrag-cycle-max",              Kind::Int(1, 99),                    NoEffect,   "25"),
    param("active-defrag-cycle-min",              Kind::Int(1, 99),                    NoEffect,   "1"),
    param("active-defrag-ignore-bytes",           Kind::Memory(0, LONG_MAX as u64),    NoEffect,   "104857600"),
    param("active-defrag-max-scan-fields",        Kind::Int(1, LONG_MAX),              NoEffect,   "1000"),
    param("active-defrag-threshold-lower",        Kind::Int(0, 1000),                  NoEffect,   "10"),
    param("active-defrag-threshold-upper",        Kind::Int(0, 1000),                  NoEffect,   "100"),
    param("activedefrag",                         BOOL,                                NoEffect,   "no"),
    param("always-show-logo",                     BOOL,                                Immutable,  "no"),
    param("aof-disable-auto-gc",                  BOOL,                                NoEffect,   "no"),
    param("aof-load-truncated",                   BOOL,                                NoEffect,   "yes"),
    param("aof-rewrite-incremental-fsync",        BOOL,                                NoEffect,   "yes"),
    param("aof-timestamp-enabled",                BOOL,                                NoEffect,   "no"),
    param("aof-use-rdb-preamble",                 BOOL,                                NoEffect,   "yes"),
    param("aof_rewrite_cpulist",                  TEXT,                                Immutable,  ""),
    param("appenddirname",                        TEXT,                                Immutable,  "appendonlydir"),
    param("appendfilename",                       TEXT,                                Immutable,  "appendonly.aof"),
    param("auto-aof-rewrite-min-size",            Kind::Memory(0, LONG_MAX as u64),    NoEffect,   "67108864"),
    param("auto-aof-rewrite-percentage",          Kind::Int(0, INT_MAX),               NoEffect,   "100"),
    param("bgsave_cpulist",                       TEXT,                                Immutable,  ""),
    param("bind-source-addr",                     TEXT,                                NoEffect,   ""),
    param("bio_cpulist",                          TEXT,                                Immutable,  ""),
    param("cluster-allow-pubsubshard-when-down",  BOOL,                                NoEffect,   "yes"),
    param("cluster-allow-reads-when-down",        BOOL,                                NoEffect,   "no"),
    param("cluster-allow-replica-migration",      BOOL,                                NoEffect,   "yes"),
    param("cluster-announce-bus-port",            Kind::Int(0, 65535),                 NoEffect,   "0"),
    param("cluster-announce-hostname",            TEXT,                                NoEffect,   ""),
    param("cluster-announce-ip",                  TEXT,                                NoEffect,   ""),
    param("cluster-announce-port",                Kind::Int(0, 65535),                 NoEffect,   "0"),
    param("cluster-announce-tls-port",            Kind::Int(0, 65535),                 NoEffect,   "0"),
    param("cluster-config-file",                  TEXT,                                Immutable,  "nodes.conf"),
    param("cluster-enabled",                      BOOL,                                Immutable,  "no"),
    param("cluster-link-sendbuf-limit",           Kind::Memory(0, LONG_MAX as u64),    NoEffect,   "0"),
    param("cluster-migration-barrier",            Kind::Int(0, INT_MAX),               NoEffect,   "1"),
    param("cluster-node-timeout",                 Kind::Int(0, LONG_MAX),              NoEffect,   "15000"),
    param("cluster-port",                         Kind::Int(i64::MIN, LONG_MAX),       Immutable,  "0"),
    param("cluster-preferred-endpoint-type",      Kind::Enum(CLUSTER_PREFERRED_ENDPOINT_TYPE), NoEffect,   "ip"),
    param("cluster-replica-no-failover",          BOOL,                                NoEffect,   "no"),
    aliased("cluster-replica-validity-factor"     , "cluster-slave-validity-factor", Kind::Int(0, INT_MAX), NoEffect, "10"),
    param("cluster-require-full-coverage",        BOOL,                                NoEffect,   "yes"),
    param("cluster-slave-no-failover",            BOOL,                                NoEffect,   "no"),
    param("crash-log-enabled",                    BOOL,                                NoEffect,   "yes"),
    param("crash-memcheck-enabled",               BOOL,                                NoEffect,   "yes"),
    param("daemonize",                            BOOL,                                Immutable,  "no"),
    param("dbfilename",                           TEXT,                                Protected,  "dump.rdb"),
    param("disable-thp",                          BOOL,                                Immutable,  "yes"),
    param("enable-debug-command",                 BOOL,                                Immutable,  "no"),
    param("enable-module-command",                BOOL,                                Immutable,  "no"),
    param("enable-protected-configs",             BOOL,                                Immutable,  "no"),
    param("ignore-warnings",                      TEXT,                                NoEffect,   ""),
    param("io-threads",                           Kind::Int(i64::MIN, LONG_MAX),       Immutable,  "1"),
    param("io-threads-do-reads",                  BOOL,                                Immutable,  "no"),
    param("jemalloc-bg-thread",                   BOOL,                                NoEffect,   "yes"),
    param("lfu-decay-time",                       Kind::Int(0, INT_MAX),               NoEffect,   "1"),
    param("lfu-log-factor",                       Kind::Int(0, INT_MAX),               NoEffect,   "10"),
    param("logfile",                              TEXT,                                Immutable,  ""),
    param("masteruser",                           TEXT,                                NoEffect,   ""),
    param("maxmemory-clients",                    Kind::MemoryOrPercent,               NoEffect,   "0"),
    param("maxmemory-eviction-tenacity",          Kind::Int(0, 100),                   NoEffect,   "10"),
    param("no-appendfsync-on-rewrite",            BOOL,                                NoEffect,   "no"),
    param("oom-score-adj",                        Kind::Enum(OOM_SCORE_ADJ),           NoEffect,   "no"),
    param("oom-score-adj-values",                 TEXT,                                NoEffect,   "0 200 800"),
    param("pidfile",                              TEXT,                                Immutable,  ""),
    param("proc-title-template",                  TEXT,                                NoEffect,   "{title} {listen-addr} {server-mode}"),
    param("propagation-error-behavior",           Kind::Enum(PROPAGATION_ERROR_BEHAVIOR), NoEffect,   "ignore"),
    param("rdb-del-sync-files",                   BOOL,                                NoEffect,   "no"),
    param("rdb-save-incremental-fsync",           BOOL,                                NoEffect,   "yes"),
    param("rdbchecksum",                          BOOL,                                Immutable,  "yes"),
    param("rdbcompression",                       BOOL,                                NoEffect,   "yes"),
    param("repl-backlog-ttl",                     Kind::Int(0, LONG_MAX),              NoEffect,   "3600"),
    param("repl-disable-tcp-nodelay",             BOOL,                                NoEffect,   "no"),
    param("repl-diskless-load",                   Kind::Enum(REPL_DISKLESS_LOAD),      NoEffect,   "disabled"),
    param("repl-diskless-sync",                   BOOL,                                NoEffect,   "yes"),
    param("repl-diskless-sync-delay",             Kind::Int(0, INT_MAX),               NoEffect,   "5"),
    param("repl-diskless-sync-max-replicas",      Kind::Int(0, INT_MAX),               NoEffect,   "0"),
    aliased("replica-announce-ip"                 , "slave-announce-ip", TEXT, NoEffect, ""),
    aliased("replica-announce-port"               , "slave-announce-port", Kind::Int(0, 65535), NoEffect, "0"),
    param("replica-announced",                    BOOL,                                NoEffect,   "yes"),
    param("replica-ignore-disk-write-errors",     BOOL,                                NoEffect,   "no"),
    param("replica-ignore-maxmemory",             BOOL,                                NoEffect,   "yes"),
    param("replica-lazy-flush",                   BOOL,                                NoEffect,   "no"),
    aliased("replica-priority"                    , "slave-priority", Kind::Int(0, INT_MAX), NoEffect, "100"),
    aliased("replicaof"                           , "slaveof", TEXT, Immutable, ""),
    param("sanitize-dump-payload",                Kind::Enum(SANITIZE_DUMP_PAYLOAD),   NoEffect,   "no"),
    param("server_cpulist",                       TEXT,                                Immutable,  ""),
    param("set-proc-title",                       BOOL,                                Immutable,  "yes"),
    param("shutdown-on-sigint",                   Kind::Enum(SHUTDOWN_ON_SIGINT),      NoEffect,   "default"),
    param("shutdown-on-sigterm",                  Kind::Enum(SHUTDOWN_ON_SIGTERM),     NoEffect,   "default"),
    param("shutdown-timeout",                     Kind::Int(0, INT_MAX),               NoEffect,   "10"),
    param("slave-ignore-maxmemory",               BOOL,                                NoEffect,   "yes"),
    param("slave-lazy-flush",                     BOOL,                                NoEffect,   "no"),
    param("socket-mark-id",                       Kind::Int(i64::MIN, LONG_MAX),       Immutable,  "0"),
    param("stop-writes-on-bgsave-error",          BOOL,                                NoEffect,   "yes"),
    param("supervised",                           BOOL,                                Immutable,  "no"),
    param("syslog-enabled",                       BOOL,                                Immutable,  "no"),
    param("syslog-facility",                      TEXT,                                Immutable,  "local0"),
    param("syslog-ident",                         TEXT,                                Immutable,  "redis"),
    param("tcp-backlog",                          Kind::Int(i64::MIN, LONG_MAX),       Immutable,  "511"),
    param("tracking-table-max-keys",              Kind::Int(0, LONG_MAX),              NoEffect,   "1000000"),
    param("unixsocket",                           TEXT,                                Immutable,  ""),
    param("unixsocketperm",                       Kind::Int(i64::MIN, LONG_MAX),       Immutable,  "0"),
    // Hidden parameters: shown only when asked for by name, as in Redis.
    hidden("key-load-delay",                   Kind::Int(i32::MIN as i64, INT_MAX), NoEffect, "0"),
    hidden("rdb-key-save-delay",               Kind::Int(i32::MIN as i64, INT_MAX), NoEffect, "0"),
    // The pool's own settings (Persimmon's; fixed when the server starts).
    param("pool",                              TEXT,                          Immutable, ""),
    param("durability",                        TEXT,                          Immutable, ""),
    param("ordered-index",                     BOOL,                          Immutable, ""),
    param("point-index",                       TEXT,                          Immutable, ""),
    param("worker-threads",                    Kind::Int(1, 64),              Immutable, ""),
    // TLS (`tls/`): a change of any live one rebuilds the configuration.
    param("tls-port",                          Kind::Int(0, 65535),           Immutable, "0"),
    param("tls-cert-file",                     TEXT,                          Live,      ""),
    param("tls-key-file",                      TEXT,                          Live,      ""),
    param("tls-key-file-pass",                 TEXT,                          Live,      ""),
    param("tls-client-cert-file",              TEXT,                          Live,      ""),
    param("tls-client-key-file",               TEXT,                          Live,      ""),
    param("tls-client-key-file-pass",          TEXT,                          Live,      ""),
    param("tls-ca-cert-file",                  TEXT,                          Live,      ""),
    param("tls-ca-cert-dir",                   TEXT,                          Live,      ""),
    param("tls-auth-clients",                  Kind::Enum(TLS_AUTH_CLIENTS),  Live,      "yes"),
    param("tls-replication",                   BOOL,                          Live,      "no"),
    param("tls-protocols",                     TEXT,                          Live,      ""),
    param("tls-ciphers",                       TEXT,                          Live,      ""),
    param("tls-ciphersuites",                  TEXT,                          Live,      ""),
    param("tls-prefer-server-ciphers",         BOOL,                          Live,      "no"),
    param("tls-session-caching",               BOOL,                          Live,      "yes"),
    param("tls-session-cache-size",            Kind::Int(0, INT_MAX),         Live,      "20480"),
    param("tls-session-cache-timeout",         Kind::Int(0, LONG_MAX),        NoEffect,  "300"),
    param("tls-dh-params-file",                TEXT,                          NoEffect,  ""),
    param("tls-cluster",                       BOOL,                          NoEffect,  "no"),
];

/// The limits a connection applies, as one batch of requests reads them.
#[derive(Clone, Copy, Debug)]
pub struct Limits {
    pub proto_max_bulk_len: usize,
    pub query_buffer_limit: usize,
    pub output_buffer_limit: usize,
}

/// The settings every connection shares.
pub struct Settings {
    maxclients: AtomicUsize,
    proto_max_bulk_len: AtomicUsize,
    query_buffer_limit: AtomicUsize,
    output_buffer_limit: AtomicUsize,
    output_stall_secs: AtomicU64,
    protected_mode: AtomicBool,
    maxmemory: AtomicU64,
    /// `notify-keyspace-events` as `notify.rs`'s flags.
    notify_flags: AtomicU32,
    acl_pubsub_all_channels: AtomicBool,
    acllog_max_len: AtomicUsize,
    min_replicas_to_write: AtomicU64,
    min_replicas_max_lag: AtomicU64,
    /// `slowlog-log-slower-than` (µs; -1: off), `slowlog-max-len`,
    /// `latency-monitor-threshold` (ms; 0: off), read after every command.
    slowlog_slower_than: AtomicI64,
    slowlog_max_len: AtomicU64,
    latency_threshold: AtomicU64,
    /// The `pubsub` class of `client-output-buffer-limit`: hard bytes,
    /// soft bytes, soft seconds (0: no limit), as `pubsub.rs` applies it.
    pubsub_limit: [AtomicU64; 3],
    /// The value of every parameter (by index into `PARAMS`), in normal
    /// form; its lock also makes a `CONFIG SET` one step.
    values: Mutex<Vec<Vec<u8>>>,
    /// The values the server started with (what `CONFIG REWRITE` compares
    /// with to find the parameters changed at run time).
    startup: Vec<Vec<u8>>,
    /// Rebuilds the TLS configuration (installed once the server runs).
    tls_hook: OnceLock<TlsHook>,
}

/// Redis's default limits of the classes other than `normal`.
pub const OTHER_CLASSES: &str = "slave 268435456 67108864 60 pubsub 33554432 8388608 60";
/// The `pubsub` class of `OTHER_CLASSES`: hard, soft, soft seconds.
const PUBSUB_DEFAULT_LIMIT: [u64; 3] = [33554432, 8388608, 60];

pub fn yes_no(b: bool) -> &'static str {
    if b {
        "yes"
    } else {
        "no"
    }
}

/// A limit of 0 means none (as in Redis).
fn limit(n: u64) -> usize {
    if n == 0 {
        usize::MAX
    } else {
        usize::try_from(n).unwrap_or(usize::MAX)
    }
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Settings {
    /// The settings of a server that starts with `startup` — each value
    /// by parameter name: the configuration's (`Config::startup_values`)
    /// and those only known once the pool is open and the port bound
    /// (`port`, `durability`, ...) — and then the file's `[settings]`
    /// table, applied as `CONFIG SET` would (checked before, see
    /// [`check_table`](Self::check_table); a pair it refuses is skipped).
    pub fn new(startup: &[(&str, String)], table: &[(String, String)]) -> Settings {
        let mut values: Vec<Vec<u8>> = PARAMS.iter().map(|p| p.default.into()).collect();
        for (name, value) in startup {
            if let Some(i) = index_of(name.as_bytes()) {
                values[i] = value.clone().into_bytes();
            }
        }
        let mut settings = Settings {
            maxclients: AtomicUsize::new(0),
            proto_max_bulk_len: AtomicUsize::new(0),
            query_buffer_limit: AtomicUsize::new(0),
            output_buffer_limit: AtomicUsize::new(0),
            output_stall_secs: AtomicU64::new(0),
            protected_mode: AtomicBool::new(false),
            maxmemory: AtomicU64::new(0),
            notify_flags: AtomicU32::new(0),
            acl_pubsub_all_channels: AtomicBool::new(false),
            acllog_max_len: AtomicUsize::new(128),
            min_replicas_to_write: AtomicU64::new(0),
            min_replicas_max_lag: AtomicU64::new(0),
            slowlog_slower_than: AtomicI64::new(-1),
            slowlog_max_len: AtomicU64::new(0),
            latency_threshold: AtomicU64::new(0),
            pubsub_limit: PUBSUB_DEFAULT_LIMIT.map(AtomicU64::new),
            startup: Vec::new(),
            values: Mutex::new(Vec::new()),
            tls_hook: OnceLock::new(),
        };
        // The live parameters take effect from their values, as a
        // `CONFIG SET` of each would make them.
        for (p, value) in PARAMS.iter().zip(&values) {
            if p.access == Live {
                settings.apply(p.name, value);
            }
        }
        settings.values = Mutex::new(values);
        for (name, value) in table {
            let _ = settings.set(&[(name.as_bytes(), value.as_bytes())]);
        }
        settings.startup = lock(&settings.values).clone();
        settings
    }

    /// Whether a `[settings]` table would be accepted: each pair as
    /// `CONFIG SET` checks it.
    pub fn check_table(table: &[(String, String)]) -> Result<(), String> {
        let settings = Settings::new(&[], &[]);
        for (name, value) in table {
            settings.set(&[(name.as_bytes(), value.as_bytes())])?;
        }
        Ok(())
    }

    /// The parameters whose value differs from the one the server started
    /// with: name, value now, and how the value is written in TOML.
    pub fn changed(&self) -> Vec<(&'static str, Vec<u8>, TomlForm)> {
        let values = lock(&self.values);
        PARAMS
            .iter()
            .zip(values.iter().zip(&self.startup))
            .filter(|(_, (now, then))| now != then)
            .map(|(p, (now, _))| (p.name, now.clone(), TomlForm::of(p.kind)))
            .collect()
    }

    /// The `pubsub` output limit now: (hard bytes, soft bytes, soft
    /// seconds), 0 meaning none.
    pub fn pubsub_limit(&self) -> [u64; 3] {
        [0, 1, 2].map(|i| self.pubsub_limit[i].load(Ordering::Relaxed))
    }

    pub fn maxclients(&self) -> usize {
        self.maxclients.load(Ordering::Relaxed)
    }

    pub fn protected_mode(&self) -> bool {
        self.protected_mode.load(Ordering::Relaxed)
    }

    /// The connection limits now (read once per batch of requests).
    pub fn limits(&self) -> Limits {
        Limits {
            proto_max_bulk_len: self.proto_max_bulk_len.load(Ordering::Relaxed),
            query_buffer_limit: self.query_buffer_limit.load(Ordering::Relaxed),
            output_buffer_limit: self.output_buffer_limit.load(Ordering::Relaxed),
        }
    }

    /// The classes of keyspace events to publish (`notify.rs`; 0: none).
    pub fn notify_flags(&self) -> u32 {
        self.notify_flags.load(Ordering::Relaxed)
    }

    /// `acl-pubsub-default`: whether new users may use every channel.
    pub fn acl_pubsub_all_channels(&self) -> bool {
        self.acl_pubsub_all_channels.load(Ordering::Relaxed)
    }

    /// `acllog-max-len`: the most entries `ACL LOG` keeps.
    pub fn acllog_max_len(&self) -> usize {
        self.acllog_max_len.load(Ordering::Relaxed)
    }

    /// The `maxmemory` cap in bytes (0: none).
    pub fn maxmemory(&self) -> u64 {
        self.maxmemory.load(Ordering::Relaxed)
    }

    /// Whether writes must be refused for want of replicas: Redis refuses
    /// them while fewer than `min-replicas-to-write` replicas (lagging at
    /// most `min-replicas-max-lag`, when that is not 0) are connected, and
    /// this server has no replicas.
    pub fn needs_replicas(&self) -> bool {
        self.min_replicas_to_write.load(Ordering::Relaxed) > 0
            && self.min_replicas_max_lag.load(Ordering::Relaxed) > 0
    }

    /// `slowlog-log-slower-than` in microseconds (negative: no log).
    pub fn slowlog_slower_than(&self) -> i64 {
        self.slowlog_slower_than.load(Ordering::Relaxed)
    }

    /// `slowlog-max-len`: entries the slow log keeps.
    pub fn slowlog_max_len(&self) -> usize {
        self.slowlog_max_len.load(Ordering::Relaxed) as usize
    }

    /// `latency-monitor-threshold` in milliseconds (0: no monitoring).
    pub fn latency_threshold(&self) -> u64 {
        self.latency_threshold.load(Ordering::Relaxed)
    }

    pub fn output_buffer_limit(&self) -> usize {
        self.output_buffer_limit.load(Ordering::Relaxed)
    }

    pub fn output_stall(&self) -> Duration {
        Duration::from_secs(self.output_stall_secs.load(Ordering::Relaxed))
    }

    /// The value of parameter `name` (its canonical name), as `CONFIG GET`
    /// shows it.
    pub fn value(&self, name: &str) -> Option<Vec<u8>> {
        let i = index_of(name.as_bytes())?;
        Some(lock(&self.values)[i].clone())
    }

    /// `CONFIG GET pattern ...`: the matching parameters and their values.
    /// A name without glob characters is looked up as given (any case,
    /// aliases too) and shown as given; a pattern matches the names and
    /// aliases, as Redis does.
    pub fn get(&self, patterns: &[&[u8]]) -> Vec<(Vec<u8>, Vec<u8>)> {
        let values = lock(&self.values);
        let mut hits: Vec<(Vec<u8>, Vec<u8>)> = Vec::new();
        let mut add = |shown: &[u8], i: usize| {
            if !hits.iter().any(|(name, _)| name == shown) {
                hits.push((shown.to_vec(), values[i].clone()));
            }
        };
        for pattern in patterns {
            if !pattern.iter().any(|b| matches!(b, b'*' | b'?' | b'[')) {
                if let Some(i) = index_of(pattern) {
                    add(pattern, i);
                }
                continue;
            }
            let pattern = pattern.to_ascii_lowercase();
            for (i, p) in PARAMS.iter().enumerate().filter(|(_, p)| !p.hidden) {
                for name in std::iter::once(p.name).chain(p.alias) {
                    if crate::glob::matches(&pattern, name.as_bytes()) {
                        add(name.as_bytes(), i);
                    }
                }
            }
        }
        hits
    }

    /// `CONFIG SET name value ...`: all pairs or none. The error is Redis's
    /// text (without the `ERR ` code).
    pub fn set(&self, pairs: &[(&[u8], &[u8])]) -> Result<(), String> {
        let mut values = lock(&self.values);
        let found = find_params(pairs, &values)?;
        let mut parsed = Vec::with_capacity(pairs.len());
        for (&i, &(_, value)) in found.iter().zip(pairs) {
            let p = &PARAMS[i];
            let normal = normalize(p.kind, value, &values[i]).map_err(|reason| {
                format!(
                    "CONFIG SET failed (possibly related to argument '{}') - {reason}",
                    p.name
                )
            })?;
            parsed.push((i, normal));
        }
        self.reconfigure_tls(&values, &parsed)?;
        for (i, normal) in parsed {
            if PARAMS[i].access == Live {
                self.apply(PARAMS[i].name, &normal);
            }
            values[i] = normal;
        }
        Ok(())
    }

    /// Installs the hook that rebuilds the TLS configuration when a `tls-*`
    /// parameter is set (the first hook installed stays).
    pub fn on_tls_change(&self, hook: TlsHook) {
        let _ = self.tls_hook.set(hook);
    }

    /// The value of parameter `name` as text (empty when unknown).
    pub fn text(&self, name: &str) -> String {
        self.value(name)
            .map(|v| String::from_utf8_lossy(&v).into_owned())
            .unwrap_or_default()
    }

    /// When `parsed` sets a live `tls-*` parameter, rebuilds the TLS
    /// configuration from the values it would leave; its error refuses the
    /// whole `CONFIG SET`.
    fn reconfigure_tls(
        &self,
        values: &[Vec<u8>],
        parsed: &[(usize, Vec<u8>)],
    ) -> Result<(), String> {
        let Some(&(first, _)) = parsed
            .iter()
            .find(|(i, _)| PARAMS[*i].name.starts_with("tls-") && PARAMS[*i].access == Live)
        else {
            return Ok(());
        };
        let Some(hook) = self.tls_hook.get() else {
            return Ok(());
        };
        let value = |name: &str| -> String {
            let Some(i) = index_of(name.as_bytes()) else {
                return String::new();
            };
            let v = parsed
                .iter()
                .find(|(j, _)| *j == i)
                .map_or(&values[i], |(_, v)| v);
            String::from_utf8_lossy(v).into_owned()
        };
        hook(&value).map_err(|e| {
            format!(
                "CONFIG SET failed (possibly related to argument '{}') - Unable to update TLS configuration: {e}",
                PARAMS[first].name
            )
        })
    }

    /// Makes a live parameter's new (checked, normal) value take effect.
    fn apply(&self, name: &str, value: &[u8]) {
        let number = || {
            std::str::from_utf8(value)
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
                .unwrap_or(0)
        };
        match name {
            "maxclients" => self.maxclients.store(limit(number()), Ordering::Relaxed),
            "proto-max-bulk-len" => self
                .proto_max_bulk_len
                .store(limit(number()), Ordering::Relaxed),
            "client-query-buffer-limit" => self
                .query_buffer_limit
                .store(limit(number()), Ordering::Relaxed),
            "client-output-buffer-limit" => {
                let normal = output_classes(value)
                    .ok()
                    .and_then(|c| c.into_iter().find(|(class, ..)| class == "normal"))
                    .map_or(usize::MAX, |(_, hard, ..)| limit(hard));
                self.output_buffer_limit.store(normal, Ordering::Relaxed);
                let pubsub = output_classes(value)
                    .ok()
                    .and_then(|c| c.into_iter().find(|(class, ..)| class == "pubsub"));
                if let Some((_, hard, soft, secs)) = pubsub {
                    for (slot, n) in self.pubsub_limit.iter().zip([hard, soft, secs]) {
                        slot.store(n, Ordering::Relaxed);
                    }
                }
            }
            "client-output-stall-secs" => self.output_stall_secs.store(number(), Ordering::Relaxed),
            "maxmemory" => self.maxmemory.store(number(), Ordering::Relaxed),
            "notify-keyspace-events" => self.notify_flags.store(
                crate::notify::classes::parse(value).unwrap_or(0),
                Ordering::Relaxed,
            ),
            "acl-pubsub-default" => self
                .acl_pubsub_all_channels
                .store(value == b"allchannels", Ordering::Relaxed),
            "acllog-max-len" => self
                .acllog_max_len
                .store(limit(number()), Ordering::Relaxed),
            "min-replicas-to-write" => self
                .min_replicas_to_write
                .store(number(), Ordering::Relaxed),
            "min-replicas-max-lag" => self.min_replicas_max_lag.store(number(), Ordering::Relaxed),
            "slowlog-log-slower-than" => {
                let n = std::str::from_utf8(value).ok().and_then(|t| t.parse().ok());
                self.slowlog_slower_than
                    .store(n.unwrap_or(-1), Ordering::Relaxed)
            }
            "slowlog-max-len" => self.slowlog_max_len.store(number(), Ordering::Relaxed),
            "latency-monitor-threshold" => {
                self.latency_threshold.store(number(), Ordering::Relaxed)
            }
            "protected-mode" => self
                .protected_mode
                .store(value == b"yes", Ordering::Relaxed),
            _ => {}
        }
    }
}

/// The parameter named `name` (any case; its alias too).
fn index_of(name: &[u8]) -> Option<usize> {
    PARAMS.iter().position(|p| {
        std::iter::once(p.name)
            .chain(p.alias)
            .any(|n| n.as_bytes().eq_ignore_ascii_case(name))
    })
}

/// The parameters a `CONFIG SET` names, or Redis's error for the first
/// name that cannot be set (unknown, immutable, protected, or given twice).
fn find_params(pairs: &[(&[u8], &[u8])], values: &[Vec<u8>]) -> Result<Vec<usize>, String> {
    let mut found: Vec<usize> = Vec::with_capacity(pairs.len());
    for &(name, value) in pairs {
        let shown = String::from_utf8_lossy(name);
        let Some(i) = index_of(name) else {
            return Err(format!(
                "Unknown option or number of arguments for CONFIG SET - '{shown}'"
            ));
        };
        let refused = |reason: &str| {
            format!("CONFIG SET failed (possibly related to argument '{shown}') - {reason}")
        };
        match PARAMS[i].access {
            // The value it has already: nothing to change, accepted.
            Immutable if values[i] == value => {}
            Immutable => return Err(refused("can't set immutable config")),
            Protected => return Err(refused("can't set protected config")),
            Live | NoEffect => {}
        }
        if found.contains(&i) {
            return Err(refused("duplicate parameter"));
        }
        found.push(i);
    }
    Ok(found)
}

/// Checks `value` as a `kind` value and returns its normal form; `old` is
/// the current value (a partial `client-output-buffer-limit` keeps the
/// classes it does not name).
fn normalize(kind: Kind, value: &[u8], old: &[u8]) -> Result<Vec<u8>, String> {
    let text = || std::str::from_utf8(value).map_err(|_| "argument is not valid text".to_string());
    Ok(match kind {
        Kind::Bool => {
            let t = text().map_err(|_| "argument must be 'yes' or 'no'".to_string())?;
            if t.eq_ignore_ascii_case("yes") {
                b"yes".to_vec()
            } else if t.eq_ignore_ascii_case("no") {
                b"no".to_vec()
            } else {
                return Err("argument must be 'yes' or 'no'".into());
            }
        }
        Kind::Int(min, max) => {
            let n = persimmon_resp::parse_i64(value)
                .ok_or("argument couldn't be parsed into an integer")?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            n.to_string().into_bytes()
        }
        Kind::Memory(min, max) => {
            let n = parse_memory(value).ok_or("argument must be a memory value")?;
            if n < min || n > max {
                return Err(format!(
                    "argument must be between {min} and {max} inclusive"
                ));
            }
            n.to_string().into_bytes()
        }
        Kind::Enum(names) => {
            let found = text()
                .ok()
                .and_then(|t| names.iter().find(|n| n.eq_ignore_ascii_case(t.trim())));
            match found {
                Some(n) => n.as_bytes().to_vec(),
                None => {
                    return Err(format!(
                        "argument(s) must be one of the following: {}",
                        names.join(", ")
                    ))
                }
            }
        }
        Kind::Text => value.to_vec(),
        Kind::Save => normalize_save(value)?,
        Kind::OutputLimit => normalize_output_limit(value, old)?,
        Kind::Percentiles => normalize_percentiles(value)?,
        Kind::KeyspaceEvents => match crate::notify::classes::parse(value) {
            Some(flags) => crate::notify::classes::format(flags).into_bytes(),
            None => return Err("Invalid event class character. Use 'Ag$lshzxeKEtmdn'.".into()),
        },
        Kind::MemoryOrPercent => normalize_memory_or_percent(value)?,
    })
}

/// A byte count, or a percentage up to 100 (`maxmemory-clients`).
fn normalize_memory_or_percent(value: &[u8]) -> Result<Vec<u8>, String> {
    let bad = || "argument must be a memory or percent value".to_string();
    let Some(digits) = value.strip_suffix(b"%") else {
        return parse_memory(value)
            .map(|n| n.to_string().into_bytes())
            .ok_or_else(bad);
    };
    let n = persimmon_resp::parse_i64(digits)
        .filter(|n| *n >= 0)
        .ok_or_else(bad)?;
    if n > 100 {
        return Err("percentage argument must be less or equal to 100".into());
    }
    Ok(format!("{n}%").into_bytes())
}

/// A byte count as Redis writes one: digits and an optional unit, `b`,
/// `k` (1000), `kb` (1024), `m`, `mb`, `g`, `gb` (any case).
pub fn parse_memory(value: &[u8]) -> Option<u64> {
    let digits = value.iter().take_while(|b| b.is_ascii_digit()).count();
    if digits == 0 {
        return None;
    }
    let unit = value[digits..].to_ascii_lowercase();
    let scale: u64 = match unit.as_slice() {
        b"" | b"b" => 1,
        b"k" => 1000,
        b"kb" => 1024,
        b"m" => 1000 * 1000,
        b"mb" => 1024 * 1024,
        b"g" => 1000 * 1000 * 1000,
        b"gb" => 1024 * 1024 * 1024,
        _ => return None,
    };
    let n: u64 = std::str::from_utf8(&value[..digits]).ok()?.parse().ok()?;
    n.checked_mul(scale)
}

fn words(value: &[u8]) -> Result<Vec<&str>, String> {
    std::str::from_utf8(value)
        .map(|t| t.split_ascii_whitespace().collect())
        .map_err(|_| "argument is not valid text".to_string())
}

fn normalize_save(value: &[u8]) -> Result<Vec<u8>, String> {
    const INVALID: &str = "Invalid save parameters";
    let words = words(value).map_err(|_| INVALID.to_string())?;
    if words.len() % 2 == 1 {
        return Err(INVALID.into());
    }
    let mut out = Vec::with_capacity(words.len());
    for (j, w) in words.iter().enumerate() {
        let n: i64 = w.parse().map_err(|_| INVALID.to_string())?;
        if (j % 2 == 0 && n < 1) || n < 0 {
            return Err(INVALID.into());
        }
        out.push(n.to_string());
    }
    Ok(out.join(" ").into_bytes())
}

/// The groups of a `client-output-buffer-limit` value: (class, hard, soft,
/// seconds), `replica` spelled `slave` as Redis shows it.
fn output_classes(value: &[u8]) -> Result<Vec<(String, u64, u64, u64)>, String> {
    let words = words(value)?;
    if words.len() % 4 != 0 {
        return Err("Wrong number of arguments in buffer limit configuration.".into());
    }
    let mut classes = Vec::new();
    for group in words.chunks(4) {
        let class = match group[0].to_ascii_lowercase().as_str() {
            "normal" => "normal",
            "replica" | "slave" => "slave",
            "pubsub" => "pubsub",
            _ => {
                return Err("Invalid client class specified in buffer limit configuration.".into())
            }
        };
        let hard = parse_memory(group[1].as_bytes());
        let soft = parse_memory(group[2].as_bytes());
        let secs = group[3].parse::<u64>().ok();
        let (Some(hard), Some(soft), Some(secs)) = (hard, soft, secs) else {
            return Err(
                "Error in hard, soft or soft_seconds setting in buffer limit configuration.".into(),
            );
        };
        classes.push((class.to_string(), hard, soft, secs));
    }
    Ok(classes)
}

/// The classes `value` names replace those of `old`; the others stay.
fn normalize_output_limit(value: &[u8], old: &[u8]) -> Result<Vec<u8>, String> {
    let new = output_classes(value)?;
    let mut all = output_classes(old).unwrap_or_default();
    for class in new {
        match all.iter_mut().find(|c| c.0 == class.0) {
            Some(slot) => *slot = class,
            None => all.push(class),
        }
    }
    let text: Vec<String> = all
        .iter()
        .map(|(class, hard, soft, secs)| format!("{class} {hard} {soft} {secs}"))
        .collect();
    Ok(text.join(" ").into_bytes())
}

fn normalize_percentiles(value: &[u8]) -> Result<Vec<u8>, String> {
    let words = words(value)?;
    let mut out = Vec::with_capacity(words.len());
    for w in words {
        let p: f64 = w
            .parse()
            .ok()
            .filter(|p: &f64| p.is_finite())
            .ok_or("Invalid latency-tracking-info-percentiles parameters")?;
        if !(0.0..=100.0).contains(&p) {
            return Err(
                "latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"
                    .into(),
            );
        }
        out.push(p.to_string());
    }
    Ok(out.join(" ").into_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn settings() -> Settings {
        let mut startup = crate::config::Config::default().startup_values();
        startup.push(("port", "7000".into()));
        Settings::new(&startup, &[])
    }

    fn get(s: &Settings, name: &str) -> String {
        String::from_utf8(s.value(name).unwrap()).unwrap()
    }

    #[test]
    fn names_are_unique_and_defaults_are_valid() {
        let mut seen = std::collections::HashSet::new();
        for p in PARAMS {
            for n in std::iter::once(p.name).chain(p.alias) {
                assert!(seen.insert(n), "{n} twice");
                assert_eq!(n, n.to_ascii_lowercase());
            }
            if p.access == NoEffect {
                assert_eq!(
                    normalize(p.kind, p.default.as_bytes(), b"").unwrap(),
                    p.default.as_bytes(),
                    "{}",
                    p.name
                );
            }
        }
        let s = settings();
        assert_eq!(get(&s, "port"), "7000");
        assert_eq!(get(&s, "maxclients"), "10000");
    }

    #[test]
    fn memory_values_follow_redis() {
        assert_eq!(parse_memory(b"1"), Some(1));
        assert_eq!(parse_memory(b"1k"), Some(1000));
        assert_eq!(parse_memory(b"1KB"), Some(1024));
        assert_eq!(parse_memory(b"2mb"), Some(2 << 20));
        assert_eq!(parse_memory(b"3g"), Some(3_000_000_000));
        for bad in [&b""[..], b"-1", b"x", b"1x", b"1.5mb", b"kb", b" 1"] {
            assert_eq!(parse_memory(bad), None, "{bad:?}");
        }
        assert_eq!(parse_memory(b"99999999999999999999"), None);
    }

    #[test]
    fn set_is_all_or_nothing() {
        let s = settings();
        let e = s
            .set(&[(b"maxclients", b"5"), (b"maxmemory", b"bla")])
            .unwrap_err();
        assert_eq!(
            e,
            "CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"
        );
        assert_eq!(s.maxclients(), 10_000);
        s.set(&[(b"maxclients", b"5"), (b"MAXMEMORY", b"1mb")])
            .unwrap();
        assert_eq!(s.maxclients(), 5);
        assert_eq!(get(&s, "maxmemory"), "1048576");
    }

    #[test]
    fn output_limit_keeps_the_classes_it_does_not_name() {
        let s = settings();
        s.set(&[(b"client-output-buffer-limit", b"pubsub 1mb 2mb 3")])
            .unwrap();
        assert_eq!(
            get(&s, "client-output-buffer-limit"),
            format!(
                "normal {} 0 0 slave 268435456 67108864 60 pubsub 1048576 2097152 3",
                512 << 20
            )
        );
        assert_eq!(s.output_buffer_limit(), 512 << 20);
        assert_eq!(s.pubsub_limit(), [1 << 20, 2 << 20, 3]);
        s.set(&[(b"client-output-buffer-limit", b"normal 0 0 0")])
            .unwrap();
        assert_eq!(s.output_buffer_limit(), usize::MAX);
    }

    #[test]
    fn requirepass_is_live_and_binary() {
        // The default user's password itself is the ACL's (`acl/`);
        // CONFIG GET shows the value as set.
        let s = settings();
        s.set(&[(b"requirepass", b"abc\x00def")]).unwrap();
        assert_eq!(s.get(&[b"requirepass"])[0].1, b"abc\x00def");
    }
}
