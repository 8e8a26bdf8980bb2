//! The SSD tier (MixStore's PM + SSD split): large values live as aligned
//! extents in data files on an ordinary file system; the pool keeps each
//! key, its extent's address, length and checksum, and the value's unaligned
//! tail. An ACS read cache in DRAM (`cache`) sits in front of the files.
//!
//! (Module contents are filled in by the tier's rooms; this header lists the
//! contract the engine, the crash simulator and the benchmark rely on.)

pub mod cache;

use std::fmt::Debug;

/// Watches the SSD tier's file system traffic: the crash simulator models
/// which bytes a crash keeps (written but unsynced data may be lost or torn).
pub trait SsdObserver: Send + Sync + Debug {
    /// Data file `file` was created (its header written, not yet synced).
    fn created(&self, file: u32);
    /// `data` was written at byte `offset` of data file `file` (not yet
    /// durable).
    fn wrote(&self, file: u32, offset: u64, data: &[u8]);
    /// Everything written to `file` so far is durable.
    fn synced(&self, file: u32);
    /// `file` was unlinked.
    fn removed(&self, file: u32);
}

/// Names one extent: data file number and the extent's byte offset in it
/// (a multiple of [`EXTENT_ALIGN`]). Extents are written once and never
/// rewritten in place, and file numbers are never reused while a pool is
/// open, so an extent key names the same bytes for as long as it exists.
pub type ExtentKey = u64;

/// Alignment of extents in data files (and of their lengths).
pub const EXTENT_ALIGN: u64 = 4096;

/// The cache key of the extent at `offset` in data file `file`.
pub fn extent_key(file: u32, offset: u64) -> ExtentKey {
    debug_assert!(offset.is_multiple_of(EXTENT_ALIGN));
    ((file as u64) << 40) | (offset / EXTENT_ALIGN)
}
