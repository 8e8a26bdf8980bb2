//! The server's collections (`persimmon-server`'s `coll`): hashes, lists,
//! sets and sorted sets as a meta record plus a counted B+ tree of page
//! records, each command — or group of combined commands — one engine
//! batch.
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
//! |             | hash (its registry entry rewritten in the same batch);     |
//! |             | combined groups: 8–32 commands run as ONE unit the way a   |
//! |             | pipeline's run of combined writes runs them (`unit_run`:   |
//! |             | collections parked decoded between the commands, encoded   |
//! |             | once at the commit), one batch for the group: pushes and   |
//! |             | pops at both ends of a list of several pages (end pages    |
//! |             | split, then emptied and merged); HSETs that split pages    |
//! |             | and HDELs that merge them; ZADD/ZREM/ZINCRBY/ZPOPMIN/      |
//! |             | ZPOPMAX on a large sorted set; SADD/SREM/SPOP growing a    |
//! |             | set from its meta into pages; groups that empty a          |
//! |             | collection (a multi-page hash and sorted set, a list, a    |
//! |             | set) and refill it past one page, the reclaimer after      |
//! |             | them; a group mixing commands on several keys              |
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
//! A combined group is replayed the same way, its one batch as one
//! `Op::Batch` (`Embedded::call_combined`): the oracle checks the whole
//! group all-or-nothing at every crash point, and `coll::check` runs on the
//! mirror after it. A *shadow* pool runs every command too, a group's one
//! by one (never replayed, never reclaimed): each group's replies, and the
//! contents of the keys it names after it, must be the shadow's — parking
//! changes how a run is written, not what it does.
//!
//! Invariants of this workload: the mirror and the shadow live beside the
//! pool in the run's directory and are only written by these commands, on
//! this thread, whose random draws (tree ids, SPOP) are seeded before
//! every step (a command, or a group) with the run's seed and the step's
//! number, alike for the mirror and the shadow, so a run replays exactly
//! and the two pools draw alike; a command whose reply is an error, or a
//! group that does not commit, stops the run (the workload's commands are
//! all valid).

use std::path::Path;

use persimmon_server::embedded::{Captured, Embedded};

use super::ctx::{Ctx, Finished};
use super::ops::{Op, Write};
use crate::sim::{mix, SimConfig};

/// The mirror and the observed pool, driven together, and the shadow.
/// (The `scripts` room drives its scripts through it too.)
pub(super) struct Pair {
    pub(super) c: Ctx,
    mirror: Embedded,
    /// The same commands, a group's one by one; never replayed.
    shadow: Embedded,
    seed: u64,
    /// Steps run so far (each seeds the random draws of the next).
    steps: u64,
    /// Combined groups run, and their commands.
    groups: u64,
    grouped: u64,
}

impl Pair {
    /// The observed pool, the mirror and the shadow of a run of `cfg`.
    pub(super) fn open(cfg: &SimConfig) -> Pair {
        let c = Ctx::start(cfg, 32, false);
        Pair {
            c,
            mirror: side_pool(cfg, "mirror.pool"),
            shadow: side_pool(cfg, "shadow.pool"),
            seed: cfg.seed,
            steps: 0,
            groups: 0,
            grouped: 0,
        }
    }

    /// Seeds the random draws of the next step, alike for both pools.
    fn next_seed(&mut self) -> u64 {
        self.steps += 1;
        mix(self.seed, self.steps)
    }

    /// Runs one command on the mirror, replays its batch on the observed
    /// pool and checks the mirror's collections; then on the shadow, which
    /// must reply alike. Returns the reply; an error reply stops the run.
    pub(super) fn cmd(&mut self, args: &[&str]) -> Vec<u8> {
        self.call(args, false)
    }

    /// [`cmd`](Self::cmd) of a command that must reply an error (a script
    /// failing half-way): whatever it committed is replayed all the same.
    pub(super) fn failing(&mut self, args: &[&str]) -> Vec<u8> {
        self.call(args, true)
    }

    fn call(&mut self, args: &[&str], fails: bool) -> Vec<u8> {
        if self.c.broken {
            return Vec::new();
        }
        let bytes: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
        let seed = self.next_seed();
        self.mirror.seed(seed);
        match self.mirror.call(&bytes) {
            Ok((reply, writes)) => {
                if (reply.first() == Some(&b'-')) != fails {
                    self.c
                        .stop(format!("{} replied {}", short_args(args), text(&reply)));
                    return reply;
                }
                self.replay(writes, &short_args(args));
                self.shadow.seed(seed);
                match self.shadow.call(&bytes) {
                    Ok((r, _)) if r == reply => {}
                    Ok((r, _)) => self.c.stop(format!(
                        "{} replied {} on the mirror, {} on the shadow",
                        short_args(args),
                        text(&reply),
                        text(&r)
                    )),
                    Err(e) => self
                        .c
                        .stop(format!("{} on the shadow: {e}", short_args(args))),
                }
                reply
            }
            Err(e) => {
                self.c
                    .stop(format!("{} on the mirror: {e}", short_args(args)));
                Vec::new()
            }
        }
    }

    /// Runs `cmds` on the mirror as one combined unit, replays its one
    /// batch on the observed pool (one `Op::Batch`) and checks the mirror's
    /// collections; then runs them one by one on the shadow: the replies
    /// must match, and so must every key the commands name, after.
    /// Returns the replies (none once the run is broken).
    fn group(&mut self, name: &str, cmds: &[Vec<String>]) -> Vec<Vec<u8>> {
        if self.c.broken {
            return Vec::new();
        }
        debug_assert!((8..=32).contains(&cmds.len()), "{name}: 8 to 32 commands");
        let words: Vec<Vec<&[u8]>> = cmds
            .iter()
            .map(|c| c.iter().map(|w| w.as_bytes()).collect())
            .collect();
        let refs: Vec<&[&[u8]]> = words.iter().map(Vec::as_slice).collect();
        let seed = self.next_seed();
        self.mirror.seed(seed);
        let replies = match self.mirror.call_combined(&refs) {
            Ok((replies, writes)) => {
                self.replay(writes, &format!("group {name:?}"));
                replies
            }
            Err(e) => {
                self.c.stop(format!("group {name:?} on the mirror: {e}"));
                return Vec::new();
            }
        };
        self.groups += 1;
        self.grouped += cmds.len() as u64;
        self.shadow.seed(seed);
        for (i, c) in words.iter().enumerate() {
            match self.shadow.call(c) {
                Ok((r, _)) if r == replies[i] => {}
                Ok((r, _)) => {
                    self.c.stop(format!(
                        "group {name:?}, command {i} {}: combined it replied {}, one by one {}",
                        short(&cmds[i]),
                        text(&replies[i]),
                        text(&r)
                    ));
                    return replies;
                }
                Err(e) => {
                    self.c.stop(format!("group {name:?} on the shadow: {e}"));
                    return replies;
                }
            }
        }
        let mut keys: Vec<&str> = cmds.iter().map(|c| c[1].as_str()).collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            match (
                contents(&mut self.mirror, key),
                contents(&mut self.shadow, key),
            ) {
                (Ok(a), Ok(b)) if a == b => {}
                (Ok(a), Ok(b)) => {
                    self.c.stop(format!(
                        "after group {name:?}, {key} holds {} on the mirror, {} on the shadow",
                        text(&a),
                        text(&b)
                    ));
                    break;
                }
                (Err(e), _) | (_, Err(e)) => {
                    self.c
                        .stop(format!("after group {name:?}, reading {key}: {e}"));
                    break;
                }
            }
        }
        replies
    }

    /// A reclaimer round on the mirror, its batches replayed one by one.
    pub(super) fn reclaim(&mut self) -> usize {
        match self.mirror.reclaim() {
            Ok(batches) => {
                let n = batches.len();
                for b in batches {
                    self.replay(b, "a reclaimer batch");
                }
                n
            }
            Err(e) => {
                self.c.stop(format!("reclaimer on the mirror: {e}"));
                0
            }
        }
    }

    /// Ends the run: its note counts the mirror's collections, then says
    /// `more`.
    pub(super) fn finish(self, more: &str) -> Finished {
        let Pair { c, mut mirror, .. } = self;
        let report = mirror.check();
        let mut finished = c.finish();
        if let Ok(r) = report {
            finished.note = Some(format!(
                "{} collections ({} external, {} pages); {more}",
                r.collections, r.external, r.pages
            ));
        }
        finished
    }

    /// Replays one captured batch on the observed pool, its writes in key
    /// order (the store's capture lists them in a hash map's order, which
    /// differs from process to process: sorted, a run replays exactly).
    fn replay(&mut self, mut writes: Captured, what: &str) {
        if writes.is_empty() {
            return;
        }
        writes.sort_by(|a, b| a.0.cmp(&b.0));
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
                .stop(format!("mirror's collections after {what}: {e}"));
        }
    }

    /// Runs `cmd` with `count` arguments of `prefix{i}` (from `from`) after
    /// `head`, in commands of at most 200.
    pub(super) fn fill(&mut self, head: &[&str], prefix: &str, from: u64, count: u64, pairs: bool) {
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
    let mut p = Pair::open(cfg);
    // Unexplored: collections of several pages, and small ones.
    p.fill(&["RPUSH", "q"], "element-", 0, 1200, false);
    p.fill(&["HSET", "h"], "field-", 0, 400, true);
    p.fill(&["ZADD", "z"], "member-", 0, 900, true);
    p.fill(&["SADD", "s"], "m", 0, 40, false);
    // For the combined groups that empty and refill a collection.
    p.fill(&["HSET", "h3"], "field-", 0, 300, true);
    p.fill(&["RPUSH", "q6"], "e", 0, 10, false);
    p.fill(&["ZADD", "z6"], "member-", 0, 200, true);
    p.fill(&["SADD", "s6"], "m", 0, 4, false);
    p.c.explore(true);
    lists(&mut p);
    hashes(&mut p);
    sorted_sets(&mut p);
    sets(&mut p);
    combined(&mut p);
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
    let groups = format!("{} combined groups, {} commands", p.groups, p.grouped);
    p.finish(&groups)
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

/// Groups of 8–32 commands, each run as one combined unit (`Pair::group`).
fn combined(p: &mut Pair) {
    combined_lists(p);
    combined_hashes(p);
    combined_sorted_sets(p);
    combined_sets(p);
    emptied_and_refilled(p);
    mixed(p);
}

/// `q` holds about 1200 elements of 15 bytes (tens of pages). Elements of
/// 40 bytes pushed at both ends split the end pages; pops past them empty
/// pages and merge them into their neighbours.
fn combined_lists(p: &mut Pair) {
    let mut g = Vec::new();
    for r in 0..8 {
        g.push(with(&["LPUSH", "q"], padded(&format!("lg{r}-"), 0..4)));
        g.push(with(&["RPUSH", "q"], padded(&format!("rg{r}-"), 0..4)));
        g.push(words("LPOP q"));
        g.push(words("RPOP q"));
    }
    p.group("lists: pushes at both ends", &g);
    let pops = |usual: &str, other: &str| -> Vec<Vec<String>> {
        (0..32)
            .map(|i| words(if i % 8 == 7 { other } else { usual }))
            .collect()
    };
    p.group("lists: pops at the head", &pops("LPOP q", "RPOP q"));
    p.group("lists: pops at the tail", &pops("RPOP q", "LPOP q"));
}

/// `h`'s fields are `j * 7 % 1000` for `j` below 400 (`fill`'s pairs),
/// those of `j` from 200 untouched by `hashes`.
fn combined_hashes(p: &mut Pair) {
    let mut kept: Vec<String> = (200..400).map(|j| (j * 7 % 1000).to_string()).collect();
    kept.sort();
    let mut g = vec![
        words(&format!(
            "HSET h wide-1 {} wide-2 {}",
            "w".repeat(700),
            "w".repeat(700)
        )),
        words(&format!("HSET h 700 {}", "u".repeat(2500))),
    ];
    // A run of neighbouring fields: their pages empty and merge.
    for chunk in kept[40..140].chunks(10) {
        g.push(with(&["HDEL", "h"], chunk.iter().cloned()));
    }
    for i in 0..6 {
        g.push(words(&format!(
            "HSET h fresh-{i} {}",
            "f".repeat(1 + 150 * i)
        )));
    }
    g.push(words("HINCRBY h counter 3"));
    g.push(words("HDEL h wide-1"));
    g.push(words("HINCRBY h counter -8"));
    p.group("hashes: splits and merges", &g);
    // The same fields back, with values that split their pages again.
    let mut g = Vec::new();
    for (c, chunk) in kept[40..140].chunks(20).enumerate() {
        let pairs = chunk
            .iter()
            .flat_map(|f| [f.clone(), format!("{f}-{}", "b".repeat(60))]);
        g.push(with(&["HSET", "h"], pairs));
        g.push(with(
            &["HDEL", "h"],
            kept[140 + c * 4..][..4].iter().cloned(),
        ));
    }
    g.push(words("HDEL h wide-2 fresh-5"));
    p.group("hashes: refilled", &g);
}

/// `z` holds `member-{j}` at score `j * 7 % 1000` for `j` below 900.
fn combined_sorted_sets(p: &mut Pair) {
    let mut g = vec![words("ZADD z 0.5 member-00100 0.25 member-00200")];
    g.extend((0..4).map(|_| words("ZPOPMIN z")));
    g.push(with(
        &["ZREM", "z"],
        (300..340).map(|j| format!("member-{j:05}")),
    ));
    g.push(with(
        &["ZADD", "z"],
        (0..30).flat_map(|i| [format!("{}.5", 500 + i), format!("zg-{i:03}")]),
    ));
    g.push(words("ZINCRBY z 2000 member-00400"));
    g.extend((0..2).map(|_| words("ZPOPMAX z")));
    g.push(words("ZREM z zg-010 zg-011"));
    g.push(words("ZADD z GT 9999 member-00500"));
    g.push(words("ZINCRBY z -3000 member-00401"));
    g.extend((0..4).map(|_| words("ZPOPMIN z")));
    for c in 0..4 {
        let from = 340 + c * 10;
        g.push(with(
            &["ZREM", "z"],
            (from..from + 10).map(|j| format!("member-{j:05}")),
        ));
    }
    g.push(with(
        &["ZADD", "z"],
        (0..20).flat_map(|i| [format!("0.{i:02}"), format!("low-{i:03}")]),
    ));
    p.group("sorted sets: moves, removals, pops", &g);
}

/// `s3` is new: it grows from its meta into pages within one group (its
/// registry entry in the group's batch); then `s` (440 members) shrinks
/// and grows.
fn combined_sets(p: &mut Pair) {
    let mut g = Vec::new();
    for r in 0..8u64 {
        g.push(with(&["SADD", "s3"], padded(&format!("ga{r}-"), 0..12)));
        g.push(with(&["SADD", "s3"], padded(&format!("gb{r}-"), 0..12)));
        let gone = [
            padded(&format!("ga{r}-"), 3..4),
            padded(&format!("gb{}-", r / 2), 5..6),
        ];
        g.push(with(&["SREM", "s3"], gone.into_iter().flatten()));
        g.push(words("SPOP s3"));
    }
    p.group("sets: grown from the meta into pages", &g);
    let mut g = Vec::new();
    for r in 0..4u64 {
        g.push(with(
            &["SREM", "s"],
            (r * 50..r * 50 + 40).map(|j| format!("grown-{j:05}")),
        ));
        g.push(words("SPOP s"));
        g.push(with(&["SADD", "s"], padded(&format!("sb{r}-"), 0..10)));
    }
    p.group("sets: shrunk and grown", &g);
}

/// Collections emptied and refilled past one page in one group, their old
/// pages left to the reclaimer, which then runs.
fn emptied_and_refilled(p: &mut Pair) {
    // `h3`'s fields are `j * 7 % 1000` for `j` below 300 (`fill`'s pairs).
    let fields = |from: u64, to: u64| (from..to).map(|j| (j * 7 % 1000).to_string());
    let mut g: Vec<Vec<String>> = (0..3)
        .map(|c| with(&["HDEL", "h3"], fields(c * 100, c * 100 + 100)))
        .collect();
    for c in 0..3 {
        let pairs = (c * 50..c * 50 + 50).flat_map(|j| [format!("again-{j:05}"), "r".repeat(20)]);
        g.push(with(&["HSET", "h3"], pairs));
    }
    g.push(with(
        &["HDEL", "h3"],
        (0..10).map(|j| format!("again-{j:05}")),
    ));
    g.push(words("HSET h3 last 1"));
    let replies = p.group("hash emptied and refilled", &g);
    emptied(p, "h3", &replies, 3);

    let mut g: Vec<Vec<String>> = (0..10).map(|_| words("RPOP q6")).collect();
    g.push(with(&["RPUSH", "q6"], padded("r", 0..120)));
    g.extend((0..4).map(|_| words("LPOP q6")));
    g.push(with(&["LPUSH", "q6"], padded("l", 0..30)));
    p.group("list emptied and refilled", &g);

    let members = |from: u64, to: u64| (from..to).map(|j| format!("member-{j:05}"));
    let mut g = vec![
        with(&["ZREM", "z6"], members(0, 100)),
        with(&["ZREM", "z6"], members(100, 200)),
        with(
            &["ZADD", "z6"],
            (0..100).flat_map(|j| [format!("{}", j * 3 % 100), format!("back-{j:05}")]),
        ),
    ];
    g.extend((0..5).map(|_| words("ZPOPMIN z6")));
    g.push(with(
        &["ZREM", "z6"],
        (0..100).map(|j| format!("back-{j:05}")),
    ));
    g.push(with(
        &["ZADD", "z6"],
        (0..50).flat_map(|j| [format!("{j}"), format!("third-{j:05}")]),
    ));
    let replies = p.group("sorted set emptied twice and refilled", &g);
    emptied(p, "z6", &replies, 2);

    let mut g: Vec<Vec<String>> = (0..4).map(|_| words("SPOP s6")).collect();
    g.push(with(&["SADD", "s6"], padded("n", 0..100)));
    g.extend((0..3).map(|_| words("SPOP s6")));
    p.group("set emptied and refilled", &g);

    if p.reclaim() == 0 {
        p.c.stop("the reclaimer freed nothing after groups emptied large collections".into());
    }
}

/// Stops the run unless the first `n` commands of a group (`replies`)
/// removed 100 elements each: all of `key`'s, as the group meant to.
fn emptied(p: &mut Pair, key: &str, replies: &[Vec<u8>], n: usize) {
    let removed = replies.iter().take_while(|r| r.as_slice() == b":100\r\n");
    if !p.c.broken && removed.count() < n {
        let first: Vec<String> = replies.iter().take(n).map(|r| text(r)).collect();
        p.c.stop(format!(
            "the group meant to empty {key}; it removed {first:?}"
        ));
    }
}

/// One group over several keys of every kind.
fn mixed(p: &mut Pair) {
    let mut g = Vec::new();
    for r in 0..4 {
        g.push(words(&format!("LPUSH q mixed-{r}")));
        g.push(words(&format!("HSET h mixed-{r} {}", "m".repeat(300))));
        g.push(words(&format!("ZADD z {r}.75 mixed-{r}")));
        g.push(words(&format!("SADD s3 mixed-{r}")));
        g.push(words("RPOP q6"));
        g.push(words(&format!("HDEL h3 again-{:05}", 20 + r)));
        g.push(words("ZPOPMAX z6"));
        g.push(words("SPOP s"));
    }
    p.group("several keys", &g);
}

/// A fresh pool `name` in the run's directory, opened as the server opens
/// one.
fn side_pool(cfg: &SimConfig, name: &str) -> Embedded {
    let path = cfg.dir.join(name);
    let _ = std::fs::remove_file(&path);
    match Embedded::open(Path::new(&path)) {
        Ok(e) => e,
        Err(e) => panic!("the pool {}: {e}", path.display()),
    }
}

/// A command for a message, from its words.
fn short_args(args: &[&str]) -> String {
    short(&args.iter().map(|a| a.to_string()).collect::<Vec<_>>())
}

/// A command of `line`'s words.
fn words(line: &str) -> Vec<String> {
    line.split(' ').map(str::to_string).collect()
}

/// A command of `head` and then `rest`.
fn with(head: &[&str], rest: impl IntoIterator<Item = String>) -> Vec<String> {
    head.iter().map(|w| w.to_string()).chain(rest).collect()
}

/// Items `{prefix}{j}` for `j` in `range`, padded to 40 bytes.
fn padded(prefix: &str, range: std::ops::Range<u64>) -> Vec<String> {
    range
        .map(|j| format!("{prefix}{j:03}-{:.<1$}", "", 40 - prefix.len() - 4))
        .collect()
}

/// A reply or a value as text, for a message.
fn text(bytes: &[u8]) -> String {
    let t = String::from_utf8_lossy(bytes);
    let t = t.trim_end();
    match t.char_indices().nth(300) {
        Some((at, _)) => format!("{}... ({} bytes)", &t[..at], bytes.len()),
        None => t.to_string(),
    }
}

/// A command for a message: its first words.
fn short(cmd: &[String]) -> String {
    let words: Vec<&str> = cmd.iter().take(6).map(String::as_str).collect();
    match cmd.len() > 6 {
        true => format!("{words:?} and {} more", cmd.len() - 6),
        false => format!("{words:?}"),
    }
}

/// The type of `key` and its contents, as `e` replies them.
fn contents(e: &mut Embedded, key: &str) -> Result<Vec<u8>, String> {
    let (mut out, _) = e.call(&[b"TYPE", key.as_bytes()])?;
    let read: &[&str] = match out.as_slice() {
        b"+list\r\n" => &["LRANGE", key, "0", "-1"],
        b"+hash\r\n" => &["HGETALL", key],
        b"+set\r\n" => &["SMEMBERS", key],
        b"+zset\r\n" => &["ZRANGE", key, "0", "-1", "WITHSCORES"],
        _ => return Ok(out),
    };
    let args: Vec<&[u8]> = read.iter().map(|a| a.as_bytes()).collect();
    out.extend(e.call(&args)?.0);
    Ok(out)
}
