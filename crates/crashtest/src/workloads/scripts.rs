//! The server's Lua scripts and functions (`EVAL`, `EVALSHA`, `FCALL`):
//! a script's writes, whatever keys and types they touch, are one atomic
//! unit — one engine batch — so after a crash at any instant all of them
//! or none are in the pool.
//!
//! | workload | persist path it covers                                        |
//! |----------|---------------------------------------------------------------|
//! | scripts  | scripts writing a hash, a list, a sorted set and a set of     |
//! |          | several pages each, a counter and strings in one call (pages  |
//! |          | split and merge, both trees of the sorted set); a script that |
//! |          | moves elements between the types; one that builds a set past |
//! |          | one page from nothing (the registry entry in the same batch)  |
//! |          | and one that deletes a large hash (its meta) before the       |
//! |          | reclaimer; writes with deadlines; `EVALSHA` of a loaded       |
//! |          | script; `FCALL` of a function library; a script that fails    |
//! |          | half-way (its writes before the error commit, as Redis keeps |
//! |          | them) and one that catches an error with `redis.pcall` and   |
//! |          | goes on                                                       |
//!
//! How: the `collections` room's mirror, observed pool and shadow
//! (`Pair`): every script runs in-process on the mirror, its one batch is
//! replayed on the observed pool as `Op::Batch` (the oracle checks it all
//! or nothing at every crash point, all of it once the call returned), the
//! mirror's collections pass the structural check after it, and the shadow
//! must reply alike.
//!
//! Invariants of this workload: every script is deterministic (no
//! `TIME`, no random commands), so the mirror and the shadow write alike;
//! only the scripts named as failing reply an error, and a failing
//! script's batch is replayed like any other (what it wrote before the
//! error is part of its unit).

use super::collections::Pair;
use super::ctx::Finished;
use crate::sim::SimConfig;

/// Writes one element into each of the four collections, a counter and a
/// string, for each `ARGV[i]` (`KEYS`: hash, list, sorted set, set,
/// counter; `ARGV[1]`: a padding length).
const SPREAD: &str = "\
local pad = string.rep('p', tonumber(ARGV[1]))
for i = 2, #ARGV do
  local a = ARGV[i]
  redis.call('HSET', KEYS[1], 'f-' .. a, a .. pad)
  redis.call('RPUSH', KEYS[2], 'e-' .. a .. pad)
  redis.call('ZADD', KEYS[3], i * 3, 'm-' .. a)
  redis.call('SADD', KEYS[4], 's-' .. a)
  redis.call('INCRBY', KEYS[5], i)
  redis.call('SET', 'str-' .. a, pad)
end
return redis.call('GET', KEYS[5])";

/// Moves `ARGV[1]` elements: list head → set, lowest scores → hash
/// fields, removes as many hash fields (`KEYS` as in `SPREAD`).
const MOVE: &str = "\
local moved = 0
for i = 1, tonumber(ARGV[1]) do
  local e = redis.call('LPOP', KEYS[2])
  if e then redis.call('SADD', KEYS[4], e); moved = moved + 1 end
  local z = redis.call('ZPOPMIN', KEYS[3])
  if #z == 2 then redis.call('HSET', KEYS[1], z[1], z[2]) end
  redis.call('HDEL', KEYS[1], 'field-' .. string.format('%05d', i))
end
redis.call('SREM', KEYS[4], 'm00003', 'm00004')
return moved";

/// Writes `KEYS[1]` and `KEYS[2]`, then INCRs `KEYS[3]` (a hash: the
/// error); never reaches the last write.
const FAILS: &str = "\
redis.call('SET', KEYS[1], 'before-the-error')
redis.call('RPUSH', KEYS[2], 'pushed-before-the-error')
redis.call('INCR', KEYS[3])
redis.call('SET', KEYS[1], 'never')
return 1";

/// Catches the error of INCR on a hash and writes on.
const CATCHES: &str = "\
local r = redis.pcall('INCR', KEYS[3])
redis.call('SET', KEYS[1], r['err'] and 'caught' or 'no error')
redis.call('ZADD', KEYS[2], 1, 'after-the-catch')
return r['err'] and 1 or 0";

/// A function library whose `spread` runs `SPREAD`'s body.
fn library() -> String {
    let body = SPREAD.replace("KEYS", "keys").replace("ARGV", "args");
    format!(
        "#!lua name=crashlib\n\
         redis.register_function('spread', function(keys, args)\n{body}\nend)"
    )
}

/// Scripts and functions of every path, replayed batch by batch.
pub fn scripts(cfg: &SimConfig) -> Finished {
    let mut p = Pair::open(cfg);
    let keys = ["h", "q", "z", "s", "n"];
    // Unexplored: collections of several pages.
    p.fill(&["HSET", "h"], "field-", 0, 300, true);
    p.fill(&["RPUSH", "q"], "element-", 0, 900, false);
    p.fill(&["ZADD", "z"], "member-", 0, 600, true);
    p.fill(&["SADD", "s"], "m", 0, 300, false);
    p.fill(&["HSET", "big"], "field-", 0, 400, true);
    p.c.explore(true);
    for (round, pad) in [(0, 10), (1, 400), (2, 1500)] {
        let argv = numbered(&format!("r{round}-"), 8);
        run(
            &mut p,
            command("EVAL", SPREAD, &keys, &with_first(pad, argv)),
        );
    }
    run(&mut p, command("EVAL", MOVE, &keys, &["40".to_string()]));
    // A set grown past one page from nothing by one script.
    let grow = "for i = 1, #ARGV do redis.call('SADD', KEYS[1], ARGV[i]) end return #ARGV";
    let members = numbered("grown-", 300);
    run(&mut p, command("EVAL", grow, &["fresh-set"], &members));
    // A large hash deleted by a script that writes beside it, then reclaimed.
    let del = "redis.call('DEL', KEYS[1]); redis.call('SET', KEYS[2], 'deleted'); \
               redis.call('PEXPIRE', KEYS[3], 100000000); return 1";
    run(&mut p, command("EVAL", del, &["big", "marker", "h"], &[]));
    if p.reclaim() == 0 {
        p.c.stop("the reclaimer freed nothing after a script deleted a large hash".into());
    }
    let failing = command("EVAL", FAILS, &["failed", "q", "h"], &[]);
    p.failing(&failing.iter().map(String::as_str).collect::<Vec<_>>());
    run(&mut p, command("EVAL", CATCHES, &["caught", "z", "h"], &[]));
    let loaded = p.cmd(&["SCRIPT", "LOAD", SPREAD]);
    let sha = String::from_utf8_lossy(&loaded);
    let sha = sha.lines().nth(1).unwrap_or("").to_string();
    let argv = with_first(64, numbered("sha-", 6));
    run(&mut p, command("EVALSHA", &sha, &keys, &argv));
    p.cmd(&["FUNCTION", "LOAD", &library()]);
    let argv = with_first(700, numbered("fn-", 6));
    run(&mut p, command("FCALL", "spread", &keys, &argv));
    p.finish("9 scripts and functions")
}

/// Runs `words` through `p` (a reply that is an error stops the run).
fn run(p: &mut Pair, words: Vec<String>) {
    p.cmd(&words.iter().map(String::as_str).collect::<Vec<_>>());
}

/// `verb target numkeys keys... args...`.
fn command(verb: &str, target: &str, keys: &[&str], args: &[String]) -> Vec<String> {
    let head = [verb.to_string(), target.to_string(), keys.len().to_string()];
    let keys = keys.iter().map(|k| k.to_string());
    head.into_iter()
        .chain(keys)
        .chain(args.iter().cloned())
        .collect()
}

/// `{prefix}{i}` for `i` below `n`.
fn numbered(prefix: &str, n: usize) -> Vec<String> {
    (0..n).map(|i| format!("{prefix}{i:05}")).collect()
}

/// `first`, then `rest`.
fn with_first(first: usize, rest: Vec<String>) -> Vec<String> {
    std::iter::once(first.to_string()).chain(rest).collect()
}
