//! Format compatibility of the SSD tier: a small tiered pool written by
//! format version 5 (the first with the tier) and its data directory are
//! checked in (`tests/fixtures/format-v5.pool`, `tests/fixtures/format-v5.data/`),
//! and every later build must open them, read every value whole — values
//! below the threshold, values exactly one extent long, values with
//! unaligned tails, values with patches not yet merged, a tiered value
//! written by a batch, one with a deadline — and pass `check`.
//!
//! The pool names its data directory by absolute path, so the test puts a
//! copy of the directory at that path (`DATA_DIR`) before opening.
//!
//! To (re)write the fixture — only while 5 is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=5 cargo test -p persimmon --test format_v5_fixture_opens`

mod common;

use std::path::{Path, PathBuf};

use persimmon::{Db, Options, Ttl, WriteBatch};

/// Where the fixture pool says its data directory is.
const DATA_DIR: &str = "/tmp/persimmon-format-v5-fixture.data";
/// 9000-01-01T00:00:00Z in ms of Unix time.
const YEAR_9000: u64 = 221_845_392_000_000;

fn fixture_data() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/format-v5.data")
}

fn options() -> Options {
    Options {
        active_expiry: false,
        cache_bytes: 0,
        ..common::fixture_geometry(6, false)
    }
}

fn bytes(seed: u32, len: usize) -> Vec<u8> {
    (0..len)
        .map(|i| (i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) as u8 ^ (i >> 9) as u8)
        .collect()
}

/// Every key the fixture holds with its value and deadline.
fn expected() -> Vec<(Vec<u8>, Vec<u8>, Option<u64>)> {
    let mut kv = Vec::new();
    for (i, len) in [10usize, 4095, 4096, 4097, 8192, 12_345, 70_000]
        .into_iter()
        .enumerate()
    {
        kv.push((format!("v-{len}").into_bytes(), bytes(i as u32, len), None));
    }
    let mut patched = bytes(100, 9000);
    patched[5..8].copy_from_slice(b"abc");
    patched.extend_from_slice(b"-appended");
    patched.extend_from_slice(&[0; 3]);
    patched.extend_from_slice(b"gap");
    kv.push((b"patched".to_vec(), patched, None));
    kv.push((b"batch-big".to_vec(), bytes(200, 20_000), None));
    kv.push((b"batch-small".to_vec(), b"small".to_vec(), None));
    kv.push((b"expiring".to_vec(), bytes(300, 5000), Some(YEAR_9000)));
    kv
}

/// Copies the data directory `from` to `to` (replacing it).
fn copy_dir(from: &Path, to: &Path) {
    let _ = std::fs::remove_dir_all(to);
    std::fs::create_dir_all(to).unwrap();
    for e in std::fs::read_dir(from).unwrap() {
        let e = e.unwrap();
        std::fs::copy(e.path(), to.join(e.file_name())).unwrap();
    }
}

fn write_fixture() {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        5,
        "only a version-5 build writes this fixture"
    );
    let pool = common::fixture(5);
    let _ = std::fs::remove_file(&pool);
    let _ = std::fs::remove_dir_all(DATA_DIR);
    let db = Db::open(
        &pool,
        Options {
            data_dir: Some(DATA_DIR.into()),
            ..options()
        },
    )
    .unwrap();
    for (i, len) in [10usize, 4095, 4096, 4097, 8192, 12_345, 70_000]
        .into_iter()
        .enumerate()
    {
        db.put(format!("v-{len}").as_bytes(), &bytes(i as u32, len))
            .unwrap();
    }
    db.put(b"patched", &bytes(100, 9000)).unwrap();
    db.write_range(b"patched", 5, b"abc").unwrap();
    db.append(b"patched", b"-appended").unwrap();
    db.write_range(b"patched", 9000 + 9 + 3, b"gap").unwrap();
    let mut b = WriteBatch::new();
    b.put(b"batch-big", &bytes(200, 20_000))
        .put(b"batch-small", b"small");
    db.write(&b).unwrap();
    db.put_with_deadline(b"expiring", &bytes(300, 5000), YEAR_9000)
        .unwrap();
    db.put(b"overwritten", &bytes(400, 6000)).unwrap();
    db.delete(b"overwritten").unwrap();
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    drop(db);
    // Keep the data file short: cut its preallocated tail (the fixture's
    // file is sealed at open, so nothing is appended to it).
    let file = Path::new(DATA_DIR).join("00000001.pdat");
    let used = std::fs::read(&file).unwrap();
    let end = used.iter().rposition(|&b| b != 0).map_or(4096, |p| p + 1);
    let f = std::fs::OpenOptions::new().write(true).open(&file).unwrap();
    f.set_len((end as u64).next_multiple_of(4096)).unwrap();
    copy_dir(Path::new(DATA_DIR), &fixture_data());
}

#[test]
fn a_format_5_tiered_pool_opens_with_every_value_whole() {
    if std::env::var("PERSIMMON_WRITE_FIXTURE").as_deref() == Ok("5") {
        write_fixture();
    }
    assert_eq!(common::format_version_on_file(&common::fixture(5)), 5);
    let (_dir, copy) = common::fixture_copy(5);
    copy_dir(&fixture_data(), Path::new(DATA_DIR));
    let db = Db::open(&copy, options()).unwrap();
    let stats = db.stats();
    assert_eq!(stats.format_version, 5);
    assert_eq!(stats.data_dir.as_deref(), Some(Path::new(DATA_DIR)));
    assert_eq!(db.data_dir(), Some(Path::new(DATA_DIR)));
    assert_eq!(stats.tier_threshold, 4096);
    for (k, v, deadline) in expected() {
        let name = String::from_utf8_lossy(&k).to_string();
        assert_eq!(db.get(&k).unwrap().as_ref(), Some(&v), "key {name}");
        let ttl = db.ttl(&k).unwrap();
        assert_eq!(
            matches!(ttl, Ttl::Persistent),
            deadline.is_none(),
            "key {name}"
        );
    }
    assert_eq!(db.get(b"overwritten").unwrap(), None);
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, expected().len() as u64);
    assert!(report.ssd_extents >= 7, "{report:?}");
    // And it keeps working: a new tiered value, a merge, reopen, read.
    db.put(b"after", &bytes(500, 10_000)).unwrap();
    db.clean_tier_now().unwrap();
    drop(db);
    let db = Db::open(&copy, options()).unwrap();
    assert_eq!(db.get(b"after").unwrap(), Some(bytes(500, 10_000)));
    for (k, v, _) in expected() {
        assert_eq!(db.get(&k).unwrap(), Some(v));
    }
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    drop(db);
    let _ = std::fs::remove_dir_all(DATA_DIR);
}
