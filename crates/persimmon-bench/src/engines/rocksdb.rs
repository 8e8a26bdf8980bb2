//! RocksDB through `rocksdb` (feature `rocksdb`): `rocksdb`, and
//! `rocksdb-blob` with blob files (its key-value separation).
//!
//! Settings (printed with the results): an `OptimisticTransactionDB`; the
//! WAL on and `WriteOptions::set_sync(true)` on every write, so each put
//! (and each transaction commit) syncs the WAL (`fdatasync`, RocksDB's
//! default `use_fsync = false`) before returning. Each write is one
//! `put`; read-modify-write is one optimistic transaction
//! (`get_for_update` + `put` + `commit`, retried when it conflicts); reads
//! are plain `get_pinned` with the value copied out (a batched read,
//! `multiget:N`, is one `multi_get` of its N keys); a scan is a raw
//! iterator (implicit snapshot) seeked to the start key, reading `count`
//! pairs with `next`, each copied out. No compression
//! (values are random bytes), an LRU block cache of `--cache-bytes`
//! (default 1 GiB), a 10-bit bloom filter, background threads = cores.
//! The load phase writes unsynced batches of 1 024 pairs, then flushes the
//! memtable and compacts the whole key range, so the timed phase starts
//! from a settled tree.
//!
//! `rocksdb-blob` adds integrated BlobDB: values of at least
//! `--tier-threshold` bytes go to blob files of [`BLOB_FILE_BYTES`] when
//! the memtable is flushed (the WAL holds them until then, synced per
//! write as above), the SST files keep the keys and blob references; blob
//! garbage collection on (compactions relocate the live blobs of the
//! oldest files); the blob cache is the block cache (one LRU cache of
//! `--cache-bytes` for both), so its DRAM budget is the one
//! persimmon-tiered's ACS cache gets. Reads are buffered: blobs not in the
//! cache come through the OS page cache.

use rocksdb::{
    BlockBasedOptions, Cache, DBCompressionType, ErrorKind, OptimisticTransactionDB,
    OptimisticTransactionOptions, ReadOptions, WriteBatchWithTransaction, WriteOptions,
};

use persimmon::size::human_bytes;

use super::batch::Batch;
use super::store::{OpenConfig, Store};
use crate::error::{Error, Result};

/// Block cache size unless `--cache-bytes` gives one.
const BLOCK_CACHE_BYTES: u64 = 1 << 30;
/// Size of one blob file (`rocksdb-blob`).
pub const BLOB_FILE_BYTES: u64 = 256 << 20;
/// Bloom filter bits per key.
const BLOOM_BITS_PER_KEY: f64 = 10.0;
/// Read-modify-write attempts before giving up on conflicts.
const MAX_TRANSACTION_ATTEMPTS: usize = 1000;

thread_local! {
    // RocksDB's option objects are Send but not Sync: one set per thread.
    static SYNC_WRITE: WriteOptions = {
        let mut w = WriteOptions::default();
        w.set_sync(true);
        w
    };
    static READ: ReadOptions = ReadOptions::default();
    static TRANSACTION: OptimisticTransactionOptions = OptimisticTransactionOptions::default();
}

/// A RocksDB database in its engine directory.
pub struct RocksdbStore {
    db: OptimisticTransactionDB,
    cache_bytes: u64,
    /// `min_blob_size` with blob files on (`rocksdb-blob`).
    min_blob_bytes: Option<u64>,
}

fn fail(e: rocksdb::Error) -> Error {
    Error::engine("rocksdb", e)
}

impl RocksdbStore {
    /// Opens the database in `config.dir`, with blob files when `blob`.
    pub fn open(config: &OpenConfig, blob: bool) -> Result<RocksdbStore> {
        let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
        let cache_bytes = config.cache_bytes.unwrap_or(BLOCK_CACHE_BYTES);
        let cache = Cache::new_lru_cache(usize::try_from(cache_bytes).unwrap_or(usize::MAX));
        let mut options = rocksdb::Options::default();
        options.create_if_missing(true);
        options.set_compression_type(DBCompressionType::None);
        options.increase_parallelism(i32::try_from(cores).unwrap_or(1));
        let mut table = BlockBasedOptions::default();
        table.set_block_cache(&cache);
        table.set_bloom_filter(BLOOM_BITS_PER_KEY, false);
        options.set_block_based_table_factory(&table);
        let min_blob_bytes = blob.then_some(config.tier_threshold);
        if let Some(min) = min_blob_bytes {
            options.set_enable_blob_files(true);
            options.set_min_blob_size(min);
            options.set_blob_file_size(BLOB_FILE_BYTES);
            options.set_blob_compression_type(DBCompressionType::None);
            options.set_enable_blob_gc(true);
            options.set_blob_cache(&cache);
        }
        let db = OptimisticTransactionDB::open(&options, &config.dir).map_err(fail)?;
        Ok(RocksdbStore {
            db,
            cache_bytes,
            min_blob_bytes,
        })
    }
}

fn copy_out(value: Option<rocksdb::DBPinnableSlice<'_>>, out: &mut Vec<u8>) -> bool {
    match value {
        Some(v) => {
            out.clear();
            out.extend_from_slice(&v);
            true
        }
        None => false,
    }
}

impl Store for RocksdbStore {
    fn durability(&self) -> String {
        let blob = match self.min_blob_bytes {
            Some(min) => format!(
                "; blob files on: values >= {min} B in blob files of {} (written at memtable \
                 flush, the synced WAL holds them until then), blob GC on, the blob cache is \
                 the block cache, buffered reads",
                human_bytes(BLOB_FILE_BYTES)
            ),
            None => String::new(),
        };
        format!(
            "WAL on, WriteOptions::set_sync(true): each put or commit syncs the WAL (fdatasync) \
             before return; read-modify-write = optimistic transaction (get_for_update + put + \
             commit, retried on conflict); reads = get_pinned; scans = raw iterator, seek + \
             next; no compression, {} LRU block cache, bloom 10 bits/key; after load: flush + \
             full compaction{blob}",
            human_bytes(self.cache_bytes)
        )
    }

    fn load(&self, batch: &Batch) -> Result<()> {
        let mut wb = WriteBatchWithTransaction::<true>::default();
        for (key, value) in batch.iter() {
            wb.put(key, value);
        }
        self.db
            .write_opt(wb, &WriteOptions::default())
            .map_err(fail)
    }

    fn finish_load(&self) -> Result<()> {
        self.db.flush().map_err(fail)?;
        self.db.compact_range::<&[u8], &[u8]>(None, None);
        Ok(())
    }

    fn read(&self, key: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        let value = READ
            .with(|r| self.db.get_pinned_opt(key, r))
            .map_err(fail)?;
        Ok(copy_out(value, out))
    }

    /// One `multi_get` call for all the keys, each value copied out.
    fn read_many(&self, keys: &[&[u8]], out: &mut Vec<u8>) -> Result<u64> {
        let values = READ.with(|r| self.db.multi_get_opt(keys.iter().copied(), r));
        let mut found = 0;
        for value in values {
            if let Some(v) = value.map_err(fail)? {
                out.clear();
                out.extend_from_slice(&v);
                found += 1;
            }
        }
        Ok(found)
    }

    fn write(&self, key: &[u8], value: &[u8]) -> Result<()> {
        SYNC_WRITE
            .with(|w| self.db.put_opt(key, value, w))
            .map_err(fail)
    }

    fn scan(&self, start: &[u8], count: usize, out: &mut Vec<u8>) -> Result<usize> {
        let mut iter = self.db.raw_iterator_opt(ReadOptions::default());
        iter.seek(start);
        let mut read = 0;
        while read < count {
            let Some((key, value)) = iter.item() else {
                break;
            };
            out.clear();
            out.extend_from_slice(key);
            out.extend_from_slice(value);
            read += 1;
            iter.next();
        }
        iter.status().map_err(fail)?;
        Ok(read)
    }

    fn cache_bytes(&self) -> u64 {
        self.cache_bytes
    }

    fn read_modify_write(&self, key: &[u8], value: &[u8], out: &mut Vec<u8>) -> Result<bool> {
        for _ in 0..MAX_TRANSACTION_ATTEMPTS {
            let txn = SYNC_WRITE.with(|w| TRANSACTION.with(|t| self.db.transaction_opt(w, t)));
            let found = copy_out(txn.get_pinned_for_update(key, true).map_err(fail)?, out);
            txn.put(key, value).map_err(fail)?;
            match txn.commit() {
                Ok(()) => return Ok(found),
                Err(e) if matches!(e.kind(), ErrorKind::Busy | ErrorKind::TryAgain) => continue,
                Err(e) => return Err(fail(e)),
            }
        }
        Err(Error::engine(
            "rocksdb",
            format!("read-modify-write conflicted {MAX_TRANSACTION_ATTEMPTS} times in a row"),
        ))
    }
}
