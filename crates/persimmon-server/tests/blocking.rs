//! Blocking pops (BLPOP, BRPOP, BLMOVE, BRPOPLPUSH, BLMPOP, BZPOPMIN,
//! BZPOPMAX, BZMPOP) and the pops they build on, through raw connections:
//! one client blocks (its request sent, its reply not yet read), another
//! writes, and the first must get what Redis 7.0 gives it — served by the
//! write, in the order the clients blocked, in its own database only, nil
//! at its timeout or at once inside MULTI, while the other connections go
//! on; a client that leaves while blocked leaves nothing behind.
//!
//! Timing bounds here are generous on purpose (a loaded 2-core machine):
//! they tell "woke up" from "timed out" and "blocked" from "stalled", not
//! milliseconds.

mod common;

use std::time::{Duration, Instant};

use common::{encode, Raw, Resp, TestServer};

const WRONGTYPE: &str = "WRONGTYPE Operation against a key holding the wrong kind of value";

fn bulk(s: &str) -> Resp {
    Resp::bulk(s)
}

fn array(items: &[&str]) -> Resp {
    Resp::Array(items.iter().map(|s| bulk(s)).collect())
}

fn err(text: &str) -> Resp {
    Resp::Error(text.to_string())
}

fn run(c: &mut Raw, args: &[&str]) -> Resp {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.command(&args)
}

/// Sends a request without reading its reply (the client blocks).
fn send(c: &mut Raw, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send(&encode(&args)).expect("send");
}

/// `blocked_clients` of INFO.
fn blocked_clients(c: &mut Raw) -> usize {
    let Resp::Bulk(text) = run(c, &["INFO", "clients"]) else {
        panic!("INFO is a bulk string");
    };
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix("blocked_clients:"))
        .expect("INFO clients has blocked_clients")
        .trim()
        .parse()
        .unwrap()
}

/// Waits until exactly `n` clients are blocked (so the order in which
/// clients block is the order the test sent them in).
fn wait_blocked(c: &mut Raw, n: usize) {
    let until = Instant::now() + Duration::from_secs(10);
    while blocked_clients(c) != n {
        assert!(Instant::now() < until, "never {n} blocked clients");
        std::thread::sleep(Duration::from_millis(5));
    }
}

#[test]
fn a_push_from_another_connection_wakes_the_waiter_and_the_element_is_gone_at_once() {
    let server = TestServer::start();
    let (mut waiter, mut pusher) = (server.raw(), server.raw());
    send(&mut waiter, &["BLPOP", "empty", "k", "0"]);
    wait_blocked(&mut pusher, 1);
    assert_eq!(run(&mut pusher, &["RPUSH", "k", "a", "b"]), Resp::Int(2));
    // Served as part of the push, before the pusher's next command.
    assert_eq!(run(&mut pusher, &["LRANGE", "k", "0", "-1"]), array(&["b"]));
    assert_eq!(waiter.read().unwrap(), array(&["k", "a"]));
    assert_eq!(blocked_clients(&mut pusher), 0);

    // BRPOP takes from the tail; LPUSH of several wakes it once.
    send(&mut waiter, &["BRPOP", "l2", "5"]);
    wait_blocked(&mut pusher, 1);
    assert_eq!(run(&mut pusher, &["LPUSH", "l2", "x", "y"]), Resp::Int(2));
    assert_eq!(waiter.read().unwrap(), array(&["l2", "x"]));
    assert_eq!(
        run(&mut pusher, &["LRANGE", "l2", "0", "-1"]),
        array(&["y"])
    );

    // A key created by RENAME, or inside a transaction, wakes it too.
    send(&mut waiter, &["BLPOP", "target", "0"]);
    wait_blocked(&mut pusher, 1);
    run(&mut pusher, &["RPUSH", "elsewhere", "r"]);
    assert_eq!(
        run(&mut pusher, &["RENAME", "elsewhere", "target"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(waiter.read().unwrap(), array(&["target", "r"]));
    send(&mut waiter, &["BLPOP", "t2", "0"]);
    wait_blocked(&mut pusher, 1);
    run(&mut pusher, &["MULTI"]);
    run(&mut pusher, &["RPUSH", "t2", "m1", "m2"]);
    run(&mut pusher, &["LPOP", "t2"]);
    // As Redis: the transaction's own LPOP runs first, the waiter gets the
    // rest after EXEC.
    assert_eq!(
        run(&mut pusher, &["EXEC"]),
        Resp::Array(vec![Resp::Int(2), bulk("m1")])
    );
    assert_eq!(waiter.read().unwrap(), array(&["t2", "m2"]));
    assert_eq!(run(&mut pusher, &["EXISTS", "t2"]), Resp::Int(0));
}

#[test]
fn a_push_wakes_only_the_clients_blocked_on_that_key_in_that_database() {
    let server = TestServer::start();
    let (mut in3, mut in0, mut other) = (server.raw(), server.raw(), server.raw());
    assert_eq!(run(&mut in3, &["SELECT", "3"]), Resp::Simple("OK".into()));
    send(&mut in3, &["BLPOP", "k", "0"]);
    wait_blocked(&mut other, 1);
    // The same key in database 0: nobody waits there.
    assert_eq!(run(&mut in0, &["RPUSH", "k", "zero"]), Resp::Int(1));
    assert_eq!(run(&mut in0, &["LLEN", "k"]), Resp::Int(1));
    assert_eq!(blocked_clients(&mut other), 1);
    run(&mut other, &["SELECT", "3"]);
    assert_eq!(run(&mut other, &["RPUSH", "k", "three"]), Resp::Int(1));
    assert_eq!(in3.read().unwrap(), array(&["k", "three"]));
    assert_eq!(run(&mut in0, &["LRANGE", "k", "0", "-1"]), array(&["zero"]));

    // MOVE into the waiter's database, and SWAPDB, serve it as well.
    send(&mut in3, &["BLPOP", "moved", "swapped", "0"]);
    wait_blocked(&mut other, 1);
    run(&mut in0, &["RPUSH", "moved", "m"]);
    assert_eq!(run(&mut in0, &["MOVE", "moved", "3"]), Resp::Int(1));
    assert_eq!(in3.read().unwrap(), array(&["moved", "m"]));
    send(&mut in3, &["BLPOP", "moved", "swapped", "0"]);
    wait_blocked(&mut other, 1);
    run(&mut in0, &["RPUSH", "swapped", "s"]);
    assert_eq!(
        run(&mut in0, &["SWAPDB", "0", "3"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(in3.read().unwrap(), array(&["swapped", "s"]));
}

#[test]
fn clients_blocked_on_one_key_are_served_first_come_first_served() {
    let server = TestServer::start();
    let (mut first, mut second, mut third, mut pusher) =
        (server.raw(), server.raw(), server.raw(), server.raw());
    send(&mut first, &["BLPOP", "q", "0"]);
    wait_blocked(&mut pusher, 1);
    send(&mut second, &["BLPOP", "other", "q", "0"]);
    wait_blocked(&mut pusher, 2);
    send(&mut third, &["BRPOP", "q", "0"]);
    wait_blocked(&mut pusher, 3);
    // One element: the first only.
    assert_eq!(run(&mut pusher, &["RPUSH", "q", "1"]), Resp::Int(1));
    assert_eq!(first.read().unwrap(), array(&["q", "1"]));
    assert_eq!(blocked_clients(&mut pusher), 2);
    // Two at once: the second then the third, none left over.
    assert_eq!(run(&mut pusher, &["RPUSH", "q", "2", "3"]), Resp::Int(2));
    assert_eq!(second.read().unwrap(), array(&["q", "2"]));
    assert_eq!(third.read().unwrap(), array(&["q", "3"]));
    assert_eq!(run(&mut pusher, &["EXISTS", "q"]), Resp::Int(0));
}

#[test]
fn a_timeout_replies_nil_after_about_the_timeout() {
    let server = TestServer::start();
    let mut c = server.raw();
    for args in [
        &["BLPOP", "none", "0.3"][..],
        &["BRPOP", "none", "a", "0.3"],
        &["BLMOVE", "none", "dst", "LEFT", "RIGHT", "0.3"],
        &["BRPOPLPUSH", "none", "dst", "0.3"],
        &["BLMPOP", "0.3", "1", "none", "LEFT"],
        &["BZPOPMIN", "none", "0.3"],
        &["BZMPOP", "0.3", "2", "none", "z", "MAX", "COUNT", "2"],
    ] {
        let started = Instant::now();
        // Redis replies a nil array to every timed-out pop (*-1).
        assert_eq!(run(&mut c, args), Resp::Null, "{args:?}");
        let took = started.elapsed();
        assert!(
            took >= Duration::from_millis(250) && took < Duration::from_secs(5),
            "{args:?} took {took:?}"
        );
    }
    assert_eq!(blocked_clients(&mut c), 0);
    // The connection goes on as usual after a timeout.
    assert_eq!(run(&mut c, &["PING"]), Resp::Simple("PONG".into()));
}

#[test]
fn blmove_moves_what_is_pushed_and_chains_into_waiters_of_its_destination() {
    let server = TestServer::start();
    let (mut mover, mut reader, mut pusher) = (server.raw(), server.raw(), server.raw());
    send(&mut mover, &["BLMOVE", "src", "dst", "RIGHT", "LEFT", "0"]);
    wait_blocked(&mut pusher, 1);
    assert_eq!(run(&mut pusher, &["RPUSH", "src", "a", "b"]), Resp::Int(2));
    assert_eq!(mover.read().unwrap(), bulk("b"));
    assert_eq!(
        run(&mut pusher, &["LRANGE", "src", "0", "-1"]),
        array(&["a"])
    );
    assert_eq!(
        run(&mut pusher, &["LRANGE", "dst", "0", "-1"]),
        array(&["b"])
    );

    // A BLPOP waiting on the destination gets what the BLMOVE moved.
    run(&mut pusher, &["DEL", "src", "dst"]);
    send(&mut reader, &["BLPOP", "dst", "0"]);
    wait_blocked(&mut pusher, 1);
    send(&mut mover, &["BRPOPLPUSH", "src", "dst", "0"]);
    wait_blocked(&mut pusher, 2);
    assert_eq!(run(&mut pusher, &["RPUSH", "src", "x"]), Resp::Int(1));
    assert_eq!(mover.read().unwrap(), bulk("x"));
    assert_eq!(reader.read().unwrap(), array(&["dst", "x"]));
    assert_eq!(run(&mut pusher, &["EXISTS", "src", "dst"]), Resp::Int(0));

    // Onto a destination of another type: the waiter gets WRONGTYPE and
    // the element stays where it was pushed.
    run(&mut pusher, &["SET", "str", "v"]);
    send(&mut mover, &["BLMOVE", "src", "str", "LEFT", "LEFT", "0"]);
    wait_blocked(&mut pusher, 1);
    run(&mut pusher, &["RPUSH", "src", "kept"]);
    assert_eq!(mover.read().unwrap(), err(WRONGTYPE));
    assert_eq!(
        run(&mut pusher, &["LRANGE", "src", "0", "-1"]),
        array(&["kept"])
    );

    // Onto its own source: a rotation, the list stays.
    run(&mut pusher, &["DEL", "src"]);
    send(&mut mover, &["BLMOVE", "src", "src", "LEFT", "RIGHT", "0"]);
    wait_blocked(&mut pusher, 1);
    run(&mut pusher, &["RPUSH", "src", "only"]);
    assert_eq!(mover.read().unwrap(), bulk("only"));
    assert_eq!(
        run(&mut pusher, &["LRANGE", "src", "0", "-1"]),
        array(&["only"])
    );
}

#[test]
fn bzpopmin_bzpopmax_and_bzmpop_wake_on_zadd_in_both_protocols() {
    let server = TestServer::start();
    let (mut waiter, mut writer) = (server.raw(), server.raw());
    send(&mut waiter, &["BZPOPMIN", "z1", "z2", "0"]);
    wait_blocked(&mut writer, 1);
    assert_eq!(
        run(&mut writer, &["ZADD", "z2", "2", "b", "1", "a"]),
        Resp::Int(2)
    );
    assert_eq!(waiter.read().unwrap(), array(&["z2", "a", "1"]));
    send(&mut waiter, &["BZPOPMAX", "z3", "0"]);
    wait_blocked(&mut writer, 1);
    run(&mut writer, &["ZADD", "z3", "1.5", "x", "7", "y"]);
    assert_eq!(waiter.read().unwrap(), array(&["z3", "y", "7"]));
    send(
        &mut waiter,
        &["BZMPOP", "0", "1", "z4", "MIN", "COUNT", "5"],
    );
    wait_blocked(&mut writer, 1);
    run(&mut writer, &["ZADD", "z4", "3", "c", "1", "a"]);
    assert_eq!(
        waiter.read().unwrap(),
        Resp::Array(vec![
            bulk("z4"),
            Resp::Array(vec![array(&["a", "1"]), array(&["c", "3"])])
        ])
    );
    // A BLPOP waiter ahead on a key that becomes a sorted set keeps
    // waiting; the BZPOPMIN behind it is served.
    let mut list_waiter = server.raw();
    send(&mut list_waiter, &["BLPOP", "mixed", "0"]);
    wait_blocked(&mut writer, 1);
    send(&mut waiter, &["BZPOPMIN", "mixed", "0"]);
    wait_blocked(&mut writer, 2);
    run(&mut writer, &["ZADD", "mixed", "4", "m"]);
    assert_eq!(waiter.read().unwrap(), array(&["mixed", "m", "4"]));
    assert_eq!(blocked_clients(&mut writer), 1);
    run(&mut writer, &["RPUSH", "mixed", "l"]);
    assert_eq!(list_waiter.read().unwrap(), array(&["mixed", "l"]));

    // RESP3: the score is a double.
    let mut resp3 = server.raw();
    resp3.send(&encode(&[b"HELLO", b"3"])).unwrap();
    resp3.read().unwrap();
    send(&mut resp3, &["BZPOPMIN", "z5", "0"]);
    wait_blocked(&mut writer, 1);
    run(&mut writer, &["ZADD", "z5", "2.5", "m"]);
    assert_eq!(
        resp3.read().unwrap(),
        Resp::Array(vec![bulk("z5"), bulk("m"), Resp::Other(",2.5".into())])
    );
}

#[test]
fn inside_multi_a_blocking_command_replies_nil_at_once() {
    let server = TestServer::start();
    let mut c = server.raw();
    run(&mut c, &["MULTI"]);
    for args in [
        &["BLPOP", "none", "0"][..],
        &["BLMOVE", "none", "d", "LEFT", "LEFT", "0"],
        &["BRPOPLPUSH", "none", "d", "0"],
        &["BLMPOP", "0", "1", "none", "RIGHT"],
        &["BZPOPMAX", "none", "0"],
        &["BZMPOP", "0", "1", "none", "MIN"],
        &["RPUSH", "full", "f"],
        &["BLPOP", "full", "0"],
    ] {
        assert_eq!(run(&mut c, args), Resp::Simple("QUEUED".into()));
    }
    let started = Instant::now();
    assert_eq!(
        run(&mut c, &["EXEC"]),
        Resp::Array(vec![
            Resp::Null,
            Resp::Null,
            Resp::Null,
            Resp::Null,
            Resp::Null,
            Resp::Null,
            Resp::Int(1),
            array(&["full", "f"]),
        ])
    );
    assert!(started.elapsed() < Duration::from_secs(5));
    // Nil bulk string for BLMOVE, nil array for the others (RESP2).
    run(&mut c, &["MULTI"]);
    run(&mut c, &["BLMOVE", "none", "d", "LEFT", "LEFT", "0"]);
    run(&mut c, &["BLPOP", "none", "0"]);
    c.send(&encode(&[b"EXEC"])).unwrap();
    let mut line = String::new();
    std::io::BufRead::read_line(&mut c.reader, &mut line).unwrap();
    assert_eq!(line, "*2\r\n");
    line.clear();
    std::io::BufRead::read_line(&mut c.reader, &mut line).unwrap();
    assert_eq!(line, "$-1\r\n");
    line.clear();
    std::io::BufRead::read_line(&mut c.reader, &mut line).unwrap();
    assert_eq!(line, "*-1\r\n");
}

#[test]
fn a_blocked_client_does_not_stall_the_others_on_its_worker() {
    // One worker thread: every connection shares it.
    let server = TestServer::start_with(|c| c.worker_threads = 1);
    let (mut blocked, mut busy) = (server.raw(), server.raw());
    send(&mut blocked, &["BLPOP", "never", "0"]);
    wait_blocked(&mut busy, 1);
    let started = Instant::now();
    for i in 0..200 {
        let v = i.to_string();
        assert_eq!(run(&mut busy, &["SET", "k", &v]), Resp::Simple("OK".into()));
        assert_eq!(run(&mut busy, &["GET", "k"]), bulk(&v));
    }
    assert!(
        started.elapsed() < Duration::from_secs(10),
        "400 commands took {:?}",
        started.elapsed()
    );
    // Commands sent by the blocked client meanwhile run after its reply,
    // in order.
    send(&mut blocked, &["PING"]);
    run(&mut busy, &["RPUSH", "never", "now"]);
    assert_eq!(blocked.read().unwrap(), array(&["never", "now"]));
    assert_eq!(blocked.read().unwrap(), Resp::Simple("PONG".into()));
}

#[test]
fn a_client_that_disconnects_while_blocked_is_forgotten() {
    let server = TestServer::start();
    let mut other = server.raw();
    {
        let mut gone = server.raw();
        send(&mut gone, &["BLPOP", "k", "0"]);
        wait_blocked(&mut other, 1);
        let mut gone_too = server.raw();
        send(&mut gone_too, &["BLMOVE", "k", "d", "LEFT", "LEFT", "0"]);
        wait_blocked(&mut other, 2);
    }
    wait_blocked(&mut other, 0);
    // Nobody takes the element now.
    assert_eq!(run(&mut other, &["RPUSH", "k", "a"]), Resp::Int(1));
    assert_eq!(run(&mut other, &["LRANGE", "k", "0", "-1"]), array(&["a"]));
    assert_eq!(run(&mut other, &["EXISTS", "d"]), Resp::Int(0));
}

#[test]
fn the_server_stops_cleanly_with_clients_blocked_forever() {
    let mut server = TestServer::start();
    let (mut waiter, mut other) = (server.raw(), server.raw());
    send(&mut waiter, &["BLPOP", "k", "0"]);
    send(&mut other, &["BZPOPMIN", "z", "0"]);
    let mut admin = server.raw();
    wait_blocked(&mut admin, 2);
    let started = Instant::now();
    server.stop();
    assert!(started.elapsed() < Duration::from_secs(10));
    assert!(waiter.closed());
}

#[test]
fn client_unblock_ends_a_wait_as_a_timeout_or_an_error() {
    let server = TestServer::start();
    let (mut waiter, mut admin) = (server.raw(), server.raw());
    let Resp::Int(id) = run(&mut waiter, &["CLIENT", "ID"]) else {
        panic!("CLIENT ID is an integer");
    };
    let id = id.to_string();
    assert_eq!(run(&mut admin, &["CLIENT", "UNBLOCK", &id]), Resp::Int(0));
    send(&mut waiter, &["BLPOP", "k", "0"]);
    wait_blocked(&mut admin, 1);
    assert_eq!(run(&mut admin, &["CLIENT", "UNBLOCK", &id]), Resp::Int(1));
    assert_eq!(waiter.read().unwrap(), Resp::Null);
    send(&mut waiter, &["BZPOPMIN", "k", "0"]);
    wait_blocked(&mut admin, 1);
    assert_eq!(
        run(&mut admin, &["CLIENT", "UNBLOCK", &id, "ERROR"]),
        Resp::Int(1)
    );
    assert_eq!(
        waiter.read().unwrap(),
        err("UNBLOCKED client unblocked via CLIENT UNBLOCK")
    );
    assert_eq!(
        run(&mut admin, &["CLIENT", "UNBLOCK", &id, "MAYBE"]),
        err("ERR CLIENT UNBLOCK reason should be TIMEOUT or ERROR")
    );
}

#[test]
fn the_non_blocking_pops_reply_as_redis() {
    let server = TestServer::start();
    let mut c = server.raw();
    run(&mut c, &["RPUSH", "l", "a", "b", "c"]);
    assert_eq!(
        run(&mut c, &["LMOVE", "l", "m", "LEFT", "RIGHT"]),
        bulk("a")
    );
    assert_eq!(run(&mut c, &["RPOPLPUSH", "l", "m"]), bulk("c"));
    assert_eq!(run(&mut c, &["LRANGE", "m", "0", "-1"]), array(&["c", "a"]));
    assert_eq!(
        run(&mut c, &["LMOVE", "l", "l", "LEFT", "RIGHT"]),
        bulk("b")
    );
    assert_eq!(
        run(&mut c, &["LMOVE", "none", "m", "LEFT", "LEFT"]),
        Resp::Null
    );
    assert_eq!(
        run(&mut c, &["LMOVE", "l", "m", "UP", "LEFT"]),
        err("ERR syntax error")
    );
    run(&mut c, &["SET", "s", "v"]);
    assert_eq!(
        run(&mut c, &["LMOVE", "l", "s", "LEFT", "LEFT"]),
        err(WRONGTYPE)
    );
    assert_eq!(
        run(&mut c, &["LMOVE", "s", "l", "LEFT", "LEFT"]),
        err(WRONGTYPE)
    );
    assert_eq!(
        run(&mut c, &["LMOVE", "none", "s", "LEFT", "LEFT"]),
        Resp::Null
    );
    assert_eq!(run(&mut c, &["LLEN", "l"]), Resp::Int(1));

    assert_eq!(
        run(
            &mut c,
            &["LMPOP", "3", "none", "m", "l", "RIGHT", "COUNT", "5"]
        ),
        Resp::Array(vec![bulk("m"), array(&["a", "c"])])
    );
    assert_eq!(run(&mut c, &["LMPOP", "1", "m", "LEFT"]), Resp::Null);
    assert_eq!(
        run(&mut c, &["LMPOP", "2", "none", "l", "LEFT"]),
        Resp::Array(vec![bulk("l"), array(&["b"])])
    );
    for (args, text) in [
        (
            &["LMPOP", "0", "l", "LEFT"][..],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["LMPOP", "x", "l", "LEFT"],
            "ERR numkeys should be greater than 0",
        ),
        (&["LMPOP", "5", "l", "LEFT"], "ERR syntax error"),
        (&["LMPOP", "1", "l", "UP"], "ERR syntax error"),
        (
            &["LMPOP", "1", "l", "LEFT", "COUNT", "0"],
            "ERR count should be greater than 0",
        ),
        (
            &["LMPOP", "1", "l", "LEFT", "COUNT", "1", "COUNT", "2"],
            "ERR syntax error",
        ),
        (&["LMPOP", "1", "s", "LEFT"], WRONGTYPE),
        (&["BLPOP", "l", "-1"], "ERR timeout is negative"),
        (
            &["BLPOP", "l", "x"],
            "ERR timeout is not a float or out of range",
        ),
        (&["BLPOP", "s", "0"], WRONGTYPE),
        (
            &["BLMPOP", "0", "0", "l", "LEFT"],
            "ERR numkeys should be greater than 0",
        ),
        (
            &["BLMPOP", "x", "1", "l", "LEFT"],
            "ERR timeout is not a float or out of range",
        ),
        (&["BZPOPMIN", "s", "0"], WRONGTYPE),
        (
            &["ZPOPMIN", "z", "-1"],
            "ERR value is out of range, must be positive",
        ),
        (&["ZPOPMIN", "z", "1", "2"], "ERR syntax error"),
        (&["ZMPOP", "1", "z", "MIDDLE"], "ERR syntax error"),
        (
            &["BZMPOP", "0", "1", "z", "MIN", "COUNT", "-2"],
            "ERR count should be greater than 0",
        ),
    ] {
        assert_eq!(run(&mut c, args), err(text), "{args:?}");
    }

    run(&mut c, &["ZADD", "z", "1", "a", "2", "b", "3", "c"]);
    assert_eq!(run(&mut c, &["ZPOPMIN", "z"]), array(&["a", "1"]));
    assert_eq!(
        run(&mut c, &["ZPOPMAX", "z", "5"]),
        array(&["c", "3", "b", "2"])
    );
    assert_eq!(run(&mut c, &["ZPOPMIN", "z"]), Resp::Array(vec![]));
    assert_eq!(run(&mut c, &["ZMPOP", "1", "z", "MIN"]), Resp::Null);
    run(&mut c, &["ZADD", "z", "1", "a", "2", "b"]);
    assert_eq!(run(&mut c, &["ZPOPMIN", "z", "0"]), Resp::Array(vec![]));
    assert_eq!(
        run(&mut c, &["ZMPOP", "2", "none", "z", "MAX", "COUNT", "1"]),
        Resp::Array(vec![bulk("z"), Resp::Array(vec![array(&["b", "2"])])])
    );
    assert_eq!(run(&mut c, &["ZPOPMIN", "s"]), err(WRONGTYPE));
    // RESP3: with a count ZPOPMIN nests its pairs; scores are doubles.
    run(&mut c, &["HELLO", "3"]);
    run(&mut c, &["ZADD", "z", "2", "b"]);
    assert_eq!(
        run(&mut c, &["ZPOPMIN", "z", "2"]),
        Resp::Array(vec![
            Resp::Array(vec![bulk("a"), Resp::Other(",1".into())]),
            Resp::Array(vec![bulk("b"), Resp::Other(",2".into())]),
        ])
    );
    run(&mut c, &["ZADD", "z", "3", "c"]);
    assert_eq!(
        run(&mut c, &["ZPOPMAX", "z"]),
        Resp::Array(vec![bulk("c"), Resp::Other(",3".into())])
    );
}
