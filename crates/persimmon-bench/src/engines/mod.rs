//! The engines under test, behind one [`Store`] trait.
//!
//! Rooms: [`kind`] (the engines, their names and what each adapter can
//! do), [`store`] (the [`Store`] trait every adapter implements and the
//! [`OpenConfig`] it is opened with), [`batch`] (the pairs a store takes
//! at once), [`figures`] (what a Persimmon store tells of itself), then the
//! adapters over them; this module re-exports the rooms' items and
//! [`open`]s the adapter an engine names, so only it depends on the
//! adapters.
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

pub mod batch;
pub mod figures;
pub mod kind;
#[cfg(feature = "lmdb")]
pub mod lmdb;
pub mod persimmon;
#[cfg(feature = "rocksdb")]
pub mod rocksdb;
pub mod store;

pub use batch::Batch;
pub use figures::{Background, Space, TierFigures};
pub use kind::EngineKind;
pub use store::{OpenConfig, Store};

use crate::error::Result;

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
