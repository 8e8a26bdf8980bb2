//! The listener: opens the pool, accepts clients, enforces the connection
//! limits (protected mode, `maxclients`), and shuts down cleanly.
//!
//! Invariants:
//! - The pool is opened before the first client is accepted and closed
//!   (the `Db` dropped) only after every connection task has ended: the
//!   runtime is shut down first (every task dropped at its next await point;
//!   no engine call is ever in flight across an await, so no write is cut in
//!   half), then the last `Arc<Shared>` goes and the `Db` with it.
//! - A rejected connection (protected mode, `maxclients`) gets its one error
//!   line and is closed; it never reaches the command loop and is not counted
//!   as connected. Both limits are the run-time settings (`CONFIG SET`
//!   changes them for the connections accepted after it); the open-file
//!   limit is raised for `maxclients` only at startup.
//! - A client of the TLS port (`tls-port`) is counted and registered like
//!   any other once accepted; its handshake runs in its own task (see
//!   `tls/accept.rs`), so no client holds up the accept loop.

use std::net::SocketAddr;
use std::path::PathBuf;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use persimmon::Db;
use persimmon_types::Keyspace;
use tokio::io::AsyncWriteExt;
use tokio::net::{TcpListener, TcpStream};

use crate::client::ClientInfo;
use crate::config::Config;
use crate::shared::Shared;
use crate::tls::Stream;

/// What the server tells its caller once it listens.
#[derive(Clone, Debug)]
pub struct Ready {
    /// The plain listener's address (the TLS one's when there is none).
    pub addr: SocketAddr,
    /// The TLS listener's address (`tls-port`).
    pub tls_addr: Option<SocketAddr>,
    pub pool: PathBuf,
    pub durability: persimmon::Durability,
}

impl std::fmt::Display for Ready {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let tls = match self.tls_addr {
            Some(a) if a == self.addr => " (TLS)".to_string(),
            Some(a) => format!(", TLS on {a}"),
            None => String::new(),
        };
        write!(
            f,
            "listening on {}{tls} (pool {}, durability {}: an acknowledged write survives {})",
            self.addr,
            self.pool.display(),
            self.durability.name(),
            self.durability.survives()
        )
    }
}

/// Why the server could not run.
#[derive(Debug, thiserror::Error)]
pub enum ServerError {
    #[error("{0}")]
    Config(String),
    #[error(transparent)]
    Engine(#[from] persimmon::Error),
    #[error("cannot listen on {addr}: {source}")]
    Bind {
        addr: SocketAddr,
        source: std::io::Error,
    },
    #[error("cannot start the runtime: {0}")]
    Runtime(std::io::Error),
    #[error("cannot install the signal handlers: {0}")]
    Signals(std::io::Error),
}

/// Runs the server until SIGINT, SIGTERM or `SHUTDOWN`: opens the pool,
/// listens, calls `ready` once, serves, then closes the pool cleanly.
pub fn run(
    config: Config,
    config_file: Option<PathBuf>,
    ready: impl FnOnce(&Ready),
) -> Result<(), ServerError> {
    run_with(config, config_file, true, |r, _| ready(r))
}

/// [`run`] with a hook that gets the shared state (to stop the server from
/// another thread) and a switch for the signal handlers.
pub(crate) fn run_with(
    config: Config,
    config_file: Option<PathBuf>,
    handle_signals: bool,
    ready: impl FnOnce(&Ready, &Arc<Shared>),
) -> Result<(), ServerError> {
    config.validate().map_err(ServerError::Config)?;
    let options = config.engine_options().map_err(ServerError::Config)?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(config.worker_threads)
        .thread_name("persimmon-serve")
        // A connection waits for durability before it sends its replies
        // (`conn.rs`), not inside each engine call: the worker runs other
        // connections while the log syncs, and they share its sync.
        .on_thread_start(|| persimmon::defer_durability_waits(true))
        .enable_all()
        .build()
        .map_err(ServerError::Runtime)?;
    let db = Db::open(&config.pool, options)?;
    let keyspace = Keyspace::new(db, config.databases).map_err(|e| ServerError::Config(e.0))?;
    // `port 0` beside a `tls-port`: TLS only, as in Redis.
    let plain_port = (config.port != 0 || config.tls_port == 0).then_some(config.port);
    let tls_port = (config.tls_port != 0).then_some(config.tls_port);
    let plain = bind(&runtime, config.bind, plain_port)?;
    let tls = bind(&runtime, config.bind, tls_port)?;
    let listening = |l: &Option<(TcpListener, SocketAddr)>| l.as_ref().map(|(_, a)| *a);
    let tls_addr = listening(&tls);
    let local_addr = listening(&plain)
        .or(tls_addr)
        .unwrap_or(SocketAddr::new(config.bind, 0));
    raise_fd_limit(config.limits.maxclients);
    let acl = crate::acl::Acl::from_config(&config, &crate::commands::table::COMMANDS)
        .map_err(ServerError::Config)?;
    let shared = Arc::new(Shared::new(
        Arc::new(keyspace),
        config,
        config_file,
        local_addr,
        acl,
    ));
    shared
        .tls
        .configure(&|name| shared.settings.text(name))
        .map_err(|e| ServerError::Config(format!("TLS: {e}")))?;
    persimmon_types::coll::reclaim::spawn(&shared.keyspace);
    crate::notify::listen_for_expiry(&shared);
    let result = runtime.block_on(async {
        let signals = if handle_signals {
            Some(Signals::install().map_err(ServerError::Signals)?)
        } else {
            None
        };
        let info = Ready {
            addr: local_addr,
            tls_addr,
            pool: shared.config.pool.clone(),
            durability: shared.keyspace.db.durability(),
        };
        ready(&info, &shared);
        crate::repl::link::supervise(&shared);
        crate::repl::upkeep::spawn(&shared);
        crate::combiner::spawn(&shared);
        crate::idle::spawn(&shared);
        let listeners = [plain.map(|l| l.0), tls.map(|l| l.0)];
        accept_loop(&shared, listeners, signals).await;
        Ok(())
    });
    // Every connection task is dropped here; blocking work (a long KEYS or
    // FLUSHDB) notices `stopping` and ends early.
    drop(runtime);
    close_pool(shared);
    result
}

/// Drops the last reference to the shared state, which closes the pool.
fn close_pool(shared: Arc<Shared>) {
    let mut shared = shared;
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match Arc::try_unwrap(shared) {
            Ok(inner) => {
                drop(inner);
                return;
            }
            Err(still_shared) if Instant::now() < deadline => {
                shared = still_shared;
                std::thread::sleep(Duration::from_millis(10));
            }
            Err(_) => {
                eprintln!(
                    "persimmon: a connection did not end in time; the pool is closed at exit"
                );
                return;
            }
        }
    }
}

struct Signals {
    interrupt: tokio::signal::unix::Signal,
    terminate: tokio::signal::unix::Signal,
}

impl Signals {
    fn install() -> std::io::Result<Signals> {
        use tokio::signal::unix::{signal, SignalKind};
        Ok(Signals {
            interrupt: signal(SignalKind::interrupt())?,
            terminate: signal(SignalKind::terminate())?,
        })
    }

    async fn recv(signals: &mut Option<Signals>) -> &'static str {
        match signals {
            Some(s) => tokio::select! {
                _ = s.interrupt.recv() => "SIGINT",
                _ = s.terminate.recv() => "SIGTERM",
            },
            None => std::future::pending().await,
        }
    }
}

/// Binds a listener on `port` (none when `None`).
fn bind(
    runtime: &tokio::runtime::Runtime,
    ip: std::net::IpAddr,
    port: Option<u16>,
) -> Result<Option<(TcpListener, SocketAddr)>, ServerError> {
    let Some(port) = port else { return Ok(None) };
    let addr = SocketAddr::new(ip, port);
    let listener = runtime
        .block_on(async { TcpListener::bind(addr).await })
        .map_err(|source| ServerError::Bind { addr, source })?;
    let local = listener.local_addr().unwrap_or(addr);
    Ok(Some((listener, local)))
}

/// Accepts on the plain listener (`[0]`) and the TLS one (`[1]`).
async fn accept_loop(
    shared: &Arc<Shared>,
    listeners: [Option<TcpListener>; 2],
    mut signals: Option<Signals>,
) {
    let mut stop = shared.shutdown_signal();
    let [plain, tls] = listeners;
    loop {
        let (accepted, is_tls) = tokio::select! {
            biased;
            name = Signals::recv(&mut signals) => {
                eprintln!("persimmon: {name} received, closing the pool");
                shared.request_shutdown();
                return;
            }
            _ = stop.wait_for(|&s| s) => return,
            accepted = accept_on(plain.as_ref()) => (accepted, false),
            accepted = accept_on(tls.as_ref()) => (accepted, true),
        };
        match accepted {
            Ok((stream, peer)) => admit(shared, stream, peer, is_tls),
            Err(e) => {
                // Out of file descriptors and the like: not fatal; wait
                // a moment so the loop does not spin.
                eprintln!("persimmon: accept failed: {e}");
                tokio::time::sleep(Duration::from_millis(50)).await;
            }
        }
    }
}

/// The next connection on `listener`; never, without one.
async fn accept_on(listener: Option<&TcpListener>) -> std::io::Result<(TcpStream, SocketAddr)> {
    match listener {
        Some(l) => l.accept().await,
        None => std::future::pending().await,
    }
}

/// Applies protected mode and `maxclients`, then starts the client's task
/// (which, on the TLS port, runs the handshake first).
fn admit(shared: &Arc<Shared>, stream: TcpStream, peer: SocketAddr, is_tls: bool) {
    shared
        .stats
        .total_connections_received
        .fetch_add(1, Ordering::Relaxed);
    let _ = stream.set_nodelay(true);
    let settings = &shared.settings;
    let loopback = peer.ip().is_loopback()
        || matches!(peer.ip(), std::net::IpAddr::V6(v6) if v6.to_ipv4_mapped().is_some_and(|v4| v4.is_loopback()));
    let remote = !loopback || shared.config.treat_loopback_as_remote;
    if settings.protected_mode() && !shared.acl.auth_required() && remote {
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        tokio::spawn(reject(
            shared.clone(),
            stream,
            is_tls,
            PROTECTED_MODE_MESSAGE,
        ));
        return;
    }
    // Count this client before checking, so two racing accepts cannot both
    // take the last place.
    let connected = shared.connected.fetch_add(1, Ordering::AcqRel) + 1;
    if connected > settings.maxclients() {
        shared.connected.fetch_sub(1, Ordering::AcqRel);
        shared
            .stats
            .rejected_connections
            .fetch_add(1, Ordering::Relaxed);
        tokio::spawn(reject(
            shared.clone(),
            stream,
            is_tls,
            "-ERR max number of clients reached\r\n",
        ));
        return;
    }
    let id = shared.next_client_id();
    let laddr = stream.local_addr().unwrap_or(shared.local_addr);
    let fd = std::os::fd::AsRawFd::as_raw_fd(&stream);
    let info = Arc::new(ClientInfo::new(id, peer, laddr, fd, shared.now_ms()));
    shared
        .clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .insert(id, info.clone());
    let guard = Registered {
        shared: shared.clone(),
        id,
    };
    tokio::spawn(async move {
        let Some(stream) = secure(&guard.shared, stream, is_tls).await else {
            return;
        };
        crate::conn::serve_client(guard.shared.clone(), stream, info).await;
        drop(guard);
    });
}

/// Removes a client from the registry and the count when its task ends
/// (also when the task is dropped at shutdown).
struct Registered {
    shared: Arc<Shared>,
    id: u64,
}

impl Drop for Registered {
    fn drop(&mut self) {
        self.shared
            .clients
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(&self.id);
        self.shared.connected.fetch_sub(1, Ordering::AcqRel);
    }
}

const PROTECTED_MODE_MESSAGE: &str = "-DENIED Persimmon is running in protected mode because \
protected mode is enabled and no password is set for the default user. In this mode \
connections are only accepted from the loopback interface. If you want to connect from \
external computers, either 1) set a password: `persimmon serve --requirepass PASSWORD` \
(or `requirepass` in the config file), which is the recommended way, or 2) disable \
protected mode by setting `protected-mode = false` in the config file, if you are sure \
that only trusted hosts can reach the port.\r\n";

/// Writes one error line to a rejected client and closes it.
/// On the TLS port, after the handshake, so the client can read it.
async fn reject(shared: Arc<Shared>, stream: TcpStream, is_tls: bool, line: &'static str) {
    let Some(mut stream) = secure(&shared, stream, is_tls).await else {
        return;
    };
    let _ = tokio::time::timeout(Duration::from_secs(1), async {
        let _ = stream.write_all(line.as_bytes()).await;
        let _ = stream.shutdown().await;
    })
    .await;
}

/// The connection's stream: the socket itself, or on the TLS port the TLS
/// stream once the handshake (with the configuration in force now)
/// succeeded; `None` when it failed.
async fn secure(shared: &Shared, stream: TcpStream, is_tls: bool) -> Option<Stream> {
    if !is_tls {
        return Some(Stream::Plain(stream));
    }
    let acceptor = shared.tls.acceptor()?;
    crate::tls::accept(shared.tls.failures(), acceptor, stream).await
}

/// Raises the soft open-file limit to what `maxclients` needs (as Redis
/// does), as far as the hard limit allows; warns when it still falls short.
fn raise_fd_limit(maxclients: usize) {
    use rustix::process::{getrlimit, setrlimit, Resource, Rlimit};
    let want = maxclients as u64 + 32;
    let limit = getrlimit(Resource::Nofile);
    let soft = limit.current.unwrap_or(u64::MAX);
    if soft >= want {
        return;
    }
    let hard = limit.maximum.unwrap_or(u64::MAX);
    let raised = want.min(hard);
    if raised > soft
        && setrlimit(
            Resource::Nofile,
            Rlimit {
                current: Some(raised),
                maximum: limit.maximum,
            },
        )
        .is_ok()
        && raised >= want
    {
        return;
    }
    let have = raised.max(soft);
    eprintln!(
        "persimmon: warning: the open-file limit is {have}, so at most about {} clients can \
         connect (maxclients is {maxclients}); raise the hard limit (ulimit -Hn) to allow more",
        have.saturating_sub(32)
    );
}

/// A server running on its own thread (for tests and embedding). Dropping
/// the handle stops the server and waits for the pool to close.
pub struct ServerHandle {
    pub addr: SocketAddr,
    /// Weak: the handle must not keep the pool open.
    shared: std::sync::Weak<Shared>,
    thread: Option<std::thread::JoinHandle<Result<(), ServerError>>>,
}

impl ServerHandle {
    /// Starts a server on a thread of its own (no signal handlers); returns
    /// once it listens. Use port 0 for a free port.
    pub fn start(config: Config) -> Result<ServerHandle, ServerError> {
        ServerHandle::start_with_config_file(config, None)
    }

    /// [`ServerHandle::start`] for a configuration read from `config_file`
    /// (the file `CONFIG REWRITE` writes to).
    pub fn start_with_config_file(
        config: Config,
        config_file: Option<PathBuf>,
    ) -> Result<ServerHandle, ServerError> {
        let (tx, rx) = std::sync::mpsc::channel();
        let thread = std::thread::Builder::new()
            .name("persimmon-server".into())
            .spawn(move || {
                run_with(config, config_file, false, |ready, shared| {
                    let _ = tx.send((ready.addr, Arc::downgrade(shared)));
                })
            })
            .map_err(ServerError::Runtime)?;
        match rx.recv() {
            Ok((addr, shared)) => Ok(ServerHandle {
                addr,
                shared,
                thread: Some(thread),
            }),
            Err(_) => Err(match thread.join() {
                Ok(Err(e)) => e,
                Ok(Ok(())) => ServerError::Config("server stopped before listening".into()),
                Err(_) => ServerError::Config("server thread panicked".into()),
            }),
        }
    }

    /// Whether the server has been asked to stop (for example by `SHUTDOWN`).
    pub fn is_stopping(&self) -> bool {
        self.shared.upgrade().is_none_or(|s| s.is_stopping())
    }

    /// Stops the server and waits until the pool is closed.
    pub fn shutdown(mut self) -> Result<(), ServerError> {
        if let Some(s) = self.shared.upgrade() {
            s.request_shutdown();
        }
        self.join_thread()
    }

    /// Waits until the server stops by itself (`SHUTDOWN`).
    pub fn join(mut self) -> Result<(), ServerError> {
        self.join_thread()
    }

    fn join_thread(&mut self) -> Result<(), ServerError> {
        match self.thread.take() {
            Some(t) => t
                .join()
                .unwrap_or_else(|_| Err(ServerError::Config("server thread panicked".into()))),
            None => Ok(()),
        }
    }
}

impl Drop for ServerHandle {
    fn drop(&mut self) {
        if self.thread.is_some() {
            if let Some(s) = self.shared.upgrade() {
                s.request_shutdown();
            }
            let _ = self.join_thread();
        }
    }
}
