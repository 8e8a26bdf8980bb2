//! Format compatibility of the ordered index in leaves: a small pool written
//! by format version 6 (the first with leaves; DRAM point index) is checked
//! in (`tests/fixtures/format-v6.pool`), and every later build must open
//! it, find every key by point read and in order by range, and pass
//! `check`. Its leaves include a split one and a leaf whose low key is
//! longer than 48 bytes (stored after the entries). The pool file alone is
//! checked in, without the leaf map's copy: opening it rebuilds the map from
//! the leaf headers; a clean close of the copy then writes the map's copy,
//! and the reopen after it is compared with the first.
//!
//! To (re)write the fixture — only while 6 is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=6 cargo test -p persimmon --test format_v6_fixture_opens`

mod common;

use persimmon::{Db, Options, PointIndex};

fn options() -> Options {
    Options {
        point_index: PointIndex::Dram,
        active_expiry: false,
        ..common::fixture_geometry(8, true)
    }
}

/// The fixture's keys: 150 short keys (several leaves), 70 keys sharing a
/// 60-byte prefix (a split between two of them has a long low key), and
/// values naming their key.
fn expected() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kv: Vec<(Vec<u8>, Vec<u8>)> = (0..150u32)
        .map(|i| {
            (
                format!("k{i:04}").into_bytes(),
                format!("v{i}").into_bytes(),
            )
        })
        .collect();
    let long = "L".repeat(60);
    kv.extend((0..70u32).map(|i| {
        (
            format!("{long}{i:03}").into_bytes(),
            format!("long{i}").into_bytes(),
        )
    }));
    kv.retain(|(k, _)| !k.ends_with(b"7"));
    kv.sort();
    kv
}

fn write_fixture() {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        6,
        "only a version-6 build writes this fixture"
    );
    let pool = common::fixture(6);
    let _ = std::fs::remove_file(&pool);
    let db = Db::open(&pool, options()).unwrap();
    for i in 0..150u32 {
        db.put(format!("k{i:04}").as_bytes(), format!("v{i}").as_bytes())
            .unwrap();
    }
    let long = "L".repeat(60);
    for i in 0..70u32 {
        db.put(
            format!("{long}{i:03}").as_bytes(),
            format!("long{i}").as_bytes(),
        )
        .unwrap();
    }
    for (k, _) in expected_all() {
        if k.ends_with(b"7") {
            db.delete(&k).unwrap();
        }
    }
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    drop(db);
    let _ = std::fs::remove_file(format!("{}.leaves", pool.display()));
}

fn expected_all() -> Vec<(Vec<u8>, Vec<u8>)> {
    let long = "L".repeat(60);
    (0..150u32)
        .map(|i| (format!("k{i:04}").into_bytes(), Vec::new()))
        .chain((0..70u32).map(|i| (format!("{long}{i:03}").into_bytes(), Vec::new())))
        .collect()
}

fn contents(db: &Db) -> Vec<(Vec<u8>, Vec<u8>)> {
    db.range::<[u8]>(..).unwrap().map(|r| r.unwrap()).collect()
}

#[test]
fn a_format_6_leaf_pool_opens_with_every_key_in_order() {
    if std::env::var("PERSIMMON_WRITE_FIXTURE").as_deref() == Ok("6") {
        write_fixture();
    }
    assert_eq!(common::format_version_on_file(&common::fixture(6)), 6);
    let (_dir, copy) = common::fixture_copy(6);
    let want = expected();
    {
        let db = Db::open(&copy, options()).unwrap();
        assert_eq!(db.stats().format_version, 6);
        // Served by the leaves before the DRAM index is rebuilt, then by it.
        assert_eq!(contents(&db), want);
        for (k, v) in &want {
            assert_eq!(db.get(k).unwrap().as_ref(), Some(v));
        }
        db.wait_for_rebuild();
        let report = db.check().unwrap();
        assert!(report.is_ok(), "{:?}", report.errors);
        assert_eq!(report.keys, want.len() as u64);
        let back: Vec<_> = db
            .range::<[u8]>(..)
            .unwrap()
            .rev()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(back.into_iter().rev().collect::<Vec<_>>(), want);
    }
    // The clean close wrote the leaf map's copy; this open reads it.
    assert!(std::path::Path::new(&format!("{}.leaves", copy.display())).exists());
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(contents(&db), want);
    db.wait_for_rebuild();
    assert!(db.check().unwrap().is_ok());
}
