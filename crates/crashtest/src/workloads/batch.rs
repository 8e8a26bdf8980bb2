//! Atomic write batches (`Db::write`), with the point index in the pool and
//! in DRAM.
//!
//! | workload            | persist path it covers                           |
//! |---------------------|--------------------------------------------------|
//! | batch               | the first batch raising the pool to format 4 in  |
//! |                     | place (staged superblock); batches of 1, 2, 8 and |
//! |                     | 100 writes: overwrites, new keys (claimed slots, |
//! |                     | on ordered pools linked nodes), deletes of       |
//! |                     | present keys (tombstones, fences E and F) and of |
//! |                     | absent ones, one key twice; puts with deadlines  |
//! |                     | (one already passed: a delete), then the clock   |
//! |                     | past them and a batch over the expired keys; a   |
//! |                     | crash in a batch with deletes recovered from     |
//! |                     | (undone before fence D, deletes finished after), |
//! |                     | batches and a transaction right after the open   |
//! | batch-segments      | a batch whose records fill the lane's log        |
//! |                     | segment and go on in the next (sealed midway);   |
//! |                     | records of more than half a segment in runs of   |
//! |                     | their own (one and two segments) next to small   |
//! |                     | ones; an overwrite and a delete of those runs    |
//! |                     | (freed after the commit); a crash in one         |
//! | dram-batch,         | `batch`, `batch-segments` with the point index   |
//! | dram-batch-segments | in DRAM (the words are the nodes' record words); |
//! |                     | the writes after the recovery run while the      |
//! |                     | engine's rebuild of the DRAM index is held at    |
//! |                     | its first fence: batches and a transaction on    |
//! |                     | keys known only through their nodes              |
//!
//! The commit's persist points (`persimmon::db::batch`): records and undo
//! record (fence A), commit-table entry begun (B), new words (C), entry
//! freed (D: the commit point) — with deletes: entry committed (D), the
//! deleted keys' words cleared (E), entry freed (F).
//!
//! What the oracle checks: a batch's writes form a group
//! (`Expect::groups`): at every crash point of the window, in every image,
//! all of its keys hold their old states or all their new ones (a key
//! written twice: the later write); once it returned, all the new ones. Every
//! image is reopened, so the recovery at open (`batch_table::recover`: undo
//! from the undo record, or finish the deletes) runs on each. After the
//! recovery from a captured image the workload reads every key the batch
//! had in flight and checks the joint rule again (`Ctx::resolve_in_flight`);
//! the open of that image is explored too, so crashes in the recovery are
//! judged. A key whose deadline passed reads as absent (`oracle.rs`).
//! *batch-segments* fails if its first batch took no new log segment (its
//! records did not cross a segment boundary).
//!
//! Invariants of these workloads: the keys of a run are `bat-*`
//! (overwritten and deleted), `bat-new-*` (created by batches), `bat-late-*`
//! (touched only right after the recovery), `bsg-*`; everything before the
//! explored window is written by single puts; the operations right after a
//! recovery never write a key the crashed operation wrote (it is still in
//! flight until they are done).

use rand::Rng;

use super::crash::crash_in;
use super::ctx::{Ctx, Finished};
use super::kv::{fill, key, small_value, value};
use super::live_segments::segment_kinds;
use super::ops::{Op, Race, TxWrite, Txn, Write};
use crate::poolfile::SegKind;
use crate::sim::{lock, SimConfig};

/// Keys `bat-000000` .. present before the first batch.
const KEYS: u64 = 40;
/// Keys `bat-late-000000` .., written before the explored window and
/// touched only beside the recovery (`beside_recovery`).
const LATE: u64 = 8;

/// Batches of every size and kind of write, a clock moved past deadlines,
/// and a crash in a batch recovered from.
pub fn batch(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 24, false);
    fill(&mut c, "bat", KEYS);
    fill(&mut c, "bat-late", LATE);
    c.explore(true);
    // Size 1: the first batch also raises the pool to format 4.
    let v = small_value(&mut c.rng);
    c.run(Op::Batch(vec![Write::Put(key("bat", 0), v)]));
    // Size 2: a new key and an overwrite (the first batch a crash can tear
    // without leaving a tombstone that `check()` would report first).
    let (a, b) = (small_value(&mut c.rng), small_value(&mut c.rng));
    let new = new_key(&mut c);
    c.run(Op::Batch(vec![
        Write::Put(new, a),
        Write::Put(key("bat", 2), b),
    ]));
    c.run(Op::Batch(vec![Write::Delete(key("bat", 1))]));
    // Size 8: a mix, a delete of an absent key and one key written twice.
    let mut eight = mixed(&mut c, 6);
    eight.push(Write::Delete(key("bat-absent", 0)));
    let twice = eight[0].key().to_vec();
    eight.push(Write::Put(twice, small_value(&mut c.rng)));
    c.run(Op::Batch(eight));
    let expiring = with_deadlines(&mut c);
    let hundred = mixed(&mut c, 100);
    c.run(Op::Batch(hundred));
    for _ in 0..4 {
        let i = c.rng.gen_range(0..KEYS);
        c.run(Op::Get(key("bat", i)));
    }
    if cfg.options.ordered_index {
        c.run(Op::Scan);
    }
    // The clock past every deadline: those keys read as absent from now
    // on, in every image; a batch writes over two of them.
    let now = lock(&c.sim.expect).now_ms;
    c.set_clock(now + 60_000);
    c.run(Op::Get(expiring[0].clone()));
    let (a, b) = (small_value(&mut c.rng), small_value(&mut c.rng));
    c.run(Op::Batch(vec![
        Write::Put(expiring[1].clone(), a),
        Write::Put(expiring[2].clone(), b),
        Write::Delete(expiring[3].clone()),
    ]));
    // A crash in a batch that deletes, at any of its fences.
    let fence = c.rng.gen_range(0..6);
    let mut crashed = mixed(&mut c, 7);
    crashed.push(Write::Delete(key("bat", 3)));
    let beside = beside_recovery(&mut c);
    crash_in(&mut c, Op::Batch(crashed), fence, beside);
    let after = mixed(&mut c, 8);
    c.run(Op::Batch(after));
    c.finish()
}

/// The operations on `bat-late-*` keys that run beside the recovery from
/// the crashed batch (`crash_in`; with the DRAM point index while its
/// rebuild is held, when most of these keys are not in the DRAM index
/// yet): batches that overwrite, delete, re-insert and create keys, one
/// with a deadline, and a transaction.
fn beside_recovery(c: &mut Ctx) -> Vec<Op> {
    let late = |i| key("bat-late", i);
    let now = lock(&c.sim.expect).now_ms;
    let mut v = || small_value(&mut c.rng);
    let txn = Txn {
        reads: vec![late(3), late(4)],
        writes: vec![
            (
                late(5),
                TxWrite::Derived {
                    tag: 5,
                    deadline: None,
                },
            ),
            (late(6), TxWrite::Delete),
        ],
        race: Race::None,
    };
    vec![
        Op::Get(late(0)),
        Op::Batch(vec![
            Write::Put(late(0), v()),
            Write::Delete(late(1)),
            Write::Put(late(100), v()),
        ]),
        Op::Get(late(1)),
        Op::Batch(vec![
            Write::Put(late(1), v()),
            Write::PutExpiring(late(2), v(), now + 60_000),
        ]),
        Op::Txn(txn),
        Op::Get(late(5)),
    ]
}

/// A batch of eight: four puts with deadlines 1 to 4 s ahead, one with a
/// deadline already passed (a delete), three plain. Returns the keys given
/// a deadline ahead.
fn with_deadlines(c: &mut Ctx) -> Vec<Vec<u8>> {
    let now = lock(&c.sim.expect).now_ms;
    let mut writes = Vec::new();
    let mut expiring = Vec::new();
    for j in 0..4u64 {
        let k = if j % 2 == 0 {
            new_key(c)
        } else {
            key("bat", 10 + j)
        };
        expiring.push(k.clone());
        let v = small_value(&mut c.rng);
        writes.push(Write::PutExpiring(k, v, now + 1_000 * (j + 1)));
    }
    let v = small_value(&mut c.rng);
    writes.push(Write::PutExpiring(key("bat", 20), v, now - 1));
    writes.extend(mixed(c, 3));
    c.run(Op::Batch(writes));
    expiring
}

/// `n` writes drawn from the seed: overwrites of `bat` keys (about three
/// in five), new keys (one in four), deletes of `bat` keys (the rest; a
/// key deleted before makes it a delete of an absent key).
fn mixed(c: &mut Ctx, n: usize) -> Vec<Write> {
    (0..n)
        .map(|_| {
            let k = key("bat", c.rng.gen_range(0..KEYS));
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
    key("bat-new", c.rng.gen_range(0..1_000_000))
}

/// Batches whose records cross a log segment boundary or take runs of
/// their own.
pub fn batch_segments(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 32, false);
    for i in 0..8 {
        let len = c.rng.gen_range(1_000..3_000);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("bsg", i), v));
    }
    c.explore(true);
    let seg = cfg.options.segment_bytes as usize;
    // Twelve records of 6 to 9 KB: more than a segment holds.
    let before = segment_kinds(&c);
    let spanning: Vec<Write> = (0..12)
        .map(|i| {
            let len = c.rng.gen_range(6_000..9_000);
            Write::Put(key("bsg", i), value(&mut c.rng, len))
        })
        .collect();
    c.run(Op::Batch(spanning));
    let taken = new_log_segments(&before, &segment_kinds(&c));
    if taken == 0 && !c.broken {
        c.sim
            .fail("batch-segments: twelve records of 6 to 9 KB took no new log segment".into());
    }
    // Records of more than half a segment, in runs of one and two
    // segments, next to small ones and a delete.
    let (big, two) = (
        value(&mut c.rng, seg / 2 + 1_000),
        value(&mut c.rng, seg + 20_000),
    );
    let small = small_value(&mut c.rng);
    c.run(Op::Batch(vec![
        Write::Put(key("bsg", 100), big),
        Write::Put(key("bsg", 101), two),
        Write::Put(key("bsg", 0), small),
        Write::Delete(key("bsg", 1)),
    ]));
    // The runs overwritten and deleted: freed after the commit.
    let (shrunk, grown) = (small_value(&mut c.rng), value(&mut c.rng, seg / 2 + 3_000));
    c.run(Op::Batch(vec![
        Write::Put(key("bsg", 100), shrunk),
        Write::Delete(key("bsg", 101)),
        Write::Put(key("bsg", 2), grown),
    ]));
    c.run(Op::Get(key("bsg", 100)));
    c.note = Some(format!(
        "the spanning batch took {taken} new log segment(s)"
    ));
    // A crash in a batch with a run of its own and a delete.
    let fence = c.rng.gen_range(0..6);
    let big = value(&mut c.rng, seg / 2 + 2_000);
    let crashed = vec![
        Write::Put(key("bsg", 102), big),
        Write::Put(key("bsg", 3), b"small".to_vec()),
        Write::Delete(key("bsg", 2)),
    ];
    let (a, b) = (value(&mut c.rng, seg / 2 + 500), small_value(&mut c.rng));
    let beside = vec![
        Op::Batch(vec![
            Write::Put(key("bsg", 200), a),
            Write::Put(key("bsg", 5), b),
            Write::Delete(key("bsg", 6)),
        ]),
        Op::Get(key("bsg", 7)),
    ];
    crash_in(&mut c, Op::Batch(crashed), fence, beside);
    c.finish()
}

/// How many segments are log segments in `after` and were not in `before`.
fn new_log_segments(before: &[SegKind], after: &[SegKind]) -> usize {
    after
        .iter()
        .enumerate()
        .filter(|(i, k)| {
            matches!(k, SegKind::Log { .. }) && !matches!(before.get(*i), Some(SegKind::Log { .. }))
        })
        .count()
}
