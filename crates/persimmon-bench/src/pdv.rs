//! `--workload pdv`: the persistent dancing variable microbenchmark —
//! persisted updates per second of one variable per thread.
//!
//! Variants, in this order: `single-word` (one 8-byte word stored, flushed
//! and fenced in place, [`persimmon::pdv::PersistedWord`]), then
//! `pdv-N-sparse` and `pdv-N-dense` for N = 2, 4, 8, 16, 32, 64
//! ([`persimmon::pdv::Pdv`] in a [`PdvFile`]). Each variant gets one fresh
//! file under `--pool-dir`; for each thread count T, threads 0..T each
//! recover variable t from the file (so a later thread count continues from
//! the values an earlier one left) and persist a new value in a tight loop:
//! warm-up, then the timed phase. After the phase every variable is
//! recovered again and must hold the last value its thread persisted.
//!
//! Then, with `--pdv-engine-put`, the engine's PUT with and without a hot
//! persisted word: each thread overwrites keys of its own (key ≡ thread mod
//! threads) in a Persimmon pool (`--keys`, 64-byte values, at most 100 000
//! keys) and, in `persimmon-put+single-word` and
//! `persimmon-put+pdv-8-sparse`, persists a per-thread operation counter after
//! every put (what a design with a persisted lane counter would pay; the
//! engine itself persists no such word — see `docs/design.md`);
//! `persimmon-put` is the engine alone.
//!
//! Placement: `single-word` puts thread t's word alone on line t; sparse
//! puts thread t's N shadows on N lines of its own; dense makes the threads'
//! variables neighbours in one group of 8, so threads write the *same* N
//! lines (the paper's dense pool, with its false sharing).
//!
//! Invariants:
//! - The timed loop contains only updates: the clock is read once per batch
//!   of [`BATCH`] updates, never per update (a clock read costs about as
//!   much as an update), so no latency percentiles are measured; `mean_ns`
//!   is the time per update of one thread.
//! - PM counters are the worker threads' own deltas over the timed phase.

use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use persimmon::pdv::{PdvFile, PdvLayout, MAX_VALUE};
use persimmon::pmem::thread_counters;
use persimmon::PmemCounters;

use crate::args::BenchArgs;
use crate::error::{Error, Result};
use crate::output::{write_json_arg, write_out, write_plot_and_markdown};
use crate::record::{per, Record, SINGLE_WORD};
use crate::report::{self, mops};
use crate::runner::{self, Stop};
use crate::setup::{cores, phase_bar, phase_length, run_dir, threads_text};
use crate::workload;

/// Shadow counts of the PDV variants.
pub const SHADOW_COUNTS: [usize; 6] = [2, 4, 8, 16, 32, 64];
/// Updates between two reads of the clock.
pub const BATCH: u64 = 256;
/// How often the coordinating thread reports progress.
const TICK: Duration = Duration::from_millis(50);

/// One measured variable kind.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Variant {
    /// One word, updated in place.
    SingleWord,
    /// A PDV in this layout.
    Pdv(PdvLayout),
    /// An engine put of an existing key, then (if any) the hot variable.
    EnginePut(Option<Hot>),
}

/// The hot variable persisted after each engine put.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Hot {
    Word,
    Pdv(PdvLayout),
}

/// Shadows of the PDV in the engine-put variant.
pub const ENGINE_PUT_SHADOWS: usize = 8;
/// Most keys the engine-put variants load.
const ENGINE_PUT_KEYS: u64 = 100_000;

impl Variant {
    /// Every variant, in the order they run and are reported.
    pub fn all() -> Vec<Variant> {
        let mut out = vec![Variant::SingleWord];
        for n in SHADOW_COUNTS {
            for layout in [PdvLayout::sparse(n), PdvLayout::dense(n)] {
                out.push(Variant::Pdv(layout.expect("shadow counts are in range")));
            }
        }
        let sparse = PdvLayout::sparse(ENGINE_PUT_SHADOWS).expect("shadow count in range");
        out.push(Variant::EnginePut(None));
        out.push(Variant::EnginePut(Some(Hot::Word)));
        out.push(Variant::EnginePut(Some(Hot::Pdv(sparse))));
        out
    }

    /// `single-word`, `pdv-N-sparse`, `pdv-N-dense`, `persimmon-put`,
    /// `persimmon-put+single-word` or `persimmon-put+pdv-N-sparse` (the
    /// `engine` field).
    pub fn name(&self) -> String {
        match self {
            Variant::SingleWord => SINGLE_WORD.to_string(),
            Variant::Pdv(layout) => layout.name(),
            Variant::EnginePut(None) => "persimmon-put".into(),
            Variant::EnginePut(Some(Hot::Word)) => format!("persimmon-put+{SINGLE_WORD}"),
            Variant::EnginePut(Some(Hot::Pdv(layout))) => {
                format!("persimmon-put+{}", layout.name())
            }
        }
    }

    /// Bytes of a file holding the variables of `threads` threads.
    fn file_bytes(&self, threads: u64) -> u64 {
        match self {
            Variant::SingleWord
            | Variant::EnginePut(None)
            | Variant::EnginePut(Some(Hot::Word)) => threads * 64,
            Variant::Pdv(layout) | Variant::EnginePut(Some(Hot::Pdv(layout))) => {
                layout.bytes_for(threads)
            }
        }
    }
}

/// What one worker measured.
struct Outcome {
    ops: u64,
    start: Instant,
    end: Instant,
    pm: PmemCounters,
    last_value: u64,
}

/// When the timed phase starts and (timed runs) ends.
#[derive(Clone, Copy, Debug)]
struct Window {
    t0: Instant,
    t1: Option<Instant>,
}

/// The value after `value`: distinct for 2^62 updates in a row.
#[inline]
fn next_value(value: u64) -> u64 {
    (value + 1) & MAX_VALUE
}

/// Warm-up until `window.t0`, then the timed loop until `window.t1` or
/// `quota` updates, persisting with `persist`.
fn drive<F: FnMut(u64) -> persimmon::Result<()>>(
    mut persist: F,
    mut value: u64,
    window: Window,
    quota: Option<u64>,
    abort: &AtomicBool,
) -> persimmon::Result<Outcome> {
    while Instant::now() < window.t0 && !abort.load(Ordering::Relaxed) {
        for _ in 0..BATCH {
            value = next_value(value);
            persist(value)?;
        }
    }
    let pm_start = thread_counters();
    let start = Instant::now();
    let mut ops = 0u64;
    loop {
        let n = quota.map_or(BATCH, |q| (q - ops).min(BATCH));
        if n == 0 {
            break;
        }
        for _ in 0..n {
            value = next_value(value);
            persist(value)?;
        }
        ops += n;
        if window.t1.is_some_and(|t1| Instant::now() >= t1) || abort.load(Ordering::Relaxed) {
            break;
        }
    }
    let end = Instant::now();
    Ok(Outcome {
        ops,
        start,
        end,
        pm: thread_counters().since(&pm_start),
        last_value: value,
    })
}

/// State shared by the workers of a phase.
struct Shared<'a> {
    file: &'a PdvFile,
    /// The pool the engine-put variants write, and its key count.
    db: Option<(&'a persimmon::Db, u64)>,
    variant: Variant,
    /// Worker threads of the phase.
    threads: u64,
    /// Workers that attached their variable (or failed to).
    ready: AtomicUsize,
    go: AtomicBool,
    abort: AtomicBool,
    window: OnceLock<Window>,
}

impl Shared<'_> {
    /// Counts this worker in and waits for the start; None when the phase
    /// was aborted.
    fn start(&self) -> Option<Window> {
        self.ready.fetch_add(1, Ordering::Release);
        while !self.go.load(Ordering::Acquire) {
            if self.abort.load(Ordering::Relaxed) {
                return None;
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        Some(*self.window.get().expect("window set before go"))
    }

    /// One worker: attaches (recovers) variable `thread`, waits for the
    /// start, runs.
    fn worker(&self, thread: u64, quota: Option<u64>) -> persimmon::Result<Option<Outcome>> {
        let abort = &self.abort;
        let outcome = match self.variant {
            Variant::SingleWord => self.file.word(thread).and_then(|mut word| {
                let Some(window) = self.start() else {
                    return Ok(None);
                };
                let first = word.get();
                drive(
                    |v| {
                        word.persist(v);
                        Ok(())
                    },
                    first,
                    window,
                    quota,
                    abort,
                )
                .map(Some)
            }),
            Variant::Pdv(layout) => self.file.pdv(layout, thread).and_then(|mut pdv| {
                let Some(window) = self.start() else {
                    return Ok(None);
                };
                let first = pdv.get();
                drive(|v| pdv.persist(v), first, window, quota, abort).map(Some)
            }),
            Variant::EnginePut(hot) => {
                let (db, keys) = self.db.expect("engine-put variants get a pool");
                let value = [0x5au8; 64];
                // Thread t of T overwrites only keys ≡ t (mod T), so no two
                // threads write one key (no write elimination skews the
                // per-put counts): value v picks key ((v * 7919) mod (keys / T)) * T + t.
                let threads = self.threads;
                let per_thread = (keys / threads).max(1);
                let key = move |v: u64| {
                    ((v.wrapping_mul(7919) % per_thread) * threads + thread).to_be_bytes()
                };
                match hot {
                    None => match self.start() {
                        None => Ok(None),
                        Some(window) => {
                            drive(|v| db.put(&key(v), &value), 0, window, quota, abort).map(Some)
                        }
                    },
                    Some(Hot::Word) => self.file.word(thread).and_then(|mut word| {
                        let Some(window) = self.start() else {
                            return Ok(None);
                        };
                        let first = word.get();
                        let put = |v: u64| {
                            db.put(&key(v), &value)?;
                            word.persist(v);
                            Ok(())
                        };
                        drive(put, first, window, quota, abort).map(Some)
                    }),
                    Some(Hot::Pdv(layout)) => self.file.pdv(layout, thread).and_then(|mut pdv| {
                        let Some(window) = self.start() else {
                            return Ok(None);
                        };
                        let first = pdv.get();
                        let put = |v: u64| {
                            db.put(&key(v), &value)?;
                            pdv.persist(v)
                        };
                        drive(put, first, window, quota, abort).map(Some)
                    }),
                }
            }
        };
        if outcome.is_err() {
            self.abort.store(true, Ordering::Relaxed);
            // Count in, so the coordinator does not wait for this worker.
            self.ready.fetch_add(1, Ordering::Release);
        }
        outcome
    }
}

/// What a phase measured, summed over its threads.
struct PhaseResult {
    ops: u64,
    elapsed: Duration,
    /// Mean over the threads of each one's time per update.
    mean_ns: f64,
    pm: PmemCounters,
}

fn run_phase(
    file: &PdvFile,
    db: Option<(&persimmon::Db, u64)>,
    variant: Variant,
    threads: usize,
    warmup: Duration,
    stop: Stop,
    tick: &mut dyn FnMut(Duration),
) -> Result<PhaseResult> {
    let name = variant.name();
    let shared = Shared {
        file,
        db,
        variant,
        threads: threads as u64,
        ready: AtomicUsize::new(0),
        go: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        window: OnceLock::new(),
    };
    let outcomes = std::thread::scope(|s| -> Result<Vec<Outcome>> {
        let shared = &shared;
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let quota = runner::quota(stop, threads, t);
            let spawned = std::thread::Builder::new()
                .name(format!("bench-pdv-{t}"))
                .spawn_scoped(s, move || shared.worker(t as u64, quota));
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    shared.abort.store(true, Ordering::Relaxed);
                    return Err(Error::io(
                        format!("spawn worker thread {t} of {threads}"),
                        e,
                    ));
                }
            }
        }
        while shared.ready.load(Ordering::Acquire) < threads
            && !shared.abort.load(Ordering::Relaxed)
        {
            std::thread::sleep(Duration::from_micros(200));
        }
        let begin = Instant::now();
        let t1 = match stop {
            Stop::After(d) => Some(begin + warmup + d),
            Stop::Ops(_) => None,
        };
        let window = Window {
            t0: begin + warmup,
            t1,
        };
        shared.window.set(window).expect("window set once");
        shared.go.store(true, Ordering::Release);
        while !handles.iter().all(|h| h.is_finished()) {
            tick(begin.elapsed());
            std::thread::sleep(TICK);
        }
        let mut outcomes = Vec::with_capacity(threads);
        let mut first_error = None;
        for h in handles {
            match h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)) {
                Ok(Some(o)) => outcomes.push(o),
                Ok(None) => {}
                Err(e) => {
                    if first_error.is_none() {
                        first_error = Some(e);
                    }
                }
            }
        }
        match first_error {
            Some(e) => Err(Error::engine(&name, e)),
            None => Ok(outcomes),
        }
    })?;
    let result = summarize(&outcomes, threads);
    let last_values: Vec<u64> = outcomes.iter().map(|o| o.last_value).collect();
    verify(file, variant, &last_values)?;
    Ok(result)
}

/// The phase's totals over its workers' outcomes: the elapsed time runs
/// from the first start to the last end.
fn summarize(outcomes: &[Outcome], threads: usize) -> PhaseResult {
    let mut result = PhaseResult {
        ops: 0,
        elapsed: Duration::ZERO,
        mean_ns: 0.0,
        pm: PmemCounters::default(),
    };
    let (mut first_start, mut last_end) = (None::<Instant>, None::<Instant>);
    for o in outcomes {
        result.ops += o.ops;
        result.pm.flushes += o.pm.flushes;
        result.pm.fences += o.pm.fences;
        result.pm.bytes_written += o.pm.bytes_written;
        result.pm.nt_bytes_written += o.pm.nt_bytes_written;
        if o.ops > 0 {
            let span = o.end - o.start;
            result.mean_ns += span.as_nanos() as f64 / o.ops as f64 / threads as f64;
        }
        first_start = Some(first_start.map_or(o.start, |s| s.min(o.start)));
        last_end = Some(last_end.map_or(o.end, |e| e.max(o.end)));
    }
    if let (Some(s), Some(e)) = (first_start, last_end) {
        result.elapsed = e - s;
    }
    result
}

/// Recovers every variable of the phase again: each must hold the value
/// its thread persisted last.
fn verify(file: &PdvFile, variant: Variant, last_values: &[u64]) -> Result<()> {
    let name = variant.name();
    for (t, &want) in last_values.iter().enumerate() {
        let got = match variant {
            Variant::SingleWord | Variant::EnginePut(Some(Hot::Word)) => {
                file.word(t as u64).map(|w| w.get())
            }
            Variant::Pdv(layout) | Variant::EnginePut(Some(Hot::Pdv(layout))) => {
                file.pdv(layout, t as u64).map(|p| p.get())
            }
            Variant::EnginePut(None) => return Ok(()),
        }
        .map_err(|e| Error::engine(&name, e))?;
        if got != want {
            return Err(Error::engine(
                &name,
                format!("variable {t} recovered {got}, but its thread persisted {want} last"),
            ));
        }
    }
    Ok(())
}

const ROW_HEADER: &str =
    "variant                     threads     Mops/s     ns/op    ÷ reference  flush/op  fence/op  PM B/op\n";

/// One stdout row; `reference` is the record its ratio divides by.
fn row(r: &Record, reference: Option<&Record>) -> String {
    format!(
        "{:<27} {:>7} {:>10} {:>9.1} {:>14} {:>9.2} {:>9.2} {:>8.1}\n",
        r.engine,
        r.threads,
        mops(r.ops_per_sec),
        r.mean_ns,
        report::ratio(Some(r), reference),
        r.flushes_per_op,
        r.fences_per_op,
        r.pm_bytes_per_op
    )
}

/// What every variant of a run shares.
struct PdvRun<'a> {
    args: &'a BenchArgs,
    run_dir: PathBuf,
    /// The durability settings every variant gets, as printed.
    durability: String,
    stop: Stop,
    warmup: Duration,
    cores: usize,
    /// The largest thread count: the files hold this many variables.
    max_threads: u64,
}

/// Runs the microbenchmark (`--workload pdv` alone), printing to `out`.
pub fn run(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    if args.workload.0.len() != 1 {
        return Err(Error::usage(
            "--workload pdv runs alone (it measures single variables, not the engines); \
             run the other workloads in a separate invocation",
        ));
    }
    let max_threads = args.threads.0.iter().copied().max().unwrap_or(1) as u64;
    let cores = cores();
    let (stop, warmup) = phase_length(args);
    let (run_dir, _scratch, fs) = run_dir(args)?;
    let durability = preflight(args, &run_dir, &fs)?;
    let run = PdvRun {
        args,
        run_dir,
        durability,
        stop,
        warmup,
        cores,
        max_threads,
    };
    write_out(out, &run.header())?;

    let mut records: Vec<Record> = Vec::new();
    let variants = Variant::all()
        .into_iter()
        .filter(|v| args.pdv_engine_put || !matches!(v, Variant::EnginePut(_)));
    for variant in variants {
        run.run_variant(variant, &mut records, out)?;
    }

    write_plot_and_markdown(args, &records)?;
    write_out(
        out,
        &format!(
            "\nPersisted updates per second of one variable per thread, and each variant ÷ its reference \
             ({SINGLE_WORD}; the persimmon-put rows ÷ persimmon-put):\n\n{}",
            report::pdv_table(&records)
        ),
    )?;
    Ok(())
}

/// Creates a first small file to state the durability every variant gets.
fn preflight(args: &BenchArgs, run_dir: &Path, fs: &str) -> Result<String> {
    let path = run_dir.join("preflight.pdv");
    let file = PdvFile::create(&path, 4096).map_err(|e| Error::engine("pdv", e))?;
    let d = format!(
        "{} durability; one 8-byte store, {} and sfence per update; files in {} ({fs})",
        file.durability().name(),
        file.flush_instruction(),
        args.pool_dir.display()
    );
    drop(file);
    let _ = std::fs::remove_file(&path);
    Ok(d)
}

impl PdvRun<'_> {
    /// The lines before the first row.
    fn header(&self) -> String {
        format!(
            "bench: pdv, persisted updates of one variable per thread; threads {}; {} per \
             point after {:.1} s warm-up\n\x20      {}; {} cores\n\n{ROW_HEADER}",
            threads_text(&self.args.threads.0),
            match self.stop {
                Stop::Ops(n) => format!("{n} updates"),
                Stop::After(d) => format!("{:.1} s", d.as_secs_f64()),
            },
            self.warmup.as_secs_f64(),
            self.durability,
            self.cores,
        )
    }

    /// Runs `variant` in a fresh file for each thread count, printing a row
    /// per result; removes its files afterwards (unless `--keep-stores`).
    fn run_variant(
        &self,
        variant: Variant,
        records: &mut Vec<Record>,
        out: &mut dyn Write,
    ) -> Result<()> {
        let args = self.args;
        let name = variant.name();
        let path = self.run_dir.join(format!("{name}.pdv"));
        let pool_path = self.run_dir.join(format!("{name}.pool"));
        let file = PdvFile::create(&path, variant.file_bytes(self.max_threads))
            .map_err(|e| Error::engine(&name, e))?;
        // The engine-put variants write a pool loaded with existing keys.
        let pool_keys = args.keys.clamp(1, ENGINE_PUT_KEYS);
        let db = match variant {
            Variant::EnginePut(_) => Some(loaded_pool(&pool_path, pool_keys, &name)?),
            _ => None,
        };
        for &threads in &args.threads.0 {
            let bar = phase_bar(self.stop, self.warmup, format!("{name} {threads} thr"));
            let result = run_phase(
                &file,
                db.as_ref().map(|d| (d, pool_keys)),
                variant,
                threads,
                self.warmup,
                self.stop,
                &mut |t| bar.set_position(t.as_millis() as u64),
            )?;
            bar.finish_and_clear();
            let record = self.record(&name, threads, &result, db.is_some().then_some(pool_keys));
            let reference = match variant {
                Variant::EnginePut(_) => "persimmon-put",
                _ => SINGLE_WORD,
            };
            let reference = records
                .iter()
                .find(|r| r.engine == reference && r.threads == threads);
            write_out(out, &row(&record, reference.or(Some(&record))))?;
            records.push(record);
            write_json_arg(args, records)?;
        }
        drop(db);
        drop(file);
        if !args.keep_stores {
            let _ = std::fs::remove_file(&path);
            let _ = std::fs::remove_file(&pool_path);
        }
        Ok(())
    }

    /// The record of one phase; `pool_keys` is the pool's key count for
    /// the engine-put variants.
    fn record(
        &self,
        name: &str,
        threads: usize,
        result: &PhaseResult,
        pool_keys: Option<u64>,
    ) -> Record {
        let secs = result.elapsed.as_secs_f64();
        let per_op = |n: u64| per(n, result.ops);
        let engine_put = pool_keys.is_some();
        Record {
            engine: name.to_string(),
            workload: workload::WorkloadSpec::Pdv.to_string(),
            distribution: "none".into(),
            threads,
            value_size: if engine_put { 64 } else { 8 },
            key_size: if engine_put { 8 } else { 0 },
            keys: pool_keys.unwrap_or(0),
            get_percent: 0.0,
            ops: result.ops,
            duration_secs: secs,
            ops_per_sec: if secs > 0.0 {
                result.ops as f64 / secs
            } else {
                0.0
            },
            mean_ns: result.mean_ns,
            pm_bytes_per_op: per_op(result.pm.bytes_written),
            pm_nt_bytes_per_op: per_op(result.pm.nt_bytes_written),
            flushes_per_op: per_op(result.pm.flushes),
            fences_per_op: per_op(result.pm.fences),
            durability: self.durability.clone(),
            cores: self.cores,
            seed: self.args.seed,
            ..Record::default()
        }
    }
}

/// A Persimmon pool at `path` holding keys `0..keys` (big-endian) with
/// 64-byte values, for the engine-put variants.
fn loaded_pool(path: &Path, keys: u64, name: &str) -> Result<persimmon::Db> {
    let db = persimmon::Db::open(path, persimmon::Options::default())
        .map_err(|e| Error::engine(name, e))?;
    for k in 0..keys {
        db.put(&k.to_be_bytes(), &[0u8; 64])
            .map_err(|e| Error::engine(name, e))?;
    }
    Ok(db)
}
