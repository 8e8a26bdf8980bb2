//! A pipeline's run of writes as one atomic unit of the store (issue 33):
//! consecutive requests of the commands [`COMBINED`] names — pushes, pops,
//! adds, removes, field sets of lists, sets, hashes and sorted sets — on
//! any keys, the same key or not. The run's handlers all write into one overlay, which commits as one
//! engine batch: one set of fences for the run, and a collection the run
//! changes many times is written once per run, not once per request.
//!
//! Invariants:
//! - The outcome is that of executing the requests one by one, in order,
//!   with no other client's command between them: each handler sees the
//!   writes of the requests before it (they share the overlay), and the
//!   commit is all-or-nothing and serializable (`Store::commit` checks the
//!   version of every key the run read).
//! - A collection changed by several requests of the run stays decoded
//!   between them (`Store`'s parking) and is encoded once, at the commit.
//! - A request that fails (a wrong type, a bad argument) ends the attempt
//!   unwritten and the run goes one by one, where it fails alone, having
//!   written nothing, and its reply is its error.
//! - Durable before any reply: replies are queued as the handlers run, but
//!   the connection sends nothing before the run has returned, and the run
//!   returns after the commit (durable on return). A run that did not
//!   commit leaves no reply, no count and no error tally behind: it runs
//!   again (after the first conflict holding the key space's turn, so it
//!   cannot keep losing), or after [`ATTEMPTS`] goes one by one.
//! - Each request is counted as `execute` counts it (a call of its row,
//!   failed or not, with a share of the run's time when timed).
//! - Runs are only made when nothing observes the gaps between requests:
//!   no client blocked on keys (a push would serve them per command),
//!   replication off (the stream gets writes per command), outside `MULTI`,
//!   with replies on, every request checked as `execute` checks it
//!   (`dispatch::runnable_as`) and none refused on a read-only replica.

use std::time::Instant;

use persimmon_resp::Args;

use crate::commands::blocking::serve_ready;
use crate::dispatch::{run_in_unit, runnable_as};
use crate::pipeline::Run;
use crate::session::Session;

/// Commands a run may hold, with the argument counts (the name included)
/// they may have in it: the collection writes whose handlers touch nothing
/// but the store and the reply, never block, and reply in a bounded size.
/// String writes (INCR, MSET, DEL...) are not here: their own paths (an
/// in-place engine update, one batch) measured faster than a unit's
/// overlay, 0.65–0.70× of their own rate inside runs.
const COMBINED: &[(&str, usize, usize)] = &[
    ("lpush", 3, usize::MAX),
    ("rpush", 3, usize::MAX),
    ("lpop", 2, 2),
    ("rpop", 2, 2),
    ("sadd", 3, usize::MAX),
    ("srem", 3, usize::MAX),
    ("spop", 2, 2),
    ("hset", 4, usize::MAX),
    ("hdel", 3, usize::MAX),
    ("hincrby", 4, 4),
    ("zadd", 4, usize::MAX),
    ("zrem", 3, usize::MAX),
    ("zincrby", 4, 4),
    ("zpopmin", 2, 2),
    ("zpopmax", 2, 2),
];

/// Attempts a run makes before its requests go one by one.
const ATTEMPTS: u32 = 4;

/// The row of request `args` when it may join a run.
pub fn joins(s: &Session, args: &Args<'_>) -> Option<usize> {
    let name = args.get(0);
    let &(known, least, most) = COMBINED
        .iter()
        .find(|(n, ..)| name.eq_ignore_ascii_case(n.as_bytes()))?;
    if args.len() < least || args.len() > most {
        return None;
    }
    let row = runnable_as(s, args, known, args.len())?;
    (!crate::repl::role::refuses_writes(&s.shared)).then_some(row)
}

/// Executes `run` as one unit; `false` when it could not (nothing written,
/// replied or counted): the caller executes it one by one.
pub fn run(s: &mut Session, run: &Run<'_>) -> bool {
    if s.shared.blocked.any() {
        return false;
    }
    let Some(rows) = (0..run.len())
        .map(|i| joins(s, &run.args(i)))
        .collect::<Option<Vec<usize>>>()
    else {
        return false;
    };
    let map = s.map.take().expect("the map is back between commands");
    let started = Instant::now();
    let failed = {
        let _held = map.shared();
        // Replication turned on since the run was offered: the requests
        // go one by one through `execute`, which propagates them.
        let failed = match s.shared.repl.is_active() {
            true => None,
            false => attempts(s, run, &rows),
        };
        if failed.is_some() {
            // A client may have blocked on a key since the check above.
            serve_ready(s);
        }
        failed
    };
    s.map = Some(map);
    let Some(failed) = failed else { return false };
    count(s, &rows, &failed, started);
    true
}

/// The run's attempts; `Some(which requests failed)` once one committed.
fn attempts(s: &mut Session, run: &Run<'_>, rows: &[usize]) -> Option<Vec<bool>> {
    let keyspace = s.store.keyspace().clone();
    let mark = s.out.len();
    let errors = s.out.errors.clone();
    for attempt in 0..ATTEMPTS {
        let _turn = (attempt > 0).then(|| keyspace.turns.take());
        if attempt == 0 {
            keyspace.turns.wait_for_turns();
        }
        s.store.begin();
        s.store.allow_parking();
        let failed: Vec<bool> = (0..run.len())
            .map(|i| run_in_unit(s, rows[i], run.args(i)))
            .collect();
        if failed.contains(&true) || s.store.poisoned() {
            // A failed request may have changed a parked collection that
            // its roll-back does not reach: one by one instead.
            s.store.abort();
            s.out.buf.truncate(mark);
            s.out.errors = errors;
            return None;
        }
        let committed = s.store.commit(&[]);
        if let Ok(true) = committed {
            return Some(failed);
        }
        // No reply of this attempt stands.
        s.out.buf.truncate(mark);
        s.out.errors = errors.clone();
        if committed.is_err() {
            // The engine refused the batch: one by one, each request gets
            // its own outcome.
            return None;
        }
    }
    None
}

/// Counts each request of a committed run as `execute` would have.
fn count(s: &mut Session, rows: &[usize], failed: &[bool], started: Instant) {
    let share = started.elapsed().as_nanos() as u64 / rows.len() as u64;
    for (&row, &failed) in rows.iter().zip(failed) {
        let timed = s.tally.times(row).then_some(share);
        s.counters.commands += 1;
        s.tally.called(row, timed, failed);
    }
    s.counters.unit_runs += 1;
    s.counters.unit_commands += rows.len() as u64;
    let last = *rows.last().expect("a run has requests");
    s.info
        .last_command
        .store(last + 1, std::sync::atomic::Ordering::Relaxed);
}
