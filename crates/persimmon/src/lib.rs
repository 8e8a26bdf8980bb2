//! Persimmon: a crash-safe key-value store for persistent memory.
//!
//! ```no_run
//! use persimmon::{Db, Options};
//!
//! let db = Db::open("/dev/shm/example.pool", Options::default())?;
//! db.put(b"user:1", b"Ada")?;
//! assert_eq!(db.get(b"user:1")?.as_deref(), Some(&b"Ada"[..]));
//! db.delete(b"user:1")?;
//! # Ok::<(), persimmon::Error>(())
//! ```
//!
//! Layers, bottom up (each a module):
//! - [`pmem`]: maps the pool file and is the only code that writes into it
//!   (stores, flushes, fences, non-temporal copies); all `unsafe` lives there.
//! - `layout`: the on-media formats (superblock, segment header, record,
//!   bucket, slot), drawn byte by byte in `docs/design.md`.
//! - `pool`: segments, free space, growth; `log`: per-lane record append;
//!   `segment_scan`: what open learns from the segment headers;
//!   `scan_copy`: the copy of the segment-header scan kept beside the pool
//!   across a clean close, so that the next open reads no header;
//!   `dead_hints`: DRAM bits marking records whose key moved on, so the log
//!   cleaner passes them over without an index lookup.
//! - `index`: the MPKV hash index (directory, buckets, volatile lock table).
//! - `ordered`: the ordered index (persistent skiplist, MixStore), optional.
//! - [`tier`]: the SSD tier (MixStore's PM + SSD split): data files of
//!   value extents, group-commit syncs, the ACS read cache; optional.
//! - `db`: the [`Db`] API and its write protocol; batched point reads
//!   ([`Db::get_many_with`]) overlap the cache misses of many keys.
//! - [`size`]: byte sizes as people write and read them (`64M`, `1.5 GiB`),
//!   shared by the CLI, the server's config and the benchmark.
//! - [`pdv`]: persistent dancing variables, a hot persisted word spread over
//!   N shadow lines (its own file, on the pmem layer; not used by `db` yet).

// Unsafe code lives in the pmem layer only (mapping, raw pointers, flush,
// fence and non-temporal instructions); every block says why it is sound.
#![deny(unsafe_code)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

mod batch_table;
mod db;
mod dead_hints;
mod error;
mod index;
mod layout;
mod log;
mod options;
mod ordered;
pub mod pdv;
#[allow(unsafe_code)] // the one place for it; see the module header
pub mod pmem;
mod pool;
mod scan_copy;
mod segment_scan;
pub mod size;
pub mod tier;

pub use batch_table::BatchRecovery;
pub use db::{
    prefix_end, CheckReport, Db, Iter, Range, RangeKeys, StatValue, Stats, Transaction, Ttl,
    Update, Version, Versioned, WriteBatch, DEFAULT_TRANSACTION_ATTEMPTS, MAX_BATCH_BYTES,
    MAX_BATCH_OPS, MAX_DEADLINE_MS,
};
pub use error::{Error, Result};
pub use layout::{MAX_KEY_BYTES, MAX_VALUE_BYTES};
pub use options::{
    default_cache_bytes, Clock, Domain, FlushMode, ManualClock, Mechanisms, Options, OrderedLayout,
    PointIndex, DEFAULT_DISK_CHECKPOINT_INTERVAL, DEFAULT_DISK_LOG_BYTES, DEFAULT_TIER_THRESHOLD,
};
pub use pmem::wal::{DiskFile, DiskObserver, Durable, LogFigures, Replay};
pub use pmem::{defer_durability_waits, Durability, PersistObserver, PmemCounters};
pub use pool::replay_log_file as replay_log;
pub use tier::cache::Policy as CachePolicy;

/// On-media format constants, exposed for tools and fixture tests.
pub mod format {
    pub use crate::layout::{
        FORMAT_VERSION, MAGIC, RECORD_HEADER_BYTES, SB_CLEAN_STATE, SEGMENT_HEADER_BYTES,
        SUPERBLOCK_BYTES,
    };
}
