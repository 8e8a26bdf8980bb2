//! The SSD tier's data directory as a crash leaves it (issue 15): a model
//! of its files fed by the engine's `SsdObserver` (`sim.rs`), and the
//! directory images a crash at one moment may leave.
//!
//! The model keeps, per data file, its length (preallocated when it was
//! created), the writes known durable, and the writes since the file's last
//! sync, in order. The rules, from what the engine reports:
//! - `created`: the file's name and its zero-filled length are durable (the
//!   engine syncs the directory before it reports the file), and so is every
//!   unlink before it (the same directory sync);
//! - `wrote`: the bytes are pending until the file's next `synced`;
//! - `synced` (reported after `fdatasync` returned): every write of that
//!   file before it is durable;
//! - `removed`: the file is unlinked; until the next directory sync a crash
//!   may still find it, with its durable bytes (an unlink is not durable
//!   without one).
//!
//! A crash image of the directory (`SsdModel::build`): every file with its
//! durable bytes, then each pending write, in order, either dropped,
//! applied, or torn — a prefix of its 512-byte sectors applied (a sector is
//! the unit a device writes whole); an unlinked file back or gone. The
//! choices of one image are a *pick*: one number per `Unit`.
//!
//! Invariants:
//! - Every image built is a state the rules allow after a crash at that
//!   moment, nothing else — except under the self-test
//!   `MUTANT_LATE_SYNC`, which breaks them on purpose.
//! - A sync covers every write reported before it returned. The engine
//!   reports a write before making it and a sync after it returned, so this
//!   is exact when one thread at a time writes and syncs a file (the
//!   `tier-*` workloads: one writer, no tier thread); with concurrent
//!   writers of one file it would be optimistic (a write racing a sync
//!   counted durable), never stricter than the device.
//! - Not modelled: a file whose creation had not been reported yet (made
//!   and preallocated, its directory not yet synced); no crash point falls
//!   in that window with one writer.
//! - `generation` changes with every event the model takes, so (generation,
//!   pick) names one directory image (`image_id`).
//! - Picks are drawn only from the crash point's random source: a
//!   (workload, seed) replays the same directory images.

use std::collections::{BTreeMap, HashSet};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use persimmon::tier::files::{file_name, parse_file_name};
use persimmon::tier::ident;
use rand::rngs::StdRng;
use rand::Rng;

use crate::poolfile::POOL_ID;

/// Bytes a device writes whole: a torn write keeps a prefix of these.
pub const SECTOR: usize = 512;

/// Self-test of the harness (`--mutant-ssd-sync`): a sync makes durable
/// only what the file's *previous* sync covered, as if the engine published
/// a record while its extent's sync was still under way. The oracle must
/// then find values whose extents a crash lost (never returned as values).
pub static MUTANT_LATE_SYNC: AtomicBool = AtomicBool::new(false);

/// One write: `data` at byte `offset` of its file.
#[derive(Clone, Debug)]
pub struct Block {
    pub offset: u64,
    pub data: Arc<[u8]>,
}

#[derive(Clone, Debug, Default)]
struct FileModel {
    len: u64,
    durable: Vec<Block>,
    pending: Vec<Block>,
    /// `MUTANT_LATE_SYNC`: how many of `pending` the last sync covered
    /// (they become durable at the next one).
    covered: usize,
}

/// What a crash chooses for: one pending write (`sectors` + 1 choices:
/// that many sectors applied, 0 = dropped), one unlinked file (0 = back,
/// 1 = gone) or one extension of a file (the disk domain's; 0 = the old
/// length, 1 = the new).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    Write {
        file: u32,
        index: usize,
        sectors: u16,
    },
    Unlinked {
        file: u32,
    },
    Resized {
        file: u32,
    },
}

impl Unit {
    /// How many choices the unit has.
    pub fn choices(self) -> u16 {
        match self {
            Unit::Write { sectors, .. } => sectors + 1,
            Unit::Unlinked { .. } | Unit::Resized { .. } => 2,
        }
    }
}

/// The data directory as the engine's reports describe it.
#[derive(Clone, Debug, Default)]
pub struct SsdModel {
    files: BTreeMap<u32, FileModel>,
    /// Files unlinked since the last directory sync.
    unlinked: BTreeMap<u32, FileModel>,
    pub generation: u64,
}

impl SsdModel {
    /// A model whose durable state is `img` (a directory restored from it).
    pub fn from_image(img: &SsdImage) -> SsdModel {
        let files = img
            .files
            .iter()
            .map(|(&no, f)| {
                let model = FileModel {
                    len: f.len,
                    durable: f.blocks.clone(),
                    ..FileModel::default()
                };
                (no, model)
            })
            .collect();
        SsdModel {
            files,
            ..SsdModel::default()
        }
    }

    /// Data file `no` of `len` bytes was created (directory synced).
    pub fn created(&mut self, no: u32, len: u64) {
        self.generation += 1;
        self.unlinked.clear();
        let fresh = FileModel {
            len,
            ..FileModel::default()
        };
        self.files.insert(no, fresh);
    }

    pub fn wrote(&mut self, no: u32, offset: u64, data: &[u8]) {
        self.generation += 1;
        let f = self.files.entry(no).or_default();
        debug_assert!(offset + data.len() as u64 <= f.len, "write past the file");
        f.pending.push(Block {
            offset,
            data: Arc::from(data),
        });
    }

    pub fn synced(&mut self, no: u32) {
        self.generation += 1;
        let Some(f) = self.files.get_mut(&no) else {
            return;
        };
        let upto = match MUTANT_LATE_SYNC.load(Ordering::Relaxed) {
            true => f.covered,
            false => f.pending.len(),
        };
        let done: Vec<Block> = f.pending.drain(..upto).collect();
        f.durable.extend(done);
        f.covered = f.pending.len();
    }

    pub fn removed(&mut self, no: u32) {
        self.generation += 1;
        if let Some(f) = self.files.remove(&no) {
            self.unlinked.insert(no, f);
        }
    }

    /// What a crash now chooses for: every pending write (files by number,
    /// writes in order), then every unlinked file.
    pub fn units(&self) -> Vec<Unit> {
        let mut out = Vec::new();
        for (&file, f) in &self.files {
            for (index, b) in f.pending.iter().enumerate() {
                let sectors = b.data.len().div_ceil(SECTOR) as u16;
                out.push(Unit::Write {
                    file,
                    index,
                    sectors,
                });
            }
        }
        out.extend(self.unlinked.keys().map(|&file| Unit::Unlinked { file }));
        out
    }

    /// The directory image of `pick` (one choice per unit of `units()`).
    pub fn build(&self, pick: &[u16]) -> SsdImage {
        let mut files: BTreeMap<u32, FileImage> = BTreeMap::new();
        for (&no, f) in &self.files {
            files.insert(no, FileImage::durable(f));
        }
        for (u, &p) in self.units().iter().zip(pick) {
            match *u {
                Unit::Write { file, index, .. } if p > 0 => {
                    let b = &self.files[&file].pending[index];
                    let keep = (p as usize * SECTOR).min(b.data.len());
                    let img = files.get_mut(&file).expect("a file of the model");
                    img.blocks.push(Block {
                        offset: b.offset,
                        data: Arc::from(&b.data[..keep]),
                    });
                }
                Unit::Unlinked { file } if p == 0 => {
                    files.insert(file, FileImage::durable(&self.unlinked[&file]));
                }
                _ => {}
            }
        }
        SsdImage { files }
    }

    /// The directory with every write applied and unlinks done: what a
    /// clean close leaves (the files as the engine wrote them).
    pub fn settled(&self) -> SsdImage {
        let all: Vec<u16> = self
            .units()
            .iter()
            .map(|u| match u {
                Unit::Write { sectors, .. } => *sectors,
                Unit::Unlinked { .. } | Unit::Resized { .. } => 1,
            })
            .collect();
        self.build(&all)
    }
}

/// What one pick does, for the statistics.
#[derive(Clone, Copy, Debug, Default)]
pub struct PickKind {
    /// Some write applied only in part / not at all / an unlinked file back.
    pub torn: bool,
    pub dropped: bool,
    pub unlinked_back: bool,
}

/// How `pick` treats `units`.
pub fn describe(units: &[Unit], pick: &[u16]) -> PickKind {
    let mut k = PickKind::default();
    for (u, &p) in units.iter().zip(pick) {
        match *u {
            Unit::Write { .. } if p == 0 => k.dropped = true,
            Unit::Write { sectors, .. } if p < sectors => k.torn = true,
            Unit::Unlinked { .. } if p == 0 => k.unlinked_back = true,
            Unit::Resized { .. } if p == 0 => k.dropped = true,
            _ => {}
        }
    }
    k
}

/// Every write torn halfway (at least one sector kept, at least one lost
/// where it has two), unlinked files back: the capture of a crash that
/// must show a torn extent (`Sim::request_capture_torn`).
pub fn torn_pick(units: &[Unit]) -> Vec<u16> {
    units
        .iter()
        .map(|u| match *u {
            Unit::Write { sectors, .. } => (sectors / 2).max(1),
            Unit::Unlinked { .. } | Unit::Resized { .. } => 0,
        })
        .collect()
}

/// The picks to build for one crash point: none (every pending write
/// dropped, unlinked files back), all, every write torn halfway, then —
/// when the product of the units' choices is at most `cap` — every other
/// combination, else `samples` random ones (each write dropped, applied or
/// torn at a random sector with equal odds). Distinct picks only.
pub fn plan(units: &[Unit], cap: u64, samples: usize, rng: &mut StdRng) -> Vec<Vec<u16>> {
    if units.is_empty() {
        return vec![Vec::new()];
    }
    let mut out: Vec<Vec<u16>> = Vec::new();
    let mut seen: HashSet<Vec<u16>> = HashSet::new();
    let mut push = |v: Vec<u16>| {
        if seen.insert(v.clone()) {
            out.push(v);
        }
    };
    push(vec![0; units.len()]);
    push(units.iter().map(|u| u.choices() - 1).collect());
    push(torn_pick(units));
    let product = units
        .iter()
        .fold(1u64, |p, u| p.saturating_mul(u.choices() as u64));
    if product <= cap {
        let mut digits = vec![0u16; units.len()];
        for _ in 0..product {
            push(digits.clone());
            for (d, u) in digits.iter_mut().zip(units) {
                *d += 1;
                if *d < u.choices() {
                    break;
                }
                *d = 0;
            }
        }
        return out;
    }
    for _ in 0..samples {
        push(units.iter().map(|u| random_choice(*u, rng)).collect());
    }
    out
}

fn random_choice(u: Unit, rng: &mut StdRng) -> u16 {
    match u {
        Unit::Unlinked { .. } | Unit::Resized { .. } => rng.gen_range(0..2),
        Unit::Write { sectors, .. } => match rng.gen_range(0..3) {
            0 => 0,
            1 => sectors,
            _ if sectors > 1 => rng.gen_range(1..sectors),
            _ => sectors,
        },
    }
}

/// Identity of a directory image: the model's generation and the pick.
pub fn image_id(generation: u64, pick: &[u16]) -> u128 {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(&generation.to_le_bytes());
    for p in pick {
        h.update(&p.to_le_bytes());
    }
    h.digest128()
}

/// One data file of a directory image: its length and the writes that
/// reached it, in order (the rest reads as zeros).
#[derive(Clone, Debug, Default)]
pub struct FileImage {
    pub len: u64,
    pub blocks: Vec<Block>,
}

impl FileImage {
    fn durable(f: &FileModel) -> FileImage {
        FileImage {
            len: f.len,
            blocks: f.durable.clone(),
        }
    }

    /// Flips bit `bit` of byte `at` (media damage, `faults.rs`).
    pub fn flip(&mut self, at: u64, bit: u8) {
        let mut byte = [0u8; 1];
        for b in &self.blocks {
            if (b.offset..b.offset + b.data.len() as u64).contains(&at) {
                byte[0] = b.data[(at - b.offset) as usize];
            }
        }
        byte[0] ^= 1 << bit;
        self.blocks.push(Block {
            offset: at,
            data: Arc::from(&byte[..]),
        });
    }
}

/// The data files of a directory a crash (or a clean close) leaves.
#[derive(Clone, Debug, Default)]
pub struct SsdImage {
    pub files: BTreeMap<u32, FileImage>,
}

impl SsdImage {
    /// Makes `dir` hold exactly this image's data files (sparse files of
    /// their lengths), with the harness pool's identity file (claimed when
    /// the directory has none).
    pub fn write_into(&self, dir: &Path) -> Result<(), String> {
        std::fs::create_dir_all(dir).map_err(|e| format!("create {}: {e}", dir.display()))?;
        for no in data_files(dir)? {
            let p = dir.join(file_name(no));
            std::fs::remove_file(&p).map_err(|e| format!("remove {}: {e}", p.display()))?;
        }
        if !dir.join(ident::IDENT_FILE).exists() {
            ident::claim(dir, &POOL_ID).map_err(|e| format!("claim {}: {e}", dir.display()))?;
        }
        for (&no, f) in &self.files {
            let p = dir.join(file_name(no));
            let io = |e: std::io::Error| format!("write {}: {e}", p.display());
            let file = std::fs::File::create(&p).map_err(io)?;
            file.set_len(f.len).map_err(io)?;
            for b in &f.blocks {
                file.write_all_at(&b.data, b.offset).map_err(io)?;
            }
        }
        Ok(())
    }
}

/// The numbers of the data files in `dir`.
pub fn data_files(dir: &Path) -> Result<Vec<u32>, String> {
    let rd = std::fs::read_dir(dir).map_err(|e| format!("list {}: {e}", dir.display()))?;
    let mut v: Vec<u32> = rd
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().to_str().and_then(parse_file_name))
        .collect();
    v.sort_unstable();
    Ok(v)
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand::SeedableRng;

    fn model() -> SsdModel {
        let mut m = SsdModel::default();
        m.created(1, 16384);
        m.wrote(1, 0, &[1u8; 4096]);
        m.synced(1);
        m.wrote(1, 4096, &[2u8; 4096]);
        m.created(2, 16384);
        m.removed(2);
        m
    }

    #[test]
    fn pending_writes_and_unlinks_are_the_units() {
        let m = model();
        let units = m.units();
        assert_eq!(
            units,
            vec![
                Unit::Write {
                    file: 1,
                    index: 0,
                    sectors: 8
                },
                Unit::Unlinked { file: 2 }
            ]
        );
        // Dropped write, file 2 back: file 1 holds only its synced block.
        let img = m.build(&[0, 0]);
        assert_eq!(img.files.len(), 2);
        assert_eq!(img.files[&1].blocks.len(), 1);
        // Torn after three sectors, file 2 gone.
        let img = m.build(&[3, 1]);
        assert_eq!(img.files.keys().copied().collect::<Vec<_>>(), vec![1]);
        assert_eq!(img.files[&1].blocks[1].data.len(), 3 * SECTOR);
        let k = describe(&units, &[3, 1]);
        assert!(k.torn && !k.dropped && !k.unlinked_back);
    }

    #[test]
    fn a_sync_makes_writes_durable_and_a_creation_the_unlinks() {
        let mut m = model();
        m.synced(1);
        m.created(3, 8192);
        assert!(m.units().is_empty());
        let img = m.settled();
        assert_eq!(img.files.keys().copied().collect::<Vec<_>>(), vec![1, 3]);
        assert_eq!(img.files[&1].blocks.len(), 2);
    }

    #[test]
    fn small_products_are_enumerated_large_ones_sampled() {
        let mut rng = StdRng::seed_from_u64(1);
        let m = model();
        let picks = plan(&m.units(), 64, 4, &mut rng);
        assert_eq!(picks.len(), 9 * 2, "every combination once");
        let mut big = SsdModel::default();
        big.created(1, 1 << 20);
        for i in 0..4 {
            big.wrote(1, i * 8192, &[9u8; 8192]);
        }
        let picks = plan(&big.units(), 64, 5, &mut rng);
        assert!(picks.len() <= 3 + 5 && picks.len() >= 3);
        assert!(picks.iter().all(|p| p.len() == 4));
    }

    #[test]
    fn an_image_is_written_as_sparse_files() {
        let dir = tempfile::tempdir().unwrap();
        let img = model().build(&[5, 1]);
        img.write_into(dir.path()).unwrap();
        assert_eq!(data_files(dir.path()).unwrap(), vec![1]);
        let bytes = std::fs::read(dir.path().join(file_name(1))).unwrap();
        assert_eq!(bytes.len(), 16384);
        assert_eq!(bytes[4096 + 5 * SECTOR - 1], 2);
        assert_eq!(bytes[4096 + 5 * SECTOR], 0, "the torn write's lost sectors");
        assert!(dir.path().join(ident::IDENT_FILE).exists());
    }
}
