//! The server's streams (`persimmon-types`' `stream`): a collection of four
//! trees — entries by id, the stream's record and its groups, pending
//! entries, consumers — each command one engine batch.
//!
//! | workload | persist path it covers                                        |
//! |----------|---------------------------------------------------------------|
//! | streams  | XADD growing a stream past many pages (entries of several     |
//! |          | sizes), XGROUP CREATE and CREATECONSUMER, XREADGROUP          |
//! |          | delivering entries (pending entries and consumers written     |
//! |          | with the group's last id), XACK, XCLAIM and XAUTOCLAIM moving |
//! |          | pending entries between consumers, XDEL, XTRIM by MAXLEN and |
//! |          | MINID (pages emptied and merged), XSETID, XGROUP SETID,       |
//! |          | DELCONSUMER (its pending entries dropped) and DESTROY, and a  |
//! |          | MULTI-free group of reads and acks in one script              |
//!
//! How: the `collections` room's mirror, observed pool and shadow
//! (`Pair`): each command runs on the mirror, its batch is replayed on the
//! observed pool as `Op::Batch` (all or nothing at every crash point), the
//! mirror's collections pass the structural check after it, and the shadow
//! must reply alike.
//!
//! Invariants of this workload: every id is given (never `*`, which reads
//! the clock), and no reply it compares holds a time (no XPENDING idle
//! times, no XINFO), so the mirror and the shadow reply alike.

use super::collections::Pair;
use super::ctx::Finished;
use crate::sim::SimConfig;

/// Stream commands of every path, replayed batch by batch.
pub fn streams(cfg: &SimConfig) -> Finished {
    let mut p = Pair::open(cfg);
    // Unexplored: a stream of many pages and a group that read part of it.
    for chunk in 0..10u64 {
        for i in 0..60u64 {
            let n = chunk * 60 + i + 1;
            let pad = "v".repeat((n % 7 * 40) as usize);
            p.cmd(&[
                "XADD",
                "s",
                &format!("{n}-0"),
                "f",
                &pad,
                "n",
                &n.to_string(),
            ]);
        }
    }
    p.cmd(&["XGROUP", "CREATE", "s", "g", "0"]);
    p.c.explore(true);
    p.cmd(&["XADD", "s", "601-0", "big", &"b".repeat(3000)]);
    p.cmd(&["XGROUP", "CREATECONSUMER", "s", "g", "alice"]);
    p.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "alice",
        "COUNT",
        "40",
        "STREAMS",
        "s",
        ">",
    ]);
    p.cmd(&[
        "XREADGROUP",
        "GROUP",
        "g",
        "bob",
        "COUNT",
        "25",
        "STREAMS",
        "s",
        ">",
    ]);
    let acks: Vec<String> = (1..=30).step_by(2).map(|n| format!("{n}-0")).collect();
    let mut xack = vec!["XACK", "s", "g"];
    xack.extend(acks.iter().map(String::as_str));
    p.cmd(&xack);
    p.cmd(&[
        "XCLAIM", "s", "g", "bob", "0", "2-0", "4-0", "6-0", "JUSTID",
    ]);
    p.cmd(&[
        "XAUTOCLAIM",
        "s",
        "g",
        "carol",
        "0",
        "0-0",
        "COUNT",
        "10",
        "JUSTID",
    ]);
    p.cmd(&["XDEL", "s", "50-0", "51-0", "52-0", "999-0"]);
    p.cmd(&["XTRIM", "s", "MAXLEN", "=", "500"]);
    p.cmd(&["XTRIM", "s", "MINID", "=", "200-0"]);
    p.cmd(&["XGROUP", "CREATE", "s", "late", "$"]);
    p.cmd(&[
        "XADD",
        "s",
        "MAXLEN",
        "=",
        "300",
        "700-0",
        "f",
        "after-trim",
    ]);
    p.cmd(&["XREADGROUP", "GROUP", "late", "dave", "STREAMS", "s", ">"]);
    p.cmd(&["XGROUP", "SETID", "s", "g", "250-0"]);
    p.cmd(&["XGROUP", "DELCONSUMER", "s", "g", "alice"]);
    p.cmd(&["XSETID", "s", "800-0"]);
    // One script reading, acknowledging and adding: one unit.
    let script = "local r = redis.call('XREADGROUP', 'GROUP', 'g', 'erin', 'COUNT', '5', \
                  'STREAMS', KEYS[1], '>') \
                  for _, e in ipairs(r[1][2]) do redis.call('XACK', KEYS[1], 'g', e[1]) end \
                  redis.call('XADD', KEYS[1], '900-0', 'from', 'script') return #r[1][2]";
    p.cmd(&["EVAL", script, "1", "s"]);
    p.cmd(&["XGROUP", "DESTROY", "s", "late"]);
    // A whole stream deleted and reclaimed, then its name reused: not
    // explored (the reclaimer's batches of hundreds of page deletes make
    // crash points of thousands of images each; `collections` explores the
    // reclaimer), but the mirror's structural check after each batch still
    // sees every page of all four trees go.
    p.c.explore(false);
    p.cmd(&["DEL", "s"]);
    p.reclaim();
    p.cmd(&["XADD", "s", "1-1", "again", "1"]);
    p.finish("a stream of about 600 entries, two groups")
}
