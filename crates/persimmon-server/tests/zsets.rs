//! Sorted sets on the `coll` storage through an independent client (the
//! `redis` crate): a model-based run of random commands against an
//! in-memory model (member → score plus the (score, member) order) on sets
//! of thousands of members (many pages per tree), and the options, reply
//! shapes and errors of each command.

mod common;

use std::collections::BTreeMap;

use common::{cmd, err, int, TestServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use redis::Value;

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// The strings of a reply (nil: none; numbers as their text).
fn strs(v: Value) -> Vec<String> {
    fn text(v: Value) -> String {
        match v {
            Value::BulkString(b) => String::from_utf8(b).unwrap(),
            Value::Int(n) => n.to_string(),
            Value::Double(x) => format!("{x}"),
            Value::Nil => "(nil)".into(),
            v => panic!("not a string: {v:?}"),
        }
    }
    match v {
        Value::Nil => vec![],
        Value::Array(items) => items.into_iter().map(text).collect(),
        v => vec![text(v)],
    }
}

fn q(c: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    strs(cmd(c, args).unwrap_or_else(|e| panic!("{args:?}: {e}")))
}

/// The model: member → score.
#[derive(Default)]
struct Model(BTreeMap<String, f64>);

impl Model {
    /// (score, member) in sorted-set order.
    fn sorted(&self) -> Vec<(f64, String)> {
        let mut v: Vec<(f64, String)> = self.0.iter().map(|(m, &s)| (s, m.clone())).collect();
        v.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then_with(|| a.1.cmp(&b.1)));
        v
    }

    fn in_score(&self, min: (f64, bool), max: (f64, bool)) -> Vec<(f64, String)> {
        self.sorted()
            .into_iter()
            .filter(|(s, _)| {
                (if min.1 { *s > min.0 } else { *s >= min.0 })
                    && (if max.1 { *s < max.0 } else { *s <= max.0 })
            })
            .collect()
    }
}

fn flat(entries: &[(f64, String)], with_scores: bool) -> Vec<String> {
    let mut out = Vec::new();
    for (s, m) in entries {
        out.push(m.clone());
        if with_scores {
            out.push(format!("{s}"));
        }
    }
    out
}

fn bound_text((x, ex): (f64, bool)) -> String {
    format!("{}{}", if ex { "(" } else { "" }, x)
}

fn rank_slice(len: usize, start: i64, stop: i64) -> std::ops::Range<usize> {
    let len = len as i64;
    let s = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let e = if stop < 0 {
        len + stop
    } else {
        stop.min(len - 1)
    };
    if s > e || s >= len {
        0..0
    } else {
        s as usize..e as usize + 1
    }
}

fn random_score(r: &mut StdRng) -> f64 {
    match r.gen_range(0..10) {
        0 => r.gen_range(-1000..1000) as f64 / 4.0,
        _ => r.gen_range(-40..40) as f64,
    }
}

fn random_member(r: &mut StdRng) -> String {
    format!("member:{:05}", r.gen_range(0..4000))
}

fn random_bound(r: &mut StdRng) -> (f64, bool) {
    let x = match r.gen_range(0..12) {
        0 => f64::NEG_INFINITY,
        1 => f64::INFINITY,
        _ => r.gen_range(-45..45) as f64,
    };
    (x, r.gen_bool(0.3))
}

/// One random ZADD with options, applied to the model; returns its reply.
fn zadd_step(r: &mut StdRng, c: &mut redis::Connection, model: &mut Model) {
    let (nx, xx) = match r.gen_range(0..4) {
        0 => (true, false),
        1 => (false, true),
        _ => (false, false),
    };
    let (gt, lt) = if nx {
        (false, false)
    } else {
        match r.gen_range(0..4) {
            0 => (true, false),
            1 => (false, true),
            _ => (false, false),
        }
    };
    let ch = r.gen_bool(0.5);
    let mut args: Vec<String> = vec!["ZADD".into(), "z".into()];
    for (on, name) in [(nx, "NX"), (xx, "XX"), (gt, "GT"), (lt, "LT"), (ch, "CH")] {
        if on {
            args.push(name.into());
        }
    }
    let pairs: Vec<(f64, String)> = (0..r.gen_range(1..6))
        .map(|_| (random_score(r), random_member(r)))
        .collect();
    let (mut added, mut changed) = (0, 0);
    for (score, m) in &pairs {
        args.push(format!("{score}"));
        args.push(m.clone());
        let cur = model.0.get(m).copied();
        if (nx && cur.is_some()) || (xx && cur.is_none()) {
            continue;
        }
        match cur {
            Some(c) if (gt && *score <= c) || (lt && *score >= c) => continue,
            Some(c) if c == *score => {}
            Some(_) => changed += 1,
            None => added += 1,
        }
        model.0.insert(m.clone(), *score);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(
        int(c, &refs),
        added + if ch { changed } else { 0 },
        "{args:?}"
    );
}

/// A random read or write on the sorted set `z`, checked against the model.
fn step(r: &mut StdRng, c: &mut redis::Connection, model: &mut Model) {
    let sorted = model.sorted();
    let len = sorted.len() as i64;
    match r.gen_range(0..14) {
        0 | 1 => zadd_step(r, c, model),
        2 => {
            let (by, m) = (random_score(r), random_member(r));
            let new = model.0.get(&m).copied().unwrap_or(0.0) + by;
            model.0.insert(m.clone(), new);
            assert_eq!(
                q(c, &["ZINCRBY", "z", &format!("{by}"), &m]),
                [format!("{new}")]
            );
        }
        3 => {
            let ms: Vec<String> = (0..r.gen_range(1..4)).map(|_| random_member(r)).collect();
            let mut args = vec!["ZREM", "z"];
            args.extend(ms.iter().map(String::as_str));
            let mut n = 0;
            for m in &ms {
                n += model.0.remove(m).is_some() as i64;
            }
            assert_eq!(int(c, &args), n);
        }
        4 => {
            let m = if r.gen_bool(0.8) && len > 0 {
                sorted[r.gen_range(0..len as usize)].1.clone()
            } else {
                random_member(r)
            };
            let pos = sorted.iter().position(|(_, x)| *x == m);
            let want = |p: Option<usize>| p.map(|p| vec![p.to_string()]).unwrap_or_default();
            assert_eq!(q(c, &["ZRANK", "z", &m]), want(pos), "ZRANK {m}");
            let rev = pos.map(|p| sorted.len() - 1 - p);
            assert_eq!(q(c, &["ZREVRANK", "z", &m]), want(rev));
            let score = model
                .0
                .get(&m)
                .map(|s| vec![format!("{s}")])
                .unwrap_or_default();
            assert_eq!(q(c, &["ZSCORE", "z", &m]), score);
        }
        5 => {
            let (a, b) = (
                r.gen_range(-len - 5..len + 5),
                r.gen_range(-len - 5..len + 5),
            );
            let ws = r.gen_bool(0.3);
            let mut args = vec![
                "ZRANGE".to_string(),
                "z".into(),
                a.to_string(),
                b.to_string(),
            ];
            let rev = r.gen_bool(0.3);
            let mut want: Vec<(f64, String)> = sorted.clone();
            if rev {
                args.push("REV".into());
                want.reverse();
            }
            if ws {
                args.push("WITHSCORES".into());
            }
            let want = &want[rank_slice(want.len(), a, b)];
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_eq!(q(c, &refs), flat(want, ws), "{args:?}");
        }
        6 | 7 => {
            let (min, max) = (random_bound(r), random_bound(r));
            let mut want = model.in_score(min, max);
            let rev = r.gen_bool(0.4);
            let mut args = vec![
                "ZRANGEBYSCORE".to_string(),
                "z".into(),
                bound_text(min),
                bound_text(max),
            ];
            if rev {
                args = vec![
                    "ZREVRANGEBYSCORE".into(),
                    "z".into(),
                    bound_text(max),
                    bound_text(min),
                ];
                want.reverse();
            }
            if r.gen_bool(0.5) {
                let (off, cnt) = (r.gen_range(-1..30), r.gen_range(-1..40));
                args.extend(["LIMIT".into(), off.to_string(), cnt.to_string()]);
                want = if off < 0 {
                    vec![]
                } else {
                    let it = want.into_iter().skip(off as usize);
                    if cnt < 0 {
                        it.collect()
                    } else {
                        it.take(cnt as usize).collect()
                    }
                };
            }
            let refs: Vec<&str> = args.iter().map(String::as_str).collect();
            assert_eq!(q(c, &refs), flat(&want, false), "{args:?}");
        }
        8 => {
            let (min, max) = (random_bound(r), random_bound(r));
            let want = model.in_score(min, max).len() as i64;
            assert_eq!(
                int(c, &["ZCOUNT", "z", &bound_text(min), &bound_text(max)]),
                want
            );
            let mut w = model.in_score(min, max);
            w.reverse();
            let got = q(
                c,
                &[
                    "ZRANGE",
                    "z",
                    &bound_text(max),
                    &bound_text(min),
                    "BYSCORE",
                    "REV",
                    "WITHSCORES",
                ],
            );
            assert_eq!(got, flat(&w, true));
        }
        9 if r.gen_bool(0.3) => {
            let (min, max) = (random_bound(r), random_bound(r));
            let gone = model.in_score(min, max);
            for (_, m) in &gone {
                model.0.remove(m);
            }
            assert_eq!(
                int(
                    c,
                    &["ZREMRANGEBYSCORE", "z", &bound_text(min), &bound_text(max)]
                ),
                gone.len() as i64
            );
        }
        10 if r.gen_bool(0.3) => {
            let a = r.gen_range(-len - 2..len + 2);
            let b = a + r.gen_range(0..20);
            let gone = &sorted[rank_slice(sorted.len(), a, b)];
            for (_, m) in gone {
                model.0.remove(m);
            }
            assert_eq!(
                int(c, &["ZREMRANGEBYRANK", "z", &a.to_string(), &b.to_string()]),
                gone.len() as i64
            );
        }
        _ => {
            assert_eq!(int(c, &["ZCARD", "z"]), len);
        }
    }
}

#[test]
fn model_run_on_thousands_of_members() {
    let server = TestServer::start_with(|c| c.pool_size = Some(256 << 20));
    let mut c = server.client();
    let mut r = StdRng::seed_from_u64(17);
    let mut model = Model::default();
    // Fill: 3000 members (several pages in each tree).
    for chunk in 0..30 {
        let mut args = vec!["ZADD".to_string(), "z".into()];
        for i in 0..100 {
            let m = format!("member:{:05}", chunk * 100 + i);
            let s = random_score(&mut r);
            model.0.insert(m.clone(), s);
            args.push(format!("{s}"));
            args.push(m);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        int(&mut c, &refs);
    }
    assert_eq!(int(&mut c, &["ZCARD", "z"]), 3000);
    for i in 0..3000 {
        step(&mut r, &mut c, &mut model);
        if i % 500 == 0 {
            assert_eq!(
                q(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
                flat(&model.sorted(), true)
            );
        }
    }
    assert_eq!(
        q(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        flat(&model.sorted(), true)
    );
}

#[test]
fn model_run_by_lex() {
    let server = TestServer::start_with(|c| c.pool_size = Some(128 << 20));
    let mut c = server.client();
    let mut r = StdRng::seed_from_u64(18);
    let mut model: std::collections::BTreeSet<String> = Default::default();
    let word = |r: &mut StdRng| -> String {
        let n = r.gen_range(0..4);
        (0..n)
            .map(|_| (b'a' + r.gen_range(0..6)) as char)
            .collect::<String>()
            + &format!("{}", r.gen_range(0..40))
    };
    for chunk in 0..20 {
        let mut args = vec!["ZADD".to_string(), "lex".into()];
        for _ in 0..100 {
            let m = word(&mut r) + &chunk.to_string();
            model.insert(m.clone());
            args.extend(["0".to_string(), m]);
        }
        let refs: Vec<&str> = args.iter().map(String::as_str).collect();
        int(&mut c, &refs);
    }
    let lex_bound = |r: &mut StdRng| -> (String, std::ops::Bound<String>) {
        match r.gen_range(0..10) {
            0 => ("-".into(), std::ops::Bound::Unbounded),
            1 => ("+".into(), std::ops::Bound::Unbounded),
            2..=5 => {
                let w = word(r);
                (format!("[{w}"), std::ops::Bound::Included(w))
            }
            _ => {
                let w = word(r);
                (format!("({w}"), std::ops::Bound::Excluded(w))
            }
        }
    };
    for _ in 0..1500 {
        let (mint, minb) = lex_bound(&mut r);
        let (maxt, maxb) = lex_bound(&mut r);
        let want: Vec<String> = if mint == "+" || maxt == "-" {
            vec![]
        } else {
            let lo_ok = |m: &String| match &minb {
                std::ops::Bound::Included(b) => m >= b,
                std::ops::Bound::Excluded(b) => m > b,
                _ => true,
            };
            let hi_ok = |m: &String| match &maxb {
                std::ops::Bound::Included(b) => m <= b,
                std::ops::Bound::Excluded(b) => m < b,
                _ => true,
            };
            model
                .iter()
                .filter(|m| lo_ok(m) && hi_ok(m))
                .cloned()
                .collect()
        };
        match r.gen_range(0..6) {
            0 => assert_eq!(q(&mut c, &["ZRANGEBYLEX", "lex", &mint, &maxt]), want),
            1 => {
                let mut w = want.clone();
                w.reverse();
                assert_eq!(q(&mut c, &["ZREVRANGEBYLEX", "lex", &maxt, &mint]), w);
            }
            2 => {
                let off = r.gen_range(0..10);
                let w: Vec<String> = want.iter().skip(off).take(5).cloned().collect();
                let got = q(
                    &mut c,
                    &[
                        "ZRANGE",
                        "lex",
                        &mint,
                        &maxt,
                        "BYLEX",
                        "LIMIT",
                        &off.to_string(),
                        "5",
                    ],
                );
                assert_eq!(got, w);
            }
            3 => assert_eq!(
                int(&mut c, &["ZLEXCOUNT", "lex", &mint, &maxt]),
                want.len() as i64
            ),
            4 if r.gen_bool(0.2) => {
                assert_eq!(
                    int(&mut c, &["ZREMRANGEBYLEX", "lex", &mint, &maxt]),
                    want.len() as i64
                );
                for m in &want {
                    model.remove(m);
                }
            }
            _ => {
                let m = word(&mut r);
                let added = model.insert(m.clone()) as i64;
                assert_eq!(int(&mut c, &["ZADD", "lex", "0", &m]), added);
            }
        }
    }
    let all: Vec<String> = model.iter().cloned().collect();
    assert_eq!(q(&mut c, &["ZRANGEBYLEX", "lex", "-", "+"]), all);
}

#[test]
fn zadd_options_incr_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["ZADD", "z", "1", "a", "2", "b"]), 2);
    assert_eq!(
        int(&mut c, &["ZADD", "z", "CH", "5", "a", "2", "b", "3", "c"]),
        2
    );
    assert_eq!(
        int(&mut c, &["ZADD", "z", "GT", "CH", "4", "a", "9", "b"]),
        1
    );
    assert_eq!(
        int(
            &mut c,
            &["ZADD", "z", "LT", "CH", "4", "a", "9", "b", "1", "d"]
        ),
        2
    );
    assert_eq!(int(&mut c, &["ZADD", "z", "XX", "1", "nope"]), 0);
    assert_eq!(q(&mut c, &["ZADD", "z", "INCR", "2", "a"]), ["6"]);
    assert_eq!(
        cmd(&mut c, &["ZADD", "z", "NX", "INCR", "2", "a"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        cmd(&mut c, &["ZADD", "z", "GT", "INCR", "-1", "a"]).unwrap(),
        Value::Nil
    );
    assert_eq!(q(&mut c, &["ZINCRBY", "z", "-6", "a"]), ["0"]);
    assert_eq!(q(&mut c, &["ZINCRBY", "z", "2.5", "new"]), ["2.5"]);
    assert_eq!(q(&mut c, &["ZADD", "z", "INCR", "+inf", "a"]), ["inf"]);
    assert_eq!(
        err(&mut c, &["ZINCRBY", "z", "-inf", "a"]),
        "ERR resulting score is not a number (NaN)"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "INCR", "-inf", "a"]),
        "ERR resulting score is not a number (NaN)"
    );
    assert_eq!(
        err(&mut c, &["ZINCRBY", "z", "x", "a"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "nan", "a"]),
        "ERR value is not a valid float"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "INCR", "1", "a", "2", "b"]),
        "ERR INCR option supports a single increment-element pair"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "GT", "LT", "1", "a"]),
        "ERR GT, LT, and/or NX options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "NX", "GT", "1", "a"]),
        "ERR GT, LT, and/or NX options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["ZADD", "z", "1", "a", "2"]),
        "ERR syntax error"
    );
    assert_eq!(
        q(&mut c, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        ["d", "1", "new", "2.5", "c", "3", "b", "9", "a", "inf"]
    );
    assert_eq!(
        q(&mut c, &["ZMSCORE", "z", "a", "zz", "c"]),
        ["inf", "(nil)", "3"]
    );
    assert_eq!(
        q(&mut c, &["ZMSCORE", "missing", "a", "b"]),
        ["(nil)", "(nil)"]
    );
    // XX on a missing key creates nothing.
    assert_eq!(int(&mut c, &["ZADD", "none", "XX", "1", "a"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "none"]), 0);
    cmd(&mut c, &["SET", "s", "x"]).unwrap();
    for args in [
        &["ZADD", "s", "1", "a"][..],
        &["ZINCRBY", "s", "1", "a"],
        &["ZRANGE", "s", "0", "1"],
        &["ZCARD", "s"],
        &["ZRANK", "s", "a"],
        &["ZCOUNT", "s", "0", "1"],
        &["ZUNION", "1", "s"],
        &["ZRANDMEMBER", "s"],
        &["ZSCAN", "s", "0"],
        &["ZPOPMIN", "s"],
    ] {
        assert_eq!(err(&mut c, args), WRONGTYPE, "{args:?}");
    }
    assert_eq!(err(&mut c, &["GET", "z"]), WRONGTYPE);
}

#[test]
fn zrange_forms_and_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    int(
        &mut c,
        &[
            "ZADD", "z", "1", "a", "2", "b", "3", "c", "4", "d", "5", "e",
        ],
    );
    assert_eq!(q(&mut c, &["ZRANGE", "z", "0", "1", "REV"]), ["e", "d"]);
    assert_eq!(
        q(&mut c, &["ZREVRANGE", "z", "0", "1", "WITHSCORES"]),
        ["e", "5", "d", "4"]
    );
    assert_eq!(
        q(&mut c, &["ZRANGE", "z", "(1", "3", "BYSCORE"]),
        ["b", "c"]
    );
    assert_eq!(
        q(
            &mut c,
            &["ZRANGE", "z", "+inf", "(1", "BYSCORE", "REV", "LIMIT", "1", "2"]
        ),
        ["d", "c"]
    );
    assert_eq!(q(&mut c, &["ZRANGE", "z", "[b", "(d", "BYLEX"]), ["b", "c"]);
    assert_eq!(
        q(&mut c, &["ZRANGE", "z", "+", "[c", "BYLEX", "REV"]),
        ["e", "d", "c"]
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "ZREVRANGEBYSCORE",
                "z",
                "4",
                "2",
                "WITHSCORES",
                "LIMIT",
                "0",
                "1"
            ]
        ),
        ["d", "4"]
    );
    assert_eq!(
        q(&mut c, &["ZREVRANGEBYLEX", "z", "[c", "-"]),
        ["c", "b", "a"]
    );
    assert_eq!(
        q(&mut c, &["ZRANGEBYLEX", "z", "-", "+", "LIMIT", "1", "1"]),
        ["b"]
    );
    assert_eq!(
        q(&mut c, &["ZRANGE", "missing", "0", "-1"]),
        Vec::<String>::new()
    );
    assert_eq!(int(&mut c, &["ZLEXCOUNT", "z", "(a", "[c"]), 2);
    assert_eq!(int(&mut c, &["ZCOUNT", "z", "-inf", "(3"]), 2);
    assert_eq!(
        err(&mut c, &["ZRANGE", "z", "0", "1", "LIMIT", "0", "1"]),
        "ERR syntax error, LIMIT is only supported in combination with either BYSCORE or BYLEX"
    );
    assert_eq!(
        err(&mut c, &["ZRANGE", "z", "-", "+", "BYLEX", "WITHSCORES"]),
        "ERR syntax error, WITHSCORES not supported in combination with BYLEX"
    );
    assert_eq!(
        err(&mut c, &["ZRANGE", "z", "a", "+", "BYLEX"]),
        "ERR min or max not valid string range item"
    );
    assert_eq!(
        err(&mut c, &["ZRANGE", "z", "x", "1", "BYSCORE"]),
        "ERR min or max is not a float"
    );
    assert_eq!(
        err(&mut c, &["ZRANGE", "z", "x", "1"]),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["ZRANGEBYSCORE", "z", "0", "1", "BYLEX"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["ZREVRANGE", "z", "0", "1", "REV"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(
            &mut c,
            &["ZRANGE", "z", "0", "1", "LIMIT", "x", "1", "BYSCORE"]
        ),
        "ERR value is not an integer or out of range"
    );
    assert_eq!(
        err(&mut c, &["ZCOUNT", "z", "(", "1"]),
        "ERR min or max is not a float"
    );
    assert_eq!(
        err(&mut c, &["ZLEXCOUNT", "z", "a", "b"]),
        "ERR min or max not valid string range item"
    );
    // ZRANGESTORE: replaces the destination (and its TTL), deletes it when empty.
    cmd(&mut c, &["SET", "dst", "x", "EX", "100"]).unwrap();
    assert_eq!(
        int(
            &mut c,
            &[
                "ZRANGESTORE",
                "dst",
                "z",
                "1",
                "3",
                "BYSCORE",
                "LIMIT",
                "1",
                "5"
            ]
        ),
        2
    );
    assert_eq!(
        q(&mut c, &["ZRANGE", "dst", "0", "-1", "WITHSCORES"]),
        ["b", "2", "c", "3"]
    );
    assert_eq!(int(&mut c, &["TTL", "dst"]), -1);
    assert_eq!(
        int(&mut c, &["ZRANGESTORE", "dst", "z", "-1", "-1", "REV"]),
        1
    );
    assert_eq!(q(&mut c, &["ZRANGE", "dst", "0", "-1"]), ["a"]);
    assert_eq!(
        int(&mut c, &["ZRANGESTORE", "dst", "missing", "0", "-1"]),
        0
    );
    assert_eq!(int(&mut c, &["EXISTS", "dst"]), 0);
    assert_eq!(
        err(&mut c, &["ZRANGESTORE", "dst", "z", "0", "1", "WITHSCORES"]),
        "ERR syntax error"
    );
    // Removals by rank, score, lex; the key goes with its last member.
    assert_eq!(int(&mut c, &["ZREMRANGEBYRANK", "z", "-1", "-1"]), 1);
    assert_eq!(int(&mut c, &["ZREMRANGEBYSCORE", "z", "(1", "2"]), 1);
    assert_eq!(int(&mut c, &["ZREMRANGEBYLEX", "z", "[c", "+"]), 2);
    assert_eq!(int(&mut c, &["ZREMRANGEBYRANK", "z", "0", "0"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "z"]), 0);
    assert_eq!(int(&mut c, &["ZREMRANGEBYRANK", "z", "0", "-1"]), 0);
    assert_eq!(
        err(&mut c, &["ZREMRANGEBYSCORE", "z", "a", "1"]),
        "ERR min or max is not a float"
    );
}

#[test]
fn set_operations() {
    let server = TestServer::start();
    let mut c = server.client();
    int(&mut c, &["ZADD", "z1", "1", "a", "2", "b", "3", "c"]);
    int(&mut c, &["ZADD", "z2", "10", "b", "20", "c", "30", "d"]);
    int(&mut c, &["SADD", "s", "c", "d", "e"]);
    assert_eq!(
        q(&mut c, &["ZUNION", "2", "z1", "z2", "WITHSCORES"]),
        ["a", "1", "b", "12", "c", "23", "d", "30"]
    );
    assert_eq!(
        q(
            &mut c,
            &[
                "ZINTER",
                "2",
                "z1",
                "z2",
                "WEIGHTS",
                "2",
                "1",
                "AGGREGATE",
                "MAX",
                "WITHSCORES"
            ]
        ),
        ["b", "10", "c", "20"]
    );
    assert_eq!(
        q(&mut c, &["ZINTER", "3", "z1", "z2", "s", "WITHSCORES"]),
        ["c", "24"]
    );
    assert_eq!(
        q(
            &mut c,
            &["ZUNION", "2", "z1", "s", "AGGREGATE", "MIN", "WITHSCORES"]
        ),
        ["a", "1", "c", "1", "d", "1", "e", "1", "b", "2"]
    );
    assert_eq!(
        q(&mut c, &["ZDIFF", "3", "z1", "z2", "missing", "WITHSCORES"]),
        ["a", "1"]
    );
    assert_eq!(
        q(&mut c, &["ZDIFF", "2", "missing", "z1"]),
        Vec::<String>::new()
    );
    assert_eq!(
        q(&mut c, &["ZINTER", "2", "z1", "missing"]),
        Vec::<String>::new()
    );
    assert_eq!(
        int(
            &mut c,
            &["ZUNIONSTORE", "out", "2", "z1", "z2", "WEIGHTS", "1", "0"]
        ),
        4
    );
    assert_eq!(
        q(&mut c, &["ZRANGE", "out", "0", "-1", "WITHSCORES"]),
        ["d", "0", "a", "1", "b", "2", "c", "3"]
    );
    assert_eq!(int(&mut c, &["ZINTERSTORE", "z1", "2", "z1", "z2"]), 2);
    assert_eq!(
        q(&mut c, &["ZRANGE", "z1", "0", "-1", "WITHSCORES"]),
        ["b", "12", "c", "23"]
    );
    assert_eq!(int(&mut c, &["ZDIFFSTORE", "out", "1", "missing"]), 0);
    assert_eq!(int(&mut c, &["EXISTS", "out"]), 0);
    // inf + -inf is 0, as in Redis.
    int(&mut c, &["ZADD", "p", "inf", "x"]);
    int(&mut c, &["ZADD", "n", "-inf", "x"]);
    assert_eq!(
        q(&mut c, &["ZUNION", "2", "p", "n", "WITHSCORES"]),
        ["x", "0"]
    );
    assert_eq!(int(&mut c, &["ZINTERCARD", "2", "z2", "s"]), 2);
    assert_eq!(
        int(&mut c, &["ZINTERCARD", "2", "z2", "s", "LIMIT", "1"]),
        1
    );
    assert_eq!(int(&mut c, &["ZINTERCARD", "1", "missing"]), 0);
    assert_eq!(
        err(&mut c, &["ZINTERCARD", "0", "z2"]),
        "ERR at least 1 input key is needed for 'zintercard' command"
    );
    assert_eq!(
        err(&mut c, &["ZINTERCARD", "3", "z2"]),
        "ERR Number of keys can't be greater than number of args"
    );
    assert_eq!(
        err(&mut c, &["ZINTERCARD", "1", "z2", "LIMIT", "-1"]),
        "ERR LIMIT can't be negative"
    );
    assert_eq!(
        err(&mut c, &["ZUNION", "0", "z2"]),
        "ERR at least 1 input key is needed for 'zunion' command"
    );
    assert_eq!(
        err(&mut c, &["ZUNIONSTORE", "o", "0", "z2"]),
        "ERR at least 1 input key is needed for 'zunionstore' command"
    );
    assert_eq!(err(&mut c, &["ZUNION", "3", "z2"]), "ERR syntax error");
    assert_eq!(
        err(&mut c, &["ZUNION", "1", "z2", "WEIGHTS", "x"]),
        "ERR weight value is not a float"
    );
    assert_eq!(
        err(&mut c, &["ZUNION", "1", "z2", "AGGREGATE", "AVG"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["ZDIFF", "1", "z2", "WEIGHTS", "1"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["ZUNIONSTORE", "o", "1", "z2", "WITHSCORES"]),
        "ERR syntax error"
    );
    cmd(&mut c, &["SET", "str", "x"]).unwrap();
    // The key types are checked before the options.
    assert_eq!(
        err(&mut c, &["ZUNION", "2", "z2", "str", "WEIGHTS", "x"]),
        WRONGTYPE
    );
}

#[test]
fn random_members_scan_and_pops() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut args = vec!["ZADD".to_string(), "z".into()];
    for i in 0..2000 {
        args.extend([i.to_string(), format!("m{i}")]);
    }
    let refs: Vec<&str> = args.iter().map(String::as_str).collect();
    assert_eq!(int(&mut c, &refs), 2000);
    let picked = q(&mut c, &["ZRANDMEMBER", "z", "50"]);
    assert_eq!(picked.len(), 50);
    assert_eq!(
        picked
            .iter()
            .collect::<std::collections::HashSet<_>>()
            .len(),
        50
    );
    let with = q(&mut c, &["ZRANDMEMBER", "z", "-30", "WITHSCORES"]);
    assert_eq!(with.len(), 60);
    for pair in with.chunks(2) {
        assert_eq!(pair[0], format!("m{}", pair[1]));
    }
    assert_eq!(q(&mut c, &["ZRANDMEMBER", "z", "5000"]).len(), 2000);
    assert_eq!(q(&mut c, &["ZRANDMEMBER", "z"]).len(), 1);
    assert_eq!(
        cmd(&mut c, &["ZRANDMEMBER", "missing"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        q(&mut c, &["ZRANDMEMBER", "missing", "3"]),
        Vec::<String>::new()
    );
    assert_eq!(
        err(&mut c, &["ZRANDMEMBER", "z", "1", "x"]),
        "ERR syntax error"
    );
    // ZSCAN: the cursor is a rank in member order; COUNT entries are
    // examined per call, until the cursor comes back as 0.
    let mut cursor = "0".to_string();
    let (mut calls, mut got) = (0, Vec::new());
    loop {
        let scanned = cmd(
            &mut c,
            &["ZSCAN", "z", &cursor, "MATCH", "m19*", "COUNT", "300"],
        )
        .unwrap();
        let Value::Array(parts) = scanned else {
            panic!()
        };
        cursor = strs(parts[0].clone()).remove(0);
        let page = strs(parts[1].clone());
        got.extend(page.chunks(2).map(|p| (p[0].clone(), p[1].clone())));
        calls += 1;
        if cursor == "0" {
            break;
        }
    }
    assert_eq!(calls, 7, "2000 members, 300 examined per call");
    let mut want: Vec<(String, String)> = (0..2000)
        .filter(|i| format!("m{i}").starts_with("m19"))
        .map(|i| (format!("m{i}"), i.to_string()))
        .collect();
    want.sort();
    assert_eq!(want.len(), 111);
    assert_eq!(got, want, "each match once, in member order");
    assert_eq!(err(&mut c, &["ZSCAN", "z", "x"]), "ERR invalid cursor");
    // Pops through the seam the blocking commands use.
    assert_eq!(q(&mut c, &["ZPOPMIN", "z"]), ["m0", "0"]);
    assert_eq!(
        q(&mut c, &["ZPOPMAX", "z", "2"]),
        ["m1999", "1999", "m1998", "1998"]
    );
    assert_eq!(q(&mut c, &["ZPOPMIN", "z", "0"]), Vec::<String>::new());
    assert_eq!(q(&mut c, &["ZPOPMIN", "missing"]), Vec::<String>::new());
    assert_eq!(
        err(&mut c, &["ZPOPMIN", "z", "-1"]),
        "ERR value is out of range, must be positive"
    );
    assert_eq!(int(&mut c, &["ZCARD", "z"]), 1997);
    assert_eq!(q(&mut c, &["ZRANK", "z", "m1"]), ["0"]);
    assert_eq!(q(&mut c, &["ZREVRANK", "z", "m1"]), ["1996"]);
    assert_eq!(q(&mut c, &["ZPOPMIN", "z", "5000"]).len(), 2 * 1997);
    assert_eq!(int(&mut c, &["EXISTS", "z"]), 0);
}
