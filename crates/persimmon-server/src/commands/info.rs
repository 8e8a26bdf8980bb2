//! INFO: the server's state as Redis's `INFO` sections, with Persimmon's
//! own fields (pool, indexes, durability) added where Redis has the
//! section.
//!
//! Invariants:
//! - Sections come in Redis's order and each is `# Title` then `key:value`
//!   lines; fields Redis has keep Redis's names, so monitoring tools that
//!   parse `INFO` read them unchanged.
//! - Counters are read after this connection published its own, so a
//!   client sees at least its own commands counted; other connections'
//!   counts may lag by a batch (see `Counters`).
//! - The engine's stats are read under `blocking`: right after a crash the
//!   key count waits for the pool's rebuild.

use std::fmt::{Display, Write};
use std::sync::atomic::Ordering;

use persimmon::Stats;

use crate::protocol::Args;
use crate::session::{blocking, Error, Session, REDIS_COMPAT_VERSION};
use crate::shared::Shared;

/// The `key:value` lines of one section.
struct Lines<'t>(&'t mut String);

impl Lines<'_> {
    fn line(&mut self, key: &str, value: &dyn Display) {
        let _ = write!(self.0, "{key}:{value}\r\n");
    }
}

type Section = fn(&mut Lines<'_>, &Shared, &Stats);

/// Every section, in Redis's order.
const SECTIONS: [(&str, Section); 7] = [
    ("server", server_section),
    ("clients", clients_section),
    ("memory", memory_section),
    ("persistence", persistence_section),
    ("tier", tier_section),
    ("stats", stats_section),
    ("keyspace", keyspace_section),
];

/// INFO [section ...]: the named sections, or all of them for none, `all`,
/// `default` or `everything`.
pub fn info(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut wanted: Vec<String> = a
        .from(1)
        .map(|x| String::from_utf8_lossy(x).to_ascii_lowercase())
        .collect();
    if wanted.is_empty()
        || wanted
            .iter()
            .any(|w| w == "all" || w == "default" || w == "everything")
    {
        wanted = SECTIONS.iter().map(|(name, _)| name.to_string()).collect();
    }
    // This connection's own counts, at least, are up to date.
    s.publish_counters();
    let shared = s.shared.clone();
    let stats = blocking(|| shared.db.stats());
    let mut text = String::new();
    for (name, section) in SECTIONS {
        if !wanted.iter().any(|w| w == name) {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        let mut title: Vec<char> = name.chars().collect();
        title[0] = title[0].to_ascii_uppercase();
        let _ = write!(text, "# {}\r\n", title.into_iter().collect::<String>());
        section(&mut Lines(&mut text), &shared, &stats);
    }
    s.out.verbatim(text.as_bytes());
    Ok(())
}

fn server_section(out: &mut Lines<'_>, shared: &Shared, _stats: &Stats) {
    let uptime = shared.started.elapsed().as_secs();
    out.line("redis_version", &REDIS_COMPAT_VERSION);
    out.line("persimmon_version", &env!("CARGO_PKG_VERSION"));
    out.line("redis_mode", &"standalone");
    out.line("os", &std::env::consts::OS);
    out.line("arch_bits", &(usize::BITS));
    out.line("multiplexing_api", &"tokio");
    out.line("process_id", &std::process::id());
    out.line("tcp_port", &shared.local_addr.port());
    out.line("uptime_in_seconds", &uptime);
    out.line("uptime_in_days", &(uptime / 86400));
    out.line("worker_threads", &shared.config.worker_threads);
    out.line(
        "config_file",
        &shared
            .config_file
            .as_ref()
            .map(|p| p.display().to_string())
            .unwrap_or_default(),
    );
}

fn clients_section(out: &mut Lines<'_>, shared: &Shared, _stats: &Stats) {
    out.line(
        "connected_clients",
        &shared.connected.load(Ordering::Relaxed),
    );
    out.line("maxclients", &shared.config.limits.maxclients);
    out.line("blocked_clients", &0);
}

fn memory_section(out: &mut Lines<'_>, _shared: &Shared, stats: &Stats) {
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * 4096);
    out.line("used_memory_rss", &rss);
    out.line("pool_bytes", &stats.pool_bytes);
    out.line("pool_bytes_max", &stats.pool_bytes_max);
    out.line("pool_used_bytes", &stats.used_bytes);
    out.line("pool_live_bytes", &stats.live_bytes);
    out.line("maxmemory", &0);
    out.line("maxmemory_policy", &"noeviction");
}

fn persistence_section(out: &mut Lines<'_>, shared: &Shared, stats: &Stats) {
    out.line("loading", &0);
    out.line("durability", &stats.durability.name());
    out.line("every_write_durable_on_reply", &1);
    out.line("pool", &shared.config.pool.display());
    out.line("pool_rebuild_done", &(stats.rebuild_done as u8));
    out.line("ordered_index", &(stats.ordered_index as u8));
    if stats.ordered_index {
        out.line("ordered_nodes", &stats.ordered_nodes);
        out.line("ordered_walk_done", &(stats.ordered_walk_done as u8));
    }
    out.line("point_index", &stats.point_index.name());
    out.line("point_index_ready", &(stats.point_index_ready as u8));
    out.line("dram_index_bytes", &stats.dram_index_bytes);
    out.line("rdb_bgsave_in_progress", &0);
    out.line("aof_enabled", &0);
}

/// The SSD tier and its ACS read cache (Persimmon's own section).
fn tier_section(out: &mut Lines<'_>, _shared: &Shared, stats: &Stats) {
    out.line("ssd_tier", &(stats.data_dir.is_some() as u8));
    let Some(dir) = &stats.data_dir else { return };
    out.line("data_dir", &dir.display());
    out.line("tier_threshold", &stats.tier_threshold);
    out.line("ssd_bytes", &stats.ssd_bytes);
    out.line("ssd_live_bytes", &stats.ssd_live_bytes);
    out.line("ssd_files", &stats.ssd_files);
    out.line("ssd_extents_written", &stats.ssd_extents_written);
    out.line("ssd_syncs", &stats.ssd_syncs);
    out.line("ssd_merges", &stats.ssd_merges);
    out.line("ssd_direct_io", &(stats.ssd_direct_io as u8));
    out.line("cache_policy", &stats.cache_policy);
    out.line("cache_capacity_bytes", &stats.cache_capacity_bytes);
    out.line("cache_bytes", &stats.cache_bytes);
    out.line("cache_hits", &stats.cache_hits);
    out.line("cache_misses", &stats.cache_misses);
}

fn stats_section(out: &mut Lines<'_>, shared: &Shared, stats: &Stats) {
    let st = &shared.stats;
    for (key, counter) in [
        ("total_connections_received", &st.total_connections_received),
        ("total_commands_processed", &st.total_commands_processed),
        ("total_net_input_bytes", &st.net_input_bytes),
        ("total_net_output_bytes", &st.net_output_bytes),
        ("rejected_connections", &st.rejected_connections),
        ("keyspace_hits", &st.keyspace_hits),
        ("keyspace_misses", &st.keyspace_misses),
        ("total_error_replies", &st.total_error_replies),
        ("protocol_errors", &st.protocol_errors),
        (
            "client_query_buffer_limit_disconnections",
            &st.query_buffer_limit_disconnections,
        ),
        (
            "client_output_buffer_limit_disconnections",
            &st.output_buffer_limit_disconnections,
        ),
    ] {
        out.line(key, &counter.load(Ordering::Relaxed));
    }
    out.line("eliminated_puts", &stats.eliminated_puts);
    out.line("index_splits", &stats.index_splits);
    out.line("cleaned_segments", &stats.cleaned_segments);
}

/// Like Redis, no line for an empty database. (One walk of the pool: the
/// server keeps no per-database counts.)
fn keyspace_section(out: &mut Lines<'_>, shared: &Shared, _stats: &Stats) {
    let counts = shared
        .dbs
        .key_counts(&shared.db, || shared.is_stopping())
        .unwrap_or_default();
    for (db, keys, expires) in counts {
        out.line(
            &format!("db{db}"),
            &format_args!("keys={keys},expires={expires},avg_ttl=0"),
        );
    }
}
