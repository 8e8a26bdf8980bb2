//! The commands: each opens the pool as it needs it ([`crate::pool`]),
//! calls the engine and prints the result; [`run`] dispatches to them and
//! to the longer ones in their own modules (`load`, `demo`, `serve`, and
//! `bench` in the `persimmon-bench` crate).
//!
//! Invariants:
//! - Only the commands that write create a missing pool.
//! - Keys on the command line are raw bytes unless `--escaped`; keys in
//!   messages and in `dump`/`scan` output are always escaped, so that each
//!   prints on one line.
//! - `scan` refuses a pool without the ordered index rather than falling
//!   back to a full, unordered walk.

use std::ffi::OsStr;
use std::io;
use std::ops::Bound;
use std::os::unix::ffi::OsStrExt;

use persimmon_bench::progress;

use crate::cli::{Cli, Command, KeyArgs, PoolArgs, PutArgs, ScanArgs, StatsArgs};
use crate::escape::{escape, escape_into, unescape};
use crate::expiry::{deadline_after, ttl_line};
use crate::failure::Failure;
use crate::output::{print, print_bytes, RecordWriter};
use crate::pool::open;
use crate::{demo, load, report, serve};

/// Runs the command `cli` asks for.
pub fn run(cli: Cli) -> Result<(), Failure> {
    let pool = &cli.pool;
    match cli.command {
        Command::Put(args) => put(pool, args),
        Command::Get(args) => get(pool, args),
        Command::Ttl(args) => ttl(pool, args),
        Command::Del(args) => del(pool, args),
        Command::Load(args) => load::run(pool, args),
        Command::Dump => dump(pool),
        Command::Scan(args) => scan(pool, args),
        Command::Stats(args) => stats(pool, args),
        Command::Check => check(pool),
        Command::Demo(args) => demo::run(pool, args),
        Command::Bench(args) => bench(pool, &args),
        Command::Serve(args) => serve::run(pool, *args),
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
    match args.ttl {
        None => db.put(&key, &value)?,
        Some(secs) => {
            // Checked against the system clock when parsed; the engine
            // refuses a deadline too far should its clock differ.
            let deadline = deadline_after(db.now_ms(), secs).unwrap_or(u64::MAX);
            db.put_with_deadline(&key, &value, deadline)?;
        }
    }
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
    print_bytes(&line)
}

fn ttl(pool: &PoolArgs, args: KeyArgs) -> Result<(), Failure> {
    let key = arg_bytes(&args.key, args.escaped, "KEY")?;
    let db = open(pool, false)?;
    let line = ttl_line(db.ttl(&key)?)
        .ok_or_else(|| Failure::NotFound(format!("key {} not found", shown(&key))))?;
    print(&line)
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
    let mut out = RecordWriter::new();
    let mut written = 0u64;
    for item in db.iter() {
        let (key, value) = item.map_err(|e| {
            Failure::error(format!("reading a record after {written} records: {e}"))
        })?;
        out.write(&key, Some(&value))?;
        written += 1;
        if written.is_multiple_of(4096) {
            bar.set_position(written);
        }
    }
    out.finish()?;
    bar.finish_and_clear();
    Ok(())
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
    let upper = match (to, persimmon::prefix_end(prefix)) {
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
    let mut out = RecordWriter::new();
    for (written, item) in items.enumerate() {
        let (key, value) = item.map_err(|e| {
            Failure::error(format!(
                "reading the ordered index after {written} keys: {e}"
            ))
        })?;
        out.write(&key, values.then_some(value.as_slice()))?;
    }
    out.finish()
}

fn stats(pool: &PoolArgs, args: StatsArgs) -> Result<(), Failure> {
    let db = open(pool, false)?;
    // Live bytes and the key count are exact only once the rebuild is done.
    db.wait_for_rebuild();
    let s = db.stats();
    let path = db.path().display().to_string();
    if args.json {
        print(&format!("{}\n", report::stats_json(&path, &s)))
    } else {
        print(&report::stats_table(&path, &s))
    }
}

fn check(pool: &PoolArgs) -> Result<(), Failure> {
    let db = open(pool, false)?;
    let report = db.check()?;
    print(&report::check_report(
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

#[cfg(test)]
mod tests {
    use super::scan_range;

    fn v(s: &[u8]) -> Option<Vec<u8>> {
        Some(s.to_vec())
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
