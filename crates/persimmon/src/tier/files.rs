//! Data files of the SSD tier: `NNNNNNNN.pdat` in the data directory, each
//! a 4 KiB header (magic, file number, the pool's identity) followed by
//! extents appended at aligned offsets and never rewritten.
//!
//! I/O bypasses the page cache (`O_DIRECT`) where the file system allows
//! it, so the cache in front of the tier is ours (ACS) and a read really
//! reads the device; elsewhere (tmpfs) plain buffered I/O. Either way an
//! extent is durable only after `sync` (fdatasync), which the group commit
//! (`sync`) batches.
//!
//! Invariants:
//! - A file's space is preallocated when it is created (`fallocate`), so a
//!   full file system fails the creation (`DataDirFull`), never a write into
//!   an extent a record may already name.
//! - Every byte written and every sync is reported to the `SsdObserver`
//!   first (the crash simulator).
//! - `live` counts the extent bytes that published records name (exact once
//!   the tally after open is done); `inflight` counts extents written but not
//!   yet published or abandoned; a file is deleted only when sealed with both
//!   at 0.

use std::fs::{File, OpenOptions};
use std::os::unix::fs::{FileExt, OpenOptionsExt};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;

use super::key::EXTENT_ALIGN;
use super::observer::SsdObserver;
use crate::error::{Error, Result};
use crate::layout::{get_u32, put_u32};

/// Bytes of a data file's header.
pub const FILE_HEADER_BYTES: u64 = EXTENT_ALIGN;
/// Bytes of a data file (header included) unless one extent needs more.
pub const FILE_BYTES: u64 = 64 << 20;
const FILE_MAGIC: &[u8; 8] = b"PSMDATA1";

/// One open data file.
#[derive(Debug)]
pub struct DataFile {
    pub no: u32,
    pub path: PathBuf,
    file: File,
    /// Bytes reserved for extents in this file (header excluded).
    pub capacity: u64,
    pub live: AtomicU64,
    pub inflight: AtomicU64,
    /// No more extents will be allocated in it.
    pub sealed: AtomicBool,
    /// A sync of it failed: the kernel may have dropped dirty pages of any
    /// writer and will not say so again, so no later sync of it is trusted.
    poisoned: AtomicBool,
    direct: bool,
    /// Its header failed its CRC when opened (its extents still verify by
    /// their own CRCs; `check` reports it).
    pub damaged_header: bool,
}

/// The name of data file `no`.
pub fn file_name(no: u32) -> String {
    format!("{no:08}.pdat")
}

/// The number of a data file named `name`, if it is one.
pub fn parse_file_name(name: &str) -> Option<u32> {
    let digits = name.strip_suffix(".pdat")?;
    (digits.len() == 8 && digits.bytes().all(|b| b.is_ascii_digit()))
        .then(|| digits.parse().ok())
        .flatten()
}

fn header(no: u32, pool_id: &[u8; 16]) -> Vec<u8> {
    let mut h = vec![0u8; FILE_HEADER_BYTES as usize];
    h[..8].copy_from_slice(FILE_MAGIC);
    put_u32(&mut h, 8, no);
    h[16..32].copy_from_slice(pool_id);
    let crc = crc32c::crc32c(&h[..32]);
    put_u32(&mut h, 32, crc);
    h
}

fn open_flags(path: &Path, create: bool, direct: bool) -> std::io::Result<File> {
    let mut o = OpenOptions::new();
    o.read(true).write(true);
    if create {
        o.create_new(true);
    }
    if direct {
        o.custom_flags(libc::O_DIRECT);
    }
    o.open(path)
}

/// Whether `dir`'s file system takes `O_DIRECT` (tmpfs does not).
pub fn probe_direct(dir: &Path) -> bool {
    let probe = dir.join(".direct-probe");
    let ok = open_flags(&probe, false, true).is_ok() || {
        let _ = File::create(&probe);
        open_flags(&probe, false, true).is_ok()
    };
    let _ = std::fs::remove_file(&probe);
    ok
}

fn is_enospc(e: &std::io::Error) -> bool {
    e.raw_os_error() == Some(libc::ENOSPC)
}

/// A buffer whose bytes start at an `EXTENT_ALIGN` boundary (what
/// `O_DIRECT` asks of memory), without unsafe code: a larger vector and the
/// aligned window inside it.
pub struct AlignedBuf {
    buf: Vec<u8>,
    start: usize,
    len: usize,
}

impl AlignedBuf {
    pub fn zeroed(len: usize) -> AlignedBuf {
        let buf = vec![0u8; len + EXTENT_ALIGN as usize];
        let start = buf.as_ptr().align_offset(EXTENT_ALIGN as usize);
        AlignedBuf { buf, start, len }
    }

    pub fn as_slice(&self) -> &[u8] {
        &self.buf[self.start..self.start + self.len]
    }

    pub fn as_mut_slice(&mut self) -> &mut [u8] {
        &mut self.buf[self.start..self.start + self.len]
    }
}

impl DataFile {
    /// Creates data file `no` with room for `capacity` bytes of extents;
    /// its header is written (not synced: the first extent's sync covers it).
    pub fn create(
        dir: &Path,
        no: u32,
        capacity: u64,
        pool_id: &[u8; 16],
        direct: bool,
        observer: Option<&Arc<dyn SsdObserver>>,
    ) -> Result<DataFile> {
        let path = dir.join(file_name(no));
        let file = open_flags(&path, true, direct)
            .map_err(|e| Error::io(format!("create data file {}", path.display()), e))?;
        let made = DataFile {
            no,
            path: path.clone(),
            file,
            capacity,
            live: AtomicU64::new(0),
            inflight: AtomicU64::new(0),
            sealed: AtomicBool::new(false),
            poisoned: AtomicBool::new(false),
            direct,
            damaged_header: false,
        };
        if let Err(e) = crate::pmem::allocate_file(&made.file, FILE_HEADER_BYTES + capacity) {
            let _ = std::fs::remove_file(&path);
            return Err(match is_enospc(&e) {
                true => Error::DataDirFull {
                    path: dir.to_path_buf(),
                },
                false => Error::io(format!("allocate data file {}", path.display()), e),
            });
        }
        // The file's name is durable before any extent in it can be synced
        // and named by a record (fdatasync does not persist the name).
        let dir_synced = File::open(dir).and_then(|d| d.sync_all());
        if let Err(e) = dir_synced {
            let _ = std::fs::remove_file(&path);
            return Err(Error::io(
                format!("sync data directory {}", dir.display()),
                e,
            ));
        }
        if let Some(o) = observer {
            o.created(no);
        }
        let mut h = AlignedBuf::zeroed(FILE_HEADER_BYTES as usize);
        h.as_mut_slice().copy_from_slice(&header(no, pool_id));
        made.write_at(0, h.as_slice(), observer)?;
        Ok(made)
    }

    /// Opens existing data file `no`, checking its header names this pool.
    pub fn open(dir: &Path, no: u32, pool_id: &[u8; 16], direct: bool) -> Result<DataFile> {
        let path = dir.join(file_name(no));
        let file = open_flags(&path, false, direct)
            .map_err(|e| Error::io(format!("open data file {}", path.display()), e))?;
        let len = file
            .metadata()
            .map_err(|e| Error::io(format!("stat {}", path.display()), e))?
            .len();
        let mut made = DataFile {
            no,
            path: path.clone(),
            file,
            capacity: len.saturating_sub(FILE_HEADER_BYTES),
            live: AtomicU64::new(0),
            inflight: AtomicU64::new(0),
            // Extents go to new files after an open.
            sealed: AtomicBool::new(true),
            poisoned: AtomicBool::new(false),
            direct,
            damaged_header: false,
        };
        let mut h = AlignedBuf::zeroed(FILE_HEADER_BYTES as usize);
        let header_ok = made.read_exact_at(0, h.as_mut_slice()).is_ok();
        let h = h.as_slice();
        if !header_ok || &h[..8] != FILE_MAGIC {
            // A crash between creating a file and syncing its first extent
            // can leave the header unwritten: such a file holds nothing a
            // record names (its extents were never synced), and is treated
            // as empty garbage.
            return Ok(made);
        }
        if crc32c::crc32c(&h[..32]) != get_u32(h, 32) || get_u32(h, 8) != no {
            // Media damage (or a torn unsynced header): not fatal to the
            // pool — whatever records name in it is checked by the extents'
            // own CRCs.
            made.damaged_header = true;
            return Ok(made);
        }
        if &h[16..32] != pool_id {
            return Err(Error::DataDir {
                path,
                detail: "data file belongs to another pool".into(),
            });
        }
        Ok(made)
    }

    /// Writes `data` (aligned memory, offset and length) at `offset`.
    pub fn write_at(
        &self,
        offset: u64,
        data: &[u8],
        observer: Option<&Arc<dyn SsdObserver>>,
    ) -> Result<()> {
        debug_assert!(offset.is_multiple_of(EXTENT_ALIGN));
        debug_assert!((data.len() as u64).is_multiple_of(EXTENT_ALIGN));
        if let Some(o) = observer {
            o.wrote(self.no, offset, data);
        }
        self.file.write_all_at(data, offset).map_err(|e| {
            if is_enospc(&e) {
                Error::DataDirFull {
                    path: self.path.parent().unwrap_or(&self.path).to_path_buf(),
                }
            } else {
                Error::io(format!("write data file {}", self.path.display()), e)
            }
        })
    }

    /// Reads exactly `out.len()` bytes at `offset` (aligned, when direct).
    pub fn read_exact_at(&self, offset: u64, out: &mut [u8]) -> std::io::Result<()> {
        self.file.read_exact_at(out, offset)
    }

    /// Makes every write so far durable. A failure poisons the file (and
    /// seals it): every later sync of it fails too.
    pub fn sync(&self, observer: Option<&Arc<dyn SsdObserver>>) -> Result<()> {
        if let Err(e) = self.file.sync_data() {
            self.poisoned.store(true, Ordering::SeqCst);
            self.sealed.store(true, Ordering::Release);
            return Err(Error::io(format!("fdatasync {}", self.path.display()), e));
        }
        if self.poisoned() {
            return Err(Error::io(
                format!("fdatasync {}", self.path.display()),
                std::io::Error::other("an earlier sync of this data file failed"),
            ));
        }
        if let Some(o) = observer {
            o.synced(self.no);
        }
        Ok(())
    }

    /// Whether a sync of it has failed.
    pub fn poisoned(&self) -> bool {
        self.poisoned.load(Ordering::SeqCst)
    }

    /// Whether I/O on it bypasses the page cache.
    pub fn direct(&self) -> bool {
        self.direct
    }

    /// Whether it may be deleted: sealed, no live extent, none in flight.
    pub fn reclaimable(&self) -> bool {
        self.sealed.load(Ordering::Acquire)
            && self.inflight.load(Ordering::SeqCst) == 0
            && self.live.load(Ordering::SeqCst) == 0
    }

    /// Bytes allocated to it on the file system.
    pub fn allocated_bytes(&self) -> u64 {
        use std::os::unix::fs::MetadataExt;
        self.file.metadata().map_or(0, |m| m.blocks() * 512)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn file_names_round_trip_and_reject_others() {
        assert_eq!(file_name(42), "00000042.pdat");
        assert_eq!(parse_file_name("00000042.pdat"), Some(42));
        assert_eq!(parse_file_name("0000042.pdat"), None);
        assert_eq!(parse_file_name("0000004x.pdat"), None);
        assert_eq!(parse_file_name("00000042.dat"), None);
    }

    #[test]
    fn aligned_buffer_is_aligned() {
        for len in [4096, 8192, 65536] {
            let b = AlignedBuf::zeroed(len);
            assert_eq!(b.as_slice().len(), len);
            assert!(b.as_slice().as_ptr().align_offset(4096) == 0);
        }
    }

    #[test]
    fn a_file_of_another_pool_is_refused() {
        let dir = std::env::temp_dir().join(format!("psm-files-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir).unwrap();
        let direct = probe_direct(&dir);
        let f = DataFile::create(&dir, 1, 1 << 20, &[1; 16], direct, None).unwrap();
        f.sync(None).unwrap();
        drop(f);
        assert!(DataFile::open(&dir, 1, &[1; 16], direct).is_ok());
        let e = DataFile::open(&dir, 1, &[2; 16], direct).unwrap_err();
        assert!(e.to_string().contains("another pool"), "{e}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
