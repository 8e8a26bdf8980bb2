//! INCRBYFLOAT, SUBSTR, LCS, the bit commands (SETBIT, GETBIT, BITCOUNT,
//! BITPOS, BITOP) and HINCRBYFLOAT, HRANDFIELD, HSCAN through an
//! independent client (the `redis` crate, and raw RESP3): each option, the
//! errors Redis 7.0.15 gives (texts checked against redis-server 7.0.15),
//! WRONGTYPE, and the writes inside MULTI/EXEC.

mod common;

use std::collections::HashSet;

use common::{cmd, err, int, Resp, TestServer};
use persimmon_server::MAX_STRING_BYTES;
use redis::Value;

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args).unwrap() {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        v => panic!("{args:?} gave {v:?}"),
    }
}

fn bytes(con: &mut redis::Connection, key: &str) -> Vec<u8> {
    match cmd(con, &["GET", key]).unwrap() {
        Value::BulkString(b) => b,
        v => panic!("GET {key} gave {v:?}"),
    }
}

fn set_bytes(con: &mut redis::Connection, key: &str, value: &[u8]) {
    let v: Value = redis::cmd("SET").arg(key).arg(value).query(con).unwrap();
    assert_eq!(v, Value::Okay);
}

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn bulk_strings(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) => items
            .into_iter()
            .map(|i| match i {
                Value::BulkString(b) => String::from_utf8(b).unwrap(),
                other => panic!("not a bulk string: {other:?}"),
            })
            .collect(),
        other => panic!("not an array: {other:?}"),
    }
}

#[test]
fn incrbyfloat_adds_in_extended_precision_and_prints_like_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(text(&mut c, &["INCRBYFLOAT", "f", "10.5"]), "10.5");
    assert_eq!(text(&mut c, &["GET", "f"]), "10.5");
    assert_eq!(text(&mut c, &["INCRBYFLOAT", "g", "3.0e3"]), "3000");
    // Three times 0.1 is 0.3 in a long double (an f64 would say
    // 0.30000000000000004); 0.3 more on 3000 shows the 64-bit mantissa.
    for want in ["0.1", "0.2", "0.3"] {
        assert_eq!(text(&mut c, &["INCRBYFLOAT", "tenth", "0.1"]), want);
    }
    assert_eq!(
        text(&mut c, &["INCRBYFLOAT", "g", "0.3"]),
        "3000.30000000000000004"
    );
    cmd(&mut c, &["SET", "n", "1.5"]).unwrap();
    assert_eq!(text(&mut c, &["INCRBYFLOAT", "n", "-1.1"]), "0.4");
    cmd(&mut c, &["SET", "n", "17179869184"]).unwrap();
    assert_eq!(text(&mut c, &["INCRBYFLOAT", "n", "1.5"]), "17179869185.5");
    assert_eq!(text(&mut c, &["INCRBYFLOAT", "n", "0x10"]), "17179869201.5");
    // No negative zero.
    cmd(&mut c, &["SET", "z", "0.024390243902439025"]).unwrap();
    assert_eq!(
        text(&mut c, &["INCRBYFLOAT", "z", "-0.024390243902439025"]),
        "0"
    );
    // Bad values and increments; the value stays.
    for bad in [" 11", "11 ", "abc", "1\u{0}2", ""] {
        cmd(&mut c, &["SET", "b", bad]).unwrap();
        assert_eq!(
            err(&mut c, &["INCRBYFLOAT", "b", "1"]),
            "ERR value is not a valid float"
        );
    }
    assert_eq!(
        err(&mut c, &["INCRBYFLOAT", "n", "x"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut c, &["INCRBYFLOAT", "n", "1e5000"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut c, &["INCRBYFLOAT", "n", "+inf"]),
        "ERR increment would produce NaN or Infinity"
    );
    assert_eq!(text(&mut c, &["GET", "n"]), "17179869201.5");
    // The time to live is kept.
    cmd(&mut c, &["SET", "t", "1", "EX", "100"]).unwrap();
    assert_eq!(text(&mut c, &["INCRBYFLOAT", "t", "1"]), "2");
    assert!(int(&mut c, &["TTL", "t"]) > 0);
    cmd(&mut c, &["HSET", "h", "a", "1"]).unwrap();
    assert_eq!(err(&mut c, &["INCRBYFLOAT", "h", "1"]), WRONGTYPE);
}

#[test]
fn substr_is_getrange() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "s", "Hello World"]).unwrap();
    assert_eq!(text(&mut c, &["SUBSTR", "s", "0", "3"]), "Hell");
    assert_eq!(text(&mut c, &["SUBSTR", "s", "-4", "-1"]), "orld");
    assert_eq!(text(&mut c, &["SUBSTR", "missing", "0", "-1"]), "");
    assert_eq!(
        err(&mut c, &["SUBSTR", "s", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
}

#[test]
fn setbit_and_getbit() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["SETBIT", "k", "1", "1"]), 0);
    assert_eq!(bytes(&mut c, "k"), vec![0b0100_0000]);
    assert_eq!(int(&mut c, &["SETBIT", "k", "1", "1"]), 1);
    assert_eq!(int(&mut c, &["SETBIT", "k", "1", "0"]), 1);
    assert_eq!(int(&mut c, &["SETBIT", "k", "17", "1"]), 0);
    assert_eq!(bytes(&mut c, "k"), vec![0, 0, 0b0100_0000]);
    // A string's other bytes and its time to live stay.
    cmd(&mut c, &["SET", "s", "@", "EX", "100"]).unwrap();
    assert_eq!(int(&mut c, &["SETBIT", "s", "2", "1"]), 0);
    assert_eq!(text(&mut c, &["GET", "s"]), "`");
    assert!(int(&mut c, &["TTL", "s"]) > 0);
    // GETBIT: in range, past the end, missing key.
    assert_eq!(int(&mut c, &["GETBIT", "s", "1"]), 1);
    assert_eq!(int(&mut c, &["GETBIT", "s", "3"]), 0);
    assert_eq!(int(&mut c, &["GETBIT", "s", "10000"]), 0);
    assert_eq!(int(&mut c, &["GETBIT", "missing", "0"]), 0);
    assert_eq!(int(&mut c, &["GETBIT", "s", "4294967295"]), 0);
    // Offsets: Redis's bound (2^32 bits) and then the server's value limit.
    for bad in ["-1", "4294967296", "x", "1.5"] {
        let want = "ERR bit offset is not an integer or out of range";
        assert_eq!(err(&mut c, &["SETBIT", "k", bad, "1"]), want);
        assert_eq!(err(&mut c, &["GETBIT", "k", bad]), want);
    }
    let past_ours = (MAX_STRING_BYTES as u64 * 8).to_string();
    let e = err(&mut c, &["SETBIT", "k", &past_ours, "1"]);
    assert!(
        e.starts_with("ERR bit offset is out of range: persimmon stores at most"),
        "{e}"
    );
    for bad in ["-1", "2", "10", "x"] {
        assert_eq!(
            err(&mut c, &["SETBIT", "k", "0", bad]),
            "ERR bit is not an integer or out of range"
        );
    }
    cmd(&mut c, &["HSET", "h", "a", "1"]).unwrap();
    assert_eq!(err(&mut c, &["SETBIT", "h", "0", "1"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["GETBIT", "h", "0"]), WRONGTYPE);
}

#[test]
fn bitcount_whole_and_ranges() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "k", "foobar"]).unwrap();
    let cases: &[(&[&str], i64)] = &[
        (&[], 26),
        (&["0", "0"], 4),
        (&["1", "1"], 6),
        (&["1", "1", "BYTE"], 6),
        (&["5", "30", "BIT"], 17),
        (&["0", "-1", "bit"], 26),
        (&["-2", "-1"], 7),
        (&["-1", "-2", "whatever"], 0),
        (&["4", "2"], 0),
    ];
    for (range, want) in cases {
        let mut args = vec!["BITCOUNT", "k"];
        args.extend_from_slice(range);
        assert_eq!(int(&mut c, &args), *want, "{args:?}");
    }
    assert_eq!(int(&mut c, &["BITCOUNT", "missing"]), 0);
    // A missing key answers before its range is read, as in Redis.
    assert_eq!(int(&mut c, &["BITCOUNT", "missing", "a", "b"]), 0);
    assert_eq!(err(&mut c, &["BITCOUNT", "k", "1"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["BITCOUNT", "k", "1", "2", "3"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["BITCOUNT", "k", "1", "2", "BIT", "x"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["BITCOUNT", "k", "a", "b"]),
        "ERR value is not an integer or out of range"
    );
    cmd(&mut c, &["HSET", "h", "a", "1"]).unwrap();
    assert_eq!(err(&mut c, &["BITCOUNT", "h"]), WRONGTYPE);
}

#[test]
fn bitpos_finds_set_and_clear_bits() {
    let server = TestServer::start();
    let mut c = server.client();
    set_bytes(&mut c, "a", &[0xFF, 0xF0, 0x00]);
    set_bytes(&mut c, "b", &[0x00, 0xFF, 0xF0]);
    set_bytes(&mut c, "ones", &[0xFF, 0xFF]);
    set_bytes(&mut c, "zeros", &[0, 0, 0]);
    let cases: &[(&[&str], i64)] = &[
        (&["a", "0"], 12),
        (&["b", "1", "0"], 8),
        (&["b", "1", "2"], 16),
        (&["b", "1", "2", "-1", "BYTE"], 16),
        (&["b", "1", "7", "15", "BIT"], 8),
        (&["b", "1", "7", "-3", "bit"], 8),
        (&["b", "0", "8", "15", "BIT"], -1),
        (&["zeros", "1"], -1),
        // Clear bits: the string continues with them unless an end is given.
        (&["ones", "0"], 16),
        (&["ones", "0", "0"], 16),
        (&["ones", "0", "0", "-1"], -1),
        (&["ones", "0", "3", "14", "BIT"], -1),
        (&["ones", "1", "20"], -1),
        (&["ones", "1", "1", "0"], -1),
        // A missing key is all clear bits.
        (&["missing", "0"], 0),
        (&["missing", "1"], -1),
        (&["missing", "0", "junk"], 0),
    ];
    for (args, want) in cases {
        let mut full = vec!["BITPOS"];
        full.extend_from_slice(args);
        assert_eq!(int(&mut c, &full), *want, "{full:?}");
    }
    let bit_err = "ERR The bit argument must be 1 or 0.";
    assert_eq!(err(&mut c, &["BITPOS", "a", "2"]), bit_err);
    assert_eq!(err(&mut c, &["BITPOS", "missing", "2"]), bit_err);
    assert_eq!(
        err(&mut c, &["BITPOS", "a", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["BITPOS", "a", "0", "a"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["BITPOS", "a", "1", "0", "1", "x"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["BITPOS", "a", "1", "0", "1", "BIT", "x"]),
        "ERR syntax error"
    );
    cmd(&mut c, &["HSET", "h", "a", "1"]).unwrap();
    assert_eq!(err(&mut c, &["BITPOS", "h", "1"]), WRONGTYPE);
}

#[test]
fn bitop_stores_the_result_atomically() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "f1", "foo"]).unwrap();
    cmd(&mut c, &["SET", "f2", "U"]).unwrap();
    cmd(&mut c, &["SET", "d", "old", "EX", "100"]).unwrap();
    assert_eq!(int(&mut c, &["BITOP", "AND", "d", "f1", "f2"]), 3);
    assert_eq!(bytes(&mut c, "d"), b"D\0\0");
    // The destination is set anew: no time to live.
    assert_eq!(int(&mut c, &["TTL", "d"]), -1);
    assert_eq!(int(&mut c, &["BITOP", "or", "d", "f1", "f2"]), 3);
    assert_eq!(bytes(&mut c, "d"), b"woo");
    assert_eq!(int(&mut c, &["BITOP", "Xor", "d", "f1", "f2"]), 3);
    assert_eq!(bytes(&mut c, "d"), b"3oo");
    assert_eq!(int(&mut c, &["BITOP", "NOT", "d", "f1"]), 3);
    assert_eq!(bytes(&mut c, "d"), vec![0x99, 0x90, 0x90]);
    // A missing source is an empty string; an empty result deletes.
    assert_eq!(int(&mut c, &["BITOP", "OR", "d", "f2", "nope"]), 1);
    assert_eq!(bytes(&mut c, "d"), b"U");
    assert_eq!(int(&mut c, &["BITOP", "AND", "d", "nope1", "nope2"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "d"]), 0);
    // The destination may be a source.
    assert_eq!(int(&mut c, &["BITOP", "XOR", "f1", "f1", "f1"]), 3);
    assert_eq!(bytes(&mut c, "f1"), b"\0\0\0");
    assert_eq!(
        err(&mut c, &["BITOP", "NAND", "d", "f1"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["BITOP", "NOT", "d", "f1", "f2"]),
        "ERR BITOP NOT must be called with a single source key."
    );
    assert_eq!(
        err(&mut c, &["BITOP", "AND", "d"]),
        "ERR wrong number of arguments for 'bitop' command"
    );
    cmd(&mut c, &["HSET", "h", "a", "1"]).unwrap();
    cmd(&mut c, &["SET", "d", "keep"]).unwrap();
    assert_eq!(err(&mut c, &["BITOP", "AND", "d", "f2", "h"]), WRONGTYPE);
    assert_eq!(text(&mut c, &["GET", "d"]), "keep");
}

#[test]
fn lcs_with_every_option() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "k1", "ohmytext"]).unwrap();
    cmd(&mut c, &["SET", "k2", "mynewtext"]).unwrap();
    assert_eq!(text(&mut c, &["LCS", "k1", "k2"]), "mytext");
    assert_eq!(int(&mut c, &["LCS", "k1", "k2", "LEN"]), 6);
    let range = |a: i64, b: i64| Value::Array(vec![Value::Int(a), Value::Int(b)]);
    let idx = cmd(&mut c, &["LCS", "k1", "k2", "IDX"]).unwrap();
    assert_eq!(
        idx,
        Value::Array(vec![
            Value::BulkString(b"matches".to_vec()),
            Value::Array(vec![
                Value::Array(vec![range(4, 7), range(5, 8)]),
                Value::Array(vec![range(2, 3), range(0, 1)]),
            ]),
            Value::BulkString(b"len".to_vec()),
            Value::Int(6),
        ])
    );
    let idx = cmd(
        &mut c,
        &["LCS", "k1", "k2", "IDX", "MINMATCHLEN", "4", "WITHMATCHLEN"],
    )
    .unwrap();
    assert_eq!(
        idx,
        Value::Array(vec![
            Value::BulkString(b"matches".to_vec()),
            Value::Array(vec![Value::Array(vec![
                range(4, 7),
                range(5, 8),
                Value::Int(4)
            ])]),
            Value::BulkString(b"len".to_vec()),
            Value::Int(6),
        ])
    );
    assert_eq!(text(&mut c, &["LCS", "k1", "missing"]), "");
    assert_eq!(
        err(&mut c, &["LCS", "k1", "k2", "LEN", "IDX"]),
        "ERR If you want both the length and indexes, please just use IDX."
    );
    assert_eq!(err(&mut c, &["LCS", "k1", "k2", "FOO"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["LCS", "k1", "k2", "MINMATCHLEN"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["LCS", "k1", "k2", "MINMATCHLEN", "x"]),
        "ERR value is not an integer or out of range"
    );
    cmd(&mut c, &["HSET", "h", "a", "1"]).unwrap();
    // The type is checked before the options.
    assert_eq!(
        err(&mut c, &["LCS", "k1", "h", "FOO"]),
        "ERR The specified keys must contain string values"
    );
}

#[test]
fn hincrbyfloat_adds_to_fields() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(text(&mut c, &["HINCRBYFLOAT", "h", "f", "2.5"]), "2.5");
    assert_eq!(text(&mut c, &["HGET", "h", "f"]), "2.5");
    assert_eq!(text(&mut c, &["HINCRBYFLOAT", "h", "g", "1.23"]), "1.23");
    assert_eq!(text(&mut c, &["HINCRBYFLOAT", "h", "g", "0.77"]), "2");
    assert_eq!(text(&mut c, &["HINCRBYFLOAT", "h", "g", "-0.1"]), "1.9");
    cmd(&mut c, &["HSET", "h", "i", "17179869184"]).unwrap();
    assert_eq!(
        text(&mut c, &["HINCRBYFLOAT", "h", "i", "17179869184"]),
        "34359738368"
    );
    for bad in [" 11", "11 ", "1\u{0}2"] {
        cmd(&mut c, &["HSET", "h", "s", bad]).unwrap();
        assert_eq!(
            err(&mut c, &["HINCRBYFLOAT", "h", "s", "1"]),
            "ERR hash value is not a float"
        );
    }
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "f", "x"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "new", "f", "+inf"]),
        "ERR value is NaN or Infinity"
    );
    assert_eq!(int(&mut c, &["EXISTS", "new"]), 0);
    cmd(&mut c, &["HSET", "h", "big", "1e4932"]).unwrap();
    assert_eq!(
        err(&mut c, &["HINCRBYFLOAT", "h", "big", "1e4932"]),
        "ERR increment would produce NaN or Infinity"
    );
    cmd(&mut c, &["SET", "s", "1"]).unwrap();
    assert_eq!(err(&mut c, &["HINCRBYFLOAT", "s", "f", "1"]), WRONGTYPE);
}

#[test]
fn hrandfield_counts_and_values() {
    let server = TestServer::start();
    let mut c = server.client();
    let fields: Vec<String> = (0..10).map(|i| format!("f{i}")).collect();
    let mut hset = vec!["HSET".to_string(), "h".into()];
    for f in &fields {
        hset.push(f.clone());
        hset.push(format!("v{f}"));
    }
    let hset: Vec<&str> = hset.iter().map(String::as_str).collect();
    cmd(&mut c, &hset).unwrap();
    let all: HashSet<String> = fields.iter().cloned().collect();
    // No count: one field; over many calls, every field.
    let mut seen = HashSet::new();
    for _ in 0..500 {
        seen.insert(text(&mut c, &["HRANDFIELD", "h"]));
    }
    assert_eq!(seen, all);
    assert_eq!(cmd(&mut c, &["HRANDFIELD", "missing"]).unwrap(), Value::Nil);
    // Positive counts: distinct fields, at most all of them.
    for (count, want) in [("3", 3), ("10", 10), ("20", 10)] {
        let got = bulk_strings(cmd(&mut c, &["HRANDFIELD", "h", count]).unwrap());
        assert_eq!(got.len(), want);
        let distinct: HashSet<String> = got.iter().cloned().collect();
        assert_eq!(distinct.len(), want);
        assert!(distinct.is_subset(&all));
    }
    // Negative counts repeat fields.
    let got = bulk_strings(cmd(&mut c, &["HRANDFIELD", "h", "-1001"]).unwrap());
    assert_eq!(got.len(), 1001);
    assert_eq!(got.iter().cloned().collect::<HashSet<_>>(), all);
    // WITHVALUES: field, value pairs.
    let got = bulk_strings(cmd(&mut c, &["HRANDFIELD", "h", "-5", "WITHVALUES"]).unwrap());
    assert_eq!(got.len(), 10);
    for pair in got.chunks(2) {
        assert_eq!(pair[1], format!("v{}", pair[0]));
    }
    assert_eq!(
        cmd(&mut c, &["HRANDFIELD", "h", "0"]).unwrap(),
        Value::Array(vec![])
    );
    assert_eq!(
        cmd(&mut c, &["HRANDFIELD", "missing", "5"]).unwrap(),
        Value::Array(vec![])
    );
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "h", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    assert_eq!(
        err(
            &mut c,
            &["HRANDFIELD", "h", "-9223372036854770000", "WITHVALUES"]
        ),
        "ERR value is out of range"
    );
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "h", "x"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "h", "1", "FOO"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["HRANDFIELD", "h", "1", "WITHVALUES", "x"]),
        "ERR syntax error"
    );
    cmd(&mut c, &["SET", "s", "1"]).unwrap();
    assert_eq!(err(&mut c, &["HRANDFIELD", "s"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["HRANDFIELD", "s", "0"]), WRONGTYPE);
}

#[test]
fn hrandfield_nests_pairs_in_resp3() {
    let server = TestServer::start();
    let mut raw = server.raw();
    assert!(matches!(raw.command(&[b"HELLO", b"3"]), Resp::Map(_)));
    raw.command(&[b"HSET", b"h", b"a", b"1", b"b", b"2", b"c", b"3"]);
    let Resp::Array(items) = raw.command(&[b"HRANDFIELD", b"h", b"3", b"WITHVALUES"]) else {
        panic!("not an array")
    };
    assert_eq!(items.len(), 3);
    for item in items {
        let Resp::Array(pair) = item else {
            panic!("not a pair")
        };
        assert_eq!(pair.len(), 2);
    }
    let Resp::Array(items) = raw.command(&[b"HRANDFIELD", b"h", b"-4"]) else {
        panic!("not an array")
    };
    assert_eq!(items.len(), 4);
    assert!(items.iter().all(|i| matches!(i, Resp::Bulk(_))));
    assert_eq!(raw.command(&[b"HRANDFIELD", b"nope"]), Resp::Null);
}

#[test]
fn hscan_walks_the_fields_by_rank() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["HSET", "h", "a1", "1", "b1", "2", "a2", "3"]).unwrap();
    let scan = |c: &mut redis::Connection, args: &[&str]| match cmd(c, args).unwrap() {
        Value::Array(mut parts) => {
            let items = bulk_strings(parts.pop().unwrap());
            let cursor = bulk_strings(Value::Array(parts)).remove(0);
            (cursor, items)
        }
        v => panic!("{v:?}"),
    };
    // Default COUNT (10) covers the hash: one call, cursor 0.
    let (cursor, items) = scan(&mut c, &["HSCAN", "h", "0"]);
    assert_eq!(cursor, "0");
    let pairs: std::collections::BTreeSet<(String, String)> = items
        .chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect();
    let want = [("a1", "1"), ("a2", "3"), ("b1", "2")];
    assert_eq!(
        pairs,
        want.map(|(f, v)| (f.to_string(), v.to_string())).into()
    );
    // COUNT 1 examines one field per call; MATCH filters what it examined.
    let mut cursor = "0".to_string();
    let mut matched = Vec::new();
    let mut calls = 0;
    loop {
        let (next, items) = scan(
            &mut c,
            &["HSCAN", "h", &cursor, "MATCH", "a*", "COUNT", "1"],
        );
        assert!(items.len() <= 2);
        matched.extend(items);
        calls += 1;
        cursor = next;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(calls, 3);
    matched.sort();
    assert_eq!(matched, ["1", "3", "a1", "a2"]);
    // Redis reads the cursor with strtoul: empty and negative are fine
    // (a cursor past the end ends the iteration).
    assert_eq!(scan(&mut c, &["HSCAN", "h", ""]).1.len(), 6);
    assert_eq!(
        scan(&mut c, &["HSCAN", "h", "-1"]),
        ("0".to_string(), vec![])
    );
    assert_eq!(
        scan(&mut c, &["HSCAN", "missing", "0", "COUNT", "0"]),
        ("0".to_string(), vec![])
    );
    for bad in ["x", "+", "18446744073709551616"] {
        assert_eq!(err(&mut c, &["HSCAN", "h", bad]), "ERR invalid cursor");
    }
    assert_eq!(
        err(&mut c, &["HSCAN", "h", "0", "COUNT", "0"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["HSCAN", "h", "0", "MATCH"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["HSCAN", "h", "0", "TYPE", "string"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["HSCAN", "h", "0", "COUNT", "x"]),
        "ERR value is not an integer or out of range"
    );
    cmd(&mut c, &["SET", "s", "1"]).unwrap();
    assert_eq!(err(&mut c, &["HSCAN", "s", "0"]), WRONGTYPE);
}

#[test]
fn bit_and_float_writes_inside_multi_exec() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "src", "foo"]).unwrap();
    let replies: Value = redis::pipe()
        .atomic()
        .cmd("SETBIT")
        .arg("bits")
        .arg(7)
        .arg(1)
        .cmd("BITOP")
        .arg("OR")
        .arg("dest")
        .arg("bits")
        .arg("src")
        .cmd("INCRBYFLOAT")
        .arg("fl")
        .arg("0.5")
        .cmd("HINCRBYFLOAT")
        .arg("hf")
        .arg("x")
        .arg("1.5")
        .cmd("BITCOUNT")
        .arg("dest")
        .query(&mut c)
        .unwrap();
    assert_eq!(
        replies,
        Value::Array(vec![
            Value::Int(0),
            Value::Int(3),
            Value::BulkString(b"0.5".to_vec()),
            Value::BulkString(b"1.5".to_vec()),
            Value::Int(17),
        ])
    );
    assert_eq!(bytes(&mut c, "dest"), b"goo");
}
