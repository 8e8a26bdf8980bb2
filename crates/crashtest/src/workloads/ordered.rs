//! Workloads of the ordered index (the persistent skiplist, docs/design.md
//! §10): every persist path of a node, under the simulator.
//!
//! The paths, and the crash windows they open:
//! - *insert* of a new key: the node is written and fenced, then linked
//!   (`pred.next`, fenced), then the point index names the record. A crash
//!   after the link and before the slot leaves an orphan node.
//! - *remove*: the point index drops the key (delete marker, fenced), then
//!   the node is unlinked (fenced). A crash in between leaves an orphan.
//! - *node segments*: the first node of a size class (or one past a full
//!   segment) allocates a segment (header body, fence, state word, fence).
//! - *the walk after open* unlinks orphans (a remove, under the key's bucket
//!   lock) and frees the slots of old segments nothing links.
//!
//! Invariants of these workloads:
//! - Keys sort the way their numbers do (`okey`), so "neighbour" and
//!   "between" mean what they say; `padded` keys sit right after the key
//!   they extend and fall into a larger node class.
//! - What the engine's hints are (one key in eight, by a seeded hash) is
//!   mirrored in `hinted`; if it drifts, the workloads still run, only the
//!   "next to a hinted node" positions become ordinary ones.

use std::collections::BTreeSet;
use std::time::Duration;

use rand::Rng;

use super::{settle, small_len, value, Ctx, Finished, Op, UpdateMode};
use crate::oracle::Key;
use crate::poolfile;
use crate::sim::{lock, mix, Gate, SimConfig};

/// A key of 7 bytes (a 32-byte node) that sorts by `i`.
fn okey(i: u64) -> Key {
    format!("k{i:06}").into_bytes()
}

/// `okey(i)` extended to `len` bytes: right after `okey(i)`, before
/// `okey(i + 1)`, in the node class of `24 + len` bytes.
fn padded(i: u64, len: usize) -> Key {
    let mut k = okey(i);
    k.resize(len, b'~');
    k
}

/// Whether the engine keeps a search hint for `key` (mirrors `sampled` in
/// `ordered.rs`: one key in eight, by xxh3 seeded from the pool's hash seed,
/// which the harness chose when it wrote the superblock).
fn hinted(cfg: &SimConfig, key: &[u8]) -> bool {
    let seed = mix(cfg.seed, 0x5EED) ^ 0x6f72_6465_7265_6421;
    xxhash_rust::xxh3::xxh3_64_with_seed(key, seed) >> 61 == 0
}

fn put(c: &mut Ctx, k: Key) {
    let len = small_len(&mut c.rng);
    let v = value(&mut c.rng, len);
    c.run(Op::Put(k, v));
}

fn present(c: &Ctx, k: &[u8]) -> bool {
    lock(&c.sim.expect).current(k).is_some()
}

/// The skiplist of the live pool file: (node offset, key) in list order.
fn nodes(c: &Ctx) -> Vec<(u64, Key)> {
    std::fs::read(&c.pool)
        .ok()
        .and_then(|b| {
            let p = poolfile::parse(&b)?;
            poolfile::ordered_list(&b, &p).ok()
        })
        .unwrap_or_default()
}

fn node_of(c: &Ctx, key: &[u8]) -> Option<u64> {
    nodes(c).into_iter().find(|(_, k)| k == key).map(|n| n.0)
}

/// Runs deferred (epoch) work until the queue is drained: the oracle's own
/// engines fill the global queue, of which one `flush` collects a few bags,
/// so a node freed by the last delete may otherwise wait for a later one.
fn drain_epoch() {
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
}

fn segments_ordered(c: &Ctx) -> u32 {
    c.db().stats().segments_ordered
}

/// Inserts at every position of the list and into five node classes.
pub fn insert(cfg: &SimConfig) -> Finished {
    // The first open is explored: it creates the head node (written, fenced,
    // then its segment committed) next to the first index segment.
    let mut c = Ctx::start(cfg, 16, true);
    c.explore(true);
    put(&mut c, okey(500)); // into the empty list
    put(&mut c, okey(900)); // after the last node
    put(&mut c, okey(100)); // before the first node
    put(&mut c, vec![0]); // smallest non-empty key: right after the head
    put(&mut c, Vec::new()); // the empty key: before everything, like the head's
    put(&mut c, vec![0xff, 0xff]); // after the last node
    put(&mut c, okey(700)); // between neighbours
    put(&mut c, okey(300));
    put(&mut c, okey(301)); // right after a node
    put(&mut c, okey(299)); // right before a node
    c.run(Op::Get(Vec::new()));
    c.run(Op::Scan);
    // Next to hinted nodes: a search for a key starts at the hint below it.
    let taken: BTreeSet<u64> = [100, 299, 300, 301, 500, 700, 900].into();
    let hints: Vec<u64> = (110..890u64)
        .filter(|i| !taken.contains(i) && !taken.contains(&(i - 1)) && !taken.contains(&(i + 1)))
        .filter(|&i| hinted(cfg, &okey(i)))
        .take(3)
        .collect();
    for &h in &hints {
        put(&mut c, okey(h)); // the hinted node
        put(&mut c, okey(h + 1)); // after it: the search starts at it
        put(&mut c, okey(h - 1)); // before it: its successor is the hint
        put(&mut c, padded(h, 8)); // between the hint and its successor
    }
    c.run(Op::Scan);
    // Larger node classes: the first node of each allocates its segment.
    let before = segments_ordered(&c);
    put(&mut c, padded(400, 40)); // 64-byte nodes
    put(&mut c, padded(401, 100)); // 128-byte nodes
    put(&mut c, padded(402, 1000)); // 1 KiB nodes
    put(&mut c, padded(402, 990)); // right before it, same class
    put(&mut c, padded(299, 100)); // between two 32-byte nodes
    c.run(Op::Get(padded(401, 100)));
    // 8 KiB nodes, seven per 64 KiB segment: the eighth allocates a second
    // segment of the class (explored from the sixth on).
    for j in 0..9u64 {
        c.explore(j >= 5);
        put(&mut c, padded(600 + 2 * j, 5_000));
    }
    c.explore(true);
    let added = segments_ordered(&c) - before;
    if added < 5 && !c.broken {
        c.sim.fail(format!(
            "ordered-insert: four new node classes and a full one added {added} node segments, expected 5"
        ));
    }
    c.note = Some(format!(
        "{} hinted keys, {} node segments",
        hints.len(),
        segments_ordered(&c)
    ));
    c.run(Op::Get(padded(606, 5_000)));
    c.run(Op::Scan);
    c.finish()
}

/// Unlinks at every position, re-inserts into freed slots, and goes
/// through `update`.
pub fn delete(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..16 {
        put(&mut c, okey(10 * i));
    }
    put(&mut c, Vec::new());
    put(&mut c, padded(55, 100));
    put(&mut c, padded(75, 1000));
    let used: BTreeSet<u64> = nodes(&c).into_iter().map(|n| n.0).collect();
    c.explore(true);
    c.run(Op::Delete(Vec::new())); // the first node
    c.run(Op::Delete(okey(150))); // the last node
    c.run(Op::Delete(okey(80))); // a middle node
    c.run(Op::Delete(okey(30))); // two adjacent nodes
    c.run(Op::Delete(okey(40)));
    c.run(Op::Delete(okey(45))); // absent, between two nodes
    c.run(Op::Delete(okey(40))); // already deleted
    c.run(Op::Delete(okey(0))); // the new first node
    c.run(Op::Scan);
    // Delete then re-insert: a slot freed by a delete (after its epoch)
    // takes the new node.
    let mut reused = 0;
    for k in [okey(90), padded(75, 1000), padded(55, 100)] {
        c.run(Op::Delete(k.clone()));
        drain_epoch();
        put(&mut c, k.clone());
        reused += node_of(&c, &k).is_some_and(|n| used.contains(&n)) as u32;
        c.run(Op::Get(k));
    }
    // Through `update`.
    c.run(Op::Update(okey(100), UpdateMode::Delete)); // delete
    c.run(Op::Update(okey(105), UpdateMode::Delete)); // absent
    c.run(Op::Update(okey(105), UpdateMode::Append(b'n'))); // insert
    c.run(Op::Update(okey(107), UpdateMode::Keep)); // absent, kept absent
    c.run(Op::Update(okey(110), UpdateMode::Append(b'+'))); // existing
    c.run(Op::Update(okey(120), UpdateMode::Delete)); // delete, then
    c.run(Op::Update(okey(120), UpdateMode::Append(b'r'))); // re-insert
    c.run(Op::Scan);
    // Empty the list (unexplored but the last two), then refill it.
    let left: Vec<Key> = lock(&c.sim.expect)
        .acked
        .iter()
        .filter(|(_, v)| v.is_some())
        .map(|(k, _)| k.clone())
        .collect();
    for (n, k) in left.iter().enumerate() {
        c.explore(n + 2 >= left.len());
        c.run(Op::Delete(k.clone()));
    }
    c.explore(true);
    c.run(Op::Scan);
    put(&mut c, okey(60));
    put(&mut c, okey(50));
    c.run(Op::Scan);
    c.note = Some(format!("{reused} of 3 re-inserts took a freed node slot"));
    c.finish()
}

/// The overlapping pairs of `ordered-lanes`: (A inserts, B's key relative
/// to A's, B inserts, the fence A is held at, what it exercises). An
/// insert's fence 0 makes its node durable while it holds its
/// predecessor's range mark, before the link; a delete's fence 0 makes the
/// point index's delete durable (its node still linked, no mark held), its
/// fence 1 the unlink (both marks held).
const PAIRS: &[(bool, i64, bool, u64, &str)] = &[
    (
        true,
        1,
        true,
        0,
        "same gap, after A: B's double check fails, it searches again",
    ),
    (
        true,
        -1,
        true,
        0,
        "same gap, before A: B links between the predecessor and A",
    ),
    (
        true,
        1,
        false,
        0,
        "B removes A's successor: its predecessor changes under it",
    ),
    (
        false,
        1,
        false,
        0,
        "B unlinks the node after A's (A's key already gone)",
    ),
    (
        false,
        -1,
        true,
        0,
        "B links right before A's node, which A then unlinks",
    ),
    (
        false,
        1,
        true,
        1,
        "B waits for A's marks, then links after A's old place",
    ),
    (
        false,
        -1,
        false,
        1,
        "adjacent removes: B waits for the mark A's unlink holds",
    ),
];

/// One writer of a pair: an insert if `k` is absent, else a delete (half of
/// them through `update`).
fn toggle(c: &mut Ctx, k: Key) -> Op {
    let through_update = c.rng.gen_range(0..2) == 0;
    match (present(c, &k), through_update) {
        (true, false) => Op::Delete(k),
        (true, true) => Op::Update(k, UpdateMode::Delete),
        (false, false) => {
            let len = small_len(&mut c.rng);
            Op::Put(k, value(&mut c.rng, len))
        }
        (false, true) => Op::Update(k, UpdateMode::Append(b'l')),
    }
}

/// Runs `a` on a new thread held at its fence number `skip` (while it holds
/// its bucket lock, and its range marks from the node's first fence on),
/// then `b` on another thread; releases `a` after `b` finished or blocked.
/// Returns whether the two overlapped (`a` had that many fences).
fn overlap(c: &mut Ctx, a: Op, b: Op, skip: u64) -> bool {
    if c.broken {
        return false;
    }
    let db = c.db().clone();
    let gate = Gate::after(skip);
    let ta = {
        let (sim, db, gate) = (c.sim.clone(), db.clone(), gate.clone());
        std::thread::spawn(move || {
            sim.arm_gate(&gate);
            super::exec(&sim, &db, &a)
        })
    };
    let held = gate.wait_reached_or(|| ta.is_finished());
    if !held {
        c.sim.disarm_gate();
    }
    let tb = {
        let (sim, db) = (c.sim.clone(), db.clone());
        std::thread::spawn(move || super::exec(&sim, &db, &b))
    };
    if held {
        let t0 = std::time::Instant::now();
        while !tb.is_finished() && t0.elapsed() < Duration::from_millis(30) {
            std::thread::sleep(Duration::from_millis(1));
        }
        gate.release();
    }
    let ra = ta
        .join()
        .unwrap_or_else(|_| Err("writer A panicked".into()));
    let rb = tb
        .join()
        .unwrap_or_else(|_| Err("writer B panicked".into()));
    settle();
    c.ops += 2;
    for (who, r) in [("A", ra), ("B", rb)] {
        if let Err(e) = r {
            c.sim.fail(format!("overlapping writer {who}: {e}"));
            c.broken = true;
        }
    }
    held
}

/// Three threads on neighbouring keys, one operation at a time; then pairs
/// of writers of neighbouring keys that overlap.
pub fn lanes(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let base = 100u64;
    for i in (0..12).step_by(2) {
        put(&mut c, okey(base + i));
    }
    c.explore(true);
    // Neighbours in turn on three threads (three lanes).
    for i in 0..24u64 {
        let j = base + (i * 5 + c.rng.gen_range(0..2)) % 12;
        let op = match c.rng.gen_range(0..8) {
            0 => Op::Get(okey(j)),
            1 if present(&c, &okey(j)) => {
                let len = small_len(&mut c.rng);
                Op::Put(okey(j), value(&mut c.rng, len)) // overwrite: no node work
            }
            _ => toggle(&mut c, okey(j)),
        };
        c.run_on((i % 3) as usize, op);
    }
    c.run(Op::Scan);
    // Overlapping pairs: A held at a fence of its insert or remove while B
    // inserts or removes a neighbour. The keys' states are set up first
    // (unexplored); the pair itself is explored.
    let mut overlapped = 0;
    for r in 0..PAIRS.len() + 2 {
        let j = base + 2 + c.rng.gen_range(0..8);
        let (a_inserts, b_offset, b_inserts, skip) = match PAIRS.get(r) {
            Some(&(a, off, b, skip, _)) => (a, off, b, skip),
            // Two pairs at random: A held at any of its first four fences.
            None => (
                !present(&c, &okey(j)),
                if r % 2 == 0 { 1 } else { -1 },
                c.rng.gen_range(0..2) == 0,
                c.rng.gen_range(0..4),
            ),
        };
        let (ka, kb) = (okey(j), okey(j.wrapping_add_signed(b_offset)));
        c.explore(false);
        for (k, insert) in [(&ka, a_inserts), (&kb, b_inserts)] {
            // An insert needs the key absent, a delete present.
            if present(&c, k) == insert {
                let op = toggle(&mut c, k.clone());
                c.run(op);
            }
        }
        c.explore(true);
        let a = toggle(&mut c, ka);
        let b = toggle(&mut c, kb);
        overlapped += overlap(&mut c, a, b, skip) as u32;
        c.run(Op::Scan);
    }
    let lanes: BTreeSet<u32> = std::fs::read(&c.pool)
        .ok()
        .and_then(|b| poolfile::parse(&b))
        .map(|p| {
            p.segments
                .iter()
                .filter_map(|k| match k {
                    poolfile::SegKind::Log { lane, .. } => Some(*lane),
                    _ => None,
                })
                .collect()
        })
        .unwrap_or_default();
    c.note = Some(format!(
        "{overlapped} of {} pairs overlapped; log segments on lanes {lanes:?}",
        PAIRS.len() + 2
    ));
    if lanes.len() < 3 && !c.broken {
        c.sim.fail(format!(
            "ordered-lanes: three threads used only lanes {lanes:?}"
        ));
    }
    c.finish()
}

/// Orphan nodes of an image: linked keys the point index does not hold
/// (by the harness's own parser; `None` when the list is unreadable).
fn image_orphans(img: &[u8]) -> Option<usize> {
    let p = poolfile::parse(img)?;
    let listed = poolfile::ordered_keys(img, &p).ok()?;
    let live: BTreeSet<&[u8]> = p.live.iter().map(|r| r.key.as_slice()).collect();
    Some(
        listed
            .iter()
            .filter(|k| !live.contains(k.as_slice()))
            .count(),
    )
}

/// Crash images in the middle of inserts and deletes until one holds an
/// orphan node; recovery from it (explored, with a put while the walk
/// runs); more writes that take the old node slots; a clean reopen.
pub fn reopen(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    // Node segments of three classes before the crash.
    for i in 0..20 {
        put(&mut c, okey(4 * i));
    }
    put(&mut c, padded(5, 40));
    put(&mut c, padded(9, 100));
    put(&mut c, padded(13, 100));
    let mut fallback = None;
    let mut chosen = None;
    for i in 0..40u64 {
        if !c.sim.has_capture() {
            let f = c.rng.gen_range(0..5);
            c.sim.request_capture(f);
        }
        // New keys and deletes: the two windows that leave orphans.
        let op = match i % 3 {
            0 | 1 => {
                let len = small_len(&mut c.rng);
                Op::Put(okey(4 * (i % 20) + 1 + i / 20), value(&mut c.rng, len))
            }
            _ => Op::Delete(okey(4 * (i % 20))),
        };
        c.run(op);
        if let Some(cap) = c.sim.take_capture() {
            if image_orphans(&cap.image).unwrap_or(0) > 0 {
                chosen = Some(cap);
                break;
            }
            fallback = Some(cap);
        }
    }
    let with_orphans = chosen.is_some();
    let Some(captured) = chosen.or(fallback) else {
        c.sim
            .fail("ordered-reopen: no crash image was captured".into());
        return c.finish();
    };
    let orphans = image_orphans(&captured.image);
    // Recover from it, exploring the open and the walk; a put of a new key
    // goes in while the walk runs (its node comes from a new segment).
    c.reopen_from_as(&captured.image, captured.expect, true, false);
    if c.broken {
        return c.finish();
    }
    let during_walk = !c.db().stats().ordered_walk_done;
    put(&mut c, okey(2001));
    c.db().wait_for_rebuild();
    c.explore(false);
    c.resolve_in_flight();
    c.run(Op::Scan);
    // After the walk: inserts, deletes and re-inserts of the classes the old
    // segments hold take their free slots; no node segment is added.
    let segments_before = segments_ordered(&c);
    c.explore(true);
    for i in 0..12u64 {
        let k = match i % 4 {
            0 => padded(100 + i, 40),
            1 => padded(100 + i, 100),
            _ => okey(100 + i),
        };
        put(&mut c, k.clone());
        if i % 3 == 2 {
            c.run(Op::Delete(k.clone()));
            put(&mut c, k);
        }
    }
    c.run(Op::Delete(okey(0)));
    c.run(Op::Scan);
    let segments_after = segments_ordered(&c);
    if segments_after != segments_before && !c.broken {
        c.sim.fail(format!(
            "ordered-reopen: inserts after the walk added node segments ({segments_before} -> {segments_after}) instead of reusing free slots of old ones"
        ));
    }
    c.note = Some(format!(
        "crash image with {} orphan node(s){}; put {} the walk",
        orphans.map_or("?".to_string(), |n| n.to_string()),
        if with_orphans { "" } else { " (none found)" },
        if during_walk { "during" } else { "after" }
    ));
    // Clean close, reopen (explored: a walk with nothing to repair), more.
    c.explore(false);
    let expect = lock(&c.sim.expect).clone();
    c.close();
    let bytes = std::fs::read(&c.pool).expect("read the closed pool");
    c.reopen_from(&bytes, expect, true);
    c.explore(true);
    put(&mut c, okey(3));
    c.run(Op::Delete(okey(8)));
    put(&mut c, padded(3, 40));
    c.run(Op::Scan);
    if let Some((_, k)) = nodes(&c).into_iter().next() {
        c.run(Op::Get(k));
    }
    c.finish()
}
