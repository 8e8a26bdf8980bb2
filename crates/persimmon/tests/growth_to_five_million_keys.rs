//! A pool created at 4 MiB grows, file and index alike, to five million keys
//! while two threads load it; every value is then read back and verified,
//! `check` passes, and after a reopen the keys are all still there.

mod common;

use std::sync::Arc;

use persimmon::{Db, Options};

fn keys() -> u64 {
    std::env::var("GROWTH_TEST_KEYS")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(5_000_000)
}

fn value(k: u64) -> [u8; 16] {
    let mut v = [0u8; 16];
    v[..8].copy_from_slice(&k.wrapping_mul(0x9E37_79B9_7F4A_7C15).to_le_bytes());
    v[8..].copy_from_slice(&(!k).to_le_bytes());
    v
}

#[test]
fn a_small_pool_grows_to_five_million_keys() {
    let n = keys();
    let dir = common::pool_dir();
    let path = dir.path().join("growth.pool");
    let options = Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 4 << 30,
        ..Options::default()
    };
    let db = Arc::new(Db::open(&path, options.clone()).unwrap());
    let initial = db.stats();
    let threads: Vec<_> = (0..2u64)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                let mut k = t;
                while k < n {
                    db.put(&k.to_be_bytes(), &value(k)).unwrap();
                    k += 2;
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let grown = db.stats();
    eprintln!(
        "growth: file {} -> {} bytes, index depth {} -> {}, {} splits",
        initial.pool_bytes,
        grown.pool_bytes,
        initial.index_depth,
        grown.index_depth,
        grown.index_splits
    );
    assert!(initial.pool_bytes <= 5 << 20);
    assert_eq!(db.len(), n);
    assert!(grown.index_splits > 0);
    let verify_all = |db: &Db| {
        for k in 0..n {
            let ok = db.get_with(&k.to_be_bytes(), |v| v == value(k)).unwrap();
            assert_eq!(ok, Some(true), "key {k}");
        }
    };
    verify_all(&db);
    let report = db.check().unwrap();
    assert!(
        report.is_ok(),
        "{:?}",
        &report.errors[..report.errors.len().min(5)]
    );
    assert_eq!(report.keys, n);
    drop(db);
    let db = Db::open(&path, options).unwrap();
    assert_eq!(db.len(), n);
    verify_all(&db);
}
