//! Found by the issue 14 benchmarks (`persimmon bench --workload
//! get-ratio:0 --deadline-fraction 1`): the DRAM heap of deadlines
//! (`db/expiry.rs`) gets an entry for every write of a key with a deadline,
//! and an entry made stale by a later overwrite is dropped only when its
//! own deadline comes. So overwriting keys that carry distant deadlines
//! (a session refreshed on every request with a 30-minute TTL) grows the
//! heap by 16 bytes per write, without bound until the deadlines pass:
//! one key written 200 000 times holds 200 001 entries (`deadlines_pending`)
//! and neither an expiry pass nor the cleaner drops any.
//!
//! Ignored on this branch, whose engine (cbea6b1) does not bound the heap;
//! `main` bounds it since 250fed2 and 9f7d9a5 (compaction when the heap
//! has doubled, also at the end of `expire_now`), with which it passes:
//! un-ignore it there. Run with
//! `cargo test -p persimmon --test expiry_heap_stays_bounded -- --ignored`.

mod common;

use persimmon::{Db, Options};

const WRITES: u64 = 200_000;
const KEYS: u64 = 10;

#[test]
#[ignore = "engine bug at cbea6b1, fixed on main by 250fed2 and 9f7d9a5"]
fn overwriting_keys_with_deadlines_keeps_the_heap_near_the_live_keys() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("heap.pool"), Options::default()).unwrap();
    let far = db.now_ms() + 86_400_000;
    for i in 0..WRITES {
        let key = (i % KEYS).to_le_bytes();
        db.put_with_deadline(&key, &i.to_le_bytes(), far).unwrap();
    }
    db.expire_now().unwrap();
    db.clean_now().unwrap();
    let s = db.stats();
    assert_eq!(s.keys, KEYS);
    assert!(
        s.deadlines_pending <= 4 * KEYS + 1024,
        "{} heap entries for {KEYS} live keys with deadlines after {WRITES} writes",
        s.deadlines_pending
    );
}
