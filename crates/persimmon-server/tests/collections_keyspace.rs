//! The keyspace commands over collections (`coll`): DUMP and RESTORE of
//! lists and sets against payloads redis-server 7.0.15 wrote, OBJECT
//! ENCODING, TYPE and SCAN TYPE, SORT over restored collections and SORT
//! STORE, COPY (a deep copy), RENAME and MOVE of a collection large enough
//! to have pages of its own, and the reclaimer deleting the pages of one
//! that was deleted (INFO's `collections_*_reclaimed`).
//!
//! The collections are made by RESTORE (which writes the new encoding
//! whatever the type's own commands write) and read back through commands
//! that read every encoding (DUMP, SORT), so these tests do not depend on
//! the hash, set, list and sorted set commands.

mod common;

use common::{cmd, err, int, TestServer};
use redis::Value;

/// `RPUSH l1 a b c`, `SADD s1 1 2 3`, `SADD s2 a b c` dumped by Redis 7.0.15.
const LIST_SMALL: &str = "12010210100000000300816102816202816302ff0a00c818b90c9533529e";
const SET_INTSET: &str = "0b0e02000000030000000100020003000a00a5025ce26d6e4d1b";
const SET_PLAIN: &str = "02030163016201610a005ea67e5623750bab";

fn unhex(s: &str) -> Vec<u8> {
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).unwrap())
        .collect()
}

fn bytes_cmd(con: &mut redis::Connection, args: &[&[u8]]) -> Value {
    let mut c = redis::cmd(std::str::from_utf8(args[0]).unwrap());
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con).unwrap()
}

fn restore(con: &mut redis::Connection, key: &str, ttl: &str, payload: &[u8], more: &[&str]) {
    let mut args: Vec<&[u8]> = vec![b"RESTORE", key.as_bytes(), ttl.as_bytes(), payload];
    args.extend(more.iter().map(|m| m.as_bytes()));
    assert_eq!(bytes_cmd(con, &args), Value::Okay, "RESTORE {key}");
}

fn dump(con: &mut redis::Connection, key: &str) -> Option<Vec<u8>> {
    match bytes_cmd(con, &[b"DUMP", key.as_bytes()]) {
        Value::Nil => None,
        Value::BulkString(b) => Some(b),
        v => panic!("DUMP {key}: {v:?}"),
    }
}

fn strings(con: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    redis::cmd(args[0]).arg(&args[1..]).query(con).unwrap()
}

fn text(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args).unwrap() {
        Value::BulkString(b) => String::from_utf8(b).unwrap(),
        Value::SimpleString(s) => s,
        Value::Okay => "OK".into(),
        v => panic!("{args:?}: {v:?}"),
    }
}

/// A list of `n` elements restored at `key`, and its elements.
fn big_list(con: &mut redis::Connection, key: &str, n: usize) -> Vec<String> {
    let elements: Vec<String> = (0..n).map(|i| format!("element-{i:06}")).collect();
    for chunk in elements.chunks(500) {
        let _: i64 = redis::cmd("RPUSH")
            .arg(format!("{key}-src"))
            .arg(chunk)
            .query(con)
            .unwrap();
    }
    let payload = dump(con, &format!("{key}-src")).unwrap();
    restore(con, key, "0", &payload, &[]);
    elements
}

fn info_field(con: &mut redis::Connection, name: &str) -> u64 {
    let info = text(con, &["INFO", "persistence"]);
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("INFO has no {name}"))
        .trim()
        .parse()
        .unwrap()
}

#[test]
fn lists_and_sets_dump_and_restore_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    restore(&mut c, "l", "0", &unhex(LIST_SMALL), &[]);
    restore(&mut c, "si", "0", &unhex(SET_INTSET), &[]);
    restore(&mut c, "sp", "5000", &unhex(SET_PLAIN), &[]);
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "nosort"]),
        ["a", "b", "c"]
    );
    assert_eq!(strings(&mut c, &["SORT", "si"]), ["1", "2", "3"]);
    assert_eq!(strings(&mut c, &["SORT", "sp", "ALPHA"]), ["a", "b", "c"]);
    let pttl = int(&mut c, &["PTTL", "sp"]);
    assert!((4000..=5000).contains(&pttl), "pttl {pttl}");
    // A small list dumps to Redis's very bytes; a set as type 2 (plain
    // members, which Redis writes in its hash table's order, here in
    // member order).
    assert_eq!(dump(&mut c, "l"), Some(unhex(LIST_SMALL)));
    let sp = dump(&mut c, "sp").unwrap();
    assert_eq!(&sp[..8], b"\x02\x03\x01a\x01b\x01c");
    // What Persimmon dumps restores to the same collection.
    let si = dump(&mut c, "si").unwrap();
    restore(&mut c, "si2", "0", &si, &[]);
    assert_eq!(strings(&mut c, &["SORT", "si2"]), ["1", "2", "3"]);
    // BUSYKEY, then REPLACE over a list with a set (and no TTL).
    restore(&mut c, "x", "0", &unhex(LIST_SMALL), &[]);
    let busy = redis::cmd("RESTORE")
        .arg("x")
        .arg(0)
        .arg(unhex(SET_PLAIN))
        .query::<Value>(&mut c);
    assert!(busy.unwrap_err().to_string().contains("BUSYKEY"));
    restore(&mut c, "x", "0", &unhex(SET_PLAIN), &["REPLACE"]);
    assert_eq!(text(&mut c, &["TYPE", "x"]), "set");
    assert_eq!(int(&mut c, &["TTL", "x"]), -1);
    // A past deadline with REPLACE deletes.
    restore(&mut c, "x", "1", &unhex(LIST_SMALL), &["REPLACE", "ABSTTL"]);
    assert_eq!(int(&mut c, &["EXISTS", "x"]), 0);
}

#[test]
fn object_encoding_type_and_scan_type_see_collections() {
    let server = TestServer::start();
    let mut c = server.client();
    restore(&mut c, "l", "0", &unhex(LIST_SMALL), &[]);
    restore(&mut c, "si", "0", &unhex(SET_INTSET), &[]);
    restore(&mut c, "sp", "0", &unhex(SET_PLAIN), &[]);
    cmd(&mut c, &["SET", "str", "v"]).unwrap();
    for (key, ty, enc) in [
        ("l", "list", "quicklist"),
        ("si", "set", "intset"),
        ("sp", "set", "hashtable"),
        ("str", "string", "embstr"),
    ] {
        assert_eq!(text(&mut c, &["TYPE", key]), ty, "{key}");
        assert_eq!(text(&mut c, &["OBJECT", "ENCODING", key]), enc, "{key}");
    }
    assert_eq!(
        cmd(&mut c, &["OBJECT", "ENCODING", "nokey"]).unwrap(),
        Value::Nil
    );
    // A restored set of 600 integers is past set-max-intset-entries.
    let many: Vec<String> = (0..600).map(|i| i.to_string()).collect();
    let _: i64 = redis::cmd("SADD")
        .arg("big-src")
        .arg(&many)
        .query(&mut c)
        .unwrap();
    let payload = dump(&mut c, "big-src").unwrap();
    restore(&mut c, "big", "0", &payload, &[]);
    assert_eq!(text(&mut c, &["OBJECT", "ENCODING", "big"]), "hashtable");
    for (ty, want) in [
        ("set", vec!["big", "big-src", "si", "sp"]),
        ("list", vec!["l"]),
    ] {
        let (cursor, mut keys): (String, Vec<String>) = redis::cmd("SCAN")
            .arg(0)
            .arg("COUNT")
            .arg(1000)
            .arg("TYPE")
            .arg(ty)
            .query(&mut c)
            .unwrap();
        assert_eq!(cursor, "0");
        keys.sort();
        assert_eq!(keys, want, "SCAN TYPE {ty}");
    }
}

#[test]
fn sort_reads_collections_and_stores_a_list() {
    let server = TestServer::start();
    let mut c = server.client();
    restore(&mut c, "l", "0", &unhex(LIST_SMALL), &[]);
    restore(&mut c, "s", "0", &unhex(SET_INTSET), &[]);
    assert_eq!(
        strings(&mut c, &["SORT", "l", "ALPHA", "DESC"]),
        ["c", "b", "a"]
    );
    assert_eq!(strings(&mut c, &["SORT_RO", "s", "DESC"]), ["3", "2", "1"]);
    // STORE over a destination with a TTL: a list, no TTL; read back by SORT.
    cmd(&mut c, &["SET", "dst", "old", "EX", "100"]).unwrap();
    assert_eq!(int(&mut c, &["SORT", "s", "DESC", "STORE", "dst"]), 3);
    assert_eq!(text(&mut c, &["TYPE", "dst"]), "list");
    assert_eq!(int(&mut c, &["TTL", "dst"]), -1);
    assert_eq!(
        strings(&mut c, &["SORT", "dst", "BY", "nosort"]),
        ["3", "2", "1"]
    );
    // The source as its own destination, then an empty result deletes it.
    assert_eq!(
        int(&mut c, &["SORT", "l", "ALPHA", "DESC", "STORE", "l"]),
        3
    );
    assert_eq!(
        strings(&mut c, &["SORT", "l", "BY", "nosort"]),
        ["c", "b", "a"]
    );
    assert_eq!(int(&mut c, &["SORT", "nokey", "STORE", "l"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "l"]), 0);
    // BY and GET read hash fields of restored hashes.
    let hash = "101717000000040082663103827631038266320382763203ff0a0003f84c0c15d4a2bc";
    restore(&mut c, "h", "0", &unhex(hash), &[]);
    cmd(&mut c, &["RPUSH", "idx", "h", "nokey"]).unwrap();
    let rows: Vec<Option<String>> = redis::cmd("SORT")
        .arg(&["idx", "BY", "nosort", "GET", "*->f2", "GET", "#"])
        .query(&mut c)
        .unwrap();
    assert_eq!(
        rows,
        [
            Some("v2".into()),
            Some("h".into()),
            None,
            Some("nokey".into())
        ]
    );
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    assert_eq!(err(&mut c, &["SORT", "h"]), wrongtype);
}

#[test]
fn copy_rename_and_move_keep_a_paged_collection_whole() {
    let server = TestServer::start();
    let mut c = server.client();
    let elements = big_list(&mut c, "big", 5000);
    let payload = dump(&mut c, "big").unwrap();
    let before = info_field(&mut c, "collections_trees_reclaimed");
    cmd(&mut c, &["EXPIRE", "big", "1000"]).unwrap();
    // COPY: a deep copy with the TTL; changing the copy leaves the source.
    assert_eq!(int(&mut c, &["COPY", "big", "copy"]), 1);
    assert!(int(&mut c, &["TTL", "copy"]) > 900);
    assert_eq!(
        int(&mut c, &["SORT", "copy", "BY", "nosort", "STORE", "copy"]),
        5000
    );
    assert_eq!(int(&mut c, &["COPY", "big", "copy2", "DB", "2"]), 1);
    // RENAME and MOVE, with reclaimer rounds in between.
    assert_eq!(
        cmd(&mut c, &["RENAME", "big", "big2"]).unwrap(),
        Value::Okay
    );
    std::thread::sleep(std::time::Duration::from_millis(700));
    assert_eq!(int(&mut c, &["MOVE", "big2", "1"]), 1);
    std::thread::sleep(std::time::Duration::from_millis(700));
    cmd(&mut c, &["SELECT", "1"]).unwrap();
    assert_eq!(dump(&mut c, "big2"), Some(payload.clone()));
    assert_eq!(strings(&mut c, &["SORT", "big2", "BY", "nosort"]), elements);
    assert!(int(&mut c, &["TTL", "big2"]) > 900);
    cmd(&mut c, &["SELECT", "2"]).unwrap();
    assert_eq!(dump(&mut c, "copy2"), Some(payload.clone()));
    // DEL: the pages go in the background.
    cmd(&mut c, &["SELECT", "1"]).unwrap();
    assert_eq!(int(&mut c, &["DEL", "big2"]), 1);
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(10);
    while info_field(&mut c, "collections_trees_reclaimed") < before + 2 {
        assert!(std::time::Instant::now() < deadline, "trees not reclaimed");
        std::thread::sleep(std::time::Duration::from_millis(100));
    }
    assert!(info_field(&mut c, "collections_pages_reclaimed") > 2);
    // The copies are whole.
    cmd(&mut c, &["SELECT", "0"]).unwrap();
    assert_eq!(strings(&mut c, &["SORT", "copy", "BY", "nosort"]), elements);
    cmd(&mut c, &["SELECT", "2"]).unwrap();
    assert_eq!(dump(&mut c, "copy2"), Some(payload));
}
