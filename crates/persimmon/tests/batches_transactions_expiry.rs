//! Atomic batches, optimistic transactions and key expiry through the
//! public API: what each promises, its limits and its bad input.

mod common;

use std::sync::Arc;

use persimmon::{
    Db, Error, ManualClock, Options, Ttl, Update, WriteBatch, MAX_BATCH_OPS, MAX_DEADLINE_MS,
};

fn dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// A new pool on a manual clock that reads `start_ms`.
fn fresh(start_ms: u64) -> (tempfile::TempDir, ManualClock, Db) {
    let d = dir();
    let clock = ManualClock::new(start_ms);
    let db = Db::open(d.path().join("t.pool"), options(&clock)).unwrap();
    (d, clock, db)
}

/// `check` finds nothing wrong with the pool.
fn assert_consistent(db: &Db) {
    let report = db.check().unwrap();
    assert!(report.errors.is_empty(), "{:?}", report.errors);
}

fn options(clock: &ManualClock) -> Options {
    Options {
        pool_bytes_initial: 8 << 20,
        segment_bytes: 256 << 10,
        clock: persimmon::Clock::Manual(clock.clone()),
        // Expiry runs when a test says so (`expire_now`), so counts are
        // exact (the cleaner would delete expired keys it meets too).
        active_expiry: false,
        cleaner: false,
        ..Options::default()
    }
}

#[test]
fn a_batch_applies_every_operation_and_survives_reopen() {
    let d = dir();
    let path = d.path().join("b.pool");
    let clock = ManualClock::new(1_000_000);
    {
        let db = Db::open(&path, options(&clock)).unwrap();
        db.put(b"gone", b"x").unwrap();
        db.put(b"stock", b"10").unwrap();
        let mut b = WriteBatch::new();
        b.put(b"order:1", b"widget")
            .put(b"stock", b"9")
            .delete(b"gone")
            .delete(b"never-there")
            .put(b"twice", b"first")
            .put(b"twice", b"second");
        db.write(&b).unwrap();
        assert_eq!(db.get(b"order:1").unwrap().as_deref(), Some(&b"widget"[..]));
        assert_eq!(db.get(b"stock").unwrap().as_deref(), Some(&b"9"[..]));
        assert_eq!(db.get(b"gone").unwrap(), None);
        assert_eq!(db.get(b"twice").unwrap().as_deref(), Some(&b"second"[..]));
        assert_eq!(db.len(), 3);
        assert_consistent(&db);
    }
    let db = Db::open(&path, options(&clock)).unwrap();
    db.wait_for_rebuild();
    assert_eq!(db.get(b"stock").unwrap().as_deref(), Some(&b"9"[..]));
    assert_eq!(db.get(b"gone").unwrap(), None);
    assert_eq!(db.len(), 3);
    // At least 4 (batches); a new pool is at 7 already (three-choice buckets).
    assert!(db.stats().format_version >= 4);
    assert_consistent(&db);
}

#[test]
fn a_large_batch_crosses_segments_and_counts_right() {
    let (_d, _clock, db) = fresh(1);
    let mut b = WriteBatch::new();
    for i in 0..5000u32 {
        b.put(format!("k{i:05}").as_bytes(), &[i as u8; 100]);
    }
    // One value larger than half a segment: a run of its own.
    b.put(b"huge", &vec![7u8; 200 << 10]);
    db.write(&b).unwrap();
    assert_eq!(db.len(), 5001);
    assert_eq!(db.get(b"k04999").unwrap(), Some(vec![4999u32 as u8; 100]));
    assert_eq!(db.get(b"huge").unwrap().map(|v| v.len()), Some(200 << 10));
    let mut del = WriteBatch::new();
    for i in 0..5000u32 {
        del.delete(format!("k{i:05}").as_bytes());
    }
    db.write(&del).unwrap();
    assert_eq!(db.len(), 1);
    assert_consistent(&db);
}

#[test]
fn batch_over_the_limit_is_refused_whole() {
    let (_d, _clock, db) = fresh(1);
    let mut b = WriteBatch::new();
    for i in 0..=MAX_BATCH_OPS {
        b.put(&(i as u64).to_le_bytes(), b"v");
    }
    assert!(matches!(
        db.write(&b),
        Err(Error::BatchTooLarge {
            what: "operations",
            ..
        })
    ));
    let mut big = WriteBatch::new();
    big.put(b"ok", b"v")
        .put(b"too-big", &vec![0u8; persimmon::MAX_VALUE_BYTES + 1]);
    assert!(matches!(db.write(&big), Err(Error::BatchTooLarge { .. })));
    assert_eq!(db.len(), 0, "nothing of a refused batch is applied");
}

#[test]
fn transactions_serialize_increments_from_racing_threads() {
    let d = dir();
    let clock = ManualClock::new(1);
    let db = Arc::new(Db::open(d.path().join("t.pool"), options(&clock)).unwrap());
    db.put(b"counter", b"0").unwrap();
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let db = db.clone();
            std::thread::spawn(move || {
                for _ in 0..200 {
                    db.transaction_with_attempts(10_000, |tx| {
                        let n: u64 = String::from_utf8(tx.get(b"counter")?.unwrap())
                            .unwrap()
                            .parse()
                            .unwrap();
                        tx.put(b"counter", (n + 1).to_string().as_bytes())?;
                        // A second key written with it: both or neither.
                        tx.put(format!("log:{n}").as_bytes(), b"1")?;
                        Ok(())
                    })
                    .unwrap();
                }
            })
        })
        .collect();
    // A plain writer racing on a key the transactions only read.
    for t in threads {
        t.join().unwrap();
    }
    assert_eq!(db.get(b"counter").unwrap().as_deref(), Some(&b"800"[..]));
    assert_eq!(db.len(), 801);
}

#[test]
fn a_transaction_that_always_conflicts_gives_up_with_an_error() {
    let (_d, _clock, db) = fresh(1);
    let mut runs = 0;
    let r = db.transaction_with_attempts(3, |tx| {
        runs += 1;
        tx.get(b"k")?;
        // Another writer changes the key between the read and the commit.
        db.put(b"k", format!("{runs}").as_bytes())?;
        tx.put(b"other", b"x")
    });
    assert!(matches!(r, Err(Error::TransactionConflict { attempts: 3 })));
    assert_eq!(runs, 3);
    assert_eq!(db.get(b"other").unwrap(), None, "no attempt wrote anything");
    // Reads its own writes; a read-only transaction commits.
    let v = db
        .transaction(|tx| {
            tx.put(b"mine", b"1")?;
            tx.get(b"mine")
        })
        .unwrap();
    assert_eq!(v.as_deref(), Some(&b"1"[..]));
    let seen = db.transaction(|tx| tx.get(b"mine")).unwrap();
    assert_eq!(seen.as_deref(), Some(&b"1"[..]));
}

#[test]
fn deadlines_hide_keys_on_time_and_survive_reopen() {
    let d = dir();
    let path = d.path().join("e.pool");
    let clock = ManualClock::new(1_700_000_000_000);
    let now = clock.now_ms();
    {
        let db = Db::open(&path, options(&clock)).unwrap();
        db.put_with_deadline(b"session", b"abc", now + 10_000)
            .unwrap();
        db.put(b"forever", b"x").unwrap();
        assert_eq!(
            db.ttl(b"session").unwrap(),
            Ttl::Expires {
                at_ms: now + 10_000,
                remaining_ms: 10_000
            }
        );
        assert_eq!(db.ttl(b"forever").unwrap(), Ttl::Persistent);
        assert_eq!(db.ttl(b"nothing").unwrap(), Ttl::Missing);
        // A read-modify-write keeps the deadline.
        db.update(b"session", |_| (Update::Put(b"abd".to_vec()), ()))
            .unwrap();
        assert!(matches!(db.ttl(b"session").unwrap(), Ttl::Expires { .. }));
        assert!(db.expire_at(b"forever", now + 5_000).unwrap());
        assert!(db.persist(b"forever").unwrap());
        assert!(
            !db.persist(b"forever").unwrap(),
            "no deadline left to clear"
        );
        assert_eq!(db.ttl(b"forever").unwrap(), Ttl::Persistent);
    }
    clock.advance(9_999);
    let db = Db::open(&path, options(&clock)).unwrap();
    db.wait_for_rebuild();
    assert_eq!(db.get(b"session").unwrap().as_deref(), Some(&b"abd"[..]));
    clock.advance(1);
    assert_eq!(
        db.get(b"session").unwrap(),
        None,
        "absent from its deadline on"
    );
    assert!(!db.contains(b"session").unwrap());
    assert_eq!(
        db.iter()
            .filter(|r| r.as_ref().unwrap().0 == b"session")
            .count(),
        0
    );
    let seen = db
        .update(b"session", |v| (Update::Keep, v.map(|v| v.to_vec())))
        .unwrap();
    assert_eq!(seen, None);
    assert_eq!(db.expire_now().unwrap(), 1);
    assert_eq!(db.len(), 1);
    assert_eq!(db.stats().keys_expired, 1);
    assert_consistent(&db);
}

#[test]
fn past_deadlines_delete_and_absurd_ones_are_refused() {
    let (_d, _clock, db) = fresh(1_000_000);
    db.put(b"k", b"v").unwrap();
    db.put_with_deadline(b"k", b"new", 999_999).unwrap();
    assert_eq!(
        db.get(b"k").unwrap(),
        None,
        "a deadline in the past deletes"
    );
    assert_eq!(db.len(), 0);
    db.put(b"k", b"v").unwrap();
    assert!(db.expire_at(b"k", 5).unwrap());
    assert_eq!(db.get(b"k").unwrap(), None);
    assert!(!db.expire_at(b"k", 2_000_000).unwrap(), "absent key");
    assert!(matches!(
        db.put_with_deadline(b"k", b"v", MAX_DEADLINE_MS + 1),
        Err(Error::DeadlineTooFar { .. })
    ));
    db.put(b"k", b"v").unwrap();
    assert!(matches!(
        db.expire_at(b"k", u64::MAX),
        Err(Error::DeadlineTooFar { .. })
    ));
    let mut b = WriteBatch::new();
    b.put(b"a", b"1").put_with_deadline(b"b", b"2", u64::MAX);
    assert!(matches!(db.write(&b), Err(Error::DeadlineTooFar { .. })));
    assert_eq!(
        db.get(b"a").unwrap(),
        None,
        "a refused batch writes nothing"
    );
    assert_eq!(db.get(b"k").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn the_deadline_heap_drops_entries_of_overwritten_keys() {
    let d = dir();
    let clock = ManualClock::new(1_000_000);
    let background = Options {
        active_expiry: true, // the background expiry compacts the heap
        ..options(&clock)
    };
    let db = Db::open(d.path().join("h.pool"), background).unwrap();
    let far = clock.now_ms() + 3_600_000;
    for i in 0..20_000u64 {
        // The same few keys over and over, each time with a new deadline.
        db.put_with_deadline(format!("s{}", i % 10).as_bytes(), b"v", far + i)
            .unwrap();
    }
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while db.stats().deadlines_pending > 4096 + 20 && std::time::Instant::now() < deadline {
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
    let pending = db.stats().deadlines_pending;
    assert!(pending <= 4096 + 20, "{pending} heap entries for 10 keys");
    // The live keys keep their entries: they still expire on time.
    clock.set(far + 20_000);
    // The background expiry may be taking some of them meanwhile: wait
    // until both together have deleted all ten.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(5);
    while db.stats().keys_expired < 10 && std::time::Instant::now() < deadline {
        db.expire_now().unwrap();
        std::thread::sleep(std::time::Duration::from_millis(5));
    }
    assert_eq!(db.stats().keys_expired, 10);
    assert_eq!(db.len(), 0);
}

#[test]
fn a_transaction_reads_its_own_put_of_a_passed_deadline_as_absent() {
    let (_d, _clock, db) = fresh(1_000_000);
    db.put(b"k", b"old").unwrap();
    let seen = db
        .transaction(|tx| {
            // A deadline already passed deletes the key at commit, so the
            // transaction's own read must already see it absent.
            tx.put_with_deadline(b"k", b"new", 999_999)?;
            tx.put_with_deadline(b"fresh", b"v", 1_000_000)?;
            tx.put_with_deadline(b"live", b"v", 1_000_001)?;
            Ok((tx.get(b"k")?, tx.get(b"fresh")?, tx.get(b"live")?))
        })
        .unwrap();
    assert_eq!(seen, (None, None, Some(b"v".to_vec())));
    assert_eq!(db.get(b"k").unwrap(), None, "the commit deleted it");
    assert_eq!(db.get(b"fresh").unwrap(), None);
    assert_eq!(db.get(b"live").unwrap().as_deref(), Some(&b"v"[..]));
}

#[test]
fn versions_change_with_every_write_and_guard_write_if() {
    let (_d, clock, db) = fresh(1_000_000);
    assert_eq!(db.version(b"k").unwrap(), None);
    db.put_with_deadline(b"k", b"v", 1_005_000).unwrap();
    let seen = db.get_versioned(b"k").unwrap().unwrap();
    assert_eq!(seen.value, b"v");
    assert_eq!(seen.deadline, Some(1_005_000));
    assert_eq!(db.version(b"k").unwrap(), Some(seen.version));

    // The same value written again is another version.
    db.put(b"k", b"v").unwrap();
    let again = db.version(b"k").unwrap().unwrap();
    assert_ne!(again, seen.version);

    // A stale expectation writes nothing; a current one commits.
    let mut b = WriteBatch::new();
    b.put(b"k", b"new").put(b"other", b"o");
    assert!(!db.write_if(&b, &[(b"k", Some(seen.version))]).unwrap());
    assert_eq!(db.get(b"k").unwrap().unwrap(), b"v");
    assert_eq!(db.get(b"other").unwrap(), None);
    assert!(db.write_if(&b, &[(b"k", Some(again))]).unwrap());
    assert_eq!(db.get(b"other").unwrap().unwrap(), b"o");

    // Expecting absence: fails once the key exists, holds while it does not.
    let mut c = WriteBatch::new();
    c.put(b"fresh", b"1");
    assert!(!db.write_if(&c, &[(b"other", None)]).unwrap());
    assert!(db.write_if(&c, &[(b"missing", None)]).unwrap());

    // Expiry is a change: the key reads as absent from its deadline on.
    db.put_with_deadline(b"e", b"x", 1_001_000).unwrap();
    let before = db.version(b"e").unwrap();
    assert!(before.is_some());
    clock.advance(2_000);
    assert_eq!(db.version(b"e").unwrap(), None);
    assert!(!db.write_if(&c, &[(b"e", before)]).unwrap());

    // update_with_deadline shows the deadline and keeps it on a plain Put.
    db.put_with_deadline(b"d", b"1", 1_010_000).unwrap();
    let seen = db
        .update_with_deadline(b"d", |v, d| {
            (Update::Put(b"2".to_vec()), (v.map(<[u8]>::to_vec), d))
        })
        .unwrap();
    assert_eq!(seen, (Some(b"1".to_vec()), Some(1_010_000)));
    assert_eq!(
        db.get_versioned(b"d").unwrap().unwrap().deadline,
        Some(1_010_000)
    );
    assert_consistent(&db);
}
