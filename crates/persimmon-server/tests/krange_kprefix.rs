//! KRANGE and KPREFIX, the ordered key-space commands, through the `redis`
//! crate and a raw RESP client: order, bounds, REV, LIMIT, WITHVALUES,
//! paging, binary keys, RESP3, the errors, the output limit, and a pool
//! keeping its ordered index across a restart.

mod common;

use std::collections::BTreeMap;

use common::{Resp, TestServer};
use redis::{Commands, RedisResult, Value};

fn ordered_server() -> TestServer {
    TestServer::start_with(|c| c.ordered_index = true)
}

fn cmd(con: &mut redis::Connection, args: &[&str]) -> RedisResult<Value> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
}

fn keys(con: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
        .unwrap_or_else(|e| panic!("{args:?} failed: {e}"))
}

/// The error text of a command that must fail.
fn err(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args) {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
    }
}

fn bulks(reply: Resp) -> Vec<Vec<u8>> {
    match reply {
        Resp::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Resp::Bulk(b) => b,
                other => panic!("not a bulk string: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

/// Whether a string somewhere in `v` contains `needle`.
fn has_text(v: &Value, needle: &str) -> bool {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).contains(needle),
        Value::SimpleString(t) => t.contains(needle),
        Value::Array(items) => items.iter().any(|i| has_text(i, needle)),
        Value::Map(pairs) => pairs
            .iter()
            .any(|(k, v)| has_text(k, needle) || has_text(v, needle)),
        _ => false,
    }
}

#[test]
fn keys_come_in_order_with_bounds_rev_limit_and_values() {
    let server = ordered_server();
    let mut con = server.client();
    // More keys than a scan runs inline (1024), so the long scans below
    // take the blocking path.
    let mut model = BTreeMap::new();
    let mut pipe = redis::pipe();
    for i in (0..1500).rev() {
        let (k, v) = (format!("user:{i:04}"), format!("v{i}"));
        pipe.set(&k, &v).ignore();
        model.insert(k, v);
    }
    let _: () = pipe.query(&mut con).unwrap();
    let _: () = con.set("item:a", "A").unwrap();
    let _: () = con.hset("item:h", "field", "x").unwrap();
    model.insert("item:a".into(), "A".into());
    let all: Vec<String> = model
        .keys()
        .cloned()
        .chain(std::iter::once("item:h".into()))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();

    // The whole key space, both ways.
    assert_eq!(keys(&mut con, &["KRANGE", "-", "+"]), all);
    let mut reversed = all.clone();
    reversed.reverse();
    assert_eq!(keys(&mut con, &["KRANGE", "-", "+", "REV"]), reversed);
    // start inclusive, end exclusive; an empty or inverted range is empty.
    let want: Vec<String> = (10..20).map(|i| format!("user:{i:04}")).collect();
    assert_eq!(keys(&mut con, &["KRANGE", "user:0010", "user:0020"]), want);
    assert_eq!(
        keys(&mut con, &["krange", "user:0010", "user:0020", "rev"]),
        want.iter().rev().cloned().collect::<Vec<_>>()
    );
    assert!(keys(&mut con, &["KRANGE", "user:0020", "user:0020"]).is_empty());
    assert!(keys(&mut con, &["KRANGE", "z", "a"]).is_empty());
    assert_eq!(keys(&mut con, &["KRANGE", "-", "item:h"]), vec!["item:a"]);
    assert_eq!(
        keys(&mut con, &["KRANGE", "user:1498", "+"]),
        vec!["user:1498", "user:1499"]
    );
    // LIMIT: the first n in the chosen order; 0 is none, negative is all.
    assert_eq!(
        keys(&mut con, &["KRANGE", "user:", "+", "LIMIT", "3"]),
        vec!["user:0000", "user:0001", "user:0002"]
    );
    assert_eq!(
        keys(&mut con, &["KRANGE", "-", "+", "REV", "LIMIT", "2"]),
        vec!["user:1499", "user:1498"]
    );
    assert!(keys(&mut con, &["KRANGE", "-", "+", "LIMIT", "0"]).is_empty());
    assert_eq!(keys(&mut con, &["KRANGE", "-", "+", "LIMIT", "-1"]), all);
    // KPREFIX.
    let want: Vec<String> = (100..110).map(|i| format!("user:{i:04}")).collect();
    assert_eq!(keys(&mut con, &["KPREFIX", "user:010"]), want);
    assert_eq!(
        keys(&mut con, &["KPREFIX", "user:010", "REV", "LIMIT", "2"]),
        vec!["user:0109", "user:0108"]
    );
    assert_eq!(keys(&mut con, &["KPREFIX", "user:"]).len(), 1500);
    assert_eq!(keys(&mut con, &["KPREFIX", ""]), all);
    assert!(keys(&mut con, &["KPREFIX", "nothing"]).is_empty());
    // WITHVALUES: flat key, value pairs; nil for a hash, as MGET gives.
    assert_eq!(
        cmd(&mut con, &["KPREFIX", "item:", "WITHVALUES"]).unwrap(),
        Value::Array(vec![
            Value::BulkString(b"item:a".to_vec()),
            Value::BulkString(b"A".to_vec()),
            Value::BulkString(b"item:h".to_vec()),
            Value::Nil,
        ])
    );
    let pairs: Vec<(String, String)> = redis::cmd("KRANGE")
        .arg("user:0500")
        .arg("user:0503")
        .arg("withvalues")
        .arg("rev")
        .query(&mut con)
        .unwrap();
    assert_eq!(
        pairs,
        vec![
            ("user:0502".into(), "v502".into()),
            ("user:0501".into(), "v501".into()),
            ("user:0500".into(), "v500".into()),
        ]
    );
    // Deleted keys are gone, new ones appear in place.
    let _: i64 = con.del("user:0011").unwrap();
    let _: () = con.set("user:0010x", "new").unwrap();
    assert_eq!(
        keys(&mut con, &["KRANGE", "user:0010", "user:0013"]),
        vec!["user:0010", "user:0010x", "user:0012"]
    );
    // Paging, as the module documents: from the last key plus a zero byte.
    let mut paged = Vec::new();
    let mut start = b"user:".to_vec();
    loop {
        let page: Vec<Vec<u8>> = redis::cmd("KRANGE")
            .arg(start.as_slice())
            .arg("user;")
            .arg("LIMIT")
            .arg(97)
            .query(&mut con)
            .unwrap();
        let Some(last) = page.last() else { break };
        start = last.clone();
        start.push(0);
        paged.extend(page);
    }
    assert_eq!(paged.len(), 1500);
    assert!(paged.windows(2).all(|w| w[0] < w[1]), "pages in order");
}

#[test]
fn binary_keys_sort_by_bytes_and_resp3_keeps_the_flat_array() {
    let server = ordered_server();
    let mut raw = server.raw();
    let stored: [&[u8]; 7] = [b"\xff\xff", b"a\x00b", b"-", b"+", b"\x00", b"a\xff", b"a"];
    for k in stored {
        assert_eq!(raw.command(&[b"SET", k, b"v"]), Resp::Simple("OK".into()));
    }
    let mut sorted: Vec<Vec<u8>> = stored.iter().map(|k| k.to_vec()).collect();
    sorted.sort();
    assert_eq!(bulks(raw.command(&[b"KRANGE", b"-", b"+"])), sorted);
    assert_eq!(
        bulks(raw.command(&[b"KPREFIX", b"a"])),
        vec![b"a".to_vec(), b"a\x00b".to_vec(), b"a\xff".to_vec()]
    );
    assert_eq!(
        bulks(raw.command(&[b"KPREFIX", b"\xff"])),
        vec![b"\xff\xff".to_vec()]
    );
    assert_eq!(
        bulks(raw.command(&[b"KRANGE", b"a\x00", b"a\xff"])),
        vec![b"a\x00b".to_vec()]
    );
    // RESP3: still an array (ordered), nulls as `_`.
    assert!(matches!(raw.command(&[b"HELLO", b"3"]), Resp::Map(_)));
    assert_eq!(raw.command(&[b"HSET", b"a\x01", b"f", b"v"]), Resp::Int(1));
    assert_eq!(
        raw.command(&[b"KRANGE", b"a", b"a\x02", b"WITHVALUES"]),
        Resp::Array(vec![
            Resp::Bulk(b"a".to_vec()),
            Resp::Bulk(b"v".to_vec()),
            Resp::Bulk(b"a\x00b".to_vec()),
            Resp::Bulk(b"v".to_vec()),
            Resp::Bulk(b"a\x01".to_vec()),
            Resp::Null,
        ])
    );
}

#[test]
fn bad_arguments_and_a_pool_without_the_ordered_index_get_errors() {
    let server = ordered_server();
    let mut con = server.client();
    let _: () = con.set("k", "v").unwrap();
    let cases: [(&[&str], &str); 10] = [
        (
            &["KRANGE", "a"],
            "wrong number of arguments for 'krange' command",
        ),
        (
            &["KRANGE"],
            "wrong number of arguments for 'krange' command",
        ),
        (
            &["KPREFIX"],
            "wrong number of arguments for 'kprefix' command",
        ),
        (&["KRANGE", "-", "+", "LIMIT"], "syntax error"),
        (&["KRANGE", "-", "+", "LIMIT", "ten"], "not an integer"),
        (&["KRANGE", "-", "+", "LIMIT", "1.5"], "not an integer"),
        (&["KRANGE", "-", "+", "BOGUS"], "syntax error"),
        (&["KRANGE", "-", "+", "REV", "extra"], "syntax error"),
        (&["KPREFIX", "k", "WITHSCORES"], "syntax error"),
        (&["KPREFIX", "k", "LIMIT", "x"], "not an integer"),
    ];
    for (args, needle) in cases {
        let e = err(&mut con, args);
        assert!(e.contains(needle), "{args:?}: {e}");
    }
    // The commands are in COMMAND's tables and say so in INFO and CONFIG.
    match cmd(&mut con, &["COMMAND", "INFO", "krange", "kprefix"]).unwrap() {
        Value::Array(entries) => {
            let arities: Vec<Value> = entries
                .iter()
                .map(|e| match e {
                    Value::Array(info) => info[1].clone(),
                    other => panic!("{other:?}"),
                })
                .collect();
            assert_eq!(arities, vec![Value::Int(-3), Value::Int(-2)]);
        }
        other => panic!("{other:?}"),
    }
    let docs = cmd(&mut con, &["COMMAND", "DOCS", "krange"]).unwrap();
    assert!(has_text(&docs, "Needs the ordered index"), "{docs:?}");
    let list: Vec<String> = redis::cmd("COMMAND").arg("LIST").query(&mut con).unwrap();
    assert!(list.contains(&"krange".into()) && list.contains(&"kprefix".into()));
    let config: Vec<String> = redis::cmd("CONFIG")
        .arg("GET")
        .arg("ordered-index")
        .query(&mut con)
        .unwrap();
    assert_eq!(config, vec!["ordered-index", "yes"]);
    let info: String = redis::cmd("INFO")
        .arg("persistence")
        .query(&mut con)
        .unwrap();
    assert!(info.contains("ordered_index:1\r\n"), "{info}");

    // A pool created without the ordered index.
    let plain = TestServer::start();
    let mut con = plain.client();
    let _: () = con.set("k", "v").unwrap();
    for args in [&["KRANGE", "-", "+"][..], &["KPREFIX", "k", "LIMIT", "1"]] {
        let e = err(&mut con, args);
        assert!(e.contains("needs the ordered index"), "{e}");
        assert!(e.contains("--ordered-index"), "{e}");
    }
    // Bad arguments are still named first.
    assert!(err(&mut con, &["KRANGE", "-", "+", "BOGUS"]).contains("syntax error"));
    let info: String = redis::cmd("INFO")
        .arg("persistence")
        .query(&mut con)
        .unwrap();
    assert!(info.contains("ordered_index:0\r\n"), "{info}");
    // SCAN works on both.
    let (_, found): (u64, Vec<String>) = redis::cmd("SCAN").arg(0).query(&mut con).unwrap();
    assert_eq!(found, vec!["k"]);
    assert_eq!(con.get::<_, String>("k").unwrap(), "v");
}

#[test]
fn a_reply_over_the_output_limit_is_refused_and_the_client_stays() {
    let server = TestServer::start_with(|c| {
        c.ordered_index = true;
        c.limits.output_buffer_limit = 1 << 20;
    });
    let mut con = server.client();
    let value = vec![b'v'; 600 << 10];
    let _: () = con.set("a", value.as_slice()).unwrap();
    let _: () = con.set("b", value.as_slice()).unwrap();
    let e = err(&mut con, &["KRANGE", "-", "+", "WITHVALUES"]);
    assert!(e.contains("client-output-buffer-limit"), "{e}");
    assert!(e.contains("LIMIT"), "{e}");
    // The same connection goes on; one value fits.
    let one: Vec<(String, Vec<u8>)> = redis::cmd("KRANGE")
        .arg("-")
        .arg("+")
        .arg("WITHVALUES")
        .arg("LIMIT")
        .arg(1)
        .query(&mut con)
        .unwrap();
    assert_eq!(one, vec![("a".to_string(), value)]);
    assert_eq!(keys(&mut con, &["KPREFIX", "", "REV"]), vec!["b", "a"]);
}

#[test]
fn the_pool_keeps_its_ordered_index_across_a_restart() {
    let mut server = ordered_server();
    let mut con = server.client();
    for i in 0..300 {
        let _: () = con.set(format!("k{i:03}"), i).unwrap();
    }
    drop(con);
    server.stop();
    // Reopened without asking for it: the pool's own setting applies.
    let mut con = server.restart();
    let want: Vec<String> = (0..300).map(|i| format!("k{i:03}")).collect();
    assert_eq!(keys(&mut con, &["KRANGE", "-", "+"]), want);
    assert_eq!(
        keys(&mut con, &["KPREFIX", "k29", "REV"]),
        (290..300)
            .rev()
            .map(|i| format!("k{i}"))
            .collect::<Vec<_>>()
    );
    drop(con);
    server.stop();
}
