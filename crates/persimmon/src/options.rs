//! Options for opening or creating a pool.
//!
//! Fields marked *creation* are written into the superblock when the pool is
//! created and ignored afterwards; the others apply to this open only.

/// How persist points reach the persistence domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlushMode {
    /// Flush cache lines (`clwb` > `clflushopt` > `clflush`) and fence.
    #[default]
    Flush,
    /// The platform flushes CPU caches on power loss (eADR): skip the cache-line
    /// flushes, keep the fences that order stores.
    Eadr,
}

/// Options for [`crate::Db::open`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Create the pool when the file does not exist (default `true`).
    pub create: bool,
    /// *Creation*: initial size of the pool file in bytes (default 64 MiB).
    pub pool_bytes_initial: u64,
    /// Largest size the pool file may grow to, in bytes (default 64 GiB).
    /// Address space for this much is reserved at open; the file itself grows
    /// on demand in steps. `PoolFull` is returned only at this size.
    pub pool_bytes_max: u64,
    /// *Creation*: size of one segment in bytes (power of two, 256 KiB..=64 MiB;
    /// default 1 MiB).
    pub segment_bytes: u64,
    /// Number of log lanes (1..=255). Each lane appends to its own segment;
    /// threads are spread over lanes. Default: 4 × available cores, at most 64.
    pub lanes: usize,
    /// Flush mode (default [`FlushMode::Flush`]).
    pub flush_mode: FlushMode,
    /// Verify the CRC32C of every record a read returns (default `false`; a
    /// mismatch is returned as [`crate::Error::Corruption`]).
    pub verify_reads: bool,
}

impl Default for Options {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Options {
            create: true,
            pool_bytes_initial: 64 << 20,
            pool_bytes_max: 64 << 30,
            segment_bytes: 1 << 20,
            lanes: (cores * 4).clamp(1, 64),
            flush_mode: FlushMode::Flush,
            verify_reads: false,
        }
    }
}
