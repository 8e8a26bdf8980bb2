//! Hashes and sets (collections, issue 17) against in-memory models: a
//! seeded random sequence of commands through the `redis` crate, every
//! reply compared with what the model says Redis would answer. One hash
//! and one set are large enough (thousands of entries) to span many pages
//! of the collection tree; the others stay small, so keys also come and go
//! with their last entry. Replies whose order Redis does not promise are
//! compared as sets.

mod common;

use std::collections::{BTreeMap, BTreeSet};

use common::TestServer;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::Value;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn run(con: &mut redis::Connection, args: &[String]) -> Result<Value, String> {
    let mut c = redis::cmd(&args[0]);
    for a in &args[1..] {
        c.arg(a.as_str());
    }
    c.query(con)
        .map_err(|e| format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")))
}

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8(b.clone()).unwrap(),
        Value::SimpleString(s) => s.clone(),
        v => panic!("not a string: {v:?}"),
    }
}

fn texts(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) | Value::Set(items) => items.iter().map(text).collect(),
        Value::Map(pairs) => pairs.iter().flat_map(|(k, v)| [text(k), text(v)]).collect(),
        v => panic!("not an array: {v:?}"),
    }
}

fn opt_text(v: Value) -> Option<String> {
    match v {
        Value::Nil => None,
        v => Some(text(&v)),
    }
}

fn int(v: Value) -> i64 {
    match v {
        Value::Int(n) => n,
        v => panic!("not an integer: {v:?}"),
    }
}

fn s(x: impl ToString) -> String {
    x.to_string()
}

fn args(parts: &[&str]) -> Vec<String> {
    parts.iter().map(|p| p.to_string()).collect()
}

fn pairs(flat: Vec<String>) -> BTreeMap<String, String> {
    assert_eq!(flat.len() % 2, 0);
    flat.chunks(2)
        .map(|p| (p[0].clone(), p[1].clone()))
        .collect()
}

/// Whether `name` matches a pattern of the form `prefix*`.
fn matches(pattern: &str, name: &str) -> bool {
    name.starts_with(pattern.trim_end_matches('*'))
}

/// A full HSCAN/SSCAN iteration with random COUNTs: every item once.
fn scan_all(
    con: &mut redis::Connection,
    rng: &mut StdRng,
    cmd: &str,
    key: &str,
    pattern: &str,
) -> Vec<String> {
    let mut cursor = s(0);
    let mut items = Vec::new();
    loop {
        let count = rng.gen_range(1..60);
        let reply = run(
            con,
            &args(&[cmd, key, &cursor, "MATCH", pattern, "COUNT", &s(count)]),
        )
        .unwrap();
        let Value::Array(mut parts) = reply else {
            panic!("{reply:?}")
        };
        let batch = texts(parts.pop().unwrap());
        let per = if cmd == "HSCAN" { 2 } else { 1 };
        assert!(
            batch.len() <= count * per,
            "COUNT {count} gave {}",
            batch.len()
        );
        items.extend(batch);
        cursor = text(&parts[0]);
        if cursor == "0" {
            return items;
        }
    }
}

type Hash = BTreeMap<String, String>;

fn hash_int(v: &str) -> Option<i64> {
    v.parse::<i64>().ok().filter(|n| n.to_string() == v)
}

fn float_text(x: f64) -> String {
    if x.fract() == 0.0 {
        format!("{}", x as i64)
    } else {
        format!("{x}")
    }
}

fn hash_field(rng: &mut StdRng, key: usize) -> String {
    match rng.gen_range(0..10) {
        0 => format!("n{}", rng.gen_range(0..4)),
        _ if key == 0 => format!("f{}", rng.gen_range(0..3000)),
        _ => format!("f{}", rng.gen_range(0..12)),
    }
}

fn hash_value(rng: &mut StdRng, field: &str) -> String {
    if field.starts_with('n') {
        return s(rng.gen_range(-50..50));
    }
    let len = rng.gen_range(0..40);
    (0..len)
        .map(|_| rng.gen_range(b'a'..=b'z') as char)
        .collect()
}

/// One random hash command against the server and the model.
fn hash_step(con: &mut redis::Connection, rng: &mut StdRng, model: &mut [Hash; 3]) {
    let k = rng.gen_range(0..4);
    if k == 3 {
        // The string key: every hash command is WRONGTYPE.
        let op = ["HGET", "HSET", "HLEN", "HGETALL", "HSCAN"][rng.gen_range(0..5)];
        let a = match op {
            "HGET" => args(&[op, "str", "f"]),
            "HSET" => args(&[op, "str", "f", "v"]),
            "HSCAN" => args(&[op, "str", "0"]),
            _ => args(&[op, "str"]),
        };
        assert_eq!(run(con, &a).unwrap_err(), WRONGTYPE, "{a:?}");
        return;
    }
    let key = format!("h{k}");
    let h = &mut model[k];
    let f = hash_field(rng, k);
    match rng.gen_range(0..100) {
        0..=29 => {
            let mut a = args(&["HSET", &key]);
            let mut added = BTreeSet::new();
            for _ in 0..rng.gen_range(1..4) {
                let f = hash_field(rng, k);
                let v = hash_value(rng, &f);
                if !h.contains_key(&f) {
                    added.insert(f.clone());
                }
                h.insert(f.clone(), v.clone());
                a.extend([f, v]);
            }
            assert_eq!(int(run(con, &a).unwrap()), added.len() as i64, "{a:?}");
        }
        30..=34 => {
            let v = hash_value(rng, &f);
            let new = !h.contains_key(&f);
            if new {
                h.insert(f.clone(), v.clone());
            }
            assert_eq!(
                int(run(con, &args(&["HSETNX", &key, &f, &v])).unwrap()),
                new as i64
            );
        }
        35..=49 => {
            let mut a = args(&["HDEL", &key, &f]);
            let mut gone = h.remove(&f).is_some() as i64;
            if rng.gen_bool(0.5) {
                let g = hash_field(rng, k);
                gone += h.remove(&g).is_some() as i64;
                a.push(g);
            }
            assert_eq!(int(run(con, &a).unwrap()), gone, "{a:?}");
        }
        50..=59 => {
            let got = opt_text(run(con, &args(&["HGET", &key, &f])).unwrap());
            assert_eq!(got.as_ref(), h.get(&f), "HGET {key} {f}");
        }
        60..=63 => {
            let g = hash_field(rng, k);
            let got = run(con, &args(&["HMGET", &key, &f, &g])).unwrap();
            let Value::Array(items) = got else {
                panic!("{got:?}")
            };
            let got: Vec<Option<String>> = items.into_iter().map(opt_text).collect();
            assert_eq!(got, vec![h.get(&f).cloned(), h.get(&g).cloned()]);
        }
        64..=66 => {
            assert_eq!(
                int(run(con, &args(&["HEXISTS", &key, &f])).unwrap()),
                h.contains_key(&f) as i64
            );
            assert_eq!(
                int(run(con, &args(&["HSTRLEN", &key, &f])).unwrap()),
                h.get(&f).map_or(0, |v| v.len()) as i64
            );
        }
        67..=70 => {
            assert_eq!(
                int(run(con, &args(&["HLEN", &key])).unwrap()),
                h.len() as i64
            );
            assert_eq!(
                int(run(con, &args(&["EXISTS", &key])).unwrap()),
                !h.is_empty() as i64
            );
        }
        71..=77 => {
            let delta = rng.gen_range(-20..20);
            let got = run(con, &args(&["HINCRBY", &key, &f, &s(delta)]));
            match h.get(&f).map_or(Some(0), |v| hash_int(v)) {
                Some(n) => {
                    assert_eq!(int(got.unwrap()), n + delta);
                    h.insert(f, s(n + delta));
                }
                None => assert_eq!(got.unwrap_err(), "ERR hash value is not an integer"),
            }
        }
        78..=81 => {
            let delta = [0.5, 1.0, -2.5][rng.gen_range(0..3)];
            let got = run(con, &args(&["HINCRBYFLOAT", &key, &f, &s(delta)]));
            match h.get(&f).map_or(Some(0.0), |v| v.parse::<f64>().ok()) {
                Some(x) => {
                    let t = float_text(x + delta);
                    assert_eq!(text(&got.unwrap()), t);
                    h.insert(f, t);
                }
                None => assert_eq!(got.unwrap_err(), "ERR hash value is not a float"),
            }
        }
        82..=85 => {
            let one = opt_text(run(con, &args(&["HRANDFIELD", &key])).unwrap());
            assert_eq!(one.is_some(), !h.is_empty());
            assert!(one.is_none_or(|f| h.contains_key(&f)));
            let count: i64 = rng.gen_range(-8..8);
            let got = pairs(texts(
                run(con, &args(&["HRANDFIELD", &key, &s(count), "WITHVALUES"])).unwrap(),
            ));
            for (f, v) in &got {
                assert_eq!(h.get(f), Some(v));
            }
            let flat = texts(run(con, &args(&["HRANDFIELD", &key, &s(count)])).unwrap());
            let expect = if count >= 0 {
                (count as usize).min(h.len())
            } else if h.is_empty() {
                0
            } else {
                count.unsigned_abs() as usize
            };
            assert_eq!(flat.len(), expect);
            if count > 0 {
                assert_eq!(
                    flat.iter().collect::<BTreeSet<_>>().len(),
                    expect,
                    "distinct"
                );
            }
        }
        86..=88 if k != 0 || rng.gen_bool(0.1) => {
            let all = pairs(texts(run(con, &args(&["HGETALL", &key])).unwrap()));
            assert_eq!(&all, h);
            let keys: BTreeSet<String> = texts(run(con, &args(&["HKEYS", &key])).unwrap())
                .into_iter()
                .collect();
            assert_eq!(keys, h.keys().cloned().collect());
            let mut vals = texts(run(con, &args(&["HVALS", &key])).unwrap());
            vals.sort();
            let mut want: Vec<String> = h.values().cloned().collect();
            want.sort();
            assert_eq!(vals, want);
        }
        89..=90 => {
            let pattern = ["*", "f1*", "n*", "f22*"][rng.gen_range(0..4)];
            let items = scan_all(con, rng, "HSCAN", &key, pattern);
            let got = pairs(items.clone());
            assert_eq!(got.len() * 2, items.len(), "each field once");
            let want: Hash = h
                .iter()
                .filter(|(f, _)| matches(pattern, f))
                .map(|(f, v)| (f.clone(), v.clone()))
                .collect();
            assert_eq!(got, want);
        }
        _ => {
            let t = text(&run(con, &args(&["TYPE", &key])).unwrap());
            assert_eq!(t, if h.is_empty() { "none" } else { "hash" });
        }
    }
}

#[test]
fn hashes_follow_the_model() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut rng = StdRng::seed_from_u64(0x4a5b);
    let mut model: [Hash; 3] = Default::default();
    run(&mut con, &args(&["SET", "str", "x"])).unwrap();
    // A hash of many pages.
    let mut a = args(&["HSET", "h0"]);
    for i in 0..2500 {
        let f = format!("f{i}");
        let v = format!("value-{i}-{}", "x".repeat(i % 23));
        model[0].insert(f.clone(), v.clone());
        a.extend([f, v]);
    }
    assert_eq!(int(run(&mut con, &a).unwrap()), 2500);
    for _ in 0..4000 {
        hash_step(&mut con, &mut rng, &mut model);
    }
    assert!(model[0].len() > 2000);
    let all = pairs(texts(run(&mut con, &args(&["HGETALL", "h0"])).unwrap()));
    assert_eq!(all, model[0]);
    // The model ran in RESP2; the map comes as a map in RESP3.
    run(&mut con, &args(&["HELLO", "3"])).unwrap();
    let all = pairs(texts(run(&mut con, &args(&["HGETALL", "h0"])).unwrap()));
    assert_eq!(all, model[0]);
}

type Set = BTreeSet<String>;

const SET_KEYS: [&str; 4] = ["s0", "s1", "s2", "s3"];

fn member(rng: &mut StdRng, k: usize) -> String {
    if k == 0 && rng.gen_bool(0.7) {
        format!("m{}", rng.gen_range(0..3000))
    } else {
        format!("m{}", rng.gen_range(0..15))
    }
}

/// Some set keys (distinct or not), maybe with a missing one or the string
/// key; `true` when the string key is among them.
fn some_keys(rng: &mut StdRng) -> (Vec<String>, bool) {
    let mut keys: Vec<String> = (0..rng.gen_range(1..4))
        .map(|_| s(SET_KEYS[rng.gen_range(0..4)]))
        .collect();
    if rng.gen_bool(0.1) {
        keys.push(s("missing"));
    }
    let wrong = rng.gen_bool(0.05);
    if wrong {
        keys.insert(rng.gen_range(0..=keys.len()), s("str"));
    }
    (keys, wrong)
}

fn get(model: &BTreeMap<String, Set>, key: &str) -> Set {
    model.get(key).cloned().unwrap_or_default()
}

fn combine(model: &BTreeMap<String, Set>, op: &str, keys: &[String]) -> Set {
    let mut sets = keys.iter().map(|k| get(model, k));
    let first = sets.next().unwrap();
    sets.fold(first, |acc, s| match op {
        "SINTER" => acc.intersection(&s).cloned().collect(),
        "SUNION" => acc.union(&s).cloned().collect(),
        _ => acc.difference(&s).cloned().collect(),
    })
}

/// One random set command against the server and the model (sets by key;
/// an empty set is absent).
fn set_step(con: &mut redis::Connection, rng: &mut StdRng, model: &mut BTreeMap<String, Set>) {
    let k = rng.gen_range(0..4);
    let key = s(SET_KEYS[k]);
    let m = member(rng, k);
    let cur = get(model, &key);
    let put = |model: &mut BTreeMap<String, Set>, key: &str, set: Set| {
        if set.is_empty() {
            model.remove(key);
        } else {
            model.insert(key.to_string(), set);
        }
    };
    match rng.gen_range(0..100) {
        0..=24 => {
            let mut set = cur;
            let mut a = args(&["SADD", &key]);
            let mut added = 0;
            for _ in 0..rng.gen_range(1..4) {
                let m = member(rng, k);
                added += set.insert(m.clone()) as i64;
                a.push(m);
            }
            assert_eq!(int(run(con, &a).unwrap()), added, "{a:?}");
            put(model, &key, set);
        }
        25..=36 => {
            let mut set = cur;
            let g = member(rng, k);
            let gone = set.remove(&m) as i64 + set.remove(&g) as i64;
            assert_eq!(int(run(con, &args(&["SREM", &key, &m, &g])).unwrap()), gone);
            put(model, &key, set);
        }
        37..=44 => {
            assert_eq!(
                int(run(con, &args(&["SISMEMBER", &key, &m])).unwrap()),
                cur.contains(&m) as i64
            );
            let g = member(rng, k);
            let got = run(con, &args(&["SMISMEMBER", &key, &m, &g])).unwrap();
            let Value::Array(items) = got else {
                panic!("{got:?}")
            };
            let got: Vec<i64> = items.into_iter().map(int).collect();
            assert_eq!(got, vec![cur.contains(&m) as i64, cur.contains(&g) as i64]);
            assert_eq!(
                int(run(con, &args(&["SCARD", &key])).unwrap()),
                cur.len() as i64
            );
        }
        45..=49 if k != 0 || rng.gen_bool(0.1) => {
            let got: Set = texts(run(con, &args(&["SMEMBERS", &key])).unwrap())
                .into_iter()
                .collect();
            assert_eq!(got, cur);
        }
        50..=53 => {
            let mut set = cur;
            if rng.gen_bool(0.5) {
                let got = opt_text(run(con, &args(&["SPOP", &key])).unwrap());
                match got {
                    Some(m) => assert!(set.remove(&m), "{m} popped from {key}"),
                    None => assert!(set.is_empty()),
                }
            } else {
                let count = rng.gen_range(0..6);
                let got = texts(run(con, &args(&["SPOP", &key, &s(count)])).unwrap());
                assert_eq!(got.len(), count.min(set.len()));
                for m in got {
                    assert!(set.remove(&m), "{m} popped once from {key}");
                }
            }
            put(model, &key, set);
        }
        54..=58 => {
            let one = opt_text(run(con, &args(&["SRANDMEMBER", &key])).unwrap());
            assert_eq!(one.is_some(), !cur.is_empty());
            assert!(one.is_none_or(|m| cur.contains(&m)));
            let count: i64 = rng.gen_range(-6..20);
            let got = texts(run(con, &args(&["SRANDMEMBER", &key, &s(count)])).unwrap());
            assert!(got.iter().all(|m| cur.contains(m)));
            if count >= 0 {
                assert_eq!(got.len(), (count as usize).min(cur.len()));
                assert_eq!(
                    got.iter().collect::<BTreeSet<_>>().len(),
                    got.len(),
                    "distinct"
                );
            } else {
                assert_eq!(
                    got.len(),
                    if cur.is_empty() {
                        0
                    } else {
                        count.unsigned_abs() as usize
                    }
                );
            }
        }
        59..=66 => {
            let dst = s(SET_KEYS[rng.gen_range(0..4)]);
            let mut from = cur;
            let moved = from.contains(&m);
            if moved && dst != key {
                from.remove(&m);
                let mut to = get(model, &dst);
                to.insert(m.clone());
                put(model, &key, from);
                put(model, &dst, to);
            }
            assert_eq!(
                int(run(con, &args(&["SMOVE", &key, &dst, &m])).unwrap()),
                moved as i64
            );
        }
        67..=80 => {
            let op = ["SINTER", "SUNION", "SDIFF"][rng.gen_range(0..3)];
            let (keys, wrong) = some_keys(rng);
            let mut a = args(&[op]);
            a.extend(keys.iter().cloned());
            let got = run(con, &a);
            if wrong {
                assert_eq!(got.unwrap_err(), WRONGTYPE, "{a:?}");
                return;
            }
            let got: Set = texts(got.unwrap()).into_iter().collect();
            assert_eq!(got, combine(model, op, &keys), "{a:?}");
        }
        81..=88 => {
            let op = ["SINTER", "SUNION", "SDIFF"][rng.gen_range(0..3)];
            let (keys, wrong) = some_keys(rng);
            let dst = s(SET_KEYS[rng.gen_range(1..4)]);
            let mut a = args(&[&format!("{op}STORE"), &dst]);
            a.extend(keys.iter().cloned());
            let got = run(con, &a);
            if wrong {
                assert_eq!(got.unwrap_err(), WRONGTYPE, "{a:?}");
                return;
            }
            let result = combine(model, op, &keys);
            assert_eq!(int(got.unwrap()), result.len() as i64, "{a:?}");
            put(model, &dst, result);
        }
        89..=92 => {
            let (keys, wrong) = some_keys(rng);
            let limit = rng.gen_range(0..5);
            let mut a = args(&["SINTERCARD", &s(keys.len())]);
            a.extend(keys.iter().cloned());
            a.extend(args(&["LIMIT", &s(limit)]));
            let got = run(con, &a);
            if wrong {
                assert_eq!(got.unwrap_err(), WRONGTYPE, "{a:?}");
                return;
            }
            let n = combine(model, "SINTER", &keys).len();
            let want = if limit == 0 { n } else { n.min(limit) };
            assert_eq!(int(got.unwrap()), want as i64, "{a:?}");
        }
        93..=94 => {
            let pattern = ["*", "m1*", "m2*"][rng.gen_range(0..3)];
            let items = scan_all(con, rng, "SSCAN", &key, pattern);
            let got: Set = items.iter().cloned().collect();
            assert_eq!(got.len(), items.len(), "each member once");
            assert_eq!(
                got,
                cur.iter()
                    .filter(|m| matches(pattern, m))
                    .cloned()
                    .collect()
            );
        }
        _ => {
            let t = text(&run(con, &args(&["TYPE", &key])).unwrap());
            assert_eq!(t, if cur.is_empty() { "none" } else { "set" });
        }
    }
}

#[test]
fn sets_follow_the_model() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut rng = StdRng::seed_from_u64(0x5e75);
    let mut model = BTreeMap::new();
    run(&mut con, &args(&["SET", "str", "x"])).unwrap();
    let big: Set = (0..2500).map(|i| format!("m{i}")).collect();
    let mut a = args(&["SADD", "s0"]);
    a.extend(big.iter().cloned());
    assert_eq!(int(run(&mut con, &a).unwrap()), 2500);
    model.insert(s("s0"), big);
    for _ in 0..5000 {
        set_step(&mut con, &mut rng, &mut model);
    }
    for key in SET_KEYS {
        let got: Set = texts(run(&mut con, &args(&["SMEMBERS", key])).unwrap())
            .into_iter()
            .collect();
        assert_eq!(got, get(&model, key), "{key}");
    }
    assert!(get(&model, "s0").len() > 1000);
}
