//! Optimistic transactions (`Db::transaction`), each racing a plain put of
//! a key it read, with the point index in the pool and in DRAM.
//!
//! | workload | persist path it covers                                        |
//! |----------|---------------------------------------------------------------|
//! | txn      | a transaction's commit (validation under the locks of the     |
//! |          | keys it read and writes, then one atomic batch: records and   |
//! |          | undo record, fences A to D, to F with a delete), racing a put |
//! |          | of a key it read on another thread: before its commit (the    |
//! |          | commit conflicts, the closure runs again on the new value),   |
//! |          | and held at each of its commit fences (the put waits for the  |
//! |          | transaction's lock and lands after it); a read-only one; a    |
//! |          | crash in a commit recovered from (undo, or finished deletes), |
//! |          | a transaction and a batch right after that open               |
//! | dram-txn | `txn` with the point index in DRAM (the node record words);   |
//! |          | the writes after the recovery run beside the engine's rebuild |
//! |          | of the DRAM index, held at its first fence                    |
//!
//! The operation (`Op::Txn`: a transaction and the put that races it) is in
//! `ops.rs`, whose header says how the race is ordered.
//!
//! What the oracle checks: the transaction's writes form a group
//! (`Expect::groups`): at every crash point all of them or none are on
//! media; once it returned, all of them. The racing put is judged per key,
//! as any put. The operation itself checks that the closure ran exactly as
//! often as the race makes it (twice when the put came between its reads
//! and its commit, else once) and that the committing attempt read what the
//! serial order says (the racing put's value, or the value before it).
//!
//! Invariants of these workloads: the pool is at format 4 before the first
//! raced commit (an unexplored batch raises it), so every fence of a
//! commit comes after its locks are taken; no commit needs a split (a few
//! dozen keys), which would release the locks midway.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use rand::Rng;

use super::crash::crash_in;
use super::ctx::{Ctx, Finished};
use super::kv::{fill, key, small_value};
use super::ops::{Op, Race, TxWrite, Txn, Write};
use crate::sim::{lock, SimConfig};

/// Keys read (and raced) by the workload's transactions: `txr-*`; keys
/// they write: `txw-*`.
const READ_KEYS: u64 = 4;
const WRITE_KEYS: u64 = 8;

/// Transactions racing puts (before the commit, at every commit fence),
/// a read-only one, and a crash in a commit recovered from.
pub fn txn(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    fill(&mut c, "txr", READ_KEYS);
    fill(&mut c, "txw", WRITE_KEYS);
    // Raises the pool to format 4 (unexplored): later commits fence only
    // after taking their locks.
    c.run(Op::Batch(vec![Write::Put(key("txw", 99), b"v4".to_vec())]));
    c.explore(true);
    let plain = transaction(&mut c, 0, Race::None);
    c.run_on(0, Op::Txn(plain));
    let v = small_value(&mut c.rng);
    let before = transaction(&mut c, 1, Race::BeforeCommit(v));
    c.run_on(0, Op::Txn(before));
    let fences = if cfg.options.ordered_index { 8 } else { 6 };
    let held = Arc::new(AtomicU64::new(0));
    for fence in 0..fences {
        let race = Race::AtFence {
            fence,
            value: small_value(&mut c.rng),
            held: held.clone(),
        };
        let t = transaction(&mut c, 2 + fence, race);
        c.run_on(0, Op::Txn(t));
    }
    // Fences A to D at least: a put that never met a held commit raced
    // nothing.
    let held = held.load(Ordering::SeqCst);
    c.add_note(format!(
        "{held} of {fences} racing puts waited for a held commit"
    ));
    if held < 4 && !c.broken {
        c.sim.fail(format!(
            "txn: only {held} racing puts met a commit held at its fence"
        ));
    }
    let read_only = Txn {
        reads: vec![key("txr", 0), key("txw", 3)],
        writes: Vec::new(),
        race: Race::None,
    };
    c.run_on(0, Op::Txn(read_only));
    for i in 0..READ_KEYS {
        c.run(Op::Get(key("txr", i)));
    }
    // A crash in a commit that deletes (unexplored up to the capture).
    let fence = c.rng.gen_range(0..6);
    let last = transaction(&mut c, 20, Race::None);
    let side = Txn {
        reads: vec![key("txr", 1)],
        writes: vec![
            (
                key("txl", 0),
                TxWrite::Derived {
                    tag: 7,
                    deadline: None,
                },
            ),
            (
                key("txl", 1),
                TxWrite::Derived {
                    tag: 8,
                    deadline: None,
                },
            ),
        ],
        race: Race::None,
    };
    let beside = vec![Op::Txn(side), Op::Batch(vec![Write::Delete(key("txl", 0))])];
    crash_in(&mut c, Op::Txn(last), fence, beside);
    let after = transaction(&mut c, 21, Race::None);
    c.run(Op::Txn(after));
    c.finish()
}

/// Transaction number `i`: reads two `txr` keys (the first raced), puts
/// derived values to two `txw` keys (one with a deadline every third time)
/// and deletes a present third one (so its commit has fences E and F);
/// every fourth one also creates a new key (not when held at a fence: the
/// new key's node links would shift the fence numbers on ordered pools).
fn transaction(c: &mut Ctx, i: u64, race: Race) -> Txn {
    let raced = key("txr", i % READ_KEYS);
    let other = key(
        "txr",
        (i + 1 + c.rng.gen_range(0..READ_KEYS - 1)) % READ_KEYS,
    );
    let w = |j: u64| key("txw", (i * 3 + j) % WRITE_KEYS);
    let deadline = (i % 3 == 2).then(|| lock(&c.sim.expect).now_ms + 60_000);
    let mut writes = vec![
        (
            w(0),
            TxWrite::Derived {
                tag: c.rng.gen(),
                deadline: None,
            },
        ),
        (
            w(1),
            TxWrite::Derived {
                tag: c.rng.gen(),
                deadline,
            },
        ),
    ];
    let doomed = (2..WRITE_KEYS)
        .map(w)
        .find(|k| lock(&c.sim.expect).current(k).is_some());
    if let Some(k) = doomed {
        writes.push((k, TxWrite::Delete));
    }
    if i.is_multiple_of(4) && !matches!(race, Race::AtFence { .. }) {
        writes.push((
            key("txn-new", i),
            TxWrite::Derived {
                tag: c.rng.gen(),
                deadline: None,
            },
        ));
    }
    Txn {
        reads: vec![raced, other],
        writes,
        race,
    }
}
