//! Grouped writes (`Db::write_grouped`, group commit): many independent
//! writes sharing two fences, with the point index in the pool, in DRAM
//! (skiplist), and in DRAM with the ordered index in leaves.
//!
//! | workload        | persist path it covers                               |
//! |-----------------|------------------------------------------------------|
//! | grouped         | grouped writes of 1, 2, 8, 40 and 100 writes:        |
//! |                 | overwrites, new keys (claimed slots; on ordered      |
//! |                 | pools reserved entries or linked nodes), deletes of  |
//! |                 | present keys (markers, no tombstone) and of absent   |
//! |                 | ones, one key twice, puts with deadlines (one        |
//! |                 | already passed: a delete); a group whose records     |
//! |                 | fill the lane's log segment and go on in the next;   |
//! |                 | a crash in a group at each of its fences, recovered  |
//! |                 | from, then groups beside the recovery                |
//! | dram-grouped,   | the same with the DRAM point index (the words are    |
//! | leaves-grouped  | the ordered index's record words); the groups after  |
//! |                 | the recovery run while the DRAM rebuild is held      |
//!
//! Persist points of a grouped write (`persimmon::db::batch`): every
//! record (fence G1), then every new word and delete marker (G2); persist
//! bits and cleared markers after, unflushed.
//!
//! What the oracle checks: each key of a grouped write is in flight *on its
//! own* (a group of one key: the joint rule asks nothing across keys, since
//! the write is not atomic): at every crash point of the window, in every
//! image, each key holds its old state or its new one; once the write
//! returned, every key holds its new one. After the recovery from a
//! captured image the keys still in flight are read and acknowledged with
//! what they hold (`Ctx::resolve_in_flight`).
//!
//! Keys: `grp-*` (overwritten and deleted), `grp-new-*` (created),
//! `grp-late-*` (touched only beside the recovery), `grp-seg-*` (the
//! spanning group).

use rand::Rng;

use super::crash::crash_in;
use super::ctx::{Ctx, Finished};
use super::kv::{fill, key, small_value, value};
use super::ops::{Op, Write};
use crate::sim::{lock, SimConfig};

/// Keys `grp-000000` .. present before the first group.
const KEYS: u64 = 40;
/// Keys `grp-late-000000` .., touched only beside the recovery.
const LATE: u64 = 8;

/// Grouped writes of every size and kind of write, one spanning log
/// segments, and a crash in one recovered from.
pub fn grouped(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 24, false);
    fill(&mut c, "grp", KEYS);
    fill(&mut c, "grp-late", LATE);
    c.explore(true);
    let v = small_value(&mut c.rng);
    c.run(Op::Grouped(vec![Write::Put(key("grp", 0), v)]));
    let (a, b) = (small_value(&mut c.rng), small_value(&mut c.rng));
    let new = new_key(&mut c);
    c.run(Op::Grouped(vec![
        Write::Put(new, a),
        Write::Put(key("grp", 2), b),
    ]));
    c.run(Op::Grouped(vec![Write::Delete(key("grp", 1))]));
    // Eight: a mix, a delete of an absent key and one key written twice.
    let mut eight = mixed(&mut c, 6);
    eight.push(Write::Delete(key("grp-absent", 0)));
    let twice = eight[0].key().to_vec();
    eight.push(Write::Put(twice, small_value(&mut c.rng)));
    c.run(Op::Grouped(eight));
    // Deadlines: ahead, and one already passed (a delete).
    let now = lock(&c.sim.expect).now_ms;
    let mut timed: Vec<Write> = (0..3u64)
        .map(|j| {
            let v = small_value(&mut c.rng);
            Write::PutExpiring(key("grp", 10 + j), v, now + 1_000 * (j + 1))
        })
        .collect();
    let v = small_value(&mut c.rng);
    timed.push(Write::PutExpiring(key("grp", 20), v, now - 1));
    timed.extend(mixed(&mut c, 3));
    c.run(Op::Grouped(timed));
    let forty = mixed(&mut c, 40);
    c.run(Op::Grouped(forty));
    for _ in 0..4 {
        let i = c.rng.gen_range(0..KEYS);
        c.run(Op::Get(key("grp", i)));
    }
    if cfg.options.ordered_index {
        c.run(Op::Scan);
    }
    // The clock past the deadlines: those keys read as absent.
    c.set_clock(now + 60_000);
    c.run(Op::Get(key("grp", 10)));
    // Records of 3 to 5 KB: more than a 64 KiB segment holds.
    let spanning: Vec<Write> = (0..20)
        .map(|i| {
            let len = c.rng.gen_range(3_000..5_000);
            Write::Put(key("grp-seg", i), value(&mut c.rng, len))
        })
        .collect();
    c.run(Op::Grouped(spanning));
    let hundred = mixed(&mut c, 100);
    c.run(Op::Grouped(hundred));
    // A crash in a group with puts and deletes, at G1 or G2.
    let fence = c.rng.gen_range(0..2);
    let mut crashed = mixed(&mut c, 7);
    crashed.push(Write::Delete(key("grp", 3)));
    let beside = beside_recovery(&mut c);
    crash_in(&mut c, Op::Grouped(crashed), fence, beside);
    let after = mixed(&mut c, 8);
    c.run(Op::Grouped(after));
    c.finish()
}

/// Groups on `grp-late-*` keys beside the recovery (with the DRAM point
/// index while its rebuild is held).
fn beside_recovery(c: &mut Ctx) -> Vec<Op> {
    let late = |i| key("grp-late", i);
    let mut v = || small_value(&mut c.rng);
    vec![
        Op::Get(late(0)),
        Op::Grouped(vec![
            Write::Put(late(0), v()),
            Write::Delete(late(1)),
            Write::Put(late(100), v()),
        ]),
        Op::Get(late(1)),
        Op::Grouped(vec![Write::Put(late(1), v()), Write::Put(late(2), v())]),
        Op::Get(late(2)),
    ]
}

/// `n` writes drawn from the seed: overwrites of `grp` keys (about three
/// in five), new keys (one in four), deletes of `grp` keys (the rest).
fn mixed(c: &mut Ctx, n: usize) -> Vec<Write> {
    (0..n)
        .map(|_| {
            let k = key("grp", c.rng.gen_range(0..KEYS));
            match c.rng.gen_range(0..20) {
                0..=11 => Write::Put(k, small_value(&mut c.rng)),
                12..=16 => {
                    let k = new_key(c);
                    Write::Put(k, small_value(&mut c.rng))
                }
                _ => Write::Delete(k),
            }
        })
        .collect()
}

fn new_key(c: &mut Ctx) -> Vec<u8> {
    key("grp-new", c.rng.gen_range(0..1_000_000))
}
