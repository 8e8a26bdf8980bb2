//! Workloads: sequences of operations that drive every persist path of the
//! engine while the simulator explores their crash points.
//!
//! This file is the registry (`WORKLOADS`: the names in the order a run
//! visits them; `config`: each one's options; `runner`: the function that
//! runs it) and the small helpers the workloads share. The workloads live
//! in rooms by family, each room's header naming the persist paths its
//! workloads cover and what the oracle checks for them:
//!
//! | room         | workloads                                                  |
//! |--------------|------------------------------------------------------------|
//! | `point`      | insert, update, delete, rmw                                |
//! | `concurrent` | elimination, lanes                                         |
//! | `segments`   | split, large, log-segments, pool-growth                    |
//! | `recovery`   | reopen                                                     |
//! | `cleaner`    | cleaner, dram-cleaner                                      |
//! | `baseline`   | baseline                                                   |
//! | `ordered`    | ordered-insert, ordered-delete, ordered-lanes,             |
//! |              | ordered-reopen; dram-insert, dram-update-delete,           |
//! |              | dram-lanes, dram-reopen (the same four functions);         |
//! |              | leaves-insert, leaves-update-delete (the first two again,  |
//! |              | on leaves)                                                 |
//! | `leaves`     | leaves-lanes, leaves-reopen, leaves-split (the ordered     |
//! |              | index in leaves, format version 6)                         |
//! | `batch`      | batch, batch-segments; dram-batch, dram-batch-segments     |
//! | `txn`        | txn, dram-txn (also `Op::Txn`: a transaction and its race) |
//! | `expiry`     | expiry, dram-expiry                                        |
//! | `tier`       | tier-put, tier-batch, tier-patch (the SSD tier)            |
//! | `collections`| collections (the server's collection commands' batches)   |
//! | `grouped`    | grouped, dram-grouped, leaves-grouped (group commit:      |
//! |              | `Db::write_grouped`, per key old or new)                  |
//!
//! and they run on `ops` (`Op`, `exec`: one operation announced to the
//! simulator, and how that tells the oracle what a crash may leave) and
//! `ctx` (`Ctx`: the pool, the observed engine, worker threads, reopens,
//! the manual clock; `Finished`: what a run hands the campaign).
//!
//! A new workload is a `pub fn(&SimConfig) -> Finished` in its family's
//! room (a new room for a new family), named in `WORKLOADS` and `runner`,
//! with its options derived from its name in `config`.
//!
//! Invariants:
//! - Every workload is a function of its seed: keys, values, which
//!   operations are explored (`explore` windows) and the pool's hash seed
//!   (the harness writes the superblock, see `poolfile.rs`).
//! - An operation is announced to the simulator (`Sim::begin`) before it
//!   starts and acknowledged (`Sim::end`) after it returns, on the thread
//!   that runs it; the expectation therefore always knows which keys are in
//!   flight.
//! - Operations run one at a time, except in `elimination`, where two puts
//!   of one key overlap on purpose (both stay in flight until both return),
//!   in `txn`'s races (a put of a key a transaction read, while the
//!   transaction is in flight; never a key it writes),
//!   in `ordered-lanes`' overlapping pairs (two writers of neighbouring
//!   keys; `leaves-lanes` too, and a split waiting for a pinned entry), in
//!   `ordered-reopen`'s put while the walk after open runs, and in
//!   `dram-reopen`'s and `leaves-reopen`'s operations (one at a time, on a
//!   thread of their own) while the engine's rebuild of the DRAM index is
//!   held at a fence.
//! - The `batch*`, `txn`, `grouped` and `expiry` families (and their
//!   `dram-*` runs) measure deadlines against a manual clock of their own (`config`),
//!   which only the workload moves, and run without background expiry.
//! - The `tier-*` workloads create their pools with an SSD tier (threshold
//!   4 KiB, a data directory of their own, `SimConfig::data_dir`), which
//!   the simulator models as well (`ssd.rs`); they explore PM combinations
//!   with at most `tier::PM_CAP` / `tier::PM_SAMPLES` (`config`).
//! - The `ordered-*` workloads create their pools with the ordered index
//!   (superblock flag, `pool_flags`), the `dram-*` ones also with the DRAM
//!   point index, the ordered index in the skiplist (format version 3, as
//!   `OrderedLayout::Skiplist` creates it), the `leaves-*` ones with the
//!   DRAM point index and the ordered index in leaves (format version 6,
//!   flag `poolfile::FLAG_LEAVES`); every open checks that the engine found
//!   what was asked. The `dram-*` workloads are the ordered (or generic)
//!   ones run on that placement, and `leaves-insert`, `leaves-update-delete`
//!   the ordered ones on leaves: the workload code is shared, the paths
//!   differ underneath.

use std::collections::BTreeSet;
use std::path::PathBuf;
use std::sync::Arc;

use persimmon::{Clock, ManualClock, Options, OrderedLayout, PointIndex};
use rand::rngs::StdRng;
use rand::Rng;

use crate::oracle::{Key, Val};
use crate::poolfile;
use crate::sim::{self, SimConfig};

mod baseline;
mod batch;
mod cleaner;
mod collections;
mod concurrent;
mod ctx;
mod expiry;
mod grouped;
mod leaves;
mod ops;
mod ordered;
mod point;
mod recovery;
mod segments;
mod tier;
mod txn;

pub use ctx::{Ctx, Finished};
pub use ops::{exec, Op, UpdateMode};

/// Every workload by name, in the order a run visits them.
pub const WORKLOADS: &[&str] = &[
    "insert",
    "update",
    "delete",
    "rmw",
    "elimination",
    "split",
    "large",
    "log-segments",
    "pool-growth",
    "lanes",
    "reopen",
    "cleaner",
    "baseline",
    "ordered-insert",
    "ordered-delete",
    "ordered-lanes",
    "ordered-reopen",
    "dram-insert",
    "dram-update-delete",
    "dram-cleaner",
    "dram-lanes",
    "dram-reopen",
    "leaves-insert",
    "leaves-update-delete",
    "leaves-lanes",
    "leaves-reopen",
    "leaves-split",
    "batch",
    "batch-segments",
    "txn",
    "expiry",
    "dram-batch",
    "dram-batch-segments",
    "dram-txn",
    "dram-expiry",
    "tier-put",
    "tier-batch",
    "tier-patch",
    "collections",
    "grouped",
    "dram-grouped",
    "leaves-grouped",
];

/// Where the manual clocks of the workloads that use deadlines start
/// (ms of Unix time: 2023-11-14).
pub const CLOCK_START_MS: u64 = 1_700_000_000_000;

/// Whether `workload` writes batches, transactions or grouped writes
/// (named with or without `dram-` or `tier-`). (Grouped writes need no
/// batch machinery of the readers, but many keys are in flight at once,
/// which the probes do not handle.)
fn writes_batches(workload: &str) -> bool {
    let family = family(workload);
    family.starts_with("batch") || family == "txn" || family == "collections" || family == "grouped"
}

/// `workload`'s name without the placement (`dram-`, `leaves-`) or tier
/// (`tier-`) prefix.
fn family(workload: &str) -> &str {
    let w = workload.strip_prefix("dram-").unwrap_or(workload);
    let w = w.strip_prefix("leaves-").unwrap_or(w);
    w.strip_prefix("tier-").unwrap_or(w)
}

/// Whether `workload` measures deadlines against a manual clock: the
/// batch, transaction and expiry families.
fn manual_clock(workload: &str) -> bool {
    writes_batches(workload) || family(workload) == "expiry"
}

/// Whether `workload` runs on a pool with an SSD tier (`tier-*`).
fn tiered(workload: &str) -> bool {
    workload.starts_with("tier-")
}

/// Pool geometry shared by the workloads: 64 KiB segments (a split after a
/// few thousand keys), one lane unless the workload says otherwise.
pub fn base_options() -> Options {
    Options {
        create: false,
        pool_bytes_initial: 0,
        pool_bytes_max: 256 << 20,
        segment_bytes: 64 << 10,
        lanes: 1,
        cleaner: false,
        ..Options::default()
    }
}

/// Builds the configuration of one workload run.
pub fn config(
    workload: &'static str,
    seed: u64,
    dir: PathBuf,
    cap: u64,
    samples: usize,
    deadline: Option<std::time::Instant>,
) -> SimConfig {
    let mut options = base_options();
    if workload.ends_with("lanes") {
        options.lanes = 4;
    }
    let dram = workload.starts_with("dram-");
    let leaves = workload.starts_with("leaves-");
    if workload.starts_with("ordered-") || dram || leaves {
        options.ordered_index = true;
    }
    if dram || leaves {
        options.point_index = PointIndex::Dram;
    }
    // The `dram-*` workloads keep the skiplist (version 3); the `leaves-*`
    // ones take the engine's default for this placement, leaves.
    options.ordered_layout = match leaves {
        true => OrderedLayout::Leaves,
        false => OrderedLayout::Skiplist,
    };
    if workload == "baseline" {
        options.mechanisms = persimmon::Mechanisms::NONE;
    }
    if manual_clock(workload) {
        options.clock = Clock::Manual(ManualClock::new(CLOCK_START_MS));
        options.active_expiry = false;
    }
    if tiered(workload) {
        options.tier_threshold = tier::THRESHOLD;
        options.cache_bytes = tier::CACHE_BYTES;
    }
    let data_dir = tiered(workload).then(|| dir.join("data"));
    // The tiered workloads' PM persist paths are the other workloads'
    // (a record naming an extent is persisted like any other): they explore
    // PM combinations lightly, so their time goes to the data directory's
    // images (`ssd::plan`, which these limits do not touch).
    let (cap, samples) = match tiered(workload) {
        true => (cap.min(tier::PM_CAP), samples.min(tier::PM_SAMPLES)),
        false => (cap, samples),
    };
    SimConfig {
        workload,
        seed,
        options,
        cap,
        samples,
        dir,
        deadline,
        // No probes for two writers of one key (two keys in flight), nor
        // with locked reads: there a reader waits for the writer's bucket
        // lock, so it cannot see a write in flight (and would wait for the
        // writer paused at the crash point forever). Batches and
        // transactions likewise: a reader that meets a record of a batch
        // still publishing waits for the batch.
        probe_every: if workload == "elimination"
            || workload == "baseline"
            || writes_batches(workload)
        {
            0
        } else {
            4
        },
        data_dir,
    }
}

/// Runs workload `cfg.workload`.
pub fn run(cfg: &SimConfig) -> Finished {
    match runner(cfg.workload) {
        Some(f) => f(cfg),
        None => panic!("unknown workload {}", cfg.workload),
    }
}

/// The function that runs workload `name`.
fn runner(name: &str) -> Option<fn(&SimConfig) -> Finished> {
    let f: fn(&SimConfig) -> Finished = match name {
        "insert" => point::insert,
        "update" => point::update,
        "delete" => point::delete,
        "rmw" => point::rmw,
        "elimination" => concurrent::elimination,
        "split" => segments::split,
        "large" => segments::large,
        "log-segments" => segments::log_segments,
        "pool-growth" => segments::pool_growth,
        "lanes" => concurrent::lanes,
        "reopen" => recovery::reopen,
        "cleaner" => cleaner::cleaner,
        "baseline" => baseline::baseline,
        // The DRAM placement runs the same workloads (the placement is in
        // `cfg.options`, see `config`).
        "ordered-insert" | "dram-insert" | "leaves-insert" => ordered::insert,
        "ordered-delete" | "dram-update-delete" | "leaves-update-delete" => ordered::delete,
        "ordered-lanes" | "dram-lanes" => ordered::lanes,
        "leaves-lanes" => leaves::lanes,
        "leaves-reopen" => leaves::reopen,
        "leaves-split" => leaves::split,
        "ordered-reopen" | "dram-reopen" => ordered::reopen,
        "dram-cleaner" => cleaner::cleaner,
        "batch" | "dram-batch" => batch::batch,
        "batch-segments" | "dram-batch-segments" => batch::batch_segments,
        "txn" | "dram-txn" => txn::txn,
        "expiry" | "dram-expiry" => expiry::expiry,
        "tier-put" => tier::put,
        "tier-batch" => tier::batch,
        "tier-patch" => tier::patch,
        "collections" => collections::collections,
        "grouped" | "dram-grouped" | "leaves-grouped" => grouped::grouped,
        _ => return None,
    };
    Some(f)
}

/// Whether `options` create a pool whose ordered index is kept in leaves
/// (the DRAM point index and `OrderedLayout::Leaves`, format version 6).
fn leaf_pool(options: &Options) -> bool {
    options.ordered_index
        && options.point_index == PointIndex::Dram
        && options.ordered_layout == OrderedLayout::Leaves
}

/// Superblock flags a pool for `options` must be created with.
fn pool_flags(options: &Options) -> u64 {
    let mut flags = 0;
    if !options.mechanisms.volatile_lock_table {
        flags |= poolfile::FLAG_PERSISTENT_LOCKS;
    }
    if options.ordered_index {
        flags |= poolfile::FLAG_ORDERED_INDEX;
    }
    if options.point_index == PointIndex::Dram {
        flags |= poolfile::FLAG_DRAM_POINT_INDEX;
    }
    if leaf_pool(options) {
        flags |= poolfile::FLAG_LEAVES;
    }
    // As the engine creates them: a PM point index with the DRAM lock table
    // gets three-choice buckets.
    if options.point_index == PointIndex::Pm && options.mechanisms.volatile_lock_table {
        flags |= poolfile::FLAG_THREE_CHOICE;
    }
    flags
}

/// Key `i` of a workload's key family `prefix`: `prefix-000042`.
fn key(prefix: &str, i: u64) -> Key {
    format!("{prefix}-{i:06}").into_bytes()
}

/// A value of `len` bytes that names its key and a version.
fn value(rng: &mut StdRng, len: usize) -> Val {
    let tag: u32 = rng.gen();
    let mut v = format!("v{tag:08x}-").into_bytes();
    let fill = b'a' + (tag % 26) as u8;
    v.resize(len.max(v.len()), fill);
    v.truncate(len.max(1));
    v
}

/// A value length for a small record: mostly 8..120 bytes, one in ten a
/// single byte, one in ten 256..700 (the engine copies those non-temporally).
fn small_len(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..10) {
        0 => rng.gen_range(256..700), // non-temporal copy
        1 => 1,
        _ => rng.gen_range(8..120),
    }
}

/// A value of a small record's length (`small_len`).
fn small_value(rng: &mut StdRng) -> Val {
    let len = small_len(rng);
    value(rng, len)
}

/// Puts a small value (`small_value`) under `k`.
fn put_small(c: &mut Ctx, k: Key) {
    let v = small_value(&mut c.rng);
    c.run(Op::Put(k, v));
}

/// Puts small values under keys `0..n` of `prefix`.
fn fill(c: &mut Ctx, prefix: &str, n: u64) {
    for i in 0..n {
        put_small(c, key(prefix, i));
    }
}

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
fn crash_in(c: &mut Ctx, op: Op, fence: u64, beside: Vec<Op>) -> Option<crate::oracle::Expect> {
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
/// (see `ordered::hold_rebuild`); returns how far they got, for the note.
fn beside_rebuild(c: &mut Ctx, gate: &Arc<sim::Gate>, ops: Vec<Op>) -> String {
    let (held, waiter) = ordered::hold_rebuild(c, gate);
    let n = ops.len();
    let (done, early) = ordered::beside_held(c, ops, held.then_some(gate));
    let ready = ordered::let_rebuild_go(c, gate, held, waiter);
    match held {
        false => format!(", rebuild never held: {n} operations after it"),
        true => format!(
            ", rebuild held: {done} of {n} operations beside it{}, the DRAM index ready then: {}",
            if early { " (let go early)" } else { "" },
            ordered::ready_word(ready)
        ),
    }
}

/// Lets deferred (epoch) work run at an operation boundary, so releases of
/// dead segments happen at the same place on every run.
fn settle() {
    for _ in 0..3 {
        crossbeam_epoch::pin().flush();
    }
}

/// Runs deferred (epoch) work until the queue is drained: the oracle's own
/// engines fill the global queue, of which one `flush` collects a few bags,
/// so a node or segment freed by the last operation may otherwise wait for
/// a later one.
fn drain_epoch() {
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
}

/// The segments of the live pool file (the engine's mapping), by index.
fn segment_kinds(c: &Ctx) -> Vec<poolfile::SegKind> {
    std::fs::read(&c.pool)
        .ok()
        .and_then(|b| poolfile::parse(&b))
        .map(|p| p.segments)
        .unwrap_or_default()
}

/// The lanes that own log segments in the live pool file.
fn log_lanes(c: &Ctx) -> BTreeSet<u32> {
    segment_kinds(c)
        .iter()
        .filter_map(|k| match k {
            poolfile::SegKind::Log { lane, .. } => Some(*lane),
            _ => None,
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::{runner, WORKLOADS};

    #[test]
    fn every_listed_workload_has_a_runner() {
        for w in WORKLOADS {
            assert!(runner(w).is_some(), "{w} is listed but not run");
        }
        assert!(runner("no-such-workload").is_none());
    }
}
