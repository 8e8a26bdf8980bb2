//! Persistent-memory cost of an atomic batch: its fences do not grow with
//! its size, its flushes grow linearly.
//!
//! On a pool without the ordered index, batches of 1, 10, 100 and 1000
//! operations — new keys, overwrites, deletes, and puts mixed with deletes —
//! are committed and measured with the process-wide `persimmon::pmem`
//! counters: at most 4 fences per batch without deletes (records and undo
//! record, entry begun, words published, entry freed) and at most 6 with
//! deletes (committed, deleted words cleared, entry freed), and a bounded
//! number of cache-line flushes per key.
//!
//! The counters are process-wide, so this file holds one test and the pool
//! is quiet while it measures: no cleaner, no background expiry, the
//! rebuild after open waited for, the format already raised to 4, one lane
//! whose log segment (8 MiB) has room for every measured batch, and an
//! index already split wide enough for every key (keys put and deleted
//! first). The thread's own counters must show the same figures, so no
//! other thread did persistence work meanwhile; the pool's segment figures
//! must not move during a measured batch (no allocation, split or free).

mod common;

use persimmon::pmem::{self, PmemCounters};
use persimmon::{Db, Options, WriteBatch};

const SIZES: [usize; 4] = [1, 10, 100, 1000];
/// Fences of a batch without deletes, and of one with deletes.
const MAX_FENCES: u64 = 4;
const MAX_FENCES_WITH_DELETES: u64 = 6;
/// Cache lines a key may cost: its record (two lines for these sizes), its
/// word, and its share of the undo record (16 bytes); plus the commit-table
/// entry and the line ends of the undo record per batch.
const MAX_FLUSHES_PER_KEY: u64 = 4;
const MAX_FLUSHES_PER_BATCH: u64 = 8;

fn key(tag: &str, i: usize) -> Vec<u8> {
    format!("{tag}-{i:05}").into_bytes()
}

/// What a kind of batch does to keys `0..n` of its tag.
#[derive(Clone, Copy, Debug, PartialEq)]
enum Kind {
    NewKeys,
    Overwrites,
    Deletes,
    /// Even keys overwritten, odd keys deleted.
    Mixed,
}

fn batch(kind: Kind, tag: &str, n: usize) -> WriteBatch {
    let mut b = WriteBatch::new();
    for i in 0..n {
        let k = key(tag, i);
        match kind {
            Kind::Deletes => b.delete(&k),
            Kind::Mixed if i % 2 == 1 => b.delete(&k),
            _ => b.put(&k, &[i as u8; 64]),
        };
    }
    b
}

/// The pool's segment figures, which must not move while measuring.
fn segments(db: &Db) -> (u32, u32, u32, u32, u64) {
    let s = db.stats();
    (
        s.segments_total,
        s.segments_free,
        s.segments_log,
        s.segments_index,
        s.index_splits,
    )
}

/// Commits `b` and returns its cost.
fn measure(db: &Db, b: &WriteBatch, what: &str) -> PmemCounters {
    let before = (
        pmem::process_counters(),
        pmem::thread_counters(),
        segments(db),
    );
    db.write(b).unwrap();
    let process = pmem::process_counters().since(&before.0);
    let thread = pmem::thread_counters().since(&before.1);
    assert_eq!(
        process, thread,
        "{what}: another thread did persistence work meanwhile"
    );
    assert_eq!(
        segments(db),
        before.2,
        "{what}: a segment was allocated, split or freed"
    );
    process
}

fn quiet_pool(dir: &tempfile::TempDir) -> Db {
    let options = Options {
        pool_bytes_initial: 64 << 20,
        segment_bytes: 8 << 20,
        lanes: 1,
        cleaner: false,
        active_expiry: false,
        ..common::small_options()
    };
    let db = Db::open(dir.path().join("fences.pool"), options).unwrap();
    db.wait_for_rebuild();
    // Split the index for every key the batches will hold, raise the
    // format to 4, and give the lane its log segment.
    db.write(&batch(Kind::NewKeys, "warm", 4000)).unwrap();
    db.write(&batch(Kind::Deletes, "warm", 4000)).unwrap();
    db
}

#[test]
fn fences_per_batch_stay_bounded_whatever_its_size() {
    let dir = common::pool_dir();
    let db = quiet_pool(&dir);
    let flushing = db.stats().flush_instruction != "none (eADR)";
    let mut rows = Vec::new();
    for n in SIZES {
        let tag = format!("n{n}");
        for kind in [Kind::NewKeys, Kind::Overwrites, Kind::Mixed, Kind::Deletes] {
            // Mixed and Deletes need the keys present again.
            if kind == Kind::Deletes {
                db.write(&batch(Kind::NewKeys, &tag, n)).unwrap();
            }
            let what = format!("{kind:?} batch of {n}");
            let cost = measure(&db, &batch(kind, &tag, n), &what);
            let deletes = matches!(kind, Kind::Deletes | Kind::Mixed);
            let max = if deletes {
                MAX_FENCES_WITH_DELETES
            } else {
                MAX_FENCES
            };
            assert!(cost.fences <= max, "{what}: {cost:?}");
            if flushing {
                let bound = MAX_FLUSHES_PER_KEY * n as u64 + MAX_FLUSHES_PER_BATCH;
                assert!(cost.flushes <= bound, "{what}: {cost:?}, bound {bound}");
                assert!(cost.flushes >= n as u64, "{what}: every word is flushed");
            }
            rows.push(format!(
                "{what:>24}: {} fences, {} flushes ({:.2} per key), {} bytes",
                cost.fences,
                cost.flushes,
                cost.flushes as f64 / n as f64,
                cost.bytes_written
            ));
        }
    }
    // Shown with `--nocapture`.
    eprintln!("{}", rows.join("\n"));
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, 0, "every batch's keys were deleted at the end");
}
