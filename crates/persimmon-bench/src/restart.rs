//! `--workload restart`: how soon a loaded store serves again after a
//! restart, and how soon it is at full speed.
//!
//! For each engine in `--engines`: a fresh store is loaded with `--keys`
//! keys (as for every workload; the adapter then waits for Persimmon's
//! background work, `Db::wait_for_rebuild`) and closed. Then, [`REOPENS`]
//! times, it is reopened and measured, every time from the start of the
//! engine's open call:
//!
//! 1. `open`: the open call returned (`Db::open` for Persimmon);
//! 2. `first GET`: a GET of a random existing key returned (right after);
//! 3. `first range`: a range read of [`RANGE_PAIRS`] pairs from a random
//!    existing key returned (right after; engines with ordered reads only);
//! 4. then one thread runs GETs of uniformly random existing keys in
//!    consecutive [`WINDOW`]s (50 ms), each window's rate its GETs over its
//!    length, until the background work after open is done. Meanwhile a
//!    second thread, started before the open, polls the engine's stats
//!    every millisecond from the moment the open returns and notes when
//!    each part of Persimmon's background work is first seen done:
//!    `rebuild done` (space accounting and key count), `walk done` (the
//!    ordered index's walk after open) and `index ready` (the point index
//!    answers every point read: the DRAM one once it has been rebuilt from
//!    the ordered index, which serves the point reads it misses until then;
//!    the PM one is the persistent index itself, ready when the open
//!    returns, so its time is the open's);
//! 5. then `Db::wait_for_rebuild` (which must now return at once) and
//!    [`STEADY_WINDOWS`] more windows: their median rate is the *steady
//!    rate*;
//! 6. `full speed` is the end of the first window, counted from the start
//!    of the open, whose rate reached [`FULL_SPEED`] (90 %) of the steady
//!    rate. The windows before and after the wait form one sequence, so it
//!    always exists; with 50 ms windows it is never below 50 ms.
//!
//! Each figure in the record is the median over the reopens; stdout shows
//! every reopen too. Engines without background work after open (LMDB,
//! RocksDB) have no rebuild, walk or index-ready times (0 in the JSON, `–`
//! in the tables). `--threads`, `--duration-secs`, `--warmup-secs`, `--ops`
//! and the distribution flags do not apply; `restart` runs alone. With
//! `--deadline-fraction` the keys it names are loaded with a deadline a day
//! ahead, so Persimmon's background work after open also refills its heap
//! of deadlines.
//!
//! Invariants:
//! - Keys are chosen before the clock starts; every GET and range read
//!   targets a key that exists, so a miss is an engine error (counted in
//!   `read_misses`, and the run fails).
//! - The seeds depend only on `--seed` and the reopen, never on the engine.

use std::io::Write;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::args::{BenchArgs, PoolSizes};
use crate::engines::{self, EngineKind, OpenConfig, Store};
use crate::error::{Error, Result};
use crate::keys::{scramble, Deadlines, KeyBuf};
use crate::output::{write_json_arg, write_out, write_plot_and_markdown};
use crate::record::{Record, FULL_SPEED, RANGE_PAIRS, WINDOW};
use crate::report::{self, mops, restart_times};
use crate::setup::{
    self, cores, durability_lines, open_config, preflight, run_dirs, RunDirs, StoreDirs,
};
use crate::workload::WorkloadSpec;

/// Windows measured after the background work, for the steady rate.
pub const STEADY_WINDOWS: usize = 10;
/// Reopens per engine.
pub const REOPENS: usize = 3;
/// How often the stats are polled.
const POLL: Duration = Duration::from_millis(1);
/// Longest the windows wait for the background work before calling the
/// engine's wait (which then blocks).
const MAX_BACKGROUND: Duration = Duration::from_secs(600);
/// GETs between two reads of the clock inside a window.
const CLOCK_EVERY: u64 = 16;

/// One window of GETs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Window {
    /// Its end, since the start of the open.
    pub end: Duration,
    /// GETs per second in it.
    pub rate: f64,
    pub ops: u64,
    pub secs: f64,
}

/// What one reopen measured; times since the start of the open call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Reopen {
    pub open: Duration,
    pub first_get: Duration,
    /// `None` for engines without ordered reads.
    pub first_range: Option<Duration>,
    /// The first insert of a new key (after the range read); `None` for
    /// engines without ordered reads.
    pub first_insert: Option<Duration>,
    /// `None` for engines without such background work.
    pub rebuild_done: Option<Duration>,
    pub ordered_walk_done: Option<Duration>,
    pub point_index_ready: Option<Duration>,
    pub full_speed: Duration,
    pub first_window_rate: f64,
    /// Median window rate after the background work.
    pub steady_rate: f64,
    /// GETs and seconds of the steady windows.
    pub steady_ops: u64,
    pub steady_secs: f64,
    /// Windows before the background work was done.
    pub windows_before_ready: usize,
    pub read_misses: u64,
    /// DRAM the point index occupied at the end (0 unless in DRAM).
    pub dram_index_bytes: u64,
}

/// The median of `values` (the mean of the middle two for an even count);
/// 0 for none.
pub fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return 0.0;
    }
    values.sort_by(f64::total_cmp);
    let n = values.len();
    if n % 2 == 1 {
        values[n / 2]
    } else {
        (values[n / 2 - 1] + values[n / 2]) / 2.0
    }
}

/// The end of the first window (of `before` then `steady`) whose rate
/// reached `FULL_SPEED` of `steady_rate`.
pub fn full_speed(windows: &[Window], steady_rate: f64) -> Option<Duration> {
    windows
        .iter()
        .find(|w| w.rate >= FULL_SPEED * steady_rate)
        .map(|w| w.end)
}

/// The GETs of one reopen: keys and generator.
struct Reader {
    key: KeyBuf,
    rng: SmallRng,
    keys: u64,
    out: Vec<u8>,
    misses: u64,
}

impl Reader {
    /// GETs key `index`; returns when it returned.
    fn get_one(&mut self, store: &dyn Store, index: u64) -> Result<Instant> {
        if !store.read(self.key.key(index), &mut self.out)? {
            self.misses += 1;
        }
        Ok(Instant::now())
    }

    /// GETs for one window; `start` is the start of the open.
    fn window(&mut self, store: &dyn Store, start: Instant) -> Result<Window> {
        let w0 = Instant::now();
        let deadline = w0 + WINDOW;
        let mut ops = 0u64;
        loop {
            for _ in 0..CLOCK_EVERY {
                let i = self.rng.gen_range(0..self.keys);
                if !store.read(self.key.key(i), &mut self.out)? {
                    self.misses += 1;
                }
            }
            ops += CLOCK_EVERY;
            let now = Instant::now();
            if now >= deadline {
                let secs = (now - w0).as_secs_f64();
                return Ok(Window {
                    end: now - start,
                    rate: ops as f64 / secs,
                    ops,
                    secs,
                });
            }
        }
    }
}

/// When each part of the background work was first seen done.
#[derive(Clone, Copy, Debug, Default)]
struct Seen {
    /// The store reported background work (it is Persimmon).
    polled: bool,
    /// Its point index is in DRAM.
    dram: bool,
    rebuild_done: Option<Duration>,
    ordered_walk_done: Option<Duration>,
    point_index_ready: Option<Duration>,
}

/// Polls the store every [`POLL`], from the moment `slot` holds it (the
/// open returned), until its background work is done or `stop` is set;
/// sets `done` when the work is done (at once for engines without any).
fn poll(
    slot: &OnceLock<Box<dyn Store>>,
    start: &OnceLock<Instant>,
    stop: &AtomicBool,
    done: &AtomicBool,
) -> Seen {
    let mut seen = Seen::default();
    let store = loop {
        if let (Some(store), Some(_)) = (slot.get(), start.get()) {
            break store;
        }
        if stop.load(Ordering::Acquire) {
            return seen;
        }
        std::thread::sleep(POLL);
    };
    let start = *start.get().expect("set before the store");
    loop {
        let Some(b) = store.background() else {
            done.store(true, Ordering::Release);
            return seen;
        };
        // Seen at the latest now (the stats were read before).
        let now = start.elapsed();
        seen.polled = true;
        seen.dram = b.point_index_in_dram;
        if b.rebuild_done {
            seen.rebuild_done.get_or_insert(now);
        }
        if b.ordered_walk_done {
            seen.ordered_walk_done.get_or_insert(now);
        }
        if b.point_index_ready {
            seen.point_index_ready.get_or_insert(now);
        }
        if b.done() {
            done.store(true, Ordering::Release);
            return seen;
        }
        if stop.load(Ordering::Acquire) {
            return seen;
        }
        std::thread::sleep(POLL);
    }
}

/// What the reopen measured before the background work was done.
struct Early {
    open: Duration,
    first_get: Duration,
    first_range: Option<Duration>,
    first_insert: Option<Duration>,
    windows: Vec<Window>,
}

/// Reopens the store of `kind` in `config.dir` and measures it (see the
/// module documentation); closes it again before returning.
pub fn reopen(
    kind: EngineKind,
    config: &OpenConfig,
    keys: u64,
    key_size: usize,
    seed: u64,
) -> Result<Reopen> {
    let mut rng = SmallRng::seed_from_u64(seed);
    let targets = Targets {
        get: rng.gen_range(0..keys),
        range: rng.gen_range(0..keys),
        insert: rng.gen_range(keys..keys.saturating_mul(4).max(keys + 1)),
    };
    let mut reader = Reader {
        key: KeyBuf::new(key_size),
        rng,
        keys,
        out: Vec::new(),
        misses: 0,
    };
    // The poller starts before the open, so that it looks at the store as
    // soon as the open returns, however long the first requests take.
    let slot: OnceLock<Box<dyn Store>> = OnceLock::new();
    let start_at: OnceLock<Instant> = OnceLock::new();
    let stop = AtomicBool::new(false);
    let done = AtomicBool::new(false);
    let (early, seen) = std::thread::scope(|s| -> Result<(Early, Seen)> {
        let (slot, start_at, stop, done) = (&slot, &start_at, &stop, &done);
        let poller = std::thread::Builder::new()
            .name("bench-restart-poll".into())
            .spawn_scoped(s, move || poll(slot, start_at, stop, done))
            .map_err(|e| Error::io("spawn the stats poller", e))?;
        let ran = open_and_serve(kind, config, &mut reader, targets, slot, start_at, done);
        stop.store(true, Ordering::Release);
        let seen = poller
            .join()
            .unwrap_or_else(|p| std::panic::resume_unwind(p));
        ran.map(|early| (early, seen))
    })?;
    let start = *start_at.get().expect("set before the open");
    let store = &**slot.get().expect("opened");

    wait_for_background(kind, store)?;
    let mut steady = Vec::with_capacity(STEADY_WINDOWS);
    for _ in 0..STEADY_WINDOWS {
        steady.push(reader.window(store, start)?);
    }
    let steady_rate = median(&mut steady.iter().map(|w| w.rate).collect::<Vec<_>>());
    let all: Vec<Window> = early.windows.iter().chain(&steady).copied().collect();
    let full = full_speed(&all, steady_rate).expect("the median window reaches 90 % of itself");
    let dram_index_bytes = store.background().map_or(0, |b| b.dram_index_bytes);
    drop(slot);
    Ok(Reopen {
        open: early.open,
        first_get: early.first_get,
        first_range: early.first_range,
        first_insert: early.first_insert,
        rebuild_done: seen.rebuild_done,
        ordered_walk_done: seen.ordered_walk_done,
        // The PM point index is the persistent one: ready when the open
        // returns. The DRAM one is ready when the stats first said so.
        point_index_ready: match (seen.polled, seen.dram) {
            (true, false) => Some(early.open),
            _ => seen.point_index_ready,
        },
        full_speed: full,
        first_window_rate: early.windows.first().map_or(0.0, |w| w.rate),
        steady_rate,
        steady_ops: steady.iter().map(|w| w.ops).sum(),
        steady_secs: steady.iter().map(|w| w.secs).sum(),
        windows_before_ready: early.windows.len(),
        read_misses: reader.misses,
        dram_index_bytes,
    })
}

/// The key indices of the first GET and of the first range read, chosen
/// before the clock starts.
#[derive(Clone, Copy)]
struct Targets {
    get: u64,
    range: u64,
    /// A key index past the loaded ones: the first insert's new key.
    insert: u64,
}

/// Starts the clock, opens the store (into `slot`, where the poller finds
/// it), serves the first GET and range read, then windows of GETs until
/// the poller says the background work is `done` (or [`MAX_BACKGROUND`]
/// passed).
fn open_and_serve(
    kind: EngineKind,
    config: &OpenConfig,
    reader: &mut Reader,
    targets: Targets,
    slot: &OnceLock<Box<dyn Store>>,
    start_at: &OnceLock<Instant>,
    done: &AtomicBool,
) -> Result<Early> {
    let start = *start_at.get_or_init(Instant::now);
    let store = engines::open(kind, config)?;
    let open = start.elapsed();
    let store = &**slot.get_or_init(|| store);
    let first_get = reader.get_one(store, targets.get)?;
    let first_get = first_get.duration_since(start);
    let first_range = if kind.has_ordered_reads() {
        let n = store.scan(reader.key.key(targets.range), RANGE_PAIRS, &mut reader.out)?;
        if n == 0 {
            reader.misses += 1;
        }
        Some(start.elapsed())
    } else {
        None
    };
    let first_insert = if kind.has_ordered_reads() {
        let value = vec![0x5a; 64];
        store.write(reader.key.key(targets.insert), &value)?;
        Some(start.elapsed())
    } else {
        None
    };
    let mut windows = Vec::new();
    loop {
        windows.push(reader.window(store, start)?);
        if done.load(Ordering::Acquire) || start.elapsed() > MAX_BACKGROUND {
            break;
        }
    }
    Ok(Early {
        open,
        first_get,
        first_range,
        first_insert,
        windows,
    })
}

/// Waits for the store's background work after open, which the stats must
/// then show done.
fn wait_for_background(kind: EngineKind, store: &dyn Store) -> Result<()> {
    store.wait_for_background();
    match store.background() {
        Some(b) if !b.done() => Err(Error::engine(
            kind.name(),
            format!(
                "the wait for the background work after open returned, but the stats say \
                 it is not done: {b:?}"
            ),
        )),
        _ => Ok(()),
    }
}

fn ns(d: Duration) -> u64 {
    u64::try_from(d.as_nanos()).unwrap_or(u64::MAX).max(1)
}

/// The median over `reopens` of the time `f` picks, in ns (0 when no
/// reopen has it).
fn median_ns(reopens: &[Reopen], f: impl Fn(&Reopen) -> Option<Duration>) -> u64 {
    let mut v: Vec<f64> = reopens
        .iter()
        .filter_map(&f)
        .map(|d| ns(d) as f64)
        .collect();
    median(&mut v).round() as u64
}

/// The record of one engine: medians over its reopens.
pub fn record(
    kind: EngineKind,
    reopens: &[Reopen],
    args: &BenchArgs,
    durability: &str,
    load_secs: f64,
) -> Record {
    let med = |f: fn(&Reopen) -> f64| median(&mut reopens.iter().map(f).collect::<Vec<_>>());
    let ops: u64 = reopens.iter().map(|r| r.steady_ops).sum();
    Record {
        engine: kind.name().into(),
        workload: WorkloadSpec::Restart.to_string(),
        distribution: "uniform".into(),
        threads: 1,
        value_size: args.value_size,
        key_size: args.key_size,
        keys: args.keys,
        get_percent: 100.0,
        ops,
        duration_secs: reopens.iter().map(|r| r.steady_secs).sum(),
        ops_per_sec: med(|r| r.steady_rate),
        read_misses: reopens.iter().map(|r| r.read_misses).sum(),
        durability: durability.to_string(),
        cores: cores(),
        load_secs,
        seed: args.seed,
        restarts: reopens.len() as u32,
        open_ns: median_ns(reopens, |r| Some(r.open)),
        first_get_ns: median_ns(reopens, |r| Some(r.first_get)),
        first_range_ns: median_ns(reopens, |r| r.first_range),
        first_insert_ns: median_ns(reopens, |r| r.first_insert),
        rebuild_done_ns: median_ns(reopens, |r| r.rebuild_done),
        ordered_walk_done_ns: if kind.has_ordered_reads() && kind.is_persimmon() {
            median_ns(reopens, |r| r.ordered_walk_done)
        } else {
            0
        },
        point_index_ready_ns: median_ns(reopens, |r| r.point_index_ready),
        full_speed_ns: median_ns(reopens, |r| Some(r.full_speed)),
        first_window_ops_per_sec: med(|r| r.first_window_rate),
        dram_index_bytes: reopens
            .iter()
            .map(|r| r.dram_index_bytes)
            .max()
            .unwrap_or(0),
        ..Record::default()
    }
}

const ROW_HEADER: &str = "engine                reopen       open  first GET  first range  first insert    rebuild  walk done  index ready  full speed  first 50ms Mops/s  steady Mops/s\n";

/// One stdout row: `reopen` is its number, or `median`.
fn row(engine: &str, reopen: &str, r: &Record) -> String {
    let [open, first_get, first_range, first_insert, rebuild, walk, index_ready, full_speed] =
        restart_times(r);
    format!(
        "{engine:<21} {reopen:>6} {open:>10} {first_get:>10} {first_range:>12} {first_insert:>13} {rebuild:>10} \
         {walk:>10} {index_ready:>12} {full_speed:>11} {:>18} {:>14}{}\n",
        mops(r.first_window_ops_per_sec),
        mops(r.ops_per_sec),
        if r.read_misses > 0 {
            format!("  ({} reads missed)", r.read_misses)
        } else {
            String::new()
        }
    )
}

/// Runs `--workload restart` (alone), printing to `out`.
pub fn run(args: &BenchArgs, sizes: PoolSizes, out: &mut dyn Write) -> Result<()> {
    if args.workload.0.len() != 1 {
        return Err(Error::usage(
            "--workload restart runs alone (it reopens loaded stores instead of timing a mix); \
             run the other workloads in a separate invocation",
        ));
    }
    let kinds: &[EngineKind] = &args.engines.0;
    for k in kinds {
        k.check_built()?;
    }
    let deadlines = setup::deadlines(args, kinds)?;
    let cache = match args.cache_bytes.as_ref().map(|l| &l.0[..]) {
        None => None,
        Some([one]) => Some(*one),
        Some(_) => {
            return Err(Error::usage(
                "--workload restart takes one --cache-bytes size, not a list",
            ))
        }
    };
    let dirs = run_dirs(args)?;
    let config = |d: StoreDirs| open_config(args, sizes, d, args.value_size, cores() + 2, cache);
    let durability = preflight(kinds, &dirs, config)?;
    write_out(out, &header(args, kinds, &durability, &dirs.filesystems))?;

    let mut records: Vec<Record> = Vec::new();
    for (ki, (&kind, durability)) in kinds.iter().zip(&durability).enumerate() {
        let rec = run_engine(args, (kind, durability), deadlines, &config, &dirs, out)?;
        records.push(rec);
        write_json_arg(args, &records)?;
        if ki + 1 < kinds.len() {
            // Let the closed store's memory go before the next load.
            std::thread::sleep(Duration::from_millis(10));
        }
    }

    write_plot_and_markdown(args, &records)?;
    write_out(
        out,
        &format!(
            "\nRestart: medians over {REOPENS} reopens, times from the start of the open \
             (full speed: the first {} ms window at >= {:.0} % of the steady GET rate):\n\n{}",
            WINDOW.as_millis(),
            FULL_SPEED * 100.0,
            report::restart_table(&records)
        ),
    )?;
    Ok(())
}

/// The lines before the first row: what is measured, each engine's
/// durability, the column names.
fn header(args: &BenchArgs, kinds: &[EngineKind], durability: &[String], fs: &str) -> String {
    let mut header = format!(
        "bench: restart, {} keys of {} B with {} B values; {REOPENS} reopens per engine, each \
             timed from the start of its open: first GET, first range read of {RANGE_PAIRS} pairs, \
             background work after open, and 1 thread's GETs in {} ms windows until one reaches \
             {:.0} % of the steady rate (median of {STEADY_WINDOWS} windows after the background \
             work); seed {}\n\x20      stores in {} ({fs}); {} cores\n",
        args.keys,
        args.key_size,
        args.value_size,
        WINDOW.as_millis(),
        FULL_SPEED * 100.0,
        args.seed,
        args.pool_dir.display(),
        cores(),
    );
    header.push_str(&durability_lines(kinds, durability));
    header.push('\n');
    header.push_str(ROW_HEADER);
    header
}

/// Loads a fresh store of `kind`, closes it, then reopens and measures it
/// [`REOPENS`] times, printing a row per reopen and the medians; returns
/// the record of the medians (an error when a read missed).
fn run_engine(
    args: &BenchArgs,
    (kind, durability): (EngineKind, &str),
    deadlines: Deadlines,
    config: &dyn Fn(StoreDirs) -> OpenConfig,
    dirs: &RunDirs,
    out: &mut dyn Write,
) -> Result<Record> {
    let store_dirs = dirs.fresh(kind, &format!("{}-restart", kind.name()))?;
    let config = config(store_dirs.clone());
    let store = engines::open(kind, &config)?;
    let load_time = setup::load(
        &*store,
        args,
        args.value_size,
        deadlines,
        format!("load {} (restart)", kind.name()),
    )?;
    drop(store);

    let mut reopens = Vec::with_capacity(REOPENS);
    for i in 0..REOPENS {
        let seed = scramble(args.seed ^ scramble(0x7265_7374 + i as u64));
        let r = reopen(kind, &config, args.keys, args.key_size, seed)?;
        let one = record(
            kind,
            std::slice::from_ref(&r),
            args,
            durability,
            load_time.as_secs_f64(),
        );
        write_out(out, &row(kind.name(), &(i + 1).to_string(), &one))?;
        reopens.push(r);
    }
    let rec = record(kind, &reopens, args, durability, load_time.as_secs_f64());
    write_out(out, &row(kind.name(), "median", &rec))?;
    if rec.read_misses > 0 {
        return Err(Error::engine(
            kind.name(),
            format!(
                "{} GETs or range reads of existing keys after a reopen found nothing",
                rec.read_misses
            ),
        ));
    }
    if !args.keep_stores {
        store_dirs.remove();
    }
    Ok(rec)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn w(end_ms: u64, rate: f64) -> Window {
        Window {
            end: Duration::from_millis(end_ms),
            rate,
            ops: 0,
            secs: 0.05,
        }
    }

    #[test]
    fn medians() {
        assert_eq!(median(&mut []), 0.0);
        assert_eq!(median(&mut [3.0]), 3.0);
        assert_eq!(median(&mut [5.0, 1.0, 3.0]), 3.0);
        assert_eq!(median(&mut [4.0, 1.0, 3.0, 2.0]), 2.5);
    }

    #[test]
    fn full_speed_is_the_first_window_at_ninety_percent() {
        let windows = [
            w(50, 1.0),
            w(100, 5.0),
            w(150, 9.5),
            w(200, 8.0),
            w(250, 10.0),
        ];
        assert_eq!(full_speed(&windows, 10.0), Some(Duration::from_millis(150)));
        assert_eq!(full_speed(&windows, 1.0), Some(Duration::from_millis(50)));
        assert_eq!(full_speed(&windows, 20.0), None);
        // Exactly 90 % counts.
        assert_eq!(
            full_speed(&[w(50, 8.9), w(100, 9.0)], 10.0),
            Some(Duration::from_millis(100))
        );
    }

    #[test]
    fn a_record_holds_the_medians_and_dashes_what_is_missing() {
        let r = |open_ms: u64, ready: Option<u64>, rate: f64| Reopen {
            open: Duration::from_millis(open_ms),
            first_get: Duration::from_millis(open_ms + 1),
            point_index_ready: ready.map(Duration::from_millis),
            full_speed: Duration::from_millis(100),
            steady_rate: rate,
            first_window_rate: rate / 2.0,
            steady_ops: 10,
            steady_secs: 0.5,
            ..Reopen::default()
        };
        let reopens = [
            r(3, Some(900), 2e6),
            r(1, Some(700), 1e6),
            r(2, Some(800), 3e6),
        ];
        let args = {
            use clap::Parser;
            #[derive(Parser)]
            struct Cli {
                #[command(flatten)]
                bench: BenchArgs,
            }
            Cli::try_parse_from(["bench", "--workload", "restart", "--keys", "1000"])
                .unwrap()
                .bench
        };
        let rec = record(EngineKind::PersimmonDram, &reopens, &args, "d", 0.5);
        assert_eq!(rec.workload, "restart");
        assert_eq!(rec.restarts, 3);
        assert_eq!(rec.open_ns, 2_000_000);
        assert_eq!(rec.first_get_ns, 3_000_000);
        assert_eq!(rec.point_index_ready_ns, 800_000_000);
        assert_eq!(rec.first_range_ns, 0, "none measured");
        assert_eq!(rec.ops_per_sec, 2e6);
        assert_eq!(rec.first_window_ops_per_sec, 1e6);
        assert_eq!((rec.ops, rec.duration_secs), (30, 1.5));
        let line = row("persimmon-dram", "median", &rec);
        assert!(
            line.contains("2.0 ms") && line.contains("800.0 ms"),
            "{line}"
        );
        assert!(line.contains('–'), "{line}");
    }
}
