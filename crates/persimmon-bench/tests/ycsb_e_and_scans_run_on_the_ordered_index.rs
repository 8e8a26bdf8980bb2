//! Smoke test: the scanning workloads (`ycsb-e`, `scan:N`) run on
//! `persimmon-ordered`, the pool with the ordered index, and report the pairs
//! their scans read (`items_per_sec`, `scans`, `items`); engines without
//! ordered reads are skipped with a note instead of failing the run, and a
//! run in which nothing could scan is refused.

mod common;

use common::{args, records, scratch};
use persimmon_bench::PoolSizes;

#[test]
fn ycsb_e_and_scan_10_report_items_on_persimmon_ordered() {
    let dir = scratch();
    let json = dir.path().join("scan.json");
    let md = dir.path().join("scan.md");
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon-ordered",
            "--workload",
            "ycsb-e,scan:10",
            "--keys",
            "5000",
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
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("bench runs");
    let text = String::from_utf8(out).unwrap();

    let rs = records(&json);
    assert_eq!(rs.len(), 2, "{rs:?}");
    for r in &rs {
        assert_eq!(r.engine, "persimmon-ordered");
        assert!(r.ops > 0 && r.ops_per_sec > 0.0, "{r:?}");
        assert!(r.items_per_sec > 0.0, "{r:?}");
        assert_eq!(
            r.read_misses, 0,
            "every scan starts at a present key: {r:?}"
        );
        assert!(r.durability.contains("ordered index on"), "{r:?}");
    }
    let (e, scan) = (&rs[0], &rs[1]);

    // YCSB E: 95 % scans of 1..=100 pairs from a zipfian key, 5 % inserts.
    assert_eq!(e.workload, "ycsb-e");
    assert!(e.distribution.starts_with("zipfian"), "{e:?}");
    let scan_share = e.scans as f64 / e.ops as f64;
    assert!((0.85..=1.0).contains(&scan_share), "{e:?}");
    let per_scan = e.items as f64 / e.scans as f64;
    assert!((1.0..=100.0).contains(&per_scan), "{e:?}");
    assert!(
        e.fences_per_op > 0.0,
        "inserts persist (a node and a record): {e:?}"
    );

    // scan:10: every operation scans exactly 10 pairs (fewer only from one
    // of the last 9 keys).
    assert_eq!(scan.workload, "scan:10");
    assert_eq!(scan.distribution, "uniform");
    assert_eq!(scan.scans, scan.ops, "{scan:?}");
    let per_op = scan.items as f64 / scan.ops as f64;
    assert!((1.0..=10.0).contains(&per_op), "{scan:?}");
    assert!(per_op > 9.5, "{scan:?}");
    let ratio = scan.items_per_sec / scan.ops_per_sec;
    assert!((ratio - per_op).abs() < 1e-6, "{scan:?}");

    // The JSON field names are the interface.
    let v: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(&json).unwrap()).unwrap();
    assert!(v[1]["items_per_sec"].as_f64().unwrap() > 0.0);
    assert!(v[1]["scans"].as_u64().unwrap() > 0);
    assert!(v[1]["items"].as_u64().unwrap() > 0);

    assert!(text.contains("items/scan"), "{text}");
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.contains("scan length (items)"), "{markdown}");
    assert!(
        markdown.contains("| persimmon-ordered M items/s |"),
        "{markdown}"
    );
    assert!(markdown.contains("| ycsb-e |"), "{markdown}");
}

#[test]
fn engines_without_ordered_reads_are_skipped_with_a_note() {
    let dir = scratch();
    let json = dir.path().join("skip.json");
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon,persimmon-ordered",
            "--workload",
            "scan:10,insert",
            "--keys",
            "2000",
            "--threads",
            "2",
            "--ops",
            "4000",
            "--warmup-secs",
            "0",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("the run does not fail");
    let text = String::from_utf8(out).unwrap();
    assert!(
        text.lines().any(|l| l.starts_with("persimmon ")
            && l.contains("scan:10")
            && l.contains("skipped")
            && l.contains("no ordered reads")),
        "{text}"
    );

    let rs = records(&json);
    let points: Vec<(&str, &str)> = rs
        .iter()
        .map(|r| (r.engine.as_str(), r.workload.as_str()))
        .collect();
    assert_eq!(
        points,
        [
            ("persimmon-ordered", "scan:10"),
            ("persimmon", "insert"),
            ("persimmon-ordered", "insert"),
        ]
    );
    // Inserts: every operation a put of a new key, nothing scanned.
    for r in &rs[1..] {
        assert_eq!(r.ops, 4000, "{r:?}");
        assert_eq!((r.scans, r.items, r.items_per_sec), (0, 0, 0.0), "{r:?}");
        assert!(r.fences_per_op >= 1.0, "{r:?}");
    }
    // The scan figure has the engine that scanned; the inserts compare both.
    assert!(
        text.contains("| scan length (items) | persimmon-ordered M items/s |\n"),
        "{text}"
    );
    assert!(text.contains("persimmon ÷ persimmon-ordered"), "{text}");
    assert!(text.contains("| insert |"), "{text}");
}

#[test]
fn scanning_with_no_engine_that_can_scan_is_refused() {
    let dir = scratch();
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon,baseline",
            "--workload",
            "ycsb-e",
            "--ops",
            "10",
        ],
    );
    let e = persimmon_bench::run(&a, PoolSizes::default(), &mut Vec::new()).unwrap_err();
    let e = e.to_string();
    assert!(
        e.contains("range scans") && e.contains("persimmon-ordered"),
        "{e}"
    );
    // Nothing was created.
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}
