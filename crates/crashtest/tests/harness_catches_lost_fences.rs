//! The harness judges itself: a short replay of one workload passes on the
//! real engine, and the same run with the model's fences sabotaged
//! (`--mutant`: every third fence persists nothing, as if the engine had
//! left it out) is caught — the binary exits 0 only when it reports
//! inconsistencies in that mode. A harness that cannot fail is no oracle.

mod common;

use common::crashtest;

const SMALL: &[&str] = &["--cap", "32", "--samples", "6", "--faults", "1"];

#[test]
fn a_short_replay_passes_and_ends_with_the_summary_line() {
    let mut args = vec!["--workload", "delete", "--seed", "3"];
    args.extend_from_slice(SMALL);
    let (ok, out) = crashtest(&args);
    let last = out.lines().last().unwrap_or_default();
    assert!(ok, "{out}");
    assert!(
        last.starts_with("crashtest: points=") && last.ends_with("inconsistencies=0 seed=3"),
        "{last}"
    );
}

#[test]
fn lost_fences_are_caught() {
    let mut args = vec!["--workload", "update", "--seed", "3", "--mutant"];
    args.extend_from_slice(SMALL);
    let (ok, out) = crashtest(&args);
    assert!(ok, "the mutant was not caught:\n{out}");
    assert!(out.contains("mutant (lost fences) caught"), "{out}");
}
