//! ACL through a real server: a user limited to `~app:*` and `+@read` is
//! refused everything else on every path a command takes (plain, queued in
//! MULTI and at EXEC, a script's `redis.call`, SORT's STORE and BY, pub/sub
//! channels, blocking pops), with Redis's words; malformed rules get clear
//! errors and change nothing; ACL SAVE and LOAD round-trip the users
//! through the ACL file; `requirepass` is the default user's password;
//! DELUSER closes its user's connections; COMMAND INFO and ACL CAT agree.

mod common;

use common::{Raw, Resp, TestServer};

/// Sends `line` split on spaces.
fn q(raw: &mut Raw, line: &str) -> Resp {
    let words: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
    raw.command(&words)
}

/// Sends `words` as they are (arguments with spaces).
fn qw(raw: &mut Raw, words: &[&str]) -> Resp {
    let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    raw.command(&words)
}

fn ok(r: Resp) {
    assert_eq!(r, Resp::Simple("OK".into()));
}

fn error(r: Resp) -> String {
    match r {
        Resp::Error(e) => e,
        other => panic!("expected an error, got {other:?}"),
    }
}

const NOPERM_KEYS: &str =
    "NOPERM this user has no permissions to access one of the keys used as arguments";
const NOPERM_CHANNELS: &str =
    "NOPERM this user has no permissions to access one of the channels used as arguments";

fn noperm_command(name: &str) -> String {
    format!("NOPERM this user has no permissions to run the '{name}' command")
}

/// A connection logged in as `user` (password `pw`).
fn login(server: &TestServer, user: &str) -> Raw {
    let mut raw = server.raw();
    ok(q(&mut raw, &format!("AUTH {user} pw")));
    raw
}

#[test]
fn a_read_only_app_user_is_refused_everything_else_on_every_path() {
    let server = TestServer::start();
    let mut admin = server.raw();
    ok(q(&mut admin, "ACL SETUSER reader on >pw ~app:* +@read"));
    ok(q(&mut admin, "SET app:1 one"));
    ok(q(&mut admin, "SET other x"));
    let mut c = login(&server, "reader");
    assert_eq!(q(&mut c, "GET app:1"), Resp::bulk("one"));
    assert_eq!(
        q(&mut c, "ACL WHOAMI"),
        Resp::Error(noperm_command("acl|whoami"))
    );
    assert_eq!(error(q(&mut c, "GET other")), NOPERM_KEYS);
    assert_eq!(error(q(&mut c, "MGET app:1 other")), NOPERM_KEYS);
    for (line, name) in [
        ("SET app:1 two", "set"),
        ("DEL app:1", "del"),
        ("MULTI", "multi"),
        ("EVAL return 1 0", "eval"),
        ("SORT app:l STORE app:2", "sort"),
        ("PUBLISH app:c hi", "publish"),
        ("SUBSCRIBE app:c", "subscribe"),
        ("BLPOP app:l 0", "blpop"),
        ("CONFIG SET maxmemory 0", "config|set"),
        ("FLUSHALL", "flushall"),
    ] {
        assert_eq!(error(q(&mut c, line)), noperm_command(name), "{line}");
    }
    // Nothing was written.
    assert_eq!(q(&mut admin, "GET app:1"), Resp::bulk("one"));
    assert_eq!(q(&mut admin, "EXISTS app:2"), Resp::Int(0));
}

/// The reader again, with the commands of each path allowed, so its keys
/// and channels are what is refused.
fn app_user(server: &TestServer) -> (Raw, Raw) {
    let mut admin = server.raw();
    ok(q(
        &mut admin,
        "ACL SETUSER app on >pw ~app:* resetchannels &app:* +@read +multi +exec +discard +eval \
         +sort +publish +subscribe +blpop +lpush",
    ));
    let c = login(server, "app");
    (admin, c)
}

#[test]
fn transactions_are_checked_when_queued_and_again_at_exec() {
    let server = TestServer::start();
    let (mut admin, mut c) = app_user(&server);
    ok(q(&mut c, "MULTI"));
    assert_eq!(error(q(&mut c, "SET app:1 x")), noperm_command("set"));
    assert_eq!(error(q(&mut c, "GET other")), NOPERM_KEYS);
    assert!(error(q(&mut c, "EXEC")).starts_with("EXECABORT"));
    // Allowed when queued, refused at EXEC once the rules changed.
    ok(q(&mut c, "MULTI"));
    assert_eq!(q(&mut c, "LPUSH app:l a"), Resp::Simple("QUEUED".into()));
    assert_eq!(q(&mut c, "GET app:1"), Resp::Simple("QUEUED".into()));
    ok(q(&mut admin, "ACL SETUSER app -lpush"));
    let Resp::Array(replies) = q(&mut c, "EXEC") else {
        panic!("EXEC replies an array")
    };
    assert_eq!(replies[0], Resp::Error(noperm_command("lpush")));
    assert_eq!(replies[1], Resp::Null);
    assert_eq!(q(&mut admin, "EXISTS app:l"), Resp::Int(0));
    let log = flat_log(&mut admin);
    assert!(log.contains("context=multi object=lpush"), "{log}");
}

#[test]
fn scripts_calls_are_checked_with_the_script_wording() {
    let server = TestServer::start();
    let (mut admin, mut c) = app_user(&server);
    ok(q(&mut admin, "SET app:1 one"));
    let got = qw(
        &mut c,
        &["EVAL", "return redis.call('get', KEYS[1])", "1", "app:1"],
    );
    assert_eq!(got, Resp::bulk("one"));
    let e = error(qw(
        &mut c,
        &["EVAL", "return redis.call('set', 'app:1', 'x')", "0"],
    ));
    assert!(
        e.starts_with("ERR The user executing the script can't run this command or subcommand"),
        "{e}"
    );
    let e = error(qw(
        &mut c,
        &["EVAL", "return redis.call('get', 'other')", "0"],
    ));
    assert!(
        e.starts_with("ERR The user executing the script can't access at least one of the keys"),
        "{e}"
    );
    // redis.acl_check_cmd asks without running (true is 1, false nil).
    let check = |c: &mut Raw, args: &str| {
        qw(
            c,
            &["EVAL", &format!("return redis.acl_check_cmd({args})"), "0"],
        )
    };
    assert_eq!(check(&mut c, "'get', 'app:1'"), Resp::Int(1));
    assert_eq!(check(&mut c, "'get', 'other'"), Resp::Null);
    assert_eq!(check(&mut c, "'set', 'app:1', 'x'"), Resp::Null);
    let e = error(check(&mut c, "'nosuchcommand'"));
    assert!(
        e.starts_with("ERR Invalid command passed to redis.acl_check_cmd()"),
        "{e}"
    );
    // EVAL's own keys are checked before the script runs.
    assert_eq!(
        error(qw(&mut c, &["EVAL", "return 1", "1", "other"])),
        NOPERM_KEYS
    );
    assert_eq!(q(&mut admin, "GET app:1"), Resp::bulk("one"));
    let log = flat_log(&mut admin);
    assert!(log.contains("context=lua object=set"), "{log}");
    assert!(log.contains("reason=key context=lua object=other"), "{log}");
}

#[test]
fn sort_store_by_and_get_need_the_keys_they_touch() {
    let server = TestServer::start();
    let (mut admin, mut c) = app_user(&server);
    assert_eq!(q(&mut admin, "RPUSH app:l 3 1 2"), Resp::Int(3));
    assert_eq!(error(q(&mut c, "SORT app:l STORE other")), NOPERM_KEYS);
    assert_eq!(error(q(&mut c, "SORT other")), NOPERM_KEYS);
    assert_eq!(
        error(q(&mut c, "SORT app:l BY app:w_*")),
        "ERR BY option of SORT denied due to insufficient ACL permissions."
    );
    assert_eq!(
        error(q(&mut c, "SORT app:l GET #")),
        "ERR GET option of SORT denied due to insufficient ACL permissions."
    );
    // The destination needs write: ~app:* is read and write, +sort allows
    // the store.
    assert_eq!(q(&mut c, "SORT app:l STORE app:sorted"), Resp::Int(3));
    assert_eq!(q(&mut admin, "EXISTS other"), Resp::Int(0));
}

#[test]
fn channels_are_checked_for_publish_and_subscribe() {
    let server = TestServer::start();
    let (mut admin, mut c) = app_user(&server);
    assert_eq!(q(&mut c, "PUBLISH app:news hi"), Resp::Int(0));
    assert_eq!(error(q(&mut c, "PUBLISH other hi")), NOPERM_CHANNELS);
    assert_eq!(
        error(q(&mut c, "SUBSCRIBE app:news other")),
        NOPERM_CHANNELS
    );
    let mut sub = login(&server, "app");
    let confirm = q(&mut sub, "SUBSCRIBE app:news");
    assert_eq!(
        confirm,
        Resp::Array(vec![
            Resp::bulk("subscribe"),
            Resp::bulk("app:news"),
            Resp::Int(1)
        ])
    );
    // Taking the channel away closes the subscriber.
    ok(q(&mut admin, "ACL SETUSER app resetchannels"));
    assert!(sub.closed());
    let log = flat_log(&mut admin);
    assert!(
        log.contains("reason=channel context=toplevel object=other"),
        "{log}"
    );
}

#[test]
fn blocking_pops_are_checked_before_they_block() {
    let server = TestServer::start();
    let (_admin, mut c) = app_user(&server);
    assert_eq!(error(q(&mut c, "BLPOP other 0")), NOPERM_KEYS);
    assert_eq!(error(q(&mut c, "BLPOP app:l other 0")), NOPERM_KEYS);
    assert_eq!(q(&mut c, "BLPOP app:l 0.05"), Resp::Null);
}

/// ACL LOG as `key=value` words, entries joined by ` | `.
fn flat_log(admin: &mut Raw) -> String {
    let Resp::Array(entries) = q(admin, "ACL LOG") else {
        panic!("ACL LOG replies an array")
    };
    let mut out = Vec::new();
    for e in entries {
        let Resp::Array(fields) = e else {
            panic!("an entry is a map")
        };
        let mut words = Vec::new();
        for pair in fields.chunks(2) {
            if let (Resp::Bulk(k), Resp::Bulk(v)) = (&pair[0], &pair[1]) {
                if [&b"reason"[..], b"context", b"object", b"username"].contains(&&k[..]) {
                    words.push(format!(
                        "{}={}",
                        String::from_utf8_lossy(k),
                        String::from_utf8_lossy(v)
                    ));
                }
            }
        }
        out.push(words.join(" "));
    }
    out.join(" | ")
}

#[test]
fn malformed_rules_get_clear_errors_and_change_nothing() {
    let server = TestServer::start();
    let mut c = server.raw();
    for (rule, reason) in [
        ("bogus", "Syntax error"),
        ("+nosuchcommand", "Unknown command or category name in ACL"),
        ("+@nosuchcategory", "Unknown command or category name in ACL"),
        ("+config|nosuchsub", "Unknown command or category name in ACL"),
        ("+config|get|maxmemory", "Allowing first-arg of a subcommand is not supported"),
        ("#abc", "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters"),
        ("<neverset", "The password you are trying to remove from the user does not exist"),
        ("%X~key", "Syntax error"),
    ] {
        let got = error(q(&mut c, &format!("ACL SETUSER u on {rule}")));
        assert_eq!(got, format!("ERR Error in ACL SETUSER modifier '{rule}': {reason}"));
    }
    // A failed SETUSER created no user and changed no existing one.
    assert_eq!(q(&mut c, "ACL GETUSER u"), Resp::Null);
    ok(q(&mut c, "ACL SETUSER u on ~a:* +get"));
    let before = q(&mut c, "ACL LIST");
    assert!(error(q(&mut c, "ACL SETUSER u +set bogus")).contains("'bogus'"));
    assert_eq!(q(&mut c, "ACL LIST"), before);
    let e = error(q(&mut c, "ACL SETUSER u allkeys ~more:*"));
    assert!(e.contains("Adding a pattern after the * pattern"), "{e}");
    let e = error(qw(&mut c, &["ACL", "SETUSER", "u", "(~a", "+get"]));
    assert_eq!(
        e,
        "ERR Unmatched parenthesis in acl selector starting at '(~a +get'."
    );
    let e = error(qw(&mut c, &["ACL", "SETUSER", "a b"]));
    assert_eq!(e, "ERR Usernames can't contain spaces or null characters");
    assert_eq!(
        error(q(&mut c, "ACL DELUSER default")),
        "ERR The 'default' user cannot be removed"
    );
}

#[test]
fn acl_save_and_load_round_trip_through_the_file() {
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("users.acl");
    std::fs::write(&path, "user default on nopass ~* &* +@all\n").unwrap();
    let aclfile = path.clone();
    let server = TestServer::start_with(move |c| c.aclfile = Some(aclfile));
    let mut c = server.raw();
    ok(qw(
        &mut c,
        &[
            "ACL", "SETUSER", "alice", "on", ">pw", "~app:*", "%R~ro:*", "&news", "-@all",
            "+@read", "-keys",
        ],
    ));
    ok(qw(
        &mut c,
        &[
            "ACL",
            "SETUSER",
            "bob",
            "off",
            "(+set ~w:*)",
            "(+get %R~r:*)",
        ],
    ));
    let before = q(&mut c, "ACL LIST");
    ok(q(&mut c, "ACL SAVE"));
    let text = std::fs::read_to_string(&path).unwrap();
    assert!(text.starts_with("user alice on #"), "{text}");
    assert!(
        text.contains(" ~app:* %R~ro:* resetchannels &news -@all +@read -keys\n"),
        "{text}"
    );
    assert!(text.contains("user bob off resetchannels -@all (~w:* resetchannels -@all +set) (%R~r:* resetchannels -@all +get)\n"), "{text}");
    assert_eq!(
        std::fs::read_dir(dir.path()).unwrap().count(),
        1,
        "no temporary file is left"
    );
    // Change everything, then LOAD brings the saved users back.
    ok(q(&mut c, "ACL SETUSER carol on nopass"));
    assert_eq!(q(&mut c, "ACL DELUSER alice bob"), Resp::Int(2));
    let mut alice = server.raw();
    ok(q(&mut c, "ACL LOAD"));
    assert_eq!(q(&mut c, "ACL LIST"), before);
    ok(q(&mut alice, "AUTH alice pw"));
    assert_eq!(q(&mut alice, "GET app:x"), Resp::Null);
    // A file with a duplicate user loads nothing.
    std::fs::write(&path, format!("{text}user alice on nopass\n")).unwrap();
    let e = error(q(&mut c, "ACL LOAD"));
    assert!(e.contains("Duplicate user 'alice' found"), "{e}");
    assert_eq!(q(&mut c, "ACL LIST"), before);
}

#[test]
fn requirepass_is_the_default_users_password() {
    let server = TestServer::start();
    let mut c = server.raw();
    ok(q(&mut c, "CONFIG SET requirepass secret"));
    let mut fresh = server.raw();
    assert_eq!(
        error(q(&mut fresh, "GET x")),
        "NOAUTH Authentication required."
    );
    assert_eq!(
        error(q(&mut fresh, "AUTH wrong")),
        "WRONGPASS invalid username-password pair or user is disabled."
    );
    ok(q(&mut fresh, "AUTH secret"));
    ok(q(&mut fresh, "AUTH default secret"));
    let mut hello = server.raw();
    let Resp::Map(_) = q(&mut hello, "HELLO 3 AUTH default secret") else {
        panic!("HELLO 3 replies a map")
    };
    assert_eq!(q(&mut hello, "ACL WHOAMI"), Resp::bulk("default"));
    let log = flat_log(&mut c);
    assert!(
        log.contains("reason=auth context=toplevel object=AUTH username=default"),
        "{log}"
    );
    ok(qw(&mut c, &["CONFIG", "SET", "requirepass", ""]));
    let mut open = server.raw();
    ok(q(&mut open, "SET x 1"));
}

#[test]
fn deluser_closes_its_connections_and_client_list_names_users() {
    let server = TestServer::start();
    let mut admin = server.raw();
    ok(q(&mut admin, "ACL SETUSER app on >pw +@all ~*"));
    let mut a = login(&server, "app");
    ok(q(&mut a, "CLIENT SETNAME app-conn"));
    let Resp::Bulk(list) = q(&mut admin, "CLIENT LIST") else {
        panic!("a bulk")
    };
    let list = String::from_utf8(list).unwrap();
    assert!(
        list.lines()
            .any(|l| l.contains("name=app-conn") && l.contains(" user=app ")),
        "{list}"
    );
    let mut b = login(&server, "app");
    assert_eq!(q(&mut admin, "CLIENT KILL USER app"), Resp::Int(2));
    assert!(a.closed() && b.closed());
    let mut a = login(&server, "app");
    assert_eq!(q(&mut admin, "ACL DELUSER app"), Resp::Int(1));
    assert!(a.closed());
    assert_eq!(
        error(q(&mut admin, "CLIENT KILL USER app")),
        "ERR No such user 'app'"
    );
}

#[test]
fn command_info_and_acl_cat_read_the_same_categories() {
    let server = TestServer::start();
    let mut c = server.raw();
    let Resp::Array(cats) = q(&mut c, "ACL CAT") else {
        panic!("an array")
    };
    assert_eq!(cats.len(), 21);
    let Resp::Array(read) = q(&mut c, "ACL CAT read") else {
        panic!("an array")
    };
    assert!(read.contains(&Resp::bulk("get")) && !read.contains(&Resp::bulk("set")));
    let Resp::Array(info) = q(&mut c, "COMMAND INFO get") else {
        panic!("an array")
    };
    let Resp::Array(entry) = &info[0] else {
        panic!("an entry")
    };
    let categories = format!("{:?}", entry[6]);
    for c in ["@read", "@string", "@fast"] {
        assert!(categories.contains(c), "{categories}");
    }
    let Resp::Array(listed) = q(&mut c, "COMMAND LIST FILTERBY ACLCAT read") else {
        panic!("an array")
    };
    assert_eq!(listed.len(), read.len());
}
