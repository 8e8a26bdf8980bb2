//! Pipelined runs of combined writes executed as one atomic unit
//! (`unit_run.rs`, issue 33): a pipeline of pushes, pops, adds, field
//! sets, counters, MSET and DEL on the same keys gives exactly the replies
//! and the final state of executing the same requests one at a time; big
//! lists (many pages) kept decoded between the requests of a run end as a
//! model says; a request that fails in a run fails alone; DEL and MSET in
//! a run over collections the run changed; a collection emptied in a run
//! is deleted (its deadline gone, SPOP finding no key); many clients
//! pipelining to the same hot keys lose nothing; the runs' writes survive a
//! restart; WATCH sees a run's writes and a blocked client is served.

mod common;

use std::collections::VecDeque;

use common::{encode, info_counts, info_field, one_by_one, pipelined, req, Raw, Resp, TestServer};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

/// xorshift64*: a reproducible script.
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D) % n
    }
}

fn reqs(args: &[String]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    encode(&args)
}

fn cmd(raw: &mut Raw, args: &[&str]) -> Resp {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    raw.command(&args)
}

fn int(n: i64) -> Resp {
    Resp::Int(n)
}

fn ok() -> Resp {
    Resp::Simple("OK".into())
}

fn error(text: &str) -> Resp {
    Resp::Error(text.into())
}

fn bulks(items: &[&str]) -> Resp {
    Resp::Array(items.iter().map(|s| Resp::bulk(s)).collect())
}

fn bytes_of(items: Resp) -> Vec<Vec<u8>> {
    match items {
        Resp::Array(items) => items
            .into_iter()
            .map(|r| match r {
                Resp::Bulk(b) => b,
                other => panic!("a bulk string, not {other:?}"),
            })
            .collect(),
        other => panic!("an array, not {other:?}"),
    }
}

/// A key's type and contents (a hash's pairs and a set's members sorted).
fn contents(raw: &mut Raw, key: &str) -> (Resp, Resp) {
    let t = cmd(raw, &["TYPE", key]);
    let v = match &t {
        Resp::Simple(t) if t == "list" => cmd(raw, &["LRANGE", key, "0", "-1"]),
        Resp::Simple(t) if t == "hash" => {
            let flat = bytes_of(cmd(raw, &["HGETALL", key]));
            let mut pairs: Vec<(Vec<u8>, Vec<u8>)> = flat
                .chunks(2)
                .map(|p| (p[0].clone(), p[1].clone()))
                .collect();
            pairs.sort();
            Resp::Array(
                pairs
                    .into_iter()
                    .flat_map(|(f, v)| [Resp::Bulk(f), Resp::Bulk(v)])
                    .collect(),
            )
        }
        Resp::Simple(t) if t == "set" => {
            let mut members = bytes_of(cmd(raw, &["SMEMBERS", key]));
            members.sort();
            Resp::Array(members.into_iter().map(Resp::Bulk).collect())
        }
        Resp::Simple(t) if t == "zset" => cmd(raw, &["ZRANGE", key, "0", "-1", "WITHSCORES"]),
        Resp::Simple(t) if t == "string" => cmd(raw, &["GET", key]),
        _ => Resp::Null,
    };
    (t, v)
}

fn state(raw: &mut Raw, keys: &[&str]) -> Vec<(Resp, Resp)> {
    keys.iter().map(|k| contents(raw, k)).collect()
}

// --- 1. A mixed pipeline replies and ends as one-by-one execution ---------

const LISTS: [&str; 2] = ["L0", "L1"];
const HASHES: [&str; 2] = ["H0", "H1"];
const SETS: [&str; 2] = ["S0", "S1"];
const ZSETS: [&str; 2] = ["Z0", "Z1"];
const COUNTERS: [&str; 3] = ["C0", "C1", "C2"];

fn all_keys() -> Vec<&'static str> {
    [&LISTS[..], &HASHES, &SETS, &ZSETS, &COUNTERS].concat()
}

fn pick<'a>(rng: &mut Rng, keys: &[&'a str]) -> &'a str {
    keys[rng.below(keys.len() as u64) as usize]
}

/// A seeded script of combined writes on a few keys of each type (each key
/// keeps its type, so nothing fails), with now and then a read that ends a
/// run, and DELs of any key (collections recreated by later writes).
fn mixed_script(seed: u64, len: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    while out.len() < len {
        let n = rng.below(1000).to_string();
        let m = format!("m{}", rng.below(12));
        let m2 = format!("m{}", rng.below(12));
        let score = format!("{}", rng.below(40) as f64 / 2.0 - 5.0);
        let args: Vec<String> = match rng.below(30) {
            0 => vec![
                "LPUSH".into(),
                pick(&mut rng, &LISTS).into(),
                format!("a{n}"),
            ],
            1 => vec![
                "RPUSH".into(),
                pick(&mut rng, &LISTS).into(),
                format!("b{n}"),
                format!("c{n}"),
            ],
            2 => vec!["LPOP".into(), pick(&mut rng, &LISTS).into()],
            3 => vec!["RPOP".into(), pick(&mut rng, &LISTS).into()],
            4 => vec!["SADD".into(), pick(&mut rng, &SETS).into(), m, m2],
            5 => vec!["SREM".into(), pick(&mut rng, &SETS).into(), m],
            6 => vec![
                "HSET".into(),
                pick(&mut rng, &HASHES).into(),
                format!("f{}", rng.below(8)),
                format!("v{n}"),
            ],
            7 => vec![
                "HSET".into(),
                pick(&mut rng, &HASHES).into(),
                format!("f{}", rng.below(8)),
                format!("w{n}"),
                format!("f{}", rng.below(8)),
                format!("x{n}"),
            ],
            8 => vec![
                "HDEL".into(),
                pick(&mut rng, &HASHES).into(),
                format!("f{}", rng.below(8)),
                format!("n{}", rng.below(3)),
            ],
            9 => vec![
                "HINCRBY".into(),
                pick(&mut rng, &HASHES).into(),
                format!("n{}", rng.below(3)),
                format!("{}", rng.below(20) as i64 - 7),
            ],
            10 => vec!["ZADD".into(), pick(&mut rng, &ZSETS).into(), score, m],
            11 => vec![
                "ZADD".into(),
                pick(&mut rng, &ZSETS).into(),
                "CH".into(),
                score,
                m,
                "3".into(),
                m2,
            ],
            12 => vec!["ZREM".into(), pick(&mut rng, &ZSETS).into(), m],
            13 => vec!["ZINCRBY".into(), pick(&mut rng, &ZSETS).into(), score, m],
            14 => vec!["ZPOPMIN".into(), pick(&mut rng, &ZSETS).into()],
            15 => vec!["ZPOPMAX".into(), pick(&mut rng, &ZSETS).into()],
            16 => vec!["INCR".into(), pick(&mut rng, &COUNTERS).into()],
            17 => vec!["DECR".into(), pick(&mut rng, &COUNTERS).into()],
            18 => vec!["INCRBY".into(), pick(&mut rng, &COUNTERS).into(), n],
            19 => vec!["DECRBY".into(), pick(&mut rng, &COUNTERS).into(), n],
            20 => vec![
                "MSET".into(),
                pick(&mut rng, &COUNTERS).into(),
                n,
                pick(&mut rng, &COUNTERS).into(),
                "7".into(),
            ],
            21 => {
                let keys = all_keys();
                vec!["DEL".into(), pick(&mut rng, &keys).into()]
            }
            22 => {
                let keys = all_keys();
                vec![
                    "DEL".into(),
                    pick(&mut rng, &keys).into(),
                    pick(&mut rng, &keys).into(),
                    "never-set".into(),
                ]
            }
            23 => vec!["LLEN".into(), pick(&mut rng, &LISTS).into()],
            24 => vec!["GET".into(), pick(&mut rng, &COUNTERS).into()],
            25 => vec![
                "lpush".into(),
                pick(&mut rng, &LISTS).into(),
                format!("d{n}"),
                format!("e{n}"),
                format!("f{n}"),
            ],
            26 => vec!["rpop".into(), pick(&mut rng, &LISTS).into()],
            27 => vec![
                "HSET".into(),
                pick(&mut rng, &HASHES).into(),
                format!("f{}", rng.below(8)),
                n,
            ],
            28 => vec!["ZADD".into(), pick(&mut rng, &ZSETS).into(), "1".into(), m],
            _ => vec!["SADD".into(), pick(&mut rng, &SETS).into(), m],
        };
        out.push(reqs(&args));
    }
    out
}

/// Proves: runs of mixed combined writes reply, end and count exactly as
/// one-by-one execution, and do go as units.
#[test]
fn a_mixed_pipeline_replies_and_ends_as_one_by_one_execution() {
    for seed in [3u64, 11, 29, 1001] {
        let script = mixed_script(seed, 1200);
        let a = TestServer::start();
        let b = TestServer::start();
        let (mut ra, mut rb) = (a.raw(), b.raw());
        // In chunks of 200, each chunk in one write.
        let mut got = Vec::new();
        for chunk in script.chunks(200) {
            got.extend(pipelined(&mut ra, chunk));
        }
        let want = one_by_one(&mut rb, &script);
        // Every reply is the one sequential execution gives, byte for byte.
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "seed {seed}, reply {i}");
        }
        assert_eq!(got.len(), want.len());
        // The script never fails: every request is a run's, or a read.
        assert!(
            !want.iter().any(|r| matches!(r, Resp::Error(_))),
            "seed {seed}: {want:?}"
        );
        // The final contents are those of sequential execution.
        let keys = all_keys();
        assert_eq!(
            state(&mut ra, &keys),
            state(&mut rb, &keys),
            "seed {seed}: final state"
        );
        assert_eq!(cmd(&mut ra, &["DBSIZE"]), cmd(&mut rb, &["DBSIZE"]));
        // Each request is counted as one-by-one execution counts it.
        for (section, prefix) in [
            ("commandstats", "cmdstat_"),
            ("errorstats", "errorstat_"),
            ("stats", "total_commands_processed"),
        ] {
            assert_eq!(
                info_counts(&mut ra, section, prefix),
                info_counts(&mut rb, section, prefix),
                "seed {seed}: INFO {section} {prefix}"
            );
        }
        // The pipeline did go as units of several requests; one by one never.
        let runs = info_field(&mut ra, "stats", "unit_runs");
        let commands = info_field(&mut ra, "stats", "unit_run_commands");
        assert!(
            runs > 10 && commands > 3 * runs,
            "seed {seed}: {runs} runs, {commands} commands"
        );
        // One request at a time makes runs of one (each still combined
        // with other connections' runs by the combiner).
        assert_eq!(
            info_field(&mut rb, "stats", "unit_runs"),
            info_field(&mut rb, "stats", "unit_run_commands")
        );
    }
}

// --- 2. Big lists (many pages) against a model ----------------------------

fn element(tag: &str, i: u64) -> String {
    // About 40 bytes.
    format!("{tag}-{i:08}-abcdefghijklmnopqrstuvwxyz0")
}

/// Proves: lists of many pages, pushed and popped at both ends by runs, hold
/// exactly what a `VecDeque` model holds, and every reply is the model's.
#[test]
fn big_lists_popped_and_pushed_in_runs_match_a_model() {
    let a = TestServer::start();
    let mut r = a.raw();
    let keys = ["big0", "big1"];
    let mut model: [VecDeque<String>; 2] = [VecDeque::new(), VecDeque::new()];
    // 5,000 elements in each list, pushed in pipelines of 50 requests.
    for batch in 0..100u64 {
        let mut script = Vec::new();
        let mut want = Vec::new();
        for j in 0..50u64 {
            let i = batch * 50 + j;
            let (e0, e1) = (element("r", i), element("l", i));
            script.push(req(&["RPUSH", keys[0], &e0]));
            model[0].push_back(e0);
            want.push(int(model[0].len() as i64));
            script.push(req(&["LPUSH", keys[1], &e1]));
            model[1].push_front(e1);
            want.push(int(model[1].len() as i64));
        }
        // Each push replies the list's new length.
        assert_eq!(pipelined(&mut r, &script), want, "batch {batch}");
    }
    let before = info_field(&mut r, "stats", "unit_runs");
    let mut rng = Rng(77);
    let mut fresh = 0u64;
    for round in 0..60 {
        let mut script = Vec::new();
        let mut want = Vec::new();
        // Some rounds only pop (runs draining whole pages from one end).
        let mode = rng.below(4);
        for _ in 0..64 {
            let k = rng.below(2) as usize;
            let op = match mode {
                0 => rng.below(2),
                _ => rng.below(5),
            };
            match op {
                0 => {
                    script.push(req(&["LPOP", keys[k]]));
                    want.push(model[k].pop_front().map_or(Resp::Null, |e| Resp::bulk(&e)));
                }
                1 => {
                    script.push(req(&["RPOP", keys[k]]));
                    want.push(model[k].pop_back().map_or(Resp::Null, |e| Resp::bulk(&e)));
                }
                2 => {
                    fresh += 1;
                    let e = element("nl", fresh);
                    script.push(req(&["LPUSH", keys[k], &e]));
                    model[k].push_front(e);
                    want.push(int(model[k].len() as i64));
                }
                3 => {
                    fresh += 1;
                    let e = element("nr", fresh);
                    script.push(req(&["RPUSH", keys[k], &e]));
                    model[k].push_back(e);
                    want.push(int(model[k].len() as i64));
                }
                _ => {
                    let es: Vec<String> = (0..3)
                        .map(|_| {
                            fresh += 1;
                            element("nm", fresh)
                        })
                        .collect();
                    let mut args = vec!["LPUSH".to_string(), keys[k].to_string()];
                    args.extend(es.iter().cloned());
                    script.push(reqs(&args));
                    for e in es {
                        model[k].push_front(e);
                    }
                    want.push(int(model[k].len() as i64));
                }
            }
        }
        // Every pop gives the model's element; every push its length.
        assert_eq!(pipelined(&mut r, &script), want, "round {round}");
    }
    // The contents are the model's, element for element.
    for (k, key) in keys.iter().enumerate() {
        let want: Vec<&str> = model[k].iter().map(String::as_str).collect();
        assert_eq!(cmd(&mut r, &["LLEN", key]), int(want.len() as i64));
        assert_eq!(
            cmd(&mut r, &["LRANGE", key, "0", "-1"]),
            bulks(&want),
            "{key}"
        );
        assert!(want.len() > 2000, "{key} is still several pages long");
    }
    // The rounds went as units.
    assert!(info_field(&mut r, "stats", "unit_runs") >= before + 50);
}

// --- 3. A request that fails in a run fails alone ---------------------------

/// Proves: a request failing mid-pipeline (WRONGTYPE, a non-integer field)
/// gets its error and writes nothing; those around it reply and write.
#[test]
fn a_failing_request_in_a_pipeline_fails_alone() {
    let a = TestServer::start();
    let mut r = a.raw();
    assert_eq!(cmd(&mut r, &["SET", "str", "x"]), ok());
    assert_eq!(cmd(&mut r, &["HSET", "h", "text", "abc"]), int(1));
    let before = info_field(&mut r, "stats", "unit_runs");
    let replies = pipelined(
        &mut r,
        &[
            req(&["RPUSH", "l", "a"]),
            req(&["HSET", "h", "g", "1"]),
            req(&["INCR", "c"]),
            req(&["LPUSH", "str", "y"]),
            req(&["RPUSH", "l", "b"]),
            req(&["HINCRBY", "h", "text", "1"]),
            req(&["HINCRBY", "h", "g", "5"]),
            req(&["INCR", "c"]),
            req(&["ZADD", "z", "1", "m"]),
            req(&["SADD", "l", "not-a-set"]),
            req(&["LPUSH", "l", "c"]),
        ],
    );
    // The failing requests get their errors; the others their normal replies.
    assert_eq!(
        replies,
        vec![
            int(1),
            int(1),
            int(1),
            error(WRONGTYPE),
            int(2),
            error("ERR hash value is not an integer"),
            int(6),
            int(2),
            int(1),
            error(WRONGTYPE),
            int(3),
        ]
    );
    // The others' writes are all there; the failing ones wrote nothing.
    assert_eq!(cmd(&mut r, &["GET", "str"]), Resp::bulk("x"));
    assert_eq!(
        cmd(&mut r, &["LRANGE", "l", "0", "-1"]),
        bulks(&["c", "a", "b"])
    );
    assert_eq!(contents(&mut r, "h").1, bulks(&["g", "6", "text", "abc"]));
    assert_eq!(cmd(&mut r, &["GET", "c"]), Resp::bulk("2"));
    assert_eq!(
        cmd(&mut r, &["ZRANGE", "z", "0", "-1", "WITHSCORES"]),
        bulks(&["m", "1"])
    );
    assert_eq!(cmd(&mut r, &["DBSIZE"]), int(5));
    // INCR runs on its own path and splits the pipeline into three runs:
    // only the first, with no failing request, committed as a unit; the
    // two holding a failing request went one by one.
    assert_eq!(info_field(&mut r, "stats", "unit_runs"), before + 1);

    // A failure inside a collection an earlier request of the run changed
    // (kept decoded between them): the earlier change stays, the failing
    // one is undone.
    let replies = pipelined(
        &mut r,
        &[
            req(&["HSET", "h2", "a", "1"]),
            req(&["HSET", "h2", "f", "x"]),
            req(&["HINCRBY", "h2", "f", "1"]),
            req(&["HSET", "h2", "b", "2"]),
            req(&["HINCRBY", "h2", "a", "10"]),
            req(&["INCRBY", "str", "1"]),
            req(&["RPUSH", "l", "d"]),
        ],
    );
    assert_eq!(
        replies,
        vec![
            int(1),
            int(1),
            error("ERR hash value is not an integer"),
            int(1),
            int(11),
            error("ERR value is not an integer or out of range"),
            int(4),
        ]
    );
    assert_eq!(
        contents(&mut r, "h2").1,
        bulks(&["a", "11", "b", "2", "f", "x"])
    );
    assert_eq!(cmd(&mut r, &["GET", "str"]), Resp::bulk("x"));
    assert_eq!(
        cmd(&mut r, &["LRANGE", "l", "0", "-1"]),
        bulks(&["c", "a", "b", "d"])
    );
    // Each failure is tallied once, as one by one tallies it.
    assert_eq!(
        info_counts(&mut r, "errorstats", "errorstat_"),
        vec!["errorstat_ERR,count=3", "errorstat_WRONGTYPE,count=2"]
    );
    // A run without failures afterwards still goes as a unit.
    let runs = info_field(&mut r, "stats", "unit_runs");
    let replies = pipelined(&mut r, &[req(&["INCR", "c"]), req(&["RPUSH", "l", "e"])]);
    assert_eq!(replies, vec![int(3), int(5)]);
    assert_eq!(info_field(&mut r, "stats", "unit_runs"), runs + 1);
}

// --- 4. DEL, MSET and INCR among collection writes --------------------------

/// A list of 1,000 elements (pages of its own) at `oldbig`.
fn fill_oldbig(r: &mut Raw) {
    for i in 0..20 {
        let items: Vec<String> = (0..50).map(|j| element("old", i * 50 + j)).collect();
        let mut args = vec!["RPUSH".to_string(), "oldbig".to_string()];
        args.extend(items);
        r.send(&reqs(&args)).unwrap();
        assert_eq!(r.read(), Some(int((i as i64 + 1) * 50)));
    }
}

/// Proves: DEL and MSET over collections the same run pushed to, then pushes
/// again, and counters mixed in, end as sequential execution.
#[test]
fn del_and_mset_in_a_run_over_collections_it_changed() {
    let a = TestServer::start();
    let mut r = a.raw();
    // A list with pages of its own, from before the run.
    fill_oldbig(&mut r);
    let mut script = vec![
        req(&["RPUSH", "dl", "a", "b", "c"]),
        req(&["SADD", "ds", "x", "y"]),
        req(&["HSET", "dh", "f", "1", "g", "2"]),
        req(&["MSET", "m1", "5", "m2", "x"]),
        req(&["INCR", "m1"]),
        req(&["DEL", "dl"]),
        req(&["RPUSH", "dl", "d"]),
        req(&["LPUSH", "dl", "e"]),
        req(&["DEL", "ds", "dh", "m2", "missing"]),
        req(&["SADD", "ds", "z"]),
        req(&["HINCRBY", "dh", "f", "7"]),
        req(&["INCRBY", "m1", "10"]),
        req(&["MSET", "m1", "100", "dl2", "s"]),
        req(&["DECR", "m1"]),
        req(&["DEL", "m1"]),
        req(&["INCR", "m1"]),
        req(&["RPUSH", "dl", "f"]),
        // A list grown to several pages in the run, deleted, pushed again.
        req(&["DEL", "oldbig"]),
        req(&["RPUSH", "oldbig", "new-1", "new-2"]),
    ];
    for i in 0..40 {
        script.push(req(&["RPUSH", "newbig", &element("n", i)]));
    }
    script.push(req(&["DEL", "newbig"]));
    script.push(req(&["RPUSH", "newbig", "only"]));
    // MSET over a list the run changed replaces it.
    script.push(req(&["LPUSH", "gone", "1", "2"]));
    script.push(req(&["MSET", "gone", "now-a-string"]));
    script.push(req(&["INCRBY", "dl2-num", "3"]));
    let mut want = vec![
        int(3),
        int(2),
        int(2),
        ok(),
        int(6),
        int(1),
        int(1),
        int(2),
        int(3),
        int(1),
        int(7),
        int(16),
        ok(),
        int(99),
        int(1),
        int(1),
        int(3),
        int(1),
        int(2),
    ];
    want.extend((1..=40).map(int));
    want.extend([int(1), int(1), int(2), ok(), int(3)]);
    let before = info_field(&mut r, "stats", "unit_runs");
    // Each request replies as when executed alone, in order.
    assert_eq!(pipelined(&mut r, &script), want);
    // The final state is sequential execution's.
    assert_eq!(
        cmd(&mut r, &["LRANGE", "dl", "0", "-1"]),
        bulks(&["e", "d", "f"])
    );
    assert_eq!(cmd(&mut r, &["SMEMBERS", "ds"]), bulks(&["z"]));
    assert_eq!(contents(&mut r, "dh").1, bulks(&["f", "7"]));
    assert_eq!(cmd(&mut r, &["GET", "m1"]), Resp::bulk("1"));
    assert_eq!(cmd(&mut r, &["EXISTS", "m2"]), int(0));
    assert_eq!(cmd(&mut r, &["GET", "dl2"]), Resp::bulk("s"));
    assert_eq!(
        cmd(&mut r, &["LRANGE", "oldbig", "0", "-1"]),
        bulks(&["new-1", "new-2"])
    );
    assert_eq!(
        cmd(&mut r, &["LRANGE", "newbig", "0", "-1"]),
        bulks(&["only"])
    );
    assert_eq!(cmd(&mut r, &["GET", "gone"]), Resp::bulk("now-a-string"));
    assert_eq!(cmd(&mut r, &["GET", "dl2-num"]), Resp::bulk("3"));
    assert_eq!(cmd(&mut r, &["DBSIZE"]), int(9));
    // The pipeline went as units.
    assert!(info_field(&mut r, "stats", "unit_runs") > before);

    // The same script one by one on another server ends the same.
    let b = TestServer::start();
    let mut rb = b.raw();
    fill_oldbig(&mut rb);
    assert_eq!(one_by_one(&mut rb, &script), want);
    let keys = [
        "dl", "ds", "dh", "m1", "m2", "dl2", "oldbig", "newbig", "gone", "dl2-num",
    ];
    assert_eq!(state(&mut r, &keys), state(&mut rb, &keys));
}

// --- 4b. Collections emptied in a run, and deadlines ------------------------

/// A key's time to live as a class: -2 missing, -1 none, 1 some.
fn ttl_class(raw: &mut Raw, key: &str) -> i64 {
    match cmd(raw, &["TTL", key]) {
        Resp::Int(n) if n > 0 => 1,
        Resp::Int(n) => n,
        other => panic!("TTL {key}: {other:?}"),
    }
}

/// Proves: a collection emptied in a run is deleted (a refill is a new key
/// with no deadline), and deadlines otherwise end as one by one.
#[test]
fn collections_emptied_in_a_run_and_deadlines_end_as_one_by_one() {
    let setup: Vec<Vec<u8>> = vec![
        req(&["RPUSH", "l", "a"]),
        req(&["EXPIRE", "l", "1000"]),
        req(&["HSET", "h", "f", "1"]),
        req(&["EXPIRE", "h", "1000"]),
        req(&["RPUSH", "keep", "a"]),
        req(&["EXPIRE", "keep", "1000"]),
        req(&["SET", "t1", "x", "EX", "1000"]),
        req(&["SET", "t2", "5", "EX", "1000"]),
        req(&["SADD", "gone", "a"]),
        req(&["EXPIRE", "gone", "1000"]),
    ];
    let script: Vec<Vec<u8>> = vec![
        req(&["LPOP", "l"]),
        req(&["RPUSH", "l", "b"]),
        req(&["HDEL", "h", "f"]),
        req(&["HSET", "h", "g", "2"]),
        req(&["RPUSH", "keep", "b"]),
        req(&["MSET", "t1", "y"]),
        req(&["INCR", "t2"]),
        req(&["SREM", "gone", "a"]),
        req(&["LPUSH", "gone", "x"]),
        req(&["SADD", "s", "a"]),
        req(&["SREM", "s", "a"]),
        req(&["SADD", "s", "b"]),
        req(&["ZADD", "z", "1", "a"]),
        req(&["ZPOPMIN", "z"]),
        req(&["ZPOPMAX", "z"]),
        req(&["INCR", "c"]),
    ];
    // Pops of a list emptied earlier in the run (sent apart: the first
    // script must go as a unit).
    let pops: Vec<Vec<u8>> = vec![
        req(&["RPUSH", "q", "a"]),
        req(&["LPOP", "q"]),
        req(&["LPOP", "q"]),
        req(&["RPOP", "q"]),
        req(&["INCR", "c"]),
    ];
    let a = TestServer::start();
    let b = TestServer::start();
    let (mut ra, mut rb) = (a.raw(), b.raw());
    one_by_one(&mut ra, &setup);
    one_by_one(&mut rb, &setup);
    let want = one_by_one(&mut rb, &script);
    // The replies Redis gives one by one.
    assert_eq!(
        want,
        vec![
            Resp::bulk("a"),
            int(1),
            int(1),
            int(1),
            int(2),
            ok(),
            int(6),
            int(1),
            int(1),
            int(1),
            int(1),
            int(1),
            int(1),
            bulks(&["a", "1"]),
            Resp::Array(vec![]),
            int(1),
        ]
    );
    let want_pops = one_by_one(&mut rb, &pops);
    assert_eq!(
        want_pops,
        vec![int(1), Resp::bulk("a"), Resp::Null, Resp::Null, int(2)]
    );
    // Pipelined: the same replies, the first script as one unit.
    let runs = info_field(&mut ra, "stats", "unit_runs");
    assert_eq!(pipelined(&mut ra, &script), want);
    // MSET and INCR go on their own paths: the collection writes before
    // MSET and those between INCR t2 and INCR c are two units.
    assert_eq!(info_field(&mut ra, "stats", "unit_runs"), runs + 2);
    assert_eq!(pipelined(&mut ra, &pops), want_pops);
    // No error tallied on the way.
    assert_eq!(
        info_counts(&mut ra, "errorstats", "errorstat_"),
        Vec::<String>::new()
    );
    let keys = ["l", "h", "keep", "t1", "t2", "gone", "s", "z", "c", "q"];
    assert_eq!(state(&mut ra, &keys), state(&mut rb, &keys), "contents");
    // Deadlines as one by one leaves them: a list or hash emptied (so
    // deleted) and refilled in the run is a new key without one, MSET drops
    // one, a push or INCR keeps it.
    let ttls = |r: &mut Raw| -> Vec<(&str, i64)> {
        keys[..6].iter().map(|k| (*k, ttl_class(r, k))).collect()
    };
    let one_by_one_ttls = ttls(&mut rb);
    assert_eq!(
        one_by_one_ttls,
        vec![
            ("l", -1),
            ("h", -1),
            ("keep", 1),
            ("t1", -1),
            ("t2", 1),
            ("gone", -1)
        ]
    );
    assert_eq!(ttls(&mut ra), one_by_one_ttls, "pipelined deadlines");
}

/// Like [`pipelined`], but `None` for each reply lost to a closed
/// connection.
fn pipelined_or_closed(raw: &mut Raw, script: &[Vec<u8>]) -> Vec<Option<Resp>> {
    raw.send(&script.concat()).unwrap();
    (0..script.len()).map(|_| raw.read()).collect()
}

/// Proves: SPOP of a set emptied earlier in the same run replies nil, as
/// one by one (the key no longer exists).
#[test]
fn spop_of_a_set_emptied_earlier_in_the_run_replies_nil() {
    // SREM empties the set the run's SADD created; SPOP then finds no key.
    let script = vec![
        req(&["SADD", "s", "a"]),
        req(&["SREM", "s", "a"]),
        req(&["SPOP", "s"]),
        req(&["SADD", "s", "b"]),
        req(&["INCR", "c"]),
    ];
    let b = TestServer::start();
    let want = one_by_one(&mut b.raw(), &script);
    assert_eq!(want, vec![int(1), int(1), Resp::Null, int(1), int(1)]);
    let a = TestServer::start();
    let mut ra = a.raw();
    // The same replies pipelined (the connection stays up).
    let got = pipelined_or_closed(&mut ra, &script);
    let want_some: Vec<Option<Resp>> = want.iter().cloned().map(Some).collect();
    if got != want_some {
        // What the server holds afterwards, for the failure's message.
        let mut other = a.raw();
        let after = state(&mut other, &["s", "c"]);
        panic!("pipelined replies {got:?}, want {want_some:?}; state after: {after:?}");
    }
    assert_eq!(cmd(&mut ra, &["SMEMBERS", "s"]), bulks(&["b"]));
    // SPOP of a set's last member in a run: the member, and the key is gone.
    let script = vec![
        req(&["SADD", "one", "m"]),
        req(&["SPOP", "one"]),
        req(&["SPOP", "one"]),
        req(&["INCR", "c"]),
    ];
    assert_eq!(
        pipelined(&mut ra, &script),
        vec![int(1), Resp::bulk("m"), Resp::Null, int(2)]
    );
    assert_eq!(cmd(&mut ra, &["EXISTS", "one"]), int(0));
}

// --- 5. Many clients pipelining to the same hot keys ------------------------

/// Proves: 8 clients pipelining to the same hot keys lose no write and see a
/// serializable order (every length and counter value seen exactly once).
#[test]
fn concurrent_pipelines_on_hot_keys_lose_nothing() {
    const THREADS: usize = 8;
    const BATCHES: usize = 190;
    const BATCH: usize = 16;
    let a = TestServer::start();
    let addr = a.addr;
    let handles: Vec<_> = (0..THREADS)
        .map(|t| {
            std::thread::spawn(move || {
                let mut r = Raw::connect(addr);
                let (mut pushes, mut incrs, mut fields) = (Vec::new(), Vec::new(), 0u64);
                for batch in 0..BATCHES {
                    let mut script = Vec::new();
                    for j in 0..BATCH {
                        let i = batch * BATCH + j;
                        script.push(match (i + t) % 3 {
                            0 => req(&["LPUSH", "hot:list", &format!("t{t}-{i}")]),
                            1 => req(&["INCR", "hot:counter"]),
                            _ => req(&["HSET", "hot:hash", &format!("t{t}-{i}"), "v"]),
                        });
                    }
                    let replies = pipelined(&mut r, &script);
                    for (j, reply) in replies.into_iter().enumerate() {
                        let i = batch * BATCH + j;
                        match ((i + t) % 3, reply) {
                            (0, Resp::Int(n)) => pushes.push(n),
                            (1, Resp::Int(n)) => incrs.push(n),
                            (_, Resp::Int(1)) => fields += 1,
                            (_, other) => panic!("thread {t}, request {i}: {other:?}"),
                        }
                    }
                }
                (pushes, incrs, fields)
            })
        })
        .collect();
    let (mut pushes, mut incrs, mut fields) = (Vec::new(), Vec::new(), 0);
    for h in handles {
        let (p, i, f) = h.join().expect("client thread");
        pushes.extend(p);
        incrs.extend(i);
        fields += f;
    }
    let mut r = a.raw();
    let total = (THREADS * BATCHES * BATCH) as i64;
    let n_push = pushes.len() as i64;
    let n_incr = incrs.len() as i64;
    // Every request was answered, and the totals are what was sent.
    assert_eq!(n_push + n_incr + fields as i64, total);
    assert_eq!(cmd(&mut r, &["LLEN", "hot:list"]), int(n_push));
    assert_eq!(
        cmd(&mut r, &["GET", "hot:counter"]),
        Resp::bulk(&n_incr.to_string())
    );
    assert_eq!(cmd(&mut r, &["HLEN", "hot:hash"]), int(fields as i64));
    // Serializable: each push saw its own length, each INCR its own value.
    pushes.sort_unstable();
    incrs.sort_unstable();
    assert_eq!(pushes, (1..=n_push).collect::<Vec<_>>());
    assert_eq!(incrs, (1..=n_incr).collect::<Vec<_>>());
    // Runs were made (under contention some went one by one).
    assert!(info_field(&mut r, "stats", "unit_runs") > 0);
}

// --- 6. Durability across a restart ----------------------------------------

/// Proves: the writes of pipelined runs are all there after a shutdown and
/// a restart on the same pool.
#[test]
fn runs_survive_a_restart() {
    let mut a = TestServer::start();
    let mut r = a.raw();
    let mut rng = Rng(5);
    // What the list and the counter must hold, and the hash's total.
    let (mut list, mut counter, mut hash_total) = (VecDeque::new(), 0i64, 0i64);
    for round in 0..40u64 {
        let mut script = Vec::new();
        for j in 0..50u64 {
            let i = round * 50 + j;
            let op = rng.below(8);
            match op {
                0 | 1 => list.push_back(element("d", i)),
                2 => drop(list.pop_front()),
                3 => hash_total += 3,
                6 => counter += 1,
                _ => {}
            }
            script.push(match op {
                0 | 1 => req(&["RPUSH", "dur:list", &element("d", i)]),
                2 => req(&["LPOP", "dur:list"]),
                3 => req(&["HINCRBY", "dur:hash", &format!("f{}", i % 30), "3"]),
                4 => req(&["ZINCRBY", "dur:zset", "1.5", &format!("m{}", i % 20)]),
                5 => req(&["SADD", "dur:set", &format!("s{}", i % 100)]),
                6 => req(&["INCR", "dur:counter"]),
                _ => req(&["MSET", &format!("dur:s{}", i % 10), &i.to_string()]),
            });
        }
        let replies = pipelined(&mut r, &script);
        assert!(
            !replies.iter().any(|x| matches!(x, Resp::Error(_))),
            "{replies:?}"
        );
    }
    assert!(info_field(&mut r, "stats", "unit_runs") >= 40);
    let mut keys = vec![
        "dur:list".to_string(),
        "dur:hash".into(),
        "dur:zset".into(),
        "dur:set".into(),
        "dur:counter".into(),
    ];
    keys.extend((0..10).map(|i| format!("dur:s{i}")));
    let keys: Vec<&str> = keys.iter().map(String::as_str).collect();
    let before = state(&mut r, &keys);
    let size = cmd(&mut r, &["DBSIZE"]);
    assert_eq!(size, int(15));
    // The state is what was sent (so the restart has something to keep).
    let want: Vec<&str> = list.iter().map(String::as_str).collect();
    assert_eq!(before[0].1, bulks(&want));
    assert_eq!(before[4].1, Resp::bulk(&counter.to_string()));
    let sum: i64 = bytes_of(before[1].1.clone())
        .chunks(2)
        .map(|p| String::from_utf8_lossy(&p[1]).parse::<i64>().unwrap())
        .sum();
    assert_eq!(sum, hash_total);
    drop(r);
    a.stop();
    a.restart();
    let mut r = a.raw();
    // Every run's writes are there after the restart, as answered.
    assert_eq!(state(&mut r, &keys), before);
    assert_eq!(cmd(&mut r, &["DBSIZE"]), size);
}

// --- 7. WATCH and blocked clients ------------------------------------------

/// Proves: a run's write to a watched collection aborts the watcher's EXEC.
#[test]
fn a_watched_key_written_in_a_run_aborts_the_exec() {
    let a = TestServer::start();
    let (mut watcher, mut writer) = (a.raw(), a.raw());
    assert_eq!(cmd(&mut writer, &["RPUSH", "w", "a"]), int(1));
    assert_eq!(cmd(&mut watcher, &["WATCH", "w"]), ok());
    let runs = info_field(&mut writer, "stats", "unit_runs");
    let replies = pipelined(
        &mut writer,
        &[
            req(&["INCR", "x"]),
            req(&["RPUSH", "w", "b"]),
            req(&["HSET", "y", "f", "1"]),
        ],
    );
    assert_eq!(replies, vec![int(1), int(2), int(1)]);
    assert_eq!(info_field(&mut writer, "stats", "unit_runs"), runs + 1);
    assert_eq!(cmd(&mut watcher, &["MULTI"]), ok());
    cmd(&mut watcher, &["RPUSH", "w", "from-exec"]);
    assert_eq!(cmd(&mut watcher, &["EXEC"]), Resp::Null);
    assert_eq!(
        cmd(&mut watcher, &["LRANGE", "w", "0", "-1"]),
        bulks(&["a", "b"])
    );
}

/// Proves: with a client blocked on a list, a pipeline of pushes and pops
/// serves it as single commands would (the first push goes to it).
#[test]
fn a_blocked_client_is_served_by_a_pipeline_of_pushes() {
    let a = TestServer::start();
    let (mut blocked, mut writer) = (a.raw(), a.raw());
    blocked.send(&req(&["BLPOP", "q", "5"])).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let replies = pipelined(
        &mut writer,
        &[
            req(&["INCR", "n"]),
            req(&["RPUSH", "q", "x"]),
            req(&["RPUSH", "q", "y"]),
            req(&["LPOP", "q"]),
            req(&["LPOP", "q"]),
        ],
    );
    // One by one: the first push is served to the blocked client at once.
    assert_eq!(
        replies,
        vec![int(1), int(1), int(1), Resp::bulk("y"), Resp::Null]
    );
    assert_eq!(
        blocked.read().unwrap(),
        Resp::Array(vec![Resp::bulk("q"), Resp::bulk("x")])
    );
    assert_eq!(cmd(&mut writer, &["EXISTS", "q"]), int(0));
}
