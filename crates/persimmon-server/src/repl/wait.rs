//! `WAIT numreplicas timeout`: blocks the client until that many replicas
//! acknowledged the stream's offset after its last write, or until the
//! timeout, and replies how many did.
//!
//! The handler only records the request (`WaitFor`); the connection then
//! calls [`wait`], which appends `REPLCONF GETACK *` to the stream (so
//! replicas acknowledge at once instead of at their next one-second ack)
//! and sleeps on `Replication::acked` between counts.
//!
//! Invariants: the count is taken under the state lock from the replicas'
//! own acknowledgements, never assumed; a replica of Persimmon
//! acknowledges an offset only once every write up to it is durable on it;
//! a client that wrote nothing waits for offset 0 (every replica counts).

use std::sync::Arc;
use std::time::{Duration, Instant};

use super::client::WaitFor;
use crate::shared::Shared;

/// How many replicas acknowledged `offset`.
pub fn count(shared: &Shared, offset: u64) -> usize {
    shared
        .repl
        .lock_state()
        .replicas
        .values()
        .filter(|p| p.ack >= offset)
        .count()
}

/// Asks every replica for an acknowledgement now.
pub fn request_acks(shared: &Shared) {
    if let Some(mut stream) = shared.repl.turn() {
        stream.command_anywhere(&[b"REPLCONF".to_vec(), b"GETACK".to_vec(), b"*".to_vec()]);
    }
}

/// Waits as WAIT does; returns the count to reply.
pub async fn wait(shared: Arc<Shared>, w: WaitFor) -> usize {
    let mut asked = false;
    loop {
        let notified = shared.repl.acked.notified();
        let n = count(&shared, w.offset);
        if n >= w.replicas || shared.repl.is_replica() {
            return n;
        }
        if !asked {
            tokio::task::block_in_place(|| request_acks(&shared));
            asked = true;
        }
        let mut sleep = Duration::from_millis(100);
        if let Some(d) = w.deadline {
            let now = Instant::now();
            if now >= d {
                return n;
            }
            sleep = sleep.min(d - now);
        }
        let _ = tokio::time::timeout(sleep, notified).await;
    }
}
