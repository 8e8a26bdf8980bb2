//! Pub/sub over raw RESP, as Redis's own tests (`tests/unit/pubsub.tcl`)
//! expect it: SUBSCRIBE/UNSUBSCRIBE/PSUBSCRIBE/PUNSUBSCRIBE confirmations
//! and counts, PUBLISH's receiver count, message and pmessage frames,
//! RESP2's subscribed mode (only the pub/sub commands, PING, QUIT and
//! RESET; PING's `["pong", ""]`), RESP3 pushes, publish order across
//! publishers and subscribers, PUBSUB CHANNELS/NUMSUB/NUMPAT, INFO and
//! CLIENT LIST fields, subscriptions ending with their connection, and a
//! subscriber that reads nothing being disconnected at the `pubsub` output
//! limit while the publisher goes on.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Resp, TestServer};

fn b(s: &str) -> Resp {
    Resp::bulk(s)
}

fn arr(items: Vec<Resp>) -> Resp {
    Resp::Array(items)
}

fn cmd(c: &mut Raw, args: &[&str]) -> Resp {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.command(&args)
}

fn send(c: &mut Raw, args: &[&str]) {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    c.send(&common::encode(&args)).unwrap();
}

fn confirm(kind: &str, channel: &str, count: i64) -> Resp {
    arr(vec![b(kind), b(channel), Resp::Int(count)])
}

fn message(channel: &str, payload: &str) -> Resp {
    arr(vec![b("message"), b(channel), b(payload)])
}

fn pmessage(pattern: &str, channel: &str, payload: &str) -> Resp {
    arr(vec![b("pmessage"), b(pattern), b(channel), b(payload)])
}

/// Waits until `f` holds (the server acts on a closed socket soon after).
fn eventually(what: &str, mut f: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !f() {
        assert!(Instant::now() < deadline, "never: {what}");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn subscribe_publish_unsubscribe_basics() {
    let server = TestServer::start();
    let mut sub = server.raw();
    let mut pubr = server.raw();
    send(&mut sub, &["SUBSCRIBE", "chan1", "chan2"]);
    assert_eq!(sub.read().unwrap(), confirm("subscribe", "chan1", 1));
    assert_eq!(sub.read().unwrap(), confirm("subscribe", "chan2", 2));
    assert_eq!(cmd(&mut pubr, &["PUBLISH", "chan1", "hello"]), Resp::Int(1));
    assert_eq!(cmd(&mut pubr, &["PUBLISH", "chan2", "world"]), Resp::Int(1));
    assert_eq!(sub.read().unwrap(), message("chan1", "hello"));
    assert_eq!(sub.read().unwrap(), message("chan2", "world"));
    // Subscribing twice is one subscription.
    assert_eq!(
        cmd(&mut sub, &["SUBSCRIBE", "chan1"]),
        confirm("subscribe", "chan1", 2)
    );
    assert_eq!(cmd(&mut pubr, &["PUBLISH", "chan1", "once"]), Resp::Int(1));
    assert_eq!(sub.read().unwrap(), message("chan1", "once"));
    assert_eq!(
        cmd(&mut sub, &["UNSUBSCRIBE", "chan1"]),
        confirm("unsubscribe", "chan1", 1)
    );
    assert_eq!(cmd(&mut pubr, &["PUBLISH", "chan1", "x"]), Resp::Int(0));
    // Not subscribed: still one reply each, with the count.
    assert_eq!(
        cmd(&mut sub, &["UNSUBSCRIBE", "foo"]),
        confirm("unsubscribe", "foo", 1)
    );
    // Without arguments: every channel, then a null when none is left.
    assert_eq!(
        cmd(&mut sub, &["UNSUBSCRIBE"]),
        confirm("unsubscribe", "chan2", 0)
    );
    assert_eq!(
        cmd(&mut sub, &["UNSUBSCRIBE"]),
        arr(vec![b("unsubscribe"), Resp::Null, Resp::Int(0)])
    );
    assert_eq!(
        cmd(&mut sub, &["PUNSUBSCRIBE"]),
        arr(vec![b("punsubscribe"), Resp::Null, Resp::Int(0)])
    );
    // Out of subscribed mode: any command again.
    assert_eq!(cmd(&mut sub, &["SET", "k", "v"]), Resp::Simple("OK".into()));
}

#[test]
fn patterns_and_channels_both_deliver_and_are_counted() {
    let server = TestServer::start();
    let mut s1 = server.raw();
    let mut s2 = server.raw();
    let mut p = server.raw();
    send(&mut s1, &["PSUBSCRIBE", "foo.*", "bar.*"]);
    assert_eq!(s1.read().unwrap(), confirm("psubscribe", "foo.*", 1));
    assert_eq!(s1.read().unwrap(), confirm("psubscribe", "bar.*", 2));
    assert_eq!(
        cmd(&mut s1, &["SUBSCRIBE", "foo.1"]),
        confirm("subscribe", "foo.1", 3)
    );
    assert_eq!(
        cmd(&mut s2, &["PSUBSCRIBE", "foo.*"]),
        confirm("psubscribe", "foo.*", 1)
    );
    assert_eq!(
        cmd(&mut p, &["PUBSUB", "NUMPAT"]),
        Resp::Int(2),
        "unique patterns"
    );
    // s1 by channel and by pattern, s2 by pattern: 3 deliveries.
    assert_eq!(cmd(&mut p, &["PUBLISH", "foo.1", "m"]), Resp::Int(3));
    let got = [s1.read().unwrap(), s1.read().unwrap()];
    assert!(got.contains(&message("foo.1", "m")), "{got:?}");
    assert!(got.contains(&pmessage("foo.*", "foo.1", "m")), "{got:?}");
    assert_eq!(s2.read().unwrap(), pmessage("foo.*", "foo.1", "m"));
    assert_eq!(cmd(&mut p, &["PUBLISH", "bar.x", "n"]), Resp::Int(1));
    assert_eq!(s1.read().unwrap(), pmessage("bar.*", "bar.x", "n"));
    assert_eq!(cmd(&mut p, &["PUBLISH", "baz", "n"]), Resp::Int(0));
    assert_eq!(
        cmd(&mut s1, &["PUNSUBSCRIBE", "foo.*"]),
        confirm("punsubscribe", "foo.*", 2)
    );
    assert_eq!(cmd(&mut p, &["PUBSUB", "NUMPAT"]), Resp::Int(2));
    assert_eq!(
        cmd(&mut s2, &["PUNSUBSCRIBE"]),
        confirm("punsubscribe", "foo.*", 0)
    );
    assert_eq!(cmd(&mut p, &["PUBSUB", "NUMPAT"]), Resp::Int(1));
    assert_eq!(cmd(&mut p, &["PUBLISH", "foo.2", "o"]), Resp::Int(0));
}

#[test]
fn resp2_subscribed_mode_allows_only_pubsub_ping_quit_reset() {
    let server = TestServer::start();
    let mut c = server.raw();
    assert_eq!(
        cmd(&mut c, &["SUBSCRIBE", "ch"]),
        confirm("subscribe", "ch", 1)
    );
    assert_eq!(
        cmd(&mut c, &["GET", "k"]),
        Resp::Error(
            "ERR Can't execute 'get': only (P|S)SUBSCRIBE / (P|S)UNSUBSCRIBE / PING / QUIT / \
             RESET are allowed in this context"
                .into()
        )
    );
    assert_eq!(cmd(&mut c, &["PING"]), arr(vec![b("pong"), b("")]));
    assert_eq!(cmd(&mut c, &["PING", "hi"]), arr(vec![b("pong"), b("hi")]));
    assert_eq!(cmd(&mut c, &["RESET"]), Resp::Simple("RESET".into()));
    assert_eq!(cmd(&mut c, &["PING"]), Resp::Simple("PONG".into()));
    let mut p = server.raw();
    assert_eq!(
        cmd(&mut p, &["PUBLISH", "ch", "x"]),
        Resp::Int(0),
        "RESET unsubscribed"
    );
    assert_eq!(
        cmd(&mut c, &["PSUBSCRIBE", "a*"]),
        confirm("psubscribe", "a*", 1)
    );
    assert_eq!(cmd(&mut c, &["QUIT"]), Resp::Simple("OK".into()));
    assert!(c.closed());
}

#[test]
fn resp3_gets_pushes_and_may_run_any_command() {
    let server = TestServer::start();
    let mut c = server.raw();
    assert!(matches!(cmd(&mut c, &["HELLO", "3"]), Resp::Map(_)));
    assert_eq!(
        cmd(&mut c, &["SUBSCRIBE", "ch"]),
        Resp::Push(vec![b("subscribe"), b("ch"), Resp::Int(1)])
    );
    assert_eq!(cmd(&mut c, &["SET", "k", "v"]), Resp::Simple("OK".into()));
    assert_eq!(cmd(&mut c, &["PING"]), Resp::Simple("PONG".into()));
    // A message to itself arrives before PUBLISH's reply, as in Redis.
    send(&mut c, &["PUBLISH", "ch", "self"]);
    assert_eq!(
        c.read().unwrap(),
        Resp::Push(vec![b("message"), b("ch"), b("self")])
    );
    assert_eq!(c.read().unwrap(), Resp::Int(1));
    // Messages published before a command go before its reply.
    let mut p = server.raw();
    assert_eq!(cmd(&mut p, &["PUBLISH", "ch", "other"]), Resp::Int(1));
    send(&mut c, &["GET", "k"]);
    assert_eq!(
        c.read().unwrap(),
        Resp::Push(vec![b("message"), b("ch"), b("other")])
    );
    assert_eq!(c.read().unwrap(), b("v"));
    assert_eq!(
        cmd(&mut c, &["UNSUBSCRIBE"]),
        Resp::Push(vec![b("unsubscribe"), b("ch"), Resp::Int(0)])
    );
}

#[test]
fn every_subscriber_sees_one_order_the_publishers_order() {
    let server = TestServer::start();
    let mut subs: Vec<Raw> = (0..3).map(|_| server.raw()).collect();
    for s in &mut subs {
        assert_eq!(
            cmd(s, &["PSUBSCRIBE", "ch*"]),
            confirm("psubscribe", "ch*", 1)
        );
    }
    const EACH: usize = 2000;
    let publishers: Vec<_> = (0..2)
        .map(|p| {
            let addr = server.addr;
            std::thread::spawn(move || {
                let mut c = Raw::connect(addr);
                // Pipelined, so the two publishers interleave at random.
                let mut batch = Vec::new();
                for i in 0..EACH {
                    let payload = format!("{p}:{i}");
                    batch.extend(common::encode(&[b"PUBLISH", b"chx", payload.as_bytes()]));
                }
                c.send(&batch).unwrap();
                for _ in 0..EACH {
                    assert_eq!(c.read().unwrap(), Resp::Int(3));
                }
            })
        })
        .collect();
    for t in publishers {
        t.join().unwrap();
    }
    let mut orders = Vec::new();
    for s in &mut subs {
        let mut order = Vec::new();
        let mut next = [0usize; 2];
        for _ in 0..2 * EACH {
            let Resp::Array(parts) = s.read().unwrap() else {
                panic!("not a message")
            };
            let Resp::Bulk(payload) = &parts[3] else {
                panic!("{parts:?}")
            };
            let text = String::from_utf8(payload.clone()).unwrap();
            let (p, i) = text.split_once(':').unwrap();
            let (p, i): (usize, usize) = (p.parse().unwrap(), i.parse().unwrap());
            assert_eq!(i, next[p], "publisher {p}'s messages in its order");
            next[p] += 1;
            order.push(text);
        }
        orders.push(order);
    }
    assert_eq!(orders[0], orders[1], "one order for every subscriber");
    assert_eq!(orders[0], orders[2]);
}

#[test]
fn introspection_info_and_client_list() {
    let server = TestServer::start();
    let mut s1 = server.raw();
    let mut s2 = server.raw();
    let mut c = server.raw();
    send(&mut s1, &["SUBSCRIBE", "news.a", "news.b", "other"]);
    for _ in 0..3 {
        s1.read().unwrap();
    }
    assert_eq!(
        cmd(&mut s2, &["SUBSCRIBE", "news.a"]),
        confirm("subscribe", "news.a", 1)
    );
    assert_eq!(
        cmd(&mut s2, &["PSUBSCRIBE", "x*"]),
        confirm("psubscribe", "x*", 2)
    );
    let Resp::Array(mut all) = cmd(&mut c, &["PUBSUB", "CHANNELS"]) else {
        panic!()
    };
    all.sort_by_key(|r| format!("{r:?}"));
    assert_eq!(all, vec![b("news.a"), b("news.b"), b("other")]);
    assert_eq!(
        cmd(&mut c, &["PUBSUB", "CHANNELS", "news.*"]),
        arr(vec![b("news.a"), b("news.b")])
    );
    assert_eq!(
        cmd(&mut c, &["PUBSUB", "NUMSUB", "news.a", "other", "none"]),
        arr(vec![
            b("news.a"),
            Resp::Int(2),
            b("other"),
            Resp::Int(1),
            b("none"),
            Resp::Int(0)
        ])
    );
    assert_eq!(cmd(&mut c, &["PUBSUB", "NUMSUB"]), arr(vec![]));
    assert_eq!(cmd(&mut c, &["PUBSUB", "SHARDCHANNELS"]), arr(vec![]));
    assert!(
        matches!(cmd(&mut c, &["PUBSUB", "NOPE"]), Resp::Error(e) if e.contains("unknown subcommand"))
    );
    let Resp::Bulk(info) = cmd(&mut c, &["INFO", "stats"]) else {
        panic!()
    };
    let info = String::from_utf8(info).unwrap();
    assert!(info.contains("pubsub_channels:3\r\n"), "{info}");
    assert!(info.contains("pubsub_patterns:1\r\n"), "{info}");
    let Resp::Bulk(list) = cmd(&mut c, &["CLIENT", "LIST"]) else {
        panic!()
    };
    let list = String::from_utf8(list).unwrap();
    assert!(list.contains("flags=P db=0 sub=3 psub=0"), "{list}");
    assert!(list.contains("flags=P db=0 sub=1 psub=1"), "{list}");
    assert!(list.contains("flags=N db=0 sub=0 psub=0"), "{list}");
    let Resp::Bulk(pubsub_only) = cmd(&mut c, &["CLIENT", "LIST", "TYPE", "pubsub"]) else {
        panic!()
    };
    assert_eq!(String::from_utf8(pubsub_only).unwrap().lines().count(), 2);
    let Resp::Bulk(normal) = cmd(&mut c, &["CLIENT", "LIST", "TYPE", "normal"]) else {
        panic!()
    };
    assert_eq!(String::from_utf8(normal).unwrap().lines().count(), 1);
    // A closed connection's subscriptions go with it.
    drop(s1);
    eventually("s1's channels are gone", || {
        cmd(&mut c, &["PUBSUB", "NUMSUB", "news.a", "news.b"])
            == arr(vec![b("news.a"), Resp::Int(1), b("news.b"), Resp::Int(0)])
    });
}

#[test]
fn a_subscriber_that_reads_nothing_is_dropped_at_the_pubsub_limit() {
    let server = TestServer::start();
    let mut admin = server.raw();
    assert_eq!(
        cmd(
            &mut admin,
            &[
                "CONFIG",
                "SET",
                "client-output-buffer-limit",
                "pubsub 1mb 0 0"
            ]
        ),
        Resp::Simple("OK".into())
    );
    let mut slow = server.raw();
    assert_eq!(
        cmd(&mut slow, &["SUBSCRIBE", "firehose"]),
        confirm("subscribe", "firehose", 1)
    );
    let mut fast = server.raw();
    assert_eq!(
        cmd(&mut fast, &["SUBSCRIBE", "firehose"]),
        confirm("subscribe", "firehose", 1)
    );
    // The other subscriber reads everything on a thread of its own; the
    // publisher waits for it after each message (so only the subscriber
    // that reads nothing falls behind).
    let (got, seen) = std::sync::mpsc::channel();
    let reader = std::thread::spawn(move || {
        for _ in 0..600 {
            match fast.read() {
                Some(Resp::Array(_)) => got.send(()).unwrap(),
                other => panic!("{other:?}"),
            }
        }
        fast
    });
    let mut publisher = server.raw();
    let payload = "x".repeat(64 << 10);
    let started = Instant::now();
    for _ in 0..600 {
        // About 38 MiB in all: far more than the socket buffers hold.
        let Resp::Int(n) = cmd(&mut publisher, &["PUBLISH", "firehose", &payload]) else {
            panic!()
        };
        assert!((1..=2).contains(&n));
        seen.recv().unwrap();
    }
    assert!(
        started.elapsed() < Duration::from_secs(30),
        "the publisher was never held up"
    );
    let _fast = reader.join().unwrap();
    assert!(slow.closed(), "the subscriber that read nothing was closed");
    eventually("the slow subscriber's subscription is gone", || {
        cmd(&mut admin, &["PUBSUB", "NUMSUB", "firehose"]) == arr(vec![b("firehose"), Resp::Int(1)])
    });
}

#[test]
fn client_reply_off_and_skip_silence_replies_but_not_pubsub() {
    let server = TestServer::start();
    let mut c = server.raw();
    // SKIP: the next command's reply is dropped, then replies again.
    send(&mut c, &["CLIENT", "REPLY", "SKIP"]);
    send(&mut c, &["SET", "k", "skipped"]);
    assert_eq!(cmd(&mut c, &["GET", "k"]), b("skipped"));
    // OFF: nothing until ON (whose OK is the next reply); errors too.
    send(&mut c, &["CLIENT", "REPLY", "OFF"]);
    send(&mut c, &["SET", "k", "v2"]);
    send(&mut c, &["NOSUCHCOMMAND"]);
    // Pub/sub confirmations and messages are sent all the same.
    send(&mut c, &["SUBSCRIBE", "ch"]);
    assert_eq!(c.read().unwrap(), confirm("subscribe", "ch", 1));
    let mut p = server.raw();
    assert_eq!(cmd(&mut p, &["PUBLISH", "ch", "m"]), Resp::Int(1));
    assert_eq!(c.read().unwrap(), message("ch", "m"));
    assert_eq!(
        cmd(&mut c, &["UNSUBSCRIBE"]),
        confirm("unsubscribe", "ch", 0)
    );
    assert_eq!(
        cmd(&mut c, &["CLIENT", "REPLY", "ON"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(cmd(&mut c, &["GET", "k"]), b("v2"));
    assert_eq!(
        cmd(&mut c, &["CLIENT", "REPLY", "MAYBE"]),
        Resp::Error("ERR syntax error".into())
    );
}

/// PUBLISH goes to the replicas as Redis propagates it: a subscriber of a
/// Persimmon replica gets what is published on its master.
#[test]
fn publish_on_a_master_reaches_the_subscribers_of_its_replica() {
    let master = TestServer::start();
    let replica = TestServer::start();
    let mut r = replica.raw();
    let port = master.addr.port().to_string();
    assert_eq!(
        cmd(&mut r, &["REPLICAOF", "127.0.0.1", &port]),
        Resp::Simple("OK".into())
    );
    eventually("the link to come up", || {
        let Resp::Bulk(info) = cmd(&mut r, &["INFO", "replication"]) else {
            return false;
        };
        String::from_utf8_lossy(&info).contains("master_link_status:up")
    });
    let mut sub = replica.raw();
    assert_eq!(
        cmd(&mut sub, &["SUBSCRIBE", "news"]),
        confirm("subscribe", "news", 1)
    );
    let mut m = master.raw();
    assert_eq!(
        cmd(&mut m, &["PUBLISH", "news", "from the master"]),
        Resp::Int(0)
    );
    assert_eq!(sub.read().unwrap(), message("news", "from the master"));
    // A replica's own PUBLISH is local (and allowed on a read-only replica).
    assert_eq!(cmd(&mut r, &["PUBLISH", "news", "local"]), Resp::Int(1));
    assert_eq!(sub.read().unwrap(), message("news", "local"));
}

/// The next message `sub` receives.
fn next(sub: &mut Raw) -> Resp {
    sub.read().unwrap()
}

#[test]
fn keyspace_notifications_follow_the_classes_and_commit() {
    let server = TestServer::start();
    let mut sub = server.raw();
    let mut c = server.raw();
    let ok = Resp::Simple("OK".into());
    let ev = |kind: &str, key: &str| pmessage("*", &format!("__keyevent@0__:{kind}"), key);
    let sp = |key: &str, kind: &str| pmessage("*", &format!("__keyspace@0__:{key}"), kind);
    assert_eq!(
        cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KEA"]),
        ok
    );
    assert_eq!(
        cmd(&mut c, &["CONFIG", "GET", "notify-keyspace-events"]),
        arr(vec![b("notify-keyspace-events"), b("AKE")])
    );
    assert_eq!(
        cmd(&mut sub, &["PSUBSCRIBE", "*"]),
        confirm("psubscribe", "*", 1)
    );
    // Pipelined SETs (the grouped-write fast path is off while classes
    // are on): each notifies, keyspace then keyevent.
    send(&mut c, &["SET", "a", "1"]);
    send(&mut c, &["SET", "b", "2", "EX", "100"]);
    assert_eq!(
        (c.read().unwrap(), c.read().unwrap()),
        (ok.clone(), ok.clone())
    );
    for want in [
        sp("a", "set"),
        ev("set", "a"),
        sp("b", "set"),
        ev("set", "b"),
        sp("b", "expire"),
        ev("expire", "b"),
    ] {
        assert_eq!(next(&mut sub), want);
    }
    // A transaction's events leave after its commit, in order; a command
    // that changed nothing sends none.
    cmd(&mut c, &["MULTI"]);
    cmd(&mut c, &["RPUSH", "l", "x"]);
    cmd(&mut c, &["SREM", "nosuch", "m"]);
    cmd(&mut c, &["RPOP", "l"]);
    cmd(&mut c, &["DEL", "a", "missing"]);
    cmd(&mut c, &["EXEC"]);
    for want in [
        sp("l", "rpush"),
        ev("rpush", "l"),
        sp("l", "rpop"),
        ev("rpop", "l"),
        sp("l", "del"),
        ev("del", "l"),
        sp("a", "del"),
        ev("del", "a"),
    ] {
        assert_eq!(next(&mut sub), want);
    }
    // Only hash events and key events: SET sends nothing, HSET one.
    assert_eq!(
        cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Eh"]),
        ok
    );
    cmd(&mut c, &["SET", "quiet", "1"]);
    cmd(&mut c, &["HSET", "h", "f", "v"]);
    assert_eq!(next(&mut sub), ev("hset", "h"));
    // New keys: the first SET of a key, not the second.
    assert_eq!(
        cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "En"]),
        ok
    );
    cmd(&mut c, &["SET", "fresh", "1"]);
    cmd(&mut c, &["SET", "fresh", "2"]);
    cmd(&mut c, &["SET", "other", "1"]);
    assert_eq!(next(&mut sub), ev("new", "fresh"));
    assert_eq!(next(&mut sub), ev("new", "other"));
    let Resp::Error(e) = cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "KQ"]) else {
        panic!("an unknown class was accepted")
    };
    assert!(e.contains("Invalid event class character"), "{e}");
    assert_eq!(
        cmd(&mut c, &["CONFIG", "GET", "notify-keyspace-events"]),
        arr(vec![b("notify-keyspace-events"), b("En")])
    );
}

#[test]
fn the_background_expiry_announces_expired_keys() {
    let server = TestServer::start();
    let mut sub = server.raw();
    let mut c = server.raw();
    cmd(&mut c, &["CONFIG", "SET", "notify-keyspace-events", "Ex"]);
    assert_eq!(
        cmd(&mut sub, &["PSUBSCRIBE", "*"]),
        confirm("psubscribe", "*", 1)
    );
    cmd(&mut c, &["SET", "short", "1", "PX", "50"]);
    cmd(&mut c, &["SET", "long", "1", "EX", "1000"]);
    assert_eq!(
        next(&mut sub),
        pmessage("*", "__keyevent@0__:expired", "short")
    );
}
