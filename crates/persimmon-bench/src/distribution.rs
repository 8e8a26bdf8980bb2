//! Key distributions: which key index an operation touches.
//!
//! - *uniform*: every loaded key equally likely.
//! - *zipfian*: YCSB's `ZipfianGenerator` (Gray et al., "Quickly generating
//!   billion-record synthetic databases", SIGMOD 1994): rank `r` (0 hottest)
//!   has probability proportional to `1 / (r + 1)^θ`. Index = rank; the key
//!   scramble (`keys::scramble`) spreads the hot indices over the key space,
//!   as YCSB's `ScrambledZipfianGenerator` does.
//! - *latest*: YCSB's `SkewedLatestGenerator`: zipfian over recency, rank 0
//!   is the newest acknowledged insert.
//!
//! Inserts (YCSB D) take fresh indices from an [`InsertCounter`]; readers
//! only ever choose among *acknowledged* indices (YCSB's
//! `AcknowledgedCounterGenerator`), so a read never targets a key whose
//! insert has not returned yet.
//!
//! Invariants:
//! - `Zipfian::sample` returns a rank in `0..items`, for any `u` in `[0, 1)`.
//! - `InsertCounter::acknowledged` only grows, and every index below it has
//!   been acknowledged.

use std::cmp::Reverse;
use std::collections::BinaryHeap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use rand::Rng;

/// Which keys operations touch.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Distribution {
    Uniform,
    Zipfian { theta: f64 },
    Latest { theta: f64 },
}

impl Distribution {
    pub fn name(&self) -> String {
        match self {
            Distribution::Uniform => "uniform".into(),
            Distribution::Zipfian { theta } => format!("zipfian({theta})"),
            Distribution::Latest { theta } => format!("latest({theta})"),
        }
    }
}

/// Checks a zipfian constant θ: the generator needs `0 <= θ < 1`.
pub fn check_theta(theta: f64) -> Result<f64, String> {
    if (0.0..1.0).contains(&theta) {
        Ok(theta)
    } else {
        Err(format!(
            "zipfian theta {theta} is out of range: it must be at least 0 and below 1 (YCSB uses 0.99)"
        ))
    }
}

/// `Σ_{i=from}^{to-1} 1/(i+1)^θ`.
fn zeta_range(from: u64, to: u64, theta: f64) -> f64 {
    (from..to).map(|i| 1.0 / ((i + 1) as f64).powf(theta)).sum()
}

/// YCSB's zipfian generator over `items` ranks, growable.
#[derive(Clone, Debug)]
pub struct Zipfian {
    theta: f64,
    alpha: f64,
    zeta2: f64,
    items: u64,
    zetan: f64,
    eta: f64,
}

impl Zipfian {
    /// A generator over `items` ranks (computing ζ(items) is O(items)).
    pub fn new(items: u64, theta: f64) -> Zipfian {
        let theta = check_theta(theta).expect("theta checked when parsed");
        let mut z = Zipfian {
            theta,
            alpha: 1.0 / (1.0 - theta),
            zeta2: zeta_range(0, 2, theta),
            items: 0,
            zetan: 0.0,
            eta: 0.0,
        };
        z.grow_to(items);
        z
    }

    pub fn items(&self) -> u64 {
        self.items
    }

    /// Extends the generator to `items` ranks, incrementally (O(new ranks)).
    /// Fewer ranks than it has recomputes from scratch.
    pub fn grow_to(&mut self, items: u64) {
        if items == self.items {
            return;
        }
        if items < self.items {
            self.zetan = zeta_range(0, items, self.theta);
        } else {
            self.zetan += zeta_range(self.items, items, self.theta);
        }
        self.items = items;
        self.eta =
            (1.0 - (2.0 / items as f64).powf(1.0 - self.theta)) / (1.0 - self.zeta2 / self.zetan);
    }

    /// The rank for the uniform draw `u` in `[0, 1)`.
    pub fn sample(&self, u: f64) -> u64 {
        if self.items <= 1 {
            return 0;
        }
        let uz = u * self.zetan;
        if uz < 1.0 {
            return 0;
        }
        if uz < 1.0 + 0.5f64.powf(self.theta) {
            return 1;
        }
        let rank = (self.items as f64 * (self.eta * u - self.eta + 1.0).powf(self.alpha)) as u64;
        rank.min(self.items - 1)
    }
}

/// Chooses key indices for one thread.
#[derive(Clone, Debug)]
pub struct KeyChooser {
    distribution: Distribution,
    zipfian: Option<Zipfian>,
}

impl KeyChooser {
    /// A chooser over `items` keys. `zipfian`, when given, is a generator
    /// already computed for the same θ (ζ is O(items) to compute: compute
    /// it once and clone it into every thread).
    pub fn new(distribution: Distribution, items: u64, zipfian: Option<&Zipfian>) -> KeyChooser {
        let zipfian = match distribution {
            Distribution::Uniform => None,
            Distribution::Zipfian { theta } | Distribution::Latest { theta } => Some(
                zipfian
                    .cloned()
                    .unwrap_or_else(|| Zipfian::new(items.max(1), theta)),
            ),
        };
        KeyChooser {
            distribution,
            zipfian,
        }
    }

    /// An index in `0..items` (`items` is the number of keys that exist
    /// now; at least 1).
    pub fn next(&mut self, rng: &mut impl Rng, items: u64) -> u64 {
        debug_assert!(items > 0);
        match (self.distribution, self.zipfian.as_mut()) {
            (Distribution::Zipfian { .. }, Some(z)) => {
                z.grow_to(items);
                z.sample(rng.gen())
            }
            (Distribution::Latest { .. }, Some(z)) => {
                z.grow_to(items);
                items - 1 - z.sample(rng.gen())
            }
            _ => rng.gen_range(0..items),
        }
    }
}

/// Indices for inserted keys, and how many of them are acknowledged.
#[derive(Debug)]
pub struct InsertCounter {
    next: AtomicU64,
    acknowledged: AtomicU64,
    /// Acknowledged indices above the contiguous prefix.
    pending: Mutex<BinaryHeap<Reverse<u64>>>,
}

impl InsertCounter {
    /// A counter after `loaded` keys (indices `0..loaded` exist).
    pub fn new(loaded: u64) -> InsertCounter {
        InsertCounter {
            next: AtomicU64::new(loaded),
            acknowledged: AtomicU64::new(loaded),
            pending: Mutex::new(BinaryHeap::new()),
        }
    }

    /// A fresh index for an insert.
    pub fn reserve(&self) -> u64 {
        self.next.fetch_add(1, Ordering::Relaxed)
    }

    /// Marks `index` inserted (its write returned).
    pub fn acknowledge(&self, index: u64) {
        let mut pending = self.pending.lock().unwrap_or_else(|e| e.into_inner());
        let mut limit = self.acknowledged.load(Ordering::Relaxed);
        if index != limit {
            pending.push(Reverse(index));
            return;
        }
        limit += 1;
        while pending.peek() == Some(&Reverse(limit)) {
            pending.pop();
            limit += 1;
        }
        self.acknowledged.store(limit, Ordering::Release);
    }

    /// Every index below this one exists.
    pub fn acknowledged(&self) -> u64 {
        self.acknowledged.load(Ordering::Acquire)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::rngs::SmallRng;
    use rand::SeedableRng;

    fn counts(dist: Distribution, items: u64, draws: usize) -> Vec<u64> {
        let mut rng = SmallRng::seed_from_u64(7);
        let mut chooser = KeyChooser::new(dist, items, None);
        let mut counts = vec![0u64; items as usize];
        for _ in 0..draws {
            let i = chooser.next(&mut rng, items);
            assert!(i < items);
            counts[i as usize] += 1;
        }
        counts
    }

    #[test]
    fn zipfian_is_skewed_as_theory_says() {
        let (items, draws, theta) = (10_000u64, 400_000usize, 0.99);
        let c = counts(Distribution::Zipfian { theta }, items, draws);
        let zetan = zeta_range(0, items, theta);
        // P(rank 0) = 1/ζ(n): about 10 % here.
        let p0 = c[0] as f64 / draws as f64;
        assert!(
            (p0 * zetan - 1.0).abs() < 0.05,
            "p0 {p0}, expected {}",
            1.0 / zetan
        );
        // P(0)/P(1) = 2^θ.
        let ratio = c[0] as f64 / c[1] as f64;
        assert!((ratio - 2f64.powf(theta)).abs() < 0.2, "ratio {ratio}");
        // The hottest 1 % of keys take over half the draws; the coldest
        // half take under 10 %.
        let hot: u64 = c[..100].iter().sum();
        let cold: u64 = c[5_000..].iter().sum();
        assert!(hot as f64 > 0.5 * draws as f64, "hot {hot}");
        assert!((cold as f64) < 0.1 * draws as f64, "cold {cold}");
        assert!(c[0] > c[10] && c[10] > c[1000]);
    }

    #[test]
    fn zipfian_with_theta_zero_is_uniform() {
        let c = counts(Distribution::Zipfian { theta: 0.0 }, 100, 200_000);
        let (min, max) = (c.iter().min().unwrap(), c.iter().max().unwrap());
        assert!(*min > 1_600 && *max < 2_400, "min {min} max {max}");
    }

    #[test]
    fn zipfian_grows_incrementally_to_the_same_constants() {
        let mut grown = Zipfian::new(1_000, 0.99);
        grown.grow_to(50_000);
        let direct = Zipfian::new(50_000, 0.99);
        assert!((grown.zetan - direct.zetan).abs() < 1e-9);
        assert!((grown.eta - direct.eta).abs() < 1e-9);
        for u in [0.0, 0.3, 0.999_999] {
            assert_eq!(grown.sample(u), direct.sample(u));
        }
        assert_eq!(Zipfian::new(1, 0.99).sample(0.9), 0);
        assert!(Zipfian::new(2, 0.99).sample(0.999) <= 1);
    }

    #[test]
    fn uniform_covers_every_key_evenly() {
        let c = counts(Distribution::Uniform, 50, 100_000);
        assert!(c.iter().all(|&n| (1_600..2_400).contains(&n)), "{c:?}");
    }

    #[test]
    fn latest_prefers_the_newest_keys() {
        let (items, draws) = (100_000u64, 200_000usize);
        let c = counts(Distribution::Latest { theta: 0.99 }, items, draws);
        let newest: u64 = c[(items - 1_000) as usize..].iter().sum();
        assert!(newest as f64 > 0.5 * draws as f64, "newest 1 %: {newest}");
        assert!(c[items as usize - 1] > c[items as usize - 100]);
        let oldest: u64 = c[..50_000].iter().sum();
        assert!((oldest as f64) < 0.1 * draws as f64);
    }

    #[test]
    fn latest_follows_acknowledged_inserts_only() {
        let inserts = InsertCounter::new(10);
        let (a, b, c) = (inserts.reserve(), inserts.reserve(), inserts.reserve());
        assert_eq!((a, b, c), (10, 11, 12));
        inserts.acknowledge(c);
        assert_eq!(
            inserts.acknowledged(),
            10,
            "12 is done but 10 and 11 are not"
        );
        inserts.acknowledge(a);
        assert_eq!(inserts.acknowledged(), 11);
        inserts.acknowledge(b);
        assert_eq!(inserts.acknowledged(), 13);

        let mut rng = SmallRng::seed_from_u64(1);
        let mut chooser = KeyChooser::new(Distribution::Latest { theta: 0.99 }, 10, None);
        let mut newest = 0;
        for _ in 0..10_000 {
            let i = chooser.next(&mut rng, inserts.acknowledged());
            assert!(i < 13);
            newest += u32::from(i == 12);
        }
        assert!(
            newest > 2_000,
            "the newest key is the most likely: {newest}"
        );
    }

    #[test]
    fn theta_outside_zero_to_one_is_refused() {
        assert!(check_theta(0.99).is_ok());
        assert!(check_theta(0.0).is_ok());
        assert!(check_theta(1.0).unwrap_err().contains("below 1"));
        assert!(check_theta(-0.1).is_err());
    }
}
