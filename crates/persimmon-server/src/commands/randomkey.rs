//! RANDOMKEY: a key of the selected database chosen uniformly at random,
//! or nil when the database is empty.
//!
//! The engine cannot jump to a random key, so RANDOMKEY walks the
//! database's keys (under `blocking`) and stops early: it draws `r` below
//! the pool's key count `N` (O(1), every database's keys, so at least this
//! database's count `n`), and returns the `r`-th key of the walk, or, when
//! the walk ends first (`r >= n`), a key kept by reservoir sampling over
//! the whole walk. Each key comes out with probability `1/N + (N-n)/N · 1/n
//! = 1/n`. Cost: about `r` keys visited — half the database on average
//! when it is the only one, the whole of it (O(n)) when it holds few of the
//! pool's keys or none.
//!
//! Invariants: never returns a key that is not live for the client (the
//! pick is checked through the store, so a key an enclosing EXEC deleted
//! or one that expired meanwhile is drawn again, a few times at most); a
//! key only an enclosing EXEC created, not yet in the pool, is never drawn.

use std::hash::BuildHasher;

use crate::dbs::keys_of;
use crate::protocol::Args;
use crate::session::{blocking, Error, Session};
use crate::shared::Shared;

/// Draws before giving up on finding a live key (each one walks).
const DRAWS: usize = 4;

pub fn randomkey(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let ns = s.store.namespace();
    let shared = s.shared.clone();
    for _ in 0..DRAWS {
        let Some(key) = blocking(|| pick(&shared, ns))? else {
            break;
        };
        if s.store.exists(&key)? {
            s.out.bulk(&key);
            return Ok(());
        }
    }
    s.out.null();
    Ok(())
}

/// One draw over namespace `ns` (see the module header).
fn pick(shared: &Shared, ns: u32) -> Result<Option<Vec<u8>>, Error> {
    let total = shared.db.len();
    if total == 0 {
        return Ok(None);
    }
    let mut rng = SplitMix(std::collections::hash_map::RandomState::new().hash_one(total));
    let stop_at = rng.below(total);
    let mut seen = 0u64;
    let mut kept = None;
    keys_of(
        &shared.db,
        ns,
        || shared.is_stopping(),
        |key| {
            if seen == stop_at {
                kept = Some(key.to_vec());
                return Ok(false);
            }
            seen += 1;
            if rng.below(seen) == 0 {
                kept = Some(key.to_vec());
            }
            Ok(true)
        },
    )?;
    Ok(kept)
}

/// A small, fast generator (SplitMix64), seeded from the standard
/// library's per-process random keys: enough for picking keys.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform below `n` (`n > 0`; the modulo bias is below 2^-40 for any
    /// key count a pool can hold).
    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

#[cfg(test)]
mod tests {
    use super::SplitMix;

    #[test]
    fn draws_cover_the_range() {
        let mut rng = SplitMix(7);
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            seen[rng.below(5) as usize] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
    }
}
