//! The MEMORY subcommands, one handler each: USAGE, STATS, DOCTOR, PURGE,
//! MALLOC-STATS, HELP.
//!
//! Invariants:
//! - MEMORY USAGE is what the key takes in the pool: its record, that is
//!   the record header, the key and the stored value (type tag included),
//!   rounded up to the record alignment. A value on the SSD tier counts at
//!   its full size. There is nothing to sample (a value is one record), so
//!   SAMPLES is checked and has no effect.
//! - The other figures are those of `INFO memory` (`info::memory_figures`).

use persimmon::format::RECORD_HEADER_BYTES;
use persimmon_resp::Args;
use persimmon_types::Error;

use super::info::memory_figures;
use crate::session::{blocking, int_arg, is, syntax, Session};

/// Records in the pool start at multiples of this.
const RECORD_ALIGN: u64 = 8;

const MEMORY_HELP: [&str; 13] = [
    "MEMORY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "USAGE <key> [SAMPLES <count>]",
    "    Bytes the key's record takes in the pool (header, key and value).",
    "STATS",
    "    The memory figures of INFO memory, as a map.",
    "DOCTOR",
    "    A short report on the memory the server uses.",
    "PURGE",
    "    Nothing to do (the pool is not an allocator's heap); replies OK.",
    "MALLOC-STATS",
    "    Not available for the system allocator.",
    "HELP",
    "    Print this help.",
];

/// MEMORY PURGE: nothing to purge.
pub fn purge(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.ok();
    Ok(())
}

/// MEMORY MALLOC-STATS
pub fn malloc_stats(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out
        .verbatim(b"Stats not supported for the current allocator");
    Ok(())
}

/// MEMORY HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&MEMORY_HELP);
    Ok(())
}

/// MEMORY USAGE key [SAMPLES count]: the record's bytes, or nil.
pub fn usage(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut i = 3;
    while i < a.len() {
        if is(a.get(i), "SAMPLES") && i + 1 < a.len() {
            if int_arg(a.get(i + 1))? < 0 {
                return Err(syntax());
            }
            i += 2;
        } else {
            return Err(syntax());
        }
    }
    let key = s.store.engine_key(a.get(2)).into_owned();
    // The stored value is the body plus its one-byte type tag.
    let value_len = s.store.get(a.get(2), |v| v.encoded_len())?;
    match value_len {
        Some(len) => s.out.int(record_bytes(key.len(), len) as i64),
        None => s.out.null(),
    }
    Ok(())
}

/// Bytes a record with this key and value takes in the pool.
fn record_bytes(key_len: usize, value_len: usize) -> u64 {
    (RECORD_HEADER_BYTES as u64 + key_len as u64 + value_len as u64).next_multiple_of(RECORD_ALIGN)
}

/// MEMORY STATS: Redis's names for the figures Persimmon has.
pub fn stats(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let shared = s.shared.clone();
    let (stats, keys) = blocking(|| (shared.keyspace.db.stats(), shared.keyspace.db.len()));
    let m = memory_figures(&shared, &stats);
    let per_key = m.dataset.checked_div(keys).unwrap_or(0);
    let ints: [(&str, u64); 8] = [
        ("peak.allocated", m.peak),
        ("total.allocated", m.used),
        ("startup.allocated", 0),
        ("overhead.total", m.used - m.dataset),
        ("keys.count", keys),
        ("keys.bytes-per-key", per_key),
        ("dataset.bytes", m.dataset),
        ("rss", m.rss),
    ];
    let dataset_percent = if m.used == 0 {
        0.0
    } else {
        m.dataset as f64 * 100.0 / m.used as f64
    };
    let out = &mut s.out;
    out.map(ints.len() + 3);
    for (name, n) in ints {
        out.bulk(name.as_bytes());
        out.int(n as i64);
    }
    out.bulk(b"dataset.percentage");
    out.double(dataset_percent, &format!("{dataset_percent}"));
    out.bulk(b"pool.bytes");
    out.int(stats.pool_bytes as i64);
    out.bulk(b"pool.used-bytes");
    out.int(stats.used_bytes as i64);
    Ok(())
}

/// MEMORY DOCTOR: a few sentences on the figures.
pub fn doctor(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let shared = s.shared.clone();
    let stats = blocking(|| shared.keyspace.db.stats());
    let m = memory_figures(&shared, &stats);
    let text = format!(
        "The data takes {} bytes ({} in live records) in a pool of {} bytes that may grow to {} \
         bytes; the process's resident memory is {} bytes. Space of deleted and overwritten \
         records is reclaimed by the log cleaner in the background.",
        m.used, m.dataset, stats.pool_bytes, stats.pool_bytes_max, m.rss
    );
    s.out.verbatim(text.as_bytes());
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn records_are_header_key_and_value_aligned() {
        assert_eq!(record_bytes(0, 0), RECORD_HEADER_BYTES as u64);
        assert_eq!(
            record_bytes(3, 4),
            (RECORD_HEADER_BYTES as u64 + 7).next_multiple_of(8)
        );
        assert_eq!(record_bytes(3, 4) % RECORD_ALIGN, 0);
    }
}
