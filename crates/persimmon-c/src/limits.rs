//! The engine's limits as C constants.
//!
//! Invariants: each constant equals its engine counterpart (written out as a
//! literal so cbindgen can put the number in the header; the tests below
//! hold them equal).

/// Longest key, in bytes (64 KiB).
pub const PERSIMMON_MAX_KEY_BYTES: usize = 65536;
/// Longest value, in bytes (64 MiB).
pub const PERSIMMON_MAX_VALUE_BYTES: usize = 67108864;
/// Most operations in one batch.
pub const PERSIMMON_MAX_BATCH_OPS: usize = 100000;
/// Most bytes of keys and values in one batch (64 MiB).
pub const PERSIMMON_MAX_BATCH_BYTES: usize = 67108864;
/// Latest deadline accepted, in ms of Unix time (9999-12-31T23:59:59.999Z).
pub const PERSIMMON_MAX_DEADLINE_MS: u64 = 253402300799999;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_c_constants_are_the_engines() {
        assert_eq!(PERSIMMON_MAX_KEY_BYTES, engine::MAX_KEY_BYTES);
        assert_eq!(PERSIMMON_MAX_VALUE_BYTES, engine::MAX_VALUE_BYTES);
        assert_eq!(PERSIMMON_MAX_BATCH_OPS, engine::MAX_BATCH_OPS);
        assert_eq!(PERSIMMON_MAX_BATCH_BYTES, engine::MAX_BATCH_BYTES);
        assert_eq!(PERSIMMON_MAX_DEADLINE_MS, engine::MAX_DEADLINE_MS);
    }
}
