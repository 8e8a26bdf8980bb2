//! Parking (`Store`'s module header): inside a unit that allows it, a
//! collection stays decoded between the calls that change it. What the
//! unit reads, commits and leaves behind must be what it would be without
//! parking; a parked collection lost to a failed call poisons the unit.

use std::sync::Arc;

use persimmon::Options;
use persimmon_types::coll::{self, Kind};
use persimmon_types::list::End;
use persimmon_types::{hash, list, Error, Keyspace, Store};

fn open(dir: &tempfile::TempDir) -> Store {
    let keyspace: Arc<Keyspace> =
        Keyspace::open(dir.path().join("t.pool"), Options::default()).expect("pool");
    Store::new(keyspace)
}

fn dir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("persimmon-parking")
        .tempdir_in(if std::path::Path::new("/dev/shm").is_dir() {
            "/dev/shm"
        } else {
            "/tmp"
        })
        .expect("temp dir")
}

fn element(i: usize) -> Vec<u8> {
    format!("element-{i:06}-{}", "x".repeat(i % 37)).into_bytes()
}

/// Pushes and pops on one list and field sets on one hash, with reads of
/// both between them, in one unit: with `parking` or without.
fn script(st: &mut Store, parking: bool) -> (Vec<Vec<u8>>, Vec<u64>) {
    st.begin();
    if parking {
        st.allow_parking();
    }
    let mut seen = Vec::new();
    for i in 0..3000 {
        let e = element(i);
        let end = if i % 3 == 0 { End::Head } else { End::Tail };
        seen.push(list::push(st, b"l", end, &[&e]).unwrap());
        let field = format!("f{}", i % 700);
        seen.push(hash::set(st, b"h", &[(field.as_bytes(), &e)]).unwrap());
        if i % 5 == 4 {
            let popped = list::pop(st, b"l", End::Tail, 1).unwrap().unwrap();
            seen.push(popped[0].len() as u64);
        }
        if i % 400 == 399 {
            // A read through another path sees every earlier change.
            seen.push(list::len(st, b"l").unwrap());
            seen.push(hash::len(st, b"h").unwrap());
        }
    }
    assert!(!st.poisoned());
    assert!(st.commit(&[]).unwrap(), "nothing else wrote");
    (list::range(st, b"l", 0, -1).unwrap(), seen)
}

/// Proves: a parking unit's replies along the way and its committed list
/// equal those of the same unit without parking, and survive a reopen.
#[test]
fn a_parking_unit_reads_and_commits_what_a_plain_one_does() {
    let (a, b) = (dir(), dir());
    let (mut parked, mut plain) = (open(&a), open(&b));
    let with = script(&mut parked, true);
    let without = script(&mut plain, false);
    assert_eq!(with.1, without.1);
    assert_eq!(with.0, without.0);
    assert_eq!(with.0.len(), 3000 - 600);
    assert_eq!(hash::len(&mut parked, b"h").unwrap(), 700);
    drop(parked);
    let mut again = open(&a);
    assert_eq!(list::range(&mut again, b"l", 0, -1).unwrap(), without.0);
}

/// Proves: a failed call on a parked collection poisons the unit, and an
/// aborted unit leaves nothing of its parked collections behind.
#[test]
fn a_lost_parked_collection_poisons_the_unit_and_abort_drops_it() {
    let d = dir();
    let mut st = open(&d);
    st.begin();
    st.allow_parking();
    list::push(&mut st, b"l", End::Tail, &[b"a", b"b"]).unwrap();
    assert!(!st.poisoned());
    let failed = coll::with(&mut st, b"l", Kind::List, |_, _| {
        Err::<(), _>(Error::new("ERR failed on purpose"))
    });
    assert!(failed.is_err());
    assert!(st.poisoned(), "the parked list and its pushes were dropped");
    st.abort();
    assert_eq!(list::len(&mut st, b"l").unwrap(), 0);
    // The next unit starts clean: not poisoned, and it commits.
    st.begin();
    st.allow_parking();
    list::push(&mut st, b"l", End::Tail, &[b"c"]).unwrap();
    assert!(!st.poisoned());
    assert!(st.commit(&[]).unwrap());
    assert_eq!(
        list::range(&mut st, b"l", 0, -1).unwrap(),
        vec![b"c".to_vec()]
    );
}

/// Proves: a collection emptied in a parking unit is deleted at once, so
/// the unit's next call finds the key missing (a new list, no old expiry).
#[test]
fn a_collection_emptied_while_parking_is_deleted_not_parked() {
    let d = dir();
    let mut st = open(&d);
    list::push(&mut st, b"l", End::Tail, &[b"a"]).unwrap();
    let deadline = st.now_ms() + 1_000_000;
    assert!(st.set_deadline(b"l", Some(deadline)).unwrap());
    st.begin();
    st.allow_parking();
    assert_eq!(
        list::pop(&mut st, b"l", End::Head, 1).unwrap(),
        Some(vec![b"a".to_vec()])
    );
    assert_eq!(list::len(&mut st, b"l").unwrap(), 0);
    list::push(&mut st, b"l", End::Tail, &[b"b"]).unwrap();
    assert!(st.commit(&[]).unwrap());
    assert_eq!(st.ttl(b"l").unwrap(), persimmon::Ttl::Persistent);
}
