//! Model-based story: a random sequence of puts, deletes, gets, updates,
//! reopens, length queries and full iterations runs against both a `Db` and
//! an in-memory `BTreeMap`, and the two must agree after every step.
//!
//! Keys come from a small space (including the empty key and some long keys)
//! so overwrites, deletes of present keys and re-inserts are frequent; values
//! are 0..300 bytes, so both the cached-store path and the non-temporal path
//! (writes of 256 bytes and more) are used. After every reopen and at the end
//! the whole pool is compared with the model: `iter()` contents (each key
//! exactly once), `len()`, and `check()` reporting a consistent pool with as
//! many keys as the model.
//!
//! The same story runs once per engine mode: all MPKV mechanisms on, the
//! paper's Baseline (all off), and each mechanism off alone. A `Clean` step
//! runs the log cleaner over every segment with dead space.
//!
//! 64 cases per mode by default; set `PROPTEST_CASES` to run more or fewer.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{key_bytes, proptest_cases, value_bytes};
use persimmon::{Db, Mechanisms, Update};
use proptest::prelude::*;

type Model = BTreeMap<Vec<u8>, Vec<u8>>;

/// What an `update` closure does with the current value.
#[derive(Debug, Clone)]
enum UpdateAction {
    /// Append one byte (inserting a one-byte value when absent).
    AppendByte(u8),
    /// Delete the key (a no-op when absent).
    Delete,
    /// Leave the key as it is.
    Keep,
}

#[derive(Debug, Clone)]
enum Op {
    Put { key: u8, len: usize, seed: u8 },
    Delete { key: u8 },
    Get { key: u8 },
    Update { key: u8, action: UpdateAction },
    Reopen,
    Len,
    IterCompare,
    Clean,
}

const KEY_SPACE: u8 = 24;

fn op_strategy() -> impl Strategy<Value = Op> {
    let key = 0..KEY_SPACE;
    let len = prop_oneof![
        3 => 0usize..64,
        2 => 64usize..300,
        2 => 250usize..300,
    ];
    let action = prop_oneof![
        3 => any::<u8>().prop_map(UpdateAction::AppendByte),
        1 => Just(UpdateAction::Delete),
        1 => Just(UpdateAction::Keep),
    ];
    prop_oneof![
        10 => (key.clone(), len, any::<u8>()).prop_map(|(key, len, seed)| Op::Put { key, len, seed }),
        4 => key.clone().prop_map(|key| Op::Delete { key }),
        4 => key.clone().prop_map(|key| Op::Get { key }),
        4 => (key, action).prop_map(|(key, action)| Op::Update { key, action }),
        1 => Just(Op::Reopen),
        1 => Just(Op::Len),
        1 => Just(Op::IterCompare),
        1 => Just(Op::Clean),
    ]
}

fn open(path: &Path, mechanisms: Mechanisms) -> Db {
    let options = persimmon::Options {
        mechanisms,
        ..common::small_options()
    };
    Db::open(path, options).expect("open pool")
}

/// Full comparison: iteration (each key once), length, and `check()`.
fn compare_all(db: &Db, model: &Model, when: &str) -> Result<(), TestCaseError> {
    let mut seen = Model::new();
    for item in db.iter() {
        let (k, v) = item.map_err(|e| TestCaseError::fail(format!("{when}: iter error {e}")))?;
        prop_assert!(
            seen.insert(k.clone(), v).is_none(),
            "{when}: iter returned key {:?} twice",
            k
        );
    }
    prop_assert_eq!(&seen, model, "{}: iter() differs from the model", when);
    prop_assert_eq!(db.len(), model.len() as u64, "{}: len()", when);
    let report = db
        .check()
        .map_err(|e| TestCaseError::fail(format!("{when}: check() failed: {e}")))?;
    prop_assert!(
        report.is_ok(),
        "{}: check() errors {:?}",
        when,
        report.errors
    );
    prop_assert_eq!(report.keys, model.len() as u64, "{}: check().keys", when);
    Ok(())
}

fn run(ops: Vec<Op>, mechanisms: Mechanisms) -> Result<(), TestCaseError> {
    let dir = common::pool_dir();
    let path = dir.path().join("model.pool");
    let mut db = Some(open(&path, mechanisms));
    let mut model = Model::new();
    for (step, op) in ops.into_iter().enumerate() {
        let d = db.as_ref().unwrap();
        let when = format!("step {step} ({op:?})");
        match op {
            Op::Put { key, len, seed } => {
                let (k, v) = (key_bytes(key), value_bytes(len, seed));
                d.put(&k, &v)
                    .map_err(|e| TestCaseError::fail(format!("{when}: put failed: {e}")))?;
                model.insert(k.clone(), v);
                prop_assert_eq!(d.get(&k).unwrap(), model.get(&k).cloned(), "{}", when);
            }
            Op::Delete { key } => {
                let k = key_bytes(key);
                let existed = d.delete(&k).unwrap();
                prop_assert_eq!(
                    existed,
                    model.remove(&k).is_some(),
                    "{}: delete result",
                    when
                );
                prop_assert_eq!(d.get(&k).unwrap(), None, "{}", when);
            }
            Op::Get { key } => {
                let k = key_bytes(key);
                prop_assert_eq!(d.get(&k).unwrap(), model.get(&k).cloned(), "{}", when);
                prop_assert_eq!(d.contains(&k).unwrap(), model.contains_key(&k), "{}", when);
            }
            Op::Update { key, action } => {
                let k = key_bytes(key);
                let a = action.clone();
                let saw = d
                    .update(&k, move |cur| {
                        let saw = cur.map(|c| c.to_vec());
                        let decision = match a {
                            UpdateAction::AppendByte(b) => {
                                let mut v = cur.map(|c| c.to_vec()).unwrap_or_default();
                                v.push(b);
                                Update::Put(v)
                            }
                            UpdateAction::Delete => Update::Delete,
                            UpdateAction::Keep => Update::Keep,
                        };
                        (decision, saw)
                    })
                    .map_err(|e| TestCaseError::fail(format!("{when}: update failed: {e}")))?;
                prop_assert_eq!(&saw, &model.get(&k).cloned(), "{}: update saw", when);
                match action {
                    UpdateAction::AppendByte(b) => {
                        model.entry(k.clone()).or_default().push(b);
                    }
                    UpdateAction::Delete => {
                        model.remove(&k);
                    }
                    UpdateAction::Keep => {}
                }
                prop_assert_eq!(d.get(&k).unwrap(), model.get(&k).cloned(), "{}", when);
            }
            Op::Reopen => {
                drop(db.take());
                let d = open(&path, mechanisms);
                compare_all(&d, &model, &when)?;
                db = Some(d);
            }
            Op::Len => {
                prop_assert_eq!(d.len(), model.len() as u64, "{}", when);
                prop_assert_eq!(d.is_empty(), model.is_empty(), "{}", when);
            }
            Op::IterCompare => {
                let mut seen = Model::new();
                for item in d.iter() {
                    let (k, v) = item.unwrap();
                    prop_assert!(seen.insert(k, v).is_none(), "{}: duplicate key", when);
                }
                prop_assert_eq!(&seen, &model, "{}", when);
            }
            Op::Clean => {
                d.clean_now()
                    .map_err(|e| TestCaseError::fail(format!("{when}: clean failed: {e}")))?;
                compare_all(d, &model, &when)?;
            }
        }
    }
    let d = db.take().unwrap();
    compare_all(&d, &model, "end")?;
    // Every key of the space agrees, including absent ones.
    for k in 0..KEY_SPACE {
        let k = key_bytes(k);
        prop_assert_eq!(d.get(&k).unwrap(), model.get(&k).cloned());
    }
    drop(d);
    let d = open(&path, mechanisms);
    compare_all(&d, &model, "final reopen")?;
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn db_agrees_with_btreemap_model(ops in prop::collection::vec(op_strategy(), 1..150)) {
        run(ops, Mechanisms::ALL)?;
    }

    #[test]
    fn baseline_agrees_with_btreemap_model(ops in prop::collection::vec(op_strategy(), 1..150)) {
        run(ops, Mechanisms::NONE)?;
    }

    #[test]
    fn persistent_bucket_locks_agree_with_btreemap_model(
        ops in prop::collection::vec(op_strategy(), 1..150)
    ) {
        run(ops, Mechanisms { volatile_lock_table: false, ..Mechanisms::ALL })?;
    }

    #[test]
    fn locked_reads_agree_with_btreemap_model(ops in prop::collection::vec(op_strategy(), 1..150)) {
        run(ops, Mechanisms { lock_free_reads: false, ..Mechanisms::ALL })?;
    }

    #[test]
    fn no_write_elimination_agrees_with_btreemap_model(
        ops in prop::collection::vec(op_strategy(), 1..150)
    ) {
        run(ops, Mechanisms { write_elimination: false, ..Mechanisms::ALL })?;
    }
}
