//! `persimmon demo`: put N keys, read them back and verify, reopen; report
//! rates, space per key, open time and persistent-memory work per operation.
//!
//! Invariants:
//! - Values are derived from the key alone ([`value_of`]), so a rerun on a
//!   reopened pool verifies what an earlier run wrote.
//! - The persistent-memory work is the calling thread's counters over each
//!   pass: the demo runs on one thread, so nothing else is counted.
//! - The reopen is timed from the start of `Db::open` to the first answered
//!   get, the figure a restarted application waits for.

use std::fmt::Write as _;
use std::path::Path;
use std::time::{Duration, Instant};

use persimmon::pmem::thread_counters;
use persimmon::size::human_bytes;
use persimmon::{Db, PmemCounters, Stats, MAX_VALUE_BYTES};
use persimmon_bench::progress;

use crate::cli::{DemoArgs, PoolArgs};
use crate::failure::Failure;
use crate::output::print;
use crate::pool::options;

/// Operations between progress bar updates.
const PROGRESS_EVERY: u64 = 4096;
/// Wrong or missing values listed in the report at most.
const MAX_LISTED_MISMATCHES: usize = 5;

/// Key `i`: `i` in decimal, zero-padded to `width` digits.
fn key_of(i: u64, width: usize, buf: &mut [u8; 20]) -> &[u8] {
    let mut n = i;
    for slot in buf[20 - width..].iter_mut().rev() {
        *slot = b'0' + (n % 10) as u8;
        n /= 10;
    }
    &buf[20 - width..]
}

/// Value of key `i`: `buf.len()` pseudo-random bytes seeded by `i`.
fn value_of(i: u64, buf: &mut [u8]) {
    let mut state = i.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ 0xD1B5_4A32_D192_ED03;
    for chunk in buf.chunks_mut(8) {
        // splitmix64
        state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = state;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^= z >> 31;
        chunk.copy_from_slice(&z.to_le_bytes()[..chunk.len()]);
    }
}

fn per_op(c: &PmemCounters, ops: u64) -> String {
    let ops = ops.max(1) as f64;
    format!(
        "{:.1} bytes written ({:.1} non-temporal), {:.2} flushes, {:.2} fences",
        c.bytes_written as f64 / ops,
        c.nt_bytes_written as f64 / ops,
        c.flushes as f64 / ops,
        c.fences as f64 / ops
    )
}

fn rate(ops: u64, d: Duration) -> f64 {
    let s = d.as_secs_f64();
    if s > 0.0 {
        ops as f64 / s
    } else {
        0.0
    }
}

fn ms(d: Duration) -> f64 {
    d.as_secs_f64() * 1e3
}

/// With `--fresh`, deletes an existing pool at the demo's path first.
fn start_fresh(pool: &PoolArgs) -> Result<(), Failure> {
    let path = &pool.pool;
    if !path.exists() {
        return Ok(());
    }
    // Only ever delete a Persimmon pool nobody else has open.
    drop(Db::open(path, options(pool, false)?)?);
    std::fs::remove_file(path)
        .map_err(|e| Failure::error(format!("remove {}: {e}", path.display())))
}

/// The keys of a run: `count` of them, `key_bytes` digits each, with
/// values of `value_bytes` bytes.
struct KeySet {
    count: u64,
    key_bytes: usize,
    value_bytes: usize,
}

/// The time and the calling thread's persistent-memory work of one pass
/// over the keys.
struct Pass {
    time: Duration,
    pm: PmemCounters,
}

/// What the get pass found besides its time.
struct Verified {
    pass: Pass,
    wrong: u64,
    missing: u64,
    /// The first wrong or missing values, for the report.
    mismatches: Vec<String>,
}

/// The reopen after the close, timed from the start of `Db::open`.
struct Reopened {
    open_time: Duration,
    first_get_time: Duration,
    rebuild_time: Duration,
    /// The first get returned the right value (or there were no keys).
    first_get_ok: bool,
    keys: u64,
}

pub fn run(pool: &PoolArgs, args: DemoArgs) -> Result<(), Failure> {
    if args.value_bytes > MAX_VALUE_BYTES as u64 {
        return Err(Failure::error(format!(
            "--value-bytes {} is above the engine's limit of {MAX_VALUE_BYTES} bytes",
            args.value_bytes
        )));
    }
    let n = args.keys;
    let keys = KeySet {
        count: n,
        key_bytes: n.saturating_sub(1).to_string().len().max(8),
        value_bytes: args.value_bytes as usize,
    };
    if args.fresh {
        start_fresh(pool)?;
    }
    let db = Db::open(&pool.pool, options(pool, true)?)?;
    print(&header(&pool.pool, &keys, &db))?;
    let put = put_pass(&db, &keys)?;
    let get = get_pass(&db, &keys)?;
    db.wait_for_rebuild();
    let s = db.stats();
    print(&passes_report(&keys, &put, &get, &s))?;

    drop(db);
    let reopened = reopen(pool, &keys)?;
    let mut out = reopen_report(&keys, &reopened);
    for m in &get.mismatches {
        let _ = writeln!(out, "error: {m}");
    }
    let verified = n - get.wrong - get.missing;
    let ok = verified == n && reopened.first_get_ok && reopened.keys == s.keys;
    let _ = writeln!(
        out,
        "result: {}",
        if ok {
            format!("ok, all {n} values verified")
        } else {
            "FAILED".to_string()
        }
    );
    print(&out)?;
    if ok {
        Ok(())
    } else {
        Err(Failure::error(format!(
            "demo failed: {} wrong and {} missing values, first get after reopen {}, {} keys after reopen ({} before close)",
            get.wrong,
            get.missing,
            if reopened.first_get_ok { "ok" } else { "returned a wrong value" },
            reopened.keys,
            s.keys
        )))
    }
}

/// The first lines: what the run does, and the pool's settings.
fn header(path: &Path, keys: &KeySet, db: &Db) -> String {
    let keys_before = db.len();
    let s = db.stats();
    format!(
        "demo: {} keys of {} bytes, values of {} bytes, pool {} ({})\n\
         \x20     durability {}, flush {}, nt copy {}, {} lanes, point index in {}\n",
        keys.count,
        keys.key_bytes,
        keys.value_bytes,
        path.display(),
        if keys_before == 0 {
            "empty".to_string()
        } else {
            format!("reopened with {keys_before} keys")
        },
        s.durability.name(),
        s.flush_instruction,
        s.nt_copy,
        s.lanes,
        s.point_index.name()
    )
}

/// Puts every key with its value.
fn put_pass(db: &Db, keys: &KeySet) -> Result<Pass, Failure> {
    let (mut key_buf, mut value) = ([0u8; 20], vec![0u8; keys.value_bytes]);
    let bar = progress::items(keys.count, "put");
    let before = thread_counters();
    let start = Instant::now();
    for i in 0..keys.count {
        value_of(i, &mut value);
        let key = key_of(i, keys.key_bytes, &mut key_buf);
        db.put(key, &value)
            .map_err(|e| Failure::error(format!("put of key {i} failed: {e}")))?;
        if i % PROGRESS_EVERY == 0 {
            bar.set_position(i);
        }
    }
    let time = start.elapsed();
    let pm = thread_counters().since(&before);
    bar.finish_and_clear();
    Ok(Pass { time, pm })
}

/// Reads every key back and compares its value with the one put.
fn get_pass(db: &Db, keys: &KeySet) -> Result<Verified, Failure> {
    let (mut key_buf, mut value) = ([0u8; 20], vec![0u8; keys.value_bytes]);
    let bar = progress::items(keys.count, "get");
    let mut mismatches: Vec<String> = Vec::new();
    let (mut wrong, mut missing) = (0u64, 0u64);
    let before = thread_counters();
    let start = Instant::now();
    for i in 0..keys.count {
        value_of(i, &mut value);
        let key = key_of(i, keys.key_bytes, &mut key_buf);
        match db.get_with(key, |v| v == value.as_slice()) {
            Ok(Some(true)) => {}
            Ok(Some(false)) => {
                wrong += 1;
                if mismatches.len() < MAX_LISTED_MISMATCHES {
                    mismatches.push(format!("key {i}: wrong value"));
                }
            }
            Ok(None) => {
                missing += 1;
                if mismatches.len() < MAX_LISTED_MISMATCHES {
                    mismatches.push(format!("key {i}: missing"));
                }
            }
            Err(e) => return Err(Failure::error(format!("get of key {i} failed: {e}"))),
        }
        if i % PROGRESS_EVERY == 0 {
            bar.set_position(i);
        }
    }
    let time = start.elapsed();
    let pm = thread_counters().since(&before);
    bar.finish_and_clear();
    Ok(Verified {
        pass: Pass { time, pm },
        wrong,
        missing,
        mismatches,
    })
}

/// The rates and work of both passes, and the pool's space per key.
fn passes_report(keys: &KeySet, put: &Pass, get: &Verified, s: &Stats) -> String {
    let n = keys.count;
    let (wrong, missing) = (get.wrong, get.missing);
    let verified = n - wrong - missing;
    let per_key = |bytes: u64| {
        if s.keys == 0 {
            "-".to_string()
        } else {
            format!("{:.1}", bytes as f64 / s.keys as f64)
        }
    };
    format!(
        "put:   {n} in {:.3} s = {:.0} puts/s\n\
         \x20      per put: {}\n\
         get:   {n} in {:.3} s = {:.0} gets/s, {verified} values verified, {wrong} wrong, {missing} missing\n\
         \x20      per get: {}\n\
         pool:  {} keys; file {} bytes ({}) = {} bytes per key; used {} = {} per key; live {} = {} per key\n",
        put.time.as_secs_f64(),
        rate(n, put.time),
        per_op(&put.pm, n),
        get.pass.time.as_secs_f64(),
        rate(n, get.pass.time),
        per_op(&get.pass.pm, n),
        s.keys,
        s.pool_bytes,
        human_bytes(s.pool_bytes),
        per_key(s.pool_bytes),
        s.used_bytes,
        per_key(s.used_bytes),
        s.live_bytes,
        per_key(s.live_bytes),
    )
}

/// Reopens the closed pool and times it up to the first answered get (of
/// the middle key) and to the end of the rebuild after open.
fn reopen(pool: &PoolArgs, keys: &KeySet) -> Result<Reopened, Failure> {
    let (mut key_buf, mut value) = ([0u8; 20], vec![0u8; keys.value_bytes]);
    let reopen_options = options(pool, false)?;
    let probe = keys.count / 2;
    value_of(probe, &mut value);
    let start = Instant::now();
    let db = Db::open(&pool.pool, reopen_options)?;
    let open_time = start.elapsed();
    let first = db.get_with(key_of(probe, keys.key_bytes, &mut key_buf), |v| {
        v == value.as_slice()
    })?;
    let first_get_time = start.elapsed();
    db.wait_for_rebuild();
    let rebuild_time = start.elapsed();
    Ok(Reopened {
        open_time,
        first_get_time,
        rebuild_time,
        first_get_ok: keys.count == 0 || first == Some(true),
        keys: db.len(),
    })
}

/// The `open:` line.
fn reopen_report(keys: &KeySet, r: &Reopened) -> String {
    format!(
        "open:  {:.3} ms (Db::open {:.3} ms + first get {:.3} ms, value {}); background rebuild done after {:.1} ms; {} keys\n",
        ms(r.first_get_time),
        ms(r.open_time),
        ms(r.first_get_time - r.open_time),
        if keys.count == 0 {
            "-"
        } else if r.first_get_ok {
            "verified"
        } else {
            "WRONG"
        },
        ms(r.rebuild_time),
        r.keys,
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keys_are_zero_padded_decimal() {
        let mut buf = [0u8; 20];
        assert_eq!(key_of(42, 8, &mut buf), b"00000042");
        assert_eq!(key_of(123_456_789, 9, &mut buf), b"123456789");
        assert_eq!(
            key_of(u64::MAX, 20, &mut buf),
            u64::MAX.to_string().as_bytes()
        );
    }

    #[test]
    fn values_depend_on_the_key_and_fill_any_length() {
        let (mut a, mut b) = (vec![0u8; 61], vec![0u8; 61]);
        value_of(1, &mut a);
        value_of(2, &mut b);
        assert_ne!(a, b);
        value_of(1, &mut b);
        assert_eq!(a, b);
    }
}
