//! How an extent is named: its data file number and aligned byte offset,
//! packed into one 64-bit key (the ACS cache's key).
//!
//! Invariants:
//! - Extents start at multiples of `EXTENT_ALIGN` and are that long a
//!   multiple, so an offset needs only its block number: 40 bits of 4 KiB
//!   blocks beside 24 bits of file number make `extent_key` one-to-one
//!   inside `MAX_FILES` and `MAX_FILE_OFFSET`.
//! - A key is never reused for other bytes while the pool is open
//!   (extents are not rewritten, file numbers only grow); the cache relies
//!   on it to never serve stale bytes, and the descriptor's limits rely on
//!   these bounds to refuse a damaged one.

/// Names one extent: data file number and the extent's byte offset in it
/// (a multiple of [`EXTENT_ALIGN`]). Extents are written once and never
/// rewritten in place, and file numbers are never reused while a pool is
/// open, so an extent key names the same bytes for as long as it exists.
pub type ExtentKey = u64;

/// Alignment of extents in data files (and of their lengths).
pub const EXTENT_ALIGN: u64 = 4096;

/// Data file numbers are below this (24 bits of an extent key).
pub const MAX_FILES: u32 = 1 << 24;
/// Extent offsets are below this (40 bits of 4 KiB blocks: 4 PiB).
pub const MAX_FILE_OFFSET: u64 = EXTENT_ALIGN << 40;

/// The cache key of the extent at `offset` in data file `file`: distinct
/// for every (file, offset) inside `MAX_FILES` and `MAX_FILE_OFFSET`.
pub fn extent_key(file: u32, offset: u64) -> ExtentKey {
    debug_assert!(offset.is_multiple_of(EXTENT_ALIGN));
    debug_assert!(file < MAX_FILES && offset < MAX_FILE_OFFSET);
    ((file as u64) << 40) | (offset / EXTENT_ALIGN)
}
