//! Format compatibility: a small pool written by format version 1 is checked
//! in (`tests/fixtures/format-v1.pool`) and every later build must open it,
//! find every key with its value, and pass `check`. When the format changes,
//! the version is bumped and a new fixture is added beside this one; old
//! fixtures stay.
//!
//! The fixture was written by the last version-1 build (commit eeb1cef, with
//! the `write_fixture` steps kept below for the record); builds from format
//! version 2 on cannot rewrite it, and must not.

mod common;

use std::path::PathBuf;

use persimmon::{Db, Options};

fn fixture() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v1.pool")
}

fn options() -> Options {
    common::fixture_geometry(4, false)
}

fn expected() -> Vec<(Vec<u8>, Vec<u8>)> {
    let mut kv: Vec<(Vec<u8>, Vec<u8>)> = (0..200u32)
        .filter(|i| i % 7 != 3) // deleted after writing
        .map(|i| {
            let value = if i % 10 == 0 {
                format!("updated-{i}").into_bytes()
            } else {
                format!("value-{i}-")
                    .repeat(1 + (i as usize % 40))
                    .into_bytes()
            };
            (format!("key-{i:04}").into_bytes(), value)
        })
        .collect();
    kv.push((
        b"large".to_vec(),
        (0..40_000u32).map(|i| (i % 251) as u8).collect(),
    ));
    kv.push((Vec::new(), b"empty key".to_vec()));
    kv
}

#[allow(dead_code)]
/// How the fixture was made (by a version-1 build).
fn write_fixture() {
    let path = fixture();
    let _ = std::fs::remove_file(&path);
    let db = Db::open(&path, options()).unwrap();
    for i in 0..200u32 {
        let value = format!("value-{i}-").repeat(1 + (i as usize % 40));
        db.put(format!("key-{i:04}").as_bytes(), value.as_bytes())
            .unwrap();
    }
    for i in (0..200u32).filter(|i| i % 7 == 3) {
        db.delete(format!("key-{i:04}").as_bytes()).unwrap();
    }
    for i in (0..200u32).step_by(10).filter(|i| i % 7 != 3) {
        db.put(
            format!("key-{i:04}").as_bytes(),
            format!("updated-{i}").as_bytes(),
        )
        .unwrap();
    }
    db.put(
        b"large",
        &(0..40_000u32).map(|i| (i % 251) as u8).collect::<Vec<_>>(),
    )
    .unwrap();
    db.put(b"", b"empty key").unwrap();
    db.wait_for_rebuild();
    assert!(db.check().unwrap().is_ok());
}

#[test]
fn a_format_1_pool_opens_with_all_its_keys() {
    let bytes = std::fs::read(fixture()).expect("fixture present");
    assert_eq!(
        u32::from_le_bytes(bytes[8..12].try_into().unwrap()),
        1,
        "the fixture is a version-1 pool"
    );
    // Open a copy: opening writes the pool's open count and clean flag.
    let dir = common::pool_dir();
    let copy = dir.path().join("v1.pool");
    std::fs::copy(fixture(), &copy).expect("fixture present");
    let db = Db::open(&copy, options()).unwrap();
    let want = expected();
    assert_eq!(db.len(), want.len() as u64);
    for (k, v) in &want {
        assert_eq!(
            db.get(k).unwrap().as_ref(),
            Some(v),
            "key {:?}",
            String::from_utf8_lossy(k)
        );
    }
    assert_eq!(db.get(b"key-0003").unwrap(), None);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, want.len() as u64);
    // And it keeps working: write, reopen, read.
    db.put(b"after", b"upgrade").unwrap();
    drop(db);
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"upgrade"[..]));
}
