//! Smoke test: `persimmon bench --workload pdv` runs every variant
//! (single-word, then PDV with N = 2 … 64, sparse and dense) for a few
//! thousand updates at 1 and 2 threads, verifies each variable by recovery
//! after its phase, and writes JSON records whose fields are the interface
//! (`engine`, `workload`, `threads`, `ops_per_sec`, flushes and fences per
//! update), a Markdown table with ratios to single-word, and an SVG.

mod common;

use common::{args, scratch};
use persimmon_bench::{PoolSizes, Record};

#[test]
fn pdv_workload_measures_every_variant_and_writes_json() {
    let dir = scratch();
    let json = dir.path().join("pdv.json");
    let md = dir.path().join("pdv.md");
    let svg = dir.path().join("pdv.svg");
    let a = args(
        dir.path(),
        &[
            "--workload",
            "pdv",
            "--pdv-engine-put",
            "--threads",
            "1,2",
            "--ops",
            "5000",
            "--warmup-secs",
            "0.01",
            "--json",
            json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("pdv bench runs");
    let text = String::from_utf8(out).unwrap();

    let records: Vec<Record> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let mut engines = vec!["single-word".to_string()];
    for n in [2, 4, 8, 16, 32, 64] {
        engines.push(format!("pdv-{n}-sparse"));
        engines.push(format!("pdv-{n}-dense"));
    }
    let variables = engines.len();
    for e in [
        "persimmon-put",
        "persimmon-put+single-word",
        "persimmon-put+pdv-8-sparse",
    ] {
        engines.push(e.to_string());
    }
    assert_eq!(records.len(), engines.len() * 2);
    for (i, r) in records.iter().enumerate().skip(variables * 2) {
        // The engine's put (3 flushes, 2 fences for an existing key), then
        // the counter: one store, flush and fence more.
        assert_eq!(r.engine, engines[i / 2], "{r:?}");
        assert_eq!(r.ops, 5000, "{r:?}");
        // (A new log segment now and then adds a little; threads never
        // write one key, so no put is eliminated.)
        let extra = u64::from(r.engine != "persimmon-put") as f64;
        assert!((r.fences_per_op - (2.0 + extra)).abs() < 0.01, "{r:?}");
        if cfg!(target_arch = "x86_64") {
            assert!((r.flushes_per_op - (3.0 + extra)).abs() < 0.01, "{r:?}");
        }
    }
    for (i, r) in records.iter().enumerate().take(variables * 2) {
        assert_eq!(r.engine, engines[i / 2], "{r:?}");
        assert_eq!(r.threads, [1, 2][i % 2], "{r:?}");
        assert_eq!(r.workload, "pdv");
        assert_eq!(r.ops, 5000, "--ops is split over the threads: {r:?}");
        assert!(r.ops_per_sec > 0.0 && r.duration_secs > 0.0, "{r:?}");
        assert!(r.mean_ns > 0.0, "{r:?}");
        // Every update is one 8-byte store, one flush and one fence.
        assert_eq!(r.fences_per_op, 1.0, "{r:?}");
        assert_eq!(r.pm_bytes_per_op, 8.0, "{r:?}");
        if cfg!(target_arch = "x86_64") {
            assert_eq!(r.flushes_per_op, 1.0, "{r:?}");
        }
        assert!(r.durability.contains("sfence per update"), "{r:?}");
    }
    // The raw JSON carries the interface's field names.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(v[3]["engine"], "pdv-2-sparse");
    assert!(v[3]["ops_per_sec"].as_f64().unwrap() > 0.0);

    // Stdout: a row per result, then the table with ratios to single-word.
    assert!(text.contains("pdv-64-dense"), "{text}");
    assert!(text.contains("| single-word |"), "{text}");
    assert!(text.contains("÷ reference"), "{text}");
    assert!(text.contains("| persimmon-put+pdv-8-sparse |"), "{text}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.contains("| pdv-16-sparse |"), "{markdown}");
    assert!(std::fs::read_to_string(&svg).unwrap().contains("</svg>"));
    // The files are gone; only our three outputs remain.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn pdv_workload_runs_alone() {
    let dir = scratch();
    let a = args(dir.path(), &["--workload", "pdv,ycsb-a", "--ops", "10"]);
    let e = persimmon_bench::run(&a, PoolSizes::default(), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("runs alone"), "{e}");
}

/// Without `--pdv-engine-put`, every record is one of the interface's
/// variables: `single-word`, `pdv-N-sparse`, `pdv-N-dense`.
#[test]
fn by_default_only_the_variables_are_measured() {
    let dir = scratch();
    let json = dir.path().join("vars.json");
    let a = args(
        dir.path(),
        &[
            "--workload",
            "pdv",
            "--threads",
            "1",
            "--ops",
            "200",
            "--warmup-secs",
            "0.01",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    persimmon_bench::run(&a, PoolSizes::default(), &mut Vec::new()).expect("pdv bench runs");
    let records: Vec<Record> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 13);
    for r in &records {
        let e = r.engine.as_str();
        let variable = e == "single-word"
            || (e.starts_with("pdv-") && (e.ends_with("-sparse") || e.ends_with("-dense")));
        assert!(variable, "unexpected engine {e}");
    }
}
