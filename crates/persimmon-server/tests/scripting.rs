//! Lua scripts through a real server: the conversions both ways, the
//! errors (unknown command, wrong arity, syntax, NOSCRIPT, numkeys), the
//! sandbox's refusals, the script cache, `COMMAND GETKEYS`, atomicity (a
//! script's writes are seen together or not at all, and what a script
//! that fails half-way leaves), the time limit (`BUSY` for others,
//! `SCRIPT KILL`, `UNKILLABLE`, `SHUTDOWN NOSAVE` dropping a busy
//! script's writes) and bad input (a large script, deep JSON, a table
//! that contains itself). The expected texts are redis-server 7.0.15's.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Resp, TestServer};

fn words(args: &[&str]) -> Vec<Vec<u8>> {
    args.iter().map(|a| a.as_bytes().to_vec()).collect()
}

fn run(raw: &mut Raw, args: &[&str]) -> Resp {
    let w = words(args);
    let w: Vec<&[u8]> = w.iter().map(|w| w.as_slice()).collect();
    raw.command(&w)
}

fn bulk(s: &str) -> Resp {
    Resp::bulk(s)
}

fn error_of(r: Resp) -> String {
    match r {
        Resp::Error(e) => e,
        other => panic!("not an error: {other:?}"),
    }
}

#[test]
fn lua_values_become_replies() {
    let server = TestServer::start();
    let mut r = server.raw();
    assert_eq!(run(&mut r, &["EVAL", "return 100.5", "0"]), Resp::Int(100));
    assert_eq!(run(&mut r, &["EVAL", "return -3.9", "0"]), Resp::Int(-3));
    assert_eq!(
        run(&mut r, &["EVAL", "return 'hello world'", "0"]),
        bulk("hello world")
    );
    assert_eq!(run(&mut r, &["EVAL", "return true", "0"]), Resp::Int(1));
    assert_eq!(run(&mut r, &["EVAL", "return false", "0"]), Resp::Null);
    assert_eq!(run(&mut r, &["EVAL", "return nil", "0"]), Resp::Null);
    assert_eq!(
        run(&mut r, &["EVAL", "return {ok='fine'}", "0"]),
        Resp::Simple("fine".into())
    );
    assert_eq!(
        run(
            &mut r,
            &["EVAL", "return {err='ERR this is an error'}", "0"]
        ),
        Resp::Error("ERR this is an error".into())
    );
    assert_eq!(
        run(
            &mut r,
            &["EVAL", "return redis.error_reply('MY_CODE custom')", "0"]
        ),
        Resp::Error("MY_CODE custom".into())
    );
    assert_eq!(
        run(&mut r, &["EVAL", "return redis.status_reply('FINE')", "0"]),
        Resp::Simple("FINE".into())
    );
    assert_eq!(
        run(&mut r, &["EVAL", "return {1,2,3,'ciao',{1,2}}", "0"]),
        Resp::Array(vec![
            Resp::Int(1),
            Resp::Int(2),
            Resp::Int(3),
            bulk("ciao"),
            Resp::Array(vec![Resp::Int(1), Resp::Int(2)]),
        ])
    );
    // An array ends at its first nil; a metatable is never consulted.
    assert_eq!(
        run(&mut r, &["EVAL", "return {1,nil,3}", "0"]),
        Resp::Array(vec![Resp::Int(1)])
    );
    assert_eq!(
        run(
            &mut r,
            &["EVAL", "local a = {}; setmetatable(a,{__index=function() redis.call('set','x','1') end}) return a", "0"]
        ),
        Resp::Array(vec![])
    );
    assert_eq!(run(&mut r, &["GET", "x"]), Resp::Null);
    assert_eq!(
        run(
            &mut r,
            &[
                "EVAL",
                "return {KEYS[1],KEYS[2],ARGV[1],ARGV[2]}",
                "2",
                "a",
                "b",
                "c",
                "d"
            ]
        ),
        Resp::Array(vec![bulk("a"), bulk("b"), bulk("c"), bulk("d")])
    );
}

#[test]
fn replies_become_lua_values() {
    let server = TestServer::start();
    let mut r = server.raw();
    let typed = "local v = redis.pcall(unpack(ARGV)); if type(v) == 'table' then \
                 return {type(v), tostring(v.ok or v.err or #v)} end; \
                 return {type(v), tostring(v)}";
    let cases: &[(&[&str], &str, &str)] = &[
        (&["set", "n", "0"], "table", "OK"),
        (&["incr", "n"], "number", "1"),
        (&["get", "n"], "string", "1"),
        (&["get", "missing"], "boolean", "false"),
        (&["lpush", "l", "a", "b", "c"], "number", "3"),
        (&["lrange", "l", "0", "-1"], "table", "3"),
        (
            &["lpush", "n", "x"],
            "table",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
        (
            &["incr", "l"],
            "table",
            "WRONGTYPE Operation against a key holding the wrong kind of value",
        ),
    ];
    for (args, ty, text) in cases {
        let mut req = vec!["EVAL", typed, "0"];
        req.extend_from_slice(args);
        assert_eq!(
            run(&mut r, &req),
            Resp::Array(vec![bulk(ty), bulk(text)]),
            "{args:?}"
        );
    }
    // Numbers given to redis.call are sent as integers when they are.
    assert_eq!(
        run(
            &mut r,
            &[
                "EVAL",
                "redis.call('set','big',9007199254740991); return redis.call('get','big')",
                "0"
            ]
        ),
        bulk("9007199254740991")
    );
    // RESP3 inside the script: a map comes back as {map=...}.
    run(&mut r, &["HSET", "h", "f", "v"]);
    assert_eq!(
        run(
            &mut r,
            &[
                "EVAL",
                "redis.setresp(3); local m = redis.call('hgetall', KEYS[1]).map; return m.f",
                "1",
                "h"
            ]
        ),
        bulk("v")
    );
}

#[test]
fn errors_read_as_redis_words_them() {
    let server = TestServer::start();
    let mut r = server.raw();
    let cases: &[(&[&str], &str)] = &[
        (
            &["EVAL", "return redis.call('nosuchcommand')", "0"],
            "ERR Unknown Redis command called from script script: ",
        ),
        (
            &["EVAL", "return redis.call('get','a','b')", "0"],
            "ERR Wrong number of args calling Redis command from script script: ",
        ),
        (
            &["EVAL", "return redis.call()", "0"],
            "ERR Please specify at least one argument for this redis lib call script: ",
        ),
        (
            &["EVAL", "return redis.call('ping', {})", "0"],
            "ERR Lua redis lib command arguments must be strings or integers script: ",
        ),
        (
            &["EVAL", "return redis.call('multi')", "0"],
            "ERR This Redis command is not allowed from script script: ",
        ),
        (
            &["EVAL", "return redis.call('blpop', 'l', 0)", "0"],
            "ERR This Redis command is not allowed from script script: ",
        ),
        (
            &["EVAL_RO", "return redis.call('set', 'a', 'b')", "0"],
            "ERR Write commands are not allowed from read-only scripts. script: ",
        ),
        (
            &["EVAL", "return +", "0"],
            "ERR Error compiling script (new function): user_script:1: unexpected symbol near '+'",
        ),
        (
            &["EVAL", "error('boom')", "0"],
            "ERR user_script:1: boom script: ",
        ),
        (
            &["EVALSHA", "ffd632c7d33e571e9f24556ebed26c3479a87130", "0"],
            "NOSCRIPT No matching script. Please use EVAL.",
        ),
        (
            &["EVALSHA", "NotValidShaSUM", "0"],
            "NOSCRIPT No matching script. Please use EVAL.",
        ),
        (
            &["EVAL", "return 1", "2", "a"],
            "ERR Number of keys can't be greater than number of args",
        ),
        (
            &["EVAL", "return 1", "-1"],
            "ERR Number of keys can't be negative",
        ),
        (
            &["EVAL", "return 1", "x"],
            "ERR value is not an integer or out of range",
        ),
    ];
    for (req, want) in cases {
        let e = error_of(run(&mut r, req));
        assert!(e.starts_with(want), "{req:?}: {e}");
    }
    // The place of an error raised by redis.call.
    let e = error_of(run(
        &mut r,
        &["EVAL", "\n\nreturn redis.call('nosuchcommand')", "0"],
    ));
    assert!(e.ends_with(", on @user_script:3."), "{e}");
    // pcall returns the error instead.
    assert_eq!(
        run(
            &mut r,
            &["EVAL", "return redis.pcall('nosuchcommand')", "0"]
        ),
        Resp::Error("ERR Unknown Redis command called from script".into())
    );
    // The connection is fine afterwards.
    assert_eq!(run(&mut r, &["PING"]), Resp::Simple("PONG".into()));
}

#[test]
fn the_sandbox_refuses() {
    let server = TestServer::start();
    let mut r = server.raw();
    for (script, want) in [
        (
            "return a",
            "Script attempted to access nonexistent global variable 'a'",
        ),
        ("a = 10", "Attempt to modify a readonly table"),
        (
            "os.exit()",
            "Script attempted to access nonexistent global variable 'os'",
        ),
        (
            "io.open('/etc/passwd')",
            "Script attempted to access nonexistent global variable 'io'",
        ),
        (
            "loadfile('x')",
            "Script attempted to access nonexistent global variable 'loadfile'",
        ),
        (
            "dofile('x')",
            "Script attempted to access nonexistent global variable 'dofile'",
        ),
        (
            "print('x')",
            "Script attempted to access nonexistent global variable 'print'",
        ),
        ("setmetatable(_G, {})", "Attempt to modify a readonly table"),
        (
            "local g = getmetatable(_G); g.__index = {}",
            "Attempt to modify a readonly table",
        ),
        (
            "redis.call = function() return 1 end",
            "Attempt to modify a readonly table",
        ),
        ("cjson.encode = 1", "Attempt to modify a readonly table"),
        ("_G = {}", "Attempt to modify a readonly table"),
        (
            "return loadstring(string.dump(function() return 1 end))()",
            "attempt to call a nil value",
        ),
        (
            "loadstring('x = 1')()",
            "Attempt to modify a readonly table",
        ),
    ] {
        let e = error_of(run(&mut r, &["EVAL", script, "0"]));
        assert!(e.starts_with("ERR ") && e.contains(want), "{script}: {e}");
    }
    // Locals are fine, and nothing leaks from one script to the next.
    assert_eq!(
        run(&mut r, &["EVAL", "local a = 5; return a", "0"]),
        Resp::Int(5)
    );
}

#[test]
fn script_cache_and_getkeys() {
    let server = TestServer::start();
    let mut r = server.raw();
    assert_eq!(
        run(&mut r, &["SCRIPT", "LOAD", "return 'loaded'"]),
        bulk("b534286061d4b9e4026607613b95c06c06015ae8")
    );
    assert_eq!(
        run(
            &mut r,
            &["EVALSHA", "b534286061d4b9e4026607613b95c06c06015ae8", "0"]
        ),
        bulk("loaded")
    );
    assert_eq!(
        run(
            &mut r,
            &["EVALSHA", "B534286061D4B9E4026607613B95C06C06015AE8", "0"]
        ),
        bulk("loaded")
    );
    run(&mut r, &["EVAL", "return 1+1", "0"]);
    assert_eq!(
        run(
            &mut r,
            &[
                "SCRIPT",
                "EXISTS",
                "a27e7e8a43702b7046d4f6a7ccf5b60cef6b9bd9",
                "a27e7e8a43702b7046d4f6a7ccf5b60cef6b9bda"
            ]
        ),
        Resp::Array(vec![Resp::Int(1), Resp::Int(0)])
    );
    assert_eq!(run(&mut r, &["SCRIPT", "FLUSH"]), Resp::Simple("OK".into()));
    assert!(error_of(run(
        &mut r,
        &["EVALSHA", "b534286061d4b9e4026607613b95c06c06015ae8", "0"]
    ))
    .starts_with("NOSCRIPT"));
    assert_eq!(
        run(
            &mut r,
            &["EVAL", "return redis.sha1hex('Pizza & Mandolino')", "0"]
        ),
        bulk("74822d82031af7493c20eefa13bd07ec4fada82f")
    );
    assert_eq!(
        run(
            &mut r,
            &["COMMAND", "GETKEYS", "EVAL", "return 1", "2", "k1", "k2", "arg"]
        ),
        Resp::Array(vec![bulk("k1"), bulk("k2")])
    );
    assert_eq!(
        run(
            &mut r,
            &["EVAL", "return bit.bor(1,2,4,8) + bit.band(6,3)", "0"]
        ),
        Resp::Int(17)
    );
    assert_eq!(
        run(
            &mut r,
            &[
                "EVAL",
                "return cjson.encode(cjson.decode('{\"a\":[1,2.5,\"x\"]}'))",
                "0"
            ]
        ),
        bulk("{\"a\":[1,2.5,\"x\"]}")
    );
}

#[test]
fn a_scripts_writes_are_seen_together() {
    let server = TestServer::start();
    let addr = server.addr;
    let writer = std::thread::spawn(move || {
        let mut w = Raw::connect(addr);
        for i in 0..300 {
            let v = i.to_string();
            let reply = run(
                &mut w,
                &["EVAL", "redis.call('set', KEYS[1], ARGV[1]); redis.call('set', KEYS[2], ARGV[1]); redis.call('rpush', KEYS[3], ARGV[1]); return 1", "3", "a", "b", "l", &v],
            );
            assert_eq!(reply, Resp::Int(1));
        }
    });
    let mut r = server.raw();
    let started = Instant::now();
    while !writer.is_finished() && started.elapsed() < Duration::from_secs(60) {
        let reply = run(&mut r, &["EVAL", "return {redis.call('get','a') or '', redis.call('get','b') or '', tostring(redis.call('llen','l'))}", "0"]);
        let Resp::Array(items) = reply else {
            panic!("{reply:?}")
        };
        assert_eq!(items[0], items[1], "a and b differ");
        if let Resp::Bulk(a) = &items[0] {
            if !a.is_empty() {
                let a: usize = String::from_utf8_lossy(a).parse().unwrap();
                assert_eq!(items[2], bulk(&(a + 1).to_string()), "list length");
            }
        }
        let reply = run(&mut r, &["MGET", "a", "b"]);
        let Resp::Array(items) = reply else {
            panic!("{reply:?}")
        };
        // MGET reads key by key: b is written after a, so b >= a.
        let n = |r: &Resp| match r {
            Resp::Bulk(b) => String::from_utf8_lossy(b).parse::<i64>().unwrap(),
            _ => -1,
        };
        assert!(n(&items[1]) >= n(&items[0]) || n(&items[1]) == -1 || n(&items[0]) >= 0);
    }
    writer.join().unwrap();
    assert_eq!(run(&mut r, &["LLEN", "l"]), Resp::Int(300));
}

#[test]
fn a_script_that_fails_half_way_keeps_the_writes_before_the_error() {
    let mut server = TestServer::start();
    let mut r = server.raw();
    let e = error_of(run(
        &mut r,
        &["EVAL", "redis.call('set','before','1'); redis.call('incr','before'); redis.call('lpush','before','x'); redis.call('set','after','1')", "0"],
    ));
    assert!(e.starts_with("WRONGTYPE"), "{e}");
    // As in Redis: the writes before the error stay, the failed command
    // wrote nothing, nothing after it ran; and they are durable.
    server.stop();
    let mut c = server.restart();
    let before: Option<String> = redis::cmd("GET").arg("before").query(&mut c).unwrap();
    let after: Option<String> = redis::cmd("GET").arg("after").query(&mut c).unwrap();
    assert_eq!(before.as_deref(), Some("2"));
    assert_eq!(after, None);
}

#[test]
fn a_script_queued_in_multi_commits_with_the_transaction() {
    let mut server = TestServer::start();
    let mut r = server.raw();
    let queued = Resp::Simple("QUEUED".into());
    assert_eq!(run(&mut r, &["MULTI"]), Resp::Simple("OK".into()));
    assert_eq!(run(&mut r, &["SET", "a", "1"]), queued);
    let script = "redis.call('rpush', KEYS[1], 'x'); return redis.call('incr', KEYS[2])";
    assert_eq!(run(&mut r, &["EVAL", script, "2", "l", "a"]), queued);
    assert_eq!(run(&mut r, &["SET", "c", "3"]), queued);
    assert_eq!(
        run(&mut r, &["EXEC"]),
        Resp::Array(vec![
            Resp::Simple("OK".into()),
            Resp::Int(2),
            Resp::Simple("OK".into())
        ])
    );
    // Every command of the transaction, the script's writes among them,
    // survived together.
    server.stop();
    let mut c = server.restart();
    let got: Vec<Option<String>> = redis::cmd("MGET").arg(&["a", "c"]).query(&mut c).unwrap();
    assert_eq!(got, vec![Some("2".into()), Some("3".into())]);
    let list: Vec<String> = redis::cmd("LRANGE")
        .arg("l")
        .arg(0)
        .arg(-1)
        .query(&mut c)
        .unwrap();
    assert_eq!(list, vec!["x".to_string()]);
}

/// Waits until `PING` on `r` is refused with BUSY.
fn wait_busy(r: &mut Raw) -> String {
    let started = Instant::now();
    loop {
        match run(r, &["PING"]) {
            Resp::Error(e) if e.starts_with("BUSY") => return e,
            _ => {}
        }
        assert!(started.elapsed() < Duration::from_secs(20), "never busy");
        std::thread::sleep(Duration::from_millis(20));
    }
}

#[test]
fn a_script_past_its_limit_gets_busy_for_others_and_script_kill_ends_it() {
    let server = TestServer::start();
    let mut r = server.raw();
    assert_eq!(
        run(&mut r, &["CONFIG", "SET", "busy-reply-threshold", "100"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(
        error_of(run(&mut r, &["SCRIPT", "KILL"])),
        "NOTBUSY No scripts in execution right now."
    );
    let addr = server.addr;
    let looping = std::thread::spawn(move || {
        let mut l = Raw::connect(addr);
        run(
            &mut l,
            &[
                "EVAL",
                "local f = function() while true do end end; while true do pcall(f) end",
                "0",
            ],
        )
    });
    let e = wait_busy(&mut r);
    assert_eq!(
        e,
        "BUSY Redis is busy running a script. You can only call SCRIPT KILL or SHUTDOWN NOSAVE."
    );
    assert!(error_of(run(&mut r, &["GET", "x"])).starts_with("BUSY"));
    assert_eq!(run(&mut r, &["SCRIPT", "KILL"]), Resp::Simple("OK".into()));
    let reply = looping.join().unwrap();
    assert!(error_of(reply).contains("killed by user"));
    assert_eq!(run(&mut r, &["PING"]), Resp::Simple("PONG".into()));
}

#[test]
fn a_busy_script_that_wrote_is_unkillable_and_shutdown_nosave_drops_its_writes() {
    let mut server = TestServer::start();
    let mut r = server.raw();
    run(&mut r, &["CONFIG", "SET", "lua-time-limit", "100"]);
    run(&mut r, &["SET", "kept", "1"]);
    let addr = server.addr;
    let looping = std::thread::spawn(move || {
        let mut l = Raw::connect(addr);
        l.writer
            .set_read_timeout(Some(Duration::from_secs(30)))
            .unwrap();
        let w = words(&[
            "EVAL",
            "redis.call('set','written','1'); while true do end",
            "0",
        ]);
        let w: Vec<&[u8]> = w.iter().map(|w| w.as_slice()).collect();
        l.send(&common::encode(&w)).unwrap();
        l.read()
    });
    wait_busy(&mut r);
    let e = error_of(run(&mut r, &["SCRIPT", "KILL"]));
    assert!(e.starts_with("UNKILLABLE"), "{e}");
    let w = words(&["SHUTDOWN", "NOSAVE"]);
    let w: Vec<&[u8]> = w.iter().map(|w| w.as_slice()).collect();
    r.send(&common::encode(&w)).unwrap();
    let _ = looping.join();
    server.stop();
    let mut c = server.restart();
    let written: Option<String> = redis::cmd("GET").arg("written").query(&mut c).unwrap();
    let kept: Option<String> = redis::cmd("GET").arg("kept").query(&mut c).unwrap();
    assert_eq!(written, None, "a script stopped by SHUTDOWN writes nothing");
    assert_eq!(kept.as_deref(), Some("1"));
}

#[test]
fn a_100_mb_script_runs_and_others_are_served() {
    let server = TestServer::start();
    let mut r = server.raw();
    let mut big = String::with_capacity(101 << 20);
    big.push_str("redis.call('set', KEYS[1], 'ran')\n--");
    big.extend(std::iter::repeat_n('c', 100 << 20));
    big.push_str("\nreturn 7");
    assert_eq!(run(&mut r, &["EVAL", &big, "1", "big"]), Resp::Int(7));
    // Cached under its SHA1 like any other, and dropped by SCRIPT FLUSH.
    let sha = match run(&mut r, &["SCRIPT", "LOAD", &big]) {
        Resp::Bulk(s) => String::from_utf8(s).unwrap(),
        other => panic!("SCRIPT LOAD replied {other:?}"),
    };
    assert_eq!(run(&mut r, &["EVALSHA", &sha, "1", "big"]), Resp::Int(7));
    drop(big);
    assert_eq!(run(&mut r, &["SCRIPT", "FLUSH"]), Resp::Simple("OK".into()));
    let mut other = server.raw();
    assert_eq!(run(&mut other, &["GET", "big"]), bulk("ran"));
    let e = error_of(run(&mut other, &["EVALSHA", &sha, "1", "big"]));
    assert!(e.starts_with("NOSCRIPT"), "{e}");
}

#[test]
fn bad_input_gets_clear_errors() {
    let server = TestServer::start();
    let mut r = server.raw();
    // A large script (8 MB) compiles and runs.
    let mut big = String::from("local t = 0\n");
    while big.len() < 8 << 20 {
        big.push_str("t = t + 1 -- padding padding padding padding padding padding\n");
    }
    big.push_str("return t");
    let reply = run(&mut r, &["EVAL", &big, "0"]);
    assert!(matches!(reply, Resp::Int(n) if n > 100_000), "{reply:?}");
    // Deep JSON: an error, not a crash.
    let deep = "[".repeat(200_000);
    let e = error_of(run(
        &mut r,
        &["EVAL", "return cjson.decode(ARGV[1])", "0", &deep],
    ));
    assert!(e.contains("Found too many nested data structures"), "{e}");
    let e = error_of(run(
        &mut r,
        &["EVAL", "local t = {} local c = t for i = 1, 5000 do c[1] = {} c = c[1] end return cjson.encode(t)", "0"],
    ));
    assert!(e.contains("excessive nesting"), "{e}");
    // A table that contains itself: nested arrays, then an error inside.
    let reply = run(
        &mut r,
        &[
            "EVAL",
            "local a = {}; local b = {a}; a[1] = b; return a",
            "0",
        ],
    );
    let mut depth = 0;
    let mut at = &reply;
    while let Resp::Array(items) = at {
        depth += 1;
        at = &items[0];
    }
    assert!(depth > 10);
    assert_eq!(at, &Resp::Error("ERR reached lua stack limit".into()));
    // A huge number of arguments to redis.call.
    assert_eq!(
        run(&mut r, &["EVAL", "local a = {} for i=1,7999 do a[i] = 1 end return redis.call('lpush', 'many', unpack(a))", "0"]),
        Resp::Int(7999)
    );
    assert_eq!(run(&mut r, &["PING"]), Resp::Simple("PONG".into()));
}

#[test]
fn scripts_propagate_their_effects_in_a_transaction() {
    // A replica of this server sees the script's writes, not the script.
    let master = TestServer::start();
    let replica = TestServer::start();
    let mut m = master.raw();
    let mut rep = replica.raw();
    let port = master.addr.port().to_string();
    assert_eq!(
        run(&mut rep, &["REPLICAOF", "127.0.0.1", &port]),
        Resp::Simple("OK".into())
    );
    run(&mut m, &["EVAL", "redis.call('set','x','1'); redis.call('incr','x'); redis.call('rpush','y', redis.call('time')[1])", "0"]);
    let started = Instant::now();
    loop {
        if run(&mut rep, &["GET", "x"]) == bulk("2")
            && run(&mut rep, &["LLEN", "y"]) == Resp::Int(1)
        {
            break;
        }
        assert!(
            started.elapsed() < Duration::from_secs(20),
            "not replicated"
        );
        std::thread::sleep(Duration::from_millis(50));
    }
    assert_eq!(
        run(&mut rep, &["LRANGE", "y", "0", "-1"]),
        run(&mut m, &["LRANGE", "y", "0", "-1"])
    );
}

#[test]
fn cmsgpack_packs_as_lua_cmsgpack() {
    let server = TestServer::start();
    let mut r = server.raw();
    let hex = "local e = cmsgpack.pack(ARGV[1] == 'f' and 0.1 or -1099511627776) \
               local h = '' for i = 1, #e do h = h .. string.format('%02x', e:byte(i)) end return h";
    assert_eq!(
        run(&mut r, &["EVAL", hex, "0", "f"]),
        bulk("cb3fb999999999999a")
    );
    assert_eq!(
        run(&mut r, &["EVAL", hex, "0", "i"]),
        bulk("d3ffffff0000000000")
    );
    // A map of 100,000 string keys packs, unpacks and encodes as JSON.
    assert_eq!(
        run(
            &mut r,
            &[
                "EVAL",
                "local m = {} for i = 1, 100000 do m[tostring(i)] = i end \
                       local d = cmsgpack.unpack(cmsgpack.pack(m)) \
                       return {d['77777'], #cjson.encode(m)}",
                "0"
            ]
        ),
        Resp::Array(vec![Resp::Int(77777), Resp::Int(1377791)])
    );
}

#[test]
fn functions_load_call_list_and_restore() {
    let server = TestServer::start();
    let mut r = server.raw();
    let lib = "#!lua name=mylib\n\
               redis.register_function('getk', function(keys, args) return redis.call('get', keys[1]) end)\n\
               redis.register_function{function_name='setk', callback=function(keys, args) \
               return redis.call('set', keys[1], args[1]) end, description='sets'}\n\
               redis.register_function{function_name='rok', callback=function(keys, args) \
               return redis.call('set', keys[1], 'x') end, flags={'no-writes'}}";
    assert_eq!(run(&mut r, &["FUNCTION", "LOAD", lib]), bulk("mylib"));
    assert_eq!(
        error_of(run(&mut r, &["FUNCTION", "LOAD", lib])),
        "ERR Library 'mylib' already exists"
    );
    assert_eq!(
        run(&mut r, &["FUNCTION", "LOAD", "REPLACE", lib]),
        bulk("mylib")
    );
    assert_eq!(
        run(&mut r, &["FCALL", "setk", "1", "k", "v"]),
        Resp::Simple("OK".into())
    );
    // getk has no no-writes flag: FCALL_RO refuses it.
    assert_eq!(
        run(&mut r, &["FCALL_RO", "getk", "1", "k"]),
        Resp::Error("ERR Can not execute a script with write flag using *_ro command.".into())
    );
    assert_eq!(run(&mut r, &["FCALL", "getk", "1", "k"]), bulk("v"));
    let e = error_of(run(&mut r, &["FCALL_RO", "rok", "1", "k"]));
    assert!(
        e.starts_with("ERR Write commands are not allowed from read-only scripts."),
        "{e}"
    );
    assert_eq!(
        error_of(run(&mut r, &["FCALL", "nosuch", "0"])),
        "ERR Function not found"
    );
    let listed = run(&mut r, &["FUNCTION", "LIST"]);
    let Resp::Array(libs) = listed else {
        panic!("{listed:?}")
    };
    assert_eq!(libs.len(), 1);
    let dump = run(&mut r, &["FUNCTION", "DUMP"]);
    let Resp::Bulk(payload) = dump else {
        panic!("{dump:?}")
    };
    assert_eq!(
        run(&mut r, &["FUNCTION", "DELETE", "mylib"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(
        error_of(run(&mut r, &["FCALL", "getk", "1", "k"])),
        "ERR Function not found"
    );
    let restore: Vec<&[u8]> = vec![b"FUNCTION", b"RESTORE", &payload];
    assert_eq!(r.command(&restore), Resp::Simple("OK".into()));
    assert_eq!(run(&mut r, &["FCALL", "getk", "1", "k"]), bulk("v"));
    // Restoring a library that exists (APPEND): named without quotes.
    assert_eq!(
        error_of(r.command(&restore)),
        "ERR Library mylib already exists"
    );
    // The `#!` line is split as Redis splits arguments: quotes decoded.
    let quoted = "#!lua name=\"quoted\"\nredis.register_function('q', function() return 1 end)";
    assert_eq!(run(&mut r, &["FUNCTION", "LOAD", quoted]), bulk("quoted"));
    for (code, want) in [
        ("return 1", "ERR Missing library metadata"),
        ("#!lua\nreturn 1", "ERR Library name was not given"),
        ("#!nosuch name=x\nreturn 1", "ERR Engine 'nosuch' not found"),
        ("#!lua name=x\nreturn 1", "ERR No functions registered"),
        (
            "#!lua name=x\nredis.call('ping')",
            "ERR Error registering functions: ",
        ),
        ("#! name=x\nreturn 1", "ERR Engine '' not found"),
        (
            "#!lua name=x name=y\nreturn 1",
            "ERR Invalid metadata value, name argument was given multiple times",
        ),
        (
            "#!lua nme=x\nreturn 1",
            "ERR Invalid metadata value given: nme=x",
        ),
        ("#!lua name=\"x\nreturn 1", "ERR Invalid library metadata"),
        (
            "#!lua name=x\nredis.register_function{function_name='f', \
             callback=function() return 1 end, flags={function() end}}",
            "ERR Error registering functions: ",
        ),
    ] {
        let e = error_of(run(&mut r, &["FUNCTION", "LOAD", code]));
        assert!(e.starts_with(want), "{code}: {e}");
    }
    assert_eq!(
        run(&mut r, &["FUNCTION", "FLUSH"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(run(&mut r, &["FUNCTION", "LIST"]), Resp::Array(vec![]));
}

#[test]
fn scripts_may_not_block_on_streams() {
    let server = TestServer::start();
    let mut r = server.raw();
    assert_eq!(
        run(&mut r, &["XGROUP", "CREATE", "s", "g", "$", "MKSTREAM"]),
        Resp::Simple("OK".into())
    );
    // Without BLOCK: an empty reply; with it: refused, as Redis refuses it.
    let e = error_of(run(
        &mut r,
        &[
            "EVAL",
            "return redis.pcall('xread','BLOCK',0,'STREAMS',KEYS[1],'$')",
            "1",
            "s",
        ],
    ));
    assert!(
        e.contains("xread command is not allowed with BLOCK option from scripts"),
        "{e}"
    );
    let e = error_of(run(
        &mut r,
        &[
            "EVAL",
            "return redis.pcall('xreadgroup','GROUP','g','c','BLOCK',0,'STREAMS',KEYS[1],'>')",
            "1",
            "s",
        ],
    ));
    assert!(
        e.contains("xreadgroup command is not allowed with BLOCK option from scripts"),
        "{e}"
    );
    assert_eq!(
        run(
            &mut r,
            &[
                "EVAL",
                "return redis.pcall('xread','STREAMS',KEYS[1],'$')",
                "1",
                "s"
            ]
        ),
        Resp::Null,
        "nothing to read: nil, not an error"
    );
}
