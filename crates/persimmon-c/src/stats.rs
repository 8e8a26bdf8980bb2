//! Figures about a db: the main counts as a struct, every figure of the
//! engine's `Stats::fields()` as JSON, and the consistency check.
//!
//! Invariants: the JSON names and order are exactly `Stats::fields()` (the
//! same as `persimmon stats --json`); stats take no lock and never wait.

use std::ffi::{c_char, c_int};

use engine::StatValue;

use crate::call::{guard, Failure};
use crate::db::Db;
use crate::raw;
use crate::status::Status;

/// The main figures of a db (`persimmon_stats_summary` in C); every figure is in
/// `persimmon_stats_json`.
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct StatsSummary {
    /// Keys (partial until `rebuild_done` after an open that followed a
    /// crash).
    pub keys: u64,
    /// Bytes of the pool file now, and the most it may grow to.
    pub pool_bytes: u64,
    pub pool_bytes_max: u64,
    /// Bytes in segments in use, and bytes of live records.
    pub used_bytes: u64,
    pub live_bytes: u64,
    pub segments_total: u64,
    pub segments_free: u64,
    /// Puts skipped by concurrent write elimination.
    pub eliminated_puts: u64,
    pub index_splits: u64,
    /// Segments and bytes the log cleaner has reclaimed.
    pub cleaned_segments: u64,
    pub cleaned_bytes: u64,
    /// Keys with a deadline not yet passed; keys expired so far.
    pub deadlines_pending: u64,
    pub keys_expired: u64,
    /// The pool keeps the ordered index.
    pub ordered_index: bool,
    /// The background rebuild after open has finished (`keys` is exact).
    pub rebuild_done: bool,
}

/// Fills `*stats` with the main figures of the db.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_stats(db: *const Db, stats: *mut StatsSummary) -> c_int {
    guard(|| {
        raw::required(stats, "stats")?;
        // SAFETY: db NULL or live, stats writable (contract).
        unsafe {
            let s = raw::handle(db, "db")?.engine.stats();
            raw::set(stats, summary(&s));
        }
        Ok(Status::PERSIMMON_OK)
    })
}

fn summary(s: &engine::Stats) -> StatsSummary {
    StatsSummary {
        keys: s.keys,
        pool_bytes: s.pool_bytes,
        pool_bytes_max: s.pool_bytes_max,
        used_bytes: s.used_bytes,
        live_bytes: s.live_bytes,
        segments_total: s.segments_total.into(),
        segments_free: s.segments_free.into(),
        eliminated_puts: s.eliminated_puts,
        index_splits: s.index_splits,
        cleaned_segments: s.cleaned_segments,
        cleaned_bytes: s.cleaned_bytes,
        deadlines_pending: s.deadlines_pending,
        keys_expired: s.keys_expired,
        ordered_index: s.ordered_index,
        rebuild_done: s.rebuild_done,
    }
}

/// Writes every figure of the db as one JSON object (the names of
/// `persimmon stats --json`; counts as numbers, flags as booleans, texts as
/// strings, absent figures as null), NUL-terminated, into `buf` of
/// `buf_len` bytes, and stores its length without the NUL in `*json_len`.
///
/// Returns `PERSIMMON_BUFFER_TOO_SMALL` when `buf_len < *json_len + 1` —
/// nothing is written then, and `*json_len` tells the size to allocate
/// (plus one; 4096 bytes is ample today). `buf` may be NULL with
/// `buf_len` 0 to ask for the length.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_stats_json(
    db: *const Db,
    buf: *mut c_char,
    buf_len: usize,
    json_len: *mut usize,
) -> c_int {
    guard(|| {
        raw::required(json_len, "json_len")?;
        if buf.is_null() && buf_len > 0 {
            return Err(Failure::invalid(format!(
                "buf is NULL but buf_len is {buf_len}"
            )));
        }
        // SAFETY: db NULL or live, json_len writable, buf writable for
        // buf_len bytes (contract).
        unsafe {
            let mut json = to_json(&raw::handle(db, "db")?.engine.stats()).into_bytes();
            raw::set(json_len, json.len());
            if buf_len < json.len() + 1 {
                let message = format!(
                    "stats JSON needs {} bytes with its NUL; the buffer holds {buf_len}",
                    json.len() + 1
                );
                return Err(Failure::new(Status::PERSIMMON_BUFFER_TOO_SMALL, message));
            }
            json.push(0);
            raw::copy_out(&json, buf.cast(), buf_len)?;
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// `Stats::fields()` as a JSON object, in their order.
fn to_json(stats: &engine::Stats) -> String {
    let members: Vec<String> = stats
        .fields()
        .into_iter()
        .map(|(name, value)| {
            let value = match value {
                StatValue::Count(n) => n.to_string(),
                StatValue::Flag(b) => b.to_string(),
                StatValue::Text(t) => serde_json::Value::String(t).to_string(),
                StatValue::Absent => "null".to_string(),
            };
            format!("{}:{value}", serde_json::Value::from(name))
        })
        .collect();
    format!("{{{}}}", members.join(","))
}

/// What `persimmon_check` found (`persimmon_check_report` in C).
#[repr(C)]
#[derive(Clone, Copy, Debug, Default)]
pub struct CheckSummary {
    pub keys: u64,
    pub index_segments: u64,
    pub log_segments: u64,
    pub live_bytes: u64,
    /// Ordered index: linked nodes, and nodes whose key the point index
    /// does not hold (left by a crash; unlinked in the background).
    pub ordered_nodes: u64,
    pub ordered_orphans: u64,
    /// SSD tier: extents read back and verified.
    pub ssd_extents: u64,
    /// Inconsistencies found (0: the pool is consistent).
    pub errors: u64,
}

/// Walks the whole pool and verifies it (every index entry, record
/// checksum, live-byte and key count). Fills `*report` (which may be NULL)
/// and returns `PERSIMMON_OK` when the pool is consistent, or
/// `PERSIMMON_CORRUPTION` when it found inconsistencies — then
/// `persimmon_errmsg()` lists the first ten and `report->errors` counts
/// them all.
///
/// Thread safety: any thread, concurrently with any call but close;
/// writers wait while it runs, readers do not.
#[no_mangle]
pub unsafe extern "C" fn persimmon_check(db: *const Db, report: *mut CheckSummary) -> c_int {
    guard(|| {
        // SAFETY: db NULL or live, report NULL or writable (contract).
        let r = unsafe { raw::handle(db, "db") }?.engine.check()?;
        let summary = CheckSummary {
            keys: r.keys,
            index_segments: r.index_segments.into(),
            log_segments: r.log_segments.into(),
            live_bytes: r.live_bytes,
            ordered_nodes: r.ordered_nodes,
            ordered_orphans: r.ordered_orphans,
            ssd_extents: r.ssd_extents,
            errors: r.errors.len() as u64,
        };
        // SAFETY: as above.
        unsafe { raw::set(report, summary) };
        if r.is_ok() {
            return Ok(Status::PERSIMMON_OK);
        }
        let first: Vec<&str> = r.errors.iter().take(10).map(String::as_str).collect();
        let message = format!(
            "check found {} inconsistencies: {}",
            r.errors.len(),
            first.join("; ")
        );
        Err(Failure::new(Status::PERSIMMON_CORRUPTION, message))
    })
}
