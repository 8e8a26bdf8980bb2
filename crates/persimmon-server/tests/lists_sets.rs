//! Lists and sets (stored whole, issue 16) through an independent client
//! (the `redis` crate): every command and count form, the errors Redis
//! gives, WRONGTYPE in both directions, keys that go with their last item,
//! the time to live a write keeps, RESP3 set replies, transactions and a
//! restart.

mod common;

use std::collections::{BTreeSet, HashSet};

use common::{cmd, err, int, TestServer};
use redis::Value;

/// The strings of a bulk-string, array or set reply (nil: none).
fn strings(con: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    fn text(v: Value) -> String {
        match v {
            Value::BulkString(b) => String::from_utf8(b).unwrap(),
            v => panic!("not a bulk string: {v:?}"),
        }
    }
    match cmd(con, args).unwrap() {
        Value::Nil => vec![],
        Value::Array(items) | Value::Set(items) => items.into_iter().map(text).collect(),
        v => vec![text(v)],
    }
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const NOT_INT: &str = "ERR value is not an integer or out of range";
const NOT_POSITIVE: &str = "ERR value is out of range, must be positive";

fn set_of(items: Vec<String>) -> BTreeSet<String> {
    items.into_iter().collect()
}

#[test]
fn pushes_ranges_and_indexes() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["RPUSH", "l", "a", "b", "c"]), 3);
    assert_eq!(int(&mut c, &["LPUSH", "l", "x", "y"]), 5);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["y", "x", "a", "b", "c"]
    );
    assert_eq!(strings(&mut c, &["LRANGE", "l", "-2", "100"]), ["b", "c"]);
    assert_eq!(strings(&mut c, &["LRANGE", "l", "-100", "1"]), ["y", "x"]);
    assert!(strings(&mut c, &["LRANGE", "l", "3", "1"]).is_empty());
    assert!(strings(&mut c, &["LRANGE", "l", "5", "9"]).is_empty());
    assert!(strings(&mut c, &["LRANGE", "missing", "0", "-1"]).is_empty());
    assert_eq!(err(&mut c, &["LRANGE", "l", "a", "1"]), NOT_INT);
    assert_eq!(int(&mut c, &["LLEN", "l"]), 5);
    assert_eq!(int(&mut c, &["LLEN", "missing"]), 0);
    assert_eq!(strings(&mut c, &["LINDEX", "l", "0"]), ["y"]);
    assert_eq!(strings(&mut c, &["LINDEX", "l", "-1"]), ["c"]);
    assert_eq!(cmd(&mut c, &["LINDEX", "l", "5"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["LINDEX", "l", "-6"]).unwrap(), Value::Nil);
    assert_eq!(err(&mut c, &["LINDEX", "l", "x"]), NOT_INT);
    // As Redis, a missing key answers before the index is read.
    assert_eq!(
        cmd(&mut c, &["LINDEX", "missing", "x"]).unwrap(),
        Value::Nil
    );
    // PUSHX only onto an existing list.
    assert_eq!(int(&mut c, &["LPUSHX", "nolist", "a"]), 0);
    assert_eq!(int(&mut c, &["RPUSHX", "nolist", "a", "b"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "nolist"]), 0);
    assert_eq!(int(&mut c, &["LPUSHX", "l", "h1", "h2"]), 7);
    assert_eq!(int(&mut c, &["RPUSHX", "l", "t"]), 8);
    assert_eq!(strings(&mut c, &["LRANGE", "l", "0", "1"]), ["h2", "h1"]);
    assert_eq!(strings(&mut c, &["LINDEX", "l", "-1"]), ["t"]);
    // Empty and binary elements.
    assert_eq!(int(&mut c, &["RPUSH", "bin", "", "a\r\nb"]), 2);
    assert_eq!(
        strings(&mut c, &["LRANGE", "bin", "0", "-1"]),
        ["", "a\r\nb"]
    );
    assert_eq!(
        err(&mut c, &["LPUSH", "l"]),
        "ERR wrong number of arguments for 'lpush' command"
    );
    assert_eq!(
        cmd(&mut c, &["TYPE", "l"]).unwrap(),
        Value::SimpleString("list".into())
    );
}

#[test]
fn pops_with_and_without_count() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "a", "b", "c", "d", "e"]).unwrap();
    assert_eq!(strings(&mut c, &["LPOP", "l"]), ["a"]);
    assert_eq!(strings(&mut c, &["RPOP", "l"]), ["e"]);
    assert_eq!(strings(&mut c, &["LPOP", "l", "2"]), ["b", "c"]);
    assert_eq!(
        cmd(&mut c, &["RPOP", "l", "0"]).unwrap(),
        Value::Array(vec![])
    );
    assert_eq!(strings(&mut c, &["RPOP", "l", "9"]), ["d"]);
    assert_eq!(int(&mut c, &["EXISTS", "l"]), 0);
    // Missing key: nil, or a nil array with a count (the redis crate reads
    // both as Nil), even for a count of 0.
    assert_eq!(cmd(&mut c, &["LPOP", "l"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["RPOP", "l", "3"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["LPOP", "l", "0"]).unwrap(), Value::Nil);
    cmd(&mut c, &["RPUSH", "l", "a", "b", "c"]).unwrap();
    assert_eq!(strings(&mut c, &["RPOP", "l", "2"]), ["c", "b"]);
    // Count errors come before the key is looked at.
    assert_eq!(err(&mut c, &["LPOP", "l", "-1"]), NOT_POSITIVE);
    assert_eq!(err(&mut c, &["LPOP", "l", "x"]), NOT_POSITIVE);
    assert_eq!(err(&mut c, &["RPOP", "missing", "-5"]), NOT_POSITIVE);
    assert_eq!(
        err(&mut c, &["LPOP", "l", "1", "2"]),
        "ERR wrong number of arguments for 'lpop' command"
    );
    assert_eq!(strings(&mut c, &["LRANGE", "l", "0", "-1"]), ["a"]);
}

#[test]
fn lset_lrem_ltrim() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "a", "b", "a", "c", "a", "b"]).unwrap();
    assert_eq!(cmd(&mut c, &["LSET", "l", "1", "B"]).unwrap(), Value::Okay);
    assert_eq!(cmd(&mut c, &["LSET", "l", "-1", "Z"]).unwrap(), Value::Okay);
    assert_eq!(
        err(&mut c, &["LSET", "l", "6", "x"]),
        "ERR index out of range"
    );
    assert_eq!(
        err(&mut c, &["LSET", "l", "-7", "x"]),
        "ERR index out of range"
    );
    assert_eq!(err(&mut c, &["LSET", "l", "x", "x"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["LSET", "missing", "0", "x"]),
        "ERR no such key"
    );
    assert_eq!(
        err(&mut c, &["LSET", "missing", "x", "x"]),
        "ERR no such key"
    );
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["a", "B", "a", "c", "a", "Z"]
    );
    // LREM: from the tail when negative, all when 0.
    assert_eq!(int(&mut c, &["LREM", "l", "-2", "a"]), 2);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["a", "B", "c", "Z"]
    );
    cmd(&mut c, &["RPUSH", "l", "a", "a"]).unwrap();
    assert_eq!(int(&mut c, &["LREM", "l", "2", "a"]), 2);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["B", "c", "Z", "a"]
    );
    cmd(&mut c, &["LPUSH", "l", "a"]).unwrap();
    assert_eq!(int(&mut c, &["LREM", "l", "0", "a"]), 2);
    assert_eq!(int(&mut c, &["LREM", "l", "0", "nothere"]), 0);
    assert_eq!(int(&mut c, &["LREM", "missing", "0", "a"]), 0);
    assert_eq!(err(&mut c, &["LREM", "l", "x", "a"]), NOT_INT);
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["B", "c", "Z"]
    );
    // LTRIM.
    cmd(&mut c, &["RPUSH", "l", "d", "e"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["LTRIM", "l", "1", "-2"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        strings(&mut c, &["LRANGE", "l", "0", "-1"]),
        ["c", "Z", "d"]
    );
    assert_eq!(
        cmd(&mut c, &["LTRIM", "l", "-100", "100"]).unwrap(),
        Value::Okay
    );
    assert_eq!(int(&mut c, &["LLEN", "l"]), 3);
    assert_eq!(
        cmd(&mut c, &["LTRIM", "missing", "0", "1"]).unwrap(),
        Value::Okay
    );
    assert_eq!(err(&mut c, &["LTRIM", "l", "0", "x"]), NOT_INT);
    assert_eq!(cmd(&mut c, &["LTRIM", "l", "2", "1"]).unwrap(), Value::Okay);
    assert_eq!(int(&mut c, &["EXISTS", "l"]), 0);
}

#[test]
fn emptied_lists_and_sets_lose_their_keys() {
    let server = TestServer::start();
    let mut c = server.client();
    let gone = |c: &mut redis::Connection, key: &str| int(c, &["EXISTS", key]) == 0;
    cmd(&mut c, &["RPUSH", "l1", "a"]).unwrap();
    cmd(&mut c, &["RPOP", "l1"]).unwrap();
    assert!(gone(&mut c, "l1"));
    cmd(&mut c, &["RPUSH", "l2", "a", "a"]).unwrap();
    cmd(&mut c, &["LREM", "l2", "0", "a"]).unwrap();
    assert!(gone(&mut c, "l2"));
    cmd(&mut c, &["RPUSH", "l3", "a", "b"]).unwrap();
    cmd(&mut c, &["LTRIM", "l3", "5", "6"]).unwrap();
    assert!(gone(&mut c, "l3"));
    cmd(&mut c, &["SADD", "s1", "a", "b"]).unwrap();
    assert_eq!(int(&mut c, &["SREM", "s1", "a", "b", "c"]), 2);
    assert!(gone(&mut c, "s1"));
    cmd(&mut c, &["SADD", "s2", "a"]).unwrap();
    assert_eq!(strings(&mut c, &["SPOP", "s2"]), ["a"]);
    assert!(gone(&mut c, "s2"));
    cmd(&mut c, &["SADD", "s3", "a", "b", "c"]).unwrap();
    assert_eq!(
        set_of(strings(&mut c, &["SPOP", "s3", "10"])),
        set_of(vec!["a".into(), "b".into(), "c".into()])
    );
    assert!(gone(&mut c, "s3"));
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn set_membership() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["SADD", "s", "a", "b", "a", "c"]), 3);
    assert_eq!(int(&mut c, &["SADD", "s", "a", "d"]), 1);
    assert_eq!(int(&mut c, &["SADD", "s", "a"]), 0);
    assert_eq!(int(&mut c, &["SCARD", "s"]), 4);
    assert_eq!(int(&mut c, &["SCARD", "missing"]), 0);
    assert_eq!(strings(&mut c, &["SMEMBERS", "s"]), ["a", "b", "c", "d"]);
    assert!(strings(&mut c, &["SMEMBERS", "missing"]).is_empty());
    assert_eq!(int(&mut c, &["SISMEMBER", "s", "c"]), 1);
    assert_eq!(int(&mut c, &["SISMEMBER", "s", "z"]), 0);
    assert_eq!(int(&mut c, &["SISMEMBER", "missing", "a"]), 0);
    assert_eq!(
        cmd(&mut c, &["SMISMEMBER", "s", "a", "z", "d"]).unwrap(),
        Value::Array(vec![Value::Int(1), Value::Int(0), Value::Int(1)])
    );
    assert_eq!(
        cmd(&mut c, &["SMISMEMBER", "missing", "a", "b"]).unwrap(),
        Value::Array(vec![Value::Int(0), Value::Int(0)])
    );
    assert_eq!(int(&mut c, &["SREM", "s", "b", "z"]), 1);
    assert_eq!(int(&mut c, &["SREM", "missing", "a"]), 0);
    assert_eq!(
        set_of(strings(&mut c, &["SMEMBERS", "s"])),
        set_of(vec!["a".into(), "c".into(), "d".into()])
    );
    // Past the size where the builder indexes its members.
    let many: Vec<String> = (0..200).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", "big"];
    args.extend(many.iter().map(String::as_str));
    assert_eq!(int(&mut c, &args), 200);
    assert_eq!(int(&mut c, &args), 0);
    args[0] = "SREM";
    args.truncate(102);
    assert_eq!(int(&mut c, &args), 100);
    assert_eq!(int(&mut c, &["SCARD", "big"]), 100);
    assert_eq!(int(&mut c, &["SISMEMBER", "big", "m150"]), 1);
    assert_eq!(int(&mut c, &["SISMEMBER", "big", "m50"]), 0);
    assert_eq!(
        set_of(strings(&mut c, &["SMEMBERS", "big"])),
        set_of(many[100..].to_vec())
    );
    assert_eq!(
        cmd(&mut c, &["TYPE", "s"]).unwrap(),
        Value::SimpleString("set".into())
    );
}

#[test]
fn spop_and_srandmember() {
    let server = TestServer::start();
    let mut c = server.client();
    let all: Vec<String> = (0..20).map(|i| format!("m{i}")).collect();
    let mut args = vec!["SADD", "s"];
    args.extend(all.iter().map(String::as_str));
    cmd(&mut c, &args).unwrap();
    let all = set_of(all);
    // SRANDMEMBER: distinct members for a positive count, exactly -count
    // members (repeats allowed) for a negative one.
    let one = strings(&mut c, &["SRANDMEMBER", "s"]);
    assert!(one.len() == 1 && all.contains(&one[0]));
    let five = strings(&mut c, &["SRANDMEMBER", "s", "5"]);
    assert_eq!(five.len(), 5);
    assert_eq!(five.iter().collect::<HashSet<_>>().len(), 5);
    assert!(five.iter().all(|m| all.contains(m)));
    assert_eq!(set_of(strings(&mut c, &["SRANDMEMBER", "s", "100"])), all);
    let repeated = strings(&mut c, &["SRANDMEMBER", "s", "-50"]);
    assert_eq!(repeated.len(), 50);
    assert!(repeated.iter().all(|m| all.contains(m)));
    // Over many draws every member shows up (random, not the first ones).
    let mut seen = BTreeSet::new();
    for _ in 0..50 {
        seen.extend(strings(&mut c, &["SRANDMEMBER", "s", "-20"]));
    }
    assert_eq!(seen, all);
    assert!(strings(&mut c, &["SRANDMEMBER", "s", "0"]).is_empty());
    assert!(strings(&mut c, &["SRANDMEMBER", "missing", "3"]).is_empty());
    assert_eq!(
        cmd(&mut c, &["SRANDMEMBER", "missing"]).unwrap(),
        Value::Nil
    );
    assert_eq!(int(&mut c, &["SCARD", "s"]), 20);
    assert_eq!(err(&mut c, &["SRANDMEMBER", "s", "x"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["SRANDMEMBER", "s", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and \
         9223372036854775807"
    );
    assert_eq!(
        err(&mut c, &["SRANDMEMBER", "s", "1", "2"]),
        "ERR syntax error"
    );
    // SPOP removes what it returns.
    let popped = strings(&mut c, &["SPOP", "s"]);
    assert!(all.contains(&popped[0]));
    assert_eq!(int(&mut c, &["SISMEMBER", "s", &popped[0]]), 0);
    let three = strings(&mut c, &["SPOP", "s", "3"]);
    assert_eq!(three.iter().collect::<HashSet<_>>().len(), 3);
    for m in &three {
        assert_eq!(int(&mut c, &["SISMEMBER", "s", m]), 0);
    }
    assert_eq!(int(&mut c, &["SCARD", "s"]), 16);
    assert!(strings(&mut c, &["SPOP", "s", "0"]).is_empty());
    assert_eq!(int(&mut c, &["SCARD", "s"]), 16);
    assert_eq!(err(&mut c, &["SPOP", "s", "-1"]), NOT_POSITIVE);
    assert_eq!(err(&mut c, &["SPOP", "s", "x"]), NOT_POSITIVE);
    assert_eq!(err(&mut c, &["SPOP", "s", "1", "2"]), "ERR syntax error");
    assert_eq!(cmd(&mut c, &["SPOP", "missing"]).unwrap(), Value::Nil);
    assert!(strings(&mut c, &["SPOP", "missing", "2"]).is_empty());
    let rest = set_of(strings(&mut c, &["SPOP", "s", "16"]));
    assert_eq!(rest.len(), 16);
    assert!(rest.is_subset(&all));
    assert_eq!(int(&mut c, &["EXISTS", "s"]), 0);
}

#[test]
fn wrong_types_both_ways() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "str", "v"]).unwrap();
    cmd(&mut c, &["HSET", "hash", "f", "v"]).unwrap();
    cmd(&mut c, &["ZADD", "zset", "1", "m"]).unwrap();
    cmd(&mut c, &["RPUSH", "list", "a"]).unwrap();
    cmd(&mut c, &["SADD", "set", "a"]).unwrap();
    for key in ["str", "hash", "zset", "set"] {
        for args in [
            vec!["LPUSH", key, "x"],
            vec!["RPUSHX", key, "x"],
            vec!["LPOP", key],
            vec!["RPOP", key, "2"],
            vec!["LLEN", key],
            vec!["LRANGE", key, "0", "-1"],
            vec!["LINDEX", key, "0"],
            vec!["LSET", key, "0", "x"],
            vec!["LREM", key, "0", "x"],
            vec!["LTRIM", key, "0", "1"],
        ] {
            assert_eq!(err(&mut c, &args), WRONGTYPE, "{args:?}");
        }
    }
    for key in ["str", "hash", "zset", "list"] {
        for args in [
            vec!["SADD", key, "x"],
            vec!["SREM", key, "x"],
            vec!["SMEMBERS", key],
            vec!["SISMEMBER", key, "x"],
            vec!["SMISMEMBER", key, "x"],
            vec!["SCARD", key],
            vec!["SPOP", key],
            vec!["SPOP", key, "2"],
            vec!["SRANDMEMBER", key],
            vec!["SRANDMEMBER", key, "-2"],
        ] {
            assert_eq!(err(&mut c, &args), WRONGTYPE, "{args:?}");
        }
    }
    for key in ["list", "set"] {
        for args in [
            vec!["GET", key],
            vec!["SET", key, "v", "GET"],
            vec!["GETSET", key, "v"],
            vec!["GETDEL", key],
            vec!["INCR", key],
            vec!["APPEND", key, "x"],
            vec!["STRLEN", key],
            vec!["GETRANGE", key, "0", "1"],
            vec!["SETRANGE", key, "0", "x"],
            vec!["HSET", key, "f", "v"],
            vec!["HGET", key, "f"],
            vec!["HLEN", key],
            vec!["ZADD", key, "1", "m"],
            vec!["ZCARD", key],
        ] {
            assert_eq!(err(&mut c, &args), WRONGTYPE, "{args:?}");
        }
    }
    // MGET answers nil for a key of another type; SET replaces it.
    assert_eq!(
        cmd(&mut c, &["MGET", "list", "set", "str"]).unwrap(),
        Value::Array(vec![
            Value::Nil,
            Value::Nil,
            Value::BulkString(b"v".to_vec())
        ])
    );
    assert_eq!(strings(&mut c, &["LRANGE", "list", "0", "-1"]), ["a"]);
    assert_eq!(strings(&mut c, &["SMEMBERS", "set"]), ["a"]);
    cmd(&mut c, &["SET", "list", "now a string"]).unwrap();
    assert_eq!(strings(&mut c, &["GET", "list"]), ["now a string"]);
    // SCAN's TYPE filter knows the new types.
    let scan = cmd(&mut c, &["SCAN", "0", "TYPE", "set", "COUNT", "100"]).unwrap();
    assert_eq!(
        scan,
        Value::Array(vec![
            Value::BulkString(b"0".to_vec()),
            Value::Array(vec![Value::BulkString(b"set".to_vec())])
        ])
    );
}

#[test]
fn writes_keep_the_time_to_live() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "a", "b"]).unwrap();
    cmd(&mut c, &["SADD", "s", "a", "b"]).unwrap();
    for key in ["l", "s"] {
        assert_eq!(int(&mut c, &["EXPIRE", key, "100"]), 1);
    }
    for args in [
        vec!["RPUSH", "l", "c"],
        vec!["LPUSHX", "l", "z"],
        vec!["LPOP", "l"],
        vec!["LSET", "l", "0", "x"],
        vec!["LREM", "l", "0", "c"],
        vec!["LTRIM", "l", "0", "5"],
        vec!["SADD", "s", "c"],
        vec!["SREM", "s", "c"],
        vec!["SPOP", "s"],
    ] {
        cmd(&mut c, &args).unwrap();
    }
    for key in ["l", "s"] {
        let ttl = int(&mut c, &["TTL", key]);
        assert!((99..=100).contains(&ttl), "{key}: {ttl}");
    }
    // A list that expires is gone for list commands too.
    assert_eq!(int(&mut c, &["PEXPIRE", "l", "1"]), 1);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(int(&mut c, &["LLEN", "l"]), 0);
    assert_eq!(int(&mut c, &["RPUSH", "l", "new"]), 1);
    assert_eq!(int(&mut c, &["TTL", "l"]), -1);
}

#[test]
fn resp3_replies_sets_as_sets() {
    let server = TestServer::start();
    let url = format!("redis://{}/?protocol=resp3", server.addr);
    let mut c = redis::Client::open(url).unwrap().get_connection().unwrap();
    cmd(&mut c, &["SADD", "s", "a"]).unwrap();
    let a = Value::BulkString(b"a".to_vec());
    assert_eq!(
        cmd(&mut c, &["SMEMBERS", "s"]).unwrap(),
        Value::Set(vec![a.clone()])
    );
    assert_eq!(
        cmd(&mut c, &["SMEMBERS", "missing"]).unwrap(),
        Value::Set(vec![])
    );
    assert_eq!(
        cmd(&mut c, &["SPOP", "missing", "2"]).unwrap(),
        Value::Set(vec![])
    );
    assert_eq!(
        cmd(&mut c, &["SRANDMEMBER", "s", "2"]).unwrap(),
        Value::Array(vec![a.clone()])
    );
    assert_eq!(
        cmd(&mut c, &["SPOP", "s", "2"]).unwrap(),
        Value::Set(vec![a])
    );
    assert_eq!(cmd(&mut c, &["LPOP", "missing", "2"]).unwrap(), Value::Nil);
}

#[test]
fn transactions_and_restart() {
    let mut server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SADD", "s", "a"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    for args in [
        vec!["RPUSH", "l", "a"],
        vec!["RPUSH", "l", "b"],
        vec!["LRANGE", "l", "0", "-1"],
        vec!["SPOP", "s"],
        vec!["EXISTS", "s"],
    ] {
        assert_eq!(
            cmd(&mut c, &args).unwrap(),
            Value::SimpleString("QUEUED".into())
        );
    }
    let b = |s: &str| Value::BulkString(s.as_bytes().to_vec());
    assert_eq!(
        cmd(&mut c, &["EXEC"]).unwrap(),
        Value::Array(vec![
            Value::Int(1),
            Value::Int(2),
            Value::Array(vec![b("a"), b("b")]),
            b("a"),
            Value::Int(0),
        ])
    );
    cmd(&mut c, &["SADD", "s", "x", "y"]).unwrap();
    drop(c);
    server.stop();
    let mut c = server.restart();
    assert_eq!(strings(&mut c, &["LRANGE", "l", "0", "-1"]), ["a", "b"]);
    assert_eq!(strings(&mut c, &["SMEMBERS", "s"]), ["x", "y"]);
}
