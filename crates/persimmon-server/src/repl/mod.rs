//! Replication, Redis's protocol: a master propagates every write to a
//! stream its replicas follow (`stream`, `backlog`), serves `PSYNC`/`SYNC`
//! with a snapshot in RDB form or from the backlog (`feed`, `snapshot`);
//! a replica follows a master — Persimmon or redis-server — through a link
//! task (`link`) that loads the master's RDB (`load`) and applies its
//! stream as the master client. `WAIT` counts the replicas whose
//! acknowledged offset reached a client's last write (`wait`).
//!
//! The one ordering rule: every command that may write (and EXEC, and a
//! blocked client's own re-check) runs holding the stream's lock
//! ([`Replication::turn`]) from before its engine call until its
//! propagation is appended, whenever a backlog exists. So the stream holds
//! the writes in the order they took effect, and a snapshot taken holding
//! the same lock is exactly the data at its offset (writers wait while it
//! is taken; reads go on). While no backlog exists (no replica ever
//! attached, and this server never was a replica) writes take no lock and
//! append nothing: one atomic load per write.
//!
//! Invariants:
//! - The stream's offset names the same data on a master and each of its
//!   replicas: a replica relays its master's bytes verbatim into its own
//!   stream after applying them, so its offset is the master's, and its
//!   own replicas can chain or, after a promotion, continue (psync2).
//! - A replica acknowledges an offset only after every write up to it
//!   returned from the engine (durable).
//! - Role changes (`REPLICAOF`) bump the link's epoch; a link task whose
//!   epoch is no longer current stops at its next step and changes nothing
//!   after that (it checks the epoch under the state lock before loading
//!   or applying).

pub mod backlog;
pub mod expiry;
pub mod feed;
pub mod info;
pub mod link;
pub mod load;
pub mod snapshot;
pub mod stream;
pub mod wait;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

pub use stream::{ClientRepl, Stream};

/// The replication state of a server, in `Shared`.
pub struct Replication {
    /// A backlog exists: writes propagate (see the module header).
    active: AtomicBool,
    /// This server follows a master.
    replica: AtomicBool,
    pub stream: Mutex<Stream>,
    pub state: Mutex<State>,
    /// Woken when a replica acknowledges an offset (WAIT).
    pub acked: tokio::sync::Notify,
    /// Synchronisations served (`INFO stats`).
    pub syncs: Syncs,
}

/// Counts of the synchronisations a master served.
#[derive(Default)]
pub struct Syncs {
    pub full: std::sync::atomic::AtomicU64,
    pub partial_ok: std::sync::atomic::AtomicU64,
    pub partial_err: std::sync::atomic::AtomicU64,
}

/// Who this server follows and who follows it.
#[derive(Default)]
pub struct State {
    /// `Some`: this server is a replica of that master.
    pub master: Option<Link>,
    /// The replicas attached, by client id.
    pub replicas: BTreeMap<u64, Peer>,
    /// Bumped at every role change.
    pub epoch: u64,
}

/// The link to a master, as `INFO` and `ROLE` show it.
pub struct Link {
    pub host: String,
    pub port: u16,
    pub status: LinkStatus,
    pub last_io: Instant,
    pub sync_in_progress: bool,
    /// Bytes of the master's stream read (applied or not).
    pub read_offset: u64,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LinkStatus {
    Connect,
    Connecting,
    Sync,
    Connected,
}

impl LinkStatus {
    /// ROLE's word for the state.
    pub fn role_word(self) -> &'static str {
        match self {
            LinkStatus::Connect => "connect",
            LinkStatus::Connecting => "connecting",
            LinkStatus::Sync => "sync",
            LinkStatus::Connected => "connected",
        }
    }
}

/// An attached replica.
pub struct Peer {
    pub ip: String,
    pub port: u16,
    /// `wait_bgsave`, `send_bulk` or `online`.
    pub state: &'static str,
    pub ack: u64,
    pub last_ack: Instant,
}

impl Default for Replication {
    fn default() -> Self {
        Replication::new()
    }
}

impl Replication {
    pub fn new() -> Replication {
        Replication {
            active: AtomicBool::new(false),
            replica: AtomicBool::new(false),
            stream: Mutex::new(Stream::new()),
            state: Mutex::new(State::default()),
            acked: tokio::sync::Notify::new(),
            syncs: Syncs::default(),
        }
    }

    pub fn is_active(&self) -> bool {
        self.active.load(Ordering::Acquire)
    }

    pub fn is_replica(&self) -> bool {
        self.replica.load(Ordering::Acquire)
    }

    /// The stream's lock (see the module header). A poisoned lock is taken
    /// anyway: the stream's state is updated by plain assignments, never
    /// left half-changed by a panic in between.
    pub fn lock_stream(&self) -> MutexGuard<'_, Stream> {
        self.stream.lock().unwrap_or_else(|e| e.into_inner())
    }

    pub fn lock_state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// The stream's lock when replication is on (a write's turn).
    pub fn turn(&self) -> Option<MutexGuard<'_, Stream>> {
        self.is_active().then(|| self.lock_stream())
    }

    /// Creates the backlog (once) and turns propagation on; called holding
    /// the stream's lock.
    pub fn activate(&self, stream: &mut Stream, backlog_size: usize) {
        stream.ensure_backlog(backlog_size);
        self.active.store(true, Ordering::Release);
    }

    pub(crate) fn set_replica(&self, on: bool) {
        self.replica.store(on, Ordering::Release);
    }
}

/// Appends what a command collected in `pending` to the stream (wrapped
/// in MULTI/EXEC for a transaction of more than one write) and returns the
/// stream's offset after it; clears `pending` whatever happens. A replica
/// propagates nothing of its own clients (only its master's bytes).
pub fn flush(stream: &mut Stream, pending: &mut ClientRepl, transaction: bool, replica: bool) {
    let cmds = std::mem::take(&mut pending.cmds);
    pending.rewritten = false;
    if cmds.is_empty() || replica || pending.from_master {
        return;
    }
    let wrap = transaction && cmds.len() > 1;
    if wrap {
        stream.command(cmds[0].0, &[b"MULTI".to_vec()]);
    }
    for (db, args) in &cmds {
        stream.command(*db, args);
    }
    if wrap {
        stream.command_anywhere(&[b"EXEC".to_vec()]);
    }
    pending.last_offset = stream.offset;
}

/// A new replication id: 40 hex digits, from the process, the clock and a
/// counter (ids need to be unique, not secret).
pub fn new_replid() -> String {
    static COUNTER: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    let seed = format!(
        "{}:{}:{:?}:{}",
        std::process::id(),
        crate::shared::unix_time().as_nanos(),
        Instant::now(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let a = xxhash_rust::xxh3::xxh3_128(seed.as_bytes());
    let b = xxhash_rust::xxh3::xxh3_64_with_seed(seed.as_bytes(), 21);
    format!("{a:032x}{:08x}", b as u32)
}

/// The backlog size setting (`repl-backlog-size`).
pub fn backlog_size(shared: &crate::shared::Shared) -> usize {
    shared
        .settings
        .value("repl-backlog-size")
        .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<usize>().ok())
        .unwrap_or(1 << 20)
}

/// Whether a client's write must be refused: a read-only replica
/// (`replica-read-only yes`, the default).
pub fn refuses_writes(shared: &crate::shared::Shared) -> bool {
    shared.repl.is_replica()
        && shared
            .settings
            .value("replica-read-only")
            .is_none_or(|v| v.eq_ignore_ascii_case(b"yes"))
}

/// Starts replication's background work: the link to the configured
/// master (`replicaof`), and the master's PING to its replicas every
/// `repl-ping-replica-period` seconds (so an idle link stays alive and
/// replicas see their master; redis-server replicas drop a master silent
/// for `repl-timeout`).
pub fn spawn(shared: &std::sync::Arc<crate::shared::Shared>) {
    if let Some((host, port)) = shared.config.replicaof.clone() {
        let step = link::start(shared, host, port);
        link::finish_now(shared, step);
    }
    let weak = std::sync::Arc::downgrade(shared);
    tokio::spawn(async move {
        let mut ticks = 0u64;
        loop {
            tokio::time::sleep(std::time::Duration::from_millis(100)).await;
            let Some(shared) = weak.upgrade() else { return };
            if shared.is_stopping() {
                return;
            }
            if shared.repl.is_active() && !shared.repl.is_replica() {
                tokio::task::block_in_place(|| propagate_expiries(&shared));
            }
            ticks += 1;
            if !ticks.is_multiple_of(10) {
                continue;
            }
            let period = shared
                .settings
                .value("repl-ping-replica-period")
                .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok())
                .unwrap_or(10)
                .max(1);
            let idle_master =
                !shared.repl.is_replica() && !shared.repl.lock_state().replicas.is_empty();
            if idle_master && (ticks / 10).is_multiple_of(period) {
                if let Some(mut stream) = shared.repl.turn() {
                    stream.command_anywhere(&[b"PING".to_vec()]);
                }
            }
        }
    });
}

/// Whether `min-replicas-to-write` replicas acknowledged within
/// `min-replicas-max-lag` seconds (a replica never refuses its master's
/// writes on that account).
pub fn enough_replicas(shared: &crate::shared::Shared) -> bool {
    if shared.repl.is_replica() {
        return true;
    }
    let number = |name: &str| {
        shared
            .settings
            .value(name)
            .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<u64>().ok())
            .unwrap_or(0)
    };
    let (min, lag) = (
        number("min-replicas-to-write"),
        number("min-replicas-max-lag"),
    );
    let good = shared
        .repl
        .lock_state()
        .replicas
        .values()
        .filter(|p| p.state == "online" && p.last_ack.elapsed().as_secs() <= lag)
        .count() as u64;
    good >= min
}

/// One pass of `expiry`: a `DEL` for each key whose noted deadline passed
/// and that is gone from the master.
fn propagate_expiries(shared: &std::sync::Arc<crate::shared::Shared>) {
    use expiry::Now;
    let Some(mut stream) = shared.repl.turn() else {
        return;
    };
    let now = shared.keyspace.db.now_ms();
    let due = stream.deadlines.due(now);
    if due.is_empty() {
        return;
    }
    let _map = shared.keyspace.dbs.shared();
    let mut store = persimmon_types::store::Store::new(shared.keyspace.clone());
    for (db, key) in due {
        match expiry::look(&mut store, db, &key) {
            Now::Gone => stream.command(db, &[b"DEL".to_vec(), key]),
            Now::ExpiresAt(at) => stream.deadlines.add(at.max(now + 1), db, &key),
            Now::Persistent => {}
        }
    }
}
