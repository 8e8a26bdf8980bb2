//! Lists on the `coll` storage (issue 17) through an independent client
//! (the `redis` crate): a seeded random run of list commands against a
//! `Vec` model, comparing every reply, on lists of thousands of elements
//! (many pages, changed in the middle by LINSERT, LREM, LSET and LTRIM);
//! and the edge cases of LINSERT, LPOS, LMOVE and RPOPLPUSH with the
//! errors Redis 7.0.15 gives.

mod common;

use std::collections::HashMap;

use common::{cmd, err, int, TestServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::Value;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";
const SYNTAX: &str = "ERR syntax error";
const NOT_INT: &str = "ERR value is not an integer or out of range";

type Reply = Result<Value, String>;

fn send(con: &mut redis::Connection, args: &[String]) -> Reply {
    let args: Vec<&str> = args.iter().map(String::as_str).collect();
    cmd(con, &args).map_err(|e| format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")))
}

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn bulks(items: &[String]) -> Value {
    Value::Array(items.iter().map(|s| bulk(s)).collect())
}

/// Redis's index (negative from the tail) in a list of `len`.
fn index(i: i64, len: usize) -> Option<usize> {
    let i = if i < 0 { len as i64 + i } else { i };
    (0..len as i64).contains(&i).then_some(i as usize)
}

/// Redis's inclusive range in a list of `len`.
fn range(start: i64, end: i64, len: usize) -> Option<(usize, usize)> {
    let len = len as i64;
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 { len + end } else { end.min(len - 1) };
    (start <= end && start < len).then_some((start as usize, end as usize))
}

/// The model: the lists by key (an empty list is no key).
#[derive(Default)]
struct Model {
    lists: HashMap<String, Vec<String>>,
}

impl Model {
    fn list(&mut self, key: &str) -> &mut Vec<String> {
        self.lists.entry(key.to_string()).or_default()
    }

    /// Drops the key of a list left empty.
    fn tidy(&mut self) {
        self.lists.retain(|_, l| !l.is_empty());
    }

    fn len(&self, key: &str) -> usize {
        self.lists.get(key).map_or(0, Vec::len)
    }

    /// The reply Redis gives to `args`, applying the command to the model.
    fn apply(&mut self, args: &[String]) -> Reply {
        let a: Vec<&str> = args.iter().map(String::as_str).collect();
        let r = self.apply_inner(&a);
        self.tidy();
        r
    }

    fn apply_inner(&mut self, a: &[&str]) -> Reply {
        let key = a[1];
        let exists = self.lists.contains_key(key);
        let num = |i: usize| a[i].parse::<i64>().unwrap();
        match a[0] {
            "LPUSH" | "RPUSH" | "LPUSHX" | "RPUSHX" => {
                if a[0].ends_with('X') && !exists {
                    return Ok(Value::Int(0));
                }
                let l = self.list(key);
                for e in &a[2..] {
                    if a[0].starts_with('L') {
                        l.insert(0, e.to_string());
                    } else {
                        l.push(e.to_string());
                    }
                }
                Ok(Value::Int(l.len() as i64))
            }
            "LPOP" | "RPOP" => {
                if !exists {
                    return Ok(Value::Nil);
                }
                let l = self.list(key);
                let n = if a.len() == 3 { num(2) as usize } else { 1 };
                let n = n.min(l.len());
                let taken: Vec<String> = if a[0] == "LPOP" {
                    l.drain(..n).collect()
                } else {
                    let at = l.len() - n;
                    l.drain(at..).rev().collect()
                };
                Ok(if a.len() == 3 {
                    bulks(&taken)
                } else {
                    bulk(&taken[0])
                })
            }
            "LLEN" => Ok(Value::Int(self.len(key) as i64)),
            "LRANGE" => {
                let l = self.list(key);
                Ok(match range(num(2), num(3), l.len()) {
                    Some((f, t)) => bulks(&l[f..=t]),
                    None => Value::Array(vec![]),
                })
            }
            "LINDEX" => {
                let l = self.list(key);
                Ok(index(num(2), l.len()).map_or(Value::Nil, |i| bulk(&l[i])))
            }
            "LSET" => {
                if !exists {
                    return Err("ERR no such key".into());
                }
                let l = self.list(key);
                let i = index(num(2), l.len()).ok_or("ERR index out of range")?;
                l[i] = a[3].to_string();
                Ok(Value::Okay)
            }
            "LREM" => {
                let (count, target) = (num(2), a[3]);
                let l = self.list(key);
                let limit = if count == 0 {
                    usize::MAX
                } else {
                    count.unsigned_abs() as usize
                };
                let mut removed = 0;
                let mut keep = |e: &String| {
                    let drop = e == target && removed < limit;
                    removed += drop as usize;
                    !drop
                };
                if count < 0 {
                    l.reverse();
                    l.retain(&mut keep);
                    l.reverse();
                } else {
                    l.retain(&mut keep);
                }
                Ok(Value::Int(removed as i64))
            }
            "LTRIM" => {
                let l = self.list(key);
                *l = match range(num(2), num(3), l.len()) {
                    Some((f, t)) => l[f..=t].to_vec(),
                    None => vec![],
                };
                Ok(Value::Okay)
            }
            "LINSERT" => {
                if !exists {
                    return Ok(Value::Int(0));
                }
                let l = self.list(key);
                let Some(p) = l.iter().position(|e| e == a[3]) else {
                    return Ok(Value::Int(-1));
                };
                l.insert(p + (a[2] == "AFTER") as usize, a[4].to_string());
                Ok(Value::Int(l.len() as i64))
            }
            "LPOS" => Ok(self.lpos(a)),
            "LMOVE" | "RPOPLPUSH" => {
                let (from_left, to_left) = match a[0] {
                    "LMOVE" => (a[3] == "LEFT", a[4] == "LEFT"),
                    _ => (false, true),
                };
                if !exists {
                    return Ok(Value::Nil);
                }
                let src = self.list(key);
                let e = if from_left {
                    src.remove(0)
                } else {
                    src.pop().unwrap()
                };
                let dst = self.list(a[2]);
                if to_left {
                    dst.insert(0, e.clone());
                } else {
                    dst.push(e.clone());
                }
                Ok(bulk(&e))
            }
            other => panic!("the model has no {other}"),
        }
    }

    /// LPOS as Redis 7.0.15 runs it (options already valid).
    fn lpos(&mut self, a: &[&str]) -> Value {
        let (mut rank, mut count, mut maxlen) = (1i64, None, 0usize);
        for pair in a[3..].chunks(2) {
            let n: i64 = pair[1].parse().unwrap();
            match pair[0] {
                "RANK" => rank = n,
                "COUNT" => count = Some(n as usize),
                _ => maxlen = n as usize,
            }
        }
        let l = self.lists.get(a[1]).cloned().unwrap_or_default();
        let idx: Vec<usize> = if rank < 0 {
            (0..l.len()).rev().collect()
        } else {
            (0..l.len()).collect()
        };
        let scan = if maxlen == 0 {
            idx.len()
        } else {
            maxlen.min(idx.len())
        };
        let found: Vec<usize> = idx[..scan]
            .iter()
            .copied()
            .filter(|&i| l[i] == a[2])
            .skip(rank.unsigned_abs() as usize - 1)
            .take(match count {
                None => 1,
                Some(0) => usize::MAX,
                Some(n) => n,
            })
            .collect();
        match count {
            Some(_) => Value::Array(found.iter().map(|&i| Value::Int(i as i64)).collect()),
            None => found.first().map_or(Value::Nil, |&i| Value::Int(i as i64)),
        }
    }
}

const KEYS: [&str; 3] = ["a", "b", "c"];

/// An element: mostly one of a few short values (so LREM, LINSERT and
/// LPOS find matches), sometimes a longer one (to fill pages).
fn element(rng: &mut StdRng) -> String {
    if rng.gen_bool(0.2) {
        format!(
            "{}-{}",
            "x".repeat(rng.gen_range(20..120)),
            rng.gen_range(0..1000)
        )
    } else {
        format!("v{}", rng.gen_range(0..12))
    }
}

/// An index around the list of `len`: inside, just outside, or negative.
fn near(rng: &mut StdRng, len: usize) -> i64 {
    let len = len as i64;
    rng.gen_range(-len - 3..=len + 3)
}

/// A random command on the lists of `m`.
fn random_command(rng: &mut StdRng, m: &Model) -> Vec<String> {
    let key = KEYS[rng.gen_range(0..KEYS.len())].to_string();
    let len = m.len(&key);
    let s = |x: i64| x.to_string();
    let mut args: Vec<String> = match rng.gen_range(0..100) {
        0..=17 => {
            let name = ["LPUSH", "RPUSH", "LPUSHX", "RPUSHX"][rng.gen_range(0..4)];
            let n = if rng.gen_bool(0.05) {
                400
            } else {
                rng.gen_range(1..12)
            };
            let mut v = vec![name.to_string(), key.clone()];
            v.extend((0..n).map(|_| element(rng)));
            v
        }
        18..=27 => {
            let name = ["LPOP", "RPOP"][rng.gen_range(0..2)].to_string();
            match rng.gen_range(0..3) {
                0 => vec![name, key.clone()],
                _ => vec![name, key.clone(), s(rng.gen_range(0..8))],
            }
        }
        28..=30 => vec!["LLEN".into(), key.clone()],
        31..=40 => {
            let start = near(rng, len);
            let end = if rng.gen_bool(0.5) {
                start + rng.gen_range(-2..40)
            } else {
                near(rng, len)
            };
            vec!["LRANGE".into(), key.clone(), s(start), s(end)]
        }
        41..=50 => vec!["LINDEX".into(), key.clone(), s(near(rng, len))],
        51..=59 => vec!["LSET".into(), key.clone(), s(near(rng, len)), element(rng)],
        60..=67 => vec![
            "LREM".into(),
            key.clone(),
            s(rng.gen_range(-3..=3)),
            element(rng),
        ],
        68..=71 => {
            let (start, end) = if rng.gen_bool(0.9) {
                (rng.gen_range(0..4), -rng.gen_range(1..4))
            } else {
                (near(rng, len), near(rng, len))
            };
            vec!["LTRIM".into(), key.clone(), s(start), s(end)]
        }
        72..=81 => {
            let side = ["BEFORE", "AFTER"][rng.gen_range(0..2)].to_string();
            vec![
                "LINSERT".into(),
                key.clone(),
                side,
                element(rng),
                element(rng),
            ]
        }
        82..=91 => {
            let mut v = vec!["LPOS".into(), key.clone(), element(rng)];
            if rng.gen_bool(0.5) {
                let r = rng.gen_range(1..4) * if rng.gen_bool(0.5) { 1 } else { -1 };
                v.extend(["RANK".into(), s(r)]);
            }
            if rng.gen_bool(0.5) {
                v.extend(["COUNT".into(), s(rng.gen_range(0..5))]);
            }
            if rng.gen_bool(0.3) {
                v.extend(["MAXLEN".into(), s(rng.gen_range(0..(len as i64 + 2)))]);
            }
            v
        }
        92..=96 => {
            let dst = KEYS[rng.gen_range(0..KEYS.len())].to_string();
            let side = |rng: &mut StdRng| ["LEFT", "RIGHT"][rng.gen_range(0..2)].to_string();
            vec!["LMOVE".into(), key.clone(), dst, side(rng), side(rng)]
        }
        _ => {
            let dst = KEYS[rng.gen_range(0..KEYS.len())].to_string();
            vec!["RPOPLPUSH".into(), key.clone(), dst]
        }
    };
    args.shrink_to_fit();
    args
}

/// Every list of the model against the server's, whole.
fn check_all(con: &mut redis::Connection, m: &mut Model, step: usize) {
    for key in KEYS {
        let want = m.apply(&["LRANGE".into(), key.into(), "0".into(), "-1".into()]);
        let got = send(con, &["LRANGE".into(), key.into(), "0".into(), "-1".into()]);
        assert_eq!(got, want, "{key} differs after step {step}");
        assert_eq!(int(con, &["EXISTS", key]), m.lists.contains_key(key) as i64);
    }
}

#[test]
fn random_commands_match_a_vec_model() {
    let server = TestServer::start();
    let mut con = server.client();
    let mut m = Model::default();
    let mut rng = StdRng::seed_from_u64(0x11575);
    // Start with thousands of elements in "a", so it spans many pages.
    for _ in 0..6 {
        let mut args = vec!["RPUSH".to_string(), "a".into()];
        args.extend((0..500).map(|_| element(&mut rng)));
        assert_eq!(send(&mut con, &args), m.apply(&args));
    }
    assert!(m.len("a") >= 3000);
    let mut max_len = 0;
    for step in 0..5000 {
        let args = random_command(&mut rng, &m);
        let want = m.apply(&args);
        let got = send(&mut con, &args);
        assert_eq!(got, want, "step {step}: {:?}", &args[..args.len().min(6)]);
        max_len = max_len.max(KEYS.iter().map(|k| m.len(k)).max().unwrap());
        if step % 500 == 0 {
            check_all(&mut con, &mut m, step);
        }
    }
    check_all(&mut con, &mut m, 5000);
    assert!(max_len >= 3000, "the lists stayed small: {max_len}");
    assert!(m.len("a") > 1000, "the big list shrank to {}", m.len("a"));
}

#[test]
fn a_big_list_changed_in_its_middle() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut model: Vec<String> = (0..4000)
        .map(|i| format!("e{i:05}-{}", "p".repeat(i % 50)))
        .collect();
    for chunk in model.chunks(1000) {
        let mut args = vec!["RPUSH", "big"];
        args.extend(chunk.iter().map(String::as_str));
        cmd(&mut c, &args).unwrap();
    }
    // LSET, LINSERT, LREM and LINDEX in the middle of many pages.
    for i in (0..4000).step_by(37) {
        let v = format!("set{i}");
        assert_eq!(
            cmd(&mut c, &["LSET", "big", &i.to_string(), &v]).unwrap(),
            Value::Okay
        );
        model[i] = v;
    }
    for i in (5..3900).step_by(101) {
        let pivot = model[i].clone();
        assert_eq!(
            int(&mut c, &["LINSERT", "big", "AFTER", &pivot, "dup"]),
            model.len() as i64 + 1
        );
        model.insert(i + 1, "dup".into());
        assert_eq!(
            int(&mut c, &["LINSERT", "big", "BEFORE", &pivot, "dup"]),
            model.len() as i64 + 1
        );
        model.insert(i, "dup".into());
    }
    let dups = model.iter().filter(|e| *e == "dup").count() as i64;
    assert_eq!(int(&mut c, &["LREM", "big", "-5", "dup"]), 5);
    for _ in 0..5 {
        let at = model.iter().rposition(|e| e == "dup").unwrap();
        model.remove(at);
    }
    assert_eq!(int(&mut c, &["LREM", "big", "3", "dup"]), 3);
    for _ in 0..3 {
        let at = model.iter().position(|e| e == "dup").unwrap();
        model.remove(at);
    }
    assert_eq!(int(&mut c, &["LREM", "big", "0", "dup"]), dups - 8);
    model.retain(|e| e != "dup");
    for i in (0..model.len()).step_by(53) {
        assert_eq!(
            cmd(&mut c, &["LINDEX", "big", &i.to_string()]).unwrap(),
            bulk(&model[i])
        );
        let back = i as i64 - model.len() as i64;
        assert_eq!(
            cmd(&mut c, &["LINDEX", "big", &back.to_string()]).unwrap(),
            bulk(&model[i])
        );
    }
    assert_eq!(
        cmd(&mut c, &["LRANGE", "big", "1000", "2999"]).unwrap(),
        bulks(&model[1000..3000])
    );
    assert_eq!(int(&mut c, &["LPOS", "big", &model[3500]]), 3500);
    // LTRIM from both ends, then the whole list.
    assert_eq!(
        cmd(&mut c, &["LTRIM", "big", "700", "-900"]).unwrap(),
        Value::Okay
    );
    let n = model.len();
    model = model[700..n - 899].to_vec();
    assert_eq!(
        cmd(&mut c, &["LRANGE", "big", "0", "-1"]).unwrap(),
        bulks(&model)
    );
    assert_eq!(int(&mut c, &["LLEN", "big"]), model.len() as i64);
    // Pops across page boundaries, then the list goes with its last element.
    let popped = cmd(&mut c, &["RPOP", "big", "1500"]).unwrap();
    let tail: Vec<String> = model.drain(model.len() - 1500..).rev().collect();
    assert_eq!(popped, bulks(&tail));
    let left = model.len().to_string();
    assert_eq!(cmd(&mut c, &["LPOP", "big", &left]).unwrap(), bulks(&model));
    assert_eq!(int(&mut c, &["EXISTS", "big"]), 0);
}

#[test]
fn linsert_edge_cases() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["LINSERT", "l", "BEFORE", "a", "x"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "l"]), 0);
    cmd(&mut c, &["RPUSH", "l", "a", "b", "a"]).unwrap();
    assert_eq!(int(&mut c, &["LINSERT", "l", "before", "a", "x"]), 4);
    assert_eq!(int(&mut c, &["LINSERT", "l", "After", "a", "y"]), 5);
    assert_eq!(int(&mut c, &["LINSERT", "l", "AFTER", "b", "z"]), 6);
    assert_eq!(int(&mut c, &["LINSERT", "l", "BEFORE", "nope", "z"]), -1);
    assert_eq!(int(&mut c, &["LINSERT", "l", "BEFORE", "", "z"]), -1);
    assert_eq!(
        cmd(&mut c, &["LRANGE", "l", "0", "-1"]).unwrap(),
        bulks(&["x", "a", "y", "b", "z", "a"].map(String::from))
    );
    // The last element as pivot, AFTER: a new tail.
    cmd(&mut c, &["RPUSH", "l", "end"]).unwrap();
    assert_eq!(int(&mut c, &["LINSERT", "l", "AFTER", "end", ""]), 8);
    assert_eq!(cmd(&mut c, &["LINDEX", "l", "-1"]).unwrap(), bulk(""));
    // The direction is checked before the key: a syntax error even for a
    // missing key or a string.
    assert_eq!(err(&mut c, &["LINSERT", "l", "MIDDLE", "a", "x"]), SYNTAX);
    assert_eq!(err(&mut c, &["LINSERT", "missing", "UP", "a", "x"]), SYNTAX);
    cmd(&mut c, &["SET", "s", "v"]).unwrap();
    assert_eq!(err(&mut c, &["LINSERT", "s", "UP", "a", "x"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["LINSERT", "s", "BEFORE", "a", "x"]),
        WRONGTYPE
    );
    assert_eq!(
        err(&mut c, &["LINSERT", "l", "BEFORE", "a"]),
        "ERR wrong number of arguments for 'linsert' command"
    );
}

#[test]
fn lpos_edge_cases() {
    let server = TestServer::start();
    let mut c = server.client();
    let ints = |v: &[i64]| Value::Array(v.iter().map(|&i| Value::Int(i)).collect());
    cmd(
        &mut c,
        &["RPUSH", "l", "a", "b", "c", "1", "2", "3", "c", "c"],
    )
    .unwrap();
    assert_eq!(int(&mut c, &["LPOS", "l", "c"]), 2);
    assert_eq!(int(&mut c, &["LPOS", "l", "c", "RANK", "2"]), 6);
    assert_eq!(int(&mut c, &["LPOS", "l", "c", "RANK", "-1"]), 7);
    assert_eq!(int(&mut c, &["LPOS", "l", "c", "rank", "-3"]), 2);
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "c", "RANK", "4"]).unwrap(),
        Value::Nil
    );
    assert_eq!(cmd(&mut c, &["LPOS", "l", "x"]).unwrap(), Value::Nil);
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "c", "COUNT", "0"]).unwrap(),
        ints(&[2, 6, 7])
    );
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "c", "COUNT", "2"]).unwrap(),
        ints(&[2, 6])
    );
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "c", "COUNT", "0", "RANK", "-2"]).unwrap(),
        ints(&[6, 2])
    );
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "x", "COUNT", "3"]).unwrap(),
        ints(&[])
    );
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "c", "MAXLEN", "2"]).unwrap(),
        Value::Nil
    );
    assert_eq!(int(&mut c, &["LPOS", "l", "c", "MAXLEN", "3"]), 2);
    assert_eq!(
        cmd(
            &mut c,
            &["LPOS", "l", "c", "RANK", "-1", "COUNT", "0", "MAXLEN", "2"]
        )
        .unwrap(),
        ints(&[7, 6])
    );
    assert_eq!(int(&mut c, &["LPOS", "l", "c", "MAXLEN", "0"]), 2);
    // A later option wins.
    assert_eq!(
        int(&mut c, &["LPOS", "l", "c", "RANK", "1", "RANK", "3"]),
        7
    );
    // A missing key: nil, or an empty array with COUNT.
    assert_eq!(cmd(&mut c, &["LPOS", "missing", "c"]).unwrap(), Value::Nil);
    assert_eq!(
        cmd(&mut c, &["LPOS", "missing", "c", "COUNT", "1"]).unwrap(),
        ints(&[])
    );
    // Errors, in Redis's words and order (options before the key).
    let rank_zero = "ERR RANK can't be zero: use 1 to start from the first match, 2 from the \
                     second ... or use negative to start from the end of the list";
    assert_eq!(err(&mut c, &["LPOS", "l", "c", "RANK", "0"]), rank_zero);
    assert_eq!(
        err(&mut c, &["LPOS", "missing", "c", "RANK", "0"]),
        rank_zero
    );
    assert_eq!(err(&mut c, &["LPOS", "l", "c", "RANK", "x"]), NOT_INT);
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "RANK", "-9223372036854775808"]),
        "ERR value is out of range, value must between -9223372036854775807 and 9223372036854775807"
    );
    assert_eq!(
        cmd(&mut c, &["LPOS", "l", "c", "RANK", "-9223372036854775807"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "COUNT", "-1"]),
        "ERR COUNT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "COUNT", "x"]),
        "ERR COUNT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "MAXLEN", "-1"]),
        "ERR MAXLEN can't be negative"
    );
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "MAXLEN", "y"]),
        "ERR MAXLEN can't be negative"
    );
    assert_eq!(err(&mut c, &["LPOS", "l", "c", "RANK"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "COUNT", "1", "MAXLEN"]),
        SYNTAX
    );
    assert_eq!(err(&mut c, &["LPOS", "l", "c", "FOO", "1"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["LPOS", "l", "c", "RANK", "0", "FOO"]),
        rank_zero
    );
    cmd(&mut c, &["SET", "s", "v"]).unwrap();
    assert_eq!(err(&mut c, &["LPOS", "s", "c"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["LPOS", "s", "c", "RANK", "0"]), rank_zero);
    assert_eq!(
        err(&mut c, &["LPOS", "l"]),
        "ERR wrong number of arguments for 'lpos' command"
    );
}

#[test]
fn lmove_and_rpoplpush_through_the_seam() {
    let server = TestServer::start();
    let mut c = server.client();
    let list = |c: &mut redis::Connection, k: &str| cmd(c, &["LRANGE", k, "0", "-1"]).unwrap();
    let of = |v: &[&str]| bulks(&v.iter().map(|s| s.to_string()).collect::<Vec<_>>());
    cmd(&mut c, &["RPUSH", "src", "a", "b", "c"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["RPOPLPUSH", "src", "dst"]).unwrap(),
        bulk("c")
    );
    assert_eq!(
        cmd(&mut c, &["LMOVE", "src", "dst", "LEFT", "RIGHT"]).unwrap(),
        bulk("a")
    );
    assert_eq!(list(&mut c, "dst"), of(&["c", "a"]));
    // Rotation of one list.
    cmd(&mut c, &["RPUSH", "r", "1", "2", "3"]).unwrap();
    assert_eq!(cmd(&mut c, &["RPOPLPUSH", "r", "r"]).unwrap(), bulk("3"));
    assert_eq!(list(&mut c, "r"), of(&["3", "1", "2"]));
    assert_eq!(
        cmd(&mut c, &["LMOVE", "r", "r", "left", "right"]).unwrap(),
        bulk("3")
    );
    assert_eq!(list(&mut c, "r"), of(&["1", "2", "3"]));
    assert_eq!(
        cmd(&mut c, &["LMOVE", "r", "r", "LEFT", "LEFT"]).unwrap(),
        bulk("1")
    );
    assert_eq!(list(&mut c, "r"), of(&["1", "2", "3"]));
    cmd(&mut c, &["RPUSH", "one", "x"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["RPOPLPUSH", "one", "one"]).unwrap(),
        bulk("x")
    );
    assert_eq!(list(&mut c, "one"), of(&["x"]));
    // The source goes with its last element.
    assert_eq!(
        cmd(&mut c, &["LMOVE", "src", "dst", "RIGHT", "LEFT"]).unwrap(),
        bulk("b")
    );
    assert_eq!(int(&mut c, &["EXISTS", "src"]), 0);
    assert_eq!(list(&mut c, "dst"), of(&["b", "c", "a"]));
    // A missing source: nil, whatever the destination holds.
    cmd(&mut c, &["SET", "s", "v"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["RPOPLPUSH", "missing", "dst"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        cmd(&mut c, &["RPOPLPUSH", "missing", "s"]).unwrap(),
        Value::Nil
    );
    // WRONGTYPE for the source, then for the destination, before a pop.
    assert_eq!(err(&mut c, &["RPOPLPUSH", "s", "dst"]), WRONGTYPE);
    assert_eq!(
        err(&mut c, &["LMOVE", "dst", "s", "LEFT", "LEFT"]),
        WRONGTYPE
    );
    assert_eq!(list(&mut c, "dst"), of(&["b", "c", "a"]));
    // Sides are checked before the keys.
    assert_eq!(err(&mut c, &["LMOVE", "dst", "x", "UP", "LEFT"]), SYNTAX);
    assert_eq!(
        err(&mut c, &["LMOVE", "missing", "x", "LEFT", "DOWN"]),
        SYNTAX
    );
    // The destination keeps its time to live.
    cmd(&mut c, &["EXPIRE", "dst", "1000"]).unwrap();
    cmd(&mut c, &["RPOPLPUSH", "r", "dst"]).unwrap();
    assert!(int(&mut c, &["TTL", "dst"]) > 900);
    // Inside a transaction.
    let mut pipe = redis::pipe();
    pipe.atomic()
        .cmd("LMOVE")
        .arg("r")
        .arg("t")
        .arg("LEFT")
        .arg("LEFT")
        .cmd("LMOVE")
        .arg("r")
        .arg("t")
        .arg("LEFT")
        .arg("LEFT");
    let (x, y): (String, String) = pipe.query(&mut c).unwrap();
    assert_eq!((x.as_str(), y.as_str()), ("1", "2"));
    assert_eq!(list(&mut c, "t"), of(&["2", "1"]));
}

#[test]
fn lists_keep_their_ttl_and_types_are_checked() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["RPUSH", "l", "a", "b"]).unwrap();
    cmd(&mut c, &["EXPIRE", "l", "1000"]).unwrap();
    cmd(&mut c, &["LPUSH", "l", "z"]).unwrap();
    cmd(&mut c, &["LSET", "l", "0", "y"]).unwrap();
    cmd(&mut c, &["LINSERT", "l", "AFTER", "a", "q"]).unwrap();
    cmd(&mut c, &["LPOP", "l"]).unwrap();
    assert!(int(&mut c, &["TTL", "l"]) > 900);
    cmd(&mut c, &["SET", "s", "v"]).unwrap();
    for args in [
        &["LPUSH", "s", "a"][..],
        &["RPUSHX", "s", "a"],
        &["LPOP", "s"],
        &["RPOP", "s", "0"],
        &["LLEN", "s"],
        &["LRANGE", "s", "0", "-1"],
        &["LINDEX", "s", "0"],
        &["LSET", "s", "0", "x"],
        &["LREM", "s", "0", "x"],
        &["LTRIM", "s", "0", "1"],
    ] {
        assert_eq!(err(&mut c, args), WRONGTYPE, "{args:?}");
    }
    // A list SORT ... STORE wrote in the old whole-value encoding is
    // converted on its first access.
    cmd(&mut c, &["RPUSH", "nums", "3", "1", "2"]).unwrap();
    assert_eq!(int(&mut c, &["SORT", "nums", "STORE", "sorted"]), 3);
    assert_eq!(int(&mut c, &["RPUSH", "sorted", "4"]), 4);
    assert_eq!(int(&mut c, &["LINSERT", "sorted", "BEFORE", "1", "0"]), 5);
    assert_eq!(
        cmd(&mut c, &["LRANGE", "sorted", "0", "-1"]).unwrap(),
        bulks(&["0", "1", "2", "3", "4"].map(String::from))
    );
    cmd(&mut c, &["SADD", "set", "a"]).unwrap();
    assert_eq!(err(&mut c, &["RPUSH", "set", "a"]), WRONGTYPE);
    assert_eq!(err(&mut c, &["SADD", "l", "a"]), WRONGTYPE);
    assert_eq!(
        cmd(&mut c, &["TYPE", "l"]).unwrap(),
        Value::SimpleString("list".into())
    );
}
