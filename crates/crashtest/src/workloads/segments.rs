//! Workloads that make the engine take, grow and give back space: the
//! segment allocation paths.
//!
//! | workload     | persist path it covers                                       |
//! |--------------|--------------------------------------------------------------|
//! | split        | index segment split (fast-forwarded to just before it)       |
//! | large        | records > half a segment: runs of 1..4 segments, freeing them |
//! | log-segments | new log segment allocation, non-temporal records, sealing    |
//! | pool-growth  | file extension when no free segment is left                  |
//!
//! - *split*: a dry run on an unobserved pool with the same hash seed finds
//!   the insert that splits the first index segment; the observed run
//!   writes the same keys and values, explores the inserts from two before
//!   that one to two after, then reads keys of both halves and deletes one.
//! - *large*: records of one, two and four segments; the two-segment run
//!   overwritten by another (the old run freed), the four-segment one
//!   deleted, the one-segment one shrunk to a small record.
//! - *log-segments*: 48 puts of 1 to 7 KB (and some deletes) on 20 keys,
//!   filling and sealing log segments and taking new ones.
//! - *pool-growth*: a pool created with two segments (the first index
//!   segment and one log segment), so every later log segment extends the
//!   file; the open is explored.
//!
//! What the oracle checks, besides what it checks for every point
//! operation (`point.rs`): the space rule at every crash point, every index
//! segment owns a directory entry (the split's new segment and directory
//! entries) and every dead data segment (no live record, not a lane's
//! newest: a freed run, an overwritten log segment) is reported reclaimable
//! by `check()` or already freed. *split* fails if the observed run does not
//! split where the dry run did.

use persimmon::Db;
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use super::ctx::{Ctx, Finished};
use super::kv::{key, value};
use super::ops::Op;
use super::pool::pool_flags;
use crate::poolfile;
use crate::sim::{mix, SimConfig};

/// Fast-forwards to just before the first index split and explores a
/// window around it, then reads keys of both halves.
pub fn split(cfg: &SimConfig) -> Finished {
    let split_at = dry_run_split(cfg);
    let mut c = Ctx::start(cfg, 16, false);
    let Some(split_at) = split_at else {
        c.sim
            .fail("split: the dry run never split the index".into());
        return c.finish();
    };
    let mut rng = StdRng::seed_from_u64(mix(cfg.seed, 2));
    for i in 0..=split_at + 2 {
        let len = rng.gen_range(4..24);
        let v = value(&mut rng, len);
        c.explore(i + 2 >= split_at);
        c.run(Op::Put(key("spl", i), v));
    }
    let splits = c.db().stats().index_splits;
    if splits == 0 {
        c.sim.fail(format!(
            "split: no split after {} inserts (the dry run split at {split_at})",
            split_at + 3
        ));
    }
    c.note = Some(format!("split at insert {split_at}"));
    for _ in 0..6 {
        let i = c.rng.gen_range(0..split_at);
        c.run(Op::Get(key("spl", i)));
    }
    let i = c.rng.gen_range(0..split_at);
    c.run(Op::Delete(key("spl", i)));
    c.finish()
}

/// The insert (counted from 0) after which `split`'s keys first split the
/// index, found on an unobserved pool with the run's hash seed.
fn dry_run_split(cfg: &SimConfig) -> Option<u64> {
    let dry_dir = cfg.dir.join("dry");
    let _ = std::fs::create_dir_all(&dry_dir);
    let dry_pool = dry_dir.join("dry.pool");
    let _ = std::fs::remove_file(&dry_pool);
    poolfile::create(
        &dry_pool,
        cfg.options.segment_bytes,
        16,
        mix(cfg.seed, 0x5EED),
        pool_flags(&cfg.options),
        None,
    )
    .expect("create the dry-run pool");
    let mut split_at = None;
    {
        let db = Db::open(&dry_pool, cfg.options.clone()).expect("open the dry-run pool");
        db.wait_for_rebuild();
        let mut rng = StdRng::seed_from_u64(mix(cfg.seed, 2));
        for i in 0..20_000u64 {
            let len = rng.gen_range(4..24);
            db.put(&key("spl", i), &value(&mut rng, len))
                .expect("dry-run put");
            if db.stats().index_splits > 0 {
                split_at = Some(i);
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&dry_pool);
    split_at
}

/// Records of one, two and four segments; then an overwrite, a delete and
/// a shrink of those runs.
pub fn large(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    c.run(Op::Put(key("lg", 100), b"small".to_vec()));
    c.explore(true);
    let seg = cfg.options.segment_bytes as usize;
    let sizes = [seg / 2 + 1000, seg + 20_000, 3 * seg + 5];
    for (i, &len) in sizes.iter().enumerate() {
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("lg", i as u64), v));
    }
    // Overwrite the two-segment run (its old run is freed), delete the
    // four-segment one, shrink the first to a small record.
    let v = value(&mut c.rng, seg + 30_000);
    c.run(Op::Put(key("lg", 1), v));
    c.run(Op::Delete(key("lg", 2)));
    c.run(Op::Put(key("lg", 0), b"now small".to_vec()));
    c.run(Op::Get(key("lg", 1)));
    c.finish()
}

/// Puts of 1 to 7 KB (and deletes) that fill and seal log segments.
pub fn log_segments(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 24, false);
    c.explore(true);
    for i in 0..48u64 {
        let k = key("seg", i % 20);
        match c.rng.gen_range(0..10) {
            0 => c.run(Op::Delete(k)),
            _ => {
                let len = c.rng.gen_range(1_000..7_000);
                let v = value(&mut c.rng, len);
                c.run(Op::Put(k, v));
            }
        }
    }
    c.finish()
}

/// Puts into a two-segment pool: every new log segment extends the file.
pub fn pool_growth(cfg: &SimConfig) -> Finished {
    // Two segments: the first index segment and one log segment; the next
    // log segment needs the file extended.
    let mut c = Ctx::start(cfg, 2, true);
    c.explore(true);
    for i in 0..30u64 {
        let len = c.rng.gen_range(2_000..5_000);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("grow", i), v));
    }
    let len = c.db().stats().pool_bytes;
    c.note = Some(format!(
        "pool grew to {} segments",
        (len - 4096) / cfg.options.segment_bytes
    ));
    c.finish()
}
