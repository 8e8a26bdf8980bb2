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
//! ordered reads, with a note on stdout (an error only when that leaves
//! nothing to run).

use std::io::Write;
use std::path::{Path, PathBuf};
use std::time::Duration;

use crate::args::{BenchArgs, DistributionName, PoolSizes};
use crate::distribution::{Distribution, InsertCounter, Zipfian};
use crate::engines::{self, EngineKind, OpenConfig};
use crate::error::{Error, Result};
use crate::keys::scramble;
use crate::progress;
use crate::record::{ProbeRecord, Record};
use crate::report::{self, latency, mops};
use crate::runner::{self, Phase, Stop};
use crate::workload::WorkloadSpec;
use crate::{pdv, plot, probe, restart};

/// Bytes per key beyond the record in a Persimmon pool (index and slack),
/// for the initial pool size.
const INDEX_BYTES_PER_KEY: u64 = 48;
/// Smallest initial pool.
pub(crate) const MIN_POOL_BYTES: u64 = 64 << 20;

pub(crate) fn cores() -> usize {
    std::thread::available_parallelism().map_or(1, |n| n.get())
}

/// The pool size `keys` keys of these sizes need, with room to spare.
pub fn pool_estimate(keys: u64, key_size: usize, value_size: usize) -> u64 {
    let record = (24 + key_size as u64 + value_size as u64).div_ceil(8) * 8;
    let bytes = keys.saturating_mul(record + INDEX_BYTES_PER_KEY) / 4 * 5;
    bytes.max(MIN_POOL_BYTES).div_ceil(1 << 20) << 20
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

pub(crate) fn write_out(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("write to standard output", e))
}

pub(crate) fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::file("write", path, e))
}

pub(crate) fn write_json<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<()> {
    let text = serde_json::to_string_pretty(items).expect("records serialize");
    write_file(path, &(text + "\n"))
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

/// How a timed phase ends (`--ops` or `--duration-secs`) and its warm-up.
/// Writes `--plot` (SVG) and `--markdown` for the records of this run, if
/// asked for.
pub(crate) fn write_plot_and_markdown(args: &BenchArgs, records: &[Record]) -> Result<()> {
    if let Some(path) = &args.plot {
        write_file(path, &plot::svg(records))?;
    }
    let source = args
        .json
        .as_ref()
        .map_or("this run".to_string(), |p| p.display().to_string());
    if let Some(path) = &args.markdown {
        write_file(path, &report::markdown(records, None, &source))?;
    }
    Ok(())
}

pub(crate) fn phase_length(args: &BenchArgs) -> (Stop, Duration) {
    let stop = match args.ops {
        Some(n) => Stop::Ops(n),
        None => Stop::After(Duration::from_secs_f64(args.duration_secs)),
    };
    (stop, Duration::from_secs_f64(args.warmup_secs))
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
    let fs = filesystem_of(&args.pool_dir).unwrap_or_else(|| "unknown file system".into());
    Ok((dir, scratch, fs))
}

pub(crate) fn fresh_dir(dir: &Path) -> Result<()> {
    if dir.exists() {
        std::fs::remove_dir_all(dir).map_err(|e| Error::file("remove", dir, e))?;
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::file("create", dir, e))
}

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

/// Reads records from JSON files written by `--json` (bench and probe).
pub fn read_results(paths: &[PathBuf]) -> Result<(Vec<Record>, Option<ProbeRecord>)> {
    let (mut records, mut probe) = (Vec::new(), None);
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| Error::file("read", path, e))?;
        let items: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "{}: not a JSON array of results: {e}",
                path.display()
            ))
        })?;
        for item in items {
            let bad = |e: serde_json::Error| {
                Error::usage(format!("{}: a result does not parse: {e}", path.display()))
            };
            if item.get("engine").and_then(|e| e.as_str()) == Some("probe") {
                probe = Some(serde_json::from_value(item).map_err(bad)?);
            } else {
                records.push(serde_json::from_value(item).map_err(bad)?);
            }
        }
    }
    Ok((records, probe))
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
    let fs = filesystem_of(&args.pool_dir).unwrap_or_else(|| "unknown file system".into());
    write_out(
        out,
        &format!(
            "probe: {} mapping in {} ({fs}), {} cores ...\n",
            report::human_bytes(bytes),
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

const ROW_HEADER: &str = "engine                workload          distribution  threads  value     Mops/s       p50       p99     p99.9       max  PM B/op  flush/op  fence/op\n";

fn row(r: &Record) -> String {
    format!(
        "{:<21} {:<17} {:<13} {:>7} {:>6} {:>10} {:>9} {:>9} {:>9} {:>9} {:>8.1} {:>9.2} {:>9.2}{}{}\n",
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
        r.flushes_per_op,
        r.fences_per_op,
        if r.read_misses > 0 {
            format!("  ({} reads missed)", r.read_misses)
        } else {
            String::new()
        },
        scan_note(r),
    )
}

/// What the scans of `r` read, for its row (empty without scans).
fn scan_note(r: &Record) -> String {
    if r.scans == 0 {
        return String::new();
    }
    format!(
        "  ({} M items/s, {:.1} items/scan)",
        mops(r.items_per_sec),
        r.items as f64 / r.scans as f64
    )
}

/// The note printed instead of a point an engine cannot run.
fn skip_note(engine: EngineKind, spec: &WorkloadSpec) -> String {
    format!(
        "{:<21} {:<17} skipped: {spec} scans and {} has no ordered reads (use persimmon-ordered, \
         persimmon-dram, lmdb or rocksdb)\n",
        engine.name(),
        spec.to_string(),
        engine.name()
    )
}

fn distribution_of(args: &BenchArgs, spec: &crate::workload::WorkloadSpec) -> Distribution {
    let theta = args.zipf_theta;
    match args.distribution {
        Some(DistributionName::Uniform) => Distribution::Uniform,
        Some(DistributionName::Zipfian) => Distribution::Zipfian { theta },
        Some(DistributionName::Latest) => Distribution::Latest { theta },
        None => spec.default_distribution(theta),
    }
}

fn benchmark(args: &BenchArgs, sizes: PoolSizes, out: &mut dyn Write) -> Result<()> {
    let engine_kinds: &[EngineKind] = &args.engines.0;
    for k in engine_kinds {
        k.check_built()?;
    }
    let runnable = |k: &EngineKind, spec: &WorkloadSpec| !spec.scans() || k.has_ordered_reads();
    if !args
        .workload
        .0
        .iter()
        .any(|spec| engine_kinds.iter().any(|k| runnable(k, spec)))
    {
        return Err(Error::usage(
            "every workload here scans (range scans), and none of the engines has ordered \
             reads: add persimmon-ordered, persimmon-dram, lmdb or rocksdb to --engines",
        ));
    }
    let threads_list = &args.threads.0;
    let max_threads = threads_list.iter().copied().max().unwrap_or(1);
    let cores = cores();
    let (stop, warmup) = phase_length(args);
    let pool_max = sizes
        .max
        .unwrap_or_else(|| persimmon::Options::default().pool_bytes_max);

    let (run_dir, _scratch, fs) = run_dir(args)?;

    let open_config = |dir: PathBuf, value_size: usize| OpenConfig {
        dir,
        pool_bytes_initial: sizes
            .initial
            .unwrap_or_else(|| pool_estimate(args.keys, args.key_size, value_size)),
        pool_bytes_max: pool_max,
        max_threads: max_threads.max(cores),
    };

    // Open every engine once: fail before any long run, and state settings.
    let mut durability = Vec::new();
    for k in engine_kinds {
        let dir = run_dir.join(format!("{}-preflight", k.name()));
        fresh_dir(&dir)?;
        let mut config = open_config(dir.clone(), args.value_size);
        config.pool_bytes_initial = MIN_POOL_BYTES;
        let store = engines::open(*k, &config)?;
        durability.push(store.durability());
        drop(store);
        let _ = std::fs::remove_dir_all(&dir);
    }

    let workloads: Vec<String> = args.workload.0.iter().map(|w| w.to_string()).collect();
    let mut header = format!(
        "bench: {} keys of {} B; workloads {}; threads {}; {} per point after {:.1} s warm-up; seed {}\n\
         \x20      stores in {} ({fs}); {cores} cores\n",
        args.keys,
        args.key_size,
        workloads.join(", "),
        threads_list
            .iter()
            .map(|t| t.to_string())
            .collect::<Vec<_>>()
            .join(","),
        match stop {
            Stop::Ops(n) => format!("{n} operations"),
            Stop::After(d) => format!("{:.1} s", d.as_secs_f64()),
        },
        warmup.as_secs_f64(),
        args.seed,
        args.pool_dir.display(),
    );
    for (k, d) in engine_kinds.iter().zip(&durability) {
        header.push_str(&format!("{:<21} {d}\n", k.name()));
    }
    header.push('\n');
    header.push_str(ROW_HEADER);
    write_out(out, &header)?;

    let mut records: Vec<Record> = Vec::new();
    for (point, spec) in args.workload.0.iter().enumerate() {
        let value_size = spec.value_size(args.value_size);
        let distribution = distribution_of(args, spec);
        let zipfian = match distribution {
            Distribution::Uniform => None,
            Distribution::Zipfian { theta } | Distribution::Latest { theta } => {
                Some(Zipfian::new(args.keys, theta))
            }
        };
        let seed = scramble(args.seed ^ scramble(point as u64 + 1));
        for (k, durability) in engine_kinds.iter().zip(&durability) {
            if !runnable(k, spec) {
                write_out(out, &skip_note(*k, spec))?;
                continue;
            }
            let dir = run_dir.join(format!("{}-{point}", k.name()));
            fresh_dir(&dir)?;
            let store = engines::open(*k, &open_config(dir.clone(), value_size))?;

            let bar = progress::load_bar(args.keys, format!("load {} ({spec})", k.name()));
            let load_threads = args.load_threads.unwrap_or(cores);
            let load_time = runner::load(
                &*store,
                args.keys,
                args.key_size,
                value_size,
                load_threads,
                &mut |n| bar.set_position(n),
            )?;
            bar.finish_and_clear();

            let inserts = InsertCounter::new(args.keys);
            for &threads in threads_list {
                let phase = Phase {
                    mix: spec.mix(),
                    scan_length: spec.scan_length(),
                    distribution,
                    zipfian: zipfian.as_ref(),
                    key_size: args.key_size,
                    value_size,
                    threads,
                    warmup,
                    stop,
                    seed,
                };
                let total = warmup
                    + match stop {
                        Stop::After(d) => d,
                        Stop::Ops(_) => Duration::ZERO,
                    };
                let bar = progress::time_bar(
                    total.as_millis() as u64,
                    format!("{} {spec} {threads} thr", k.name()),
                );
                let eliminated_before = store.eliminated_writes();
                let result = runner::run_phase(&*store, &phase, &inserts, &mut |t| {
                    bar.set_position(t.as_millis() as u64)
                })?;
                bar.finish_and_clear();
                let secs = result.elapsed.as_secs_f64();
                let ops = result.ops;
                let per_op = |n: u64| if ops == 0 { 0.0 } else { n as f64 / ops as f64 };
                let h = &result.latency;
                let record = Record {
                    engine: k.name().into(),
                    workload: spec.to_string(),
                    distribution: distribution.name(),
                    threads,
                    value_size,
                    key_size: args.key_size,
                    keys: args.keys,
                    get_percent: spec.get_percent(),
                    ops,
                    duration_secs: secs,
                    ops_per_sec: if secs > 0.0 { ops as f64 / secs } else { 0.0 },
                    items_per_sec: if secs > 0.0 {
                        result.items as f64 / secs
                    } else {
                        0.0
                    },
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
                    eliminated_writes: store.eliminated_writes() - eliminated_before,
                    durability: durability.clone(),
                    cores,
                    load_secs: load_time.as_secs_f64(),
                    seed: args.seed,
                    ..Record::default()
                };
                write_out(out, &row(&record))?;
                records.push(record);
                if let Some(path) = &args.json {
                    write_json(path, &records)?;
                }
            }
            drop(store);
            if !args.keep_stores {
                let _ = std::fs::remove_dir_all(&dir);
            }
        }
    }

    write_plot_and_markdown(args, &records)?;
    if engine_kinds.len() > 1 {
        let mut summary = String::from("\n");
        for fig in report::figures(&records) {
            summary.push_str(&format!("{}: {}\n\n", fig.title, fig.subtitle));
            summary.push_str(&report::throughput_table(&fig));
            summary.push('\n');
        }
        write_out(out, &summary)?;
    }
    Ok(())
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
    fn json_field_names_are_the_interface() {
        let r = crate::report::tests::record("persimmon", "get-ratio:50", 2, 1e6);
        let v = serde_json::to_value(&r).unwrap();
        for field in [
            "engine",
            "workload",
            "threads",
            "value_size",
            "ops_per_sec",
            "p50_ns",
            "p99_ns",
            "p999_ns",
            "max_ns",
            "pm_bytes_per_op",
            "flushes_per_op",
            "fences_per_op",
            "durability",
            "distribution",
            "keys",
            "items_per_sec",
            "scans",
            "items",
        ] {
            assert!(v.get(field).is_some(), "missing {field}: {v}");
        }
        let p = serde_json::to_value(ProbeRecord {
            engine: "probe".into(),
            ..ProbeRecord::default()
        })
        .unwrap();
        for field in [
            "engine",
            "dependent_load_ns",
            "nt_write_gbps",
            "get_floor_ns",
        ] {
            assert!(p.get(field).is_some(), "missing {field}: {p}");
        }
    }

    #[test]
    fn results_round_trip_through_json_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let records = vec![crate::report::tests::record("persimmon", "ycsb-a", 2, 1e6)];
        write_json(&a, &records).unwrap();
        let probe = ProbeRecord {
            engine: "probe".into(),
            dependent_load_ns: 90.0,
            ..ProbeRecord::default()
        };
        let b = dir.path().join("b.json");
        write_json(&b, std::slice::from_ref(&probe)).unwrap();
        let (read, p) = read_results(&[a, b]).unwrap();
        assert_eq!(read, records);
        assert_eq!(p, Some(probe));
    }

    #[test]
    fn results_written_before_scans_existed_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.json");
        std::fs::write(
            &old,
            r#"[{"engine": "persimmon", "workload": "ycsb-a", "threads": 2, "ops_per_sec": 1e6}]"#,
        )
        .unwrap();
        let (read, _) = read_results(&[old]).unwrap();
        assert_eq!(read[0].ops_per_sec, 1e6);
        assert_eq!(
            (read[0].items_per_sec, read[0].scans, read[0].items),
            (0.0, 0, 0)
        );
    }

    #[test]
    fn filesystem_of_finds_the_root() {
        if Path::new("/proc/mounts").exists() {
            assert!(filesystem_of(Path::new("/")).is_some());
        }
    }
}
