//! The copy of the segment-header scan beside the pool (`<pool>.segments`,
//! docs/design.md §7): after a clean close the next open takes the headers
//! from it (`Stats::segments_from_copy`) and answers exactly as an open that
//! reads every header; after a crash, or with a stale, torn, missing or
//! foreign copy, open reads the headers, and answers the same.

mod common;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use persimmon::{Db, Options};

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

fn options() -> Options {
    common::small_options()
}

fn copy_of(pool: &Path) -> PathBuf {
    PathBuf::from(format!("{}.segments", pool.display()))
}

fn value(i: u32, round: u32) -> Vec<u8> {
    // Mostly small; every 997th a large run of one, every 2003rd of three
    // segments (256 KiB segments).
    let len = match i {
        i if i % 2003 == 0 => 600 << 10,
        i if i % 997 == 0 => 200 << 10,
        i => 16 + (i % 200) as usize,
    };
    let mut v = common::value_bytes(len, (i ^ round) as u8);
    v[..4].copy_from_slice(&round.to_le_bytes());
    v
}

/// Writes a round: new keys, overwrites and deletes (the pool grows, the
/// index splits, log segments and large runs come and go).
fn step(db: &Db, model: &mut Model, round: u32) {
    let base = round * 15000;
    for i in base..base + 20000 {
        let k = format!("key-{i:08}").into_bytes();
        let v = value(i, round);
        db.put(&k, &v).unwrap();
        model.insert(k, v);
    }
    for i in (base..base + 20000).step_by(7) {
        let k = format!("key-{i:08}").into_bytes();
        db.delete(&k).unwrap();
        model.remove(&k);
    }
}

fn agree(db: &Db, model: &Model, what: &str) {
    for (k, v) in model {
        let got = db.get(k).unwrap();
        assert_eq!(got.as_deref(), Some(&v[..]), "{what}: {:?}", k);
    }
    assert_eq!(db.get(b"key-absent").unwrap(), None, "{what}");
}

/// What open rebuilt from the headers, once the background work is done.
fn shape(db: &Db) -> [u64; 8] {
    db.wait_for_rebuild();
    let s = db.stats();
    [
        s.segments_total as u64,
        s.segments_free as u64,
        s.segments_log as u64,
        s.segments_index as u64,
        s.segments_large as u64,
        s.segments_damaged as u64,
        s.index_depth as u64,
        s.keys,
    ]
}

fn checked(db: &Db, model: &Model, what: &str) {
    agree(db, model, what);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{what}: {:?}", report.errors);
    assert_eq!(report.keys, model.len() as u64, "{what}");
}

/// Opens `path`, asserts which way the headers were read, checks the model.
fn open_expect(path: &Path, opts: Options, from_copy: bool, model: &Model, what: &str) -> Db {
    let db = Db::open(path, opts).unwrap();
    assert_eq!(db.stats().segments_from_copy, from_copy, "{what}");
    checked(&db, model, what);
    db
}

#[test]
fn a_clean_close_opens_from_the_copy_and_answers_as_the_header_scan() {
    let dir = common::pool_dir();
    let path = dir.path().join("fast.pool");
    let mut model = Model::new();
    let db = Db::open(&path, options()).unwrap();
    assert!(!db.stats().segments_from_copy, "a new pool has no copy");
    for round in 0..3 {
        step(&db, &mut model, round);
    }
    db.wait_for_rebuild();
    drop(db);
    assert!(copy_of(&path).exists(), "a clean close writes the copy");

    // The same pool without its copy: the header scan.
    let scanned = dir.path().join("scanned.pool");
    std::fs::copy(&path, &scanned).unwrap();
    let slow = open_expect(&scanned, options(), false, &model, "header scan");
    let fast = open_expect(&path, options(), true, &model, "from the copy");
    let s = shape(&fast);
    assert_eq!(s, shape(&slow), "same directory, lanes and free set");
    assert!(s[0] > 16, "the pool grew: {s:?}");
    assert!(s[3] > 1 && s[4] > 0, "index splits and large runs: {s:?}");

    // Both keep working the same: puts that grow the pool, lanes that go
    // on from the right sequence numbers, freed segments reused.
    let mut slow_model = model.clone();
    for round in 3..6 {
        step(&fast, &mut model, round);
        step(&slow, &mut slow_model, round);
    }
    checked(&fast, &model, "after writes, from the copy");
    checked(&slow, &slow_model, "after writes, header scan");
    assert_eq!(shape(&fast), shape(&slow));
    let grown = fast.stats().segments_total;
    drop(fast);
    drop(slow);

    // Across growth: the copy of the grown pool is used, and holds.
    let db = open_expect(&path, options(), true, &model, "after growth");
    assert_eq!(db.stats().segments_total, grown);
    step(&db, &mut model, 6);
    drop(db);
    let db = open_expect(&path, options(), true, &model, "third session");
    drop(db);
}

#[test]
fn a_crash_or_a_stale_torn_missing_or_foreign_copy_means_the_header_scan() {
    let dir = common::pool_dir();
    let path = dir.path().join("slow.pool");
    let mut model = Model::new();
    let db = Db::open(&path, options()).unwrap();
    step(&db, &mut model, 0);
    db.wait_for_rebuild();
    drop(db);
    let db = open_expect(&path, options(), true, &model, "clean close");

    // A crash image: every store so far, no clean close; the copy beside
    // it is the previous session's.
    step(&db, &mut model, 1);
    let image = dir.path().join("image.pool");
    std::fs::copy(&path, &image).unwrap();
    drop(db);
    std::fs::rename(&image, &path).unwrap();
    let db = open_expect(&path, options(), false, &model, "after a crash");
    step(&db, &mut model, 2);
    db.wait_for_rebuild();
    drop(db);

    // A stale copy: an earlier session's, left beside the pool after a
    // later clean close (the later session grew the pool and moved things).
    let stale = std::fs::read(copy_of(&path)).unwrap();
    let db = open_expect(
        &path,
        options(),
        true,
        &model,
        "clean close after the crash",
    );
    step(&db, &mut model, 3);
    db.wait_for_rebuild();
    drop(db);
    std::fs::write(copy_of(&path), &stale).unwrap();
    let db = open_expect(&path, options(), false, &model, "stale copy");
    db.wait_for_rebuild();
    drop(db);

    // A torn copy.
    let mut bytes = std::fs::read(copy_of(&path)).unwrap();
    let mid = bytes.len() / 2;
    bytes[mid] ^= 0x04;
    std::fs::write(copy_of(&path), &bytes).unwrap();
    let db = open_expect(&path, options(), false, &model, "torn copy");
    db.wait_for_rebuild();
    drop(db);

    // A cut copy.
    let bytes = std::fs::read(copy_of(&path)).unwrap();
    std::fs::write(copy_of(&path), &bytes[..bytes.len() - 3]).unwrap();
    let db = open_expect(&path, options(), false, &model, "cut copy");
    db.wait_for_rebuild();
    drop(db);

    // A missing copy.
    std::fs::remove_file(copy_of(&path)).unwrap();
    let db = open_expect(&path, options(), false, &model, "missing copy");
    db.wait_for_rebuild();
    drop(db);

    // Another pool's copy, of the same session number and size.
    let other = dir.path().join("other.pool");
    let sessions = Db::open(&path, options()).unwrap().stats();
    assert!(sessions.segments_from_copy);
    let db = Db::open(&other, options()).unwrap();
    let mut other_model = Model::new();
    step(&db, &mut other_model, 0);
    drop(db);
    std::fs::copy(copy_of(&other), copy_of(&path)).unwrap();
    let db = open_expect(&path, options(), false, &model, "another pool's copy");
    drop(db);
    let _ = open_expect(&path, options(), true, &model, "its own copy again");
}

#[test]
fn a_close_before_the_rebuild_writes_no_copy_and_the_old_one_is_not_used() {
    let dir = common::pool_dir();
    let path = dir.path().join("early.pool");
    let mut model = Model::new();
    let db = Db::open(&path, options()).unwrap();
    step(&db, &mut model, 0);
    db.wait_for_rebuild();
    drop(db);
    let before = std::fs::read(copy_of(&path)).unwrap();
    // Open and close at once: unless the rebuild ended before the drop, no
    // clean mark and no new copy; either way the next open is right.
    let db = Db::open(&path, options()).unwrap();
    step(&db, &mut model, 1);
    drop(db);
    let after = std::fs::read(copy_of(&path)).unwrap();
    let db = Db::open(&path, options()).unwrap();
    assert_eq!(db.stats().segments_from_copy, before != after);
    checked(&db, &model, "after an early close");
}

#[test]
fn a_copy_from_another_history_of_the_same_pool_and_session_is_not_used() {
    // Two histories of one pool reach the same open count: a backup (or a
    // crash image) put back and opened again. Their copies carry the same
    // pool id and tag; the file's identity tells them apart.
    // A pool that does not grow: both histories have the same segment
    // count, so only the file's identity can refuse the other's copy.
    let fixed = || Options {
        pool_bytes_initial: 96 << 20,
        ..options()
    };
    let dir = common::pool_dir();
    let path = dir.path().join("branch.pool");
    let mut model = Model::new();
    let db = Db::open(&path, fixed()).unwrap();
    step(&db, &mut model, 0);
    db.wait_for_rebuild();
    drop(db);
    let backup = std::fs::read(&path).unwrap();
    let backup_model = model.clone();

    // History A: one more session, closed cleanly.
    let db = open_expect(&path, fixed(), true, &model, "history A");
    step(&db, &mut model, 1);
    db.wait_for_rebuild();
    drop(db);
    let a_pool = std::fs::read(&path).unwrap();
    let a_model = model.clone();

    // History B: the backup put back, a different session of the same
    // number, closed cleanly: its copy replaces A's.
    std::fs::write(&path, &backup).unwrap();
    let mut b_model = backup_model;
    let db = open_expect(
        &path,
        fixed(),
        false,
        &b_model,
        "history B (file rewritten)",
    );
    // Other keys, the same amount of writing: the same pool size.
    for i in 0..20_000u32 {
        let k = format!("b-{i:06}").into_bytes();
        let v = value(i, 7);
        db.put(&k, &v).unwrap();
        b_model.insert(k, v);
    }
    db.wait_for_rebuild();
    drop(db);

    // A's pool put back beside B's copy (same pool id, same tag).
    std::fs::write(&path, &a_pool).unwrap();
    let db = open_expect(&path, fixed(), false, &a_model, "history A beside B's copy");
    drop(db);
}
