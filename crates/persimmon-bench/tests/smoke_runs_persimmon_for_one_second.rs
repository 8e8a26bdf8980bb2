//! Smoke test: `persimmon bench` runs Persimmon for about a second on a
//! small key set, with a thread count far above the cores (threads take
//! turns), and writes JSON, Markdown and SVG that read back.

mod common;

use common::{args, scratch};
use persimmon_bench::{PoolSizes, Record};

#[test]
fn persimmon_runs_ycsb_for_one_second_and_reports() {
    let dir = scratch();
    let json = dir.path().join("out.json");
    let md = dir.path().join("out.md");
    let svg = dir.path().join("out.svg");
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon",
            "--workload",
            "ycsb-a,ycsb-d,ycsb-f",
            "--keys",
            "20000",
            "--threads",
            "2",
            "--duration-secs",
            "0.3",
            "--warmup-secs",
            "0.05",
            "--json",
            json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
            "--plot",
            svg.to_str().unwrap(),
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("bench runs");
    let text = String::from_utf8(out).unwrap();
    assert!(text.contains("ycsb-a") && text.contains("ycsb-f"), "{text}");

    let records: Vec<Record> =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert_eq!(records.len(), 3);
    for r in &records {
        assert_eq!(r.engine, "persimmon");
        assert_eq!((r.threads, r.value_size, r.keys), (2, 64, 20000));
        assert!(r.ops > 0 && r.ops_per_sec > 0.0, "{r:?}");
        assert!(r.p50_ns > 0 && r.p50_ns <= r.p99_ns && r.p99_ns <= r.p999_ns);
        assert!(r.p999_ns <= r.max_ns);
        assert_eq!(r.read_misses, 0, "every read targets a present key: {r:?}");
        // Every write flushes and fences: A and F write half the time, D 5 %.
        assert!(r.pm_bytes_per_op > 2.0, "{r:?}");
        assert!(r.fences_per_op > 0.05, "{r:?}");
        assert!(r.duration_secs >= 0.3);
    }
    assert!(records[0].fences_per_op > 0.5, "{:?}", records[0]);
    assert!(records[1].distribution.starts_with("latest"));
    assert!(records[0].distribution.starts_with("zipfian"));
    assert!(std::fs::read_to_string(&md).unwrap().contains("| ycsb-a |"));
    assert!(std::fs::read_to_string(&svg).unwrap().contains("</svg>"));
    // The stores are gone; only our three files remain.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 3, "{left:?}");
}

#[test]
fn sixty_four_threads_on_few_cores_take_turns() {
    let dir = scratch();
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon,baseline",
            "--workload",
            "get-ratio:50",
            "--keys",
            "5000",
            "--threads",
            "64",
            "--ops",
            "20000",
            "--warmup-secs",
            "0",
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("bench runs");
    let text = String::from_utf8(out).unwrap();
    let rows = text.lines().filter(|l| l.contains("get-ratio:50")).count();
    // Two result rows plus the ratio table's row.
    assert!(rows >= 2, "{text}");
    assert!(text.contains("persimmon ÷ baseline"), "{text}");
}

#[test]
fn the_probe_measures_a_small_mapping() {
    let dir = scratch();
    let json = dir.path().join("probe.json");
    let a = args(
        dir.path(),
        &[
            "--probe",
            "--probe-bytes",
            "8M",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("probe runs");
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    let p = &v[0];
    assert_eq!(p["engine"], "probe");
    assert!(p["dependent_load_ns"].as_f64().unwrap() > 0.0);
    assert!(p["nt_write_gbps"].as_f64().unwrap() > 0.0);
    // The mapping is removed afterwards.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 1);
}
