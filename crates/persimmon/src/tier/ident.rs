//! Which data directory belongs to which pool, on both sides: the pool's
//! superblock names its directory and threshold (`SB_TIER`, written once
//! when the pool is created), and the directory holds an identity file
//! with the pool's id. A directory of another pool, or a pool opened with a
//! directory other than its own, is refused.
//!
//! Superblock bytes at `SB_TIER` (2048):
//! ```text
//!  0  [u8; 8] magic "PSMTIER1"
//!  8  u64 threshold (bytes)
//! 16  u32 path length
//! 20  u32 CRC32C of bytes 0..20 and the path
//! 24  path bytes (absolute, at most MAX_PATH_BYTES)
//! ```
//!
//! Invariants:
//! - The identity file is written and synced (and the directory synced)
//!   before the pool file is linked into place, so a pool that names a
//!   directory always finds its identity there unless someone removed it.

use std::os::unix::ffi::OsStrExt;
use std::path::{Path, PathBuf};

use crate::error::{Error, Result};
use crate::layout::{get_u32, get_u64, put_u32, put_u64};

/// Name of the identity file in a data directory.
pub const IDENT_FILE: &str = "persimmon-tier.id";
const IDENT_MAGIC: &[u8; 8] = b"PSMTIERD";
const SB_MAGIC: &[u8; 8] = b"PSMTIER1";
/// Longest data directory path a pool can name.
pub const MAX_PATH_BYTES: usize = 1000;

/// The tier settings a pool's superblock holds.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct TierSettings {
    pub dir: PathBuf,
    pub threshold: u64,
}

impl TierSettings {
    /// The bytes to store at `SB_TIER`.
    pub fn encode(&self) -> Result<Vec<u8>> {
        let path = self.dir.as_os_str().as_bytes();
        if path.len() > MAX_PATH_BYTES {
            return Err(Error::DataDir {
                path: self.dir.clone(),
                detail: format!("path longer than {MAX_PATH_BYTES} bytes"),
            });
        }
        let mut b = vec![0u8; 24];
        b[..8].copy_from_slice(SB_MAGIC);
        put_u64(&mut b, 8, self.threshold);
        put_u32(&mut b, 16, path.len() as u32);
        let crc = crc32c::crc32c_append(crc32c::crc32c(&b[..20]), path);
        put_u32(&mut b, 20, crc);
        b.extend_from_slice(path);
        Ok(b)
    }

    /// Decodes the bytes at `SB_TIER` (`None`: the pool has no tier there).
    pub fn decode(b: &[u8]) -> std::result::Result<Option<TierSettings>, &'static str> {
        if b.len() < 24 || &b[..8] != SB_MAGIC {
            return Ok(None);
        }
        let len = get_u32(b, 16) as usize;
        let path = b
            .get(24..24 + len)
            .filter(|_| len <= MAX_PATH_BYTES)
            .ok_or("tier settings name a path longer than their room")?;
        if crc32c::crc32c_append(crc32c::crc32c(&b[..20]), path) != get_u32(b, 20) {
            return Err("tier settings fail their CRC");
        }
        Ok(Some(TierSettings {
            dir: PathBuf::from(std::ffi::OsStr::from_bytes(path)),
            threshold: get_u64(b, 8),
        }))
    }
}

fn ident_bytes(pool_id: &[u8; 16]) -> Vec<u8> {
    let mut b = Vec::with_capacity(28);
    b.extend_from_slice(IDENT_MAGIC);
    b.extend_from_slice(pool_id);
    b.extend_from_slice(&crc32c::crc32c(&b).to_le_bytes());
    b
}

fn unusable(dir: &Path, detail: impl Into<String>) -> Error {
    Error::DataDir {
        path: dir.to_path_buf(),
        detail: detail.into(),
    }
}

/// Makes `dir` (created if missing) the data directory of pool `pool_id`:
/// it must hold no data files nor another pool's identity. Returns its
/// absolute path.
pub fn claim(dir: &Path, pool_id: &[u8; 16]) -> Result<PathBuf> {
    std::fs::create_dir_all(dir).map_err(|e| unusable(dir, format!("cannot create it: {e}")))?;
    let dir = dir
        .canonicalize()
        .map_err(|e| unusable(dir, format!("cannot resolve it: {e}")))?;
    if dir.join(IDENT_FILE).exists() {
        return Err(unusable(
            &dir,
            "it already belongs to another pool (it has an identity file); give each pool its own data directory",
        ));
    }
    let entries = std::fs::read_dir(&dir).map_err(|e| unusable(&dir, e.to_string()))?;
    let has_data = entries.filter_map(|e| e.ok()).any(|e| {
        e.file_name()
            .to_str()
            .and_then(super::files::parse_file_name)
            .is_some()
    });
    if has_data {
        return Err(unusable(&dir, "it already holds data files"));
    }
    let path = dir.join(IDENT_FILE);
    let parent = dir.parent().map(Path::to_path_buf);
    let write = || -> std::io::Result<()> {
        use std::io::Write;
        let mut f = std::fs::File::create(&path)?;
        f.write_all(&ident_bytes(pool_id))?;
        f.sync_all()?;
        std::fs::File::open(&dir)?.sync_all()?;
        // The directory's own name (it may just have been created).
        match &parent {
            Some(p) => std::fs::File::open(p)?.sync_all(),
            None => Ok(()),
        }
    };
    write().map_err(|e| unusable(&dir, format!("cannot write its identity file: {e}")))?;
    Ok(dir)
}

/// Checks that `dir` is the data directory of pool `pool_id`.
pub fn check(dir: &Path, pool_id: &[u8; 16]) -> Result<()> {
    if !dir.is_dir() {
        return Err(unusable(
            dir,
            "missing: the pool keeps its large values there; restore it (or its mount) before opening the pool",
        ));
    }
    let b = std::fs::read(dir.join(IDENT_FILE)).map_err(|e| {
        unusable(
            dir,
            format!("cannot read its identity file {IDENT_FILE}: {e}"),
        )
    })?;
    if b.len() != 28 || &b[..8] != IDENT_MAGIC || crc32c::crc32c(&b[..24]) != get_u32(&b, 24) {
        return Err(unusable(dir, "its identity file is damaged"));
    }
    if &b[8..24] != pool_id {
        return Err(unusable(dir, "it belongs to another pool"));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn settings_round_trip_and_detect_damage() {
        let s = TierSettings {
            dir: PathBuf::from("/data/tier"),
            threshold: 4096,
        };
        let mut b = s.encode().unwrap();
        b.resize(1024, 0);
        assert_eq!(TierSettings::decode(&b).unwrap(), Some(s));
        assert_eq!(TierSettings::decode(&[0u8; 1024]).unwrap(), None);
        b[30] ^= 1;
        assert!(TierSettings::decode(&b).is_err());
    }

    #[test]
    fn a_directory_serves_one_pool() {
        let dir = std::env::temp_dir().join(format!("psm-ident-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let abs = claim(&dir, &[7; 16]).unwrap();
        check(&abs, &[7; 16]).unwrap();
        let e = check(&abs, &[8; 16]).unwrap_err();
        assert!(e.to_string().contains("another pool"), "{e}");
        assert!(claim(&dir, &[8; 16]).is_err());
        std::fs::remove_dir_all(&dir).unwrap();
        let e = check(&abs, &[7; 16]).unwrap_err();
        assert!(e.to_string().contains("missing"), "{e}");
    }
}
