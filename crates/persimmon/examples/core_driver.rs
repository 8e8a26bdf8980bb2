//! A simple driver for the engine-core figures (BENCHMARKS.md, "Engine core
//! II"): load, GET, PUT (update) and 50/50 throughput with 1 and 2 threads,
//! for the full engine and the MPKV Baseline; PM traffic per operation; pool
//! bytes per key; space after overwriting every key ten times; open time
//! after a clean close and after `kill -9`.
//!
//! ```sh
//! cargo run --release -p persimmon --example core_driver -- --keys 10000000 --dir /dev/shm
//! ```
//!
//! (The full benchmark tool with peers is `persimmon bench`.)

use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

use persimmon::pmem::{thread_counters, PmemCounters};
use persimmon::{Db, Options};

const VALUE: [u8; 64] = [0x5a; 64];

fn key(i: u64) -> [u8; 8] {
    // Scrambled so consecutive loads do not hit consecutive buckets.
    i.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_be_bytes()
}

struct Args {
    keys: u64,
    dir: PathBuf,
    seconds: f64,
    child: Option<PathBuf>,
}

fn args() -> Args {
    let mut a = Args {
        keys: 10_000_000,
        dir: PathBuf::from("/dev/shm"),
        seconds: 5.0,
        child: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut val = || it.next().unwrap_or_else(|| panic!("{flag} needs a value"));
        match flag.as_str() {
            "--keys" => a.keys = val().parse().expect("--keys N"),
            "--dir" => a.dir = PathBuf::from(val()),
            "--seconds" => a.seconds = val().parse().expect("--seconds S"),
            "--child-writer" => a.child = Some(PathBuf::from(val())),
            other => panic!("unknown argument {other}"),
        }
    }
    a
}

/// Runs `op(db, random)` on `threads` threads for `seconds`; returns ops/s,
/// the PM counters summed over the threads, and the number of operations.
fn timed<F>(db: &Arc<Db>, threads: u64, seconds: f64, op: F) -> (f64, PmemCounters, u64)
where
    F: Fn(&Db, u64) + Send + Sync + Clone + 'static,
{
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (db, op) = (db.clone(), op.clone());
            std::thread::spawn(move || {
                let before = thread_counters();
                let mut x = 0x1234_5678 ^ (t + 1).wrapping_mul(0x9E37_79B9);
                let mut n = 0u64;
                let deadline = Instant::now() + Duration::from_secs_f64(seconds);
                while !n.is_multiple_of(1024) || Instant::now() < deadline {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    op(&db, x);
                    n += 1;
                }
                (n, thread_counters().since(&before))
            })
        })
        .collect();
    let mut total = 0;
    let mut c = PmemCounters::default();
    for h in handles {
        let (n, d) = h.join().unwrap();
        total += n;
        c.flushes += d.flushes;
        c.fences += d.fences;
        c.bytes_written += d.bytes_written;
        c.nt_bytes_written += d.nt_bytes_written;
    }
    (total as f64 / start.elapsed().as_secs_f64(), c, total)
}

fn per_op(c: &PmemCounters, n: u64) -> String {
    let n = n.max(1) as f64;
    format!(
        "{:.1} B, {:.2} flushes, {:.2} fences",
        c.bytes_written as f64 / n,
        c.flushes as f64 / n,
        c.fences as f64 / n
    )
}

fn load(db: &Arc<Db>, keys: u64, threads: u64) -> f64 {
    let start = Instant::now();
    let hs: Vec<_> = (0..threads)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut i = t;
                while i < keys {
                    db.put(&key(i), &VALUE).unwrap();
                    i += threads;
                }
            })
        })
        .collect();
    for h in hs {
        h.join().unwrap();
    }
    keys as f64 / start.elapsed().as_secs_f64()
}

fn open_and_first_get(path: &Path, options: &Options) -> (Duration, Db) {
    let start = Instant::now();
    let db = Db::open(path, options.clone()).unwrap();
    let got = db.get(&key(1)).unwrap();
    let took = start.elapsed();
    assert!(got.is_some(), "key 1 missing after reopen");
    (took, db)
}

/// Child mode: opens the pool and overwrites keys until killed.
fn child_writer(path: &Path, keys: u64) {
    let db = Db::open(path, Options::default()).unwrap();
    println!("ready");
    let mut i = 0u64;
    loop {
        db.put(&key(i % keys), &VALUE).unwrap();
        i += 1;
    }
}

fn main() {
    let a = args();
    if let Some(path) = &a.child {
        child_writer(path, a.keys);
        return;
    }
    let n = a.keys;
    for (name, options) in [
        ("persimmon", Options::default()),
        ("baseline", Options::baseline()),
    ] {
        let path = a.dir.join(format!("core-driver-{name}.pool"));
        println!(
            "== {name}: {n} keys, 8-byte keys, 64-byte values, uniform, {}",
            path.display()
        );
        for threads in [1u64, 2] {
            let _ = std::fs::remove_file(&path);
            let db = Arc::new(Db::open(&path, options.clone()).unwrap());
            let rate = load(&db, n, threads);
            db.wait_for_rebuild();
            let s = db.stats();
            println!(
                "  threads {threads}: load {rate:.0} puts/s; pool {:.1} B/key (file), {:.1} B/key (used)",
                s.pool_bytes as f64 / n as f64,
                s.used_bytes as f64 / n as f64
            );
            let (ops, c, k) = timed(&db, threads, a.seconds, move |db, x| {
                db.get_with(&key(x % n), |_| ()).unwrap().expect("present");
            });
            println!(
                "  threads {threads}: GET {ops:.0} ops/s; per GET {}",
                per_op(&c, k)
            );
            let (ops, c, k) = timed(&db, threads, a.seconds, move |db, x| {
                db.put(&key(x % n), &VALUE).unwrap();
            });
            println!(
                "  threads {threads}: PUT {ops:.0} ops/s; per PUT {}",
                per_op(&c, k)
            );
            let (ops, _, _) = timed(&db, threads, a.seconds, move |db, x| {
                if x & 1 == 0 {
                    db.get_with(&key((x >> 1) % n), |_| ()).unwrap();
                } else {
                    db.put(&key((x >> 1) % n), &VALUE).unwrap();
                }
            });
            println!("  threads {threads}: 50/50 {ops:.0} ops/s");
            drop(db);
        }
        if name != "persimmon" {
            continue;
        }
        // Open after a clean close.
        let (took, db) = open_and_first_get(&path, &options);
        println!("  open after clean close, to first served GET: {took:?}");
        // Overwrite every key ten times, then measure space.
        let db = Arc::new(db);
        let start = Instant::now();
        for round in 0..10 {
            let _ = round;
            load(&db, n, 2);
        }
        let s = db.stats();
        println!(
            "  after overwriting every key 10 times ({:.0} s): used {} bytes = {:.1} B/key, file {} bytes, live {} bytes, cleaner moved {} bytes from {} segments",
            start.elapsed().as_secs_f64(),
            s.used_bytes,
            s.used_bytes as f64 / n as f64,
            s.pool_bytes,
            s.live_bytes,
            s.cleaned_bytes,
            s.cleaned_segments
        );
        drop(db);
        // Open after kill -9 of a process writing to the pool.
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args(["--keys", &n.to_string(), "--child-writer"])
            .arg(&path)
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        let mut ready = String::new();
        std::io::BufRead::read_line(
            &mut std::io::BufReader::new(child.stdout.take().unwrap()),
            &mut ready,
        )
        .unwrap();
        std::thread::sleep(Duration::from_millis(500));
        child.kill().unwrap();
        child.wait().unwrap();
        let (took, db) = open_and_first_get(&path, &options);
        println!("  open after kill -9, to first served GET: {took:?}");
        let rebuild = Instant::now();
        db.wait_for_rebuild();
        println!(
            "  background rebuild after kill -9: {:?}, {} keys",
            rebuild.elapsed(),
            db.len()
        );
        drop(db);
        let _ = std::fs::remove_file(&path);
    }
    let _ = std::fs::remove_file(a.dir.join("core-driver-baseline.pool"));
}
