//! Durability of combined collection writes seen from outside (issue 33):
//! `persimmon serve` runs as a child process, 6–8 clients pipeline batches
//! of 16 collection writes (RPUSH onto two shared lists and a shared queue,
//! LPOP from the queue, HSET, ZADD, SADD onto one shared hash, sorted set
//! and set) against the same hot keys, so that the combiner executes the
//! runs of many connections as one unit; the server is killed with SIGKILL
//! at a random moment, and after a restart every acknowledged write must be
//! there, whole and in each client's order — for several rounds on the same
//! pool, then `persimmon check` must pass.
//!
//! What "acknowledged" allows: a write whose reply arrived is durable; a
//! write sent but not answered may or may not have happened (but if it did,
//! it happened whole). Every value, field and member is unique
//! (`r{round}c{client}-{seq}`), so where each one came from is known.
//!
//! Reproduce a run with `KILL9_SEED=<seed printed on stderr>`.

mod common;

use std::collections::{HashMap, HashSet};
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use common::{check_pool, encode, pool_dir, start_server, Rng};

/// The two shared lists only ever pushed to.
const LISTS: [&str; 2] = ["hot:list0", "hot:list1"];
/// The shared queue: pushed to and popped from.
const QUEUE: &str = "hot:queue";
const HASH: &str = "hot:hash";
const ZSET: &str = "hot:zset";
const SET: &str = "hot:set";
/// Requests per pipelined batch.
const BATCH: usize = 16;

/// Reads one RESP2 reply: a simple line (`+OK`, `:n`, `-ERR`), a bulk
/// string or an array of them.
fn read_reply(r: &mut BufReader<TcpStream>) -> std::io::Result<Reply> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 || !line.ends_with("\r\n") {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    let body = line.trim_end_matches("\r\n").to_string();
    Ok(match body.as_bytes().first() {
        Some(b'+') => Reply::Ok,
        Some(b'-') => Reply::Err(body[1..].to_string()),
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
        Some(b'*') => {
            let n: i64 = body[1..].parse().unwrap();
            if n < 0 {
                Reply::Nil
            } else {
                let mut items = Vec::with_capacity(n as usize);
                for _ in 0..n {
                    items.push(read_reply(r)?);
                }
                Reply::Array(items)
            }
        }
        _ => panic!("unexpected reply {body:?}"),
    })
}

#[derive(Debug, PartialEq, Eq)]
enum Reply {
    Ok,
    Err(String),
    Int(i64),
    Bulk(Vec<u8>),
    Nil,
    Array(Vec<Reply>),
}

/// The tag of a client's `seq`th request in `round`: unique in the test.
fn tag(round: usize, client: usize, seq: u64) -> String {
    format!("r{round}c{client}-{seq}")
}

/// The (round, client, seq) of a tag, or of a pushed value (a tag with
/// `:padding` after it).
fn parse(value: &str) -> (usize, usize, u64) {
    let t = value.split(':').next().unwrap();
    let (rc, seq) = t
        .split_once('-')
        .unwrap_or_else(|| panic!("not a tag: {value:?}"));
    let (r, c) = rc[1..]
        .split_once('c')
        .unwrap_or_else(|| panic!("not a tag: {value:?}"));
    (r.parse().unwrap(), c.parse().unwrap(), seq.parse().unwrap())
}

/// A write one client sent.
#[derive(Debug, Clone)]
enum Op {
    /// RPUSH onto `LISTS[list]`, or onto `QUEUE` when `list` is 2.
    Push {
        list: usize,
        value: String,
    },
    HSet {
        field: String,
        seq: u64,
    },
    ZAdd {
        member: String,
        seq: u64,
    },
    SAdd {
        member: String,
    },
    /// LPOP from `QUEUE`.
    Pop,
}

impl Op {
    fn request(&self) -> Vec<u8> {
        match self {
            Op::Push { list, value } => {
                let key = if *list == 2 { QUEUE } else { LISTS[*list] };
                encode(&[b"RPUSH", key.as_bytes(), value.as_bytes()])
            }
            Op::HSet { field, seq } => encode(&[
                b"HSET",
                HASH.as_bytes(),
                field.as_bytes(),
                seq.to_string().as_bytes(),
            ]),
            Op::ZAdd { member, seq } => encode(&[
                b"ZADD",
                ZSET.as_bytes(),
                seq.to_string().as_bytes(),
                member.as_bytes(),
            ]),
            Op::SAdd { member } => encode(&[b"SADD", SET.as_bytes(), member.as_bytes()]),
            Op::Pop => encode(&[b"LPOP", QUEUE.as_bytes()]),
        }
    }
}

/// One client: pipelines batches of [`BATCH`] collection writes on the
/// hot keys (one socket write, then the batch's replies) until the
/// connection breaks (or `stop`); returns every op sent with its reply, if
/// one arrived.
fn writer(
    addr: SocketAddr,
    round: usize,
    id: usize,
    seed: u64,
    stop: Arc<AtomicBool>,
) -> Vec<(Op, Option<Reply>)> {
    let mut rng = Rng(seed | 1);
    let Ok(stream) = TcpStream::connect(addr) else {
        return Vec::new();
    };
    stream
        .set_read_timeout(Some(Duration::from_secs(30)))
        .unwrap();
    let mut w = stream.try_clone().unwrap();
    let mut r = BufReader::new(stream);
    let mut log: Vec<(Op, Option<Reply>)> = Vec::new();
    let mut seq = 0u64;
    while !stop.load(Ordering::Relaxed) {
        let mut batch = Vec::new();
        let first = log.len();
        for _ in 0..BATCH {
            seq += 1;
            let t = tag(round, id, seq);
            let op = match rng.below(20) {
                0..=5 => Op::Push {
                    list: rng.below(2) as usize,
                    // Padded, so that the lists span many pages.
                    value: format!("{t}:{}", "x".repeat(rng.below(48) as usize)),
                },
                6..=8 => Op::HSet { field: t, seq },
                9..=11 => Op::ZAdd { member: t, seq },
                12..=14 => Op::SAdd { member: t },
                15..=17 => Op::Push { list: 2, value: t },
                _ => Op::Pop,
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

    fn int(&mut self, args: &[&[u8]]) -> i64 {
        match self.call(args) {
            Reply::Int(n) => n,
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(args[0])),
        }
    }

    /// An array reply's strings.
    fn strings(&mut self, args: &[&[u8]]) -> Vec<String> {
        match self.call(args) {
            Reply::Array(items) => items
                .into_iter()
                .map(|item| match item {
                    Reply::Bulk(v) => String::from_utf8(v).unwrap(),
                    other => panic!("{:?}: item {other:?}", String::from_utf8_lossy(args[0])),
                })
                .collect(),
            other => panic!("{:?}: {other:?}", String::from_utf8_lossy(args[0])),
        }
    }

    /// `combined_units` and `combined_runs` of `INFO stats`.
    fn combined(&mut self) -> (u64, u64) {
        let text = match self.call(&[b"INFO", b"stats"]) {
            Reply::Bulk(v) => String::from_utf8(v).unwrap(),
            other => panic!("INFO stats: {other:?}"),
        };
        let stat = |name: &str| -> u64 {
            text.lines()
                .find_map(|l| l.strip_prefix(name)?.strip_prefix(':'))
                .unwrap_or_else(|| panic!("INFO stats has no {name}: {text}"))
                .trim()
                .parse()
                .unwrap()
        };
        (stat("combined_units"), stat("combined_runs"))
    }
}

/// What one round's clients sent and what was acknowledged.
#[derive(Default)]
struct RoundLog {
    /// Every value pushed onto list 0, 1 and the queue (2).
    sent_push: [HashSet<String>; 3],
    /// Acknowledged pushes with the list length RPUSH replied.
    acked_push: [Vec<(String, i64)>; 3],
    /// Field → seq of every HSET sent; the acknowledged fields.
    sent_fields: HashMap<String, u64>,
    acked_fields: Vec<String>,
    /// Member → seq (score) of every ZADD sent; the acknowledged members.
    sent_members: HashMap<String, u64>,
    acked_members: Vec<String>,
    /// Every SADD member sent; the acknowledged ones.
    sent_set: HashSet<String>,
    acked_set: Vec<String>,
    /// Per client, the values its acknowledged LPOPs returned, in order.
    pops: Vec<Vec<String>>,
    nil_pops: usize,
    /// LPOPs sent whose reply never came: each may have removed a value.
    unacked_pops: usize,
    acked: usize,
    sent: usize,
}

impl RoundLog {
    /// Takes in client `id`'s log, checking the type and value of each reply.
    fn absorb(&mut self, id: usize, log: Vec<(Op, Option<Reply>)>) {
        if self.pops.len() <= id {
            self.pops.resize(id + 1, Vec::new());
        }
        for (op, reply) in log {
            self.sent += 1;
            if reply.is_some() {
                self.acked += 1;
            }
            if let Some(Reply::Err(e)) = &reply {
                panic!("client {id}: {op:?} replied an error: {e}");
            }
            match op {
                Op::Push { list, value } => {
                    self.sent_push[list].insert(value.clone());
                    match reply {
                        Some(Reply::Int(n)) if n >= 1 => self.acked_push[list].push((value, n)),
                        None => {}
                        other => panic!("client {id}: RPUSH {value}: {other:?}"),
                    }
                }
                Op::HSet { field, seq } => {
                    self.sent_fields.insert(field.clone(), seq);
                    match reply {
                        Some(Reply::Int(1)) => self.acked_fields.push(field),
                        None => {}
                        other => panic!("client {id}: HSET of the new field {field}: {other:?}"),
                    }
                }
                Op::ZAdd { member, seq } => {
                    self.sent_members.insert(member.clone(), seq);
                    match reply {
                        Some(Reply::Int(1)) => self.acked_members.push(member),
                        None => {}
                        other => panic!("client {id}: ZADD of the new member {member}: {other:?}"),
                    }
                }
                Op::SAdd { member } => {
                    self.sent_set.insert(member.clone());
                    match reply {
                        Some(Reply::Int(1)) => self.acked_set.push(member),
                        None => {}
                        other => panic!("client {id}: SADD of the new member {member}: {other:?}"),
                    }
                }
                Op::Pop => match reply {
                    Some(Reply::Bulk(v)) => self.pops[id].push(String::from_utf8(v).unwrap()),
                    Some(Reply::Nil) => self.nil_pops += 1,
                    None => self.unacked_pops += 1,
                    other => panic!("client {id}: LPOP: {other:?}"),
                },
            }
        }
    }
}

/// The state last seen after a restart (durable: recovered from the pool),
/// which the next round's writes may only add to — or, for the queue, pop
/// from its head.
#[derive(Default)]
struct State {
    lists: [Vec<String>; 2],
    queue: Vec<String>,
    /// Values that have left the queue (popped, or never committed): none
    /// may come back or be popped again.
    gone: HashSet<String>,
    hash: HashMap<String, String>,
    zset: HashMap<String, f64>,
    set: HashSet<String>,
}

/// Asserts that the values of each client appear in the order it sent
/// them (increasing seq) in `values`.
fn in_client_order(what: &str, values: &[String]) {
    let mut last: HashMap<(usize, usize), (u64, &str)> = HashMap::new();
    for v in values {
        let (round, client, seq) = parse(v);
        if let Some(&(before, prev)) = last.get(&(round, client)) {
            assert!(
                seq > before,
                "{what}: client {client} of round {round} sent {prev} before {v}, \
                 but they are in the other order"
            );
        }
        last.insert((round, client), (seq, v));
    }
}

impl State {
    /// Checks the restarted server against `round` (the writes of the round
    /// just killed) and what was seen before it, then makes what was found
    /// the new state. Returns how many acknowledged writes were checked.
    fn verify(&mut self, round: &RoundLog, c: &mut Checker) -> usize {
        let mut checked = 0;
        for (i, key) in LISTS.iter().enumerate() {
            checked += self.verify_list(i, key, round, c);
        }
        checked += self.verify_queue(round, c);
        checked += self.verify_hash(round, c);
        checked += self.verify_zset(round, c);
        checked += self.verify_set(round, c);
        checked
    }

    fn verify_list(&mut self, i: usize, key: &str, round: &RoundLog, c: &mut Checker) -> usize {
        let got = c.strings(&[b"LRANGE", key.as_bytes(), b"0", b"-1"]);
        let len = c.int(&[b"LLEN", key.as_bytes()]);
        assert_eq!(len, got.len() as i64, "LLEN {key} differs from LRANGE");
        let old = &self.lists[i];
        // Only pushed to: what was there before the round is still its head.
        if let Some(at) = (0..old.len()).find(|&j| got.get(j) != Some(&old[j])) {
            panic!(
                "{key} lost or changed its durable head: at index {at} it held {:?}, now {:?} \
                 (length {} before the round, {} now)",
                old[at],
                got.get(at),
                old.len(),
                got.len()
            );
        }
        let mut seen = HashSet::new();
        for v in &got {
            assert!(seen.insert(v.as_str()), "{key} holds {v} twice");
        }
        for v in &got[old.len()..] {
            assert!(
                round.sent_push[i].contains(v),
                "{key} holds {v}, which was never pushed onto it"
            );
        }
        in_client_order(key, &got);
        // No pops on these lists: RPUSH's reply is the value's position.
        for (v, n) in &round.acked_push[i] {
            let at = got.get(*n as usize - 1);
            assert_eq!(
                at,
                Some(v),
                "acknowledged RPUSH {key} {v} (replied length {n}) is not at index {}: \
                 {} in the list",
                n - 1,
                if seen.contains(v.as_str()) {
                    "elsewhere"
                } else {
                    "lost, nowhere"
                }
            );
        }
        let checked = round.acked_push[i].len();
        self.lists[i] = got;
        checked
    }

    fn verify_queue(&mut self, round: &RoundLog, c: &mut Checker) -> usize {
        let got = c.strings(&[b"LRANGE", QUEUE.as_bytes(), b"0", b"-1"]);
        let len = c.int(&[b"LLEN", QUEUE.as_bytes()]);
        assert_eq!(len, got.len() as i64, "LLEN {QUEUE} differs from LRANGE");
        let mut present = HashSet::new();
        for v in &got {
            assert!(present.insert(v.as_str()), "{QUEUE} holds {v} twice");
            assert!(
                !self.gone.contains(v),
                "{QUEUE} holds {v}, which had left it before this round"
            );
        }
        let old_index: HashMap<&str, usize> = self
            .queue
            .iter()
            .enumerate()
            .map(|(j, v)| (v.as_str(), j))
            .collect();
        // Pops take the head, pushes add to the tail: what is left of the
        // old queue is its tail, at the head of the new one.
        let kept = got
            .iter()
            .take_while(|v| old_index.contains_key(v.as_str()))
            .count();
        assert_eq!(
            got[..kept],
            self.queue[self.queue.len() - kept..],
            "what is left of {QUEUE}'s durable state is not its tail, in order"
        );
        for v in &got[kept..] {
            assert!(
                round.sent_push[2].contains(v),
                "{QUEUE} holds {v}, never pushed in this round (or out of place)"
            );
        }
        in_client_order(QUEUE, &got);
        // The acknowledged pops: each value popped once, gone from the queue,
        // and each client's pops in queue order.
        let mut popped: HashSet<&str> = HashSet::new();
        for (client, pops) in round.pops.iter().enumerate() {
            let mut last_old: Option<usize> = None;
            let mut seen_new = false;
            let mut last_seq: HashMap<(usize, usize), u64> = HashMap::new();
            for v in pops {
                assert!(popped.insert(v), "{v} was popped twice (client {client})");
                assert!(
                    !self.gone.contains(v),
                    "client {client} popped {v}, which had left {QUEUE} before this round"
                );
                assert!(
                    !present.contains(v.as_str()),
                    "client {client}'s acknowledged LPOP returned {v}, yet it is still in {QUEUE}"
                );
                if let Some(&j) = old_index.get(v.as_str()) {
                    assert!(
                        !seen_new && last_old.is_none_or(|l| j > l),
                        "client {client} popped {v} out of the queue's order"
                    );
                    last_old = Some(j);
                } else {
                    assert!(
                        round.sent_push[2].contains(v),
                        "client {client} popped {v}, which was never pushed"
                    );
                    seen_new = true;
                    let (r, pusher, seq) = parse(v);
                    if let Some(&before) = last_seq.get(&(r, pusher)) {
                        assert!(
                            seq > before,
                            "client {client} popped {v} after a later push of the same client"
                        );
                    }
                    last_seq.insert((r, pusher), seq);
                }
            }
        }
        // Values that were durable or acknowledged and are gone must have
        // been taken by pops whose reply never came.
        let missing: Vec<&str> = self
            .queue
            .iter()
            .chain(round.acked_push[2].iter().map(|(v, _)| v))
            .map(|v| v.as_str())
            .filter(|v| !present.contains(v) && !popped.contains(v))
            .collect();
        assert!(
            missing.len() <= round.unacked_pops,
            "{} acknowledged values of {QUEUE} are gone though no acknowledged LPOP returned \
             them, and only {} LPOPs were unanswered: {:?}",
            missing.len(),
            round.unacked_pops,
            &missing[..missing.len().min(20)]
        );
        let checked = round.acked_push[2].len() + popped.len();
        let popped: Vec<String> = popped.into_iter().map(str::to_string).collect();
        self.gone.extend(popped);
        self.gone.extend(
            self.queue
                .iter()
                .chain(round.sent_push[2].iter())
                .filter(|v| !present.contains(v.as_str()))
                .cloned()
                .collect::<Vec<_>>(),
        );
        self.queue = got;
        checked
    }

    fn verify_hash(&mut self, round: &RoundLog, c: &mut Checker) -> usize {
        let flat = c.strings(&[b"HGETALL", HASH.as_bytes()]);
        assert_eq!(flat.len() % 2, 0);
        let len = c.int(&[b"HLEN", HASH.as_bytes()]);
        assert_eq!(
            len as usize,
            flat.len() / 2,
            "HLEN {HASH} differs from HGETALL"
        );
        let got: HashMap<String, String> = flat
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].clone()))
            .collect();
        assert_eq!(got.len(), flat.len() / 2, "{HASH} lists a field twice");
        for (field, value) in &self.hash {
            assert_eq!(
                got.get(field),
                Some(value),
                "durable field {field} of {HASH} changed or lost"
            );
        }
        for field in &round.acked_fields {
            let want = round.sent_fields[field].to_string();
            assert_eq!(
                got.get(field),
                Some(&want),
                "acknowledged HSET {HASH} {field} {want} lost or wrong"
            );
        }
        for (field, value) in &got {
            if self.hash.contains_key(field) {
                continue;
            }
            let seq = round
                .sent_fields
                .get(field)
                .unwrap_or_else(|| panic!("{HASH} holds the field {field}, never set"));
            assert_eq!(
                value,
                &seq.to_string(),
                "{HASH} {field} holds a wrong value"
            );
        }
        self.hash = got;
        round.acked_fields.len()
    }

    fn verify_zset(&mut self, round: &RoundLog, c: &mut Checker) -> usize {
        let flat = c.strings(&[b"ZRANGE", ZSET.as_bytes(), b"0", b"-1", b"WITHSCORES"]);
        assert_eq!(flat.len() % 2, 0);
        let len = c.int(&[b"ZCARD", ZSET.as_bytes()]);
        assert_eq!(
            len as usize,
            flat.len() / 2,
            "ZCARD {ZSET} differs from ZRANGE"
        );
        let got: HashMap<String, f64> = flat
            .chunks(2)
            .map(|p| (p[0].clone(), p[1].parse().unwrap()))
            .collect();
        assert_eq!(got.len(), flat.len() / 2, "{ZSET} lists a member twice");
        let scores: Vec<f64> = flat.chunks(2).map(|p| p[1].parse().unwrap()).collect();
        assert!(
            scores.windows(2).all(|w| w[0] <= w[1]),
            "ZRANGE {ZSET} is not in score order"
        );
        for (member, score) in &self.zset {
            assert_eq!(
                got.get(member),
                Some(score),
                "durable member {member} of {ZSET} changed or lost"
            );
        }
        for member in &round.acked_members {
            let want = round.sent_members[member] as f64;
            assert_eq!(
                got.get(member),
                Some(&want),
                "acknowledged ZADD {ZSET} {want} {member} lost or wrong"
            );
        }
        for (member, score) in &got {
            if self.zset.contains_key(member) {
                continue;
            }
            let seq = round
                .sent_members
                .get(member)
                .unwrap_or_else(|| panic!("{ZSET} holds the member {member}, never added"));
            assert_eq!(*score, *seq as f64, "{ZSET} {member} has a wrong score");
        }
        self.zset = got;
        round.acked_members.len()
    }

    fn verify_set(&mut self, round: &RoundLog, c: &mut Checker) -> usize {
        let members = c.strings(&[b"SMEMBERS", SET.as_bytes()]);
        let len = c.int(&[b"SCARD", SET.as_bytes()]);
        assert_eq!(
            len as usize,
            members.len(),
            "SCARD {SET} differs from SMEMBERS"
        );
        let got: HashSet<String> = members.into_iter().collect();
        assert_eq!(got.len(), len as usize, "{SET} lists a member twice");
        for member in &self.set {
            assert!(
                got.contains(member),
                "durable member {member} of {SET} lost"
            );
        }
        for member in &round.acked_set {
            assert!(
                got.contains(member),
                "acknowledged SADD {SET} {member} lost"
            );
        }
        for member in &got {
            assert!(
                self.set.contains(member) || round.sent_set.contains(member),
                "{SET} holds {member}, never added"
            );
        }
        self.set = got;
        round.acked_set.len()
    }
}

/// Every acknowledged collection write that the combiner ran as one unit
/// with other connections' writes on the same hot keys survives kill -9,
/// whole and in each client's order, across rounds, and the pool checks.
#[test]
fn combined_collection_writes_survive_kill_9() {
    let dir = pool_dir();
    let pool = dir.path().join("serve-kill9-combined.pool");
    let seed = std::env::var("KILL9_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| {
            std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .unwrap()
                .as_nanos() as u64
        });
    eprintln!("serve_kill9_combined seed {seed}");
    let mut rng = Rng(seed | 1);
    let mut state = State::default();
    let mut last: Option<RoundLog> = None;
    let mut combining_seen = false;
    let rounds = 8;
    for round in 0..rounds {
        let (mut child, addr) = start_server(&pool);
        if let Some(log) = last.take() {
            let mut c = Checker::connect(addr);
            let started = Instant::now();
            let checked = state.verify(&log, &mut c);
            eprintln!(
                "round {round}: {checked} acknowledged writes verified after kill -9 in {:?} \
                 (lists {} and {} long, queue {}, hash {}, zset {}, set {})",
                started.elapsed(),
                state.lists[0].len(),
                state.lists[1].len(),
                state.queue.len(),
                state.hash.len(),
                state.zset.len(),
                state.set.len()
            );
        }
        let mut side = Checker::connect(addr);
        let clients = 6 + rng.below(3) as usize;
        let stop = Arc::new(AtomicBool::new(false));
        let handles: Vec<_> = (0..clients)
            .map(|id| {
                let stop = stop.clone();
                let s = rng.next();
                std::thread::spawn(move || writer(addr, round, id, s, stop))
            })
            .collect();
        let delay = Duration::from_millis(200 + rng.below(600));
        let started = Instant::now();
        std::thread::sleep(delay);
        let (units, runs) = side.combined();
        child.kill().expect("SIGKILL the server");
        let _ = child.wait();
        stop.store(true, Ordering::Relaxed);
        let mut log = RoundLog::default();
        for (id, h) in handles.into_iter().enumerate() {
            log.absorb(id, h.join().expect("writer thread"));
        }
        eprintln!(
            "round {round}: {clients} clients, killed after {:?}, {} of {} writes acknowledged \
             ({} pops with a value, {} nil, {} unanswered); combined_units {units}, \
             combined_runs {runs}",
            started.elapsed(),
            log.acked,
            log.sent,
            log.pops.iter().map(Vec::len).sum::<usize>(),
            log.nil_pops,
            log.unacked_pops
        );
        assert!(log.acked > 0, "no write was acknowledged before the kill");
        combining_seen |= units > 0 && runs > units;
        last = Some(log);
    }
    // A last restart: verify, then stop cleanly and check the pool.
    let (mut child, addr) = start_server(&pool);
    let mut c = Checker::connect(addr);
    let checked = state.verify(&last.take().unwrap(), &mut c);
    assert!(checked > 0);
    eprintln!(
        "final: {checked} acknowledged writes verified (lists {} and {} long, queue {})",
        state.lists[0].len(),
        state.lists[1].len(),
        state.queue.len()
    );
    assert!(
        combining_seen,
        "in no round did INFO show combining (combined_runs > combined_units > 0)"
    );
    c.w.write_all(&encode(&[b"SHUTDOWN"])).unwrap();
    assert!(
        read_reply(&mut c.r).is_err(),
        "SHUTDOWN closes the connection without a reply"
    );
    let status = child.wait().unwrap();
    assert!(status.success(), "serve exits 0 after SHUTDOWN: {status}");
    check_pool(&pool);
}
