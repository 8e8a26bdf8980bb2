//! The log cleaner (`Db::clean_now`), with the point index in the pool and
//! in DRAM.
//!
//! | workload     | persist path it covers                                   |
//! |--------------|----------------------------------------------------------|
//! | cleaner      | `Db::clean_now`: live records relocated out of dirty     |
//! |              | segments (records dead by overwrites and by deletes);    |
//! |              | new keys after it                                        |
//! | dram-cleaner | `cleaner` in DRAM (format 3): each relocation switches   |
//! |              | the node's record word (two-phase); then new node        |
//! |              | classes take node segments on the log segments the       |
//! |              | cleaner freed (zeroed before use)                        |
//!
//! Both run the one function here; the placement comes from the options
//! (`config`: `dram-*` turns on the ordered index and the DRAM point index).
//! Steps: three rounds of 600 B to 2 KB puts on 60 keys (each key skipped
//! with chance 1/3 in the later rounds, so sealed segments are partly dead,
//! partly live), deletes of every eleventh key, all unexplored; then, in
//! the explored window, one `clean_now`, reads, overwrites, and new keys of
//! four lengths (four node classes with the ordered index).
//!
//! What the oracle checks: `clean_now` changes no key, so at every crash
//! point of a relocation (record copied to the cleaner's lane, then the slot
//! or the node's record word switched two-phase) every key holds its
//! acknowledged value; after it, the victims are freed or reported
//! reclaimable by `check()` (the space rule of `segments.rs`); the new keys'
//! node segments may lie on log segments the cleaner freed (zeroed before
//! use), and their images pass the same checks. The workload fails if
//! `clean_now` finds nothing to clean.

use rand::Rng;

use super::ctx::{Ctx, Finished};
use super::epoch::drain_epoch;
use super::kv::{key, value};
use super::live_segments::segment_kinds;
use super::ops::Op;
use crate::poolfile::SegKind;
use crate::sim::SimConfig;

/// Keys of the workload: `cln-000000` .. `cln-000059`.
const KEYS: u64 = 60;

/// Makes sealed segments partly dead, runs the cleaner inside the explored
/// window, then reads and writes; notes (ordered index) how many new node
/// segments took log segments the cleaner freed.
pub fn cleaner(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 24, false);
    make_dirty_segments(&mut c);
    let before = segment_kinds(&c);
    c.explore(true);
    c.run(Op::CleanNow);
    for _ in 0..4 {
        let i = c.rng.gen_range(0..KEYS);
        c.run(Op::Get(key("cln", i)));
    }
    for i in 0..4 {
        let v = value(&mut c.rng, 300);
        c.run(Op::Put(key("cln", i), v));
    }
    put_new_keys(&mut c);
    if cfg.options.ordered_index {
        let reused = reused_log_segments(&before, &segment_kinds(&c));
        c.note = Some(format!(
            "{reused} new node segment(s) on log segments the cleaner freed"
        ));
    }
    c.finish()
}

/// Fills a few log segments and overwrites most keys, so the sealed
/// segments are partly dead; some records die by deletes, not overwrites
/// (the cleaner skips them).
fn make_dirty_segments(c: &mut Ctx) {
    for round in 0..3 {
        for i in 0..KEYS {
            if round > 0 && c.rng.gen_range(0..3) == 0 {
                continue; // stays live in its old segment
            }
            let len = c.rng.gen_range(600..2_000);
            let v = value(&mut c.rng, len);
            c.run(Op::Put(key("cln", i), v));
        }
    }
    for i in (3..KEYS).step_by(11) {
        c.run(Op::Delete(key("cln", i)));
    }
}

/// New keys, longer ones too: with the ordered index, their node classes
/// take new node segments, which may be the log segments the cleaner freed
/// (old records in them: zeroed before use).
fn put_new_keys(c: &mut Ctx) {
    drain_epoch();
    for (i, len) in [(0u64, 0usize), (1, 40), (2, 100), (3, 1000)] {
        let mut k = key("cln-new", i);
        k.resize(k.len().max(len), b'+');
        let v = value(&mut c.rng, 200);
        c.run(Op::Put(k, v));
    }
}

/// How many segments were log segments `before` and are node segments of
/// the ordered index `after`.
fn reused_log_segments(before: &[SegKind], after: &[SegKind]) -> usize {
    after
        .iter()
        .zip(before)
        .filter(|(k, b)| matches!(k, SegKind::Ordered { .. }) && matches!(b, SegKind::Log { .. }))
        .count()
}
