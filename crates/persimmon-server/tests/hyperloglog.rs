//! PFADD, PFCOUNT and PFMERGE give redis-server's results: the counts and
//! value lengths below are what redis-server 7.0.15 answered for the same
//! elements (sparse while small, dense — 12304 bytes — from about 5000
//! elements), and a value made by Redis (a sparse one built here opcode by
//! opcode) is read as Redis reads it. Plus the errors for strings that are
//! not HyperLogLogs.

mod common;

use common::{cmd, err, int, TestServer};
use redis::Value;

fn add_n(c: &mut redis::Connection, key: &str, n: usize) {
    let els: Vec<String> = (0..n).map(|i| format!("e{n}-{i}")).collect();
    for chunk in els.chunks(500) {
        let mut args = vec!["PFADD", key];
        args.extend(chunk.iter().map(String::as_str));
        cmd(c, &args).unwrap();
    }
}

fn len(c: &mut redis::Connection, key: &str) -> i64 {
    int(c, &["STRLEN", key])
}

#[test]
fn counts_and_encodings_are_redis_s() {
    let server = TestServer::start();
    let mut c = server.client();
    // (elements, PFCOUNT, value length) as redis-server 7.0.15 gives them.
    for (n, count, bytes) in [
        (1, 1, 21),
        (5, 5, 33),
        (100, 100, 284),
        (1000, 999, 1905),
        (5000, 4974, 12304),
        (30000, 30039, 12304),
    ] {
        let key = format!("h{n}");
        add_n(&mut c, &key, n);
        assert_eq!(int(&mut c, &["PFCOUNT", &key]), count, "{n} elements");
        assert_eq!(len(&mut c, &key), bytes, "{n} elements");
    }
    assert_eq!(int(&mut c, &["PFCOUNT", "h1000", "h5000", "nokey"]), 5990);
    // PFADD: 1 when created or changed, else 0.
    assert_eq!(int(&mut c, &["PFADD", "new"]), 1);
    assert_eq!(int(&mut c, &["PFADD", "new"]), 0);
    assert_eq!(int(&mut c, &["PFADD", "new", "a", "b"]), 1);
    assert_eq!(int(&mut c, &["PFADD", "new", "a", "b"]), 0);
    assert_eq!(int(&mut c, &["PFCOUNT", "new"]), 2);
    // PFMERGE into a key with a time to live keeps it.
    cmd(&mut c, &["PFADD", "m", "z"]).unwrap();
    cmd(&mut c, &["EXPIRE", "m", "1000"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["PFMERGE", "m", "h1000", "new"]).unwrap(),
        Value::Okay
    );
    assert_eq!(int(&mut c, &["PFCOUNT", "m"]), 1002);
    assert!(int(&mut c, &["TTL", "m"]) > 900);
    assert_eq!(cmd(&mut c, &["PFMERGE", "empty"]).unwrap(), Value::Okay);
    assert_eq!(int(&mut c, &["PFCOUNT", "empty"]), 0);
}

#[test]
fn the_cardinality_cache_and_pfdebug_behave_as_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    let byte15 = |c: &mut redis::Connection| match cmd(c, &["GETRANGE", "h", "15", "15"]).unwrap() {
        Value::BulkString(b) => b[0],
        other => panic!("{other:?}"),
    };
    cmd(&mut c, &["PFADD", "h", "a", "b", "c"]).unwrap();
    assert_eq!(byte15(&mut c), 0x80, "stale after PFADD");
    assert_eq!(int(&mut c, &["PFCOUNT", "h"]), 3);
    assert_eq!(byte15(&mut c), 0, "cached by PFCOUNT");
    assert_eq!(int(&mut c, &["PFADD", "h", "a", "b", "c"]), 0);
    assert_eq!(byte15(&mut c), 0, "no change, cache kept");
    assert_eq!(int(&mut c, &["PFADD", "h", "1", "2", "3"]), 1);
    assert_eq!(byte15(&mut c), 0x80);
    assert_eq!(int(&mut c, &["PFCOUNT", "h"]), 6);
    let enc = |c: &mut redis::Connection| cmd(c, &["PFDEBUG", "ENCODING", "h"]).unwrap();
    assert_eq!(enc(&mut c), Value::SimpleString("sparse".into()));
    assert_eq!(int(&mut c, &["PFDEBUG", "TODENSE", "h"]), 1);
    assert_eq!(enc(&mut c), Value::SimpleString("dense".into()));
    assert_eq!(int(&mut c, &["PFDEBUG", "TODENSE", "h"]), 0);
    assert_eq!(int(&mut c, &["PFCOUNT", "h"]), 6, "the cache survived");
    match cmd(&mut c, &["PFDEBUG", "GETREG", "h"]).unwrap() {
        Value::Array(regs) => {
            assert_eq!(regs.len(), 16384);
            let set = regs.iter().filter(|r| **r != Value::Int(0)).count();
            assert_eq!(set, 6);
        }
        other => panic!("{other:?}"),
    }
    assert_eq!(
        err(&mut c, &["PFDEBUG", "ENCODING", "none"]),
        "ERR The specified key does not exist"
    );
}

#[test]
fn a_sparse_value_from_redis_is_read_and_bad_values_refused() {
    let server = TestServer::start();
    let mut c = server.client();
    // Header, then XZERO 100, VAL 3 x2, XZERO 16282: 2 registers of 3.
    let mut v = b"HYLL\x01\x00\x00\x00\x00\x00\x00\x00\x00\x00\x00\x80".to_vec();
    v.extend([0x40, 99, 0x80 | (2 << 2) | 1]);
    let rest = 16384 - 102 - 1;
    v.extend([0x40 | (rest >> 8) as u8, (rest & 0xff) as u8]);
    redis::cmd("SET")
        .arg("r")
        .arg(&v)
        .query::<()>(&mut c)
        .unwrap();
    assert_eq!(int(&mut c, &["PFCOUNT", "r"]), 2);
    v.truncate(v.len() - 1);
    redis::cmd("SET")
        .arg("r")
        .arg(&v)
        .query::<()>(&mut c)
        .unwrap();
    assert_eq!(
        err(&mut c, &["PFCOUNT", "r"]),
        "INVALIDOBJ Corrupted HLL object detected"
    );
    cmd(&mut c, &["SET", "s", "not an hll"]).unwrap();
    for args in [
        &["PFADD", "s", "x"][..],
        &["PFCOUNT", "s"],
        &["PFMERGE", "d", "s"],
    ] {
        assert_eq!(
            err(&mut c, args),
            "WRONGTYPE Key is not a valid HyperLogLog string value.",
            "{args:?}"
        );
    }
    cmd(&mut c, &["LPUSH", "l", "x"]).unwrap();
    assert!(err(&mut c, &["PFCOUNT", "l"]).starts_with("WRONGTYPE Operation"));
    assert_eq!(
        int(&mut c, &["EXISTS", "d"]),
        0,
        "a refused PFMERGE wrote nothing"
    );
}
