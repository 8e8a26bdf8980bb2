//! The hook through which the SSD tier reports its file-system traffic.
//!
//! A crash keeps only what a file system made durable, and for data files
//! that is decided by writes and syncs the engine issues itself, outside
//! the pool's mapping that `pmem` observes. So the crash simulator cannot
//! infer a tier's durable state: the tier tells it.
//!
//! Invariants:
//! - Each event is reported before the tier relies on it (`files` reports
//!   a write or a sync first, then does it), so the simulator never misses
//!   bytes a record could come to name.
//! - The trait is the tier's whole interface to the simulator: it names no
//!   other tier type, so the rooms that report events depend on it alone.

use std::fmt::Debug;

/// Watches the SSD tier's file system traffic: the crash simulator models
/// which bytes a crash keeps (written but unsynced data may be lost or torn).
pub trait SsdObserver: Send + Sync + Debug {
    /// Data file `file` was created: its name and (zero-filled,
    /// preallocated) size are durable; its header is written next, unsynced.
    fn created(&self, file: u32);
    /// The data directory of this pool (reported once, when the tier opens):
    /// where files named `NNNNNNNN.pdat` live.
    fn opened(&self, _dir: &std::path::Path) {}
    /// `data` was written at byte `offset` of data file `file` (not yet
    /// durable).
    fn wrote(&self, file: u32, offset: u64, data: &[u8]);
    /// Everything written to `file` so far is durable.
    fn synced(&self, file: u32);
    /// `file` was unlinked.
    fn removed(&self, file: u32);
}
