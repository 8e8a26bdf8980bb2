//! The clients' cron: once a second, each connection idle for
//! `IDLE_RELEASE` with an input buffer is asked to give the buffer back
//! (Redis frees an idle client's query buffer after 2 s), so a server with
//! many idle clients does not keep a read buffer for each. The connection
//! does it itself, between reads (`conn.rs`): no connection pays a timer
//! per read.
//!
//! Invariant: only asks; a connection that received input meanwhile keeps
//! its buffer.

use std::sync::atomic::Ordering;
use std::sync::{Arc, Weak};
use std::time::Duration;

use crate::shared::Shared;

/// Idle time after which a connection gives its input buffer back.
const IDLE_RELEASE_MS: u64 = 2000;
/// How often the cron looks.
const EVERY: Duration = Duration::from_secs(1);

/// Starts the cron; it ends with the server.
pub fn spawn(shared: &Arc<Shared>) {
    let weak: Weak<Shared> = Arc::downgrade(shared);
    tokio::spawn(async move {
        loop {
            tokio::time::sleep(EVERY).await;
            let Some(shared) = weak.upgrade() else { return };
            if shared.is_stopping() {
                return;
            }
            release_idle(&shared);
        }
    });
}

fn release_idle(shared: &Shared) {
    let now = shared.now_ms();
    let clients: Vec<_> = shared
        .clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .cloned()
        .collect();
    for c in clients {
        let idle = now.saturating_sub(c.last_active_ms.load(Ordering::Relaxed));
        let holding = c.query_buffer_free.load(Ordering::Relaxed) > 0
            && c.query_buffer_bytes.load(Ordering::Relaxed) == 0;
        if idle >= IDLE_RELEASE_MS && holding {
            c.request_release();
        }
    }
}
