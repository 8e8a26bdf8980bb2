//! INFO: the server's state as Redis 7.0's `INFO` sections, field names
//! and order, with Persimmon's own fields (pool, indexes, durability, the
//! collection reclaimer, the SSD tier) added at the end of the section they belong to, and its own
//! `tier` section after `persistence`.
//!
//! Invariants:
//! - Sections come in Redis's order (server, clients, memory, persistence,
//!   tier, stats, replication, cpu, modules, commandstats, errorstats,
//!   latencystats, cluster, keyspace), each `# Title` then `key:value`
//!   lines. Without arguments (or `default`) every section but
//!   `commandstats` and `latencystats`; `all` and `everything` give every
//!   section; other names are matched in any case; each section comes at
//!   most once however often it is asked for.
//! - Fields Redis has keep Redis's names and formats, so tools that parse
//!   `INFO` read them unchanged; what Persimmon does not have (replicas,
//!   forks, an allocator of its own, scripts) reads as Redis reads when
//!   idle (0, `ok`, `-1`).
//! - Counters are read after this connection published its own, so a
//!   client sees at least its own commands counted; other connections'
//!   counts may lag by a batch (see `Counters`).
//! - The engine's stats are read under `blocking`: right after a crash the
//!   key count waits for the pool's rebuild.

use std::fmt::{Display, Write};
use std::sync::atomic::Ordering;

use persimmon::Stats;
use persimmon_resp::Args;
use persimmon_types::Error;

use crate::clock::unix_time;
use crate::session::{blocking, Session, Spec, REDIS_COMPAT_VERSION};
use crate::shared::Shared;

/// The `key:value` lines of one section.
struct Lines<'t>(&'t mut String);

impl Lines<'_> {
    fn line(&mut self, key: &str, value: &dyn Display) {
        let _ = write!(self.0, "{key}:{value}\r\n");
    }

    /// Lines whose values are all zero (what Redis shows for features
    /// Persimmon does not have).
    fn zeros(&mut self, keys: &[&str]) {
        for key in keys {
            self.line(key, &0);
        }
    }
}

/// What the sections read.
struct Ctx<'a> {
    shared: &'a Shared,
    stats: &'a Stats,
    keyspace: &'a [(usize, u64, u64)],
    commands: &'a [Spec],
}

type Section = fn(&mut Lines<'_>, &Ctx<'_>);

/// Every section: its name, its title, whether `INFO` without arguments
/// shows it, and what writes it.
const SECTIONS: [(&str, &str, bool, Section); 14] = [
    ("server", "Server", true, server_section),
    ("clients", "Clients", true, clients_section),
    ("memory", "Memory", true, memory_section),
    ("persistence", "Persistence", true, persistence_section),
    ("tier", "Tier", true, tier_section),
    ("stats", "Stats", true, stats_section),
    ("replication", "Replication", true, replication_section),
    ("cpu", "CPU", true, cpu_section),
    ("modules", "Modules", true, |_, _| {}),
    ("commandstats", "Commandstats", false, commandstats_section),
    ("errorstats", "Errorstats", true, errorstats_section),
    ("latencystats", "Latencystats", false, latencystats_section),
    ("cluster", "Cluster", true, |out, _| {
        out.line("cluster_enabled", &0)
    }),
    ("keyspace", "Keyspace", true, keyspace_section),
];

/// Which sections `INFO args` asks for, as flags in `SECTIONS` order.
fn wanted(args: &[Vec<u8>]) -> [bool; SECTIONS.len()] {
    let mut want = [false; SECTIONS.len()];
    if args.is_empty() {
        return SECTIONS.map(|(_, _, default, _)| default);
    }
    for arg in args {
        for (i, (name, _, default, _)) in SECTIONS.iter().enumerate() {
            let asked = match arg.as_slice() {
                b"all" | b"everything" => true,
                b"default" => *default,
                b"module_list" => *name == "modules",
                other => other == name.as_bytes(),
            };
            want[i] |= asked;
        }
    }
    want
}

/// INFO [section ...].
pub fn info(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let args: Vec<Vec<u8>> = a.from(1).map(|x| x.to_ascii_lowercase()).collect();
    let want = wanted(&args);
    // This connection's own counts, at least, are up to date.
    s.publish_counters();
    let shared = s.shared.clone();
    // The keyspace lines walk the pool: only when the section is shown.
    let with_keyspace = SECTIONS
        .iter()
        .zip(want)
        .any(|(section, w)| w && section.0 == "keyspace");
    let (stats, keyspace) = blocking(|| {
        let keyspace = with_keyspace.then(|| keyspace_lines(&shared));
        (shared.keyspace.db.stats(), keyspace.unwrap_or_default())
    });
    let ctx = Ctx {
        shared: &shared,
        stats: &stats,
        keyspace: &keyspace,
        commands: s.commands.rows(),
    };
    let mut text = String::new();
    for (i, (_, title, _, section)) in SECTIONS.iter().enumerate() {
        if !want[i] {
            continue;
        }
        if !text.is_empty() {
            text.push_str("\r\n");
        }
        let _ = write!(text, "# {title}\r\n");
        section(&mut Lines(&mut text), &ctx);
    }
    s.out.verbatim(text.as_bytes());
    Ok(())
}

/// The keyspace section's lines: (database index, keys, keys with an
/// expiry), one per database that has keys. One walk of the pool plus a
/// deadline lookup per key (the server keeps no per-database counts: see
/// design.md §12), so call it off the async workers (`blocking`).
pub(crate) fn keyspace_lines(shared: &Shared) -> Vec<(usize, u64, u64)> {
    if shared.keyspace.db.is_empty() {
        return Vec::new();
    }
    shared
        .keyspace
        .dbs
        .key_counts(&shared.keyspace.db, || shared.is_stopping())
        .unwrap_or_default()
}

/// Bytes as Redis's `*_human` fields write them (`1.50M`).
fn human(n: u64) -> String {
    const UNITS: [&str; 5] = ["K", "M", "G", "T", "P"];
    if n < 1024 {
        return format!("{n}B");
    }
    let mut scaled = n as f64 / 1024.0;
    for unit in UNITS {
        if scaled < 1024.0 || unit == "P" {
            return format!("{scaled:.2}{unit}");
        }
        scaled /= 1024.0;
    }
    format!("{n}B")
}

/// A setting's value as text, for the fields that show one.
fn setting(shared: &Shared, name: &str) -> String {
    shared
        .settings
        .value(name)
        .map(|v| String::from_utf8_lossy(&v).into_owned())
        .unwrap_or_default()
}

fn os_name() -> String {
    let u = rustix::system::uname();
    format!(
        "{} {} {}",
        u.sysname().to_string_lossy(),
        u.release().to_string_lossy(),
        u.machine().to_string_lossy()
    )
}

fn server_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let shared = ctx.shared;
    let uptime = shared.started.elapsed().as_secs();
    let now = unix_time();
    let hz = setting(shared, "hz");
    out.line("redis_version", &REDIS_COMPAT_VERSION);
    out.line("redis_git_sha1", &"00000000");
    out.line("redis_git_dirty", &0);
    out.line("redis_build_id", &"0");
    out.line("redis_mode", &"standalone");
    out.line("os", &os_name());
    out.line("arch_bits", &(usize::BITS));
    out.line("monotonic_clock", &"POSIX clock_gettime");
    out.line("multiplexing_api", &"tokio");
    out.line("atomicvar_api", &"rust-atomics");
    out.line("gcc_version", &"0.0.0");
    out.line("process_id", &std::process::id());
    out.line("process_supervised", &"no");
    out.line("run_id", &shared.run_id);
    out.line("tcp_port", &shared.local_addr.port());
    out.line("server_time_usec", &now.as_micros());
    out.line("uptime_in_seconds", &uptime);
    out.line("uptime_in_days", &(uptime / 86400));
    out.line("hz", &hz);
    out.line("configured_hz", &hz);
    out.line("lru_clock", &(now.as_secs() & ((1 << 24) - 1)));
    let exe = std::env::current_exe().map(|p| p.display().to_string());
    out.line("executable", &exe.unwrap_or_default());
    let config_file = shared.config_file.as_ref().map(|p| p.display().to_string());
    out.line("config_file", &config_file.unwrap_or_default());
    out.line("io_threads_active", &0);
    out.line("persimmon_version", &env!("CARGO_PKG_VERSION"));
    out.line("worker_threads", &shared.config.worker_threads);
}

fn clients_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let shared = ctx.shared;
    let max_input = shared
        .clients
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .values()
        .map(|c| c.query_buffer_bytes.load(Ordering::Relaxed))
        .max()
        .unwrap_or(0);
    out.line(
        "connected_clients",
        &shared.connected.load(Ordering::Relaxed),
    );
    out.line("cluster_connections", &0);
    out.line("maxclients", &shared.settings.maxclients());
    out.line("client_recent_max_input_buffer", &max_input);
    out.zeros(&["client_recent_max_output_buffer"]);
    out.line(
        "blocked_clients",
        &(shared.blocked.count() + shared.pause.waiting()),
    );
    out.zeros(&["tracking_clients", "clients_in_timeout_table"]);
}

/// The memory figures INFO and MEMORY STATS report: `used` is what the
/// data takes (the pool's bytes in use plus the DRAM index), `dataset`
/// the live records among them.
pub(crate) struct Memory {
    pub used: u64,
    pub peak: u64,
    pub rss: u64,
    pub dataset: u64,
}

pub(crate) fn memory_figures(shared: &Shared, stats: &Stats) -> Memory {
    let used = stats.used_bytes + stats.dram_index_bytes;
    let peak = shared
        .stats
        .used_memory_peak
        .fetch_max(used, Ordering::Relaxed)
        .max(used);
    let rss = std::fs::read_to_string("/proc/self/statm")
        .ok()
        .and_then(|t| t.split_whitespace().nth(1)?.parse::<u64>().ok())
        .map_or(0, |pages| pages * rustix::param::page_size() as u64);
    Memory {
        used,
        peak,
        rss,
        dataset: stats.live_bytes.min(used),
    }
}

fn percent(part: u64, whole: u64) -> String {
    let p = if whole == 0 {
        0.0
    } else {
        part as f64 * 100.0 / whole as f64
    };
    format!("{p:.2}%")
}

fn total_system_memory() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|t| {
            let line = t.lines().find(|l| l.starts_with("MemTotal:"))?;
            line.split_whitespace().nth(1)?.parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

fn memory_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let (shared, stats) = (ctx.shared, ctx.stats);
    let m = memory_figures(shared, stats);
    let system = total_system_memory();
    let maxmemory: u64 = setting(shared, "maxmemory").parse().unwrap_or(0);
    out.line("used_memory", &m.used);
    out.line("used_memory_human", &human(m.used));
    out.line("used_memory_rss", &m.rss);
    out.line("used_memory_rss_human", &human(m.rss));
    out.line("used_memory_peak", &m.peak);
    out.line("used_memory_peak_human", &human(m.peak));
    out.line("used_memory_peak_perc", &percent(m.used, m.peak));
    out.line("used_memory_overhead", &(m.used - m.dataset));
    out.line("used_memory_startup", &0);
    out.line("used_memory_dataset", &m.dataset);
    out.line("used_memory_dataset_perc", &percent(m.dataset, m.used));
    out.zeros(&[
        "allocator_allocated",
        "allocator_active",
        "allocator_resident",
    ]);
    out.line("total_system_memory", &system);
    out.line("total_system_memory_human", &human(system));
    out.line("used_memory_lua", &0);
    out.line("used_memory_vm_eval", &0);
    out.line("used_memory_lua_human", &"0B");
    out.line("number_of_cached_scripts", &ctx.shared.scripts.cached());
    out.zeros(&[
        "used_memory_scripts_eval",
        "number_of_functions",
        "number_of_libraries",
        "used_memory_vm_functions",
        "used_memory_vm_total",
    ]);
    out.line("used_memory_vm_total_human", &"0B");
    out.zeros(&["used_memory_functions", "used_memory_scripts"]);
    out.line("used_memory_scripts_human", &"0B");
    out.line("maxmemory", &maxmemory);
    out.line("maxmemory_human", &human(maxmemory));
    out.line("maxmemory_policy", &setting(shared, "maxmemory-policy"));
    for (ratio, bytes) in [
        ("allocator_frag_ratio", "allocator_frag_bytes"),
        ("allocator_rss_ratio", "allocator_rss_bytes"),
        ("rss_overhead_ratio", "rss_overhead_bytes"),
    ] {
        out.line(ratio, &"1.00");
        out.line(bytes, &0);
    }
    let fragmentation = if m.used == 0 {
        0.0
    } else {
        m.rss as f64 / m.used as f64
    };
    out.line("mem_fragmentation_ratio", &format!("{fragmentation:.2}"));
    out.line("mem_fragmentation_bytes", &(m.rss as i64 - m.used as i64));
    out.zeros(&[
        "mem_not_counted_for_evict",
        "mem_replication_backlog",
        "mem_total_replication_buffers",
        "mem_clients_slaves",
        "mem_clients_normal",
        "mem_cluster_links",
        "mem_aof_buffer",
    ]);
    out.line("mem_allocator", &"libc");
    out.zeros(&[
        "active_defrag_running",
        "lazyfree_pending_objects",
        "lazyfreed_objects",
    ]);
    out.line("pool_bytes", &stats.pool_bytes);
    out.line("pool_bytes_max", &stats.pool_bytes_max);
    out.line("pool_used_bytes", &stats.used_bytes);
    out.line("pool_live_bytes", &stats.live_bytes);
}

fn persistence_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let (shared, stats) = (ctx.shared, ctx.stats);
    let st = &shared.stats;
    out.zeros(&[
        "loading",
        "async_loading",
        "current_cow_peak",
        "current_cow_size",
        "current_cow_size_age",
    ]);
    out.line("current_fork_perc", &"0.00");
    out.zeros(&[
        "current_save_keys_processed",
        "current_save_keys_total",
        "rdb_changes_since_last_save",
        "rdb_bgsave_in_progress",
    ]);
    out.line("rdb_last_save_time", &st.last_save.load(Ordering::Relaxed));
    out.line("rdb_last_bgsave_status", &"ok");
    out.line("rdb_last_bgsave_time_sec", &-1);
    out.line("rdb_current_bgsave_time_sec", &-1);
    out.line("rdb_saves", &st.saves.load(Ordering::Relaxed));
    out.zeros(&[
        "rdb_last_cow_size",
        "rdb_last_load_keys_expired",
        "rdb_last_load_keys_loaded",
        "aof_enabled",
        "aof_rewrite_in_progress",
        "aof_rewrite_scheduled",
    ]);
    out.line("aof_last_rewrite_time_sec", &-1);
    out.line("aof_current_rewrite_time_sec", &-1);
    out.line("aof_last_bgrewrite_status", &"ok");
    out.line("aof_rewrites", &st.aof_rewrites.load(Ordering::Relaxed));
    out.line("aof_rewrites_consecutive_failures", &0);
    out.line("aof_last_write_status", &"ok");
    out.zeros(&[
        "aof_last_cow_size",
        "module_fork_in_progress",
        "module_fork_last_cow_size",
    ]);
    out.line("durability", &stats.durability.name());
    out.line("durability_survives", &stats.durability.survives());
    out.line("every_write_durable_on_reply", &1);
    if let Some(log) = &stats.log {
        // The disk domain's write-ahead log: syncs per write =
        // log_syncs delta / writes, bytes per write likewise.
        out.line("log_capacity_bytes", &log.capacity);
        out.line("log_used_bytes", &log.used);
        out.line("log_appended_bytes", &log.appended);
        out.line("log_syncs", &log.syncs);
        out.line("log_checkpoints", &log.checkpoints);
        out.line("log_replayed_bytes", &log.replayed.bytes);
        out.line("log_replay_micros", &(log.replayed.nanos / 1000));
    }
    out.line("pool", &shared.config.pool.display());
    out.line("pool_rebuild_done", &(stats.rebuild_done as u8));
    out.line("ordered_index", &(stats.ordered_index as u8));
    if stats.ordered_index {
        out.line("ordered_nodes", &stats.ordered_nodes);
        out.line("ordered_walk_done", &(stats.ordered_walk_done as u8));
    }
    // Persistent-memory traffic of the server process since it started
    // (every store, flush and fence of the engine; fences per write =
    // pmem_fences delta / writes).
    let pm = persimmon::pmem::process_counters();
    out.line("pmem_fences", &pm.fences);
    out.line("pmem_flushes", &pm.flushes);
    out.line("pmem_bytes_written", &pm.bytes_written);
    out.line("pmem_nt_bytes_written", &pm.nt_bytes_written);
    out.line("point_index", &stats.point_index.name());
    out.line("point_index_ready", &(stats.point_index_ready as u8));
    out.line("dram_index_bytes", &stats.dram_index_bytes);
    let reclaimed = |n: &std::sync::atomic::AtomicU64| n.load(Ordering::Relaxed);
    out.line(
        "collections_pages_reclaimed",
        &reclaimed(&persimmon_types::coll::reclaim::PAGES_RECLAIMED),
    );
    out.line(
        "collections_trees_reclaimed",
        &reclaimed(&persimmon_types::coll::reclaim::TREES_RECLAIMED),
    );
}

/// The SSD tier and its ACS read cache (Persimmon's own section).
fn tier_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let stats = ctx.stats;
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

fn stats_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let (st, stats) = (&ctx.shared.stats, ctx.stats);
    let n = |c: &std::sync::atomic::AtomicU64| c.load(Ordering::Relaxed);
    out.line(
        "total_connections_received",
        &n(&st.total_connections_received),
    );
    out.line("total_commands_processed", &n(&st.total_commands_processed));
    out.line("instantaneous_ops_per_sec", &0);
    out.line("total_net_input_bytes", &n(&st.net_input_bytes));
    out.line("total_net_output_bytes", &n(&st.net_output_bytes));
    out.zeros(&["total_net_repl_input_bytes", "total_net_repl_output_bytes"]);
    for key in [
        "instantaneous_input_kbps",
        "instantaneous_output_kbps",
        "instantaneous_input_repl_kbps",
        "instantaneous_output_repl_kbps",
    ] {
        out.line(key, &"0.00");
    }
    out.line("rejected_connections", &n(&st.rejected_connections));
    let syncs = &ctx.shared.repl.syncs;
    out.line(
        "sync_full",
        &syncs.full.load(std::sync::atomic::Ordering::Relaxed),
    );
    out.line(
        "sync_partial_ok",
        &syncs.partial_ok.load(std::sync::atomic::Ordering::Relaxed),
    );
    out.line(
        "sync_partial_err",
        &syncs.partial_err.load(std::sync::atomic::Ordering::Relaxed),
    );
    out.line("expired_keys", &stats.keys_expired);
    out.line("expired_stale_perc", &"0.00");
    out.zeros(&[
        "expired_time_cap_reached_count",
        "expire_cycle_cpu_milliseconds",
        "evicted_keys",
        "evicted_clients",
        "total_eviction_exceeded_time",
        "current_eviction_exceeded_time",
    ]);
    out.line("keyspace_hits", &n(&st.keyspace_hits));
    out.line("keyspace_misses", &n(&st.keyspace_misses));
    out.line("pubsub_channels", &ctx.shared.pubsub.numchannels());
    out.line("pubsub_patterns", &ctx.shared.pubsub.numpat());
    out.zeros(&[
        "pubsubshard_channels",
        "latest_fork_usec",
        "total_forks",
        "migrate_cached_sockets",
        "slave_expires_tracked_keys",
        "active_defrag_hits",
        "active_defrag_misses",
        "active_defrag_key_hits",
        "active_defrag_key_misses",
        "total_active_defrag_time",
        "current_active_defrag_time",
        "tracking_total_keys",
        "tracking_total_items",
        "tracking_total_prefixes",
        "unexpected_error_replies",
    ]);
    out.line("total_error_replies", &n(&st.total_error_replies));
    out.line("dump_payload_sanitizations", &0);
    out.line("total_reads_processed", &n(&st.reads_processed));
    out.line("total_writes_processed", &n(&st.writes_processed));
    // Persimmon's own: pipelines' runs of plain writes committed as one
    // grouped engine write (group commit), and the commands they held.
    out.line("group_commit_runs", &n(&st.group_commit_runs));
    out.line("group_commit_commands", &n(&st.group_commit_commands));
    out.line("unit_runs", &n(&st.unit_runs));
    out.line("unit_run_commands", &n(&st.unit_run_commands));
    out.line("combined_units", &n(&st.combined_units));
    out.line("combined_runs", &n(&st.combined_runs));
    out.zeros(&[
        "io_threaded_reads_processed",
        "io_threaded_writes_processed",
        "reply_buffer_shrinks",
        "reply_buffer_expands",
    ]);
    out.line("protocol_errors", &n(&st.protocol_errors));
    out.line(
        "client_query_buffer_limit_disconnections",
        &n(&st.query_buffer_limit_disconnections),
    );
    out.line(
        "client_output_buffer_limit_disconnections",
        &n(&st.output_buffer_limit_disconnections),
    );
    out.line("eliminated_puts", &stats.eliminated_puts);
    out.line("index_splits", &stats.index_splits);
    out.line("cleaned_segments", &stats.cleaned_segments);
}

fn replication_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    for (key, value) in crate::repl::info::lines(ctx.shared) {
        out.line(&key, &value);
    }
}

/// CPU seconds of `/proc/<path>/stat` (user, system, children's user,
/// children's system), as `seconds.micros`.
fn cpu_times(path: &str) -> [String; 4] {
    let hz = rustix::param::clock_ticks_per_second().max(1);
    let fields: Vec<u64> = std::fs::read_to_string(path)
        .ok()
        .and_then(|t| {
            let after = &t[t.rfind(')')? + 1..];
            Some(
                after
                    .split_whitespace()
                    .map(|f| f.parse().unwrap_or(0))
                    .collect(),
            )
        })
        .unwrap_or_default();
    // After the name: state is field 0, utime 11, stime 12, cutime 13,
    // cstime 14.
    [11, 12, 13, 14].map(|i| {
        let ticks = fields.get(i).copied().unwrap_or(0);
        format!("{}.{:06}", ticks / hz, (ticks % hz) * 1_000_000 / hz)
    })
}

fn cpu_section(out: &mut Lines<'_>, _ctx: &Ctx<'_>) {
    let [user, sys, child_user, child_sys] = cpu_times("/proc/self/stat");
    out.line("used_cpu_sys", &sys);
    out.line("used_cpu_user", &user);
    out.line("used_cpu_sys_children", &child_sys);
    out.line("used_cpu_user_children", &child_user);
    // Persimmon has no main thread: the thread that runs this INFO.
    let [user, sys, ..] = cpu_times("/proc/thread-self/stat");
    out.line("used_cpu_sys_main_thread", &sys);
    out.line("used_cpu_user_main_thread", &user);
}

/// Redis's rule for names in INFO: `#`, `:`, CR and LF become `_`.
fn safe(name: &str) -> String {
    name.replace(['#', ':', '\r', '\n'], "_")
}

fn commandstats_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let counts = ctx.shared.command_stats.commands();
    for (spec, c) in ctx.commands.iter().zip(&counts) {
        if c.is_zero() {
            continue;
        }
        let usec = c.usec();
        let per_call = if c.calls == 0 {
            0.0
        } else {
            usec / c.calls as f64
        };
        let usec = usec.round() as u64;
        out.line(
            &format!("cmdstat_{}", safe(spec.name)),
            &format_args!(
                "calls={},usec={usec},usec_per_call={per_call:.2},rejected_calls={},failed_calls={}",
                c.calls, c.rejected, c.failed
            ),
        );
    }
}

/// Each command's latency percentiles (`latency-tracking-info-percentiles`)
/// from its histogram (`cmdstats.rs`): the upper bound in microseconds of
/// the power-of-two bucket the percentile falls in. Nothing while
/// `latency-tracking` is `no`.
fn latencystats_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    let settings = &ctx.shared.settings;
    if settings.value("latency-tracking").as_deref() != Some(b"yes") {
        return;
    }
    let wanted = settings
        .value("latency-tracking-info-percentiles")
        .unwrap_or_default();
    let wanted: Vec<f64> = String::from_utf8_lossy(&wanted)
        .split_whitespace()
        .filter_map(|p| p.parse().ok())
        .collect();
    let hists = ctx.shared.command_stats.histograms();
    for (spec, h) in ctx.commands.iter().zip(&hists) {
        let total: u64 = h.iter().sum();
        if total == 0 {
            continue;
        }
        let values: Vec<String> = wanted
            .iter()
            .map(|p| format!("p{p}={:.3}", percentile(h, total, *p)))
            .collect();
        out.line(
            &format!("latency_percentiles_usec_{}", safe(spec.name)),
            &values.join(","),
        );
    }
}

/// The upper bound (µs) of the bucket holding percentile `p` of `total`
/// calls.
fn percentile(h: &crate::cmdstats::Histogram, total: u64, p: f64) -> f64 {
    let rank = ((p / 100.0) * total as f64).ceil().max(1.0) as u64;
    let mut seen = 0;
    for (bucket, n) in h.iter().enumerate() {
        seen += n;
        if seen >= rank {
            return (1u64 << bucket) as f64;
        }
    }
    (1u64 << (h.len() - 1)) as f64
}

fn errorstats_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    for (code, count) in ctx.shared.command_stats.errors() {
        out.line(
            &format!("errorstat_{}", safe(&code)),
            &format_args!("count={count}"),
        );
    }
}

/// Like Redis, no line for a database without keys.
fn keyspace_section(out: &mut Lines<'_>, ctx: &Ctx<'_>) {
    for &(db, keys, expires) in ctx.keyspace {
        out.line(
            &format!("db{db}"),
            &format_args!("keys={keys},expires={expires},avg_ttl=0"),
        );
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn names(want: [bool; SECTIONS.len()]) -> Vec<&'static str> {
        SECTIONS
            .iter()
            .zip(want)
            .filter(|(_, w)| *w)
            .map(|(s, _)| s.0)
            .collect()
    }

    #[test]
    fn sections_are_chosen_as_redis_chooses_them() {
        let default = names(wanted(&[]));
        assert!(!default.contains(&"commandstats"));
        assert!(!default.contains(&"latencystats"));
        assert!(default.contains(&"errorstats") && default.contains(&"tier"));
        assert_eq!(names(wanted(&[b"default".to_vec()])), default);
        assert_eq!(names(wanted(&[b"all".to_vec()])).len(), SECTIONS.len());
        assert_eq!(
            names(wanted(&[b"everything".to_vec()])).len(),
            SECTIONS.len()
        );
        assert_eq!(
            names(wanted(&[
                b"cpu".to_vec(),
                b"commandstats".to_vec(),
                b"cpu".to_vec()
            ])),
            ["cpu", "commandstats"]
        );
        assert_eq!(names(wanted(&[b"module_list".to_vec()])), ["modules"]);
        assert!(names(wanted(&[b"sentinel".to_vec()])).is_empty());
    }

    #[test]
    fn human_sizes_follow_redis() {
        assert_eq!(human(0), "0B");
        assert_eq!(human(1023), "1023B");
        assert_eq!(human(1536), "1.50K");
        assert_eq!(human(3 << 20), "3.00M");
        assert_eq!(human(5 << 30), "5.00G");
    }

    #[test]
    fn cpu_times_read_this_process() {
        let [user, sys, ..] = cpu_times("/proc/self/stat");
        for t in [user, sys] {
            let (secs, micros) = t.split_once('.').unwrap();
            assert!(secs.parse::<u64>().is_ok() && micros.len() == 6, "{t}");
        }
    }
}
