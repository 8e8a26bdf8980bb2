//! The SSD tier (issue 15): values at or above the 4 KiB threshold have
//! their aligned prefix written as an extent in a data file, made durable
//! (group-commit `fdatasync`) before the record naming it is appended; the
//! record keeps the descriptor and the unaligned tail. Range writes become
//! patches on PM, merged later (`clean_tier_now`, which also rewrites the
//! live extents of data files with dead bytes and deletes emptied files).
//!
//! | workload   | paths it covers                                             |
//! |------------|-------------------------------------------------------------|
//! | tier-put   | puts of values from 1 B to 20 KiB: below, at (4096) and     |
//! |            | just past the threshold, 4096·k and 4096·k + tail, PM→tier, |
//! |            | tier→PM, tier→tier;                                         |
//! |            | deletes of tiered keys and re-inserts; a crash in an        |
//! |            | overwrite's extent sync with the extent torn (recovered     |
//! |            | from: the old value), a crash later in a tiered put, and    |
//! |            | puts after each recovery (new data files after the old)     |
//! | tier-batch | batches mixing tiered and small values and deletes (one     |
//! |            | sync for all the batch's extents); `update` rewriting a     |
//! |            | tiered value, deleting one; tiered values with deadlines,   |
//! |            | the clock past them and `expire_now` deleting them; a crash |
//! |            | in a batch's extent sync, torn (recovered from: all old),   |
//! |            | and one later in a batch                                    |
//! | tier-patch | `write_range` inside a value's extent, in its tail, across  |
//! |            | and past its end; `append` to tiered, small (crossing the   |
//! |            | threshold) and absent keys; enough patches to queue a merge;|
//! |            | `clean_tier_now` merging and moving every live extent (its  |
//! |            | old files unlinked: a crash may bring them back), again     |
//! |            | after overwrites; a clean reopen; patches on the reopened   |
//! |            | pool; a crash in the cleaner's extent sync, torn            |
//!
//! What the oracle checks (`oracle.rs`), at every crash point — each PM
//! fence, and each data file's sync and unlink — in every image, each one
//! opened with its data directory's image (unsynced writes dropped,
//! applied or torn at a 512-byte sector, unlinked files back or gone): the
//! keys in flight hold their old or new value, every other key its
//! acknowledged value, exactly (a value whose extent is lost or torn would
//! be an error from `get`, which fails the image); `check()` reads back and
//! verifies every extent records name; inside a sync the keys of the
//! syncing operation hold their old values (no record can name the extent
//! yet). The crashes recovered from assert it again on the live engine.
//!
//! Invariants of these workloads: keys `tpu-*`, `tba-*`, `tpa-*`; before
//! the explored window everything is written by single puts; a crash
//! captured "in a sync" must come with a directory image whose pending
//! extent is torn, or the workload fails.

use rand::rngs::StdRng;
use rand::Rng;

use super::crash::crash_in;
use super::ctx::{Ctx, Finished};
use super::epoch::drain_epoch;
use super::kv::{key, small_value};
use super::ops::{Op, UpdateMode, Write};
use crate::oracle::{Key, Val};
use crate::sim::{lock, SimConfig};

/// The tier threshold of these workloads (the engine's minimum: one
/// extent block).
pub const THRESHOLD: u64 = 4096;
/// PM combinations per crash point: all up to this many, else this many
/// samples (`config`; the data directory's images are not limited by it).
pub const PM_CAP: u64 = 16;
pub const PM_SAMPLES: usize = 4;
/// The ACS read cache of the observed engine (small: evictions happen).
pub const CACHE_BYTES: u64 = 64 << 10;
/// Longest value the workloads write.
const MAX_LEN: usize = 20 << 10;

/// A value of `len` bytes whose every 512-byte sector differs from its
/// neighbours and from other values' (a tag, then letters that change per
/// sector), so a misplaced or stale sector reads as a different value.
fn tier_value(rng: &mut StdRng, len: usize) -> Val {
    let tag: u32 = rng.gen();
    let mut v = format!("t{tag:08x}-").into_bytes();
    v.truncate(len);
    while v.len() < len {
        let sector = (v.len() / 512) as u32;
        v.push(b'a' + (tag.wrapping_add(sector) % 26) as u8);
    }
    v
}

/// A value length across the threshold: below it, exactly it, just past
/// it, a multiple of it, a multiple plus a tail, or anything up to 20 KiB.
fn tier_len(rng: &mut StdRng) -> usize {
    let t = THRESHOLD as usize;
    match rng.gen_range(0..8) {
        0 => rng.gen_range(1..200),
        1 => t - 1,
        2 => t,
        3 => t + 1,
        4 => t * rng.gen_range(2..=5),
        5 | 6 => t * rng.gen_range(1..=4) + rng.gen_range(1..t),
        _ => rng.gen_range(1..=MAX_LEN),
    }
}

/// A value on the tier: at least the threshold, with or without a tail.
fn large_value(rng: &mut StdRng) -> Val {
    let t = THRESHOLD as usize;
    let len = match rng.gen_range(0..3) {
        0 => t * rng.gen_range(1..=4),
        _ => t * rng.gen_range(1..=4) + rng.gen_range(1..t),
    };
    tier_value(rng, len)
}

/// Puts values of `lens` under keys `0..` of `prefix`.
fn fill_lens(c: &mut Ctx, prefix: &str, lens: &[usize]) {
    for (i, &len) in lens.iter().enumerate() {
        let v = tier_value(&mut c.rng, len);
        c.run(Op::Put(key(prefix, i as u64), v));
    }
}

/// Runs `op` (unexplored) with the simulator capturing the first crash
/// point in it — on a tiered write, the sync of its extents, before any
/// record — with every pending data-file write torn; recovers from that
/// image and checks that the keys `op` writes hold their old states (the
/// expectation captured in a sync is narrowed to them, `sim.rs`) and that
/// every other key reads its value on the recovered engine.
fn crash_in_sync(c: &mut Ctx, op: Op, what: &str) {
    c.explore(false);
    c.sim.request_capture_torn(0);
    c.run(op);
    let Some(cap) = c.sim.take_capture() else {
        c.stop(format!("{what}: no crash point to capture"));
        return;
    };
    if !cap.ssd_torn || cap.expect.in_flight.values().any(|l| l.len() != 1) {
        c.stop(format!(
            "{what}: the first crash point is not an extent's sync (torn {}, in flight {})",
            cap.ssd_torn,
            cap.expect.in_flight.len()
        ));
        return;
    }
    let in_flight = cap.expect.in_flight.len();
    let keys: Vec<Key> = cap.expect.acked.keys().cloned().collect();
    c.reopen_from(&cap.image, cap.ssd.as_ref(), cap.expect, true);
    c.explore(true);
    c.resolve_in_flight();
    for k in keys {
        c.run(Op::Get(k));
    }
    c.add_note(format!(
        "crash in {what}'s extent sync, extent torn, no record yet: {in_flight} key(s) in flight kept their old values"
    ));
}

/// Puts, overwrites and deletes of values across the threshold; crashes in
/// a tiered put's sync and later in one.
pub fn put(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let t = THRESHOLD as usize;
    fill_lens(
        &mut c,
        "tpu",
        &[10, t, t + 1, 2 * t + 300, 5 * t, t - 1, 3 * t],
    );
    c.explore(true);
    // Exactly at and around the threshold, on new keys.
    for (i, len) in [1, t - 1, t, t + 1, 2 * t, 2 * t + 1, MAX_LEN]
        .into_iter()
        .enumerate()
    {
        let v = tier_value(&mut c.rng, len);
        c.run(Op::Put(key("tpu-new", i as u64), v));
    }
    // Overwrites from any length to any length.
    for round in 0..16 {
        let k = key("tpu", c.rng.gen_range(0..7));
        let len = tier_len(&mut c.rng);
        let v = tier_value(&mut c.rng, len);
        c.run(Op::Put(k.clone(), v));
        if round % 3 == 0 {
            c.run(Op::Get(k));
        }
    }
    c.run(Op::Delete(key("tpu", 4)));
    c.run(Op::Delete(key("tpu-new", 6)));
    c.run(Op::Delete(key("tpu-new", 6))); // already deleted
    let v = large_value(&mut c.rng);
    c.run(Op::Put(key("tpu", 4), v)); // re-insert
    c.run(Op::Get(key("tpu", 4)));
    // A crash in an overwrite of a tiered value, in its extent's sync.
    let v = tier_value(&mut c.rng, 3 * t + 7);
    crash_in_sync(&mut c, Op::Put(key("tpu", 2), v), "a put");
    let v = large_value(&mut c.rng);
    c.run(Op::Put(key("tpu-after", 0), v));
    // A crash later in a tiered put (its record, slot, persist bit).
    let fence = c.rng.gen_range(1..3);
    let v = large_value(&mut c.rng);
    crash_in(&mut c, Op::Put(key("tpu", 3), v), fence, Vec::new());
    for i in 1..4 {
        let v = large_value(&mut c.rng);
        c.run(Op::Put(key("tpu-after", i), v));
    }
    c.run(Op::Get(key("tpu-after", 0)));
    c.finish()
}

/// Keys `tba-*` present before the first batch.
const BATCH_KEYS: u64 = 12;

/// A batch of `n` writes to `tba-*` keys: tiered and small puts, deletes.
fn tier_batch(c: &mut Ctx, n: usize) -> Vec<Write> {
    (0..n)
        .map(|_| {
            let k = key("tba", c.rng.gen_range(0..BATCH_KEYS + 4));
            match c.rng.gen_range(0..5) {
                0 => Write::Delete(k),
                1 => Write::Put(k, small_value(&mut c.rng)),
                _ => Write::Put(k, large_value(&mut c.rng)),
            }
        })
        .collect()
}

/// Batches with tiered values, read-modify-writes, deadlines and expiry;
/// crashes in a batch's sync and later in one.
pub fn batch(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..BATCH_KEYS {
        let v = match i % 3 {
            0 => small_value(&mut c.rng),
            _ => large_value(&mut c.rng),
        };
        c.run(Op::Put(key("tba", i), v));
    }
    c.explore(true);
    for n in [1, 3, 6] {
        let b = tier_batch(&mut c, n);
        c.run(Op::Batch(b));
    }
    // Read-modify-writes of tiered values: a whole new extent each.
    c.run(Op::Update(key("tba", 1), UpdateMode::Append(b'+')));
    c.run(Op::Update(key("tba", 2), UpdateMode::Keep));
    c.run(Op::Update(key("tba", 4), UpdateMode::Delete));
    // Tiered values with deadlines, in a batch and alone; then the clock
    // past them, reads (absent) and the expiry deleting them.
    let now = lock(&c.sim.expect).now_ms;
    let (a, b) = (large_value(&mut c.rng), large_value(&mut c.rng));
    c.run(Op::Batch(vec![
        Write::PutExpiring(key("tba-exp", 0), a, now + 1_000),
        Write::PutExpiring(key("tba-exp", 1), b, now + 90_000),
    ]));
    let v = large_value(&mut c.rng);
    c.run(Op::PutExpiring(key("tba-exp", 2), v, now + 2_000));
    c.set_clock(now + 60_000);
    c.run(Op::Get(key("tba-exp", 0)));
    c.run(Op::Get(key("tba-exp", 1)));
    c.run(Op::ExpireNow);
    // A crash in a batch's extent sync: every key keeps its old value.
    // Its last write puts a tiered value (no later write of the batch can
    // drop it), so the batch has an extent to sync: five random writes had
    // none for seed 77008227 (deletes and small values only).
    let mut b = tier_batch(&mut c, 4);
    let (k, v) = (
        key("tba", c.rng.gen_range(0..BATCH_KEYS)),
        large_value(&mut c.rng),
    );
    b.push(Write::Put(k, v));
    crash_in_sync(&mut c, Op::Batch(b), "a batch");
    // A crash later in a batch (its records, commit table, words).
    let fence = c.rng.gen_range(1..6);
    let b = tier_batch(&mut c, 4);
    crash_in(&mut c, Op::Batch(b), fence, Vec::new());
    let b = tier_batch(&mut c, 6);
    c.run(Op::Batch(b));
    c.finish()
}

/// Range writes and appends (patches on PM), their merge and the tier
/// cleaner; a clean reopen; a crash in the cleaner's sync.
pub fn patch(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let t = THRESHOLD as usize;
    fill_lens(
        &mut c,
        "tpa",
        &[t, t + 500, 2 * t, 3 * t + 1000, t + 4000, 40, t - 10],
    );
    c.explore(true);
    let k = |i| key("tpa", i);
    let bytes = |c: &mut Ctx, n: usize| tier_value(&mut c.rng, n);
    let b = bytes(&mut c, 100);
    c.run(Op::WriteRange(k(0), 10, b)); // inside the extent
    let b = bytes(&mut c, 50);
    c.run(Op::WriteRange(k(1), t as u64 + 100, b)); // in the tail
    let b = bytes(&mut c, 700);
    c.run(Op::WriteRange(k(2), 2 * t as u64 - 300, b)); // across the end
    let b = bytes(&mut c, 64);
    c.run(Op::WriteRange(k(3), 3 * t as u64 + 3000, b)); // past the end: a gap
    let b = bytes(&mut c, 30);
    c.run(Op::Append(k(4), b));
    let b = bytes(&mut c, 9);
    c.run(Op::WriteRange(k(0), 0, b));
    c.run(Op::Get(k(0)));
    c.run(Op::Get(k(3)));
    let b = bytes(&mut c, t);
    c.run(Op::Append(k(5), b)); // a small value crosses the threshold
    let b = bytes(&mut c, 5);
    c.run(Op::Append(k(6), b)); // stays small
    let b = bytes(&mut c, 20);
    c.run(Op::Append(key("tpa-absent", 0), b));
    // Enough patches to queue the key for merging.
    for i in 0..34u64 {
        let b = bytes(&mut c, 16);
        c.run(Op::WriteRange(k(2), i * 37, b));
    }
    c.run(Op::Get(k(2)));
    let before = c.db().stats();
    c.run(Op::CleanTier);
    for i in [0, 3] {
        let v = large_value(&mut c.rng);
        c.run(Op::Put(k(i), v));
    }
    c.run(Op::CleanTier);
    drain_epoch(); // the emptied files are deleted through the epoch
    let after = c.db().stats();
    check_cleaned(&mut c, &before, &after);
    c.clean_reopen();
    for i in 0..3 {
        let b = bytes(&mut c, 40);
        c.run(Op::Append(k(i), b));
    }
    c.run(Op::Get(k(1)));
    crash_in_sync(&mut c, Op::CleanTier, "the tier cleaner");
    let b = bytes(&mut c, 40);
    c.run(Op::WriteRange(k(4), 7, b));
    c.finish()
}

/// The two cleaner passes between `before` and `after` merged the queued
/// patches and deleted emptied data files; notes the figures.
fn check_cleaned(c: &mut Ctx, before: &persimmon::Stats, after: &persimmon::Stats) {
    let merges = after.ssd_merges - before.ssd_merges;
    let deleted = after.ssd_files_deleted - before.ssd_files_deleted;
    let moved = after.ssd_extents_moved - before.ssd_extents_moved;
    if merges == 0 || deleted == 0 {
        c.stop(format!(
            "clean_tier_now merged {merges} value(s) and deleted {deleted} data file(s): expected some of each"
        ));
        return;
    }
    c.add_note(format!(
        "tier cleaner: {merges} merge(s), {moved} extent(s) moved, {deleted} data file(s) deleted"
    ));
}
