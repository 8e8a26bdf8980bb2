//! Flat combining across connections (issue 33): the runs of collection
//! writes (`unit_run.rs`) of many clients, a hot key's pushes say, commit
//! as one atomic unit — one set of fences, each collection encoded once —
//! instead of one unit per client, each conflicting with the others.
//!
//! A connection with a run copies it out of its input. When nobody is
//! executing runs, it *leads*: it executes the run at once in its own task
//! (`unit_run::run`), so a lone client pays nothing for combining.
//! Otherwise it queues the run with its database and protocol
//! (`queue.rs`) and awaits the answer. A leader that finds runs queued
//! when it is done hands them to one task, the *combiner*, which takes
//! them in order, executes them as one unit in a session of its own
//! (`unit_run::execute`), and answers each connection with its replies;
//! the connection queues them and counts its requests as it would have.
//! Between units the combiner yields, so the runs that arrive meanwhile
//! make up the next unit; once the queue is empty nobody owns it and the
//! next run is led again.
//!
//! Invariants:
//! - The outcome is that of executing the queued runs one after another in
//!   queue order, each run's requests in order, with nothing between them:
//!   they share one overlay and one serializable, all-or-nothing commit.
//! - Durable before any reply: the combiner answers after the commit
//!   returned, and the connection sends the replies after its own
//!   `durable()` wait, as for any command.
//! - A unit that cannot go (a request failed, a client blocked on a key,
//!   replication on, conflicts kept coming) is written nowhere: each run
//!   goes back to its connection, which executes it one by one.
//! - Each run's requests were checked by its own connection (`joins`:
//!   authentication, settings, read-only replica) before it was queued; the
//!   combiner's session is only where they run.
//! - A unit holds at most [`queue::MAX_UNIT_REQUESTS`] requests (the rest wait
//!   for the next), so no reply waits on an unbounded unit.
//! - If the combiner ever fails while running a unit (a panic: nothing was
//!   committed), each connection of that unit replies an error to each of
//!   its requests, and the combiner goes on with a new session.

pub mod queue;

use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::Arc;
use std::time::Instant;

use tokio::sync::oneshot;

use crate::commands::table::COMMANDS;
use crate::pipeline::one_by_one;
use crate::runs::OwnedRun;
use crate::session::Session;
use crate::shared::Shared;
use crate::unit_run::{self, Part};
use queue::{Answer, Job};

/// Executes `run` (a run of combined writes of session `s`'s connection)
/// through the combiner, or one by one when it may not join a unit.
pub async fn submit(s: &mut Session, mut run: OwnedRun) {
    let Some(rows) = unit_run::rows_of(s, &run.view()) else {
        return one_by_one(s, &run.view());
    };
    let shared = s.shared.clone();
    let receive = loop {
        if let Some(_leading) = shared.combiner.lead() {
            // Nobody else executes runs: this one at once, here.
            if !unit_run::run(s, &run.view(), &rows) {
                one_by_one(s, &run.view());
            }
            return;
        }
        let (answer, receive) = oneshot::channel();
        let job = Job {
            db: s.store.db,
            resp3: s.out.resp3,
            run,
            rows: rows.clone(),
            answer,
        };
        match shared.combiner.queue(job) {
            Ok(()) => break receive,
            // The owner let go meanwhile: lead.
            Err(job) => run = job.run,
        }
    };
    match receive.await {
        Ok(Answer::Done { replies, share }) => {
            s.out.buf.extend_from_slice(&replies);
            unit_run::count(s, &rows, share);
        }
        Ok(Answer::OneByOne(run)) => one_by_one(s, &run.view()),
        Err(_) => {
            for _ in &rows {
                s.out.error(
                    "ERR the server failed while running this command in a combined unit; \
                     nothing of that unit was written",
                );
            }
        }
    }
}

/// Starts the combiner task of `shared` (on the current runtime).
pub fn spawn(shared: &Arc<Shared>) {
    let shared = shared.clone();
    tokio::spawn(async move {
        let mut s = Session::internal(&shared, &COMMANDS);
        loop {
            shared.combiner.woken().await;
            loop {
                let jobs = shared.combiner.take();
                if jobs.is_empty() {
                    break;
                }
                let ran = std::panic::catch_unwind(AssertUnwindSafe(|| combine(&mut s, jobs)));
                if ran.is_err() {
                    s = Session::internal(&shared, &COMMANDS);
                }
                // The runs that arrive meanwhile make up the next unit.
                tokio::task::yield_now().await;
            }
        }
    });
}

/// Runs `jobs` as one unit and answers each.
fn combine(s: &mut Session, jobs: Vec<Job>) {
    let started = Instant::now();
    let parts: Vec<Part<'_>> = jobs
        .iter()
        .map(|j| Part {
            db: j.db,
            resp3: j.resp3,
            run: j.run.view(),
            rows: &j.rows,
        })
        .collect();
    let replies = unit_run::execute(s, &parts);
    drop(parts);
    let requests: usize = jobs.iter().map(|j| j.rows.len()).sum();
    let share = started.elapsed().as_nanos() as u64 / requests.max(1) as u64;
    let stats = &s.shared.stats;
    match replies {
        Some(replies) => {
            stats.combined_units.fetch_add(1, Ordering::Relaxed);
            stats
                .combined_runs
                .fetch_add(jobs.len() as u64, Ordering::Relaxed);
            for (job, r) in jobs.into_iter().zip(replies) {
                let replies = s.out.buf[r].to_vec();
                // A connection gone meanwhile needs no answer.
                let _ = job.answer.send(Answer::Done { replies, share });
            }
        }
        None => {
            for job in jobs {
                let _ = job.answer.send(Answer::OneByOne(job.run));
            }
        }
    }
    s.out.buf.clear();
    s.out.errors = Default::default();
}
