//! `Db::stats`: figures about a pool, read without waiting for anything.
//!
//! Invariants: `stats` takes no lock and never waits for the rebuild after
//! open (a caller polling readiness must be able to see it change); until
//! `rebuild_done`, `keys` and `live_bytes` may be partial.

use std::sync::atomic::Ordering;

use super::engine::Engine;
use crate::layout::{self, SegmentKind};
use crate::options::PointIndex;
use crate::pmem::wal::LogFigures;
use crate::pmem::{self, Durability};
use crate::segment_scan::{KIND_CONTINUATION, KIND_DAMAGED};

/// Figures about a pool; see [`Db::stats`].
#[derive(Clone, Debug)]
pub struct Stats {
    /// Keys stored; exact once `rebuild_done` (before, after a crash or with
    /// the DRAM point index, the keys counted so far).
    pub keys: u64,
    /// Current size of the pool file in bytes.
    pub pool_bytes: u64,
    /// Largest size the pool may grow to (this open).
    pub pool_bytes_max: u64,
    /// Bytes of segments in use (log, index, large-record runs).
    pub used_bytes: u64,
    /// Bytes of records the index references.
    pub live_bytes: u64,
    pub segment_bytes: u64,
    pub segments_total: u32,
    pub segments_free: u32,
    pub segments_log: u32,
    pub segments_index: u32,
    pub segments_large: u32,
    pub segments_damaged: u32,
    /// Depth of the DRAM directory (log2 of its entries).
    pub index_depth: u8,
    pub lanes: usize,
    pub durability: Durability,
    /// The disk domain's write-ahead log: its ring, what is in it, syncs
    /// and checkpoints since open, and what the open replayed (`None`
    /// outside the disk domain).
    pub log: Option<LogFigures>,
    pub flush_instruction: &'static str,
    pub nt_copy: &'static str,
    /// Puts that returned without writing because an overlapping put of the
    /// same key wrote after them (concurrent write elimination).
    pub eliminated_puts: u64,
    /// Index segment splits since open.
    pub index_splits: u64,
    /// Log segments the cleaner processed since open, and bytes it copied.
    pub cleaned_segments: u64,
    pub cleaned_bytes: u64,
    /// Whether the background rebuild after open (live bytes, key count) is done.
    pub rebuild_done: bool,
    /// The pool keeps the ordered index.
    pub ordered_index: bool,
    /// Ordered index: nodes allocated and node segments.
    pub ordered_nodes: u64,
    pub segments_ordered: u32,
    /// Ordered index: the walk after open (search hints, free node slots,
    /// orphan repair) has finished.
    pub ordered_walk_done: bool,
    /// Where the point index lives.
    pub point_index: PointIndex,
    /// The point index answers every point read: always with
    /// [`PointIndex::Pm`]; with [`PointIndex::Dram`], once its rebuild from
    /// the ordered index after open is done (until then the ordered index
    /// serves the reads it misses).
    pub point_index_ready: bool,
    /// DRAM the point index occupies with [`PointIndex::Dram`] (0 otherwise).
    pub dram_index_bytes: u64,
    /// The pool's format version now (raised to 4 by the first batch or
    /// deadline written to an older pool).
    pub format_version: u32,
    /// Batches a crash had interrupted, found at this open: undone (before
    /// their commit point) and finished (after it).
    pub batches_undone_at_open: u64,
    pub batches_finished_at_open: u64,
    /// This open took the segment headers from their copy beside the pool
    /// (`<pool>.segments`, written at the last clean close) instead of
    /// reading one header per segment.
    pub segments_from_copy: bool,
    /// Entries in the heap of deadlines (live keys with a deadline, plus
    /// stale entries not yet dropped).
    pub deadlines_pending: u64,
    /// Keys the background expiry deleted since open.
    pub keys_expired: u64,
    /// The SSD tier's data directory (None: the pool has no tier).
    pub data_dir: Option<std::path::PathBuf>,
    /// Values of at least this many bytes go to the tier (0 without one).
    pub tier_threshold: u64,
    /// Bytes of value data in the data directory: what its files take on
    /// the file system (live extents, dead ones not yet reclaimed, and the
    /// unused rest of the file extents are appended to).
    pub ssd_bytes: u64,
    /// Extent bytes that live records name.
    pub ssd_live_bytes: u64,
    pub ssd_files: u64,
    /// Extents written and data-file syncs (group commit) since open.
    pub ssd_extents_written: u64,
    pub ssd_syncs: u64,
    /// Data files deleted since open (emptied by overwrites, deletes and the
    /// tier cleaner).
    pub ssd_files_deleted: u64,
    /// Extents moved (and patched values merged) by the tier cleaner.
    pub ssd_extents_moved: u64,
    pub ssd_merges: u64,
    /// Data files are read and written with O_DIRECT (page cache bypassed).
    pub ssd_direct_io: bool,
    /// The ACS read cache: its capacity, bytes held, hits and misses since
    /// open, and its replacement policy.
    pub cache_capacity_bytes: u64,
    pub cache_bytes: u64,
    pub cache_hits: u64,
    pub cache_misses: u64,
    pub cache_policy: &'static str,
    /// Persistence counters of the whole process.
    pub pmem: pmem::PmemCounters,
}

/// One figure of [`Stats`], as [`Stats::fields`] names it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum StatValue {
    Count(u64),
    Flag(bool),
    Text(String),
    /// A figure the pool does not have (`data_dir` without an SSD tier).
    Absent,
}

impl Stats {
    /// Every figure by its stable name (the names of `persimmon stats
    /// --json`, with the persistence counters flattened as `pmem_*`). The
    /// bindings and reports build their views from this one list.
    pub fn fields(&self) -> Vec<(&'static str, StatValue)> {
        let mut f = self.pool_fields();
        f.extend(self.log_fields());
        f.extend(self.tier_fields());
        f
    }

    /// The disk domain's log (absent outside it).
    fn log_fields(&self) -> Vec<(&'static str, StatValue)> {
        let count = |get: fn(&LogFigures) -> u64| {
            self.log
                .as_ref()
                .map_or(StatValue::Absent, |l| StatValue::Count(get(l)))
        };
        vec![
            ("log_capacity_bytes", count(|l| l.capacity)),
            ("log_used_bytes", count(|l| l.used)),
            ("log_appended_bytes", count(|l| l.appended)),
            ("log_syncs", count(|l| l.syncs)),
            ("log_checkpoints", count(|l| l.checkpoints)),
            ("log_replayed_bytes", count(|l| l.replayed.bytes)),
            ("log_replayed_records", count(|l| l.replayed.records)),
            ("log_replay_micros", count(|l| l.replayed.nanos / 1000)),
        ]
    }

    fn pool_fields(&self) -> Vec<(&'static str, StatValue)> {
        use StatValue::{Count as C, Flag as F};
        let text = |s: &str| StatValue::Text(s.to_string());
        vec![
            ("keys", C(self.keys)),
            ("pool_bytes", C(self.pool_bytes)),
            ("pool_bytes_max", C(self.pool_bytes_max)),
            ("used_bytes", C(self.used_bytes)),
            ("live_bytes", C(self.live_bytes)),
            ("segment_bytes", C(self.segment_bytes)),
            ("segments_total", C(self.segments_total.into())),
            ("segments_free", C(self.segments_free.into())),
            ("segments_log", C(self.segments_log.into())),
            ("segments_index", C(self.segments_index.into())),
            ("segments_large", C(self.segments_large.into())),
            ("segments_damaged", C(self.segments_damaged.into())),
            ("index_depth", C(self.index_depth.into())),
            ("lanes", C(self.lanes as u64)),
            ("durability", text(self.durability.name())),
            ("flush_instruction", text(self.flush_instruction)),
            ("nt_copy", text(self.nt_copy)),
            ("eliminated_puts", C(self.eliminated_puts)),
            ("index_splits", C(self.index_splits)),
            ("cleaned_segments", C(self.cleaned_segments)),
            ("cleaned_bytes", C(self.cleaned_bytes)),
            ("rebuild_done", F(self.rebuild_done)),
            ("ordered_index", F(self.ordered_index)),
            ("ordered_nodes", C(self.ordered_nodes)),
            ("segments_ordered", C(self.segments_ordered.into())),
            ("ordered_walk_done", F(self.ordered_walk_done)),
            ("point_index", text(self.point_index.name())),
            ("point_index_ready", F(self.point_index_ready)),
            ("dram_index_bytes", C(self.dram_index_bytes)),
            ("format_version", C(self.format_version.into())),
            ("batches_undone_at_open", C(self.batches_undone_at_open)),
            ("batches_finished_at_open", C(self.batches_finished_at_open)),
            ("segments_from_copy", F(self.segments_from_copy)),
            ("deadlines_pending", C(self.deadlines_pending)),
            ("keys_expired", C(self.keys_expired)),
            ("pmem_flushes", C(self.pmem.flushes)),
            ("pmem_fences", C(self.pmem.fences)),
            ("pmem_bytes_written", C(self.pmem.bytes_written)),
            ("pmem_nt_bytes_written", C(self.pmem.nt_bytes_written)),
        ]
    }

    fn tier_fields(&self) -> Vec<(&'static str, StatValue)> {
        use StatValue::{Count as C, Flag as F};
        let dir = match &self.data_dir {
            Some(d) => StatValue::Text(d.display().to_string()),
            None => StatValue::Absent,
        };
        vec![
            ("data_dir", dir),
            ("tier_threshold", C(self.tier_threshold)),
            ("ssd_bytes", C(self.ssd_bytes)),
            ("ssd_live_bytes", C(self.ssd_live_bytes)),
            ("ssd_files", C(self.ssd_files)),
            ("ssd_extents_written", C(self.ssd_extents_written)),
            ("ssd_syncs", C(self.ssd_syncs)),
            ("ssd_files_deleted", C(self.ssd_files_deleted)),
            ("ssd_extents_moved", C(self.ssd_extents_moved)),
            ("ssd_merges", C(self.ssd_merges)),
            ("ssd_direct_io", F(self.ssd_direct_io)),
            ("cache_capacity_bytes", C(self.cache_capacity_bytes)),
            ("cache_bytes", C(self.cache_bytes)),
            ("cache_hits", C(self.cache_hits)),
            ("cache_misses", C(self.cache_misses)),
            (
                "cache_policy",
                StatValue::Text(self.cache_policy.to_string()),
            ),
        ]
    }
}

impl Engine {
    pub(super) fn stats(&self) -> Stats {
        // Never waits: before the rebuild is done the count may be partial
        // (`rebuild_done` says which).
        let keys = self.count_now();
        let n = self.pool.segment_count();
        let c = self.segment_counts();
        let seg = self.pool.segment_bytes;
        let (ordered_nodes, ordered_segments) = self
            .ordered
            .as_ref()
            .map(|o| o.heap_figures())
            .unwrap_or((0, 0));
        let tier = self.tier().map(|t| t.stats()).unwrap_or_default();
        let cache = &tier.cache;
        Stats {
            segments_from_copy: self.pool.scan_from_copy,
            data_dir: self.tier().map(|t| t.dir.clone()),
            tier_threshold: self.tier().map_or(0, |t| t.threshold),
            ssd_bytes: tier.allocated_bytes,
            ssd_live_bytes: tier.live_bytes,
            ssd_files: tier.files,
            ssd_extents_written: tier.extents_written,
            ssd_syncs: tier.syncs,
            ssd_files_deleted: tier.files_deleted,
            ssd_extents_moved: self.tier_moved.load(Ordering::Relaxed),
            ssd_merges: self.tier_merges.load(Ordering::Relaxed),
            ssd_direct_io: tier.direct_io,
            cache_capacity_bytes: cache.capacity_bytes,
            cache_bytes: cache.bytes,
            cache_hits: cache.hits,
            cache_misses: cache.misses,
            cache_policy: self.tier().map_or("none", |t| t.cache.policy().name()),
            keys,
            pool_bytes: self.pool.pm.len(),
            pool_bytes_max: self.pool.pool_bytes_max,
            used_bytes: layout::SUPERBLOCK_BYTES + (n - c.free) as u64 * seg,
            live_bytes: c.live_bytes,
            segment_bytes: seg,
            segments_total: n,
            segments_free: c.free,
            segments_log: c.log,
            segments_index: c.index,
            segments_large: c.large,
            segments_damaged: c.damaged,
            index_depth: self.index.dir.load().depth,
            lanes: self.lanes.len(),
            durability: self.pool.pm.durability(),
            log: self.pool.pm.wal().map(|w| w.figures()),
            flush_instruction: self.pool.pm.flush_instruction().name(),
            nt_copy: self.pool.pm.nt_copy().name(),
            eliminated_puts: self.eliminated_puts.load(Ordering::Relaxed),
            index_splits: self.splits.load(Ordering::Relaxed),
            cleaned_segments: self.cleaned_segments.load(Ordering::Relaxed),
            cleaned_bytes: self.cleaned_bytes.load(Ordering::Relaxed),
            rebuild_done: self.tally_done.load(Ordering::Acquire),
            ordered_index: self.ordered.is_some(),
            ordered_nodes,
            segments_ordered: ordered_segments as u32,
            ordered_walk_done: self.ordered.as_ref().is_none_or(|o| o.walk_done()),
            point_index: self.point_index.kind(),
            point_index_ready: self.point_index.is_complete(),
            dram_index_bytes: self.point_index.dram_bytes(),
            format_version: self.pool.format_version(),
            batches_undone_at_open: self.batch_recovery.undone,
            batches_finished_at_open: self.batch_recovery.finished,
            deadlines_pending: self.expiry.pending(),
            keys_expired: self.expiry.reclaimed(),
            pmem: pmem::process_counters(),
        }
    }

    /// Segments by kind, and live bytes over all of them.
    fn segment_counts(&self) -> SegmentCounts {
        let mut c = SegmentCounts::default();
        for s in 0..self.pool.segment_count() {
            c.live_bytes += self.pool.live_bytes(s);
            match self.pool.kind(s) {
                k if k == SegmentKind::Free as u8 => c.free += 1,
                k if k == SegmentKind::Log as u8 => c.log += 1,
                k if k == SegmentKind::Index as u8 => c.index += 1,
                k if k == SegmentKind::Large as u8 || k == KIND_CONTINUATION => c.large += 1,
                k if k == SegmentKind::Ordered as u8 => {}
                KIND_DAMAGED => c.damaged += 1,
                _ => c.log += 1, // freeing: still in use until its epoch passes
            }
        }
        c
    }
}

#[derive(Default)]
struct SegmentCounts {
    free: u32,
    log: u32,
    index: u32,
    large: u32,
    damaged: u32,
    live_bytes: u64,
}
