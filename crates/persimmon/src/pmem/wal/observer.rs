//! What the disk domain tells the crash simulator: every write to and sync
//! of its two files, the pool file and the log (a room of its own, so the
//! log and its record format both report without importing each other).
//!
//! Invariant: each event is reported before it is done (a write, a
//! resize) or after it returned (a sync), so the simulator never counts as
//! durable what the file system did not make durable.

/// What the disk domain writes to files, for the crash simulator: the
/// pool file (by the applier and by replay) and the log. Each event is
/// reported before it is done (a write) or after it returned (a sync).
pub trait DiskObserver: Send + Sync + std::fmt::Debug {
    /// `data` was written at `offset` of `file` (not durable yet).
    fn wrote(&self, file: DiskFile, offset: u64, data: &[u8]);
    /// Everything written to `file` before this is durable.
    fn synced(&self, file: DiskFile);
    /// `file` was extended to `len` bytes (zeros; the new length is not
    /// durable before the file's next sync).
    fn resized(&self, file: DiskFile, len: u64);
}

/// The two files of the disk domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DiskFile {
    Pool,
    Log,
}
