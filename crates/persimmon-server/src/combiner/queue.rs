//! The combiner's queue (`combiner/`): the runs connections handed over,
//! oldest first, and the answer each gets.
//!
//! Invariants: a run is taken out exactly once, in the order it was
//! queued; a unit takes at most [`MAX_UNIT_REQUESTS`] requests, unless its
//! first run alone holds more; queuing a run wakes the combiner, and a
//! wake that finds it busy is kept, so no queued run waits for the next.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Mutex;

use tokio::sync::{oneshot, Notify};

use crate::runs::OwnedRun;

/// Most requests one combined unit holds.
pub const MAX_UNIT_REQUESTS: usize = 1024;

/// The queue of runs waiting for the combiner (one per server).
#[derive(Default)]
pub struct Combiner {
    queue: Mutex<Vec<Job>>,
    wake: Notify,
    running: AtomicBool,
}

/// A connection's run, queued.
pub struct Job {
    pub db: usize,
    pub resp3: bool,
    pub run: OwnedRun,
    pub rows: Vec<usize>,
    pub answer: oneshot::Sender<Answer>,
}

/// What the combiner answers a connection.
pub enum Answer {
    /// Committed: the run's replies, and its share of the unit's time per
    /// request (ns).
    Done { replies: Vec<u8>, share: u64 },
    /// Not run: the connection executes it one by one.
    OneByOne(OwnedRun),
}

impl Combiner {
    /// Whether a combiner task serves the queue.
    pub fn is_running(&self) -> bool {
        self.running.load(Ordering::Acquire)
    }

    /// A combiner task serves the queue from now on.
    pub fn started(&self) {
        self.running.store(true, Ordering::Release);
    }

    /// Waits until a run was queued since the last wait.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    pub fn push(&self, job: Job) {
        self.queue
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .push(job);
        self.wake.notify_one();
    }

    /// The queued jobs, oldest first, up to [`MAX_UNIT_REQUESTS`]
    /// requests (at least one job).
    pub fn take(&self) -> Vec<Job> {
        let mut queue = self.queue.lock().unwrap_or_else(|e| e.into_inner());
        let (mut n, mut requests) = (0, 0);
        while n < queue.len() && (n == 0 || requests + queue[n].rows.len() <= MAX_UNIT_REQUESTS) {
            requests += queue[n].rows.len();
            n += 1;
        }
        queue.drain(..n).collect()
    }
}
