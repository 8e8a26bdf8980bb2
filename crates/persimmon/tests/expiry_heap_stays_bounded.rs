//! Found by the issue 14 benchmarks (`persimmon bench --workload
//! get-ratio:0 --deadline-fraction 1`): overwriting keys that carry distant
//! deadlines (a session refreshed on every request) added one heap entry
//! per write, and a stale entry was dropped only when its own deadline
//! came: 200 000 writes of 10 keys left 200 010 entries. The engine now
//! compacts the heap when it has doubled since the last compaction, at the
//! end of every expiry pass (`expire_now` included).

mod common;

use persimmon::{Db, Options};

const WRITES: u64 = 200_000;
const KEYS: u64 = 10;

#[test]
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
