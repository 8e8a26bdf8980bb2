//! The replica's side: the link task that follows a master (`REPLICAOF
//! host port`, the `replicaof` config key). It connects, handshakes as a
//! Redis replica does (`PING`, `REPLCONF listening-port`, `REPLCONF capa
//! eof capa psync2`, `PSYNC id offset`), loads the snapshot of a full
//! resynchronisation (`load`) or continues from its offset, then applies
//! the master's stream as the master client: no replies, `REPLCONF
//! GETACK` answered with `REPLCONF ACK <offset>`, an ACK every second.
//! After a broken link it reconnects and asks `PSYNC <replid> <offset+1>`
//! (a partial resynchronisation when the master's backlog still has it).
//!
//! Invariants:
//! - Every command of the stream is applied (through `execute`, durable on
//!   return) before its bytes are relayed into this server's own stream and
//!   counted in its offset; acknowledgements report that offset, so an
//!   acknowledged offset is durable here.
//! - The task stops, changing nothing more, once its epoch is no longer
//!   the state's (REPLICAOF elsewhere, or NO ONE): it checks before the
//!   load and before each batch it applies.
//! - With `tls-replication yes` the link speaks TLS (`tls/`): the master's
//!   certificate is checked against the CA for the master's host name or
//!   address, and this side presents its client certificate.
//! - Bad input from the master (a protocol error, a damaged snapshot)
//!   ends the connection and the task tries again later; it never panics.

use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use persimmon_resp::{encode, ParseLimits, Progress, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::TcpStream;

use super::state::LinkStatus;
use crate::commands::table::COMMANDS;
use crate::dispatch::execute;
use crate::session::Session;
use crate::shared::Shared;
use crate::tls::Stream;

/// How long the link waits for the master before it gives up on a
/// connection (Redis's `repl-timeout`).
const TIMEOUT: Duration = Duration::from_secs(60);
/// Between connection attempts.
const RETRY: Duration = Duration::from_secs(1);

/// Starts the link supervisor: for every link requested (a `REPLICAOF
/// host port` finished, see `role.rs`) it starts the link task of that
/// epoch. It ends when the server stops.
pub fn supervise(shared: &Arc<Shared>) {
    let mut requests = shared.repl.link_requests();
    let mut stop = shared.shutdown_signal();
    let weak = Arc::downgrade(shared);
    tokio::spawn(async move {
        loop {
            let epoch = *requests.borrow_and_update();
            if epoch > 0 {
                let Some(shared) = weak.upgrade() else { return };
                tokio::spawn(run(shared, epoch));
            }
            tokio::select! {
                changed = requests.changed() => if changed.is_err() { return },
                _ = stop.changed() => return,
            }
        }
    });
}

fn current(shared: &Shared, epoch: u64) -> bool {
    shared.repl.lock_state().epoch == epoch
}

fn set_status(shared: &Shared, epoch: u64, f: impl FnOnce(&mut super::state::Link)) {
    let mut st = shared.repl.lock_state();
    if st.epoch == epoch {
        if let Some(link) = st.master.as_mut() {
            f(link);
        }
    }
}

async fn run(shared: Arc<Shared>, epoch: u64) {
    let mut session = master_session(&shared);
    while current(&shared, epoch) && !shared.is_stopping() {
        set_status(&shared, epoch, |l| l.status = LinkStatus::Connecting);
        if let Err(e) = follow(&shared, epoch, &mut session).await {
            if current(&shared, epoch) {
                eprintln!("persimmon: replication link: {e}");
            }
        }
        set_status(&shared, epoch, |l| {
            l.status = LinkStatus::Connect;
            l.sync_in_progress = false;
        });
        tokio::time::sleep(RETRY).await;
    }
}

/// The session the master's stream runs in.
fn master_session(shared: &Arc<Shared>) -> Session {
    let mut s = Session::internal(shared, &COMMANDS);
    s.repl.from_master = true;
    s
}

/// A connection to the master.
struct Conn {
    socket: Stream,
    input: BytesMut,
}

impl Conn {
    async fn send(&mut self, words: &[&[u8]]) -> Result<(), String> {
        let args: Vec<Vec<u8>> = words.iter().map(|w| w.to_vec()).collect();
        let written = async {
            self.socket.write_all(&encode(&args)).await?;
            self.socket.flush().await
        };
        tokio::time::timeout(TIMEOUT, written)
            .await
            .map_err(|_| "timed out writing to the master".to_string())?
            .map_err(|e| format!("writing to the master: {e}"))
    }

    async fn fill(&mut self) -> Result<(), String> {
        self.input.reserve(64 << 10);
        match tokio::time::timeout(TIMEOUT, self.socket.read_buf(&mut self.input)).await {
            Err(_) => Err("the master sent nothing for 60 s".into()),
            Ok(Ok(0)) => Err("the master closed the connection".into()),
            Ok(Err(e)) => Err(format!("reading from the master: {e}")),
            Ok(Ok(_)) => Ok(()),
        }
    }

    /// One line without its CRLF; empty lines (keep-alive newlines sent
    /// while the master prepares a snapshot) are skipped.
    async fn line(&mut self) -> Result<String, String> {
        loop {
            if let Some(at) = self.input.iter().position(|&b| b == b'\n') {
                let line = self.input.split_to(at + 1);
                let text = String::from_utf8_lossy(&line).trim_end().to_string();
                if text.is_empty() {
                    continue;
                }
                return Ok(text);
            }
            if self.input.len() > 64 << 10 {
                return Err("the master sent a line too long".into());
            }
            self.fill().await?;
        }
    }

    async fn exactly(&mut self, n: usize) -> Result<Vec<u8>, String> {
        while self.input.len() < n {
            self.fill().await?;
        }
        Ok(self.input.split_to(n).to_vec())
    }

    /// The snapshot after `+FULLRESYNC`: `$<len>\r\n` and that many bytes,
    /// or `$EOF:<40-byte mark>\r\n`, the bytes and the mark again.
    async fn snapshot(&mut self) -> Result<Vec<u8>, String> {
        let head = self.line().await?;
        let Some(len) = head.strip_prefix('$') else {
            return Err(format!("expected the snapshot, got '{head}'"));
        };
        if let Some(mark) = len.strip_prefix("EOF:") {
            let mark = mark.as_bytes().to_vec();
            if mark.len() != 40 {
                return Err("bad EOF mark".into());
            }
            loop {
                if self.input.len() >= 40 && self.input.ends_with(&mark) {
                    let mut all = self.input.split().to_vec();
                    all.truncate(all.len() - 40);
                    return Ok(all);
                }
                self.fill().await?;
            }
        }
        let n: usize = len
            .parse()
            .map_err(|_| format!("bad snapshot length '{len}'"))?;
        self.exactly(n).await
    }
}

/// One connection's life: handshake, synchronisation, the stream.
async fn follow(shared: &Arc<Shared>, epoch: u64, s: &mut Session) -> Result<(), String> {
    let (host, port) = {
        let st = shared.repl.lock_state();
        let link = st.master.as_ref().ok_or("no master")?;
        (link.host.clone(), link.port)
    };
    let socket = tokio::time::timeout(
        Duration::from_secs(5),
        TcpStream::connect((host.as_str(), port)),
    )
    .await
    .map_err(|_| format!("connecting to {host}:{port} timed out"))?
    .map_err(|e| format!("cannot connect to {host}:{port}: {e}"))?;
    let _ = socket.set_nodelay(true);
    let mut c = Conn {
        socket: secure(shared, socket, &host).await?,
        input: BytesMut::with_capacity(64 << 10),
    };
    handshake(shared, &mut c).await?;
    if !current(shared, epoch) {
        return Err("the master changed".into());
    }
    let (id, offset) = {
        let stream = shared.repl.lock_stream();
        match stream.backlog.is_some() && stream.offset > 0 {
            true => (stream.replid.clone(), (stream.offset + 1).to_string()),
            false => ("?".to_string(), "-1".to_string()),
        }
    };
    c.send(&[b"PSYNC", id.as_bytes(), offset.as_bytes()])
        .await?;
    let reply = c.line().await?;
    set_status(shared, epoch, |l| {
        l.status = LinkStatus::Sync;
        l.last_io = Instant::now();
    });
    if let Some(rest) = reply.strip_prefix("+FULLRESYNC ") {
        full_sync(shared, epoch, s, &mut c, rest).await?;
    } else if let Some(rest) = reply.strip_prefix("+CONTINUE") {
        continued(shared, rest.trim());
    } else {
        return Err(format!("the master refused PSYNC: {reply}"));
    }
    set_status(shared, epoch, |l| {
        l.status = LinkStatus::Connected;
        l.sync_in_progress = false;
    });
    stream_loop(shared, epoch, s, &mut c).await
}

/// With `tls-replication yes`, the TLS handshake with the master (its
/// certificate checked against `tls-ca-cert-file`/`-dir` for `host`);
/// else the plain socket.
async fn secure(shared: &Shared, socket: TcpStream, host: &str) -> Result<Stream, String> {
    let Some(connector) = shared.tls.connector() else {
        return Ok(Stream::Plain(socket));
    };
    let name = rustls_pki_types::ServerName::try_from(host.to_string())
        .map_err(|e| format!("the master's name {host} cannot be checked by TLS: {e}"))?;
    let tls = tokio::time::timeout(
        crate::tls::HANDSHAKE_TIMEOUT,
        connector.connect(name, socket),
    )
    .await
    .map_err(|_| format!("the TLS handshake with {host} timed out"))?
    .map_err(|e| format!("the TLS handshake with {host} failed: {e}"))?;
    Ok(Stream::Tls(Box::new(tls.into())))
}

/// `REPLCONF ACK <offset>`: the offset of everything applied so far, sent
/// once all of it is durable here (the disk domain's log synced past it).
async fn ack(shared: &Shared, c: &mut Conn) -> Result<(), String> {
    let offset = shared.repl.lock_stream().offset.to_string();
    shared
        .keyspace
        .db
        .durable()
        .await
        .map_err(|e| format!("the applied stream is not durable: {e}"))?;
    c.send(&[b"REPLCONF", b"ACK", offset.as_bytes()]).await
}

async fn handshake(shared: &Shared, c: &mut Conn) -> Result<(), String> {
    c.send(&[b"PING"]).await?;
    let pong = c.line().await?;
    if pong.starts_with('-') && !pong.starts_with("-NOAUTH") {
        return Err(format!("the master replied to PING: {pong}"));
    }
    let password = shared.settings.value("masterauth").unwrap_or_default();
    if !password.is_empty() {
        c.send(&[b"AUTH", &password]).await?;
        let reply = c.line().await?;
        if reply.starts_with('-') {
            return Err(format!(
                "Unable to AUTH to MASTER: the master refused masterauth: {reply}"
            ));
        }
    } else if pong.starts_with("-NOAUTH") {
        return Err("the master needs a password: set masterauth".into());
    }
    let port = shared.local_addr.port().to_string();
    c.send(&[b"REPLCONF", b"listening-port", port.as_bytes()])
        .await?;
    c.line().await?;
    c.send(&[b"REPLCONF", b"capa", b"eof", b"capa", b"psync2"])
        .await?;
    c.line().await?;
    Ok(())
}

/// `+FULLRESYNC <id> <offset>`: loads the snapshot, then starts this
/// server's stream at the master's id and offset.
async fn full_sync(
    shared: &Arc<Shared>,
    epoch: u64,
    s: &mut Session,
    c: &mut Conn,
    rest: &str,
) -> Result<(), String> {
    let mut words = rest.split_whitespace();
    let (Some(id), Some(offset)) = (words.next(), words.next()) else {
        return Err(format!("bad FULLRESYNC line '{rest}'"));
    };
    let offset: u64 = offset
        .parse()
        .map_err(|_| format!("bad FULLRESYNC offset '{offset}'"))?;
    set_status(shared, epoch, |l| l.sync_in_progress = true);
    let rdb = c.snapshot().await?;
    if !current(shared, epoch) {
        return Err("the master changed".into());
    }
    // Replicas of this server cannot follow across a new history.
    shared.repl.lock_stream().detach_all();
    let loaded = tokio::task::block_in_place(|| super::load::load(s, &rdb));
    loaded.map_err(|e| format!("cannot load the master's snapshot: {}", e.0))?;
    let size = super::role::backlog_size(shared);
    let mut stream = shared.repl.lock_stream();
    stream.replid = id.to_string();
    stream.replid2 = super::stream::NO_ID.to_string();
    stream.second_offset = -1;
    stream.offset = offset;
    stream.backlog = Some(super::backlog::Backlog::new(size, offset));
    stream.forget_selected();
    stream.detach_all();
    debug_assert_eq!(stream.backlog.as_ref().map(|b| b.first()), Some(offset + 1));
    s.store.db = 0;
    Ok(())
}

/// `+CONTINUE [id]`: the data stays; a new id means the master was
/// promoted: the old id stays valid up to here.
fn continued(shared: &Shared, id: &str) {
    let mut stream = shared.repl.lock_stream();
    if !id.is_empty() && id != stream.replid {
        stream.shift_ids(id.to_string());
        stream.detach_all();
    }
}

/// Applies the master's stream until the connection ends.
async fn stream_loop(
    shared: &Arc<Shared>,
    epoch: u64,
    s: &mut Session,
    c: &mut Conn,
) -> Result<(), String> {
    let mut parser = RequestParser::new();
    let limits = ParseLimits {
        max_bulk_bytes: 1 << 30,
        max_args: i32::MAX as usize,
        unauthenticated: false,
    };
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    let mut last_read = Instant::now();
    loop {
        let consumed = apply_all(shared, epoch, s, c, &mut parser, &limits).await?;
        c.input.advance(consumed);
        tokio::select! {
            _ = tick.tick() => {
                if !current(shared, epoch) {
                    return Ok(());
                }
                if last_read.elapsed() > TIMEOUT {
                    return Err("the master sent nothing for 60 s".into());
                }
                ack(shared, c).await?;
            }
            read = c.socket.read_buf(&mut c.input) => {
                match read {
                    Ok(0) => return Err("the master closed the connection".into()),
                    Err(e) => return Err(format!("reading from the master: {e}")),
                    Ok(n) => {
                        last_read = Instant::now();
                        set_status(shared, epoch, |l| {
                            l.last_io = last_read;
                            l.read_offset += n as u64;
                        });
                    }
                }
                if !current(shared, epoch) {
                    return Ok(());
                }
            }
        }
        c.input.reserve(16 << 10);
    }
}

/// A command of the master's stream failed here (one Persimmon does not
/// have, a type it does not store): the replica now differs for its key.
/// Said on stderr, at most once a second.
fn report_failure(s: &Session) {
    use std::sync::atomic::{AtomicU64, Ordering};
    static LAST: AtomicU64 = AtomicU64::new(0);
    let now = s.shared.now_ms() / 1000;
    if LAST.swap(now, Ordering::Relaxed) != now {
        let text = String::from_utf8_lossy(&s.out.buf);
        eprintln!(
            "persimmon: a command from the master failed on this replica: {}",
            text.trim_end()
        );
    }
}

/// Applies every complete command in the input; returns the bytes used.
async fn apply_all(
    shared: &Arc<Shared>,
    epoch: u64,
    s: &mut Session,
    c: &mut Conn,
    parser: &mut RequestParser,
    limits: &ParseLimits,
) -> Result<usize, String> {
    let mut consumed = 0;
    loop {
        let progress = parser
            .parse(&c.input[consumed..], limits)
            .map_err(|e| format!("protocol error in the master's stream: {e}"))?;
        let Progress::Complete { len } = progress else {
            return Ok(consumed);
        };
        if !current(shared, epoch) {
            // REPLICAOF elsewhere or NO ONE: not one more command.
            return Err("the master changed".into());
        }
        let raw = consumed..consumed + len;
        let args = parser.args(&c.input[consumed..]);
        let getack = args.len() >= 2
            && args.get(0).eq_ignore_ascii_case(b"REPLCONF")
            && args.get(1).eq_ignore_ascii_case(b"GETACK");
        let skip = args.is_empty()
            || args.get(0).eq_ignore_ascii_case(b"PING")
            || args.get(0).eq_ignore_ascii_case(b"REPLCONF");
        if !skip {
            execute(s, args);
            s.flow = crate::session::Flow::Continue;
            s.blocked = None;
            if s.out.buf.starts_with(b"-") {
                report_failure(s);
            }
            s.out.buf.clear();
        }
        parser.reset();
        if getack {
            ack(shared, c).await?;
        }
        shared.repl.lock_stream().relay(&c.input[raw]);
        consumed += len;
    }
}
