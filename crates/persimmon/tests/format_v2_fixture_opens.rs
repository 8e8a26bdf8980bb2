//! Format compatibility: a small pool written by format version 2 (the first
//! with the ordered index) is checked in (`tests/fixtures/format-v2.pool`),
//! and every later build must open it, find every key with its value, list
//! the keys in order through the ordered index, and pass `check`.
//!
//! To (re)write the fixture — only while version 2 is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=1 cargo test -p persimmon --test format_v2_fixture_opens`

mod common;

use std::path::PathBuf;

use persimmon::{Db, Options};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v2.pool")
}

fn options() -> Options {
    Options {
        segment_bytes: 64 << 10,
        pool_bytes_initial: 4096 + 6 * (64 << 10),
        pool_bytes_max: 4096 + 6 * (64 << 10),
        cleaner: false,
        lanes: 1,
        ordered_index: true,
        ..Options::default()
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

fn write_fixture() {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        2,
        "only a version-2 build writes this fixture"
    );
    let path = fixture();
    let _ = std::fs::remove_file(&path);
    let db = Db::open(&path, options()).unwrap();
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
    if std::env::var_os("PERSIMMON_WRITE_FIXTURE").is_some() {
        write_fixture();
    }
    let bytes = std::fs::read(fixture()).expect("fixture present");
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 2);
    // Open a copy: opening writes the pool's open count and clean flag.
    let dir = common::pool_dir();
    let copy = dir.path().join("v2.pool");
    std::fs::copy(fixture(), &copy).unwrap();
    let db = Db::open(&copy, options()).unwrap();
    assert!(db.has_ordered_index());
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
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(
        db.range(&b"key-0002"[..]..&b"key-0005"[..])
            .unwrap()
            .map(|r| r.unwrap().0)
            .collect::<Vec<_>>(),
        vec![key(2), key(3), key(4)]
    );
}
