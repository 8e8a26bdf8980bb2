//! Deferred (epoch) work at operation boundaries: the engine frees dead
//! segments and nodes through `crossbeam_epoch`, whose queue only drains
//! when threads pin and flush.
//!
//! Invariants: a workload runs these at fixed points of its sequence (after
//! every operation, `settle`; where it needs a freed slot or segment back,
//! `drain_epoch`), never on a timer, so what is freed when is the same on
//! every run of a seed.

/// Lets deferred (epoch) work run at an operation boundary, so releases of
/// dead segments happen at the same place on every run.
pub(super) fn settle() {
    for _ in 0..3 {
        crossbeam_epoch::pin().flush();
    }
}

/// Runs deferred (epoch) work until the queue is drained: the oracle's own
/// engines fill the global queue, of which one `flush` collects a few bags,
/// so a node or segment freed by the last operation may otherwise wait for
/// a later one.
pub(super) fn drain_epoch() {
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
}
