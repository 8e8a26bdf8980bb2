//! The combiner's queue (`combiner/`): the runs connections handed over,
//! oldest first, and the answer each gets.
//!
//! Who executes runs: while nobody does, the first connection with a run
//! *leads*: it executes its own run at once, in its own task (a lone
//! client pays no hand-over). While someone leads or the combiner works,
//! other connections queue their runs. A leader that finds runs queued when
//! it is done hands them to the combiner task, which executes the queue a
//! unit at a time until it is empty.
//!
//! Invariants:
//! - At most one owner (a leader or the combiner) at a time; runs are
//!   queued only while there is one, and the owner looks at the queue
//!   under the same lock before it lets go, so no queued run is left
//!   without an owner to execute it.
//! - A run is taken out exactly once, in the order it was queued; a unit
//!   takes at most [`MAX_UNIT_REQUESTS`] requests, unless its first run
//!   alone holds more.
//! - A leader lets go when its [`Leading`] is dropped, also when its run
//!   panicked.

use std::sync::Mutex;

use tokio::sync::{oneshot, Notify};

use crate::runs::OwnedRun;

/// Most requests one combined unit holds.
pub const MAX_UNIT_REQUESTS: usize = 1024;

/// Who executes runs now.
#[derive(Clone, Copy, PartialEq, Eq, Default, Debug)]
enum Owner {
    #[default]
    Nobody,
    Leader,
    Combiner,
}

#[derive(Default)]
struct State {
    jobs: Vec<Job>,
    owner: Owner,
}

/// The queue of runs waiting for the combiner (one per server).
#[derive(Default)]
pub struct Combiner {
    state: Mutex<State>,
    wake: Notify,
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

/// A connection leads (see the module header) while this lives.
pub struct Leading<'a> {
    combiner: &'a Combiner,
}

impl Drop for Leading<'_> {
    fn drop(&mut self) {
        let mut st = self.combiner.lock();
        debug_assert_eq!(st.owner, Owner::Leader, "a leader owns until it lets go");
        if st.jobs.is_empty() {
            st.owner = Owner::Nobody;
        } else {
            st.owner = Owner::Combiner;
            self.combiner.wake.notify_one();
        }
    }
}

impl Combiner {
    /// Waits until runs were handed to the combiner.
    pub async fn woken(&self) {
        self.wake.notified().await;
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Leads, when nobody executes runs now.
    pub fn lead(&self) -> Option<Leading<'_>> {
        let mut st = self.lock();
        (st.owner == Owner::Nobody).then(|| {
            st.owner = Owner::Leader;
            Leading { combiner: self }
        })
    }

    /// Queues `job` for the owner executing runs now; gives it back when
    /// there is none any more (the caller then leads).
    pub fn queue(&self, job: Job) -> Result<(), Job> {
        let mut st = self.lock();
        if st.owner == Owner::Nobody {
            return Err(job);
        }
        st.jobs.push(job);
        Ok(())
    }

    /// For the combiner: the queued jobs, oldest first, up to
    /// [`MAX_UNIT_REQUESTS`] requests (at least one job); none when the
    /// queue is empty (the combiner then lets go) or the combiner does not
    /// own it (a stale wake).
    pub fn take(&self) -> Vec<Job> {
        let mut st = self.lock();
        if st.owner != Owner::Combiner {
            return Vec::new();
        }
        if st.jobs.is_empty() {
            st.owner = Owner::Nobody;
            return Vec::new();
        }
        let (mut n, mut requests) = (0, 0);
        while n < st.jobs.len() && (n == 0 || requests + st.jobs[n].rows.len() <= MAX_UNIT_REQUESTS)
        {
            requests += st.jobs[n].rows.len();
            n += 1;
        }
        st.jobs.drain(..n).collect()
    }
}
