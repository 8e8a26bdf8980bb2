//! The disk domain's two files as a crash leaves them: the pool file and
//! its write-ahead log (`<pool>.wal`), modelled from the engine's
//! `DiskObserver` reports (`sim.rs`), and the images a crash at one moment
//! may leave — replayed, as the next open would, into the pool image the
//! oracle checks.
//!
//! The rules, from what the engine reports:
//! - `wrote`: the bytes are pending until the file's next `synced`;
//! - `resized` (the pool grown, the log allocated): the new length is
//!   pending until the file's next `synced`;
//! - `synced` (reported after `fdatasync` returned): every write and
//!   extension of that file before it is durable.
//!
//! A crash image: each file's durable bytes, then each pending write, in
//! order, dropped, applied, or torn — a prefix of its 512-byte sectors
//! applied — and each pending extension kept or lost, a write past the
//! length lost with it (the picks of `ssd::plan`, one unit per pending
//! event). So the
//! log's unsynced tail may be missing or torn anywhere, and the pool file's
//! unsynced checkpoint writes may be stale or torn, as the model
//! asks.
//!
//! Invariants:
//! - Every image is a state the rules allow after a crash at that moment,
//!   except under the self-test `MUTANT_SKIP_LOG_SYNC`, which breaks them
//!   on purpose: a sync of the log makes nothing durable, as if the engine
//!   acknowledged writes without syncing.
//! - The files' bytes before the session (what the previous session left,
//!   read from disk when the model is made) are durable.
//! - `generation` changes with every event the model takes, so
//!   (generation, pick) names one pair of images.

use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use persimmon::DiskFile;

use crate::ssd::{Block, Unit, SECTOR};

/// Run every workload in the disk domain (`--domain disk`).
pub static DISK_DOMAIN: AtomicBool = AtomicBool::new(false);

/// Self-test of the harness (`--mutant-skip-log-sync`): a sync of the log
/// makes none of its writes durable. Writes the engine acknowledged are
/// then missing from crash images: the oracle must find them lost.
pub static MUTANT_SKIP_LOG_SYNC: AtomicBool = AtomicBool::new(false);

/// One thing the engine did to a file.
#[derive(Clone, Debug)]
enum Event {
    Write(Block),
    /// Extended to this many bytes (zeros).
    Resized(u64),
}

/// One file: its bytes before the session, then what was done to it.
#[derive(Clone, Debug, Default)]
struct FileModel {
    base: Arc<Vec<u8>>,
    durable: Vec<Event>,
    pending: Vec<Event>,
}

impl FileModel {
    fn from_disk(path: &Path) -> FileModel {
        FileModel {
            base: Arc::new(std::fs::read(path).unwrap_or_default()),
            ..FileModel::default()
        }
    }

    /// The file with its durable events and the pending ones `picks`
    /// chooses: a write with that many sectors applied, an extension kept
    /// (1) or lost (0). The length is the last extension kept; a write
    /// past it is lost there (its blocks were never allocated).
    fn image(&self, picks: &[u16]) -> Vec<u8> {
        let events = || {
            let durable = self.durable.iter().map(|e| (e, None));
            durable.chain(self.pending.iter().zip(picks).map(|(e, &p)| (e, Some(p))))
        };
        let mut len = self.base.len();
        for (e, pick) in events() {
            if let (Event::Resized(to), None | Some(1..)) = (e, pick) {
                len = *to as usize;
            }
        }
        let mut img = self.base.as_ref().clone();
        img.resize(len, 0);
        for (e, pick) in events() {
            let Event::Write(b) = e else { continue };
            let keep = pick.map_or(b.data.len(), |p| p as usize * SECTOR);
            let start = (b.offset as usize).min(len);
            let end = (b.offset as usize + keep.min(b.data.len())).min(len);
            img[start..end].copy_from_slice(&b.data[..end - start]);
        }
        img
    }

    fn unit(&self, file: u32, index: usize) -> Unit {
        match &self.pending[index] {
            Event::Write(b) => Unit::Write {
                file,
                index,
                sectors: b.data.len().div_ceil(SECTOR) as u16,
            },
            Event::Resized(_) => Unit::Resized { file },
        }
    }
}

/// The pool file and its log.
#[derive(Clone, Debug, Default)]
pub struct DiskModel {
    pool: FileModel,
    log: FileModel,
    pub generation: u64,
}

impl DiskModel {
    /// The files at `pool` as they are on disk now (all durable).
    pub fn from_disk(pool: &Path) -> DiskModel {
        DiskModel {
            pool: FileModel::from_disk(pool),
            log: FileModel::from_disk(&log_path(pool)),
            generation: 0,
        }
    }

    fn file(&mut self, which: DiskFile) -> &mut FileModel {
        match which {
            DiskFile::Pool => &mut self.pool,
            DiskFile::Log => &mut self.log,
        }
    }

    pub fn wrote(&mut self, which: DiskFile, offset: u64, data: &[u8]) {
        self.generation += 1;
        self.file(which).pending.push(Event::Write(Block {
            offset,
            data: Arc::from(data),
        }));
    }

    pub fn resized(&mut self, which: DiskFile, len: u64) {
        self.generation += 1;
        self.file(which).pending.push(Event::Resized(len));
    }

    pub fn synced(&mut self, which: DiskFile) {
        self.generation += 1;
        if which == DiskFile::Log && MUTANT_SKIP_LOG_SYNC.load(Ordering::Relaxed) {
            return;
        }
        let f = self.file(which);
        let done = std::mem::take(&mut f.pending);
        f.durable.extend(done);
    }

    /// What a crash now chooses for: each pending event of the pool file,
    /// then of the log (file 0 the pool, 1 the log).
    pub fn units(&self) -> Vec<Unit> {
        let pool = (0..self.pool.pending.len()).map(|i| self.pool.unit(0, i));
        let log = (0..self.log.pending.len()).map(|i| self.log.unit(1, i));
        pool.chain(log).collect()
    }

    /// The pool file and the log of `pick` (one choice per unit).
    pub fn build(&self, pick: &[u16]) -> (Vec<u8>, Vec<u8>) {
        let (pool_picks, log_picks) = pick.split_at(self.pool.pending.len());
        (self.pool.image(pool_picks), self.log.image(log_picks))
    }
}

/// The log's path beside a pool.
pub fn log_path(pool: &Path) -> std::path::PathBuf {
    let mut name = pool.file_name().unwrap_or_default().to_os_string();
    name.push(".wal");
    pool.with_file_name(name)
}

/// Writes `pool` and `log` at `path` and beside it, replays the log into
/// the pool file as an open would, and returns the pool file's bytes then
/// (what the disk domain recovers from: the oracle's image).
pub fn replayed(pool: &[u8], log: &[u8], path: &Path) -> Result<Vec<u8>, String> {
    std::fs::write(path, pool).map_err(|e| format!("write {}: {e}", path.display()))?;
    let wal = log_path(path);
    std::fs::write(&wal, log).map_err(|e| format!("write {}: {e}", wal.display()))?;
    persimmon::replay_log(path).map_err(|e| format!("replay the log image: {e}"))?;
    std::fs::read(path).map_err(|e| format!("read {}: {e}", path.display()))
}
