//! The stream commands through a real server: ids (`*`, `ms-*`, explicit,
//! and every malformed form refused with Redis's words), ranges, trims,
//! XSETID, the keyspace commands on a stream (TYPE, OBJECT ENCODING,
//! RENAME, COPY, DEL), blocking XREAD woken by XADD, and consumer groups
//! (XREADGROUP, XPENDING, XACK, XCLAIM, XAUTOCLAIM with deleted entries,
//! XINFO), each reply checked against what redis-server 7.0.15 answers;
//! and RESTORE of a payload redis-server 7.0.15's DUMP wrote, and DUMP /
//! RESTORE round trips.

mod common;

use std::time::{Duration, Instant};

use common::{Raw, Resp, TestServer};

/// A reply as one line (see `geo.rs`): nested arrays in brackets.
fn flat(r: &Resp) -> String {
    fn item(r: &Resp) -> String {
        match r {
            Resp::Array(items) => {
                format!("[{}]", items.iter().map(item).collect::<Vec<_>>().join("|"))
            }
            other => flat(other),
        }
    }
    match r {
        Resp::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Resp::Int(n) => n.to_string(),
        Resp::Simple(s) | Resp::Error(s) => s.clone(),
        Resp::Null => "(nil)".into(),
        Resp::Array(items) => items.iter().map(item).collect::<Vec<_>>().join("|"),
        Resp::Other(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

fn q(raw: &mut Raw, request: &str) -> String {
    let words: Vec<&[u8]> = request.split(' ').map(str::as_bytes).collect();
    flat(&raw.command(&words))
}

fn check(raw: &mut Raw, script: &[(&str, &str)]) {
    for (request, want) in script {
        assert_eq!(q(raw, request), *want, "{request}");
    }
}

const BAD_ID: &str = "ERR Invalid stream ID specified as stream command argument";

#[test]
fn ids_are_checked_and_ordered() {
    let server = TestServer::start();
    let mut raw = server.raw();
    check(
        &mut raw,
        &[
            ("XADD s 1-1 a 1", "1-1"),
            ("XADD s 1-* b 2", "1-2"),
            ("XADD s 5-* c 3", "5-0"),
            (
                "XADD s 5 d 4",
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ),
            (
                "XADD s 4-9 d 4",
                "ERR The ID specified in XADD is equal or smaller than the target stream top item",
            ),
            (
                "XADD s 0-0 d 4",
                "ERR The ID specified in XADD must be greater than 0-0",
            ),
            ("XADD s 1-x d 4", BAD_ID),
            ("XADD s -1 d 4", BAD_ID),
            ("XADD s 18446744073709551616-0 d 4", BAD_ID),
            ("XADD s 1-18446744073709551616 d 4", BAD_ID),
            (
                "XADD s 6-0 odd",
                "ERR wrong number of arguments for 'xadd' command",
            ),
            ("XLEN s", "3"),
            ("XRANGE s - +", "[1-1|[a|1]]|[1-2|[b|2]]|[5-0|[c|3]]"),
            ("XREVRANGE s + - COUNT 2", "[5-0|[c|3]]|[1-2|[b|2]]"),
            ("XRANGE s (1-1 5", "[1-2|[b|2]]|[5-0|[c|3]]"),
            ("XRANGE s 1 1", "[1-1|[a|1]]|[1-2|[b|2]]"),
            ("XRANGE s (- +", BAD_ID),
            ("XRANGE s 1-x +", BAD_ID),
            ("XRANGE s - + COUNT 0", "(nil)"),
            ("XRANGE missing - +", ""),
            (
                "XADD t 18446744073709551615-18446744073709551615 a 1",
                "18446744073709551615-18446744073709551615",
            ),
            (
                "XADD t * a 1",
                "ERR The stream has exhausted the last possible ID, unable to add more items",
            ),
            ("SET str x", "OK"),
            (
                "XADD str * a 1",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "XRANGE str - +",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "XLEN str",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "XADD fresh 0-0 a 1",
                "ERR The ID specified in XADD must be greater than 0-0",
            ),
            ("EXISTS fresh", "0"),
            ("XADD nomk NOMKSTREAM * a 1", "(nil)"),
            ("EXISTS nomk", "0"),
        ],
    );
}

#[test]
fn trims_deletes_and_setid_keep_the_counters() {
    let server = TestServer::start();
    let mut raw = server.raw();
    for i in 1..=10 {
        assert_eq!(
            q(&mut raw, &format!("XADD s {i}-0 f {i}")),
            format!("{i}-0")
        );
    }
    check(
        &mut raw,
        &[
            ("XDEL s 2-0 3-0 99-0", "2"),
            ("XTRIM s MAXLEN = 5", "3"),
            ("XRANGE s - + COUNT 1", "[6-0|[f|6]]"),
            ("XTRIM s MINID 8", "2"),
            ("XLEN s", "3"),
            (
                "XTRIM s MAXLEN 1 LIMIT 5",
                "ERR syntax error, LIMIT cannot be used without the special ~ option",
            ),
            (
                "XTRIM s",
                "ERR wrong number of arguments for 'xtrim' command",
            ),
            ("XADD s MAXLEN 0 11-0 f 11", "11-0"),
            ("XLEN s", "0"),
            ("EXISTS s", "1"),
            ("TYPE s", "stream"),
            ("OBJECT ENCODING s", "stream"),
            ("XSETID s 5-0", "OK"),
            ("XSETID s 20-0 ENTRIESADDED 40 MAXDELETEDID 12-0", "OK"),
            (
                "XSETID s 20-0 ENTRIESADDED -1 MAXDELETEDID 0-0",
                "ERR entries_added must be positive",
            ),
            ("XSETID nokey 1-1", "ERR no such key"),
            ("XSETID s 1-1 0", "ERR syntax error"),
        ],
    );
    let info = q(&mut raw, "XINFO STREAM s");
    assert_eq!(
        info,
        "length|0|radix-tree-keys|0|radix-tree-nodes|1|last-generated-id|20-0|max-deleted-entry-id|12-0|entries-added|40|recorded-first-entry-id|0-0|groups|0|first-entry|(nil)|last-entry|(nil)"
    );
}

#[test]
fn approximate_trims_remove_whole_nodes() {
    let server = TestServer::start();
    let mut raw = server.raw();
    q(&mut raw, "CONFIG SET stream-node-max-entries 100");
    for j in 0..1000 {
        q(&mut raw, &format!("XADD s MAXLEN ~ 555 * x {j}"));
    }
    assert_eq!(q(&mut raw, "XLEN s"), "600");
    // Limited: at most one node's worth of work.
    assert_eq!(q(&mut raw, "XTRIM s MAXLEN ~ 0 LIMIT 100"), "100");
    assert_eq!(q(&mut raw, "XLEN s"), "500");
}

#[test]
fn keyspace_commands_carry_a_stream() {
    let server = TestServer::start();
    let mut raw = server.raw();
    check(
        &mut raw,
        &[
            ("XADD a 1-0 f v", "1-0"),
            ("XGROUP CREATE a g 0", "OK"),
            ("COPY a b", "1"),
            ("RENAME a c", "OK"),
            ("XRANGE c - +", "[1-0|[f|v]]"),
            (
                "XINFO GROUPS b",
                "[name|g|consumers|0|pending|0|last-delivered-id|0-0|entries-read|(nil)|lag|1]",
            ),
            ("DEL b c", "2"),
            ("EXISTS b c", "0"),
            ("SORT missing", ""),
            ("XADD d 1-0 f v", "1-0"),
            (
                "SORT d",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
        ],
    );
}

#[test]
fn blocking_xread_wakes_on_xadd_and_times_out() {
    let server = TestServer::start();
    let mut raw = server.raw();
    let mut waiter = server.raw();
    q(&mut raw, "XADD s 1-0 a 1");
    waiter
        .send(&common::req(&["XREAD", "BLOCK", "0", "STREAMS", "s", "$"]))
        .unwrap();
    std::thread::sleep(Duration::from_millis(100));
    q(&mut raw, "XADD s 2-0 b 2");
    assert_eq!(flat(&waiter.read().unwrap()), "[s|[[2-0|[b|2]]]]");
    let started = Instant::now();
    assert_eq!(q(&mut waiter, "XREAD BLOCK 100 STREAMS s $"), "(nil)");
    assert!(started.elapsed() >= Duration::from_millis(100));
    check(
        &mut raw,
        &[
            ("XREAD STREAMS s t 0", "ERR Unbalanced XREAD list of streams: for each stream key an ID or '$' must be specified."),
            ("XREAD COUNT 1 STREAMS s s 0 1", "[s|[[1-0|[a|1]]]]|[s|[[2-0|[b|2]]]]"),
            ("XREAD STREAMS s >", "ERR The > ID can be specified only when calling XREADGROUP using the GROUP <group> <consumer> option."),
            ("XREAD BLOCK -1 STREAMS s $", "ERR timeout is negative"),
            ("MULTI", "OK"),
            ("XREAD BLOCK 0 STREAMS s $", "QUEUED"),
            ("EXEC", "(nil)"),
        ],
    );
}

#[test]
fn a_group_delivers_acks_and_hands_over_entries() {
    let server = TestServer::start();
    let mut raw = server.raw();
    check(
        &mut raw,
        &[
            ("XGROUP CREATE s g $", "ERR The XGROUP subcommand requires the key to exist. Note that for CREATE you may want to use the MKSTREAM option to create an empty stream automatically."),
            ("XGROUP CREATE s g $ MKSTREAM", "OK"),
            ("XGROUP CREATE s g $", "BUSYGROUP Consumer Group name already exists"),
            ("XADD s 1-0 a 1", "1-0"),
            ("XADD s 2-0 b 2", "2-0"),
            ("XADD s 3-0 c 3", "3-0"),
            ("XREADGROUP GROUP g alice COUNT 2 STREAMS s >", "[s|[[1-0|[a|1]]|[2-0|[b|2]]]]"),
            ("XREADGROUP GROUP g bob STREAMS s >", "[s|[[3-0|[c|3]]]]"),
            ("XREADGROUP GROUP g bob STREAMS s >", "(nil)"),
            ("XREADGROUP GROUP nope bob STREAMS s >", "NOGROUP No such key 's' or consumer group 'nope' in XREADGROUP with GROUP option"),
            ("XREADGROUP GROUP g alice STREAMS s 0", "[s|[[1-0|[a|1]]|[2-0|[b|2]]]]"),
            ("XACK s g 1-0 9-0", "1"),
            ("XACK s g 1-x", BAD_ID),
            ("XPENDING s g", "2|2-0|3-0|[[alice|1]|[bob|1]]"),
            ("XPENDING s g IDLE 600000 - + 10", ""),
            ("XPENDING s g - + 10 nobody", ""),
            ("XDEL s 2-0", "1"),
            ("XAUTOCLAIM s g carol 0 0-0", "0-0|[[3-0|[c|3]]]|[2-0]"),
            ("XPENDING s g", "1|3-0|3-0|[[carol|1]]"),
            ("XCLAIM s g dave 0 3-0 JUSTID", "3-0"),
            ("XCLAIM s g dave 0 3-0 BOGUS", "ERR Unrecognized XCLAIM option 'BOGUS'"),
            ("XAUTOCLAIM s g x 0 0 COUNT 0", "ERR COUNT must be > 0"),
            ("XGROUP DELCONSUMER s g dave", "1"),
            ("XPENDING s g", "0|(nil)|(nil)|(nil)"),
            ("XGROUP CREATECONSUMER s g erin", "1"),
            ("XGROUP CREATECONSUMER s nope erin", "NOGROUP No such consumer group 'nope' for key name 's'"),
            ("XGROUP DESTROY s g", "1"),
            ("XGROUP DESTROY s g", "0"),
            ("XINFO GROUPS s", ""),
        ],
    );
}

#[test]
fn lag_and_entries_read_follow_redis() {
    let server = TestServer::start();
    let mut raw = server.raw();
    for i in 1..=5 {
        q(&mut raw, &format!("XADD x {i}-0 data {i}"));
    }
    q(&mut raw, "XGROUP CREATE x g1 0");
    let groups = |raw: &mut Raw| q(raw, "XINFO GROUPS x");
    assert_eq!(
        groups(&mut raw),
        "[name|g1|consumers|0|pending|0|last-delivered-id|0-0|entries-read|(nil)|lag|5]"
    );
    q(&mut raw, "XREADGROUP GROUP g1 c1 COUNT 1 STREAMS x >");
    assert_eq!(
        groups(&mut raw),
        "[name|g1|consumers|1|pending|1|last-delivered-id|1-0|entries-read|1|lag|4]"
    );
    q(&mut raw, "XDEL x 3-0");
    q(&mut raw, "XREADGROUP GROUP g1 c1 COUNT 1 STREAMS x >");
    // A tombstone ahead: the counter and the lag are unknown.
    assert_eq!(
        groups(&mut raw),
        "[name|g1|consumers|1|pending|2|last-delivered-id|2-0|entries-read|(nil)|lag|(nil)]"
    );
    q(&mut raw, "XREADGROUP GROUP g1 c1 STREAMS x >");
    assert_eq!(
        groups(&mut raw),
        "[name|g1|consumers|1|pending|4|last-delivered-id|5-0|entries-read|5|lag|0]"
    );
}

#[test]
fn blocked_group_readers_are_served_or_told_why_not() {
    let server = TestServer::start();
    let mut raw = server.raw();
    q(&mut raw, "XGROUP CREATE s g $ MKSTREAM");
    let mut waiter = server.raw();
    let block = common::req(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "c",
        "BLOCK",
        "0",
        "STREAMS",
        "s",
        ">",
    ]);
    waiter.send(&block).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    q(&mut raw, "XADD s 1-0 f v");
    assert_eq!(flat(&waiter.read().unwrap()), "[s|[[1-0|[f|v]]]]");
    assert_eq!(q(&mut raw, "XPENDING s g"), "1|1-0|1-0|[[c|1]]");
    waiter.send(&block).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    q(&mut raw, "XGROUP DESTROY s g");
    assert_eq!(
        flat(&waiter.read().unwrap()),
        "NOGROUP the consumer group this client was blocked on no longer exists"
    );
    q(&mut raw, "XGROUP CREATE s g $");
    waiter.send(&block).unwrap();
    std::thread::sleep(Duration::from_millis(100));
    q(&mut raw, "DEL s");
    assert_eq!(
        flat(&waiter.read().unwrap()),
        "UNBLOCKED the stream key no longer exists"
    );
}

/// `DUMP s` from redis-server 7.0.15 after: XADD s 1-0 a 1, XADD s 2-0 a 2
/// b x, XADD s 3-0 a 3, XDEL s 2-0, XGROUP CREATE s g 0, XREADGROUP GROUP g
/// alice COUNT 1 STREAMS s >, XGROUP CREATECONSUMER s g bob.
const REDIS_DUMP: &str = "130110000000000000000100000000000000003b3b000000180002010101010181610200010201000100010101040101010101000102018161020201816202817802080102010201000103010401ff0203000100020003010167010081ffffffffffffffff010000000000000001000000000000000046479352a2010000010205616c69636546479352a2010000010000000000000001000000000000000003626f6259479352a2010000000a002e4e18afe350bd2d";

fn unhex(h: &str) -> Vec<u8> {
    (0..h.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&h[i..i + 2], 16).unwrap())
        .collect()
}

#[test]
fn restore_reads_redis_dumps_and_dump_round_trips() {
    let server = TestServer::start();
    let mut raw = server.raw();
    let payload = unhex(REDIS_DUMP);
    let restore: Vec<&[u8]> = vec![b"RESTORE", b"s", b"0", &payload];
    assert_eq!(flat(&raw.command(&restore)), "OK");
    check(
        &mut raw,
        &[
            ("XRANGE s - +", "[1-0|[a|1]]|[3-0|[a|3]]"),
            ("XPENDING s g", "1|1-0|1-0|[[alice|1]]"),
            (
                "XINFO GROUPS s",
                "[name|g|consumers|2|pending|1|last-delivered-id|1-0|entries-read|(nil)|lag|(nil)]",
            ),
        ],
    );
    let info = q(&mut raw, "XINFO STREAM s");
    assert!(info.starts_with("length|2|"), "{info}");
    assert!(info.contains("last-generated-id|3-0|max-deleted-entry-id|2-0|entries-added|3|recorded-first-entry-id|1-0"), "{info}");
    // Our own DUMP restores to the same stream, groups and all.
    let Resp::Bulk(ours) = raw.command(&[b"DUMP", b"s"]) else {
        panic!("DUMP replies a bulk string");
    };
    let again: Vec<&[u8]> = vec![b"RESTORE", b"t", b"0", &ours];
    assert_eq!(flat(&raw.command(&again)), "OK");
    for cmd in [
        "XRANGE {} - +",
        "XPENDING {} g",
        "XINFO GROUPS {}",
        "XPENDING {} g - + 10 alice",
    ] {
        let a = q(&mut raw, &cmd.replace("{}", "s"));
        let b = q(&mut raw, &cmd.replace("{}", "t"));
        if cmd.contains("alice") {
            // Idle times may differ by the milliseconds between the calls.
            assert_eq!(a.split('|').next(), b.split('|').next(), "{cmd}");
        } else {
            assert_eq!(a, b, "{cmd}");
        }
    }
    let mut bad = ours.clone();
    let at = bad.len() / 2;
    bad[at] ^= 0xFF;
    let broken: Vec<&[u8]> = vec![b"RESTORE", b"u", b"0", &bad];
    assert_eq!(
        flat(&raw.command(&broken)),
        "ERR DUMP payload version or checksum are wrong"
    );
}
