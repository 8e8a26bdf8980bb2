//! Regression (found by review of the engine-rooms split): with the point
//! index in DRAM, a node whose record word names a record that the rebuild
//! cannot enter (here: the record's header is damaged, its key's node is
//! not) was taken for an orphan by the ordered walk after the rebuild and
//! unlinked. The key was then gone for good, although its record word was
//! its persistent truth. Now the walk keeps such a node: the damage is
//! reported, the node stays linked, every other key is served, and the next
//! open finds the node again.
mod common;

use persimmon::{Db, Options, PointIndex};

fn damage_record_header(path: &std::path::Path, key: &[u8], value: &[u8]) {
    let mut bytes = std::fs::read(path).unwrap();
    // A record: crc:4 key_len:4 value_len:4 flags:4 seq:8, then the key and
    // the value; records start on 8-byte boundaries.
    let pos = (24..bytes.len() - key.len() - value.len())
        .find(|&p| {
            p % 8 == 0
                && &bytes[p..p + key.len()] == key
                && bytes[p - 20..p - 16] == (key.len() as u32).to_le_bytes()
                && bytes[p - 16..p - 12] == (value.len() as u32).to_le_bytes()
                && &bytes[p + key.len()..p + key.len() + value.len()] == value
        })
        .expect("the record of the key");
    // An impossible value length: the record header no longer decodes.
    let value_len_at = pos - 16;
    bytes[value_len_at..value_len_at + 4].copy_from_slice(&u32::MAX.to_le_bytes());
    std::fs::write(path, &bytes).unwrap();
}

#[test]
fn a_node_the_rebuild_could_not_enter_stays_linked() {
    let dir = common::pool_dir();
    let path = dir.path().join("d.pool");
    let opts = Options {
        ordered_index: true,
        point_index: PointIndex::Dram,
        cleaner: false,
        ..common::small_options()
    };
    let n = 200u32;
    {
        let db = Db::open(&path, opts.clone()).unwrap();
        for i in 0..n {
            db.put(format!("k{i:04}").as_bytes(), b"value-of-a-key")
                .unwrap();
        }
    }
    damage_record_header(&path, b"k0007", b"value-of-a-key");

    for open in 0..2 {
        let db = Db::open(&path, opts.clone()).unwrap();
        db.wait_for_rebuild();
        let report = db.check().unwrap();
        assert!(
            report
                .errors
                .iter()
                .any(|e| e.contains("DRAM point index rebuild")),
            "open {open}: the rebuild reports what it skipped: {:?}",
            report.errors
        );
        assert_eq!(
            report.ordered_nodes,
            u64::from(n),
            "open {open}: the damaged key's node is still linked"
        );
        for i in (0..n).filter(|&i| i != 7) {
            let key = format!("k{i:04}");
            assert_eq!(
                db.get(key.as_bytes()).unwrap().as_deref(),
                Some(&b"value-of-a-key"[..]),
                "open {open}: {key}"
            );
        }
    }
}
