//! Format compatibility of the disk domain: a small pool kept in the disk
//! domain (format version 8) *and its write-ahead log*, as a process killed
//! by SIGKILL left them, are checked in (`tests/fixtures/format-v8.pool`,
//! `format-v8.pool.wal`). The log holds synced records the pool file does
//! not hold yet, so every later build must replay it at open: find every
//! acknowledged key with its value, and pass `check`.
//!
//! The log file is `4096 + capacity` bytes, mostly zeros: the fixture keeps
//! only its written prefix, and the test extends the copy with zeros to the
//! length the log had (`LOG_FILE_BYTES`), which is what the file held.
//!
//! To (re)write the fixture — only while 8 is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=8 cargo test -p persimmon --test format_v8_fixture_opens`

mod common;

use std::path::{Path, PathBuf};

use persimmon::pmem::wal::log_path;
use persimmon::{Db, Domain, Options, WriteBatch};

const KEYS: u32 = 3_000;
const LOG_CAPACITY: u64 = 8 << 20;
const LOG_FILE_BYTES: u64 = 4096 + LOG_CAPACITY;

fn options() -> Options {
    Options {
        domain: Domain::Disk,
        disk_log_bytes: LOG_CAPACITY,
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

fn key(i: u32) -> Vec<u8> {
    format!("k{i:05}").into_bytes()
}

/// The fixture's keys: `k00000`.. with their values, every 7th deleted,
/// every 10th overwritten.
fn expected() -> Vec<(Vec<u8>, Vec<u8>)> {
    (0..KEYS)
        .filter(|i| i % 7 != 3)
        .map(|i| (key(i), value(i)))
        .collect()
}

/// The child half of `write_fixture`: writes the fixture's keys in three
/// batches (each durable on return), says so, and waits to be killed.
#[test]
#[ignore = "run by write_fixture in a child process"]
fn child_writes_the_fixture_then_waits() {
    let Ok(path) = std::env::var("PERSIMMON_V8_CHILD_POOL") else {
        return;
    };
    let db = Db::open(&path, options()).unwrap();
    let mut puts = WriteBatch::new();
    for i in 0..KEYS {
        puts.put(
            &key(i),
            format!("v{i}-").repeat(1 + (i as usize % 5)).as_bytes(),
        );
    }
    db.write(&puts).unwrap();
    let mut deletes = WriteBatch::new();
    for i in (0..KEYS).filter(|i| i % 7 == 3) {
        deletes.delete(&key(i));
    }
    db.write(&deletes).unwrap();
    let mut overwrites = WriteBatch::new();
    for i in (0..KEYS).step_by(10).filter(|i| i % 7 != 3) {
        overwrites.put(&key(i), &value(i));
    }
    db.write(&overwrites).unwrap();
    println!("written");
    std::thread::sleep(std::time::Duration::from_secs(60));
}

/// Kills a child right after its writes returned, so its log still holds
/// records no checkpoint applied; keeps the first such pair of files.
fn write_fixture() {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        8,
        "only a version-8 build writes this fixture"
    );
    for _attempt in 0..10 {
        let dir = tempfile::tempdir().unwrap();
        let pool = dir.path().join("v8.pool");
        let mut child = common::spawn_child_test(
            "child_writes_the_fixture_then_waits",
            "PERSIMMON_V8_CHILD_POOL",
            &pool,
        );
        let mut out = std::io::BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        while !line.contains("written") {
            line.clear();
            let n = std::io::BufRead::read_line(&mut out, &mut line).unwrap();
            assert!(n > 0, "the child ended before writing the fixture");
        }
        // SAFETY: plain syscall on the child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        child.wait().unwrap();
        let pending = unapplied_records(&pool);
        if pending == 0 {
            continue;
        }
        std::fs::copy(&pool, common::fixture(8)).unwrap();
        let log = std::fs::read(log_path(&pool)).unwrap();
        assert_eq!(log.len() as u64, LOG_FILE_BYTES);
        let written = log.iter().rposition(|&b| b != 0).map_or(0, |p| p + 1);
        std::fs::write(log_path(&common::fixture(8)), &log[..written]).unwrap();
        return;
    }
    panic!("every child's log was checkpointed before it was killed");
}

/// Records the log beside `pool` replays (on a copy, which the replay
/// changes).
fn unapplied_records(pool: &Path) -> u64 {
    let dir = tempfile::tempdir().unwrap();
    let copy = dir.path().join("probe.pool");
    std::fs::copy(pool, &copy).unwrap();
    std::fs::copy(log_path(pool), log_path(&copy)).unwrap();
    let db = Db::open(&copy, options()).unwrap();
    db.stats().log.unwrap().replayed.records
}

/// The fixture's two files in a fresh directory, the log extended to its
/// length.
fn fixture_copy() -> (tempfile::TempDir, PathBuf) {
    let (dir, copy) = common::fixture_copy(8);
    std::fs::copy(log_path(&common::fixture(8)), log_path(&copy)).expect("log fixture present");
    let log = std::fs::OpenOptions::new()
        .write(true)
        .open(log_path(&copy))
        .unwrap();
    log.set_len(LOG_FILE_BYTES).unwrap();
    (dir, copy)
}

#[test]
fn a_format_8_pool_replays_its_log_and_opens_with_every_key() {
    if std::env::var("PERSIMMON_WRITE_FIXTURE").as_deref() == Ok("8") {
        write_fixture();
    }
    assert_eq!(common::format_version_on_file(&common::fixture(8)), 8);
    let (_dir, copy) = fixture_copy();
    let want = expected();
    let db = Db::open(&copy, options()).unwrap();
    let stats = db.stats();
    assert_eq!(stats.format_version, 8);
    let replayed = stats.log.unwrap().replayed;
    assert!(
        replayed.records > 0,
        "the fixture's log held records to replay"
    );
    assert!(replayed.lines > 0);
    for (k, v) in &want {
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "{k:?}");
    }
    for i in (0..KEYS).filter(|i| i % 7 == 3) {
        assert_eq!(db.get(&key(i)).unwrap(), None);
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, want.len() as u64);
    // It takes writes and keeps them across a clean close.
    db.put(b"k00003", b"back").unwrap();
    db.delete(b"k00001").unwrap();
    drop(db);
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(
        db.stats().log.unwrap().replayed.records,
        0,
        "a clean close leaves nothing to replay"
    );
    assert_eq!(db.get(b"k00003").unwrap().as_deref(), Some(&b"back"[..]));
    assert_eq!(db.get(b"k00001").unwrap(), None);
    assert_eq!(db.len(), want.len() as u64);
}

#[test]
fn without_its_log_the_pool_file_alone_is_an_older_state_that_still_checks() {
    // The write-ahead rule: the pool file only ever holds a synced prefix
    // of the log, so without the log it opens as a consistent, older pool.
    let (_dir, copy) = common::fixture_copy(8);
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(db.stats().log.unwrap().replayed.records, 0);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    // Each key it holds has a value the key had at some moment.
    for i in 0..KEYS {
        if let Some(v) = db.get(&key(i)).unwrap() {
            let first = format!("v{i}-").repeat(1 + (i as usize % 5)).into_bytes();
            assert!(v == first || v == value(i), "key {i} holds {v:?}");
        }
    }
}
