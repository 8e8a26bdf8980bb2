//! Space: after a load of N distinct keys (8-byte keys, 64-byte values:
//! 96-byte records), the pool file stays under 120 bytes per key, and the
//! point index under 18 (three-choice buckets fill index segments to about
//! 75–80 % before they split, so right after a round of splits they are
//! still about 37 % full; docs/design.md §4, §8). 256 KiB segments and one
//! million keys stand in for the default 1 MiB segments at four million:
//! the index then has 64 segments (the split from 32 to 64 is over by
//! about 840 000 keys, the one to 128 begins past 1.4 million), the pool's
//! growth step is at least 16 segments (4 MiB, 4 bytes per key).

mod common;

use persimmon::{Db, Options};

#[test]
fn a_million_small_keys_take_under_120_bytes_each() {
    let n: u64 = 1_000_000;
    let dir = common::pool_dir();
    let path = dir.path().join("space.pool");
    let options = Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 1 << 30,
        segment_bytes: 256 << 10,
        cleaner: false,
        ..Options::default()
    };
    let db = Db::open(&path, options).unwrap();
    let value = [0x5au8; 64];
    for k in 0..n {
        db.put(&k.to_be_bytes(), &value).unwrap();
    }
    db.wait_for_rebuild();
    let s = db.stats();
    assert_eq!(s.keys, n);
    let per_key = |bytes: u64| bytes as f64 / n as f64;
    let index = per_key(s.segments_index as u64 * s.segment_bytes);
    let pool = per_key(s.pool_bytes);
    eprintln!(
        "{n} keys: pool {pool:.1} B/key, used {:.1}, live {:.1}, index {index:.1} ({} segments), {} free segments",
        per_key(s.used_bytes),
        per_key(s.live_bytes),
        s.segments_index,
        s.segments_free
    );
    assert_eq!(per_key(s.live_bytes), 96.0);
    assert!(index <= 18.0, "index {index:.1} bytes per key");
    assert!(pool <= 120.0, "pool {pool:.1} bytes per key");
}
