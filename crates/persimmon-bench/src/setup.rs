//! What every kind of run (the benchmark, `--workload pdv`, `--workload
//! restart`, `--probe`) sets up the same way before it measures: the
//! scratch directory, the pool sizes, the engines' preflight, the load
//! phase and the length of a timed phase.
//!
//! Invariants:
//! - Every store lives in its own fresh directory under the run's scratch
//!   directory, which is removed when the run ends, error or not (unless
//!   `--keep-stores`): a failed run leaves no multi-gigabyte pools behind.
//! - Every engine is opened once before anything is timed, so a missing
//!   feature or an unusable `--pool-dir` fails in seconds, not after the
//!   first engine's long run; the preflight store is a small pool.
//! - All engines of a run get the same pool sizes and the same keys, and
//!   the same keys carry the same deadline (`--deadline-fraction`), set
//!   once per run a day ahead so that none expires while it runs.

use std::path::{Path, PathBuf};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

use indicatif::ProgressBar;

use crate::args::{BenchArgs, PoolSizes};
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

/// How to open a store in `dir` for `args` with values of `value_size`
/// bytes: the CLI's `--pool-size` / `--pool-max` when given, else a pool
/// estimated for the keys and the engine's default limit.
pub(crate) fn open_config(
    args: &BenchArgs,
    sizes: PoolSizes,
    dir: PathBuf,
    value_size: usize,
    max_threads: usize,
) -> OpenConfig {
    OpenConfig {
        dir,
        pool_bytes_initial: sizes
            .initial
            .unwrap_or_else(|| pool_estimate(args.keys, args.key_size, value_size)),
        pool_bytes_max: sizes
            .max
            .unwrap_or_else(|| persimmon::Options::default().pool_bytes_max),
        max_threads,
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

/// The file system type of `path` from /proc/mounts (longest mount point
/// that contains it), when known.
pub(crate) fn filesystem_of(path: &Path) -> Option<String> {
    let path = path.canonicalize().ok()?;
    let mounts = std::fs::read_to_string("/proc/mounts").ok()?;
    mounts
        .lines()
        .filter_map(|l| {
            let mut f = l.split_whitespace();
            let (_, mount, fs) = (f.next()?, f.next()?, f.next()?);
            Some((mount.replace("\\040", " "), fs.to_string()))
        })
        .filter(|(mount, _)| path.starts_with(mount))
        .max_by_key(|(mount, _)| mount.len())
        .map(|(_, fs)| fs)
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
    std::fs::create_dir_all(&args.pool_dir)
        .map_err(|e| Error::file("create", &args.pool_dir, e))?;
    let dir = args
        .pool_dir
        .join(format!("persimmon-bench.{}", std::process::id()));
    fresh_dir(&dir)?;
    let scratch = Scratch {
        dir: dir.clone(),
        keep: args.keep_stores,
    };
    Ok((dir, scratch, pool_dir_filesystem(args)))
}

pub(crate) fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::file("remove", dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::file("create", dir, e))
}

/// Opens every engine of `kinds` once in a small pool under `run_dir`
/// (`config` says how, for a directory) and returns their durability
/// settings, in order.
pub(crate) fn preflight(
    kinds: &[EngineKind],
    run_dir: &Path,
    config: impl Fn(PathBuf) -> OpenConfig,
) -> Result<Vec<String>> {
    let mut durability = Vec::with_capacity(kinds.len());
    for &kind in kinds {
        let dir = run_dir.join(format!("{}-preflight", kind.name()));
        fresh_dir(&dir)?;
        let mut preflight = config(dir.clone());
        preflight.pool_bytes_initial = MIN_POOL_BYTES;
        let store = engines::open(kind, &preflight)?;
        durability.push(store.durability());
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
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
    fn filesystem_of_finds_the_root() {
        if Path::new("/proc/mounts").exists() {
            assert!(filesystem_of(Path::new("/")).is_some());
        }
    }
}
