//! The master's side of a replica's connection, once it sent `PSYNC` or
//! `SYNC`: the connection stops being a client and becomes the replica's
//! feed. [`serve`] answers `+CONTINUE` with the backlog from the asked
//! offset when the stream's history has it, else `+FULLRESYNC id offset`
//! and a snapshot (`$<len>\r\n` and the RDB bytes); then it writes the
//! stream as it grows and reads the replica's `REPLCONF ACK <offset>`.
//!
//! Invariants:
//! - The snapshot or backlog copy and the feed's attachment happen under
//!   one hold of the stream's lock, so the replica receives every byte
//!   after its starting offset exactly once, in order.
//! - When the first replica turns propagation on, every command already
//!   running without a turn finishes before the snapshot is read (the
//!   database map taken exclusively once), and a write that looked before
//!   the switch and took the map after it goes back for its turn
//!   (`dispatch::execute`): no write is both missing from the snapshot and
//!   from the stream.
//! - The replica is listed (INFO, ROLE, WAIT) from the moment it is
//!   attached until its connection ends, and its feed is detached then.
//! - Nothing the replica sends can make the master fail: anything but
//!   `REPLCONF ACK`/`PING` is ignored; a protocol error ends the link.

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use persimmon_resp::{ParseLimits, Progress, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use super::client::Psync;
use super::state::{Peer, Replication};
use crate::shared::Shared;
use crate::tls::Stream;

/// How long a write to a replica may stall before it is dropped
/// (Redis's `repl-timeout`).
const STALL: Duration = Duration::from_secs(60);

/// Serves replica connection `client` until it ends.
pub async fn serve(
    shared: Arc<Shared>,
    socket: &mut Stream,
    input: &mut BytesMut,
    client: u64,
    psync: Psync,
) {
    let peer_ip = socket
        .peer_addr()
        .map(|a| a.ip().to_string())
        .unwrap_or_else(|_| "?".into());
    let start = tokio::task::block_in_place(|| begin(&shared, client, &psync));
    let (head, mut feed) = match start {
        Ok(s) => s,
        Err(e) => {
            let _ = write(socket, format!("-{e}\r\n").as_bytes()).await;
            return;
        }
    };
    shared.repl.lock_state().replicas.insert(
        client,
        Peer {
            ip: peer_ip,
            port: psync.listening_port,
            state: "send_bulk",
            ack: 0,
            last_ack: Instant::now(),
        },
    );
    let _listed = Listed {
        repl: &shared.repl,
        client,
    };
    if write(socket, &head).await.is_err() {
        return;
    }
    if let Some(p) = shared.repl.lock_state().replicas.get_mut(&client) {
        p.state = "online";
    }
    let mut parser = RequestParser::new();
    let mut tick = tokio::time::interval(Duration::from_secs(1));
    loop {
        tokio::select! {
            _ = tick.tick() => {
                // A replica acknowledges every second: one silent for
                // `repl-timeout` is gone (its socket may never say so).
                let silent = shared
                    .repl
                    .lock_state()
                    .replicas
                    .get(&client)
                    .is_none_or(|p| p.last_ack.elapsed() > STALL);
                if silent || shared.is_stopping() {
                    return;
                }
            }
            bytes = feed.rx.recv() => {
                let Some(bytes) = bytes else { return };
                if write(socket, &bytes).await.is_err() {
                    return;
                }
                feed.queued.fetch_sub(bytes.len(), Ordering::AcqRel);
            }
            read = socket.read_buf(input) => {
                match read {
                    Ok(0) | Err(_) => return,
                    Ok(_) => {}
                }
                if read_acks(&shared, client, input, &mut parser).is_err() {
                    return;
                }
            }
        }
    }
}

/// Decides CONTINUE or FULLRESYNC and attaches the feed, holding the
/// stream's lock: the first bytes to send (the reply line and the backlog
/// or snapshot) and the feed.
fn begin(
    shared: &Arc<Shared>,
    client: u64,
    psync: &Psync,
) -> Result<(Vec<u8>, super::stream::FeedRx), String> {
    let size = super::role::backlog_size(shared);
    let mut stream = shared.repl.lock_stream();
    if !shared.repl.is_active() {
        shared.repl.activate(&mut stream, size);
        // Writes that started before propagation was on took no turn: wait
        // for every command in flight (each holds the database map) so
        // none of them lands after the snapshot unpropagated.
        drop(shared.keyspace.dbs.exclusive());
    }
    if let Some(b) = stream.backlog.as_mut().filter(|b| b.size() != size) {
        // `CONFIG SET repl-backlog-size` applies from the next attach.
        b.resize(size);
    }
    if let Some((id, offset)) = &psync.from {
        if *offset > 0 {
            if let Some(bytes) = stream.continue_from(id, *offset as u64) {
                shared.repl.syncs.partial_ok.fetch_add(1, Ordering::Relaxed);
                let mut head = format!("+CONTINUE {}\r\n", stream.replid).into_bytes();
                head.extend_from_slice(&bytes);
                return Ok((head, stream.attach(client)));
            }
        }
    }
    if psync.from.as_ref().is_some_and(|(id, _)| id != "?") {
        shared
            .repl
            .syncs
            .partial_err
            .fetch_add(1, Ordering::Relaxed);
    }
    shared.repl.syncs.full.fetch_add(1, Ordering::Relaxed);
    let (replid, offset) = (stream.replid.clone(), stream.offset);
    let rdb = super::snapshot::build(shared, &replid, offset, &mut stream.deadlines)
        .map_err(|e| e.0.to_string())?;
    let mut head = Vec::with_capacity(rdb.len() + 80);
    if psync.from.is_some() {
        head.extend_from_slice(format!("+FULLRESYNC {replid} {offset}\r\n").as_bytes());
    }
    head.extend_from_slice(format!("${}\r\n", rdb.len()).as_bytes());
    head.extend_from_slice(&rdb);
    // The replica starts in database 0 knowing no SELECT: the next command
    // must name its database.
    stream.forget_selected();
    Ok((head, stream.attach(client)))
}

async fn write(socket: &mut Stream, bytes: &[u8]) -> Result<(), ()> {
    let written = async {
        socket.write_all(bytes).await?;
        socket.flush().await
    };
    match tokio::time::timeout(STALL, written).await {
        Ok(Ok(())) => Ok(()),
        _ => Err(()),
    }
}

/// Reads every complete request the replica sent: `REPLCONF ACK n`
/// records its offset; anything else is ignored.
fn read_acks(
    shared: &Shared,
    client: u64,
    input: &mut BytesMut,
    parser: &mut RequestParser,
) -> Result<(), ()> {
    let limits = ParseLimits {
        max_bulk_bytes: 1 << 20,
        max_args: 16,
        unauthenticated: false,
    };
    loop {
        match parser.parse(input, &limits) {
            Err(_) => return Err(()),
            Ok(Progress::Incomplete { .. }) => {
                if input.len() > 1 << 20 {
                    return Err(());
                }
                return Ok(());
            }
            Ok(Progress::Complete { len }) => {
                let args = parser.args(input);
                let ack = (args.len() >= 3
                    && args.get(0).eq_ignore_ascii_case(b"REPLCONF")
                    && args.get(1).eq_ignore_ascii_case(b"ACK"))
                .then(|| persimmon_resp::parse_i64(args.get(2)))
                .flatten();
                parser.reset();
                input.advance(len);
                if let Some(offset) = ack {
                    acked(shared, client, offset.max(0) as u64);
                }
            }
        }
    }
}

fn acked(shared: &Shared, client: u64, offset: u64) {
    if let Some(p) = shared.repl.lock_state().replicas.get_mut(&client) {
        p.ack = p.ack.max(offset);
        p.last_ack = Instant::now();
        p.state = "online";
    }
    shared.repl.acked.notify_waiters();
}

/// Takes the replica off the list and detaches its feed when the
/// connection ends (also when its task is dropped at shutdown).
struct Listed<'a> {
    repl: &'a Replication,
    client: u64,
}

impl Drop for Listed<'_> {
    fn drop(&mut self) {
        self.repl.lock_state().replicas.remove(&self.client);
        self.repl.lock_stream().detach(self.client);
        self.repl.acked.notify_waiters();
    }
}
