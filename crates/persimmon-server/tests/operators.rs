//! What operators run, through raw RESP: SLOWLOG, LATENCY, MONITOR,
//! CLIENT PAUSE/UNPAUSE, CLIENT LIST's fields, COMMAND GETKEYSANDFLAGS,
//! CONFIG GET/SET of Redis 7.0's parameters, MIGRATE, CLUSTER on a server
//! without cluster support, INFO's version and latencystats, and a script
//! queued in MULTI.

mod common;

use std::thread;
use std::time::{Duration, Instant};

use common::{encode, info_field, Raw, Resp, TestServer};

fn run(raw: &mut Raw, args: &[&str]) -> Resp {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    raw.command(&args)
}

fn ok(raw: &mut Raw, args: &[&str]) {
    assert_eq!(run(raw, args), Resp::Simple("OK".into()), "{args:?}");
}

fn int(raw: &mut Raw, args: &[&str]) -> i64 {
    match run(raw, args) {
        Resp::Int(n) => n,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn error(raw: &mut Raw, args: &[&str]) -> String {
    match run(raw, args) {
        Resp::Error(e) => e,
        other => panic!("{args:?} did not fail: {other:?}"),
    }
}

fn items(r: Resp) -> Vec<Resp> {
    match r {
        Resp::Array(items) => items,
        other => panic!("not an array: {other:?}"),
    }
}

fn text(r: &Resp) -> String {
    match r {
        Resp::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Resp::Simple(s) => s.clone(),
        other => panic!("not a string: {other:?}"),
    }
}

/// The arguments of each slow-log entry, newest first.
fn slow_args(raw: &mut Raw) -> Vec<Vec<String>> {
    items(run(raw, &["SLOWLOG", "GET", "-1"]))
        .into_iter()
        .map(|e| {
            let e = items(e);
            assert_eq!(e.len(), 6, "{e:?}");
            items(e[3].clone()).iter().map(text).collect()
        })
        .collect()
}

#[test]
fn slowlog_keeps_trims_and_redacts_commands() {
    let server = TestServer::start();
    let mut r = server.raw();
    assert_eq!(int(&mut r, &["SLOWLOG", "LEN"]), 0);
    ok(&mut r, &["CLIENT", "SETNAME", "slowpoke"]);
    ok(&mut r, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    ok(&mut r, &["CONFIG", "SET", "slowlog-max-len", "10"]);
    for _ in 0..20 {
        run(&mut r, &["PING"]);
    }
    assert_eq!(int(&mut r, &["SLOWLOG", "LEN"]), 10);
    assert_eq!(items(run(&mut r, &["SLOWLOG", "GET", "3"])).len(), 3);
    assert_eq!(items(run(&mut r, &["SLOWLOG", "GET"])).len(), 10);
    assert_eq!(
        error(&mut r, &["SLOWLOG", "GET", "-2"]),
        "ERR count should be greater than or equal to -1"
    );
    ok(&mut r, &["SLOWLOG", "RESET"]);
    // An entry: id, time, duration, arguments, address, name.
    run(&mut r, &["SET", "k", "v"]);
    let e = items(items(run(&mut r, &["SLOWLOG", "GET", "1"])).remove(0));
    assert!(matches!(e[0], Resp::Int(id) if id > 0), "{e:?}");
    assert!(matches!(e[2], Resp::Int(us) if us >= 0), "{e:?}");
    assert!(text(&e[4]).starts_with("127.0.0.1:"));
    assert_eq!(text(&e[5]), "slowpoke");
    // 33 arguments keep 31 and a count; 129 bytes keep 128 and a count.
    ok(&mut r, &["SLOWLOG", "RESET"]);
    let mut many = vec!["SADD", "set"];
    let members: Vec<String> = (0..31).map(|i| i.to_string()).collect();
    many.extend(members.iter().map(String::as_str));
    run(&mut r, &many);
    let long = "A".repeat(129);
    run(&mut r, &["SADD", "set", &long]);
    run(&mut r, &["CONFIG", "SET", "masterauth", "secret"]);
    run(&mut r, &["AUTH", "nobody", "pass"]);
    let logged = slow_args(&mut r);
    assert_eq!(logged[0], ["AUTH", "(redacted)", "(redacted)"]);
    assert_eq!(logged[1], ["CONFIG", "SET", "masterauth", "(redacted)"]);
    assert_eq!(
        logged[2][2],
        format!("{}... (1 more bytes)", "A".repeat(128))
    );
    assert_eq!(logged[3].len(), 32);
    assert_eq!(logged[3][31], "... (2 more arguments)");
    // EXEC is not logged; the commands it ran are.
    ok(&mut r, &["SLOWLOG", "RESET"]);
    ok(&mut r, &["MULTI"]);
    run(&mut r, &["INCR", "n"]);
    run(&mut r, &["EXEC"]);
    let logged = slow_args(&mut r);
    assert_eq!(logged[0], ["INCR", "n"]);
    assert_eq!(logged[1], ["MULTI"]);
    // Off: nothing more is logged.
    ok(&mut r, &["CONFIG", "SET", "slowlog-log-slower-than", "-1"]);
    ok(&mut r, &["SLOWLOG", "RESET"]);
    run(&mut r, &["PING"]);
    assert_eq!(int(&mut r, &["SLOWLOG", "LEN"]), 0);
}

#[test]
fn slowlog_logs_a_blocked_command_when_it_replies() {
    let server = TestServer::start();
    let mut r = server.raw();
    ok(&mut r, &["CONFIG", "SET", "slowlog-log-slower-than", "0"]);
    let mut waiter = server.raw();
    waiter.send(&encode(&[b"BLPOP", b"l", b"0"])).unwrap();
    let start = Instant::now();
    while info_field(&mut r, "clients", "blocked_clients") != 1 {
        assert!(start.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(10));
    }
    ok(&mut r, &["SLOWLOG", "RESET"]);
    run(&mut r, &["RPUSH", "l", "x"]);
    assert_eq!(waiter.read().map(items).map(|v| v.len()), Some(2));
    let logged = slow_args(&mut r);
    assert!(
        logged.iter().any(|a| a == &["BLPOP", "l", "0"]),
        "{logged:?}"
    );
}

#[test]
fn latency_monitor_and_histograms() {
    let server = TestServer::start();
    let mut r = server.raw();
    assert_eq!(run(&mut r, &["LATENCY", "LATEST"]), Resp::Array(vec![]));
    assert_eq!(int(&mut r, &["LATENCY", "RESET"]), 0);
    assert_eq!(
        run(&mut r, &["LATENCY", "HISTORY", "command"]),
        Resp::Array(vec![])
    );
    assert!(error(&mut r, &["LATENCY", "GRAPH", "command"]).contains("No samples"));
    assert!(error(&mut r, &["LATENCY", "HELP", "x"]).contains("'latency|help'"));
    assert!(matches!(run(&mut r, &["LATENCY", "DOCTOR"]), Resp::Bulk(d) if !d.is_empty()));
    ok(&mut r, &["CONFIG", "RESETSTAT"]);
    run(&mut r, &["SET", "a", "b"]);
    run(&mut r, &["SET", "c", "d"]);
    run(&mut r, &["CLIENT", "ID"]);
    let h = items(run(
        &mut r,
        &["LATENCY", "HISTOGRAM", "set", "client", "nosuch"],
    ));
    // A map in RESP2: name, details, name, details.
    let names: Vec<String> = h.iter().step_by(2).map(text).collect();
    assert_eq!(names, ["client|id", "set"]);
    let set = items(h[3].clone());
    assert_eq!(text(&set[0]), "calls");
    assert_eq!(set[1], Resp::Int(2));
    assert_eq!(text(&set[2]), "histogram_usec");
    let buckets = items(set[3].clone());
    assert_eq!(
        buckets.last(),
        Some(&Resp::Int(2)),
        "cumulative: {buckets:?}"
    );
    let all = items(run(&mut r, &["LATENCY", "HISTOGRAM"]));
    let names: Vec<String> = all.iter().step_by(2).map(text).collect();
    assert!(names.contains(&"config|resetstat".to_string()), "{names:?}");
    let stats = match run(&mut r, &["INFO", "latencystats"]) {
        Resp::Bulk(b) => String::from_utf8(b).unwrap(),
        other => panic!("{other:?}"),
    };
    assert!(
        stats.contains("latency_percentiles_usec_set:p50="),
        "{stats}"
    );
    assert!(stats.contains(",p99.9="), "{stats}");
}

#[test]
fn monitor_shows_commands_in_order_with_secrets_redacted() {
    let server = TestServer::start();
    let mut m = server.raw();
    ok(&mut m, &["MONITOR"]);
    let mut r = server.raw();
    run(&mut r, &["SET", "foo", "b\"ar\n"]);
    ok(&mut r, &["MULTI"]);
    run(&mut r, &["GET", "foo"]);
    run(&mut r, &["EXEC"]);
    run(
        &mut r,
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "foo"],
    );
    run(&mut r, &["AUTH", "secret"]);
    run(&mut r, &["CONFIG", "GET", "port"]);
    run(&mut r, &["PING"]);
    let lines: Vec<String> = (0..8).map(|_| text(&m.read().unwrap())).collect();
    let tails: Vec<&str> = lines
        .iter()
        .map(|l| l.split_once("] ").map_or("", |x| x.1))
        .collect();
    assert_eq!(
        tails,
        [
            r#""SET" "foo" "b\"ar\n""#,
            r#""MULTI""#,
            r#""GET" "foo""#,
            r#""EXEC""#,
            r#""EVAL" "return redis.call('get', KEYS[1])" "1" "foo""#,
            r#""get" "foo""#,
            r#""AUTH" "(redacted)""#,
            // CONFIG is an admin command: never shown.
            r#""PING""#,
        ]
    );
    assert!(lines[0].contains(" [0 127.0.0.1:"), "{}", lines[0]);
    assert!(lines[5].contains(" [0 lua] "), "{}", lines[5]);
    let list = text(&run(&mut r, &["CLIENT", "LIST"]));
    assert!(list.lines().any(|l| l.contains(" flags=O ")), "{list}");
    // RESET ends the feed.
    assert_eq!(run(&mut m, &["RESET"]), Resp::Simple("RESET".into()));
    run(&mut r, &["PING"]);
    assert_eq!(text(&run(&mut m, &["ECHO", "after"])), "after");
}

#[test]
fn client_pause_holds_writes_until_unpause() {
    let server = TestServer::start();
    let mut r = server.raw();
    ok(&mut r, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    // Reads, and requests refused at once, are not held.
    let mut reader = server.raw();
    assert_eq!(run(&mut reader, &["GET", "k"]), Resp::Null);
    assert!(error(&mut reader, &["SET", "k"]).contains("wrong number of arguments"));
    let mut writer = server.raw();
    writer.send(&encode(&[b"SET", b"k", b"v"])).unwrap();
    let mut publisher = server.raw();
    publisher.send(&encode(&[b"PUBLISH", b"ch", b"m"])).unwrap();
    let start = Instant::now();
    while info_field(&mut r, "clients", "blocked_clients") != 2 {
        assert!(start.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(10));
    }
    assert_eq!(run(&mut reader, &["GET", "k"]), Resp::Null);
    ok(&mut r, &["CLIENT", "UNPAUSE"]);
    assert_eq!(writer.read(), Some(Resp::Simple("OK".into())));
    assert_eq!(publisher.read(), Some(Resp::Int(0)));
    assert_eq!(text(&run(&mut reader, &["GET", "k"])), "v");
    assert_eq!(info_field(&mut r, "clients", "blocked_clients"), 0);
    // ALL holds reads too, until the pause ends by itself.
    ok(&mut r, &["CLIENT", "PAUSE", "300", "ALL"]);
    let start = Instant::now();
    assert_eq!(text(&run(&mut reader, &["GET", "k"])), "v");
    assert!(start.elapsed() >= Duration::from_millis(250));
    assert_eq!(
        error(&mut r, &["CLIENT", "PAUSE", "-1"]),
        "ERR timeout is negative"
    );
    assert_eq!(
        error(&mut r, &["CLIENT", "PAUSE", "10", "SOME"]),
        "ERR syntax error"
    );
}

#[test]
fn client_pause_write_lets_read_only_scripts_and_transactions_run() {
    let server = TestServer::start();
    let mut r = server.raw();
    ok(&mut r, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    let mut c = server.raw();
    let ro = "#!lua flags=no-writes\nreturn 1";
    assert_eq!(run(&mut c, &["EVAL", ro, "0"]), Resp::Int(1));
    ok(&mut c, &["MULTI"]);
    run(&mut c, &["EVAL", ro, "0"]);
    run(&mut c, &["GET", "x"]);
    assert_eq!(items(run(&mut c, &["EXEC"])), [Resp::Int(1), Resp::Null]);
    // A script that may write is held, inside EXEC too (queued before the
    // pause: queuing it during the pause is held, as in Redis).
    ok(&mut r, &["CLIENT", "UNPAUSE"]);
    ok(&mut c, &["MULTI"]);
    run(&mut c, &["EVAL", "return 2", "0"]);
    ok(&mut r, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    c.send(&encode(&[b"EXEC"])).unwrap();
    let start = Instant::now();
    while info_field(&mut r, "clients", "blocked_clients") != 1 {
        assert!(start.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(10));
    }
    ok(&mut r, &["CLIENT", "UNPAUSE"]);
    assert_eq!(c.read().map(items), Some(vec![Resp::Int(2)]));
    // Read-only scripts refuse may_replicate commands as Redis does.
    let e = error(
        &mut c,
        &["EVAL_RO", "return redis.call('publish','ch','m')", "0"],
    );
    assert!(
        e.starts_with("ERR Write commands are not allowed from read-only scripts."),
        "{e}"
    );
}

#[test]
fn client_pause_holds_the_expiry_until_it_ends() {
    let server = TestServer::start();
    let mut r = server.raw();
    let before = info_field(&mut r, "stats", "expired_keys");
    ok(&mut r, &["SET", "a", "1", "PX", "10"]);
    ok(&mut r, &["SET", "b", "1", "PX", "10"]);
    ok(&mut r, &["CLIENT", "PAUSE", "60000", "WRITE"]);
    thread::sleep(Duration::from_millis(300));
    // Expired for every read, not reclaimed.
    assert_eq!(run(&mut r, &["GET", "a"]), Resp::Null);
    assert_eq!(info_field(&mut r, "stats", "expired_keys"), before);
    ok(&mut r, &["CLIENT", "UNPAUSE"]);
    assert_eq!(info_field(&mut r, "stats", "expired_keys"), before + 2);
    // A pause that ends by itself lets the expiry go on too.
    ok(&mut r, &["SET", "c", "1", "PX", "10"]);
    ok(&mut r, &["CLIENT", "PAUSE", "200", "WRITE"]);
    let start = Instant::now();
    while info_field(&mut r, "stats", "expired_keys") != before + 3 {
        assert!(start.elapsed() < Duration::from_secs(10));
        thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn client_list_has_redis_7_fields() {
    let server = TestServer::start();
    let mut r = server.raw();
    let line = text(&run(&mut r, &["CLIENT", "INFO"]));
    let keys: Vec<&str> = line
        .split_whitespace()
        .filter_map(|f| f.split_once('=').map(|x| x.0))
        .collect();
    let redis_7_0 = [
        "id",
        "addr",
        "laddr",
        "fd",
        "name",
        "age",
        "idle",
        "flags",
        "db",
        "sub",
        "psub",
        "ssub",
        "multi",
        "qbuf",
        "qbuf-free",
        "argv-mem",
        "multi-mem",
        "rbs",
        "rbp",
        "obl",
        "oll",
        "omem",
        "tot-mem",
        "events",
        "cmd",
        "user",
        "redir",
        "resp",
    ];
    assert_eq!(keys[..redis_7_0.len()], redis_7_0, "{line}");
    // The running request is in the query buffer: *2 $6 client $4 info.
    assert!(line.contains(" qbuf=26 qbuf-free="), "{line}");
    assert!(line.contains(" cmd=client|info user=default "), "{line}");
    ok(&mut r, &["SELECT", "3"]);
    let line = text(&run(&mut r, &["CLIENT", "INFO"]));
    assert!(line.contains(" db=3 "), "{line}");
}

#[test]
fn command_getkeysandflags_reports_key_specs() {
    let server = TestServer::start();
    let mut r = server.raw();
    let got = items(run(
        &mut r,
        &[
            "COMMAND",
            "GETKEYSANDFLAGS",
            "LMOVE",
            "a",
            "b",
            "LEFT",
            "RIGHT",
        ],
    ));
    let shown: Vec<(String, Vec<String>)> = got
        .into_iter()
        .map(|k| {
            let k = items(k);
            (text(&k[0]), items(k[1].clone()).iter().map(text).collect())
        })
        .collect();
    assert_eq!(
        shown,
        [
            (
                "a".to_string(),
                vec!["RW".to_string(), "access".into(), "delete".into()]
            ),
            ("b".to_string(), vec!["RW".to_string(), "insert".into()]),
        ]
    );
    let sort = items(run(
        &mut r,
        &["COMMAND", "GETKEYSANDFLAGS", "SORT", "s", "STORE", "d"],
    ));
    assert_eq!(text(&items(sort[1].clone())[0]), "d");
    assert_eq!(
        items(items(sort[1].clone())[1].clone())[0],
        Resp::bulk("OW")
    );
    assert_eq!(
        error(&mut r, &["COMMAND", "GETKEYSANDFLAGS", "nosuch", "x"]),
        "ERR Invalid command specified"
    );
}

#[test]
fn config_lists_redis_7_parameters() {
    let server = TestServer::start();
    let mut r = server.raw();
    let all = items(run(&mut r, &["CONFIG", "GET", "*"]));
    let names: Vec<String> = all.iter().step_by(2).map(text).collect();
    for name in [
        "activedefrag",
        "cluster-enabled",
        "tls-port",
        "replicaof",
        "slaveof",
        "maxmemory-clients",
    ] {
        assert!(names.contains(&name.to_string()), "{name}");
    }
    // Hidden unless named.
    assert!(!names.contains(&"key-load-delay".to_string()));
    assert_eq!(
        items(run(&mut r, &["CONFIG", "GET", "key-load-delay"])).len(),
        2
    );
    // Every pair set back to its own value round-trips.
    for pair in all.chunks(2) {
        let (k, v) = (text(&pair[0]), text(&pair[1]));
        if ["dir", "dbfilename", "requirepass", "masterauth"].contains(&k.as_str()) {
            continue;
        }
        ok(&mut r, &["CONFIG", "SET", &k, &v]);
    }
    assert!(error(&mut r, &["CONFIG", "SET", "daemonize", "yes"]).contains("immutable"));
    assert_eq!(
        error(
            &mut r,
            &[
                "CONFIG",
                "SET",
                "maxmemory",
                "5",
                "maxmemory-clients",
                "200%"
            ]
        ),
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-clients') - \
         percentage argument must be less or equal to 100"
    );
    assert_eq!(
        text(&items(run(&mut r, &["CONFIG", "GET", "maxmemory"]))[1]),
        "0"
    );
    ok(&mut r, &["CONFIG", "SET", "maxmemory-clients", "10%"]);
    let got = items(run(
        &mut r,
        &["CONFIG", "GET", "maxmemory", "maxmemory*", "*of"],
    ));
    let names: Vec<String> = got.iter().step_by(2).map(text).collect();
    let mut unique = names.clone();
    unique.dedup();
    assert_eq!(names.len(), unique.len(), "{names:?}");
    assert!(names.contains(&"slaveof".into()) && names.contains(&"replicaof".into()));
}

#[test]
fn migrate_moves_keys_to_another_server() {
    let from = TestServer::start();
    let to = TestServer::start();
    let mut a = from.raw();
    let mut b = to.raw();
    let port = to.addr.port().to_string();
    assert_eq!(
        run(
            &mut a,
            &["MIGRATE", "127.0.0.1", &port, "nokey", "0", "1000"]
        ),
        Resp::Simple("NOKEY".into())
    );
    ok(&mut a, &["SET", "k", "v"]);
    int(&mut a, &["PEXPIRE", "k", "100000"]);
    int(&mut a, &["RPUSH", "l", "1", "2"]);
    ok(&mut a, &["MIGRATE", "127.0.0.1", &port, "k", "0", "1000"]);
    assert_eq!(int(&mut a, &["EXISTS", "k"]), 0);
    assert_eq!(text(&run(&mut b, &["GET", "k"])), "v");
    assert!(int(&mut b, &["PTTL", "k"]) > 90000);
    ok(
        &mut a,
        &[
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "0",
            "1000",
            "COPY",
            "KEYS",
            "l",
        ],
    );
    assert_eq!(int(&mut a, &["LLEN", "l"]), 2);
    assert_eq!(int(&mut b, &["LLEN", "l"]), 2);
    let e = error(
        &mut a,
        &["MIGRATE", "127.0.0.1", &port, "", "0", "1000", "KEYS", "l"],
    );
    assert!(
        e.starts_with("ERR Target instance replied with error: BUSYKEY"),
        "{e}"
    );
    ok(
        &mut a,
        &[
            "MIGRATE",
            "127.0.0.1",
            &port,
            "",
            "0",
            "1000",
            "REPLACE",
            "KEYS",
            "l",
        ],
    );
    assert_eq!(int(&mut a, &["EXISTS", "l"]), 0);
    assert_eq!(
        error(&mut a, &["MIGRATE", "h", "1", "k", "0", "1", "BOGUS"]),
        "ERR syntax error"
    );
}

#[test]
fn info_cluster_and_scripts_in_transactions() {
    let server = TestServer::start();
    let mut r = server.raw();
    let server_info = text(&run(&mut r, &["INFO", "server"]));
    assert!(
        server_info.contains("redis_version:7.0.15\r\n"),
        "{server_info}"
    );
    assert_eq!(
        error(&mut r, &["CLUSTER", "INFO"]),
        "ERR This instance has cluster support disabled"
    );
    let listed = items(run(
        &mut r,
        &["COMMAND", "LIST", "FILTERBY", "PATTERN", "cl*help"],
    ));
    assert!(listed.contains(&Resp::bulk("cluster|help")), "{listed:?}");
    // A script queued in MULTI runs inside the transaction's unit.
    ok(&mut r, &["MULTI"]);
    run(
        &mut r,
        &["EVAL", "return redis.call('incr', KEYS[1])", "1", "n"],
    );
    run(&mut r, &["INCR", "n"]);
    assert_eq!(items(run(&mut r, &["EXEC"])), [Resp::Int(1), Resp::Int(2)]);
    assert_eq!(text(&run(&mut r, &["GET", "n"])), "2");
}
