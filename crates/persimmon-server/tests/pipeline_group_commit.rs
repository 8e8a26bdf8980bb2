//! Pipelines and group commit (`pipeline.rs`): a pipeline whose runs of
//! plain SETs execute as one grouped engine write gives exactly the replies,
//! the final state and the command statistics of executing the same
//! requests one at a time (each request sent after the previous reply).
//!
//! The script mixes runs of plain SETs (one key set twice in a run, keys
//! holding lists overwritten, keys in another database) and runs of GETs
//! (of strings, lists, missing keys, a key too long to exist) with everything
//! that must end a run or stay out of one: GETs, SETs with options, wrong
//! arity, keys over the engine's limit, inline requests, MULTI/EXEC with
//! SETs queued inside, SELECT, unknown commands, INCR on a string, DEL,
//! LPUSH, MSET.

mod common;

use common::{info_counts, info_field, one_by_one, pipelined, req, Raw, Resp, TestServer};

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

const KEYS: u64 = 24;

fn key(i: u64) -> String {
    format!("k{i}")
}

fn script(seed: u64, len: usize) -> Vec<Vec<u8>> {
    let mut rng = Rng(seed | 1);
    let mut out = Vec::new();
    let mut in_db1 = false;
    while out.len() < len {
        let k = key(rng.below(KEYS));
        let v = format!("v{}", rng.below(1000));
        let r: Vec<Vec<u8>> = match rng.below(42) {
            // Runs of plain SETs, one key possibly twice.
            0..=19 => (0..1 + rng.below(24))
                .map(|_| {
                    let k = key(rng.below(KEYS));
                    let v = format!("r{}", rng.below(100_000));
                    req(&["SET", &k, &v])
                })
                .collect(),
            20..=22 => vec![req(&["GET", &k])],
            23 => vec![req(&["set", &k, &v, "EX", "100"])],
            24 => vec![req(&["SET", &k])],
            25 => vec![req(&["SET", &k, &v, "NX"])],
            26 => vec![req(&["LPUSH", &k, "a", "b"])],
            27 => vec![req(&["INCR", &k])],
            28 => vec![req(&["DEL", &k])],
            29 => {
                in_db1 = !in_db1;
                vec![req(&["SELECT", if in_db1 { "1" } else { "0" }])]
            }
            30 => vec![
                req(&["SET", &k, &v]),
                req(&["MULTI"]),
                req(&["SET", &k, "in-multi"]),
                req(&["SET", &key(rng.below(KEYS)), "in-multi-2"]),
                req(&["EXEC"]),
                req(&["SET", &k, &v]),
            ],
            31 => {
                let long = "x".repeat(70 << 10);
                vec![
                    req(&["SET", &k, &v]),
                    req(&["SET", &long, "v"]),
                    req(&["SET", &k, "after-long"]),
                ]
            }
            32 => vec![
                req(&["SET", &k, &v]),
                format!("SET {k} inline-{v}\r\n").into_bytes(),
                req(&["SET", &k, &v]),
            ],
            33 => vec![req(&["NOSUCHCOMMAND", &k])],
            34 => vec![req(&["MSET", &k, &v, &key(rng.below(KEYS)), "m"])],
            35 => vec![req(&["TYPE", &k])],
            36 => vec![req(&["SET", &k, &v, "GET"])],
            // Runs of GETs (some keys holding lists: WRONGTYPE; one too
            // long to exist: a miss).
            37..=38 => {
                let mut gets: Vec<Vec<u8>> = (0..1 + rng.below(40))
                    .map(|_| req(&["GET", &key(rng.below(KEYS))]))
                    .collect();
                if rng.below(4) == 0 {
                    gets.push(req(&["GET", &"y".repeat(70 << 10)]));
                    gets.push(req(&["get", &k]));
                }
                gets
            }
            _ => vec![req(&["SET", &k, &v]), req(&["GET", &k])],
        };
        out.extend(r);
    }
    out
}

/// Every key's type and value, in databases 0 and 1, and their sizes.
fn state(raw: &mut Raw) -> Vec<Resp> {
    let mut out = Vec::new();
    for db in ["0", "1"] {
        raw.command(&[b"SELECT", db.as_bytes()]);
        out.push(raw.command(&[b"DBSIZE"]));
        for i in 0..KEYS {
            let k = key(i);
            let t = raw.command(&[b"TYPE", k.as_bytes()]);
            let v = match &t {
                Resp::Simple(t) if t == "list" => {
                    raw.command(&[b"LRANGE", k.as_bytes(), b"0", b"-1"])
                }
                _ => raw.command(&[b"GET", k.as_bytes()]),
            };
            out.push(t);
            out.push(v);
        }
    }
    out
}

#[test]
fn a_pipeline_replies_and_ends_as_one_by_one_execution() {
    for seed in [1u64, 7, 42] {
        let script = script(seed, 1500);
        let a = TestServer::start();
        let b = TestServer::start();
        let (mut ra, mut rb) = (a.raw(), b.raw());
        let got = pipelined(&mut ra, &script);
        let want = one_by_one(&mut rb, &script);
        for (i, (g, w)) in got.iter().zip(&want).enumerate() {
            assert_eq!(g, w, "seed {seed}, reply {i}");
        }
        // Back to database 0 on both, then the state.
        ra.command(&[b"SELECT", b"0"]);
        rb.command(&[b"SELECT", b"0"]);
        assert_eq!(state(&mut ra), state(&mut rb), "seed {seed}: final state");
        for (section, prefix) in [
            ("commandstats", "cmdstat_"),
            ("errorstats", "errorstat_"),
            ("stats", "total_commands_processed"),
            ("stats", "keyspace_"),
        ] {
            assert_eq!(
                info_counts(&mut ra, section, prefix),
                info_counts(&mut rb, section, prefix),
                "seed {seed}: INFO {section} {prefix}"
            );
        }
        // The pipeline did run as groups; one by one never does.
        let runs = info_field(&mut ra, "stats", "group_commit_runs");
        let commands = info_field(&mut ra, "stats", "group_commit_commands");
        assert!(
            runs > 10 && commands > 2 * runs,
            "{runs} runs, {commands} commands"
        );
        assert_eq!(info_field(&mut rb, "stats", "group_commit_runs"), 0);
    }
}

#[test]
fn a_set_over_a_collection_in_a_run_replaces_it() {
    let a = TestServer::start();
    let mut r = a.raw();
    // A list large enough to have pages of its own.
    for i in 0..50 {
        let items: Vec<String> = (0..100).map(|j| format!("item-{i}-{j}")).collect();
        let mut args: Vec<&[u8]> = vec![b"RPUSH", b"big"];
        args.extend(items.iter().map(|s| s.as_bytes()));
        assert!(matches!(r.command(&args), Resp::Int(_)));
    }
    r.command(&[b"SADD", b"set", b"a", b"b"]);
    let replies = pipelined(
        &mut r,
        &[
            req(&["SET", "big", "now-a-string"]),
            req(&["SET", "set", "also"]),
            req(&["SET", "big", "twice"]),
            req(&["GET", "big"]),
            req(&["TYPE", "set"]),
        ],
    );
    assert_eq!(
        replies,
        vec![
            Resp::Simple("OK".into()),
            Resp::Simple("OK".into()),
            Resp::Simple("OK".into()),
            Resp::bulk("twice"),
            Resp::Simple("string".into()),
        ]
    );
    assert_eq!(
        r.command(&[b"LLEN", b"big"]),
        Resp::Error("WRONGTYPE Operation against a key holding the wrong kind of value".into())
    );
    assert_eq!(r.command(&[b"DBSIZE"]), Resp::Int(2));
}

#[test]
fn a_watched_key_set_in_a_run_aborts_the_exec() {
    let a = TestServer::start();
    let (mut watcher, mut writer) = (a.raw(), a.raw());
    assert_eq!(
        watcher.command(&[b"WATCH", b"w"]),
        Resp::Simple("OK".into())
    );
    let replies = pipelined(
        &mut writer,
        &[
            req(&["SET", "x", "1"]),
            req(&["SET", "w", "2"]),
            req(&["SET", "y", "3"]),
        ],
    );
    assert!(replies.iter().all(|r| r == &Resp::Simple("OK".into())));
    watcher.command(&[b"MULTI"]);
    watcher.command(&[b"SET", b"w", b"from-exec"]);
    assert_eq!(watcher.command(&[b"EXEC"]), Resp::Null);
    assert_eq!(watcher.command(&[b"GET", b"w"]), Resp::bulk("2"));
}

#[test]
fn a_blocked_client_sees_a_run_as_single_sets() {
    // With a client blocked, runs execute one by one (the serving order per
    // command is kept); the outcome is what single SETs give.
    let a = TestServer::start();
    let (mut blocked, mut writer) = (a.raw(), a.raw());
    blocked.send(&req(&["BLPOP", "q", "5"])).unwrap();
    std::thread::sleep(std::time::Duration::from_millis(200));
    let replies = pipelined(
        &mut writer,
        &[
            req(&["SET", "a", "1"]),
            req(&["SET", "q", "not-a-list"]),
            req(&["DEL", "q"]),
            req(&["RPUSH", "q", "x"]),
        ],
    );
    assert_eq!(replies[3], Resp::Int(1));
    assert_eq!(
        blocked.read().unwrap(),
        Resp::Array(vec![Resp::bulk("q"), Resp::bulk("x")])
    );
}
