//! One damaged node (a flipped bit in its key CRC) with a record word does
//! not stop the DRAM point index's rebuild (found by review): the scan skips
//! it and reports it, every other key is entered, `len()` and `iter()` count
//! them, and `check()` names the damage. (With the PM point index the same
//! damage costs only that key's node.)
mod common;

use persimmon::{Db, Options, OrderedLayout, PointIndex};

fn run(point_index: PointIndex) -> (u64, usize, usize, Vec<String>) {
    let dir = common::pool_dir();
    let path = dir.path().join("d.pool");
    let opts = Options {
        ordered_index: true,
        point_index,
        cleaner: false,
        // The damage is planted in a skiplist node.
        ordered_layout: OrderedLayout::Skiplist,
        ..common::small_options()
    };
    let n = 1000u32;
    {
        let db = Db::open(&path, opts.clone()).unwrap();
        for i in 0..n {
            db.put(format!("k{i:04}").as_bytes(), b"value").unwrap();
        }
    }
    // Damage the node of k0000 (first node after the head in slab order):
    // flip one bit of its key CRC (node + 20), so the node no longer verifies.
    let mut bytes = std::fs::read(&path).unwrap();
    let key = b"k0000";
    let pos = (24..bytes.len() - 5)
        .find(|&p| {
            &bytes[p..p + 5] == key
                && (p - 24) % 32 == 0
                && bytes[p - 8..p - 4] == 5u32.to_le_bytes()
        })
        .expect("node of k0000");
    bytes[pos - 4] ^= 0x01;
    std::fs::write(&path, &bytes).unwrap();

    let db = Db::open(&path, opts).unwrap();
    db.wait_for_rebuild();
    let gets = (1..n)
        .filter(|i| db.get(format!("k{i:04}").as_bytes()).unwrap().is_some())
        .count();
    let iterated = db.iter().filter(|r| r.is_ok()).count();
    let errors = db.check().unwrap().errors;
    (db.len(), iterated, gets, errors)
}

#[test]
fn one_damaged_node_is_skipped_and_reported() {
    let (len_pm, iter_pm, gets_pm, _) = run(PointIndex::Pm);
    let (len_dram, iter_dram, gets_dram, errors) = run(PointIndex::Dram);
    assert!(
        errors
            .iter()
            .any(|e| e.contains("node with a record word") && e.contains("CRC"))
            && errors
                .iter()
                .any(|e| e.contains("closed cleanly with 1000 keys")),
        "check names the damage: {errors:?}"
    );
    eprintln!("PM:   len {len_pm}, iter {iter_pm}, gets {gets_pm}");
    eprintln!("DRAM: len {len_dram}, iter {iter_dram}, gets {gets_dram}");
    assert!(gets_dram >= 999, "get still finds the undamaged keys");
    assert!(
        iter_dram >= 999 && len_dram >= 999,
        "DRAM point index: iter() returned {iter_dram} and len() {len_dram} of 999 undamaged keys (get finds {gets_dram}); PM: iter {iter_pm}, len {len_pm}"
    );
}
