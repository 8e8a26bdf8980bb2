//! The disk domain (`--domain disk`: the pool file and its write-ahead log
//! modelled as files, every sync a crash point, unsynced writes dropped or
//! torn at sectors) replays cleanly on a sample of workloads — the point
//! index, the ordered index in leaves, batches, growth and the SSD tier —
//! and the harness is not blind to it: with the log's syncs skipped
//! (`--mutant-skip-log-sync`), acknowledged writes go missing and the run
//! says so.

mod common;

use common::crashtest;

const SMALL: &[&str] = &["--cap", "16", "--samples", "4", "--faults", "1"];

fn replay(w: &str, extra: &[&str]) -> (bool, String) {
    let mut args = vec!["--domain", "disk", "--workload", w, "--seed", "11"];
    args.extend_from_slice(SMALL);
    args.extend_from_slice(extra);
    crashtest(&args)
}

/// The run's last line: `crashtest: points=P images=I ... inconsistencies=N seed=S`.
fn figure(out: &str, name: &str) -> u64 {
    let last = out.lines().last().unwrap_or_default();
    let at = last
        .find(&format!(" {name}="))
        .unwrap_or_else(|| panic!("no {name} in {last}"));
    last[at + name.len() + 2..]
        .split_whitespace()
        .next()
        .unwrap()
        .parse()
        .unwrap()
}

#[test]
fn workloads_replay_with_no_inconsistency_in_the_disk_domain() {
    for w in ["insert", "pool-growth", "leaves-split", "batch", "tier-put"] {
        let (ok, out) = replay(w, &[]);
        assert!(ok, "{w}:\n{out}");
        assert_eq!(figure(&out, "inconsistencies"), 0, "{w}:\n{out}");
        assert!(
            figure(&out, "points") > 0,
            "{w}: the log's syncs are crash points:\n{out}"
        );
        assert!(figure(&out, "images") > 0, "{w}:\n{out}");
    }
}

#[test]
fn skipping_the_log_sync_is_caught() {
    let (ok, out) = replay("insert", &["--mutant-skip-log-sync"]);
    assert!(ok, "the mutant was not caught:\n{out}");
    assert!(out.contains("mutant (log syncs skipped) caught"), "{out}");
    assert!(figure_in(&out, "inconsistencies") > 0, "{out}");
}

/// `figure` of the summary line, wherever it sits (the mutant's verdict
/// follows it).
fn figure_in(out: &str, name: &str) -> u64 {
    let line = out
        .lines()
        .rev()
        .find(|l| l.starts_with("crashtest: points="))
        .unwrap_or_else(|| panic!("no summary line: {out}"));
    figure(line, name)
}
