//! Raising a pool's format version in place, and the staged superblock
//! copy that makes the raise crash-safe.
//!
//! 1. Copies of the version-1 and version-3 fixtures take a batch and a
//!    deadline: the superblock then says version 4 (in `Stats` and in the
//!    file's bytes 8..12), the staged copy is cleared, and after a reopen
//!    every key the fixture held is still there with its value, beside the
//!    new ones.
//! 2. A crash in the middle of a raise, written by hand: a valid staged copy
//!    of the version-4 fixed bytes at `SB_STAGED` (3072) and torn fixed
//!    bytes at 0 (the version field rewritten, the checksum not). The open
//!    uses the stage, repairs the fixed bytes and clears the stage. Torn
//!    fixed bytes without a stage, or with a stage that does not verify,
//!    are refused as a damaged superblock. A crash after the stage was
//!    written but before the fixed bytes were touched leaves the pool at
//!    its old version, and the next raise works. (New pools for these are
//!    made in the Baseline layout: others start at version 7, above 4.)

mod common;

use std::collections::BTreeMap;
use std::os::unix::fs::FileExt;
use std::path::Path;

use persimmon::{Clock, Db, Error, ManualClock, Mechanisms, Options, Ttl, WriteBatch};

/// Where the staged copy of the fixed superblock bytes lives, and their size.
const SB_STAGED: u64 = 3072;
const SB_FIXED_BYTES: usize = 128;
/// Offsets in the fixed bytes: the version field and the checksum.
const SB_FORMAT_VERSION: usize = 8;
const SB_CRC: usize = 124;

const NOW: u64 = 1_700_000_000_000;
/// A deadline that never passes in these tests (a day after `NOW`).
const LATER: u64 = NOW + 86_400_000;

fn options() -> Options {
    Options {
        cleaner: false,
        active_expiry: false,
        clock: Clock::Manual(ManualClock::new(NOW)),
        ..common::small_options()
    }
}

/// A new pool at version 1: this build creates pools with the point index
/// in PM at version 7 (three-choice buckets), except in the Baseline layout
/// (persistent bucket locks), which keeps bucket pairs and version 1.
fn v1_options() -> Options {
    Options {
        mechanisms: Mechanisms {
            volatile_lock_table: false,
            ..Mechanisms::ALL
        },
        ..options()
    }
}

fn contents(db: &Db) -> BTreeMap<Vec<u8>, Vec<u8>> {
    db.iter().map(|r| r.unwrap()).collect()
}

fn fixed_bytes(path: &Path, at: u64) -> [u8; SB_FIXED_BYTES] {
    let mut b = [0u8; SB_FIXED_BYTES];
    std::fs::File::open(path)
        .unwrap()
        .read_exact_at(&mut b, at)
        .unwrap();
    b
}

fn write_at(path: &Path, at: u64, bytes: &[u8]) {
    let f = std::fs::OpenOptions::new().write(true).open(path).unwrap();
    f.write_all_at(bytes, at).unwrap();
}

/// `b` with its version field set to `version` and the checksum fixed.
fn with_version(b: &[u8; SB_FIXED_BYTES], version: u32) -> [u8; SB_FIXED_BYTES] {
    let mut b = *b;
    b[SB_FORMAT_VERSION..SB_FORMAT_VERSION + 4].copy_from_slice(&version.to_le_bytes());
    let crc = crc32c::crc32c(&b[..SB_CRC]);
    b[SB_CRC..SB_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    b
}

/// Writes a batch and a deadline into the open pool (raising it to 4).
fn write_batch_and_deadline(db: &Db) {
    let mut b = WriteBatch::new();
    b.put(b"raised:batch", b"1").put(b"raised:other", b"2");
    db.write(&b).unwrap();
    db.put_with_deadline(b"raised:deadline", b"3", LATER)
        .unwrap();
}

fn assert_raised_keys(db: &Db) {
    assert_eq!(db.get(b"raised:batch").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.get(b"raised:other").unwrap().as_deref(), Some(&b"2"[..]));
    assert_eq!(
        db.ttl(b"raised:deadline").unwrap(),
        Ttl::Expires {
            at_ms: LATER,
            remaining_ms: LATER - NOW
        }
    );
}

fn assert_checks(db: &Db, keys: usize) {
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, keys as u64);
}

fn a_fixture_is_raised_to_4_by_a_batch_and_a_deadline(version: u32) {
    let (_dir, copy) = common::fixture_copy(version);
    let db = Db::open(&copy, options()).unwrap();
    db.wait_for_rebuild();
    assert_eq!(db.stats().format_version, version);
    let before = contents(&db);
    assert!(before.len() > 100, "the fixture holds its keys");
    write_batch_and_deadline(&db);
    assert_eq!(db.stats().format_version, 4);
    drop(db);
    assert_eq!(common::format_version_on_file(&copy), 4);
    // Batches and deadlines need 4, not the newest version (8: a pool kept
    // in the disk domain).
    assert_eq!(persimmon::format::FORMAT_VERSION, 8);
    assert_eq!(
        fixed_bytes(&copy, SB_STAGED),
        [0; SB_FIXED_BYTES],
        "stage cleared"
    );
    let db = Db::open(&copy, options()).unwrap();
    db.wait_for_rebuild();
    assert_eq!(db.stats().format_version, 4);
    assert_raised_keys(&db);
    let mut after = contents(&db);
    for k in [&b"raised:batch"[..], b"raised:other", b"raised:deadline"] {
        assert!(after.remove(k).is_some());
    }
    assert_eq!(after, before, "every key of the fixture is intact");
    assert_checks(&db, before.len() + 3);
}

#[test]
fn a_format_1_fixture_is_raised_to_4_in_place() {
    a_fixture_is_raised_to_4_by_a_batch_and_a_deadline(1);
}

#[test]
fn a_format_3_fixture_with_the_dram_point_index_is_raised_to_4_in_place() {
    a_fixture_is_raised_to_4_by_a_batch_and_a_deadline(3);
}

/// A version-1 pool with a few keys, raised to 4 by a deadline; returns the
/// directory, the pool and its version-4 fixed bytes.
fn raised_pool() -> (tempfile::TempDir, std::path::PathBuf, [u8; SB_FIXED_BYTES]) {
    let dir = common::pool_dir();
    let path = dir.path().join("raised.pool");
    let db = Db::open(&path, v1_options()).unwrap();
    db.put(b"old", b"kept").unwrap();
    assert_eq!(db.stats().format_version, 1);
    write_batch_and_deadline(&db);
    drop(db);
    let v4 = fixed_bytes(&path, 0);
    assert_eq!(v4[SB_FORMAT_VERSION], 4);
    (dir, path, v4)
}

/// The fixed bytes of `v4` torn by a crash while the raise rewrote them in
/// place: the new version field, the old (version 1) checksum.
fn torn(v4: &[u8; SB_FIXED_BYTES]) -> [u8; SB_FIXED_BYTES] {
    let mut t = *v4;
    t[SB_CRC..].copy_from_slice(&with_version(v4, 1)[SB_CRC..]);
    assert_ne!(&t, v4);
    t
}

#[test]
fn an_open_finishes_a_raise_torn_by_a_crash_from_the_staged_copy() {
    let (_dir, path, v4) = raised_pool();
    write_at(&path, SB_STAGED, &v4);
    write_at(&path, 0, &torn(&v4));
    let db = Db::open(&path, v1_options()).unwrap();
    db.wait_for_rebuild();
    assert_eq!(db.stats().format_version, 4);
    assert_eq!(db.get(b"old").unwrap().as_deref(), Some(&b"kept"[..]));
    assert_raised_keys(&db);
    assert_checks(&db, 4);
    drop(db);
    assert_eq!(fixed_bytes(&path, 0), v4, "the fixed bytes are repaired");
    assert_eq!(
        fixed_bytes(&path, SB_STAGED),
        [0; SB_FIXED_BYTES],
        "stage cleared"
    );
}

#[test]
fn torn_fixed_bytes_without_a_valid_stage_are_a_damaged_superblock() {
    let (_dir, path, v4) = raised_pool();
    write_at(&path, 0, &torn(&v4));
    let refused = |what: &str| match Db::open(&path, v1_options()) {
        Err(Error::CorruptSuperblock { .. }) => {}
        other => panic!("{what}: expected a damaged superblock, got {other:?}"),
    };
    refused("no stage");
    let mut bad_stage = v4;
    bad_stage[SB_CRC] ^= 1;
    write_at(&path, SB_STAGED, &bad_stage);
    refused("a stage whose checksum does not match");
    // The refused opens wrote nothing: with a valid stage it opens.
    assert_eq!(fixed_bytes(&path, 0), torn(&v4));
    write_at(&path, SB_STAGED, &v4);
    let db = Db::open(&path, v1_options()).unwrap();
    assert_eq!(db.stats().format_version, 4);
    assert_raised_keys(&db);
}

#[test]
fn a_crash_after_staging_but_before_the_rewrite_keeps_the_old_version() {
    let dir = common::pool_dir();
    let path = dir.path().join("staged.pool");
    let db = Db::open(&path, v1_options()).unwrap();
    db.put(b"old", b"kept").unwrap();
    drop(db);
    let v1 = fixed_bytes(&path, 0);
    assert_eq!(v1[SB_FORMAT_VERSION], 1);
    write_at(&path, SB_STAGED, &with_version(&v1, 4));
    let db = Db::open(&path, v1_options()).unwrap();
    assert_eq!(
        db.stats().format_version,
        1,
        "valid fixed bytes win over a stage"
    );
    assert_eq!(db.get(b"old").unwrap().as_deref(), Some(&b"kept"[..]));
    write_batch_and_deadline(&db);
    assert_eq!(db.stats().format_version, 4);
    drop(db);
    assert_eq!(fixed_bytes(&path, 0), with_version(&v1, 4));
    assert_eq!(
        fixed_bytes(&path, SB_STAGED),
        [0; SB_FIXED_BYTES],
        "stage cleared"
    );
    let db = Db::open(&path, v1_options()).unwrap();
    assert_raised_keys(&db);
    assert_checks(&db, 4);
}
