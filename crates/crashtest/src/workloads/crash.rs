//! Crash injection at a chosen point: one operation run until the crash
//! point its fence number names, the image captured there recovered from
//! (the open explored), operations beside the recovery, and the in-flight
//! keys resolved before the workload goes on.
//!
//! Invariants: the operation itself runs unexplored, so the captured image
//! is the only crash it contributes; the recovery and every operation after
//! it are explored; what was in flight at the crash must hold one of its
//! legal states after recovery (the joint rule for groups), and is then
//! acknowledged as it is. An operation with fewer fences crashes nowhere
//! (noted) and its beside operations run all the same.

use std::sync::Arc;

use persimmon::PointIndex;

use super::ctx::Ctx;
use super::ops::Op;
use super::rebuild;
use crate::sim;

/// Runs `op` unexplored while the simulator captures one image of the
/// crash point `fence` fences into it; when one was captured (`op` had that
/// many), recovers from that image with the open explored (crashes in the
/// recovery are judged too), runs `beside` (explored: operations on keys
/// `op` does not write), then checks and acknowledges what was in flight
/// (`Ctx::resolve_in_flight`: the joint rule again), notes what the
/// recovery did with batches, and explores from there on. With the point
/// index in DRAM, `beside` runs while the engine's rebuild of the DRAM
/// index is held at its first fence (when it has something to repair), so
/// it reaches keys the index has not entered yet through their nodes.
/// Returns the expectation the image was captured with.
pub(super) fn crash_in(
    c: &mut Ctx,
    op: Op,
    fence: u64,
    beside: Vec<Op>,
) -> Option<crate::oracle::Expect> {
    c.explore(false);
    c.sim.request_capture(fence);
    c.run(op);
    let Some(captured) = c.sim.take_capture() else {
        c.add_note(format!("no crash: the operation had no fence {fence}"));
        c.explore(true);
        beside.into_iter().for_each(|op| c.run(op));
        return None;
    };
    let dram = c.cfg.options.point_index == PointIndex::Dram;
    let gate = dram.then(|| sim::Gate::on_thread_named("persimmon-ordered"));
    c.reopen_from_as(
        &captured.image,
        captured.ssd.as_ref(),
        captured.expect.clone(),
        true,
        !dram,
        gate.as_ref(),
    );
    if !c.broken {
        c.explore(true);
        let held = match &gate {
            Some(g) => beside_rebuild(c, g, beside),
            None => {
                beside.into_iter().for_each(|op| c.run(op));
                String::new()
            }
        };
        c.db().wait_for_rebuild();
        c.resolve_in_flight();
        let s = c.db().stats();
        let recovered = match s.batches_undone_at_open + s.batches_finished_at_open {
            0 => String::new(),
            _ => format!(
                ": recovery undid {} batch(es), finished {}",
                s.batches_undone_at_open, s.batches_finished_at_open
            ),
        };
        c.add_note(format!("crash at fence {fence}{recovered}{held}"));
    }
    c.explore(true);
    Some(captured.expect)
}

/// `crash_in`'s operations beside the DRAM index's rebuild, held by `gate`
/// (see `rebuild::hold_rebuild`); returns how far they got, for the note.
fn beside_rebuild(c: &mut Ctx, gate: &Arc<sim::Gate>, ops: Vec<Op>) -> String {
    let (held, waiter) = rebuild::hold_rebuild(c, gate);
    let n = ops.len();
    let (done, early) = rebuild::beside_held(c, ops, held.then_some(gate));
    let ready = rebuild::let_rebuild_go(c, gate, held, waiter);
    match held {
        false => format!(", rebuild never held: {n} operations after it"),
        true => format!(
            ", rebuild held: {done} of {n} operations beside it{}, the DRAM index ready then: {}",
            if early { " (let go early)" } else { "" },
            rebuild::ready_word(ready)
        ),
    }
}
