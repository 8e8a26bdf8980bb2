//! What open learns from the segment headers: a [`ScanResult`], the scan
//! that reads it from the pool ([`scan_headers`]), and the kind codes DRAM
//! keeps per segment besides `SegmentKind`'s.
//!
//! Two rooms produce a `ScanResult` and one consumes it: the scan here,
//! the copy of it kept across a clean close (`scan_copy`), and the pool,
//! which adopts either the same way. The result lives apart from both so
//! the copy can be read and written without the pool and the pool can use
//! the copy.
//!
//! Invariants:
//! - The scan only reads, and runs while no segment header can change (at
//!   open, before the pool is handed out; at a clean close, after the
//!   session's last write), so a result describes one set of headers.
//! - The `KIND_*` codes are distinct from every `SegmentKind as u8`, so one
//!   byte per segment says both what its header commits it as and what DRAM
//!   alone knows (a run's continuation, damage, a release in progress).

use crate::layout::{self, HeaderState, SegmentHeader, SegmentKind};
use crate::pmem::PmemFile;

/// A later segment of a large record's run (the run's head has the header).
pub(crate) const KIND_CONTINUATION: u8 = 0xC0;
/// A segment whose header did not decode.
pub(crate) const KIND_DAMAGED: u8 = 0xDD;
/// A dead log segment or large run handed to an epoch for release.
pub(crate) const KIND_FREEING: u8 = 0xFE;

/// What the header scan at open found.
pub(crate) struct ScanResult {
    /// (segment index, local depth, prefix) of every index segment.
    pub index_segments: Vec<(u32, u8, u64)>,
    /// Per lane: the newest log segment (highest base sequence).
    pub active_log: Vec<Option<(u32, u64)>>,
    /// Per lane: highest base sequence over all its segments.
    pub lane_max_seq: Vec<u64>,
    /// Damaged headers: (segment index, reason).
    pub damaged: Vec<(u32, String)>,
    /// (segment index, node size class, holds the head) of every segment of
    /// the ordered index.
    pub ordered_segments: Vec<(u32, u32, bool)>,
    /// Some log segment or large run exists: the pool holds records.
    pub has_records: bool,
    /// Per segment of the file, its kind as DRAM keeps it: `SegmentKind as
    /// u8`, `KIND_CONTINUATION` or `KIND_DAMAGED`.
    pub kinds: Vec<u8>,
}

/// Reads the header of each of the `n` segments of `pm` (one line per
/// segment; the continuation segments of a large run are skipped).
pub(crate) fn scan_headers(pm: &PmemFile, segment_bytes: u64, n: u32) -> ScanResult {
    let lanes = 256;
    let mut r = ScanResult {
        index_segments: Vec::new(),
        active_log: vec![None; lanes],
        lane_max_seq: vec![0; lanes],
        damaged: Vec::new(),
        ordered_segments: Vec::new(),
        has_records: false,
        kinds: vec![SegmentKind::Free as u8; n as usize],
    };
    let mut i = 0;
    while i < n {
        let off = layout::SUPERBLOCK_BYTES + i as u64 * segment_bytes;
        let header = pm.slice(off, 64).expect("segment header inside the file");
        match SegmentHeader::decode(header) {
            HeaderState::Free => {}
            HeaderState::Damaged(why) => {
                r.kinds[i as usize] = KIND_DAMAGED;
                r.damaged.push((i, why));
            }
            HeaderState::Valid(h) => {
                r.kinds[i as usize] = h.kind as u8;
                match h.kind {
                    SegmentKind::Index => {
                        r.index_segments
                            .push((i, h.lane_or_depth as u8, h.base_seq_or_prefix));
                    }
                    SegmentKind::Log | SegmentKind::Large => {
                        r.has_records = true;
                        let lane = (h.lane_or_depth as usize).min(lanes - 1);
                        r.lane_max_seq[lane] = r.lane_max_seq[lane].max(h.base_seq_or_prefix);
                        if h.kind == SegmentKind::Log
                            && r.active_log[lane].is_none_or(|(_, s)| h.base_seq_or_prefix >= s)
                        {
                            r.active_log[lane] = Some((i, h.base_seq_or_prefix));
                        }
                        if h.kind == SegmentKind::Large {
                            let run = h.run_segments.max(1).min(n - i);
                            for c in 1..run {
                                r.kinds[(i + c) as usize] = KIND_CONTINUATION;
                            }
                            i += run;
                            continue;
                        }
                    }
                    SegmentKind::Ordered => {
                        r.ordered_segments
                            .push((i, h.lane_or_depth, h.base_seq_or_prefix == 1));
                    }
                    SegmentKind::Free => {}
                }
            }
        }
        i += 1;
    }
    r
}
