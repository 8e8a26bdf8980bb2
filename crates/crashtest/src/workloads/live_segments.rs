//! The segments of the live pool file while a workload runs, read by the
//! harness's own parser (`poolfile::parse`), not asked of the engine:
//! which segment holds what, and which lanes own log segments.
//!
//! Invariants: read-only; an unreadable or unparsable file reads as no
//! segments, never as an error of the run, so the workloads' checks on
//! these figures fail instead of the harness.

use std::collections::BTreeSet;

use super::ctx::Ctx;
use crate::poolfile;

/// The segments of the live pool (as the engine holds it), by index.
pub(super) fn segment_kinds(c: &Ctx) -> Vec<poolfile::SegKind> {
    c.sim
        .live_pool()
        .and_then(|b| poolfile::parse(&b))
        .map(|p| p.segments)
        .unwrap_or_default()
}

/// The lanes that own log segments in the live pool file.
pub(super) fn log_lanes(c: &Ctx) -> BTreeSet<u32> {
    segment_kinds(c)
        .iter()
        .filter_map(|k| match k {
            poolfile::SegKind::Log { lane, .. } => Some(*lane),
            _ => None,
        })
        .collect()
}
