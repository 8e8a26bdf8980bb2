//! `--workload restart` reopens a loaded store of each engine three times
//! and reports, per engine, the median times from the start of the open to
//! the open's return, the first GET, the first range read (engines that
//! scan) and full speed, Persimmon's background work after open (the DRAM
//! point index's rebuild included) and the GET rates; and the point-read
//! workloads run on `persimmon-dram` like on every other engine.

mod common;

use common::{args, records, scratch};
use persimmon_bench::{PoolSizes, Record};

/// The engines' records by name.
fn by_engine<'a>(rs: &'a [Record], engine: &str) -> &'a Record {
    rs.iter()
        .find(|r| r.engine == engine)
        .unwrap_or_else(|| panic!("no record of {engine}: {rs:?}"))
}

#[test]
fn restart_reports_open_first_requests_and_full_speed_per_placement() {
    let dir = scratch();
    let json = dir.path().join("restart.json");
    let md = dir.path().join("restart.md");
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon,persimmon-ordered,persimmon-dram",
            "--workload",
            "restart",
            "--keys",
            "20000",
            "--json",
            json.to_str().unwrap(),
            "--markdown",
            md.to_str().unwrap(),
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("restart runs");
    let text = String::from_utf8(out).unwrap();

    let rs = records(&json);
    assert_eq!(rs.len(), 3, "{rs:?}");
    let window = 50_000_000; // one 50 ms window at least
    for r in &rs {
        assert_eq!(r.workload, "restart", "{r:?}");
        assert_eq!((r.restarts, r.threads, r.keys), (3, 1, 20000), "{r:?}");
        assert_eq!(r.read_misses, 0, "{r:?}");
        assert!(r.open_ns > 0, "{r:?}");
        assert!(r.open_ns <= r.first_get_ns, "{r:?}");
        assert!(r.first_get_ns < 60_000_000_000, "{r:?}");
        assert!(r.full_speed_ns >= window, "{r:?}");
        assert!(r.rebuild_done_ns > 0, "{r:?}");
        assert!(r.point_index_ready_ns >= r.open_ns, "{r:?}");
        assert!(
            r.ops_per_sec > 0.0 && r.first_window_ops_per_sec > 0.0,
            "{r:?}"
        );
        assert!(r.ops > 0 && r.duration_secs > 0.0, "{r:?}");
        assert!(!r.durability.is_empty(), "{r:?}");
    }

    let pm = by_engine(&rs, "persimmon");
    assert_eq!(pm.first_range_ns, 0, "no ordered reads: {pm:?}");
    assert_eq!(pm.ordered_walk_done_ns, 0, "{pm:?}");
    assert_eq!(pm.point_index_ready_ns, pm.open_ns, "PM: ready at open");
    assert_eq!(pm.dram_index_bytes, 0);
    assert!(pm.durability.contains("point index in PM"), "{pm:?}");

    for name in ["persimmon-ordered", "persimmon-dram"] {
        let r = by_engine(&rs, name);
        assert!(r.first_range_ns >= r.first_get_ns, "{r:?}");
        assert!(r.ordered_walk_done_ns >= r.open_ns, "{r:?}");
    }
    let ordered = by_engine(&rs, "persimmon-ordered");
    assert_eq!(ordered.point_index_ready_ns, ordered.open_ns);
    assert_eq!(ordered.dram_index_bytes, 0);

    let dram = by_engine(&rs, "persimmon-dram");
    assert!(dram.durability.contains("point index in DRAM"), "{dram:?}");
    assert!(dram.dram_index_bytes > 0, "{dram:?}");
    // The DRAM point index is rebuilt from the ordered index's walk.
    assert!(dram.point_index_ready_ns >= dram.open_ns, "{dram:?}");

    // Stdout: a row per reopen and a median row per engine, then the table.
    for name in ["persimmon", "persimmon-ordered", "persimmon-dram"] {
        let rows = text
            .lines()
            .filter(|l| l.starts_with(&format!("{name:<21} ")))
            .count();
        // The durability line, 3 reopens, the median.
        assert_eq!(rows, 5, "{name}: {text}");
    }
    assert!(text.contains("| persimmon-dram |"), "{text}");
    assert!(text.contains("full speed (90 %)"), "{text}");
    // Markdown: the restart table; --report reads the JSON back.
    let markdown = std::fs::read_to_string(&md).unwrap();
    assert!(markdown.contains("### Restart: "), "{markdown}");
    assert!(markdown.contains("| persimmon-ordered |"), "{markdown}");
    let again = args(dir.path(), &["--report", json.to_str().unwrap()]);
    let mut out = Vec::new();
    persimmon_bench::run(&again, PoolSizes::default(), &mut out).unwrap();
    let report = String::from_utf8(out).unwrap();
    assert!(report.contains("| persimmon-dram |"), "{report}");
    // The stores are gone; only our two files remain.
    let left: Vec<_> = std::fs::read_dir(dir.path()).unwrap().collect();
    assert_eq!(left.len(), 2, "{left:?}");
}

#[test]
fn restart_runs_alone() {
    let dir = scratch();
    let a = args(dir.path(), &["--workload", "restart,get-ratio:100"]);
    let e = persimmon_bench::run(&a, PoolSizes::default(), &mut Vec::new()).unwrap_err();
    assert!(e.to_string().contains("runs alone"), "{e}");
}

/// Point reads on both placements of the ordered pool: latency rows, no
/// misses, no persistent-memory writes.
#[test]
fn point_reads_run_on_the_dram_point_index() {
    let dir = scratch();
    let json = dir.path().join("reads.json");
    let a = args(
        dir.path(),
        &[
            "--engines",
            "persimmon-ordered,persimmon-dram",
            "--workload",
            "get-ratio:100,ycsb-e",
            "--keys",
            "20000",
            "--threads",
            "1",
            "--duration-secs",
            "0.2",
            "--warmup-secs",
            "0.05",
            "--json",
            json.to_str().unwrap(),
        ],
    );
    let mut out = Vec::new();
    persimmon_bench::run(&a, PoolSizes::default(), &mut out).expect("bench runs");
    let text = String::from_utf8(out).unwrap();
    let rs = records(&json);
    assert_eq!(rs.len(), 4, "{rs:?}");
    for r in &rs {
        assert!(r.ops > 0 && r.p50_ns > 0 && r.p50_ns <= r.p99_ns, "{r:?}");
        assert_eq!(r.read_misses, 0, "{r:?}");
    }
    let gets: Vec<&Record> = rs
        .iter()
        .filter(|r| r.workload == "get-ratio:100")
        .collect();
    assert_eq!(gets.len(), 2);
    for r in gets {
        assert_eq!(r.pm_bytes_per_op, 0.0, "reads write nothing: {r:?}");
    }
    // persimmon-dram scans too (YCSB E).
    let e = rs
        .iter()
        .find(|r| r.engine == "persimmon-dram" && r.workload == "ycsb-e")
        .expect("persimmon-dram runs ycsb-e");
    assert!(e.scans > 0 && e.items > 0, "{e:?}");
    assert!(
        text.contains("persimmon-ordered ÷ persimmon-dram"),
        "{text}"
    );
}
