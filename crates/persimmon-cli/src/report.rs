//! The texts `stats` and `check` print: the stats table, its JSON form and
//! the check report. Pure functions of the engine's figures, so that their
//! wording is tested without a pool.
//!
//! Invariants:
//! - The JSON field names are an interface (scripts read them): add
//!   fields, never rename or drop one.
//! - The check report's ordered-index lines and the segments row's count
//!   of ordered segments appear only for a pool that has the index; the
//!   stats table's `ordered index` row says `no` (and how to get one).

use persimmon::size::human_bytes;
use persimmon::{CheckReport, PointIndex, StatValue, Stats};

/// `stats --json`: one object: `path`, then every figure of
/// [`Stats::fields`], the `pmem_*` counters nested under `pmem`.
pub fn stats_json(path: &str, s: &Stats) -> serde_json::Value {
    let mut top = serde_json::Map::new();
    let mut pmem = serde_json::Map::new();
    top.insert("path".into(), path.into());
    for (name, value) in s.fields() {
        let value = match value {
            StatValue::Count(n) => n.into(),
            StatValue::Flag(b) => b.into(),
            StatValue::Text(t) => t.into(),
            StatValue::Absent => serde_json::Value::Null,
        };
        match name.strip_prefix("pmem_") {
            Some(counter) => pmem.insert(counter.into(), value),
            None => top.insert(name.into(), value),
        };
    }
    top.insert("pmem".into(), pmem.into());
    top.into()
}

/// `stats`: one `name  value` row per line, names aligned.
pub fn stats_table(path: &str, s: &Stats) -> String {
    let bytes = |n: u64| format!("{n} ({})", human_bytes(n));
    let per_key = |n: u64| {
        if s.keys == 0 {
            String::new()
        } else {
            format!(", {:.1} per key", n as f64 / s.keys as f64)
        }
    };
    let rows: Vec<(&str, String)> = vec![
        ("pool", path.to_string()),
        ("keys", s.keys.to_string()),
        (
            "pool bytes",
            format!("{}{}", bytes(s.pool_bytes), per_key(s.pool_bytes)),
        ),
        ("pool bytes max", bytes(s.pool_bytes_max)),
        (
            "used bytes",
            format!("{}{}", bytes(s.used_bytes), per_key(s.used_bytes)),
        ),
        (
            "live bytes",
            format!("{}{}", bytes(s.live_bytes), per_key(s.live_bytes)),
        ),
        ("segment bytes", bytes(s.segment_bytes)),
        ("format version", s.format_version.to_string()),
        ("segments", segments_row(s)),
        ("ordered index", ordered_index_row(s)),
        ("point index", point_index_row(s)),
        ("index depth", s.index_depth.to_string()),
        ("index splits", format!("{} (since open)", s.index_splits)),
        ("lanes", s.lanes.to_string()),
        ("durability", s.durability.name().to_string()),
        ("flush instruction", s.flush_instruction.to_string()),
        ("nt copy", s.nt_copy.to_string()),
        (
            "eliminated puts",
            format!("{} (since open)", s.eliminated_puts),
        ),
        (
            "deadlines",
            format!(
                "{} pending, {} keys expired (since open)",
                s.deadlines_pending, s.keys_expired
            ),
        ),
        (
            "batches at open",
            format!(
                "{} undone, {} finished (interrupted by a crash)",
                s.batches_undone_at_open, s.batches_finished_at_open
            ),
        ),
        ("ssd tier", ssd_tier_row(s)),
        ("read cache", cache_row(s)),
        (
            "rebuild done",
            if s.rebuild_done { "yes" } else { "no" }.to_string(),
        ),
        (
            "pm work",
            format!(
                "{} bytes written ({} non-temporal), {} flushes, {} fences (this process)",
                s.pmem.bytes_written, s.pmem.nt_bytes_written, s.pmem.flushes, s.pmem.fences
            ),
        ),
    ];
    let width = rows.iter().map(|(k, _)| k.len()).max().unwrap_or(0);
    rows.iter()
        .map(|(k, v)| format!("{k:<width$}  {v}\n"))
        .collect()
}

/// The `ssd tier` row: where large values live, or that the pool has no
/// tier (and how to get one).
fn ssd_tier_row(s: &Stats) -> String {
    let Some(dir) = &s.data_dir else {
        return "no (create the pool with --data-dir DIR for one)".into();
    };
    format!(
        "{}: values >= {} bytes; {} in {} files, {} live; {} extents written, {} syncs, \
         {} files deleted, {} moved, {} merged (since open){}",
        dir.display(),
        s.tier_threshold,
        human_bytes(s.ssd_bytes),
        s.ssd_files,
        human_bytes(s.ssd_live_bytes),
        s.ssd_extents_written,
        s.ssd_syncs,
        s.ssd_files_deleted,
        s.ssd_extents_moved,
        s.ssd_merges,
        if s.ssd_direct_io { ", O_DIRECT" } else { "" }
    )
}

/// The `read cache` row (ACS, in front of the SSD tier).
fn cache_row(s: &Stats) -> String {
    if s.data_dir.is_none() {
        return "none (no SSD tier)".into();
    }
    let lookups = s.cache_hits + s.cache_misses;
    let ratio = match lookups {
        0 => String::new(),
        n => format!(
            ", hit ratio {:.1} %",
            100.0 * s.cache_hits as f64 / n as f64
        ),
    };
    format!(
        "{} of {} ({}); {} hits, {} misses (since open){ratio}",
        human_bytes(s.cache_bytes),
        human_bytes(s.cache_capacity_bytes),
        s.cache_policy,
        s.cache_hits,
        s.cache_misses
    )
}

/// The `segments` row: the total, then the count of each kind (ordered
/// index segments only when the pool has the index).
fn segments_row(s: &Stats) -> String {
    format!(
        "{} total: {} free, {} log, {} index, {}{} large, {} damaged",
        s.segments_total,
        s.segments_free,
        s.segments_log,
        s.segments_index,
        if s.ordered_index {
            format!("{} ordered, ", s.segments_ordered)
        } else {
            String::new()
        },
        s.segments_large,
        s.segments_damaged
    )
}

/// The `ordered index` row: whether the pool has one, its size and whether
/// its walk after open is done.
fn ordered_index_row(s: &Stats) -> String {
    if !s.ordered_index {
        return "no (chosen at creation: --ordered-index)".to_string();
    }
    format!(
        "yes: {} nodes{}",
        s.ordered_nodes,
        if s.ordered_walk_done {
            ""
        } else {
            " (walk after open still running)"
        }
    )
}

/// The `point index` row of the stats table: where it lives, and for the
/// DRAM one its size and whether its rebuild after open is done.
fn point_index_row(s: &Stats) -> String {
    match s.point_index {
        PointIndex::Pm => {
            "pm: in persistent memory (chosen at creation: --point-index)".to_string()
        }
        PointIndex::Dram => format!(
            "dram: {} in DRAM{}",
            human_bytes(s.dram_index_bytes),
            if s.point_index_ready {
                ", rebuilt from the ordered index"
            } else {
                " (rebuild after open still running: the ordered index serves what it misses)"
            }
        ),
    }
}

/// The report `check` prints; the ordered index's lines only when the pool
/// has one.
pub fn check_report(path: &str, r: &CheckReport, ordered_index: bool) -> String {
    let mut out = format!(
        "pool                  {path}\n\
         keys                  {}\n\
         index segments        {}\n\
         log segments          {}\n\
         large records         {}\n\
         live bytes            {} ({})\n\
         reclaimable segments  {}\n",
        r.keys,
        r.index_segments,
        r.log_segments,
        r.large_records,
        r.live_bytes,
        human_bytes(r.live_bytes),
        r.reclaimable_segments,
    );
    if ordered_index {
        out.push_str(&format!(
            "ordered nodes         {}\n\
             ordered orphans       {}{}\n",
            r.ordered_nodes,
            r.ordered_orphans,
            if r.ordered_orphans > 0 {
                " (left by a crash; the walk after open unlinks them)"
            } else {
                ""
            }
        ));
    }
    if r.ssd_extents > 0 || r.ssd_orphan_files > 0 {
        out.push_str(&format!(
            "ssd extents           {} verified ({})\n\
             ssd orphan files      {}{}\n",
            r.ssd_extents,
            human_bytes(r.ssd_extent_bytes),
            r.ssd_orphan_files,
            if r.ssd_orphan_files > 0 {
                " (no live record names them; reclaimed in the background)"
            } else {
                ""
            }
        ));
    }
    for e in &r.errors {
        out.push_str(&format!("error: {e}\n"));
    }
    if r.is_ok() {
        out.push_str("consistent\n");
    } else {
        out.push_str(&format!("INCONSISTENT: {} errors\n", r.errors.len()));
    }
    out
}
