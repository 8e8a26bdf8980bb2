//! MIGRATE between two real servers: keys move with their values and
//! times to live (deleted at the source unless COPY), KEYS moves several,
//! a key the target refuses stays, and the errors are Redis's.

mod common;

use common::{Raw, Resp, TestServer};

fn q(raw: &mut Raw, words: &[&str]) -> Resp {
    let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    raw.command(&words)
}

fn ok() -> Resp {
    Resp::Simple("OK".into())
}

#[test]
fn migrate_moves_keys_with_their_ttl_and_copy_keeps_them() {
    let (src, dst) = (TestServer::start(), TestServer::start());
    let (mut a, mut b) = (src.raw(), dst.raw());
    let port = dst.addr.port().to_string();
    assert_eq!(q(&mut a, &["SET", "k", "v", "PX", "100000"]), ok());
    assert_eq!(q(&mut a, &["RPUSH", "l", "x", "y"]), Resp::Int(2));
    assert_eq!(
        q(&mut a, &["MIGRATE", "127.0.0.1", &port, "k", "0", "1000"]),
        ok()
    );
    assert_eq!(q(&mut a, &["EXISTS", "k"]), Resp::Int(0));
    assert_eq!(q(&mut b, &["GET", "k"]), Resp::bulk("v"));
    let Resp::Int(ttl) = q(&mut b, &["PTTL", "k"]) else {
        panic!("an int")
    };
    assert!(ttl > 90_000 && ttl <= 100_000, "{ttl}");
    let copy = [
        "MIGRATE",
        "127.0.0.1",
        &port,
        "",
        "0",
        "1000",
        "COPY",
        "KEYS",
        "l",
        "missing",
    ];
    assert_eq!(q(&mut a, &copy), ok());
    assert_eq!(q(&mut a, &["EXISTS", "l"]), Resp::Int(1));
    assert_eq!(
        q(&mut b, &["LRANGE", "l", "0", "-1"]),
        Resp::Array(vec![Resp::bulk("x"), Resp::bulk("y")])
    );
    // The target has it now: refused without REPLACE, and kept here.
    let Resp::Error(e) = q(&mut a, &["MIGRATE", "127.0.0.1", &port, "l", "0", "1000"]) else {
        panic!("BUSYKEY")
    };
    assert_eq!(
        e,
        "ERR Target instance replied with error: BUSYKEY Target key name already exists."
    );
    assert_eq!(q(&mut a, &["EXISTS", "l"]), Resp::Int(1));
    assert_eq!(
        q(
            &mut a,
            &["MIGRATE", "127.0.0.1", &port, "l", "0", "1000", "REPLACE"]
        ),
        ok()
    );
    assert_eq!(q(&mut a, &["EXISTS", "l"]), Resp::Int(0));
    assert_eq!(
        q(&mut a, &["MIGRATE", "127.0.0.1", &port, "l", "0", "1000"]),
        Resp::Simple("NOKEY".into())
    );
}

#[test]
fn migrate_errors_are_redis_words() {
    let src = TestServer::start();
    let mut a = src.raw();
    assert_eq!(q(&mut a, &["SET", "k", "v"]), ok());
    let Resp::Error(e) = q(&mut a, &["MIGRATE", "127.0.0.1", "1", "k", "0", "100"]) else {
        panic!("an error")
    };
    assert_eq!(e, "IOERR error or timeout connecting to target instance");
    let Resp::Error(e) = q(&mut a, &["MIGRATE", "h", "1", "k", "0", "100", "KEYS", "k"]) else {
        panic!("an error")
    };
    assert!(
        e.contains("the key argument must be set to the empty string"),
        "{e}"
    );
    let keys = q(
        &mut a,
        &[
            "COMMAND", "GETKEYS", "MIGRATE", "h", "1", "", "0", "5", "AUTH2", "KEYS", "p", "KEYS",
            "k1", "k2",
        ],
    );
    assert_eq!(keys, Resp::Array(vec![Resp::bulk("k1"), Resp::bulk("k2")]));
    let line = q(&mut a, &["DEBUG", "OBJECT", "k"]);
    let Resp::Simple(line) = line else {
        panic!("a status line")
    };
    assert!(
        line.starts_with("Value at:") && line.contains(" encoding:embstr "),
        "{line}"
    );
}
