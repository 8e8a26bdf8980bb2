//! The ordered index's workloads replay cleanly on the real engine (every
//! crash image of the skiplist's persist paths passes the oracle), with the
//! point index in the pool (`ordered-*`) and in DRAM (`dram-*`, where the
//! nodes' record words are the persistent truth); and the oracle is not
//! blind there: with the model's fences sabotaged (`--mutant`) runs of
//! `ordered-insert` and `dram-update-delete` report inconsistencies.

use std::process::{Command, Stdio};

mod common;

use common::crashtest;

const SMALL: &[&str] = &["--cap", "16", "--samples", "4", "--faults", "1"];

/// Replays `workloads` with seed 5, two at a time (each is one process);
/// returns each one's output.
fn replay_all(workloads: &[&'static str]) -> Vec<(&'static str, String)> {
    let mut out = Vec::new();
    for pair in workloads.chunks(2) {
        let children: Vec<_> = pair
            .iter()
            .map(|w| {
                let child = Command::new(env!("CARGO_BIN_EXE_crashtest"))
                    .args(["--workload", w, "--seed", "5"])
                    .args(SMALL)
                    .stdout(Stdio::piped())
                    .spawn()
                    .expect("run crashtest");
                (*w, child)
            })
            .collect();
        for (w, child) in children {
            let o = child.wait_with_output().expect("wait for crashtest");
            let text = String::from_utf8_lossy(&o.stdout).into_owned();
            assert!(o.status.success(), "{w}:\n{text}");
            out.push((w, text));
        }
    }
    out
}

#[test]
fn ordered_workloads_replay_with_no_inconsistency() {
    let runs = replay_all(&[
        "ordered-insert",
        "ordered-delete",
        "ordered-lanes",
        "ordered-reopen",
        "dram-insert",
        "dram-update-delete",
        "dram-cleaner",
        "dram-lanes",
        "dram-reopen",
    ]);
    for (w, out) in &runs {
        let last = out.lines().last().unwrap_or_default();
        assert!(last.ends_with("inconsistencies=0 seed=5"), "{w}: {last}");
    }
    // dram-reopen read every key and wrote while the engine's rebuild of
    // the DRAM index was held, before it was ready (its crash image had a
    // half-done record word on one of the first nodes).
    let (_, reopen) = runs.iter().find(|r| r.0 == "dram-reopen").unwrap();
    assert!(
        reopen.contains("rebuild held at its first fence")
            && reopen.contains("ready then: no")
            && !reopen.contains("let go early"),
        "{reopen}"
    );
}

#[test]
fn lost_fences_in_the_skiplist_are_caught() {
    for (w, sign) in [
        ("ordered-insert", "skiplist node"),
        ("dram-update-delete", "mutant (lost fences) caught"),
    ] {
        let mut args = vec!["--workload", w, "--seed", "5", "--mutant"];
        args.extend_from_slice(SMALL);
        let (ok, out) = crashtest(&args);
        assert!(ok, "{w}: the mutant was not caught:\n{out}");
        assert!(out.contains(sign), "{w}: {out}");
    }
}
