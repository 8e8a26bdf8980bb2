//! What Redis Sentinel sends a monitored server besides replication, each
//! as Redis answers it: CLIENT SETNAME, CLIENT KILL (the old `ip:port`
//! form and the filters ID, TYPE, ADDR, LADDR, USER, SKIPME), CONFIG
//! REWRITE into the TOML file the server started from (comments kept, the
//! server starts again from it with the same settings), SCRIPT KILL's
//! `NOTBUSY`, and Sentinel's fail-over transaction (MULTI, CONFIG REWRITE,
//! CLIENT KILL TYPE normal, CLIENT KILL TYPE pubsub, EXEC) minus the
//! REPLICAOF, which is the replication's.

mod common;

use std::path::Path;

use common::{Raw, Resp, TestServer};
use persimmon_server::{Config, ServerHandle};

fn cmd(c: &mut Raw, args: &[&str]) -> Resp {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.command(&args)
}

fn ok() -> Resp {
    Resp::Simple("OK".into())
}

fn error(text: &str) -> Resp {
    Resp::Error(text.into())
}

/// This connection's `addr=` and `laddr=` as CLIENT INFO shows them.
fn addrs(c: &mut Raw) -> (String, String) {
    let Resp::Bulk(line) = cmd(c, &["CLIENT", "INFO"]) else {
        panic!()
    };
    let line = String::from_utf8(line).unwrap();
    let field = |name: &str| {
        line.split(' ')
            .find_map(|f| f.strip_prefix(name))
            .unwrap()
            .to_string()
    };
    (field("addr="), field("laddr="))
}

fn id(c: &mut Raw) -> i64 {
    let Resp::Int(id) = cmd(c, &["CLIENT", "ID"]) else {
        panic!()
    };
    id
}

#[test]
fn client_kill_old_form_by_address() {
    let server = TestServer::start();
    let mut me = server.raw();
    let mut victim = server.raw();
    let (addr, _) = addrs(&mut victim);
    assert_eq!(cmd(&mut me, &["CLIENT", "KILL", &addr]), ok());
    assert!(victim.closed());
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "1.2.3.4:5"]),
        error("ERR No such client")
    );
    // The old form may kill the caller: the reply first, then the close.
    let (mine, _) = addrs(&mut me);
    assert_eq!(cmd(&mut me, &["CLIENT", "KILL", &mine]), ok());
    assert!(me.closed());
}

#[test]
fn client_kill_filters_count_and_skip_the_caller() {
    let server = TestServer::start();
    let mut me = server.raw();
    let mut a = server.raw();
    let mut b = server.raw();
    let mut subscriber = server.raw();
    assert!(matches!(
        cmd(&mut subscriber, &["SUBSCRIBE", "__sentinel__:hello"]),
        Resp::Array(_)
    ));
    // By id.
    let a_id = id(&mut a);
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "ID", &a_id.to_string()]),
        Resp::Int(1)
    );
    assert!(a.closed());
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "ID", &a_id.to_string()]),
        Resp::Int(0)
    );
    // By type: pubsub only takes subscribers.
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "TYPE", "pubsub"]),
        Resp::Int(1)
    );
    assert!(subscriber.closed());
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "TYPE", "master"]),
        Resp::Int(0)
    );
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "TYPE", "replica"]),
        Resp::Int(0)
    );
    // By address and local address, with the user; the caller is skipped.
    let (b_addr, laddr) = addrs(&mut b);
    assert_eq!(
        cmd(
            &mut me,
            &["CLIENT", "KILL", "ADDR", &b_addr, "LADDR", &laddr, "USER", "default"]
        ),
        Resp::Int(1)
    );
    assert!(b.closed());
    let mut c = server.raw();
    assert_eq!(cmd(&mut c, &["PING"]), Resp::Simple("PONG".into()));
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "LADDR", &laddr]),
        Resp::Int(1),
        "every client but the caller"
    );
    assert!(c.closed());
    // TYPE normal with SKIPME no takes the caller too, after its reply.
    assert_eq!(
        cmd(
            &mut me,
            &["CLIENT", "KILL", "TYPE", "normal", "SKIPME", "no"]
        ),
        Resp::Int(1)
    );
    assert!(me.closed());
}

#[test]
fn client_kill_errors_are_redis_texts() {
    let server = TestServer::start();
    let mut me = server.raw();
    for (args, text) in [
        (
            vec!["CLIENT", "KILL", "TYPE", "nobody"],
            "ERR Unknown client type 'nobody'",
        ),
        (
            vec!["CLIENT", "KILL", "ID", "0"],
            "ERR client-id should be greater than 0",
        ),
        (
            vec!["CLIENT", "KILL", "USER", "alice"],
            "ERR No such user 'alice'",
        ),
        (
            vec!["CLIENT", "KILL", "SKIPME", "maybe"],
            "ERR syntax error",
        ),
        (
            vec!["CLIENT", "KILL", "ID", "1", "TYPE"],
            "ERR syntax error",
        ),
        (vec!["CLIENT", "KILL", "WHAT", "x"], "ERR syntax error"),
        (
            vec!["CLIENT", "KILL"],
            "ERR wrong number of arguments for 'client|kill' command",
        ),
    ] {
        assert_eq!(cmd(&mut me, &args), error(text), "{args:?}");
    }
    assert_eq!(cmd(&mut me, &["PING"]), Resp::Simple("PONG".into()));
}

#[test]
fn a_blocked_client_can_be_killed() {
    let server = TestServer::start();
    let mut blocked = server.raw();
    let blocked_id = id(&mut blocked);
    blocked
        .send(&common::encode(&[b"BLPOP", b"nothing", b"0"]))
        .unwrap();
    std::thread::sleep(std::time::Duration::from_millis(100));
    let mut me = server.raw();
    assert_eq!(
        cmd(&mut me, &["CLIENT", "KILL", "ID", &blocked_id.to_string()]),
        Resp::Int(1)
    );
    assert!(blocked.closed());
}

#[test]
fn script_kill_is_notbusy_and_the_cache_starts_empty() {
    let server = TestServer::start();
    let mut c = server.raw();
    assert_eq!(
        cmd(&mut c, &["SCRIPT", "KILL"]),
        error("NOTBUSY No scripts in execution right now.")
    );
    assert_eq!(cmd(&mut c, &["SCRIPT", "FLUSH"]), ok());
    assert_eq!(cmd(&mut c, &["SCRIPT", "FLUSH", "ASYNC"]), ok());
    assert_eq!(
        cmd(&mut c, &["SCRIPT", "EXISTS", "a", "b"]),
        Resp::Array(vec![Resp::Int(0), Resp::Int(0)])
    );
    assert_eq!(
        cmd(&mut c, &["SCRIPT", "LOAD", "return 1"]),
        Resp::bulk("e0e1f9fabfc9d4800c877a703b823ac0578ff8db")
    );
    assert!(
        matches!(cmd(&mut c, &["SCRIPT", "NOPE"]), Resp::Error(e) if e.contains("unknown subcommand"))
    );
}

/// A server started from a config file in `dir`.
fn start_from_file(dir: &Path, text: &str) -> ServerHandle {
    let file = dir.join("persimmon.toml");
    std::fs::write(&file, text).unwrap();
    let mut config = Config {
        pool_size: Some(16 << 20),
        ..Config::default()
    };
    config.apply_file(&file).unwrap();
    ServerHandle::start_with_config_file(config, Some(file)).unwrap()
}

#[test]
fn config_rewrite_keeps_the_file_and_the_server_starts_from_it_again() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("p.pool");
    let original = format!(
        "# Persimmon behind Sentinel\npool = {:?} # the pool\nport = 0\n\nmaxclients = 100 # keep low\n",
        pool.display().to_string()
    );
    let server = start_from_file(dir.path(), &original);
    let mut c = Raw::connect(server.addr);
    for (name, value) in [
        ("maxclients", "200"),
        ("maxmemory", "64mb"),
        ("client-output-buffer-limit", "pubsub 1mb 512kb 30"),
        ("protected-mode", "no"),
    ] {
        assert_eq!(cmd(&mut c, &["CONFIG", "SET", name, value]), ok());
    }
    assert_eq!(cmd(&mut c, &["CONFIG", "REWRITE"]), ok());
    let text = std::fs::read_to_string(dir.path().join("persimmon.toml")).unwrap();
    assert!(
        text.starts_with("# Persimmon behind Sentinel\npool = "),
        "{text}"
    );
    assert!(text.contains(" # the pool\nport = 0\n"), "{text}");
    assert!(text.contains("maxclients = 200 # keep low\n"), "{text}");
    assert!(text.contains("protected-mode = false\n"), "{text}");
    assert!(text.contains("[settings]\n"), "{text}");
    assert!(text.contains("maxmemory = \"67108864\"\n"), "{text}");
    assert!(text.contains("pubsub 1048576 524288 30"), "{text}");
    drop(c);
    server.shutdown().unwrap();
    // Started again from the rewritten file: the same settings.
    let text = std::fs::read_to_string(dir.path().join("persimmon.toml")).unwrap();
    let server = start_from_file(dir.path(), &text);
    let mut c = Raw::connect(server.addr);
    let get = |c: &mut Raw, name: &str| match cmd(c, &["CONFIG", "GET", name]) {
        Resp::Array(kv) => kv[1].clone(),
        other => panic!("{other:?}"),
    };
    assert_eq!(get(&mut c, "maxclients"), Resp::bulk("200"));
    assert_eq!(get(&mut c, "maxmemory"), Resp::bulk("67108864"));
    assert_eq!(get(&mut c, "protected-mode"), Resp::bulk("no"));
    let Resp::Bulk(limits) = get(&mut c, "client-output-buffer-limit") else {
        panic!()
    };
    assert!(String::from_utf8(limits)
        .unwrap()
        .ends_with("pubsub 1048576 524288 30"));
    // Nothing changed since the start: the file stays as it is.
    assert_eq!(cmd(&mut c, &["CONFIG", "REWRITE"]), ok());
    assert_eq!(
        std::fs::read_to_string(dir.path().join("persimmon.toml")).unwrap(),
        text
    );
    drop(c);
    server.shutdown().unwrap();
}

#[test]
fn sentinels_failover_transaction_without_the_replicaof() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("p.pool");
    let server = start_from_file(
        dir.path(),
        &format!("pool = {:?}\nport = 0\n", pool.display().to_string()),
    );
    let mut sentinel = Raw::connect(server.addr);
    assert_eq!(
        cmd(
            &mut sentinel,
            &["CLIENT", "SETNAME", "sentinel-0123abcd-cmd"]
        ),
        ok()
    );
    let mut normal = Raw::connect(server.addr);
    let mut subscriber = Raw::connect(server.addr);
    assert!(matches!(
        cmd(&mut subscriber, &["SUBSCRIBE", "__sentinel__:hello"]),
        Resp::Array(_)
    ));
    assert_eq!(cmd(&mut sentinel, &["MULTI"]), ok());
    for args in [
        &["CONFIG", "REWRITE"][..],
        &["CLIENT", "KILL", "TYPE", "normal"],
        &["CLIENT", "KILL", "TYPE", "pubsub"],
    ] {
        assert_eq!(cmd(&mut sentinel, args), Resp::Simple("QUEUED".into()));
    }
    assert_eq!(
        cmd(&mut sentinel, &["EXEC"]),
        Resp::Array(vec![ok(), Resp::Int(1), Resp::Int(1)])
    );
    assert!(normal.closed());
    assert!(subscriber.closed());
    assert_eq!(cmd(&mut sentinel, &["PING"]), Resp::Simple("PONG".into()));
    drop(sentinel);
    server.shutdown().unwrap();
}

#[test]
fn config_rewrite_records_the_master_replicaof_follows() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("p.pool");
    let server = start_from_file(
        dir.path(),
        &format!("pool = {:?}\nport = 0\n", pool.display().to_string()),
    );
    let file = dir.path().join("persimmon.toml");
    let mut c = Raw::connect(server.addr);
    // A master nobody listens on: the link keeps trying, the setting holds.
    assert_eq!(cmd(&mut c, &["REPLICAOF", "127.0.0.1", "1"]), ok());
    assert_eq!(cmd(&mut c, &["CONFIG", "REWRITE"]), ok());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(text.contains("replicaof = \"127.0.0.1 1\""), "{text}");
    let mut again = Config::default();
    again.apply_toml(&text).unwrap();
    assert_eq!(again.replicaof, Some(("127.0.0.1".to_string(), 1)));
    assert_eq!(cmd(&mut c, &["REPLICAOF", "NO", "ONE"]), ok());
    assert_eq!(cmd(&mut c, &["CONFIG", "REWRITE"]), ok());
    let text = std::fs::read_to_string(&file).unwrap();
    assert!(!text.contains("replicaof"), "{text}");
}

/// CONFIG REWRITE writes the role as it is now (Sentinel sends it in the
/// same transaction as REPLICAOF, so that a restarted server keeps its new
/// role): `replicaof` after REPLICAOF host port, none after REPLICAOF NO
/// ONE. Found by tests/sentinel_failover.sh (the files kept the old
/// master).
#[test]
fn config_rewrite_writes_the_current_replicaof() {
    let dir = tempfile::tempdir().unwrap();
    let pool = dir.path().join("p.pool");
    let text = format!(
        "pool = {:?}\nport = 0\nreplicaof = \"127.0.0.1 1\"\n",
        pool.display().to_string()
    );
    let server = start_from_file(dir.path(), &text);
    let file = dir.path().join("persimmon.toml");
    let mut c = Raw::connect(server.addr);
    assert_eq!(cmd(&mut c, &["MULTI"]), ok());
    for args in [&["REPLICAOF", "NO", "ONE"][..], &["CONFIG", "REWRITE"]] {
        assert_eq!(cmd(&mut c, args), Resp::Simple("QUEUED".into()));
    }
    assert_eq!(cmd(&mut c, &["EXEC"]), Resp::Array(vec![ok(), ok()]));
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(!written.contains("replicaof"), "{written}");
    assert_eq!(cmd(&mut c, &["REPLICAOF", "127.0.0.1", "2"]), ok());
    assert_eq!(cmd(&mut c, &["CONFIG", "REWRITE"]), ok());
    let written = std::fs::read_to_string(&file).unwrap();
    assert!(written.contains("replicaof = \"127.0.0.1 2\""), "{written}");
    drop(c);
    server.shutdown().unwrap();
}
