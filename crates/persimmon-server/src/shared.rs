//! State the whole server shares: the key space (the open pool and its
//! databases, `persimmon_types::Keyspace`), the configuration (fixed at
//! startup) and the run-time settings (`CONFIG SET`), the counters for
//! `INFO`, the registry of connected clients (`CLIENT LIST`), the clients
//! blocked on keys, the SCAN snapshots, the operators' views (slow log,
//! latency events, monitors, client pause) and the shutdown signal.
//!
//! Invariants:
//! - `Shared` holds the key space, which owns the `Db`: the pool closes
//!   when the last `Arc<Shared>` goes (and every store and background
//!   task with it), which the listener arranges only after every
//!   connection task has ended (see `server.rs`).
//! - Every counter here is a relaxed atomic and only a statistic: no
//!   decision depends on reading one exactly. Connections add to them once
//!   per batch (their own `Counters` in between), so the workers do not
//!   fight over these cache lines on every command.
//! - Stopping is the key space's `closing` signal: it goes from false to
//!   true once and never back; long scans poll it so that shutdown does
//!   not wait for them.
//! - The limits, `requirepass` and `protected-mode` in `config` are the
//!   startup values only: what the server applies now is in `settings`.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::{AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Instant;

use persimmon_types::Keyspace;
use tokio::sync::watch;

use crate::blocking::Blocked;
use crate::client::ClientInfo;
use crate::clock::{fresh_id, unix_time};
use crate::cmdstats::CommandStats;
use crate::config::Config;
use crate::scan::ScanCache;
use crate::settings::Settings;

/// State every connection shares.
pub struct Shared {
    /// The pool and its databases (`keyspace.db`, `keyspace.dbs`).
    pub keyspace: Arc<Keyspace>,
    /// The configuration the server started with.
    pub config: Config,
    /// What `CONFIG GET` shows and `CONFIG SET` changes.
    pub settings: Settings,
    /// The users and their permissions (`acl/`).
    pub acl: crate::acl::Acl,
    pub config_file: Option<PathBuf>,
    pub local_addr: SocketAddr,
    pub started: Instant,
    /// 40 hex digits, new at every start (`run_id`, `master_replid`).
    pub run_id: String,
    pub stats: ServerStats,
    /// Per-command and per-error counts (`INFO commandstats`, `errorstats`).
    pub command_stats: CommandStats,
    pub clients: Mutex<BTreeMap<u64, Arc<ClientInfo>>>,
    pub connected: AtomicUsize,
    next_client_id: AtomicU64,
    pub scan: ScanCache,
    /// Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, ...).
    pub blocked: Blocked,
    /// The queue of runs of collection writes combined across
    /// connections (`combiner/`).
    pub combiner: crate::combiner::queue::Combiner,
    /// Channel and pattern subscriptions (`pubsub.rs`).
    pub pubsub: Arc<crate::pubsub::PubSub>,
    /// Replication: the write stream, replicas, the link to a master.
    pub repl: crate::repl::state::Replication,
    /// Lua scripts: the interpreter, its cache, the running script.
    pub scripts: crate::script::state::Scripts,
    /// `SLOWLOG` (`slowlog.rs`), `LATENCY` (`latency.rs`), `MONITOR`
    /// (`monitor.rs`), `CLIENT PAUSE` (`pause.rs`).
    pub slowlog: crate::slowlog::Slowlog,
    pub latency: crate::latency::Latency,
    pub monitors: Arc<crate::monitor::Monitors>,
    pub pause: crate::pause::Pause,
    /// The TLS configurations in force (`tls/`); `CONFIG SET` of a
    /// `tls-*` parameter replaces them.
    pub tls: Arc<crate::tls::TlsState>,
    shutdown: watch::Sender<bool>,
}

/// Server-wide counters for `INFO stats`. Connections add their own counts
/// once per batch of requests, not once per command.
#[derive(Default)]
pub struct ServerStats {
    pub total_connections_received: AtomicU64,
    pub rejected_connections: AtomicU64,
    pub total_commands_processed: AtomicU64,
    pub total_error_replies: AtomicU64,
    pub keyspace_hits: AtomicU64,
    pub keyspace_misses: AtomicU64,
    pub net_input_bytes: AtomicU64,
    pub net_output_bytes: AtomicU64,
    pub protocol_errors: AtomicU64,
    pub query_buffer_limit_disconnections: AtomicU64,
    pub output_buffer_limit_disconnections: AtomicU64,
    /// Reads from and writes to client sockets.
    pub reads_processed: AtomicU64,
    pub writes_processed: AtomicU64,
    /// Runs of a pipeline executed as one grouped engine write, and the
    /// commands they held (`pipeline.rs`).
    pub group_commit_runs: AtomicU64,
    pub group_commit_commands: AtomicU64,
    pub unit_runs: AtomicU64,
    pub unit_run_commands: AtomicU64,
    /// Units the combiner committed, and the runs they held.
    pub combined_units: AtomicU64,
    pub combined_runs: AtomicU64,
    /// Unix time in seconds of the last SAVE or BGSAVE (the start before
    /// any), for `LASTSAVE`; and how many there were.
    pub last_save: AtomicU64,
    pub saves: AtomicU64,
    pub aof_rewrites: AtomicU64,
    /// Largest `used_memory` INFO has reported.
    pub used_memory_peak: AtomicU64,
    /// `used_memory` as the `maxmemory` check last read it, and when
    /// (ms since start + 1; 0: never).
    pub used_memory_seen: AtomicU64,
    pub used_memory_seen_at: AtomicU64,
}

impl ServerStats {
    /// The counters `CONFIG RESETSTAT` zeroes (as Redis: not the time of
    /// the last save, nor the memory peak).
    pub fn resettable(&self) -> [&AtomicU64; 19] {
        [
            &self.total_connections_received,
            &self.rejected_connections,
            &self.total_commands_processed,
            &self.total_error_replies,
            &self.keyspace_hits,
            &self.keyspace_misses,
            &self.net_input_bytes,
            &self.net_output_bytes,
            &self.protocol_errors,
            &self.query_buffer_limit_disconnections,
            &self.output_buffer_limit_disconnections,
            &self.reads_processed,
            &self.writes_processed,
            &self.group_commit_runs,
            &self.group_commit_commands,
            &self.unit_runs,
            &self.unit_run_commands,
            &self.combined_units,
            &self.combined_runs,
        ]
    }
}

impl Shared {
    /// The state of a server that listens on `local_addr` over `keyspace`.
    pub fn new(
        keyspace: Arc<Keyspace>,
        config: Config,
        config_file: Option<PathBuf>,
        local_addr: SocketAddr,
        acl: crate::acl::Acl,
    ) -> Shared {
        let (shutdown, _) = watch::channel(false);
        let db = &keyspace.db;
        let facts = [
            // `port 0` beside a `tls-port`: no plain listener, as in Redis.
            (
                "port",
                match config.port == 0 && config.tls_port != 0 {
                    true => "0".to_string(),
                    false => local_addr.port().to_string(),
                },
            ),
            ("durability", db.durability().name().to_string()),
            (
                "ordered-index",
                if db.has_ordered_index() { "yes" } else { "no" }.to_string(),
            ),
            ("point-index", db.point_index().name().to_string()),
        ];
        let mut startup = config.startup_values();
        startup.extend(facts);
        let settings = Settings::new(&startup, &config.settings);
        let tls = Arc::new(crate::tls::TlsState::default());
        let hook_tls = tls.clone();
        settings.on_tls_change(Box::new(move |value| hook_tls.configure(value)));
        let started_unix = unix_time().as_secs();
        let stats = ServerStats::default();
        stats.last_save.store(started_unix, Ordering::Relaxed);
        Shared {
            blocked: Blocked::new(keyspace.waiters.clone()),
            combiner: Default::default(),
            keyspace,
            config,
            settings,
            acl,
            config_file,
            local_addr,
            started: Instant::now(),
            run_id: fresh_id(&local_addr.to_string()),
            stats,
            command_stats: CommandStats::default(),
            clients: Mutex::new(BTreeMap::new()),
            connected: AtomicUsize::new(0),
            next_client_id: AtomicU64::new(1),
            scan: ScanCache::default(),
            pubsub: Arc::default(),
            repl: crate::repl::state::Replication::new(),
            scripts: Default::default(),
            slowlog: Default::default(),
            latency: Default::default(),
            monitors: Arc::default(),
            pause: Default::default(),
            tls,
            shutdown,
        }
    }

    /// A fresh client id (ids start at 1 and are never reused).
    pub fn next_client_id(&self) -> u64 {
        self.next_client_id.fetch_add(1, Ordering::Relaxed)
    }

    /// Asks the server to stop (SIGINT, SIGTERM, `SHUTDOWN`, a handle).
    pub fn request_shutdown(&self) {
        self.keyspace.close();
        self.shutdown.send_replace(true);
    }

    pub fn shutdown_signal(&self) -> watch::Receiver<bool> {
        self.shutdown.subscribe()
    }

    pub fn is_stopping(&self) -> bool {
        self.keyspace.is_closing()
    }

    /// Milliseconds since the server started.
    pub fn now_ms(&self) -> u64 {
        self.started.elapsed().as_millis() as u64
    }
}
