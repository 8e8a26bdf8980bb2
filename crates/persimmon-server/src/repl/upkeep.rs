//! Replication's background work, every 100 ms while the server runs: a
//! master's `DEL`s for keys its replicas were told expire (`expiry`), and
//! its `PING` every `repl-ping-replica-period` seconds (so an idle link
//! stays alive and replicas see their master; redis-server replicas drop a
//! master silent for `repl-timeout`). At start it also takes the role the
//! configuration names (`replicaof`).
//!
//! Invariant: every append here holds the stream's lock, as a write does.

use std::sync::Arc;

use persimmon_types::store::Store;

use super::expiry::{look, Now};
use super::role;
use crate::shared::Shared;

/// Starts replication's background work: the link to the configured
/// master (`replicaof`), and the master's PING to its replicas every
/// `repl-ping-replica-period` seconds (so an idle link stays alive and
/// replicas see their master; redis-server replicas drop a master silent
/// for `repl-timeout`).
pub fn spawn(shared: &Arc<Shared>) {
    if let Some((host, port)) = shared.config.replicaof.clone() {
        let step = role::start(shared, host, port);
        role::finish_now(shared, step);
    }
    let weak = Arc::downgrade(shared);
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

/// One pass of `expiry`: a `DEL` for each key whose noted deadline passed
/// and that is gone from the master.
fn propagate_expiries(shared: &Arc<Shared>) {
    let Some(mut stream) = shared.repl.turn() else {
        return;
    };
    let now = shared.keyspace.db.now_ms();
    let due = stream.deadlines.due(now);
    if due.is_empty() {
        return;
    }
    let _map = shared.keyspace.dbs.shared();
    let mut store = Store::new(shared.keyspace.clone());
    for (db, key) in due {
        match look(&mut store, db, &key) {
            Now::Gone => stream.command(db, &[b"DEL".to_vec(), key]),
            Now::ExpiresAt(at) => stream.deadlines.add(at.max(now + 1), db, &key),
            Now::Persistent => {}
        }
    }
}
