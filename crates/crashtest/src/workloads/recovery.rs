//! Recovery from a crash image of the hash index, and what follows it.
//!
//! | workload | persist path it covers                                         |
//! |----------|----------------------------------------------------------------|
//! | reopen   | recover from a crash image, then more operations, clean reopen |
//!
//! Steps: a random mix of puts, updates and deletes on eight keys runs
//! unexplored; in one of operations 4..15 the simulator captures one random
//! image of a crash point 0..2 fences in (`Sim::request_capture`). The pool
//! is replaced with that image and opened by a fresh simulator, which
//! expects what the image was captured with: the open (the recovery) is
//! explored, so crashes during recovery are judged too. Then ten more
//! operations (explored), a clean close, an explored reopen and a few more.
//!
//! What the oracle checks: every crash point of the recovery, against the
//! captured expectation (the interrupted key in flight: its old or its new
//! value, every other key its acknowledged one), and every later one as in
//! `point.rs`. After the recovery the workload itself reads the key that was
//! in flight: it must hold one of its legal values, and is acknowledged
//! with it (`Ctx::resolve_in_flight`); the clean reopen must find every key
//! as acknowledged.

use rand::Rng;

use super::ctx::{Ctx, Finished};
use super::kv::{key, small_len, value};
use super::ops::{Op, UpdateMode};
use crate::sim::{Captured, SimConfig};

/// Captures a crash image in the middle of an operation, recovers from it,
/// checks the in-flight key, runs more operations (explored), then closes
/// cleanly, reopens and runs more.
pub fn reopen(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let Some(captured) = capture_mid_operation(&mut c) else {
        c.sim.fail("reopen: no crash image was captured".into());
        return c.finish();
    };
    // Recover from the crash image, exploring crashes during recovery.
    c.reopen_from(
        &captured.image,
        captured.ssd.as_ref(),
        captured.expect,
        true,
    );
    if c.broken {
        return c.finish();
    }
    c.resolve_in_flight();
    c.explore(true);
    for i in 0..10u64 {
        let k = key("ro", (i * 3) % 10);
        let op = if i % 4 == 3 {
            Op::Get(k)
        } else {
            let len = small_len(&mut c.rng);
            Op::Put(k, value(&mut c.rng, len))
        };
        c.run(op);
    }
    // Clean close, reopen (explored), more operations.
    c.explore(false);
    c.clean_reopen();
    for i in 0..4u64 {
        let v = value(&mut c.rng, 30);
        c.run(Op::Put(key("ro", 20 + i), v));
    }
    c.run(Op::Delete(key("ro", 20)));
    c.finish()
}

/// Runs operations unexplored until the simulator has captured a random
/// image of a crash point in the middle of one; returns it.
fn capture_mid_operation(c: &mut Ctx) -> Option<Captured> {
    let crash_op = c.rng.gen_range(4..16u64);
    for i in 0..64u64 {
        if i == crash_op {
            let f = c.rng.gen_range(0..3);
            c.sim.request_capture(f);
        }
        let k = key("ro", c.rng.gen_range(0..8));
        let op = match c.rng.gen_range(0..6) {
            0 => Op::Delete(k),
            1 => Op::Update(k, UpdateMode::Append(b'x')),
            _ => {
                let len = small_len(&mut c.rng);
                Op::Put(k, value(&mut c.rng, len))
            }
        };
        c.run(op);
        // Ops without enough fences (a delete of an absent key) push the
        // capture into the next operation.
        if i >= crash_op && c.sim.has_capture() {
            break;
        }
    }
    c.sim.take_capture()
}
