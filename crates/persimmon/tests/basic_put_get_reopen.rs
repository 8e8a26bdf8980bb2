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
