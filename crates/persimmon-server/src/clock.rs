//! The wall clock as the server reads it — Unix time — and the ids that
//! must differ from one start (or role change) to the next: the run id and
//! replication ids, drawn from the process, the clock and a counter.
//!
//! Invariants: an id is 40 lowercase hex digits, as Redis's; two ids drawn
//! in one process differ (the counter), ids are not secrets.

use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Instant, SystemTime, UNIX_EPOCH};

/// Time since the Unix epoch (zero if the clock is before it).
pub fn unix_time() -> std::time::Duration {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default()
}

/// A fresh id: 40 hex digits from the process, the clock, a counter and
/// `salt`.
pub fn fresh_id(salt: &str) -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let seed = format!(
        "{}:{}:{:?}:{}:{salt}",
        std::process::id(),
        unix_time().as_nanos(),
        Instant::now(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    );
    let a = xxhash_rust::xxh3::xxh3_128(seed.as_bytes());
    let b = xxhash_rust::xxh3::xxh3_64_with_seed(seed.as_bytes(), 21);
    format!("{a:032x}{:08x}", b as u32)
}

#[cfg(test)]
mod tests {
    use super::fresh_id;

    #[test]
    fn ids_are_40_hex_digits_and_differ() {
        let (a, b) = (fresh_id("x"), fresh_id("x"));
        assert_eq!(a.len(), 40);
        assert!(a
            .bytes()
            .all(|c| c.is_ascii_hexdigit() && !c.is_ascii_uppercase()));
        assert_ne!(a, b);
    }
}
