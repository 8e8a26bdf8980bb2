//! Bad-input story: every way a caller can misuse the engine, or hand it a
//! damaged or foreign file, ends in a clear `Error` variant (whose message
//! names the limit or the file) and never in a panic; a file that is
//! refused is left byte-for-byte unchanged.
//!
//! Covered: key and value size limits (exactly at the limit works, one byte
//! over is refused, a 16 MiB value round-trips through a reopen), the empty
//! key and empty value, files that are not pools (text, empty), truncated
//! pools, a damaged superblock, a superblock from a newer format version, a
//! pool already open in this process or held by another process, a missing
//! pool with `create: false`, and a pool that reaches its maximum size.

mod common;

use std::path::Path;
use std::process::Command;
use std::sync::{RwLock, RwLockReadGuard};

use persimmon::{format, Db, Error, Options, Update, MAX_KEY_BYTES, MAX_VALUE_BYTES};

/// Tests in this file run in parallel threads of one process. A child
/// process spawned by one of them inherits every open descriptor of the
/// process until it execs, including another test's pool file, and with it
/// that pool's `flock`: a pool closed and reopened in that window is
/// refused as `Locked`. The test that spawns `flock` takes this lock
/// exclusively around the spawn; every other test holds it shared.
static SPAWN: RwLock<()> = RwLock::new(());

fn no_spawn_meanwhile() -> RwLockReadGuard<'static, ()> {
    SPAWN.read().unwrap_or_else(|e| e.into_inner())
}

/// Creates a small pool at `path` with a few keys and closes it.
fn make_pool(path: &Path) {
    let db = Db::open(path, common::small_options()).unwrap();
    for i in 0..100u32 {
        db.put(&i.to_le_bytes(), b"some value").unwrap();
    }
}

/// Opens `path`, which must fail; asserts the file did not change.
fn open_refused(path: &Path) -> Error {
    let before = std::fs::read(path).unwrap();
    let err = Db::open(path, common::small_options()).expect_err("open must be refused");
    let after = std::fs::read(path).unwrap();
    assert!(
        before == after,
        "refused open of {} changed the file ({err})",
        path.display()
    );
    err
}

#[test]
fn key_size_limit_is_exact_and_named_in_the_error() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("k.pool"), common::small_options()).unwrap();

    let max_key = vec![b'k'; MAX_KEY_BYTES];
    db.put(&max_key, b"v").unwrap();
    assert_eq!(db.get(&max_key).unwrap().as_deref(), Some(&b"v"[..]));
    db.update(&max_key, |cur| {
        assert_eq!(cur, Some(&b"v"[..]));
        (Update::Put(b"w".to_vec()), ())
    })
    .unwrap();
    assert_eq!(db.get(&max_key).unwrap().as_deref(), Some(&b"w"[..]));

    let too_long = vec![b'k'; MAX_KEY_BYTES + 1];
    let is_key_too_large = |e: Error| {
        let msg = e.to_string();
        assert!(
            matches!(e, Error::KeyTooLarge { len, max } if len == MAX_KEY_BYTES + 1 && max == MAX_KEY_BYTES),
            "{e:?}"
        );
        assert!(
            msg.contains(&MAX_KEY_BYTES.to_string()),
            "message {msg:?} does not name the limit"
        );
    };
    is_key_too_large(db.put(&too_long, b"v").unwrap_err());
    is_key_too_large(db.get(&too_long).unwrap_err());
    is_key_too_large(db.get_with(&too_long, |v| v.len()).unwrap_err());
    is_key_too_large(db.contains(&too_long).unwrap_err());
    is_key_too_large(db.delete(&too_long).unwrap_err());
    is_key_too_large(
        db.update(&too_long, |_| -> (Update, ()) {
            panic!("the closure must not run for a key over the limit")
        })
        .unwrap_err(),
    );

    assert!(db.delete(&max_key).unwrap());
    assert_eq!(db.len(), 0);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

#[test]
fn large_values_work_up_to_the_limit_and_one_byte_more_is_refused() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let path = dir.path().join("v.pool");
    let sixteen_mib: Vec<u8> = (0..16usize << 20)
        .map(|i| (i * 7 + i / 4096) as u8)
        .collect();
    {
        let db = Db::open(&path, common::small_options()).unwrap();
        db.put(b"big", &sixteen_mib).unwrap();
        assert!(db.get(b"big").unwrap().unwrap() == sixteen_mib);
        assert_eq!(
            db.get_with(b"big", |v| v.len()).unwrap(),
            Some(16usize << 20)
        );

        let too_big = vec![0u8; MAX_VALUE_BYTES + 1];
        let err = db.put(b"huge", &too_big).unwrap_err();
        let msg = err.to_string();
        assert!(
            matches!(err, Error::ValueTooLarge { len, max } if len == MAX_VALUE_BYTES + 1 && max == MAX_VALUE_BYTES),
            "{err:?}"
        );
        assert!(msg.contains(&MAX_VALUE_BYTES.to_string()), "{msg}");
        // The same limit through update, on an absent key: refused, and the
        // slot the update claimed for the new key is given back.
        let err = db
            .update(b"huge", |cur| {
                assert!(cur.is_none());
                (Update::Put(too_big.clone()), ())
            })
            .unwrap_err();
        assert!(matches!(err, Error::ValueTooLarge { .. }), "{err:?}");
        assert_eq!(db.get(b"huge").unwrap(), None);
        assert_eq!(db.len(), 1);
        let report = db.check().unwrap();
        assert!(report.is_ok(), "{:?}", report.errors);
        assert_eq!(report.keys, 1);
    }
    let db = Db::open(&path, common::small_options()).unwrap();
    assert!(
        db.get(b"big").unwrap().unwrap() == sixteen_mib,
        "16 MiB value after reopen"
    );
    assert_eq!(db.get(b"huge").unwrap(), None);

    // Exactly at the limit works too.
    let max_value: Vec<u8> = (0..MAX_VALUE_BYTES).map(|i| (i / 65_536) as u8).collect();
    db.put(b"max", &max_value).unwrap();
    assert!(db.get(b"max").unwrap().unwrap() == max_value);
    // Overwriting the large values frees their runs.
    db.put(b"max", b"small now").unwrap();
    db.put(b"big", b"small too").unwrap();
    assert_eq!(db.get(b"max").unwrap().as_deref(), Some(&b"small now"[..]));
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, 2);
}

#[test]
fn empty_key_and_empty_value_are_ordinary() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let path = dir.path().join("e.pool");
    {
        let db = Db::open(&path, common::small_options()).unwrap();
        db.put(b"", b"value of the empty key").unwrap();
        db.put(b"empty value", b"").unwrap();
        assert_eq!(
            db.get(b"").unwrap().as_deref(),
            Some(&b"value of the empty key"[..])
        );
        assert_eq!(db.get(b"empty value").unwrap(), Some(Vec::new()));
        assert!(db.contains(b"empty value").unwrap());
        db.put(b"", b"").unwrap();
        assert_eq!(db.get(b"").unwrap(), Some(Vec::new()));
        assert_eq!(db.len(), 2);
    }
    let db = Db::open(&path, common::small_options()).unwrap();
    assert_eq!(db.get(b"").unwrap(), Some(Vec::new()));
    assert_eq!(db.get(b"empty value").unwrap(), Some(Vec::new()));
    let mut all: Vec<_> = db.iter().map(|r| r.unwrap()).collect();
    all.sort();
    assert_eq!(
        all,
        vec![
            (Vec::new(), Vec::new()),
            (b"empty value".to_vec(), Vec::new())
        ]
    );
    assert!(db.delete(b"").unwrap());
    assert!(!db.delete(b"").unwrap());
    assert_eq!(db.get(b"").unwrap(), None);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

#[test]
fn files_that_are_not_pools_are_refused_untouched() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    // Text shorter and longer than the 128-byte superblock.
    for (name, text) in [
        ("short.txt", "hello, not a pool\n".to_string()),
        ("long.txt", "a line of ordinary text\n".repeat(1000)),
    ] {
        let path = dir.path().join(name);
        std::fs::write(&path, &text).unwrap();
        let err = open_refused(&path);
        assert!(matches!(err, Error::NotAPool { .. }), "{name}: {err:?}");
        assert!(
            err.to_string().contains(name),
            "message names the file: {err}"
        );
    }
    let empty = dir.path().join("empty");
    std::fs::write(&empty, b"").unwrap();
    let err = open_refused(&empty);
    assert!(matches!(err, Error::NotAPool { .. }), "{err:?}");
    assert_eq!(std::fs::metadata(&empty).unwrap().len(), 0);
}

#[test]
fn truncated_pools_are_refused_untouched() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let seg = common::small_options().segment_bytes;
    let cases = [
        ("mid-segment", format::SUPERBLOCK_BYTES + seg + seg / 2),
        ("inside the superblock", 2000),
        ("below the fixed superblock", 100),
    ];
    for (what, len) in cases {
        let path = dir.path().join("t.pool");
        let _ = std::fs::remove_file(&path);
        make_pool(&path);
        let f = std::fs::OpenOptions::new().write(true).open(&path).unwrap();
        f.set_len(len).unwrap();
        drop(f);
        let err = open_refused(&path);
        assert!(matches!(err, Error::Truncated { .. }), "{what}: {err:?}");
        assert!(err.to_string().contains("truncated"), "{what}: {err}");
        assert_eq!(std::fs::metadata(&path).unwrap().len(), len, "{what}");
    }
}

#[test]
fn damaged_superblock_is_refused_untouched() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let path = dir.path().join("d.pool");
    make_pool(&path);
    let pristine = std::fs::read(&path).unwrap();
    // Fields and padding inside the CRC-covered 0..124, past the magic.
    for at in [8usize, 12, 16, 24, 40, 50, 60, 100, 123] {
        let mut bytes = pristine.clone();
        bytes[at] ^= 0x20;
        std::fs::write(&path, &bytes).unwrap();
        let err = open_refused(&path);
        assert!(
            matches!(err, Error::CorruptSuperblock { .. }),
            "byte {at}: {err:?}"
        );
        assert!(err.to_string().contains("damaged"), "{err}");
    }
    // A flipped CRC byte is damage as well.
    let mut bytes = pristine.clone();
    bytes[125] ^= 1;
    std::fs::write(&path, &bytes).unwrap();
    assert!(matches!(
        open_refused(&path),
        Error::CorruptSuperblock { .. }
    ));
    // The original still opens.
    std::fs::write(&path, &pristine).unwrap();
    let db = Db::open(&path, common::small_options()).unwrap();
    assert_eq!(db.len(), 100);
}

#[test]
fn newer_format_version_is_refused_untouched() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let path = dir.path().join("newer.pool");
    make_pool(&path);
    let newer = format::FORMAT_VERSION + 1;
    let mut bytes = std::fs::read(&path).unwrap();
    // A pool with the point index in PM is written as version 7
    // (three-choice buckets).
    assert_eq!(u32::from_le_bytes(bytes[8..12].try_into().unwrap()), 7);
    bytes[8..12].copy_from_slice(&newer.to_le_bytes());
    let crc = crc32c::crc32c(&bytes[..124]);
    bytes[124..128].copy_from_slice(&crc.to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();
    let err = open_refused(&path);
    assert!(
        matches!(err, Error::UnsupportedVersion { found, supported, .. } if found == newer && supported == format::FORMAT_VERSION),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(msg.contains(&format!("version {newer}")), "{msg}");
}

#[test]
fn a_pool_open_elsewhere_is_locked() {
    let dir = common::pool_dir();
    let path = dir.path().join("l.pool");
    let first = Db::open(&path, common::small_options()).unwrap();
    first.put(b"k", b"v").unwrap();

    let before = std::fs::read(&path).unwrap();
    let err = Db::open(&path, common::small_options()).unwrap_err();
    assert!(matches!(err, Error::Locked { .. }), "{err:?}");
    assert!(err.to_string().contains("l.pool"), "{err}");
    assert!(
        before == std::fs::read(&path).unwrap(),
        "a refused second open wrote to the pool"
    );

    // Another process cannot take the lock either.
    let flock = |path: &Path| {
        let _spawning = SPAWN.write().unwrap_or_else(|e| e.into_inner());
        Command::new("flock")
            .arg("-n")
            .arg(path)
            .arg("true")
            .status()
    };
    match flock(&path) {
        Ok(status) => assert!(
            !status.success(),
            "flock -n succeeded while the pool was open"
        ),
        Err(e) => {
            eprintln!("note: `flock` command unavailable ({e}); skipping the cross-process check")
        }
    }

    // The first `Db` keeps working; once it is gone the pool opens again.
    assert_eq!(first.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
    drop(first);
    if let Ok(status) = flock(&path) {
        assert!(
            status.success(),
            "flock -n failed after the pool was closed"
        );
    }
    let again = Db::open(&path, common::small_options()).unwrap();
    assert_eq!(again.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn missing_pool_without_create_is_not_found() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let path = dir.path().join("missing.pool");
    let err = Db::open(
        &path,
        Options {
            create: false,
            ..common::small_options()
        },
    )
    .unwrap_err();
    assert!(matches!(err, Error::NotFound { .. }), "{err:?}");
    assert!(err.to_string().contains("missing.pool"), "{err}");
    assert!(!path.exists(), "open with create: false created the file");
    assert_eq!(std::fs::read_dir(dir.path()).unwrap().count(), 0);
}

/// Options of a pool that can grow to only 16 segments of 256 KiB.
fn tiny_pool_options() -> Options {
    let seg = 256u64 << 10;
    Options {
        pool_bytes_initial: 1 << 20,
        pool_bytes_max: format::SUPERBLOCK_BYTES + 16 * seg,
        segment_bytes: seg,
        ..Options::default()
    }
}

fn full_key(i: u32) -> Vec<u8> {
    format!("full-{i:05}").into_bytes()
}

fn full_value(i: u32) -> Vec<u8> {
    (0..2000u32).map(|j| (i ^ j) as u8).collect()
}

/// Puts 2000-byte values under new keys until the pool is full; returns how
/// many fitted and the error that stopped it.
fn fill(db: &Db) -> (u32, Error) {
    let mut stored = 0u32;
    loop {
        match db.put(&full_key(stored), &full_value(stored)) {
            Ok(()) => stored += 1,
            Err(e) => return (stored, e),
        }
        assert!(stored < 100_000, "a 4 MiB pool never filled up");
    }
}

#[test]
fn a_full_pool_says_so_and_keeps_serving_reads_and_deletes() {
    let _no_spawn = no_spawn_meanwhile();
    let dir = common::pool_dir();
    let path = dir.path().join("full.pool");
    let options = tiny_pool_options();
    let (key, value) = (full_key, full_value);

    let db = Db::open(&path, options.clone()).unwrap();
    let (stored, err) = fill(&db);
    assert!(
        matches!(err, Error::PoolFull { pool_bytes_max } if pool_bytes_max == options.pool_bytes_max),
        "{err:?}"
    );
    let msg = err.to_string();
    assert!(
        msg.contains(&options.pool_bytes_max.to_string()),
        "message {msg:?} does not name the maximum"
    );
    assert!(stored > 100, "only {stored} puts fitted");
    assert_eq!(db.stats().pool_bytes, options.pool_bytes_max);

    // Still full for records of that size (a tiny one might still fit in
    // the lane's segment): new keys, overwrites and updates; nothing changes.
    assert!(matches!(
        db.put(b"one more", &value(7)).unwrap_err(),
        Error::PoolFull { .. }
    ));
    assert!(matches!(
        db.put(&key(0), &value(12345)).unwrap_err(),
        Error::PoolFull { .. }
    ));
    assert!(matches!(
        db.update(&key(1), |_| (Update::Put(value(999)), ()))
            .unwrap_err(),
        Error::PoolFull { .. }
    ));
    assert_eq!(db.get(b"one more").unwrap(), None);
    assert_eq!(db.len(), stored as u64);

    // Reads see every stored key; deletes work.
    for i in 0..stored {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
    }
    for i in (0..stored).step_by(2) {
        assert!(db.delete(&key(i)).unwrap(), "delete key {i}");
    }
    for i in 0..stored {
        let want = (i % 2 == 1).then(|| value(i));
        assert_eq!(db.get(&key(i)).unwrap(), want, "key {i}");
    }
    let remaining = (stored / 2) as u64;
    assert_eq!(db.len(), remaining);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, remaining);

    // After a reopen the same holds.
    drop(db);
    let db = Db::open(&path, options.clone()).unwrap();
    assert_eq!(db.len(), remaining);
    for i in (1..stored).step_by(2) {
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i)), "key {i}");
        assert!(db.delete(&key(i)).unwrap(), "delete key {i}");
    }
    assert_eq!(db.len(), 0);
    for i in 0..stored {
        assert_eq!(db.get(&key(i)).unwrap(), None, "key {i}");
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, 0);
}

/// Regression: once every key of a full pool was deleted and the pool
/// reopened, a put still got `PoolFull` — the dead segments had been handed
/// to crossbeam-epoch for release, and nothing advanced the epoch before the
/// allocator gave up (20 of 20 runs failed). Now a writer that meets
/// `PoolFull` while releases are pending unpins and drives the epoch, and
/// `wait_for_rebuild` returns only after the dead segments were handed over.
/// Repeated a few times because the failure depended on epoch timing.
#[test]
fn space_of_deleted_keys_is_reusable_right_after_reopen() {
    let _no_spawn = no_spawn_meanwhile();
    for round in 0..5 {
        let dir = common::pool_dir();
        let path = dir.path().join("reuse.pool");
        let options = tiny_pool_options();
        let db = Db::open(&path, options.clone()).unwrap();
        let (stored, err) = fill(&db);
        assert!(matches!(err, Error::PoolFull { .. }), "{err:?}");
        for i in (0..stored).step_by(2) {
            assert!(db.delete(&full_key(i)).unwrap());
        }
        drop(db);
        let db = Db::open(&path, options.clone()).unwrap();
        for i in (1..stored).step_by(2) {
            assert!(db.delete(&full_key(i)).unwrap());
        }
        drop(db);
        let db = Db::open(&path, options.clone()).unwrap();
        db.wait_for_rebuild();
        let stats = db.stats();
        assert_eq!(db.len(), 0);
        assert_eq!(stats.live_bytes, 0);
        if let Err(e) = db.put(&full_key(0), &full_value(0)) {
            panic!(
                "round {round}: put into an emptied pool failed: {e} \
                 (keys 0, live bytes 0, segments: {} log, {} free, {} index)",
                stats.segments_log, stats.segments_free, stats.segments_index
            );
        }
        assert_eq!(db.get(&full_key(0)).unwrap(), Some(full_value(0)));
    }
}
