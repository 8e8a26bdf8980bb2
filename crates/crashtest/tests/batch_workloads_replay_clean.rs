//! The workloads of atomic batches, transactions and key expiry replay
//! cleanly on the real engine, with the point index in the pool and in
//! DRAM; and the oracle's joint rule is not blind: with every crash image's
//! batch commit table wiped (`--mutant-batch-table`: interrupted batches
//! are not undone), a run of `batch` reports batches torn — keys of one
//! batch holding their new states next to keys holding their old ones,
//! each legal on its own, which the per-key rule alone would pass.

mod common;

use common::crashtest;

const SMALL: &[&str] = &["--cap", "16", "--samples", "4", "--faults", "1"];

/// Replays workload `w` with seed 5 and small exploration.
fn replay(w: &str, extra: &[&str]) -> (bool, String) {
    let mut args = vec!["--workload", w, "--seed", "5"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(extra);
    crashtest(&args)
}

/// The workloads of the three families (`--list`), in both placements.
fn family_workloads() -> Vec<String> {
    let (ok, list) = crashtest(&["--list"]);
    assert!(ok, "{list}");
    list.lines()
        .filter(|w| {
            let family = w.strip_prefix("dram-").unwrap_or(w);
            family.starts_with("batch") || family == "txn" || family == "expiry"
        })
        .map(String::from)
        .collect()
}

#[test]
fn batch_txn_and_expiry_workloads_replay_with_no_inconsistency() {
    let workloads = family_workloads();
    assert_eq!(workloads.len(), 8, "{workloads:?}");
    for w in &workloads {
        let (ok, out) = replay(w, &[]);
        let last = out.lines().last().unwrap_or_default();
        assert!(
            ok && last.ends_with("inconsistencies=0 seed=5"),
            "{w}:\n{out}"
        );
        // Every racing put met a commit held at a fence (A to F; on the
        // ordered pool also the deleted key's unlink).
        let races = match w.as_str() {
            "txn" => "6 of 6 racing puts waited",
            "dram-txn" => "8 of 8 racing puts waited",
            _ => "",
        };
        assert!(out.contains(races), "{w}: {out}");
        // The batches and the transaction after the crash ran while the
        // engine's rebuild of the DRAM index was held, before it was ready.
        if w == "dram-batch" {
            let held = "rebuild held: 6 of 6 operations beside it, the DRAM index ready then: no";
            assert!(out.contains(held), "{out}");
        }
    }
}

#[test]
fn torn_batches_are_caught_by_the_joint_rule() {
    let (ok, out) = replay("batch", &["--mutant-batch-table"]);
    assert!(ok, "the mutant was not caught:\n{out}");
    assert!(
        out.contains("mutant (batch table forgotten) caught"),
        "{out}"
    );
    assert!(
        out.contains("the writes of one atomic operation (2 keys) are torn"),
        "{out}"
    );
}

#[test]
fn lost_fences_in_a_transaction_are_caught() {
    let (ok, out) = replay("txn", &["--mutant"]);
    assert!(ok, "the mutant was not caught:\n{out}");
    assert!(out.contains("mutant (lost fences) caught"), "{out}");
}
