//! Helpers shared by the integration tests: where pools live and the small
//! pool geometry that makes index splits and pool growth happen quickly.
#![allow(dead_code)]

use persimmon::Options;

/// A fresh directory for pool files, on tmpfs (`/dev/shm`) when available:
/// on a regular disk the pool falls back to msync durability and every
/// fence becomes a system call, which makes the tests very slow.
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
