//! Loads a data set many times the pool's size onto the SSD tier, reads
//! every value back and verifies it, overwrites every key `--rounds` times,
//! verifies again, and reports SSD bytes per byte of data, syncs per write
//! and throughput. With `--cache-bytes 0` (the default here) every read
//! goes to the data files, which bypass the page cache (O_DIRECT).
//!
//! `cargo run --release -p persimmon --example tier_soak -- --pool /dev/shm/soak.pool \
//!     --data-dir /work/soak.data --keys 500000 --value-size 16384 --rounds 3 --threads 2`

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Instant;

use persimmon::{Db, Options};

struct Args {
    pool: String,
    data_dir: String,
    keys: u64,
    value_size: usize,
    rounds: u64,
    threads: u64,
    cache_bytes: u64,
}

fn parse() -> Args {
    let mut a = Args {
        pool: "/dev/shm/tier-soak.pool".into(),
        data_dir: "tier-soak.data".into(),
        keys: 100_000,
        value_size: 16384,
        rounds: 3,
        threads: 2,
        cache_bytes: 0,
    };
    let args: Vec<String> = std::env::args().skip(1).collect();
    for pair in args.chunks(2) {
        let v = pair.get(1).cloned().unwrap_or_default();
        let num = || {
            v.parse::<u64>()
                .unwrap_or_else(|_| panic!("{}: not a number: {v}", pair[0]))
        };
        match pair[0].as_str() {
            "--pool" => a.pool = v.clone(),
            "--data-dir" => a.data_dir = v.clone(),
            "--keys" => a.keys = num(),
            "--value-size" => a.value_size = num() as usize,
            "--rounds" => a.rounds = num(),
            "--threads" => a.threads = num().max(1),
            "--cache-bytes" => a.cache_bytes = num(),
            other => panic!("unknown flag {other}"),
        }
    }
    a
}

/// The value of key `k` after round `r`: deterministic, incompressible.
fn value(k: u64, r: u64, len: usize, out: &mut Vec<u8>) {
    out.clear();
    let mut x = (k.wrapping_mul(0x9E37_79B9_7F4A_7C15) ^ r.wrapping_mul(0xD6E8_FEB8_6659_FD93)) | 1;
    while out.len() < len {
        x ^= x << 13;
        x ^= x >> 7;
        x ^= x << 17;
        out.extend_from_slice(&x.to_le_bytes());
    }
    out.truncate(len);
}

fn key(k: u64) -> [u8; 12] {
    let mut b = *b"key-00000000";
    b[4..].copy_from_slice(format!("{:08x}", k as u32).as_bytes());
    b
}

/// Runs `f(k)` for every key on `threads` threads; returns seconds.
fn each_key(a: &Args, f: impl Fn(u64, &mut Vec<u8>) + Sync) -> f64 {
    let start = Instant::now();
    let next = AtomicU64::new(0);
    std::thread::scope(|s| {
        for _ in 0..a.threads {
            s.spawn(|| {
                let mut buf = Vec::with_capacity(a.value_size);
                loop {
                    let k = next.fetch_add(1, Ordering::Relaxed);
                    if k >= a.keys {
                        break;
                    }
                    f(k, &mut buf);
                }
            });
        }
    });
    start.elapsed().as_secs_f64()
}

/// Round `r` visits the keys in a scrambled order of its own (a bijection
/// `i -> (i·m + r·c) mod keys`), so overwrites leave every data file partly
/// live and the tier cleaner has to work.
fn scrambled(a: &Args, r: u64, i: u64) -> u64 {
    let gcd = |mut x: u64, mut y: u64| {
        while y != 0 {
            (x, y) = (y, x % y);
        }
        x
    };
    let m = (1_000_003..)
        .find(|m| gcd(*m, a.keys) == 1)
        .expect("a coprime");
    ((i as u128 * m as u128 + r as u128 * 7_919) % a.keys as u128) as u64
}

fn write_round(db: &Db, a: &Args, r: u64) -> f64 {
    each_key(a, |i, buf| {
        let k = if r == 0 { i } else { scrambled(a, r, i) };
        value(k, r, a.value_size, buf);
        db.put(&key(k), buf).expect("put");
    })
}

fn verify(db: &Db, a: &Args, r: u64) -> f64 {
    let secs = each_key(a, |k, buf| {
        value(k, r, a.value_size, buf);
        let got = db.get(&key(k)).expect("get").expect("key present");
        assert!(got == *buf, "key {k}: value differs after round {r}");
    });
    println!(
        "verify round {r}: {} keys, every value equal, {:.0} reads/s, {:.1} MB/s",
        a.keys,
        a.keys as f64 / secs,
        (a.keys * a.value_size as u64) as f64 / secs / 1e6
    );
    secs
}

fn main() {
    let a = parse();
    let _ = std::fs::remove_file(&a.pool);
    let _ = std::fs::remove_dir_all(&a.data_dir);
    let db = Db::open(
        &a.pool,
        Options {
            data_dir: Some(a.data_dir.clone().into()),
            cache_bytes: a.cache_bytes,
            ..Options::default()
        },
    )
    .expect("open");
    let data = a.keys * a.value_size as u64;
    let secs = write_round(&db, &a, 0);
    let s = db.stats();
    println!(
        "load: {} keys x {} B = {:.2} GB in {secs:.1} s ({:.0} puts/s, {:.1} MB/s); \
         {} extents, {} syncs ({:.3} syncs/put); pool {} MB, data/pool = {:.1}x; direct I/O {}",
        a.keys,
        a.value_size,
        data as f64 / 1e9,
        a.keys as f64 / secs,
        data as f64 / secs / 1e6,
        s.ssd_extents_written,
        s.ssd_syncs,
        s.ssd_syncs as f64 / s.ssd_extents_written.max(1) as f64,
        s.pool_bytes >> 20,
        data as f64 / s.pool_bytes as f64,
        s.ssd_direct_io
    );
    verify(&db, &a, 0);
    for r in 1..=a.rounds {
        let secs = write_round(&db, &a, r);
        let s = db.stats();
        println!(
            "overwrite round {r}: {:.0} puts/s; ssd_bytes {:.2} GB = {:.2} per byte of data, \
             live {:.2} GB, {} files deleted, {} extents moved",
            a.keys as f64 / secs,
            s.ssd_bytes as f64 / 1e9,
            s.ssd_bytes as f64 / data as f64,
            s.ssd_live_bytes as f64 / 1e9,
            s.ssd_files_deleted,
            s.ssd_extents_moved
        );
    }
    verify(&db, &a, a.rounds);
    db.clean_tier_now().expect("clean");
    let s = db.stats();
    println!(
        "after clean_tier_now: ssd_bytes {:.2} GB = {:.2} per byte of data ({} files, {} moved)",
        s.ssd_bytes as f64 / 1e9,
        s.ssd_bytes as f64 / data as f64,
        s.ssd_files,
        s.ssd_extents_moved
    );
    let r = db.check().expect("check");
    println!(
        "check: {} ({} keys, {} extents verified, {} errors)",
        if r.is_ok() {
            "consistent"
        } else {
            "INCONSISTENT"
        },
        r.keys,
        r.ssd_extents,
        r.errors.len()
    );
    drop(db);
    let _ = std::fs::remove_file(&a.pool);
    let _ = std::fs::remove_dir_all(&a.data_dir);
}
