//! What every kind of run (the benchmark, `--workload pdv`, `--workload
//! restart`, `--probe`) sets up the same way before it measures: the
//! scratch directory, the pool sizes, the engines' preflight, the load
//! phase and the length of a timed phase.
//!
//! Invariants:
//! - Every store lives in its own fresh directory under the run's scratch
//!   directory, which is removed when the run ends, error or not (unless
//!   `--keep-stores`): a failed run leaves no multi-gigabyte pools behind.
//!   With `--data-dir`, the run has a second scratch directory there, for
//!   the engines that keep data on the SSD ([`EngineKind::on_data_dir`]),
//!   removed the same way.
//! - Every engine is opened once before anything is timed, so a missing
//!   feature or an unusable `--pool-dir` fails in seconds, not after the
//!   first engine's long run; the preflight store is a small pool.
//! - All engines of a run get the same pool sizes and the same keys, and
//!   the same keys carry the same deadline (`--deadline-fraction`), set
//!   once per run a day ahead so that none expires while it runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::ProgressBar;

use crate::args::{BenchArgs, CacheSize, PoolSizes};
pub(crate) use crate::disk::filesystem_of;
use crate::engines::{self, EngineKind, OpenConfig, Store};
use crate::error::{Error, Result};
use crate::keys::Deadlines;
use crate::progress;
use crate::runner::{self, Stop};

/// Bytes per key beyond the record in a Persimmon pool (index and slack),
/// for the initial pool size.
const INDEX_BYTES_PER_KEY: u64 = 48;
/// Smallest initial pool.
pub(crate) const MIN_POOL_BYTES: u64 = 64 << 20;
/// How far after the start of a run the keys' deadlines are (a day: no
/// run is that long, so nothing expires while it runs).
const DEADLINE_AHEAD: Duration = Duration::from_secs(86_400);

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The pool size `keys` keys of these sizes need, with room to spare.
pub fn pool_estimate(keys: u64, key_size: usize, value_size: usize) -> u64 {
    let record = (24 + key_size as u64 + value_size as u64).div_ceil(8) * 8;
    let bytes = keys.saturating_mul(record + INDEX_BYTES_PER_KEY) / 4 * 5;
    bytes.max(MIN_POOL_BYTES).div_ceil(1 << 20) << 20
}

/// The bytes of a value of `value_size` that a persimmon-tiered pool
/// keeps: all of a value below the tier threshold, else the extent's
/// descriptor and the unaligned tail.
pub fn tiered_pool_value_bytes(value_size: usize, tier_threshold: u64) -> usize {
    let value = value_size as u64;
    if value < tier_threshold {
        return value_size;
    }
    let descriptor = persimmon::tier::extent::DESCRIPTOR_BYTES as u64;
    (descriptor + value % persimmon::tier::EXTENT_ALIGN) as usize
}

/// How to open the store of `dirs` for `args` with values of `value_size`
/// bytes: the CLI's `--pool-size` / `--pool-max` when given, else a pool
/// estimated for the keys (persimmon-tiered's without the values' extents)
/// and the engine's default limit; the cache `--cache-bytes` gives for the
/// data set.
pub(crate) fn open_config(
    args: &BenchArgs,
    sizes: PoolSizes,
    dirs: StoreDirs,
    value_size: usize,
    max_threads: usize,
    cache: Option<CacheSize>,
) -> OpenConfig {
    let pool_value_bytes = match dirs.kind {
        EngineKind::PersimmonTiered => tiered_pool_value_bytes(value_size, args.tier_threshold),
        _ => value_size,
    };
    let data_bytes = args.keys.saturating_mul(value_size as u64);
    OpenConfig {
        dir: dirs.dir,
        data_dir: dirs.data_dir,
        pool_bytes_initial: sizes
            .initial
            .unwrap_or_else(|| pool_estimate(args.keys, args.key_size, pool_value_bytes)),
        pool_bytes_max: sizes
            .max
            .unwrap_or_else(|| persimmon::Options::default().pool_bytes_max),
        max_threads,
        pairs: args.keys,
        key_size: args.key_size,
        value_size,
        tier_threshold: args.tier_threshold,
        cache_bytes: cache.map(|c| c.bytes(data_bytes)),
        cache_policy: args.cache_policy,
    }
}

/// The run's key deadlines (`--deadline-fraction`); an error when one of
/// `kinds` cannot write them.
pub(crate) fn deadlines(args: &BenchArgs, kinds: &[EngineKind]) -> Result<Deadlines> {
    if args.deadline_fraction == 0.0 {
        return Ok(Deadlines::NONE);
    }
    if let Some(k) = kinds.iter().find(|k| !k.has_expiry()) {
        return Err(Error::usage(format!(
            "--deadline-fraction: the {} adapter has no key expiry; run it without deadlines, \
             or only the Persimmon engines with them",
            k.name()
        )));
    }
    let at = SystemTime::now() + DEADLINE_AHEAD;
    let at_ms = at
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64);
    Ok(Deadlines::new(args.deadline_fraction, at_ms))
}

/// The file system of `--pool-dir`, for the headers.
pub(crate) fn pool_dir_filesystem(args: &BenchArgs) -> String {
    filesystem_of(&args.pool_dir).unwrap_or_else(|| "unknown file system".into())
}

/// Removes a directory tree when dropped (unless told to keep it).
pub(crate) struct Scratch {
    pub(crate) dir: PathBuf,
    pub(crate) keep: bool,
}

impl Drop for Scratch {
    fn drop(&mut self) {
        if !self.keep {
            let _ = std::fs::remove_dir_all(&self.dir);
        }
    }
}

/// The run's fresh scratch directory under `--pool-dir` (removed when the
/// returned guard drops, unless `--keep-stores`) and the file system it is on.
pub(crate) fn run_dir(args: &BenchArgs) -> Result<(PathBuf, Scratch, String)> {
    let (dir, scratch) = scratch_under(&args.pool_dir, args.keep_stores)?;
    Ok((dir, scratch, pool_dir_filesystem(args)))
}

/// A fresh directory `persimmon-bench.<pid>` under `parent` and its guard.
fn scratch_under(parent: &Path, keep: bool) -> Result<(PathBuf, Scratch)> {
    std::fs::create_dir_all(parent).map_err(|e| Error::file("create", parent, e))?;
    let dir = parent.join(format!("persimmon-bench.{}", std::process::id()));
    fresh_dir(&dir)?;
    let scratch = Scratch {
        dir: dir.clone(),
        keep,
    };
    Ok((dir, scratch))
}

/// Where a run keeps its stores: the pools in a scratch directory under
/// `--pool-dir`; the stores and data files that belong on the SSD in one
/// under `--data-dir` when it is given, else next to the pools.
pub(crate) struct RunDirs {
    pub(crate) pool: PathBuf,
    pub(crate) data: PathBuf,
    /// The file systems of the two, for the headers (`tmpfs`, `ext4 data`).
    pub(crate) filesystems: String,
    _scratch: Vec<Scratch>,
}

/// The directories of one store of `kind`, created empty.
#[derive(Clone, Debug)]
pub(crate) struct StoreDirs {
    pub(crate) kind: EngineKind,
    /// The engine's own directory ([`OpenConfig::dir`]).
    pub(crate) dir: PathBuf,
    /// persimmon-tiered's data directory ([`OpenConfig::data_dir`]).
    pub(crate) data_dir: Option<PathBuf>,
}

/// The run's scratch directories (see [`RunDirs`]).
pub(crate) fn run_dirs(args: &BenchArgs) -> Result<RunDirs> {
    let (pool, pool_scratch, pool_fs) = run_dir(args)?;
    let Some(parent) = &args.data_dir else {
        return Ok(RunDirs {
            data: pool.clone(),
            pool,
            filesystems: pool_fs,
            _scratch: vec![pool_scratch],
        });
    };
    let (data, data_scratch) = scratch_under(parent, args.keep_stores)?;
    let data_fs = filesystem_of(&data).unwrap_or_else(|| "unknown file system".into());
    Ok(RunDirs {
        pool,
        data,
        filesystems: format!("{pool_fs}; data in {} ({data_fs})", parent.display()),
        _scratch: vec![pool_scratch, data_scratch],
    })
}

impl RunDirs {
    /// Fresh directories for the store `name` of `kind`: a Persimmon pool
    /// in the pool directory (persimmon-tiered's data files in the data
    /// directory, `<name>-data`), a peer's store in the data directory.
    pub(crate) fn fresh(&self, kind: EngineKind, name: &str) -> Result<StoreDirs> {
        let (dir, data_dir) = match kind {
            EngineKind::PersimmonTiered => (
                self.pool.join(name),
                Some(self.data.join(format!("{name}-data"))),
            ),
            k if k.on_data_dir() => (self.data.join(name), None),
            _ => (self.pool.join(name), None),
        };
        debug_assert!(Some(&dir) != data_dir.as_ref());
        fresh_dir(&dir)?;
        if let Some(d) = &data_dir {
            fresh_dir(d)?;
        }
        Ok(StoreDirs {
            kind,
            dir,
            data_dir,
        })
    }
}

impl StoreDirs {
    /// Removes the store's directories (best effort: the run's scratch
    /// guard removes whatever is left).
    pub(crate) fn remove(&self) {
        let _ = std::fs::remove_dir_all(&self.dir);
        if let Some(d) = &self.data_dir {
            let _ = std::fs::remove_dir_all(d);
        }
    }
}

pub(crate) fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::file("remove", dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::file("create", dir, e))
}

/// Opens every engine of `kinds` once in a small pool in fresh
/// directories of `dirs` (`config` says how, for a store's directories)
/// and returns their durability settings, in order.
pub(crate) fn preflight(
    kinds: &[EngineKind],
    dirs: &RunDirs,
    config: impl Fn(StoreDirs) -> OpenConfig,
) -> Result<Vec<String>> {
    let mut durability = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        let store_dirs = dirs.fresh(kind, &format!("{}-preflight", kind.name()))?;
        let mut preflight = config(store_dirs.clone());
        preflight.pool_bytes_initial = MIN_POOL_BYTES;
        let store = engines::open(kind, &preflight)?;
        durability.push(store.durability());
        drop(store);
        store_dirs.remove();
    }
    Ok(durability)
}

/// One header line per engine: its name and durability settings.
pub(crate) fn durability_lines(kinds: &[EngineKind], durability: &[String]) -> String {
    kinds
        .iter()
        .zip(durability)
        .map(|(kind, d)| format!("{:<21} {d}\n", kind.name()))
        .collect()
}

/// Loads `--keys` keys with values of `value_size` bytes, those that
/// `deadlines` names with their deadline, into `store` with
/// `--load-threads` threads, under a bar labelled `what`; returns how long
/// it took.
pub(crate) fn load(
    store: &dyn Store,
    args: &BenchArgs,
    value_size: usize,
    deadlines: Deadlines,
    what: String,
) -> Result<Duration> {
    let bar = progress::load_bar(args.keys, what);
    let load_time = runner::load(
        store,
        args.keys,
        (args.key_size, value_size),
        deadlines,
        args.load_threads.unwrap_or_else(cores),
        &mut |n| bar.set_position(n),
    )?;
    bar.finish_and_clear();
    Ok(load_time)
}

/// How a timed phase ends (`--ops` or `--duration-secs`) and its warm-up.
pub(crate) fn phase_length(args: &BenchArgs) -> (Stop, Duration) {
    let stop = match args.ops {
        Some(n) => Stop::Ops(n),
        None => Stop::After(Duration::from_secs_f64(args.duration_secs)),
    };
    (stop, Duration::from_secs_f64(args.warmup_secs))
}

/// A bar over a timed phase, warm-up included (a phase that counts
/// operations shows the warm-up only).
pub(crate) fn phase_bar(stop: Stop, warmup: Duration, what: String) -> ProgressBar {
    let total = warmup
        + match stop {
            Stop::After(d) => d,
            Stop::Ops(_) => Duration::ZERO,
        };
    progress::time_bar(total.as_millis() as u64, what)
}

/// `--threads` as printed in the headers: `1,2,4`.
pub(crate) fn threads_text(threads: &[usize]) -> String {
    threads
        .iter()
        .map(|t| t.to_string())
        .collect::<Vec<_>>()
        .join(",")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pool_estimate_covers_records_and_index() {
        // 1 M keys of 8 + 64 bytes: 96-byte records plus index, ~180 MB.
        let b = pool_estimate(1_000_000, 8, 64);
        assert!(b > 1_000_000 * 130 && b < 1_000_000 * 250, "{b}");
        assert_eq!(b % (1 << 20), 0);
        assert_eq!(pool_estimate(10, 8, 64), MIN_POOL_BYTES);
    }

    #[test]
    fn a_tiered_pool_keeps_descriptors_and_tails_only() {
        assert_eq!(tiered_pool_value_bytes(100, 4096), 100);
        assert_eq!(tiered_pool_value_bytes(4095, 4096), 4095);
        // The extent's descriptor (32 bytes) and the unaligned tail.
        assert_eq!(tiered_pool_value_bytes(4096, 4096), 32);
        assert_eq!(tiered_pool_value_bytes(16384, 4096), 32);
        assert_eq!(tiered_pool_value_bytes(16384 + 100, 4096), 132);
        assert_eq!(tiered_pool_value_bytes(16384, 65536), 16384);
        // 10 M keys of 16 KiB (160 GiB of values) need a pool of about 1 GiB.
        let pool = pool_estimate(10_000_000, 8, tiered_pool_value_bytes(16384, 4096));
        assert!(pool < 2 << 30 && pool > 500 << 20, "{pool}");
    }

    #[test]
    fn filesystem_of_finds_the_root() {
        if Path::new("/proc/mounts").exists() {
            assert!(filesystem_of(Path::new("/")).is_some());
        }
    }
}
