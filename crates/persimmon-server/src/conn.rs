//! One client connection: read, parse, execute, reply.
//!
//! Each read is followed by executing every complete request it finished
//! and writing all their replies at once (pipelining costs one write per
//! read, not one per command). While a batch executes, its replies collect
//! in the output buffer; past `FLUSH_BYTES` they are written out before the
//! batch goes on, so a long pipeline never holds more than about that much
//! plus one reply.
//!
//! Consecutive plain `SET`s of a read run as one grouped engine write
//! (`pipeline.rs`): each complete request is offered to the run first;
//! any other request, the end of the complete input, a protocol error or a
//! full run executes the run before anything else happens.
//!
//! Invariants:
//! - A reply is queued only after its command's engine call returned, and
//!   engine writes are durable on return: any reply a client receives
//!   acknowledges a durable write (a run's replies are queued after its
//!   grouped write returned).
//! - The run's ranges point into the input buffer, which is advanced only
//!   after the run has executed; no flush of the replies happens while a
//!   run is pending (a request that joins a run queues nothing).
//! - Requests are executed in order, and replies leave in order.
//! - The connection is closed — after the replies to every request before
//!   it — on a protocol error (`-ERR Protocol error: ...`), when the unparsed
//!   input exceeds `client-query-buffer-limit`, when the pending replies
//!   exceed `client-output-buffer-limit`, when the client reads none of its
//!   replies for `client-output-stall-secs`, and on QUIT and SHUTDOWN.
//!   Nothing a client sends can affect another connection.
//! - A command that blocks (BLPOP on empty lists...) holds up only its own
//!   connection: the replies before it are sent, then the task *awaits* its
//!   waiter's notification (never a sleeping poll), a re-check every
//!   `RECHECK` and its deadline, while still reading the socket — input is
//!   kept for later, a closed socket ends the wait (dropping the waiter
//!   takes it out of every queue). After the reply the rest of the input
//!   runs as usual.
//! - `CLIENT PAUSE`: before each request the connection checks the pause
//!   (one load); a held request waits for its end after the replies
//!   before it are sent (`pause.rs`). A monitor's feed is written as it
//!   comes, like pub/sub messages (`monitor.rs`).
//! - The input buffer is given back when the clients' cron finds the
//!   connection idle (`idle.rs`; no timer per read), and shrinks
//!   once the requests no longer need its size, as Redis resizes its query
//!   buffer (`CLIENT LIST` `qbuf-free` shows it).

use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::{Duration, Instant};

use bytes::{Buf, BytesMut};
use persimmon_resp::{ParseLimits, Progress, RequestParser};
use tokio::io::{AsyncReadExt, AsyncWriteExt};

use crate::client::ClientInfo;
use crate::commands::blocking::{recheck_blocked, reply_blocked};
use crate::commands::pubsub::DRAIN_BYTES;
use crate::commands::table::COMMANDS;
use crate::dispatch::execute;
use crate::pipeline::{Offer, Pipeline};
use crate::session::{Flow, Session};
use crate::settings::Limits;
use crate::shared::Shared;
use crate::tls::Stream;

/// Replies queued past this are written before the batch goes on.
const FLUSH_BYTES: usize = 64 << 10;
/// Smallest read buffer room.
const READ_BYTES: usize = 16 << 10;
/// Buffers grown past this by a large request or reply are given back.
const KEEP_BUFFER_BYTES: usize = 1 << 20;
/// An input buffer past this shrinks when the requests no longer need it
/// (Redis's `PROTO_RESIZE_THRESHOLD`).
const SHRINK_FROM_BYTES: usize = 32 << 10;

/// A blocked client looks at its keys itself this often, in case a
/// write's signal was missed (a fallback: writes wake waiters at once).
const RECHECK: Duration = Duration::from_millis(100);

/// The connection is over: the peer closed, a write failed, a limit was
/// hit, or QUIT/SHUTDOWN.
struct Closed;

struct Connection {
    stream: Stream,
    input: BytesMut,
    parser: RequestParser,
    session: Session,
    /// Total length the request being received needs, when known.
    need: Option<usize>,
    /// Batches since the counters were last added to the server's.
    unpublished_batches: u32,
    /// The run of plain writes being collected (`pipeline.rs`).
    pipeline: Pipeline,
}

/// Counters are added to the server's (shared, contended) totals once per
/// this many batches, and when the connection ends or runs INFO.
const PUBLISH_EVERY_BATCHES: u32 = 64;

/// Serves one client until it leaves, breaks a limit, or the server stops.
pub async fn serve_client(shared: Arc<Shared>, stream: Stream, info: Arc<ClientInfo>) {
    let mut c = Connection {
        stream,
        input: BytesMut::with_capacity(READ_BYTES),
        parser: RequestParser::new(),
        session: Session::new(shared, info, &COMMANDS),
        need: None,
        unpublished_batches: 0,
        pipeline: Pipeline::new(),
    };
    let _ = c.run().await;
    c.session.publish_counters();
}

impl Connection {
    async fn run(&mut self) -> Result<(), Closed> {
        loop {
            self.reserve_input();
            // No select on the shutdown signal here: at shutdown the runtime
            // drops every connection task at its await point.
            let n = self.read_or_deliver().await?;
            self.session.counters.net_in += n as u64;
            self.session.counters.reads += 1;
            let mut flow = self.process().await?;
            while matches!(flow, Flow::Block | Flow::WaitReplicas) {
                self.flush().await?;
                match flow {
                    Flow::Block => self.wait_blocked().await?,
                    _ => self.wait_replicas().await,
                }
                flow = self.process().await?;
            }
            match flow {
                Flow::Continue => self.flush().await?,
                Flow::Close => {
                    self.flush().await?;
                    let _ = self.stream.shutdown().await;
                    return Err(Closed);
                }
                Flow::OutputLimit => return Err(self.closed_for_output()),
                Flow::Shutdown => return Err(Closed),
                Flow::Replica => {
                    self.flush().await?;
                    self.become_feed().await;
                    return Err(Closed);
                }
                Flow::Block | Flow::WaitReplicas => unreachable!("waited for above"),
            }
            if self.session.info.is_killed() {
                return Err(Closed);
            }
            self.unpublished_batches += 1;
            if self.unpublished_batches >= PUBLISH_EVERY_BATCHES {
                self.unpublished_batches = 0;
                self.session.publish_counters();
            }
        }
    }

    /// Reads more input; meanwhile writes the messages published to this
    /// client's channels as they come, and ends the connection when it is
    /// killed (`CLIENT KILL`, a pub/sub output limit). Returns the bytes
    /// read (at least 1).
    async fn read_or_deliver(&mut self) -> Result<usize, Closed> {
        loop {
            tokio::select! {
                read = self.stream.read_buf(&mut self.input) => match read {
                    Ok(0) | Err(_) => return Err(Closed),
                    Ok(n) => return Ok(n),
                },
                _ = self.session.info.attention() => {
                    if self.session.info.is_killed() {
                        return Err(Closed);
                    }
                    // The clients' cron found the connection idle (`idle.rs`).
                    if self.session.info.take_release() && self.input.is_empty() {
                        self.input = BytesMut::new();
                        self.publish_query_buffer();
                    }
                    continue;
                }
                _ = self.session.pubsub.mail() => {}
                _ = monitor_ready(&self.session.monitor) => {}
            }
            self.deliver().await?;
        }
    }

    /// Writes the messages queued for this client, a bounded amount at a
    /// time.
    async fn deliver(&mut self) -> Result<(), Closed> {
        if let Some(watch) = &self.session.monitor {
            watch.drain(&mut self.session.out.buf);
        }
        loop {
            let more = self
                .session
                .pubsub
                .drain(&mut self.session.out, DRAIN_BYTES);
            self.flush().await?;
            if !more {
                return Ok(());
            }
        }
    }

    /// Waits for the outcome of the command that blocked and queues its
    /// reply: served (by a write of another client, or by this client's
    /// own re-check), unblocked, or timed out. A closed socket ends it.
    async fn wait_blocked(&mut self) -> Result<(), Closed> {
        let reg = self
            .session
            .blocked
            .take()
            .expect("a blocking command left its registration");
        // Right away once: a write between the command's look at its keys
        // and its registration found no waiter to serve.
        let mut recheck = true;
        loop {
            if recheck {
                recheck_blocked(&mut self.session, &reg);
            }
            if let Some(outcome) = reg.outcome() {
                reply_blocked(&mut self.session, &reg, outcome);
                crate::observe::blocked_replied(&mut self.session);
                return Ok(());
            }
            let now = Instant::now();
            let mut wait = RECHECK;
            if let Some(deadline) = reg.deadline {
                if now >= deadline {
                    let outcome = reg.time_out();
                    reply_blocked(&mut self.session, &reg, outcome);
                    crate::observe::blocked_replied(&mut self.session);
                    return Ok(());
                }
                wait = wait.min(deadline - now);
            }
            self.reserve_input();
            tokio::select! {
                _ = reg.notified() => recheck = false,
                _ = tokio::time::sleep(wait) => recheck = true,
                _ = self.session.info.killed() => return Err(Closed),
                read = self.stream.read_buf(&mut self.input) => {
                    let n = match read {
                        Ok(0) | Err(_) => return Err(Closed),
                        Ok(n) => n,
                    };
                    self.session.counters.net_in += n as u64;
                    self.session.counters.reads += 1;
                    let limit = self.session.shared.settings.limits().query_buffer_limit;
                    if self.input.len() > limit {
                        self.session
                            .shared
                            .stats
                            .query_buffer_limit_disconnections
                            .fetch_add(1, Ordering::Relaxed);
                        return Err(Closed);
                    }
                    recheck = false;
                }
            }
        }
    }

    /// WAIT: waits for the replicas' acknowledgements, queues the count.
    async fn wait_replicas(&mut self) {
        let Some(w) = self.session.repl.wait.take() else {
            return;
        };
        let n = crate::repl::wait::wait(self.session.shared.clone(), w).await;
        self.session.out.int(n as i64);
    }

    /// PSYNC/SYNC: the connection serves a replica until it ends.
    async fn become_feed(&mut self) {
        let Some(psync) = self.session.repl.psync.take() else {
            return;
        };
        let shared = self.session.shared.clone();
        let info = self.session.info.clone();
        info.replica.store(true, Ordering::Relaxed);
        let feed =
            crate::repl::feed::serve(shared, &mut self.stream, &mut self.input, info.id, psync);
        tokio::select! {
            _ = feed => {}
            // CLIENT KILL TYPE replica (or ID, ADDR...) ends the feed.
            _ = info.killed() => {}
        }
    }

    /// Counts a client closed for its replies (too many pending, or none
    /// read for too long) and closes it.
    fn closed_for_output(&self) -> Closed {
        self.session
            .shared
            .stats
            .output_buffer_limit_disconnections
            .fetch_add(1, Ordering::Relaxed);
        Closed
    }

    /// Makes room to read into: at least `READ_BYTES`, and for a large
    /// request being received, room growing with what has arrived (so an
    /// announced length alone never allocates much).
    fn reserve_input(&mut self) {
        let len = self.input.len();
        let mut want = READ_BYTES;
        if let Some(need) = self.need {
            want = want.max(need.saturating_sub(len).min(len + (1 << 20)));
        }
        if self.input.capacity() - len < want {
            self.input.reserve(want);
        }
        self.publish_query_buffer();
    }

    /// `CLIENT LIST`'s `qbuf` and `qbuf-free`: the input not executed yet
    /// and the room left in its buffer.
    fn publish_query_buffer(&self) {
        let info = &self.session.info;
        info.query_buffer_bytes
            .store(self.input.len(), Ordering::Relaxed);
        info.query_buffer_free
            .store(self.input.capacity() - self.input.len(), Ordering::Relaxed);
    }

    fn parse_limits(&self, limits: &Limits) -> ParseLimits {
        ParseLimits {
            max_bulk_bytes: limits.proto_max_bulk_len,
            max_args: i32::MAX as usize,
            unauthenticated: !self.session.authenticated && self.session.shared.acl.auth_required(),
        }
    }

    /// Executes every complete request in the input buffer. The limits are
    /// read once for the batch (`CONFIG SET` applies from the next one).
    async fn process(&mut self) -> Result<Flow, Closed> {
        let limits = self.session.shared.settings.limits();
        let mut consumed = 0;
        let flow = loop {
            let parse_limits = self.parse_limits(&limits);
            let progress = self.parser.parse(&self.input[consumed..], &parse_limits);
            if !matches!(progress, Ok(Progress::Complete { .. })) {
                // The run before a protocol error or the end of the input.
                run_pipeline(&mut self.pipeline, &mut self.session, &self.input).await;
            }
            match progress {
                Err(e) => {
                    self.session
                        .shared
                        .stats
                        .protocol_errors
                        .fetch_add(1, Ordering::Relaxed);
                    self.session.out.error(&format!("ERR Protocol error: {e}"));
                    break Flow::Close;
                }
                Ok(Progress::Incomplete { need }) => {
                    self.need = need;
                    let pending = self.input.len() - consumed
                        + self.parser.args_len() * std::mem::size_of::<std::ops::Range<usize>>();
                    if pending > limits.query_buffer_limit {
                        self.session
                            .shared
                            .stats
                            .query_buffer_limit_disconnections
                            .fetch_add(1, Ordering::Relaxed);
                        self.session
                            .out
                            .error("ERR Protocol error: client query buffer limit reached");
                        break Flow::Close;
                    }
                    break Flow::Continue;
                }
                Ok(Progress::Complete { len }) => {
                    if self.session.shared.pause.active() {
                        self.wait_unpaused(consumed).await?;
                    }
                    self.session
                        .info
                        .query_buffer_bytes
                        .store(self.input.len() - consumed, Ordering::Relaxed);
                    let args = self.parser.args(&self.input[consumed..]);
                    let from_input = self.parser.from_input();
                    let joined = loop {
                        if args.is_empty() {
                            break false;
                        }
                        let session = &mut self.session;
                        match self.pipeline.offer(session, &args, consumed, from_input) {
                            Offer::Joined => break true,
                            Offer::Refused => break false,
                            // The pending run goes (through the combiner
                            // when it is one of collection writes) before
                            // this request starts the next.
                            Offer::RunFirst => {
                                run_pipeline(&mut self.pipeline, session, &self.input).await
                            }
                        }
                    };
                    if !joined || self.pipeline.is_full() {
                        run_pipeline(&mut self.pipeline, &mut self.session, &self.input).await;
                    }
                    if !joined && !args.is_empty() {
                        execute(&mut self.session, args);
                    }
                    self.parser.reset();
                    self.need = None;
                    consumed += len;
                    let flow = std::mem::replace(&mut self.session.flow, Flow::Continue);
                    if flow != Flow::Continue {
                        break flow;
                    }
                    if self.session.out.len() > limits.output_buffer_limit {
                        break Flow::OutputLimit;
                    }
                    if self.session.out.len() >= FLUSH_BYTES {
                        self.flush().await?;
                    }
                }
            }
        };
        debug_assert!(self.pipeline.is_empty(), "the run executed first");
        self.input.advance(consumed);
        // A buffer grown by a large request shrinks back once the requests
        // are small again (more than twice what this batch needed).
        let peak = consumed.max(READ_BYTES);
        if self.input.is_empty() && self.input.capacity() > (2 * peak).max(SHRINK_FROM_BYTES) {
            self.input = BytesMut::with_capacity(READ_BYTES);
        }
        self.publish_query_buffer();
        let info = &self.session.info;
        info.last_active_ms
            .store(self.session.shared.now_ms(), Ordering::Relaxed);
        Ok(flow)
    }

    /// `CLIENT PAUSE`: while a pause holds the request parsed at
    /// `consumed`, runs the pending run, sends the replies before it and
    /// waits (counted in `blocked_clients`).
    async fn wait_unpaused(&mut self, consumed: usize) -> Result<(), Closed> {
        let held = {
            let args = self.parser.args(&self.input[consumed..]);
            crate::dispatch::pause_writes(&self.session, &args)
        };
        let Some(writes) = held else {
            return Ok(());
        };
        let shared = self.session.shared.clone();
        if shared.pause.holding(writes).is_none() {
            return Ok(());
        }
        run_pipeline(&mut self.pipeline, &mut self.session, &self.input).await;
        self.flush().await?;
        tokio::select! {
            _ = shared.pause.wait(writes) => Ok(()),
            _ = self.session.info.killed() => Err(Closed),
        }
    }

    /// Writes every queued reply. A client that takes none of it for
    /// `client-output-stall-secs` is disconnected.
    /// Waits until every write made so far — this client's, and any other
    /// a reply may have read — is durable (the disk domain's log is synced
    /// past it; at once in the other domains). Replies leave only after
    /// this, as Redis's `appendfsync always` sends its replies after the
    /// event loop's `fsync`; the worker runs other connections meanwhile. A
    /// log that failed its sync acknowledges nothing more: the connection
    /// closes without its replies.
    async fn durable(&self) -> Result<(), Closed> {
        let durable = self.session.shared.keyspace.db.durable();
        if durable.is_done() {
            return Ok(());
        }
        durable.await.map_err(|e| {
            eprintln!("persimmon: closing a connection without its replies: {e}");
            Closed
        })
    }

    async fn flush(&mut self) -> Result<(), Closed> {
        if self.session.out.buf.is_empty() {
            return Ok(());
        }
        self.durable().await?;
        let buf = &mut self.session.out.buf;
        let mut written = 0;
        // Usually the socket takes everything at once: no timer needed.
        match self.stream.try_write(buf) {
            Ok(n) => written = n,
            Err(e) if e.kind() == std::io::ErrorKind::WouldBlock => {}
            Err(_) => return Err(Closed),
        }
        let stall = self.session.shared.settings.output_stall();
        let info = &self.session.info;
        while written < buf.len() {
            let write = tokio::time::timeout(stall, self.stream.write(&buf[written..]));
            let result = tokio::select! {
                result = write => result,
                // Killed while the client does not read: close now.
                _ = info.killed() => return Err(Closed),
            };
            match result {
                Ok(Ok(n)) if n > 0 => written += n,
                Ok(_) => return Err(Closed),
                Err(_elapsed) => {
                    self.session
                        .shared
                        .stats
                        .output_buffer_limit_disconnections
                        .fetch_add(1, Ordering::Relaxed);
                    return Err(Closed);
                }
            }
        }
        if self.stream.is_tls() {
            // The records rustls still holds go out now.
            match tokio::time::timeout(stall, self.stream.flush()).await {
                Ok(Ok(())) => {}
                _ => return Err(Closed),
            }
        }
        self.session.counters.net_out += written as u64;
        self.session.counters.writes += 1;
        buf.clear();
        if buf.capacity() > KEEP_BUFFER_BYTES {
            *buf = Vec::with_capacity(READ_BYTES);
        }
        Ok(())
    }
}

/// Resolves when the monitor feed has lines (never without one).
async fn monitor_ready(watch: &Option<crate::monitor::Watch>) {
    match watch {
        Some(w) => w.ready().await,
        None => std::future::pending().await,
    }
}

/// Executes the pending run of `pipeline` (its ranges point into `input`):
/// a run of collection writes through the combiner (`combiner/`), any
/// other here.
async fn run_pipeline(pipeline: &mut Pipeline, session: &mut Session, input: &[u8]) {
    match pipeline.take_unit(input) {
        Some(run) => crate::combiner::submit(session, run).await,
        None => pipeline.run(session, input),
    }
}
