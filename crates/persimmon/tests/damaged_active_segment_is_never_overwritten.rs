//! Regression (found by the crash harness's media-fault workload): a bit flip
//! in a record of a lane's active segment ended the recovery walk of that
//! segment's valid prefix early; the lane then resumed appending at that
//! point and overwrote live records written after the damaged one, so keys
//! other than the damaged one were lost after new writes. Now a lane never
//! appends to a segment from an earlier run.

mod common;

use persimmon::{Db, Options};

#[test]
fn new_writes_after_a_damaged_record_keep_every_other_key() {
    let dir = common::pool_dir();
    let path = dir.path().join("damaged.pool");
    let options = Options {
        lanes: 1,
        cleaner: false,
        ..common::small_options()
    };
    let value = |i: u32| format!("value-of-key-{i:04}-").repeat(3).into_bytes();
    {
        let db = Db::open(&path, options.clone()).unwrap();
        for i in 0..100u32 {
            db.put(format!("key-{i:04}").as_bytes(), &value(i)).unwrap();
        }
    }
    // Flip one bit in the value of key 50's record.
    let mut bytes = std::fs::read(&path).unwrap();
    let needle = value(50);
    let at = bytes
        .windows(needle.len())
        .position(|w| w == needle.as_slice())
        .expect("record of key 50 in the pool file");
    bytes[at + 5] ^= 0x04;
    std::fs::write(&path, &bytes).unwrap();

    let db = Db::open(
        &path,
        Options {
            verify_reads: true,
            ..options
        },
    )
    .unwrap();
    for i in 100..400u32 {
        db.put(format!("key-{i:04}").as_bytes(), &value(i)).unwrap();
    }
    for i in (0..400u32).filter(|&i| i != 50) {
        assert_eq!(
            db.get(format!("key-{i:04}").as_bytes()).unwrap(),
            Some(value(i)),
            "key {i}"
        );
    }
    // The damaged record is reported, never returned as a value.
    assert!(db.get(b"key-0050").is_err());
    let report = db.check().unwrap();
    assert!(!report.is_ok(), "check must report the damaged record");
}

/// Regression (crash harness): with `verify_reads`, damage to a record's key
/// bytes made a read of that key answer "absent" (the key comparison failed
/// before any CRC was checked). Now a fingerprint match is CRC-checked.
#[test]
fn damaged_key_bytes_read_as_an_error_not_as_absent() {
    let dir = common::pool_dir();
    let path = dir.path().join("damaged-key.pool");
    let options = Options {
        lanes: 1,
        cleaner: false,
        ..common::small_options()
    };
    {
        let db = Db::open(&path, options.clone()).unwrap();
        for i in 0..50u32 {
            db.put(format!("key-{i:04}").as_bytes(), b"v").unwrap();
        }
    }
    let mut bytes = std::fs::read(&path).unwrap();
    let at = bytes
        .windows(8)
        .position(|w| w == b"key-0030")
        .expect("record of key 30");
    bytes[at + 7] ^= 0x01; // "key-0030" becomes "key-0031" on media
    std::fs::write(&path, &bytes).unwrap();
    let db = Db::open(
        &path,
        Options {
            verify_reads: true,
            ..options
        },
    )
    .unwrap();
    assert!(
        db.get(b"key-0030").is_err(),
        "a damaged key must read as an error"
    );
}
