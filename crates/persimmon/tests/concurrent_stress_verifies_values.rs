//! Concurrency story: writer and reader threads share one `Arc<Db>` while
//! the index splits under them, and no thread ever sees a torn, foreign or
//! stale value.
//!
//! - Each writer owns a key range and writes it in rounds, every value
//!   self-describing: `version | writer | payload | checksum(key, ...)`, so
//!   any reader can tell a torn value or another key's value from the right
//!   one. Later rounds overwrite part of the range with higher versions.
//! - Readers read random keys of every range and assert each value verifies
//!   for the key asked, and that per reader a key's version never goes back
//!   and a key once seen never disappears.
//! - Every thread also overwrites a few shared hot keys with `put`
//!   (concurrent write elimination may drop overlapping puts), and
//!   increments one shared counter with `update`; the final count must be
//!   exact and each hot key must end with the last value some thread wrote.
//! - 100k owned keys on 256 KiB segments force index splits during the run;
//!   at the end `check()` is clean and every owned key holds its last
//!   version, also after a reopen.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Barrier};

use persimmon::{Db, Update};
use rand::{rngs::StdRng, Rng, SeedableRng};

const WRITERS: usize = 4;
const READERS: usize = 2;
const THREADS: usize = WRITERS + READERS;
const KEYS_PER_WRITER: usize = 25_000;
const HOT_KEYS: usize = 8;
/// Counter increments per thread (every thread, readers included).
const INCREMENTS_PER_THREAD: u64 = 5_000;
/// Hot-key puts per thread.
const HOT_PUTS_PER_THREAD: u64 = 2_000;

fn own_key(writer: usize, i: usize) -> Vec<u8> {
    format!("own-{writer:02}-{i:06}").into_bytes()
}

fn hot_key(j: usize) -> Vec<u8> {
    format!("hot-{j}").into_bytes()
}

const COUNTER_KEY: &[u8] = b"shared-counter";

/// `version:8 | writer:8 | payload | checksum:8`, checksum over key and the rest.
fn encode(key: &[u8], version: u64, writer: u64) -> Vec<u8> {
    let payload_len = ((version.wrapping_mul(0x9E37_79B9) ^ key.len() as u64) % 200) as usize;
    let mut v = Vec::with_capacity(24 + payload_len);
    v.extend_from_slice(&version.to_le_bytes());
    v.extend_from_slice(&writer.to_le_bytes());
    v.extend((0..payload_len).map(|i| (i as u64 ^ version ^ (writer << 3)) as u8));
    let sum = common::fnv1a(&[key, &v]);
    v.extend_from_slice(&sum.to_le_bytes());
    v
}

/// Checks that `v` is a whole value written for `key`; returns (version, writer).
fn verify(key: &[u8], v: &[u8]) -> (u64, u64) {
    assert!(
        v.len() >= 24,
        "value of {:?} is {} bytes: torn or foreign",
        String::from_utf8_lossy(key),
        v.len()
    );
    let (body, sum) = v.split_at(v.len() - 8);
    assert_eq!(
        common::fnv1a(&[key, body]),
        u64::from_le_bytes(sum.try_into().unwrap()),
        "value of {:?} does not verify: torn or another key's value",
        String::from_utf8_lossy(key)
    );
    let version = u64::from_le_bytes(body[0..8].try_into().unwrap());
    let writer = u64::from_le_bytes(body[8..16].try_into().unwrap());
    assert_eq!(
        v,
        &encode(key, version, writer)[..],
        "value does not re-encode"
    );
    (version, writer)
}

/// Version of a hot-key put: thread in the high half, per-thread counter low.
fn hot_version(thread: usize, n: u64) -> u64 {
    ((thread as u64) << 32) | n
}

fn increment(db: &Db) {
    db.update(COUNTER_KEY, |cur| {
        let n = cur.map_or(0, |c| {
            u64::from_le_bytes(c.try_into().expect("8-byte counter"))
        });
        (Update::Put((n + 1).to_le_bytes().to_vec()), ())
    })
    .expect("update counter");
}

fn read_counter(db: &Db) -> u64 {
    db.get(COUNTER_KEY).unwrap().map_or(0, |c| {
        u64::from_le_bytes(c.try_into().expect("8-byte counter"))
    })
}

/// Shared work of every thread: one hot-key put (tracking the last version
/// this thread wrote per hot key) and, every other call, one increment.
struct SharedWork {
    thread: usize,
    hot_n: u64,
    increments: u64,
    last_hot: Vec<Option<u64>>,
}

impl SharedWork {
    fn new(thread: usize) -> Self {
        SharedWork {
            thread,
            hot_n: 0,
            increments: 0,
            last_hot: vec![None; HOT_KEYS],
        }
    }

    fn step(&mut self, db: &Db, rng: &mut StdRng) {
        if self.hot_n < HOT_PUTS_PER_THREAD {
            self.hot_n += 1;
            let j = rng.gen_range(0..HOT_KEYS);
            let k = hot_key(j);
            let version = hot_version(self.thread, self.hot_n);
            db.put(&k, &encode(&k, version, self.thread as u64))
                .unwrap();
            self.last_hot[j] = Some(version);
        }
        if self.increments < INCREMENTS_PER_THREAD {
            self.increments += 1;
            increment(db);
        }
    }

    fn finish(&mut self, db: &Db, rng: &mut StdRng) {
        while self.hot_n < HOT_PUTS_PER_THREAD || self.increments < INCREMENTS_PER_THREAD {
            self.step(db, rng);
        }
    }
}

/// Writer `w`: round 1 writes every owned key (version 1); round r > 1
/// rewrites keys `i % r == 0` with version r. Returns the last version per key.
fn writer(db: Arc<Db>, w: usize, start: Arc<Barrier>) -> (Vec<u64>, Vec<Option<u64>>) {
    let mut rng = StdRng::seed_from_u64(w as u64);
    let mut shared = SharedWork::new(w);
    let mut last = vec![0u64; KEYS_PER_WRITER];
    start.wait();
    let mut ops = 0u64;
    for round in 1..=3u64 {
        for (i, last) in last.iter_mut().enumerate().step_by(round as usize) {
            let k = own_key(w, i);
            db.put(&k, &encode(&k, round, w as u64)).unwrap();
            *last = round;
            ops += 1;
            if ops & 31 == 0 {
                shared.step(&db, &mut rng);
            }
        }
    }
    shared.finish(&db, &mut rng);
    (last, shared.last_hot)
}

/// Reader `r`: random gets across all ranges, hot keys and the counter
/// until every writer is done. Returns how many reads it made.
fn reader(
    db: Arc<Db>,
    r: usize,
    start: Arc<Barrier>,
    writers_left: Arc<AtomicUsize>,
    failed: Arc<AtomicBool>,
) -> (u64, Vec<Option<u64>>) {
    let thread = WRITERS + r;
    let mut rng = StdRng::seed_from_u64(1000 + r as u64);
    let mut shared = SharedWork::new(thread);
    let mut seen: HashMap<(usize, usize), u64> = HashMap::new();
    let mut counter_seen = 0u64;
    let mut reads = 0u64;
    start.wait();
    while writers_left.load(Ordering::Acquire) > 0 && !failed.load(Ordering::Relaxed) {
        for _ in 0..64 {
            let (w, i) = (rng.gen_range(0..WRITERS), rng.gen_range(0..KEYS_PER_WRITER));
            let k = own_key(w, i);
            // Half the reads verify in place, half on a copy.
            let got = if reads & 1 == 0 {
                db.get(&k).unwrap().map(|v| verify(&k, &v))
            } else {
                db.get_with(&k, |v| verify(&k, v)).unwrap()
            };
            reads += 1;
            match got {
                Some((version, writer)) => {
                    assert_eq!(writer, w as u64, "key {w}/{i} holds another writer's value");
                    assert!((1..=3).contains(&version), "key {w}/{i}: version {version}");
                    let prev = seen.insert((w, i), version).unwrap_or(0);
                    assert!(
                        version >= prev,
                        "reader {r}: key {w}/{i} went back from version {prev} to {version}"
                    );
                }
                None => assert!(
                    !seen.contains_key(&(w, i)),
                    "reader {r}: key {w}/{i} disappeared after being read"
                ),
            }
        }
        let j = rng.gen_range(0..HOT_KEYS);
        let hk = hot_key(j);
        if let Some(v) = db.get(&hk).unwrap() {
            verify(&hk, &v);
        }
        let c = read_counter(&db);
        assert!(
            c >= counter_seen,
            "counter went back from {counter_seen} to {c}"
        );
        counter_seen = c;
        shared.step(&db, &mut rng);
    }
    shared.finish(&db, &mut rng);
    (reads, shared.last_hot)
}

#[test]
fn concurrent_writers_and_readers_see_only_whole_values() {
    stress(persimmon::Mechanisms::ALL);
}

#[test]
fn baseline_concurrent_writers_and_readers_see_only_whole_values() {
    stress(persimmon::Mechanisms::NONE);
}

fn stress(mechanisms: persimmon::Mechanisms) {
    let started = std::time::Instant::now();
    let dir = common::pool_dir();
    let path = dir.path().join("stress.pool");
    let options = persimmon::Options {
        mechanisms,
        ..common::small_options()
    };
    let db = Arc::new(Db::open(&path, options.clone()).unwrap());
    // Runs the log cleaner over and over while the writers overwrite and the
    // index splits, so readers meet relocated records too.
    let cleaning_done = Arc::new(AtomicBool::new(false));
    let cleaner = {
        let (db, done) = (db.clone(), cleaning_done.clone());
        std::thread::spawn(move || {
            let mut passes = 0u64;
            while !done.load(Ordering::Acquire) {
                db.clean_now().expect("clean_now");
                passes += 1;
                std::thread::sleep(std::time::Duration::from_millis(2));
            }
            passes
        })
    };
    let start = Arc::new(Barrier::new(THREADS));
    let writers_left = Arc::new(AtomicUsize::new(WRITERS));
    let failed = Arc::new(AtomicBool::new(false));

    let writer_handles: Vec<_> = (0..WRITERS)
        .map(|w| {
            let (db, start, left, failed) = (
                db.clone(),
                start.clone(),
                writers_left.clone(),
                failed.clone(),
            );
            std::thread::spawn(move || {
                let r =
                    std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| writer(db, w, start)));
                left.fetch_sub(1, Ordering::Release);
                r.unwrap_or_else(|e| {
                    failed.store(true, Ordering::Relaxed);
                    std::panic::resume_unwind(e)
                })
            })
        })
        .collect();
    let reader_handles: Vec<_> = (0..READERS)
        .map(|r| {
            let (db, start, left, failed) = (
                db.clone(),
                start.clone(),
                writers_left.clone(),
                failed.clone(),
            );
            std::thread::spawn(move || {
                let res = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
                    reader(db, r, start, left, failed.clone())
                }));
                res.unwrap_or_else(|e| {
                    failed.store(true, Ordering::Relaxed);
                    std::panic::resume_unwind(e)
                })
            })
        })
        .collect();

    let mut last_versions = Vec::new();
    let mut last_hot_by_thread = Vec::new();
    for h in writer_handles {
        let (last, hot) = h.join().expect("writer thread panicked");
        last_versions.push(last);
        last_hot_by_thread.push(hot);
    }
    let mut total_reads = 0;
    for h in reader_handles {
        let (reads, hot) = h.join().expect("reader thread panicked");
        total_reads += reads;
        last_hot_by_thread.push(hot);
    }

    cleaning_done.store(true, Ordering::Release);
    let cleaner_passes = cleaner.join().expect("cleaner thread panicked");
    let stats = db.stats();
    assert!(cleaner_passes > 0);
    eprintln!(
        "cleaner: {cleaner_passes} passes, {} segments cleaned, {} bytes moved",
        stats.cleaned_segments, stats.cleaned_bytes
    );
    eprintln!(
        "stress: {:?}, {} reads, {} eliminated puts, {} index splits, depth {}",
        started.elapsed(),
        total_reads,
        stats.eliminated_puts,
        stats.index_splits,
        stats.index_depth
    );
    assert!(
        stats.index_splits > 0,
        "100k keys on 256 KiB segments must split the index during the run"
    );
    assert!(total_reads > 0);

    // The counter saw every increment exactly once.
    assert_eq!(read_counter(&db), INCREMENTS_PER_THREAD * THREADS as u64);

    // Each hot key ends with the last value some thread wrote to it: a put
    // may be eliminated only in favour of an overlapping later one.
    for j in 0..HOT_KEYS {
        let k = hot_key(j);
        let v = db.get(&k).unwrap().expect("hot key present");
        let (version, writer) = verify(&k, &v);
        let candidates: Vec<u64> = last_hot_by_thread.iter().filter_map(|t| t[j]).collect();
        assert!(
            candidates.contains(&version),
            "hot key {j} holds version {version:#x} (writer {writer}), not any thread's last {candidates:x?}"
        );
    }

    let verify_owned = |db: &Db| {
        for (w, last) in last_versions.iter().enumerate() {
            for (i, &version) in last.iter().enumerate() {
                let k = own_key(w, i);
                let v = db
                    .get(&k)
                    .unwrap()
                    .unwrap_or_else(|| panic!("key {w}/{i} missing"));
                assert_eq!(verify(&k, &v), (version, w as u64), "key {w}/{i}");
            }
        }
    };
    verify_owned(&db);

    let expected_keys = (WRITERS * KEYS_PER_WRITER + HOT_KEYS + 1) as u64;
    assert_eq!(db.len(), expected_keys);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "check errors: {:?}", report.errors);
    assert_eq!(report.keys, expected_keys);

    drop(Arc::try_unwrap(db).expect("all threads joined"));
    let db = Db::open(&path, options).unwrap();
    assert_eq!(db.len(), expected_keys);
    verify_owned(&db);
    assert_eq!(read_counter(&db), INCREMENTS_PER_THREAD * THREADS as u64);
    let report = db.check().unwrap();
    assert!(
        report.is_ok(),
        "check errors after reopen: {:?}",
        report.errors
    );
    eprintln!("stress total: {:?}", started.elapsed());
}
