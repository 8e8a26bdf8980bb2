//! Format compatibility of the ordered-index pools: a small pool written by
//! format version 2 (the first with the ordered index,
//! `tests/fixtures/format-v2.pool`) and one written by version 3 (the
//! first with the DRAM point index, `tests/fixtures/format-v3.pool`) are
//! checked in, and every later build must open them, find every key with
//! its value, list the keys in order through the ordered index, and pass
//! `check`. Both hold the same keys and values.
//!
//! To (re)write a fixture — only while its version is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=3 cargo test -p persimmon --test format_v2_v3_fixtures_open`

mod common;

use std::path::PathBuf;

use persimmon::{Db, Options, PointIndex};

fn fixture(version: u32) -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join(format!("tests/fixtures/format-v{version}.pool"))
}

fn options(version: u32) -> Options {
    Options {
        point_index: if version >= 3 {
            PointIndex::Dram
        } else {
            PointIndex::Pm
        },
        ..common::fixture_geometry(6, true)
    }
}

fn key(i: u32) -> Vec<u8> {
    format!("key-{i:04}").into_bytes()
}

fn expected() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kv: Vec<(Vec<u8>, Vec<u8>)> = (0..150u32)
        .filter(|i| i % 7 != 3) // deleted after writing
        .map(|i| {
            let value = if i % 10 == 0 {
                format!("updated-{i}").into_bytes()
            } else {
                format!("value-{i}-")
                    .repeat(1 + (i as usize % 30))
                    .into_bytes()
            };
            (key(i), value)
        })
        .collect();
    kv.push((Vec::new(), b"empty key".to_vec()));
    kv.push((vec![0xff; 300], b"long key".to_vec()));
    kv.sort();
    kv
}

fn write_fixture(version: u32) {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        version,
        "only a version-{version} build writes this fixture"
    );
    let path = fixture(version);
    let _ = std::fs::remove_file(&path);
    let db = Db::open(&path, options(version)).unwrap();
    // Inserted out of order, so the list is built by inserts in the middle.
    for i in (0..150u32).rev().step_by(2).chain((0..150u32).step_by(2)) {
        let value = format!("value-{i}-").repeat(1 + (i as usize % 30));
        db.put(&key(i), value.as_bytes()).unwrap();
    }
    for i in (0..150u32).filter(|i| i % 7 == 3) {
        db.delete(&key(i)).unwrap();
    }
    for i in (0..150u32).step_by(10).filter(|i| i % 7 != 3) {
        db.put(&key(i), format!("updated-{i}").as_bytes()).unwrap();
    }
    db.put(b"", b"empty key").unwrap();
    db.put(&[0xff; 300], b"long key").unwrap();
    db.wait_for_rebuild();
    assert!(db.check().unwrap().is_ok());
}

#[test]
fn a_format_2_pool_opens_with_its_keys_in_order() {
    opens_with_its_keys_in_order(2);
}

#[test]
fn a_format_3_pool_with_the_dram_point_index_opens_with_its_keys_in_order() {
    opens_with_its_keys_in_order(3);
}

fn opens_with_its_keys_in_order(version: u32) {
    if std::env::var("PERSIMMON_WRITE_FIXTURE").ok() == Some(version.to_string()) {
        write_fixture(version);
    }
    let bytes = std::fs::read(fixture(version)).expect("fixture present");
    assert_eq!(
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
        version
    );
    // Open a copy: opening writes the pool's open count and clean flag.
    let dir = common::pool_dir();
    let copy = dir.path().join(format!("v{version}.pool"));
    std::fs::copy(fixture(version), &copy).unwrap();
    // Opened with default placement: the pool's own applies.
    let db = Db::open(
        &copy,
        Options {
            point_index: PointIndex::Pm,
            ..options(version)
        },
    )
    .unwrap();
    assert!(db.has_ordered_index());
    assert_eq!(db.point_index(), options(version).point_index);
    let want = expected();
    assert_eq!(db.len(), want.len() as u64);
    let got: Vec<(Vec<u8>, Vec<u8>)> = db.range::<[u8]>(..).unwrap().map(|r| r.unwrap()).collect();
    assert_eq!(got, want);
    let mut rev: Vec<(Vec<u8>, Vec<u8>)> = db
        .range::<[u8]>(..)
        .unwrap()
        .rev()
        .map(|r| r.unwrap())
        .collect();
    rev.reverse();
    assert_eq!(rev, want);
    assert_eq!(db.get(&key(3)).unwrap(), None);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, want.len() as u64);
    assert_eq!(report.ordered_nodes, want.len() as u64);
    // And it keeps working: write, reopen, read in order.
    db.put(b"key-0003", b"again").unwrap();
    drop(db);
    let db = Db::open(&copy, options(version)).unwrap();
    assert_eq!(
        db.range(&b"key-0002"[..]..&b"key-0005"[..])
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect::<Vec<_>>(),
        vec![key(2), key(3), key(4)]
    );
}
