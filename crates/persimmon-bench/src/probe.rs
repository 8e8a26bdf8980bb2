//! `--probe`: what the hardware allows, measured on the pools' file system.
//!
//! - **Dependent random-load latency.** A file of the pool's size in
//!   `--pool-dir`, mapped shared (as the engine maps its pool), holds a
//!   random cyclic permutation of its cache lines: line `i` stores the
//!   offset of the next line. Following the chain makes every load depend
//!   on the previous one and land on a random line (and, with 4 KiB pages,
//!   usually a random page): the cost of one miss. A GET needs at least two
//!   of them in sequence (the bucket, then the record), so `2 ×` this is the
//!   floor of a GET's latency, and its inverse the most GETs per second a
//!   thread can do.
//! - **Non-temporal write bandwidth.** Streaming stores over the whole
//!   mapping, fenced, by one thread and by one thread per core.
//!
//! The mapping and the streaming stores are the crate's unsafe code, in
//! [`crate::raw`]; this module is safe.

use std::fs::{File, OpenOptions};
use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use rand::rngs::SmallRng;
use rand::{Rng, SeedableRng};

use crate::error::{Error, Result};
use crate::raw::{map_file, stream_fill, STREAMING_STORES};
use crate::record::ProbeRecord;

const LINE: usize = 64;
const PAGE: u64 = 4096;
/// Smallest mapping probed.
pub const MIN_PROBE_BYTES: u64 = 1 << 20;
/// How long each measurement runs at least.
const MEASURE_FOR: Duration = Duration::from_millis(1000);

/// Removes the probe's file when dropped.
struct TempFile(PathBuf);

impl Drop for TempFile {
    fn drop(&mut self) {
        let _ = std::fs::remove_file(&self.0);
    }
}

/// Stores a random cyclic permutation of the mapping's lines: line `i`
/// holds the byte offset of its successor (Sattolo's algorithm gives one
/// cycle through every line).
fn build_chain(map: &mut [u8], seed: u64) {
    let lines = map.len() / LINE;
    let mut next: Vec<u32> = (0..lines as u32).collect();
    let mut rng = SmallRng::seed_from_u64(seed);
    for i in (1..lines).rev() {
        let j = rng.gen_range(0..i);
        next.swap(i, j);
    }
    for (i, n) in next.iter().enumerate() {
        let at = i * LINE;
        map[at..at + 8].copy_from_slice(&(u64::from(*n) * LINE as u64).to_le_bytes());
    }
}

/// Follows `steps` links from `start`; returns where it ended.
fn chase(map: &[u8], start: usize, steps: u64) -> usize {
    let mut at = start;
    for _ in 0..steps {
        let word: [u8; 8] = map[at..at + 8].try_into().expect("8 bytes");
        at = u64::from_le_bytes(word) as usize;
    }
    at
}

/// Nanoseconds per dependent load: the chain is followed in short blocks
/// for at least [`MEASURE_FOR`]; returns the 10th percentile and the median
/// of the blocks' times per load. The low percentile is the hardware's
/// figure even on a busy machine, where some blocks lose the CPU midway.
fn dependent_load_ns(map: &[u8]) -> (f64, f64) {
    let lines = (map.len() / LINE) as u64;
    // Warm the TLB and caches as a running engine would have them.
    let mut at = std::hint::black_box(chase(map, 0, lines.min(1 << 20)));
    let block = 1u64 << 14;
    let mut per_load = Vec::new();
    let start = Instant::now();
    while start.elapsed() < MEASURE_FOR || per_load.len() < 64 {
        let t = Instant::now();
        at = chase(map, at, block);
        per_load.push(t.elapsed().as_nanos() as f64 / block as f64);
    }
    std::hint::black_box(at);
    (
        percentile(&mut per_load, 0.10),
        percentile(&mut per_load, 0.50),
    )
}

/// The `q` quantile of `xs` (sorts them).
fn percentile(xs: &mut [f64], q: f64) -> f64 {
    xs.sort_by(f64::total_cmp);
    xs[((xs.len() - 1) as f64 * q).round() as usize]
}

/// GB/s of streaming stores over all of `map` with `threads` threads: the
/// best of the passes made in [`MEASURE_FOR`] (at least 5).
fn nt_write_gbps(map: &mut [u8], threads: usize) -> f64 {
    let chunk = (map.len() / threads).div_ceil(PAGE as usize) * PAGE as usize;
    let (mut best, mut passes, start) = (0.0f64, 0u64, Instant::now());
    while start.elapsed() < MEASURE_FOR || passes < 5 {
        let pattern = 0x0101_0101_0101_0101u64.wrapping_mul(passes + 1);
        let t = Instant::now();
        std::thread::scope(|s| {
            for part in map.chunks_mut(chunk.max(PAGE as usize)) {
                s.spawn(move || stream_fill(part, pattern));
            }
        });
        best = best.max(map.len() as f64 / t.elapsed().as_secs_f64() / 1e9);
        passes += 1;
    }
    best
}

/// Runs the probe on a `bytes`-byte mapping in `dir`; `cores` threads for
/// the parallel bandwidth.
pub fn run(dir: &Path, bytes: u64, cores: usize) -> Result<ProbeRecord> {
    let bytes = (bytes.max(MIN_PROBE_BYTES) / PAGE) * PAGE;
    if bytes / LINE as u64 > u64::from(u32::MAX) {
        return Err(Error::usage(format!(
            "--probe-bytes {bytes} is too large (at most {} bytes)",
            u64::from(u32::MAX) * LINE as u64
        )));
    }
    std::fs::create_dir_all(dir).map_err(|e| Error::file("create", dir, e))?;
    let path = dir.join(format!("persimmon-probe.{}.map", std::process::id()));
    let file: File = OpenOptions::new()
        .read(true)
        .write(true)
        .create_new(true)
        .open(&path)
        .map_err(|e| Error::file("create", &path, e))?;
    let _remove = TempFile(path.clone());
    file.set_len(bytes)
        .map_err(|e| Error::file("size", &path, e))?;
    let mut map = map_file(&file).map_err(|e| Error::file("map", &path, e))?;
    // Fault every page in first (on tmpfs this allocates the memory).
    map.fill(0);

    let nt_1 = nt_write_gbps(&mut map, 1);
    let threads = cores.max(1);
    let nt_all = if threads > 1 {
        nt_write_gbps(&mut map, threads)
    } else {
        nt_1
    };

    build_chain(&mut map, 0x5EED);
    let (load_ns, load_ns_median) = dependent_load_ns(&map);
    drop(map);

    Ok(ProbeRecord {
        engine: "probe".into(),
        pool_dir: dir.display().to_string(),
        mapping_bytes: bytes,
        dependent_load_ns: load_ns,
        dependent_load_ns_median: load_ns_median,
        get_floor_ns: 2.0 * load_ns,
        get_bound_ops_per_sec_per_thread: 1e9 / (2.0 * load_ns),
        nt_write_gbps: nt_all.max(nt_1),
        nt_write_threads: if nt_all >= nt_1 { threads } else { 1 },
        nt_write_gbps_1thread: nt_1,
        nt_store: STREAMING_STORES.into(),
        cores,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles() {
        let mut xs = vec![5.0, 1.0, 4.0, 2.0, 3.0];
        assert_eq!(percentile(&mut xs, 0.0), 1.0);
        assert_eq!(percentile(&mut xs, 0.5), 3.0);
        assert_eq!(percentile(&mut xs, 1.0), 5.0);
    }

    #[test]
    fn the_chain_is_one_cycle_through_every_line() {
        let lines = 1000;
        let mut map = vec![0u8; lines * LINE];
        build_chain(&mut map, 9);
        let mut seen = vec![false; lines];
        let mut at = 0;
        for _ in 0..lines {
            assert_eq!(at % LINE, 0);
            assert!(!seen[at / LINE], "line {} visited twice", at / LINE);
            seen[at / LINE] = true;
            at = chase(&map, at, 1);
        }
        assert_eq!(at, 0, "back at the start after every line");
        assert!(seen.iter().all(|&s| s));
    }
}
