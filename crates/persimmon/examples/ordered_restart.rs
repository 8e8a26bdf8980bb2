//! Restart of a pool with the ordered index: time from `Db::open` to the
//! first served point read and to the first served range read, and time
//! until the walk after open has finished (search hints rebuilt, orphans
//! repaired, free node slots known) — the point from which new-key inserts
//! run at full speed; plus the insert rate just after open and after the
//! walk.
//!
//! ```sh
//! cargo run --release -p persimmon --example ordered_restart -- --keys 1000000 --dir /dev/shm
//! ```

use std::time::{Duration, Instant};

use persimmon::{Db, Options};

fn arg(name: &str, default: u64) -> u64 {
    let args: Vec<String> = std::env::args().collect();
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(|v| v.parse().expect("a number"))
        .unwrap_or(default)
}

fn key(i: u64) -> [u8; 8] {
    // Scrambled, so the keys are spread over the list.
    (i.wrapping_mul(0x9E37_79B9_7F4A_7C15)).to_be_bytes()
}

/// Inserts `n` new keys from `from`; returns inserts per second.
fn insert_rate(db: &Db, from: u64, n: u64) -> f64 {
    let t = Instant::now();
    for i in from..from + n {
        db.put(&key(i), &[7u8; 64]).expect("put");
    }
    n as f64 / t.elapsed().as_secs_f64()
}

fn main() -> persimmon::Result<()> {
    let keys = arg("--keys", 1_000_000);
    let dir = std::env::args()
        .skip_while(|a| a != "--dir")
        .nth(1)
        .unwrap_or_else(|| "/dev/shm".into());
    let path =
        std::path::Path::new(&dir).join(format!("ordered-restart-{}.pool", std::process::id()));
    let opts = Options {
        ordered_index: true,
        ..Options::default()
    };
    {
        let db = Db::open(&path, opts.clone())?;
        let t = Instant::now();
        for i in 0..keys {
            db.put(&key(i), &[1u8; 64])?;
        }
        println!(
            "loaded {keys} keys in {:.2} s ({:.0} puts/s)",
            t.elapsed().as_secs_f64(),
            keys as f64 / t.elapsed().as_secs_f64()
        );
    }
    for run in 0..3 {
        let t = Instant::now();
        let db = Db::open(&path, opts.clone())?;
        let opened = t.elapsed();
        assert!(db.get(&key(keys / 2))?.is_some());
        let first_get = t.elapsed();
        let first = db.range(&key(keys / 3)[..]..)?.next().transpose()?;
        assert!(first.is_some());
        let first_range = t.elapsed();
        let early = insert_rate(&db, keys + run * 20_000, 2_000);
        while !db.stats().ordered_walk_done {
            std::thread::sleep(Duration::from_micros(200));
        }
        let walked = t.elapsed();
        let late = insert_rate(&db, keys + run * 20_000 + 2_000, 10_000);
        println!(
            "reopen {run}: open {:.2} ms, first get {:.2} ms, first range read {:.2} ms, walk done {:.0} ms; \
             new-key inserts {:.0}/s right after open, {:.0}/s after the walk",
            opened.as_secs_f64() * 1e3,
            first_get.as_secs_f64() * 1e3,
            first_range.as_secs_f64() * 1e3,
            walked.as_secs_f64() * 1e3,
            early,
            late
        );
    }
    let _ = std::fs::remove_file(&path);
    Ok(())
}
