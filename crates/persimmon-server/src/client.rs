//! What `CLIENT LIST` and `CLIENT INFO` show about a connection, and how
//! `CLIENT KILL` reaches it: one `ClientInfo` per connection, in the
//! server's registry, updated by the connection's own task.
//!
//! Invariants: every field but the name strings is an atomic that only the
//! connection's task writes (the registry's readers see a recent value,
//! never a torn one); `killed` goes from false to true once, and the
//! connection's task ends soon after it sees it.

use std::net::SocketAddr;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, AtomicUsize, Ordering};
use std::sync::Mutex;
use std::time::Instant;

/// What `CLIENT LIST` shows about a connection.
pub struct ClientInfo {
    pub id: u64,
    pub addr: SocketAddr,
    pub laddr: SocketAddr,
    pub fd: i32,
    pub created: Instant,
    pub name: Mutex<Vec<u8>>,
    pub lib_name: Mutex<Vec<u8>>,
    pub lib_ver: Mutex<Vec<u8>>,
    /// The user the connection is authenticated as (`CLIENT LIST`'s
    /// `user=`, `CLIENT KILL USER`, the clients `ACL DELUSER` closes).
    user: Mutex<String>,
    /// Milliseconds since server start of the last request.
    pub last_active_ms: AtomicU64,
    /// Index + 1 of the last command in the command table (0: none yet).
    pub last_command: AtomicUsize,
    pub resp: AtomicU8,
    /// Bytes of received requests not yet executed (the running one
    /// included), and the free room of the buffer they are in.
    pub query_buffer_bytes: AtomicUsize,
    pub query_buffer_free: AtomicUsize,
    /// The selected database (`CLIENT LIST` `db=`).
    pub db: AtomicUsize,
    /// The connection is a monitor (`MONITOR`; `CLIENT LIST` flag `O`).
    pub monitor: AtomicBool,
    /// Channels and patterns subscribed to (`CLIENT LIST` `sub=`, `psub=`).
    pub sub: AtomicUsize,
    pub psub: AtomicUsize,
    /// The connection is a replica's feed (after PSYNC/SYNC): Redis's
    /// client type `slave`.
    pub replica: AtomicBool,
    /// `CLIENT KILL` (or a pub/sub output limit) asked for the connection
    /// to close: set once, then `kill_notify` wakes the connection's task.
    killed: AtomicBool,
    /// The clients' cron (`idle.rs`) asks the idle connection to give its
    /// input buffer back; `kill_notify` wakes it for this too.
    release_input: AtomicBool,
    kill_notify: tokio::sync::Notify,
}

impl ClientInfo {
    /// A client that just connected from `addr` to `laddr` on socket `fd`
    /// (RESP2, no name, no command yet).
    pub fn new(id: u64, addr: SocketAddr, laddr: SocketAddr, fd: i32, now_ms: u64) -> ClientInfo {
        ClientInfo {
            id,
            addr,
            laddr,
            fd,
            created: Instant::now(),
            name: Mutex::new(Vec::new()),
            lib_name: Mutex::new(Vec::new()),
            lib_ver: Mutex::new(Vec::new()),
            user: Mutex::new("default".into()),
            last_active_ms: AtomicU64::new(now_ms),
            last_command: AtomicUsize::new(0),
            resp: AtomicU8::new(2),
            query_buffer_bytes: AtomicUsize::new(0),
            query_buffer_free: AtomicUsize::new(0),
            db: AtomicUsize::new(0),
            monitor: AtomicBool::new(false),
            sub: AtomicUsize::new(0),
            psub: AtomicUsize::new(0),
            replica: AtomicBool::new(false),
            killed: AtomicBool::new(false),
            release_input: AtomicBool::new(false),
            kill_notify: tokio::sync::Notify::new(),
        }
    }

    /// Asks the connection to close as soon as it can (it finishes the
    /// command it is running, sends nothing more, and closes).
    pub fn kill(&self) {
        self.killed.store(true, Ordering::Release);
        self.kill_notify.notify_one();
    }

    pub fn user_name(&self) -> String {
        self.user.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    pub fn set_user_name(&self, name: &str) {
        *self.user.lock().unwrap_or_else(|e| e.into_inner()) = name.to_string();
    }

    pub fn is_killed(&self) -> bool {
        self.killed.load(Ordering::Acquire)
    }

    /// Resolves once [`ClientInfo::kill`] has been called (at once if it
    /// was before). Only the connection's own task awaits this.
    pub async fn killed(&self) {
        while !self.is_killed() {
            self.kill_notify.notified().await;
        }
    }

    /// Asks the (idle) connection to give its input buffer back.
    pub fn request_release(&self) {
        self.release_input.store(true, Ordering::Release);
        self.kill_notify.notify_one();
    }

    /// Whether a release was asked for since the last call (clears it).
    pub fn take_release(&self) -> bool {
        self.release_input.swap(false, Ordering::AcqRel)
    }

    /// Resolves once the client is killed or asked to release its input
    /// buffer. Only the connection's own task awaits this.
    pub async fn attention(&self) {
        while !self.is_killed() && !self.release_input.load(Ordering::Acquire) {
            self.kill_notify.notified().await;
        }
    }

    /// Redis's client type: `slave` for a replica's feed, `pubsub` while
    /// subscribed to anything, else `normal` (CLIENT LIST, CLIENT KILL
    /// TYPE). A replica's link to its master is not a client here.
    pub fn client_type(&self) -> &'static str {
        if self.replica.load(Ordering::Relaxed) {
            "slave"
        } else if self.sub.load(Ordering::Relaxed) + self.psub.load(Ordering::Relaxed) > 0 {
            "pubsub"
        } else {
            "normal"
        }
    }
}
