//! The SSD tier's side of `persimmon bench`: the engine names
//! `persimmon-tiered` and `rocksdb-blob` and the flags `--data-dir`,
//! `--tier-threshold` and `--cache-bytes` parse; a `--cache-bytes` list
//! runs each workload once per cache size, a percentage resolved against
//! the data set (keys × value size); persimmon-tiered keeps its pool in
//! `--pool-dir` and its data files in `--data-dir`.

mod common;

use common::{records, run_bench, scratch, try_args};
use persimmon_bench::args::CacheSize;
use persimmon_bench::engines::EngineKind;

#[test]
fn tier_flags_parse_and_bad_ones_are_refused() {
    let a = try_args(&[
        "--engines",
        "persimmon-tiered,rocksdb-blob,lmdb",
        "--cache-bytes",
        "0,1%,10%,64M",
        "--tier-threshold",
        "8K",
        "--data-dir",
        "/work/benchdata",
        "--drop-caches",
    ])
    .unwrap();
    assert_eq!(
        a.engines.0,
        [
            EngineKind::PersimmonTiered,
            EngineKind::RocksdbBlob,
            EngineKind::Lmdb
        ]
    );
    assert_eq!(
        a.cache_bytes.unwrap().0,
        [
            CacheSize::Bytes(0),
            CacheSize::Percent(1.0),
            CacheSize::Percent(10.0),
            CacheSize::Bytes(64 << 20)
        ]
    );
    assert_eq!(a.tier_threshold, 8192);
    assert_eq!(a.data_dir.unwrap(), std::path::Path::new("/work/benchdata"));
    assert!(a.drop_caches);

    let defaults = try_args(&[]).unwrap();
    assert_eq!(defaults.tier_threshold, persimmon::DEFAULT_TIER_THRESHOLD);
    assert!(defaults.cache_bytes.is_none() && defaults.data_dir.is_none());
    assert!(!defaults.drop_caches);

    for bad in [
        ["--cache-bytes", "150%"],
        ["--cache-bytes", "ten%"],
        ["--tier-threshold", "0"],
        ["--engines", "persimmon-tierd"],
    ] {
        let e = try_args(&bad).unwrap_err();
        assert!(e.contains(bad[0]), "{bad:?}: {e}");
    }
}

#[test]
fn a_cache_list_runs_every_point_per_size_with_data_files_in_the_data_dir() {
    let pools = scratch();
    // The data directory on a disk file system, as on a real run.
    let data = tempfile::tempdir_in(env!("CARGO_TARGET_TMPDIR")).unwrap();
    let json = pools.path().join("tier.json");
    let a = try_args(&[
        "--pool-dir",
        pools.path().to_str().unwrap(),
        "--data-dir",
        data.path().to_str().unwrap(),
        "--engines",
        "persimmon-tiered,persimmon",
        "--workload",
        "ycsb-c",
        "--keys",
        "2000",
        "--value-size",
        "16K",
        "--cache-bytes",
        "0,10%",
        "--threads",
        "1",
        "--ops",
        "2000",
        "--warmup-secs",
        "0",
        "--keep-stores",
        "--json",
        json.to_str().unwrap(),
    ])
    .unwrap();
    let text = run_bench(&a);
    assert!(
        text.contains("cache 0, 10% (% of keys × value size)"),
        "{text}"
    );
    assert!(text.contains("(cache 10%: 3.1 MiB, hits "), "{text}");

    let rs = records(&json);
    let summary: Vec<(&str, &str, u64)> = rs
        .iter()
        .map(|r| (r.engine.as_str(), r.cache.as_str(), r.cache_bytes))
        .collect();
    // 10 % of 2000 × 16 KiB = 3 276 800 bytes; the plain engine has no
    // cache of its own.
    assert_eq!(
        summary,
        [
            ("persimmon-tiered", "0", 0),
            ("persimmon", "0", 0),
            ("persimmon-tiered", "10%", 3_276_800),
            ("persimmon", "10%", 0),
        ]
    );
    for r in &rs {
        assert_eq!(r.read_misses, 0, "{r:?}");
        assert_eq!(r.ops, 2000);
        assert_eq!(r.data_bytes, 2000 * 16384);
        let tiered = r.engine == "persimmon-tiered";
        assert_eq!(r.tier_threshold, if tiered { 4096 } else { 0 });
        assert_eq!(
            r.durability.contains("SSD tier"),
            tiered,
            "{}",
            r.durability
        );
        assert!(!r.page_cache_dropped);
    }
    // Every value is on the SSD: the data files hold at least the data
    // set; the reads of the 0 cache never hit, those of the 10 % one do
    // (zipfian keys), and a read-only phase writes no extent.
    let (uncached, tiered) = (&rs[0], &rs[2]);
    for r in [uncached, tiered] {
        assert!(r.ssd_bytes_per_data_byte >= 1.0, "{r:?}");
        assert_eq!(r.ssd_extents_per_op, 0.0, "{r:?}");
    }
    assert_eq!(uncached.cache_hits, 0, "{uncached:?}");
    assert!(
        tiered.cache_hits > 0 && tiered.cache_hit_ratio > 0.0,
        "{tiered:?}"
    );
    assert_eq!(rs[1].ssd_bytes_per_data_byte, 0.0);
    assert!(
        tiered.durability.contains("ACS read cache 3.1 MiB"),
        "{}",
        tiered.durability
    );
    assert!(
        tiered.durability.contains("policy s3-fifo"),
        "{}",
        tiered.durability
    );
    assert!(
        tiered.durability.contains(data.path().to_str().unwrap()),
        "the data files' directory: {}",
        tiered.durability
    );

    // --keep-stores: the pool under --pool-dir, the data files under
    // --data-dir, each store in its own directory.
    let run = |root: &std::path::Path| {
        let dirs: Vec<_> = std::fs::read_dir(root)
            .unwrap()
            .map(|e| e.unwrap().path())
            .filter(|p| p.is_dir())
            .collect();
        assert_eq!(dirs.len(), 1, "one run directory in {}", root.display());
        dirs[0].clone()
    };
    let (pool_run, data_run) = (run(pools.path()), run(data.path()));
    assert!(pool_run
        .join("persimmon-tiered-0-1/persimmon.pool")
        .is_file());
    assert!(pool_run.join("persimmon-0-1/persimmon.pool").is_file());
    assert!(data_run.join("persimmon-tiered-0-1-data").is_dir());
    assert!(!data_run.join("persimmon-0-1-data").exists());
}
