//! SORT and SORT_RO through an independent client (the `redis` crate):
//! numeric and ALPHA order, DESC, LIMIT, BY patterns (keys and hash
//! fields, nosort), GET patterns, STORE (overwrite, delete on empty, the
//! time to live it drops), Redis's errors, WRONGTYPE, WATCH, the selected
//! database, and COMMAND GETKEYS. Expected replies were checked against
//! redis-server 7.0.15. A stored list is read back by `SORT key BY nosort`
//! (its order, whatever encoding the list commands read).

mod common;

use common::{cmd, err, int, TestServer};
use redis::Value;

/// The rows of an array reply (`None`: a nil row).
fn rows(con: &mut redis::Connection, args: &[&str]) -> Vec<Option<String>> {
    match cmd(con, args).unwrap() {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::BulkString(b) => Some(String::from_utf8(b).unwrap()),
                Value::Nil => None,
                v => panic!("{args:?}: not a bulk string: {v:?}"),
            })
            .collect(),
        v => panic!("{args:?} gave {v:?}"),
    }
}

/// The rows of an array reply that has no nil rows.
fn strings(con: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    rows(con, args)
        .into_iter()
        .map(|r| r.unwrap_or_else(|| panic!("{args:?}: a nil row")))
        .collect()
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_DOUBLE: &str = "ERR One or more scores can't be converted into double";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const SYNTAX: &str = "ERR syntax error";

#[test]
fn numeric_alpha_desc_and_limit() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "3", "1", "2", "10", "-5", "1.5"]).unwrap();
    assert_eq!(
        strings(&mut c, &["SORT", "l"]),
        ["-5", "1", "1.5", "2", "3", "10"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "DESC"]),
        ["10", "3", "2", "1.5", "1", "-5"]
    );
    // The last of ASC and DESC wins.
    assert_eq!(
        strings(
            &mut c,
            &["sort", "l", "asc", "desc", "asc", "limit", "0", "2"]
        ),
        ["-5", "1"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "ALPHA"]),
        ["-5", "1", "1.5", "10", "2", "3"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "ALPHA", "DESC"]),
        ["3", "2", "10", "1.5", "1", "-5"]
    );
    // LIMIT clamps as Redis does.
    assert_eq!(
        strings(&mut c, &["SORT", "l", "LIMIT", "1", "2"]),
        ["1", "1.5"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "LIMIT", "-3", "2"]),
        ["-5", "1"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "LIMIT", "4", "-1"]),
        ["3", "10"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "LIMIT", "5", "100", "DESC"]),
        ["-5"]
    );
    assert!(strings(&mut c, &["SORT", "l", "LIMIT", "6", "1"]).is_empty());
    assert!(strings(&mut c, &["SORT", "l", "LIMIT", "0", "0"]).is_empty());
    // Sets and sorted sets (a sorted set by its members, not its scores).
    cmd(&mut c, &["SADD", "s", "30", "4", "200"]).unwrap();
    assert_eq!(strings(&mut c, &["SORT", "s"]), ["4", "30", "200"]);
    assert_eq!(strings(&mut c, &["SORT", "s", "ALPHA"]), ["200", "30", "4"]);
    cmd(&mut c, &["ZADD", "z", "3", "a", "1", "b", "2", "c"]).unwrap();
    assert_eq!(strings(&mut c, &["SORT", "z", "ALPHA"]), ["a", "b", "c"]);
    assert_eq!(err(&mut c, &["SORT", "z"]), NOT_DOUBLE);
    // Weights parse as C's strtod: blanks before, hex, inf; an empty
    // element is 0; equal scores fall back to the elements' bytes.
    cmd(
        &mut c,
        &[
            "RPUSH", "w", " 5", "0x10", "-inf", "", "1e2", "+1", "1.0", "1",
        ],
    )
    .unwrap();
    assert_eq!(
        strings(&mut c, &["SORT", "w"]),
        ["-inf", "", "+1", "1", "1.0", " 5", "0x10", "1e2"]
    );
    for bad in ["5 ", "1e400", "1e-310", "nan", "abc", " "] {
        cmd(&mut c, &["DEL", "bad"]).unwrap();
        cmd(&mut c, &["RPUSH", "bad", "1", bad]).unwrap();
        assert_eq!(err(&mut c, &["SORT", "bad"]), NOT_DOUBLE, "{bad:?}");
    }
    // A missing key sorts as an empty list.
    assert!(strings(&mut c, &["SORT", "missing", "ALPHA", "GET", "#"]).is_empty());
    assert!(strings(&mut c, &["SORT_RO", "missing"]).is_empty());
    assert_eq!(
        strings(&mut c, &["SORT_RO", "l", "DESC", "LIMIT", "0", "3"]),
        ["10", "3", "2"]
    );
}

#[test]
fn by_patterns_keys_hash_fields_and_nosort() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "3", "1", "2"]).unwrap();
    cmd(&mut c, &["MSET", "w_1", "30", "w_2", "10", "w_3", "20"]).unwrap();
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "w_*"]),
        ["2", "3", "1"]
    );
    assert_eq!(
        strings(
            &mut c,
            &["SORT", "l", "BY", "w_*", "DESC", "LIMIT", "0", "2"]
        ),
        ["1", "3"]
    );
    cmd(&mut c, &["HSET", "h_1", "f", "b"]).unwrap();
    cmd(&mut c, &["HSET", "h_2", "f", "c"]).unwrap();
    cmd(&mut c, &["HSET", "h_3", "f", "a", "n", "-1"]).unwrap();
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "h_*->f", "ALPHA"]),
        ["3", "1", "2"]
    );
    // A missing weight is 0 (numeric) or before every value (ALPHA); ties
    // fall back to the elements (numeric) or keep their order (ALPHA).
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "h_*->n"]),
        ["3", "1", "2"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "h_*->n", "ALPHA"]),
        ["1", "2", "3"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "nokey_*", "DESC"]),
        ["3", "2", "1"]
    );
    // A weight that is no number fails the numeric sort.
    cmd(&mut c, &["SET", "w_2", "ten"]).unwrap();
    assert_eq!(err(&mut c, &["SORT", "l", "BY", "w_*"]), NOT_DOUBLE);
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "w_*", "ALPHA"]),
        ["3", "1", "2"]
    );
    // BY without '*': the source's own order (DESC reverses a list's and a
    // sorted set's), LIMIT over it.
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "nosort"]),
        ["3", "1", "2"]
    );
    assert_eq!(
        strings(
            &mut c,
            &["SORT", "l", "BY", "nosort", "DESC", "LIMIT", "1", "5"]
        ),
        ["1", "3"]
    );
    // Any BY without '*' wins over one with it, whatever the order.
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "w_*", "BY", "nosort"]),
        ["3", "1", "2"]
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "nosort", "BY", "w_*"]),
        ["3", "1", "2"]
    );
    cmd(
        &mut c,
        &["ZADD", "z", "3", "a", "1", "b", "2", "c", "1", "d"],
    )
    .unwrap();
    assert_eq!(
        strings(&mut c, &["SORT", "z", "BY", "nosort"]),
        ["b", "d", "c", "a"]
    );
    assert_eq!(
        strings(
            &mut c,
            &["SORT", "z", "BY", "nosort", "DESC", "LIMIT", "1", "2"]
        ),
        ["c", "d"]
    );
}

#[test]
fn get_patterns() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "2", "1", "3"]).unwrap();
    cmd(&mut c, &["MSET", "name_1", "one", "name_3", "three"]).unwrap();
    cmd(&mut c, &["HSET", "obj_2", "f", "two-f"]).unwrap();
    cmd(&mut c, &["HSET", "name_2", "f", "a hash"]).unwrap();
    let got = rows(
        &mut c,
        &["SORT", "l", "GET", "#", "GET", "name_*", "GET", "obj_*->f"],
    );
    let want: Vec<Option<String>> = [
        Some("1"),
        Some("one"),
        None,
        Some("2"),
        None, // name_2 is a hash
        Some("two-f"),
        Some("3"),
        Some("three"),
        None,
    ]
    .iter()
    .map(|v| v.map(str::to_string))
    .collect();
    assert_eq!(got, want);
    // A pattern without '*' gives nil; one ending in "->" names a key.
    cmd(&mut c, &["SET", "x:1->", "arrow"]).unwrap();
    assert_eq!(
        rows(
            &mut c,
            &["SORT", "l", "LIMIT", "0", "1", "GET", "const", "GET", "x:*->"]
        ),
        [None, Some("arrow".to_string())]
    );
    // GET with BY nosort, DESC.
    assert_eq!(
        rows(
            &mut c,
            &["SORT_RO", "l", "BY", "nosort", "DESC", "GET", "name_*"]
        ),
        [Some("three".to_string()), Some("one".to_string()), None]
    );
}

#[test]
fn store_writes_a_list_or_deletes() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "3", "1", "2"]).unwrap();
    assert_eq!(int(&mut c, &["SORT", "l", "STORE", "dst"]), 3);
    assert_eq!(
        strings(&mut c, &["SORT", "dst", "BY", "nosort"]),
        ["1", "2", "3"]
    );
    // Overwrites a value of any type and drops its time to live.
    cmd(&mut c, &["SET", "str", "x", "EX", "100"]).unwrap();
    cmd(&mut c, &["SET", "w_1", "one"]).unwrap();
    assert_eq!(
        int(
            &mut c,
            &["SORT", "l", "BY", "nosort", "GET", "w_*", "GET", "#", "STORE", "str"]
        ),
        6
    );
    assert_eq!(
        strings(&mut c, &["SORT", "str", "BY", "nosort"]),
        ["", "3", "one", "1", "", "2"]
    );
    assert_eq!(int(&mut c, &["TTL", "str"]), -1);
    // An empty result deletes the destination and replies 0.
    assert_eq!(int(&mut c, &["SORT", "missing", "STORE", "str"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "str"]), 0);
    assert_eq!(
        int(&mut c, &["SORT", "l", "LIMIT", "0", "0", "STORE", "dst"]),
        0
    );
    assert_eq!(int(&mut c, &["EXISTS", "dst"]), 0);
    assert_eq!(int(&mut c, &["SORT", "missing", "STORE", "none"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "none"]), 0);
    // The last STORE wins; the source can be its own destination.
    assert_eq!(int(&mut c, &["SORT", "l", "STORE", "a", "STORE", "b"]), 3);
    assert_eq!(int(&mut c, &["EXISTS", "a", "b"]), 1);
    assert_eq!(int(&mut c, &["SORT", "l", "DESC", "STORE", "l"]), 3);
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "nosort"]),
        ["3", "2", "1"]
    );
    // A set under BY nosort is sorted (ALPHA) when stored.
    cmd(&mut c, &["SADD", "s", "b", "c", "a"]).unwrap();
    assert_eq!(
        int(&mut c, &["SORT", "s", "BY", "nosort", "DESC", "STORE", "d"]),
        3
    );
    assert_eq!(
        strings(&mut c, &["SORT", "d", "BY", "nosort"]),
        ["c", "b", "a"]
    );
    // A failed sort writes nothing.
    cmd(&mut c, &["RPUSH", "bad", "1", "x"]).unwrap();
    assert_eq!(err(&mut c, &["SORT", "bad", "STORE", "d"]), NOT_DOUBLE);
    assert_eq!(
        strings(&mut c, &["SORT", "d", "BY", "nosort"]),
        ["c", "b", "a"]
    );
}

#[test]
fn errors_and_wrongtype() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "str", "v"]).unwrap();
    cmd(&mut c, &["HSET", "h", "a", "b"]).unwrap();
    cmd(&mut c, &["RPUSH", "l", "1"]).unwrap();
    assert_eq!(err(&mut c, &["SORT", "str"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["SORT_RO", "h", "ALPHA"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["SORT", "h", "STORE", "dst"]), WRONGTYPE);
    assert_eq!(int(&mut c, &["EXISTS", "dst"]), 0);
    // Options are checked before the key's type.
    assert_eq!(err(&mut c, &["SORT", "str", "LIMIT", "x", "1"]), NOT_INT);
    assert_eq!(err(&mut c, &["SORT", "str", "foo"]), SYNTAX);
    assert_eq!(err(&mut c, &["SORT", "l", "LIMIT", "1", "x"]), NOT_INT);
    for incomplete in ["LIMIT", "STORE", "BY", "GET"] {
        assert_eq!(err(&mut c, &["SORT", "l", incomplete]), SYNTAX);
    }
    assert_eq!(err(&mut c, &["SORT", "l", "LIMIT", "1"]), SYNTAX);
    assert_eq!(err(&mut c, &["SORT_RO", "l", "STORE", "dst"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["SORT"]),
        "ERR wrong number of arguments for 'sort' command"
    );
    assert_eq!(
        err(&mut c, &["SORT_RO"]),
        "ERR wrong number of arguments for 'sort_ro' command"
    );
}

#[test]
fn watch_transactions_databases_and_getkeys() {
    let server = TestServer::start();
    let mut c = server.client();
    // An empty STORE deletes a watched key: the EXEC fails.
    cmd(&mut c, &["RPUSH", "foo", "bar"]).unwrap();
    cmd(&mut c, &["WATCH", "foo"]).unwrap();
    assert_eq!(int(&mut c, &["SORT", "emptylist", "STORE", "foo"]), 0);
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["PING"]).unwrap();
    assert_eq!(cmd(&mut c, &["EXEC"]).unwrap(), Value::Nil);
    // Inside MULTI, SORT sees the transaction's own writes.
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["RPUSH", "t", "2", "1"]).unwrap();
    cmd(&mut c, &["SET", "k_1", "one"]).unwrap();
    cmd(&mut c, &["SORT", "t", "GET", "k_*", "STORE", "out"]).unwrap();
    cmd(&mut c, &["SORT", "out", "BY", "nosort"]).unwrap();
    let replies = cmd(&mut c, &["EXEC"]).unwrap();
    let Value::Array(replies) = replies else {
        panic!("EXEC gave {replies:?}")
    };
    assert_eq!(replies[2], Value::Int(2));
    assert_eq!(
        replies[3],
        Value::Array(vec![
            Value::BulkString(b"one".to_vec()),
            Value::BulkString(b"".to_vec())
        ])
    );
    // Patterns resolve in the selected database.
    cmd(&mut c, &["SELECT", "1"]).unwrap();
    cmd(&mut c, &["RPUSH", "t", "1"]).unwrap();
    cmd(&mut c, &["SET", "k_1", "db1"]).unwrap();
    assert_eq!(strings(&mut c, &["SORT", "t", "GET", "k_*"]), ["db1"]);
    cmd(&mut c, &["SELECT", "0"]).unwrap();
    assert_eq!(
        rows(&mut c, &["SORT", "t", "GET", "k_*"]),
        [Some("one".to_string()), None]
    );
    // COMMAND GETKEYS finds the last STORE.
    assert_eq!(
        strings(
            &mut c,
            &["COMMAND", "GETKEYS", "SORT", "abc", "STORE", "def"]
        ),
        ["abc", "def"]
    );
    assert_eq!(
        strings(
            &mut c,
            &["COMMAND", "GETKEYS", "sort", "abc", "store", "x", "store", "y", "store", "def"]
        ),
        ["abc", "def"]
    );
    assert_eq!(
        strings(&mut c, &["COMMAND", "GETKEYS", "SORT_RO", "abc"]),
        ["abc"]
    );
}
