//! Helpers shared by the integration tests: where pools live and the small
//! pool geometry that makes index splits and pool growth happen quickly.
#![allow(dead_code)]

use persimmon::Options;

/// A fresh directory for pool files, on tmpfs (`/dev/shm`) when available:
/// on a regular disk the pool is in the disk domain and every call waits
/// for a sync of its log, which makes single-threaded tests slow (the disk
/// domain has tests of its own, `disk_domain.rs`).
pub fn pool_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("create a temporary directory")
}

/// Small pool: 4 MiB to start, 256 KiB segments, growing up to 1 GiB.
pub fn small_options() -> Options {
    Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 1 << 30,
        segment_bytes: 256 << 10,
        ..Options::default()
    }
}

/// FNV-1a, 64 bit: a dependency-free checksum for test values.
pub fn fnv1a(parts: &[&[u8]]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for p in parts {
        for &b in *p {
            h ^= b as u64;
            h = h.wrapping_mul(0x0000_0100_0000_01b3);
        }
        // Separate the parts so ("ab","c") and ("a","bc") differ.
        h ^= 0xff;
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

/// A checked-in pool fixture, `tests/fixtures/format-v{version}.pool`.
pub fn fixture(version: u32) -> std::path::PathBuf {
    std::path::PathBuf::from(env!("CARGO_MANIFEST_DIR"))
        .join(format!("tests/fixtures/format-v{version}.pool"))
}

/// A copy of a fixture in a fresh directory (opening a pool writes to it:
/// its open count and clean flag).
pub fn fixture_copy(version: u32) -> (tempfile::TempDir, std::path::PathBuf) {
    let dir = pool_dir();
    let copy = dir.path().join(format!("v{version}.pool"));
    std::fs::copy(fixture(version), &copy).expect("fixture present");
    (dir, copy)
}

/// The format version in a pool file's superblock (bytes 8..12).
pub fn format_version_on_file(path: &std::path::Path) -> u32 {
    let bytes = std::fs::read(path).expect("pool file readable");
    u32::from_le_bytes(bytes[8..12].try_into().unwrap())
}

/// Key number `k` of a model-based test's small key space: 0 is the empty
/// key, every fifth a long (100..) byte key, the rest short text keys.
pub fn key_bytes(k: u8) -> Vec<u8> {
    match k {
        0 => Vec::new(),
        k if k % 5 == 1 => (0..100 + k as usize).map(|i| (i as u8) ^ k).collect(),
        k => format!("key-{k}").into_bytes(),
    }
}

/// A value of `len` bytes that differs with `seed`.
pub fn value_bytes(len: usize, seed: u8) -> Vec<u8> {
    (0..len)
        .map(|i| seed.wrapping_add((i as u8).wrapping_mul(31)))
        .collect()
}

/// Cases per property test: `PROPTEST_CASES` when set, else `default`.
pub fn proptest_cases(default: u32) -> u32 {
    std::env::var("PROPTEST_CASES")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(default)
}

/// The geometry of the format fixtures: `segments` segments of 64 KiB (the
/// pool never grows), one lane, no cleaner, with or without the ordered
/// index.
pub fn fixture_geometry(segments: u64, ordered_index: bool) -> Options {
    let bytes = 4096 + segments * (64 << 10);
    Options {
        ordered_index,
        segment_bytes: 64 << 10,
        pool_bytes_initial: bytes,
        pool_bytes_max: bytes,
        cleaner: false,
        lanes: 1,
        ..Options::default()
    }
}

/// Runs the `#[ignore]`d test `name` of this test binary in a child process
/// with the environment variable `env` set to `pool` and its standard
/// output piped: the half of a kill -9 test that writes until killed.
pub fn spawn_child_test(name: &str, env: &str, pool: &std::path::Path) -> std::process::Child {
    std::process::Command::new(std::env::current_exe().unwrap())
        .args(["--ignored", "--exact", name, "--nocapture"])
        .env(env, pool)
        .stdout(std::process::Stdio::piped())
        .spawn()
        .unwrap()
}
