//! Errors returned by the engine.
//!
//! Every failure a caller can cause or meet (bad input, damaged files, a full
//! pool, a pool held by another process) is a variant here with a message that
//! names the limit or the file; the engine never panics on them.

use std::path::PathBuf;

/// Result alias used throughout the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can go wrong in Persimmon.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// An operating-system call failed.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
    /// The file exists but does not start with the pool magic.
    #[error("{path}: not a Persimmon pool (bad magic)")]
    NotAPool { path: PathBuf },
    /// The file is shorter than its superblock says, or cut mid-segment.
    #[error("{path}: pool file is truncated ({detail})")]
    Truncated { path: PathBuf, detail: String },
    /// The superblock checksum or one of its fields is wrong.
    #[error("{path}: superblock is damaged ({detail})")]
    CorruptSuperblock { path: PathBuf, detail: String },
    /// The pool was written by a newer (or unknown) format version.
    #[error("{path}: pool format version {found} is not supported (this build reads versions 1 to {supported})")]
    UnsupportedVersion {
        path: PathBuf,
        found: u32,
        supported: u32,
    },
    /// Another process (or another `Db` in this process) has the pool open.
    #[error("{path}: pool is already open (another process, or another Db in this one, holds its file lock)")]
    Locked { path: PathBuf },
    /// The pool file does not exist and `Options::create` is false.
    #[error("{path}: pool does not exist")]
    NotFound { path: PathBuf },
    /// A key longer than [`crate::MAX_KEY_BYTES`].
    #[error("key is {len} bytes; the limit is {max} bytes")]
    KeyTooLarge { len: usize, max: usize },
    /// A value longer than [`crate::MAX_VALUE_BYTES`].
    #[error("value is {len} bytes; the limit is {max} bytes")]
    ValueTooLarge { len: usize, max: usize },
    /// No free space is left and the pool is at its configured maximum size.
    #[error("pool is full: {pool_bytes_max} bytes (the configured maximum) are in use; delete keys or reopen with a larger pool_bytes_max")]
    PoolFull { pool_bytes_max: u64 },
    /// The point index cannot take another key (directory at its maximum depth).
    #[error("point index is full: {detail}")]
    IndexFull { detail: String },
    /// Damaged data was found on the media (CRC mismatch, impossible offset).
    #[error("corruption at pool offset {offset:#x}: {detail}")]
    Corruption { offset: u64, detail: String },
    /// The shadow tags of a persistent dancing variable form a pattern no
    /// crash can leave (see [`crate::pdv`]): its shadows are damaged.
    #[error("{location}: PDV shadow tags [{pattern}] cannot be left by any crash ({reason}); the shadows are damaged")]
    PdvInvalidPattern {
        location: String,
        pattern: String,
        reason: String,
    },
    /// A value wider than a persistent dancing variable's 62 value bits.
    #[error("value {value} does not fit a persistent dancing variable (at most {max} = 2^62 - 1)")]
    PdvValueTooLarge { value: u64, max: u64 },
    /// A key deadline past the latest one accepted (the end of year 9999).
    #[error("deadline {deadline_ms} ms of Unix time is too far; the latest accepted is {max_ms} (9999-12-31T23:59:59.999Z)")]
    DeadlineTooFar { deadline_ms: u64, max_ms: u64 },
    /// A write batch over its limits (operations, or bytes of keys and values).
    #[error("batch has {len} {what}; the limit is {max}")]
    BatchTooLarge {
        what: &'static str,
        len: usize,
        max: usize,
    },
    /// A transaction met conflicting writes on every attempt.
    #[error(
        "transaction conflicted with other writers on all {attempts} attempts; nothing was written"
    )]
    TransactionConflict { attempts: u32 },
    /// The SSD tier's data directory cannot be used: missing, not this
    /// pool's, not the one the pool names, or unwritable.
    #[error("data directory {path}: {detail}")]
    DataDir { path: PathBuf, detail: String },
    /// The file system holding the data directory is full: nothing of the
    /// write that met it became visible.
    #[error("data directory {path} is full (ENOSPC); the write was not applied — free space there or delete keys")]
    DataDirFull { path: PathBuf },
    /// A value's extent on the SSD tier failed its checksum or is out of
    /// its file's bounds; other keys are unaffected.
    #[error("SSD extent damaged: data file {file}, offset {offset:#x}: {detail}")]
    ExtentCorruption {
        file: u32,
        offset: u64,
        detail: String,
    },
    /// Options that cannot be used.
    #[error("invalid options: {0}")]
    InvalidOptions(String),
    /// An ordered read (range, prefix, first, last) on a pool created
    /// without the ordered index.
    #[error("{path}: the pool has no ordered index (it is chosen when the pool is created: Options::ordered_index, or --ordered-index)")]
    NoOrderedIndex { path: PathBuf },
}

impl Error {
    pub(crate) fn io(context: impl Into<String>, source: std::io::Error) -> Self {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    pub(crate) fn corruption(offset: u64, detail: impl Into<String>) -> Self {
        Error::Corruption {
            offset,
            detail: detail.into(),
        }
    }
}
