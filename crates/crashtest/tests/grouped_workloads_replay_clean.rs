//! The workloads of grouped writes (`Db::write_grouped`, group commit)
//! replay cleanly on the real engine — every key of a grouped write old or
//! new at every crash point, all new once it returned — with the point
//! index in the pool, in DRAM, and in DRAM with leaves; and a crash in a
//! grouped write is recovered from.

mod common;

use common::crashtest;

const SMALL: &[&str] = &["--cap", "16", "--samples", "4", "--faults", "1"];

#[test]
fn grouped_workloads_replay_with_no_inconsistency() {
    for w in ["grouped", "dram-grouped", "leaves-grouped"] {
        let mut args = vec!["--workload", w, "--seed", "5"];
        args.extend_from_slice(SMALL);
        let (ok, out) = crashtest(&args);
        let last = out.lines().last().unwrap_or_default();
        assert!(
            ok && last.ends_with("inconsistencies=0 seed=5"),
            "{w}:\n{out}"
        );
        assert!(
            out.contains("crash at fence"),
            "{w}: no crash explored:\n{out}"
        );
    }
}
