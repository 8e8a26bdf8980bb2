//! Key expiry: deadlines written, changed, passed and reclaimed, under a
//! manual clock, with the point index in the pool and in DRAM.
//!
//! | workload    | persist path it covers                                   |
//! |-------------|----------------------------------------------------------|
//! | expiry      | `put_with_deadline` (records carrying 8 deadline bytes;  |
//! |             | the first raises the pool to format 4), one already      |
//! |             | passed (a delete); `expire_at` (a rewrite of the record  |
//! |             | with the same value; passed: a delete), `persist`, an    |
//! |             | `update` that keeps the deadline, a plain put over a     |
//! |             | deadline (its heap entry goes stale); the cleaner        |
//! |             | relocating records with deadlines and deleting expired   |
//! |             | ones; `expire_now` deleting the expired keys (a crash in |
//! |             | it at every fence); after a clean reopen, the deadlines  |
//! |             | found again at open and reclaimed; a crash in an expiry  |
//! |             | pass recovered from (deadlines written and moved right   |
//! |             | after that open), and the pass finished after it         |
//! | dram-expiry | `expiry` with the point index in DRAM (the writes after  |
//! |             | the recovery beside its rebuild, held at a fence)        |
//!
//! The clock is the workload's `ManualClock` (`config`), shared by its
//! engine and the oracle's; it moves only between operations, by
//! `Ctx::set_clock`, which moves the expectation's time with it. Background
//! expiry is off, so keys are reclaimed only by `expire_now`, the cleaner
//! and writes, where the workload says.
//!
//! What the oracle checks: a key whose deadline is at or before the clock
//! reads as absent in every image, whatever the media still holds for it
//! (an expired key never comes back: not after a crash in the reclaim, a
//! relocation, a recovery or a clean reopen); a key whose deadline is ahead
//! keeps its value and its deadline (`ttl`); `expire_at` and `persist` are
//! per-key updates, judged as any (old or new state while in flight) and
//! checked for what they return. `expire_now` must delete exactly the
//! expired keys whose records are still there (`ops.rs`): the workload
//! keeps that set exact where the engine, not the workload, decides — after
//! the cleaner and after a recovery it takes from the live pool file which
//! expired keys still have their records (`expired_as_on_media`).
//!
//! The run fails if the cleaner deleted no expired key (the deadline
//! records it should meet were not in the segments it cleaned).
//!
//! Invariants of this workload: keys `exp-*` start plain, `exp-ttl-*` are
//! created with deadlines, `exp-late-*` are the keys of the crashed pass;
//! deadlines are offsets from the clock's start, fixed per key.

use std::collections::BTreeMap;

use rand::Rng;

use super::crash::crash_in;
use super::ctx::{Ctx, Finished};
use super::kv::{fill, key, put_small, small_value, value};
use super::ops::{Op, UpdateMode};
use crate::oracle::{show_key, Key, State};
use crate::poolfile;
use crate::sim::{lock, SimConfig};

/// Plain keys `exp-000000` .. written before the explored window.
const KEYS: u64 = 24;

pub fn expiry(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 32, false);
    let t0 = lock(&c.sim.expect).now_ms;
    fill(&mut c, "exp", KEYS);
    c.explore(true);
    write_deadlines(&mut c, t0);
    // The deadline records sealed into partly dead segments (unexplored),
    // then the clock past the first deadlines: the cleaner deletes the
    // expired keys it meets and relocates the others, deadline and all.
    c.explore(false);
    make_dirty(&mut c);
    c.explore(true);
    c.set_clock(t0 + 2_600);
    c.run(Op::Get(key("exp-ttl", 0)));
    c.run(Op::Get(key("exp", 2)));
    c.run(Op::CleanNow);
    let expired = expired_keys(&c);
    let cleaned = expired_as_on_media(&mut c, expired);
    if cleaned == 0 && !c.broken {
        c.sim.fail(
            "expiry: the cleaner met no expired record (its sealed segments hold them)".into(),
        );
    }
    // An expired key is absent to every write too.
    c.run(Op::ExpireAt(key("exp", 0), t0 + 99_000));
    c.run(Op::Persist(key("exp", 2)));
    c.run(Op::Update(key("exp-ttl", 1), UpdateMode::Keep));
    c.run(Op::Get(key("exp", 6)));
    c.run(Op::ExpireNow);
    // A reclaimed key written again, with and without a deadline.
    put_small(&mut c, key("exp-ttl", 0));
    let v = small_value(&mut c.rng);
    c.run(Op::PutExpiring(key("exp", 0), v, t0 + 5_000));
    // A clean close and an explored reopen at a later time: the deadlines
    // are found again in the records at open, then reclaimed.
    c.set_clock(t0 + 9_500);
    c.clean_reopen();
    c.run(Op::ExpireNow);
    // A crash in the middle of an expiry pass, then the pass finished.
    c.explore(false);
    for j in 0..4u64 {
        let v = small_value(&mut c.rng);
        c.run(Op::PutExpiring(key("exp-late", j), v, t0 + 10_000 + j));
    }
    c.set_clock(t0 + 20_000);
    let fence = c.rng.gen_range(0..4);
    let v = small_value(&mut c.rng);
    let beside = vec![
        Op::PutExpiring(key("exp-side", 0), v, t0 + 30_000),
        Op::ExpireAt(key("exp", 5), t0 + 40_000),
        Op::Get(key("exp", 7)),
    ];
    if let Some(captured) = crash_in(&mut c, Op::ExpireNow, fence, beside) {
        let candidates = captured
            .in_flight
            .iter()
            .filter_map(|(k, l)| Some((k.clone(), l.iter().find(|s| s.is_some())?.clone())))
            .collect();
        expired_as_on_media(&mut c, candidates);
    }
    c.run(Op::ExpireNow);
    c.add_note(format!("the cleaner deleted {cleaned} expired key(s)"));
    c.finish()
}

/// Deadlines (ms after `t0`) on new keys and over plain values; a passed
/// one; `expire_at`, `persist`, an `update` and a plain put on them.
fn write_deadlines(c: &mut Ctx, t0: u64) {
    for j in 0..4u64 {
        let v = small_value(&mut c.rng);
        c.run(Op::PutExpiring(key("exp-ttl", j), v, t0 + 1_000 * (j + 1)));
    }
    let v = small_value(&mut c.rng);
    c.run(Op::PutExpiring(key("exp", 0), v, t0 + 1_500));
    let v = small_value(&mut c.rng);
    c.run(Op::PutExpiring(key("exp", 1), v, t0 - 1)); // passed: a delete
    c.run(Op::ExpireAt(key("exp", 2), t0 + 2_500)); // a plain key gets one
    c.run(Op::ExpireAt(key("exp-ttl", 3), t0 + 9_000)); // moved later
    c.run(Op::ExpireAt(key("exp-absent", 0), t0 + 1)); // absent: false
    c.run(Op::ExpireAt(key("exp", 4), t0 - 5)); // passed: a delete
    c.run(Op::Persist(key("exp-ttl", 2))); // plain again
    c.run(Op::Persist(key("exp", 5))); // plain already: false
    c.run(Op::Update(key("exp-ttl", 1), UpdateMode::Append(b'+'))); // keeps it
    let v = small_value(&mut c.rng);
    c.run(Op::PutExpiring(key("exp", 6), v, t0 + 1_200));
    put_small(c, key("exp", 6)); // its heap entry goes stale
}

/// Overwrites of the plain keys `exp-8..` with 1.5 to 3 KB values, three
/// rounds: the segments holding the deadline records are sealed, partly
/// dead.
fn make_dirty(c: &mut Ctx) {
    for _ in 0..3 {
        for i in 8..KEYS {
            let len = c.rng.gen_range(1_500..3_000);
            let v = value(&mut c.rng, len);
            c.run(Op::Put(key("exp", i), v));
        }
    }
}

/// The acknowledged keys whose deadline has passed, with their state.
fn expired_keys(c: &Ctx) -> BTreeMap<Key, State> {
    let e = lock(&c.sim.expect);
    e.acked
        .iter()
        .filter(|(_, s)| s.is_some() && e.live(s).is_none())
        .map(|(k, s)| (k.clone(), s.clone()))
        .collect()
}

/// For keys that may hold an expired record (`candidates`, each with that
/// state): acknowledged with it when the live pool file still has a record
/// of theirs with its value, absent when it has none (a crash, or the
/// cleaner, took it). Returns how many are absent.
fn expired_as_on_media(c: &mut Ctx, candidates: BTreeMap<Key, State>) -> usize {
    let bytes = c.sim.live_pool().unwrap_or_default();
    let Some(p) = poolfile::parse(&bytes) else {
        c.stop("expiry: the live pool file does not parse".into());
        return 0;
    };
    let on_media: BTreeMap<&[u8], &[u8]> = p
        .live
        .iter()
        .map(|r| (r.key.as_slice(), r.value(&bytes)))
        .collect();
    let mut gone = 0;
    for (k, s) in candidates {
        let kept = match (on_media.get(k.as_slice()), &s) {
            (None, _) => None,
            (Some(v), Some(h)) if *v == h.value.as_slice() => s,
            (Some(_), _) => {
                c.stop(format!(
                    "expiry: {} has a record on media that is not its expired value",
                    show_key(&k)
                ));
                continue;
            }
        };
        gone += kept.is_none() as usize;
        lock(&c.sim.expect).ack_state(&k, kept);
    }
    gone
}
