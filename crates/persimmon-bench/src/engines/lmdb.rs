//! LMDB through `heed` (feature `lmdb`).
//!
//! Settings (printed with the results): default environment flags — no
//! `MDB_NOSYNC`, `MDB_NOMETASYNC`, `MDB_WRITEMAP` or `MDB_MAPASYNC` — plus
//! `MDB_NORDAHEAD` (random reads of data sets larger than memory), so
//! every write transaction's commit writes its pages and `fdatasync`s data
//! and meta page before returning. Each write is one write transaction;
//! read-modify-write reads and writes inside one write transaction; each
//! read is one read-only transaction (`mdb_get`, value copied out), a
//! batched read (`multiget:N`) one read-only transaction of N gets. LMDB
//! allows one writer at a time. A scan is one read-only transaction and a
//! range cursor from the start key (`Database::range`), each pair copied
//! out. The load phase commits 1 024 pairs per transaction. The map is
//! at least `--pool-max` and twice what the loaded pairs need
//! ([`map_estimate`]); the environment lives where the run puts it
//! (`--data-dir` when given).

use std::ops::Bound;

use heed::types::Bytes;
use heed::{Database, Env};

use super::batch::Batch;
use super::store::{OpenConfig, Store};
use crate::error::{Error, Result};

/// An LMDB environment with one unnamed database.
pub struct LmdbStore {
    env: Env,
    db: Database<Bytes, Bytes>,
}

fn fail(e: heed::Error) -> Error {
    Error::engine("lmdb", e)
}

/// LMDB's page size (its map size must be a multiple of it).
const PAGE: u64 = 4096;
/// Header of an overflow page run.
const OVERFLOW_HEADER_BYTES: u64 = 16;
/// A leaf node's header and the page number of its overflow run.
const NODE_BYTES: u64 = 16;

/// The map size `pairs` pairs of these sizes need, with room for
/// copy-on-write and pages half full: a value too large for a leaf
/// (more than half a page) takes whole overflow pages of its own, so a
/// 4 KiB value takes two pages, a 16 KiB one five.
pub fn map_estimate(pairs: u64, key_size: usize, value_size: usize) -> u64 {
    let (key, value) = (key_size as u64, value_size as u64);
    let per_pair = if value > PAGE / 2 {
        (value + OVERFLOW_HEADER_BYTES).div_ceil(PAGE) * PAGE + 2 * (NODE_BYTES + key)
    } else {
        2 * (NODE_BYTES + key + value)
    };
    pairs.saturating_mul(per_pair).saturating_mul(2)
}

impl LmdbStore {
    pub fn open(config: &OpenConfig) -> Result<LmdbStore> {
        let needed = map_estimate(config.pairs, config.key_size, config.value_size);
        let map_bytes = config
            .pool_bytes_max
            .max(needed)
            .max(1 << 30)
            .div_ceil(PAGE)
            * PAGE;
        let map_bytes = usize::try_from(map_bytes)
            .map_err(|_| Error::engine("lmdb", "map size does not fit the address space"))?;
        // One reader slot per thread (read transactions use thread-local
        // slots), plus room for the loader threads.
        let readers = u32::try_from(config.max_threads + 64).unwrap_or(u32::MAX);
        let env = crate::raw::open_lmdb_env(&config.dir, map_bytes, readers).map_err(fail)?;
        let mut txn = env.write_txn().map_err(fail)?;
        let db = env.create_database(&mut txn, None).map_err(fail)?;
        txn.commit().map_err(fail)?;
        Ok(LmdbStore { env, db })
    }
}

impl Store for LmdbStore {
    fn durability(&self) -> String {
        "default env flags plus MDB_NORDAHEAD (sync commit: pages written, fdatasync of data and meta before \
         return); one write transaction per write; read-modify-write = get + put in one write \
         transaction; reads = one read-only transaction + mdb_get each; scans = one read-only \
         transaction + a cursor range from the start key; single writer"
            .into()
    }

    fn load(&self, batch: &Batch) -> Result<()> {
        let mut txn = self.env.write_txn().map_err(fail)?;
        for (key, value) in batch.iter() {
            self.db.put(&mut txn, key, value).map_err(fail)?;
        }
        txn.commit().map_err(fail)
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let txn = self.env.read_txn().map_err(fail)?;
        match self.db.get(&txn, key).map_err(fail)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v);
                Ok(true)
            }
            None => Ok(false),
        }
    }

    /// All the keys in one read transaction.
    fn read_many(&self, keys: &[&[u8]], out: &mut Vec<u8>) -> Result<u64> {
        let txn = self.env.read_txn().map_err(fail)?;
        let mut found = 0;
        for key in keys {
            if let Some(v) = self.db.get(&txn, key).map_err(fail)? {
                out.clear();
                out.extend_from_slice(v);
                found += 1;
            }
        }
        Ok(found)
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Result<()> {
        let mut txn = self.env.write_txn().map_err(fail)?;
        self.db.put(&mut txn, key, value).map_err(fail)?;
        txn.commit().map_err(fail)
    }

    fn scan(&self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let txn = self.env.read_txn().map_err(fail)?;
        let bounds = (Bound::Included(start), Bound::Unbounded);
        let mut read = 0;
        for item in self.db.range(&txn, &bounds).map_err(fail)?.take(count) {
            let (key, value) = item.map_err(fail)?;
            out.clear();
            out.extend_from_slice(key);
            out.extend_from_slice(value);
            read += 1;
        }
        Ok(read)
    }

    fn read_modify_write(&self, key: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let mut txn = self.env.write_txn().map_err(fail)?;
        let found = match self.db.get(&txn, key).map_err(fail)? {
            Some(v) => {
                out.clear();
                out.extend_from_slice(v);
                true
            }
            None => false,
        };
        self.db.put(&mut txn, key, value).map_err(fail)?;
        txn.commit().map_err(fail)?;
        Ok(found)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn large_values_take_whole_overflow_pages() {
        // 16 KiB + header: 5 pages, plus the leaf node (twice, half-full
        // leaves), all twice over.
        assert_eq!(map_estimate(1, 8, 16384), 2 * (5 * 4096 + 2 * 24));
        assert_eq!(map_estimate(1, 8, 4096), 2 * (2 * 4096 + 2 * 24));
        assert_eq!(map_estimate(1, 8, 64), 2 * 2 * (16 + 8 + 64));
        // 1 M keys of 64 KiB: more than the 64 GiB default pool limit.
        assert!(map_estimate(1_000_000, 8, 65536) > 64 << 30);
    }
}
