//! Expiry, MULTI/EXEC/WATCH and the numbered databases through an
//! independent client (the `redis` crate): every command and option, the
//! errors Redis gives, and what survives a restart.

mod common;

use std::time::Duration;

use common::{cmd, err, int, Resp, TestServer};
use redis::Value;

fn bulk(s: &str) -> Value {
    Value::BulkString(s.as_bytes().to_vec())
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_millis() as i64
}

#[test]
fn set_options_and_their_refusals() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(
        cmd(&mut c, &["SET", "k", "v", "EX", "100"]).unwrap(),
        Value::Okay
    );
    assert!((99..=100).contains(&int(&mut c, &["TTL", "k"])));
    cmd(&mut c, &["SET", "k", "v", "PX", "100000"]).unwrap();
    assert!((99_000..=100_000).contains(&int(&mut c, &["PTTL", "k"])));
    let at = now_ms() / 1000 + 500;
    cmd(&mut c, &["SET", "k", "v", "EXAT", &at.to_string()]).unwrap();
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), at);
    let pat = now_ms() + 700_000;
    cmd(&mut c, &["SET", "k", "v", "PXAT", &pat.to_string()]).unwrap();
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), pat);
    // KEEPTTL keeps it; a plain SET drops it.
    cmd(&mut c, &["SET", "k", "w", "KEEPTTL"]).unwrap();
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), pat);
    // GET with an expiry: the old value back, the new deadline set.
    assert_eq!(
        cmd(&mut c, &["SET", "k", "x", "GET", "EX", "50"]).unwrap(),
        bulk("w")
    );
    assert!((49..=50).contains(&int(&mut c, &["TTL", "k"])));
    cmd(&mut c, &["SET", "k", "y"]).unwrap();
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    // NX / XX with an expiry.
    assert_eq!(
        cmd(&mut c, &["SET", "k", "z", "NX", "EX", "5"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        cmd(&mut c, &["SET", "n", "z", "XX", "EX", "5"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        cmd(&mut c, &["SET", "n", "z", "NX", "EX", "5"]).unwrap(),
        Value::Okay
    );
    // Every combination Redis refuses, with its text.
    for bad in [
        &["SET", "k", "v", "EX", "10", "PX", "10"][..],
        &["SET", "k", "v", "EX", "10", "KEEPTTL"],
        &["SET", "k", "v", "KEEPTTL", "PXAT", "10"],
        &["SET", "k", "v", "NX", "XX"],
        &["SET", "k", "v", "EX"],
        &["SET", "k", "v", "PERSIST"],
    ] {
        assert_eq!(err(&mut c, bad), "ERR syntax error", "{bad:?}");
    }
    for bad in ["0", "-5", "10000000000000000"] {
        assert!(err(&mut c, &["SET", "k", "v", "EX", bad])
            .contains("invalid expire time in 'set' command"));
    }
    assert!(err(&mut c, &["SET", "k", "v", "EX", "ten"]).contains("not an integer"));
    // A deadline already passed leaves no key.
    cmd(&mut c, &["SET", "gone", "v", "PXAT", "1"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "gone"]).unwrap(), Value::Nil);
}

#[test]
fn setex_psetex_getex_getdel() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SETEX", "a", "100", "1"]).unwrap();
    assert!((99..=100).contains(&int(&mut c, &["TTL", "a"])));
    cmd(&mut c, &["PSETEX", "b", "100000", "2"]).unwrap();
    assert!((99..=100).contains(&int(&mut c, &["TTL", "b"])));
    assert!(err(&mut c, &["SETEX", "a", "0", "1"]).contains("invalid expire time in 'setex'"));
    assert!(err(&mut c, &["PSETEX", "a", "-1", "1"]).contains("invalid expire time in 'psetex'"));
    // GETEX: read and re-time.
    assert_eq!(cmd(&mut c, &["GETEX", "a", "PERSIST"]).unwrap(), bulk("1"));
    assert_eq!(int(&mut c, &["TTL", "a"]), -1);
    assert_eq!(cmd(&mut c, &["GETEX", "a", "EX", "30"]).unwrap(), bulk("1"));
    assert!((29..=30).contains(&int(&mut c, &["TTL", "a"])));
    assert_eq!(cmd(&mut c, &["GETEX", "a"]).unwrap(), bulk("1"));
    assert!((29..=30).contains(&int(&mut c, &["TTL", "a"])));
    assert_eq!(
        cmd(&mut c, &["GETEX", "missing", "EX", "5"]).unwrap(),
        Value::Nil
    );
    assert_eq!(
        cmd(&mut c, &["GETEX", "a", "PXAT", "1"]).unwrap(),
        bulk("1")
    );
    assert_eq!(int(&mut c, &["EXISTS", "a"]), 0);
    assert_eq!(
        err(&mut c, &["GETEX", "b", "PERSIST", "EX", "5"]),
        "ERR syntax error"
    );
    assert_eq!(err(&mut c, &["GETEX", "b", "NX"]), "ERR syntax error");
    assert!(err(&mut c, &["GETEX", "b", "EX", "0"]).contains("invalid expire time in 'getex'"));
    cmd(&mut c, &["HSET", "h", "f", "v"]).unwrap();
    assert!(err(&mut c, &["GETEX", "h", "EX", "5"]).starts_with("WRONGTYPE"));
    assert_eq!(cmd(&mut c, &["GETDEL", "b"]).unwrap(), bulk("2"));
    assert_eq!(cmd(&mut c, &["GETDEL", "b"]).unwrap(), Value::Nil);
}

#[test]
fn expire_family_with_conditions() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(int(&mut c, &["EXPIRE", "none", "10"]), 0);
    cmd(&mut c, &["SET", "k", "v"]).unwrap();
    // NX only without a deadline; XX only with one; GT never on none.
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "XX"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "GT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "100", "NX"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "NX"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "50", "GT"]), 0);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "200", "GT"]), 1);
    assert_eq!(int(&mut c, &["EXPIRE", "k", "300", "LT"]), 0);
    assert_eq!(int(&mut c, &["PEXPIRE", "k", "150000", "LT", "XX"]), 1);
    assert!((149..=150).contains(&int(&mut c, &["TTL", "k"])));
    let at = now_ms() / 1000 + 1000;
    assert_eq!(int(&mut c, &["EXPIREAT", "k", &at.to_string()]), 1);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), at);
    assert_eq!(
        int(&mut c, &["PEXPIREAT", "k", &(at * 1000 + 7).to_string()]),
        1
    );
    assert_eq!(int(&mut c, &["PEXPIRETIME", "k"]), at * 1000 + 7);
    assert_eq!(int(&mut c, &["PERSIST", "k"]), 1);
    assert_eq!(int(&mut c, &["PERSIST", "k"]), 0);
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    assert_eq!(int(&mut c, &["EXPIRETIME", "k"]), -1);
    assert_eq!(int(&mut c, &["EXPIRETIME", "none"]), -2);
    // A deadline in the past deletes (a negative one too).
    assert_eq!(int(&mut c, &["EXPIRE", "k", "-1"]), 1);
    assert_eq!(int(&mut c, &["EXISTS", "k"]), 0);
    // Refusals, with Redis's texts.
    cmd(&mut c, &["SET", "k", "v"]).unwrap();
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "10", "FOO"]),
        "ERR Unsupported option FOO"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "10", "NX", "XX"]),
        "ERR NX and XX, GT or LT options at the same time are not compatible"
    );
    assert_eq!(
        err(&mut c, &["EXPIRE", "k", "10", "GT", "LT"]),
        "ERR GT and LT options at the same time are not compatible"
    );
    for big in ["9223370399119966", "9223372036854776", "-9223372036854776"] {
        assert_eq!(
            err(&mut c, &["EXPIRE", "k", big]),
            "ERR invalid expire time in 'expire' command"
        );
    }
    assert_eq!(
        err(&mut c, &["PEXPIRE", "k", "9223372036854770000"]),
        "ERR invalid expire time in 'pexpire' command"
    );
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    // A deadline past the year 9999 is accepted (stored as the engine's limit).
    assert_eq!(int(&mut c, &["PEXPIREAT", "k", "9223372036854770000"]), 1);
    assert!(int(&mut c, &["TTL", "k"]) > 200_000_000_000 / 1000);
}

#[test]
fn expired_keys_are_never_returned_and_deadlines_survive_restart() {
    let mut server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "short", "v", "PX", "50"]).unwrap();
    cmd(&mut c, &["SET", "long", "v", "EX", "1000"]).unwrap();
    cmd(&mut c, &["HSET", "h", "f", "v"]).unwrap();
    cmd(&mut c, &["EXPIRE", "h", "2000"]).unwrap();
    let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(info.contains("db0:keys=3,expires=3"), "{info}");
    std::thread::sleep(Duration::from_millis(120));
    assert_eq!(cmd(&mut c, &["GET", "short"]).unwrap(), Value::Nil);
    assert_eq!(int(&mut c, &["EXISTS", "short"]), 0);
    assert_eq!(int(&mut c, &["TTL", "short"]), -2);
    let keys: Vec<String> = redis::cmd("KEYS").arg("*").query(&mut c).unwrap();
    assert!(!keys.contains(&"short".to_string()), "{keys:?}");
    server.stop();
    let mut c = server.restart();
    assert!((990..=1000).contains(&int(&mut c, &["TTL", "long"])));
    assert!((1990..=2000).contains(&int(&mut c, &["TTL", "h"])));
    assert_eq!(cmd(&mut c, &["GET", "short"]).unwrap(), Value::Nil);
}

#[test]
fn multi_exec_discard_and_queueing_errors() {
    let server = TestServer::start();
    let mut c = server.client();
    assert_eq!(cmd(&mut c, &["MULTI"]).unwrap(), Value::Okay);
    assert_eq!(err(&mut c, &["MULTI"]), "ERR MULTI calls can not be nested");
    assert_eq!(
        cmd(&mut c, &["SET", "a", "1"]).unwrap(),
        Value::SimpleString("QUEUED".into())
    );
    cmd(&mut c, &["DISCARD"]).unwrap();
    // A command that fails inside EXEC fails alone (the raw client sees the
    // error inside the array).
    let mut raw = server.raw();
    let q = |r: &mut common::Raw, args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        r.command(&args)
    };
    assert_eq!(q(&mut raw, &["MULTI"]), Resp::Simple("OK".into()));
    for args in [
        &["SET", "a", "1"][..],
        &["INCR", "a"],
        &["HSET", "a", "f", "v"],
        &["GET", "a"],
    ] {
        assert_eq!(q(&mut raw, args), Resp::Simple("QUEUED".into()));
    }
    let Resp::Array(items) = q(&mut raw, &["EXEC"]) else {
        panic!("EXEC gave no array")
    };
    assert_eq!(items.len(), 4);
    assert_eq!(items[0], Resp::Simple("OK".into()));
    assert_eq!(items[1], Resp::Int(2));
    assert!(
        matches!(&items[2], Resp::Error(e) if e.starts_with("WRONGTYPE")),
        "{:?}",
        items[2]
    );
    assert_eq!(items[3], Resp::bulk("2"));
    // A command that fails to queue aborts the whole transaction.
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "a", "3"]).unwrap();
    assert!(err(&mut c, &["NOSUCHCOMMAND"]).contains("unknown command"));
    assert!(err(&mut c, &["GET"]).contains("wrong number of arguments"));
    assert_eq!(
        err(&mut c, &["EXEC"]),
        "EXECABORT Transaction discarded because of previous errors."
    );
    assert_eq!(cmd(&mut c, &["GET", "a"]).unwrap(), bulk("2"));
    // DISCARD drops the queue.
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "a", "4"]).unwrap();
    assert_eq!(cmd(&mut c, &["DISCARD"]).unwrap(), Value::Okay);
    assert_eq!(cmd(&mut c, &["GET", "a"]).unwrap(), bulk("2"));
    assert_eq!(err(&mut c, &["EXEC"]), "ERR EXEC without MULTI");
    assert_eq!(err(&mut c, &["DISCARD"]), "ERR DISCARD without MULTI");
    // SWAPDB is refused inside MULTI (the transaction then aborts).
    cmd(&mut c, &["MULTI"]).unwrap();
    assert_eq!(
        err(&mut c, &["SWAPDB", "0", "1"]),
        "ERR Command not allowed inside a transaction"
    );
    assert!(err(&mut c, &["EXEC"]).starts_with("EXECABORT"));
    // An empty transaction.
    cmd(&mut c, &["MULTI"]).unwrap();
    assert_eq!(cmd(&mut c, &["EXEC"]).unwrap(), Value::Array(vec![]));
}

#[test]
fn watch_makes_exec_conditional() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut other = server.client();
    cmd(&mut c, &["SET", "x", "30"]).unwrap();
    // Unchanged: EXEC runs.
    cmd(&mut c, &["WATCH", "x"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["INCR", "x"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["EXEC"]).unwrap(),
        Value::Array(vec![Value::Int(31)])
    );
    // Changed by another client (even to the same value): EXEC gives nil.
    cmd(&mut c, &["WATCH", "x"]).unwrap();
    cmd(&mut other, &["SET", "x", "31"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "x", "0"]).unwrap();
    assert_eq!(cmd(&mut c, &["EXEC"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["GET", "x"]).unwrap(), bulk("31"));
    assert_eq!(
        err(&mut c, &["MULTI", "x"]),
        "ERR wrong number of arguments for 'multi' command"
    );
    // WATCH inside MULTI is refused.
    cmd(&mut c, &["MULTI"]).unwrap();
    assert_eq!(
        err(&mut c, &["WATCH", "x"]),
        "ERR WATCH inside MULTI is not allowed"
    );
    cmd(&mut c, &["DISCARD"]).unwrap();
    // Expiry is a change.
    cmd(&mut c, &["SET", "e", "v", "PX", "30"]).unwrap();
    cmd(&mut c, &["WATCH", "e"]).unwrap();
    std::thread::sleep(Duration::from_millis(60));
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "y", "1"]).unwrap();
    assert_eq!(cmd(&mut c, &["EXEC"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["GET", "y"]).unwrap(), Value::Nil);
    // UNWATCH forgets; a missing key that stays missing is no change.
    cmd(&mut c, &["WATCH", "x", "nothere"]).unwrap();
    cmd(&mut other, &["SET", "x", "9"]).unwrap();
    cmd(&mut c, &["UNWATCH"]).unwrap();
    cmd(&mut c, &["WATCH", "nothere"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "y", "2"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["EXEC"]).unwrap(),
        Value::Array(vec![Value::Okay])
    );
    // A watched key belongs to its database: SWAPDB and FLUSHDB touch it.
    cmd(&mut c, &["WATCH", "x"]).unwrap();
    cmd(&mut other, &["SWAPDB", "0", "1"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["PING"]).unwrap();
    assert_eq!(cmd(&mut c, &["EXEC"]).unwrap(), Value::Nil);
    cmd(&mut other, &["SWAPDB", "0", "1"]).unwrap();
    cmd(&mut c, &["WATCH", "x"]).unwrap();
    cmd(&mut other, &["FLUSHDB"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["PING"]).unwrap();
    assert_eq!(cmd(&mut c, &["EXEC"]).unwrap(), Value::Nil);
}

#[test]
fn exec_is_atomic_against_other_clients_and_durable() {
    let mut server = TestServer::start();
    let addr = server.url();
    // Each EXEC moves one unit from a to b; the sum never changes, and no
    // reader inside another EXEC sees a half-done move.
    let mut c = server.client();
    cmd(&mut c, &["MSET", "a", "1000", "b", "0"]).unwrap();
    let movers: Vec<_> = (0..2)
        .map(|_| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut c = redis::Client::open(addr).unwrap().get_connection().unwrap();
                for _ in 0..200 {
                    cmd(&mut c, &["MULTI"]).unwrap();
                    cmd(&mut c, &["DECR", "a"]).unwrap();
                    cmd(&mut c, &["INCR", "b"]).unwrap();
                    cmd(&mut c, &["EXEC"]).unwrap();
                }
            })
        })
        .collect();
    let mut checks = 0;
    while !movers.iter().all(|m| m.is_finished()) {
        cmd(&mut c, &["MULTI"]).unwrap();
        cmd(&mut c, &["GET", "a"]).unwrap();
        cmd(&mut c, &["GET", "b"]).unwrap();
        let Value::Array(v) = cmd(&mut c, &["EXEC"]).unwrap() else {
            panic!()
        };
        let n = |v: &Value| match v {
            Value::BulkString(b) => std::str::from_utf8(b).unwrap().parse::<i64>().unwrap(),
            v => panic!("{v:?}"),
        };
        assert_eq!(n(&v[0]) + n(&v[1]), 1000, "a half-done EXEC was seen");
        checks += 1;
    }
    for m in movers {
        m.join().unwrap();
    }
    assert!(checks > 0);
    server.stop();
    let mut c = server.restart();
    assert_eq!(cmd(&mut c, &["GET", "a"]).unwrap(), bulk("600"));
    assert_eq!(cmd(&mut c, &["GET", "b"]).unwrap(), bulk("400"));
}

#[test]
fn databases_select_move_swapdb_flush() {
    let mut server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "k", "zero"]).unwrap();
    cmd(&mut c, &["SELECT", "9"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "k"]).unwrap(), Value::Nil);
    cmd(&mut c, &["SET", "k", "nine"]).unwrap();
    cmd(&mut c, &["SET", "only9", "x", "EX", "100"]).unwrap();
    assert_eq!(int(&mut c, &["DBSIZE"]), 2);
    // Binary keys that start with 0xFF stay apart from the namespaces.
    let ff = [0xFFu8, 0x01, b'k'];
    let _: () = redis::cmd("SET")
        .arg(&ff[..])
        .arg("ff")
        .query(&mut c)
        .unwrap();
    assert_eq!(int(&mut c, &["DBSIZE"]), 3);
    // MOVE keeps the deadline and refuses what Redis refuses.
    assert_eq!(int(&mut c, &["MOVE", "only9", "3"]), 1);
    assert_eq!(int(&mut c, &["MOVE", "only9", "3"]), 0);
    assert_eq!(
        err(&mut c, &["MOVE", "k", "9"]),
        "ERR source and destination objects are the same"
    );
    assert_eq!(
        err(&mut c, &["MOVE", "k", "16"]),
        "ERR DB index is out of range"
    );
    assert_eq!(int(&mut c, &["MOVE", "k", "0"]), 0); // db 0 has its own k
    cmd(&mut c, &["SELECT", "3"]).unwrap();
    assert!((99..=100).contains(&int(&mut c, &["TTL", "only9"])));
    // SWAPDB, visible to every client and kept across a restart.
    assert_eq!(cmd(&mut c, &["SWAPDB", "0", "9"]).unwrap(), Value::Okay);
    assert_eq!(
        err(&mut c, &["SWAPDB", "0", "x"]),
        "ERR invalid second DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "y", "0"]),
        "ERR invalid first DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "0", "99"]),
        "ERR DB index is out of range"
    );
    server.stop();
    let mut c = server.restart();
    assert_eq!(cmd(&mut c, &["GET", "k"]).unwrap(), bulk("nine"));
    let got: Option<String> = redis::cmd("GET").arg(&ff[..]).query(&mut c).unwrap();
    assert_eq!(got.as_deref(), Some("ff"));
    cmd(&mut c, &["SELECT", "9"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "k"]).unwrap(), bulk("zero"));
    // FLUSHDB empties one database; FLUSHALL every one.
    cmd(&mut c, &["FLUSHDB"]).unwrap();
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
    cmd(&mut c, &["SELECT", "0"]).unwrap();
    assert_eq!(int(&mut c, &["DBSIZE"]), 2);
    assert_eq!(err(&mut c, &["FLUSHDB", "NOW"]), "ERR syntax error");
    cmd(&mut c, &["FLUSHALL", "SYNC"]).unwrap();
    cmd(&mut c, &["SELECT", "3"]).unwrap();
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
    let info: String = redis::cmd("INFO").arg("keyspace").query(&mut c).unwrap();
    assert!(!info.contains("keys="), "{info}");
}

#[test]
fn the_databases_setting_bounds_select() {
    let server = TestServer::start_with(|c| c.databases = 2);
    let mut c = server.client();
    assert_eq!(cmd(&mut c, &["SELECT", "1"]).unwrap(), Value::Okay);
    assert_eq!(
        err(&mut c, &["SELECT", "2"]),
        "ERR DB index is out of range"
    );
    assert!(err(&mut c, &["SELECT", "one"]).contains("not an integer"));
}

#[test]
fn inside_exec_flushdb_sees_the_transactions_writes_and_a_failed_command_writes_nothing() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "old", "1"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "new", "1"]).unwrap();
    cmd(&mut c, &["FLUSHDB"]).unwrap();
    cmd(&mut c, &["DBSIZE"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["EXEC"]).unwrap(),
        Value::Array(vec![Value::Okay, Value::Okay, Value::Int(0)])
    );
    assert_eq!(int(&mut c, &["EXISTS", "old", "new"]), 0);
    // In database 9 a key of the engine's full length is too long once the
    // namespace prefix is added: MSET fails on it after writing `a` in the
    // transaction, and that write is undone with the failed command.
    let long = "k".repeat(persimmon::MAX_KEY_BYTES);
    cmd(&mut c, &["SELECT", "9"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["MSET", "a", "1", &long, "2"]).unwrap();
    cmd(&mut c, &["SET", "b", "1"]).unwrap();
    let mut raw = server.raw();
    let q = |r: &mut common::Raw, args: &[&str]| {
        let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        r.command(&args)
    };
    q(&mut raw, &["SELECT", "9"]);
    q(&mut raw, &["MULTI"]);
    q(&mut raw, &["MSET", "a", "1", &long, "2"]);
    q(&mut raw, &["SET", "b", "1"]);
    let Resp::Array(items) = q(&mut raw, &["EXEC"]) else {
        panic!("no array")
    };
    assert!(
        matches!(&items[0], Resp::Error(e) if e.contains("key is")),
        "{:?}",
        items[0]
    );
    assert_eq!(items[1], Resp::Simple("OK".into()));
    cmd(&mut c, &["DISCARD"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "a"]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["GET", "b"]).unwrap(), bulk("1"));
}

#[test]
fn an_exec_against_a_hot_key_is_not_starved() {
    let server = TestServer::start();
    let addr = server.url();
    let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writer = {
        let stop = stop.clone();
        std::thread::spawn(move || {
            let mut c = redis::Client::open(addr).unwrap().get_connection().unwrap();
            while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                cmd(&mut c, &["INCR", "hot"]).unwrap();
            }
        })
    };
    let mut c = server.client();
    for _ in 0..200 {
        cmd(&mut c, &["MULTI"]).unwrap();
        cmd(&mut c, &["INCR", "hot"]).unwrap();
        cmd(&mut c, &["GET", "hot"]).unwrap();
        let Value::Array(v) = cmd(&mut c, &["EXEC"]).unwrap() else {
            panic!()
        };
        // The GET sees the INCR just before it, not a later one.
        let Value::Int(n) = v[0] else { panic!("{v:?}") };
        assert_eq!(v[1], bulk(&n.to_string()));
    }
    stop.store(true, std::sync::atomic::Ordering::Relaxed);
    writer.join().unwrap();
}

#[test]
fn repeated_options_and_swapdb_index_checks_follow_redis() {
    let server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SET", "k", "v", "EX", "10", "EX", "200"]).unwrap();
    assert!((199..=200).contains(&int(&mut c, &["TTL", "k"])));
    assert_eq!(
        cmd(&mut c, &["GETEX", "k", "PERSIST", "PERSIST"]).unwrap(),
        bulk("v")
    );
    assert_eq!(int(&mut c, &["TTL", "k"]), -1);
    assert_eq!(
        err(&mut c, &["GETEX", "k", "PERSIST", "EX", "5"]),
        "ERR syntax error"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "100", "x"]),
        "ERR invalid second DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "99999999999", "1"]),
        "ERR invalid first DB index"
    );
    assert_eq!(
        err(&mut c, &["SWAPDB", "100", "1"]),
        "ERR DB index is out of range"
    );
    // GETEX PERSIST of a key without a deadline writes nothing: a watcher
    // of the key still gets its EXEC through.
    cmd(&mut c, &["WATCH", "k"]).unwrap();
    let mut other = server.client();
    cmd(&mut other, &["GETEX", "k", "PERSIST"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["PING"]).unwrap();
    assert_eq!(
        cmd(&mut c, &["EXEC"]).unwrap(),
        Value::Array(vec![Value::SimpleString("PONG".into())])
    );
}

#[test]
fn the_database_map_outlives_a_smaller_databases_setting() {
    let mut server = TestServer::start();
    let mut c = server.client();
    cmd(&mut c, &["SELECT", "9"]).unwrap();
    cmd(&mut c, &["SET", "nine", "9"]).unwrap();
    cmd(&mut c, &["SWAPDB", "9", "1"]).unwrap();
    server.stop();
    let pool = server.pool.clone();
    {
        let small = persimmon_server::ServerHandle::start(persimmon_server::Config {
            pool: pool.clone(),
            port: 0,
            databases: 4,
            ..Default::default()
        })
        .unwrap();
        let mut c = redis::Client::open(format!("redis://{}", small.addr))
            .unwrap()
            .get_connection()
            .unwrap();
        assert_eq!(
            err(&mut c, &["SELECT", "9"]),
            "ERR DB index is out of range"
        );
        cmd(&mut c, &["SELECT", "1"]).unwrap();
        assert_eq!(cmd(&mut c, &["GET", "nine"]).unwrap(), bulk("9"));
        cmd(&mut c, &["SWAPDB", "0", "1"]).unwrap();
        small.shutdown().unwrap();
    }
    let mut c = server.restart();
    cmd(&mut c, &["SELECT", "0"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "nine"]).unwrap(), bulk("9"));
    cmd(&mut c, &["SELECT", "9"]).unwrap();
    assert_eq!(int(&mut c, &["DBSIZE"]), 0);
}

#[test]
fn maxmemory_and_min_replicas_refuse_writes_as_redis_does() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut admin = server.client();
    cmd(&mut c, &["SET", "x", "1"]).unwrap();
    cmd(&mut admin, &["CONFIG", "SET", "maxmemory", "1"]).unwrap();
    let oom = "OOM command not allowed when used memory > 'maxmemory'.";
    assert_eq!(err(&mut c, &["SET", "y", "1"]), oom);
    assert_eq!(cmd(&mut c, &["GET", "x"]).unwrap(), bulk("1"));
    assert_eq!(int(&mut c, &["DEL", "x"]), 1); // DEL frees: allowed
                                               // Queued while over: the transaction is refused; EXEC while over with a
                                               // queued write: refused whole, naming the cause.
    cmd(&mut c, &["MULTI"]).unwrap();
    assert_eq!(err(&mut c, &["SET", "y", "1"]), oom);
    assert!(err(&mut c, &["EXEC"])
        .starts_with("EXECABORT Transaction discarded because of previous errors"));
    cmd(&mut admin, &["CONFIG", "SET", "maxmemory", "0"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["SET", "y", "1"]).unwrap();
    cmd(&mut c, &["GET", "y"]).unwrap();
    cmd(&mut admin, &["CONFIG", "SET", "maxmemory", "1"]).unwrap();
    std::thread::sleep(Duration::from_millis(120)); // past the 100 ms reading
    assert_eq!(
        err(&mut c, &["EXEC"]),
        format!("EXECABORT Transaction discarded because of: {oom}")
    );
    cmd(&mut admin, &["CONFIG", "SET", "maxmemory", "0"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "y"]).unwrap(), Value::Nil);
    // No replicas: with min-replicas-to-write set, writes are refused.
    cmd(&mut admin, &["CONFIG", "SET", "min-replicas-to-write", "2"]).unwrap();
    assert_eq!(
        err(&mut c, &["SET", "y", "1"]),
        "NOREPLICAS Not enough good replicas to write."
    );
    assert_eq!(cmd(&mut c, &["GET", "y"]).unwrap(), Value::Nil);
    cmd(&mut admin, &["CONFIG", "SET", "min-replicas-to-write", "0"]).unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["INCR", "y"]).unwrap();
    cmd(&mut admin, &["CONFIG", "SET", "min-replicas-to-write", "2"]).unwrap();
    assert!(
        err(&mut c, &["EXEC"]).contains("EXECABORT Transaction discarded because of: NOREPLICAS")
    );
    cmd(&mut admin, &["CONFIG", "SET", "min-replicas-to-write", "0"]).unwrap();
    assert_eq!(cmd(&mut c, &["GET", "y"]).unwrap(), Value::Nil);
}

#[test]
fn a_stale_replica_refuses_what_is_not_flagged_stale_and_a_refused_exec_ends_the_transaction() {
    let server = TestServer::start();
    let mut c = server.client();
    let mut admin = server.client();
    cmd(&mut c, &["SET", "x", "1"]).unwrap();
    cmd(
        &mut admin,
        &["CONFIG", "SET", "replica-serve-stale-data", "no"],
    )
    .unwrap();
    cmd(&mut c, &["MULTI"]).unwrap();
    cmd(&mut c, &["GET", "x"]).unwrap();
    // A master nobody listens on: the link stays down.
    cmd(&mut admin, &["REPLICAOF", "127.0.0.1", "1"]).unwrap();
    let down = "MASTERDOWN Link with MASTER is down and replica-serve-stale-data is set to 'no'.";
    assert_eq!(
        err(&mut c, &["EXEC"]),
        format!("EXECABORT Transaction discarded because of: {down}")
    );
    // The refused EXEC ended the transaction: the next commands run, and
    // those not flagged `stale` are refused while the link is down.
    assert_eq!(err(&mut c, &["GET", "x"]), down);
    assert_eq!(err(&mut c, &["PING"]), down);
    assert!(matches!(
        cmd(&mut c, &["INFO", "replication"]),
        Ok(Value::BulkString(_))
    ));
    cmd(
        &mut admin,
        &["CONFIG", "SET", "replica-serve-stale-data", "yes"],
    )
    .unwrap();
    assert_eq!(cmd(&mut c, &["GET", "x"]).unwrap(), bulk("1"));
    cmd(&mut admin, &["REPLICAOF", "NO", "ONE"]).unwrap();
}

#[test]
fn save_and_shutdown_are_refused_inside_multi() {
    let server = TestServer::start();
    let mut c = server.client();
    for command in ["SAVE", "SHUTDOWN"] {
        cmd(&mut c, &["MULTI"]).unwrap();
        cmd(&mut c, &["SET", "foo", "bar"]).unwrap();
        assert_eq!(
            err(&mut c, &[command]),
            "ERR Command not allowed inside a transaction"
        );
        assert!(err(&mut c, &["EXEC"]).starts_with("EXECABORT"));
        assert_eq!(cmd(&mut c, &["GET", "foo"]).unwrap(), Value::Nil);
    }
    assert_eq!(
        cmd(&mut c, &["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
}

#[test]
fn a_key_too_long_with_its_database_prefix_reads_as_missing() {
    let server = TestServer::start();
    let mut c = server.client();
    // The engine's full key length: fits database 0, not database 9 with
    // its prefix. There it cannot exist: removals find nothing, a write is
    // refused with the key-length error.
    let long = "k".repeat(persimmon::MAX_KEY_BYTES);
    cmd(&mut c, &["SELECT", "9"]).unwrap();
    assert_eq!(int(&mut c, &["HDEL", &long, "f"]), 0);
    assert_eq!(int(&mut c, &["ZREM", &long, "m"]), 0);
    assert_eq!(int(&mut c, &["SREM", &long, "m"]), 0);
    assert_eq!(cmd(&mut c, &["GETDEL", &long]).unwrap(), Value::Nil);
    assert_eq!(cmd(&mut c, &["LPOP", &long]).unwrap(), Value::Nil);
    assert!(err(&mut c, &["HSET", &long, "f", "v"]).contains("key is"));
    assert!(err(&mut c, &["INCR", &long]).contains("key is"));
}
