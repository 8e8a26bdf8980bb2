//! The ordered index's workloads replay cleanly on the real engine (every
//! crash image of the skiplist's persist paths passes the oracle), and the
//! oracle is not blind there: with the model's fences sabotaged
//! (`--mutant`) a run of `ordered-insert` reports inconsistencies, among
//! them skiplist nodes linked before they were durable.

use std::process::Command;

fn crashtest(args: &[&str]) -> (bool, String) {
    let out = Command::new(env!("CARGO_BIN_EXE_crashtest"))
        .args(args)
        .output()
        .expect("run crashtest");
    let text = String::from_utf8_lossy(&out.stdout).into_owned();
    (out.status.success(), text)
}

const SMALL: &[&str] = &["--cap", "16", "--samples", "4", "--faults", "1"];

#[test]
fn ordered_workloads_replay_with_no_inconsistency() {
    for w in [
        "ordered-insert",
        "ordered-delete",
        "ordered-lanes",
        "ordered-reopen",
    ] {
        let mut args = vec!["--workload", w, "--seed", "5"];
        args.extend_from_slice(SMALL);
        let (ok, out) = crashtest(&args);
        let last = out.lines().last().unwrap_or_default();
        assert!(ok, "{w}:\n{out}");
        assert!(last.ends_with("inconsistencies=0 seed=5"), "{w}: {last}");
    }
}

#[test]
fn lost_fences_in_the_skiplist_are_caught() {
    let mut args = vec!["--workload", "ordered-insert", "--seed", "5", "--mutant"];
    args.extend_from_slice(SMALL);
    let (ok, out) = crashtest(&args);
    assert!(ok, "the mutant was not caught:\n{out}");
    assert!(out.contains("skiplist node"), "{out}");
}
