//! Replication's shared state, in `Shared`: whether writes propagate, the
//! stream behind its lock, who this server follows and who follows it,
//! and the requests for a link to a master.
//!
//! Invariants:
//! - `active` goes from false to true once (the first backlog) and stays;
//!   while it is false, writes take no lock and append nothing.
//! - The state's `epoch` is bumped at every role change; a link task acts
//!   only while its epoch is current (`link.rs`).
//! - A link is requested (`request_link`) only once its backlog exists:
//!   what it applies is relayed into its own stream from the first byte.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::watch;

use super::stream::Stream;

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
    /// The epoch of the last `REPLICAOF host port` whose backlog is ready:
    /// the link supervisor (`link::supervise`) starts a link for each new
    /// one (0: none yet).
    follow: watch::Sender<u64>,
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
            follow: watch::channel(0).0,
        }
    }

    /// Asks the link supervisor to follow the master of `epoch`.
    pub fn request_link(&self, epoch: u64) {
        debug_assert!(epoch > 0, "epoch 0 names no role change");
        self.follow.send_replace(epoch);
    }

    /// The link requests, for the supervisor.
    pub fn link_requests(&self) -> watch::Receiver<u64> {
        self.follow.subscribe()
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
