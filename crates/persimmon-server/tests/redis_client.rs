//! The server through an independent client, the `redis` crate: every
//! command, RESP2 and RESP3, pipelining, many concurrent clients, the
//! errors Redis gives, authentication, and data surviving a restart.

mod common;

use std::collections::{BTreeSet, HashMap};

use common::{cmd, TestServer};
use redis::{Commands, Value};

/// The error text of a command that must fail.
fn err(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args) {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
    }
}

#[test]
fn strings_behave_like_redis() {
    let server = TestServer::start();
    let mut con = server.client();
    let _: () = con.set("k", "v").unwrap();
    assert_eq!(con.get::<_, String>("k").unwrap(), "v");
    assert_eq!(con.get::<_, Option<String>>("missing").unwrap(), None);
    // NX / XX / GET.
    assert_eq!(cmd(&mut con, &["SET", "k", "w", "NX"]).unwrap(), Value::Nil);
    assert_eq!(
        cmd(&mut con, &["SET", "new", "x", "XX"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        cmd(&mut con, &["SET", "k", "w", "XX"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        cmd(&mut con, &["SET", "k", "z", "GET"]).unwrap(),
        Value::BulkString(b"w".to_vec())
    );
    assert_eq!(
        cmd(&mut con, &["SET", "n1", "a", "NX", "GET"]).unwrap(),
        Value::Nil
    );
    assert_eq!(con.get::<_, String>("n1").unwrap(), "a");
    assert!(err(&mut con, &["SET", "k", "v", "NX", "XX"]).contains("syntax error"));
    assert!(err(&mut con, &["SET", "k", "v", "EX", "10", "PX", "5"]).contains("syntax error"));
    assert!(err(&mut con, &["SET", "k", "v", "BOGUS"]).contains("syntax error"));
    assert_eq!(
        cmd(&mut con, &["SET", "k", "v", "KEEPTTL"]).unwrap(),
        Value::Okay
    );
    // SETNX, GETSET, GETDEL.
    assert_eq!(cmd(&mut con, &["SETNX", "k", "x"]).unwrap(), Value::Int(0));
    assert_eq!(cmd(&mut con, &["SETNX", "sn", "x"]).unwrap(), Value::Int(1));
    assert_eq!(
        cmd(&mut con, &["GETSET", "sn", "y"]).unwrap(),
        Value::BulkString(b"x".to_vec())
    );
    assert_eq!(cmd(&mut con, &["GETSET", "gs", "1"]).unwrap(), Value::Nil);
    assert_eq!(
        cmd(&mut con, &["GETDEL", "sn"]).unwrap(),
        Value::BulkString(b"y".to_vec())
    );
    assert_eq!(cmd(&mut con, &["GETDEL", "sn"]).unwrap(), Value::Nil);
    // MSET, MGET, MSETNX.
    assert_eq!(
        cmd(&mut con, &["MSET", "a", "1", "b", "2"]).unwrap(),
        Value::Okay
    );
    let got: Vec<Option<String>> = con.mget(&["a", "b", "nope"]).unwrap();
    assert_eq!(got, vec![Some("1".into()), Some("2".into()), None]);
    assert_eq!(
        cmd(&mut con, &["MSETNX", "a", "9", "c", "3"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(con.get::<_, Option<String>>("c").unwrap(), None);
    assert_eq!(
        cmd(&mut con, &["MSETNX", "c", "3", "d", "4"]).unwrap(),
        Value::Int(1)
    );
    assert!(err(&mut con, &["MSET", "a", "1", "b"])
        .contains("wrong number of arguments for 'mset' command"));
    // Counters.
    assert_eq!(con.incr::<_, _, i64>("ctr", 1).unwrap(), 1);
    assert_eq!(cmd(&mut con, &["INCR", "ctr"]).unwrap(), Value::Int(2));
    assert_eq!(
        cmd(&mut con, &["INCRBY", "ctr", "40"]).unwrap(),
        Value::Int(42)
    );
    assert_eq!(cmd(&mut con, &["DECR", "ctr"]).unwrap(), Value::Int(41));
    assert_eq!(
        cmd(&mut con, &["DECRBY", "ctr", "-9"]).unwrap(),
        Value::Int(50)
    );
    assert!(err(&mut con, &["INCR", "k"]).contains("value is not an integer or out of range"));
    assert!(
        err(&mut con, &["INCRBY", "ctr", "x"]).contains("value is not an integer or out of range")
    );
    let _: () = con.set("max", i64::MAX.to_string()).unwrap();
    assert!(err(&mut con, &["INCR", "max"]).contains("increment or decrement would overflow"));
    assert!(err(&mut con, &["DECRBY", "ctr", "-9223372036854775808"]).contains("overflow"));
    let _: () = con.set("sp", " 1").unwrap();
    assert!(err(&mut con, &["INCR", "sp"]).contains("not an integer"));
    // APPEND, STRLEN, GETRANGE, SETRANGE.
    assert_eq!(
        cmd(&mut con, &["APPEND", "s", "Hello"]).unwrap(),
        Value::Int(5)
    );
    assert_eq!(
        cmd(&mut con, &["APPEND", "s", " World"]).unwrap(),
        Value::Int(11)
    );
    assert_eq!(cmd(&mut con, &["STRLEN", "s"]).unwrap(), Value::Int(11));
    assert_eq!(cmd(&mut con, &["STRLEN", "none"]).unwrap(), Value::Int(0));
    assert_eq!(
        cmd(&mut con, &["GETRANGE", "s", "-5", "-1"]).unwrap(),
        Value::BulkString(b"World".to_vec())
    );
    assert_eq!(
        cmd(&mut con, &["GETRANGE", "none", "0", "-1"]).unwrap(),
        Value::BulkString(vec![])
    );
    assert_eq!(
        cmd(&mut con, &["SETRANGE", "s", "6", "Redis"]).unwrap(),
        Value::Int(11)
    );
    assert_eq!(con.get::<_, String>("s").unwrap(), "Hello Redis");
    assert_eq!(
        cmd(&mut con, &["SETRANGE", "pad", "3", "x"]).unwrap(),
        Value::Int(4)
    );
    assert_eq!(con.get::<_, Vec<u8>>("pad").unwrap(), b"\0\0\0x");
    assert_eq!(
        cmd(&mut con, &["SETRANGE", "none2", "3", ""]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(cmd(&mut con, &["EXISTS", "none2"]).unwrap(), Value::Int(0));
    assert!(err(&mut con, &["SETRANGE", "s", "-1", "x"]).contains("offset is out of range"));
    // Binary-safe keys and values, and the empty string.
    let key = [0u8, 13, 10, 255];
    let value = [10u8, 13, 0, 1, 2];
    let _: () = con.set(&key[..], &value[..]).unwrap();
    assert_eq!(con.get::<_, Vec<u8>>(&key[..]).unwrap(), value);
    let _: () = con.set("empty", "").unwrap();
    assert_eq!(
        con.get::<_, Option<Vec<u8>>>("empty").unwrap(),
        Some(vec![])
    );
    assert_eq!(
        cmd(&mut con, &["TYPE", "empty"]).unwrap(),
        Value::SimpleString("string".into())
    );
}

#[test]
fn keys_commands_and_types() {
    let server = TestServer::start();
    let mut con = server.client();
    let _: () = con.set("a", "1").unwrap();
    let _: () = con.set("b", "2").unwrap();
    let _: () = con.hset("h", "f", "v").unwrap();
    assert_eq!(
        cmd(&mut con, &["EXISTS", "a", "b", "a", "zz"]).unwrap(),
        Value::Int(3)
    );
    assert_eq!(
        cmd(&mut con, &["TYPE", "a"]).unwrap(),
        Value::SimpleString("string".into())
    );
    assert_eq!(
        cmd(&mut con, &["TYPE", "h"]).unwrap(),
        Value::SimpleString("hash".into())
    );
    assert_eq!(
        cmd(&mut con, &["TYPE", "zz"]).unwrap(),
        Value::SimpleString("none".into())
    );
    assert_eq!(cmd(&mut con, &["TTL", "a"]).unwrap(), Value::Int(-1));
    assert_eq!(cmd(&mut con, &["PTTL", "zz"]).unwrap(), Value::Int(-2));
    assert_eq!(cmd(&mut con, &["DBSIZE"]).unwrap(), Value::Int(3));
    let mut keys: Vec<String> = con.keys("*").unwrap();
    keys.sort();
    assert_eq!(keys, vec!["a", "b", "h"]);
    let keys: Vec<String> = con.keys("[ab]").unwrap();
    assert_eq!(keys.len(), 2);
    assert_eq!(cmd(&mut con, &["DEL", "a", "zz"]).unwrap(), Value::Int(1));
    assert_eq!(cmd(&mut con, &["UNLINK", "b", "h"]).unwrap(), Value::Int(2));
    assert_eq!(cmd(&mut con, &["DBSIZE"]).unwrap(), Value::Int(0));
    for i in 0..100 {
        let _: () = con.set(format!("f{i}"), i).unwrap();
    }
    assert_eq!(cmd(&mut con, &["FLUSHDB"]).unwrap(), Value::Okay);
    assert_eq!(cmd(&mut con, &["DBSIZE"]).unwrap(), Value::Int(0));
    let _: () = con.set("x", "1").unwrap();
    assert_eq!(cmd(&mut con, &["FLUSHALL", "ASYNC"]).unwrap(), Value::Okay);
    assert_eq!(cmd(&mut con, &["EXISTS", "x"]).unwrap(), Value::Int(0));
}

#[test]
fn wrong_types_and_wrong_arity_get_redis_errors() {
    let server = TestServer::start();
    let mut con = server.client();
    let _: () = con.set("s", "v").unwrap();
    let _: () = con.hset("h", "f", "v").unwrap();
    let wrongtype = "WRONGTYPE: Operation against a key holding the wrong kind of value";
    for args in [
        &["GET", "h"][..],
        &["INCR", "h"],
        &["APPEND", "h", "x"],
        &["STRLEN", "h"],
        &["GETRANGE", "h", "0", "1"],
        &["GETSET", "h", "x"],
        &["GETDEL", "h"],
        &["SET", "h", "x", "GET"],
        &["HGET", "s", "f"],
        &["HSET", "s", "f", "v"],
        &["HGETALL", "s"],
        &["HDEL", "s", "f"],
        &["HLEN", "s"],
    ] {
        assert!(err(&mut con, args).contains(wrongtype), "{args:?}");
    }
    // The values are untouched, and MGET answers nil for a hash.
    assert_eq!(con.get::<_, String>("s").unwrap(), "v");
    let got: Vec<Option<String>> = con.mget(&["s", "h"]).unwrap();
    assert_eq!(got, vec![Some("v".into()), None]);
    // Plain SET replaces any type, as in Redis.
    let _: () = con.set("h", "now a string").unwrap();
    assert_eq!(con.get::<_, String>("h").unwrap(), "now a string");
    for (args, name) in [
        (&["GET"][..], "get"),
        (&["GET", "a", "b"], "get"),
        (&["HSET", "h", "f"], "hset"),
        (&["HSET", "h2", "f", "v", "g"], "hset"),
        (&["PING", "a", "b"], "ping"),
        (&["CLIENT", "SETNAME"], "client|setname"),
    ] {
        let e = err(&mut con, args);
        assert!(
            e.contains(&format!("wrong number of arguments for '{name}' command")),
            "{args:?}: {e}"
        );
    }
    let e = err(&mut con, &["FOO", "bar", "baz"]);
    assert!(
        e.contains("unknown command 'FOO', with args beginning with: 'bar' 'baz'"),
        "{e}"
    );
    assert!(
        err(&mut con, &["CLIENT", "NOPE"]).contains("unknown subcommand 'NOPE'. Try CLIENT HELP.")
    );
    assert!(err(&mut con, &["SELECT", "16"]).contains("DB index is out of range"));
    assert!(err(&mut con, &["SELECT", "-1"]).contains("DB index is out of range"));
    assert!(err(&mut con, &["SELECT", "x"]).contains("not an integer"));
    assert_eq!(cmd(&mut con, &["SELECT", "0"]).unwrap(), Value::Okay);
    assert!(err(&mut con, &["SCAN", "x"]).contains("invalid cursor"));
    assert!(err(&mut con, &["SCAN", "0", "COUNT", "0"]).contains("syntax error"));
}

#[test]
fn hashes_behave_like_redis() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(
        cmd(&mut con, &["HSET", "u", "name", "Ada", "born", "1815"]).unwrap(),
        Value::Int(2)
    );
    assert_eq!(
        cmd(&mut con, &["HSET", "u", "name", "Ada L", "died", "1852"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(con.hget::<_, _, String>("u", "name").unwrap(), "Ada L");
    assert_eq!(con.hget::<_, _, Option<String>>("u", "nope").unwrap(), None);
    assert_eq!(
        con.hget::<_, _, Option<String>>("nokey", "f").unwrap(),
        None
    );
    let got: Vec<Option<String>> = redis::cmd("HMGET")
        .arg("u")
        .arg("born")
        .arg("x")
        .arg("died")
        .query(&mut con)
        .unwrap();
    assert_eq!(got, vec![Some("1815".into()), None, Some("1852".into())]);
    let all: HashMap<String, String> = con.hgetall("u").unwrap();
    assert_eq!(all.len(), 3);
    assert_eq!(all["born"], "1815");
    let empty: HashMap<String, String> = con.hgetall("nokey").unwrap();
    assert!(empty.is_empty());
    assert_eq!(cmd(&mut con, &["HLEN", "u"]).unwrap(), Value::Int(3));
    assert_eq!(
        cmd(&mut con, &["HEXISTS", "u", "born"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &["HEXISTS", "u", "x"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        cmd(&mut con, &["HSTRLEN", "u", "name"]).unwrap(),
        Value::Int(5)
    );
    let mut fields: Vec<String> = con.hkeys("u").unwrap();
    fields.sort();
    assert_eq!(fields, vec!["born", "died", "name"]);
    let vals: Vec<String> = con.hvals("u").unwrap();
    assert_eq!(vals.len(), 3);
    assert_eq!(
        cmd(&mut con, &["HSETNX", "u", "born", "0"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        cmd(&mut con, &["HSETNX", "u", "n", "0"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &["HINCRBY", "u", "n", "5"]).unwrap(),
        Value::Int(5)
    );
    assert!(err(&mut con, &["HINCRBY", "u", "name", "1"]).contains("hash value is not an integer"));
    assert_eq!(
        cmd(&mut con, &["HMSET", "u", "a", "1", "b", "2"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        cmd(&mut con, &["HDEL", "u", "a", "b", "zz"]).unwrap(),
        Value::Int(2)
    );
    assert_eq!(
        cmd(&mut con, &["HDEL", "u", "name", "born", "died", "n"]).unwrap(),
        Value::Int(4)
    );
    // The last field gone, the key is gone.
    assert_eq!(cmd(&mut con, &["EXISTS", "u"]).unwrap(), Value::Int(0));
    assert_eq!(cmd(&mut con, &["HDEL", "u", "x"]).unwrap(), Value::Int(0));
    // A YCSB-style record: 10 fields of 100 bytes, read back whole.
    let fields: Vec<(String, String)> = (0..10)
        .map(|i| (format!("field{i}"), "x".repeat(100) + &i.to_string()))
        .collect();
    let _: () = con
        .hset_multiple("user6284781860667377211", &fields)
        .unwrap();
    let back: HashMap<String, String> = con.hgetall("user6284781860667377211").unwrap();
    assert_eq!(back.len(), 10);
    assert_eq!(back["field7"], fields[7].1);
    // Many fields: the builder's index path.
    for i in 0..300 {
        let _: () = con.hset("big", format!("f{i}"), i).unwrap();
    }
    assert_eq!(cmd(&mut con, &["HLEN", "big"]).unwrap(), Value::Int(300));
    assert_eq!(con.hget::<_, _, i64>("big", "f250").unwrap(), 250);
}

#[test]
fn scan_returns_every_key_once_with_match_count_and_type() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut all = BTreeSet::new();
    for i in 0..2000 {
        let k = format!("key:{i}");
        let _: () = con.set(&k, i).unwrap();
        all.insert(k);
    }
    for i in 0..50 {
        let _: () = con.hset(format!("hash:{i}"), "f", i).unwrap();
    }
    // Plain SCAN with a small COUNT, and a concurrent writer adding and
    // deleting other keys meanwhile: every key:* is seen exactly once.
    let mut writer = server.client();
    let mut seen = Vec::new();
    let mut cursor: u64 = 0;
    let mut calls = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("MATCH")
            .arg("key:*")
            .arg("COUNT")
            .arg(37)
            .query(&mut con)
            .unwrap();
        seen.extend(keys);
        let _: () = writer.set(format!("extra:{calls}"), 1).unwrap();
        let _: i64 = writer.del(format!("extra:{}", calls / 2)).unwrap();
        calls += 1;
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert!(calls > 10, "COUNT is honoured: {calls} calls");
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), seen.len(), "a key was returned twice");
    assert_eq!(unique, all);
    // TYPE filter.
    let mut hashes = BTreeSet::new();
    let mut cursor: u64 = 0;
    loop {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("TYPE")
            .arg("hash")
            .arg("COUNT")
            .arg(500)
            .query(&mut con)
            .unwrap();
        hashes.extend(keys);
        cursor = next;
        if cursor == 0 {
            break;
        }
    }
    assert_eq!(hashes.len(), 50);
    // The redis crate's own iterator (SCAN under the hood).
    let iterated: BTreeSet<String> = con.scan_match::<_, String>("key:1*").unwrap().collect();
    assert_eq!(
        iterated,
        all.iter()
            .filter(|k| k.starts_with("key:1"))
            .cloned()
            .collect()
    );
}

#[test]
fn a_scan_cursor_survives_a_server_restart() {
    let mut server = TestServer::start();
    let mut con = server.client();
    for i in 0..500 {
        let _: () = con.set(format!("k{i}"), i).unwrap();
    }
    let (cursor, first): (u64, Vec<String>) = redis::cmd("SCAN")
        .arg(0)
        .arg("COUNT")
        .arg(100)
        .query(&mut con)
        .unwrap();
    drop(con);
    // Restart on the same pool; the cursor's snapshot is gone.
    let pool = server.pool.clone();
    server.stop();
    let handle = persimmon_server::ServerHandle::start(persimmon_server::Config {
        pool,
        port: 0,
        ..Default::default()
    })
    .unwrap();
    let mut con = redis::Client::open(format!("redis://{}/", handle.addr))
        .unwrap()
        .get_connection()
        .unwrap();
    let mut seen: Vec<String> = first;
    let mut cursor = cursor;
    while cursor != 0 {
        let (next, keys): (u64, Vec<String>) = redis::cmd("SCAN")
            .arg(cursor)
            .arg("COUNT")
            .arg(100)
            .query(&mut con)
            .unwrap();
        seen.extend(keys);
        cursor = next;
    }
    let unique: BTreeSet<String> = seen.iter().cloned().collect();
    assert_eq!(unique.len(), 500);
    assert_eq!(seen.len(), 500);
    drop(con);
    handle.shutdown().unwrap();
}

#[test]
fn pipelines_and_many_concurrent_clients() {
    let server = TestServer::start();
    let mut con = server.client();
    // One pipeline of 2000 commands: replies in order.
    let mut pipe = redis::pipe();
    for i in 0..1000 {
        pipe.set(format!("p{i}"), i).ignore();
        pipe.get(format!("p{i}"));
    }
    let got: Vec<i64> = pipe.query(&mut con).unwrap();
    assert_eq!(got, (0..1000).collect::<Vec<i64>>());
    // 32 clients incrementing one counter and writing their own keys: INCR
    // is atomic, so no increment is lost.
    let clients = 32;
    let per_client = 300;
    std::thread::scope(|scope| {
        for c in 0..clients {
            let url = server.url();
            scope.spawn(move || {
                let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
                for i in 0..per_client {
                    let _: i64 = con.incr("shared", 1).unwrap();
                    let _: i64 = con.hincr("hcount", "n", 1).unwrap();
                    let _: () = con.set(format!("c{c}:{i}"), i).unwrap();
                }
            });
        }
    });
    assert_eq!(con.get::<_, i64>("shared").unwrap(), clients * per_client);
    assert_eq!(
        con.hget::<_, _, i64>("hcount", "n").unwrap(),
        clients * per_client
    );
    assert_eq!(con.get::<_, i64>("c31:299").unwrap(), 299);
    // The other clients have hung up; the server notices soon after.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    loop {
        let clients_now: String = redis::cmd("INFO").arg("clients").query(&mut con).unwrap();
        if clients_now.contains("connected_clients:1\r\n") {
            break;
        }
        assert!(std::time::Instant::now() < deadline, "{clients_now}");
        std::thread::sleep(std::time::Duration::from_millis(10));
    }
}

#[test]
fn resp3_through_hello() {
    let server = TestServer::start();
    let url = format!("redis://{}/?protocol=resp3", server.addr);
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    let _: () = con.hset("h", "f", "v").unwrap();
    match cmd(&mut con, &["HGETALL", "h"]).unwrap() {
        Value::Map(pairs) => assert_eq!(
            pairs,
            vec![(
                Value::BulkString(b"f".to_vec()),
                Value::BulkString(b"v".to_vec())
            )]
        ),
        other => panic!("HGETALL in RESP3 is a map, got {other:?}"),
    }
    assert_eq!(cmd(&mut con, &["GET", "missing"]).unwrap(), Value::Nil);
    match cmd(&mut con, &["HELLO", "3"]).unwrap() {
        Value::Map(pairs) => {
            let proto = pairs
                .iter()
                .find(|(k, _)| *k == Value::BulkString(b"proto".to_vec()))
                .map(|(_, v)| v.clone());
            assert_eq!(proto, Some(Value::Int(3)));
        }
        other => panic!("HELLO 3 replies a map, got {other:?}"),
    }
    match cmd(&mut con, &["INFO", "server"]).unwrap() {
        Value::VerbatimString { text, .. } => assert!(text.contains("redis_version:")),
        other => panic!("INFO in RESP3 is verbatim text, got {other:?}"),
    }
    let e = err(&mut con, &["HELLO", "4"]);
    assert!(e.contains("NOPROTO"), "{e}");
}

#[test]
fn connection_and_server_commands() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(
        cmd(&mut con, &["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
    assert_eq!(
        cmd(&mut con, &["PING", "hi"]).unwrap(),
        Value::BulkString(b"hi".to_vec())
    );
    assert_eq!(
        cmd(&mut con, &["ECHO", "x y"]).unwrap(),
        Value::BulkString(b"x y".to_vec())
    );
    assert_eq!(
        cmd(&mut con, &["CLIENT", "SETNAME", "tester"]).unwrap(),
        Value::Okay
    );
    assert_eq!(
        cmd(&mut con, &["CLIENT", "GETNAME"]).unwrap(),
        Value::BulkString(b"tester".to_vec())
    );
    assert!(err(&mut con, &["CLIENT", "SETNAME", "a b"]).contains("cannot contain spaces"));
    let id: i64 = redis::cmd("CLIENT").arg("ID").query(&mut con).unwrap();
    assert!(id > 0);
    let list: String = redis::cmd("CLIENT").arg("LIST").query(&mut con).unwrap();
    assert!(list.contains(&format!("id={id} ")), "{list}");
    assert!(list.contains("name=tester"), "{list}");
    assert!(list.contains("cmd=client"), "{list}");
    // What redis-benchmark asks at startup.
    let save: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("save")
        .query(&mut con)
        .unwrap();
    assert_eq!(save, vec!["save".to_string(), String::new()]);
    let aof: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("appendonly")
        .query(&mut con)
        .unwrap();
    assert_eq!(aof, vec!["appendonly".to_string(), "no".to_string()]);
    let max: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("max*")
        .query(&mut con)
        .unwrap();
    assert!(max.contains(&"maxclients".to_string()));
    assert!(err(&mut con, &["CONFIG", "SET", "port", "1"]).contains("can't set immutable config"));
    // COMMAND and its subcommands (what redis-cli asks).
    let count: i64 = redis::cmd("COMMAND").arg("COUNT").query(&mut con).unwrap();
    assert!(count > 40);
    match cmd(&mut con, &["COMMAND"]).unwrap() {
        Value::Array(entries) => assert_eq!(entries.len() as i64, count),
        other => panic!("{other:?}"),
    }
    match cmd(&mut con, &["COMMAND", "INFO", "get", "nosuch"]).unwrap() {
        Value::Array(entries) => {
            assert_eq!(entries.len(), 2);
            assert_eq!(entries[1], Value::Nil);
            match &entries[0] {
                Value::Array(info) => {
                    assert_eq!(info[0], Value::BulkString(b"get".to_vec()));
                    assert_eq!(info[1], Value::Int(2));
                }
                other => panic!("{other:?}"),
            }
        }
        other => panic!("{other:?}"),
    }
    assert!(
        matches!(cmd(&mut con, &["COMMAND", "DOCS", "set"]).unwrap(), Value::Array(a) if a.len() == 2)
    );
    // INFO has every section the issue asks for.
    let info: String = redis::cmd("INFO").query(&mut con).unwrap();
    for needle in [
        "# Server",
        "# Clients",
        "# Memory",
        "# Persistence",
        "durability:",
        "# Stats",
        "total_commands_processed:",
        "# Keyspace",
    ] {
        assert!(info.contains(needle), "INFO lacks {needle}: {info}");
    }
    assert_eq!(cmd(&mut con, &["QUIT"]).unwrap(), Value::Okay);
}

#[test]
fn authentication_with_requirepass() {
    let server = TestServer::start_with(|c| c.requirepass = Some("s3cret".into()));
    let mut raw = server.raw();
    use common::Resp;
    assert_eq!(
        raw.command(&[b"GET", b"k"]),
        Resp::Error("NOAUTH Authentication required.".into())
    );
    assert_eq!(
        raw.command(&[b"AUTH", b"wrong"]),
        Resp::Error("WRONGPASS invalid username-password pair or user is disabled.".into())
    );
    assert!(
        matches!(raw.command(&[b"HELLO", b"3"]), Resp::Error(e) if e.starts_with("NOAUTH HELLO"))
    );
    // Unknown commands are reported as unknown even before AUTH, like Redis.
    assert!(
        matches!(raw.command(&[b"NOPE"]), Resp::Error(e) if e.starts_with("ERR unknown command"))
    );
    assert_eq!(
        raw.command(&[b"AUTH", b"s3cret"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(
        raw.command(&[b"SET", b"k", b"v"]),
        Resp::Simple("OK".into())
    );
    // HELLO with AUTH, and AUTH with the default user's name.
    let mut raw = server.raw();
    assert!(matches!(
        raw.command(&[b"HELLO", b"3", b"AUTH", b"default", b"s3cret", b"SETNAME", b"me"]),
        Resp::Map(_)
    ));
    assert_eq!(raw.command(&[b"GET", b"k"]), Resp::bulk("v"));
    let mut raw = server.raw();
    assert_eq!(
        raw.command(&[b"AUTH", b"default", b"s3cret"]),
        Resp::Simple("OK".into())
    );
    let mut raw = server.raw();
    assert!(
        matches!(raw.command(&[b"AUTH", b"someone", b"s3cret"]), Resp::Error(e) if e.starts_with("WRONGPASS"))
    );
    // QUIT is allowed before AUTH.
    assert_eq!(raw.command(&[b"QUIT"]), Resp::Simple("OK".into()));
    assert!(raw.closed());
    // The redis crate with the password in the URL.
    let url = format!("redis://:s3cret@{}/", server.addr);
    let mut con = redis::Client::open(url).unwrap().get_connection().unwrap();
    assert_eq!(con.get::<_, String>("k").unwrap(), "v");
    // Without a password configured, AUTH says so.
    let open = TestServer::start();
    let mut raw = open.raw();
    assert!(
        matches!(raw.command(&[b"AUTH", b"x"]), Resp::Error(e) if e.contains("without any password configured"))
    );
}

#[test]
fn data_survives_shutdown_and_restart() {
    let mut server = TestServer::start();
    let mut con = server.client();
    for i in 0..300 {
        let _: () = con.set(format!("k{i}"), format!("v{i}")).unwrap();
    }
    let _: () = con.hset("h", "f", "v").unwrap();
    let _: i64 = con.incr("n", 7).unwrap();
    // SHUTDOWN closes the connection without a reply and stops the server.
    assert!(cmd(&mut con, &["SHUTDOWN"]).is_err());
    let handle = server.handle.take().unwrap();
    handle
        .join()
        .expect("the server stops cleanly after SHUTDOWN");
    let mut con = server.restart();
    assert_eq!(cmd(&mut con, &["DBSIZE"]).unwrap(), Value::Int(302));
    assert_eq!(con.get::<_, String>("k299").unwrap(), "v299");
    assert_eq!(con.hget::<_, _, String>("h", "f").unwrap(), "v");
    assert_eq!(con.get::<_, i64>("n").unwrap(), 7);
    drop(con);
    server.stop();
}

#[test]
fn values_written_outside_the_server_read_as_strings() {
    let mut server = TestServer::start();
    server.stop();
    {
        let db = persimmon::Db::open(&server.pool, persimmon::Options::default()).unwrap();
        db.put(b"from-cli", b"plain text").unwrap();
    }
    let mut con = server.restart();
    assert_eq!(con.get::<_, String>("from-cli").unwrap(), "plain text");
    assert_eq!(
        cmd(&mut con, &["APPEND", "from-cli", "!"]).unwrap(),
        Value::Int(11)
    );
    assert_eq!(con.get::<_, String>("from-cli").unwrap(), "plain text!");
    drop(con);
    server.stop();
}

/// What YCSB's Java binding (site.ycsb.db.RedisClient) sends, with its
/// defaults: HMSET + ZADD `_indices` on insert, HGETALL/HMGET on read,
/// HMSET on update, DEL + ZREM on delete, ZRANGEBYSCORE + HGETALL on scan.
#[test]
fn ycsb_redis_binding_calls_work() {
    let server = TestServer::start();
    let mut con = server.client();
    let fields: Vec<(String, String)> = (0..10)
        .map(|i| (format!("field{i}"), format!("{i}").repeat(100)))
        .collect();
    for i in 0..1000u64 {
        let key = format!("user{}", i * 7919 % 10007);
        let ok: String = redis::cmd("HMSET")
            .arg(&key)
            .arg(&fields)
            .query(&mut con)
            .unwrap();
        assert_eq!(ok, "OK");
        let hash = (i * 7919 % 10007) as f64;
        let added: i64 = redis::cmd("ZADD")
            .arg("_indices")
            .arg(hash)
            .arg(&key)
            .query(&mut con)
            .unwrap();
        assert_eq!(added, 1);
    }
    assert_eq!(
        cmd(&mut con, &["ZCARD", "_indices"]).unwrap(),
        Value::Int(1000)
    );
    let record: HashMap<String, String> = con.hgetall("user7919").unwrap();
    assert_eq!(record.len(), 10);
    let some: Vec<Option<String>> = redis::cmd("HMGET")
        .arg("user7919")
        .arg("field1")
        .arg("field9")
        .query(&mut con)
        .unwrap();
    assert_eq!(some[1].as_deref(), Some(&"9".repeat(100)[..]));
    // A scan: keys from a start key's score on, at most 5.
    let keys: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg("_indices")
        .arg(7919)
        .arg("+inf")
        .arg("LIMIT")
        .arg(0)
        .arg(5)
        .query(&mut con)
        .unwrap();
    assert_eq!(keys.len(), 5);
    assert_eq!(keys[0], "user7919");
    let mut scores = Vec::new();
    for k in &keys {
        let sc: f64 = redis::cmd("ZSCORE")
            .arg("_indices")
            .arg(k)
            .query(&mut con)
            .unwrap();
        scores.push(sc);
    }
    assert!(scores.windows(2).all(|w| w[0] <= w[1]), "{scores:?}");
    // Delete.
    assert_eq!(cmd(&mut con, &["DEL", "user7919"]).unwrap(), Value::Int(1));
    assert_eq!(
        cmd(&mut con, &["ZREM", "_indices", "user7919"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &["ZSCORE", "_indices", "user7919"]).unwrap(),
        Value::Nil
    );
    // ZADD options and errors, ZRANGE by index.
    assert_eq!(
        cmd(&mut con, &["ZADD", "z", "1", "a", "2", "b", "3", "c"]).unwrap(),
        Value::Int(3)
    );
    assert_eq!(
        cmd(&mut con, &["ZADD", "z", "NX", "9", "a", "4", "d"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &["ZADD", "z", "XX", "CH", "5", "a", "9", "zz"]).unwrap(),
        Value::Int(1)
    );
    assert_eq!(
        cmd(&mut con, &["ZADD", "z", "GT", "CH", "1", "a"]).unwrap(),
        Value::Int(0)
    );
    assert_eq!(
        cmd(&mut con, &["ZADD", "z", "INCR", "2.5", "b"]).unwrap(),
        Value::BulkString(b"4.5".to_vec())
    );
    let all: Vec<String> = redis::cmd("ZRANGE")
        .arg("z")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(all, vec!["c", "d", "b", "a"]);
    let with: Vec<String> = redis::cmd("ZRANGE")
        .arg("z")
        .arg(0)
        .arg(0)
        .arg("WITHSCORES")
        .query(&mut con)
        .unwrap();
    assert_eq!(with, vec!["c", "3"]);
    let open: Vec<String> = redis::cmd("ZRANGEBYSCORE")
        .arg("z")
        .arg("(3")
        .arg("(5")
        .query(&mut con)
        .unwrap();
    assert_eq!(open, vec!["d", "b"]);
    assert_eq!(
        cmd(&mut con, &["TYPE", "z"]).unwrap(),
        Value::SimpleString("zset".into())
    );
    assert!(err(&mut con, &["ZADD", "z", "x", "m"]).contains("not a valid float"));
    assert!(err(&mut con, &["ZADD", "z", "NX", "XX", "1", "m"]).contains("not compatible"));
    assert!(err(&mut con, &["ZADD", "z", "NX", "1"]).contains("syntax error"));
    assert!(err(&mut con, &["GET", "z"]).contains("WRONGTYPE"));
    assert!(err(&mut con, &["ZADD", "user0", "1", "m"]).contains("WRONGTYPE"));
    assert_eq!(
        cmd(&mut con, &["ZREM", "z", "a", "b", "c", "d"]).unwrap(),
        Value::Int(4)
    );
    assert_eq!(cmd(&mut con, &["EXISTS", "z"]).unwrap(), Value::Int(0));
}
