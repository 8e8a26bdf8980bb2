//! `Stats::fields`: the named figures bindings and reports are built from.

mod common;

use std::collections::HashSet;

use common::{pool_dir, small_options};
use persimmon::{Db, StatValue};

#[test]
fn fields_name_every_figure_once_and_follow_the_pool() {
    let dir = pool_dir();
    let db = Db::open(dir.path().join("p.pool"), small_options()).unwrap();
    for i in 0..100u32 {
        db.put(&i.to_le_bytes(), b"v").unwrap();
    }
    let s = db.stats();
    let fields = s.fields();
    let names: HashSet<_> = fields.iter().map(|(n, _)| *n).collect();
    assert_eq!(names.len(), fields.len(), "a name appears twice");
    let get = |name: &str| {
        fields
            .iter()
            .find(|(n, _)| *n == name)
            .map(|(_, v)| v.clone())
            .unwrap_or_else(|| panic!("no field {name}"))
    };
    assert_eq!(get("keys"), StatValue::Count(s.keys));
    assert_eq!(get("pool_bytes"), StatValue::Count(s.pool_bytes));
    assert_eq!(get("ordered_index"), StatValue::Flag(false));
    assert_eq!(get("data_dir"), StatValue::Absent, "no SSD tier here");
    assert_eq!(db.data_dir(), None, "no SSD tier here");
    assert_eq!(
        get("durability"),
        StatValue::Text(s.durability.name().to_string())
    );
    assert!(matches!(get("pmem_fences"), StatValue::Count(n) if n > 0));
}
