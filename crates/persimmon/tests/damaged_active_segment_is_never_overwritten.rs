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
