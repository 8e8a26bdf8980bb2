//! The command table through a real server: subcommands are rows of their
//! own (`config|get`, `client|list`), as in Redis 7, and COMMAND (LIST,
//! COUNT, INFO, DOCS, GETKEYS), the arity errors, `INFO commandstats` and
//! `CLIENT LIST` all read them from the table.

mod common;

use common::{cmd, err, Resp, TestServer};
use redis::Value;

fn strings(con: &mut redis::Connection, args: &[&str]) -> Vec<String> {
    redis::from_redis_value(&cmd(con, args).unwrap()).unwrap()
}

fn text(v: &Value) -> String {
    redis::from_redis_value(v).unwrap()
}

/// The fields of a `COMMAND INFO` entry.
fn fields(entry: &Value) -> &[Value] {
    match entry {
        Value::Array(f) if f.len() == 10 => f,
        other => panic!("not a COMMAND INFO entry: {other:?}"),
    }
}

#[test]
fn command_list_names_subcommands_and_every_command_once() {
    let server = TestServer::start();
    let mut con = server.client();
    let names = strings(&mut con, &["COMMAND", "LIST"]);
    for expected in ["config|get", "client|list", "config", "client", "get"] {
        assert!(names.iter().any(|n| n == expected), "{expected}");
    }
    let mut seen = std::collections::HashSet::new();
    for name in &names {
        assert!(seen.insert(name), "{name} twice");
    }
    // Each subcommand comes after its container, as Redis lists them.
    for (i, name) in names.iter().enumerate() {
        if let Some((container, _)) = name.split_once('|') {
            let at = names.iter().position(|n| n == container).unwrap();
            assert!(at < i, "{name} before {container}");
        }
    }
}

#[test]
fn command_count_counts_the_top_level_commands() {
    let server = TestServer::start();
    let mut con = server.client();
    let names = strings(&mut con, &["COMMAND", "LIST"]);
    let top = names.iter().filter(|n| !n.contains('|')).count();
    assert!(top < names.len());
    let Value::Int(count) = cmd(&mut con, &["COMMAND", "COUNT"]).unwrap() else {
        panic!()
    };
    assert_eq!(count as usize, top);
    let Value::Array(entries) = cmd(&mut con, &["COMMAND"]).unwrap() else {
        panic!()
    };
    assert_eq!(entries.len(), top);
}

#[test]
fn command_info_of_a_container_holds_its_subcommands() {
    let server = TestServer::start();
    let mut con = server.client();
    let Value::Array(infos) = cmd(&mut con, &["COMMAND", "INFO", "client"]).unwrap() else {
        panic!()
    };
    let client = fields(&infos[0]);
    assert_eq!(text(&client[0]), "client");
    assert_eq!(client[1], Value::Int(-2));
    let Value::Array(subs) = &client[9] else {
        panic!("{:?}", client[9])
    };
    let sub_names: Vec<String> = subs.iter().map(|s| text(&fields(s)[0])).collect();
    for expected in ["client|list", "client|id", "client|kill", "client|help"] {
        assert!(sub_names.iter().any(|n| n == expected), "{sub_names:?}");
    }
    assert!(sub_names.iter().all(|n| n.starts_with("client|")));
}

#[test]
fn command_info_answers_for_a_subcommand() {
    let server = TestServer::start();
    let mut con = server.client();
    let Value::Array(infos) = cmd(
        &mut con,
        &["COMMAND", "INFO", "CONFIG|GET", "config|nosuch"],
    )
    .unwrap() else {
        panic!()
    };
    assert_eq!(infos[1], Value::Nil);
    let get = fields(&infos[0]);
    assert_eq!(text(&get[0]), "config|get");
    assert_eq!(get[1], Value::Int(-3));
    let flags: Vec<String> = redis::from_redis_value(&get[2]).unwrap();
    assert!(flags.contains(&"admin".to_string()), "{flags:?}");
    assert_eq!(&get[3..6], [Value::Int(0), Value::Int(0), Value::Int(0)]);
    assert_eq!(get[9], Value::Array(vec![]));
    // A subcommand with a key: MEMORY USAGE key.
    let Value::Array(infos) = cmd(&mut con, &["COMMAND", "INFO", "memory|usage"]).unwrap() else {
        panic!()
    };
    let usage = fields(&infos[0]);
    assert_eq!(&usage[3..6], [Value::Int(2), Value::Int(2), Value::Int(1)]);
}

#[test]
fn command_docs_of_a_container_has_its_subcommands() {
    let server = TestServer::start();
    let mut raw = server.raw();
    raw.command(&[b"HELLO", b"3"]);
    let Resp::Map(docs) = raw.command(&[b"COMMAND", b"DOCS", b"config"]) else {
        panic!()
    };
    assert_eq!(docs.len(), 1);
    let (name, Resp::Map(doc)) = &docs[0] else {
        panic!("{docs:?}")
    };
    assert_eq!(name, &Resp::bulk("config"));
    let field = |doc: &[(Resp, Resp)], key: &str| {
        doc.iter()
            .find(|(k, _)| k == &Resp::bulk(key))
            .map(|(_, v)| v.clone())
    };
    assert_eq!(field(doc, "group"), Some(Resp::bulk("server")));
    let Some(Resp::Map(subs)) = field(doc, "subcommands") else {
        panic!("{doc:?}")
    };
    let get = subs
        .iter()
        .find(|(k, _)| k == &Resp::bulk("config|get"))
        .map(|(_, v)| v)
        .expect("config|get");
    let Resp::Map(get) = get else { panic!() };
    assert_eq!(field(get, "since"), Some(Resp::bulk("2.0.0")));
    assert!(field(get, "summary").is_some());
    assert!(field(get, "subcommands").is_none());
    // A command without subcommands has no such field.
    let Resp::Map(docs) = raw.command(&[b"COMMAND", b"DOCS", b"get"]) else {
        panic!()
    };
    let Resp::Map(doc) = &docs[0].1 else { panic!() };
    assert!(field(doc, "subcommands").is_none());
}

#[test]
fn a_wrong_argument_count_names_the_subcommand() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(
        err(&mut con, &["CONFIG", "GET"]),
        "ERR wrong number of arguments for 'config|get' command"
    );
    assert_eq!(
        err(&mut con, &["client", "ID", "x"]),
        "ERR wrong number of arguments for 'client|id' command"
    );
    // No subcommand at all: the container's own arity.
    assert_eq!(
        err(&mut con, &["CONFIG"]),
        "ERR wrong number of arguments for 'config' command"
    );
}

#[test]
fn an_unknown_subcommand_gets_redis_text() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(
        err(&mut con, &["CONFIG", "FOO"]),
        "ERR unknown subcommand 'FOO'. Try CONFIG HELP."
    );
    let long = "x".repeat(200);
    assert_eq!(
        err(&mut con, &["memory", &long]),
        format!(
            "ERR unknown subcommand '{}'. Try MEMORY HELP.",
            &long[..128]
        )
    );
    // Subcommands are named in any case.
    let Value::Array(_) = cmd(&mut con, &["config", "gEt", "maxmemory"]).unwrap() else {
        panic!()
    };
}

#[test]
fn commandstats_count_each_subcommand() {
    let server = TestServer::start();
    let mut con = server.client();
    cmd(&mut con, &["CONFIG", "GET", "maxmemory"]).unwrap();
    cmd(&mut con, &["config", "get", "port"]).unwrap();
    err(&mut con, &["CONFIG", "SET", "maxmemory"]);
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut con)
        .unwrap();
    let line = |name: &str| {
        info.lines()
            .find_map(|l| l.strip_prefix(&format!("cmdstat_{name}:")))
            .map(str::to_string)
    };
    let get = line("config|get").unwrap_or_else(|| panic!("{info}"));
    assert!(get.starts_with("calls=2,"), "{get}");
    let set = line("config|set").unwrap_or_else(|| panic!("{info}"));
    assert!(set.starts_with("calls=0,"), "{set}");
    assert!(set.contains("rejected_calls=1"), "{set}");
    assert_eq!(line("config"), None, "{info}");
}

#[test]
fn client_list_shows_the_subcommand_last_run() {
    let server = TestServer::start();
    let mut con = server.client();
    let Value::Int(id) = cmd(&mut con, &["CLIENT", "ID"]).unwrap() else {
        panic!()
    };
    let list = text(&cmd(&mut con, &["CLIENT", "LIST"]).unwrap());
    let me = list
        .lines()
        .find(|l| l.starts_with(&format!("id={id} ")))
        .unwrap_or_else(|| panic!("{list}"));
    assert!(me.contains(" cmd=client|list "), "{me}");
}

#[test]
fn getkeys_finds_the_key_of_memory_usage() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(
        strings(&mut con, &["COMMAND", "GETKEYS", "MEMORY", "USAGE", "k"]),
        ["k"]
    );
    assert_eq!(
        strings(&mut con, &["COMMAND", "GETKEYS", "object", "encoding", "o"]),
        ["o"]
    );
    assert_eq!(
        err(&mut con, &["COMMAND", "GETKEYS", "config", "get", "x"]),
        "ERR The command has no key arguments"
    );
    assert_eq!(
        err(&mut con, &["COMMAND", "GETKEYS", "config", "nosuch", "x"]),
        "ERR Invalid command specified"
    );
}

#[test]
fn getkeys_finds_movable_keys() {
    let server = TestServer::start();
    let mut con = server.client();
    assert_eq!(
        strings(
            &mut con,
            &[
                "COMMAND",
                "GETKEYS",
                "ZUNIONSTORE",
                "d",
                "2",
                "a",
                "b",
                "WEIGHTS",
                "1",
                "2"
            ]
        ),
        ["d", "a", "b"]
    );
    assert_eq!(
        strings(
            &mut con,
            &["COMMAND", "GETKEYS", "SORT", "src", "BY", "w_*", "STORE", "dst"]
        ),
        ["src", "dst"]
    );
    assert_eq!(
        strings(
            &mut con,
            &["COMMAND", "GETKEYS", "BLMPOP", "0", "2", "a", "b", "LEFT"]
        ),
        ["a", "b"]
    );
    assert_eq!(
        err(&mut con, &["COMMAND", "GETKEYS", "ZUNION", "3", "a", "b"]),
        "ERR Invalid arguments specified for command"
    );
}
