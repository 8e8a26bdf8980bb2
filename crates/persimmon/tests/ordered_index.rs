//! The ordered index (persistent skiplist): ranges, prefixes, first/last and
//! counts agree with a `BTreeMap` model through random puts, deletes,
//! updates and reopens; the same holds for pools in every engine mode and
//! with the point index in DRAM;
//! iteration under concurrent writers returns every stable key exactly once
//! and in order; node space is reused; bad uses give clear errors.

mod common;

use std::collections::{BTreeMap, BTreeSet};
use std::ops::Bound;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use persimmon::{Db, Error, Mechanisms, Options, PointIndex, Update};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn ordered_options(mechanisms: Mechanisms) -> Options {
    Options {
        ordered_index: true,
        mechanisms,
        ..common::small_options()
    }
}

#[derive(Debug, Clone)]
enum Op {
    Put { key: u16, seed: u8 },
    Delete { key: u16 },
    UpdateDelete { key: u16 },
    UpdatePut { key: u16, seed: u8 },
    Reopen,
    Query { a: u16, b: u16, kind: u8 },
}

const KEY_SPACE: u16 = 300;

/// Key `k`: the empty key, short text keys with shared prefixes, binary keys
/// with 0x00 and 0xff bytes, and some long keys.
fn key_bytes(k: u16) -> Vec<u8> {
    match k {
        0 => Vec::new(),
        k if k % 7 == 1 => vec![0xff; (k % 5 + 1) as usize],
        k if k % 7 == 2 => vec![0x00, (k >> 8) as u8, k as u8],
        k if k % 11 == 3 => {
            let mut v = b"long:".to_vec();
            v.extend((0..200 + k as usize).map(|i| (i as u8) ^ (k as u8)));
            v
        }
        k => format!("user:{:03}:{}", k % 40, k).into_bytes(),
    }
}

fn value_bytes(k: u16, seed: u8) -> Vec<u8> {
    let mut v = format!("v{k}-{seed}").into_bytes();
    v.resize(4 + (seed as usize % 60), seed);
    v
}

fn op() -> impl Strategy<Value = Op> {
    prop_oneof![
        8 => (0..KEY_SPACE, any::<u8>()).prop_map(|(key, seed)| Op::Put { key, seed }),
        3 => (0..KEY_SPACE).prop_map(|key| Op::Delete { key }),
        1 => (0..KEY_SPACE).prop_map(|key| Op::UpdateDelete { key }),
        1 => (0..KEY_SPACE, any::<u8>()).prop_map(|(key, seed)| Op::UpdatePut { key, seed }),
        1 => Just(Op::Reopen),
        3 => (0..KEY_SPACE, 0..KEY_SPACE, 0..8u8).prop_map(|(a, b, kind)| Op::Query { a, b, kind }),
    ]
}

fn collect(
    it: impl Iterator<Item = persimmon::Result<(Vec<u8>, Vec<u8>)>>,
) -> Vec<(Vec<u8>, Vec<u8>)> {
    it.map(|r| r.expect("range item")).collect()
}

/// Runs one ordered query against the Db and the model.
fn query(db: &Db, model: &Model, a: &[u8], b: &[u8], kind: u8) {
    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
    let want_range = |lower: Bound<&[u8]>, upper: Bound<&[u8]>| -> Vec<(Vec<u8>, Vec<u8>)> {
        model
            .range::<[u8], _>((lower, upper))
            .map(|(k, v)| (k.clone(), v.clone()))
            .collect()
    };
    match kind {
        0 => {
            let got = collect(db.range(lo..hi).unwrap());
            assert_eq!(
                got,
                want_range(Bound::Included(lo), Bound::Excluded(hi)),
                "range {lo:?}..{hi:?}"
            );
        }
        1 => {
            let got = collect(db.range(lo..=hi).unwrap().rev());
            let mut want = want_range(Bound::Included(lo), Bound::Included(hi));
            want.reverse();
            assert_eq!(got, want, "reverse range {lo:?}..={hi:?}");
        }
        2 => {
            let p = &lo[..lo.len().min(6)];
            let got = collect(db.prefix(p).unwrap());
            let want: Vec<_> = model
                .iter()
                .filter(|(k, _)| k.starts_with(p))
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "prefix {p:?}");
        }
        3 => {
            assert_eq!(
                db.first().unwrap(),
                model.iter().next().map(|(k, v)| (k.clone(), v.clone()))
            );
            assert_eq!(
                db.last().unwrap(),
                model
                    .iter()
                    .next_back()
                    .map(|(k, v)| (k.clone(), v.clone()))
            );
        }
        4 => {
            let want = model
                .range::<[u8], _>((Bound::Excluded(lo), Bound::Unbounded))
                .count() as u64;
            assert_eq!(
                db.count_range::<[u8]>((Bound::Excluded(lo), Bound::Unbounded))
                    .unwrap(),
                want
            );
        }
        5 => {
            // Both ends at once: alternate next and next_back.
            let mut it = db.range_keys(lo..=hi).unwrap();
            let want: Vec<Vec<u8>> = model
                .range::<[u8], _>((Bound::Included(lo), Bound::Included(hi)))
                .map(|(k, _)| k.clone())
                .collect();
            let (mut front, mut back) = (Vec::new(), Vec::new());
            while let Some(k) = it.next() {
                front.push(k.unwrap());
                match it.next_back() {
                    Some(k) => back.push(k.unwrap()),
                    None => break,
                }
            }
            back.reverse();
            front.extend(back);
            assert_eq!(front, want, "double-ended {lo:?}..={hi:?}");
        }
        6 => {
            let got = collect(db.seek(lo).unwrap().take(5));
            let want: Vec<_> = model
                .range::<[u8], _>((Bound::Included(lo), Bound::Unbounded))
                .take(5)
                .map(|(k, v)| (k.clone(), v.clone()))
                .collect();
            assert_eq!(got, want, "seek {lo:?}");
        }
        _ => {
            let got: Vec<Vec<u8>> = db
                .range_keys::<[u8]>(..)
                .unwrap()
                .map(|k| k.unwrap())
                .collect();
            let want: Vec<Vec<u8>> = model.keys().cloned().collect();
            assert_eq!(got, want, "all keys");
        }
    }
}

fn verify_whole(db: &Db, model: &Model) {
    let got = collect(db.range::<[u8]>(..).unwrap());
    let want: Vec<_> = model.iter().map(|(k, v)| (k.clone(), v.clone())).collect();
    assert_eq!(got, want, "whole range");
    let report = db.check().unwrap();
    assert!(report.is_ok(), "check: {:?}", report.errors);
    assert_eq!(report.keys, model.len() as u64);
    assert_eq!(report.ordered_nodes, model.len() as u64);
    assert_eq!(report.ordered_orphans, 0);
}

fn run_story(ops: &[Op], opts: Options, dir: &Path) {
    let path = dir.join("ordered.pool");
    let mut db = Db::open(&path, opts.clone()).unwrap();
    assert!(db.has_ordered_index());
    let mut model = Model::new();
    for op in ops {
        match op {
            Op::Put { key, seed } => {
                let (k, v) = (key_bytes(*key), value_bytes(*key, *seed));
                db.put(&k, &v).unwrap();
                model.insert(k, v);
            }
            Op::Delete { key } => {
                let k = key_bytes(*key);
                assert_eq!(db.delete(&k).unwrap(), model.remove(&k).is_some());
            }
            Op::UpdateDelete { key } => {
                let k = key_bytes(*key);
                db.update(&k, |_| (Update::Delete, ())).unwrap();
                model.remove(&k);
            }
            Op::UpdatePut { key, seed } => {
                let (k, v) = (key_bytes(*key), value_bytes(*key, *seed));
                let v2 = v.clone();
                db.update(&k, move |_| (Update::Put(v2), ())).unwrap();
                model.insert(k, v);
            }
            Op::Reopen => {
                drop(db);
                db = Db::open(&path, opts.clone()).unwrap();
                verify_whole(&db, &model);
            }
            Op::Query { a, b, kind } => query(&db, &model, &key_bytes(*a), &key_bytes(*b), *kind),
        }
    }
    verify_whole(&db, &model);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn ordered_reads_agree_with_a_btreemap(ops in proptest::collection::vec(op(), 1..400)) {
        let dir = common::pool_dir();
        run_story(&ops, ordered_options(Mechanisms::ALL), dir.path());
    }

    #[test]
    fn ordered_reads_agree_with_a_btreemap_dram_point_index(ops in proptest::collection::vec(op(), 1..400)) {
        let dir = common::pool_dir();
        let opts = Options {
            point_index: PointIndex::Dram,
            ..ordered_options(Mechanisms::ALL)
        };
        run_story(&ops, opts, dir.path());
    }

    #[test]
    fn ordered_reads_agree_with_a_btreemap_baseline(ops in proptest::collection::vec(op(), 1..200)) {
        let dir = common::pool_dir();
        run_story(&ops, ordered_options(Mechanisms::NONE), dir.path());
    }
}

#[test]
fn many_keys_with_reopen_and_node_reuse() {
    let dir = common::pool_dir();
    let path = dir.path().join("many.pool");
    let opts = ordered_options(Mechanisms::ALL);
    let db = Db::open(&path, opts.clone()).unwrap();
    let n = 20_000u32;
    for i in 0..n {
        db.put(format!("k{:08}", i * 7919 % n).as_bytes(), &i.to_le_bytes())
            .unwrap();
    }
    let keys: Vec<Vec<u8>> = db
        .range_keys::<[u8]>(..)
        .unwrap()
        .map(|k| k.unwrap())
        .collect();
    assert_eq!(keys.len(), n as usize);
    assert!(keys.windows(2).all(|w| w[0] < w[1]), "keys ascend");
    drop(db);
    let db = Db::open(&path, opts.clone()).unwrap();
    // Before and after the walk after open, reads see every key.
    assert_eq!(db.count_range::<[u8]>(..).unwrap(), n as u64);
    db.wait_for_rebuild();
    // Churn: delete and re-insert half the keys several times; node
    // slots are reused, so the node segments do not keep growing.
    let mut wait = 0;
    while !db.stats().ordered_walk_done {
        std::thread::sleep(std::time::Duration::from_millis(5));
        wait += 1;
        assert!(wait < 2000, "walk after open did not finish");
    }
    let before = db.stats().segments_ordered;
    for round in 0..5u32 {
        for i in (0..n).step_by(2) {
            let k = format!("k{i:08}");
            assert!(db.delete(k.as_bytes()).unwrap());
        }
        for i in (0..n).step_by(2) {
            db.put(format!("k{i:08}").as_bytes(), &round.to_le_bytes())
                .unwrap();
        }
    }
    let after = db.stats().segments_ordered;
    assert!(
        after <= before + 1,
        "node segments grew from {before} to {after}"
    );
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.ordered_nodes, n as u64);
    assert_eq!(
        db.range(&b"k00000010"[..]..&b"k00000013"[..])
            .unwrap()
            .count(),
        3
    );
}

#[test]
fn concurrent_writers_and_scanners() {
    let dir = common::pool_dir();
    let db =
        Arc::new(Db::open(dir.path().join("c.pool"), ordered_options(Mechanisms::ALL)).unwrap());
    // Stable keys: even numbers, present for the whole test. Writers insert
    // and delete odd numbers.
    let stable: BTreeSet<Vec<u8>> = (0..4000u32)
        .step_by(2)
        .map(|i| format!("s{i:06}").into_bytes())
        .collect();
    for k in &stable {
        db.put(k, k).unwrap();
    }
    let stop = Arc::new(AtomicBool::new(false));
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let (db, stop) = (db.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = t;
                while !stop.load(Ordering::Relaxed) {
                    let k = format!("s{:06}", (i * 2 + 1) % 4000);
                    if i % 3 == 0 {
                        db.delete(k.as_bytes()).unwrap();
                    } else {
                        db.put(k.as_bytes(), b"x").unwrap();
                    }
                    i = i.wrapping_add(7);
                }
            })
        })
        .collect();
    for round in 0..20 {
        let keys: Vec<Vec<u8>> = if round % 2 == 0 {
            db.range_keys::<[u8]>(..)
                .unwrap()
                .map(|k| k.unwrap())
                .collect()
        } else {
            let mut v: Vec<Vec<u8>> = db
                .range_keys::<[u8]>(..)
                .unwrap()
                .rev()
                .map(|k| k.unwrap())
                .collect();
            v.reverse();
            v
        };
        assert!(
            keys.windows(2).all(|w| w[0] < w[1]),
            "strictly ascending, no duplicates"
        );
        let got: BTreeSet<Vec<u8>> = keys.into_iter().filter(|k| stable.contains(k)).collect();
        assert_eq!(
            got.len(),
            stable.len(),
            "every stable key returned (round {round})"
        );
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().unwrap();
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.ordered_orphans, 0);
}

#[test]
fn pool_without_ordered_index_says_so() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("plain.pool"), common::small_options()).unwrap();
    assert!(!db.has_ordered_index());
    match db.range::<[u8]>(..) {
        Err(Error::NoOrderedIndex { .. }) => {}
        Err(other) => panic!("unexpected error {other}"),
        Ok(_) => panic!("range on a pool without the ordered index"),
    }
    // The setting is the pool's: asking for it at a later open changes nothing.
    drop(db);
    let db = Db::open(
        dir.path().join("plain.pool"),
        Options {
            ordered_index: true,
            ..common::small_options()
        },
    )
    .unwrap();
    assert!(!db.has_ordered_index());
}

#[test]
fn key_longer_than_a_node_slot_is_refused() {
    let dir = common::pool_dir();
    let opts = Options {
        segment_bytes: 64 << 10,
        ..ordered_options(Mechanisms::ALL)
    };
    let db = Db::open(dir.path().join("k.pool"), opts).unwrap();
    let long = vec![7u8; 40_000];
    match db.put(&long, b"v") {
        Err(Error::KeyTooLarge { max, .. }) => assert_eq!(max, (32 << 10) - 24),
        other => panic!("expected KeyTooLarge, got {other:?}"),
    }
    let fits = vec![7u8; (32 << 10) - 24];
    db.put(&fits, b"v").unwrap();
    assert_eq!(db.first().unwrap().unwrap().0, fits);
    assert!(db.get(&long).unwrap().is_none());
    assert!(db.check().unwrap().is_ok());
}

/// Writers insert and delete while the walk after open runs (node slots of
/// the old segments are freed by both); afterwards the list, the point index
/// and the node count agree, and churn reusing the freed slots keeps them
/// agreeing.
#[test]
fn walk_after_open_races_with_writers() {
    let dir = common::pool_dir();
    let path = dir.path().join("w.pool");
    let opts = ordered_options(Mechanisms::ALL);
    let n = 60_000u32;
    {
        let db = Db::open(&path, opts.clone()).unwrap();
        for i in 0..n {
            db.put(format!("w{i:07}").as_bytes(), b"0").unwrap();
        }
    }
    let db = Arc::new(Db::open(&path, opts.clone()).unwrap());
    let writers: Vec<_> = (0..2u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                // Neighbouring keys from both ends, deleted then re-put.
                for j in 0..6_000u32 {
                    let i = if t == 0 { j * 5 } else { n - 1 - j * 5 };
                    let k = format!("w{i:07}");
                    assert!(db.delete(k.as_bytes()).unwrap());
                    if j % 2 == 0 {
                        db.put(k.as_bytes(), b"1").unwrap();
                    }
                }
            })
        })
        .collect();
    for w in writers {
        w.join().unwrap();
    }
    db.wait_for_rebuild();
    assert!(db.stats().ordered_walk_done);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.ordered_orphans, 0);
    assert_eq!(report.ordered_nodes, report.keys);
    assert_eq!(report.keys, (n - 6_000) as u64);
    // Give the epochs a chance to hand freed nodes back, then compare the
    // allocator's count with the list.
    for _ in 0..3 {
        db.put(b"tick", b"x").unwrap();
        db.delete(b"tick").unwrap();
    }
    let segments = db.stats().segments_ordered;
    for round in 0..3u32 {
        for i in (0..n).step_by(3) {
            let k = format!("w{i:07}");
            db.delete(k.as_bytes()).unwrap();
            db.put(k.as_bytes(), &round.to_le_bytes()).unwrap();
        }
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.ordered_nodes, report.keys);
    let after = db.stats().segments_ordered;
    assert!(
        after <= segments + 1,
        "node segments grew from {segments} to {after}"
    );
    let keys: Vec<Vec<u8>> = db
        .range_keys::<[u8]>(..)
        .unwrap()
        .map(|k| k.unwrap())
        .collect();
    assert_eq!(keys.len() as u64, report.keys);
    assert!(keys.windows(2).all(|w| w[0] < w[1]));
}

/// Offsets of skiplist nodes holding `key` in a pool image (32-byte slots
/// after the superblock; key length and node CRC must match).
fn find_node(file: &[u8], key: &[u8]) -> Vec<usize> {
    let crc = crc32c::crc32c_append(crc32c::crc32c(&(key.len() as u32).to_le_bytes()), key);
    let mut out = vec![];
    let mut off = 4096 + 64;
    while off + 24 + key.len() <= file.len() {
        if u32::from_le_bytes(file[off + 16..off + 20].try_into().unwrap()) == key.len() as u32
            && u32::from_le_bytes(file[off + 20..off + 24].try_into().unwrap()) == crc
            && &file[off + 24..off + 24 + key.len()] == key
        {
            out.push(off);
        }
        off += 32;
    }
    out
}

/// Runs `f` on another thread; None if it does not finish in `secs`.
fn within<T: Send + 'static>(secs: u64, f: impl FnOnce() -> T + Send + 'static) -> Option<T> {
    let (tx, rx) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = tx.send(f());
    });
    rx.recv_timeout(std::time::Duration::from_secs(secs)).ok()
}

/// A damaged link (a node pointing at itself; the node CRC covers only the
/// key) is reported as corruption by every traversal instead of looping:
/// ranges, `last`, the walk after open, a put whose search passes it.
#[test]
fn a_damaged_link_is_an_error_not_a_hang() {
    let dir = common::pool_dir();
    let path = dir.path().join("cycle.pool");
    {
        let db = Db::open(&path, ordered_options(Mechanisms::ALL)).unwrap();
        for k in ["kaaaaaaa", "kbbbbbbb", "kccccccc"] {
            db.put(k.as_bytes(), b"v").unwrap();
        }
    }
    let mut file = std::fs::read(&path).unwrap();
    let b = find_node(&file, b"kbbbbbbb");
    assert_eq!(b.len(), 1, "one node holds kbbbbbbb");
    let b = b[0];
    file[b..b + 8].copy_from_slice(&(b as u64).to_le_bytes());
    std::fs::write(&path, &file).unwrap();

    let db = Arc::new(Db::open(&path, ordered_options(Mechanisms::ALL)).unwrap());
    let d = db.clone();
    let keys = within(10, move || {
        d.range_keys::<[u8]>(..)
            .unwrap()
            .take(8)
            .collect::<Vec<_>>()
    })
    .expect("range finishes");
    assert!(
        matches!(keys.last(), Some(Err(Error::Corruption { .. }))),
        "{keys:?}"
    );
    let d = db.clone();
    within(10, move || d.wait_for_rebuild()).expect("the walk after open ends");
    let d = db.clone();
    let last = within(10, move || d.last()).expect("last finishes");
    assert!(matches!(last, Err(Error::Corruption { .. })), "{last:?}");
    let d = db.clone();
    let put = within(10, move || d.put(b"kzzzzzzz", b"v")).expect("put finishes");
    assert!(matches!(put, Err(Error::Corruption { .. })), "{put:?}");
    let report = db.check().unwrap();
    assert!(!report.is_ok());
    assert!(
        report.errors.iter().any(|e| e.contains("ordered index")),
        "{:?}",
        report.errors
    );
    // Keys before the damage still read, through the point index too.
    assert_eq!(db.get(b"kaaaaaaa").unwrap().as_deref(), Some(&b"v"[..]));
}
