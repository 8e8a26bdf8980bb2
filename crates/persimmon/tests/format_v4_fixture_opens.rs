//! Format compatibility of batches and deadlines: a small pool written by
//! format version 4 (the first with atomic batches and key deadlines,
//! `tests/fixtures/format-v4.pool`) is checked in, and every later build
//! must open it, find every key with its value and time to live, list the
//! keys in order through the ordered index, and pass `check`.
//!
//! The pool holds keys written by batches (puts, a batch mixing deletes,
//! overwrites and deadline puts), by a transaction, by single puts and
//! deletes, keys with deadlines in the year 9000 (they never expire), one
//! whose deadline was made persistent again, and one key whose deadline
//! lies an hour before the fixed clock this test opens it with: it reads as
//! absent, still counts until an active-expiry pass reclaims it.
//!
//! To (re)write the fixture — only while 4 is the newest format:
//! `PERSIMMON_WRITE_FIXTURE=4 cargo test -p persimmon --test format_v4_fixture_opens`

mod common;

use persimmon::{Clock, Db, ManualClock, Options, Ttl, WriteBatch};

/// The clock the fixture was written with (November 2023).
const WRITTEN_AT: u64 = 1_700_000_000_000;
/// The clock this test opens it with: an hour later.
const OPENED_AT: u64 = WRITTEN_AT + 3_600_000;
/// 9000-01-01T00:00:00Z in ms of Unix time.
const YEAR_9000: u64 = 221_845_392_000_000;
/// The key whose deadline has passed when the test opens the pool.
const EXPIRED: &[u8] = b"expired";
/// Keys deleted after they were written.
const DELETED: [&[u8]; 3] = [b"gone", b"batch-002", b"batch-003"];

fn options(now: u64) -> Options {
    Options {
        active_expiry: false,
        clock: Clock::Manual(ManualClock::new(now)),
        ..common::fixture_geometry(6, true)
    }
}

fn batch_key(i: u32) -> Vec<u8> {
    format!("batch-{i:03}").into_bytes()
}

fn batch_value(i: u32) -> Vec<u8> {
    format!("batch-value-{i}-")
        .repeat(1 + i as usize % 20)
        .into_bytes()
}

/// Every key the fixture holds, in key order, with its value and deadline.
fn expected() -> Vec<(Vec<u8>, Vec<u8>, Option<u64>)> {
    let mut kv: Vec<(Vec<u8>, Vec<u8>, Option<u64>)> = (0..120u32)
        .filter(|i| i % 7 != 3 && *i != 2)
        .map(|i| match i {
            _ if i % 10 == 0 => (batch_key(i), format!("updated-{i}").into_bytes(), None),
            5 => (batch_key(i), batch_value(i), Some(YEAR_9000 + 5)),
            _ => (batch_key(i), batch_value(i), None),
        })
        .collect();
    for j in 0..5u64 {
        let value = format!("ttl-batch-value-{j}").into_bytes();
        kv.push((
            format!("ttl-batch-{j}").into_bytes(),
            value,
            Some(YEAR_9000 + j),
        ));
        let deadline = (j != 0).then_some(YEAR_9000 + 100 + j);
        kv.push((format!("ttl-{j}").into_bytes(), b"ttl".to_vec(), deadline));
    }
    kv.push((b"plain".to_vec(), b"a plain put".to_vec(), None));
    kv.push((b"txn".to_vec(), b"from a transaction".to_vec(), None));
    kv.push((Vec::new(), b"empty key".to_vec(), None));
    kv.push((vec![0xff; 300], b"long key".to_vec(), Some(YEAR_9000)));
    kv.sort();
    kv
}

fn write_fixture() {
    assert_eq!(
        persimmon::format::FORMAT_VERSION,
        4,
        "only a version-4 build writes this fixture"
    );
    let path = common::fixture(4);
    let _ = std::fs::remove_file(&path);
    let db = Db::open(&path, options(WRITTEN_AT)).unwrap();
    db.put(b"plain", b"a plain put").unwrap();
    db.put(b"gone", b"deleted below").unwrap();
    // Twelve batches of ten puts, out of key order.
    for first in (0..12u32).rev() {
        let mut b = WriteBatch::new();
        for i in (0..10).map(|j| j * 12 + first) {
            b.put(&batch_key(i), &batch_value(i));
        }
        db.write(&b).unwrap();
    }
    // One batch mixing deletes, overwrites and deadline puts.
    let mut b = WriteBatch::new();
    for i in (0..120u32).filter(|i| i % 7 == 3) {
        b.delete(&batch_key(i));
    }
    for i in (0..120u32).step_by(10).filter(|i| i % 7 != 3) {
        b.put(&batch_key(i), format!("updated-{i}").as_bytes());
    }
    for j in 0..5u64 {
        let value = format!("ttl-batch-value-{j}");
        b.put_with_deadline(
            format!("ttl-batch-{j}").as_bytes(),
            value.as_bytes(),
            YEAR_9000 + j,
        );
    }
    b.put(b"", b"empty key");
    db.write(&b).unwrap();
    for j in 0..5u64 {
        db.put_with_deadline(format!("ttl-{j}").as_bytes(), b"ttl", YEAR_9000 + 100 + j)
            .unwrap();
    }
    assert!(db.persist(b"ttl-0").unwrap());
    assert!(db.expire_at(&batch_key(5), YEAR_9000 + 5).unwrap());
    db.put_with_deadline(&[0xff; 300], b"long key", YEAR_9000)
        .unwrap();
    db.put_with_deadline(EXPIRED, b"an hour too old", WRITTEN_AT + 60_000)
        .unwrap();
    db.transaction(|tx| {
        assert!(tx.get(b"plain")?.is_some());
        tx.put(b"txn", b"from a transaction")?;
        tx.delete(&batch_key(2))
    })
    .unwrap();
    assert!(db.delete(b"gone").unwrap());
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, expected().len() as u64 + 1);
}

fn want_ttl(deadline: Option<u64>) -> Ttl {
    match deadline {
        None => Ttl::Persistent,
        Some(at_ms) => Ttl::Expires {
            at_ms,
            remaining_ms: at_ms - OPENED_AT,
        },
    }
}

#[test]
fn a_format_4_pool_opens_with_its_keys_values_and_deadlines() {
    if std::env::var("PERSIMMON_WRITE_FIXTURE").as_deref() == Ok("4") {
        write_fixture();
    }
    assert_eq!(common::format_version_on_file(&common::fixture(4)), 4);
    let (_dir, copy) = common::fixture_copy(4);
    let db = Db::open(&copy, options(OPENED_AT)).unwrap();
    let stats = db.stats();
    assert_eq!(stats.format_version, 4);
    assert_eq!(
        (stats.batches_undone_at_open, stats.batches_finished_at_open),
        (0, 0),
        "the fixture was closed cleanly"
    );
    assert!(db.has_ordered_index());
    let want = expected();
    for (k, v, deadline) in &want {
        let name = String::from_utf8_lossy(k);
        assert_eq!(db.get(k).unwrap().as_ref(), Some(v), "key {name}");
        assert_eq!(db.ttl(k).unwrap(), want_ttl(*deadline), "key {name}");
    }
    for k in DELETED.iter().chain([&EXPIRED]) {
        assert_eq!(db.get(k).unwrap(), None);
        assert_eq!(db.ttl(k).unwrap(), Ttl::Missing);
    }
    let listed: Vec<(Vec<u8>, Vec<u8>)> =
        db.range::<[u8]>(..).unwrap().map(|r| r.unwrap()).collect();
    let in_order: Vec<(Vec<u8>, Vec<u8>)> = want
        .iter()
        .map(|(k, v, _)| (k.clone(), v.clone()))
        .collect();
    assert_eq!(listed, in_order);
    // The expired key counts until it is reclaimed.
    let held = want.len() as u64 + 1;
    assert_eq!(db.len(), held);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, held);
    assert_eq!(db.expire_now().unwrap(), 1);
    assert_eq!(db.len(), held - 1);
    // And it keeps working: a batch, reopen, read. (Once the ordered walk
    // after open has found the free node slots: before, a new key's node
    // needs a segment of its own, and this six-segment pool has none.)
    db.wait_for_rebuild();
    let mut b = WriteBatch::new();
    b.put(b"after", b"reopen").delete(b"plain");
    db.write(&b).unwrap();
    drop(db);
    let db = Db::open(&copy, options(OPENED_AT)).unwrap();
    assert_eq!(db.get(b"after").unwrap().as_deref(), Some(&b"reopen"[..]));
    assert_eq!(db.get(b"plain").unwrap(), None);
    assert_eq!(db.len(), held - 1);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}
