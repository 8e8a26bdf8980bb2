//! Replication over loopback: a Persimmon master and Persimmon replicas
//! (full sync of every type with deadlines, the write stream with its
//! rewrites, a cut link resumed by a partial resync, read-only refusal,
//! WAIT, promotion with a peer continuing from the promoted replica), and,
//! when `redis-server` is on PATH, a redis-server master followed by a
//! Persimmon replica and a Persimmon master followed by a redis-server
//! replica. Every wait is bounded; every redis-server is killed by its PID
//! when its guard drops.

mod common;

use std::io::Write;
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::process::{Child, Command, Stdio};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use common::TestServer;
use redis::Value;

const DBS: [i64; 2] = [0, 3];

fn text(v: &Value) -> String {
    match v {
        Value::BulkString(b) => String::from_utf8_lossy(b).into_owned(),
        Value::SimpleString(s) => s.clone(),
        Value::Int(n) => n.to_string(),
        Value::Double(x) => x.to_string(),
        Value::Nil => "nil".into(),
        Value::Okay => "OK".into(),
        other => format!("{other:?}"),
    }
}

fn words(v: Value) -> Vec<String> {
    match v {
        Value::Array(items) | Value::Set(items) => items.iter().map(text).collect(),
        Value::Map(pairs) => pairs.iter().flat_map(|(k, v)| [text(k), text(v)]).collect(),
        other => vec![text(&other)],
    }
}

fn run(con: &mut redis::Connection, args: &[&str]) -> Value {
    common::cmd(con, args).unwrap_or_else(|e| panic!("{args:?}: {e}"))
}

/// Every key of the databases in `DBS`, with its type, contents (in an
/// order that does not depend on the encoding) and absolute deadline.
fn contents(con: &mut redis::Connection) -> Vec<String> {
    let mut out = Vec::new();
    for db in DBS {
        run(con, &["SELECT", &db.to_string()]);
        let mut keys = words(run(con, &["KEYS", "*"]));
        keys.sort();
        for key in keys {
            let kind = text(&run(con, &["TYPE", &key]));
            let mut body = match kind.as_str() {
                "string" => words(run(con, &["GET", &key])),
                "list" => words(run(con, &["LRANGE", &key, "0", "-1"])),
                "set" => words(run(con, &["SMEMBERS", &key])),
                "zset" => words(run(con, &["ZRANGE", &key, "0", "-1", "WITHSCORES"])),
                "stream" => {
                    let mut w = words(run(con, &["XRANGE", &key, "-", "+"]));
                    w.extend(words(run(con, &["XINFO", "GROUPS", &key])));
                    w
                }
                "hash" => {
                    let flat = words(run(con, &["HGETALL", &key]));
                    let mut pairs: Vec<String> = flat
                        .chunks(2)
                        .map(|p| format!("{}={}", p[0], p[1]))
                        .collect();
                    pairs.sort();
                    pairs
                }
                other => vec![format!("unexpected type {other}")],
            };
            if kind == "set" {
                body.sort();
            }
            let deadline = text(&run(con, &["PEXPIRETIME", &key]));
            out.push(format!("{db}/{key} {kind} {deadline} {body:?}"));
        }
    }
    run(con, &["SELECT", "0"]);
    out
}

/// Keys of every type, small and large (so every encoding Redis picks is
/// written), some with deadlines, some in database 3.
fn populate(con: &mut redis::Connection) {
    let big = "x".repeat(3000);
    for args in [
        vec!["SET", "s", "hello"],
        vec!["SET", "n", "12345"],
        vec!["SET", "neg", "-7"],
        vec!["SET", "big", &big],
        vec!["SET", "ttl", "v", "PX", "500000"],
        vec!["RPUSH", "l", "a", "b", "1", "2"],
        vec!["SADD", "si", "1", "2", "3", "-40"],
        vec!["SADD", "ss", "a", "b", "c"],
        vec!["HSET", "h", "f", "v", "g", "1"],
        vec!["ZADD", "z", "1", "a", "2.5", "b", "-3", "c"],
        vec!["XADD", "st", "1-0", "a", "1"],
        vec!["XADD", "st", "*", "b", "2"],
        vec!["XGROUP", "CREATE", "st", "g", "0"],
        vec!["SELECT", "3"],
        vec!["SET", "in3", "three", "EX", "900"],
        vec!["HSET", "h3", "a", "b"],
        vec!["SELECT", "0"],
    ] {
        run(con, &args);
    }
    for i in 0..300 {
        let (i, m) = (i.to_string(), format!("m{i}"));
        run(con, &["RPUSH", "biglist", &format!("item{i}")]);
        run(con, &["SADD", "bigset", &m]);
        run(con, &["SADD", "bigint", &i]);
        run(con, &["HSET", "bighash", &m, &i]);
        run(con, &["ZADD", "bigz", &i, &m]);
    }
    run(con, &["EXPIRE", "bighash", "700"]);
}

/// Writes whose propagation Redis rewrites: relative deadlines, random
/// pops, float increments, blocking pops, XADD's chosen ids, a
/// transaction.
fn stream_writes(con: &mut redis::Connection) {
    for args in [
        vec!["SET", "s", "changed"],
        vec!["SET", "ex", "v", "EX", "1000"],
        vec!["SETEX", "sx", "2000", "v"],
        vec!["PSETEX", "psx", "300000", "v"],
        vec!["EXPIRE", "n", "600"],
        vec!["PEXPIRE", "l", "800000"],
        vec!["GETEX", "s", "EX", "400"],
        vec!["INCRBYFLOAT", "f", "0.1"],
        vec!["INCRBYFLOAT", "f", "1.000001"],
        vec!["HINCRBYFLOAT", "h", "x", "2.5"],
        vec!["SPOP", "bigset"],
        vec!["SPOP", "bigset", "5"],
        vec!["SPOP", "ss", "10"],
        vec!["LPOP", "biglist", "2"],
        vec!["LMPOP", "1", "biglist", "RIGHT", "COUNT", "3"],
        vec!["ZPOPMIN", "bigz", "2"],
        vec!["BLPOP", "l", "1"],
        vec!["BZPOPMAX", "bigz", "1"],
        vec!["BLMOVE", "biglist", "moved", "LEFT", "RIGHT", "1"],
        vec!["XADD", "st", "*", "c", "3"],
        vec!["XADD", "st", "MAXLEN", "2", "1-*", "d", "4"],
        vec!["XADD", "st", "*", "e", "5"],
        vec!["DEL", "neg"],
        vec!["EXPIRE", "big", "-1"],
        vec!["SELECT", "3"],
        vec!["SET", "w3", "x", "PX", "100000"],
        vec!["SELECT", "0"],
        vec!["MULTI"],
        vec!["SET", "t1", "a"],
        vec!["SELECT", "3"],
        vec!["INCR", "t2"],
        vec!["SPOP", "h3"],
        vec!["EXEC"],
        vec!["SELECT", "0"],
    ] {
        // SPOP h3 fails inside EXEC (wrong type) and propagates nothing.
        let _ = common::cmd(con, &args);
    }
}

fn info_field(con: &mut redis::Connection, section: &str, field: &str) -> Option<String> {
    let info = text(&run(con, &["INFO", section]));
    info.lines()
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
}

fn wait_until(what: &str, mut ok: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(30);
    while !ok() {
        assert!(Instant::now() < deadline, "timed out waiting for {what}");
        std::thread::sleep(Duration::from_millis(50));
    }
}

fn link_up(con: &mut redis::Connection) -> bool {
    info_field(con, "replication", "master_link_status").as_deref() == Some("up")
}

/// `REPLICAOF 127.0.0.1 port` on `con`, then waits for its link to be up.
fn follow(con: &mut redis::Connection, port: u16) {
    run(con, &["REPLICAOF", "127.0.0.1", &port.to_string()]);
    wait_until("the link to come up", || link_up(con));
}

/// WAIT 1 from `con` (after its writes) answers 1, then the replica's
/// contents equal the master's.
fn assert_in_sync(master: &mut redis::Connection, replica: &mut redis::Connection) {
    let acked = common::int(master, &["WAIT", "1", "10000"]);
    assert_eq!(acked, 1, "WAIT 1 counts the replica");
    let want = contents(master);
    assert!(!want.is_empty());
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        let got = contents(replica);
        if got == want {
            return;
        }
        if Instant::now() > deadline {
            let missing: Vec<_> = want.iter().filter(|l| !got.contains(l)).collect();
            let extra: Vec<_> = got.iter().filter(|l| !want.contains(l)).collect();
            panic!("the replica differs: missing {missing:#?}\nextra {extra:#?}");
        }
        std::thread::sleep(Duration::from_millis(50));
    }
}

/// A TCP relay whose connections the test can cut (a lost link).
struct Relay {
    addr: SocketAddr,
    live: Arc<Mutex<Vec<TcpStream>>>,
    stop: Arc<AtomicBool>,
}

impl Relay {
    fn to(target: SocketAddr) -> Relay {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let addr = listener.local_addr().unwrap();
        let live: Arc<Mutex<Vec<TcpStream>>> = Arc::default();
        let stop = Arc::new(AtomicBool::new(false));
        let (l, s) = (live.clone(), stop.clone());
        std::thread::spawn(move || {
            for client in listener.incoming() {
                if s.load(Ordering::SeqCst) {
                    return;
                }
                let (Ok(client), Ok(server)) = (client, TcpStream::connect(target)) else {
                    continue;
                };
                let mut live = l.lock().unwrap();
                for (mut from, mut to) in [
                    (client.try_clone().unwrap(), server.try_clone().unwrap()),
                    (server.try_clone().unwrap(), client.try_clone().unwrap()),
                ] {
                    std::thread::spawn(move || {
                        let _ = std::io::copy(&mut from, &mut to);
                        let _ = to.shutdown(std::net::Shutdown::Both);
                    });
                }
                live.push(client);
                live.push(server);
            }
        });
        Relay { addr, live, stop }
    }

    fn cut(&self) {
        for s in self.live.lock().unwrap().drain(..) {
            let _ = s.shutdown(std::net::Shutdown::Both);
        }
    }
}

impl Drop for Relay {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        let _ = TcpStream::connect(self.addr);
        self.cut();
    }
}

#[test]
fn persimmon_replica_follows_resumes_refuses_writes_and_takes_over() {
    let master = TestServer::start();
    let mut m = master.client();
    populate(&mut m);
    let relay = Relay::to(master.addr);

    let replica = TestServer::start();
    let mut r = replica.client();
    follow(&mut r, relay.addr.port());
    assert_in_sync(&mut m, &mut r);

    // A client blocked on the master is served by a push: the served pop
    // propagates as a plain pop after the push.
    let mut blocked = master.client();
    let waiter = std::thread::spawn(move || common::cmd(&mut blocked, &["BLPOP", "q", "10"]));
    wait_until("the BLPOP to block", || {
        info_field(&mut m, "clients", "blocked_clients").as_deref() == Some("1")
    });
    run(&mut m, &["RPUSH", "q", "one", "two"]);
    assert_eq!(words(waiter.join().unwrap().unwrap()), ["q", "one"]);
    // So is a blocked XREADGROUP: its delivery propagates as XREADGROUP.
    run(&mut m, &["XGROUP", "CREATE", "st", "gb", "$"]);
    let mut reader = master.client();
    let waiter = std::thread::spawn(move || {
        let read = [
            "XREADGROUP",
            "GROUP",
            "gb",
            "c",
            "BLOCK",
            "10000",
            "STREAMS",
            "st",
            ">",
        ];
        common::cmd(&mut reader, &read)
    });
    wait_until("the XREADGROUP to block", || {
        info_field(&mut m, "clients", "blocked_clients").as_deref() == Some("1")
    });
    run(&mut m, &["XADD", "st", "*", "for", "gb"]);
    assert!(waiter.join().unwrap().is_ok());
    stream_writes(&mut m);
    assert_in_sync(&mut m, &mut r);
    assert_eq!(text(&run(&mut r, &["GET", "f"])), "1.100001");

    // Read-only.
    let e = common::err(&mut r, &["SET", "k", "v"]);
    assert!(e.contains("READONLY"), "{e}");
    let role = words(run(&mut r, &["ROLE"]));
    assert_eq!((role[0].as_str(), role[3].as_str()), ("slave", "connected"));

    // A cut link resumes from the backlog: no second full sync.
    relay.cut();
    run(&mut m, &["SET", "during", "the cut"]);
    run(&mut m, &["LPUSH", "l", "after"]);
    wait_until("the link to come back", || link_up(&mut r));
    assert_in_sync(&mut m, &mut r);
    assert_eq!(
        info_field(&mut m, "stats", "sync_full").as_deref(),
        Some("1")
    );
    let partial: u64 = info_field(&mut m, "stats", "sync_partial_ok")
        .unwrap()
        .parse()
        .unwrap();
    assert!(partial >= 1, "the reconnection was a partial resync");

    // A second replica; then the first is promoted and the second follows
    // it, continuing its history (psync2) instead of a full sync.
    let peer = TestServer::start();
    let mut p = peer.client();
    follow(&mut p, master.addr.port());
    assert_eq!(common::int(&mut m, &["WAIT", "2", "10000"]), 2);
    let old_id = info_field(&mut m, "replication", "master_replid").unwrap();
    run(&mut r, &["REPLICAOF", "NO", "ONE"]);
    assert_eq!(
        info_field(&mut r, "replication", "master_replid2").as_deref(),
        Some(old_id.as_str())
    );
    run(&mut r, &["SET", "after-promotion", "yes"]);
    run(
        &mut p,
        &["REPLICAOF", "127.0.0.1", &replica.addr.port().to_string()],
    );
    wait_until("the peer to follow the new master", || {
        link_up(&mut p) && text(&run(&mut p, &["GET", "after-promotion"])) == "yes"
    });
    assert_eq!(
        info_field(&mut r, "stats", "sync_full").as_deref(),
        Some("0")
    );
    assert_in_sync(&mut r, &mut p);
    drop(relay);
}

#[test]
fn a_replica_authenticates_with_masterauth() {
    let master = TestServer::start_with(|c| c.requirepass = Some("sesame".into()));
    let mut m = master.client();
    run(&mut m, &["AUTH", "sesame"]);
    run(&mut m, &["SET", "k", "v"]);
    let replica = TestServer::start();
    let mut r = replica.client();
    run(&mut r, &["CONFIG", "SET", "masterauth", "sesame"]);
    follow(&mut r, master.addr.port());
    assert_in_sync(&mut m, &mut r);
}

#[test]
fn min_replicas_to_write_counts_the_replicas_attached() {
    let master = TestServer::start();
    let mut m = master.client();
    run(&mut m, &["CONFIG", "SET", "min-replicas-to-write", "1"]);
    let e = common::err(&mut m, &["SET", "k", "v"]);
    assert!(e.starts_with("NOREPLICAS"), "{e}");
    let replica = TestServer::start();
    let mut r = replica.client();
    follow(&mut r, master.addr.port());
    wait_until("the master to accept writes", || {
        common::cmd(&mut m, &["SET", "k", "v"]).is_ok()
    });
    assert_in_sync(&mut m, &mut r);
    // The replica stops following: its link closes, the master is alone.
    run(&mut r, &["REPLICAOF", "NO", "ONE"]);
    wait_until("the master to refuse writes again", || {
        common::cmd(&mut m, &["SET", "k", "w"]).is_err()
    });
    assert_eq!(
        info_field(&mut m, "replication", "connected_slaves").as_deref(),
        Some("0")
    );
}

#[test]
fn wait_counts_only_replicas_that_acknowledged() {
    let master = TestServer::start();
    let mut m = master.client();
    run(&mut m, &["SET", "a", "1"]);
    let started = Instant::now();
    assert_eq!(common::int(&mut m, &["WAIT", "1", "200"]), 0);
    assert!(started.elapsed() >= Duration::from_millis(190));
    assert_eq!(common::int(&mut m, &["WAIT", "0", "0"]), 0);
    let e = common::err(&mut m, &["WAIT", "1", "-1"]);
    assert!(e.contains("negative"), "{e}");
    // A timeout past what the clock can add is no timeout: WAIT 0 of it
    // still answers at once.
    assert_eq!(
        common::int(&mut m, &["WAIT", "0", &i64::MAX.to_string()]),
        0
    );
}

// --- redis-server ------------------------------------------------------------

/// A redis-server child, killed by PID when dropped.
struct RedisServer {
    child: Child,
    port: u16,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    /// `None` (with a note) when redis-server is not on PATH.
    fn start(extra: &[&str]) -> Option<RedisServer> {
        let found = Command::new("redis-server")
            .arg("--version")
            .stdout(Stdio::null())
            .status()
            .is_ok_and(|s| s.success());
        if !found {
            println!("note: redis-server is not on PATH; skipping the redis-server test");
            return None;
        }
        let port = TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let dir = tempfile::tempdir().unwrap();
        let child = Command::new("redis-server")
            .args(["--port", &port.to_string(), "--bind", "127.0.0.1"])
            .args(["--save", "", "--appendonly", "no"])
            .args(["--repl-diskless-sync-delay", "0"])
            .arg("--dir")
            .arg(dir.path())
            .args(extra)
            .stdout(Stdio::null())
            .spawn()
            .expect("redis-server starts");
        let server = RedisServer {
            child,
            port,
            _dir: dir,
        };
        wait_until("redis-server to listen", || {
            TcpStream::connect(("127.0.0.1", port)).is_ok()
        });
        Some(server)
    }

    fn client(&self) -> redis::Connection {
        redis::Client::open(format!("redis://127.0.0.1:{}/", self.port))
            .unwrap()
            .get_connection()
            .unwrap()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

#[test]
fn persimmon_replica_follows_a_redis_server_master() {
    let Some(redis) = RedisServer::start(&[]) else {
        return;
    };
    let mut m = redis.client();
    populate(&mut m);
    let replica = TestServer::start();
    let mut r = replica.client();
    follow(&mut r, redis.port);
    assert_in_sync(&mut m, &mut r);
    stream_writes(&mut m);
    assert_in_sync(&mut m, &mut r);
}

#[test]
fn redis_server_replica_follows_a_persimmon_master() {
    let master = TestServer::start();
    let mut m = master.client();
    populate(&mut m);
    let port = master.addr.port().to_string();
    let Some(redis) = RedisServer::start(&["--replicaof", "127.0.0.1", &port]) else {
        return;
    };
    let mut r = redis.client();
    wait_until("redis-server's link", || link_up(&mut r));
    assert_in_sync(&mut m, &mut r);
    stream_writes(&mut m);
    assert_in_sync(&mut m, &mut r);
    // Keys that expire on the master reach the replica as DELs: a
    // redis-server replica frees an expired key only then (DBSIZE counts
    // it until it does). One from the stream, one renamed (its deadline
    // moves with it).
    let n0 = common::int(&mut m, &["DBSIZE"]);
    assert_eq!(common::int(&mut r, &["DBSIZE"]), n0);
    run(&mut m, &["SET", "short", "v", "PX", "1500"]);
    run(&mut m, &["SET", "moving", "v", "PX", "1600"]);
    run(&mut m, &["RENAME", "moving", "moved-away"]);
    assert_eq!(common::int(&mut m, &["WAIT", "1", "10000"]), 1);
    assert_eq!(common::int(&mut r, &["DBSIZE"]), n0 + 2, "both arrived");
    wait_until("the expired keys to leave the replica", || {
        common::int(&mut r, &["DBSIZE"]) == n0
    });
    assert_eq!(common::int(&mut m, &["DBSIZE"]), n0);
    let _ = std::io::stdout().flush();
}

// --- The stream on the wire ---------------------------------------------------

/// A replica's connection, read by hand: the handshake, the snapshot and
/// the stream's commands.
struct WireReplica {
    reader: std::io::BufReader<TcpStream>,
    /// Every stream byte read so far (after the snapshot).
    bytes: Vec<u8>,
}

impl WireReplica {
    fn connect(addr: SocketAddr, psync: &[&str]) -> (WireReplica, String) {
        let socket = TcpStream::connect(addr).unwrap();
        socket
            .set_read_timeout(Some(Duration::from_secs(10)))
            .unwrap();
        let mut w = WireReplica {
            reader: std::io::BufReader::new(socket),
            bytes: Vec::new(),
        };
        w.send(&["REPLCONF", "listening-port", "1"]);
        assert_eq!(w.line(), "+OK");
        w.send(psync);
        let reply = w.line();
        (w, reply)
    }

    fn send(&mut self, words: &[&str]) {
        let args: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        self.reader
            .get_mut()
            .write_all(&common::encode(&args))
            .unwrap();
    }

    fn line(&mut self) -> String {
        use std::io::BufRead;
        let mut line = String::new();
        self.reader.read_line(&mut line).unwrap();
        line.trim_end().to_string()
    }

    fn exactly(&mut self, n: usize) -> Vec<u8> {
        use std::io::Read;
        let mut buf = vec![0; n];
        self.reader.read_exact(&mut buf).unwrap();
        buf
    }

    /// The snapshot after `+FULLRESYNC`.
    fn snapshot(&mut self) -> Vec<u8> {
        let head = self.line();
        let n: usize = head.strip_prefix('$').unwrap().parse().unwrap();
        self.exactly(n)
    }

    /// The next command of the stream.
    fn command(&mut self) -> Vec<String> {
        let head = self.line();
        self.bytes
            .extend_from_slice(format!("{head}\r\n").as_bytes());
        let n: usize = head.strip_prefix('*').expect("an array").parse().unwrap();
        (0..n)
            .map(|_| {
                let len = self.line();
                self.bytes
                    .extend_from_slice(format!("{len}\r\n").as_bytes());
                let len: usize = len.strip_prefix('$').unwrap().parse().unwrap();
                let word = self.exactly(len + 2);
                self.bytes.extend_from_slice(&word);
                String::from_utf8_lossy(&word[..len]).into_owned()
            })
            .collect()
    }

    /// The next command that is not a PING or REPLCONF GETACK.
    fn write(&mut self) -> Vec<String> {
        loop {
            let c = self.command();
            if c[0] != "PING" && c[0] != "REPLCONF" {
                return c;
            }
        }
    }
}

#[test]
fn the_stream_carries_redis_rewrites_and_the_backlog_replays_it() {
    let master = TestServer::start();
    let mut m = master.client();
    run(&mut m, &["SET", "before", "1"]);
    let (mut w, reply) = WireReplica::connect(master.addr, &["PSYNC", "?", "-1"]);
    let words: Vec<&str> = reply.split(' ').collect();
    assert_eq!(words[0], "+FULLRESYNC");
    assert_eq!(words[1].len(), 40);
    let (replid, offset): (String, u64) = (words[1].into(), words[2].parse().unwrap());
    let rdb = w.snapshot();
    assert!(rdb.starts_with(b"REDIS0010"));
    assert!(rdb.windows(6).any(|x| x == b"before"));

    let s = |v: &[&str]| v.iter().map(|x| x.to_string()).collect::<Vec<_>>();
    run(&mut m, &["SET", "a", "v", "EX", "100"]);
    assert_eq!(w.write(), s(&["SELECT", "0"]));
    let set = w.write();
    assert_eq!(set[..4], s(&["SET", "a", "v", "PXAT"]));
    let at: u64 = set[4].parse().unwrap();
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as u64;
    assert!(at > now + 90_000 && at <= now + 100_000, "{at} vs {now}");
    run(&mut m, &["SET", "a", "x", "NX"]); // wrote nothing: nothing propagated
    run(&mut m, &["SADD", "s", "x"]);
    run(&mut m, &["SPOP", "s"]);
    run(&mut m, &["INCRBYFLOAT", "f", "1.5"]);
    run(&mut m, &["EXPIRE", "a", "50"]);
    run(&mut m, &["RPUSH", "l", "1", "2"]);
    run(&mut m, &["BLPOP", "l", "0"]);
    assert_eq!(w.write(), s(&["SADD", "s", "x"]));
    assert_eq!(w.write(), s(&["SREM", "s", "x"]));
    assert_eq!(w.write(), s(&["SET", "f", "1.5", "KEEPTTL"]));
    let expire = w.write();
    assert_eq!(expire[..2], s(&["PEXPIREAT", "a"]));
    assert_eq!(w.write(), s(&["RPUSH", "l", "1", "2"]));
    assert_eq!(w.write(), s(&["LPOP", "l", "1"]));
    for c in [
        vec!["MULTI"],
        vec!["SET", "t", "1"],
        vec!["INCR", "t"],
        vec!["SELECT", "2"],
        vec!["SET", "b", "1"],
        vec!["EXEC"],
    ] {
        run(&mut m, &c);
    }
    for want in [
        vec!["MULTI"],
        vec!["SET", "t", "1"],
        vec!["INCR", "t"],
        vec!["SELECT", "2"],
        vec!["SET", "b", "1"],
        vec!["EXEC"],
    ] {
        assert_eq!(w.write(), s(&want));
    }
    run(&mut m, &["SELECT", "0"]);
    run(&mut m, &["SET", "gone", "v", "PX", "100"]);
    assert_eq!(w.write(), s(&["SELECT", "0"]));
    assert_eq!(w.write()[..4], s(&["SET", "gone", "v", "PXAT"]));
    assert_eq!(w.write(), s(&["DEL", "gone"]), "the expiry propagates");

    // A second replica asks for the stream from the first one's start:
    // +CONTINUE and the same bytes, from the backlog.
    let from = (offset + 1).to_string();
    let (mut again, reply) = WireReplica::connect(master.addr, &["PSYNC", &replid, &from]);
    assert_eq!(reply, format!("+CONTINUE {replid}"));
    let seen = w.bytes.clone();
    while again.bytes.len() < seen.len() {
        again.command();
    }
    assert_eq!(again.bytes[..seen.len()], seen[..]);
    // An offset the backlog does not hold gets a full resync.
    let (_, reply) = WireReplica::connect(master.addr, &["PSYNC", &replid, "999999999"]);
    assert!(reply.starts_with("+FULLRESYNC"), "{reply}");
}

/// Sentinel's fail-over sends REPLICAOF inside a transaction (MULTI,
/// REPLICAOF, CONFIG REWRITE, CLIENT KILL, EXEC): to the replica it
/// promotes (NO ONE) and to the others (the new master). On a replica an
/// EXEC holds the stream's lock, and REPLICAOF took it again: the server
/// hung (found by tests/sentinel_failover.sh). Every read here times out
/// instead of hanging.
#[test]
fn replicaof_inside_exec_promotes_and_repoints_as_sentinel_does() {
    let master = TestServer::start();
    let mut m = master.client();
    run(&mut m, &["SET", "a", "1"]);
    let (one, two) = (TestServer::start(), TestServer::start());
    let (mut r1, mut r2) = (one.client(), two.client());
    for r in [&mut r1, &mut r2] {
        r.set_read_timeout(Some(Duration::from_secs(10))).unwrap();
        follow(r, master.addr.port());
        wait_until("the key", || text(&run(r, &["GET", "a"])) == "1");
    }
    let in_exec = |r: &mut redis::Connection, args: &[&str]| {
        assert_eq!(text(&run(r, &["MULTI"])), "OK");
        assert_eq!(text(&run(r, args)), "QUEUED");
        assert_eq!(
            text(&run(r, &["CLIENT", "KILL", "TYPE", "pubsub"])),
            "QUEUED"
        );
        words(run(r, &["EXEC"]))
    };
    assert_eq!(in_exec(&mut r1, &["REPLICAOF", "NO", "ONE"]), ["OK", "0"]);
    assert_eq!(words(run(&mut r1, &["ROLE"]))[0], "master");
    run(&mut r1, &["SET", "b", "2"]);
    let new_port = one.addr.port().to_string();
    assert_eq!(
        in_exec(&mut r2, &["REPLICAOF", "127.0.0.1", &new_port]),
        ["OK", "0"]
    );
    wait_until("the repointed link to come up", || {
        words(run(&mut r2, &["ROLE"]))[..4]
            == ["slave", "127.0.0.1", new_port.as_str(), "connected"]
    });
    wait_until("the new master's write", || {
        text(&run(&mut r2, &["GET", "b"])) == "2"
    });
    assert_eq!(common::int(&mut r1, &["WAIT", "1", "5000"]), 1);
}
