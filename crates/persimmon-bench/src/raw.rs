//! The only `unsafe` code of the crate: mapping a file for the probe,
//! non-temporal stores, and (feature `lmdb`) opening an LMDB environment,
//! which `heed` marks unsafe because it maps the database file.
//!
//! Everything here is a small wrapper with a safe signature; each `unsafe`
//! block says why it is sound. The rest of the crate denies `unsafe_code`.

#![allow(unsafe_code)]

use std::fs::File;
use std::io;

use memmap2::MmapMut;

/// Maps all of `file` read-write and shared.
///
/// The caller must have created `file` itself, in a private place, and must
/// keep it at its length while the map lives (the probe does both: the file
/// is its own, in a directory it made, and it only removes it after
/// dropping the map).
pub fn map_file(file: &File) -> io::Result<MmapMut> {
    // SAFETY: the mapping is undefined behaviour only if the file is
    // truncated or changed behind our back while mapped. The file is created
    // by this process under a unique name and nobody else writes or resizes
    // it; we never call set_len on it while the map exists.
    unsafe { MmapMut::map_mut(file) }
}

/// Fills `dst` with copies of `word` using non-temporal (streaming) stores
/// where the CPU has them, then fences so they have left the CPU when this
/// returns. Unaligned head and tail bytes are written with regular stores.
#[cfg(target_arch = "x86_64")]
pub fn stream_fill(dst: &mut [u8], word: u64) {
    use std::arch::x86_64::{__m128i, _mm_set1_epi64x, _mm_sfence, _mm_stream_si128};

    // SAFETY: `__m128i` has no invalid bit patterns, so viewing the aligned
    // middle of a byte slice as `__m128i` values is sound; align_to_mut
    // splits off the unaligned head and tail for us.
    let (head, body, tail) = unsafe { dst.align_to_mut::<__m128i>() };
    head.fill(word as u8);
    tail.fill(word as u8);
    // SAFETY: SSE2 is part of the x86_64 baseline, so the intrinsic's
    // target feature is always present; it only builds a register value.
    let pattern = unsafe { _mm_set1_epi64x(word as i64) };
    for slot in body.iter_mut() {
        // SAFETY: `slot` is a valid, 16-byte aligned, exclusively borrowed
        // `__m128i` (from align_to_mut); SSE2 is part of the x86_64 baseline.
        unsafe { _mm_stream_si128(slot, pattern) };
    }
    // Streaming stores are weakly ordered: fence so they are globally
    // visible (and, on PM, in the persistence domain) before returning.
    // SAFETY: SSE is part of the x86_64 baseline; a fence has no operands.
    unsafe { _mm_sfence() };
}

/// Without streaming stores: regular stores.
#[cfg(not(target_arch = "x86_64"))]
pub fn stream_fill(dst: &mut [u8], word: u64) {
    for chunk in dst.chunks_mut(8) {
        chunk.copy_from_slice(&word.to_le_bytes()[..chunk.len()]);
    }
}

/// Whether [`stream_fill`] uses non-temporal stores on this target.
pub const STREAMING_STORES: &str = if cfg!(target_arch = "x86_64") {
    "SSE2 movntdq (16-byte non-temporal stores) + sfence"
} else {
    "regular stores (no non-temporal stores on this target)"
};

/// Opens (creating it) the LMDB environment in `dir` with default flags.
#[cfg(feature = "lmdb")]
pub fn open_lmdb_env(
    dir: &std::path::Path,
    map_bytes: usize,
    max_readers: u32,
) -> heed::Result<heed::Env> {
    let mut options = heed::EnvOpenOptions::new();
    options
        .map_size(map_bytes)
        .max_readers(max_readers)
        .max_dbs(1);
    // No readahead (MDB_NORDAHEAD): LMDB's advice for random reads of a
    // data set larger than memory; with readahead, each 16 KiB read under a
    // memory limit pulled megabytes into the page cache.
    // SAFETY: NO_READ_AHEAD changes only the madvise LMDB issues on its map;
    // heed's conditions for `flags` (no flag that changes the file format
    // or its locking) hold.
    unsafe {
        options.flags(heed::EnvFlags::NO_READ_AHEAD);
    }
    // SAFETY: heed's conditions for `open`: the environment's files are not
    // modified outside LMDB while open and the lock file is not broken. The
    // directory is fresh and private to this benchmark run, opened once, and
    // only removed after the environment is dropped.
    unsafe { options.open(dir) }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stream_fill_writes_every_byte_at_any_alignment() {
        let mut buf = vec![0u8; 1000];
        stream_fill(&mut buf[3..997], 0x4242_4242_4242_4242);
        assert!(buf[3..997].iter().all(|&b| b == 0x42));
        assert_eq!((buf[2], buf[997]), (0, 0));
    }

    #[test]
    fn mapped_file_is_readable_and_writable() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("m");
        let file = std::fs::OpenOptions::new()
            .read(true)
            .write(true)
            .create(true)
            .truncate(true)
            .open(&path)
            .unwrap();
        file.set_len(8192).unwrap();
        let mut map = map_file(&file).unwrap();
        map[100] = 7;
        stream_fill(&mut map[4096..], 0x0101_0101_0101_0101);
        map.flush().unwrap();
        drop(map);
        let bytes = std::fs::read(&path).unwrap();
        assert_eq!(bytes[100], 7);
        assert!(bytes[4096..].iter().all(|&b| b == 1));
    }
}
