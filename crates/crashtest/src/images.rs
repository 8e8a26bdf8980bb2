//! Post-crash images of one crash point.
//!
//! A crash point is a moment just before a fence completes (the fence's own
//! flushed lines may or may not have been written back yet). Its images are
//! the model's durable bytes plus, for every line with pending stores, one
//! of the contents an in-order prefix of those stores leaves (see
//! `model.rs`).
//!
//! Which combinations are built:
//! - always "nothing extra persisted" and "everything persisted";
//! - lines holding a store of an operation in flight are *focus* lines:
//!   when the product of their choice counts is at most `cap`, every
//!   combination of them is built (the other lines at nothing, everything,
//!   or a random prefix each); otherwise `samples` random combinations;
//! - a line's choices are distinct contents, and combinations are
//!   deduplicated, so two images of one crash point always differ. (The
//!   simulator additionally skips images it already checked against the same
//!   expectation, by a hash of the whole image.)
//!
//! Invariant: every image built is a state the model allows media to be in
//! after a crash at this point; nothing else is ever built (but by the
//! self-test `MUTANT_FORGET_BATCHES`, which breaks it on purpose).

use std::collections::HashSet;
use std::sync::atomic::{AtomicBool, Ordering};

use rand::rngs::StdRng;
use rand::Rng;

use crate::model::{LineChoices, LINE};
use crate::poolfile::BATCH_TABLE;

/// Self-test of the harness (`--mutant-batch-table`): every image built
/// loses its batch commit table, as if the recovery at open ignored it. A
/// batch a crash interrupted between its first published word and its
/// commit point is then not undone: some of its keys keep their new state,
/// others their old one, each of them legal on its own; only the oracle's
/// joint rule (`Expect::check_groups`) can see the batch torn.
pub static MUTANT_FORGET_BATCHES: AtomicBool = AtomicBool::new(false);

pub struct Plan {
    /// Per line of `choices`, the variant chosen, one vector per image.
    pub picks: Vec<Vec<u16>>,
    /// Whether every focus combination was enumerated.
    pub exhaustive: bool,
}

/// Chooses the combinations to build for one crash point.
pub fn plan(choices: &[LineChoices], cap: u64, samples: usize, rng: &mut StdRng) -> Plan {
    let n = choices.len();
    let none = vec![0u16; n];
    let all: Vec<u16> = choices.iter().map(|c| c.all as u16).collect();
    let mut out: Vec<Vec<u16>> = vec![none.clone()];
    let mut seen: HashSet<Vec<u16>> = HashSet::new();
    seen.insert(none);
    let mut push = |v: Vec<u16>, out: &mut Vec<Vec<u16>>| {
        if seen.insert(v.clone()) {
            out.push(v);
        }
    };
    push(all.clone(), &mut out);
    let focus: Vec<usize> = (0..n).filter(|&i| choices[i].focus).collect();
    let mut product: u64 = 1;
    for &i in &focus {
        product = product.saturating_mul(choices[i].variants.len() as u64);
    }
    let random_line =
        |i: usize, rng: &mut StdRng| rng.gen_range(0..choices[i].variants.len()) as u16;
    let exhaustive = product <= cap;
    if exhaustive && !focus.is_empty() {
        // Odometer over the focus lines; background lines: none, all, or random.
        let mut digits = vec![0usize; focus.len()];
        for combo in 0..product {
            let mut v: Vec<u16> = match combo % 3 {
                0 => vec![0; n],
                1 => all.clone(),
                _ => (0..n).map(|i| random_line(i, rng)).collect(),
            };
            for (d, &i) in digits.iter().zip(&focus) {
                v[i] = *d as u16;
            }
            push(v, &mut out);
            for (d, &i) in digits.iter_mut().zip(&focus) {
                *d += 1;
                if *d < choices[i].variants.len() {
                    break;
                }
                *d = 0;
            }
        }
        // A few images that vary only background lines.
        for _ in 0..samples.min(8) {
            let mut v: Vec<u16> = (0..n).map(|i| random_line(i, rng)).collect();
            for &i in &focus {
                v[i] = all[i];
            }
            push(v, &mut out);
        }
    } else {
        // Focus all / background none and the reverse, then random picks
        // (half of them cut every focus line at one common "age").
        let mut a = vec![0u16; n];
        let mut b = all.clone();
        for &i in &focus {
            a[i] = all[i];
            b[i] = 0;
        }
        push(a, &mut out);
        push(b, &mut out);
        for s in 0..samples {
            let v: Vec<u16> = if s % 2 == 0 {
                (0..n).map(|i| random_line(i, rng)).collect()
            } else {
                let cut: f64 = rng.gen();
                (0..n)
                    .map(|i| {
                        if choices[i].focus {
                            ((choices[i].variants.len() - 1) as f64 * cut).round() as u16
                        } else {
                            random_line(i, rng)
                        }
                    })
                    .collect()
            };
            push(v, &mut out);
        }
    }
    Plan {
        picks: out,
        exhaustive,
    }
}

/// Identity of an image: the durable generation it was built on, its length
/// and the lines it takes from pending stores (lines left at "nothing" hold
/// the durable bytes and are skipped, so equal images get equal ids).
pub fn image_id(generation: u64, len: u64, choices: &[LineChoices], pick: &[u16]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&generation.to_le_bytes());
    h.update(&len.to_le_bytes());
    for (c, &p) in choices.iter().zip(pick) {
        if p != 0 {
            h.update(&c.line.to_le_bytes());
            h.update(&c.variants[p as usize]);
        }
    }
    h.digest128()
}

/// Builds the image for one combination on top of `durable`.
pub fn build(durable: &[u8], choices: &[LineChoices], pick: &[u16]) -> Vec<u8> {
    let mut img = durable.to_vec();
    for (c, &p) in choices.iter().zip(pick) {
        let at = c.line as usize;
        if at + LINE as usize <= img.len() {
            img[at..at + LINE as usize].copy_from_slice(&c.variants[p as usize]);
        }
    }
    if MUTANT_FORGET_BATCHES.load(Ordering::Relaxed) && img.len() >= BATCH_TABLE.end {
        img[BATCH_TABLE].fill(0);
    }
    img
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn line(line: u64, n: usize, focus: bool) -> LineChoices {
        LineChoices {
            line,
            variants: (0..n).map(|i| [i as u8; 64]).collect(),
            all: n - 1,
            focus,
        }
    }

    #[test]
    fn small_products_are_enumerated_and_images_distinct() {
        let c = vec![line(0, 3, true), line(64, 2, true), line(128, 2, false)];
        let mut rng = StdRng::seed_from_u64(1);
        let p = plan(&c, 4096, 16, &mut rng);
        assert!(p.exhaustive);
        let focus_combos: HashSet<(u16, u16)> = p.picks.iter().map(|v| (v[0], v[1])).collect();
        assert_eq!(focus_combos.len(), 6);
        let all: HashSet<&Vec<u16>> = p.picks.iter().collect();
        assert_eq!(all.len(), p.picks.len());
        assert_eq!(p.picks[0], vec![0, 0, 0]);
        assert_eq!(p.picks[1], vec![2, 1, 1]);
    }

    #[test]
    fn large_products_are_sampled() {
        let c: Vec<LineChoices> = (0..40).map(|i| line(i * 64, 9, true)).collect();
        let mut rng = StdRng::seed_from_u64(2);
        let p = plan(&c, 4096, 32, &mut rng);
        assert!(!p.exhaustive);
        assert!(p.picks.len() <= 2 + 2 + 32);
        let img = build(&vec![0xEE; 64 * 41], &c, &p.picks[1]);
        assert_eq!(img[0], 8);
        assert_eq!(img[64 * 40], 0xEE);
    }
}
