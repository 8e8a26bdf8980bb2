//! Keys, values and key deadlines.
//!
//! Key `i` is the big-endian bytes of `scramble(i)`, YCSB's hashed keys: the
//! distributions pick key *indices* (0 = first loaded, hottest under
//! zipfian), and the scramble spreads neighbouring indices over the whole
//! key space, so no engine sees them clustered. Keys longer than 8 bytes are
//! padded with a fixed byte after those 8.
//!
//! Invariants:
//! - `scramble` is a bijection on `u64` (each step is an invertible
//!   xor-shift or a multiplication by an odd constant), so distinct indices
//!   are distinct keys.
//! - The value of key `i` at load depends only on `i` and the value size, so
//!   every engine is loaded with the same bytes.
//! - Whether key `i` carries a deadline depends only on `i` and
//!   `--deadline-fraction` ([`Deadlines`]): the load and every later write
//!   of the key agree, so the fraction of keys with one stays put.

/// The splitmix64 finalizer: a bijection that scatters consecutive inputs.
pub fn scramble(index: u64) -> u64 {
    let mut z = index ^ 0x9E37_79B9_7F4A_7C15;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

/// Byte that pads keys longer than 8 bytes.
const KEY_PAD: u8 = b'k';

/// A reusable key buffer of one size.
pub struct KeyBuf {
    bytes: Vec<u8>,
}

impl KeyBuf {
    /// `key_bytes` must be at least 8.
    pub fn new(key_bytes: usize) -> KeyBuf {
        assert!(key_bytes >= 8, "keys are at least 8 bytes");
        KeyBuf {
            bytes: vec![KEY_PAD; key_bytes],
        }
    }

    /// The key of index `index`.
    pub fn key(&mut self, index: u64) -> &[u8] {
        self.bytes[..8].copy_from_slice(&scramble(index).to_be_bytes());
        &self.bytes
    }
}

/// Which keys carry a deadline (`--deadline-fraction`), and the deadline.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Deadlines {
    /// Key `i` has one iff `scramble(i ^ DEADLINE_SALT)` is below this
    /// (`fraction × 2^64`).
    below: u128,
    /// The deadline, ms of Unix time.
    at_ms: u64,
}

/// Decorrelates the choice of keys with deadlines from the key bytes.
const DEADLINE_SALT: u64 = 0x5EED_DEAD_11AE_0001;

impl Deadlines {
    /// No key has a deadline.
    pub const NONE: Deadlines = Deadlines { below: 0, at_ms: 0 };

    /// `fraction` (0 to 1) of the keys expire at `at_ms`.
    pub fn new(fraction: f64, at_ms: u64) -> Deadlines {
        let below = (fraction.clamp(0.0, 1.0) * 2f64.powi(64)) as u128;
        Deadlines { below, at_ms }
    }

    /// The deadline of key `index`, if it has one.
    pub fn of(&self, index: u64) -> Option<u64> {
        (u128::from(scramble(index ^ DEADLINE_SALT)) < self.below).then_some(self.at_ms)
    }
}

/// Fills `value` with pseudo-random bytes determined by `seed`.
pub fn fill_value(seed: u64, value: &mut [u8]) {
    let mut state = scramble(seed);
    for chunk in value.chunks_mut(8) {
        state = scramble(state);
        chunk.copy_from_slice(&state.to_le_bytes()[..chunk.len()]);
    }
}

/// Makes `value` different from its previous contents by stamping
/// `stamp` into its first (up to) 8 bytes: every write stores new bytes
/// without regenerating the whole value.
pub fn stamp_value(stamp: u64, value: &mut [u8]) {
    let n = value.len().min(8);
    value[..n].copy_from_slice(&stamp.to_le_bytes()[..n]);
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::HashSet;

    #[test]
    fn keys_are_distinct_big_endian_and_padded() {
        let mut buf = KeyBuf::new(8);
        let keys: HashSet<Vec<u8>> = (0..100_000).map(|i| buf.key(i).to_vec()).collect();
        assert_eq!(keys.len(), 100_000);
        assert_eq!(buf.key(7), scramble(7).to_be_bytes());

        let mut long = KeyBuf::new(16);
        let k = long.key(7).to_vec();
        assert_eq!(k.len(), 16);
        assert_eq!(&k[..8], &scramble(7).to_be_bytes());
        assert!(k[8..].iter().all(|&b| b == KEY_PAD));
    }

    #[test]
    fn neighbouring_indices_are_scattered() {
        // Consecutive indices must not share their top byte (they would
        // cluster in an ordered engine).
        let tops: HashSet<u8> = (0..64u64).map(|i| (scramble(i) >> 56) as u8).collect();
        assert!(tops.len() > 40, "{} distinct top bytes", tops.len());
    }

    #[test]
    fn deadlines_go_to_the_fraction_of_keys_asked() {
        let count = |d: Deadlines| (0..100_000).filter(|&i| d.of(i).is_some()).count();
        assert_eq!(count(Deadlines::NONE), 0);
        assert_eq!(count(Deadlines::new(0.0, 5)), 0);
        assert_eq!(count(Deadlines::new(1.0, 5)), 100_000);
        let quarter = count(Deadlines::new(0.25, 5));
        assert!((24_000..26_000).contains(&quarter), "{quarter}");
        // A larger fraction keeps the keys of a smaller one.
        let (half, some) = (Deadlines::new(0.5, 1234), Deadlines::new(0.25, 99));
        for i in (0..10_000).filter(|&i| some.of(i).is_some()) {
            assert_eq!(half.of(i), Some(1234), "{i}");
        }
    }

    #[test]
    fn values_are_deterministic_and_stamped() {
        let (mut a, mut b) = (vec![0u8; 61], vec![0u8; 61]);
        fill_value(3, &mut a);
        fill_value(3, &mut b);
        assert_eq!(a, b);
        fill_value(4, &mut b);
        assert_ne!(a, b);
        stamp_value(0xAB, &mut a);
        assert_eq!(a[0], 0xAB);
        let mut short = vec![0u8; 3];
        stamp_value(u64::MAX, &mut short);
        assert_eq!(short, [0xFF; 3]);
    }
}
