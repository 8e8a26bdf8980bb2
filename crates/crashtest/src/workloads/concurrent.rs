//! Hash-index workloads with more than one writer thread.
//!
//! | workload    | persist path it covers                                     |
//! |-------------|------------------------------------------------------------|
//! | elimination | two threads put one key; the waiter is eliminated          |
//! | lanes       | three threads on three lanes, interleaved                  |
//!
//! - *elimination*: thread A is held at its first fence (record written,
//!   slot not yet published, bucket lock held) until thread B has started a
//!   put of the same key; B waits for the lock, then finds A's record and
//!   is eliminated (`Stats::eliminated_puts`). Up to six attempts, B given
//!   longer each time to reach the lock; a run with no elimination is noted,
//!   not failed.
//! - *lanes*: a mix of puts (small and multi-kilobyte), updates, deletes and
//!   gets sent in turn to three worker threads (`Ctx::run_on`); the pool
//!   has four lanes, and each thread writes its log records on its own.
//!
//! What the oracle checks: in *elimination* both puts are in flight at once
//! (the key's legal values are the old one and both new ones) and are
//! acknowledged together, by the workload, with what the key holds after
//! both returned: A's value if B was eliminated (B is ordered just before
//! A), A's or B's otherwise. Reader probes are off there (`config`: two
//! writers of one key). In *lanes*, operations run one at a time, each on
//! its worker's thread, and every crash point is judged as in `point.rs`;
//! the run fails unless the live pool shows log segments owned by at least
//! three lanes.

use std::sync::Arc;
use std::thread::JoinHandle;
use std::time::Duration;

use persimmon::Db;
use rand::Rng;

use super::ctx::{Ctx, Finished};
use super::epoch::settle;
use super::kv::{key, small_len, value};
use super::live_segments::log_lanes;
use super::ops::{Op, UpdateMode};
use crate::oracle::{show, Key, Val};
use crate::sim::{lock, Gate, Sim, SimConfig};

/// Two puts of one key overlap (see the module's header); retried until
/// `eliminated_puts` moves.
pub fn elimination(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let k = key("elim", 0);
    let v0 = value(&mut c.rng, 32);
    c.run(Op::Put(k.clone(), v0));
    c.explore(true);
    let mut eliminated = false;
    for attempt in 0..6 {
        if c.broken || eliminated {
            break;
        }
        eliminated = overlapping_puts(&mut c, &k, attempt);
    }
    if !eliminated && !c.broken {
        c.note = Some("no put was eliminated in 6 attempts".into());
    }
    c.run(Op::Get(k));
    c.finish()
}

/// One attempt: A held at its first fence, B started behind it and given
/// `20 + 20 * attempt` ms to reach the bucket lock, then A let go. Returns
/// whether B was eliminated.
fn overlapping_puts(c: &mut Ctx, k: &Key, attempt: u64) -> bool {
    let db = c.db().clone();
    let before = db.stats().eliminated_puts;
    let (va, vb) = (value(&mut c.rng, 48), value(&mut c.rng, 56));
    let gate = Gate::new();
    let a = spawn_put(&c.sim, &db, k, &va, Some(&gate));
    gate.wait_reached();
    let b = spawn_put(&c.sim, &db, k, &vb, None);
    std::thread::sleep(Duration::from_millis(20 + 20 * attempt));
    gate.release();
    let ra = a.join().expect("thread A");
    let rb = b.join().expect("thread B");
    if let Err(e) = ra.and(rb) {
        c.stop(format!("elimination put failed: {e}"));
        return false;
    }
    settle();
    c.ops += 2;
    let moved = db.stats().eliminated_puts > before;
    let got = db.get(k).ok().flatten();
    // B waited for A's lock before A published: if B was eliminated it
    // is ordered just before A, so A's value must be the one left.
    let ok = if moved {
        got.as_ref() == Some(&va)
    } else {
        got.as_ref() == Some(&vb) || got.as_ref() == Some(&va)
    };
    if !ok {
        c.sim.fail(format!(
            "elimination: key holds {} after both puts (eliminated={moved})",
            show(&got)
        ));
    }
    lock(&c.sim.expect).ack(k, got);
    moved
}

/// Puts `v` under `k` on a new thread, announced but not acknowledged (the
/// caller acknowledges both overlapping puts at once); with `gate`, the
/// thread is held at its first fence.
fn spawn_put(
    sim: &Arc<Sim>,
    db: &Arc<Db>,
    k: &Key,
    v: &Val,
    gate: Option<&Arc<Gate>>,
) -> JoinHandle<persimmon::Result<()>> {
    let (sim, db, k, v, gate) = (sim.clone(), db.clone(), k.clone(), v.clone(), gate.cloned());
    std::thread::spawn(move || {
        sim.begin("put", Some((&k, Some(v.clone()))));
        if let Some(gate) = &gate {
            sim.arm_gate(gate);
        }
        let r = db.put(&k, &v);
        sim.end(None);
        r
    })
}

/// Three threads, one operation at a time, each thread on its own lane.
pub fn lanes(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    c.explore(true);
    for i in 0..30u64 {
        let w = (i % 3) as usize;
        let k = key("lane", c.rng.gen_range(0..12));
        let op = match c.rng.gen_range(0..10) {
            0 => Op::Delete(k),
            1 => Op::Update(k, UpdateMode::Append(b'u')),
            2 => Op::Get(k),
            _ => {
                let len = if c.rng.gen_range(0..4) == 0 {
                    c.rng.gen_range(2_000..6_000)
                } else {
                    small_len(&mut c.rng)
                };
                Op::Put(k, value(&mut c.rng, len))
            }
        };
        c.run_on(w, op);
    }
    // The pool file is the live mapping: count the lanes that own segments.
    let lanes = log_lanes(&c);
    c.note = Some(format!("log segments on lanes {lanes:?}"));
    if lanes.len() < 3 && !c.broken {
        c.sim
            .fail(format!("lanes: three threads used only lanes {lanes:?}"));
    }
    c.finish()
}
