//! The key-space commands of issue 16 through a real client (the `redis`
//! crate): RENAME, RENAMENX, COPY, RANDOMKEY, TOUCH, OBJECT, DUMP and
//! RESTORE — every option, Redis's error texts, and the time to live each
//! one carries or drops.

mod common;

use std::collections::HashMap;

use common::{Raw, Resp, TestServer};
use redis::Value;

fn cmd(con: &mut redis::Connection, args: &[&[u8]]) -> redis::RedisResult<Value> {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
}

/// A command's reply, which must not be an error.
fn ok(con: &mut redis::Connection, args: &[&str]) -> Value {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    cmd(con, &bytes).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// The exact error text (as sent, less the `-`) of a command that must
/// fail, through a raw connection.
fn err_bytes(raw: &mut Raw, args: &[&[u8]]) -> String {
    match raw.command(args) {
        Resp::Error(text) => text,
        r => panic!("{args:?} succeeded with {r:?}"),
    }
}

fn err(raw: &mut Raw, args: &[&str]) -> String {
    let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    err_bytes(raw, &bytes)
}

fn int(con: &mut redis::Connection, args: &[&str]) -> i64 {
    match ok(con, args) {
        Value::Int(n) => n,
        v => panic!("{args:?}: not an integer: {v:?}"),
    }
}

fn bulk(con: &mut redis::Connection, args: &[&str]) -> Option<String> {
    match ok(con, args) {
        Value::Nil => None,
        Value::BulkString(b) => Some(String::from_utf8(b).unwrap()),
        v => panic!("{args:?}: not a bulk string: {v:?}"),
    }
}

fn bulk_bytes(con: &mut redis::Connection, args: &[&[u8]]) -> Option<Vec<u8>> {
    match cmd(con, args).unwrap() {
        Value::Nil => None,
        Value::BulkString(b) => Some(b),
        v => panic!("{args:?}: not a bulk string: {v:?}"),
    }
}

fn hash(con: &mut redis::Connection, key: &str) -> HashMap<String, String> {
    redis::cmd("HGETALL").arg(key).query(con).unwrap()
}

fn zrange(con: &mut redis::Connection, key: &str) -> Vec<String> {
    redis::cmd("ZRANGE")
        .arg(key)
        .arg(0)
        .arg(-1)
        .arg("WITHSCORES")
        .query(con)
        .unwrap()
}

#[test]
fn rename_moves_the_value_and_its_ttl() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut raw = server.raw();
    ok(&mut con, &["SET", "a", "v"]);
    ok(&mut con, &["EXPIRE", "a", "100"]);
    assert_eq!(ok(&mut con, &["RENAME", "a", "b"]), Value::Okay);
    assert_eq!(bulk(&mut con, &["GET", "b"]).as_deref(), Some("v"));
    assert_eq!(int(&mut con, &["EXISTS", "a"]), 0);
    let ttl = int(&mut con, &["TTL", "b"]);
    assert!((90..=100).contains(&ttl), "ttl {ttl}");
    // Over an existing key with a TTL: the value and the source's lack of
    // a TTL win.
    ok(&mut con, &["SET", "c", "w", "EX", "500"]);
    ok(&mut con, &["SET", "d", "x"]);
    assert_eq!(ok(&mut con, &["RENAME", "d", "c"]), Value::Okay);
    assert_eq!(bulk(&mut con, &["GET", "c"]).as_deref(), Some("x"));
    assert_eq!(int(&mut con, &["TTL", "c"]), -1);
    // Other types keep their type and contents.
    ok(&mut con, &["HSET", "h", "f", "1", "g", "2"]);
    ok(&mut con, &["RENAME", "h", "h2"]);
    assert_eq!(hash(&mut con, "h2").len(), 2);
    assert_eq!(bulk(&mut con, &["HGET", "h2", "g"]).as_deref(), Some("2"));
    // The same key: OK when it exists, the error when not.
    assert_eq!(ok(&mut con, &["RENAME", "c", "c"]), Value::Okay);
    assert_eq!(bulk(&mut con, &["GET", "c"]).as_deref(), Some("x"));
    assert_eq!(err(&mut raw, &["RENAME", "nokey", "x"]), "ERR no such key");
    assert_eq!(
        err(&mut raw, &["RENAME", "nokey", "nokey"]),
        "ERR no such key"
    );
    assert!(err(&mut raw, &["RENAME", "c"]).contains("wrong number of arguments"));
}

#[test]
fn renamenx_only_renames_onto_a_missing_key() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut raw = server.raw();
    ok(&mut con, &["SET", "a", "1", "PX", "100000"]);
    ok(&mut con, &["SET", "b", "2"]);
    assert_eq!(int(&mut con, &["RENAMENX", "a", "b"]), 0);
    assert_eq!(bulk(&mut con, &["GET", "a"]).as_deref(), Some("1"));
    assert_eq!(bulk(&mut con, &["GET", "b"]).as_deref(), Some("2"));
    assert_eq!(int(&mut con, &["RENAMENX", "a", "c"]), 1);
    assert_eq!(int(&mut con, &["EXISTS", "a"]), 0);
    assert_eq!(bulk(&mut con, &["GET", "c"]).as_deref(), Some("1"));
    assert!(int(&mut con, &["PTTL", "c"]) > 90_000);
    assert_eq!(int(&mut con, &["RENAMENX", "c", "c"]), 0);
    assert_eq!(
        err(&mut raw, &["RENAMENX", "nokey", "z"]),
        "ERR no such key"
    );
}

#[test]
fn copy_duplicates_values_ttls_and_crosses_databases() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(&mut con, &["SET", "s", "foobar", "EX", "100"]);
    assert_eq!(int(&mut con, &["COPY", "s", "s2"]), 1);
    assert_eq!(bulk(&mut con, &["GET", "s2"]).as_deref(), Some("foobar"));
    let ttl = int(&mut con, &["TTL", "s2"]);
    assert!((90..=100).contains(&ttl), "ttl {ttl}");
    assert_eq!(bulk(&mut con, &["GET", "s"]).as_deref(), Some("foobar"));
    // The copy is independent of the original.
    ok(&mut con, &["APPEND", "s2", "!"]);
    assert_eq!(bulk(&mut con, &["GET", "s"]).as_deref(), Some("foobar"));
    // An existing destination: 0 without REPLACE; REPLACE drops its TTL
    // when the source has none.
    ok(&mut con, &["SET", "p", "plain"]);
    assert_eq!(int(&mut con, &["COPY", "p", "s2"]), 0);
    assert_eq!(bulk(&mut con, &["GET", "s2"]).as_deref(), Some("foobar!"));
    assert_eq!(int(&mut con, &["COPY", "p", "s2", "REPLACE"]), 1);
    assert_eq!(bulk(&mut con, &["GET", "s2"]).as_deref(), Some("plain"));
    assert_eq!(int(&mut con, &["TTL", "s2"]), -1);
    // Hashes and sorted sets.
    ok(&mut con, &["HSET", "h", "f1", "v1", "f2", "v2"]);
    ok(&mut con, &["ZADD", "z", "1.5", "a", "2", "b"]);
    assert_eq!(int(&mut con, &["COPY", "h", "h2"]), 1);
    assert_eq!(int(&mut con, &["COPY", "z", "z2"]), 1);
    assert_eq!(hash(&mut con, "h2"), hash(&mut con, "h"));
    assert_eq!(zrange(&mut con, "z2"), vec!["a", "1.5", "b", "2"]);
    ok(&mut con, &["RPUSH", "l", "x", "y"]);
    ok(&mut con, &["SADD", "set", "m"]);
    assert_eq!(int(&mut con, &["COPY", "l", "l2"]), 1);
    assert_eq!(int(&mut con, &["COPY", "set", "set2"]), 1);
    let l2: Vec<String> = redis::cmd("LRANGE")
        .arg("l2")
        .arg(0)
        .arg(-1)
        .query(&mut con)
        .unwrap();
    assert_eq!(l2, vec!["x", "y"]);
    assert_eq!(int(&mut con, &["SISMEMBER", "set2", "m"]), 1);
    // Missing source.
    assert_eq!(int(&mut con, &["COPY", "nokey", "x"]), 0);
    assert_eq!(int(&mut con, &["EXISTS", "x"]), 0);
    // Another database: the same name is fine there, with its TTL.
    assert_eq!(int(&mut con, &["COPY", "s", "s", "DB", "3"]), 1);
    assert_eq!(int(&mut con, &["COPY", "s", "s", "DB", "3"]), 0);
    assert_eq!(int(&mut con, &["COPY", "p", "s", "DB", "3", "REPLACE"]), 1);
    assert_eq!(int(&mut con, &["COPY", "h", "h", "REPLACE", "DB", "3"]), 1);
    ok(&mut con, &["SELECT", "3"]);
    assert_eq!(bulk(&mut con, &["GET", "s"]).as_deref(), Some("plain"));
    assert_eq!(int(&mut con, &["TTL", "s"]), -1);
    assert_eq!(hash(&mut con, "h").len(), 2);
    assert_eq!(int(&mut con, &["DBSIZE"]), 2);
    // Back from database 3 to 0, by DB 0.
    ok(&mut con, &["SET", "only3", "x", "EX", "50"]);
    assert_eq!(int(&mut con, &["COPY", "only3", "from3", "DB", "0"]), 1);
    ok(&mut con, &["SELECT", "0"]);
    assert_eq!(bulk(&mut con, &["GET", "from3"]).as_deref(), Some("x"));
    assert!(int(&mut con, &["TTL", "from3"]) > 0);
}

#[test]
fn copy_errors_are_redis_errors() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut raw = server.raw();
    ok(&mut con, &["SET", "k", "v"]);
    let same = "ERR source and destination objects are the same";
    assert_eq!(err(&mut raw, &["COPY", "k", "k"]), same);
    assert_eq!(err(&mut raw, &["COPY", "k", "k", "DB", "0"]), same);
    assert_eq!(err(&mut raw, &["COPY", "nokey", "nokey"]), same);
    assert_eq!(
        err(&mut raw, &["COPY", "k", "k2", "DB", "notanumber"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut raw, &["COPY", "k", "k2", "DB", "99999999999"]),
        "ERR value is out of range, value must between -2147483648 and 2147483647"
    );
    assert_eq!(
        err(&mut raw, &["COPY", "k", "k2", "DB", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut raw, &["COPY", "k", "k2", "DB", "-1"]),
        "ERR DB index is out of range"
    );
    assert_eq!(
        err(&mut raw, &["COPY", "k", "k2", "DB"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut raw, &["COPY", "k", "k2", "BOGUS"]),
        "ERR syntax error"
    );
    assert!(err(&mut raw, &["COPY", "k"]).contains("wrong number of arguments"));
    assert_eq!(int(&mut con, &["EXISTS", "k2"]), 0);
}

#[test]
fn randomkey_draws_every_key_of_the_selected_database() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(ok(&mut con, &["RANDOMKEY"]), Value::Nil);
    ok(&mut con, &["SET", "foo", "x"]);
    ok(&mut con, &["SET", "bar", "y"]);
    ok(&mut con, &["SELECT", "1"]);
    for i in 0..50 {
        ok(&mut con, &["SET", &format!("db1-{i}"), "z"]);
    }
    ok(&mut con, &["SELECT", "0"]);
    let mut seen = HashMap::new();
    for _ in 0..200 {
        let key = bulk(&mut con, &["RANDOMKEY"]).expect("a key");
        *seen.entry(key).or_insert(0) += 1;
    }
    assert_eq!(seen.len(), 2, "{seen:?}");
    assert!(seen.values().all(|&n| n > 40), "{seen:?}");
    ok(&mut con, &["DEL", "foo", "bar"]);
    assert_eq!(ok(&mut con, &["RANDOMKEY"]), Value::Nil);
    ok(&mut con, &["SELECT", "1"]);
    let key = bulk(&mut con, &["RANDOMKEY"]).expect("a key");
    assert!(key.starts_with("db1-"), "{key}");
    // Expired keys are never drawn.
    ok(&mut con, &["FLUSHDB"]);
    ok(&mut con, &["SET", "gone", "x", "PX", "1"]);
    std::thread::sleep(std::time::Duration::from_millis(20));
    assert_eq!(ok(&mut con, &["RANDOMKEY"]), Value::Nil);
}

#[test]
fn touch_counts_existing_keys() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut raw = server.raw();
    ok(&mut con, &["SET", "a", "1"]);
    ok(&mut con, &["HSET", "h", "f", "v"]);
    assert_eq!(int(&mut con, &["TOUCH", "a", "nokey", "h", "a"]), 3);
    assert_eq!(int(&mut con, &["TOUCH", "nokey"]), 0);
    assert!(err(&mut raw, &["TOUCH"]).contains("wrong number of arguments"));
}

#[test]
fn object_encoding_follows_redis_thresholds() {
    let server = TestServer::start();
    let mut con = server.client();
    let long = "x".repeat(45);
    for (value, enc) in [
        ("12345", "int"),
        ("-9223372036854775808", "int"),
        ("9223372036854775808", "embstr"),
        ("0123", "embstr"),
        ("hello", "embstr"),
        (&long[..44], "embstr"),
        (&long, "raw"),
    ] {
        ok(&mut con, &["SET", "s", value]);
        assert_eq!(
            bulk(&mut con, &["OBJECT", "ENCODING", "s"]).as_deref(),
            Some(enc),
            "{value}"
        );
    }
    ok(&mut con, &["HSET", "h", "f", "v"]);
    assert_eq!(
        bulk(&mut con, &["object", "encoding", "h"]).as_deref(),
        Some("listpack")
    );
    ok(&mut con, &["HSET", "h", "big", &"v".repeat(65)]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "h"]).as_deref(),
        Some("hashtable")
    );
    // Redis 7.0's defaults: 512 hash fields, 128 sorted-set members.
    for i in 0..512 {
        ok(&mut con, &["HSET", "many", &format!("f{i}"), "v"]);
    }
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "many"]).as_deref(),
        Some("listpack")
    );
    ok(&mut con, &["HSET", "many", "f512", "v"]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "many"]).as_deref(),
        Some("hashtable")
    );
    for i in 0..128 {
        ok(
            &mut con,
            &["ZADD", "zmany", &i.to_string(), &format!("m{i}")],
        );
    }
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "zmany"]).as_deref(),
        Some("listpack")
    );
    ok(&mut con, &["ZADD", "zmany", "0", "one-more"]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "zmany"]).as_deref(),
        Some("skiplist")
    );
    ok(&mut con, &["ZADD", "z", "1", "a"]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "z"]).as_deref(),
        Some("listpack")
    );
    ok(&mut con, &["ZADD", "z", "2", &"m".repeat(65)]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "z"]).as_deref(),
        Some("skiplist")
    );
    assert_eq!(ok(&mut con, &["OBJECT", "ENCODING", "nokey"]), Value::Nil);
    ok(&mut con, &["RPUSH", "l", "a", "1"]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "l"]).as_deref(),
        Some("quicklist")
    );
    ok(&mut con, &["SADD", "set", "1", "-2", "300"]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "set"]).as_deref(),
        Some("intset")
    );
    ok(&mut con, &["SADD", "set", "x"]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "set"]).as_deref(),
        Some("hashtable")
    );
}

#[test]
fn object_encoding_follows_config_set() {
    let server = TestServer::start();
    let mut con = server.client();
    let enc = |con: &mut redis::Connection, key: &str| bulk(con, &["OBJECT", "ENCODING", key]);
    ok(&mut con, &["HSET", "h", "f", "v"]);
    ok(&mut con, &["ZADD", "z", "1", "abc"]);
    ok(&mut con, &["SADD", "s", "1", "2", "3"]);
    ok(
        &mut con,
        &["CONFIG", "SET", "hash-max-ziplist-entries", "0"],
    );
    assert_eq!(enc(&mut con, "h").as_deref(), Some("hashtable"));
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "hash-max-ziplist-entries",
            "1",
            "hash-max-listpack-value",
            "0",
        ],
    );
    assert_eq!(enc(&mut con, "h").as_deref(), Some("hashtable"));
    ok(&mut con, &["CONFIG", "SET", "hash-max-listpack-value", "1"]);
    assert_eq!(enc(&mut con, "h").as_deref(), Some("listpack"));
    assert_eq!(enc(&mut con, "z").as_deref(), Some("listpack"));
    ok(&mut con, &["CONFIG", "SET", "zset-max-listpack-value", "2"]);
    assert_eq!(enc(&mut con, "z").as_deref(), Some("skiplist"));
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "zset-max-listpack-value",
            "64",
            "zset-max-ziplist-entries",
            "0",
        ],
    );
    assert_eq!(enc(&mut con, "z").as_deref(), Some("skiplist"));
    assert_eq!(enc(&mut con, "s").as_deref(), Some("intset"));
    ok(&mut con, &["CONFIG", "SET", "set-max-intset-entries", "2"]);
    assert_eq!(enc(&mut con, "s").as_deref(), Some("hashtable"));
}

#[test]
fn object_refcount_idletime_freq_and_help() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut raw = server.raw();
    ok(&mut con, &["SET", "small", "5"]);
    ok(&mut con, &["SET", "big", "10000"]);
    ok(&mut con, &["SET", "text", "abc"]);
    ok(&mut con, &["HSET", "h", "f", "v"]);
    assert_eq!(
        int(&mut con, &["OBJECT", "REFCOUNT", "small"]),
        2_147_483_647
    );
    assert_eq!(int(&mut con, &["OBJECT", "REFCOUNT", "big"]), 1);
    assert_eq!(int(&mut con, &["OBJECT", "REFCOUNT", "text"]), 1);
    assert_eq!(int(&mut con, &["OBJECT", "REFCOUNT", "h"]), 1);
    assert_eq!(ok(&mut con, &["OBJECT", "REFCOUNT", "nokey"]), Value::Nil);
    assert_eq!(int(&mut con, &["OBJECT", "IDLETIME", "text"]), 0);
    assert_eq!(ok(&mut con, &["OBJECT", "IDLETIME", "nokey"]), Value::Nil);
    assert!(err(&mut raw, &["OBJECT", "FREQ", "text"])
        .starts_with("ERR An LFU maxmemory policy is not selected, access frequency not tracked."));
    assert_eq!(ok(&mut con, &["OBJECT", "FREQ", "nokey"]), Value::Nil);
    let Value::Array(help) = ok(&mut con, &["OBJECT", "HELP"]) else {
        panic!("HELP is an array");
    };
    assert_eq!(help.len(), 15);
    assert_eq!(
        help[0],
        Value::SimpleString(
            "OBJECT <subcommand> [<arg> [value] [opt] ...]. Subcommands are:".into()
        )
    );
    assert_eq!(
        err(&mut raw, &["OBJECT", "FOO", "k"]),
        "ERR unknown subcommand 'FOO'. Try OBJECT HELP."
    );
    assert_eq!(
        err(&mut raw, &["OBJECT", "ENCODING"]),
        "ERR wrong number of arguments for 'object|encoding' command"
    );
    assert_eq!(
        err(&mut raw, &["OBJECT", "refcount", "a", "b"]),
        "ERR wrong number of arguments for 'object|refcount' command"
    );
    assert!(err(&mut raw, &["OBJECT"]).contains("wrong number of arguments for 'object'"));
}

/// Payloads Redis 7.0.15's DUMP wrote: a string, a small hash (listpack),
/// a small sorted set (listpack), an integer.
const REDIS_STRING: &str = "000b68656c6c6f20776f726c640a000bfc49b9a6c7a034";
const REDIS_HASH: &str = "101717000000040082663103827631038266320382763203ff0a0003f84c0c15d4a2bc";
const REDIS_ZSET: &str = "111414000000040081610283312e35048162020201ff0a00fa02b425af188763";
const REDIS_INT: &str = "00c139300a009d94ea2793fc08b9";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn restore_reads_what_redis_dumped_and_dump_writes_what_redis_writes() {
    let server = TestServer::start();
    let mut con = server.client();
    for (key, payload) in [
        ("s", REDIS_STRING),
        ("h", REDIS_HASH),
        ("z", REDIS_ZSET),
        ("i", REDIS_INT),
    ] {
        let p = unhex(payload);
        assert_eq!(
            cmd(&mut con, &[b"RESTORE", key.as_bytes(), b"0", &p]).unwrap(),
            Value::Okay
        );
    }
    assert_eq!(
        bulk(&mut con, &["GET", "s"]).as_deref(),
        Some("hello world")
    );
    assert_eq!(bulk(&mut con, &["GET", "i"]).as_deref(), Some("12345"));
    // The hash and sorted set, read through commands that read every
    // collection (their own commands are tested in their files).
    ok(&mut con, &["RPUSH", "idx", "h"]);
    let fields: Vec<Option<String>> = redis::cmd("SORT")
        .arg(&["idx", "BY", "nosort", "GET", "*->f1", "GET", "*->f2"])
        .query(&mut con)
        .unwrap();
    assert_eq!(fields, [Some("v1".to_string()), Some("v2".to_string())]);
    assert_eq!(
        bulk(&mut con, &["OBJECT", "ENCODING", "z"]).as_deref(),
        Some("listpack")
    );
    assert_eq!(int(&mut con, &["TTL", "s"]), -1);
    // Strings dump to the very bytes Redis writes.
    assert_eq!(
        bulk_bytes(&mut con, &[b"DUMP", b"s"]),
        Some(unhex(REDIS_STRING))
    );
    assert_eq!(
        bulk_bytes(&mut con, &[b"DUMP", b"i"]),
        Some(unhex(REDIS_INT))
    );
    assert_eq!(bulk_bytes(&mut con, &[b"DUMP", b"nokey"]), None);
}

#[test]
fn dump_and_restore_round_trip_every_type() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(&mut con, &["SET", "s", "value"]);
    ok(&mut con, &["HSET", "h", "a", "1", "b", &"x".repeat(100)]);
    ok(
        &mut con,
        &["ZADD", "z", "-1.25", "m1", "1e100", "m2", "3", "m3"],
    );
    for key in ["s", "h", "z"] {
        let payload = bulk_bytes(&mut con, &[b"DUMP", key.as_bytes()]).unwrap();
        let copy = format!("{key}-copy");
        assert_eq!(
            cmd(&mut con, &[b"RESTORE", copy.as_bytes(), b"0", &payload]).unwrap(),
            Value::Okay
        );
        assert_eq!(
            bulk_bytes(&mut con, &[b"DUMP", copy.as_bytes()]).unwrap(),
            payload,
            "{key}"
        );
    }
    assert_eq!(bulk(&mut con, &["GET", "s-copy"]).as_deref(), Some("value"));
}

#[test]
fn restore_options_ttls_and_errors() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut raw = server.raw();
    let p = unhex(REDIS_STRING);
    // RESTORE key ttl <payload> [options]: the reply through the raw client.
    let mut restore = |args: &[&str]| -> Resp {
        let mut full: Vec<&[u8]> = vec![b"RESTORE", args[0].as_bytes(), args[1].as_bytes(), &p];
        full.extend(args[2..].iter().map(|a| a.as_bytes()));
        raw.command(&full)
    };
    let okay = Resp::Simple("OK".into());
    let error = |text: &str| Resp::Error(text.into());
    // A relative TTL, then REPLACE with ABSTTL.
    assert_eq!(restore(&["k", "5000"]), okay);
    let pttl = int(&mut con, &["PTTL", "k"]);
    assert!((4000..=5000).contains(&pttl), "pttl {pttl}");
    let busy = error("BUSYKEY Target key name already exists.");
    assert_eq!(restore(&["k", "0"]), busy);
    // BUSYKEY comes before a bad ttl, as in Redis.
    assert_eq!(restore(&["k", "-1"]), busy);
    let at = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64
        + 100_000;
    let at = at.to_string();
    assert_eq!(restore(&["k", &at, "REPLACE", "ABSTTL"]), okay);
    assert_eq!(int(&mut con, &["PEXPIRETIME", "k"]).to_string(), at);
    // ttl 0 with REPLACE: no TTL.
    assert_eq!(restore(&["k", "0", "REPLACE"]), okay);
    assert_eq!(int(&mut con, &["TTL", "k"]), -1);
    // A deadline in the past creates nothing, and with REPLACE deletes.
    assert_eq!(restore(&["past", "1", "ABSTTL"]), okay);
    assert_eq!(int(&mut con, &["EXISTS", "past"]), 0);
    assert_eq!(restore(&["k", "1", "ABSTTL", "REPLACE"]), okay);
    assert_eq!(int(&mut con, &["EXISTS", "k"]), 0);
    // IDLETIME and FREQ are accepted (and checked), not both.
    assert_eq!(restore(&["i1", "0", "IDLETIME", "1000"]), okay);
    assert_eq!(restore(&["i2", "0", "FREQ", "255"]), okay);
    for (args, text) in [
        (
            &["x", "0", "IDLETIME", "-1"][..],
            "ERR Invalid IDLETIME value, must be >= 0",
        ),
        (
            &["x", "0", "FREQ", "256"],
            "ERR Invalid FREQ value, must be >= 0 and <= 255",
        ),
        (
            &["x", "0", "FREQ", "1", "IDLETIME", "1"],
            "ERR syntax error",
        ),
        (&["x", "0", "IDLETIME"], "ERR syntax error"),
        (&["x", "0", "BOGUS"], "ERR syntax error"),
        (&["x", "-5"], "ERR Invalid TTL value, must be >= 0"),
        (&["x", "abc"], "ERR value is not an integer or out of range"),
    ] {
        assert_eq!(restore(args), error(text), "{args:?}");
    }
    // Damaged payloads.
    let mut bad = p.clone();
    bad[3] ^= 1;
    let checksum = "ERR DUMP payload version or checksum are wrong";
    assert_eq!(
        err_bytes(&mut raw, &[b"RESTORE", b"x", b"0", &bad]),
        checksum
    );
    assert_eq!(
        err(&mut raw, &["RESTORE", "x", "0", "not a payload"]),
        checksum
    );
    assert_eq!(int(&mut con, &["EXISTS", "x"]), 0);
    assert!(err(&mut raw, &["RESTORE", "x", "0"]).contains("wrong number of arguments"));
}

#[test]
fn keyspace_commands_run_inside_multi() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(&mut con, &["SET", "a", "1", "EX", "100"]);
    let replies: Vec<Value> = redis::pipe()
        .atomic()
        .cmd("RENAME")
        .arg("a")
        .arg("b")
        .cmd("COPY")
        .arg("b")
        .arg("c")
        .cmd("RENAMENX")
        .arg("c")
        .arg("b")
        .cmd("TOUCH")
        .arg("a")
        .arg("b")
        .arg("c")
        .query(&mut con)
        .unwrap();
    assert_eq!(replies[0], Value::Okay);
    assert_eq!(replies[1], Value::Int(1));
    assert_eq!(replies[2], Value::Int(0));
    assert_eq!(replies[3], Value::Int(2));
    assert!(int(&mut con, &["TTL", "c"]) > 0);
    assert_eq!(int(&mut con, &["EXISTS", "a"]), 0);
    // RANDOMKEY inside a transaction draws from the keys already stored.
    let (k,): (String,) = redis::pipe()
        .atomic()
        .cmd("RANDOMKEY")
        .query(&mut con)
        .unwrap();
    assert!(k == "b" || k == "c", "{k}");
}
