//! Regression (found by `model_based_batches_expiry` on a loaded machine: "2
//! heap entries for 3 keys with a deadline" after a clean): a key with a
//! deadline was left with no entry in the expiry heap, so active expiry
//! would never reclaim it. Heap entries and death marks name a record by
//! `(offset, seq)`, but that pair can come back: the records of a batch
//! share one sequence number and the cleaner's copies keep it, so once a
//! segment was freed and reused, the copy of one batch-mate (`c` below)
//! landed at the offset where another (`a`) had died. `a`'s death mark was
//! still in the dead set, and the next compaction dropped `c`'s new entry
//! along with `a`'s stale one. A note now takes its pair's old death mark
//! back (`db/deadlines.rs`).

mod common;

use persimmon::{Clock, Db, ManualClock, Options, WriteBatch};

#[test]
fn a_copy_landing_where_its_batch_mate_died_keeps_its_heap_entry() {
    let dir = common::pool_dir();
    let clock = ManualClock::new(1_700_000_000_000);
    let options = Options {
        clock: Clock::Manual(clock.clone()),
        active_expiry: false,
        cleaner: false,
        // One lane of 64 KiB segments, so where each record goes is known.
        lanes: 1,
        segment_bytes: 64 << 10,
        ..common::small_options()
    };
    let db = Db::open(dir.path().join("reuse.pool"), options).unwrap();
    db.wait_for_rebuild();
    let far = db.now_ms() + 86_400_000;
    let value = |n: usize| vec![7u8; n];

    // The lane's first segment S0 fills up to about 5 KB from its end; the
    // batch's `c` fits there, `a` does not and opens segment S1.
    db.put(b"f0", &value(30_000)).unwrap();
    db.put(b"f1", &value(30_000)).unwrap();
    let mut batch = WriteBatch::new();
    batch.put_with_deadline(b"c", &value(1_000), far);
    batch.put_with_deadline(b"a", &value(5_000), far + 1);
    db.write(&batch).unwrap();
    // S1 fills after `a` and is sealed as `f3` opens S2.
    db.put(b"f2", &value(30_000)).unwrap();
    db.put(b"f3", &value(31_000)).unwrap();
    let a_was = db.version(b"a").unwrap().unwrap();
    let free = db.stats().segments_free;

    // Everything in S1 dies, `a` (with its deadline) last: S1 is freed, and
    // `a`'s pair is marked dead.
    db.delete(b"f2").unwrap();
    db.put(b"a", b"no deadline now").unwrap();
    wait_until_released(&db, free);
    // S0 is left with `c` alone: the cleaner copies it into its own lane's
    // first segment, the lowest free one, S1 — where `a` was.
    db.delete(b"f0").unwrap();
    db.delete(b"f1").unwrap();
    db.clean_now().unwrap();
    assert_eq!(
        db.version(b"c").unwrap().unwrap(),
        a_was,
        "setup: the copy of `c` should land at `a`'s old offset with the batch's seq"
    );

    // The explicit pass compacts (the dead pairs are more than half the
    // heap); `c`'s entry must survive it.
    assert_eq!(db.expire_now().unwrap(), 0);
    assert!(
        db.stats().deadlines_pending >= 1,
        "`c` has a deadline but no heap entry"
    );
    clock.advance(86_400_000);
    assert_eq!(db.expire_now().unwrap(), 1, "`c` is reclaimed once due");
    assert_eq!(db.get(b"c").unwrap(), None);
    assert_eq!(db.len(), 2, "`a` and `f3` are left");
}

/// Freeing a segment goes through the epoch: reads pin it and let it move
/// on until the segment is released (more free segments than `before`).
fn wait_until_released(db: &Db, before: u32) {
    for _ in 0..100_000 {
        if db.stats().segments_free > before {
            return;
        }
        db.get(b"c").unwrap();
    }
    panic!("setup: S1 was never released");
}
