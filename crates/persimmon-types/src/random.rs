//! Random picks for the commands that choose elements or keys at random
//! (SPOP, SRANDMEMBER, HRANDFIELD, RANDOMKEY): SplitMix64 over a per-thread
//! state seeded from the standard library's per-process random keys.
//!
//! Invariants: `below(n)` is in `0..n` for every `n > 0`; the modulo bias is
//! below 2^-40 for any count a pool can hold; `distinct_below(n, k)` is a
//! uniform `k`-subset of `0..n` in random order. Not for secrets: it picks
//! members, as Redis's own generator does.

use std::cell::Cell;
use std::hash::BuildHasher;

thread_local! {
    static STATE: Cell<u64> = Cell::new(
        std::collections::hash_map::RandomState::new().hash_one(std::thread::current().id()),
    );
}

/// Makes this thread's draws a function of `seed` (a harness that must
/// replay a run: `embedded.rs`).
pub fn seed_thread(seed: u64) {
    STATE.with(|s| s.set(seed));
}

/// A random number below `n` (`n > 0`).
pub fn below(n: u64) -> u64 {
    debug_assert!(n > 0);
    let x = STATE.with(|s| {
        let x = s.get().wrapping_add(0x9E37_79B9_7F4A_7C15);
        s.set(x);
        x
    });
    let mut z = x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^= z >> 31;
    z % n
}

/// [`below`] for an index.
pub fn index_below(n: usize) -> usize {
    below(n as u64) as usize
}

/// `k` distinct numbers below `n` (`k <= n`), every `k`-subset equally
/// likely, in random order: Floyd's sampling, then a shuffle. O(k).
pub fn distinct_below(n: u64, k: u64) -> Vec<u64> {
    debug_assert!(k <= n);
    let mut seen = std::collections::HashSet::with_capacity(k as usize);
    let mut picks = Vec::with_capacity(k as usize);
    for j in n - k..n {
        let t = below(j + 1);
        let pick = if seen.contains(&t) { j } else { t };
        seen.insert(pick);
        picks.push(pick);
    }
    for i in (1..picks.len()).rev() {
        picks.swap(i, index_below(i + 1));
    }
    picks
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_stay_in_range_and_cover_it() {
        let mut seen = [0u32; 5];
        for _ in 0..5000 {
            seen[index_below(5)] += 1;
        }
        assert!(seen.iter().all(|&n| (800..1200).contains(&n)), "{seen:?}");
        assert_eq!(below(1), 0);
    }

    #[test]
    fn distinct_draws_are_distinct_and_cover_the_range() {
        let mut seen = [0u32; 6];
        for _ in 0..3000 {
            let mut d = distinct_below(6, 3);
            for &x in &d {
                seen[x as usize] += 1;
            }
            d.sort_unstable();
            d.dedup();
            assert_eq!(d.len(), 3);
        }
        assert!(seen.iter().all(|&n| (1300..1700).contains(&n)), "{seen:?}");
        assert_eq!(distinct_below(4, 4).len(), 4);
        assert!(distinct_below(9, 0).is_empty());
    }
}
