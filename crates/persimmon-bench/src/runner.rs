//! The load phase and the timed phase of one engine.
//!
//! Timed phase: `threads` workers start together; each runs the workload
//! until the warm-up deadline `t0` without recording, snapshots its
//! persistent-memory counters, then times every operation individually into
//! its own HDR histogram until the end `t1` (or its share of `--ops`). The
//! histograms are merged afterwards; no worker touches shared state per
//! operation except the engine (and, for inserts, the insert counter).
//!
//! Invariants:
//! - An operation is counted iff it *starts* inside `[t0, t1)`; throughput is
//!   counted operations over `max(t1, end of the last counted op) - t0`, so a
//!   worker descheduled across `t1` (more threads than cores) lengthens the
//!   window instead of losing operations.
//! - The key, the operation and a scan's length are chosen, and a batch's
//!   pairs assembled, before the clock starts; only the engine call (and,
//!   for an insert, taking its index) is timed. A batch (`batch:N`) is N
//!   consecutive key indices from the chosen one, so N distinct keys when
//!   at least N are loaded, written as one atomic batch or, in the phase
//!   measuring single puts, as N puts in a row. A batched read
//!   (`multiget:N`) is N key indices drawn one by one (so keys may repeat),
//!   assembled before the clock starts too; the timed call gets them as one
//!   slice of keys. It counts N items (keys read) and, as read misses, the
//!   keys it did not find.
//! - Every write of key `i` carries the deadline [`Deadlines::of`] gives
//!   it, at load and after, so the keys with deadlines stay the same.
//! - A scan starts at an acknowledged key, so it reads at least one pair; a
//!   scan that reads none counts as a read miss.
//! - Per-thread seeds depend on the run seed, the workload point and the
//!   thread, never on the engine: every engine sees the same operations.
//! - The process's storage I/O and the data device's requests
//!   ([`DiskCounters`]) are read by the coordinating thread at the end of
//!   the warm-up (within a scheduler tick of `t0`) and after the last
//!   worker ended: the delta is the timed phase's, background threads
//!   included.

use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;
use std::time::{Duration, Instant};

use hdrhistogram::Histogram;
use persimmon::pmem::thread_counters;
use persimmon::PmemCounters;
use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::disk::{Device, DiskCounters};
use crate::distribution::{Distribution, InsertCounter, KeyChooser, Zipfian};
use crate::engines::{Batch, Store, TierFigures};
use crate::error::{Error, Result};
use crate::keys::{fill_value, scramble, stamp_value, Deadlines, KeyBuf};
use crate::workload::{Mix, Op, ScanLength};

/// Largest latency the histograms hold (longer ones are recorded as this).
const MAX_LATENCY_NS: u64 = 100_000_000_000;
/// Pairs per load batch.
const LOAD_BATCH: u64 = 1024;
/// How often the coordinating thread reports progress.
const TICK: Duration = Duration::from_millis(100);

/// When a timed phase ends.
#[derive(Clone, Copy, Debug)]
pub enum Stop {
    /// After this long.
    After(Duration),
    /// After this many operations in all (split over the threads).
    Ops(u64),
}

/// One timed phase.
#[derive(Clone, Debug)]
pub struct Phase<'a> {
    pub mix: Mix,
    /// Pairs per scan (used when the mix scans).
    pub scan_length: ScanLength,
    pub distribution: Distribution,
    /// ζ computed once for the loaded key count (zipfian and latest).
    pub zipfian: Option<&'a Zipfian>,
    pub key_size: usize,
    pub value_size: usize,
    /// Keys per batch (used when the mix has batches).
    pub batch_keys: usize,
    /// Write a batch's keys as single puts instead of one atomic batch.
    pub single_puts: bool,
    /// Keys per batched read (used when the mix has batched reads).
    pub multiget_keys: usize,
    /// Which keys carry a deadline.
    pub deadlines: Deadlines,
    pub threads: usize,
    pub warmup: Duration,
    pub stop: Stop,
    /// Seed for this phase's per-thread generators.
    pub seed: u64,
    /// The device the data directory is on, whose requests are counted.
    pub device: Option<&'a Device>,
}

/// What a timed phase measured.
#[derive(Debug)]
pub struct PhaseResult {
    pub ops: u64,
    pub elapsed: Duration,
    pub latency: Histogram<u64>,
    /// Sum of the workers' per-thread counter deltas.
    pub pm: PmemCounters,
    pub read_misses: u64,
    /// Scans among `ops`; the pairs they read plus the keys batches wrote
    /// and batched reads read.
    pub scans: u64,
    pub items: u64,
    /// The process's storage I/O and the data device's requests from the
    /// end of the warm-up to the end.
    pub disk: DiskCounters,
    /// The SSD tier's counters over the same span (engines with one).
    pub tier: Option<TierFigures>,
}

fn new_histogram() -> Histogram<u64> {
    Histogram::new_with_bounds(1, MAX_LATENCY_NS, 3).expect("valid histogram bounds")
}

fn add_counters(a: &mut PmemCounters, b: &PmemCounters) {
    a.flushes += b.flushes;
    a.fences += b.fences;
    a.bytes_written += b.bytes_written;
    a.nt_bytes_written += b.nt_bytes_written;
}

/// Counts a worker out when it ends, even by panicking, so the
/// coordinating thread never waits for it forever.
struct Finished<'a>(&'a AtomicUsize);

impl Drop for Finished<'_> {
    fn drop(&mut self) {
        self.0.fetch_add(1, Ordering::Release);
    }
}

/// Loads keys `0..keys` (values derived from the key index, deadlines
/// from `deadlines`) with `threads` threads; calls `progress` with the
/// number of keys stored so far about every 100 ms. Returns how long it
/// took, finish included.
pub fn load(
    store: &dyn Store,
    keys: u64,
    (key_size, value_size): (usize, usize),
    deadlines: Deadlines,
    threads: usize,
    progress: &mut dyn FnMut(u64),
) -> Result<Duration> {
    let start = Instant::now();
    let next = AtomicU64::new(0);
    let stored = AtomicU64::new(0);
    let finished = AtomicUsize::new(0);
    let abort = AtomicBool::new(false);
    let threads = threads.clamp(1, keys.div_ceil(LOAD_BATCH).max(1) as usize);
    let outcome: Result<()> = std::thread::scope(|s| {
        let mut handles = Vec::new();
        for t in 0..threads {
            let (next, stored, finished, abort) = (&next, &stored, &finished, &abort);
            let spawned = std::thread::Builder::new()
                .name(format!("bench-load-{t}"))
                .spawn_scoped(s, move || -> Result<()> {
                    let _finished = Finished(finished);
                    let mut batch = Batch::new(key_size, value_size, LOAD_BATCH as usize);
                    let mut key = KeyBuf::new(key_size);
                    let mut value = vec![0u8; value_size];
                    while !abort.load(Ordering::Relaxed) {
                        let first = next.fetch_add(LOAD_BATCH, Ordering::Relaxed);
                        if first >= keys {
                            break;
                        }
                        batch.clear();
                        for i in first..(first + LOAD_BATCH).min(keys) {
                            fill_value(i, &mut value);
                            batch.push_with_deadline(key.key(i), &value, deadlines.of(i));
                        }
                        if let Err(e) = store.load(&batch) {
                            abort.store(true, Ordering::Relaxed);
                            return Err(e);
                        }
                        stored.fetch_add(batch.len() as u64, Ordering::Relaxed);
                    }
                    Ok(())
                });
            match spawned {
                Ok(h) => handles.push(h),
                Err(e) => {
                    abort.store(true, Ordering::Relaxed);
                    return Err(Error::io("spawn a load thread", e));
                }
            }
        }
        while finished.load(Ordering::Acquire) < handles.len() {
            progress(stored.load(Ordering::Relaxed));
            std::thread::sleep(TICK);
        }
        progress(stored.load(Ordering::Relaxed));
        for h in handles {
            h.join().unwrap_or_else(|p| std::panic::resume_unwind(p))?;
        }
        Ok(())
    });
    outcome?;
    store.finish_load()?;
    Ok(start.elapsed())
}

/// The seed of worker `thread` in a phase seeded `seed`.
fn thread_seed(seed: u64, threads: usize, thread: usize) -> u64 {
    scramble(seed ^ scramble(((threads as u64) << 32) | thread as u64))
}

/// What one worker measured.
struct Outcome {
    ops: u64,
    read_misses: u64,
    scans: u64,
    items: u64,
    latency: Histogram<u64>,
    pm: PmemCounters,
    last_end: Option<Instant>,
}

/// State shared by the workers of a phase.
struct Shared<'a> {
    store: &'a dyn Store,
    phase: &'a Phase<'a>,
    inserts: &'a InsertCounter,
    ready: AtomicUsize,
    go: AtomicBool,
    abort: AtomicBool,
    finished: AtomicUsize,
    /// Warm-up end `t0` and, for timed phases, end `t1`.
    window: OnceLock<(Instant, Option<Instant>)>,
}

/// A worker's reusable buffers and generators.
struct Worker<'a> {
    shared: &'a Shared<'a>,
    rng: SmallRng,
    chooser: KeyChooser,
    key: KeyBuf,
    value: Vec<u8>,
    out: Vec<u8>,
    /// The pairs of the next batch.
    batch: Batch,
    /// The keys of the next batched read, back to back.
    multiget: Vec<u8>,
    stamp: u64,
}

impl<'a> Worker<'a> {
    /// Worker `t` of `threads`: its own generator, seeded from the phase's
    /// seed and `t`, and its own value buffer.
    fn new(shared: &'a Shared<'a>, t: usize, threads: usize) -> Worker<'a> {
        let phase = shared.phase;
        let mut rng = SmallRng::seed_from_u64(thread_seed(phase.seed, threads, t));
        let mut value = vec![0u8; phase.value_size];
        fill_value(rng.gen(), &mut value);
        Worker {
            shared,
            chooser: KeyChooser::new(
                phase.distribution,
                shared.inserts.acknowledged(),
                phase.zipfian,
            ),
            rng,
            key: KeyBuf::new(phase.key_size),
            value,
            out: Vec::with_capacity(phase.key_size + phase.value_size),
            batch: Batch::new(phase.key_size, phase.value_size, phase.batch_keys),
            multiget: Vec::with_capacity(phase.key_size * phase.multiget_keys),
            stamp: (t as u64) << 40,
        }
    }
}

/// The next operation of a worker, chosen before the clock starts.
#[derive(Clone, Copy, Debug)]
struct Choice {
    op: Op,
    /// The key index (the start key of a scan); unused by an insert.
    index: u64,
    /// Pairs to scan; 0 unless `op` scans.
    scan_length: usize,
}

impl Worker<'_> {
    /// Chooses the next operation and, unless it inserts, its key; fills
    /// the batch of a batch operation.
    fn choose(&mut self) -> Choice {
        let phase = self.shared.phase;
        let op = phase.mix.choose(self.rng.gen());
        let index = match op {
            Op::Insert => 0,
            _ => {
                let items = self.shared.inserts.acknowledged();
                self.chooser.next(&mut self.rng, items)
            }
        };
        let scan_length = match op {
            Op::Scan => phase.scan_length.choose(&mut self.rng),
            _ => 0,
        };
        if op == Op::Batch {
            self.fill_batch(index);
        }
        if op == Op::MultiGet {
            self.fill_multiget(index);
        }
        Choice {
            op,
            index,
            scan_length,
        }
    }

    /// Fills the batch with `batch_keys` keys from index `first` on
    /// (wrapping at the keys there are), each with a new value.
    fn fill_batch(&mut self, first: u64) {
        let phase = self.shared.phase;
        let items = self.shared.inserts.acknowledged().max(1);
        self.batch.clear();
        for j in 0..phase.batch_keys as u64 {
            let index = (first + j) % items;
            self.stamp += 1;
            stamp_value(self.stamp, &mut self.value);
            let deadline = phase.deadlines.of(index);
            self.batch
                .push_with_deadline(self.key.key(index), &self.value, deadline);
        }
    }

    /// Fills the keys of a batched read: `first`, then `multiget_keys - 1`
    /// more drawn from the phase's distribution.
    fn fill_multiget(&mut self, first: u64) {
        let phase = self.shared.phase;
        self.multiget.clear();
        self.multiget.extend_from_slice(self.key.key(first));
        for _ in 1..phase.multiget_keys {
            let items = self.shared.inserts.acknowledged();
            let index = self.chooser.next(&mut self.rng, items);
            self.multiget.extend_from_slice(self.key.key(index));
        }
    }

    /// Reads the keys of the filled batched read at once; returns how many
    /// it found.
    fn read_many(&mut self) -> Result<u64> {
        let key_size = self.shared.phase.key_size;
        let keys: Vec<&[u8]> = self.multiget.chunks_exact(key_size).collect();
        self.shared.store.read_many(&keys, &mut self.out)
    }

    /// Writes the filled batch: atomically, or as single puts.
    fn write_batch(&self) -> Result<u64> {
        let store = self.shared.store;
        if self.shared.phase.single_puts {
            for (key, value, deadline) in self.batch.iter_with_deadlines() {
                store.write_expiring(key, value, deadline)?;
            }
        } else {
            store.write_batch(&self.batch)?;
        }
        Ok(self.batch.len() as u64)
    }

    /// Runs `choice` (inserts take a fresh index). Returns how many pairs
    /// it read or wrote: for a read, 1 when it found its key; for a scan,
    /// the pairs scanned; 1 for a write; the keys of a batch; the keys a
    /// batched read found.
    fn execute(&mut self, choice: Choice) -> Result<u64> {
        let store = self.shared.store;
        let deadlines = self.shared.phase.deadlines;
        let Choice {
            op,
            index,
            scan_length,
        } = choice;
        match op {
            Op::Read => store
                .read(self.key.key(index), &mut self.out)
                .map(u64::from),
            Op::Update => {
                self.stamp += 1;
                stamp_value(self.stamp, &mut self.value);
                store
                    .write_expiring(self.key.key(index), &self.value, deadlines.of(index))
                    .map(|()| 1)
            }
            Op::Insert => {
                let index = self.shared.inserts.reserve();
                self.stamp += 1;
                stamp_value(self.stamp, &mut self.value);
                store.write_expiring(self.key.key(index), &self.value, deadlines.of(index))?;
                self.shared.inserts.acknowledge(index);
                Ok(1)
            }
            Op::ReadModifyWrite => {
                self.stamp += 1;
                stamp_value(self.stamp, &mut self.value);
                store
                    .read_modify_write(self.key.key(index), &self.value, &mut self.out)
                    .map(u64::from)
            }
            Op::Scan => store
                .scan(self.key.key(index), scan_length, &mut self.out)
                .map(|read| read as u64),
            Op::Batch => self.write_batch(),
            Op::MultiGet => self.read_many(),
        }
    }

    fn run(&mut self, quota: Option<u64>) -> Result<Outcome> {
        let shared = self.shared;
        shared.ready.fetch_add(1, Ordering::Release);
        while !shared.go.load(Ordering::Acquire) {
            if shared.abort.load(Ordering::Relaxed) {
                return Err(Error::usage("aborted before the start"));
            }
            std::thread::sleep(Duration::from_micros(200));
        }
        let (t0, t1) = *shared.window.get().expect("window set before go");

        // Warm-up: the same operations, not recorded.
        while Instant::now() < t0 && !shared.abort.load(Ordering::Relaxed) {
            let choice = self.choose();
            self.execute(choice)?;
        }

        let mut latency = new_histogram();
        let (mut ops, mut read_misses, mut last_end) = (0u64, 0u64, None);
        let (mut scans, mut items) = (0u64, 0u64);
        let pm_start = thread_counters();
        loop {
            if quota == Some(ops) || shared.abort.load(Ordering::Relaxed) {
                break;
            }
            let choice = self.choose();
            let start = Instant::now();
            if t1.is_some_and(|t1| start >= t1) {
                break;
            }
            let read = self.execute(choice)?;
            let end = Instant::now();
            latency.saturating_record((end - start).as_nanos().max(1) as u64);
            ops += 1;
            match choice.op {
                Op::Scan => {
                    scans += 1;
                    items += read;
                    read_misses += u64::from(read == 0);
                }
                Op::Batch => items += read,
                Op::MultiGet => {
                    let keys = shared.phase.multiget_keys as u64;
                    items += keys;
                    read_misses += keys.saturating_sub(read);
                }
                _ => read_misses += u64::from(read == 0),
            }
            last_end = Some(end);
        }
        let pm = thread_counters().since(&pm_start);
        Ok(Outcome {
            ops,
            read_misses,
            scans,
            items,
            latency,
            pm,
            last_end,
        })
    }
}

/// Runs one timed phase on `store`; `tick` is called with the time since
/// the start about every 100 ms.
pub fn run_phase(
    store: &dyn Store,
    phase: &Phase<'_>,
    inserts: &InsertCounter,
    tick: &mut dyn FnMut(Duration),
) -> Result<PhaseResult> {
    let shared = Shared {
        store,
        phase,
        inserts,
        ready: AtomicUsize::new(0),
        go: AtomicBool::new(false),
        abort: AtomicBool::new(false),
        finished: AtomicUsize::new(0),
        window: OnceLock::new(),
    };
    let threads = phase.threads.max(1);
    type Measured = (Vec<Outcome>, DiskCounters, Option<TierFigures>);
    let outcomes: Result<Measured> = std::thread::scope(|s| {
        let shared = &shared;
        let mut handles = Vec::with_capacity(threads);
        for t in 0..threads {
            let quota = quota(phase.stop, threads, t);
            let mut worker = Worker::new(shared, t, threads);
            let spawned = std::thread::Builder::new()
                .name(format!("bench-worker-{t}"))
                .spawn_scoped(s, move || {
                    let _finished = Finished(&shared.finished);
                    let outcome = worker.run(quota);
                    if outcome.is_err() {
                        shared.abort.store(true, Ordering::Relaxed);
                    }
                    outcome
                });
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
        while shared.ready.load(Ordering::Acquire) < threads {
            std::thread::sleep(Duration::from_micros(200));
        }
        let begin = Instant::now();
        let t0 = begin + phase.warmup;
        let t1 = match phase.stop {
            Stop::After(d) => Some(t0 + d),
            Stop::Ops(_) => None,
        };
        shared.window.set((t0, t1)).expect("window set once");
        // Without a warm-up the phase starts with the go.
        let disk_now = || (DiskCounters::now(phase.device), store.tier());
        let mut io_start = phase.warmup.is_zero().then(disk_now);
        shared.go.store(true, Ordering::Release);
        while shared.finished.load(Ordering::Acquire) < threads {
            tick(begin.elapsed());
            let now = Instant::now();
            if io_start.is_none() && now >= t0 {
                io_start = Some(disk_now());
            }
            // Wake at t0 to read the counters then, else every tick.
            let until_t0 = t0.saturating_duration_since(now);
            std::thread::sleep(if io_start.is_none() {
                TICK.min(until_t0)
            } else {
                TICK
            });
        }
        let (disk, tier) = match io_start {
            Some((disk, tier)) => {
                let (disk_end, tier_end) = disk_now();
                let tier = tier.zip(tier_end).map(|(start, end)| end.since(&start));
                (disk_end.since(&disk), tier)
            }
            None => (DiskCounters::default(), None),
        };
        let results: Vec<Result<Outcome>> = handles
            .into_iter()
            .map(|h| h.join().unwrap_or_else(|p| std::panic::resume_unwind(p)))
            .collect();
        all_or_first_error(results).map(|outcomes| (outcomes, disk, tier))
    });
    let (t0, t1) = *shared.window.get().expect("window set");
    let (outcomes, disk, tier) = outcomes?;
    let mut result = summarize(&outcomes, t0, t1);
    result.disk = disk;
    result.tier = tier;
    Ok(result)
}

/// The operations of worker `t` of `threads` when the phase counts them
/// (`Stop::Ops`): an even share, the first `total % threads` workers one
/// more.
pub(crate) fn quota(stop: Stop, threads: usize, t: usize) -> Option<u64> {
    match stop {
        Stop::Ops(total) => {
            let (t, n) = (t as u64, threads as u64);
            Some(total / n + u64::from(t < total % n))
        }
        Stop::After(_) => None,
    }
}

/// Every worker's outcome, or the first real failure (not a worker's
/// "aborted", which only says that another one failed).
fn all_or_first_error(results: Vec<Result<Outcome>>) -> Result<Vec<Outcome>> {
    let mut outcomes = Vec::with_capacity(results.len());
    let mut first_error = None;
    for r in results {
        match r {
            Ok(o) => outcomes.push(o),
            Err(e) => {
                if first_error.is_none() || matches!(first_error, Some(Error::Usage(_))) {
                    first_error = Some(e);
                }
            }
        }
    }
    match first_error {
        Some(e) => Err(e),
        None => Ok(outcomes),
    }
}

/// The phase's totals over its workers' outcomes; it lasted from `t0`, the
/// end of the warm-up, to the last worker's end (at least `t1`, the
/// planned end of a timed phase).
fn summarize(outcomes: &[Outcome], t0: Instant, t1: Option<Instant>) -> PhaseResult {
    let mut latency = new_histogram();
    let mut pm = PmemCounters::default();
    let (mut ops, mut read_misses, mut scans, mut items) = (0, 0, 0, 0);
    let mut end = t1.unwrap_or(t0);
    for o in outcomes {
        latency
            .add(&o.latency)
            .expect("histograms with the same bounds");
        add_counters(&mut pm, &o.pm);
        ops += o.ops;
        read_misses += o.read_misses;
        scans += o.scans;
        items += o.items;
        if let Some(e) = o.last_end {
            end = end.max(e);
        }
    }
    PhaseResult {
        ops,
        elapsed: end.saturating_duration_since(t0),
        latency,
        pm,
        read_misses,
        scans,
        items,
        disk: DiskCounters::default(),
        tier: None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_seeds_differ_per_thread_and_sweep_point() {
        let a: Vec<u64> = (0..8).map(|t| thread_seed(1, 8, t)).collect();
        let mut dedup = a.clone();
        dedup.sort_unstable();
        dedup.dedup();
        assert_eq!(dedup.len(), 8);
        assert_ne!(thread_seed(1, 4, 0), thread_seed(1, 8, 0));
        assert_ne!(thread_seed(1, 4, 0), thread_seed(2, 4, 0));
    }
}
