//! MGET through a real client: one batched engine read per 64 keys
//! (`Store::get_many`), with Redis's answers — the string values in order,
//! nil for a missing key, an expired one or one of another type — and its
//! statistics: a key that exists (of any type) is a keyspace hit, a missing
//! or expired one a miss, and the command counts once in commandstats.
//! Inside MULTI/EXEC it reads through the transaction's overlay; after
//! SELECT, in the selected database.

mod common;

use std::time::Duration;

use common::{cmd, TestServer};
use redis::Value;

fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> String {
    let text: String = redis::cmd("INFO").arg(section).query(con).unwrap();
    text.split("\r\n")
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
        .unwrap_or_else(|| panic!("{field} missing from INFO {section}"))
}

fn hits_misses(con: &mut redis::Connection) -> (u64, u64) {
    let text: String = redis::cmd("INFO").arg("stats").query(con).unwrap();
    let n = |f: &str| {
        text.split("\r\n")
            .find_map(|l| l.strip_prefix(&format!("{f}:")))
            .unwrap()
            .parse::<u64>()
            .unwrap()
    };
    (n("keyspace_hits"), n("keyspace_misses"))
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn mget(con: &mut redis::Connection, keys: &[&str]) -> Vec<Value> {
    let mut args = vec!["MGET"];
    args.extend_from_slice(keys);
    match cmd(con, &args).unwrap() {
        Value::Array(v) => v,
        other => panic!("MGET replied {other:?}"),
    }
}

#[test]
fn mget_answers_strings_in_order_and_nil_for_the_rest() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "s1", "one"]).unwrap();
    cmd(&mut c, &["SET", "s2", ""]).unwrap();
    cmd(&mut c, &["HSET", "h", "f", "v"]).unwrap();
    cmd(&mut c, &["RPUSH", "l", "a"]).unwrap();
    cmd(&mut c, &["SADD", "set", "m"]).unwrap();
    cmd(&mut c, &["ZADD", "z", "1", "m"]).unwrap();
    cmd(&mut c, &["SET", "gone", "x", "PX", "1"]).unwrap();
    std::thread::sleep(Duration::from_millis(20));
    let (h0, m0) = hits_misses(&mut c);
    let got = mget(
        &mut c,
        &["s1", "missing", "h", "s2", "l", "gone", "set", "z", "s1"],
    );
    assert_eq!(
        got,
        vec![
            bulk("one"),
            Value::Nil,
            Value::Nil,
            bulk(""),
            Value::Nil,
            Value::Nil,
            Value::Nil,
            Value::Nil,
            bulk("one")
        ]
    );
    // Hits: s1 twice, h, s2, l, set, z; misses: missing, gone.
    let (h1, m1) = hits_misses(&mut c);
    assert_eq!((h1 - h0, m1 - m0), (7, 2));
    let stat = info_field(&mut c, "commandstats", "cmdstat_mget");
    assert!(stat.starts_with("calls=1,"), "{stat}");
}

#[test]
fn mget_of_many_keys_spans_batches() {
    let server = TestServer::start();
    let mut c = server.client();
    let keys: Vec<String> = (0..300).map(|i| format!("k{i}")).collect();
    for (i, k) in keys.iter().enumerate() {
        if i % 3 != 0 {
            cmd(&mut c, &["SET", k, &format!("v{i}")]).unwrap();
        }
    }
    cmd(&mut c, &["DEL", "k100"]).unwrap();
    cmd(&mut c, &["HSET", "k100", "f", "v"]).unwrap();
    let (h0, m0) = hits_misses(&mut c);
    let refs: Vec<&str> = keys.iter().map(String::as_str).collect();
    let got = mget(&mut c, &refs);
    assert_eq!(got.len(), 300);
    for (i, v) in got.iter().enumerate() {
        let want = if i % 3 == 0 || i == 100 {
            Value::Nil
        } else {
            bulk(&format!("v{i}"))
        };
        assert_eq!(v, &want, "key k{i}");
    }
    // 200 keys exist (k100 as a hash: still a hit); 100 were never written.
    let (h1, m1) = hits_misses(&mut c);
    assert_eq!((h1 - h0, m1 - m0), (200, 100));
    // A key too long to exist reads as missing, between present ones.
    let long = "x".repeat(70_000);
    assert_eq!(
        mget(&mut c, &["k1", &long, "k2"]),
        vec![bulk("v1"), Value::Nil, bulk("v2")]
    );
}

#[test]
fn mget_reads_the_selected_database_and_inside_multi() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "a", "db0"]).unwrap();
    cmd(&mut c, &["SELECT", "1"]).unwrap();
    cmd(&mut c, &["SET", "b", "db1"]).unwrap();
    assert_eq!(mget(&mut c, &["a", "b"]), vec![Value::Nil, bulk("db1")]);
    // Inside MULTI/EXEC: the transaction's own writes are seen.
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "a", "new"]).unwrap();
    cmd(&mut c, &["MGET", "b", "a", "nope"]).unwrap();
    let exec = cmd(&mut c, &["EXEC"]).unwrap();
    assert_eq!(
        exec,
        Value::Array(vec![
            Value::Okay,
            Value::Array(vec![bulk("db1"), bulk("new"), Value::Nil])
        ])
    );
    cmd(&mut c, &["SELECT", "0"]).unwrap();
    assert_eq!(mget(&mut c, &["a", "b"]), vec![bulk("db0"), Value::Nil]);
}
