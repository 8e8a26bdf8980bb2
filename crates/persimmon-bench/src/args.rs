//! The arguments of `persimmon bench` (clap derive; the CLI flattens
//! [`BenchArgs`] into its `bench` subcommand). The help texts are the
//! user documentation of the tool.
//!
//! Invariants:
//! - Counts (`--keys`, `--ops`) take digits and `_` only: `1M` would be
//!   ambiguous (10^6 or 2^20?). Byte sizes take the spellings of
//!   `persimmon::size` (suffixes are powers of 1024), as in the CLI and the
//!   server's config file.
//! - Every limit (threads, key and value sizes, θ, cache percentages) is
//!   checked while parsing, so a bad flag fails before any store is
//!   created.
//! - A cache size given as a percentage ([`CacheSize::Percent`]) is a
//!   fraction of the point's data set (keys × value size), resolved per
//!   point, so one list sweeps the same fractions at every value size.

use std::path::PathBuf;

use clap::{Args, ValueEnum};
use persimmon::size::parse_size;

use crate::distribution::check_theta;
use crate::engines::EngineKind;
use crate::workload::{parse_workloads, WorkloadSpec};

/// Most threads a run may use.
pub const MAX_THREADS: usize = 1024;

/// Arguments of `persimmon bench`.
#[derive(Args, Debug, Clone)]
pub struct BenchArgs {
    /// Engines to compare, run one after the other; the first is the subject
    /// of the ratio columns. Names: persimmon, persimmon-ordered (the
    /// default options with the ordered index: the skiplist),
    /// persimmon-dram (the ordered index in leaves and the point index in
    /// DRAM, rebuilt from them after every open), persimmon-dram-skiplist
    /// (the same with the skiplist instead of leaves), baseline, no-volatile-locks, no-lock-free-reads, no-write-elimination,
    /// lmdb, rocksdb, rocksdb-blob (RocksDB with blob files, its key-value
    /// separation: values of at least --tier-threshold bytes in blob files),
    /// persimmon-tiered (the default options with the SSD tier: values of
    /// at least --tier-threshold bytes in data files in --data-dir, the
    /// pool keeps the rest); `ablation` stands for baseline and the three
    /// no-* variants. lmdb, rocksdb and rocksdb-blob need a build with
    /// `--features peers`. Only persimmon-ordered, persimmon-dram,
    /// persimmon-dram-skiplist, lmdb, rocksdb and rocksdb-blob can scan: workloads that scan skip the
    /// others, with a note.
    #[arg(long, value_name = "LIST", default_value = "persimmon", value_parser = parse_engines)]
    pub engines: EngineList,

    /// Workloads, comma-separated: ycsb-a … ycsb-f (ycsb = all six; ycsb-e
    /// is 95 % scans of 1 to 100 pairs from a zipfian key, 5 % inserts),
    /// get-ratio:R (R % GET, the rest PUT of existing keys; a list such as
    /// get-ratio:0,50,95,100 makes one figure), value-size:B (50 % GET with
    /// B-byte values; value-size:64,256,1K,4K), scan:N (100 % scans of
    /// exactly N pairs from a uniform random key; scan:10,100,1000 makes one
    /// figure of pairs read per second, items/s, against N), insert (100 %
    /// puts of new keys: compare persimmon with persimmon-ordered for what
    /// the ordered index costs), batch:N (100 % atomic batches of N puts of
    /// existing keys, one Db::write each; throughput in keys written per
    /// second, items/s, and flushes, fences and PM bytes per key written;
    /// each engine also runs the same keys as N single puts, reported as
    /// the engine `<engine> single puts` for the ratio; batch:1,10,100,1000
    /// makes one figure against N; Persimmon engines only), multiget:N
    /// (100 % batched reads of N uniform random existing keys: Db::get_many
    /// on Persimmon, N gets in one read transaction on LMDB, multi_get on
    /// RocksDB; throughput in keys read per second, items/s, ops/s counts
    /// the batched reads; multiget:1,4,16,64 makes one figure against N).
    ///
    /// pdv (alone): the persistent dancing variable microbenchmark, persisted
    /// updates per second of one variable per thread: single-word (one word
    /// stored, flushed and fenced in place), then PDVs with N = 2, 4, 8, 16,
    /// 32, 64 shadows in the sparse layout (each shadow on a line of its
    /// own) and the dense one (8 variables share N lines, so threads share
    /// lines), for each --threads count, --duration-secs (or --ops) each,
    /// after --warmup-secs; files in --pool-dir. Results use engine
    /// single-word, pdv-N-sparse, pdv-N-dense and workload pdv; the tables
    /// give each variant's ratio to single-word. --engines, --keys and the
    /// key, value and distribution flags do not apply.
    ///
    /// restart (alone): for each engine, load --keys keys, close, then
    /// reopen 3 times and time, from the start of the open: the open, the
    /// first GET, the first range read of 10 pairs (engines that scan), the
    /// background work after open (Persimmon's rebuild, ordered walk and
    /// DRAM point index), and full speed: the end of the first 50 ms window
    /// of one thread's GETs at >= 90 % of the steady rate (measured after
    /// the background work). Medians per engine; --threads, --duration-secs,
    /// --warmup-secs and --ops do not apply
    #[arg(long, value_name = "W", default_value = "ycsb-a", value_parser = parse_workload_list)]
    pub workload: WorkloadList,

    /// Keys loaded into every engine before its timed phase
    #[arg(long, value_name = "N", default_value_t = 1_000_000, value_parser = parse_count)]
    pub keys: u64,

    /// Worker threads: a number, a list (1,2,4) or a range A-B (powers of
    /// two from A, then B: 1-18 = 1,2,4,8,16,18). More threads than cores
    /// is allowed: they take turns
    #[arg(long, value_name = "T", default_value = "2", value_parser = parse_threads)]
    pub threads: ThreadList,

    /// Length of each timed phase, in seconds
    #[arg(long, value_name = "S", default_value_t = 10.0, value_parser = parse_seconds)]
    pub duration_secs: f64,

    /// Run this many operations per timed phase (split over the threads)
    /// instead of --duration-secs
    #[arg(long, value_name = "N", value_parser = parse_count)]
    pub ops: Option<u64>,

    /// Warm-up before each timed phase, in seconds (same operations, not
    /// counted)
    #[arg(long, value_name = "S", default_value_t = 1.0, value_parser = parse_seconds)]
    pub warmup_secs: f64,

    /// Key distribution; default: zipfian for YCSB A, B, C, F, latest for
    /// YCSB D, uniform for get-ratio and value-size (the MPKV paper's)
    #[arg(long, value_name = "D")]
    pub distribution: Option<DistributionName>,

    /// Fraction of the keys (0 to 1) that carry a deadline, one day after
    /// the run starts (so none expires during it): they are loaded with
    /// Db::put_with_deadline and every PUT or batch rewrites them with it;
    /// the others have none. Which keys is fixed by their index. Persimmon
    /// engines only
    #[arg(long, value_name = "F", default_value_t = 0.0, value_parser = parse_fraction)]
    pub deadline_fraction: f64,

    /// Zipfian constant θ for zipfian and latest (0 <= θ < 1)
    #[arg(long, value_name = "THETA", default_value_t = 0.99, value_parser = parse_theta)]
    pub zipf_theta: f64,

    /// Value size in bytes (suffix K = 1024) unless the workload sets it
    #[arg(long, value_name = "BYTES", default_value = "64", value_parser = parse_value_size)]
    pub value_size: usize,

    /// Key size in bytes: a big-endian u64 of the scrambled key index,
    /// padded beyond 8 bytes
    #[arg(long, value_name = "BYTES", default_value_t = 8, value_parser = parse_key_size)]
    pub key_size: usize,

    /// Directory for the engines' stores (each gets a fresh subdirectory,
    /// removed afterwards) and for the probe's mapping. Use tmpfs or a DAX
    /// mount: on a disk every persist point is a sync
    #[arg(long, value_name = "DIR", default_value = "/dev/shm")]
    pub pool_dir: PathBuf,

    /// Directory on the SSD (an ordinary file system: ext4, xfs) for
    /// persimmon-tiered's data files and for the whole stores of lmdb,
    /// rocksdb and rocksdb-blob (each in a fresh subdirectory, removed
    /// afterwards). Default: under --pool-dir, next to the pools
    #[arg(long, value_name = "DIR")]
    pub data_dir: Option<PathBuf>,

    /// persimmon-tiered: values of at least this many bytes go to the SSD
    /// tier; rocksdb-blob: its min_blob_size
    #[arg(long, value_name = "BYTES", default_value_t = persimmon::DEFAULT_TIER_THRESHOLD, value_parser = parse_tier_threshold)]
    pub tier_threshold: u64,

    /// DRAM cache per store: persimmon-tiered's ACS read cache, the block
    /// (and blob) cache of rocksdb and rocksdb-blob. Bytes (suffix K, M, G
    /// = powers of 1024) or PCT% of the point's data set (keys × value
    /// size); a list (0,1%,10%) runs every workload point once per size,
    /// each on fresh stores. Default: each engine's own (persimmon: 1/8 of
    /// RAM, at most 4 GiB; RocksDB: 1 GiB). LMDB and the other Persimmon
    /// engines have no cache of their own (the OS page cache; the pool)
    #[arg(long, value_name = "LIST", value_parser = parse_cache_list)]
    pub cache_bytes: Option<CacheList>,

    /// Replacement policy of persimmon-tiered's ACS cache: lru (the AEP
    /// paper's), clock or s3-fifo [default: the engine's, s3-fifo]
    #[arg(long, value_name = "POLICY", value_parser = parse_cache_policy)]
    pub cache_policy: Option<persimmon::CachePolicy>,

    /// Before each timed phase (before its warm-up), write back dirty pages
    /// and drop the OS page cache (`sync`, then 3 into
    /// /proc/sys/vm/drop_caches; needs root), so that the reads of a data
    /// set on --data-dir start from the SSD
    #[arg(long)]
    pub drop_caches: bool,

    /// Run inside a fresh memory cgroup (v1; needs root) limited to this
    /// many bytes, so that the page cache cannot hold a data set larger
    /// than the limit. The limit also counts the process's own memory (the
    /// engines' caches and indexes) and the tmpfs pages it writes (pools
    /// on /dev/shm): leave room for them, or the kernel kills the run
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub memory_limit: Option<u64>,

    /// Seed of the per-thread random generators (the same for every engine)
    #[arg(long, value_name = "N", default_value_t = 1)]
    pub seed: u64,

    /// Threads of the load phase [default: the number of cores]
    #[arg(long, value_name = "N", value_parser = parse_threads_one)]
    pub load_threads: Option<usize>,

    /// Write the results as a JSON array (one object per engine, workload,
    /// threads and value size), rewritten after every result
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,

    /// Draw throughput against GET ratio, value size, threads or workload,
    /// one line (or bar) per engine, as an SVG file
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,

    /// Write Markdown tables: throughput per engine with the ratios of the
    /// first engine to each other one, then latency and PM traffic
    #[arg(long, value_name = "FILE.md")]
    pub markdown: Option<PathBuf>,

    /// Do not run: read results from these JSON files (comma-separated;
    /// probe records included) and write --markdown and --plot from them, or
    /// print the tables
    #[arg(
        long,
        value_name = "FILES",
        value_delimiter = ',',
        conflicts_with = "probe"
    )]
    pub report: Vec<PathBuf>,

    /// Measure the machine instead: dependent random-read latency on a
    /// pool-sized file mapping in --pool-dir (pointer chasing) and
    /// non-temporal write bandwidth
    #[arg(long)]
    pub probe: bool,

    /// Size of the probe's mapping [default: the pool size --keys and
    /// --value-size need, at least 64M]
    #[arg(long, value_name = "BYTES", value_parser = parse_size)]
    pub probe_bytes: Option<u64>,

    /// Keep each engine's store after its run (in --pool-dir) instead of
    /// removing it
    #[arg(long)]
    pub keep_stores: bool,

    /// With --workload pdv: also measure the engine's PUT of an existing
    /// key alone and followed by a per-thread counter persisted as one word
    /// or as an 8-shadow PDV (rows `persimmon-put`, `persimmon-put+single-word`,
    /// `persimmon-put+pdv-8-sparse`, each compared with `persimmon-put`)
    #[arg(long)]
    pub pdv_engine_put: bool,
}

/// Key distribution names for `--distribution`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DistributionName {
    Uniform,
    Zipfian,
    Latest,
}

/// Engines in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EngineList(pub Vec<EngineKind>);

/// Workloads in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WorkloadList(pub Vec<WorkloadSpec>);

/// Thread counts in command-line order.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ThreadList(pub Vec<usize>);

/// One DRAM cache size of `--cache-bytes`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum CacheSize {
    /// This many bytes.
    Bytes(u64),
    /// This percentage (0 to 100) of the data set.
    Percent(f64),
}

impl CacheSize {
    /// The cache's size in bytes for a data set of `data_bytes`.
    pub fn bytes(self, data_bytes: u64) -> u64 {
        match self {
            CacheSize::Bytes(n) => n,
            CacheSize::Percent(p) => (data_bytes as f64 * p / 100.0).round() as u64,
        }
    }
}

impl std::fmt::Display for CacheSize {
    /// As on the command line: `0`, `256M`, `1%`, `0.5%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            CacheSize::Bytes(n) => write!(f, "{}", human_size(*n)),
            CacheSize::Percent(p) => write!(f, "{p}%"),
        }
    }
}

/// `n` with the largest power-of-1024 suffix that divides it (`256M`), so
/// that it reads back as the same size.
fn human_size(n: u64) -> String {
    for (shift, suffix) in [(40, "T"), (30, "G"), (20, "M"), (10, "K")] {
        if n != 0 && n.is_multiple_of(1 << shift) {
            return format!("{}{suffix}", n >> shift);
        }
    }
    n.to_string()
}

/// Cache sizes in command-line order.
#[derive(Clone, Debug, PartialEq)]
pub struct CacheList(pub Vec<CacheSize>);

impl CacheList {
    /// The one size in bytes the list gives, for the commands that open
    /// one pool (the CLI's global `--cache-bytes` shares this parser with
    /// `bench`'s, so that clap sees one type under one name): a list or a
    /// percentage only means something to `bench`.
    pub fn fixed_bytes(&self) -> Result<u64, String> {
        match self.0[..] {
            [CacheSize::Bytes(n)] => Ok(n),
            _ => Err(format!(
                "--cache-bytes {self}: one size in bytes here (lists and percentages of the \
                 data set are for `persimmon bench`)"
            )),
        }
    }
}

impl std::fmt::Display for CacheList {
    /// As on the command line: `0,1%,10%`.
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let items: Vec<String> = self.0.iter().map(|c| c.to_string()).collect();
        f.write_str(&items.join(","))
    }
}

/// Pool sizes from the CLI's global `--pool-size` / `--pool-max`.
#[derive(Clone, Copy, Debug, Default)]
pub struct PoolSizes {
    pub initial: Option<u64>,
    pub max: Option<u64>,
}

fn parse_engines(text: &str) -> Result<EngineList, String> {
    EngineKind::parse_list(text).map(EngineList)
}

fn parse_workload_list(text: &str) -> Result<WorkloadList, String> {
    parse_workloads(text).map(WorkloadList)
}

/// A count: digits, `_` separators allowed (no suffixes: is 1M 10^6 or 2^20?).
fn parse_count(text: &str) -> Result<u64, String> {
    match text.trim().replace('_', "").parse::<u64>() {
        Ok(0) => Err("must be at least 1".into()),
        Ok(n) => Ok(n),
        Err(_) => Err(format!(
            "{text:?} is not a whole number (digits, `_` allowed)"
        )),
    }
}

fn parse_seconds(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(s) if s.is_finite() && (0.0..=86_400.0).contains(&s) => Ok(s),
        _ => Err(format!(
            "{text:?} is not a number of seconds from 0 to 86400"
        )),
    }
}

fn parse_fraction(text: &str) -> Result<f64, String> {
    match text.trim().parse::<f64>() {
        Ok(f) if (0.0..=1.0).contains(&f) => Ok(f),
        _ => Err(format!("{text:?} is not a fraction from 0 to 1")),
    }
}

fn parse_theta(text: &str) -> Result<f64, String> {
    let theta: f64 = text
        .trim()
        .parse()
        .map_err(|_| format!("{text:?} is not a number"))?;
    check_theta(theta)
}

fn parse_value_size(text: &str) -> Result<usize, String> {
    match parse_size(text)? {
        0 => Err("values are at least 1 byte".into()),
        n if n > persimmon::MAX_VALUE_BYTES as u64 => Err(format!(
            "values are at most {} bytes (the engine's limit)",
            persimmon::MAX_VALUE_BYTES
        )),
        n => Ok(n as usize),
    }
}

fn parse_key_size(text: &str) -> Result<usize, String> {
    match parse_size(text)? {
        n @ 8..=1024 => Ok(n as usize),
        _ => Err("keys are 8 to 1024 bytes (8 bytes hold the key index)".into()),
    }
}

/// Parses one cache size: bytes (`0`, `64M`) or a percentage (`10%`).
pub fn parse_cache_size(text: &str) -> Result<CacheSize, String> {
    let text = text.trim();
    let Some(percent) = text.strip_suffix('%') else {
        return parse_size(text).map(CacheSize::Bytes);
    };
    match percent.trim().parse::<f64>() {
        Ok(p) if (0.0..=100.0).contains(&p) => Ok(CacheSize::Percent(p)),
        _ => Err(format!(
            "{text:?}: a cache percentage is 0% to 100% of the data set"
        )),
    }
}

/// Parses `0,1%,10%` (duplicates dropped, order kept).
pub fn parse_cache_list(text: &str) -> Result<CacheList, String> {
    let mut out: Vec<CacheSize> = Vec::new();
    for item in text.split(',') {
        let size = parse_cache_size(item)?;
        if !out.contains(&size) {
            out.push(size);
        }
    }
    Ok(CacheList(out))
}

fn parse_cache_policy(text: &str) -> Result<persimmon::CachePolicy, String> {
    let name = text.trim().to_ascii_lowercase();
    let all = persimmon::CachePolicy::ALL;
    all.into_iter().find(|p| p.name() == name).ok_or_else(|| {
        let names: Vec<&str> = all.iter().map(|p| p.name()).collect();
        format!("unknown cache policy {text:?}: use {}", names.join(", "))
    })
}

fn parse_tier_threshold(text: &str) -> Result<u64, String> {
    match parse_size(text)? {
        0 => Err("the tier threshold is at least 1 byte".into()),
        n => Ok(n),
    }
}

fn parse_threads_one(text: &str) -> Result<usize, String> {
    match text.trim().parse::<usize>() {
        Ok(n @ 1..=MAX_THREADS) => Ok(n),
        _ => Err(format!("{text:?}: threads are 1 to {MAX_THREADS}")),
    }
}

/// Parses `4`, `1,2,4` or `1-64` (powers of two from the start, then the
/// end).
pub fn parse_threads(text: &str) -> Result<ThreadList, String> {
    let mut out: Vec<usize> = Vec::new();
    for item in text.split(',') {
        let item = item.trim();
        if let Some((a, b)) = item.split_once('-') {
            let (a, b) = (parse_threads_one(a)?, parse_threads_one(b)?);
            if a > b {
                return Err(format!("thread range {item:?} runs backwards"));
            }
            let mut t = a;
            while t < b {
                out.push(t);
                t *= 2;
            }
            out.push(b);
        } else {
            out.push(parse_threads_one(item)?);
        }
    }
    let mut seen = std::collections::HashSet::new();
    out.retain(|t| seen.insert(*t));
    Ok(ThreadList(out))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_lists_and_ranges() {
        assert_eq!(parse_threads("4").unwrap().0, vec![4]);
        assert_eq!(parse_threads("1,2,4").unwrap().0, vec![1, 2, 4]);
        assert_eq!(parse_threads("1-18").unwrap().0, vec![1, 2, 4, 8, 16, 18]);
        assert_eq!(
            parse_threads("1-64").unwrap().0,
            vec![1, 2, 4, 8, 16, 32, 64]
        );
        assert_eq!(parse_threads("2,2,1").unwrap().0, vec![2, 1]);
        assert!(parse_threads("0").is_err());
        assert!(parse_threads("8-2").is_err());
        assert!(parse_threads("2000").is_err());
    }

    #[test]
    fn cache_sizes_are_bytes_or_percentages_of_the_data() {
        assert_eq!(parse_cache_size("0"), Ok(CacheSize::Bytes(0)));
        assert_eq!(parse_cache_size("256M"), Ok(CacheSize::Bytes(256 << 20)));
        assert_eq!(parse_cache_size(" 10% "), Ok(CacheSize::Percent(10.0)));
        assert_eq!(parse_cache_size("0.5%"), Ok(CacheSize::Percent(0.5)));
        for bad in ["101%", "-1%", "x%", "%", "12X"] {
            assert!(parse_cache_size(bad).is_err(), "{bad}");
        }
        // 100 000 keys of 16 KiB: 1.5625 GiB of data.
        let data = 100_000 * 16384;
        assert_eq!(CacheSize::Percent(0.0).bytes(data), 0);
        assert_eq!(CacheSize::Percent(1.0).bytes(data), 16_384_000);
        assert_eq!(CacheSize::Percent(10.0).bytes(data), 163_840_000);
        assert_eq!(CacheSize::Percent(100.0).bytes(data), data);
        assert_eq!(CacheSize::Bytes(4096).bytes(data), 4096);

        let list = parse_cache_list("0,1%,10%,1%").unwrap();
        assert_eq!(
            list.0,
            [
                CacheSize::Bytes(0),
                CacheSize::Percent(1.0),
                CacheSize::Percent(10.0)
            ],
            "duplicates dropped, order kept"
        );
        assert!(parse_cache_list("0,200%").is_err());
        assert_eq!(list.to_string(), "0,1%,10%");
    }

    #[test]
    fn outside_bench_a_cache_size_is_one_size_in_bytes() {
        assert_eq!(parse_cache_list("64M").unwrap().fixed_bytes(), Ok(64 << 20));
        assert_eq!(parse_cache_list("0").unwrap().fixed_bytes(), Ok(0));
        for bench_only in ["10%", "0,64M"] {
            let e = parse_cache_list(bench_only)
                .unwrap()
                .fixed_bytes()
                .unwrap_err();
            assert!(
                e.contains(bench_only) && e.contains("persimmon bench"),
                "{e}"
            );
        }
    }

    #[test]
    fn cache_sizes_print_as_they_parse() {
        for text in ["0", "1%", "0.5%", "256M", "3G", "1000"] {
            let size = parse_cache_size(text).unwrap();
            assert_eq!(size.to_string(), text);
            assert_eq!(parse_cache_size(&size.to_string()), Ok(size));
        }
        assert_eq!(CacheSize::Bytes(1 << 20).to_string(), "1M");
    }

    #[test]
    fn sizes() {
        assert_eq!(parse_size("64"), Ok(64));
        assert_eq!(parse_size("4K"), Ok(4096));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1_000_000"), Ok(1_000_000));
        assert_eq!(parse_size("2M"), Ok(2 << 20));
        // The engine's parser (shared with the CLI and the server) takes
        // fractions: 1.5K is 1536 bytes.
        assert_eq!(parse_size("1.5K"), Ok(1536));
        assert!(parse_size("12X").is_err());
        assert!(parse_value_size("0").is_err());
        assert!(parse_key_size("4").is_err());
        assert!(parse_seconds("-1").is_err());
        assert_eq!(parse_tier_threshold("4K"), Ok(4096));
        assert_eq!(parse_cache_policy("LRU"), Ok(persimmon::CachePolicy::Lru));
        assert_eq!(
            parse_cache_policy("s3-fifo"),
            Ok(persimmon::CachePolicy::S3Fifo)
        );
        let e = parse_cache_policy("arc").unwrap_err();
        assert!(e.contains("lru, clock, s3-fifo"), "{e}");
        assert!(parse_tier_threshold("0").is_err());
        assert_eq!(parse_count("2_000_000"), Ok(2_000_000));
        assert!(parse_count("1M").is_err());
        assert!(parse_count("0").is_err());
        assert!(parse_theta("1").is_err());
        assert_eq!(parse_fraction("0.25"), Ok(0.25));
        assert_eq!(parse_fraction("1"), Ok(1.0));
        for bad in ["-0.1", "1.5", "NaN", "half"] {
            assert!(parse_fraction(bad).is_err(), "{bad}");
        }
    }
}
