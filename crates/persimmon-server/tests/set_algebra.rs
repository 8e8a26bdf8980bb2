//! SMOVE, SINTER, SUNION, SDIFF, their STORE variants, SINTERCARD and SSCAN
//! (issue 17) through the `redis` crate: results, the destination a STORE
//! replaces whatever it held (time to live included) or deletes when the
//! result is empty, WRONGTYPE from any key, Redis 7.0.15's argument errors,
//! and the command table's key positions.

mod common;

use std::collections::BTreeSet;

use common::{cmd, err, int, TestServer};
use redis::Value;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn members(con: &mut redis::Connection, args: &[&str]) -> BTreeSet<String> {
    match cmd(con, args).unwrap() {
        Value::Array(items) | Value::Set(items) => items
            .into_iter()
            .map(|v| match v {
                Value::BulkString(b) => String::from_utf8(b).unwrap(),
                v => panic!("{v:?}"),
            })
            .collect(),
        v => panic!("{v:?}"),
    }
}

fn set(items: &[&str]) -> BTreeSet<String> {
    items.iter().map(|s| s.to_string()).collect()
}

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args).unwrap() {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        Value::SimpleString(s) => s,
        v => panic!("{v:?}"),
    }
}

fn fill(c: &mut redis::Connection) {
    cmd(c, &["SADD", "a", "1", "2", "3", "4"]).unwrap();
    cmd(c, &["SADD", "b", "3", "4", "5"]).unwrap();
    cmd(c, &["SADD", "c", "4", "6"]).unwrap();
    cmd(c, &["SET", "str", "x"]).unwrap();
    cmd(c, &["HSET", "hash", "f", "v"]).unwrap();
}

#[test]
fn inter_union_diff() {
    let server = TestServer::start();
    let mut c = server.client();
    fill(&mut c);
    assert_eq!(members(&mut c, &["SINTER", "a", "b"]), set(&["3", "4"]));
    assert_eq!(members(&mut c, &["SINTER", "a", "b", "c"]), set(&["4"]));
    assert_eq!(
        members(&mut c, &["SINTER", "a"]),
        set(&["1", "2", "3", "4"])
    );
    assert_eq!(members(&mut c, &["SINTER", "a", "missing"]), set(&[]));
    assert_eq!(
        members(&mut c, &["SUNION", "a", "c", "missing"]),
        set(&["1", "2", "3", "4", "6"])
    );
    assert_eq!(
        members(&mut c, &["SDIFF", "a", "b", "missing"]),
        set(&["1", "2"])
    );
    assert_eq!(members(&mut c, &["SDIFF", "missing", "a"]), set(&[]));
    assert_eq!(members(&mut c, &["SDIFF", "a", "a"]), set(&[]));
    for op in ["SINTER", "SUNION", "SDIFF"] {
        // Every key is checked, even after a missing one.
        assert_eq!(err(&mut c, &[op, "missing", "a", "str"]), WRONGTYPE);
        assert_eq!(err(&mut c, &[op, "hash", "a"]), WRONGTYPE);
        assert_eq!(
            err(&mut c, &[op]),
            "ERR wrong number of arguments for '".to_string() + &op.to_lowercase() + "' command"
        );
    }
    // RESP3: a set.
    cmd(&mut c, &["HELLO", "3"]).unwrap();
    assert!(matches!(cmd(&mut c, &["SUNION", "a", "b"]).unwrap(), Value::Set(v) if v.len() == 5));
}

#[test]
fn stores_replace_any_destination() {
    let server = TestServer::start();
    let mut c = server.client();
    fill(&mut c);
    cmd(&mut c, &["SET", "dst", "old", "EX", "100"]).unwrap();
    assert_eq!(int(&mut c, &["SINTERSTORE", "dst", "a", "b"]), 2);
    assert_eq!(text(&mut c, &["TYPE", "dst"]), "set");
    assert_eq!(int(&mut c, &["TTL", "dst"]), -1);
    assert_eq!(members(&mut c, &["SMEMBERS", "dst"]), set(&["3", "4"]));
    // Over a hash and over a list.
    assert_eq!(int(&mut c, &["SUNIONSTORE", "hash", "b", "c"]), 4);
    assert_eq!(
        members(&mut c, &["SMEMBERS", "hash"]),
        set(&["3", "4", "5", "6"])
    );
    cmd(&mut c, &["RPUSH", "list", "x"]).unwrap();
    assert_eq!(int(&mut c, &["SDIFFSTORE", "list", "a", "b"]), 2);
    assert_eq!(members(&mut c, &["SMEMBERS", "list"]), set(&["1", "2"]));
    // A destination among the sources.
    assert_eq!(int(&mut c, &["SUNIONSTORE", "a", "a", "c"]), 5);
    assert_eq!(
        members(&mut c, &["SMEMBERS", "a"]),
        set(&["1", "2", "3", "4", "6"])
    );
    // An empty result deletes the destination, whatever it held.
    cmd(&mut c, &["SET", "gone", "x"]).unwrap();
    assert_eq!(int(&mut c, &["SINTERSTORE", "gone", "a", "missing"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "gone"]), 0);
    assert_eq!(int(&mut c, &["SDIFFSTORE", "dst", "c", "c"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "dst"]), 0);
    // A source of another type fails and leaves the destination alone.
    cmd(&mut c, &["SET", "keep", "x"]).unwrap();
    assert_eq!(err(&mut c, &["SUNIONSTORE", "keep", "a", "str"]), WRONGTYPE);
    assert_eq!(text(&mut c, &["GET", "keep"]), "x");
    // Big sets (several pages), stored over each other.
    let many: Vec<String> = (0..3000).map(|i| format!("member-{i:05}")).collect();
    let mut sadd = vec!["SADD", "big"];
    sadd.extend(many.iter().map(String::as_str));
    assert_eq!(int(&mut c, &sadd), 3000);
    cmd(
        &mut c,
        &["SADD", "few", "member-00007", "member-02999", "nope"],
    )
    .unwrap();
    assert_eq!(int(&mut c, &["SUNIONSTORE", "big2", "big", "few"]), 3001);
    assert_eq!(int(&mut c, &["SINTERSTORE", "big2", "big2", "few"]), 3);
    assert_eq!(int(&mut c, &["SDIFFSTORE", "d", "big", "few"]), 2998);
    assert_eq!(int(&mut c, &["SCARD", "d"]), 2998);
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "big", "d"]), 2998);
}

#[test]
fn smove_between_sets() {
    let server = TestServer::start();
    let mut c = server.client();
    fill(&mut c);
    assert_eq!(int(&mut c, &["SMOVE", "a", "new", "1"]), 1);
    assert_eq!(members(&mut c, &["SMEMBERS", "new"]), set(&["1"]));
    assert_eq!(int(&mut c, &["SISMEMBER", "a", "1"]), 0);
    assert_eq!(int(&mut c, &["SMOVE", "a", "b", "1"]), 0);
    assert_eq!(int(&mut c, &["SMOVE", "a", "b", "3"]), 1);
    assert_eq!(int(&mut c, &["SCARD", "b"]), 3);
    // The same key: whether the member is there.
    assert_eq!(int(&mut c, &["SMOVE", "a", "a", "2"]), 1);
    assert_eq!(int(&mut c, &["SMOVE", "a", "a", "9"]), 0);
    // The last member takes its key along.
    assert_eq!(int(&mut c, &["SMOVE", "new", "a", "1"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "new"]), 0);
    // Redis's order: a missing source answers 0 before the destination's type.
    assert_eq!(int(&mut c, &["SMOVE", "missing", "str", "1"]), 0);
    assert_eq!(err(&mut c, &["SMOVE", "a", "str", "1"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["SMOVE", "a", "str", "nope"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["SMOVE", "str", "a", "1"]), WRONGTYPE);
    assert_eq!(members(&mut c, &["SMEMBERS", "a"]), set(&["1", "2", "4"]));
}

#[test]
fn sintercard_limits_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    fill(&mut c);
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "a", "b"]), 2);
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "a", "b", "LIMIT", "1"]), 1);
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "a", "b", "limit", "0"]), 2);
    assert_eq!(int(&mut c, &["SINTERCARD", "1", "a"]), 4);
    assert_eq!(int(&mut c, &["SINTERCARD", "2", "a", "missing"]), 0);
    for bad in ["0", "-1", "x"] {
        assert_eq!(
            err(&mut c, &["SINTERCARD", bad, "a"]),
            "ERR numkeys should be greater than 0"
        );
    }
    assert_eq!(
        err(&mut c, &["SINTERCARD", "3", "a", "b"]),
        "ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(
        err(&mut c, &["SINTERCARD", "1", "a", "LIMIT", "-1"]),
        "ERR LIMIT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["SINTERCARD", "1", "a", "LIMIT", "x"]),
        "ERR LIMIT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["SINTERCARD", "1", "a", "LIMIT"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SINTERCARD", "1", "a", "b"]),
        "ERR syntax error"
    );
    assert_eq!(err(&mut c, &["SINTERCARD", "2", "a", "str"]), WRONGTYPE);
    // The table: movable keys, found by COMMAND GETKEYS.
    let keys = members(
        &mut c,
        &[
            "COMMAND",
            "GETKEYS",
            "SINTERCARD",
            "2",
            "a",
            "b",
            "LIMIT",
            "1",
        ],
    );
    assert_eq!(keys, set(&["a", "b"]));
    let keys = members(&mut c, &["COMMAND", "GETKEYS", "SDIFFSTORE", "d", "a", "b"]);
    assert_eq!(keys, set(&["d", "a", "b"]));
}

#[test]
fn sscan_honours_count_on_a_big_set() {
    let server = TestServer::start();
    let mut c = server.client();
    let many: Vec<String> = (0..2000).map(|i| format!("m{i}")).collect();
    let mut sadd = vec!["SADD", "s"];
    sadd.extend(many.iter().map(String::as_str));
    cmd(&mut c, &sadd).unwrap();
    let mut cursor = "0".to_string();
    let mut seen = Vec::new();
    let mut calls = 0;
    loop {
        let Value::Array(mut parts) =
            cmd(&mut c, &["SSCAN", "s", &cursor, "COUNT", "100"]).unwrap()
        else {
            panic!()
        };
        let Value::Array(items) = parts.pop().unwrap() else {
            panic!()
        };
        assert!(items.len() <= 100);
        seen.extend(items);
        let Value::BulkString(next) = &parts[0] else {
            panic!()
        };
        cursor = String::from_utf8(next.clone()).unwrap();
        calls += 1;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(calls, 20);
    assert_eq!(seen.len(), 2000);
    cmd(&mut c, &["SET", "str", "x"]).unwrap();
    assert_eq!(err(&mut c, &["SSCAN", "str", "0"]), WRONGTYPE);
    assert_eq!(
        err(&mut c, &["SSCAN", "s", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(err(&mut c, &["SSCAN", "s", "x"]), "ERR invalid cursor");
}

#[test]
fn smove_of_a_member_the_destination_has_leaves_the_destination_untouched() {
    let server = TestServer::start();
    let mut watcher = server.client();
    let mut other = server.client();
    assert_eq!(int(&mut other, &["SADD", "src", "a", "b"]), 2);
    assert_eq!(int(&mut other, &["SADD", "dst", "a"]), 1);
    cmd(&mut watcher, &["WATCH", "dst"]).unwrap();
    // As Redis: the member leaves the source; the destination, which has
    // it, is not written, so a transaction watching it still runs.
    assert_eq!(int(&mut other, &["SMOVE", "src", "dst", "a"]), 1);
    cmd(&mut watcher, &["MULTI"]).unwrap();
    cmd(&mut watcher, &["SCARD", "dst"]).unwrap();
    assert_eq!(
        cmd(&mut watcher, &["EXEC"]).unwrap(),
        Value::Array(vec![Value::Int(1)])
    );
    assert_eq!(members(&mut other, &["SMEMBERS", "src"]), set(&["b"]));
}
