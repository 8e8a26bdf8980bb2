//! An overwrite-heavy workload runs in bounded space: 40 000 keys are
//! overwritten at random, twenty-five times over, in a pool whose maximum
//! is only a few times the live data. Without the log cleaner the pool would
//! fill up after a few rounds (`PoolFull`); with it, used space stays within
//! a fixed bound of the live data, every value is the last one written, and
//! the pool checks out — also after a reopen.

mod common;

use persimmon::{Db, Options};

const KEYS: u64 = 40_000;
const ROUNDS: u64 = 25;

fn value(key: u64, round: u64) -> Vec<u8> {
    let mut v = format!("{key}:{round}:").into_bytes();
    v.resize(100, (key ^ round) as u8);
    v
}

#[test]
fn random_overwrites_run_in_bounded_space() {
    let dir = common::pool_dir();
    let path = dir.path().join("churn.pool");
    let options = Options {
        pool_bytes_initial: 4 << 20,
        // Live data is 40 000 × 136 bytes ≈ 5.2 MiB, plus the index.
        pool_bytes_max: 32 << 20,
        segment_bytes: 256 << 10,
        ..Options::default()
    };
    let db = Db::open(&path, options.clone()).unwrap();
    let mut last = vec![0u64; KEYS as usize];
    for k in 0..KEYS {
        db.put(&k.to_le_bytes(), &value(k, 0)).unwrap();
    }
    let mut x = 0x2545_F491_4F6C_DD1Du64;
    let mut max_used = 0;
    for round in 1..=ROUNDS {
        for _ in 0..KEYS {
            x ^= x << 13;
            x ^= x >> 7;
            x ^= x << 17;
            let k = x % KEYS;
            db.put(&k.to_le_bytes(), &value(k, round))
                .unwrap_or_else(|e| panic!("round {round}: put failed: {e}"));
            last[k as usize] = round;
        }
        let s = db.stats();
        max_used = max_used.max(s.used_bytes);
        assert!(
            s.pool_bytes <= options.pool_bytes_max,
            "round {round}: file {} past the maximum",
            s.pool_bytes
        );
    }
    let s = db.stats();
    eprintln!(
        "churn: live {} B, max used {} B, file {} B, cleaned {} segments / {} B",
        s.live_bytes, max_used, s.pool_bytes, s.cleaned_segments, s.cleaned_bytes
    );
    assert!(s.cleaned_segments > 0, "the cleaner never ran");
    // Bound: the log stays within about twice the live data (the cleaner
    // starts at 50 % dead space) plus the index and per-lane open segments.
    let index_bytes = s.segments_index as u64 * s.segment_bytes;
    let lanes_open = (s.lanes as u64 + 1) * s.segment_bytes;
    let bound = 3 * s.live_bytes + index_bytes + lanes_open;
    assert!(
        max_used <= bound,
        "used space {max_used} grew past {bound} (live {})",
        s.live_bytes
    );
    let verify = |db: &Db| {
        for k in 0..KEYS {
            let got = db.get(&k.to_le_bytes()).unwrap();
            assert_eq!(got, Some(value(k, last[k as usize])), "key {k}");
        }
        let report = db.check().unwrap();
        assert!(report.is_ok(), "{:?}", report.errors);
        assert_eq!(report.keys, KEYS);
    };
    verify(&db);
    drop(db);
    let db = Db::open(&path, options).unwrap();
    verify(&db);
}
