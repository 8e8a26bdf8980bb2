//! Workloads: sequences of operations that drive every persist path of the
//! engine while the simulator explores their crash points.
//!
//! This file is the registry (`WORKLOADS`: the names in the order a run
//! visits them; `config`: each one's options; `runner`: the function that
//! runs it), the only module that names the families. The workloads live
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
//! | `txn`        | txn, dram-txn (transactions, `Op::Txn`, racing puts)       |
//! | `expiry`     | expiry, dram-expiry                                        |
//! | `tier`       | tier-put, tier-batch, tier-patch (the SSD tier)            |
//! | `collections`| collections (the server's collection commands' batches)   |
//! | `scripts`    | scripts (Lua scripts and functions: one batch per call,    |
//! |              | several keys and types; uses `collections`' `Pair`)        |
//! | `streams`    | streams (appends, groups, reads, acks, claims, trims;      |
//! |              | uses `collections`' `Pair`)                                |
//! | `grouped`    | grouped, dram-grouped, leaves-grouped (group commit:      |
//! |              | `Db::write_grouped`, per key old or new)                  |
//!
//! and they run on rooms below every family: `ops` (`Op`, `exec`: one
//! operation announced to the simulator, and how that tells the oracle
//! what a crash may leave; a transaction and its race, `Op::Txn`, too),
//! `ctx` (`Ctx`: the pool, the observed engine, worker threads, reopens,
//! the manual clock; `Finished`: what a run hands the campaign), `kv` (the
//! keys and values the workloads write), `crash` (`crash_in`: a crash at a
//! chosen fence of one operation, recovered from), `rebuild` (operations
//! beside the engine's rebuild of the DRAM index, held), `epoch` (deferred
//! work at operation boundaries), `pool` (the superblock flags a
//! workload's options create its pool with) and `live_segments` (the live
//! pool file's segments and log lanes). A family may use another's helpers
//! (`leaves` uses `ordered`'s), never the other way round.
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

use std::path::PathBuf;

use persimmon::{Clock, ManualClock, Options, OrderedLayout, PointIndex};

use crate::sim::SimConfig;

mod baseline;
mod batch;
mod cleaner;
mod collections;
mod concurrent;
mod crash;
mod ctx;
mod epoch;
mod expiry;
mod grouped;
mod kv;
mod leaves;
mod live_segments;
mod ops;
mod ordered;
mod point;
mod pool;
mod rebuild;
mod recovery;
mod scripts;
mod segments;
mod streams;
mod tier;
mod txn;

pub use ctx::Finished;

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
    "scripts",
    "streams",
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
    family.starts_with("batch")
        || family == "txn"
        || family == "collections"
        || family == "scripts"
        || family == "grouped"
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
    let disk = crate::disk::DISK_DOMAIN.load(std::sync::atomic::Ordering::Relaxed);
    if disk {
        options.domain = persimmon::Domain::Disk;
        options.disk_log_bytes = persimmon::DEFAULT_DISK_LOG_BYTES.min(8 << 20);
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
        // Nor in the disk domain: a read there waits for the log's sync,
        // which the explorer (on the syncing thread) holds back.
        probe_every: if workload == "elimination"
            || workload == "baseline"
            || writes_batches(workload)
            || disk
        {
            0
        } else {
            4
        },
        data_dir,
        disk,
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
        "scripts" => scripts::scripts,
        "streams" => streams::streams,
        "grouped" | "dram-grouped" | "leaves-grouped" => grouped::grouped,
        _ => return None,
    };
    Some(f)
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
