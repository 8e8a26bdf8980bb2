//! The DRAM point index (HybridIndex+ placement): nothing of the hash index
//! is in the pool; after every open it is rebuilt from the ordered index,
//! which answers the reads it misses until then. Reads during the rebuild
//! see every key with its value, writers racing the rebuild lose nothing,
//! the cleaner keeps node and index in step, a point read writes nothing to
//! PM, and bad combinations of options are refused clearly.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use persimmon::{Db, Error, Mechanisms, Options, PointIndex, Update};

fn dram_options() -> Options {
    Options {
        ordered_index: true,
        point_index: PointIndex::Dram,
        ..common::small_options()
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("d{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-{round}-").into_bytes();
    v.resize(16 + (i as usize % 48), b'.');
    v
}

fn assert_consistent(db: &Db, keys: u64) {
    let report = db.check().unwrap();
    assert!(report.is_ok(), "check: {:?}", report.errors);
    assert_eq!(report.keys, keys);
    assert_eq!(report.ordered_nodes, keys);
    assert_eq!(report.ordered_orphans, 0);
    assert_eq!(db.len(), keys);
}

#[test]
fn pool_remembers_its_placement_and_has_no_index_segment() {
    let dir = common::pool_dir();
    let path = dir.path().join("p.pool");
    {
        let db = Db::open(&path, dram_options()).unwrap();
        assert_eq!(db.point_index(), PointIndex::Dram);
        for i in 0..50_000 {
            db.put(&key(i), &value(i, 0)).unwrap();
        }
        let s = db.stats();
        assert_eq!(s.point_index, PointIndex::Dram);
        assert_eq!(
            s.segments_index, 0,
            "the point index must not use pool segments"
        );
        assert!(s.dram_index_bytes > 0);
        assert!(
            s.index_splits > 0,
            "50 000 keys split a 256 KiB segment (32 768 slots)"
        );
    }
    // Opened with default options (PM placement asked): the pool's own wins.
    let db = Db::open(
        &path,
        Options {
            ..common::small_options()
        },
    )
    .unwrap();
    assert_eq!(db.point_index(), PointIndex::Dram);
    assert!(db.has_ordered_index());
    db.wait_for_rebuild();
    assert!(db.stats().point_index_ready);
    for i in 0..50_000 {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 0)), "key {i}");
    }
    assert_consistent(&db, 50_000);
}

#[test]
fn bad_combinations_are_refused() {
    let dir = common::pool_dir();
    let e = Db::open(
        dir.path().join("a.pool"),
        Options {
            point_index: PointIndex::Dram,
            ..common::small_options()
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidOptions(ref m) if m.contains("ordered index")),
        "{e}"
    );
    assert!(!dir.path().join("a.pool").exists());
    let e = Db::open(
        dir.path().join("b.pool"),
        Options {
            mechanisms: Mechanisms::NONE,
            ..dram_options()
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidOptions(ref m) if m.contains("mechanisms")),
        "{e}"
    );
    let path = dir.path().join("c.pool");
    drop(Db::open(&path, dram_options()).unwrap());
    let e = Db::open(
        &path,
        Options {
            mechanisms: Mechanisms {
                write_elimination: false,
                ..Mechanisms::ALL
            },
            ..dram_options()
        },
    )
    .unwrap_err();
    assert!(
        matches!(e, Error::InvalidOptions(ref m) if m.contains("DRAM")),
        "{e}"
    );
    assert_eq!("dram".parse::<PointIndex>(), Ok(PointIndex::Dram));
    assert!("disk".parse::<PointIndex>().is_err());
}

#[test]
fn reads_during_the_rebuild_see_every_key() {
    let dir = common::pool_dir();
    let path = dir.path().join("r.pool");
    let n = 60_000u32;
    {
        let db = Db::open(&path, dram_options()).unwrap();
        for i in 0..n {
            db.put(&key(i), &value(i, 1)).unwrap();
        }
        for i in (0..n).step_by(10) {
            assert!(db.delete(&key(i)).unwrap());
        }
    }
    let mut unready_reads = false;
    for _reopen in 0..2 {
        let db = Arc::new(Db::open(&path, dram_options()).unwrap());
        let saw_unready = Arc::new(AtomicBool::new(false));
        let readers: Vec<_> = (0..2u32)
            .map(|t| {
                let (db, saw_unready) = (db.clone(), saw_unready.clone());
                std::thread::spawn(move || {
                    let mut i = t;
                    while i < n {
                        let want = (i % 10 != 0).then(|| value(i, 1));
                        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
                        // Still unready after the read returned: the read
                        // ran before the index was complete.
                        if i % 64 < 2 && !db.stats().point_index_ready {
                            saw_unready.store(true, Ordering::Relaxed);
                        }
                        i += 2;
                    }
                })
            })
            .collect();
        // Range reads work at once too.
        assert_eq!(db.count_range::<[u8]>(..).unwrap(), (n - n / 10) as u64);
        for r in readers {
            r.join().unwrap();
        }
        db.wait_for_rebuild();
        assert!(db.stats().point_index_ready);
        assert_consistent(&db, (n - n / 10) as u64);
        unready_reads |= saw_unready.load(Ordering::Relaxed);
    }
    // The rebuild of 54 000 keys takes far longer than the first reads.
    assert!(unready_reads, "no read ran before the index was complete");
}

#[test]
fn writers_racing_the_rebuild_lose_nothing() {
    let dir = common::pool_dir();
    let path = dir.path().join("w.pool");
    let n = 60_000u32;
    {
        let db = Db::open(&path, dram_options()).unwrap();
        for i in 0..n {
            db.put(&key(i), &value(i, 0)).unwrap();
        }
    }
    let db = Arc::new(Db::open(&path, dram_options()).unwrap());
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                // Both ends of the key space, so some writes land before the
                // rebuild reaches the key and some after: overwrite, delete,
                // delete-and-reput, update, and new keys.
                for j in 0..8_000u32 {
                    let i = if t == 0 { j * 7 } else { n - 1 - j * 7 };
                    match j % 4 {
                        0 => db.put(&key(i), &value(i, 2)).unwrap(),
                        1 => assert!(db.delete(&key(i)).unwrap(), "key {i} present"),
                        2 => {
                            assert!(db.delete(&key(i)).unwrap());
                            db.put(&key(i), &value(i, 3)).unwrap();
                        }
                        _ => {
                            let v = value(i, 4);
                            let old = db
                                .update(&key(i), move |cur| {
                                    (Update::Put(v), cur.map(<[u8]>::to_vec))
                                })
                                .unwrap();
                            assert_eq!(old, Some(value(i, 0)), "key {i}");
                        }
                    }
                    db.put(&key(n + t * 10_000 + j), &value(j, 5)).unwrap();
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    db.wait_for_rebuild();
    let expect = |i: u32| -> Option<Vec<u8>> {
        if i >= n {
            return Some(value((i - n) % 10_000, 5));
        }
        // Thread 0 touched 7j, thread 1 n-1-7j (j < 8000; never the same
        // key: n-1 = 2 mod 7).
        for d in [i, n - 1 - i] {
            if d.is_multiple_of(7) && d / 7 < 8_000 {
                return match (d / 7) % 4 {
                    0 => Some(value(i, 2)),
                    1 => None,
                    2 => Some(value(i, 3)),
                    _ => Some(value(i, 4)),
                };
            }
        }
        Some(value(i, 0))
    };
    let mut present = 0u64;
    for i in 0..n + 20_000 {
        if i >= n && (i - n) % 10_000 >= 8_000 {
            continue;
        }
        let want = expect(i);
        present += want.is_some() as u64;
        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
    }
    assert_consistent(&db, present);
    drop(db);
    let db = Db::open(&path, dram_options()).unwrap();
    db.wait_for_rebuild();
    assert_consistent(&db, present);
}

#[test]
fn cleaner_moves_records_and_nodes_follow() {
    let dir = common::pool_dir();
    let path = dir.path().join("c.pool");
    let opts = Options {
        cleaner: false,
        ..dram_options()
    };
    let db = Db::open(&path, opts.clone()).unwrap();
    let n = 3_000u32;
    for round in 0..6 {
        for i in 0..n {
            db.put(&key(i), &value(i, round)).unwrap();
        }
    }
    db.wait_for_rebuild();
    assert!(db.clean_now().unwrap() > 0, "overwritten segments to clean");
    let s = db.stats();
    assert!(s.cleaned_bytes > 0);
    assert_consistent(&db, n as u64);
    drop(db);
    let db = Db::open(&path, opts).unwrap();
    for i in 0..n {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, 5)));
    }
    db.wait_for_rebuild();
    assert_consistent(&db, n as u64);
}

#[test]
fn a_point_read_writes_nothing_and_an_overwrite_costs_what_it_does_in_pm() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("t.pool"), dram_options()).unwrap();
    db.put(b"k", b"v1").unwrap();
    db.wait_for_rebuild();
    // Per-thread counters: this thread's work only.
    let t0 = persimmon::pmem::thread_counters();
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v1"[..]));
    let t1 = persimmon::pmem::thread_counters();
    assert_eq!(t1.since(&t0).bytes_written, 0, "a get wrote to PM");
    db.put(b"k", b"v2").unwrap();
    let t2 = persimmon::pmem::thread_counters();
    let put = t2.since(&t1);
    // The record (one line here) and the node's record word; two fences.
    assert_eq!(put.fences, 2, "{put:?}");
    assert!(put.flushes <= 3, "{put:?}");
}

#[test]
fn counts_and_values_survive_many_reopens_with_deletes() {
    let dir = common::pool_dir();
    let path = dir.path().join("m.pool");
    let live = AtomicU64::new(0);
    let mut model = std::collections::BTreeMap::new();
    for round in 0..5u32 {
        let db = Db::open(&path, dram_options()).unwrap();
        if round % 2 == 0 {
            db.wait_for_rebuild();
        }
        for i in 0..2_000u32 {
            let k = key(i * 3 + round);
            if (i + round) % 3 == 0 {
                if db.delete(&k).unwrap() {
                    model.remove(&k);
                }
            } else {
                db.put(&k, &value(i, round)).unwrap();
                model.insert(k, value(i, round));
            }
        }
        db.wait_for_rebuild();
        live.store(model.len() as u64, Ordering::Relaxed);
        assert_consistent(&db, model.len() as u64);
        let got: Vec<(Vec<u8>, Vec<u8>)> =
            db.range::<[u8]>(..).unwrap().map(|r| r.unwrap()).collect();
        let want: Vec<(Vec<u8>, Vec<u8>)> =
            model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
        assert_eq!(got, want);
    }
}
