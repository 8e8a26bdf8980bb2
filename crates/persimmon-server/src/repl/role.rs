//! Role changes and the settings that decide a role's behaviour:
//! `REPLICAOF host port` ([`start`]) and `REPLICAOF NO ONE` ([`promote`]),
//! each finished under the stream's lock ([`finish`]); whether a write is
//! refused on a read-only replica or for want of good replicas.
//!
//! Invariants:
//! - A role change bumps the state's epoch first, so an older link stops
//!   before anything of the new role happens.
//! - A new master is followed only once this server keeps a backlog: the
//!   link is requested (`Replication::request_link`) after the backlog
//!   exists, under the stream's lock, so everything the link applies is
//!   relayed into this server's own stream.

use std::time::Instant;

use super::state::{Link, LinkStatus};
use super::stream::{new_replid, Stream};
use crate::shared::Shared;

/// The part of a role change that needs the stream's lock. A `REPLICAOF`
/// inside `EXEC` runs while its connection already holds that lock (the
/// write's turn, see `repl`): the std mutex is not reentrant, so taking it
/// again there hung the server — which is exactly what Sentinel sends
/// (`MULTI`, `REPLICAOF`, `CONFIG REWRITE`, `CLIENT KILL`, `EXEC`). The
/// dispatch then finishes the step with the lock it holds, before letting
/// it go; everywhere else [`finish_now`] takes the lock.
#[derive(Debug)]
pub enum StreamStep {
    /// `REPLICAOF NO ONE`: the history continues under a new id.
    Promote,
    /// `REPLICAOF host port`: keep a backlog, ask for the link task.
    Follow(u64),
}

/// Makes this server a replica of `host:port` (`REPLICAOF`): bumps the
/// epoch, which stops any older link; the returned step asks for the new
/// link task.
#[must_use]
pub fn start(shared: &Shared, host: String, port: u16) -> StreamStep {
    let epoch = {
        let mut st = shared.repl.lock_state();
        st.epoch += 1;
        st.master = Some(Link {
            host,
            port,
            status: LinkStatus::Connect,
            last_io: Instant::now(),
            sync_in_progress: false,
            read_offset: 0,
        });
        st.epoch
    };
    shared.repl.set_replica(true);
    StreamStep::Follow(epoch)
}

/// `REPLICAOF NO ONE`: stops the link; the returned step (none when this
/// server is no replica) continues its history under a new id, the old
/// one valid up to here (psync2).
#[must_use]
pub fn promote(shared: &Shared) -> Option<StreamStep> {
    {
        let mut st = shared.repl.lock_state();
        st.master.take()?;
        st.epoch += 1;
    }
    shared.repl.set_replica(false);
    Some(StreamStep::Promote)
}

/// Does `step` holding the stream's lock (`stream` is its guard).
pub fn finish(shared: &Shared, step: StreamStep, stream: &mut Stream) {
    match step {
        StreamStep::Promote => {
            stream.shift_ids(new_replid());
            stream.forget_selected();
        }
        StreamStep::Follow(epoch) => {
            // A replica keeps a backlog from the start: what it applies is
            // relayed into it, for its own replicas and for a promotion.
            let size = backlog_size(shared);
            shared.repl.activate(stream, size);
            shared.repl.request_link(epoch);
        }
    }
}

/// Does `step`, taking the stream's lock (the caller must not hold it).
pub fn finish_now(shared: &Shared, step: StreamStep) {
    let mut stream = shared.repl.lock_stream();
    finish(shared, step, &mut stream);
}

/// The backlog size setting (`repl-backlog-size`).
pub fn backlog_size(shared: &Shared) -> usize {
    shared
        .settings
        .value("repl-backlog-size")
        .and_then(|v| std::str::from_utf8(&v).ok()?.parse::<usize>().ok())
        .unwrap_or(1 << 20)
}

/// Whether a client's write must be refused: a read-only replica
/// (`replica-read-only yes`, the default).
pub fn refuses_writes(shared: &Shared) -> bool {
    shared.repl.is_replica()
        && shared
            .settings
            .value("replica-read-only")
            .is_none_or(|v| v.eq_ignore_ascii_case(b"yes"))
}

/// Whether a replica refuses the commands not flagged `stale`: its link
/// to the master is not up and `replica-serve-stale-data` is `no`.
pub fn refuses_stale(shared: &Shared) -> bool {
    shared.repl.is_replica()
        && shared
            .settings
            .value("replica-serve-stale-data")
            .is_some_and(|v| v.eq_ignore_ascii_case(b"no"))
        && shared
            .repl
            .lock_state()
            .master
            .as_ref()
            .is_none_or(|m| m.status != LinkStatus::Connected)
}

/// Whether `min-replicas-to-write` replicas acknowledged within
/// `min-replicas-max-lag` seconds (a replica never refuses its master's
/// writes on that account).
pub fn enough_replicas(shared: &Shared) -> bool {
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
