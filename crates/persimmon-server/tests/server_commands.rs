//! The server commands through a real client (the `redis` crate, and raw
//! RESP where a connection must be watched closing): INFO and its
//! sections, commandstats and errorstats, CONFIG GET/SET/RESETSTAT/
//! REWRITE/HELP and the settings that take effect at once, COMMAND and its
//! subcommands over the whole table, FUNCTION, MEMORY, TIME, LASTSAVE,
//! SAVE, BGSAVE, BGREWRITEAOF and WAIT, with Redis's error texts.

mod common;

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use common::{cmd, encode, Resp, TestServer};
use redis::Value;

/// The error text of a command that must fail.
fn err(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args) {
        Err(e) => e.to_string(),
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
    }
}

/// Asserts that `args` fails with exactly `text` (code and message).
fn assert_err(con: &mut redis::Connection, args: &[&str], text: &str) {
    match cmd(con, args) {
        Err(e) => {
            let got = format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or(""));
            assert_eq!(got, text, "{args:?}");
        }
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
    }
}

fn ok(con: &mut redis::Connection, args: &[&str]) {
    assert_eq!(cmd(con, args).unwrap(), Value::Okay, "{args:?}");
}

fn int(con: &mut redis::Connection, args: &[&str]) -> i64 {
    match cmd(con, args).unwrap() {
        Value::Int(n) => n,
        other => panic!("{args:?}: {other:?}"),
    }
}

fn strings(con: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con).unwrap()
}

fn info(con: &mut redis::Connection, sections: &[&str]) -> String {
    let mut c = redis::cmd("INFO");
    for s in sections {
        c.arg(*s);
    }
    c.query(con).unwrap()
}

/// The value of `field` in INFO text (as the Redis suite's `s` reads it).
fn field(info: &str, field: &str) -> Option<String> {
    info.split("\r\n")
        .find_map(|l| l.strip_prefix(&format!("{field}:")).map(str::to_string))
}

/// The `# Title` lines of INFO text, in order.
fn titles(info: &str) -> Vec<&str> {
    info.split("\r\n")
        .filter_map(|l| l.strip_prefix("# "))
        .collect()
}

fn cmdstat(con: &mut redis::Connection, name: &str) -> Option<String> {
    field(&info(con, &["commandstats"]), &format!("cmdstat_{name}"))
}

fn errorstat(con: &mut redis::Connection, code: &str) -> Option<String> {
    field(&info(con, &["errorstats"]), &format!("errorstat_{code}"))
}

fn unix_now() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap()
        .as_secs()
}

#[test]
fn info_has_redis_sections_in_redis_order() {
    let server = TestServer::start();
    let mut con = server.client();
    let _: () = redis::cmd("SET").arg("k").arg("v").query(&mut con).unwrap();
    let default = [
        "Server",
        "Clients",
        "Memory",
        "Persistence",
        "Tier",
        "Stats",
        "Replication",
        "CPU",
        "Modules",
        "Errorstats",
        "Cluster",
        "Keyspace",
    ];
    assert_eq!(titles(&info(&mut con, &[])), default);
    assert_eq!(titles(&info(&mut con, &["default"])), default);
    let all = [
        "Server",
        "Clients",
        "Memory",
        "Persistence",
        "Tier",
        "Stats",
        "Replication",
        "CPU",
        "Modules",
        "Commandstats",
        "Errorstats",
        "Latencystats",
        "Cluster",
        "Keyspace",
    ];
    assert_eq!(titles(&info(&mut con, &["all"])), all);
    assert_eq!(titles(&info(&mut con, &["everything"])), all);
    // Any case; each section once; unknown sections are nothing.
    assert_eq!(
        titles(&info(&mut con, &["CPU", "commandSTATS", "cpu", "sentinel"])),
        ["CPU", "Commandstats"]
    );
    assert_eq!(titles(&info(&mut con, &["cpu", "all"])), all);
    assert_eq!(info(&mut con, &["sentinel"]), "");
    // What the Redis suite's info-command unit looks for.
    let text = info(&mut con, &[]);
    for needle in ["redis_version", "used_cpu_user", "used_memory"] {
        assert!(text.contains(needle), "{needle}");
    }
    assert!(!text.contains("rejected_calls") && !text.contains("sentinel_tilt"));
    assert!(info(&mut con, &["all"]).contains("rejected_calls"));
    assert!(info(&mut con, &["cpu", "default"]).contains("master_repl_offset"));
    // Fields tools and the suite read.
    let all = info(&mut con, &["everything"]);
    for (name, value) in [
        ("redis_mode", "standalone"),
        ("role", "master"),
        ("cluster_enabled", "0"),
        ("loading", "0"),
        ("rdb_bgsave_in_progress", "0"),
        ("aof_rewrite_in_progress", "0"),
        ("blocked_clients", "0"),
        ("lazyfree_pending_objects", "0"),
        ("total_forks", "0"),
        ("maxmemory_policy", "noeviction"),
        ("mem_allocator", "libc"),
        ("tcp_port", &server.addr.port().to_string()),
        ("db0", "keys=1,expires=0,avg_ttl=0"),
        ("durability", "process-crash"),
        ("ssd_tier", "0"),
    ] {
        assert_eq!(field(&all, name).as_deref(), Some(value), "{name}");
    }
    assert_eq!(field(&all, "run_id").unwrap().len(), 40);
    let used: u64 = field(&all, "used_memory").unwrap().parse().unwrap();
    assert!(used > 0);
    let cpu = field(&all, "used_cpu_user").unwrap();
    assert!(
        cpu.split_once('.').is_some_and(|(_, us)| us.len() == 6),
        "{cpu}"
    );
    // Every line is a title, `key:value`, or the blank line between sections.
    for line in all.split("\r\n") {
        assert!(
            line.is_empty() || line.starts_with("# ") || line.contains(':'),
            "{line:?}"
        );
    }
}

#[test]
fn commandstats_count_calls_refusals_and_failures_as_redis() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(&mut con, &["CONFIG", "RESETSTAT"]);
    assert_eq!(errorstat(&mut con, "ERR"), None);
    assert_eq!(
        field(&info(&mut con, &["stats"]), "total_error_replies").as_deref(),
        Some("0")
    );
    // Wrong arity: refused, counted on the command, an ERR reply.
    assert_err(
        &mut con,
        &["SET", "k"],
        "ERR wrong number of arguments for 'set' command",
    );
    let set = cmdstat(&mut con, "set").unwrap();
    assert!(
        set.starts_with("calls=0,") && set.ends_with(",rejected_calls=1,failed_calls=0"),
        "{set}"
    );
    ok(&mut con, &["SET", "k1", "v1"]);
    ok(&mut con, &["SET", "k2", "v2"]);
    let set = cmdstat(&mut con, "set").unwrap();
    assert!(set.starts_with("calls=2,usec="), "{set}");
    assert!(
        set.contains(",usec_per_call=") && set.ends_with(",rejected_calls=1,failed_calls=0"),
        "{set}"
    );
    assert_eq!(errorstat(&mut con, "ERR").as_deref(), Some("count=1"));
    // A command that ran and replied an error: failed.
    assert_eq!(int(&mut con, &["HSET", "h", "f", "v"]), 1);
    assert_err(
        &mut con,
        &["GET", "h"],
        "WRONGTYPE Operation against a key holding the wrong kind of value",
    );
    assert_eq!(
        cmdstat(&mut con, "get")
            .as_deref()
            .map(|s| s.ends_with("rejected_calls=0,failed_calls=1")),
        Some(true)
    );
    assert_eq!(errorstat(&mut con, "WRONGTYPE").as_deref(), Some("count=1"));
    // An unknown command: an ERR reply, no command row.
    assert!(err(&mut con, &["NOSUCHCMD", "x"]).contains("unknown command"));
    assert_eq!(errorstat(&mut con, "ERR").as_deref(), Some("count=2"));
    assert_eq!(cmdstat(&mut con, "nosuchcmd"), None);
    let stats = info(&mut con, &["stats"]);
    assert_eq!(field(&stats, "total_error_replies").as_deref(), Some("3"));
    // RESETSTAT clears all of it.
    ok(&mut con, &["CONFIG", "RESETSTAT"]);
    assert_eq!(errorstat(&mut con, "ERR"), None);
    assert_eq!(cmdstat(&mut con, "set"), None);
    let stats = info(&mut con, &["stats"]);
    assert_eq!(field(&stats, "total_error_replies").as_deref(), Some("0"));
    let processed: u64 = field(&stats, "total_commands_processed")
        .unwrap()
        .parse()
        .unwrap();
    assert!(processed <= 3, "{processed}");
    // Counts of other connections arrive when they publish (at the latest
    // when they close).
    {
        let mut other = server.client();
        ok(&mut other, &["SET", "a", "b"]);
        assert!(err(&mut other, &["SET"]).contains("wrong number"));
    }
    let deadline = std::time::Instant::now() + Duration::from_secs(10);
    let set = loop {
        let set = cmdstat(&mut con, "set");
        if set.is_some() || std::time::Instant::now() > deadline {
            break set.unwrap_or_default();
        }
        std::thread::sleep(Duration::from_millis(20));
    };
    assert!(
        set.starts_with("calls=1,") && set.ends_with("rejected_calls=1,failed_calls=0"),
        "{set}"
    );
}

#[test]
fn noauth_refusals_are_rejected_calls() {
    let server = TestServer::start_with(|c| c.requirepass = Some("pw".into()));
    let mut raw = server.raw();
    assert_eq!(
        raw.command(&[b"GET", b"k"]),
        Resp::Error("NOAUTH Authentication required.".into())
    );
    assert_eq!(raw.command(&[b"AUTH", b"pw"]), Resp::Simple("OK".into()));
    let Resp::Bulk(text) = raw.command(&[b"INFO", b"commandstats", b"errorstats"]) else {
        panic!()
    };
    let text = String::from_utf8(text).unwrap();
    assert_eq!(
        field(&text, "cmdstat_get").as_deref(),
        Some("calls=0,usec=0,usec_per_call=0.00,rejected_calls=1,failed_calls=0")
    );
    assert_eq!(field(&text, "errorstat_NOAUTH").as_deref(), Some("count=1"));
    // A failed AUTH is a failed call.
    assert!(
        matches!(raw.command(&[b"AUTH", b"nope"]), Resp::Error(e) if e.starts_with("WRONGPASS"))
    );
    let Resp::Bulk(text) = raw.command(&[b"INFO", b"commandstats"]) else {
        panic!()
    };
    let auth = field(&String::from_utf8(text).unwrap(), "cmdstat_auth").unwrap();
    assert!(
        auth.starts_with("calls=2,") && auth.ends_with("failed_calls=1"),
        "{auth}"
    );
}

#[test]
fn config_get_matches_patterns_names_and_aliases() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(strings(&mut con, &["CONFIG", "GET", "save"]), ["save", ""]);
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "appendonly"]),
        ["appendonly", "no"]
    );
    // Several at once, each once.
    assert_eq!(
        strings(
            &mut con,
            &["CONFIG", "GET", "maxclients", "port", "maxclients"]
        ),
        [
            "maxclients",
            "10000",
            "port",
            &server.addr.port().to_string()
        ]
    );
    // An exact name in any case, shown as given; an alias too.
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "HASH-max-ziplist-value"]),
        ["HASH-max-ziplist-value", "64"]
    );
    // A pattern matches names and aliases.
    let hash = strings(&mut con, &["CONFIG", "GET", "hash-max-*"]);
    assert_eq!(
        hash,
        [
            "hash-max-listpack-entries",
            "512",
            "hash-max-ziplist-entries",
            "512",
            "hash-max-listpack-value",
            "64",
            "hash-max-ziplist-value",
            "64"
        ]
    );
    let all = strings(&mut con, &["CONFIG", "GET", "*"]);
    for name in [
        "maxmemory",
        "maxmemory-policy",
        "requirepass",
        "protected-mode",
        "client-output-buffer-limit",
        "latency-tracking",
        "lua-time-limit",
        "busy-reply-threshold",
        "loglevel",
        "pool",
        "durability",
        "databases",
    ] {
        assert!(all.iter().step_by(2).any(|n| n == name), "{name}");
    }
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "client-output-buffer-limit"])[1],
        format!(
            "normal {} 0 0 slave 268435456 67108864 60 pubsub 33554432 8388608 60",
            512 << 20
        )
    );
    assert!(strings(&mut con, &["CONFIG", "GET", "nosuch*"]).is_empty());
    assert!(strings(&mut con, &["CONFIG", "GET", "nosuch"]).is_empty());
    assert_err(
        &mut con,
        &["CONFIG", "GET"],
        "ERR wrong number of arguments for 'config|get' command",
    );
    // RESP3: a map.
    let mut raw = server.raw();
    raw.command(&[b"HELLO", b"3"]);
    assert_eq!(
        raw.command(&[b"CONFIG", b"GET", b"maxmemory"]),
        Resp::Map(vec![(Resp::bulk("maxmemory"), Resp::bulk("0"))])
    );
}

#[test]
fn config_set_takes_several_pairs_all_or_none() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "hash-max-ziplist-entries",
            "32",
            "maxmemory",
            "1mb",
            "appendonly",
            "YES",
        ],
    );
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "hash-max-listpack-entries"]),
        ["hash-max-listpack-entries", "32"]
    );
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "maxmemory"]),
        ["maxmemory", "1048576"]
    );
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "appendonly"]),
        ["appendonly", "yes"]
    );
    // One bad value: nothing changes.
    assert_err(
        &mut con,
        &["CONFIG", "SET", "maxmemory", "2mb", "maxmemory-policy", "sometimes"],
        "ERR CONFIG SET failed (possibly related to argument 'maxmemory-policy') - argument(s) must be one of the following: volatile-lru, volatile-lfu, volatile-random, volatile-ttl, allkeys-lru, allkeys-lfu, allkeys-random, noeviction",
    );
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "maxmemory"]),
        ["maxmemory", "1048576"]
    );
    // Redis's texts for every kind of refusal.
    for (args, text) in [
        (vec!["maxmemory", "bla"], "ERR CONFIG SET failed (possibly related to argument 'maxmemory') - argument must be a memory value"),
        (vec!["nope", "1"], "ERR Unknown option or number of arguments for CONFIG SET - 'nope'"),
        (vec!["maxclients", "10", "MAXCLIENTS", "20"], "ERR CONFIG SET failed (possibly related to argument 'MAXCLIENTS') - duplicate parameter"),
        (vec!["port", "1"], "ERR CONFIG SET failed (possibly related to argument 'port') - can't set immutable config"),
        (vec!["databases", "3"], "ERR CONFIG SET failed (possibly related to argument 'databases') - can't set immutable config"),
        (vec!["dir", "/tmp"], "ERR CONFIG SET failed (possibly related to argument 'dir') - can't set protected config"),
        (vec!["appendonly", "maybe"], "ERR CONFIG SET failed (possibly related to argument 'appendonly') - argument must be 'yes' or 'no'"),
        (vec!["hz", "x"], "ERR CONFIG SET failed (possibly related to argument 'hz') - argument couldn't be parsed into an integer"),
        (vec!["hz", "-1"], "ERR CONFIG SET failed (possibly related to argument 'hz') - argument must be between 0 and 2147483647 inclusive"),
        (vec!["maxclients", "0"], "ERR CONFIG SET failed (possibly related to argument 'maxclients') - argument must be between 1 and 4294967295 inclusive"),
        (vec!["proto-max-bulk-len", "1000"], "ERR CONFIG SET failed (possibly related to argument 'proto-max-bulk-len') - argument must be between 1048576 and 9223372036854775807 inclusive"),
        (vec!["lua-time-limit", "x"], "ERR CONFIG SET failed (possibly related to argument 'busy-reply-threshold') - argument couldn't be parsed into an integer"),
        (vec!["loglevel", "loud"], "ERR CONFIG SET failed (possibly related to argument 'loglevel') - argument(s) must be one of the following: debug, verbose, notice, warning"),
        (vec!["save", "10 x"], "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"),
        (vec!["save", "10 20 30"], "ERR CONFIG SET failed (possibly related to argument 'save') - Invalid save parameters"),
        (vec!["client-output-buffer-limit", "master 1 1 1"], "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Invalid client class specified in buffer limit configuration."),
        (vec!["client-output-buffer-limit", "normal 1 1"], "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Wrong number of arguments in buffer limit configuration."),
        (vec!["client-output-buffer-limit", "normal x 1 1"], "ERR CONFIG SET failed (possibly related to argument 'client-output-buffer-limit') - Error in hard, soft or soft_seconds setting in buffer limit configuration."),
        (vec!["latency-tracking-info-percentiles", "10 a"], "ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - Invalid latency-tracking-info-percentiles parameters"),
        (vec!["latency-tracking-info-percentiles", "10 101"], "ERR CONFIG SET failed (possibly related to argument 'latency-tracking-info-percentiles') - latency-tracking-info-percentiles parameters should sit between [0.0,100.0]"),
    ] {
        let mut full = vec!["CONFIG", "SET"];
        full.extend(args);
        assert_err(&mut con, &full, text);
    }
    assert_err(
        &mut con,
        &["CONFIG", "SET", "a"],
        "ERR wrong number of arguments for 'config|set' command",
    );
    assert_err(
        &mut con,
        &["CONFIG", "SET", "a", "b", "c"],
        "ERR syntax error",
    );
    // Values are shown in their normal form.
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "save",
            "3600 1  300 100",
            "latency-tracking-info-percentiles",
            "0.0 50.0 99.9",
        ],
    );
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "save"]),
        ["save", "3600 1 300 100"]
    );
    assert_eq!(
        strings(
            &mut con,
            &["CONFIG", "GET", "latency-tracking-info-percentiles"]
        ),
        ["latency-tracking-info-percentiles", "0 50 99.9"]
    );
    ok(&mut con, &["CONFIG", "SET", "save", ""]);
    assert_eq!(strings(&mut con, &["CONFIG", "GET", "save"]), ["save", ""]);
    // What the Redis suite sets around its units.
    for (name, value) in [
        ("hash-max-ziplist-value", "10"),
        ("hash-max-listpack-value", "8"),
        ("zset-max-ziplist-entries", "0"),
        ("set-max-intset-entries", "0"),
        ("lazyfree-lazy-user-flush", "yes"),
        ("latency-tracking", "no"),
        ("lua-time-limit", "10"),
        ("min-replicas-to-write", "0"),
        ("replica-serve-stale-data", "no"),
        ("repl-ping-replica-period", "3600"),
        ("appendfsync", "always"),
        ("maxmemory", "0"),
    ] {
        ok(&mut con, &["CONFIG", "SET", name, value]);
        assert_eq!(strings(&mut con, &["CONFIG", "GET", name]), [name, value]);
    }
}

#[test]
fn live_settings_take_effect_at_once() {
    let server = TestServer::start();
    let mut con = server.client();
    // maxclients: the next connection over it is refused.
    ok(&mut con, &["CONFIG", "SET", "maxclients", "1"]);
    assert_eq!(
        field(&info(&mut con, &["clients"]), "maxclients").as_deref(),
        Some("1")
    );
    let mut refused = server.raw();
    assert_eq!(
        refused.read(),
        Some(Resp::Error("ERR max number of clients reached".into()))
    );
    ok(&mut con, &["CONFIG", "SET", "maxclients", "100"]);
    let mut raw = server.raw();
    assert_eq!(raw.command(&[b"PING"]), Resp::Simple("PONG".into()));
    // proto-max-bulk-len: from the next request on.
    ok(&mut con, &["CONFIG", "SET", "proto-max-bulk-len", "1mb"]);
    raw.send(b"*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$1048577\r\n")
        .unwrap();
    assert_eq!(
        raw.read(),
        Some(Resp::Error(
            "ERR Protocol error: invalid bulk length".into()
        ))
    );
    assert!(raw.closed());
    // client-output-buffer-limit: a reply over the normal class's hard
    // limit closes the client.
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "proto-max-bulk-len",
            "512mb",
            "client-output-buffer-limit",
            "normal 1mb 0 0",
        ],
    );
    let big = "v".repeat(600 << 10);
    let _: () = redis::cmd("MSET")
        .arg("b1")
        .arg(&big)
        .arg("b2")
        .arg(&big)
        .query(&mut con)
        .unwrap();
    let mut raw = server.raw();
    raw.send(&encode(&[b"MGET", b"b1", b"b2"])).unwrap();
    assert!(raw.closed());
    let stats = info(&mut con, &["stats"]);
    assert_eq!(
        field(&stats, "client_output_buffer_limit_disconnections").as_deref(),
        Some("1")
    );
    ok(
        &mut con,
        &[
            "CONFIG",
            "SET",
            "client-output-buffer-limit",
            "normal 0 0 0",
        ],
    );
    let mut raw = server.raw();
    assert!(matches!(raw.command(&[b"MGET", b"b1", b"b2"]), Resp::Array(a) if a.len() == 2));
}

#[test]
fn requirepass_set_at_run_time_applies_to_new_connections() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_err(
        &mut con,
        &["AUTH", "x"],
        "ERR AUTH <password> called without any password configured for the default user. Are you sure your configuration is correct?",
    );
    // A binary password, as the Redis suite sets one.
    let mut admin = server.raw();
    assert_eq!(
        admin.command(&[b"CONFIG", b"SET", b"requirepass", b"abc\x00def"]),
        Resp::Simple("OK".into())
    );
    // Connections already in stay in; new ones must authenticate.
    assert_eq!(
        cmd(&mut con, &["PING"]).unwrap(),
        Value::SimpleString("PONG".into())
    );
    let mut raw = server.raw();
    assert_eq!(
        raw.command(&[b"PING"]),
        Resp::Error("NOAUTH Authentication required.".into())
    );
    assert!(
        matches!(raw.command(&[b"AUTH", b"abc"]), Resp::Error(e) if e.starts_with("WRONGPASS"))
    );
    assert_eq!(
        raw.command(&[b"AUTH", b"abc\x00def"]),
        Resp::Simple("OK".into())
    );
    assert_eq!(raw.command(&[b"PING"]), Resp::Simple("PONG".into()));
    // Cleared: a client that never authenticated may go on.
    let mut waiting = server.raw();
    assert!(matches!(waiting.command(&[b"GET", b"k"]), Resp::Error(e) if e.starts_with("NOAUTH")));
    ok(&mut con, &["CONFIG", "SET", "requirepass", ""]);
    assert_eq!(waiting.command(&[b"GET", b"k"]), Resp::Null);
    assert_eq!(
        strings(&mut con, &["CONFIG", "GET", "requirepass"]),
        ["requirepass", ""]
    );
}

#[test]
fn protected_mode_set_at_run_time_applies_to_new_connections() {
    let server = TestServer::start_with(|c| {
        c.treat_loopback_as_remote = true;
        c.protected_mode = false;
    });
    let mut con = server.client();
    ok(&mut con, &["CONFIG", "SET", "protected-mode", "yes"]);
    let mut raw = server.raw();
    assert!(matches!(raw.read(), Some(Resp::Error(e)) if e.starts_with("DENIED")));
    // The connection already in is not affected.
    ok(&mut con, &["CONFIG", "SET", "protected-mode", "no"]);
    let mut raw = server.raw();
    assert_eq!(raw.command(&[b"PING"]), Resp::Simple("PONG".into()));
}

#[test]
fn config_rewrite_help_and_bad_subcommands() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_err(
        &mut con,
        &["CONFIG", "REWRITE"],
        "ERR The server is running without a config file",
    );
    assert_err(
        &mut con,
        &["CONFIG", "REWRITE", "x"],
        "ERR wrong number of arguments for 'config|rewrite' command",
    );
    assert_err(
        &mut con,
        &["CONFIG", "RESETSTAT", "x"],
        "ERR wrong number of arguments for 'config|resetstat' command",
    );
    assert_err(
        &mut con,
        &["CONFIG", "FOO"],
        "ERR unknown subcommand 'FOO'. Try CONFIG HELP.",
    );
    assert_err(
        &mut con,
        &["CONFIG"],
        "ERR wrong number of arguments for 'config' command",
    );
    let help = strings(&mut con, &["CONFIG", "HELP"]);
    assert!(help[0].starts_with("CONFIG <subcommand>"));
    for sub in ["GET", "SET", "RESETSTAT", "REWRITE", "HELP"] {
        assert!(help.iter().any(|l| l.starts_with(sub)), "{sub}");
    }
}

#[test]
fn every_command_in_the_table_is_in_command_info_docs_and_list() {
    let server = TestServer::start();
    let mut con = server.client();
    let every = strings(&mut con, &["COMMAND", "LIST"]);
    // COMMAND COUNT, COMMAND, INFO and DOCS give the commands; LIST also
    // names their subcommands (`config|get`), as Redis 7 does.
    let names: Vec<String> = every.iter().filter(|n| !n.contains('|')).cloned().collect();
    assert!(names.len() < every.len());
    assert_eq!(int(&mut con, &["COMMAND", "COUNT"]) as usize, names.len());
    for expected in [
        "config",
        "info",
        "command",
        "function",
        "memory",
        "time",
        "lastsave",
        "save",
        "bgsave",
        "bgrewriteaof",
        "wait",
    ] {
        assert!(names.iter().any(|n| n == expected), "{expected}");
    }
    // Every name is a command the server runs (no "unknown command", no
    // "unknown subcommand").
    let mut raw = server.raw();
    for name in &every {
        if ["shutdown", "quit"].contains(&name.as_str()) {
            continue;
        }
        let mut request: Vec<&[u8]> = name.split('|').map(str::as_bytes).collect();
        request.push(b"help");
        let reply = raw.command(&request);
        assert!(
            !matches!(&reply, Resp::Error(e) if e.contains("unknown subcommand '")),
            "{name}: {reply:?}"
        );
        assert!(
            !matches!(&reply, Resp::Error(e) if e.contains("unknown command")),
            "{name}: {reply:?}"
        );
    }
    // COMMAND: one entry per name, in the same order.
    let Value::Array(entries) = cmd(&mut con, &["COMMAND"]).unwrap() else {
        panic!()
    };
    let entry_names: Vec<String> = entries
        .iter()
        .map(|e| match e {
            Value::Array(f) => {
                assert_eq!(f.len(), 10);
                redis::from_redis_value(&f[0]).unwrap()
            }
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(entry_names, names);
    // COMMAND INFO with every name: no nil among them.
    let mut info_args = vec!["COMMAND", "INFO"];
    info_args.extend(names.iter().map(String::as_str));
    let Value::Array(infos) = cmd(&mut con, &info_args).unwrap() else {
        panic!()
    };
    assert_eq!(infos.len(), names.len());
    assert!(infos
        .iter()
        .all(|i| matches!(i, Value::Array(f) if f.len() == 10)));
    // COMMAND DOCS: a summary and a group for every command.
    let mut raw = server.raw();
    raw.command(&[b"HELLO", b"3"]);
    let Resp::Map(docs) = raw.command(&[b"COMMAND", b"DOCS"]) else {
        panic!()
    };
    let doc_names: Vec<String> = docs
        .iter()
        .map(|(k, _)| match k {
            Resp::Bulk(b) => String::from_utf8(b.clone()).unwrap(),
            other => panic!("{other:?}"),
        })
        .collect();
    assert_eq!(doc_names, names);
    for (name, doc) in &docs {
        let Resp::Map(fields) = doc else {
            panic!("{name:?}")
        };
        let keys: Vec<&Resp> = fields.iter().map(|(k, _)| k).collect();
        assert!(keys.contains(&&Resp::bulk("summary")), "{name:?}");
        assert!(keys.contains(&&Resp::bulk("group")), "{name:?}");
    }
}

#[test]
fn command_subcommands_follow_redis() {
    let server = TestServer::start();
    let mut con = server.client();
    // DOCS of one command: summary, since, group (Redis's group names).
    let mut raw = server.raw();
    raw.command(&[b"HELLO", b"3"]);
    assert_eq!(
        raw.command(&[b"COMMAND", b"DOCS", b"zadd", b"nosuch"]),
        Resp::Map(vec![(
            Resp::bulk("zadd"),
            Resp::Map(vec![
                (Resp::bulk("summary"), Resp::bulk("Adds members to a sorted set, or updates their scores (NX, XX, GT, LT, CH, INCR).")),
                (Resp::bulk("since"), Resp::bulk("1.2.0")),
                (Resp::bulk("group"), Resp::bulk("sorted-set")),
            ])
        )])
    );
    // INFO of one command: Redis's ten fields.
    let Value::Array(info) = cmd(&mut con, &["COMMAND", "INFO", "get", "nosuch"]).unwrap() else {
        panic!()
    };
    assert_eq!(info[1], Value::Nil);
    let Value::Array(get) = &info[0] else {
        panic!()
    };
    assert_eq!(get[0], Value::BulkString(b"get".to_vec()));
    assert_eq!(&get[1..2], [Value::Int(2)]);
    assert_eq!(&get[3..6], [Value::Int(1), Value::Int(1), Value::Int(1)]);
    let categories: Vec<String> = redis::from_redis_value(&get[6]).unwrap();
    assert_eq!(categories, ["@read", "@string", "@fast"]);
    // GETKEYS from the table's key positions.
    assert_eq!(
        strings(
            &mut con,
            &["COMMAND", "GETKEYS", "mset", "a", "1", "b", "2"]
        ),
        ["a", "b"]
    );
    assert_eq!(
        strings(&mut con, &["COMMAND", "GETKEYS", "DEL", "x", "y", "z"]),
        ["x", "y", "z"]
    );
    assert_eq!(
        strings(&mut con, &["COMMAND", "GETKEYS", "set", "k", "v", "NX"]),
        ["k"]
    );
    assert_err(
        &mut con,
        &["COMMAND", "GETKEYS", "get"],
        "ERR wrong number of arguments for 'command|getkeys' command",
    );
    assert_err(
        &mut con,
        &["COMMAND", "GETKEYS", "nosuch", "a"],
        "ERR Invalid command specified",
    );
    assert_err(
        &mut con,
        &["COMMAND", "GETKEYS", "ping", "x"],
        "ERR The command has no key arguments",
    );
    assert_err(
        &mut con,
        &["COMMAND", "GETKEYS", "get", "a", "b"],
        "ERR Invalid number of arguments specified for command",
    );
    // LIST with filters.
    let z = strings(&mut con, &["COMMAND", "LIST", "FILTERBY", "PATTERN", "Z*"]);
    assert!(
        !z.is_empty() && z.iter().all(|n| n.starts_with('z')),
        "{z:?}"
    );
    let hash = strings(&mut con, &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "hash"]);
    assert!(
        hash.contains(&"hget".to_string()) && hash.iter().all(|n| n.starts_with('h')),
        "{hash:?}"
    );
    assert!(strings(
        &mut con,
        &["COMMAND", "LIST", "FILTERBY", "ACLCAT", "nosuch"]
    )
    .is_empty());
    assert!(strings(&mut con, &["COMMAND", "LIST", "FILTERBY", "MODULE", "m"]).is_empty());
    assert_err(
        &mut con,
        &["COMMAND", "LIST", "FILTERBY", "X", "y"],
        "ERR syntax error",
    );
    assert_err(&mut con, &["COMMAND", "LIST", "bla"], "ERR syntax error");
    assert_err(
        &mut con,
        &["COMMAND", "COUNT", "x"],
        "ERR wrong number of arguments for 'command|count' command",
    );
    assert_err(
        &mut con,
        &["COMMAND", "FOO"],
        "ERR unknown subcommand 'FOO'. Try COMMAND HELP.",
    );
    assert!(strings(&mut con, &["COMMAND", "HELP"])[0].starts_with("COMMAND <subcommand>"));
}

#[test]
fn function_starts_with_no_libraries() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(&mut con, &["FUNCTION", "FLUSH"]);
    ok(&mut con, &["FUNCTION", "FLUSH", "async"]);
    ok(&mut con, &["FUNCTION", "FLUSH", "SYNC"]);
    assert_err(
        &mut con,
        &["FUNCTION", "FLUSH", "x"],
        "ERR FUNCTION FLUSH only supports SYNC|ASYNC option",
    );
    assert_err(
        &mut con,
        &["FUNCTION", "FLUSH", "x", "y"],
        "ERR unknown subcommand or wrong number of arguments for 'FLUSH'. Try FUNCTION HELP.",
    );
    for args in [
        vec!["FUNCTION", "LIST"],
        vec!["FUNCTION", "LIST", "WITHCODE"],
        vec!["FUNCTION", "LIST", "LIBRARYNAME", "x*", "WITHCODE"],
    ] {
        assert_eq!(
            cmd(&mut con, &args).unwrap(),
            Value::Array(vec![]),
            "{args:?}"
        );
    }
    assert_err(
        &mut con,
        &["FUNCTION", "LIST", "LIBRARYNAME"],
        "ERR library name argument was not given",
    );
    assert_err(
        &mut con,
        &["FUNCTION", "LIST", "bogus"],
        "ERR Unknown argument bogus",
    );
    assert_err(
        &mut con,
        &["FUNCTION", "LOAD", "#!lua name=x"],
        "ERR No functions registered",
    );
    assert_err(
        &mut con,
        &["FUNCTION", "BOGUS"],
        "ERR unknown subcommand 'BOGUS'. Try FUNCTION HELP.",
    );
    assert_err(
        &mut con,
        &["FUNCTION"],
        "ERR wrong number of arguments for 'function' command",
    );
    assert!(strings(&mut con, &["FUNCTION", "HELP"])[0].starts_with("FUNCTION <subcommand>"));
}

#[test]
fn memory_usage_is_the_record_size() {
    let server = TestServer::start();
    let mut con = server.client();
    ok(&mut con, &["SET", "key", "value"]);
    // Header, key, type tag and value, rounded up to 8 bytes.
    let expected = (persimmon::format::RECORD_HEADER_BYTES as i64 + 3 + 1 + 5 + 7) / 8 * 8;
    assert_eq!(int(&mut con, &["MEMORY", "USAGE", "key"]), expected);
    assert_eq!(
        int(&mut con, &["MEMORY", "USAGE", "key", "SAMPLES", "0"]),
        expected
    );
    let big = "x".repeat(10_000);
    ok(&mut con, &["SET", "big", &big]);
    assert!(int(&mut con, &["MEMORY", "USAGE", "big"]) > 10_000);
    assert_eq!(
        cmd(&mut con, &["MEMORY", "USAGE", "missing"]).unwrap(),
        Value::Nil
    );
    assert_err(
        &mut con,
        &["MEMORY", "USAGE"],
        "ERR wrong number of arguments for 'memory|usage' command",
    );
    assert_err(
        &mut con,
        &["MEMORY", "USAGE", "key", "SAMPLES", "-1"],
        "ERR syntax error",
    );
    assert_err(
        &mut con,
        &["MEMORY", "USAGE", "key", "SAMPLES", "x"],
        "ERR value is not an integer or out of range",
    );
    assert_err(
        &mut con,
        &["MEMORY", "USAGE", "key", "bla"],
        "ERR syntax error",
    );
    assert_err(
        &mut con,
        &["MEMORY", "FOO"],
        "ERR unknown subcommand 'FOO'. Try MEMORY HELP.",
    );
    let Value::Array(stats) = cmd(&mut con, &["MEMORY", "STATS"]).unwrap() else {
        panic!()
    };
    let keys = stats
        .chunks(2)
        .find(|kv| kv[0] == Value::BulkString(b"keys.count".to_vec()))
        .map(|kv| kv[1].clone());
    assert_eq!(keys, Some(Value::Int(2)));
    let doctor: String = redis::cmd("MEMORY").arg("DOCTOR").query(&mut con).unwrap();
    assert!(doctor.contains("bytes"), "{doctor}");
    ok(&mut con, &["MEMORY", "PURGE"]);
    assert!(strings(&mut con, &["MEMORY", "HELP"])[0].starts_with("MEMORY <subcommand>"));
}

#[test]
fn time_saves_and_wait() {
    let server = TestServer::start();
    let mut con = server.client();
    let time = strings(&mut con, &["TIME"]);
    let secs: u64 = time[0].parse().unwrap();
    let micros: u64 = time[1].parse().unwrap();
    assert!(
        secs.abs_diff(unix_now()) <= 2 && micros < 1_000_000,
        "{time:?}"
    );
    let started = int(&mut con, &["LASTSAVE"]) as u64;
    assert!(started.abs_diff(unix_now()) <= 60);
    ok(&mut con, &["SAVE"]);
    assert!(int(&mut con, &["LASTSAVE"]) as u64 >= started);
    assert_eq!(
        cmd(&mut con, &["BGSAVE"]).unwrap(),
        Value::SimpleString("Background saving started".into())
    );
    assert_eq!(
        cmd(&mut con, &["BGSAVE", "SCHEDULE"]).unwrap(),
        Value::SimpleString("Background saving started".into())
    );
    assert_err(&mut con, &["BGSAVE", "x"], "ERR syntax error");
    assert_eq!(
        cmd(&mut con, &["BGREWRITEAOF"]).unwrap(),
        Value::SimpleString("Background append only file rewriting started".into())
    );
    let persistence = info(&mut con, &["persistence"]);
    assert_eq!(field(&persistence, "rdb_saves").as_deref(), Some("3"));
    assert_eq!(field(&persistence, "aof_rewrites").as_deref(), Some("1"));
    assert_eq!(
        field(&persistence, "rdb_last_save_time"),
        Some(int(&mut con, &["LASTSAVE"]).to_string())
    );
    // WAIT: no replicas, so 0; at once when it asks for none, at the
    // timeout when it asks for one (as Redis; replication.rs has the rest).
    assert_eq!(int(&mut con, &["WAIT", "0", "0"]), 0);
    let asked = std::time::Instant::now();
    assert_eq!(int(&mut con, &["WAIT", "1", "300"]), 0);
    assert!(asked.elapsed() >= Duration::from_millis(290));
    assert!(asked.elapsed() < Duration::from_secs(5));
    assert_err(
        &mut con,
        &["WAIT", "x", "0"],
        "ERR value is not an integer or out of range",
    );
    assert_err(
        &mut con,
        &["WAIT", "0", "x"],
        "ERR timeout is not an integer or out of range",
    );
    assert_err(&mut con, &["WAIT", "0", "-1"], "ERR timeout is negative");
    assert_err(
        &mut con,
        &["WAIT", "0"],
        "ERR wrong number of arguments for 'wait' command",
    );
    assert_err(
        &mut con,
        &["TIME", "x"],
        "ERR wrong number of arguments for 'time' command",
    );
    assert_err(
        &mut con,
        &["SAVE", "x"],
        "ERR wrong number of arguments for 'save' command",
    );
}
