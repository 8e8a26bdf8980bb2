//! `persimmon serve`: a RESP2/RESP3 server (the Redis protocol) over one
//! Persimmon pool, for unmodified Redis clients and tools (`redis-cli`,
//! `redis-benchmark`, client libraries, YCSB's Redis bindings).
//!
//! ```no_run
//! use persimmon_server::{Config, ServerHandle};
//!
//! let config = Config { pool: "/dev/shm/app.pool".into(), port: 0, ..Config::default() };
//! let server = ServerHandle::start(config)?;   // listens on a free port
//! println!("listening on {}", server.addr);
//! server.shutdown()?;                          // closes the pool cleanly
//! # Ok::<(), persimmon_server::ServerError>(())
//! ```
//!
//! Layers, outside in (each a module; a module imports only the ones
//! below it, so the imports form no loop):
//! - `server`: opens the pool, listens, applies protected mode and
//!   `maxclients`, handles SIGINT/SIGTERM/`SHUTDOWN`, closes the pool.
//!   `tls`: the TLS listener's handshakes, the stream type (plain or TLS)
//!   connections and replication links use, the `tls-*` settings.
//! - `conn`: one task per client: read, parse, execute, write; the query and
//!   output buffer limits; `idle`: the clients' cron (idle buffers given
//!   back). `pipeline`: a read's consecutive plain SETs run
//!   as one grouped engine write (group commit), its collection writes as
//!   one atomic unit (`unit_run`); `combiner`: the units of many
//!   connections' collection writes combined into one (flat combining);
//!   `runs`: a pipeline's run of requests.
//! - `commands`: the command table (one row per command) and dispatch;
//!   `commands/*`: the handlers, one module per group of commands.
//! - `session`: what a handler works with: the client's session, the error
//!   type, argument helpers, the engine calls every handler makes alike.
//! - `shared`: the state every connection shares (the pool, the config,
//!   counters, the client registry); `settings`: the run-time settings
//!   (`CONFIG GET`/`SET`); `cmdstats`: per-command and per-error counts;
//!   `blocking`: the clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN...),
//!   in the order they blocked, and how each learns its outcome;
//!   `pubsub`: channel and pattern subscriptions and how a published
//!   message reaches each subscriber's connection; `notify`: keyspace
//!   notifications (`notify-keyspace-events`), noted by the handlers and
//!   published once the command's writes are durable; the operators' views:
//!   `slowlog` (the slow log), `latency` (latency events), `monitor`
//!   (the `MONITOR` feed), `observe` (what they see of each command),
//!   `redact` (the arguments they hide), `pause`
//!   (`CLIENT PAUSE`).
//! - `protocol` (requests) and `reply` (RESP2/RESP3 replies); `config`;
//!   `config_rewrite` (CONFIG REWRITE into the TOML file).
//! - `repl`: replication (Redis's protocol): the write stream, its backlog,
//!   snapshots, a replica's feed, the link of a replica to its master.
//! - `value`: how Redis types are stored as engine values (type tag + body);
//!   `scan`: SCAN cursors; `glob`: MATCH patterns; `longdouble`: the x87
//!   extended precision INCRBYFLOAT and HINCRBYFLOAT compute in; `rdb`:
//!   Redis's `DUMP`/`RESTORE` payload format; `encoding`: the encoding Redis
//!   would give a value (`OBJECT ENCODING`, reporting only) and its
//!   thresholds; `random`: the random picks of SPOP, SRANDMEMBER,
//!   HRANDFIELD and RANDOMKEY.
//!
//! Durability: every command that writes returns only after the engine's
//! call returned, and the engine's writes are durable on return, so every
//! acknowledged write survives a crash of the server (and, on a DAX pool, a
//! power failure).

#![forbid(unsafe_code)]

mod acl;
mod blocking;
mod client;
mod clock;
mod cmdstats;
mod combiner;
mod commands;
mod config;
mod config_rewrite;
mod conn;
mod dispatch;
pub mod embedded;
mod encoding;
mod glob;
mod idle;
mod latency;
mod longdouble;
mod monitor;
mod notify;
mod observe;
mod pause;
mod pipeline;
mod pubsub;
mod redact;
mod repl;
mod runs;
mod scan;
mod script;
mod server;
mod session;
mod settings;
mod shared;
mod slowlog;
mod tls;
mod unit_run;

pub use config::{parse_bind, parse_size, Config, ConfigError, Limits, DEFAULT_PORT};
pub use persimmon_types::value::{MAX_STRING_BYTES, TAG_HASH, TAG_STRING};
pub use server::{run, Ready, ServerError, ServerHandle};
