//! The contract every engine adapter implements: [`Store`], opened from an
//! [`OpenConfig`].
//!
//! Invariants: the fairness rules of the engines' overview (see
//! [`engines`](super)) hold for every implementation — a write is durable
//! when it returns, a read copies the value out, a read-modify-write is one
//! atomic step; a method an engine has no adapter for keeps its default
//! (an error or an empty answer), and the run never calls the erroring
//! ones on that engine.

use std::path::PathBuf;

use super::batch::Batch;
use super::figures::{Background, Space, TierFigures};
use crate::error::{Error, Result};

/// Where and how big to make an engine's store.
#[derive(Clone, Debug)]
pub struct OpenConfig {
    /// The engine's own directory (created empty by the caller): the pool
    /// file of a Persimmon engine, the whole store of a peer.
    pub dir: PathBuf,
    /// persimmon-tiered's data directory (created empty by the caller);
    /// `None`: `dir/data`. The other engines ignore it.
    pub data_dir: Option<PathBuf>,
    /// Initial pool size for Persimmon.
    pub pool_bytes_initial: u64,
    /// Largest pool size for Persimmon; at least LMDB's map size.
    pub pool_bytes_max: u64,
    /// Most threads that will use the store at once (LMDB reader slots).
    pub max_threads: usize,
    /// Pairs the load phase stores, and their sizes: LMDB's map is made
    /// large enough for them.
    pub pairs: u64,
    pub key_size: usize,
    pub value_size: usize,
    /// Values of at least this many bytes go to persimmon-tiered's SSD
    /// tier and to rocksdb-blob's blob files.
    pub tier_threshold: u64,
    /// DRAM cache bytes of the engines with one ([`EngineKind::has_cache`]);
    /// `None`: the engine's default.
    ///
    /// [`EngineKind::has_cache`]: super::kind::EngineKind::has_cache
    pub cache_bytes: Option<u64>,
    /// persimmon-tiered's cache policy; `None`: the engine's default.
    pub cache_policy: Option<::persimmon::CachePolicy>,
}

impl OpenConfig {
    /// A store in `dir` with small pools and the engines' defaults
    /// otherwise (tests, probes).
    pub fn new(dir: PathBuf) -> OpenConfig {
        OpenConfig {
            dir,
            data_dir: None,
            pool_bytes_initial: 16 << 20,
            pool_bytes_max: 1 << 30,
            max_threads: 4,
            pairs: 0,
            key_size: 8,
            value_size: 0,
            tier_threshold: ::persimmon::DEFAULT_TIER_THRESHOLD,
            cache_bytes: None,
            cache_policy: None,
        }
    }
}

/// One engine's store, shared by the worker threads.
pub trait Store: Send + Sync {
    /// How a write becomes durable, and the settings that matter for the
    /// comparison; printed before the results and kept in every record.
    fn durability(&self) -> String;

    /// Stores a batch of the load phase (may batch, need not sync each pair;
    /// not measured).
    fn load(&self, batch: &Batch) -> Result<()>;

    /// Called once after the load phase (e.g. flush and compact).
    fn finish_load(&self) -> Result<()> {
        Ok(())
    }

    /// Copies the value of `key` into `out`; false when `key` is absent.
    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Reads every key of `keys` (a batched read, `multiget:N`), copying
    /// each value found into `out` (which holds the last one afterwards);
    /// returns how many it found. The default reads them one by one.
    fn read_many(&self, keys: &[&[u8]], out: &mut Vec<u8>) -> Result<u64> {
        let mut found = 0;
        for key in keys {
            found += u64::from(self.read(key, out)?);
        }
        Ok(found)
    }

    /// Stores `value` under `key` (update or insert), durable on return.
    fn write(&self, key: &[u8], value: &[u8]) -> Result<()>;

    /// [`write`](Self::write) with a deadline (ms of Unix time) after which
    /// the key expires. Engines without expiry
    /// ([`EngineKind::has_expiry`]) keep this default, an error; the run
    /// never calls it on them.
    ///
    /// [`EngineKind::has_expiry`]: super::kind::EngineKind::has_expiry
    fn write_with_deadline(&self, key: &[u8], value: &[u8], deadline_ms: u64) -> Result<()> {
        let _ = (key, value, deadline_ms);
        Err(Error::usage("this engine's adapter has no key expiry"))
    }

    /// [`write`](Self::write), or [`write_with_deadline`](Self::write_with_deadline)
    /// when `deadline` is given.
    fn write_expiring(&self, key: &[u8], value: &[u8], deadline: Option<u64>) -> Result<()> {
        match deadline {
            Some(d) => self.write_with_deadline(key, value, d),
            None => self.write(key, value),
        }
    }

    /// Stores every pair of `batch` (with its deadline) atomically, durable
    /// on return. Engines without batches ([`EngineKind::has_batches`])
    /// keep this default, an error; the run never calls it on them.
    ///
    /// [`EngineKind::has_batches`]: super::kind::EngineKind::has_batches
    fn write_batch(&self, batch: &Batch) -> Result<()> {
        let _ = batch;
        Err(Error::usage("this engine's adapter has no atomic batches"))
    }

    /// Atomically reads `key` (copied into `out`; false when absent) and
    /// stores `value`, durable on return.
    fn read_modify_write(&self, key: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<bool>;

    /// Reads up to `count` pairs in ascending key order, from the first key
    /// at or after `start`, copying each key and value into `out` (which
    /// holds the last pair afterwards); returns how many it read. Engines
    /// without ordered reads ([`EngineKind::has_ordered_reads`]) keep this
    /// default, an error; the run never calls it on them.
    ///
    /// [`EngineKind::has_ordered_reads`]: super::kind::EngineKind::has_ordered_reads
    fn scan(&self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let _ = (start, count, out);
        Err(Error::usage(
            "this engine has no ordered reads: it cannot scan",
        ))
    }

    /// Writes the engine skipped by concurrent write elimination so far
    /// (Persimmon only).
    fn eliminated_writes(&self) -> u64 {
        0
    }

    /// How far the engine's background work after open has come
    /// (Persimmon: its [`persimmon::Stats`]); `None` for engines that do
    /// none (LMDB, RocksDB), which are ready when `open` returns.
    fn background(&self) -> Option<Background> {
        None
    }

    /// Blocks until the background work after open is done (Persimmon:
    /// `Db::wait_for_rebuild`). The default returns at once.
    fn wait_for_background(&self) {}

    /// The space the store's keys take (Persimmon: its pool's figures);
    /// `None` for engines that do not tell.
    fn space(&self) -> Option<Space> {
        None
    }

    /// Bytes of the engine's own DRAM cache ([`EngineKind::has_cache`]);
    /// 0 for engines without one.
    ///
    /// [`EngineKind::has_cache`]: super::kind::EngineKind::has_cache
    fn cache_bytes(&self) -> u64 {
        0
    }

    /// The SSD tier's counters (persimmon-tiered: its stats); `None` for
    /// the engines without one.
    fn tier(&self) -> Option<TierFigures> {
        None
    }
}
