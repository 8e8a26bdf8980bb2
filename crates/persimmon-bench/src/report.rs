//! Figures and Markdown tables from records.
//!
//! Records are grouped into *figures* the way the MPKV paper draws them:
//! throughput against one varying quantity (GET ratio, value size, threads,
//! or the YCSB workload), one line per engine. A figure's table has one
//! row per x value, one throughput column per engine, and the ratio of the
//! first engine (the subject, normally `persimmon`) to each other engine.
//! A `scan:N` figure counts pairs read rather than operations: items per
//! second against the scan length. A `batch:N` figure counts keys written
//! per second against N, one line for the batches and one for the same
//! keys as single puts (`<engine> single puts`), so the subject's ratio is
//! the batches' gain; its PM bytes, flushes and fences are per key. A
//! `multiget:N` figure counts keys read per second against N (N keys per
//! batched read); its PM figures are per key read too.
//! Records that differ in `deadline_fraction` make different figures.
//! Records that differ in `cache` (`--cache-bytes`) make a figure against
//! the cache size when nothing else varies (one workload, one thread
//! count), else a figure per cache size.
//!
//! The PDV microbenchmark's records (workload `pdv`) get their own table in
//! Markdown and on stdout ([`pdv_table`]): one row per variant, and per
//! thread count its throughput and its ratio to `single-word`.
//!
//! The restart workload's records (workload `restart`) get a table of their
//! own too ([`restart_table`]): one row per engine, its times to first
//! served requests and to full speed after a reopen; they make no figure.
//!
//! Invariants:
//! - Pure functions of records: `--report` on a run's JSON renders what the
//!   run itself wrote.
//! - The measurement constants its prose cites come from
//!   [`crate::record`], the ones the experiments measure by.

use std::collections::{BTreeSet, HashMap};
use std::fmt::Write as _;

use persimmon::size::human_bytes;

use crate::record::{ProbeRecord, Record, FULL_SPEED, RANGE_PAIRS, SINGLE_WORD, WINDOW};
use crate::workload::WorkloadSpec;

/// The quantity a figure varies.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum XAxis {
    GetRatio,
    ValueSize,
    Threads,
    Workload,
    /// Pairs per scan (`scan:N`).
    ScanLength,
    /// Keys per batch (`batch:N`).
    BatchSize,
    /// Keys per batched read (`multiget:N`).
    MultiGetSize,
    /// DRAM cache per store (`--cache-bytes`), in command-line order.
    CacheSize,
}

impl XAxis {
    pub fn label(self) -> &'static str {
        match self {
            XAxis::GetRatio => "GET ratio (%)",
            XAxis::ValueSize => "value size (bytes)",
            XAxis::Threads => "threads",
            XAxis::Workload => "workload",
            XAxis::ScanLength => "scan length (items)",
            XAxis::BatchSize => "batch size (keys)",
            XAxis::MultiGetSize => "keys per batched read",
            XAxis::CacheSize => "cache (bytes or % of the data)",
        }
    }

    /// Whether x values are points of a numeric sweep (drawn as lines) or
    /// separate workloads (drawn as bars).
    pub fn is_sweep(self) -> bool {
        self != XAxis::Workload
    }
}

/// One figure: throughput per engine at each x value.
#[derive(Debug)]
pub struct Figure<'a> {
    /// What is drawn ("Throughput vs GET ratio").
    pub title: String,
    /// What is held fixed ("2 threads, 64 B values, ...").
    pub subtitle: String,
    pub x_axis: XAxis,
    /// X labels, in order.
    pub xs: Vec<String>,
    /// Engines in order of first appearance; the first is the subject.
    pub engines: Vec<String>,
    /// Whether throughput counts pairs read by scans (items/s, every
    /// record a `scan:N`), keys written by batches (keys/s, every record
    /// a `batch:N`) or keys read by batched reads (keys/s, every record a
    /// `multiget:N`) rather than operations.
    pub items: bool,
    cells: HashMap<(usize, usize), &'a Record>,
}

impl<'a> Figure<'a> {
    /// The record of engine `e` at x index `x` (the last one if repeated).
    pub fn cell(&self, x: usize, e: usize) -> Option<&'a Record> {
        self.cells.get(&(x, e)).copied()
    }

    /// The throughput the figure draws: items/s or ops/s.
    pub fn throughput(&self, r: &Record) -> f64 {
        if self.items {
            r.items_per_sec
        } else {
            r.ops_per_sec
        }
    }

    /// What [`throughput`](Self::throughput) counts per second.
    pub fn unit(&self) -> &'static str {
        match (self.items, self.x_axis) {
            (true, XAxis::BatchSize | XAxis::MultiGetSize) => "keys",
            (true, _) => "items",
            (false, _) => "ops",
        }
    }

    /// What the PM figures of the details table are per: a key written
    /// for batches, a key read for batched reads, else an operation.
    pub fn pm_unit(&self) -> &'static str {
        if matches!(self.x_axis, XAxis::BatchSize | XAxis::MultiGetSize) {
            "key"
        } else {
            "op"
        }
    }
}

fn family(workload: &str) -> &str {
    match workload.split_once(':') {
        Some((f, _)) => f,
        None if workload.starts_with("ycsb") => "ycsb",
        None => workload,
    }
}

/// Sort key of a workload on its axis: the number after `:`, else its name.
fn workload_order(w: &str) -> (u64, String) {
    let n = w
        .split_once(':')
        .and_then(|(_, n)| n.parse::<u64>().ok())
        .unwrap_or(0);
    (n, w.to_string())
}

fn first_seen<T: PartialEq + Clone>(items: impl Iterator<Item = T>) -> Vec<T> {
    let mut out: Vec<T> = Vec::new();
    for i in items {
        if !out.contains(&i) {
            out.push(i);
        }
    }
    out
}

/// Groups `records` into figures.
pub fn figures(records: &[Record]) -> Vec<Figure<'_>> {
    // Records that differ only in workload or threads (and, within one
    // family, in distribution) belong to one group.
    type GroupKey = (String, usize, usize, u64, u64);
    let key_of = |r: &Record| -> GroupKey {
        let f = family(&r.workload).to_string();
        let value = if f == "value-size" { 0 } else { r.value_size };
        let deadlines = r.deadline_fraction.to_bits();
        (f, value, r.key_size, r.keys, deadlines)
    };
    let records: Vec<&Record> = records.iter().filter(|r| !is_restart(r)).collect();
    let groups = first_seen(records.iter().map(|r| key_of(r)));
    let mut out = Vec::new();
    for g in groups {
        let members: Vec<&Record> = records.iter().copied().filter(|r| key_of(r) == g).collect();
        let caches = first_seen(members.iter().map(|r| r.cache.clone()));
        let one = |f: fn(&Record) -> String| first_seen(members.iter().map(|r| f(r))).len() == 1;
        if caches.len() > 1 && one(|r| r.workload.clone()) && one(|r| r.threads.to_string()) {
            out.push(figure(XAxis::CacheSize, &members));
            continue;
        }
        for cache in caches {
            let rs: Vec<&Record> = members
                .iter()
                .copied()
                .filter(|r| r.cache == cache)
                .collect();
            out.extend(workload_or_thread_figures(&g.0, &rs));
        }
    }
    out
}

/// The figures of records of one family and cache size: one per thread
/// count when the workloads vary (or there is one thread count), else
/// one against the thread count.
fn workload_or_thread_figures<'a>(family: &str, members: &[&'a Record]) -> Vec<Figure<'a>> {
    let workloads = first_seen(members.iter().map(|r| r.workload.clone()));
    let threads = first_seen(members.iter().map(|r| r.threads));
    let axis_of_workload = match family {
        "get-ratio" => XAxis::GetRatio,
        "value-size" => XAxis::ValueSize,
        "scan" => XAxis::ScanLength,
        "batch" => XAxis::BatchSize,
        "multiget" => XAxis::MultiGetSize,
        _ => XAxis::Workload,
    };
    if workloads.len() == 1 && threads.len() > 1 {
        return vec![figure(XAxis::Threads, members)];
    }
    threads
        .iter()
        .map(|t| {
            let rs: Vec<&Record> = members
                .iter()
                .copied()
                .filter(|r| r.threads == *t)
                .collect();
            figure(axis_of_workload, &rs)
        })
        .collect()
}

fn figure<'a>(axis: XAxis, rs: &[&'a Record]) -> Figure<'a> {
    let x_of = |r: &Record| -> String {
        match axis {
            XAxis::GetRatio => format!("{}", r.get_percent.round()),
            XAxis::ValueSize => r.value_size.to_string(),
            XAxis::Threads => r.threads.to_string(),
            XAxis::Workload => r.workload.clone(),
            XAxis::ScanLength | XAxis::BatchSize | XAxis::MultiGetSize => {
                workload_order(&r.workload).0.to_string()
            }
            XAxis::CacheSize => r.cache.clone(),
        }
    };
    let mut xs = first_seen(rs.iter().map(|r| x_of(r)));
    match axis {
        XAxis::Workload => xs.sort_by_key(|w| workload_order(w)),
        XAxis::CacheSize => {}
        _ => xs.sort_by_key(|x| x.parse::<u64>().unwrap_or(u64::MAX)),
    }
    let engines = first_seen(rs.iter().map(|r| r.engine.clone()));
    let mut cells = HashMap::new();
    for r in rs {
        let x = xs.iter().position(|v| *v == x_of(r)).expect("x listed");
        let e = engines
            .iter()
            .position(|v| *v == r.engine)
            .expect("engine listed");
        cells.insert((x, e), *r);
    }
    let first = rs[0];
    let distributions: BTreeSet<&str> = rs.iter().map(|r| r.distribution.as_str()).collect();
    let mut parts = Vec::new();
    if axis != XAxis::Threads {
        let plural = if first.threads == 1 { "" } else { "s" };
        parts.push(format!("{} thread{plural}", first.threads));
    }
    match axis {
        XAxis::ValueSize => {
            parts.push(format!("{} % GET", first.get_percent.round()));
        }
        XAxis::Threads | XAxis::CacheSize => {
            parts.push(first.workload.clone());
            parts.push(format!("{} B values", first.value_size));
        }
        XAxis::GetRatio
        | XAxis::Workload
        | XAxis::ScanLength
        | XAxis::BatchSize
        | XAxis::MultiGetSize => parts.push(format!("{} B values", first.value_size)),
    }
    if axis != XAxis::CacheSize && !first.cache.is_empty() {
        parts.push(format!("cache {}", first.cache));
    }
    if is_pdv(first) {
        parts = vec!["persisted updates of one 8-byte variable per thread".to_string()];
    } else {
        parts.push(format!("{} B keys", first.key_size));
        parts.push(format!("{} keys", first.keys));
        parts.push(distributions.into_iter().collect::<Vec<_>>().join("/"));
        if first.deadline_fraction > 0.0 {
            parts.push(format!(
                "{:.0} % of keys with deadlines",
                first.deadline_fraction * 100.0
            ));
        }
    }
    let what = match axis {
        XAxis::Workload => "Throughput per workload".to_string(),
        _ => format!(
            "Throughput vs {}",
            axis.label().split(" (").next().unwrap_or("")
        ),
    };
    let items = rs.iter().all(|r| family(&r.workload) == "scan")
        || rs.iter().all(|r| is_batch(r))
        || rs.iter().all(|r| is_multiget(r));
    if items && rs.iter().all(|r| is_multiget(r)) {
        parts.insert(
            0,
            "keys read per second (N keys per batched read: Db::get_many, one LMDB read \
             transaction, RocksDB multi_get)"
                .to_string(),
        );
    } else if items && axis == XAxis::BatchSize {
        parts.insert(
            0,
            "keys written per second (a batch of N keys in one atomic write, or N single puts)"
                .to_string(),
        );
    } else if items {
        parts.insert(0, "pairs read by scans per second".to_string());
    }
    Figure {
        title: what,
        subtitle: parts.join(", "),
        x_axis: axis,
        xs,
        engines,
        items,
        cells,
    }
}

/// `ns` as a short latency: `312 ns`, `4.5 µs`, `12.0 ms`.
pub fn latency(ns: u64) -> String {
    let n = ns as f64;
    if n < 1e3 {
        format!("{ns} ns")
    } else if n < 1e6 {
        format!("{:.1} µs", n / 1e3)
    } else if n < 1e9 {
        format!("{:.1} ms", n / 1e6)
    } else {
        format!("{:.2} s", n / 1e9)
    }
}

/// Throughput in millions of operations per second.
pub fn mops(ops_per_sec: f64) -> String {
    if ops_per_sec >= 1e5 {
        format!("{:.3}", ops_per_sec / 1e6)
    } else {
        format!("{:.4}", ops_per_sec / 1e6)
    }
}

/// A count per operation or key (flushes, fences): two decimals, four
/// below 0.1 so that a batch's share of a fence still shows.
pub fn per_unit(x: f64) -> String {
    if x != 0.0 && x.abs() < 0.1 {
        format!("{x:.4}")
    } else {
        format!("{x:.2}")
    }
}

/// `a ÷ b` of two records' throughputs, or a dash when one is missing or
/// has none.
pub fn ratio(a: Option<&Record>, b: Option<&Record>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b.ops_per_sec > 0.0 => {
            format!("{:.2}×", a.ops_per_sec / b.ops_per_sec)
        }
        _ => "–".into(),
    }
}

/// `a ÷ b` of two throughputs, or a dash when one is missing or zero.
fn ratio_of(a: Option<f64>, b: Option<f64>) -> String {
    match (a, b) {
        (Some(a), Some(b)) if b > 0.0 => format!("{:.2}×", a / b),
        _ => "–".into(),
    }
}

/// The throughput table of `fig` (Mops/s, or M items/s for scans) with the
/// subject's ratios.
pub fn throughput_table(fig: &Figure<'_>) -> String {
    let mut s = String::new();
    let subject = &fig.engines[0];
    let unit = if fig.items {
        format!("M {}/s", fig.unit())
    } else {
        "Mops/s".to_string()
    };
    let mut header = vec![fig.x_axis.label().to_string()];
    header.extend(fig.engines.iter().map(|e| format!("{e} {unit}")));
    header.extend(fig.engines[1..].iter().map(|e| format!("{subject} ÷ {e}")));
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(
        s,
        "|{}",
        std::iter::repeat_n("---:|", header.len()).collect::<String>()
    );
    for (xi, x) in fig.xs.iter().enumerate() {
        let mut row = vec![x.clone()];
        let value = |ei: usize| fig.cell(xi, ei).map(|r| fig.throughput(r));
        for ei in 0..fig.engines.len() {
            row.push(value(ei).map_or("–".into(), mops));
        }
        for ei in 1..fig.engines.len() {
            row.push(ratio_of(value(0), value(ei)));
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s
}

/// Per-engine latency and PM traffic of `fig`, with the fraction of the
/// machine's limits when a probe is known.
pub fn details_table(fig: &Figure<'_>, probe: Option<&ProbeRecord>) -> String {
    let mut s = String::new();
    let scans = fig.cells.values().any(|r| r.scans > 0);
    // Keys written (batch:N) or read (multiget:N) per second.
    let batches = matches!(fig.x_axis, XAxis::BatchSize | XAxis::MultiGetSize);
    let space = fig.cells.values().any(|r| r.used_bytes_per_key > 0.0);
    let mut header: Vec<String> = [fig.x_axis.label(), "engine", "Mops/s"]
        .map(String::from)
        .to_vec();
    if scans {
        header.extend(["M items/s", "items/scan"].map(String::from));
    }
    if batches {
        header.push("M keys/s".into());
    }
    let per = fig.pm_unit();
    header.extend(["p50", "p99", "p99.9", "max"].map(String::from));
    header.extend([
        format!("PM B/{per}"),
        format!("flushes/{per}"),
        format!("fences/{per}"),
        "eliminated".into(),
    ]);
    if space {
        header.push("pool B/key after load (used, live)".into());
    }
    let disk = fig
        .cells
        .values()
        .any(|r| r.disk_read_bytes_per_op > 0.0 || r.disk_write_bytes_per_op > 0.0);
    let tier = fig
        .cells
        .values()
        .any(|r| r.cache_hits + r.cache_misses > 0 || r.ssd_extents_per_op > 0.0);
    if tier {
        header.extend([
            "cache hits".to_string(),
            format!("SSD syncs/{per}"),
            format!("SSD extents/{per}"),
        ]);
    }
    if disk {
        header.extend([
            format!("disk read B/{per}"),
            format!("disk written B/{per}"),
            format!("device reads/{per}"),
            format!("device flushes/{per}"),
        ]);
    }
    if probe.is_some() {
        header.extend(["% of GET bound", "PM write GB/s (% of NT)"].map(String::from));
    }
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(
        s,
        "|---|---|{}",
        std::iter::repeat_n("---:|", header.len() - 2).collect::<String>()
    );
    for (xi, x) in fig.xs.iter().enumerate() {
        for (ei, engine) in fig.engines.iter().enumerate() {
            let Some(r) = fig.cell(xi, ei) else { continue };
            let mut row = vec![x.clone(), engine.clone(), mops(r.ops_per_sec)];
            if scans && r.scans > 0 {
                row.push(mops(r.items_per_sec));
                row.push(format!("{:.1}", r.items as f64 / r.scans as f64));
            } else if scans {
                row.extend(["–", "–"].map(String::from));
            }
            if batches {
                row.push(mops(r.items_per_sec));
            }
            row.extend([
                latency(r.p50_ns),
                latency(r.p99_ns),
                latency(r.p999_ns),
                latency(r.max_ns),
                format!("{:.1}", r.pm_bytes_per_op),
                per_unit(r.flushes_per_op),
                per_unit(r.fences_per_op),
                r.eliminated_writes.to_string(),
            ]);
            if space {
                row.push(space_cell(r));
            }
            if tier {
                row.push(format!("{:.1} %", 100.0 * r.cache_hit_ratio));
                row.push(per_unit(r.ssd_syncs_per_op));
                row.push(per_unit(r.ssd_extents_per_op));
            }
            if disk {
                row.push(format!("{:.0}", r.disk_read_bytes_per_op));
                row.push(format!("{:.0}", r.disk_write_bytes_per_op));
                row.push(per_unit(r.device_reads_per_op));
                row.push(per_unit(r.device_flushes_per_op));
            }
            if let Some(p) = probe {
                let cores = r.threads.min(p.cores.max(1)) as f64;
                let bound = cores * p.get_bound_ops_per_sec_per_thread;
                // A batched read's keys each count as a GET.
                let gets = if fig.x_axis == XAxis::MultiGetSize {
                    r.items_per_sec
                } else {
                    r.ops_per_sec
                };
                row.push(format!("{:.0} %", 100.0 * gets / bound));
                let per_sec = if batches {
                    r.items_per_sec
                } else {
                    r.ops_per_sec
                };
                let gbps = r.pm_bytes_per_op * per_sec / 1e9;
                row.push(format!(
                    "{gbps:.2} ({:.0} %)",
                    100.0 * gbps / p.nt_write_gbps.max(1e-9)
                ));
            }
            let _ = writeln!(s, "| {} |", row.join(" | "));
        }
    }
    s
}

/// The pool bytes per key after the load, used and live, or a dash for an
/// engine that does not tell.
fn space_cell(r: &Record) -> String {
    if r.used_bytes_per_key > 0.0 {
        format!("{:.1}, {:.1}", r.used_bytes_per_key, r.live_bytes_per_key)
    } else {
        "–".into()
    }
}

/// One line on the machine's limits.
pub fn probe_summary(p: &ProbeRecord) -> String {
    format!(
        "Machine limits (`persimmon bench --probe`, {} mapping in {}): dependent random load \
         {:.1} ns, so a GET (bucket, then record: two dependent misses) takes at least {:.1} ns \
         = {:.2} M GETs/s per thread; non-temporal write bandwidth {:.2} GB/s with {} threads \
         ({:.2} GB/s with one). \"% of GET bound\" divides throughput by min(threads, {} cores) × \
         the per-thread bound; \"PM write GB/s\" is PM bytes per operation × operations per second.",
        human_bytes(p.mapping_bytes),
        p.pool_dir,
        p.dependent_load_ns,
        p.get_floor_ns,
        p.get_bound_ops_per_sec_per_thread / 1e6,
        p.nt_write_gbps,
        p.nt_write_threads,
        p.nt_write_gbps_1thread,
        p.cores,
    )
}

/// Whether `r` comes from the PDV microbenchmark (`--workload pdv`).
pub fn is_pdv(r: &Record) -> bool {
    r.workload == WorkloadSpec::Pdv.to_string()
}

/// Whether `r` comes from a `batch:N` workload.
pub fn is_batch(r: &Record) -> bool {
    family(&r.workload) == "batch"
}

/// Whether `r` comes from a batched-read workload (`multiget:N`).
pub fn is_multiget(r: &Record) -> bool {
    family(&r.workload) == "multiget"
}

/// Whether `r` comes from the restart workload (`--workload restart`).
pub fn is_restart(r: &Record) -> bool {
    r.workload == WorkloadSpec::Restart.to_string()
}

/// A time of the restart tables: a dash for 0 (not measured).
fn time_cell(ns: u64) -> String {
    if ns == 0 {
        "–".into()
    } else {
        latency(ns)
    }
}

/// The times of a restart record, in the columns' order: open, first GET,
/// first range read, rebuild done, ordered walk done, point index ready,
/// full speed (a dash for each not measured).
pub fn restart_times(r: &Record) -> [String; 8] {
    [
        r.open_ns,
        r.first_get_ns,
        r.first_range_ns,
        r.first_insert_ns,
        r.rebuild_done_ns,
        r.ordered_walk_done_ns,
        r.point_index_ready_ns,
        r.full_speed_ns,
    ]
    .map(time_cell)
}

/// The restart workload's table: one row per engine (the last record of
/// each), its median times from the start of the open and its GET rates.
/// Records of other workloads are ignored.
pub fn restart_table(records: &[Record]) -> String {
    let rs: Vec<&Record> = records.iter().filter(|r| is_restart(r)).collect();
    let engines = first_seen(rs.iter().map(|r| r.engine.clone()));
    let header = [
        "engine",
        "open",
        "first GET",
        "first range read",
        "first insert",
        "rebuild done",
        "ordered walk done",
        "point index ready",
        "full speed (90 %)",
        "first 50 ms Mops/s",
        "steady Mops/s",
        "DRAM index",
    ];
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(
        s,
        "|---|{}",
        std::iter::repeat_n("---:|", header.len() - 1).collect::<String>()
    );
    for e in engines {
        let Some(r) = rs.iter().rev().find(|r| r.engine == e) else {
            continue;
        };
        let [open, first_get, first_range, first_insert, rebuild, walk, index_ready, full_speed] =
            restart_times(r);
        let row = [
            e.clone(),
            open,
            first_get,
            first_range,
            first_insert,
            rebuild,
            walk,
            index_ready,
            full_speed,
            mops(r.first_window_ops_per_sec),
            mops(r.ops_per_sec),
            if r.dram_index_bytes == 0 {
                "–".into()
            } else {
                human_bytes(r.dram_index_bytes)
            },
        ];
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s
}

/// The PDV microbenchmark's table: one row per variant (in the order run),
/// per thread count its Mops/s and its ratio to `single-word` at that
/// thread count (engine-put rows: to `persimmon-put`), then flushes, fences and PM bytes per update (from the
/// smallest thread count). Records of other workloads are ignored.
pub fn pdv_table(records: &[Record]) -> String {
    let rs: Vec<&Record> = records.iter().filter(|r| is_pdv(r)).collect();
    let variants = first_seen(rs.iter().map(|r| r.engine.clone()));
    let mut threads = first_seen(rs.iter().map(|r| r.threads));
    threads.sort_unstable();
    let find = |engine: &str, t: usize| {
        rs.iter()
            .rev()
            .find(|r| r.engine == engine && r.threads == t)
            .copied()
    };
    let mut header = vec!["variant".to_string()];
    for t in &threads {
        let plural = if *t == 1 { "" } else { "s" };
        header.push(format!("{t} thread{plural} Mops/s"));
        header.push(format!("{t} thread{plural} ÷ reference"));
    }
    header.extend(["flushes/op", "fences/op", "PM B/op"].map(String::from));
    let mut s = String::new();
    let _ = writeln!(s, "| {} |", header.join(" | "));
    let _ = writeln!(
        s,
        "|---|{}",
        std::iter::repeat_n("---:|", header.len() - 1).collect::<String>()
    );
    for v in &variants {
        let mut row = vec![v.clone()];
        for &t in &threads {
            let r = find(v, t);
            row.push(r.map_or("–".into(), |r| mops(r.ops_per_sec)));
            // Engine-put rows compare with the engine alone.
            let reference = if v.starts_with("persimmon-put") {
                "persimmon-put"
            } else {
                SINGLE_WORD
            };
            row.push(ratio(r, find(reference, t)));
        }
        match threads.iter().find_map(|&t| find(v, t)) {
            Some(r) => row.extend([
                format!("{:.2}", r.flushes_per_op),
                format!("{:.2}", r.fences_per_op),
                format!("{:.1}", r.pm_bytes_per_op),
            ]),
            None => row.extend(["–", "–", "–"].map(String::from)),
        }
        let _ = writeln!(s, "| {} |", row.join(" | "));
    }
    s
}

/// Each engine's durability settings, one bullet each.
pub fn durability_list(records: &[Record]) -> String {
    let mut s = String::new();
    for engine in first_seen(records.iter().map(|r| r.engine.clone())) {
        let d = records
            .iter()
            .find(|r| r.engine == engine)
            .map_or("", |r| r.durability.as_str());
        let _ = writeln!(s, "- `{engine}`: {d}");
    }
    s
}

/// The whole Markdown report: durability settings, then per figure the
/// throughput table with ratios and the details table.
pub fn markdown(records: &[Record], probe: Option<&ProbeRecord>, source: &str) -> String {
    let mut s = String::new();
    let _ = writeln!(s, "<!-- generated by persimmon bench from {source} -->\n");
    if let Some(p) = probe {
        let _ = writeln!(s, "{}\n", probe_summary(p));
    }
    let (pdv, records): (Vec<Record>, Vec<Record>) = records.iter().cloned().partition(is_pdv);
    let (restart, records): (Vec<Record>, Vec<Record>) = records.into_iter().partition(is_restart);
    let records = &records[..];
    if let Some(first) = restart.first() {
        let _ = writeln!(
            s,
            "### Restart: time to first served requests and to full speed after a reopen\n\n\
             {} cores; {} keys of {} B with {} B values, loaded, closed, then reopened {} times \
             (medians). Times count from the start of the open call: the open returned, the \
             first GET of a random existing key returned, then the first range read of {} pairs, \
             then the background work after open as the stats first showed it done (polled every \
             ms), and full speed: the end of the first {} ms window of one thread's GETs at \
             >= {:.0} % of the steady rate (the median window after the background work). \
             Durability settings:\n",
            first.cores,
            first.keys,
            first.key_size,
            first.value_size,
            first.restarts,
            RANGE_PAIRS,
            WINDOW.as_millis(),
            FULL_SPEED * 100.0,
        );
        s.push_str(&durability_list(&restart));
        s.push('\n');
        s.push_str(&restart_table(&restart));
        s.push('\n');
    }
    if let Some(first) = pdv.first() {
        let _ = writeln!(
            s,
            "### PDV microbenchmark: persisted updates per second of one variable per thread\n\n\
             {} cores; a timed phase of {:.1} s after warm-up per point; each variant in a fresh \
             file; {}. The ratio columns divide each variant's throughput by `{}`'s at the same \
             thread count; the `persimmon-put` rows (an engine put of an existing key, then the \
             variable, if any, persisted as a per-thread counter) divide by `persimmon-put`'s.\n",
            first.cores, first.duration_secs, first.durability, SINGLE_WORD
        );
        s.push_str(&pdv_table(&pdv));
        s.push('\n');
    }
    if !records.is_empty() {
        let cores = records[0].cores;
        let _ = writeln!(
            s,
            "{} cores; each engine in its own fresh store, loaded with the same keys, then a \
             timed phase of {:.1} s after warm-up per point. Durability settings:\n",
            cores, records[0].duration_secs
        );
        s.push_str(&durability_list(records));
        s.push('\n');
    }
    for fig in figures(records) {
        let _ = writeln!(s, "### {}: {}\n", fig.title, fig.subtitle);
        s.push_str(&throughput_table(&fig));
        s.push('\n');
        s.push_str(&details_table(&fig, probe));
        s.push('\n');
    }
    s
}

#[cfg(test)]
pub(crate) mod tests;
