//! Persistent-memory cost of the log cleaner: a chunk of relocated records
//! shares two fences (copies durable, then switches durable), so the fences
//! per moved record fall far below the two a record moved alone would take;
//! and the records it meets dead cost no fence and no PM write at all.
//!
//! One lane, no background cleaner, no expiry; 20 000 keys written, then
//! every third one overwritten, so the first segments are two thirds live.
//! `clean_now` is measured with the thread's own counters (it runs on the
//! calling thread), then every value is read back and `check` must pass.

mod common;

use persimmon::pmem;
use persimmon::{Db, Options};

const KEYS: u32 = 20_000;

fn key(i: u32) -> Vec<u8> {
    format!("cl-{i:06}").into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    format!("value-{i}-{round}-{}", "x".repeat((i % 40) as usize)).into_bytes()
}

#[test]
fn cleaned_records_share_their_fences() {
    let dir = common::pool_dir();
    let db = Db::open(
        dir.path().join("c.pool"),
        Options {
            cleaner: false,
            active_expiry: false,
            lanes: 1,
            ..common::small_options()
        },
    )
    .unwrap();
    db.wait_for_rebuild();
    for i in 0..KEYS {
        db.put(&key(i), &value(i, 0)).unwrap();
    }
    for i in (0..KEYS).step_by(3) {
        db.put(&key(i), &value(i, 1)).unwrap();
    }
    let before = db.stats();
    let t0 = pmem::thread_counters();
    let cleaned = db.clean_now().unwrap();
    let cost = pmem::thread_counters().since(&t0);
    let after = db.stats();
    assert!(cleaned > 0, "segments with dead records to clean");
    let moved_bytes = after.cleaned_bytes - before.cleaned_bytes;
    // Records here are 48 to 88 bytes: at least this many were moved.
    let moved_records = moved_bytes / 88;
    assert!(moved_records > 1_000, "moved only {moved_bytes} bytes");
    // Alone, each record would take two fences. In chunks of up to 32
    // (fewer where a chunk's dead records thin it out), plus segment
    // allocations of the cleaner's lane (two fences each).
    assert!(
        cost.fences * 4 < moved_records,
        "{} fences for at least {moved_records} records moved: {cost:?}",
        cost.fences
    );
    for i in 0..KEYS {
        let round = u32::from(i % 3 == 0);
        assert_eq!(db.get(&key(i)).unwrap(), Some(value(i, round)), "key {i}");
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "check: {:?}", report.errors);
    assert_eq!(report.keys, u64::from(KEYS));
}
