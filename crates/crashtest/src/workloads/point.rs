//! Point operations of the hash index, one at a time on one thread: the
//! persist paths every other workload builds on.
//!
//! | workload | persist path it covers                                            |
//! |----------|-------------------------------------------------------------------|
//! | insert   | pool open (first index segment; the open is explored), put of new |
//! |          | keys, claim CAS; gets of written keys and of an absent one        |
//! | update   | put over an existing key (record, slot, persist bit)              |
//! | delete   | delete marker, fence, final 0; deletes of an absent and of an     |
//! |          | already deleted key; re-insert after delete                       |
//! | rmw      | `update()`: append, delete, keep; a new key through update, an    |
//! |          | absent key kept absent or deleted, re-creation after a delete     |
//!
//! What the oracle checks, at every crash point of the explored window
//! (`oracle.rs`): the one key in flight holds its old or its new value,
//! never a torn or a third one, and every other key its acknowledged value;
//! the image opens, passes `check()` with the key count it should and
//! leaves no dead segment unaccounted for. One crash point in four, a
//! reader probe reads the key in flight from another thread: what it saw
//! must survive every later crash. When an operation returns, none of its
//! stores may still be pending except a put's persist bit and a delete's
//! final 0 (`Benign`); the operations check their own results (`ops.rs`).
//!
//! Invariants of these workloads: the keys already there before the
//! explored window are written unexplored; every key has its own prefix
//! (`ins`, `upd`, `del`, `rmw`), so a run's images name the workload.

use rand::Rng;

use super::ctx::{Ctx, Finished};
use super::kv::{key, small_len, value};
use super::ops::{Op, UpdateMode};
use crate::sim::SimConfig;

/// New keys from the pool's first open on (explored), some read back.
pub fn insert(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, true);
    c.explore(true);
    for i in 0..14 {
        let len = small_len(&mut c.rng);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("ins", i), v));
        if i % 4 == 3 {
            let k = key("ins", c.rng.gen_range(0..=i));
            c.run(Op::Get(k));
        }
    }
    c.run(Op::Get(key("ins", 999)));
    c.finish()
}

/// Overwrites of ten keys with values of new lengths, each read back.
pub fn update(cfg: &SimConfig) -> Finished {
    let mut c = filled(cfg, "upd", 10, 40);
    for _ in 0..14 {
        let k = key("upd", c.rng.gen_range(0..10));
        let len = small_len(&mut c.rng);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(k.clone(), v));
        c.run(Op::Get(k));
    }
    c.finish()
}

/// Deletes of present keys, of an absent and of a deleted key; a re-insert
/// of a deleted key and its second delete.
pub fn delete(cfg: &SimConfig) -> Finished {
    let mut c = filled(cfg, "del", 12, 30);
    for i in 0..8 {
        c.run(Op::Delete(key("del", i)));
    }
    c.run(Op::Delete(key("del", 100))); // absent
    c.run(Op::Delete(key("del", 3))); // already deleted
    let v = value(&mut c.rng, 50);
    c.run(Op::Put(key("del", 3), v)); // re-insert
    c.run(Op::Get(key("del", 3)));
    c.run(Op::Delete(key("del", 3)));
    c.finish()
}

/// `update()` in every mode, on present, absent and deleted keys.
pub fn rmw(cfg: &SimConfig) -> Finished {
    let mut c = filled(cfg, "rmw", 6, 20);
    let modes = [
        (0, UpdateMode::Append(b'+')),
        (1, UpdateMode::Keep),
        (2, UpdateMode::Delete),
        (10, UpdateMode::Append(b'n')), // new key through update
        (11, UpdateMode::Keep),         // absent, kept absent
        (12, UpdateMode::Delete),       // absent
        (0, UpdateMode::Append(b'!')),
        (2, UpdateMode::Append(b'r')), // re-created after delete
    ];
    for (i, m) in modes {
        c.run(Op::Update(key("rmw", i), m));
    }
    for _ in 0..6 {
        let i = c.rng.gen_range(0..6);
        let b = c.rng.gen_range(b'a'..=b'z');
        c.run(Op::Update(key("rmw", i), UpdateMode::Append(b)));
    }
    c.finish()
}

/// A fresh pool with keys `0..n` of `prefix` put unexplored (values of
/// `len` bytes); exploration on from there.
fn filled(cfg: &SimConfig, prefix: &str, n: u64, len: usize) -> Ctx {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..n {
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key(prefix, i), v));
    }
    c.explore(true);
    c
}
