//! `persimmon bench`: runs every (workload, engine, threads) point, prints
//! a row per result, and writes JSON, Markdown and SVG; or, with
//! `--report`, only renders earlier JSON; or, with `--probe`, measures the
//! machine; or, with `--workload pdv`, runs the persistent dancing variable
//! microbenchmark ([`crate::pdv`]); or, with `--workload restart`, times
//! reopens of loaded stores ([`crate::restart`]).
//!
//! Order of a run: all engines are opened once up front in scratch
//! directories (to fail early and to print their durability settings);
//! then, for each workload point, each engine in turn gets a fresh store,
//! is loaded with the same keys and runs one timed phase per thread count
//! on that store. Points of one figure therefore run close together in
//! time for all engines. A workload that scans skips the engines without
//! ordered reads, and a `batch:N` the engines without atomic batches, with
//! a note on stdout (an error only when that leaves nothing to run).
//!
//! A `batch:N` point runs two phases per thread count on each store: the
//! batches, then the same kind of keys written as N single puts, recorded
//! as the engine `<engine> single puts`, the reference of the ratio.
//!
//! `--cache-bytes` with a list makes each workload a point per cache size
//! (fresh stores each, the same seed: the cache size is all that differs);
//! every engine runs at each, those without a cache of their own too.
//! `--drop-caches` drops the OS page cache before every timed phase.
//!
//! Invariants:
//! - Every engine of a point gets the same keys, the same seed and the same
//!   phase length; the seeds depend on `--seed` and the point only.
//! - A result is printed and `--json` rewritten as soon as it is measured.

use std::io::Write;
use std::path::PathBuf;
use std::time::Duration;

use crate::args::{BenchArgs, CacheSize, DistributionName, PoolSizes};
use crate::disk;
use crate::distribution::{Distribution, InsertCounter, Zipfian};
use crate::engines::{self, EngineKind, Space, Store, TierFigures};
use crate::error::{Error, Result};
use crate::keys::{scramble, Deadlines};
use crate::output::{
    read_results, write_file, write_json, write_json_arg, write_out, write_plot_and_markdown,
};
use crate::record::{per, Record, SINGLE_PUTS};
use crate::report::{self, latency, mops, per_unit};
use crate::runner::{self, Phase, PhaseResult, Stop};
use crate::setup::{
    cores, durability_lines, open_config, phase_bar, phase_length, pool_dir_filesystem,
    pool_estimate, preflight, run_dirs, threads_text, RunDirs,
};
use crate::workload::WorkloadSpec;
use crate::{pdv, plot, probe, restart, setup};

/// Runs `persimmon bench` with `args`, printing to `out`. `sizes` are the
/// CLI's global `--pool-size` / `--pool-max`.
pub fn run(args: &BenchArgs, sizes: PoolSizes, out: &mut dyn Write) -> Result<()> {
    if !args.report.is_empty() {
        return report_only(args, out);
    }
    if args.probe {
        return probe_only(args, sizes, out);
    }
    if args.workload.0.contains(&WorkloadSpec::Pdv) {
        return pdv::run(args, out);
    }
    if args.workload.0.contains(&WorkloadSpec::Restart) {
        return restart::run(args, sizes, out);
    }
    benchmark(args, sizes, out)
}

fn sources(paths: &[PathBuf]) -> String {
    paths
        .iter()
        .map(|p| p.display().to_string())
        .collect::<Vec<_>>()
        .join(", ")
}

fn report_only(args: &BenchArgs, out: &mut dyn Write) -> Result<()> {
    let (records, probe) = read_results(&args.report)?;
    let md = report::markdown(&records, probe.as_ref(), &sources(&args.report));
    if let Some(path) = &args.markdown {
        write_file(path, &md)?;
    }
    if let Some(path) = &args.plot {
        write_file(path, &plot::svg(&records))?;
    }
    if args.markdown.is_none() && args.plot.is_none() {
        write_out(out, &md)?;
    }
    Ok(())
}

fn probe_only(args: &BenchArgs, sizes: PoolSizes, out: &mut dyn Write) -> Result<()> {
    let value_size = args
        .workload
        .0
        .iter()
        .map(|w| w.value_size(args.value_size))
        .max()
        .unwrap_or(args.value_size);
    let bytes = args
        .probe_bytes
        .or(sizes.initial)
        .unwrap_or_else(|| pool_estimate(args.keys, args.key_size, value_size));
    let fs = pool_dir_filesystem(args);
    write_out(
        out,
        &format!(
            "probe: {} mapping in {} ({fs}), {} cores ...\n",
            persimmon::size::human_bytes(bytes),
            args.pool_dir.display(),
            cores()
        ),
    )?;
    let p = probe::run(&args.pool_dir, bytes, cores())?;
    write_out(
        out,
        &format!(
            "dependent random load   {:.1} ns (median {:.1} ns)\n\
             GET floor (2 loads)     {:.1} ns = {:.2} M GETs/s per thread\n\
             nt write bandwidth      {:.2} GB/s with {} threads, {:.2} GB/s with 1 ({})\n",
            p.dependent_load_ns,
            p.dependent_load_ns_median,
            p.get_floor_ns,
            p.get_bound_ops_per_sec_per_thread / 1e6,
            p.nt_write_gbps,
            p.nt_write_threads,
            p.nt_write_gbps_1thread,
            p.nt_store,
        ),
    )?;
    if let Some(path) = &args.json {
        write_json(path, std::slice::from_ref(&p))?;
    }
    if let Some(path) = &args.markdown {
        write_file(path, &format!("{}\n", report::probe_summary(&p)))?;
    }
    Ok(())
}

/// The disk traffic of `r`'s phase, for its row (empty when none).
fn disk_note(r: &Record) -> String {
    if r.disk_read_bytes_per_op == 0.0 && r.disk_write_bytes_per_op == 0.0 {
        return String::new();
    }
    format!(
        "  (disk read {:.0} B/op, written {:.0} B/op; device reads {:.2}/op, flushes {:.2}/op)",
        r.disk_read_bytes_per_op,
        r.disk_write_bytes_per_op,
        r.device_reads_per_op,
        r.device_flushes_per_op
    )
}

const ROW_HEADER: &str = "engine                workload          distribution  threads  value     Mops/s       p50       p99     p99.9       max  PM B/op  flush/op  fence/op\n";

fn row(r: &Record) -> String {
    format!(
        "{:<21} {:<17} {:<13} {:>7} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8.1} {:>9} {:>9}{}{}{}{}\n",
        r.engine,
        r.workload,
        r.distribution,
        r.threads,
        r.value_size,
        mops(r.ops_per_sec),
        latency(r.p50_ns),
        latency(r.p99_ns),
        latency(r.p999_ns),
        latency(r.max_ns),
        r.pm_bytes_per_op,
        per_unit(r.flushes_per_op),
        per_unit(r.fences_per_op),
        if r.read_misses > 0 {
            format!("  ({} reads missed)", r.read_misses)
        } else {
            String::new()
        },
        items_note(r),
        cache_note(r),
        disk_note(r),
    )
}

/// The cache of `r`'s point and the SSD tier's figures, for its row
/// (empty when the run gave no cache size and the engine has no tier).
fn cache_note(r: &Record) -> String {
    let mut notes = Vec::new();
    if !r.cache.is_empty() {
        notes.push(format!(
            "cache {}: {}",
            r.cache,
            persimmon::size::human_bytes(r.cache_bytes)
        ));
    }
    if r.cache_hits + r.cache_misses > 0 {
        notes.push(format!("hits {:.1} %", 100.0 * r.cache_hit_ratio));
    }
    if r.ssd_extents_per_op > 0.0 {
        notes.push(format!(
            "SSD syncs {:.3}/op, extents {:.3}/op",
            r.ssd_syncs_per_op, r.ssd_extents_per_op
        ));
    }
    if notes.is_empty() {
        return String::new();
    }
    format!("  ({})", notes.join(", "))
}

/// What the scans of `r` read, its batches wrote or its batched reads
/// read, for its row (empty
/// for the other workloads).
fn items_note(r: &Record) -> String {
    if r.scans > 0 {
        return format!(
            "  ({} M items/s, {:.1} items/scan)",
            mops(r.items_per_sec),
            r.items as f64 / r.scans as f64
        );
    }
    if report::is_batch(r) {
        return format!(
            "  ({} M keys/s; PM B, flushes, fences per key)",
            mops(r.items_per_sec)
        );
    }
    if report::is_multiget(r) {
        return format!(
            "  ({} M keys/s, {:.0} keys/read; PM B, flushes, fences per key)",
            mops(r.items_per_sec),
            r.items as f64 / r.ops.max(1) as f64
        );
    }
    String::new()
}

/// The note printed instead of a point an engine cannot run.
fn skip_note(engine: EngineKind, spec: &WorkloadSpec) -> String {
    let why = if spec.scans() {
        format!(
            "{spec} scans and {} has no ordered reads (use persimmon-ordered, persimmon-dram, \
             lmdb or rocksdb)",
            engine.name()
        )
    } else {
        format!(
            "{spec} writes atomic batches and the {} adapter has none (use a Persimmon engine)",
            engine.name()
        )
    };
    format!(
        "{:<21} {:<17} skipped: {why}\n",
        engine.name(),
        spec.to_string()
    )
}

fn distribution_of(args: &BenchArgs, spec: &WorkloadSpec) -> Distribution {
    let theta = args.zipf_theta;
    match args.distribution {
        Some(DistributionName::Uniform) => Distribution::Uniform,
        Some(DistributionName::Zipfian) => Distribution::Zipfian { theta },
        Some(DistributionName::Latest) => Distribution::Latest { theta },
        None => spec.default_distribution(theta),
    }
}

/// Whether `kind` can run `spec`: a workload that scans needs ordered
/// reads, one that writes batches atomic batches.
fn runnable(kind: EngineKind, spec: &WorkloadSpec) -> bool {
    (!spec.scans() || kind.has_ordered_reads()) && (spec.batch_keys() == 0 || kind.has_batches())
}

/// Fails when an engine is not in this build, when a batch asks for more
/// keys than are loaded, or when no engine can run any of the workloads.
fn check_runnable(args: &BenchArgs) -> Result<()> {
    let kinds: &[EngineKind] = &args.engines.0;
    for k in kinds {
        k.check_built()?;
    }
    let workloads = &args.workload.0;
    if let Some(spec) = workloads.iter().find(|w| w.batch_keys() as u64 > args.keys) {
        return Err(Error::usage(format!(
            "{spec} writes {} distinct keys per batch: --keys must be at least that",
            spec.batch_keys()
        )));
    }
    if !workloads
        .iter()
        .any(|spec| kinds.iter().any(|k| runnable(*k, spec)))
    {
        let batches = workloads.iter().any(|w| w.batch_keys() > 0);
        return Err(Error::usage(if batches {
            "none of the engines can run these workloads: batch:N needs atomic batches (the \
             Persimmon engines), range scans ordered reads (persimmon-ordered, persimmon-dram, \
             lmdb, rocksdb)"
        } else {
            "every workload here scans (range scans), and none of the engines has ordered \
             reads: add persimmon-ordered, persimmon-dram, lmdb or rocksdb to --engines"
        }));
    }
    Ok(())
}

/// What every point of a benchmark run shares.
struct Bench<'a> {
    args: &'a BenchArgs,
    sizes: PoolSizes,
    kinds: &'a [EngineKind],
    /// Each engine's durability settings, from the preflight.
    durability: Vec<String>,
    dirs: RunDirs,
    stop: Stop,
    warmup: Duration,
    cores: usize,
    /// Most threads a store serves at once (LMDB reader slots).
    max_threads: usize,
    /// Which keys carry a deadline (`--deadline-fraction`).
    deadlines: Deadlines,
    /// The block device of the data directory (none on tmpfs).
    device: Option<disk::Device>,
}

/// One workload point: what its engines share.
struct Point<'a> {
    /// Its place in `--workload`, for directory names and the seed.
    index: usize,
    /// Its place in `--cache-bytes` and the cache size (`None` without
    /// one: the engines' defaults).
    cache_index: usize,
    cache: Option<CacheSize>,
    spec: &'a WorkloadSpec,
    value_size: usize,
    distribution: Distribution,
    /// ζ for the loaded key count (zipfian and latest).
    zipfian: Option<Zipfian>,
    seed: u64,
}

fn benchmark(args: &BenchArgs, sizes: PoolSizes, out: &mut dyn Write) -> Result<()> {
    check_runnable(args)?;
    let kinds: &[EngineKind] = &args.engines.0;
    let deadlines = setup::deadlines(args, kinds)?;
    let cores = cores();
    let max_threads = args.threads.0.iter().copied().max().unwrap_or(1).max(cores);
    let (stop, warmup) = phase_length(args);
    if args.drop_caches {
        disk::check_drop_page_cache()?;
    }
    let cgroup = args
        .memory_limit
        .map(disk::MemoryCgroup::enter)
        .transpose()?;
    let caches = cache_points(args);
    let dirs = run_dirs(args)?;
    let durability = preflight(kinds, &dirs, |d| {
        open_config(args, sizes, d, args.value_size, max_threads, caches[0])
    })?;
    let fs = dirs.filesystems.clone();
    let device = disk::Device::of(&dirs.data);
    let bench = Bench {
        device,
        args,
        sizes,
        kinds,
        durability,
        dirs,
        stop,
        warmup,
        cores,
        max_threads,
        deadlines,
    };
    write_out(out, &bench.header(&fs))?;

    let mut records: Vec<Record> = Vec::new();
    for (index, spec) in args.workload.0.iter().enumerate() {
        for (cache_index, &cache) in caches.iter().enumerate() {
            let point = bench.point(index, spec, (cache_index, cache));
            bench.run_point(&point, &mut records, out)?;
        }
    }

    write_plot_and_markdown(args, &records)?;
    if kinds.len() > 1 {
        write_out(out, &summary(&records))?;
    }
    if let Some(c) = &cgroup {
        write_out(
            out,
            &format!(
                "memory cgroup: at most {} charged (page cache included) of the {} limit\n",
                persimmon::size::human_bytes(c.max_usage_bytes()),
                persimmon::size::human_bytes(c.limit_bytes()),
            ),
        )?;
    }
    Ok(())
}

/// The cache sizes of `--cache-bytes`, or one `None` (the engines'
/// defaults) when it is not given.
fn cache_points(args: &BenchArgs) -> Vec<Option<CacheSize>> {
    match &args.cache_bytes {
        Some(list) => list.0.iter().copied().map(Some).collect(),
        None => vec![None],
    }
}

/// The header lines on the SSD side of a run: data directory, tier
/// threshold, cache sizes, page cache drops (empty when none applies).
fn tier_header(args: &BenchArgs) -> String {
    let mut parts = Vec::new();
    if args.engines.0.iter().any(|k| k.splits_values()) {
        parts.push(format!(
            "tier threshold {} B (persimmon-tiered, rocksdb-blob)",
            args.tier_threshold
        ));
    }
    if let Some(list) = &args.cache_bytes {
        let sizes: Vec<String> = list.0.iter().map(|c| c.to_string()).collect();
        parts.push(format!(
            "cache {} (% of keys × value size)",
            sizes.join(", ")
        ));
    }
    if args.drop_caches {
        parts.push("page cache dropped before every timed phase".into());
    }
    if let Some(limit) = args.memory_limit {
        parts.push(format!(
            "in a memory cgroup of {} (page cache, process memory, tmpfs pages)",
            persimmon::size::human_bytes(limit)
        ));
    }
    if parts.is_empty() {
        return String::new();
    }
    format!("       {}\n", parts.join("; "))
}

impl Bench<'_> {
    /// The lines before the first row: the run's settings, each engine's
    /// durability, the column names.
    fn header(&self, fs: &str) -> String {
        let args = self.args;
        let workloads: Vec<String> = args.workload.0.iter().map(|w| w.to_string()).collect();
        let mut header = format!(
            "bench: {} keys of {} B; workloads {}; threads {}; {} per point after {:.1} s warm-up; seed {}\n\
             \x20      stores in {} ({fs}); {} cores\n",
            args.keys,
            args.key_size,
            workloads.join(", "),
            threads_text(&args.threads.0),
            match self.stop {
                Stop::Ops(n) => format!("{n} operations"),
                Stop::After(d) => format!("{:.1} s", d.as_secs_f64()),
            },
            self.warmup.as_secs_f64(),
            args.seed,
            args.pool_dir.display(),
            self.cores,
        );
        header.push_str(&tier_header(args));
        if args.deadline_fraction > 0.0 {
            header.push_str(&format!(
                "       {:.0} % of the keys carry a deadline a day ahead (loaded and written with it)\n",
                args.deadline_fraction * 100.0
            ));
        }
        header.push_str(&durability_lines(self.kinds, &self.durability));
        header.push('\n');
        header.push_str(ROW_HEADER);
        header
    }

    /// The point of workload `index` (`spec`) at cache size `cache_index`
    /// (`cache`).
    fn point<'s>(
        &self,
        index: usize,
        spec: &'s WorkloadSpec,
        (cache_index, cache): (usize, Option<CacheSize>),
    ) -> Point<'s> {
        let args = self.args;
        let distribution = distribution_of(args, spec);
        let zipfian = match distribution {
            Distribution::Uniform => None,
            Distribution::Zipfian { theta } | Distribution::Latest { theta } => {
                Some(Zipfian::new(args.keys, theta))
            }
        };
        Point {
            index,
            cache_index,
            cache,
            spec,
            value_size: spec.value_size(args.value_size),
            distribution,
            zipfian,
            seed: scramble(args.seed ^ scramble(index as u64 + 1)),
        }
    }

    /// Runs `point` on every engine that can, in turn; notes the others.
    fn run_point(
        &self,
        point: &Point<'_>,
        records: &mut Vec<Record>,
        out: &mut dyn Write,
    ) -> Result<()> {
        for (&kind, durability) in self.kinds.iter().zip(&self.durability) {
            if runnable(kind, point.spec) {
                self.run_engine(point, kind, durability, records, out)?;
            } else {
                write_out(out, &skip_note(kind, point.spec))?;
            }
        }
        Ok(())
    }

    /// Runs `point` on a fresh store of `kind`: the load, then one timed
    /// phase per thread count.
    fn run_engine(
        &self,
        point: &Point<'_>,
        kind: EngineKind,
        durability: &str,
        records: &mut Vec<Record>,
        out: &mut dyn Write,
    ) -> Result<()> {
        let args = self.args;
        let spec = point.spec;
        let name = format!("{}-{}-{}", kind.name(), point.index, point.cache_index);
        let dirs = self.dirs.fresh(kind, &name)?;
        let config = open_config(
            args,
            self.sizes,
            dirs.clone(),
            point.value_size,
            self.max_threads,
            point.cache,
        );
        let store = engines::open(kind, &config)?;
        let load_time = setup::load(
            &*store,
            args,
            point.value_size,
            self.deadlines,
            format!("load {} ({spec})", kind.name()),
        )?;
        // The point's own settings (its cache size), the preflight's before.
        let durability = if point.cache.is_some() {
            store.durability()
        } else {
            durability.to_string()
        };
        let run = EngineRun {
            kind,
            store: &*store,
            durability: &durability,
            load_secs: load_time.as_secs_f64(),
            space: store.space(),
            tier_after_load: store.tier(),
            inserts: InsertCounter::new(args.keys),
        };
        // A batch point also writes its keys as single puts, the reference.
        let modes: &[bool] = if spec.batch_keys() > 0 {
            &[false, true]
        } else {
            &[false]
        };
        for &threads in &args.threads.0 {
            for &single_puts in modes {
                let record = self.timed_phase(point, &run, threads, single_puts)?;
                write_out(out, &row(&record))?;
                records.push(record);
                write_json_arg(args, records)?;
            }
        }
        drop(store);
        if !args.keep_stores {
            dirs.remove();
        }
        Ok(())
    }

    /// One timed phase of `point` with `threads` threads on a loaded store
    /// (a batch point's keys as single puts when `single_puts`).
    fn timed_phase(
        &self,
        point: &Point<'_>,
        run: &EngineRun<'_>,
        threads: usize,
        single_puts: bool,
    ) -> Result<Record> {
        let phase = Phase {
            mix: point.spec.mix(),
            scan_length: point.spec.scan_length(),
            distribution: point.distribution,
            zipfian: point.zipfian.as_ref(),
            key_size: self.args.key_size,
            value_size: point.value_size,
            batch_keys: point.spec.batch_keys(),
            single_puts,
            multiget_keys: point.spec.multiget_keys(),
            deadlines: self.deadlines,
            threads,
            warmup: self.warmup,
            stop: self.stop,
            seed: point.seed,
            device: self.device.as_ref(),
        };
        let engine = if single_puts {
            format!("{}{SINGLE_PUTS}", run.kind.name())
        } else {
            run.kind.name().to_string()
        };
        let bar = phase_bar(
            self.stop,
            self.warmup,
            format!("{engine} {} {threads} thr", point.spec),
        );
        if self.args.drop_caches {
            disk::drop_page_cache()?;
        }
        let eliminated_before = run.store.eliminated_writes();
        let result = runner::run_phase(run.store, &phase, &run.inserts, &mut |t| {
            bar.set_position(t.as_millis() as u64)
        })?;
        bar.finish_and_clear();
        let eliminated = run.store.eliminated_writes() - eliminated_before;
        let mut record = self.record(point, run, threads, &result, eliminated);
        record.engine = engine;
        Ok(record)
    }

    /// The record of one timed phase.
    fn record(
        &self,
        point: &Point<'_>,
        run: &EngineRun<'_>,
        threads: usize,
        result: &PhaseResult,
        eliminated_writes: u64,
    ) -> Record {
        let args = self.args;
        let secs = result.elapsed.as_secs_f64();
        let ops = result.ops;
        // Batches count their PM work per key written, batched reads per
        // key read.
        let units = if point.spec.batch_keys() > 0 || point.spec.multiget_keys() > 0 {
            result.items
        } else {
            ops
        };
        let per_op = |n: u64| per(n, units);
        let per_sec = |n: u64| if secs > 0.0 { n as f64 / secs } else { 0.0 };
        let space = run.space.unwrap_or_default();
        let per_key = |n: u64| per(n, space.keys);
        let h = &result.latency;
        let data_bytes = args.keys.saturating_mul(point.value_size as u64);
        Record {
            engine: run.kind.name().into(),
            workload: point.spec.to_string(),
            distribution: point.distribution.name(),
            threads,
            value_size: point.value_size,
            key_size: args.key_size,
            keys: args.keys,
            get_percent: point.spec.get_percent(),
            ops,
            duration_secs: secs,
            ops_per_sec: per_sec(ops),
            items_per_sec: per_sec(result.items),
            scans: result.scans,
            items: result.items,
            mean_ns: h.mean(),
            p50_ns: h.value_at_quantile(0.50),
            p99_ns: h.value_at_quantile(0.99),
            p999_ns: h.value_at_quantile(0.999),
            max_ns: h.max(),
            pm_bytes_per_op: per_op(result.pm.bytes_written),
            pm_nt_bytes_per_op: per_op(result.pm.nt_bytes_written),
            flushes_per_op: per_op(result.pm.flushes),
            fences_per_op: per_op(result.pm.fences),
            read_misses: result.read_misses,
            eliminated_writes,
            durability: run.durability.to_string(),
            cores: self.cores,
            load_secs: run.load_secs,
            seed: args.seed,
            deadline_fraction: args.deadline_fraction,
            used_bytes_per_key: per_key(space.used_bytes),
            live_bytes_per_key: per_key(space.live_bytes),
            cache: point.cache.map(|c| c.to_string()).unwrap_or_default(),
            cache_bytes: run.store.cache_bytes(),
            data_bytes,
            tier_threshold: if run.kind.splits_values() {
                args.tier_threshold
            } else {
                0
            },
            disk_read_bytes_per_op: per_op(result.disk.io.read_bytes),
            disk_write_bytes_per_op: per_op(result.disk.io.write_bytes),
            device_reads_per_op: per_op(result.disk.device.reads),
            device_writes_per_op: per_op(result.disk.device.writes),
            device_flushes_per_op: per_op(result.disk.device.flushes),
            page_cache_dropped: args.drop_caches,
            memory_limit_bytes: args.memory_limit.unwrap_or(0),
            ..tier_fields(result.tier, run.tier_after_load, units, data_bytes)
        }
    }
}

/// The SSD tier's fields of a record: the phase's counters `phase` over
/// `units` operations (or keys), the space after the load over the
/// `data_bytes` loaded.
fn tier_fields(
    phase: Option<TierFigures>,
    after_load: Option<TierFigures>,
    units: u64,
    data_bytes: u64,
) -> Record {
    let t = phase.unwrap_or_default();
    let lookups = t.cache_hits + t.cache_misses;
    Record {
        cache_hits: t.cache_hits,
        cache_misses: t.cache_misses,
        cache_hit_ratio: per(t.cache_hits, lookups),
        ssd_syncs_per_op: per(t.syncs, units),
        ssd_extents_per_op: per(t.extents_written, units),
        ssd_bytes_per_data_byte: per(after_load.map_or(0, |l| l.ssd_bytes), data_bytes),
        ..Record::default()
    }
}

/// One engine's loaded store at one point.
struct EngineRun<'a> {
    kind: EngineKind,
    store: &'a dyn Store,
    durability: &'a str,
    load_secs: f64,
    /// The store's space right after the load (engines that tell).
    space: Option<Space>,
    /// The SSD tier's figures right after the load (engines with one).
    tier_after_load: Option<TierFigures>,
    /// New keys inserted so far (shared by the thread counts in turn).
    inserts: InsertCounter,
}

/// The throughput tables printed at the end of a run of several engines.
fn summary(records: &[Record]) -> String {
    let mut summary = String::from("\n");
    for fig in report::figures(records) {
        summary.push_str(&format!("{}: {}\n\n", fig.title, fig.subtitle));
        summary.push_str(&report::throughput_table(&fig));
        summary.push('\n');
    }
    summary
}
