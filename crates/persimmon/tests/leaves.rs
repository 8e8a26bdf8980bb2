//! The ordered index in leaves (format version 6, docs/design.md §10b)
//! against a `BTreeMap` model: many splits (short, binary and long keys
//! sharing long prefixes, so low keys go out of line), deletes that empty
//! leaves, batches, reopens after a clean close (the leaf map read from its
//! copy), after a torn copy, and from crash images (the pool file copied
//! while open: the map rebuilt from the leaf headers); and scans racing
//! writers that split the leaves under them.
mod common;

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use persimmon::{Db, Options, PointIndex, WriteBatch};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

fn options() -> Options {
    Options {
        ordered_index: true,
        point_index: PointIndex::Dram,
        ..common::small_options()
    }
}

/// Key `n` of a space with three shapes: short text, 8 raw bytes (zero
/// bytes included, so prefixes tie with shorter keys), and 70-byte keys
/// sharing a 60-byte prefix.
fn key(n: u32) -> Vec<u8> {
    match n % 3 {
        0 => format!("t{:05}", n / 3).into_bytes(),
        1 => {
            let mut k = (n / 3).to_be_bytes().to_vec();
            k.extend_from_slice(&[0, 0, (n % 7) as u8, 0]);
            k.truncate(4 + (n as usize % 5));
            k
        }
        _ => format!("{}{:010}", "P".repeat(60), n / 3).into_bytes(),
    }
}

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn bound(rng: &mut StdRng) -> Bound<Vec<u8>> {
    match rng.gen_range(0..3) {
        0 => Bound::Unbounded,
        1 => Bound::Included(key(rng.gen_range(0..3000))),
        _ => Bound::Excluded(key(rng.gen_range(0..3000))),
    }
}

fn in_range(k: &[u8], lo: &Bound<Vec<u8>>, hi: &Bound<Vec<u8>>) -> bool {
    let above = match lo {
        Bound::Unbounded => true,
        Bound::Included(l) => k >= l.as_slice(),
        Bound::Excluded(l) => k > l.as_slice(),
    };
    let below = match hi {
        Bound::Unbounded => true,
        Bound::Included(h) => k <= h.as_slice(),
        Bound::Excluded(h) => k < h.as_slice(),
    };
    above && below
}

/// Ranges in both directions, prefixes and counts agree with the model.
fn agree(db: &Db, model: &Model, rng: &mut StdRng) {
    let all: Vec<(Vec<u8>, Vec<u8>)> = db.range::<[u8]>(..).unwrap().map(|r| r.unwrap()).collect();
    let want: Vec<(Vec<u8>, Vec<u8>)> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(all.len(), want.len(), "whole range length");
    assert!(all == want, "whole range differs from the model");
    for _ in 0..20 {
        let (lo, hi) = (bound(rng), bound(rng));
        let r = (lo.clone(), hi.clone());
        let want: Vec<&Vec<u8>> = model.keys().filter(|k| in_range(k, &lo, &hi)).collect();
        let take = rng.gen_range(1..200);
        let fwd: Vec<Vec<u8>> = db
            .range_keys::<Vec<u8>>(r.clone())
            .unwrap()
            .take(take)
            .map(|r| r.unwrap())
            .collect();
        let want_fwd: Vec<Vec<u8>> = want.iter().take(take).map(|k| k.to_vec()).collect();
        assert_eq!(fwd, want_fwd, "forward {lo:?}..{hi:?} take {take}");
        let back: Vec<Vec<u8>> = db
            .range_keys::<Vec<u8>>(r.clone())
            .unwrap()
            .rev()
            .take(take)
            .map(|r| r.unwrap())
            .collect();
        let want_back: Vec<Vec<u8>> = want.iter().rev().take(take).map(|k| k.to_vec()).collect();
        assert_eq!(back, want_back, "backward {lo:?}..{hi:?} take {take}");
        assert_eq!(
            db.count_range::<Vec<u8>>(r.clone()).unwrap(),
            want.len() as u64
        );
        let mut lent = Vec::new();
        let n = db
            .scan_with::<Vec<u8>>(r, take, |k, v| {
                lent.push((k.to_vec(), v.to_vec()));
                true
            })
            .unwrap();
        let want_lent: Vec<(Vec<u8>, Vec<u8>)> = want_fwd
            .iter()
            .map(|k| (k.clone(), model[k].clone()))
            .collect();
        assert_eq!(n, want_lent.len());
        assert_eq!(lent, want_lent, "scan_with {lo:?}..{hi:?} limit {take}");
    }
    let p = key(rng.gen_range(0..3000));
    let p = &p[..p.len().min(3)];
    let got: Vec<Vec<u8>> = db.prefix_keys(p).unwrap().map(|r| r.unwrap()).collect();
    let want: Vec<Vec<u8>> = model.keys().filter(|k| k.starts_with(p)).cloned().collect();
    assert_eq!(got, want, "prefix {p:?}");
}

fn step(db: &Db, model: &mut Model, rng: &mut StdRng, round: u32) {
    for i in 0..1500u32 {
        let k = key(rng.gen_range(0..3000));
        match rng.gen_range(0..10) {
            0..=5 => {
                let v = format!("{round}-{i}").into_bytes();
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            6..=7 => {
                assert_eq!(db.delete(&k).unwrap(), model.remove(&k).is_some());
            }
            8 => {
                let mut b = WriteBatch::new();
                let mut staged = Vec::new();
                for j in 0..rng.gen_range(1..40) {
                    let k = key(rng.gen_range(0..3000));
                    if rng.gen_bool(0.8) {
                        let v = format!("b{round}-{i}-{j}").into_bytes();
                        b.put(&k, &v);
                        staged.push((k, Some(v)));
                    } else {
                        b.delete(&k);
                        staged.push((k, None));
                    }
                }
                db.write(&b).unwrap();
                for (k, v) in staged {
                    match v {
                        Some(v) => model.insert(k, v),
                        None => model.remove(&k),
                    };
                }
            }
            _ => {
                assert_eq!(db.get(&k).unwrap().as_ref(), model.get(&k));
            }
        }
    }
}

#[test]
fn leaves_agree_with_a_btreemap_through_splits_reopens_and_crash_images() {
    let dir = common::pool_dir();
    let path = dir.path().join("leaves.pool");
    let mut rng = StdRng::seed_from_u64(0x1eaf);
    let mut model = Model::new();
    for round in 0..6u32 {
        let db = Db::open(&path, options()).unwrap();
        if round % 2 == 1 {
            // Served by the leaves while the DRAM index is rebuilt.
            agree(&db, &model, &mut rng);
        }
        db.wait_for_rebuild();
        agree(&db, &model, &mut rng);
        step(&db, &mut model, &mut rng, round);
        agree(&db, &model, &mut rng);
        let report = db.check().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.errors);
        assert_eq!(report.keys, model.len() as u64);
        match round % 3 {
            0 => drop(db), // clean close: the map's copy is used next
            1 => {
                // A crash image: every store so far, no clean close.
                let image = dir.path().join("image.pool");
                std::fs::copy(&path, &image).unwrap();
                drop(db);
                std::fs::rename(&image, &path).unwrap();
            }
            _ => {
                drop(db);
                // A torn copy of the map is not used.
                let copy = format!("{}.leaves", path.display());
                let mut bytes = std::fs::read(&copy).unwrap();
                let mid = bytes.len() / 2;
                bytes[mid] ^= 0x40;
                std::fs::write(&copy, &bytes).unwrap();
            }
        }
    }
}

#[test]
fn scans_racing_writers_that_split_their_leaves_stay_ordered_and_complete() {
    let dir = common::pool_dir();
    let db = Arc::new(Db::open(dir.path().join("race.pool"), options()).unwrap());
    // Stable keys, never written again: every full scan must return them.
    let stable: Vec<Vec<u8>> = (0..400u32)
        .map(|i| format!("s{i:05}").into_bytes())
        .collect();
    for k in &stable {
        db.put(k, b"stable").unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut n = 0u32;
                while !stop.load(Ordering::Relaxed) && n < 20_000 {
                    // Keys between the stable ones: inserts split their leaves.
                    let k = format!("s{:05}-{t}-{n}", n % 400).into_bytes();
                    db.put(&k, b"moving").unwrap();
                    if n.is_multiple_of(3) {
                        db.delete(&k).unwrap();
                    }
                    n += 1;
                }
            })
        })
        .collect();
    for _ in 0..60 {
        let keys: Vec<Vec<u8>> = db
            .range_keys::<[u8]>(..)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys out of order");
        let mut it = keys.iter().filter(|k| !k.contains(&b'-'));
        for s in &stable {
            assert_eq!(it.next(), Some(s), "a stable key is missing from a scan");
        }
        let back: Vec<Vec<u8>> = db
            .range_keys::<[u8]>(..)
            .unwrap()
            .rev()
            .map(|r| r.unwrap())
            .collect();
        assert!(
            back.windows(2).all(|w| w[0] > w[1]),
            "keys out of order backwards"
        );
        assert_eq!(
            back.iter().filter(|k| !k.contains(&b'-')).count(),
            stable.len()
        );
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

#[test]
fn a_new_key_costs_two_fences_and_a_delete_one_as_without_an_ordered_index() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("cost.pool"), options()).unwrap();
    db.put(b"a", b"first").unwrap();
    let mut inserts = Vec::new();
    let mut deletes = Vec::new();
    // 30 new keys into the first leaf (60 entries): no split among them.
    for i in 0..30u32 {
        let k = format!("k{i:03}").into_bytes();
        let t0 = persimmon::pmem::thread_counters();
        db.put(&k, b"value").unwrap();
        inserts.push(persimmon::pmem::thread_counters().since(&t0));
    }
    for i in 0..30u32 {
        let k = format!("k{i:03}").into_bytes();
        let t0 = persimmon::pmem::thread_counters();
        assert!(db.delete(&k).unwrap());
        deletes.push(persimmon::pmem::thread_counters().since(&t0));
    }
    for c in &inserts {
        // The record (flush, fence), the entry's word (flush, fence).
        assert_eq!(c.fences, 2, "{c:?}");
        assert!(c.flushes <= 3, "{c:?}");
    }
    for c in &deletes {
        // The delete marker (flush, fence); no unlink as with the skiplist.
        assert_eq!(c.fences, 1, "{c:?}");
        assert!(c.flushes <= 1, "{c:?}");
    }
}
