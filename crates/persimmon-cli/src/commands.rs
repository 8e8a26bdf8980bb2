//! The commands: open the pool as the command needs it, call the engine,
//! print the result.

use std::ffi::OsStr;
use std::io::{self, BufWriter, Write};
use std::os::unix::ffi::OsStrExt;

use persimmon::{CheckReport, Db, Options, Stats};

use crate::cli::{Cli, Command, KeyArgs, PoolArgs, PutArgs, StatsArgs};
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
                "{} total: {} free, {} log, {} index, {} large, {} damaged",
                s.segments_total,
                s.segments_free,
                s.segments_log,
                s.segments_index,
                s.segments_large,
                s.segments_damaged
            ),
        ),
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

fn check(pool: &PoolArgs) -> Result<(), Failure> {
    let db = open(pool, false)?;
    let report = db.check()?;
    print(&check_report(&db.path().display().to_string(), &report))?;
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

fn check_report(path: &str, r: &CheckReport) -> String {
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
