//! The MPKV paper's Baseline: every mechanism off (`Mechanisms::NONE`, set
//! by `config`), the ablation mode's own persist paths.
//!
//! | workload | persist path it covers                                         |
//! |----------|----------------------------------------------------------------|
//! | baseline | persistent bucket locks, locked reads, slots stored with the   |
//! |          | persist bit, no elimination; a clean close and reopen midway   |
//!
//! The pool is created with persistent lock words (`pool_flags`:
//! `FLAG_PERSISTENT_LOCKS`): the lock words live in the buckets and are
//! never flushed, readers take the lock, slots are written with the persist
//! bit already set and deletes store 0. The open is explored, and so is the
//! clean close and reopen after the thirteenth operation (the open count
//! moves on).
//!
//! What the oracle checks, besides what it checks for every point
//! operation (`point.rs`): a crash must never leave a bucket locked (the
//! next open's tag makes stale lock words read as unlocked), so every image
//! opens, recovers within `RECOVERY_TIMEOUT` and reads back with locked
//! reads; stores to lock words may be left pending when an operation
//! returns (`Benign::LockWord`). Reader
//! probes are off (`config`): a locked read waits for the writer's lock, so
//! it cannot see a write in flight, and would wait forever for the writer
//! paused at the crash point.

use rand::Rng;

use super::ctx::{Ctx, Finished};
use super::kv::{key, small_len, value};
use super::ops::{Op, UpdateMode};
use crate::sim::SimConfig;

/// A random mix of puts, updates, deletes and gets on ten keys, with a
/// clean close and reopen midway.
pub fn baseline(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, true);
    c.explore(true);
    for i in 0..24u64 {
        let k = key("base", c.rng.gen_range(0..10));
        let op = match c.rng.gen_range(0..10) {
            0 | 1 => Op::Delete(k),
            2 => Op::Update(k, UpdateMode::Append(b'b')),
            3 | 4 => Op::Get(k),
            _ => {
                let len = small_len(&mut c.rng);
                Op::Put(k, value(&mut c.rng, len))
            }
        };
        c.run(op);
        if i == 12 {
            // A clean close and reopen: the open count moves on.
            c.clean_reopen();
        }
    }
    c.finish()
}
