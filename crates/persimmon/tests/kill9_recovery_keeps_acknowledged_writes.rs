//! A writer process is killed with SIGKILL at a random moment, several times
//! over the same pool; after each kill the pool reopens at once, serves a
//! read before any scan, passes `check`, and holds every write the child had
//! acknowledged (printed after `put`/`delete` returned) with its value.
//!
//! The test binary re-runs itself as the child (env `PERSIMMON_KILL9_CHILD`).

mod common;

use std::io::{BufRead, BufReader};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use persimmon::Db;

const CHILD_ENV: &str = "PERSIMMON_KILL9_CHILD";

fn value_of(key: u64, round: u64) -> Vec<u8> {
    let mut v = format!("round-{round}-key-{key}-").into_bytes();
    v.resize(40 + (key % 300) as usize, b'v');
    v
}

/// Child: writes keys `round*N..` (and deletes every 7th key of the previous
/// round), printing each acknowledged operation, until killed.
fn child(path: &str, round: u64) {
    let db = Db::open(path, common::small_options()).unwrap();
    let mut out = std::io::stdout();
    use std::io::Write;
    for i in 0.. {
        let key = round * 1_000_000 + i;
        db.put(&key.to_le_bytes(), &value_of(key, round)).unwrap();
        writeln!(out, "put {key}").unwrap();
        if round > 0 && i % 7 == 0 {
            let old = (round - 1) * 1_000_000 + i;
            db.delete(&old.to_le_bytes()).unwrap();
            writeln!(out, "del {old}").unwrap();
        }
        out.flush().unwrap();
    }
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    if let Ok(spec) = std::env::var(CHILD_ENV) {
        let (path, round) = spec.split_once('|').unwrap();
        child(path, round.parse().unwrap());
        return;
    }
    let dir = common::pool_dir();
    let path = dir.path().join("kill9.pool");
    let mut expected: std::collections::BTreeMap<u64, Option<Vec<u8>>> = Default::default();
    let mut seed = 0x9E37_79B9_7F4A_7C15u64;
    for round in 0..4u64 {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "--exact",
                "acknowledged_writes_survive_kill_9",
                "--nocapture",
                "--test-threads=1",
            ])
            .env(CHILD_ENV, format!("{}|{round}", path.display()))
            .stdout(Stdio::piped())
            .spawn()
            .unwrap();
        seed ^= seed << 13;
        seed ^= seed >> 7;
        seed ^= seed << 17;
        let wanted_acks = 2_000 + seed % 20_000;
        let mut lines = BufReader::new(child.stdout.take().unwrap()).lines();
        let mut acks = 0;
        let mut last_put = None;
        let mut apply =
            |line: &str, expected: &mut std::collections::BTreeMap<u64, Option<Vec<u8>>>| {
                let (op, key) = line.split_once(' ').unwrap_or(("", ""));
                let Ok(key) = key.parse::<u64>() else {
                    return false;
                };
                match op {
                    "put" => {
                        expected.insert(key, Some(value_of(key, key / 1_000_000)));
                        last_put = Some(key);
                    }
                    "del" => {
                        expected.insert(key, None);
                    }
                    _ => return false,
                };
                true
            };
        let started = Instant::now();
        while acks < wanted_acks && started.elapsed() < Duration::from_secs(60) {
            let Some(Ok(line)) = lines.next() else { break };
            acks += apply(&line, &mut expected) as u64;
        }
        child.kill().unwrap(); // SIGKILL
        child.wait().unwrap();
        // Everything the child printed before it died was acknowledged: it
        // printed each operation after the call returned.
        for line in lines.map_while(|l| l.ok()) {
            acks += apply(&line, &mut expected) as u64;
        }
        // Only the operation in flight at the kill is uncertain: the put of
        // the key after the last one printed, or the delete that follows a
        // printed put. Either outcome is legal for those keys alone.
        let in_flight: Vec<u64> = last_put
            .map(|k| {
                [Some(k + 1), k.checked_sub(1_000_000)]
                    .into_iter()
                    .flatten()
                    .collect()
            })
            .unwrap_or_default();
        let started = Instant::now();
        let db = Db::open(&path, common::small_options()).unwrap();
        let first = db.get(&0u64.to_le_bytes()).unwrap();
        let open_to_first_get = started.elapsed();
        assert!(round == 0 || first.is_some() || expected.get(&0) == Some(&None));
        for key in &in_flight {
            let got = db.get(&key.to_le_bytes()).unwrap();
            let new_put = Some(value_of(*key, key / 1_000_000));
            let before = expected.get(key).cloned().unwrap_or(None);
            assert!(
                got == before || got == new_put || got.is_none(),
                "round {round}: in-flight key {key} holds a value it never had"
            );
            expected.insert(*key, got);
        }
        for (key, want) in &expected {
            let got = db.get(&key.to_le_bytes()).unwrap();
            assert_eq!(&got, want, "round {round}: key {key} after kill -9");
        }
        let report = db.check().unwrap();
        assert!(report.is_ok(), "round {round}: {:?}", report.errors);
        eprintln!(
            "round {round}: {acks} acknowledged ops verified, {} keys, open+first get {:?}",
            db.len(),
            open_to_first_get
        );
    }
}
