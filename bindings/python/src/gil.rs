//! When an engine call gives the GIL up: the `release_gil` option of
//! `persimmon.open`.
//!
//! Invariants:
//! - Holding the GIL through an engine call never deadlocks: the engine
//!   runs no Python code and none of its locks is held while Python code
//!   runs (see `shared`), so a call that waits inside the engine waits only
//!   for threads that do not need the GIL to finish.
//! - `Always` releases it for every call. `Auto` (the default) keeps it
//!   only for a *short* call: one point operation (get, contains, put,
//!   delete) whose key and value take at most `SHORT_CALL_BYTES`, on a pool
//!   without an SSD tier (a tiered read may wait for the disk). Everything
//!   else — batches, `get_many`, scans, transactions, `update`, open,
//!   close, check, stats — releases it under either policy.
//!
//! Why: a point operation is a few hundred nanoseconds of engine work,
//! less than a GIL hand-off between two threads. Measured with
//! `bench/bench.py --keys 1000000` (bench/RESULTS.md): two threads of GETs
//! ran at 0.72–0.85 M ops/s releasing the GIL, 1.13–1.27 M keeping it.

/// Key plus value bytes up to which `Auto` keeps the GIL.
pub const SHORT_CALL_BYTES: usize = 4096;

/// The `release_gil` option (`"auto"` or `"always"`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Auto,
    Always,
}

impl Policy {
    /// Whether a point call moving `bytes` of key and value keeps the GIL.
    pub fn keeps(self, tiered: bool, bytes: usize) -> bool {
        self == Policy::Auto && !tiered && bytes <= SHORT_CALL_BYTES
    }

    pub fn name(self) -> &'static str {
        match self {
            Policy::Auto => "auto",
            Policy::Always => "always",
        }
    }
}
