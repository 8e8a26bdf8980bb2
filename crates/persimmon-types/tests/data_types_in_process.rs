//! The data types as a Rust program uses them in-process: every call of
//! the small API (strings, hashes, lists, sets, sorted sets) against a
//! model of what Redis would hold, the type errors Redis gives, and the
//! data still there after the pool is closed and reopened.

use std::sync::Arc;

use persimmon::Options;
use persimmon_types::list::End;
use persimmon_types::{hash, list, set, string, zset, Keyspace, Store};

fn pool_dir() -> tempfile::TempDir {
    let base = if std::path::Path::new("/dev/shm").is_dir() {
        "/dev/shm"
    } else {
        "/tmp"
    };
    tempfile::Builder::new()
        .prefix("persimmon-types")
        .tempdir_in(base)
        .expect("temp dir")
}

fn open(dir: &tempfile::TempDir) -> Store {
    let keyspace: Arc<Keyspace> =
        Keyspace::open(dir.path().join("t.pool"), Options::default()).expect("pool");
    Store::new(keyspace)
}

fn wrongtype(e: persimmon_types::Error) {
    assert!(e.0.starts_with("WRONGTYPE"), "{e}");
}

#[test]
fn hashes_set_get_delete_len_and_scan() {
    let dir = pool_dir();
    let mut st = open(&dir);
    assert_eq!(
        hash::set(&mut st, b"h", &[(b"a", b"1"), (b"b", b"2")]).unwrap(),
        2
    );
    assert_eq!(
        hash::set(&mut st, b"h", &[(b"a", b"9"), (b"c", b"3")]).unwrap(),
        1
    );
    assert_eq!(hash::get(&mut st, b"h", b"a").unwrap(), Some(b"9".to_vec()));
    assert_eq!(hash::get(&mut st, b"h", b"zz").unwrap(), None);
    assert_eq!(hash::get(&mut st, b"nohash", b"a").unwrap(), None);
    assert_eq!(hash::len(&mut st, b"h").unwrap(), 3);
    let (next, first) = hash::scan(&mut st, b"h", 0, 2).unwrap();
    assert_eq!(next, 2);
    assert_eq!(
        first,
        vec![
            (b"a".to_vec(), b"9".to_vec()),
            (b"b".to_vec(), b"2".to_vec())
        ]
    );
    let (next, rest) = hash::scan(&mut st, b"h", next, 2).unwrap();
    assert_eq!((next, rest), (0, vec![(b"c".to_vec(), b"3".to_vec())]));
    assert_eq!(hash::delete(&mut st, b"h", &[b"a", b"zz"]).unwrap(), 1);
    assert_eq!(hash::delete(&mut st, b"h", &[b"b", b"c"]).unwrap(), 2);
    // The last field takes the key with it.
    assert_eq!(hash::len(&mut st, b"h").unwrap(), 0);
    assert!(!st.exists(b"h").unwrap());
}

#[test]
fn lists_push_pop_range_and_move() {
    let dir = pool_dir();
    let mut st = open(&dir);
    assert_eq!(
        list::push(&mut st, b"l", End::Tail, &[b"b", b"c"]).unwrap(),
        2
    );
    assert_eq!(list::push(&mut st, b"l", End::Head, &[b"a"]).unwrap(), 3);
    assert_eq!(
        list::push_if_exists(&mut st, b"none", End::Tail, &[b"x"]).unwrap(),
        0
    );
    assert!(!st.exists(b"none").unwrap());
    let all = list::range(&mut st, b"l", 0, -1).unwrap();
    assert_eq!(all, vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()]);
    assert_eq!(list::range(&mut st, b"l", -2, 100).unwrap().len(), 2);
    assert!(list::range(&mut st, b"l", 2, 1).unwrap().is_empty());
    assert_eq!(
        list::move_one(&mut st, b"l", b"m", End::Tail, End::Head).unwrap(),
        Some(b"c".to_vec())
    );
    assert_eq!(list::len(&mut st, b"m").unwrap(), 1);
    assert_eq!(
        list::pop(&mut st, b"l", End::Head, 5).unwrap(),
        Some(vec![b"a".to_vec(), b"b".to_vec()])
    );
    assert_eq!(list::pop(&mut st, b"l", End::Head, 1).unwrap(), None);
    assert_eq!(list::len(&mut st, b"l").unwrap(), 0);
}

#[test]
fn sets_add_remove_members_and_contains() {
    let dir = pool_dir();
    let mut st = open(&dir);
    assert_eq!(set::add(&mut st, b"s", &[b"x", b"y", b"x"]).unwrap(), 2);
    assert!(set::contains(&mut st, b"s", b"y").unwrap());
    assert!(!set::contains(&mut st, b"s", b"z").unwrap());
    assert_eq!(
        set::members(&mut st, b"s").unwrap(),
        vec![b"x".to_vec(), b"y".to_vec()]
    );
    assert_eq!(set::remove(&mut st, b"s", &[b"x", b"q"]).unwrap(), 1);
    assert_eq!(set::len(&mut st, b"s").unwrap(), 1);
}

#[test]
fn sorted_sets_add_range_rank_score_and_pop() {
    let dir = pool_dir();
    let mut st = open(&dir);
    let pairs: [(f64, &[u8]); 3] = [(2.0, b"b"), (1.0, b"a"), (3.0, b"c")];
    assert_eq!(zset::add(&mut st, b"z", &pairs).unwrap(), 3);
    assert_eq!(zset::add(&mut st, b"z", &[(0.5, b"c")]).unwrap(), 0);
    assert_eq!(
        zset::range(&mut st, b"z", 0, -1).unwrap(),
        vec![
            (b"c".to_vec(), 0.5),
            (b"a".to_vec(), 1.0),
            (b"b".to_vec(), 2.0)
        ]
    );
    assert_eq!(zset::rank(&mut st, b"z", b"b", false).unwrap(), Some(2));
    assert_eq!(zset::rank(&mut st, b"z", b"b", true).unwrap(), Some(0));
    assert_eq!(zset::rank(&mut st, b"z", b"q", false).unwrap(), None);
    assert_eq!(zset::score(&mut st, b"z", b"a").unwrap(), Some(1.0));
    let outcome = zset::add_with(
        &mut st,
        b"z",
        &[(10.0, b"a")],
        zset::AddOptions {
            incr: true,
            ..Default::default()
        },
    )
    .unwrap();
    assert_eq!(outcome.score, Some(11.0));
    let nan = zset::add(&mut st, b"z", &[(f64::NAN, b"n")]).unwrap_err();
    assert!(nan.0.contains("NaN"), "{nan}");
    assert_eq!(
        zset::pop(&mut st, b"z", true, 1).unwrap(),
        Some(vec![(b"a".to_vec(), 11.0)])
    );
    assert_eq!(zset::remove(&mut st, b"z", &[b"b", b"c"]).unwrap(), 2);
    assert_eq!(zset::len(&mut st, b"z").unwrap(), 0);
}

#[test]
fn a_key_of_another_type_is_wrongtype_and_never_overwritten() {
    let dir = pool_dir();
    let mut st = open(&dir);
    string::set(&mut st, b"k", b"text", None).unwrap();
    wrongtype(hash::set(&mut st, b"k", &[(b"f", b"v")]).unwrap_err());
    wrongtype(list::push(&mut st, b"k", End::Tail, &[b"e"]).unwrap_err());
    wrongtype(set::add(&mut st, b"k", &[b"m"]).unwrap_err());
    wrongtype(zset::add(&mut st, b"k", &[(1.0, b"m")]).unwrap_err());
    assert_eq!(string::get(&mut st, b"k").unwrap(), Some(b"text".to_vec()));
    list::push(&mut st, b"l", End::Tail, &[b"e"]).unwrap();
    wrongtype(string::get(&mut st, b"l").unwrap_err());
    wrongtype(hash::len(&mut st, b"l").unwrap_err());
    // A string write replaces any value, as SET does.
    string::set(&mut st, b"l", b"now a string", None).unwrap();
    wrongtype(list::len(&mut st, b"l").unwrap_err());
    assert_eq!(
        string::get(&mut st, b"l").unwrap(),
        Some(b"now a string".to_vec())
    );
}

#[test]
fn oversized_input_is_refused_with_a_clear_error_and_writes_nothing() {
    let dir = pool_dir();
    let mut st = open(&dir);
    let long_key = vec![b'k'; persimmon::MAX_KEY_BYTES + 1];
    let e = hash::set(&mut st, &long_key, &[(b"f", b"v")]).unwrap_err();
    assert!(e.0.contains("key limit"), "{e}");
    let huge = vec![0u8; list::MAX_ELEMENT + 1];
    let e = list::push(&mut st, b"l", End::Tail, &[b"ok", &huge]).unwrap_err();
    assert!(e.0.starts_with("ERR element is"), "{e}");
    assert!(
        !st.exists(b"l").unwrap(),
        "nothing of a refused push is written"
    );
    let member = vec![b'm'; zset::MAX_MEMBER_BYTES + 1];
    assert!(zset::add(&mut st, b"z", &[(1.0, &member)]).is_err());
}

#[test]
fn everything_written_is_there_after_the_pool_is_reopened() {
    let dir = pool_dir();
    {
        let mut st = open(&dir);
        hash::set(&mut st, b"user:1", &[(b"name", b"Ada")]).unwrap();
        list::push(&mut st, b"jobs", End::Tail, &[b"build", b"test"]).unwrap();
        set::add(&mut st, b"tags", &[b"pm", b"kv"]).unwrap();
        zset::add(&mut st, b"board", &[(7.0, b"ada")]).unwrap();
        string::set(&mut st, b"greeting", b"hello", None).unwrap();
    }
    let mut st = open(&dir);
    assert_eq!(
        hash::get(&mut st, b"user:1", b"name").unwrap(),
        Some(b"Ada".to_vec())
    );
    assert_eq!(
        list::range(&mut st, b"jobs", 0, -1).unwrap(),
        vec![b"build".to_vec(), b"test".to_vec()]
    );
    assert_eq!(set::len(&mut st, b"tags").unwrap(), 2);
    assert_eq!(zset::score(&mut st, b"board", b"ada").unwrap(), Some(7.0));
    assert_eq!(
        string::get(&mut st, b"greeting").unwrap(),
        Some(b"hello".to_vec())
    );
}
