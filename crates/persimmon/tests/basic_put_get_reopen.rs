//! The basic story: put, get, overwrite, delete, close, reopen, grow the index.

mod common;

use common::{pool_dir, small_options};
use persimmon::{Db, Update};

#[test]
fn put_get_delete_survive_reopen_and_index_splits() {
    let dir = pool_dir();
    let path = dir.path().join("p.pool");
    let n = 50_000u64;
    {
        let db = Db::open(&path, small_options()).unwrap();
        for i in 0..n {
            db.put(&i.to_le_bytes(), format!("value-{i}").as_bytes())
                .unwrap();
        }
        for i in (0..n).step_by(3) {
            db.put(&i.to_le_bytes(), format!("new-{i}").as_bytes())
                .unwrap();
        }
        for i in (0..n).step_by(5) {
            assert!(db.delete(&i.to_le_bytes()).unwrap());
        }
        assert!(!db.delete(b"missing").unwrap());
        let expected = n - n.div_ceil(5);
        assert_eq!(db.len(), expected);
        assert!(
            db.stats().index_splits > 0,
            "50k keys must split 256 KiB index segments"
        );
        let report = db.check().unwrap();
        assert!(report.is_ok(), "{:?}", report.errors);
        assert_eq!(report.keys, expected);
    }
    let db = Db::open(&path, small_options()).unwrap();
    assert_eq!(db.len(), n - n.div_ceil(5));
    for i in 0..n {
        let got = db.get(&i.to_le_bytes()).unwrap();
        let want = if i % 5 == 0 {
            None
        } else if i % 3 == 0 {
            Some(format!("new-{i}").into_bytes())
        } else {
            Some(format!("value-{i}").into_bytes())
        };
        assert_eq!(got, want, "key {i}");
    }
    let counted = db.update(b"counter", |cur| {
        assert!(cur.is_none());
        (Update::Put(b"1".to_vec()), 7)
    });
    assert_eq!(counted.unwrap(), 7);
    assert_eq!(db.get(b"counter").unwrap().as_deref(), Some(&b"1"[..]));
    assert_eq!(db.iter().count() as u64, db.len());
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

/// Dropping a `Db` closes its pool at once, even while other threads (here
/// another pool's writers) run the epoch's deferred work, which may hold
/// the engine for a moment: an immediate reopen never finds it locked.
#[test]
fn reopen_right_after_drop_never_finds_the_pool_locked() {
    let dir = common::pool_dir();
    let busy = std::sync::Arc::new(
        Db::open(dir.path().join("busy.pool"), common::small_options()).unwrap(),
    );
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let churn: Vec<_> = (0..2u8)
        .map(|t| {
            let (db, stop) = (busy.clone(), stop.clone());
            std::thread::spawn(move || {
                let mut i = 0u32;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                    db.put(&[t, (i % 64) as u8], &[0u8; 3000]).unwrap();
                    i += 1;
                }
            })
        })
        .collect();
    let path = dir.path().join("reopen.pool");
    let opts = persimmon::Options {
        segment_bytes: 64 << 10,
        ..common::small_options()
    };
    for round in 0..60u32 {
        let db = Db::open(&path, opts.clone()).unwrap_or_else(|e| panic!("round {round}: {e}"));
        // Overwrites that free whole log segments through the epoch.
        for i in 0..200u32 {
            db.put(&(i % 8).to_le_bytes(), &[round as u8; 2000])
                .unwrap();
        }
        drop(db);
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    for c in churn {
        c.join().unwrap();
    }
}
