//! Clients blocked on keys (BLPOP, BLMOVE, BZPOPMIN, ...): who waits for
//! which key, in what order, and how a waiter learns its outcome.
//!
//! A blocked client registers one [`Waiter`] under each of its keys (a
//! database index and a Redis key) and its connection awaits the waiter's
//! `Notify`. A write to a key someone waits on is recorded by the writer's
//! store (`Store::signal_ready`, the one hook every write path calls); after
//! the command the dispatch *serves* those keys (`commands/blocking.rs`):
//! for each key, the waiters queued on it in the order they blocked, running
//! each one's pop *on the waiter's behalf* in the writer's session and
//! handing over the result. So, as in Redis, the element a push adds is
//! taken before the pusher's next command runs and before its reply leaves,
//! and waiters on one key are served first come, first served. The waiter's
//! connection only writes the reply in its own protocol (RESP2 or RESP3).
//!
//! Invariants:
//! - A waiter's outcome is decided exactly once, under its own lock: served
//!   (by whoever serves the key: a writer, or the waiter's own re-check),
//!   timed out, unblocked (`CLIENT UNBLOCK`) or dropped (the client went
//!   away). A pop is run for a waiter only while holding that lock and only
//!   while it still waits, so no element is popped for a waiter that has
//!   already timed out or left, and no waiter is served twice.
//! - FIFO: per key, waiters are queued in registration order and served
//!   from the front; a waiter that cannot take this key's value (another
//!   type: a BLPOP waiter on a key that holds a sorted set) keeps its place.
//! - `waiting` counts registered waiters. While it is zero a write pays one
//!   atomic load for all this (the store's fast path); a waiter increments
//!   it *before* its own re-check of its keys, so a write either sees the
//!   count or is seen by that re-check (both sides `SeqCst`). A timed
//!   re-check every `RECHECK` (conn.rs) covers anything missed all the same.
//! - Lock order: the registry's map lock and a waiter's state lock are never
//!   held together (a server copies a queue, then locks waiters one by one).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::Instant;

use persimmon_types::stream::{Fields, StreamId};
use persimmon_types::{Error, Waiters};
use tokio::sync::Notify;

/// What a waiter does when one of its keys is ready.
#[derive(Clone, Debug, PartialEq)]
pub enum Op {
    /// BLPOP/BRPOP (`count` `None`) and BLMPOP (`Some`).
    ListPop { head: bool, count: Option<usize> },
    /// BLMOVE and BRPOPLPUSH: from the key to `dst`.
    ListMove {
        dst: Vec<u8>,
        from_head: bool,
        to_head: bool,
    },
    /// BZPOPMIN/BZPOPMAX (`count` `None`) and BZMPOP (`Some`).
    ZSetPop { max: bool, count: Option<usize> },
    /// XREAD and XREADGROUP with BLOCK.
    StreamRead(StreamWait),
}

/// What a blocked XREAD or XREADGROUP waits for.
#[derive(Clone, Debug, PartialEq)]
pub struct StreamWait {
    /// Each key and the id its entries must follow (XREAD).
    pub after: Vec<(Vec<u8>, StreamId)>,
    /// COUNT (0: all).
    pub count: usize,
    /// XREADGROUP's group, consumer and NOACK (reading `>`).
    pub group: Option<GroupRead>,
}

/// XREADGROUP's GROUP group consumer and NOACK.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupRead {
    pub group: Vec<u8>,
    pub consumer: Vec<u8>,
    pub noack: bool,
}

/// Entries a stream read found (fields `None`: a pending id whose entry
/// is gone).
pub type StreamHits = Vec<(StreamId, Option<Fields>)>;

/// What a pop for a waiter took.
#[derive(Clone, Debug, PartialEq)]
pub enum Served {
    /// Elements popped from the list at `key`, in pop order.
    List {
        key: Vec<u8>,
        elements: Vec<Vec<u8>>,
    },
    /// The element a move took (and pushed to its destination).
    Moved(Vec<u8>),
    /// Members and scores popped from the sorted set at `key`.
    ZSet {
        key: Vec<u8>,
        entries: Vec<(Vec<u8>, f64)>,
    },
    /// Entries a blocked stream read got from the stream at `key`.
    Stream { key: Vec<u8>, found: StreamHits },
}

/// How a blocked command ends.
#[derive(Clone, Debug, PartialEq)]
pub enum Outcome {
    Served(Served),
    /// An error reply (BLMOVE onto a key of another type, `CLIENT UNBLOCK
    /// ... ERROR`).
    Failed(Error),
    /// The timeout passed (or `CLIENT UNBLOCK ... TIMEOUT`): a nil reply.
    TimedOut,
}

/// What one attempt to serve a waiter from a key found.
pub enum Attempt {
    /// The waiter's outcome: it is woken and leaves every queue.
    Done(Outcome),
    /// The key holds another type than this waiter pops: it keeps waiting
    /// (and its place), the next waiter may still be served.
    Skip,
    /// Nothing left at the key: no later waiter can be served from it now.
    Empty,
}

enum State {
    Waiting,
    Decided(Outcome),
    /// The outcome was taken by the connection, or the client left.
    Over,
}

/// One blocked client.
pub struct Waiter {
    pub client_id: u64,
    /// The database its keys are in (its selected database when it blocked).
    pub db: usize,
    /// Its keys, in the order given, without repeats.
    pub keys: Vec<Vec<u8>>,
    pub op: Op,
    state: Mutex<State>,
    notify: Notify,
    /// Whether it is (still) in the queues and counted in `waiting`.
    queued: AtomicBool,
}

impl Waiter {
    fn state(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

type Queues = HashMap<(usize, Vec<u8>), VecDeque<Arc<Waiter>>>;

struct Registry {
    /// The registered waiters' count, shared with the key space, whose
    /// stores read it on every write.
    waiting: Arc<Waiters>,
    queues: Mutex<Queues>,
}

impl Registry {
    fn queues(&self) -> MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Takes `w` out of every queue (once; later calls do nothing).
    fn dequeue(&self, w: &Arc<Waiter>) {
        if !w.queued.swap(false, Ordering::SeqCst) {
            return;
        }
        let mut queues = self.queues();
        for key in &w.keys {
            let k = (w.db, key.clone());
            if let Some(q) = queues.get_mut(&k) {
                q.retain(|x| !Arc::ptr_eq(x, w));
                if q.is_empty() {
                    queues.remove(&k);
                }
            }
        }
        self.waiting.remove();
    }
}

/// The server's blocked clients (one, in `Shared`).
pub struct Blocked {
    registry: Arc<Registry>,
}

impl Blocked {
    /// No client blocked yet; `waiting` is the key space's count of them.
    pub fn new(waiting: Arc<Waiters>) -> Blocked {
        Blocked {
            registry: Arc::new(Registry {
                waiting,
                queues: Mutex::default(),
            }),
        }
    }

    /// Whether any client is blocked: the fast path of every write.
    pub fn any(&self) -> bool {
        self.registry.waiting.any()
    }

    /// How many clients are blocked (`INFO clients`).
    pub fn count(&self) -> usize {
        self.registry.waiting.count()
    }

    /// Queues a new waiter at the back of each of its keys' queues; it
    /// waits until `deadline` (`None`: forever). Dropping the registration
    /// takes it out again.
    pub fn register(
        &self,
        client_id: u64,
        db: usize,
        mut keys: Vec<Vec<u8>>,
        op: Op,
        deadline: Option<Instant>,
    ) -> Registration {
        let mut seen = std::collections::HashSet::new();
        keys.retain(|k| seen.insert(k.clone()));
        let waiter = Arc::new(Waiter {
            client_id,
            db,
            keys,
            op,
            state: Mutex::new(State::Waiting),
            notify: Notify::new(),
            queued: AtomicBool::new(true),
        });
        {
            let mut queues = self.registry.queues();
            for key in &waiter.keys {
                queues
                    .entry((db, key.clone()))
                    .or_default()
                    .push_back(waiter.clone());
            }
            self.registry.waiting.add();
        }
        Registration {
            registry: self.registry.clone(),
            waiter,
            deadline,
        }
    }

    /// The waiters on `key` of database `db`, first blocked first.
    pub fn queue(&self, db: usize, key: &[u8]) -> Vec<Arc<Waiter>> {
        if !self.any() {
            return Vec::new();
        }
        self.registry
            .queues()
            .get(&(db, key.to_vec()))
            .map(|q| q.iter().cloned().collect())
            .unwrap_or_default()
    }

    /// The keys clients wait on in database `db` (for SWAPDB, which changes
    /// what every key of the database holds).
    pub fn keys_in(&self, db: usize) -> Vec<Vec<u8>> {
        if !self.any() {
            return Vec::new();
        }
        self.registry
            .queues()
            .keys()
            .filter(|(d, _)| *d == db)
            .map(|(_, k)| k.clone())
            .collect()
    }

    /// Runs `attempt` for `w` if it still waits, holding its lock, and
    /// applies what it found: a decided outcome dequeues and wakes it.
    /// Returns whether serving the key should go on to the next waiter.
    pub fn serve(&self, w: &Arc<Waiter>, attempt: impl FnOnce(&Waiter) -> Attempt) -> bool {
        let mut state = w.state();
        if !matches!(*state, State::Waiting) {
            drop(state);
            self.registry.dequeue(w);
            return true;
        }
        match attempt(w) {
            Attempt::Done(outcome) => {
                *state = State::Decided(outcome);
                drop(state);
                self.registry.dequeue(w);
                w.notify.notify_one();
                true
            }
            Attempt::Skip => true,
            Attempt::Empty => false,
        }
    }

    /// CLIENT UNBLOCK: ends the wait of client `client_id` with `outcome`.
    /// Returns whether that client was blocked.
    pub fn unblock(&self, client_id: u64, outcome: Outcome) -> bool {
        let found = self
            .registry
            .queues()
            .values()
            .flat_map(|q| q.iter())
            .find(|w| w.client_id == client_id)
            .cloned();
        let Some(w) = found else { return false };
        let mut state = w.state();
        if !matches!(*state, State::Waiting) {
            return false;
        }
        *state = State::Decided(outcome);
        drop(state);
        self.registry.dequeue(&w);
        w.notify.notify_one();
        true
    }
}

/// A blocked client's hold on its waiter: owned by its session, then by
/// its connection while it waits. Dropping it (the client disconnected,
/// the server is stopping) takes the waiter out of every queue.
pub struct Registration {
    registry: Arc<Registry>,
    pub waiter: Arc<Waiter>,
    /// When it times out (`None`: never).
    pub deadline: Option<Instant>,
}

impl Registration {
    /// Resolves when something may have decided the outcome.
    pub async fn notified(&self) {
        self.waiter.notify.notified().await
    }

    /// The outcome, once decided (taken: later calls give `None`).
    pub fn outcome(&self) -> Option<Outcome> {
        let mut state = self.waiter.state();
        match std::mem::replace(&mut *state, State::Over) {
            State::Decided(o) => Some(o),
            other => {
                *state = other;
                None
            }
        }
    }

    /// Ends the wait at its deadline: the outcome decided meanwhile if
    /// there is one (a serve won the race), else a timeout.
    pub fn time_out(&self) -> Outcome {
        let decided = {
            let mut state = self.waiter.state();
            match std::mem::replace(&mut *state, State::Over) {
                State::Decided(o) => o,
                _ => Outcome::TimedOut,
            }
        };
        self.registry.dequeue(&self.waiter);
        decided
    }
}

impl Drop for Registration {
    fn drop(&mut self) {
        *self.waiter.state() = State::Over;
        self.registry.dequeue(&self.waiter);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pop() -> Op {
        Op::ListPop {
            head: true,
            count: None,
        }
    }

    fn served(key: &str) -> Attempt {
        Attempt::Done(Outcome::Served(Served::Moved(key.as_bytes().to_vec())))
    }

    #[test]
    fn waiters_are_served_in_the_order_they_blocked_and_counted() {
        let b = Blocked::new(Arc::default());
        assert!(!b.any());
        let r1 = b.register(1, 0, vec![b"k".to_vec(), b"k".to_vec()], pop(), None);
        let r2 = b.register(2, 0, vec![b"j".to_vec(), b"k".to_vec()], pop(), None);
        let other_db = b.register(3, 1, vec![b"k".to_vec()], pop(), None);
        assert_eq!(b.count(), 3);
        assert_eq!(r1.waiter.keys, vec![b"k".to_vec()], "repeats dropped");
        let q = b.queue(0, b"k");
        assert_eq!(q.iter().map(|w| w.client_id).collect::<Vec<_>>(), [1, 2]);
        // Serve the first only: the key runs dry after it.
        assert!(b.serve(&q[0], |_| served("a")));
        assert!(!b.serve(&q[1], |_| Attempt::Empty));
        assert_eq!(
            r1.outcome(),
            Some(Outcome::Served(Served::Moved(b"a".to_vec())))
        );
        assert_eq!(r1.outcome(), None, "taken once");
        assert_eq!(r2.outcome(), None);
        assert_eq!(b.count(), 2);
        // The second is now first on both its keys.
        assert_eq!(b.queue(0, b"k")[0].client_id, 2);
        assert_eq!(b.queue(0, b"j")[0].client_id, 2);
        assert_eq!(b.keys_in(1), vec![b"k".to_vec()]);
        drop(other_db);
        assert!(b.queue(1, b"k").is_empty());
        assert_eq!(r2.time_out(), Outcome::TimedOut);
        assert!(!b.any());
        assert!(b.queue(0, b"j").is_empty() && b.queue(0, b"k").is_empty());
    }

    #[test]
    fn a_skipped_waiter_keeps_its_place_and_a_decided_one_is_not_served_again() {
        let b = Blocked::new(Arc::default());
        let r1 = b.register(1, 0, vec![b"k".to_vec()], pop(), None);
        let r2 = b.register(2, 0, vec![b"k".to_vec()], pop(), None);
        let q = b.queue(0, b"k");
        assert!(b.serve(&q[0], |_| Attempt::Skip));
        assert!(b.serve(&q[1], |_| served("x")));
        assert_eq!(b.queue(0, b"k")[0].client_id, 1);
        // A timeout that loses the race gets the served outcome.
        assert!(b.serve(&q[0], |_| served("y")));
        assert!(b.serve(&q[0], |_| panic!("not served twice")));
        assert_eq!(r1.time_out(), Outcome::Served(Served::Moved(b"y".to_vec())));
        assert!(r2.outcome().is_some());
        assert!(!b.any());
    }

    #[test]
    fn unblock_decides_only_a_waiting_client() {
        let b = Blocked::new(Arc::default());
        let r = b.register(7, 0, vec![b"k".to_vec()], pop(), None);
        assert!(!b.unblock(8, Outcome::TimedOut));
        assert!(b.unblock(7, Outcome::TimedOut));
        assert!(!b.unblock(7, Outcome::TimedOut));
        assert_eq!(r.outcome(), Some(Outcome::TimedOut));
    }
}
