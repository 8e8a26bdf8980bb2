//! Format compatibility of three-choice buckets: a small pool written by
//! format version 7 (the first where a point-index key may live in a third
//! bucket, `home + 2 + r`, besides its home bucket and the next) is checked
//! in (`tests/fixtures/format-v7.pool`), and every later build must open
//! it, find every key with its value, and pass `check` (which verifies that
//! each entry sits in one of its key's three buckets). It holds enough keys
//! for its index to have split once, so many entries sit outside their home
//! bucket, some in the third.
//!
//! To (re)write the fixture — only while 7 is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=7 cargo test -p persimmon --test format_v7_fixture_opens`

mod common;

use persimmon::{Db, Options};

const KEYS: u32 = 7_000;

fn options() -> Options {
    Options {
        active_expiry: false,
        ..common::fixture_geometry(16, false)
    }
}

fn value(i: u32) -> Vec<u8> {
    if i.is_multiple_of(10) {
        format!("updated-{i}").into_bytes()
    } else {
        format!("v{i}-").repeat(1 + (i as usize % 5)).into_bytes()
    }
}

/// The fixture's keys: `k00000`.. with their values, every 7th deleted,
/// every 10th overwritten.
fn expected() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..KEYS)
        .filter(|i| i % 7 != 3)
        .map(|i| (format!("k{i:05}").into_bytes(), value(i)))
        .collect()
}

fn write_fixture() {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        7,
        "only a version-7 build writes this fixture"
    );
    let pool = common::fixture(7);
    let _ = std::fs::remove_file(&pool);
    let db = Db::open(&pool, options()).unwrap();
    for i in 0..KEYS {
        db.put(
            format!("k{i:05}").as_bytes(),
            format!("v{i}-").repeat(1 + (i as usize % 5)).as_bytes(),
        )
        .unwrap();
    }
    for i in (0..KEYS).filter(|i| i % 7 == 3) {
        db.delete(format!("k{i:05}").as_bytes()).unwrap();
    }
    for i in (0..KEYS).step_by(10).filter(|i| i % 7 != 3) {
        db.put(format!("k{i:05}").as_bytes(), &value(i)).unwrap();
    }
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert!(db.stats().segments_index >= 2, "the index has split");
}

#[test]
fn a_format_7_pool_opens_with_every_key() {
    if std::env::var("PERSIMMON_WRITE_FIXTURE").as_deref() == Ok("7") {
        write_fixture();
    }
    assert_eq!(common::format_version_on_file(&common::fixture(7)), 7);
    let (_dir, copy) = common::fixture_copy(7);
    let want = expected();
    let db = Db::open(&copy, options()).unwrap();
    let stats = db.stats();
    assert_eq!(stats.format_version, 7);
    assert!(stats.segments_index >= 2);
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
    }
    for i in (0..KEYS).filter(|i| i % 7 == 3) {
        assert_eq!(db.get(format!("k{i:05}").as_bytes()).unwrap(), None);
    }
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, want.len() as u64);
    // It takes writes in its own placement and stays consistent.
    db.put(b"k00003", b"back").unwrap();
    db.delete(b"k00001").unwrap();
    assert!(db.check().unwrap().is_ok());
    drop(db);
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(db.get(b"k00003").unwrap().as_deref(), Some(&b"back"[..]));
    assert_eq!(db.get(b"k00001").unwrap(), None);
    assert_eq!(db.len(), want.len() as u64);
}
