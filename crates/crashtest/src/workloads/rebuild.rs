//! Operations beside the engine's rebuild of the DRAM point index after an
//! open, held at its first fence: the thread that rebuilds it
//! ("persimmon-ordered") waits at a `Gate` while a workload reads and
//! writes keys the index may not have entered yet, then is let go.
//!
//! Invariants: the rebuild is held only where it meets something to
//! repair (its first fence); when it has nothing, it is never held and the
//! operations run after it. A held rebuild is always let go: after the
//! operations, or early when they make no progress for `HELD_PATIENCE`
//! (one waits for a lock or mark the held thread holds), so no run hangs.
//! The operations are explored as usual; their results are checked as any
//! operation's (`ops::exec`).

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use super::ctx::{present, present_keys, Ctx};
use super::epoch::settle;
use super::ops::{exec, Op};
use crate::oracle::Key;
use crate::sim::{lock, Gate};

/// How long the writes beside the held rebuild may make no progress (no
/// operation done, no crash image checked) before it is let go: a write
/// that needs the bucket lock or range mark it holds waits for it.
const HELD_PATIENCE: Duration = Duration::from_secs(2);

/// After an open with `gate` armed for the engine's thread that rebuilds
/// the DRAM index ("persimmon-ordered"): waits until that thread is held
/// at its first fence, or has finished without one (nothing to repair;
/// the gate is disarmed then). Returns whether it is held, and a thread
/// that waits for the rebuild.
pub(super) fn hold_rebuild(c: &Ctx, gate: &Arc<Gate>) -> (bool, std::thread::JoinHandle<()>) {
    let db = c.db().clone();
    let waiter = std::thread::spawn(move || db.wait_for_rebuild());
    let held = gate.wait_reached_or(|| waiter.is_finished());
    if !held {
        c.sim.disarm_gate();
    }
    (held, waiter)
}

/// [`hold_rebuild`], then every in-flight key resolved and every present
/// key read while the rebuild is held. Returns what `hold_rebuild` returns
/// and the keys read.
pub(super) fn hold_and_read(
    c: &mut Ctx,
    gate: &Arc<Gate>,
) -> (bool, std::thread::JoinHandle<()>, Vec<Key>) {
    let (held, waiter) = hold_rebuild(c, gate);
    c.resolve_in_flight();
    let keys = present_keys(c);
    for k in &keys {
        c.run(Op::Get(k.clone()));
    }
    (held, waiter, keys)
}

/// The rest of a reopen workload after [`hold_and_read`]: runs `ops`
/// beside the held rebuild, lets it go, checks that the stats say it is
/// done, reads `keys` again (all of them, or only those still present
/// unless `reread_absent`), and returns the note.
pub(super) fn finish_held(
    c: &mut Ctx,
    gate: &Arc<Gate>,
    (held, waiter): (bool, std::thread::JoinHandle<()>),
    ops: Vec<Op>,
    keys: &[Key],
    reread_absent: bool,
) -> String {
    let n = ops.len();
    let (done, early) = beside_held(c, ops, held.then_some(gate));
    let ready = let_rebuild_go(c, gate, held, waiter);
    if c.broken {
        return "broken".into();
    }
    let st = c.db().stats();
    if !st.point_index_ready || !st.ordered_walk_done {
        c.sim.fail(format!(
            "after wait_for_rebuild: point_index_ready={}, ordered_walk_done={}",
            st.point_index_ready, st.ordered_walk_done
        ));
    }
    for k in keys {
        if reread_absent || present(c, k) {
            c.run(Op::Get(k.clone()));
        }
    }
    if !held {
        return format!(
            "rebuild never held (nothing to repair): {} reads, {n} writes and reads after it",
            keys.len()
        );
    }
    format!(
        "rebuild held at its first fence: {} reads, {done} of {n} writes and reads{}; the point index ready then: {}",
        keys.len(),
        if early { " (one waited for it: let go early)" } else { "" },
        ready_word(ready)
    )
}

/// Lets the rebuild `hold_rebuild` held go and waits for it. Returns,
/// when it was held, whether the DRAM index was ready just before (while
/// still held, unless let go early): `None` inside when `stats()` itself
/// waited for the rebuild, which is a "not yet" too.
pub(super) fn let_rebuild_go(
    c: &Ctx,
    gate: &Gate,
    held: bool,
    waiter: std::thread::JoinHandle<()>,
) -> Option<Option<bool>> {
    let ready = held.then(|| ready_now(c));
    gate.release();
    let _ = waiter.join();
    ready.map(|(r, h)| {
        let _ = h.join();
        r
    })
}

/// How a note says what `let_rebuild_go` found.
pub(super) fn ready_word(ready: Option<Option<bool>>) -> &'static str {
    match ready {
        Some(Some(true)) => "yes",
        Some(Some(false)) => "no",
        _ => "no (stats() waited for the rebuild)",
    }
}

/// `stats().point_index_ready`, asked from another thread: `None` when
/// `stats()` waits (for the held rebuild). The thread is returned to be
/// joined once the rebuild is let go.
fn ready_now(c: &Ctx) -> (Option<bool>, std::thread::JoinHandle<()>) {
    let db = c.db().clone();
    let (tx, rx) = std::sync::mpsc::channel();
    let h = std::thread::spawn(move || {
        let _ = tx.send(db.stats().point_index_ready);
    });
    (rx.recv_timeout(Duration::from_millis(500)).ok(), h)
}

/// Runs `ops` in order on a new thread (explored as usual) while `gate`
/// (when given) holds the walk; lets the walk go when they make no
/// progress for `HELD_PATIENCE`. Returns how many ran before the walk was
/// let go, and whether it was let go early.
pub(super) fn beside_held(c: &mut Ctx, ops: Vec<Op>, gate: Option<&Arc<Gate>>) -> (usize, bool) {
    let done = Arc::new(AtomicUsize::new(0));
    let worker = {
        let (sim, db, done) = (c.sim.clone(), c.db().clone(), done.clone());
        std::thread::spawn(move || -> Result<(), String> {
            for op in &ops {
                exec(&sim, &db, op)?;
                settle();
                done.fetch_add(1, Ordering::SeqCst);
            }
            Ok(())
        })
    };
    let progress = |c: &Ctx| {
        let s = lock(&c.sim.stats);
        (done.load(Ordering::SeqCst), s.points, s.images)
    };
    let (mut last, mut since) = (progress(c), Instant::now());
    let mut let_go = None;
    while !worker.is_finished() {
        std::thread::sleep(Duration::from_millis(5));
        let now = progress(c);
        if now != last {
            (last, since) = (now, Instant::now());
        } else if let (Some(g), None) = (gate, let_go) {
            if since.elapsed() > HELD_PATIENCE {
                g.release();
                let_go = Some(now.0);
            }
        }
    }
    let r = worker
        .join()
        .unwrap_or_else(|_| Err("the writer beside the walk panicked".into()));
    let ran = done.load(Ordering::SeqCst);
    c.ops += ran as u64;
    if let Err(e) = r {
        c.sim
            .fail(format!("workload operation beside the walk: {e}"));
        c.broken = true;
    }
    (let_go.unwrap_or(ran), let_go.is_some())
}
