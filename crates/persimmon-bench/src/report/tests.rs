//! Tests of the report: figures, tables and their cells.

use super::*;

pub(crate) fn record(engine: &str, workload: &str, threads: usize, ops_per_sec: f64) -> Record {
    let get_percent = workload
        .strip_prefix("get-ratio:")
        .map_or(50.0, |r| r.parse().unwrap());
    let value_size = workload
        .strip_prefix("value-size:")
        .map_or(64, |v| v.parse().unwrap());
    Record {
        engine: engine.into(),
        workload: workload.into(),
        distribution: "uniform".into(),
        threads,
        value_size,
        key_size: 8,
        keys: 1000,
        get_percent,
        ops_per_sec,
        p50_ns: 300,
        p99_ns: 2_500,
        p999_ns: 40_000,
        max_ns: 2_000_000,
        durability: format!("{engine} settings"),
        cores: 2,
        duration_secs: 10.0,
        ..Record::default()
    }
}

#[test]
fn a_get_ratio_sweep_is_one_figure_with_ratios() {
    let mut rs = Vec::new();
    for r in [100, 0, 50] {
        rs.push(record("persimmon", &format!("get-ratio:{r}"), 2, 2e6));
        rs.push(record("baseline", &format!("get-ratio:{r}"), 2, 1e6));
    }
    let figs = figures(&rs);
    assert_eq!(figs.len(), 1);
    let f = &figs[0];
    assert_eq!(f.x_axis, XAxis::GetRatio);
    assert_eq!(f.xs, ["0", "50", "100"]);
    assert_eq!(f.engines, ["persimmon", "baseline"]);
    let t = throughput_table(f);
    assert!(t.contains("| 0 | 2.000 | 1.000 | 2.00× |"), "{t}");
    assert!(t.contains("persimmon ÷ baseline"), "{t}");
    assert!(f.subtitle.contains("2 threads"), "{}", f.subtitle);
}

#[test]
fn a_thread_sweep_has_threads_on_x() {
    let rs: Vec<Record> = [1, 2, 4, 8]
        .iter()
        .flat_map(|&t| {
            [
                record("persimmon", "get-ratio:95", t, 1e6 * t as f64),
                record("lmdb", "get-ratio:95", t, 5e5 * t as f64),
            ]
        })
        .collect();
    let figs = figures(&rs);
    assert_eq!(figs.len(), 1);
    assert_eq!(figs[0].x_axis, XAxis::Threads);
    assert_eq!(figs[0].xs, ["1", "2", "4", "8"]);
}

#[test]
fn sweeps_with_several_thread_counts_split_into_figures() {
    let mut rs = Vec::new();
    for t in [1, 2] {
        for v in [64, 4096, 256] {
            rs.push(record("persimmon", &format!("value-size:{v}"), t, 1e6));
        }
    }
    let figs = figures(&rs);
    assert_eq!(figs.len(), 2);
    assert_eq!(figs[0].x_axis, XAxis::ValueSize);
    assert_eq!(figs[0].xs, ["64", "256", "4096"]);
}

fn pdv_record(engine: &str, threads: usize, ops_per_sec: f64) -> Record {
    Record {
        engine: engine.into(),
        workload: "pdv".into(),
        threads,
        value_size: 8,
        ops_per_sec,
        flushes_per_op: 1.0,
        fences_per_op: 1.0,
        pm_bytes_per_op: 8.0,
        durability: "process-crash durability".into(),
        cores: 2,
        duration_secs: 2.0,
        ..Record::default()
    }
}

#[test]
fn pdv_records_get_a_table_with_ratios_to_single_word() {
    let rs = vec![
        pdv_record("single-word", 1, 10e6),
        pdv_record("single-word", 2, 16e6),
        pdv_record("pdv-2-sparse", 1, 15e6),
        pdv_record("pdv-2-sparse", 2, 20e6),
        pdv_record("pdv-2-dense", 1, 5e6),
        record("persimmon", "ycsb-a", 2, 1e6),
    ];
    let t = pdv_table(&rs);
    assert!(
        t.starts_with("| variant | 1 thread Mops/s | 1 thread ÷ reference | 2 threads Mops/s | 2 threads ÷ reference | flushes/op | fences/op | PM B/op |"),
        "{t}"
    );
    assert!(
        t.contains("| single-word | 10.000 | 1.00× | 16.000 | 1.00× | 1.00 | 1.00 | 8.0 |"),
        "{t}"
    );
    assert!(
        t.contains("| pdv-2-sparse | 15.000 | 1.50× | 20.000 | 1.25× |"),
        "{t}"
    );
    assert!(t.contains("| pdv-2-dense | 5.000 | 0.50× | – | – |"), "{t}");
    assert!(!t.contains("persimmon"), "{t}");
    let md = markdown(&rs, None, "x.json");
    assert!(md.contains("### PDV microbenchmark"), "{md}");
    assert!(md.contains("| pdv-2-sparse | 15.000 | 1.50×"), "{md}");
    // The key-value record still gets its figure; the PDV ones do not.
    assert!(md.contains("| ycsb-a | persimmon |"), "{md}");
    assert!(!md.contains("single-word ÷"), "{md}");
}

/// A record of `family:n` (scan or batch): 10 000 operations of `n`
/// items each.
fn items_record(engine: &str, family: &str, n: u64, ops_per_sec: f64) -> Record {
    let mut r = record(engine, &format!("{family}:{n}"), 2, ops_per_sec);
    r.get_percent = 0.0;
    if family == "scan" {
        r.scans = 10_000;
    }
    r.items = 10_000 * n;
    r.items_per_sec = ops_per_sec * n as f64;
    r
}

fn scan_record(engine: &str, n: u64, ops_per_sec: f64) -> Record {
    items_record(engine, "scan", n, ops_per_sec)
}

/// The single figure of a sweep of `rs` counting items, checked: its
/// axis, its x values and the start of its subtitle.
fn items_figure<'a>(rs: &'a [Record], axis: XAxis, xs: &[&str], subtitle: &str) -> Figure<'a> {
    let mut figs = figures(rs);
    assert_eq!(figs.len(), 1);
    let f = figs.remove(0);
    assert_eq!((f.x_axis, f.items), (axis, true));
    assert_eq!(f.xs, xs);
    assert!(f.subtitle.starts_with(subtitle), "{}", f.subtitle);
    f
}

/// Asserts that `text` holds every one of `needles`.
fn assert_holds(text: &str, needles: &[&str]) {
    for n in needles {
        assert!(text.contains(n), "{n:?} missing from:\n{text}");
    }
}

#[test]
fn a_scan_sweep_is_one_figure_of_items_per_second() {
    let rs = vec![
        scan_record("persimmon-ordered", 100, 2e5),
        scan_record("lmdb", 100, 1e5),
        scan_record("persimmon-ordered", 10, 1e6),
        scan_record("lmdb", 10, 2e6),
    ];
    let f = &items_figure(
        &rs,
        XAxis::ScanLength,
        &["10", "100"],
        "pairs read by scans",
    );
    let t = throughput_table(f);
    assert!(
        t.starts_with("| scan length (items) | persimmon-ordered M items/s | lmdb M items/s | persimmon-ordered ÷ lmdb |"),
        "{t}"
    );
    assert!(t.contains("| 10 | 10.000 | 20.000 | 0.50× |"), "{t}");
    assert!(t.contains("| 100 | 20.000 | 10.000 | 2.00× |"), "{t}");
    let d = details_table(f, None);
    assert!(
        d.contains("| Mops/s | M items/s | items/scan | p50 |"),
        "{d}"
    );
    assert!(
        d.contains("| 10 | lmdb | 2.000 | 20.000 | 10.0 | 300 ns |"),
        "{d}"
    );
}

fn batch_record(engine: &str, n: u64, keys_per_sec: f64, fences_per_key: f64) -> Record {
    Record {
        fences_per_op: fences_per_key,
        pm_bytes_per_op: 100.0,
        ..items_record(engine, "batch", n, keys_per_sec / n as f64)
    }
}

#[test]
fn a_batch_sweep_is_one_figure_of_keys_per_second_against_single_puts() {
    let mut rs = Vec::new();
    for n in [100, 1, 10] {
        rs.push(batch_record(
            "persimmon",
            n,
            1e6 * n as f64 / 10.0,
            4.0 / n as f64,
        ));
        rs.push(batch_record("persimmon single puts", n, 1e6, 2.0));
    }
    rs[0].used_bytes_per_key = 150.0;
    rs[0].live_bytes_per_key = 96.0;
    let xs = ["1", "10", "100"];
    let f = &items_figure(&rs, XAxis::BatchSize, &xs, "keys written per second");
    assert_eq!(f.unit(), "keys");
    let t = throughput_table(f);
    assert!(
        t.starts_with("| batch size (keys) | persimmon M keys/s | persimmon single puts M keys/s | persimmon ÷ persimmon single puts |"),
        "{t}"
    );
    assert_holds(
        &t,
        &[
            "| 1 | 0.100 | 1.000 | 0.10× |",
            "| 100 | 10.000 | 1.000 | 10.00× |",
        ],
    );
    assert_holds(
        &details_table(f, None),
        &[
            "| M keys/s | p50 |",
            "| PM B/key | flushes/key | fences/key |",
            "| pool B/key after load (used, live) |",
            "| 100.0 | 0.00 | 0.0400 | 0 | 150.0, 96.0 |",
            "| 0.00 | 2.00 | 0 | – |",
        ],
    );
}

#[test]
fn deadline_fractions_make_separate_figures() {
    let plain = record("persimmon", "get-ratio:100", 2, 2e6);
    let mut expiring = plain.clone();
    expiring.deadline_fraction = 0.5;
    expiring.ops_per_sec = 1.5e6;
    let rs = [plain, expiring];
    let figs = figures(&rs);
    let subtitles: Vec<&str> = figs.iter().map(|f| f.subtitle.as_str()).collect();
    assert_eq!(subtitles.len(), 2);
    assert!(!subtitles[0].contains("deadlines"), "{subtitles:?}");
    assert!(
        subtitles[1].ends_with("50 % of keys with deadlines"),
        "{subtitles:?}"
    );
    assert!(throughput_table(&figs[1]).contains("| 100 | 1.500 |"));
}

#[test]
fn ycsb_e_stays_in_the_ycsb_figure_in_operations() {
    let mut e = record("persimmon-ordered", "ycsb-e", 2, 1e5);
    e.scans = 950;
    e.items = 950 * 50;
    e.items_per_sec = 1e5 * 0.95 * 50.0;
    let rs = vec![record("persimmon-ordered", "ycsb-a", 2, 1e6), e];
    let figs = figures(&rs);
    assert_eq!(figs.len(), 1);
    assert_eq!(figs[0].x_axis, XAxis::Workload);
    assert!(!figs[0].items);
    let t = throughput_table(&figs[0]);
    assert!(t.contains("| ycsb-e | 0.100 |"), "{t}");
    let d = details_table(&figs[0], None);
    assert!(
        d.contains("| ycsb-e | persimmon-ordered | 0.100 | 4.750 | 50.0 |"),
        "{d}"
    );
    assert!(
        d.contains("| ycsb-a | persimmon-ordered | 1.000 | – | – |"),
        "{d}"
    );
}

#[test]
fn restart_records_get_their_own_table_and_no_figure() {
    let mut dram = record("persimmon-dram", "restart", 1, 2e6);
    dram.restarts = 3;
    dram.open_ns = 1_500_000;
    dram.first_get_ns = 1_600_000;
    dram.first_range_ns = 1_700_000;
    dram.first_insert_ns = 1_800_000;
    dram.point_index_ready_ns = 900_000_000;
    dram.full_speed_ns = 950_000_000;
    dram.first_window_ops_per_sec = 5e5;
    dram.dram_index_bytes = 48 << 20;
    let mut pm = record("persimmon", "restart", 1, 2.5e6);
    pm.open_ns = 800_000;
    pm.first_get_ns = 810_000;
    pm.full_speed_ns = 50_000_000;
    let rs = vec![pm, dram, record("persimmon", "ycsb-a", 2, 1e6)];
    let t = restart_table(&rs);
    assert!(
        t.starts_with("| engine | open | first GET | first range read | first insert |"),
        "{t}"
    );
    assert!(
        t.contains("| persimmon | 800.0 µs | 810.0 µs | – | – |"),
        "{t}"
    );
    assert!(
        t.contains(
            "| persimmon-dram | 1.5 ms | 1.6 ms | 1.7 ms | 1.8 ms | – | – | 900.0 ms | 950.0 ms | 0.500 | 2.000 | 48.0 MiB |"
        ),
        "{t}"
    );
    assert!(!t.contains("ycsb-a"), "{t}");
    let figs = figures(&rs);
    assert_eq!(figs.len(), 1, "only ycsb-a makes a figure");
    assert_eq!(figs[0].xs, ["ycsb-a"]);
    let md = markdown(&rs, None, "x.json");
    assert!(md.contains("### Restart: "), "{md}");
    assert!(md.contains("| persimmon-dram | 1.5 ms |"), "{md}");
    assert!(md.contains("| ycsb-a | persimmon |"), "{md}");
}

#[test]
fn markdown_states_durability_and_details() {
    let rs = vec![
        record("persimmon", "ycsb-a", 2, 1e6),
        record("rocksdb", "ycsb-a", 2, 2.5e5),
        record("persimmon", "ycsb-c", 2, 3e6),
        record("rocksdb", "ycsb-c", 2, 1e6),
    ];
    let probe = ProbeRecord {
        engine: "probe".into(),
        dependent_load_ns: 100.0,
        get_floor_ns: 200.0,
        get_bound_ops_per_sec_per_thread: 5e6,
        nt_write_gbps: 10.0,
        cores: 2,
        ..ProbeRecord::default()
    };
    let md = markdown(&rs, Some(&probe), "x.json");
    assert!(md.contains("- `rocksdb`: rocksdb settings"), "{md}");
    assert!(md.contains("| ycsb-a | 1.000 | 0.250 | 4.00× |"), "{md}");
    assert!(md.contains("% of GET bound"), "{md}");
    // 1 M ops/s on 2 threads of a 5 M/s-per-thread bound: 10 %.
    assert!(
        md.contains("| ycsb-a | persimmon | 1.000 | 300 ns | 2.5 µs | 40.0 µs | 2.0 ms |"),
        "{md}"
    );
    assert!(md.contains("| 10 % |"), "{md}");
}

/// `r` at cache size `cache` (as `--cache-bytes` gives it).
fn cached(mut r: Record, cache: &str, cache_bytes: u64) -> Record {
    r.cache = cache.into();
    r.cache_bytes = cache_bytes;
    r
}

#[test]
fn a_cache_sweep_of_one_workload_is_one_figure_against_the_cache() {
    let mut rs = Vec::new();
    for (cache, bytes, ops) in [("0", 0, 1e5), ("1%", 640, 2e5), ("10%", 6400, 4e5)] {
        rs.push(cached(
            record("persimmon-tiered", "ycsb-c", 2, ops),
            cache,
            bytes,
        ));
        rs.push(cached(
            record("rocksdb-blob", "ycsb-c", 2, 1e5),
            cache,
            bytes,
        ));
    }
    let figs = figures(&rs);
    assert_eq!(figs.len(), 1);
    let f = &figs[0];
    assert_eq!(f.x_axis, XAxis::CacheSize);
    assert_eq!(f.xs, ["0", "1%", "10%"], "command-line order");
    let t = throughput_table(f);
    assert!(t.contains("| cache (bytes or % of the data) |"), "{t}");
    assert!(t.contains("| 10% | 0.400 | 0.100 | 4.00× |"), "{t}");
    assert!(f.subtitle.contains("ycsb-c"), "{}", f.subtitle);
    assert!(!f.subtitle.contains("cache"), "{}", f.subtitle);
}

#[test]
fn several_workloads_at_several_cache_sizes_make_a_figure_per_cache_size() {
    let mut rs = Vec::new();
    for cache in ["0", "10%"] {
        for w in ["ycsb-a", "ycsb-b", "ycsb-c"] {
            rs.push(cached(record("persimmon-tiered", w, 2, 2e5), cache, 0));
            rs.push(cached(record("lmdb", w, 2, 1e5), cache, 0));
        }
    }
    let figs = figures(&rs);
    assert_eq!(figs.len(), 2);
    for (f, cache) in figs.iter().zip(["cache 0", "cache 10%"]) {
        assert_eq!(f.x_axis, XAxis::Workload);
        assert_eq!(f.xs, ["ycsb-a", "ycsb-b", "ycsb-c"]);
        assert!(f.subtitle.contains(&format!("{cache},")), "{}", f.subtitle);
    }
}

#[test]
fn disk_traffic_shows_in_the_details_only_when_measured() {
    let mut with_disk = record("rocksdb-blob", "ycsb-c", 2, 1e5);
    with_disk.disk_read_bytes_per_op = 16_500.0;
    with_disk.disk_write_bytes_per_op = 12.4;
    with_disk.device_reads_per_op = 1.02;
    with_disk.device_flushes_per_op = 0.5;
    let on_pm = record("persimmon", "ycsb-c", 2, 1e6);
    let both = [on_pm.clone(), with_disk];
    let t = details_table(&figures(&both)[0], None);
    assert!(
        t.contains("| disk read B/op | disk written B/op | device reads/op | device flushes/op |"),
        "{t}"
    );
    assert!(t.contains("| 16500 | 12 | 1.02 | 0.50 |"), "{t}");
    assert!(
        t.contains("| 0 | 0 | 0.00 | 0.00 |"),
        "persimmon's row: {t}"
    );
    let t = details_table(&figures(std::slice::from_ref(&on_pm))[0], None);
    assert!(!t.contains("disk read"), "{t}");
}

#[test]
fn the_tiers_cache_hits_and_syncs_show_in_the_details() {
    let mut tiered = record("persimmon-tiered", "ycsb-a", 2, 1e5);
    tiered.cache_hits = 870;
    tiered.cache_misses = 130;
    tiered.cache_hit_ratio = 0.87;
    tiered.ssd_syncs_per_op = 0.25;
    tiered.ssd_extents_per_op = 0.5;
    let lmdb = record("lmdb", "ycsb-a", 2, 5e4);
    let t = details_table(&figures(&[tiered, lmdb.clone()])[0], None);
    assert!(
        t.contains("| cache hits | SSD syncs/op | SSD extents/op |"),
        "{t}"
    );
    assert!(t.contains("| 87.0 % | 0.25 | 0.50 |"), "{t}");
    assert!(t.contains("| 0.0 % | 0.00 | 0.00 |"), "lmdb's row: {t}");
    let t = details_table(&figures(&[lmdb])[0], None);
    assert!(!t.contains("cache hits"), "{t}");
}

#[test]
fn a_multiget_sweep_is_one_figure_of_keys_read_per_second() {
    let mut rs = Vec::new();
    for n in [16, 1, 4] {
        // keys/s: persimmon 1, 2, 4 M at N = 1, 4, 16; lmdb 1 M throughout.
        let persimmon = match n {
            1 => 1e6,
            4 => 2e6,
            _ => 4e6,
        };
        rs.push(items_record(
            "persimmon",
            "multiget",
            n,
            persimmon / n as f64,
        ));
        rs.push(items_record("lmdb", "multiget", n, 1e6 / n as f64));
    }
    let f = &items_figure(
        &rs,
        XAxis::MultiGetSize,
        &["1", "4", "16"],
        "keys read per second",
    );
    assert_eq!((f.unit(), f.pm_unit()), ("keys", "key"));
    let t = throughput_table(f);
    assert_holds(
        &t,
        &[
            "| keys per batched read | persimmon M keys/s | lmdb M keys/s | persimmon ÷ lmdb |",
            "| 1 | 1.000 | 1.000 | 1.00× |",
            "| 16 | 4.000 | 1.000 | 4.00× |",
        ],
    );
    // Operations are the batched reads: 4 M keys/s in batches of 16.
    assert_holds(
        &details_table(f, None),
        &[
            "| Mops/s | M keys/s | p50 |",
            "| 16 | persimmon | 0.250 | 4.000 |",
        ],
    );
    // Not mixed into the GET-ratio figure of the same run.
    rs.push(record("persimmon", "get-ratio:100", 1, 1e6));
    let figs = figures(&rs);
    assert_eq!(figs.len(), 2);
    assert_eq!(figs[1].x_axis, XAxis::GetRatio);
}
