//! Durability seen from outside: `persimmon serve` runs as a child process,
//! clients write through it (pipelined SET, DEL, INCR, HSET on several
//! connections), the server is killed with SIGKILL at a random moment, and
//! after a restart every write that was acknowledged must be there — for
//! several rounds on the same pool, then `persimmon check` must pass.
//!
//! What "acknowledged" allows: a write whose reply arrived is durable; a
//! write sent but not answered may or may not have happened (but if it did,
//! it happened whole).

mod common;

use std::collections::HashMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{check_pool, encode, pool_dir, start_server, Rng};

/// Reads one simple reply line (`+OK`, `:n`, `-ERR`) or a bulk string.
fn read_reply(r: &mut BufReader<TcpStream>) -> std::io::Result<Reply> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let body = line.trim_end_matches("\r\n").to_string();
    Ok(match body.as_bytes().first() {
        Some(b'+') => Reply::Ok,
        Some(b':') => Reply::Int(body[1..].parse().unwrap()),
        Some(b'$') => {
            let n: i64 = body[1..].parse().unwrap();
            if n < 0 {
                Reply::Nil
            } else {
                let mut data = vec![0; n as usize + 2];
                r.read_exact(&mut data)?;
                data.truncate(n as usize);
                Reply::Bulk(data)
            }
        }
        _ => panic!("unexpected reply {body:?}"),
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Ok,
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
}

/// A write one client sent, and whether its reply came back.
#[derive(Debug, Clone)]
enum Op {
    Set {
        key: String,
        value: String,
    },
    Del {
        key: String,
    },
    Incr {
        key: String,
    },
    HSet {
        key: String,
        field: String,
        value: String,
    },
}

impl Op {
    fn request(&self) -> Vec<u8> {
        match self {
            Op::Set { key, value } => encode(&[b"SET", key.as_bytes(), value.as_bytes()]),
            Op::Del { key } => encode(&[b"DEL", key.as_bytes()]),
            Op::Incr { key } => encode(&[b"INCR", key.as_bytes()]),
            Op::HSet { key, field, value } => {
                encode(&[b"HSET", key.as_bytes(), field.as_bytes(), value.as_bytes()])
            }
        }
    }
}

/// One client: pipelines windows of writes until the connection breaks (or
/// `stop`); returns every op sent with its reply, if one arrived.
fn writer(
    addr: SocketAddr,
    round: usize,
    id: usize,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Vec<(Op, Option<Reply>)> {
    let mut rng = Rng(seed | 1);
    let stream = TcpStream::connect(addr).expect("connect");
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    let mut log: Vec<(Op, Option<Reply>)> = Vec::new();
    let mut n = 0usize;
    while !stop.load(Ordering::Relaxed) {
        let window = 1 + rng.below(16) as usize;
        let mut batch = Vec::new();
        let first = log.len();
        for _ in 0..window {
            n += 1;
            let op = match rng.below(10) {
                0..=4 => Op::Set {
                    key: format!("r{round}:c{id}:k{n}"),
                    value: format!("v{n}-{}", "x".repeat(rng.below(200) as usize)),
                },
                5 if n > 10 => Op::Del {
                    key: format!("r{round}:c{id}:k{}", n - 1 - rng.below(10) as usize),
                },
                6 | 7 => Op::Incr {
                    key: format!("ctr:c{id}"),
                },
                _ => Op::HSet {
                    key: format!("r{round}:c{id}:h{}", n % 7),
                    field: format!("f{n}"),
                    value: format!("hv{n}"),
                },
            };
            batch.extend(op.request());
            log.push((op, None));
        }
        if w.write_all(&batch).is_err() {
            break;
        }
        for i in first..log.len() {
            match read_reply(&mut r) {
                Ok(reply) => log[i].1 = Some(reply),
                Err(_) => return log,
            }
        }
    }
    log
}

/// A fresh connection for checking.
struct Checker {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

impl Checker {
    fn connect(addr: SocketAddr) -> Checker {
        let s = TcpStream::connect(addr).unwrap();
        s.set_read_timeout(Some(Duration::from_secs(60))).unwrap();
        Checker {
            w: s.try_clone().unwrap(),
            r: BufReader::new(s),
        }
    }

    fn call(&mut self, args: &[&[u8]]) -> Reply {
        self.w.write_all(&encode(args)).unwrap();
        read_reply(&mut self.r).unwrap()
    }
}

/// What the acknowledged writes promise, across rounds.
#[derive(Default)]
struct Expected {
    /// Key → Some(value) (acknowledged SET, not deleted since) or None
    /// (acknowledged DEL, not set since).
    strings: HashMap<String, Option<String>>,
    /// Keys with an unacknowledged write after the last acknowledged one:
    /// either outcome is allowed.
    uncertain: HashMap<String, Vec<Option<String>>>,
    /// Counter → (acknowledged value, INCRs sent in total).
    counters: HashMap<String, (i64, i64)>,
    /// (hash, field) → value, acknowledged.
    fields: HashMap<(String, String), String>,
}

impl Expected {
    fn absorb(&mut self, log: Vec<(Op, Option<Reply>)>) {
        for (op, reply) in log {
            let acked = reply.is_some();
            match op {
                Op::Set { key, value } => {
                    if acked {
                        assert_eq!(reply, Some(Reply::Ok));
                        self.uncertain.remove(&key);
                        self.strings.insert(key, Some(value));
                    } else {
                        let before = self.strings.get(&key).cloned().flatten();
                        self.uncertain
                            .entry(key)
                            .or_insert_with(|| vec![before])
                            .push(Some(value));
                    }
                }
                Op::Del { key } => {
                    if acked {
                        self.uncertain.remove(&key);
                        self.strings.insert(key, None);
                    } else {
                        let before = self.strings.get(&key).cloned().flatten();
                        self.uncertain
                            .entry(key)
                            .or_insert_with(|| vec![before])
                            .push(None);
                    }
                }
                Op::Incr { key } => {
                    let entry = self.counters.entry(key).or_insert((0, 0));
                    entry.1 += 1;
                    if let Some(Reply::Int(n)) = reply {
                        entry.0 = entry.0.max(n);
                    }
                }
                Op::HSet { key, field, value } => {
                    if acked {
                        self.fields.insert((key, field), value);
                    }
                }
            }
        }
    }

    /// Checks the restarted server against every acknowledged write, then
    /// makes what was found the new certain state.
    fn verify(&mut self, c: &mut Checker) -> usize {
        let mut checked = 0;
        for (key, want) in &self.strings {
            if self.uncertain.contains_key(key) {
                continue;
            }
            let got = match c.call(&[b"GET", key.as_bytes()]) {
                Reply::Bulk(v) => Some(String::from_utf8(v).unwrap()),
                Reply::Nil => None,
                other => panic!("GET {key}: {other:?}"),
            };
            assert_eq!(&got, want, "acknowledged write of {key} lost");
            checked += 1;
        }
        for (key, allowed) in std::mem::take(&mut self.uncertain) {
            let got = match c.call(&[b"GET", key.as_bytes()]) {
                Reply::Bulk(v) => Some(String::from_utf8(v).unwrap()),
                Reply::Nil => None,
                other => panic!("GET {key}: {other:?}"),
            };
            assert!(
                allowed.contains(&got),
                "{key} holds {got:?}, none of the states its writes allow: {allowed:?}"
            );
            self.strings.insert(key, got);
        }
        for (key, (acked, sent)) in self.counters.iter_mut() {
            let got = match c.call(&[b"GET", key.as_bytes()]) {
                Reply::Bulk(v) => String::from_utf8(v).unwrap().parse::<i64>().unwrap(),
                Reply::Nil => 0,
                other => panic!("GET {key}: {other:?}"),
            };
            assert!(
                got >= *acked && got <= *sent,
                "counter {key} is {got}; acknowledged {acked}, sent {sent}"
            );
            *acked = got;
            *sent = got;
            checked += 1;
        }
        for ((key, field), want) in &self.fields {
            let got = c.call(&[b"HGET", key.as_bytes(), field.as_bytes()]);
            assert_eq!(
                got,
                Reply::Bulk(want.as_bytes().to_vec()),
                "acknowledged HSET {key} {field} lost"
            );
            checked += 1;
        }
        checked
    }
}

#[test]
fn every_acknowledged_write_survives_kill_9() {
    let dir = pool_dir();
    let pool = dir.path().join("serve-kill9.pool");
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    eprintln!("serve_kill9 seed {seed}");
    let mut rng = Rng(seed | 1);
    let mut expected = Expected::default();
    let rounds = 4;
    let clients = 4;
    for round in 0..rounds {
        let (mut child, addr) = start_server(&pool);
        if round > 0 {
            let mut c = Checker::connect(addr);
            let checked = expected.verify(&mut c);
            eprintln!("round {round}: {checked} acknowledged writes verified after kill -9");
        }
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..clients)
            .map(|id| {
                let stop = stop.clone();
                let s = rng.next();
                std::thread::spawn(move || writer(addr, round, id, s, stop))
            })
            .collect();
        let delay = Duration::from_millis(100 + rng.below(500));
        let started = Instant::now();
        std::thread::sleep(delay);
        child.kill().expect("SIGKILL the server");
        let _ = child.wait();
        stop.store(true, Ordering::Relaxed);
        let mut acked = 0;
        for h in handles {
            let log = h.join().expect("writer thread");
            acked += log.iter().filter(|(_, r)| r.is_some()).count();
            expected.absorb(log);
        }
        eprintln!(
            "round {round}: killed after {:?}, {acked} writes acknowledged",
            started.elapsed()
        );
        assert!(acked > 0, "no write was acknowledged before the kill");
    }
    // A last restart: verify, then stop cleanly and check the pool.
    let (mut child, addr) = start_server(&pool);
    let mut c = Checker::connect(addr);
    let checked = expected.verify(&mut c);
    assert!(checked > 0);
    c.w.write_all(&encode(&[b"SHUTDOWN"])).unwrap();
    assert!(
        read_reply(&mut c.r).is_err(),
        "SHUTDOWN closes the connection without a reply"
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "serve exits 0 after SHUTDOWN: {status}");
    check_pool(&pool);
}
