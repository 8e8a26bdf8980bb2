//! `Db::write_grouped`: many independent writes sharing two fences.
//!
//! 1. Fences: a grouped write of 1, 10, 100 or 1000 puts (new keys,
//!    overwrites), or puts and deletes, takes exactly 2 fences (deletes
//!    only: 1) on a quiet pool
//!    (no segment allocated meanwhile), where as many single puts take 2
//!    each.
//! 2. Model: random groups of puts, deletes and puts with deadlines give
//!    the same contents as a `BTreeMap` applying them one by one (a later
//!    operation on a key replacing an earlier one), on pools with the PM
//!    point index, the skiplist, the DRAM point index with leaves, the
//!    baseline mechanisms and the SSD tier; `check` is clean and a reopen
//!    shows the same contents.
//! 3. Errors write nothing: a key over the limit in the middle of a group,
//!    a group over the batch limits, and a pool that runs full leave every
//!    key of the group as it was.
//! 4. Concurrent readers: each key read while groups are written holds a
//!    value of a group that had begun, no older than the last group that had
//!    returned before the read (per key: old or new, never anything else;
//!    the group is not atomic across keys, so nothing more is claimed).

mod common;

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Mutex;

use persimmon::pmem::{self, PmemCounters};
use persimmon::{Db, Error, ManualClock, Mechanisms, Options, PointIndex, WriteBatch};

/// The fence test reads process-wide counters: no other test of this file
/// may run meanwhile, so every test takes this lock.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn key(tag: &str, i: usize) -> Vec<u8> {
    format!("{tag}-{i:05}").into_bytes()
}

fn segments(db: &Db) -> (u32, u32, u32, u32, u64) {
    let s = db.stats();
    (
        s.segments_total,
        s.segments_free,
        s.segments_log,
        s.segments_index,
        s.index_splits,
    )
}

/// Runs `f` and returns its cost, checking that no other thread did
/// persistence work and no segment moved meanwhile.
fn measure(db: &Db, what: &str, f: impl FnOnce()) -> PmemCounters {
    let before = (
        pmem::process_counters(),
        pmem::thread_counters(),
        segments(db),
    );
    f();
    let process = pmem::process_counters().since(&before.0);
    let thread = pmem::thread_counters().since(&before.1);
    assert_eq!(
        process, thread,
        "{what}: another thread did persistence work"
    );
    assert_eq!(segments(db), before.2, "{what}: a segment moved");
    process
}

#[test]
fn a_group_takes_two_fences_whatever_its_size() {
    let _serial = serial();
    let dir = common::pool_dir();
    let options = Options {
        pool_bytes_initial: 64 << 20,
        segment_bytes: 8 << 20,
        lanes: 1,
        cleaner: false,
        active_expiry: false,
        ..common::small_options()
    };
    let db = Db::open(dir.path().join("grouped.pool"), options).unwrap();
    db.wait_for_rebuild();
    // Split the index wide enough for every key and give the lane its log
    // segment.
    let mut warm = WriteBatch::new();
    for i in 0..4000 {
        warm.put(&key("warm", i), &[1; 64]);
    }
    db.write_grouped(&warm).unwrap();
    let mut warm = WriteBatch::new();
    for i in 0..4000 {
        warm.delete(&key("warm", i));
    }
    db.write_grouped(&warm).unwrap();

    let flushing = db.stats().flush_instruction != "none (eADR)";
    let mut rows = Vec::new();
    for n in [1usize, 10, 100, 1000] {
        let tag = format!("n{n}");
        let group = |f: &dyn Fn(usize, &mut WriteBatch)| {
            let mut b = WriteBatch::new();
            for i in 0..n {
                f(i, &mut b);
            }
            b
        };
        let new_keys = group(&|i, b| {
            b.put(&key(&tag, i), &[i as u8; 64]);
        });
        let overwrites = group(&|i, b| {
            b.put(&key(&tag, i), &[!(i as u8); 64]);
        });
        let mixed = group(&|i, b| {
            if i % 2 == 0 {
                b.put(&key(&tag, i), &[7; 64]);
            } else {
                b.delete(&key(&tag, i));
            }
        });
        let deletes = group(&|i, b| {
            b.delete(&key(&tag, i));
        });
        for (what, b) in [
            ("new keys", &new_keys),
            ("overwrites", &overwrites),
            ("mixed", &mixed),
            ("deletes", &deletes),
        ] {
            let what = format!("group of {n} {what}");
            let cost = measure(&db, &what, || db.write_grouped(b).unwrap());
            // A group of deletes only has no record to make durable first.
            let fences = if b.len() == n && what.ends_with("deletes") {
                1
            } else {
                2
            };
            assert_eq!(cost.fences, fences, "{what}: {cost:?}");
            if flushing {
                // Per key: its record (up to three lines for these sizes,
                // a line shared with the next record flushed by each) and
                // its word.
                assert!(cost.flushes <= 4 * n as u64, "{what}: {cost:?}");
                // (After the mixed group, half the keys are left to delete.)
                assert!(cost.flushes >= n as u64 / 2, "{what}: every word flushed");
            }
            rows.push(format!(
                "{what:>28}: {} fences, {} flushes, {} bytes",
                cost.fences, cost.flushes, cost.bytes_written
            ));
        }
        for i in 0..n {
            assert_eq!(db.get(&key(&tag, i)).unwrap(), None);
        }
        // The same keys put one by one: 2 fences each.
        let singles = measure(&db, "single puts", || {
            for i in 0..n {
                db.put(&key(&tag, i), &[3; 64]).unwrap();
            }
        });
        assert_eq!(singles.fences, 2 * n as u64);
    }
    eprintln!("{}", rows.join("\n"));
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

// ------------------------------------------------------------------ model

/// xorshift64*: reproducible choices without a dependency.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

const NOW: u64 = 1_700_000_000_000;

fn model_run(name: &str, options: Options, clock: &ManualClock, value_len: usize) {
    let dir = common::pool_dir();
    let path = dir.path().join("model.pool");
    let db = Db::open(&path, options.clone()).unwrap();
    let mut model: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ name.len() as u64);
    let universe = 300;
    for round in 0..200 {
        let mut b = WriteBatch::new();
        let n = 1 + rng.below(if round % 10 == 0 { 400 } else { 40 }) as usize;
        for _ in 0..n {
            let k = key("m", rng.below(universe) as usize);
            match rng.below(10) {
                0..=5 => {
                    let len = 1 + rng.below(value_len as u64) as usize;
                    let v = vec![rng.below(256) as u8; len];
                    b.put(&k, &v);
                    model.insert(k, v);
                }
                6..=7 => {
                    b.delete(&k);
                    model.remove(&k);
                }
                8 => {
                    // A deadline in the future: present.
                    let v = vec![9; 5];
                    b.put_with_deadline(&k, &v, NOW + 1_000_000);
                    model.insert(k, v);
                }
                _ => {
                    // A deadline already passed: a delete.
                    b.put_with_deadline(&k, b"gone", NOW - 1);
                    model.remove(&k);
                }
            }
        }
        db.write_grouped(&b).unwrap();
        if round % 20 == 0 {
            compare(name, &db, &model, universe);
        }
    }
    compare(name, &db, &model, universe);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{name}: {:?}", report.errors);
    assert_eq!(report.keys, model.len() as u64, "{name}: key count");
    drop(db);
    let _ = clock;
    let db = Db::open(&path, options).unwrap();
    db.wait_for_rebuild();
    compare(name, &db, &model, universe);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{name} reopened: {:?}", report.errors);
}

fn compare(name: &str, db: &Db, model: &BTreeMap<Vec<u8>, Vec<u8>>, universe: u64) {
    for i in 0..universe as usize {
        let k = key("m", i);
        assert_eq!(
            db.get(&k).unwrap().as_ref(),
            model.get(&k),
            "{name}: key {i}"
        );
    }
    let mut seen: Vec<(Vec<u8>, Vec<u8>)> = db.iter().map(|r| r.unwrap()).collect();
    seen.sort();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(seen, want, "{name}: iteration");
}

#[test]
fn grouped_writes_match_a_model_on_every_pool() {
    let _serial = serial();
    let clock = ManualClock::new(NOW);
    let base = Options {
        clock: persimmon::Clock::Manual(clock.clone()),
        ..common::small_options()
    };
    let pools: Vec<(&str, Options)> = vec![
        ("pm", base.clone()),
        (
            "pm, skiplist",
            Options {
                ordered_index: true,
                ..base.clone()
            },
        ),
        (
            "dram, leaves",
            Options {
                ordered_index: true,
                point_index: PointIndex::Dram,
                ..base.clone()
            },
        ),
        (
            "baseline mechanisms",
            Options {
                mechanisms: Options::baseline().mechanisms,
                ..base.clone()
            },
        ),
        (
            "no write elimination",
            Options {
                mechanisms: Mechanisms {
                    write_elimination: false,
                    ..Mechanisms::ALL
                },
                ..base.clone()
            },
        ),
    ];
    for (name, options) in pools {
        model_run(name, options, &clock, 200);
    }
}

#[test]
fn grouped_writes_match_a_model_on_a_tiered_pool() {
    let _serial = serial();
    let clock = ManualClock::new(NOW);
    let data = common::pool_dir();
    let options = Options {
        clock: persimmon::Clock::Manual(clock.clone()),
        data_dir: Some(data.path().join("data")),
        cache_bytes: 1 << 20,
        ..common::small_options()
    };
    // Values up to 12 KiB: many go to the tier.
    model_run("tiered", options, &clock, 12 << 10);
}

// ----------------------------------------------------------------- errors

#[test]
fn an_error_writes_nothing() {
    let _serial = serial();
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("errors.pool"), common::small_options()).unwrap();
    for i in 0..10 {
        db.put(&key("e", i), b"old").unwrap();
    }
    // A key over the limit in the middle.
    let mut b = WriteBatch::new();
    for i in 0..5 {
        b.put(&key("e", i), b"new");
    }
    b.put(&vec![b'x'; persimmon::MAX_KEY_BYTES + 1], b"v");
    for i in 5..20 {
        b.put(&key("e", i), b"new");
    }
    assert!(matches!(
        db.write_grouped(&b),
        Err(Error::KeyTooLarge { .. })
    ));
    // Over the batch limit.
    let mut big = WriteBatch::new();
    for i in 0..=persimmon::MAX_BATCH_OPS {
        big.put(&key("big", i), b"v");
    }
    big.put(&key("e", 0), b"new");
    assert!(matches!(
        db.write_grouped(&big),
        Err(Error::BatchTooLarge { .. })
    ));
    for i in 0..10 {
        assert_eq!(db.get(&key("e", i)).unwrap().as_deref(), Some(&b"old"[..]));
    }
    for i in 10..20 {
        assert_eq!(db.get(&key("e", i)).unwrap(), None);
    }
    assert_eq!(db.get(&key("big", 0)).unwrap(), None);
}

#[test]
fn a_full_pool_fails_a_group_with_nothing_written() {
    let _serial = serial();
    let dir = common::pool_dir();
    let options = Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 8 << 20,
        segment_bytes: 256 << 10,
        cleaner: false,
        ..Options::default()
    };
    let db = Db::open(dir.path().join("full.pool"), options).unwrap();
    let value = vec![0xABu8; 2000];
    let mut group = 0;
    let failed = loop {
        let mut b = WriteBatch::new();
        for i in 0..50 {
            b.put(&key(&format!("g{group}"), i), &value);
        }
        match db.write_grouped(&b) {
            Ok(()) => group += 1,
            Err(e) => break (group, e),
        }
        assert!(group < 10_000, "the pool never ran full");
    };
    assert!(matches!(failed.1, Error::PoolFull { .. }), "{:?}", failed.1);
    for i in 0..50 {
        assert_eq!(
            db.get(&key(&format!("g{}", failed.0), i)).unwrap(),
            None,
            "key {i} of the failed group"
        );
    }
    for g in 0..failed.0 {
        for i in 0..50 {
            assert_eq!(
                db.get(&key(&format!("g{g}"), i)).unwrap().as_deref(),
                Some(&value[..])
            );
        }
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

// -------------------------------------------------------- concurrent reads

#[test]
fn concurrent_readers_see_each_key_old_or_new() {
    let _serial = serial();
    let dir = common::pool_dir();
    let options = Options {
        ordered_index: true,
        point_index: PointIndex::Dram,
        ..common::small_options()
    };
    let db = Db::open(dir.path().join("readers.pool"), options).unwrap();
    const KEYS: usize = 64;
    const GROUPS: u64 = 400;
    let begun = AtomicU64::new(0);
    let returned = AtomicU64::new(0);
    let done = AtomicBool::new(false);
    let value = |g: u64| {
        let mut v = g.to_le_bytes().to_vec();
        v.extend_from_slice(&[g as u8; 40]);
        v
    };
    std::thread::scope(|s| {
        s.spawn(|| {
            for g in 1..=GROUPS {
                let mut b = WriteBatch::new();
                for i in 0..KEYS {
                    b.put(&key("r", i), &value(g));
                }
                begun.store(g, Ordering::SeqCst);
                db.write_grouped(&b).unwrap();
                returned.store(g, Ordering::SeqCst);
            }
            done.store(true, Ordering::SeqCst);
        });
        for r in 0..2 {
            let (db, begun, returned, done) = (&db, &begun, &returned, &done);
            s.spawn(move || {
                let mut last = vec![0u64; KEYS];
                while !done.load(Ordering::SeqCst) {
                    for i in (0..KEYS).map(|i| (i + r * 7) % KEYS) {
                        let floor = returned.load(Ordering::SeqCst);
                        let v = db.get(&key("r", i)).unwrap();
                        let ceiling = begun.load(Ordering::SeqCst);
                        let g = match v {
                            None => 0,
                            Some(v) => {
                                let g = u64::from_le_bytes(v[..8].try_into().unwrap());
                                assert_eq!(v, value(g), "key {i}: a torn value");
                                g
                            }
                        };
                        assert!(
                            floor <= g && g <= ceiling,
                            "key {i}: group {g} read between {floor} and {ceiling}"
                        );
                        assert!(g >= last[i], "key {i} went back from {} to {g}", last[i]);
                        last[i] = g;
                    }
                }
            });
        }
    });
    for i in 0..KEYS {
        assert_eq!(db.get(&key("r", i)).unwrap(), Some(value(GROUPS)));
    }
}
