//! The SSD tier (MixStore's PM + SSD split): large values live as aligned
//! extents in data files on an ordinary file system; the pool keeps each
//! key, its extent's address, length and checksum, and the value's unaligned
//! tail. An ACS read cache in DRAM (`cache`) sits in front of the files.
//!
//! Rooms: `key` (how an extent is named: file, aligned offset, cache key),
//! `extent` (the record's value field: descriptor, tail, patches),
//! `observer` (the file traffic reported to the crash simulator), `files`
//! (data files, aligned direct I/O), `sync` (group commit), `ident` (the
//! directory's identity and the pool's tier settings), `cache` (ACS). This
//! room ties them: allocation of extents in the active file, the durable
//! write, the verified read through the cache, live bytes per file and
//! deleting files nothing names.
//!
//! Invariants:
//! - `write_extent` returns only when the extent is durable (its file
//!   synced); the caller publishes a record naming it only after that, so a
//!   crash leaves either no record naming it (dead bytes in a file) or a
//!   record and its whole extent.
//! - Extents are appended to the active file and never rewritten; file
//!   numbers only grow while the tier is open. So an `ExtentKey` names the
//!   same bytes for as long as it exists, and the cache cannot serve stale
//!   bytes.
//! - An extent's bytes are returned only after their CRC32C matched the
//!   record's descriptor; a mismatch is `ExtentCorruption` for that key.
//! - A file is deleted only when sealed, with no live and no in-flight
//!   extent, through the engine's epoch (a reader that found a record
//!   naming it before it died may still read it).

pub mod cache;
pub mod extent;
pub mod files;
pub mod ident;
pub(crate) mod key;
pub(crate) mod observer;
pub mod sync;

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU32, AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::{Mutex, RwLock};

use crate::error::{Error, Result};
use cache::AcsCache;
use extent::Extent;
use files::{AlignedBuf, DataFile, FILE_BYTES, FILE_HEADER_BYTES};
pub use key::{extent_key, ExtentKey, EXTENT_ALIGN, MAX_FILES, MAX_FILE_OFFSET};
pub use observer::SsdObserver;

/// The SSD tier of an open pool.
pub struct Tier {
    pub dir: PathBuf,
    /// Values of at least this many bytes go to the tier.
    pub threshold: u64,
    pool_id: [u8; 16],
    direct: bool,
    files: RwLock<BTreeMap<u32, Arc<DataFile>>>,
    /// The file extents are appended to, and its next free offset.
    active: Mutex<Option<(Arc<DataFile>, u64)>>,
    next_file: AtomicU32,
    pub sync: sync::GroupSync,
    observer: Option<Arc<dyn SsdObserver>>,
    pub cache: Arc<AcsCache>,
    pub extents_written: AtomicU64,
    pub files_deleted: AtomicU64,
}

/// Verified extent bytes, as the cache holds them: the CRC32C they were
/// verified against (4 bytes, little-endian), then the bytes.
#[derive(Clone)]
pub struct ExtentBytes(Arc<[u8]>);

impl ExtentBytes {
    fn new(crc: u32, data: &[u8]) -> ExtentBytes {
        let mut v = Vec::with_capacity(4 + data.len());
        v.extend_from_slice(&crc.to_le_bytes());
        v.extend_from_slice(data);
        ExtentBytes(Arc::from(v))
    }

    fn crc(&self) -> u32 {
        self.0
            .get(..4)
            .map_or(0, |b| u32::from_le_bytes(b.try_into().expect("4 bytes")))
    }
}

impl std::ops::Deref for ExtentBytes {
    type Target = [u8];

    fn deref(&self) -> &[u8] {
        self.0.get(4..).unwrap_or_default()
    }
}

/// An extent written and durable, not yet named by a published record:
/// while this lives, its file counts it in flight (and is not deleted).
pub struct Written {
    pub extent: Extent,
    file: Arc<DataFile>,
}

impl Drop for Written {
    fn drop(&mut self) {
        self.file.inflight.fetch_sub(1, Ordering::SeqCst);
    }
}

/// Figures for `stats`.
#[derive(Clone, Debug, Default)]
pub struct TierStats {
    pub files: u64,
    /// Extent bytes that records name.
    pub live_bytes: u64,
    /// Bytes the data files take on the file system.
    pub allocated_bytes: u64,
    pub extents_written: u64,
    pub syncs: u64,
    pub files_deleted: u64,
    pub direct_io: bool,
    pub cache: cache::CacheStats,
}

impl Tier {
    /// Opens the tier in `dir` for the pool `pool_id`: every data file is
    /// opened (sealed: new extents go to a new file).
    pub fn open(
        dir: &Path,
        threshold: u64,
        pool_id: [u8; 16],
        cache_bytes: u64,
        policy: cache::Policy,
        observer: Option<Arc<dyn SsdObserver>>,
    ) -> Result<Tier> {
        ident::check(dir, &pool_id)?;
        if let Some(o) = &observer {
            o.opened(dir);
        }
        let direct = files::probe_direct(dir);
        crate::pmem::raise_open_files_limit();
        let mut map = BTreeMap::new();
        for no in list_files(dir)? {
            map.insert(no, Arc::new(DataFile::open(dir, no, &pool_id, direct)?));
        }
        let next = map.keys().next_back().map_or(1, |n| n + 1);
        Ok(Tier {
            dir: dir.to_path_buf(),
            threshold,
            pool_id,
            direct,
            files: RwLock::new(map),
            active: Mutex::new(None),
            next_file: AtomicU32::new(next),
            sync: sync::GroupSync::default(),
            observer,
            cache: AcsCache::new(cache_bytes, policy),
            extents_written: AtomicU64::new(0),
            files_deleted: AtomicU64::new(0),
        })
    }

    fn observer(&self) -> Option<&Arc<dyn SsdObserver>> {
        self.observer.as_ref()
    }

    /// Reserves `bytes` at the tail of the active file (a new file when it
    /// has no room), counted in flight.
    fn allocate(&self, bytes: u64) -> Result<(Arc<DataFile>, u64)> {
        let mut active = self.active.lock();
        if let Some((f, tail)) = active.as_mut() {
            if *tail + bytes <= FILE_HEADER_BYTES + f.capacity && !f.poisoned() {
                let at = *tail;
                *tail += bytes;
                f.inflight.fetch_add(1, Ordering::SeqCst);
                return Ok((f.clone(), at));
            }
            f.sealed.store(true, Ordering::Release);
        }
        *active = None;
        let no = self.next_file.fetch_add(1, Ordering::AcqRel);
        let capacity = (FILE_BYTES - FILE_HEADER_BYTES).max(bytes);
        let f = Arc::new(DataFile::create(
            &self.dir,
            no,
            capacity,
            &self.pool_id,
            self.direct,
            self.observer(),
        )?);
        self.files.write().insert(no, f.clone());
        f.inflight.fetch_add(1, Ordering::SeqCst);
        *active = Some((f.clone(), FILE_HEADER_BYTES + bytes));
        Ok((f, FILE_HEADER_BYTES))
    }

    /// Writes `data` (a multiple of `EXTENT_ALIGN` bytes) as a new extent,
    /// **not yet durable**: `make_durable` before any record names it.
    pub fn write_unsynced(&self, data: &[u8]) -> Result<Written> {
        debug_assert!(!data.is_empty() && (data.len() as u64).is_multiple_of(EXTENT_ALIGN));
        let (file, offset) = self.allocate(data.len() as u64)?;
        let written = Written {
            extent: Extent {
                file: file.no,
                offset,
                bytes: data.len() as u32,
                crc: crc32c::crc32c(data),
            },
            file,
        };
        let mut buf = AlignedBuf::zeroed(data.len());
        buf.as_mut_slice().copy_from_slice(data);
        written
            .file
            .write_at(offset, buf.as_slice(), self.observer())?;
        self.extents_written.fetch_add(1, Ordering::Relaxed);
        Ok(written)
    }

    /// Returns once every extent in `written` is durable (one group-commit
    /// sync per file).
    pub fn make_durable<'w>(&self, written: impl Iterator<Item = &'w Written>) -> Result<()> {
        let mut files: Vec<&Arc<DataFile>> = Vec::new();
        for w in written {
            if !files.iter().any(|f| Arc::ptr_eq(f, &w.file)) {
                files.push(&w.file);
            }
        }
        for f in files {
            self.sync.make_durable(f, self.observer())?;
        }
        Ok(())
    }

    /// Puts a just-written extent's bytes in the cache (write-through).
    pub fn cache_written(&self, e: &Extent, data: &[u8]) {
        self.cache.insert(e.key(), ExtentBytes::new(e.crc, data).0);
    }

    /// The bytes of extent `e`, verified against its CRC: from the cache
    /// (whose entries carry the CRC they were verified with, compared with
    /// `e`'s on every hit), else from its file (and then handed to the
    /// cache's filler).
    pub fn read_extent(&self, e: &Extent) -> Result<ExtentBytes> {
        if let Some(v) = self.cache.get(e.key()) {
            let hit = ExtentBytes(v);
            if hit.crc() == e.crc && hit.len() == e.bytes as usize {
                return Ok(hit);
            }
            // Not the bytes this descriptor names (a damaged descriptor):
            // read the file, whose CRC check will say so.
        }
        let bytes = self.read_uncached(e)?;
        self.cache.fill_async(e.key(), bytes.0.clone());
        Ok(bytes)
    }

    /// Reads and verifies extent `e` from its file, bypassing the cache.
    pub fn read_uncached(&self, e: &Extent) -> Result<ExtentBytes> {
        let damaged = |detail: String| Error::ExtentCorruption {
            file: e.file,
            offset: e.offset,
            detail,
        };
        let file = self
            .files
            .read()
            .get(&e.file)
            .cloned()
            .ok_or_else(|| damaged("the data file does not exist".into()))?;
        let end = e.offset.checked_add(e.bytes as u64);
        if e.offset < FILE_HEADER_BYTES
            || end.is_none_or(|end| end > FILE_HEADER_BYTES + file.capacity)
        {
            return Err(damaged("the extent lies outside its data file".into()));
        }
        let mut buf = AlignedBuf::zeroed(e.bytes as usize);
        file.read_exact_at(e.offset, buf.as_mut_slice())
            .map_err(|err| damaged(format!("read failed: {err}")))?;
        if crc32c::crc32c(buf.as_slice()) != e.crc {
            return Err(damaged("extent CRC32C mismatch".into()));
        }
        Ok(ExtentBytes::new(e.crc, buf.as_slice()))
    }

    /// Counts extent `e` live (`+`) or dead (`-`) in its file; returns the
    /// file when it became reclaimable.
    pub fn count(&self, e: &Extent, live: bool) -> Option<Arc<DataFile>> {
        let file = self.files.read().get(&e.file).cloned()?;
        if live {
            file.live.fetch_add(e.bytes as u64, Ordering::SeqCst);
            return None;
        }
        self.cache.remove(e.key());
        let sub = |live: u64| Some(live.saturating_sub(e.bytes as u64));
        let before = file
            .live
            .fetch_update(Ordering::SeqCst, Ordering::SeqCst, sub);
        debug_assert!(
            before.is_ok_and(|b| b >= e.bytes as u64),
            "extent live bytes went negative"
        );
        file.reclaimable().then_some(file)
    }

    /// Files that may be deleted now (sealed, nothing live or in flight).
    pub fn reclaimable(&self) -> Vec<Arc<DataFile>> {
        self.files
            .read()
            .values()
            .filter(|f| f.reclaimable())
            .cloned()
            .collect()
    }

    /// Deletes data file `no` if it is still reclaimable (the engine calls
    /// this through an epoch).
    pub fn delete_file(&self, no: u32) {
        let mut files = self.files.write();
        let Some(f) = files.get(&no) else { return };
        if !f.reclaimable() {
            return;
        }
        let f = files.remove(&no).expect("looked up above");
        drop(files);
        if let Some(o) = self.observer() {
            o.removed(no);
        }
        let _ = std::fs::remove_file(&f.path);
        self.files_deleted.fetch_add(1, Ordering::Relaxed);
    }

    /// Sealed files, least live first: (file, live bytes, capacity).
    pub fn victims(&self) -> Vec<(u32, u64, u64)> {
        let mut v: Vec<_> = self
            .files
            .read()
            .values()
            .filter(|f| f.sealed.load(Ordering::Acquire))
            .map(|f| (f.no, f.live.load(Ordering::SeqCst), f.capacity))
            .collect();
        v.sort_by_key(|&(_, live, _)| live);
        v
    }

    /// Seals the active file (the cleaner's victims may then include it).
    pub fn seal_active(&self) {
        if let Some((f, _)) = self.active.lock().take() {
            f.sealed.store(true, Ordering::Release);
        }
    }

    pub fn stats(&self) -> TierStats {
        let files = self.files.read();
        TierStats {
            files: files.len() as u64,
            live_bytes: files.values().map(|f| f.live.load(Ordering::Relaxed)).sum(),
            allocated_bytes: files.values().map(|f| f.allocated_bytes()).sum(),
            extents_written: self.extents_written.load(Ordering::Relaxed),
            syncs: self.sync.syncs.load(Ordering::Relaxed),
            files_deleted: self.files_deleted.load(Ordering::Relaxed),
            direct_io: self.direct,
            cache: self.cache.stats(),
        }
    }

    /// Numbers of the data files open now.
    pub fn file_numbers(&self) -> Vec<u32> {
        self.files.read().keys().copied().collect()
    }

    /// Data files whose header was damaged when opened.
    pub fn damaged_headers(&self) -> Vec<u32> {
        let files = self.files.read();
        files
            .values()
            .filter(|f| f.damaged_header)
            .map(|f| f.no)
            .collect()
    }

    /// Live bytes of file `no` (None: no such file).
    pub fn file_live(&self, no: u32) -> Option<u64> {
        self.files
            .read()
            .get(&no)
            .map(|f| f.live.load(Ordering::SeqCst))
    }
}

/// The data files in `dir`, by number.
fn list_files(dir: &Path) -> Result<Vec<u32>> {
    let rd = std::fs::read_dir(dir).map_err(|e| Error::DataDir {
        path: dir.to_path_buf(),
        detail: format!("cannot list it: {e}"),
    })?;
    let mut v = Vec::new();
    for entry in rd {
        let entry = entry.map_err(|e| Error::io(format!("list {}", dir.display()), e))?;
        if let Some(no) = entry.file_name().to_str().and_then(files::parse_file_name) {
            v.push(no);
        }
    }
    v.sort_unstable();
    Ok(v)
}
