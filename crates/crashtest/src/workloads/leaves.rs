//! Workloads of the ordered index in leaves (format version 6, pools with
//! the DRAM point index; `persimmon::ordered::leaves`): the paths only
//! leaves have, under the simulator. (`leaves-insert` and
//! `leaves-update-delete` run `ordered.rs`'s `insert` and `delete` on a
//! leaf pool: see that room's header.)
//!
//! | workload      | persist path it covers                                    |
//! |---------------|-----------------------------------------------------------|
//! | leaves-lanes  | `ordered-lanes` on leaves: three threads write            |
//! |               | neighbouring keys of one leaf (each reserving or pinning  |
//! |               | its own entry), overlapping pairs; then a full leaf whose |
//! |               | entry A pinned (held at its first fence: an overwrite,    |
//! |               | the insert that took the last entry, a delete) while B    |
//! |               | inserts into it: B's split waits for the pin, then splits |
//! |               | (or, after A's delete, finds room and splits nothing)     |
//! | leaves-split  | a narrow key range filled until leaves split, every       |
//! |               | split explored: the first leaf (empty low key), splits    |
//! |               | of middle leaves (keys in random order), splits among     |
//! |               | long keys sharing 61 bytes (separators over 48 bytes:     |
//! |               | the low key out of line, in 2 KiB leaves of a segment of  |
//! |               | their own, allocated by the first), splits of such a      |
//! |               | leaf; then deletes, re-inserts and updates in split       |
//! |               | leaves, a leaf emptied and refilled; clean reopen         |
//! | leaves-reopen | crash images captured in the middle of splits (a copy     |
//! |               | above the old leaf's range left behind) with a half-done  |
//! |               | record word in the first leaf (an overwrite's persist     |
//! |               | bit); recovery from the best one, the rebuild of the DRAM |
//! |               | index held at its first fence (helping persist that word) |
//! |               | while keys are read through the leaves and the split's    |
//! |               | keys overwritten, deleted (a stale copy still names the   |
//! |               | old record), re-inserted, and a new key put in the old    |
//! |               | leaf (full with copies: its split clears them and finds   |
//! |               | room); the copies gone after the rebuild; more splits;    |
//! |               | clean reopen                                              |
//!
//! The paths, and the crash windows they open (see the engine's module
//! header for the protocols):
//! - *reserve* (new key): the entry's prefix, then a delete marker (absent),
//!   unflushed; the record; the word (two-phase). A crash leaves the entry
//!   free (marker or 0) or naming the record, with or without its persist
//!   bit; the prefix is durable wherever the word is (same line, stored
//!   first).
//! - *split*: the upper half written into a new leaf (entries, low key,
//!   header but word 0), fence; word 0, fence; the moved entries of the old
//!   leaf cleared, flushed but not fenced. A crash before word 0 leaves the
//!   old leaf whole; after it, the new leaf holds the upper keys and copies
//!   of them may stay in the old leaf, above its range (ignored, cleared by
//!   the next open's rebuild).
//! - *leaf segments*: a leaf class's first leaf (or one past a full
//!   segment) zeroes the segment's slab durably, then commits its header.
//!
//! What the oracle checks for them is listed in `oracle.rs` (checks 7 to
//! 17): besides what it checks for the skiplist in DRAM, the image's
//! leaves are read by the harness's own parser before the open (`poolfile::
//! read_leaves`: no key named twice in range, no entry below its leaf, every
//! prefix its key's), and after recovery and a clean close no copy above a
//! leaf's range is left.
//!
//! Invariants of these workloads:
//! - A leaf holds 60 entries; the workloads fill a leaf to a chosen load
//!   (counted by the parser on the live pool file, copies included: they
//!   take room too) with keys right after an *anchor* key, a fresh one each
//!   time, so the keys stay in the anchor's leaf.
//! - `okey` keys sort by number; `lkey` keys are 67 bytes, share their
//!   first 61 and sort by number after every `okey` key.

use std::sync::Arc;

use rand::seq::SliceRandom;
use rand::Rng;

use super::ctx::{present_keys, Ctx, Finished};
use super::epoch::drain_epoch;
use super::kv::put_small as put;
use super::kv::{small_len, value};
use super::ops::{Op, UpdateMode};
use super::ordered::{self, okey, padded, segments_ordered, tail, TAIL};
use super::rebuild::{finish_held, hold_and_read};
use crate::oracle::Key;
use crate::poolfile::{self, LEAF_ENTRIES};
use crate::sim::{Gate, SimConfig};

/// A key of 67 bytes that sorts by `i`, after every `okey`; any two share
/// their first 61 bytes, so a separator between two is over 48 bytes.
fn lkey(i: u64) -> Key {
    format!("m{}{i:06}", "~".repeat(60)).into_bytes()
}

/// `anchor` extended by `tag` and `n`: right after `anchor`.
fn child(anchor: &[u8], tag: &str, n: u64) -> Key {
    let mut k = anchor.to_vec();
    k.extend_from_slice(format!(".{tag}{n:04}").as_bytes());
    k
}

/// The leaves of the live pool file (the engine's mapping).
fn live_leaves(c: &Ctx) -> Option<poolfile::Leaves> {
    let b = c.sim.live_pool()?;
    let p = poolfile::parse(&b)?;
    poolfile::read_leaves(&b, &p).ok()
}

/// Entries naming records (copies above the range included) in the leaf
/// whose range holds `key`, in the live pool file.
fn leaf_load(c: &Ctx, key: &[u8]) -> usize {
    live_leaves(c)
        .and_then(|l| {
            l.leaves
                .iter()
                .rev()
                .find(|f| f.low.as_slice() <= key)
                .map(|f| f.entries.len())
        })
        .unwrap_or(0)
}

/// Leaves in use (the engine's count).
fn leaf_count(c: &Ctx) -> u64 {
    c.db().stats().ordered_nodes
}

/// Puts new keys right after `anchor` (unexplored) until its leaf holds
/// `target` entries. Returns whether it got there.
fn fill_leaf(c: &mut Ctx, anchor: &[u8], target: usize) -> bool {
    c.explore(false);
    for n in 0..2 * LEAF_ENTRIES as u64 {
        if c.broken {
            return false;
        }
        if leaf_load(c, anchor) >= target {
            return true;
        }
        put(c, child(anchor, "f", n));
    }
    leaf_load(c, anchor) >= target
}

/// A small value.
fn small(c: &mut Ctx) -> Vec<u8> {
    let len = small_len(&mut c.rng);
    value(&mut c.rng, len)
}

// ------------------------------------------------------------------ lanes

/// `ordered-lanes` on leaves, then a full leaf with a pinned entry.
pub fn lanes(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let overlapped = ordered::lanes_in(&mut c);
    let (pinned, what) = split_waits_for_pin(&mut c);
    ordered::lanes_note(&mut c, overlapped + pinned, ordered::LANE_PAIRS + 3);
    c.add_note(what);
    c.finish()
}

/// Three pairs on a full leaf (see the header): A pins an entry of it and
/// is held at its first fence while B inserts a new key there. Returns how
/// many overlapped, and what the leaves did.
fn split_waits_for_pin(c: &mut Ctx) -> (u32, String) {
    let mut overlapped = 0;
    let mut what = Vec::new();
    for (r, a_does) in ["overwrite", "insert", "delete"].into_iter().enumerate() {
        if c.broken {
            break;
        }
        let anchor = okey(300 + 100 * r as u64);
        c.explore(false);
        put(c, anchor.clone());
        // The insert takes the last entry itself.
        let target = LEAF_ENTRIES - (a_does == "insert") as usize;
        if !fill_leaf(c, &anchor, target) {
            c.stop(format!(
                "{}: could not fill the leaf of {:?} to {target} entries",
                c.cfg.workload,
                String::from_utf8_lossy(&anchor)
            ));
            break;
        }
        let before = leaf_count(c);
        let a = match a_does {
            "overwrite" => Op::Put(anchor.clone(), small(c)),
            "insert" => Op::Put(child(&anchor, "a", 0), small(c)),
            _ => Op::Delete(anchor.clone()),
        };
        let b = Op::Put(child(&anchor, "b", 0), small(c));
        c.explore(true);
        let held = ordered::overlap(c, a, b, 0);
        overlapped += held as u32;
        c.run(Op::Scan);
        let split = leaf_count(c) - before;
        what.push(format!(
            "{a_does}{}: {split} split",
            if held { " held" } else { " not held" }
        ));
        // After A's delete B finds room (A's entry): no split.
        let want = u64::from(a_does != "delete");
        if held && split != want && !c.broken {
            c.stop(format!(
                "{}: a full leaf, A's {a_does} pinned, B's insert: {split} split(s), expected {want}",
                c.cfg.workload
            ));
        }
    }
    (
        overlapped,
        format!("full leaf, pinned: {}", what.join(", ")),
    )
}

// ------------------------------------------------------------------ split

/// What `split` counts: splits seen, and those it explored.
#[derive(Default)]
struct Splits {
    seen: u64,
    explored: u64,
}

/// Puts the new key `k`, exploring the put when its leaf is full (it
/// splits the leaf), or when `explore` says so.
fn put_watch(c: &mut Ctx, k: Key, explore: bool, s: &mut Splits) {
    let full = leaf_load(c, &k) >= LEAF_ENTRIES;
    let before = leaf_count(c);
    c.explore(full || explore);
    put(c, k);
    c.explore(false);
    let split = leaf_count(c) - before;
    s.seen += split;
    s.explored += if full { split } else { 0 };
}

/// Leaves split in a narrow key range, explored (see the header).
pub fn split(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let mut s = Splits::default();
    // The first leaf (empty low key) fills with ascending keys and splits.
    for i in 0..75 {
        put_watch(&mut c, okey(2 * i), false, &mut s);
    }
    c.run(Op::Scan);
    // The odd keys in random order: middle leaves split, the first again.
    let mut odd: Vec<u64> = (0..75).map(|i| 2 * i + 1).collect();
    odd.shuffle(&mut c.rng);
    for i in odd {
        put_watch(&mut c, okey(i), false, &mut s);
    }
    c.run(Op::Scan);
    // Long keys: separators over 48 bytes, the low key out of line in a
    // larger leaf (its segment allocated by the first such split).
    let segments = segments_ordered(&c);
    for i in 0..100 {
        put_watch(&mut c, lkey(2 * i), false, &mut s);
    }
    // Between them, in random order: leaves with a long low key split.
    let mut between: Vec<u64> = (0..60).map(|i| 2 * i + 1).collect();
    between.shuffle(&mut c.rng);
    for i in between {
        put_watch(&mut c, lkey(i), false, &mut s);
    }
    c.run(Op::Scan);
    let Some(l) = live_leaves(&c) else {
        c.stop(format!(
            "{}: the live pool's leaves are unreadable",
            cfg.workload
        ));
        return c.finish();
    };
    let long_lows = l.leaves.iter().filter(|f| f.low.len() > 48).count();
    let big = l
        .leaves
        .iter()
        .filter(|f| f.class > poolfile::LEAF_MIN_CLASS)
        .count();
    if (long_lows < 2 || big != long_lows || segments_ordered(&c) <= segments) && !c.broken {
        c.stop(format!(
            "{}: long keys gave {long_lows} leaves with a low key out of line, {big} larger leaves, {} leaf segments (were {segments})",
            cfg.workload,
            segments_ordered(&c)
        ));
    }
    // Deletes, re-inserts and updates in split leaves (explored).
    c.explore(true);
    let mid = l.leaves.len() / 2;
    let keys = present_keys(&c);
    let of_leaf = |n: usize| -> Vec<Key> {
        let low = &l.leaves[n].low;
        let high = l.leaves.get(n + 1).map(|f| f.low.clone());
        keys.iter()
            .filter(|k| *k >= low && high.as_ref().is_none_or(|h| *k < h))
            .cloned()
            .collect()
    };
    let first = of_leaf(0);
    let middle = of_leaf(mid);
    let long = l
        .leaves
        .iter()
        .position(|f| f.low.len() > 48)
        .map(of_leaf)
        .unwrap_or_default();
    // The first key of a leaf with a long low key, and others of it.
    for k in long.iter().step_by(5).take(4) {
        c.run(Op::Delete(k.clone()));
        c.run(Op::Get(k.clone()));
        put(&mut c, k.clone());
    }
    for k in first.iter().take(3) {
        c.run(Op::Update(k.clone(), UpdateMode::Append(b'u')));
    }
    // A middle leaf emptied (explored: its last three deletes), refilled.
    for (n, k) in middle.iter().enumerate() {
        c.explore(n + 3 >= middle.len());
        c.run(Op::Delete(k.clone()));
    }
    c.explore(true);
    c.run(Op::Scan);
    drain_epoch();
    for k in middle.iter().step_by(3) {
        put(&mut c, k.clone());
    }
    if let Some(k) = middle.first() {
        c.run(Op::Get(k.clone()));
        c.run(Op::Update(k.clone(), UpdateMode::Delete));
        c.run(Op::Update(k.clone(), UpdateMode::Append(b'r')));
    }
    c.run(Op::Scan);
    // A clean reopen reads the leaves back (explored), then more.
    c.explore(false);
    c.clean_reopen();
    if let Some(k) = long.first() {
        let v = value(&mut c.rng, 40);
        c.run(Op::Put(k.clone(), v));
    }
    put_watch(&mut c, lkey(1001), true, &mut s);
    c.run(Op::Delete(okey(0)));
    c.run(Op::Scan);
    c.note = Some(format!(
        "{} splits ({} explored), {} leaves, {long_lows} with a low key out of line, {} leaf segments",
        s.seen,
        s.explored,
        leaf_count(&c),
        segments_ordered(&c)
    ));
    if s.explored < 5 && !c.broken {
        c.sim.fail(format!(
            "{}: {} splits explored, expected at least 5",
            cfg.workload, s.explored
        ));
    }
    c.finish()
}

// ----------------------------------------------------------------- reopen

/// What the work after open has to do with an image of a leaf pool (by
/// the harness's own parser).
#[derive(Clone, Copy, Default)]
struct Repairs {
    /// Copies above their leaf's range (an interrupted split's).
    stale: usize,
    /// Record words in range without their persist bit.
    half_done: usize,
    /// ... one of them in the first leaf (the rebuild meets it first).
    first_half_done: bool,
}

impl Repairs {
    fn of(img: &[u8]) -> Option<Repairs> {
        let p = poolfile::parse(img)?;
        let l = poolfile::read_leaves(img, &p).ok()?;
        let first = l.leaves.first()?.at;
        Some(Repairs {
            stale: l.stale.len(),
            half_done: l.words.iter().filter(|w| w.half_done()).count(),
            first_half_done: l.words.iter().any(|w| w.half_done() && w.node == first),
        })
    }

    fn score(&self) -> u8 {
        2 * self.first_half_done as u8 + (self.stale > 0) as u8
    }
}

/// Crash images in the middle of splits; recovery from the best one with
/// writes beside the held rebuild; more splits; a clean reopen.
pub fn reopen(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..20 {
        put(&mut c, okey(4 * i));
    }
    put(&mut c, padded(5, 40));
    put(&mut c, padded(9, 100));
    put(&mut c, padded(13, 100));
    for i in 0..TAIL {
        let v = value(&mut c.rng, 12);
        c.run(Op::Put(tail(i), v));
    }
    for i in 0..70 {
        put(&mut c, lkey(i));
    }
    let Some((repairs, anchor, captured)) = capture_split_image(&mut c) else {
        c.sim
            .fail(format!("{}: no crash image was captured", cfg.workload));
        return c.finish();
    };
    // Recover from it, the open explored, the rebuild held at its first
    // fence while keys are read and written.
    let gate = Gate::on_thread_named("persimmon-ordered");
    c.reopen_from_as(
        &captured.image,
        captured.ssd.as_ref(),
        captured.expect,
        true,
        false,
        Some(&gate),
    );
    if c.broken {
        return c.finish();
    }
    let during = while_rebuild_held(&mut c, &gate, &anchor);
    c.db().wait_for_rebuild();
    c.explore(false);
    c.resolve_in_flight();
    c.run(Op::Scan);
    if let Some(l) = live_leaves(&c) {
        if let Some((e, k)) = l.stale.first() {
            c.stop(format!(
                "{}: after the rebuild, {} copies above their leaf's range are left, first entry {e:#x} of {:?}",
                cfg.workload,
                l.stale.len(),
                String::from_utf8_lossy(k)
            ));
        }
    }
    // A split after recovery (explored), deletes and re-inserts around it.
    let next = okey(9_000);
    put(&mut c, next.clone());
    if fill_leaf(&mut c, &next, LEAF_ENTRIES) {
        c.explore(true);
        put(&mut c, child(&next, "a", 0));
        c.run(Op::Delete(child(&next, "f", 40)));
        put(&mut c, child(&next, "f", 40));
        c.run(Op::Scan);
    }
    c.note = Some(format!(
        "crash image with {} copies above their leaf's range, {} half-done record word(s){}; {during}",
        repairs.stale,
        repairs.half_done,
        if repairs.first_half_done {
            " (one in the first leaf)"
        } else {
            ""
        }
    ));
    // Clean close, reopen (explored), more.
    c.explore(false);
    c.clean_reopen();
    put(&mut c, okey(3));
    c.run(Op::Delete(okey(8)));
    put(&mut c, lkey(500));
    c.run(Op::Scan);
    c.finish()
}

/// Rounds of: a leaf filled (a fresh anchor's), the first two keys
/// overwritten (their persist bits left pending), then the insert that
/// splits the leaf with an image captured in it (at the new leaf's word 0,
/// or while the old leaf's moved entries are being cleared); until an
/// image has both a copy above its leaf's range and a half-done word in
/// the first leaf. Returns the best image, with its round's anchor.
fn capture_split_image(c: &mut Ctx) -> Option<(Repairs, Key, crate::sim::Captured)> {
    let mut chosen: Option<(Repairs, Key, crate::sim::Captured)> = None;
    for r in 0..10u64 {
        let anchor = okey(1_000 + 100 * r);
        c.explore(false);
        put(c, anchor.clone());
        if !fill_leaf(c, &anchor, LEAF_ENTRIES) {
            break;
        }
        for k in [okey(0), okey(4)] {
            let v = small(c);
            c.run(Op::Put(k, v));
        }
        let f = [1, 2, 2][c.rng.gen_range(0..3)];
        c.sim.request_capture(f);
        put(c, child(&anchor, "b", 0));
        let Some(cap) = c.sim.take_capture() else {
            continue;
        };
        let rep = Repairs::of(&cap.image).unwrap_or_default();
        if chosen
            .as_ref()
            .is_none_or(|(b, _, _)| rep.score() > b.score())
        {
            chosen = Some((rep, anchor, cap));
        }
        if rep.score() == 3 {
            break;
        }
    }
    chosen
}

/// Right after the open of the captured image, with `gate` armed for the
/// rebuild ("persimmon-ordered"): waits until it is held at its first fence
/// (or finished), resolves the keys in flight, reads every key, then
/// writes beside it (explored): the split's keys (`anchor`'s) overwritten,
/// deleted, read, re-inserted, a new key in the old leaf, the held word's
/// key overwritten, tail keys updated; lets it go. Returns what happened.
fn while_rebuild_held(c: &mut Ctx, gate: &Arc<Gate>, anchor: &[u8]) -> String {
    let (held, waiter, keys) = hold_and_read(c, gate);
    // The anchor's keys: the lower ones stay in the old leaf, the upper
    // ones moved (their copies maybe still in the old leaf).
    let upper: Vec<Key> = keys
        .iter()
        .filter(|k| k.starts_with(anchor) && k.len() > anchor.len())
        .rev()
        .take(3)
        .cloned()
        .collect();
    let mut v = |len| value(&mut c.rng, len);
    let mut ops = Vec::new();
    if let [a, b, d, ..] = upper.as_slice() {
        ops.extend([
            Op::Put(a.clone(), v(20)), // the entry in range, not the copy
            Op::Get(a.clone()),
            Op::Delete(b.clone()), // its copy still names the old record
            Op::Get(b.clone()),
            Op::Delete(d.clone()),
            Op::Put(d.clone(), v(30)), // re-inserted
        ]);
    }
    ops.extend([
        Op::Put(child(anchor, "a", 0), v(9)), // the old leaf: room after its copies
        Op::Get(child(anchor, "a", 0)),
        Op::Put(okey(0), v(15)), // the key whose word the rebuild persists
        Op::Update(tail(3), UpdateMode::Append(b'w')),
        Op::Update(tail(4), UpdateMode::Delete),
        Op::Put(padded(4, 60), v(12)), // a new key in the first leaf
    ]);
    c.explore(true);
    finish_held(c, gate, (held, waiter), ops, &keys, false)
}
