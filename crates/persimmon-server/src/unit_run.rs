//! A pipeline's run of writes as one atomic unit of the store (issue 33):
//! consecutive requests of the commands [`COMBINED`] names — pushes, pops,
//! adds, removes, field sets of lists, sets, hashes and sorted sets (GEOADD
//! among them: a ZADD of geohash scores) — on any keys, the same key or
//! not. The run's handlers all write into one overlay, which commits as one
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

use std::ops::Range;
use std::time::Instant;

use persimmon_resp::Args;

use crate::commands::blocking::serve_ready;
use crate::dispatch::{run_in_unit, runnable_as};
use crate::runs::Run;
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
    ("geoadd", 5, usize::MAX),
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

/// One client's share of a unit: its requests, their rows (checked by
/// [`joins`] on its own session), its database and protocol.
pub struct Part<'a> {
    pub db: usize,
    pub resp3: bool,
    pub run: Run<'a>,
    pub rows: &'a [usize],
}

/// Executes `run`, whose requests are of `rows` ([`rows_of`]), as one
/// unit in the session's own task; `false` when it could not (nothing
/// written, replied or counted): the caller executes it one by one.
pub fn run(s: &mut Session, run: &Run<'_>, rows: &[usize]) -> bool {
    let started = Instant::now();
    let part = Part {
        db: s.store.db,
        resp3: s.out.resp3,
        run: run.clone(),
        rows,
    };
    let Some(replies) = execute(s, &[part]) else {
        return false;
    };
    debug_assert_eq!(replies[0].end, s.out.len(), "the replies stay queued");
    let share = started.elapsed().as_nanos() as u64 / rows.len() as u64;
    count(s, rows, share);
    true
}

/// The rows of every request of `run`, if all may join a run.
pub fn rows_of(s: &Session, run: &Run<'_>) -> Option<Vec<usize>> {
    (0..run.len()).map(|i| joins(s, &run.args(i))).collect()
}

/// Executes `parts` as one unit in session `s` (each part with its
/// database selected and in its protocol), their replies queued in
/// `s.out`: `Some(where each part's replies are)` once it committed,
/// `None` when it could not (nothing written, nothing left queued).
pub fn execute(s: &mut Session, parts: &[Part<'_>]) -> Option<Vec<Range<usize>>> {
    if s.shared.blocked.any() {
        return None;
    }
    let map = s.map.take().expect("the map is back between commands");
    let replies = {
        let _held = map.shared();
        // Replication turned on since the requests were checked: they go
        // one by one through `execute`, which propagates them.
        let replies = match s.shared.repl.is_active() {
            true => None,
            false => attempts(s, parts),
        };
        if replies.is_some() {
            // A client may have blocked on a key since the check above.
            serve_ready(s);
        }
        replies
    };
    s.map = Some(map);
    replies
}

/// The unit's attempts; `Some(each part's replies)` once one committed.
fn attempts(s: &mut Session, parts: &[Part<'_>]) -> Option<Vec<Range<usize>>> {
    let keyspace = s.store.keyspace().clone();
    let (mark, db, resp3) = (s.out.len(), s.store.db, s.out.resp3);
    let errors = s.out.errors.clone();
    for attempt in 0..ATTEMPTS {
        let _turn = (attempt > 0).then(|| keyspace.turns.take());
        if attempt == 0 {
            keyspace.turns.wait_for_turns();
        }
        s.store.begin();
        s.store.allow_parking();
        let (replies, failed) = run_parts(s, parts);
        (s.store.db, s.out.resp3) = (db, resp3);
        if failed || s.store.poisoned() {
            // A failed request may have changed a parked collection that
            // its roll-back does not reach: one by one instead.
            s.store.abort();
            s.out.buf.truncate(mark);
            s.out.errors = errors;
            return None;
        }
        let committed = s.store.commit(&[]);
        if let Ok(true) = committed {
            return Some(replies);
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

/// Runs every part's requests in the running unit; returns where each
/// part's replies are and whether any request failed (the run stops at
/// the first).
fn run_parts(s: &mut Session, parts: &[Part<'_>]) -> (Vec<Range<usize>>, bool) {
    let mut replies = Vec::with_capacity(parts.len());
    for part in parts {
        (s.store.db, s.out.resp3) = (part.db, part.resp3);
        let start = s.out.len();
        for (i, &row) in part.rows.iter().enumerate() {
            if run_in_unit(s, row, part.run.args(i)) {
                return (replies, true);
            }
        }
        replies.push(start..s.out.len());
    }
    (replies, false)
}

/// Counts each request of a committed run as `execute` would have, each
/// charged `share` nanoseconds when timed.
pub fn count(s: &mut Session, rows: &[usize], share: u64) {
    for &row in rows {
        s.count_call(row, share, false);
    }
    s.counters.unit_runs += 1;
    s.counters.unit_commands += rows.len() as u64;
}
