//! The commands: open the pool as the command needs it, call the engine,
//! print the result.

use std::ffi::OsStr;
use std::io::{self, BufWriter, Write};
use std::ops::Bound;
use std::os::unix::ffi::OsStrExt;

use persimmon::{CheckReport, Db, Options, PointIndex, Stats};

use crate::cli::{Cli, Command, KeyArgs, PoolArgs, PutArgs, ScanArgs, StatsArgs};
use crate::escape::{escape, escape_into, unescape};
use crate::failure::Failure;
use crate::size::human_bytes;
use crate::{demo, load, progress};

/// Runs the command `cli` asks for.
pub fn run(cli: Cli) -> Result<(), Failure> {
    let pool = &cli.pool;
    match cli.command {
        Command::Put(args) => put(pool, args),
        Command::Get(args) => get(pool, args),
        Command::Del(args) => del(pool, args),
        Command::Load(args) => load::run(pool, args),
        Command::Dump => dump(pool),
        Command::Scan(args) => scan(pool, args),
        Command::Stats(args) => stats(pool, args),
        Command::Check => check(pool),
        Command::Demo(args) => demo::run(pool, args),
        Command::Bench(args) => bench(pool, &args),
        Command::Serve(args) => crate::serve::run(pool, args),
    }
}

/// `persimmon bench`: the benchmark crate does the work.
fn bench(pool: &PoolArgs, args: &persimmon_bench::BenchArgs) -> Result<(), Failure> {
    let sizes = persimmon_bench::PoolSizes {
        initial: pool.pool_size,
        max: pool.pool_max,
    };
    persimmon_bench::run(args, sizes, &mut io::stdout().lock()).map_err(|e| {
        if e.is_broken_pipe() {
            Failure::BrokenPipe
        } else {
            Failure::error(e.to_string())
        }
    })
}

/// Engine options for `pool`; `create` says whether a missing pool is made.
pub fn options(pool: &PoolArgs, create: bool) -> Result<Options, Failure> {
    let mut o = Options {
        create,
        // Creation only: an existing pool keeps its own setting.
        ordered_index: pool.ordered_index,
        point_index: pool.point_index.unwrap_or_default(),
        ..Options::default()
    };
    if let Some(max) = pool.pool_max {
        o.pool_bytes_max = max;
    }
    if let Some(size) = pool.pool_size {
        if size > o.pool_bytes_max {
            if pool.pool_max.is_some() {
                return Err(Failure::error(format!(
                    "--pool-size {size} is larger than --pool-max {}",
                    o.pool_bytes_max
                )));
            }
            o.pool_bytes_max = size;
        }
        o.pool_bytes_initial = size;
    }
    Ok(o)
}

/// Opens the pool; `create` says whether a missing pool is made.
pub fn open(pool: &PoolArgs, create: bool) -> Result<Db, Failure> {
    Ok(Db::open(&pool.pool, options(pool, create)?)?)
}

/// KEY (or VALUE) as bytes, decoding escapes when asked.
fn arg_bytes(arg: &OsStr, escaped: bool, what: &str) -> Result<Vec<u8>, Failure> {
    let raw = arg.as_bytes();
    if !escaped {
        return Ok(raw.to_vec());
    }
    let mut scratch = Vec::new();
    unescape(raw, &mut scratch)
        .map(<[u8]>::to_vec)
        .map_err(|e| Failure::error(format!("{what}: {e}")))
}

fn put(pool: &PoolArgs, args: PutArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key, args.escaped, "KEY")?;
    let value = arg_bytes(&args.value, args.escaped, "VALUE")?;
    let db = open(pool, true)?;
    db.put(&key, &value)?;
    Ok(())
}

/// A key for messages: escaped, so that it prints on one line.
fn shown(key: &[u8]) -> String {
    String::from_utf8_lossy(&escape(key)).into_owned()
}

fn get(pool: &PoolArgs, args: KeyArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key, args.escaped, "KEY")?;
    let db = open(pool, false)?;
    let value = db
        .get(&key)?
        .ok_or_else(|| Failure::NotFound(format!("key {} not found", shown(&key))))?;
    let mut line = Vec::with_capacity(value.len() + 1);
    if args.escaped {
        escape_into(&value, &mut line);
    } else {
        line.extend_from_slice(&value);
    }
    line.push(b'\n');
    let mut out = io::stdout().lock();
    out.write_all(&line)
        .and_then(|()| out.flush())
        .map_err(Failure::stdout)
}

fn del(pool: &PoolArgs, args: KeyArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key, args.escaped, "KEY")?;
    let db = open(pool, false)?;
    if db.delete(&key)? {
        Ok(())
    } else {
        Err(Failure::NotFound(format!("key {} not found", shown(&key))))
    }
}

fn dump(pool: &PoolArgs) -> Result<(), Failure> {
    let db = open(pool, false)?;
    let bar = progress::items(db.len(), "dump");
    let mut out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let mut line = Vec::with_capacity(256);
    let mut written = 0u64;
    for item in db.iter() {
        let (key, value) = item.map_err(|e| {
            Failure::error(format!("reading a record after {written} records: {e}"))
        })?;
        line.clear();
        escape_into(&key, &mut line);
        line.push(b'\t');
        escape_into(&value, &mut line);
        line.push(b'\n');
        out.write_all(&line).map_err(Failure::stdout)?;
        written += 1;
        if written.is_multiple_of(4096) {
            bar.set_position(written);
        }
    }
    out.flush().map_err(Failure::stdout)?;
    bar.finish_and_clear();
    Ok(())
}

/// The smallest key greater than every key starting with `prefix`, if any
/// (`None`: the prefix is empty or all 0xff bytes, no upper end).
fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

/// The key range `scan` prints: `--from` (inclusive) to `--to` (exclusive),
/// narrowed to the keys starting with `--prefix`. Returns the inclusive
/// lower and exclusive upper end, `None` for an open end.
fn scan_range(
    from: Option<Vec<u8>>,
    to: Option<Vec<u8>>,
    prefix: Option<&[u8]>,
) -> (Option<Vec<u8>>, Option<Vec<u8>>) {
    let Some(prefix) = prefix else {
        return (from, to);
    };
    // Every key with the prefix is >= the prefix and < its end.
    let lower = match from {
        Some(f) if f.as_slice() > prefix => f,
        _ => prefix.to_vec(),
    };
    let upper = match (to, prefix_end(prefix)) {
        (Some(t), Some(e)) => Some(t.min(e)),
        (t, e) => t.or(e),
    };
    (Some(lower), upper)
}

fn scan(pool: &PoolArgs, args: ScanArgs) -> Result<(), Failure> {
    let bytes = |arg: &Option<std::ffi::OsString>, what| {
        arg.as_deref()
            .map(|a| arg_bytes(a, args.escaped, what))
            .transpose()
    };
    let from = bytes(&args.from, "--from")?;
    let to = bytes(&args.to, "--to")?;
    let prefix = bytes(&args.prefix, "--prefix")?;
    let db = open(pool, false)?;
    if !db.has_ordered_index() {
        return Err(Failure::error(format!(
            "{}: scan needs the ordered index, and this pool was created without it; \
             create a pool with --ordered-index and copy the records into it: \
             persimmon dump --pool OLD | persimmon load --pool NEW --ordered-index",
            db.path().display()
        )));
    }
    let (lower, upper) = scan_range(from, to, prefix.as_deref());
    let bounds = (
        lower.as_deref().map_or(Bound::Unbounded, Bound::Included),
        upper.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
    );
    let limit = args
        .limit
        .map_or(usize::MAX, |n| usize::try_from(n).unwrap_or(usize::MAX));
    if args.values {
        let range = db.range::<[u8]>(bounds)?;
        if args.rev {
            write_scan(range.rev().take(limit), true)
        } else {
            write_scan(range.take(limit), true)
        }
    } else {
        let keys = db.range_keys::<[u8]>(bounds)?;
        let no_value = |k: persimmon::Result<Vec<u8>>| k.map(|k| (k, Vec::new()));
        if args.rev {
            write_scan(keys.rev().take(limit).map(no_value), false)
        } else {
            write_scan(keys.take(limit).map(no_value), false)
        }
    }
}

/// Writes `items` as dump does: escaped keys, one per line, each followed
/// by a tab and its escaped value when `values` is set.
fn write_scan(
    items: impl Iterator<Item = persimmon::Result<(Vec<u8>, Vec<u8>)>>,
    values: bool,
) -> Result<(), Failure> {
    let mut out = BufWriter::with_capacity(1 << 20, io::stdout().lock());
    let mut line = Vec::with_capacity(256);
    for (written, item) in items.enumerate() {
        let (key, value) = item.map_err(|e| {
            Failure::error(format!(
                "reading the ordered index after {written} keys: {e}"
            ))
        })?;
        line.clear();
        escape_into(&key, &mut line);
        if values {
            line.push(b'\t');
            escape_into(&value, &mut line);
        }
        line.push(b'\n');
        out.write_all(&line).map_err(Failure::stdout)?;
    }
    out.flush().map_err(Failure::stdout)
}

/// Writes `text` to stdout.
pub fn print(text: &str) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(Failure::stdout)
}

fn stats(pool: &PoolArgs, args: StatsArgs) -> Result<(), Failure> {
    let db = open(pool, false)?;
    // Live bytes and the key count are exact only once the rebuild is done.
    db.wait_for_rebuild();
    let s = db.stats();
    let path = db.path().display().to_string();
    if args.json {
        print(&format!("{}\n", stats_json(&path, &s)))
    } else {
        print(&stats_table(&path, &s))
    }
}

pub fn stats_json(path: &str, s: &Stats) -> serde_json::Value {
    serde_json::json!({
        "path": path,
        "keys": s.keys,
        "pool_bytes": s.pool_bytes,
        "pool_bytes_max": s.pool_bytes_max,
        "used_bytes": s.used_bytes,
        "live_bytes": s.live_bytes,
        "segment_bytes": s.segment_bytes,
        "segments_total": s.segments_total,
        "segments_free": s.segments_free,
        "segments_log": s.segments_log,
        "segments_index": s.segments_index,
        "segments_large": s.segments_large,
        "segments_damaged": s.segments_damaged,
        "index_depth": s.index_depth,
        "lanes": s.lanes,
        "durability": s.durability.name(),
        "flush_instruction": s.flush_instruction,
        "nt_copy": s.nt_copy,
        "eliminated_puts": s.eliminated_puts,
        "index_splits": s.index_splits,
        "rebuild_done": s.rebuild_done,
        "ordered_index": s.ordered_index,
        "ordered_nodes": s.ordered_nodes,
        "segments_ordered": s.segments_ordered,
        "ordered_walk_done": s.ordered_walk_done,
        "point_index": s.point_index.name(),
        "point_index_ready": s.point_index_ready,
        "dram_index_bytes": s.dram_index_bytes,
        "pmem": {
            "flushes": s.pmem.flushes,
            "fences": s.pmem.fences,
            "bytes_written": s.pmem.bytes_written,
            "nt_bytes_written": s.pmem.nt_bytes_written,
        },
    })
}

fn stats_table(path: &str, s: &Stats) -> String {
    let bytes = |n: u64| format!("{n} ({})", human_bytes(n));
    let per_key = |n: u64| {
        if s.keys == 0 {
            String::new()
        } else {
            format!(", {:.1} per key", n as f64 / s.keys as f64)
        }
    };
    let rows: Vec<(&str, String)> = vec![
        ("pool", path.to_string()),
        ("keys", s.keys.to_string()),
        (
            "pool bytes",
            format!("{}{}", bytes(s.pool_bytes), per_key(s.pool_bytes)),
        ),
        ("pool bytes max", bytes(s.pool_bytes_max)),
        (
            "used bytes",
            format!("{}{}", bytes(s.used_bytes), per_key(s.used_bytes)),
        ),
        (
            "live bytes",
            format!("{}{}", bytes(s.live_bytes), per_key(s.live_bytes)),
        ),
        ("segment bytes", bytes(s.segment_bytes)),
        (
            "segments",
            format!(
                "{} total: {} free, {} log, {} index, {}{} large, {} damaged",
                s.segments_total,
                s.segments_free,
                s.segments_log,
                s.segments_index,
                if s.ordered_index {
                    format!("{} ordered, ", s.segments_ordered)
                } else {
                    String::new()
                },
                s.segments_large,
                s.segments_damaged
            ),
        ),
        (
            "ordered index",
            if s.ordered_index {
                format!(
                    "yes: {} nodes{}",
                    s.ordered_nodes,
                    if s.ordered_walk_done {
                        ""
                    } else {
                        " (walk after open still running)"
                    }
                )
            } else {
                "no (chosen at creation: --ordered-index)".to_string()
            },
        ),
        ("point index", point_index_row(s)),
        ("index depth", s.index_depth.to_string()),
        ("index splits", format!("{} (since open)", s.index_splits)),
        ("lanes", s.lanes.to_string()),
        ("durability", s.durability.name().to_string()),
        ("flush instruction", s.flush_instruction.to_string()),
        ("nt copy", s.nt_copy.to_string()),
        (
            "eliminated puts",
            format!("{} (since open)", s.eliminated_puts),
        ),
        (
            "rebuild done",
            if s.rebuild_done { "yes" } else { "no" }.to_string(),
        ),
        (
            "pm work",
            format!(
                "{} bytes written ({} non-temporal), {} flushes, {} fences (this process)",
                s.pmem.bytes_written, s.pmem.nt_bytes_written, s.pmem.flushes, s.pmem.fences
            ),
        ),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

/// The `point index` row of the stats table: where it lives, and for the
/// DRAM one its size and whether its rebuild after open is done.
fn point_index_row(s: &Stats) -> String {
    match s.point_index {
        PointIndex::Pm => {
            "pm: in persistent memory (chosen at creation: --point-index)".to_string()
        }
        PointIndex::Dram => format!(
            "dram: {} in DRAM{}",
            human_bytes(s.dram_index_bytes),
            if s.point_index_ready {
                ", rebuilt from the ordered index"
            } else {
                " (rebuild after open still running: the ordered index serves what it misses)"
            }
        ),
    }
}

fn check(pool: &PoolArgs) -> Result<(), Failure> {
    let db = open(pool, false)?;
    let report = db.check()?;
    print(&check_report(
        &db.path().display().to_string(),
        &report,
        db.has_ordered_index(),
    ))?;
    if report.is_ok() {
        Ok(())
    } else {
        Err(Failure::Inconsistent(format!(
            "{}: pool is inconsistent ({} errors)",
            db.path().display(),
            report.errors.len()
        )))
    }
}

/// The report `check` prints; the ordered index's lines only when the pool
/// has one.
fn check_report(path: &str, r: &CheckReport, ordered_index: bool) -> String {
    let mut out = format!(
        "pool                  {path}\n\
         keys                  {}\n\
         index segments        {}\n\
         log segments          {}\n\
         large records         {}\n\
         live bytes            {} ({})\n\
         reclaimable segments  {}\n",
        r.keys,
        r.index_segments,
        r.log_segments,
        r.large_records,
        r.live_bytes,
        human_bytes(r.live_bytes),
        r.reclaimable_segments,
    );
    if ordered_index {
        out.push_str(&format!(
            "ordered nodes         {}\n\
             ordered orphans       {}{}\n",
            r.ordered_nodes,
            r.ordered_orphans,
            if r.ordered_orphans > 0 {
                " (left by a crash; the walk after open unlinks them)"
            } else {
                ""
            }
        ));
    }
    for e in &r.errors {
        out.push_str(&format!("error: {e}\n"));
    }
    if r.is_ok() {
        out.push_str("consistent\n");
    } else {
        out.push_str(&format!("INCONSISTENT: {} errors\n", r.errors.len()));
    }
    out
}

#[cfg(test)]
mod tests {
    use super::{prefix_end, scan_range};

    fn v(s: &[u8]) -> Option<Vec<u8>> {
        Some(s.to_vec())
    }

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"ab"), v(b"ac"));
        assert_eq!(prefix_end(b"a\xff"), v(b"b"));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }

    #[test]
    fn scan_range_intersects_from_to_and_prefix() {
        assert_eq!(scan_range(v(b"a"), v(b"c"), None), (v(b"a"), v(b"c")));
        assert_eq!(scan_range(None, None, Some(b"k:")), (v(b"k:"), v(b"k;")));
        // --from inside the prefix narrows it; outside, the prefix wins.
        assert_eq!(
            scan_range(v(b"k:5"), None, Some(b"k:")),
            (v(b"k:5"), v(b"k;"))
        );
        assert_eq!(scan_range(v(b"a"), None, Some(b"k:")), (v(b"k:"), v(b"k;")));
        // --to inside the prefix narrows it; beyond it, the prefix's end wins.
        assert_eq!(
            scan_range(None, v(b"k:5"), Some(b"k:")),
            (v(b"k:"), v(b"k:5"))
        );
        assert_eq!(scan_range(None, v(b"z"), Some(b"k:")), (v(b"k:"), v(b"k;")));
        // Disjoint: an empty range (lower above upper).
        let (lower, upper) = scan_range(v(b"m"), None, Some(b"k:"));
        assert!(lower > upper);
        // A prefix of 0xff bytes has no upper end of its own.
        assert_eq!(
            scan_range(None, v(b"\xff\xff\x01"), Some(b"\xff")),
            (v(b"\xff"), v(b"\xff\xff\x01"))
        );
        assert_eq!(scan_range(None, None, Some(b"\xff")), (v(b"\xff"), None));
    }
}
