//! What a run produces: one [`Record`] per (engine, workload, threads,
//! value size), and a [`ProbeRecord`] from `--probe`. Both serialize to the
//! JSON objects of `--json`; the field names are part of the tool's
//! interface (scripts and `--report` read them).
//!
//! The constants below fix what some fields mean, so they live here, below
//! both the experiments that measure by them ([`crate::pdv`],
//! [`crate::restart`]) and the report that explains them.

use std::time::Duration;

use serde::{Deserialize, Serialize};

/// `engine` of the PDV microbenchmark's reference variant (one word
/// updated in place): the other variants' ratios divide by its throughput.
pub const SINGLE_WORD: &str = "single-word";

/// `n / d`, or 0 when there is nothing to divide by (a phase without
/// operations, a pool without keys).
pub fn per(n: u64, d: u64) -> f64 {
    if d == 0 {
        0.0
    } else {
        n as f64 / d as f64
    }
}

/// Suffix of the engine name of the records that write a `batch:N`
/// workload's keys as N single puts (`persimmon single puts`), the
/// reference of the batches' ratio.
pub const SINGLE_PUTS: &str = " single puts";

/// Pairs of the first range read after a reopen (`first_range_ns`).
pub const RANGE_PAIRS: usize = 10;
/// Length of one window of GETs after a reopen (`full_speed_ns`,
/// `first_window_ops_per_sec`).
pub const WINDOW: Duration = Duration::from_millis(50);
/// Fraction of the steady rate a window must reach to count as full speed
/// (`full_speed_ns`).
pub const FULL_SPEED: f64 = 0.9;

/// Results of one timed phase. Fields missing from a JSON file (written by
/// an older version) read as their defaults.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct Record {
    /// Engine name (`persimmon`, `baseline`, `lmdb`, ...); for `batch:N`,
    /// the same keys written as N single puts are `<engine>`[`SINGLE_PUTS`].
    pub engine: String,
    /// Workload as named on the command line (`ycsb-a`, `get-ratio:95`,
    /// `value-size:256`, `scan:100`, `insert`, `batch:100`).
    pub workload: String,
    /// Key distribution (`uniform`, `zipfian(0.99)`, `latest(0.99)`).
    pub distribution: String,
    pub threads: usize,
    pub value_size: usize,
    pub key_size: usize,
    /// Keys loaded before the timed phase.
    pub keys: u64,
    /// Percentage of reads in the mix.
    pub get_percent: f64,
    /// Operations in the timed phase (warm-up excluded).
    pub ops: u64,
    /// Length of the timed phase.
    pub duration_secs: f64,
    pub ops_per_sec: f64,
    /// Pairs read by scans, or keys written by `batch:N`, per second
    /// (`items / duration_secs`); 0 for the other workloads.
    pub items_per_sec: f64,
    /// Scans among `ops`, and the pairs they read in all (0 without scans;
    /// `items / scans` is the mean scan length); for `batch:N`, the keys
    /// written (`ops` counts the batches, N keys each).
    pub scans: u64,
    pub items: u64,
    /// Latency of single operations (HDR histograms, 3 significant digits).
    pub mean_ns: f64,
    pub p50_ns: u64,
    pub p99_ns: u64,
    pub p999_ns: u64,
    pub max_ns: u64,
    /// Persistent-memory work per operation: per-thread counter deltas of
    /// the worker threads, summed, divided by `ops` (0 for the peers, which
    /// do not write through Persimmon's pmem layer); for `batch:N`, divided
    /// by `items`: per key written, not per batch.
    pub pm_bytes_per_op: f64,
    pub pm_nt_bytes_per_op: f64,
    pub flushes_per_op: f64,
    pub fences_per_op: f64,
    /// Reads that found no value (should be 0: every read targets a key
    /// that exists).
    pub read_misses: u64,
    /// Puts skipped by concurrent write elimination during the phase.
    pub eliminated_writes: u64,
    /// The engine's durability settings, as printed.
    pub durability: String,
    /// Cores of the machine (`available_parallelism`).
    pub cores: usize,
    /// Seconds the load phase took (batched for the peers; not a figure of
    /// merit).
    pub load_secs: f64,
    /// Fraction of the keys with a deadline (`--deadline-fraction`).
    pub deadline_fraction: f64,
    /// Bytes of the pool in use (`Stats::used_bytes`, whole segments) and
    /// of live records (`Stats::live_bytes`) per key, right after the load
    /// (0 for engines that do not tell).
    pub used_bytes_per_key: f64,
    pub live_bytes_per_key: f64,
    /// Seed of the run.
    pub seed: u64,
    /// The `--cache-bytes` item of this point as given (`0`, `1%`,
    /// `256M`); empty when the run gave none (each engine's default).
    pub cache: String,
    /// DRAM cache the engine had: persimmon-tiered's ACS cache, RocksDB's
    /// block cache; 0 for engines without one of their own.
    pub cache_bytes: u64,
    /// Bytes of the loaded values (keys × value size): the data set that
    /// a cache percentage is of.
    pub data_bytes: u64,
    /// `--tier-threshold` for the engines that use it (persimmon-tiered,
    /// rocksdb-blob's min_blob_size); 0 for the others.
    pub tier_threshold: u64,
    /// Bytes the whole process read from and wrote to storage
    /// (`/proc/self/io`: block-layer reads, so page cache hits do not
    /// count; tmpfs counts in neither) during the timed phase, background
    /// threads included, per operation (per key written for `batch:N`).
    pub disk_read_bytes_per_op: f64,
    pub disk_write_bytes_per_op: f64,
    /// Requests the data directory's block device completed during the
    /// timed phase, per operation (per key written for `batch:N`): reads,
    /// writes and flushes (each `fdatasync` on a write-back device sends
    /// one: the write path's syncs). The whole device's, other processes
    /// included; 0 when the data directory is on tmpfs.
    pub device_reads_per_op: f64,
    pub device_writes_per_op: f64,
    pub device_flushes_per_op: f64,
    /// persimmon-tiered during the timed phase: ACS cache hits and misses
    /// (a miss reads the SSD) and the hit ratio; data-file syncs and
    /// extents written per operation (per key for `batch:N`; syncs per
    /// extent is the write path's syncs per tiered write, below 1 when group
    /// commit shares a sync). 0 for the other engines.
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_hit_ratio: f64,
    pub ssd_syncs_per_op: f64,
    pub ssd_extents_per_op: f64,
    /// persimmon-tiered right after the load: bytes its data files take
    /// per byte of loaded values (`data_bytes`); 0 for the others.
    pub ssd_bytes_per_data_byte: f64,
    /// The OS page cache was dropped before the phase (`--drop-caches`).
    pub page_cache_dropped: bool,
    /// The memory cgroup limit the run had (`--memory-limit`; 0 without).
    pub memory_limit_bytes: u64,
    /// `restart` workload ([`crate::restart`]); 0 in the others. Reopens
    /// measured; each figure below is their median.
    pub restarts: u32,
    /// Times since the start of the reopen (the engine's open call): open
    /// returned; the first GET of an existing key returned (after open);
    /// the first range read of [`RANGE_PAIRS`] pairs
    /// returned (after that GET; 0 for engines without ordered reads).
    pub open_ns: u64,
    pub first_get_ns: u64,
    pub first_range_ns: u64,
    /// The first insert of a new key returned (after the range read; 0 for
    /// engines without ordered reads, where it is not measured).
    #[serde(default)]
    pub first_insert_ns: u64,
    /// Persimmon's background work after open, as its stats first showed it
    /// done (polled every millisecond; 0 for engines without it): space
    /// accounting rebuilt, the ordered index's walk ended (0 without an
    /// ordered index), the point index ready (the DRAM one once it is
    /// rebuilt; the PM one when the open returned, `open_ns`).
    pub rebuild_done_ns: u64,
    pub ordered_walk_done_ns: u64,
    pub point_index_ready_ns: u64,
    /// End of the first [`WINDOW`] (50 ms) of one thread's GETs after open
    /// whose rate reached [`FULL_SPEED`] (90 %) of the steady rate
    /// (`ops_per_sec`, measured after the background work was done).
    pub full_speed_ns: u64,
    /// GETs per second in the first window after open (one thread).
    pub first_window_ops_per_sec: f64,
    /// DRAM the point index occupied after the reopen (`persimmon-dram`;
    /// 0 otherwise).
    pub dram_index_bytes: u64,
}

/// The physical limits measured by `--probe`.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct ProbeRecord {
    /// Always `probe`.
    pub engine: String,
    /// Directory the mapping was made in (the pools' file system).
    pub pool_dir: String,
    pub mapping_bytes: u64,
    /// One load that depends on the previous one, at a random cache line of
    /// the mapping (pointer chasing through a random cyclic permutation):
    /// the 10th percentile over short blocks, robust to a busy machine.
    pub dependent_load_ns: f64,
    /// The median over the same blocks.
    pub dependent_load_ns_median: f64,
    /// A GET needs at least two dependent misses (bucket, then record).
    pub get_floor_ns: f64,
    /// `1e9 / get_floor_ns`: the most GETs per second one thread can do if
    /// its GETs do not overlap (out-of-order execution can overlap the
    /// misses of consecutive GETs, so this is a yardstick, not a wall).
    pub get_bound_ops_per_sec_per_thread: f64,
    /// Non-temporal write bandwidth with `nt_write_threads` threads, GB/s
    /// (10^9 bytes per second): the best pass over the whole mapping.
    pub nt_write_gbps: f64,
    pub nt_write_threads: usize,
    /// The same with one thread.
    pub nt_write_gbps_1thread: f64,
    /// How the stores were made.
    pub nt_store: String,
    pub cores: usize,
}
