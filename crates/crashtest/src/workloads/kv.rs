//! The keys and values the workloads write: key families (`prefix-000042`),
//! values that name a version, the small records most workloads put, and
//! the puts of such values.
//!
//! Invariants: every key and value is a function of its arguments and the
//! workload's random source (`Ctx::rng`), so a run is a function of its
//! seed; a value has at least one byte; a small record's length covers the
//! engine's copy paths (a single byte, ordinary copies, non-temporal ones
//! from 256 bytes).

use rand::rngs::StdRng;
use rand::Rng;

use super::ctx::Ctx;
use super::ops::Op;
use crate::oracle::{Key, Val};

/// Key `i` of a workload's key family `prefix`: `prefix-000042`.
pub(super) fn key(prefix: &str, i: u64) -> Key {
    format!("{prefix}-{i:06}").into_bytes()
}

/// A value of `len` bytes that names its key and a version.
pub(super) fn value(rng: &mut StdRng, len: usize) -> Val {
    let tag: u32 = rng.gen();
    let mut v = format!("v{tag:08x}-").into_bytes();
    let fill = b'a' + (tag % 26) as u8;
    v.resize(len.max(v.len()), fill);
    v.truncate(len.max(1));
    v
}

/// A value length for a small record: mostly 8..120 bytes, one in ten a
/// single byte, one in ten 256..700 (the engine copies those non-temporally).
pub(super) fn small_len(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..10) {
        0 => rng.gen_range(256..700), // non-temporal copy
        1 => 1,
        _ => rng.gen_range(8..120),
    }
}

/// A value of a small record's length (`small_len`).
pub(super) fn small_value(rng: &mut StdRng) -> Val {
    let len = small_len(rng);
    value(rng, len)
}

/// Puts a small value (`small_value`) under `k`.
pub(super) fn put_small(c: &mut Ctx, k: Key) {
    let v = small_value(&mut c.rng);
    c.run(Op::Put(k, v));
}

/// Puts small values under keys `0..n` of `prefix`.
pub(super) fn fill(c: &mut Ctx, prefix: &str, n: u64) {
    for i in 0..n {
        put_small(c, key(prefix, i));
    }
}
