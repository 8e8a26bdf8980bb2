//! Workloads of the ordered index (the persistent skiplist, docs/design.md
//! §10): every persist path of a node, under the simulator.
//!
//! | workload        | persist path it covers                                  |
//! |-----------------|---------------------------------------------------------|
//! | ordered-insert  | first open (head node); links into the empty list,      |
//! |                 | before the first node (the empty key, the smallest      |
//! |                 | keys), after the last, between neighbours, next to      |
//! |                 | hinted nodes; node segments of the 32 B, 64 B, 128 B,   |
//! |                 | 1 KiB and 8 KiB classes, and a second 8 KiB segment     |
//! |                 | when one fills                                          |
//! | ordered-delete  | overwrites of the first, a middle and the last key      |
//! |                 | (also to a large run and back); unlink of the first,    |
//! |                 | last, middle and adjacent nodes; delete then re-insert  |
//! |                 | (node slot reuse), long keys; deletes and inserts       |
//! |                 | through `update`; emptying the list and refilling it    |
//! | ordered-lanes   | three threads insert and delete neighbouring keys;      |
//! |                 | pairs of writers overlap (one held at a fence while the |
//! |                 | other links or unlinks next to it: range marks, the     |
//! |                 | double check)                                           |
//! | ordered-reopen  | recover from a crash image with orphan nodes (the walk  |
//! |                 | after open unlinks them), a put while the walk runs,    |
//! |                 | reuse of old node slots after it, clean reopen          |
//! | dram-insert     | `ordered-insert` with the point index in DRAM (format   |
//! |                 | 3): no index segment; a new key's node is linked with   |
//! |                 | record word 0, then the record, then the word           |
//! |                 | (two-phase)                                             |
//! | dram-update-    | `ordered-delete` in DRAM: overwrites move the node's    |
//! | delete          | record word (two-phase, also to a large run and back);  |
//! |                 | deletes store the marker, fence, 0, then unlink;        |
//! |                 | re-inserts; `update`                                    |
//! | dram-lanes      | `ordered-lanes` in DRAM (three threads, overlapping     |
//! |                 | writers)                                                |
//! | dram-reopen     | `ordered-reopen` in DRAM: the crash image also has a    |
//! |                 | half-done record word on one of the first nodes; the    |
//! |                 | engine's rebuild of the DRAM index after open is held   |
//! |                 | at its first fence (helping persist that word) while    |
//! |                 | every key is read and later keys are overwritten,       |
//! |                 | deleted, re-inserted and updated (served by their       |
//! |                 | nodes), then let go; orphans unlinked; clean reopen     |
//! | leaves-insert   | `ordered-insert` on leaves (format 6): a new key        |
//! |                 | reserves an entry (prefix, marker), then the record,    |
//! |                 | then the word (two-phase); every key in the first leaf  |
//! |                 | (no split, no new segment). The first open (the first   |
//! |                 | leaf's segment, then the leaf: entries, fence, word 0,  |
//! |                 | fence) only with `EXPLORE_FIRST_OPEN`                   |
//! | leaves-update-  | `ordered-delete` on leaves: overwrites move an entry's  |
//! | delete          | word (two-phase); deletes store the marker, fence, 0    |
//! |                 | (the entry is free); re-inserts take freed entries;     |
//! |                 | `update`; emptying the leaf and refilling it            |
//!
//! (`dram-cleaner` is the cleaner's workload on this placement, in
//! `cleaner.rs`; `leaves-lanes`, `leaves-reopen` and `leaves-split`, the
//! paths only leaves have — splits, pins, copies an interrupted split
//! leaves — are in `leaves.rs`, which uses this room's helpers.) What the oracle checks for them, besides what it checks
//! for the hash index (`point.rs`), is listed in `oracle.rs` (checks 7 to
//! 14): no orphan node after the walk; `range_keys`, `range(..).rev()`,
//! `first`/`last` and `count_range` agree with the keys `get` finds; the
//! skiplist on media holds exactly the present keys after close; in DRAM,
//! every key reads a legal value right after open (before the rebuild is
//! done) and the same value after it, and the nodes' record words on media
//! name exactly the present keys' records, persist bit set. The workloads'
//! own `Op::Scan` checks the listing while they run (`ops.rs`).
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
//! With the point index in DRAM (the `dram-*` workloads run these same
//! functions, `cfg.options.point_index`), the node also carries the key's
//! *record word*, the persistent truth of its value:
//! - a new key's node is written and linked with word 0; after the record,
//!   the word is set two-phase (fence, then the persist bit); a crash in
//!   between leaves an orphan (word 0) or a half-done word;
//! - an overwrite (or a cleaner relocation) only moves the word, two-phase;
//! - a delete stores the delete marker (fenced), then 0, then unlinks;
//! - after open, the engine's thread for the ordered index enters every
//!   key into the DRAM index (helping persist half-done words; the engine
//!   scans the node slabs), then walks the list and unlinks orphans; until
//!   the DRAM index is complete, reads and writes that miss it go to the
//!   key's node.
//!
//! Invariants of these workloads:
//! - Keys sort the way their numbers do (`okey`), so "neighbour" and
//!   "between" mean what they say; `padded` keys sit right after the key
//!   they extend and fall into a larger node class.
//! - What the engine's hints are (one key in eight, by a seeded hash) is
//!   mirrored in `hinted`; if it drifts, the workloads still run, only the
//!   "next to a hinted node" positions become ordinary ones.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use persimmon::PointIndex;
use rand::Rng;

use super::ctx::{present, present_keys, Ctx, Finished};
use super::epoch::{drain_epoch, settle};
use super::kv::put_small as put;
use super::kv::{small_len, value};
use super::live_segments::log_lanes;
use super::ops::{exec, Op, UpdateMode};
use super::pool::leaf_pool;
use super::rebuild::{finish_held, hold_and_read};
use crate::oracle::Key;
use crate::poolfile;
use crate::sim::{mix, Gate, SimConfig};

/// A key of 7 bytes (a 32-byte node) that sorts by `i`.
pub(super) fn okey(i: u64) -> Key {
    format!("k{i:06}").into_bytes()
}

/// `okey(i)` extended to `len` bytes: right after `okey(i)`, before
/// `okey(i + 1)`, in the node class of `24 + len` bytes.
pub(super) fn padded(i: u64, len: usize) -> Key {
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

/// The ordered index of the live pool file: (node offset, key) in list
/// order (leaves: (entry, key) by key).
pub(super) fn nodes(c: &Ctx) -> Vec<(u64, Key)> {
    c.sim
        .live_pool()
        .and_then(|b| {
            let p = poolfile::parse(&b)?;
            poolfile::ordered_list(&b, &p).ok()
        })
        .unwrap_or_default()
}

fn node_of(c: &Ctx, key: &[u8]) -> Option<u64> {
    nodes(c).into_iter().find(|(_, k)| k == key).map(|n| n.0)
}

pub(super) fn segments_ordered(c: &Ctx) -> u32 {
    c.db().stats().segments_ordered
}

/// Whether `leaves-insert` explores the first open of its new pool (the
/// first leaf's segment: slab zeroed, fence, header committed; then the
/// first leaf: entries and low key, fence, word 0, fence). A crash after
/// the segment's header and before the first leaf's word 0 once left a pool
/// the engine refused to open; now an open that finds no leaf creates the
/// first one.
const EXPLORE_FIRST_OPEN: bool = true;

/// Inserts at every position of the list and into five node classes.
pub fn insert(cfg: &SimConfig) -> Finished {
    // The first open is explored: it creates the head node (written, fenced,
    // then its segment committed) next to the first index segment; on
    // leaves, the first leaf (see `EXPLORE_FIRST_OPEN`).
    let explore_open = !leaf_pool(&cfg.options) || EXPLORE_FIRST_OPEN;
    let mut c = Ctx::start(cfg, 16, explore_open);
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
    let leaves = leaf_pool(&cfg.options);
    if !leaves && added < 5 && !c.broken {
        c.sim.fail(format!(
            "{}: four new node classes and a full one added {added} node segments, expected 5",
            cfg.workload
        ));
    }
    // Leaves: the keys live in the records; the 36 keys fit the first leaf.
    let nodes_now = c.db().stats().ordered_nodes;
    if leaves && (added != 0 || nodes_now != 1) && !c.broken {
        c.sim.fail(format!(
            "{}: 36 keys in leaves of 60 entries: {nodes_now} leaves, {added} leaf segments added",
            cfg.workload
        ));
    }
    c.note = Some(format!(
        "{} hinted keys, {} {} segments",
        hints.len(),
        segments_ordered(&c),
        if leaves { "leaf" } else { "node" }
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
    // Overwrites: no node work; the slot (or, in DRAM, the node's record
    // word) moves to the new record, two-phase. The first, a middle and the
    // last node, a large record (a run of its own) and back to a small one.
    put(&mut c, Vec::new());
    put(&mut c, okey(70));
    put(&mut c, okey(150));
    put(&mut c, padded(75, 1000));
    let large = value(&mut c.rng, 40_000);
    c.run(Op::Put(okey(60), large));
    put(&mut c, okey(60));
    c.run(Op::Get(okey(60)));
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
    let left = present_keys(&c);
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

/// Pairs `lanes_in` overlaps: `PAIRS`, then two at random.
pub(super) const LANE_PAIRS: usize = PAIRS.len() + 2;

/// One writer of a pair: an insert if `k` is absent, else a delete (half of
/// them through `update`).
pub(super) fn toggle(c: &mut Ctx, k: Key) -> Op {
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
pub(super) fn overlap(c: &mut Ctx, a: Op, b: Op, skip: u64) -> bool {
    if c.broken {
        return false;
    }
    let db = c.db().clone();
    let gate = Gate::after(skip);
    let ta = {
        let (sim, db, gate) = (c.sim.clone(), db.clone(), gate.clone());
        std::thread::spawn(move || {
            sim.arm_gate(&gate);
            exec(&sim, &db, &a)
        })
    };
    let held = gate.wait_reached_or(|| ta.is_finished());
    if !held {
        c.sim.disarm_gate();
    }
    let tb = {
        let (sim, db) = (c.sim.clone(), db.clone());
        std::thread::spawn(move || exec(&sim, &db, &b))
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
    let overlapped = lanes_in(&mut c);
    lanes_note(&mut c, overlapped, LANE_PAIRS);
    c.finish()
}

/// The note of a lanes workload (`overlapped` pairs of `pairs`), and the
/// check that three threads used three lanes.
pub(super) fn lanes_note(c: &mut Ctx, overlapped: u32, pairs: usize) {
    let lanes = log_lanes(c);
    c.note = Some(format!(
        "{overlapped} of {pairs} pairs overlapped; log segments on lanes {lanes:?}"
    ));
    if lanes.len() < 3 && !c.broken {
        c.sim.fail(format!(
            "{}: three threads used only lanes {lanes:?}",
            c.cfg.workload
        ));
    }
}

/// `lanes`' operations on `c`; returns how many pairs overlapped.
pub(super) fn lanes_in(c: &mut Ctx) -> u32 {
    let base = 100u64;
    for i in (0..12).step_by(2) {
        put(c, okey(base + i));
    }
    c.explore(true);
    // Neighbours in turn on three threads (three lanes).
    for i in 0..24u64 {
        let j = base + (i * 5 + c.rng.gen_range(0..2)) % 12;
        let op = match c.rng.gen_range(0..8) {
            0 => Op::Get(okey(j)),
            1 if present(c, &okey(j)) => {
                let len = small_len(&mut c.rng);
                Op::Put(okey(j), value(&mut c.rng, len)) // overwrite: no node work
            }
            _ => toggle(c, okey(j)),
        };
        c.run_on((i % 3) as usize, op);
    }
    c.run(Op::Scan);
    // Overlapping pairs: A held at a fence of its insert or remove while B
    // inserts or removes a neighbour. The keys' states are set up first
    // (unexplored); the pair itself is explored.
    let mut overlapped = 0;
    for r in 0..LANE_PAIRS {
        let j = base + 2 + c.rng.gen_range(0..8);
        let (a_inserts, b_offset, b_inserts, skip) = match PAIRS.get(r) {
            Some(&(a, off, b, skip, _)) => (a, off, b, skip),
            // Two pairs at random: A held at any of its first four fences.
            None => (
                !present(c, &okey(j)),
                if r % 2 == 0 { 1 } else { -1 },
                c.rng.gen_range(0..2) == 0,
                c.rng.gen_range(0..4),
            ),
        };
        let (ka, kb) = (okey(j), okey(j.wrapping_add_signed(b_offset)));
        c.explore(false);
        for (k, insert) in [(&ka, a_inserts), (&kb, b_inserts)] {
            // An insert needs the key absent, a delete present.
            if present(c, k) == insert {
                let op = toggle(c, k.clone());
                c.run(op);
            }
        }
        c.explore(true);
        let a = toggle(c, ka);
        let b = toggle(c, kb);
        overlapped += overlap(c, a, b, skip) as u32;
        c.run(Op::Scan);
    }
    overlapped
}

/// What the work after open has to repair in an image (by the harness's
/// own parser).
#[derive(Clone, Copy, Default)]
struct Repairs {
    /// Linked keys the point index does not hold.
    orphans: usize,
    /// DRAM point index: record words set without their persist bit.
    half_done: usize,
    /// ... one of them on one of the first two nodes (`okey(0)`,
    /// `okey(4)`, first in list order and in slab order).
    first_half_done: bool,
}

impl Repairs {
    fn of(img: &[u8]) -> Option<Repairs> {
        let p = poolfile::parse(img)?;
        let words = poolfile::record_words(img, &p).ok()?;
        let live: BTreeSet<&[u8]> = p.live.iter().map(|r| r.key.as_slice()).collect();
        let first = [okey(0), okey(4)];
        Some(Repairs {
            orphans: words
                .iter()
                .filter(|w| !live.contains(w.key.as_slice()))
                .count(),
            half_done: words.iter().filter(|w| w.half_done()).count(),
            first_half_done: words
                .iter()
                .any(|w| w.half_done() && first.contains(&w.key)),
        })
    }

    /// How well the image serves `reopen` (PM: orphans; DRAM: also a
    /// half-done word the rebuild meets first, see `dram_while_walk_held`).
    fn score(&self) -> u8 {
        2 * self.first_half_done as u8 + (self.orphans > 0) as u8
    }
}

/// `dram-reopen`: keys after the workload's own, written while the DRAM
/// index's rebuild is held.
pub(super) const TAIL: u64 = 160;

pub(super) fn tail(i: u64) -> Key {
    okey(10_000 + i)
}

/// The `n`-th tail key from the end.
fn late(n: u64) -> Key {
    tail(TAIL - 1 - n)
}

/// Crash images in the middle of inserts, deletes and overwrites until one
/// holds an orphan node (DRAM: and a half-done record word on one of the
/// first nodes); recovery from it (explored, with writes while the work
/// after open runs: in DRAM, held, see `dram_while_walk_held`); more writes
/// that take the old node slots; a clean reopen.
pub fn reopen(cfg: &SimConfig) -> Finished {
    let dram = cfg.options.point_index == PointIndex::Dram;
    let mut c = Ctx::start(cfg, 16, false);
    let Some((repairs, captured)) = capture_image_with_orphans(&mut c, dram) else {
        c.sim
            .fail(format!("{}: no crash image was captured", cfg.workload));
        return c.finish();
    };
    // Recover from it, exploring the open and the work after it, with
    // writes while it runs. PM: a put of a new key (its node from a new
    // segment). DRAM: the rebuild is held at its first fence.
    let gate = dram.then(|| Gate::on_thread_named("persimmon-ordered"));
    c.reopen_from_as(
        &captured.image,
        captured.ssd.as_ref(),
        captured.expect,
        true,
        false,
        gate.as_ref(),
    );
    if c.broken {
        return c.finish();
    }
    let during = match &gate {
        Some(g) => dram_while_walk_held(&mut c, g),
        None => {
            let during_walk = !c.db().stats().ordered_walk_done;
            put(&mut c, okey(2001));
            format!(
                "put {} the walk",
                if during_walk { "during" } else { "after" }
            )
        }
    };
    c.db().wait_for_rebuild();
    c.explore(false);
    c.resolve_in_flight();
    c.run(Op::Scan);
    writes_reuse_node_slots(&mut c);
    c.note = Some(format!(
        "crash image with {} orphan node(s){}; {during}",
        repairs.orphans,
        if dram {
            format!(
                ", {} half-done record word(s){}",
                repairs.half_done,
                if repairs.first_half_done {
                    " (one on a first node)"
                } else {
                    ""
                }
            )
        } else {
            String::new()
        }
    ));
    // Clean close, reopen (explored: a walk with nothing to repair), more.
    c.explore(false);
    c.clean_reopen();
    put(&mut c, okey(3));
    c.run(Op::Delete(okey(8)));
    put(&mut c, padded(3, 40));
    if dram {
        put(&mut c, late(0)); // overwrites after a clean reopen
        c.run(Op::Delete(late(1)));
    }
    c.run(Op::Scan);
    if let Some((_, k)) = nodes(&c).into_iter().next() {
        c.run(Op::Get(k));
    }
    c.finish()
}

/// The first part of `reopen`: node segments of three classes (DRAM: and
/// the tail keys), then inserts, deletes and overwrites with crash images
/// captured in between, until one holds the most repairs wanted (an orphan
/// node; DRAM: also a half-done record word on one of the first nodes).
/// Returns the best image captured, if any.
fn capture_image_with_orphans(c: &mut Ctx, dram: bool) -> Option<(Repairs, crate::sim::Captured)> {
    // Node segments of three classes before the crash.
    for i in 0..20 {
        put(c, okey(4 * i));
    }
    put(c, padded(5, 40));
    put(c, padded(9, 100));
    put(c, padded(13, 100));
    for i in 0..if dram { TAIL } else { 0 } {
        let v = value(&mut c.rng, 12);
        c.run(Op::Put(tail(i), v));
    }
    let best = if dram { 3 } else { 1 };
    let mut chosen: Option<(Repairs, crate::sim::Captured)> = None;
    for i in 0..60u64 {
        if !c.sim.has_capture() {
            let f = c.rng.gen_range(0..5);
            c.sim.request_capture(f);
        }
        // New keys and deletes: the two windows that leave orphans;
        // overwrites of the first two nodes (the persist bit is stored last,
        // unflushed: a crash can leave the word half done).
        let len = small_len(&mut c.rng);
        let op = match i % 4 {
            0 | 1 => Op::Put(okey(4 * (i % 20) + 1 + i / 20), value(&mut c.rng, len)),
            2 => Op::Delete(okey(4 * (i % 20))),
            _ => Op::Put(okey(4 * (i / 4 % 2)), value(&mut c.rng, len)),
        };
        c.run(op);
        if let Some(cap) = c.sim.take_capture() {
            let r = Repairs::of(&cap.image).unwrap_or_default();
            if chosen.as_ref().is_none_or(|(b, _)| r.score() > b.score()) {
                chosen = Some((r, cap));
            }
            if r.score() == best {
                break;
            }
        }
    }
    chosen
}

/// After the walk: inserts, deletes and re-inserts of the classes the old
/// segments hold take their free slots; no node segment is added.
fn writes_reuse_node_slots(c: &mut Ctx) {
    let segments_before = segments_ordered(c);
    c.explore(true);
    for i in 0..12u64 {
        let k = match i % 4 {
            0 => padded(100 + i, 40),
            1 => padded(100 + i, 100),
            _ => okey(100 + i),
        };
        put(c, k.clone());
        if i % 3 == 2 {
            c.run(Op::Delete(k.clone()));
            put(c, k);
        }
    }
    c.run(Op::Delete(okey(0)));
    c.run(Op::Scan);
    let segments_after = segments_ordered(c);
    if segments_after != segments_before && !c.broken {
        c.sim.fail(format!(
            "{}: inserts after the walk added node segments ({segments_before} -> {segments_after}) instead of reusing free slots of old ones",
            c.cfg.workload
        ));
    }
}

/// DRAM point index, right after `Db::open` returned, with `gate` armed for
/// the engine's thread that rebuilds the DRAM index from the nodes and then
/// walks the list ("persimmon-ordered"). Its first fence is where it meets
/// something to repair: a half-done record word it helps persist before it
/// enters the key (then it has entered at most the keys before that node,
/// and the DRAM index is not ready: `reopen` picks images with such a word
/// on one of the first nodes, in list and in slab order), or an orphan it
/// unlinks. While it is held, every in-flight key is resolved and every key
/// read (the keys it has not entered are served through their nodes), then
/// keys near the end are overwritten, deleted, re-inserted and updated, and
/// new keys inserted among them (all explored); then it is let go, and
/// afterwards every key is read again from the DRAM index. Returns what
/// happened, for the note.
pub(super) fn dram_while_walk_held(c: &mut Ctx, gate: &Arc<Gate>) -> String {
    let (held, waiter, keys) = hold_and_read(c, gate);
    let mut v = |len| value(&mut c.rng, len);
    let after_late = |n: u64| {
        let mut k = late(n);
        k.push(b'~'); // right after `late(n)`
        k
    };
    let writes = vec![
        Op::Put(late(0), v(20)), // an overwrite: the node's word moves
        Op::Get(late(0)),
        Op::Delete(late(1)), // marker, 0, unlink
        Op::Get(late(1)),
        Op::Delete(late(2)),
        Op::Put(late(2), v(300)), // re-inserted: a new node
        Op::Update(late(3), UpdateMode::Append(b'w')),
        Op::Update(late(4), UpdateMode::Delete),
        Op::Update(late(5), UpdateMode::Keep),
        Op::Put(after_late(6), v(9)), // new keys among the late ones
        Op::Update(after_late(7), UpdateMode::Append(b'n')),
        Op::Put(okey(12), v(30)), // a key near the held one
        Op::Get(after_late(6)),
        Op::Get(late(3)),
    ];
    finish_held(c, gate, (held, waiter), writes, &keys, true)
}
