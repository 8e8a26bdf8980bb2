//! `batch:N` runs atomic batches next to the same keys as single puts and
//! counts their work per key; `--deadline-fraction` loads and writes keys
//! with deadlines that do not expire during the run.

mod common;

use common::{args_line, bench_error, records, run_bench, scratch};

#[test]
fn batches_run_next_to_single_puts_with_fences_per_key() {
    let dir = scratch();
    let (json, md) = (dir.path().join("batch.json"), dir.path().join("batch.md"));
    let a = args_line(
        dir.path(),
        &format!(
            "--workload batch:1,10,100 --keys 5000 --threads 1,2 --ops 300 --warmup-secs 0.02 \
             --json {} --markdown {}",
            json.display(),
            md.display()
        ),
    );
    let text = run_bench(&a);
    assert!(text.contains("persimmon single puts batch:100"), "{text}");
    assert!(
        text.contains("M keys/s; PM B, flushes, fences per key"),
        "{text}"
    );

    let rs = records(&json);
    assert_eq!(
        rs.len(),
        12,
        "3 sizes × 2 thread counts × (batches, single puts)"
    );
    for r in &rs {
        let n: u64 = r.workload.strip_prefix("batch:").unwrap().parse().unwrap();
        assert_eq!(r.ops, 300, "{r:?}");
        assert_eq!(r.items, 300 * n, "keys written: {r:?}");
        let keys_per_sec = r.ops_per_sec * n as f64;
        assert!((r.items_per_sec / keys_per_sec - 1.0).abs() < 1e-9, "{r:?}");
        assert_eq!(r.get_percent, 0.0);
        assert_eq!(r.read_misses, 0);
        // Per key: a batch fences 4 times whatever its size (no deletes, no
        // ordered index); a put twice (a few eliminated puts skip theirs).
        let fences = if r.engine == "persimmon" {
            4.0 / n as f64
        } else {
            assert_eq!(r.engine, "persimmon single puts");
            2.0
        };
        assert!(
            r.fences_per_op <= fences * 1.05 + 0.01 && r.fences_per_op >= fences * 0.9,
            "{} fences per key, expected {fences}: {r:?}",
            r.fences_per_op
        );
        assert!(r.pm_bytes_per_op > 64.0, "the record at least: {r:?}");
        assert!(r.used_bytes_per_key > r.live_bytes_per_key, "{r:?}");
        assert!(r.live_bytes_per_key >= 8.0 + 64.0, "{r:?}");
    }
    let md = std::fs::read_to_string(&md).unwrap();
    assert!(
        md.contains("| batch size (keys) | persimmon M keys/s | persimmon single puts M keys/s | persimmon ÷ persimmon single puts |"),
        "{md}"
    );
    assert!(md.contains("| fences/key |"), "{md}");
}

/// The live bytes per key after a load of `fraction` keys with deadlines.
fn live_bytes_per_key(fraction: &str) -> f64 {
    let dir = scratch();
    let json = dir.path().join("get.json");
    let a = args_line(
        dir.path(),
        &format!(
            "--workload get-ratio:50 --keys 4000 --threads 2 --ops 2000 --warmup-secs 0.02 \
             --deadline-fraction {fraction} --json {}",
            json.display()
        ),
    );
    let text = run_bench(&a);
    let rs = records(&json);
    assert_eq!(rs.len(), 1);
    let r = &rs[0];
    assert_eq!(r.deadline_fraction, fraction.parse::<f64>().unwrap());
    assert_eq!(r.read_misses, 0, "no key expires during the run: {r:?}");
    assert_eq!(
        text.contains("of the keys carry a deadline a day ahead"),
        r.deadline_fraction > 0.0,
        "{text}"
    );
    r.live_bytes_per_key
}

#[test]
fn keys_with_deadlines_carry_eight_more_bytes_and_never_miss() {
    let without = live_bytes_per_key("0");
    let with = live_bytes_per_key("1");
    assert!((with - without - 8.0).abs() < 1e-9, "{with} vs {without}");
    let half = live_bytes_per_key("0.5");
    assert!(half > without + 3.0 && half < with - 3.0, "{half}");
}

#[test]
fn a_batch_needs_as_many_keys_loaded() {
    let dir = scratch();
    let e = bench_error(&args_line(dir.path(), "--workload batch:100 --keys 50"));
    assert!(e.contains("--keys must be at least"), "{e}");
}
