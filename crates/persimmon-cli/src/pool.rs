//! Opening the pool as a command needs it: the engine options that the
//! global pool flags stand for.
//!
//! Invariants:
//! - Only the commands that write (put, load, demo) pass `create`; the
//!   others fail on a missing pool instead of leaving an empty one behind.
//! - `--ordered-index`, `--point-index`, `--data-dir` and `--tier-threshold`
//!   only matter when the pool is created: an existing pool keeps the
//!   settings it was created with (a `--data-dir` other than its own is
//!   refused by the engine).
//! - A `--pool-size` above an explicit `--pool-max` is an error, never a
//!   silent clamp; without `--pool-max` the limit grows to the size asked.

use persimmon::{Db, Options};

use crate::cli::PoolArgs;
use crate::failure::Failure;

/// Engine options for `pool`; `create` says whether a missing pool is made.
pub fn options(pool: &PoolArgs, create: bool) -> Result<Options, Failure> {
    let mut o = Options {
        create,
        // Creation only: an existing pool keeps its own setting.
        ordered_index: pool.ordered_index,
        point_index: pool.point_index.unwrap_or_default(),
        data_dir: pool.data_dir.clone(),
        ..Options::default()
    };
    if let Some(t) = pool.tier_threshold {
        o.tier_threshold = t;
    }
    if let Some(c) = pool.cache_bytes()? {
        o.cache_bytes = c;
    }
    if let Some(max) = pool.pool_max {
        o.pool_bytes_max = max;
    }
    if let Some(size) = pool.pool_size {
        if size > o.pool_bytes_max {
            if pool.pool_max.is_some() {
                return Err(Failure::error(format!(
                    "--pool-size {size} is larger than --pool-max {}",
                    o.pool_bytes_max
                )));
            }
            o.pool_bytes_max = size;
        }
        o.pool_bytes_initial = size;
    }
    Ok(o)
}

/// Opens the pool; `create` says whether a missing pool is made.
pub fn open(pool: &PoolArgs, create: bool) -> Result<Db, Failure> {
    Ok(Db::open(&pool.pool, options(pool, create)?)?)
}
