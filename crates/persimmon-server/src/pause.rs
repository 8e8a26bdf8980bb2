//! `CLIENT PAUSE` / `CLIENT UNPAUSE`: holding clients' commands back for a
//! while. `ALL` holds every command; `WRITE` holds the commands that may
//! change the data or the replication stream (Redis's `write` and
//! `may_replicate` rows, an `EXEC` holding one, a script that may write).
//! A held command waits, it does not fail: its connection awaits the end
//! of the pause, then runs it.
//!
//! Invariants:
//! - The connection checks [`Pause::active`] (one relaxed load) before each
//!   request; everything else happens only while a pause is on.
//! - Pauses combine as in Redis: a new pause keeps the later end and the
//!   stricter kind of the two; `CLIENT UNPAUSE` ends it at once.
//! - A waiting connection counts in `blocked_clients` (INFO) and is woken
//!   by the unpause (or its own timer at the pause's end), never by
//!   polling.
//! - Replicas' links and the server's internal sessions are never held
//!   (they run through other paths than the connection's).

use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};
use std::time::Instant;

use tokio::sync::Notify;

/// What a pause holds.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Kind {
    Write = 1,
    All = 2,
}

/// The server's pause.
#[derive(Default)]
pub struct Pause {
    /// 0: none; else `Kind as u8` (the fast check).
    kind: AtomicU8,
    until: Mutex<Option<(Kind, Instant)>>,
    notify: Notify,
    waiting: AtomicUsize,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Pause {
    /// Whether a pause may be on (one relaxed load).
    #[inline]
    pub fn active(&self) -> bool {
        self.kind.load(Ordering::Relaxed) != 0
    }

    /// Pauses `kind` until `until`, combined with a pause already on.
    pub fn pause(&self, kind: Kind, until: Instant) {
        let mut g = lock(&self.until);
        let next = match *g {
            Some((k, u)) => (k.max(kind), u.max(until)),
            None => (kind, until),
        };
        *g = Some(next);
        self.kind.store(next.0 as u8, Ordering::Relaxed);
    }

    /// Ends the pause and wakes the held clients.
    pub fn unpause(&self) {
        *lock(&self.until) = None;
        self.kind.store(0, Ordering::Relaxed);
        self.notify.notify_waiters();
    }

    /// The end of the pause that holds a command (`writes`: one that may
    /// write), if one does now. An expired pause is ended here.
    pub fn holding(&self, writes: bool) -> Option<Instant> {
        let (kind, until) = (*lock(&self.until))?;
        if Instant::now() >= until {
            self.unpause();
            return None;
        }
        (kind == Kind::All || writes).then_some(until)
    }

    /// Waits while a pause holds a command (`writes`: one that may write).
    pub async fn wait(&self, writes: bool) {
        self.waiting.fetch_add(1, Ordering::Relaxed);
        // Counted down however the wait ends (dropped when the client is
        // killed too).
        struct Waiting<'a>(&'a AtomicUsize);
        impl Drop for Waiting<'_> {
            fn drop(&mut self) {
                self.0.fetch_sub(1, Ordering::Relaxed);
            }
        }
        let _waiting = Waiting(&self.waiting);
        loop {
            // Made before the check: an unpause in between still wakes it.
            let woken = self.notify.notified();
            let Some(until) = self.holding(writes) else {
                break;
            };
            tokio::select! {
                _ = woken => {}
                _ = tokio::time::sleep_until(until.into()) => {}
            }
        }
    }

    /// Clients waiting for the pause to end (`INFO` `blocked_clients`).
    pub fn waiting(&self) -> usize {
        self.waiting.load(Ordering::Relaxed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::time::Duration;

    #[test]
    fn pauses_combine_and_end() {
        let p = Pause::default();
        assert!(!p.active());
        let later = Instant::now() + Duration::from_secs(60);
        p.pause(Kind::All, Instant::now() + Duration::from_secs(30));
        p.pause(Kind::Write, later);
        assert!(p.active());
        // The stricter kind and the later end.
        assert_eq!(p.holding(false), Some(later));
        p.unpause();
        assert_eq!(p.holding(true), None);
        p.pause(Kind::Write, later);
        assert_eq!(p.holding(false), None);
        assert_eq!(p.holding(true), Some(later));
        p.pause(Kind::Write, Instant::now());
        p.unpause();
        p.pause(Kind::Write, Instant::now() - Duration::from_millis(1));
        assert_eq!(p.holding(true), None);
        assert!(!p.active());
    }
}
