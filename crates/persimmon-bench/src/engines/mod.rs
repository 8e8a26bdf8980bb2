//! The engines under test, behind one [`Store`] trait.
//!
//! - Persimmon and its ablation variants ([`persimmon`]), always built.
//! - `persimmon-tiered`: the default options with the SSD tier (large
//!   values in data files on an ordinary file system, MixStore's split).
//! - LMDB ([`lmdb`], feature `lmdb`) and RocksDB ([`rocksdb`], feature
//!   `rocksdb`; also `rocksdb-blob`, with blob files), the peers, built
//!   only when asked so that the workspace builds without compiling them.
//!
//! Where stores live: Persimmon's pools in `--pool-dir` (tmpfs or DAX);
//! the engines that keep data on an SSD ([`EngineKind::on_data_dir`]:
//! persimmon-tiered's data files, the peers' whole stores) in `--data-dir`
//! when it is given ([`OpenConfig::data_dir`]).
//!
//! Every engine gets its own fresh directory, is loaded with the same keys
//! and values, and runs the same operation sequences (the per-thread seeds
//! do not depend on the engine).
//!
//! Fairness rules every adapter follows: a write is durable when it returns
//! (the engine's own per-operation durability, stated by
//! [`Store::durability`]); a read copies the value out into the caller's
//! buffer; a read-modify-write reads and writes in one atomic step (a
//! transaction where the engine has them); a scan reads keys and values
//! in key order from its start key, copying each pair out, in one read
//! transaction (snapshot) where the engine has them; the load phase may
//! batch and is not measured.
//!
//! Scans need ordered reads: `persimmon-ordered` and `persimmon-dram` (pools
//! with the ordered index), LMDB and RocksDB have them; the other Persimmon
//! variants (hash index only) do not ([`EngineKind::has_ordered_reads`]), and
//! the run skips scan workloads for them with a note.
//!
//! Atomic batches (`batch:N`, [`Store::write_batch`]) and key deadlines
//! (`--deadline-fraction`, [`Store::write_with_deadline`]) have adapters
//! for the Persimmon engines only ([`EngineKind::has_batches`],
//! [`EngineKind::has_expiry`]): the run skips batch workloads for the
//! others with a note and refuses deadlines with them.

use std::path::PathBuf;

use crate::error::{Error, Result};

#[cfg(feature = "lmdb")]
pub mod lmdb;
pub mod persimmon;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;

/// An engine the benchmark can run.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum EngineKind {
    /// Persimmon with all three MPKV mechanisms (the default options).
    Persimmon,
    /// The default options plus the ordered index (`ordered_index: true`):
    /// the pool keeps a persistent skiplist over the keys.
    PersimmonOrdered,
    /// The ordered index plus the point index in DRAM
    /// (`point_index: PointIndex::Dram`): rebuilt from the ordered index
    /// after every open, which serves point reads until then.
    PersimmonDram,
    /// `PersimmonDram` with the ordered index as the skiplist of format
    /// versions 2–5 (`ordered_layout: OrderedLayout::Skiplist`) instead of
    /// leaves: what the leaves replaced, for comparison.
    PersimmonDramSkiplist,
    /// `Options::baseline()`: the MPKV paper's Baseline, all mechanisms off.
    Baseline,
    /// All mechanisms but the volatile lock table.
    NoVolatileLocks,
    /// All mechanisms but lock-free reads (two-phase atomic write).
    NoLockFreeReads,
    /// All mechanisms but concurrent write elimination.
    NoWriteElimination,
    /// LMDB through `heed` (feature `lmdb`).
    Lmdb,
    /// RocksDB through `rocksdb` (feature `rocksdb`).
    Rocksdb,
    /// The default options with the SSD tier (`Options::data_dir`): values
    /// of at least `--tier-threshold` bytes in data files, the ACS read
    /// cache in DRAM.
    PersimmonTiered,
    /// RocksDB with blob files (its key-value separation: values of at
    /// least `--tier-threshold` bytes in blob files; feature `rocksdb`).
    RocksdbBlob,
}

/// Alias in `--engines` for the Baseline and the three one-off variants.
const ABLATION: [EngineKind; 4] = [
    EngineKind::Baseline,
    EngineKind::NoVolatileLocks,
    EngineKind::NoLockFreeReads,
    EngineKind::NoWriteElimination,
];

impl EngineKind {
    pub const ALL: [EngineKind; 12] = [
        EngineKind::Persimmon,
        EngineKind::PersimmonOrdered,
        EngineKind::PersimmonDram,
        EngineKind::PersimmonDramSkiplist,
        EngineKind::PersimmonTiered,
        EngineKind::Baseline,
        EngineKind::NoVolatileLocks,
        EngineKind::NoLockFreeReads,
        EngineKind::NoWriteElimination,
        EngineKind::Lmdb,
        EngineKind::Rocksdb,
        EngineKind::RocksdbBlob,
    ];

    /// The name used on the command line and in the results.
    pub fn name(self) -> &'static str {
        match self {
            EngineKind::Persimmon => "persimmon",
            EngineKind::PersimmonOrdered => "persimmon-ordered",
            EngineKind::PersimmonDram => "persimmon-dram",
            EngineKind::PersimmonDramSkiplist => "persimmon-dram-skiplist",
            EngineKind::Baseline => "baseline",
            EngineKind::NoVolatileLocks => "no-volatile-locks",
            EngineKind::NoLockFreeReads => "no-lock-free-reads",
            EngineKind::NoWriteElimination => "no-write-elimination",
            EngineKind::Lmdb => "lmdb",
            EngineKind::Rocksdb => "rocksdb",
            EngineKind::PersimmonTiered => "persimmon-tiered",
            EngineKind::RocksdbBlob => "rocksdb-blob",
        }
    }

    /// Whether the engine reads keys in order, so it can run scans
    /// ([`Store::scan`]).
    pub fn has_ordered_reads(self) -> bool {
        matches!(
            self,
            EngineKind::PersimmonOrdered
                | EngineKind::PersimmonDram
                | EngineKind::PersimmonDramSkiplist
                | EngineKind::Lmdb
                | EngineKind::Rocksdb
                | EngineKind::RocksdbBlob
        )
    }

    /// Whether the engine's adapter commits atomic batches
    /// ([`Store::write_batch`]).
    pub fn has_batches(self) -> bool {
        self.is_persimmon()
    }

    /// Whether the engine's adapter writes keys with deadlines
    /// ([`Store::write_with_deadline`]).
    pub fn has_expiry(self) -> bool {
        self.is_persimmon()
    }

    /// Whether the engine is Persimmon (or one of its variants).
    pub fn is_persimmon(self) -> bool {
        !self.is_rocksdb() && self != EngineKind::Lmdb
    }

    /// Whether the engine is RocksDB (with blob files or without).
    pub fn is_rocksdb(self) -> bool {
        matches!(self, EngineKind::Rocksdb | EngineKind::RocksdbBlob)
    }

    /// Whether the engine keeps data on the SSD, in `--data-dir` when it
    /// is given: persimmon-tiered its data files, the peers everything.
    pub fn on_data_dir(self) -> bool {
        !self.is_persimmon() || self == EngineKind::PersimmonTiered
    }

    /// Whether the engine keeps values of at least `--tier-threshold`
    /// bytes apart from the keys (persimmon-tiered's SSD extents,
    /// rocksdb-blob's blob files).
    pub fn splits_values(self) -> bool {
        matches!(self, EngineKind::PersimmonTiered | EngineKind::RocksdbBlob)
    }

    /// Whether the engine has a DRAM cache that `--cache-bytes` sizes
    /// (persimmon-tiered's ACS cache, RocksDB's block cache).
    pub fn has_cache(self) -> bool {
        self.is_rocksdb() || self == EngineKind::PersimmonTiered
    }

    /// Whether this build has the engine's adapter.
    pub fn built(self) -> bool {
        let lmdb_ok = self != EngineKind::Lmdb || cfg!(feature = "lmdb");
        let rocksdb_ok = !self.is_rocksdb() || cfg!(feature = "rocksdb");
        lmdb_ok && rocksdb_ok
    }

    /// Parses `persimmon,baseline,lmdb,...` (`ablation` stands for baseline
    /// and the three no-* variants). Duplicates are dropped, order is kept.
    pub fn parse_list(text: &str) -> Result<Vec<EngineKind>, String> {
        let mut out: Vec<EngineKind> = Vec::new();
        for raw in text.split(',') {
            let name = raw.trim().to_ascii_lowercase();
            let kinds: Vec<EngineKind> = if name == "ablation" {
                ABLATION.to_vec()
            } else {
                match EngineKind::ALL.iter().find(|k| k.name() == name) {
                    Some(k) => vec![*k],
                    None => {
                        let names: Vec<&str> = EngineKind::ALL.iter().map(|k| k.name()).collect();
                        return Err(format!(
                            "unknown engine {name:?}: use {} or ablation (= baseline and the three no-* variants)",
                            names.join(", ")
                        ));
                    }
                }
            };
            for k in kinds {
                if !out.contains(&k) {
                    out.push(k);
                }
            }
        }
        Ok(out)
    }

    /// An error unless this build has the adapter.
    pub fn check_built(self) -> Result<()> {
        if self.built() {
            return Ok(());
        }
        let feature = if self.is_rocksdb() { "rocksdb" } else { "lmdb" };
        Err(Error::usage(format!(
            "this build has no {} adapter: the peers are behind cargo features; rebuild with \
             `cargo build --release -p persimmon-cli --features peers` (or --features {feature})",
            self.name(),
        )))
    }
}

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

/// Key-value pairs for the load phase and the batches of `batch:N`, stored
/// flat, each with its deadline if it has one.
#[derive(Debug)]
pub struct Batch {
    key_bytes: usize,
    value_bytes: usize,
    keys: Vec<u8>,
    values: Vec<u8>,
    deadlines: Vec<Option<u64>>,
}

impl Batch {
    pub fn new(key_bytes: usize, value_bytes: usize, capacity: usize) -> Batch {
        Batch {
            key_bytes,
            value_bytes,
            keys: Vec::with_capacity(key_bytes * capacity),
            values: Vec::with_capacity(value_bytes * capacity),
            deadlines: Vec::with_capacity(capacity),
        }
    }

    pub fn clear(&mut self) {
        self.keys.clear();
        self.values.clear();
        self.deadlines.clear();
    }

    /// Adds a pair without a deadline; `key` and `value` must have the
    /// batch's sizes.
    pub fn push(&mut self, key: &[u8], value: &[u8]) {
        self.push_with_deadline(key, value, None);
    }

    /// Adds a pair that expires at `deadline` (ms of Unix time), if given.
    pub fn push_with_deadline(&mut self, key: &[u8], value: &[u8], deadline: Option<u64>) {
        assert_eq!(key.len(), self.key_bytes);
        assert_eq!(value.len(), self.value_bytes);
        self.keys.extend_from_slice(key);
        self.values.extend_from_slice(value);
        self.deadlines.push(deadline);
    }

    pub fn len(&self) -> usize {
        self.keys.len() / self.key_bytes
    }

    pub fn is_empty(&self) -> bool {
        self.keys.is_empty()
    }

    pub fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        self.keys
            .chunks_exact(self.key_bytes)
            .zip(self.values.chunks_exact(self.value_bytes.max(1)))
    }

    /// The pairs with their deadlines.
    pub fn iter_with_deadlines(&self) -> impl Iterator<Item = (&[u8], &[u8], Option<u64>)> {
        self.iter()
            .zip(&self.deadlines)
            .map(|((key, value), deadline)| (key, value, *deadline))
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
    fn cache_bytes(&self) -> u64 {
        0
    }

    /// The SSD tier's counters (persimmon-tiered: its stats); `None` for
    /// the engines without one.
    fn tier(&self) -> Option<TierFigures> {
        None
    }
}

/// An SSD tier's counters since open and its space, as its stats tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct TierFigures {
    /// ACS cache lookups that found the value, and those that read the SSD.
    pub cache_hits: u64,
    pub cache_misses: u64,
    /// Data-file syncs (group commit: one per batch of concurrent writers)
    /// and extents written.
    pub syncs: u64,
    pub extents_written: u64,
    /// Bytes the data files take on the file system, and the extent bytes
    /// live records name.
    pub ssd_bytes: u64,
    pub ssd_live_bytes: u64,
}

impl TierFigures {
    /// The counters from `earlier` to `self` (the space figures are
    /// `self`'s).
    pub fn since(&self, earlier: &TierFigures) -> TierFigures {
        TierFigures {
            cache_hits: self.cache_hits.saturating_sub(earlier.cache_hits),
            cache_misses: self.cache_misses.saturating_sub(earlier.cache_misses),
            syncs: self.syncs.saturating_sub(earlier.syncs),
            extents_written: self.extents_written.saturating_sub(earlier.extents_written),
            ..*self
        }
    }
}

impl From<&::persimmon::Stats> for TierFigures {
    fn from(s: &::persimmon::Stats) -> TierFigures {
        TierFigures {
            cache_hits: s.cache_hits,
            cache_misses: s.cache_misses,
            syncs: s.ssd_syncs,
            extents_written: s.ssd_extents_written,
            ssd_bytes: s.ssd_bytes,
            ssd_live_bytes: s.ssd_live_bytes,
        }
    }
}

/// The space a Persimmon pool's keys take, as its stats tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Space {
    pub keys: u64,
    /// Bytes of segments in use (`Stats::used_bytes`).
    pub used_bytes: u64,
    /// Bytes of records the index references (`Stats::live_bytes`).
    pub live_bytes: u64,
}

impl From<&::persimmon::Stats> for Space {
    fn from(s: &::persimmon::Stats) -> Space {
        let (keys, used_bytes, live_bytes) = (s.keys, s.used_bytes, s.live_bytes);
        Space {
            keys,
            used_bytes,
            live_bytes,
        }
    }
}

/// The background work after open of a Persimmon pool, as its stats tell.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Background {
    /// Space accounting and the key count are rebuilt (`rebuild_done`).
    pub rebuild_done: bool,
    /// The ordered index's walk after open has ended (true without one).
    pub ordered_walk_done: bool,
    /// The point index answers every point read (always with the PM point
    /// index; with the DRAM one, once it is rebuilt).
    pub point_index_ready: bool,
    /// The point index is in DRAM (`PointIndex::Dram`).
    pub point_index_in_dram: bool,
    /// DRAM the point index occupies (0 unless it is in DRAM).
    pub dram_index_bytes: u64,
}

impl Background {
    /// Everything `Db::wait_for_rebuild` waits for is done.
    pub fn done(&self) -> bool {
        self.rebuild_done && self.ordered_walk_done && self.point_index_ready
    }
}

/// Opens a fresh store of `kind` in `config.dir`.
pub fn open(kind: EngineKind, config: &OpenConfig) -> Result<Box<dyn Store>> {
    kind.check_built()?;
    match kind {
        EngineKind::Lmdb => open_lmdb(config),
        EngineKind::Rocksdb | EngineKind::RocksdbBlob => open_rocksdb(kind, config),
        _ => Ok(Box::new(persimmon::PersimmonStore::open(kind, config)?)),
    }
}

#[cfg(feature = "lmdb")]
fn open_lmdb(config: &OpenConfig) -> Result<Box<dyn Store>> {
    Ok(Box::new(lmdb::LmdbStore::open(config)?))
}

#[cfg(not(feature = "lmdb"))]
fn open_lmdb(_: &OpenConfig) -> Result<Box<dyn Store>> {
    Err(EngineKind::Lmdb.check_built().unwrap_err())
}

#[cfg(feature = "rocksdb")]
fn open_rocksdb(kind: EngineKind, config: &OpenConfig) -> Result<Box<dyn Store>> {
    let blob = kind == EngineKind::RocksdbBlob;
    Ok(Box::new(rocksdb::RocksdbStore::open(config, blob)?))
}

#[cfg(not(feature = "rocksdb"))]
fn open_rocksdb(kind: EngineKind, _: &OpenConfig) -> Result<Box<dyn Store>> {
    Err(kind.check_built().unwrap_err())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_lists_parse_with_the_ablation_alias() {
        assert_eq!(
            EngineKind::parse_list("persimmon, ablation,lmdb,baseline").unwrap(),
            vec![
                EngineKind::Persimmon,
                EngineKind::Baseline,
                EngineKind::NoVolatileLocks,
                EngineKind::NoLockFreeReads,
                EngineKind::NoWriteElimination,
                EngineKind::Lmdb,
            ]
        );
        let e = EngineKind::parse_list("persimmon,sqlite").unwrap_err();
        assert!(e.contains("sqlite") && e.contains("rocksdb"), "{e}");
        for k in EngineKind::ALL {
            assert_eq!(EngineKind::parse_list(k.name()).unwrap(), vec![k]);
        }
    }

    #[test]
    fn only_the_ordered_engines_scan() {
        let scanning: Vec<&str> = EngineKind::ALL
            .into_iter()
            .filter(|k| k.has_ordered_reads())
            .map(EngineKind::name)
            .collect();
        assert_eq!(
            scanning,
            [
                "persimmon-ordered",
                "persimmon-dram",
                "persimmon-dram-skiplist",
                "lmdb",
                "rocksdb",
                "rocksdb-blob"
            ]
        );
        assert_eq!(
            EngineKind::parse_list("persimmon-ordered,persimmon").unwrap(),
            [EngineKind::PersimmonOrdered, EngineKind::Persimmon]
        );
        assert_eq!(
            EngineKind::parse_list("persimmon-dram").unwrap(),
            [EngineKind::PersimmonDram]
        );
        assert!(!ABLATION.iter().any(|k| k.has_ordered_reads()));
    }

    #[test]
    fn missing_peer_adapters_say_how_to_build_them() {
        if !cfg!(feature = "rocksdb") {
            for kind in [EngineKind::Rocksdb, EngineKind::RocksdbBlob] {
                let e = kind.check_built().unwrap_err().to_string();
                assert!(e.contains("--features peers"), "{e}");
                assert!(e.contains(kind.name()), "{e}");
            }
        }
        assert!(EngineKind::Persimmon.check_built().is_ok());
        assert!(EngineKind::PersimmonTiered.check_built().is_ok());
    }

    #[test]
    fn the_tier_engines_parse_and_say_where_their_data_lives() {
        assert_eq!(
            EngineKind::parse_list("persimmon-tiered,rocksdb-blob,lmdb").unwrap(),
            [
                EngineKind::PersimmonTiered,
                EngineKind::RocksdbBlob,
                EngineKind::Lmdb
            ]
        );
        let on_ssd: Vec<&str> = EngineKind::ALL
            .into_iter()
            .filter(|k| k.on_data_dir())
            .map(EngineKind::name)
            .collect();
        assert_eq!(
            on_ssd,
            ["persimmon-tiered", "lmdb", "rocksdb", "rocksdb-blob"]
        );
        let cached: Vec<&str> = EngineKind::ALL
            .into_iter()
            .filter(|k| k.has_cache())
            .map(EngineKind::name)
            .collect();
        assert_eq!(cached, ["persimmon-tiered", "rocksdb", "rocksdb-blob"]);
        let tiered = EngineKind::PersimmonTiered;
        assert!(tiered.is_persimmon() && tiered.has_batches() && tiered.has_expiry());
        assert!(!tiered.has_ordered_reads());
        assert!(EngineKind::RocksdbBlob.is_rocksdb() && !EngineKind::RocksdbBlob.is_persimmon());
        let e = EngineKind::parse_list("persimmon-tierd").unwrap_err();
        assert!(
            e.contains("persimmon-tiered") && e.contains("rocksdb-blob"),
            "{e}"
        );
    }

    #[test]
    fn batches_iterate_in_order() {
        let mut b = Batch::new(2, 3, 4);
        b.push(b"k1", b"abc");
        b.push(b"k2", b"def");
        let pairs: Vec<_> = b.iter().collect();
        assert_eq!(
            pairs,
            vec![(&b"k1"[..], &b"abc"[..]), (&b"k2"[..], &b"def"[..])]
        );
        assert_eq!(b.len(), 2);
        b.push_with_deadline(b"k3", b"ghi", Some(77));
        let deadlines: Vec<_> = b.iter_with_deadlines().map(|(_, _, d)| d).collect();
        assert_eq!(deadlines, [None, None, Some(77)]);
        b.clear();
        assert!(b.is_empty());
        assert_eq!(b.iter_with_deadlines().count(), 0);
    }
}
