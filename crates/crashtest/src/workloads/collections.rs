//! The server's collections (`persimmon-server`'s `coll`): hashes, lists,
//! sets and sorted sets as a meta record plus a counted B+ tree of page
//! records, each command one engine batch.
//!
//! | workload    | persist path it covers                                     |
//! |-------------|------------------------------------------------------------|
//! | collections | the batches of collection commands as the server computes |
//! |             | them: pushes and pops at both ends of a list of several    |
//! |             | pages, inserts and removals in its middle, LSET, RPOPLPUSH |
//! |             | between two lists; HSET of a value that splits a page,     |
//! |             | HDELs that merge pages; ZADD moving members (both trees),  |
//! |             | ZINCRBY, ZREM, ZPOPMIN; SADD growing a set from its meta   |
//! |             | into pages (the registry entry written in the same batch), |
//! |             | SMOVE; EXPIRE; DEL of a large sorted set (its meta only),  |
//! |             | the reclaimer's batches deleting its pages (roots and the  |
//! |             | registry entry last), the name reused; RENAME of a large   |
//! |             | hash (its registry entry rewritten in the same batch)      |
//!
//! How: the server's own code runs every command in-process on a *mirror*
//! pool (`persimmon_server::embedded`), which returns the engine batch the
//! command committed; the workload replays exactly that batch on the
//! observed pool as `Op::Batch`, so the oracle (`batch.rs`'s group rule)
//! checks that at every crash point, in every image, the command's records
//! — meta and pages — hold all their old states or all their new ones, and
//! all new ones once it returned. After every command the mirror passes
//! the structural check of every collection (`coll::check`: tree shape,
//! counts, order, the two trees of a sorted set agreeing, registry and
//! pages in step), so every state an image may hold is a consistent one.
//!
//! Invariants of this workload: the mirror lives beside the pool in the
//! run's directory and is only written by these commands, on this thread,
//! whose random draws (tree ids, SPOP) are seeded with the run's seed, so
//! a run replays exactly; a command whose reply is an error stops the run
//! (the workload's commands are all valid).

use std::path::Path;

use persimmon_server::embedded::{Captured, Embedded};

use super::ctx::{Ctx, Finished};
use super::ops::{Op, Write};
use crate::sim::SimConfig;

/// The mirror and the observed pool, driven together.
struct Pair {
    c: Ctx,
    mirror: Embedded,
}

impl Pair {
    /// Runs one command on the mirror, replays its batch on the observed
    /// pool and checks the mirror's collections. Returns the reply.
    fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        if self.c.broken {
            return Vec::new();
        }
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        match self.mirror.call(&bytes) {
            Ok((reply, writes)) => {
                if reply.first() == Some(&b'-') {
                    let text = String::from_utf8_lossy(&reply).into_owned();
                    self.c.stop(format!("{args:?} replied {}", text.trim_end()));
                    return reply;
                }
                self.replay(writes);
                reply
            }
            Err(e) => {
                self.c.stop(format!("{args:?} on the mirror: {e}"));
                Vec::new()
            }
        }
    }

    /// A reclaimer round on the mirror, its batches replayed one by one.
    fn reclaim(&mut self) -> usize {
        match self.mirror.reclaim() {
            Ok(batches) => {
                let n = batches.len();
                for b in batches {
                    self.replay(b);
                }
                n
            }
            Err(e) => {
                self.c.stop(format!("reclaimer on the mirror: {e}"));
                0
            }
        }
    }

    fn replay(&mut self, writes: Captured) {
        if writes.is_empty() {
            return;
        }
        let batch = writes
            .into_iter()
            .map(|(k, entry)| match entry {
                None => Write::Delete(k),
                Some((v, None)) => Write::Put(k, v),
                Some((v, Some(d))) => Write::PutExpiring(k, v, d),
            })
            .collect();
        self.c.run(Op::Batch(batch));
        if let Err(e) = self.mirror.check() {
            self.c
                .stop(format!("mirror's collections after a batch: {e}"));
        }
    }

    /// Runs `cmd` with `count` arguments of `prefix{i}` (from `from`) after
    /// `head`, in commands of at most 200.
    fn fill(&mut self, head: &[&str], prefix: &str, from: u64, count: u64, pairs: bool) {
        let mut i = from;
        while i < from + count {
            let end = (i + 200).min(from + count);
            let items: Vec<String> = (i..end)
                .flat_map(|j| {
                    let item = format!("{prefix}{j:05}");
                    if pairs {
                        vec![format!("{}", j * 7 % 1000), item]
                    } else {
                        vec![item]
                    }
                })
                .collect();
            let mut args: Vec<&str> = head.to_vec();
            args.extend(items.iter().map(String::as_str));
            self.cmd(&args);
            i = end;
        }
    }
}

/// Collection commands of every path, replayed batch by batch.
pub fn collections(cfg: &SimConfig) -> Finished {
    let c = Ctx::start(cfg, 32, false);
    let mirror_path = cfg.dir.join("mirror.pool");
    let _ = std::fs::remove_file(&mirror_path);
    let mirror = match Embedded::open(Path::new(&mirror_path)) {
        Ok(m) => m,
        Err(e) => panic!("the mirror pool {}: {e}", mirror_path.display()),
    };
    let mut mirror = mirror;
    mirror.seed(cfg.seed);
    let mut p = Pair { c, mirror };
    // Unexplored: collections of several pages, and small ones.
    p.fill(&["RPUSH", "q"], "element-", 0, 1200, false);
    p.fill(&["HSET", "h"], "field-", 0, 400, true);
    p.fill(&["ZADD", "z"], "member-", 0, 900, true);
    p.fill(&["SADD", "s"], "m", 0, 40, false);
    p.c.explore(true);
    lists(&mut p);
    hashes(&mut p);
    sorted_sets(&mut p);
    sets(&mut p);
    p.cmd(&["EXPIRE", "s2", "100000"]);
    // A large sorted set deleted (its meta only), reclaimed, and its name
    // reused.
    p.cmd(&["DEL", "z"]);
    if p.reclaim() == 0 {
        p.c.stop("the reclaimer freed nothing after DEL of a large sorted set".into());
    }
    p.fill(&["ZADD", "z"], "again-", 0, 300, true);
    p.cmd(&["RENAME", "h", "h-renamed"]);
    p.reclaim();
    p.cmd(&["HSET", "h-renamed", "after", "rename"]);
    let Pair { c, mut mirror } = p;
    let report = mirror.check();
    let mut finished = c.finish();
    if let Ok(r) = report {
        finished.note = Some(format!(
            "{} collections ({} external, {} pages)",
            r.collections, r.external, r.pages
        ));
    }
    finished
}

fn lists(p: &mut Pair) {
    p.cmd(&["LPUSH", "q", "head-1"]);
    p.cmd(&["RPUSH", "q", "tail-1"]);
    p.cmd(&["RPOP", "q"]);
    p.cmd(&["LPOP", "q", "3"]);
    p.cmd(&["LINSERT", "q", "BEFORE", "element-00600", "inserted"]);
    p.cmd(&["LSET", "q", "300", "replaced"]);
    p.cmd(&["LREM", "q", "0", "inserted"]);
    p.cmd(&["RPOPLPUSH", "q", "q2"]);
    p.cmd(&["RPOPLPUSH", "q2", "q"]);
    p.cmd(&["LTRIM", "q", "2", "-3"]);
}

/// `h`'s fields are `j * 7 % 1000` for `j` below 400 (`fill`'s pairs).
fn hashes(p: &mut Pair) {
    let big = "v".repeat(3000);
    p.cmd(&["HSET", "h", "700", &big, "new-field", "x"]);
    for j in (0..120).step_by(6) {
        let f = (j * 7 % 1000).to_string();
        if p.cmd(&["HDEL", "h", &f]) != b":1\r\n" {
            p.c.stop(format!("HDEL h {f} removed nothing"));
        }
    }
    p.cmd(&["HINCRBY", "h", "counter", "5"]);
}

fn sorted_sets(p: &mut Pair) {
    p.cmd(&["ZADD", "z", "5000", "member-00001"]);
    p.cmd(&["ZINCRBY", "z", "-7000", "member-00450"]);
    p.cmd(&["ZREM", "z", "member-00002", "member-00003"]);
    p.cmd(&["ZPOPMIN", "z", "4"]);
    p.cmd(&["ZADD", "z", "NX", "1.5", "fresh", "2.5", "member-00010"]);
}

fn sets(p: &mut Pair) {
    p.fill(&["SADD", "s"], "grown-", 0, 400, false);
    p.cmd(&["SREM", "s", "m00001", "grown-00007"]);
    p.cmd(&["SMOVE", "s", "s2", "m00005"]);
    p.cmd(&["SPOP", "s"]);
}
