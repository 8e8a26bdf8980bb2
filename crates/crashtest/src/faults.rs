//! Media faults: damage a clean image, reopen it, and classify what the
//! engine does.
//!
//! Fault classes (each applied alone to a fresh copy of the image):
//! - `record-bitflip`, `record-torn` (the tail of a record, from an 8-byte
//!   boundary, zeroed: a write that never finished), `record-zero` (a short
//!   range inside a record zeroed): always inside the bytes the record's
//!   CRC32C covers (never the padding), of a live record;
//! - `slot-bitflip` (any bit but the persist bit) and `slot-zero`: a live
//!   index slot (with the DRAM point index: the record word of a live
//!   key's skiplist node) — slots and record words carry no CRC;
//! - `header-bitflip`: one bit of a committed segment's 64-byte header;
//! - tiered pools: `extent-bitflip` (one bit of a live value's extent in its
//!   data file) and `extent-torn` (an extent's sectors zeroed from one on:
//!   a write that never finished).
//!
//! Every other fault is injected into the image as it would be after a
//! crash (the superblock's clean-close word cleared): a clean image carries
//! its key count, which lets `check()` notice a vanished key that it could
//! not notice after a crash.
//!
//! What must hold (counted as inconsistencies when not):
//! - no read ever returns a wrong value: with `verify_reads`, a `get` of any
//!   key returns its value, an error, or (after damage to its slot or its
//!   key bytes) nothing — never another value; also after new writes;
//! - record damage is reported by `check()` (or the open fails), and a read
//!   of the damaged key does not return it as if intact;
//! - extent damage: the pool opens, `check()` reports it, a read of the
//!   damaged key fails with `Error::ExtentCorruption` (its checksum caught
//!   it: never the wrong bytes), and every other key reads its value.
//!
//! Slot and header damage are classified and reported separately: a CRC
//! cannot catch them, so `check()` silence there is a finding, not a
//! harness failure. Likewise a flipped offset bit in the damaged key's own
//! slot can point at an older, intact record of the same key (its CRC is
//! valid): that read is counted as `slot-stale`, a known limit of CRC-less
//! slots, not as a wrong value; a wrong value for any other key still is.

use std::collections::BTreeMap;
use std::path::Path;

use persimmon::{Db, Options};
use rand::rngs::StdRng;
use rand::Rng;

use crate::oracle::{self, oracle_options, show_key, Expect, Key, Val};
use crate::poolfile::{self, ExtentAt, LiveRecord, SegKind};
use crate::ssd::{Block, SsdImage, SECTOR};

/// Offset of the superblock's clean-close word (docs/design.md §3).
const SB_CLEAN_STATE: usize = persimmon::format::SB_CLEAN_STATE as usize;

pub const CLASSES: &[&str] = &[
    "record-bitflip",
    "record-torn",
    "record-zero",
    "slot-bitflip",
    "slot-zero",
    "header-bitflip",
    "extent-bitflip",
    "extent-torn",
];

#[derive(Clone, Copy, Debug, Default)]
pub struct FaultTally {
    pub injected: u64,
    /// Open refused the image (damage detected at open).
    pub open_error: u64,
    /// `check()` reported an error.
    pub check_reported: u64,
    /// Neither the open nor `check()` noticed.
    pub check_silent: u64,
    /// Reads of the damaged key: an error / its intact value / absent.
    pub read_error: u64,
    pub read_intact: u64,
    pub read_absent: u64,
    /// Reads (of any key, before or after new writes) that returned a value
    /// the key never held.
    pub wrong_values: u64,
    /// Reads of the key whose slot was damaged that returned another intact
    /// record (an older version): undetectable without slot checksums.
    pub slot_stale: u64,
    /// Faults after which, once new writes were made, some *other* key read
    /// as absent or failed (damage spreading through recovery).
    pub collateral: u64,
    /// Inconsistencies (see the module header).
    pub failures: u64,
}

impl FaultTally {
    pub fn add(&mut self, o: &FaultTally) {
        self.injected += o.injected;
        self.open_error += o.open_error;
        self.check_reported += o.check_reported;
        self.check_silent += o.check_silent;
        self.read_error += o.read_error;
        self.read_intact += o.read_intact;
        self.read_absent += o.read_absent;
        self.wrong_values += o.wrong_values;
        self.slot_stale += o.slot_stale;
        self.collateral += o.collateral;
        self.failures += o.failures;
    }
}

pub type FaultReport = BTreeMap<&'static str, FaultTally>;

/// Where a fault went.
struct Damage {
    /// The key whose record or slot was hit (none for headers).
    key: Option<Key>,
    what: String,
}

fn flip(img: &mut [u8], byte: u64, bit: u32) {
    img[byte as usize] ^= 1 << bit;
}

/// Damages a live value's extent in `dir` (tiered images): a bit flipped,
/// or its sectors zeroed from a random one on.
fn inject_extent(
    class: &str,
    img: &[u8],
    dir: &mut SsdImage,
    p: &poolfile::Parsed,
    rng: &mut StdRng,
) -> Option<Damage> {
    let tiered: Vec<(&LiveRecord, ExtentAt)> = p
        .live
        .iter()
        .filter_map(|r| Some((r, r.extent(img)?)))
        .collect();
    if tiered.is_empty() {
        return None;
    }
    let (r, e) = tiered[rng.gen_range(0..tiered.len())];
    let file = dir.files.get_mut(&e.file)?;
    let what = if class == "extent-bitflip" {
        let at = e.offset + rng.gen_range(0..e.bytes as u64);
        let bit = rng.gen_range(0..8);
        file.flip(at, bit);
        format!("bit {bit} of byte {at:#x} of data file {}", e.file)
    } else {
        let sectors = e.bytes as u64 / SECTOR as u64;
        let from = rng.gen_range(0..sectors) * SECTOR as u64;
        let zeros = vec![0u8; (e.bytes as u64 - from) as usize];
        file.blocks.push(Block {
            offset: e.offset + from,
            data: zeros.into(),
        });
        format!(
            "extent {:#x}+{} of data file {} zeroed from +{from}",
            e.offset, e.bytes, e.file
        )
    };
    Some(Damage {
        key: Some(r.key.clone()),
        what,
    })
}

fn inject(class: &str, img: &mut [u8], p: &poolfile::Parsed, rng: &mut StdRng) -> Option<Damage> {
    let pick_record = |rng: &mut StdRng| -> Option<LiveRecord> {
        (!p.live.is_empty()).then(|| p.live[rng.gen_range(0..p.live.len())].clone())
    };
    match class {
        "record-bitflip" => {
            let r = pick_record(rng)?;
            let at = rng.gen_range(r.record..r.body_end);
            let bit = rng.gen_range(0..8);
            flip(img, at, bit);
            Some(Damage {
                key: Some(r.key),
                what: format!(
                    "bit {bit} of byte {at:#x} (record {:#x}+{})",
                    r.record,
                    at - r.record
                ),
            })
        }
        "record-torn" => {
            let r = pick_record(rng)?;
            let from = rng.gen_range(r.record / 8 + 1..r.body_end.div_ceil(8)) * 8;
            let range = from as usize..r.body_end as usize;
            if img[range.clone()].iter().all(|&b| b == 0) {
                return None;
            }
            img[range].fill(0);
            Some(Damage {
                key: Some(r.key),
                what: format!("record {:#x} torn from +{}", r.record, from - r.record),
            })
        }
        "record-zero" => {
            let r = pick_record(rng)?;
            let a = rng.gen_range(r.record..r.body_end);
            let b = (a + rng.gen_range(1..64)).min(r.body_end);
            let range = a as usize..b as usize;
            if img[range.clone()].iter().all(|&x| x == 0) {
                return None;
            }
            img[range].fill(0);
            Some(Damage {
                key: Some(r.key),
                what: format!(
                    "record {:#x} zeroed +{}..+{}",
                    r.record,
                    a - r.record,
                    b - r.record
                ),
            })
        }
        "slot-bitflip" => {
            let r = pick_record(rng)?;
            let bit = rng.gen_range(1..64);
            flip(img, r.slot_addr + bit / 8, (bit % 8) as u32);
            Some(Damage {
                key: Some(r.key),
                what: format!("bit {bit} of slot {:#x}", r.slot_addr),
            })
        }
        "slot-zero" => {
            let r = pick_record(rng)?;
            img[r.slot_addr as usize..r.slot_addr as usize + 8].fill(0);
            Some(Damage {
                key: Some(r.key),
                what: format!("slot {:#x} zeroed", r.slot_addr),
            })
        }
        "header-bitflip" => {
            let committed: Vec<u32> = p
                .segments
                .iter()
                .enumerate()
                .filter(|(_, k)| !matches!(k, SegKind::Free | SegKind::Continuation))
                .map(|(i, _)| i as u32)
                .collect();
            if committed.is_empty() {
                return None;
            }
            let s = committed[rng.gen_range(0..committed.len())];
            let byte = rng.gen_range(0..64u64);
            let bit = rng.gen_range(0..8);
            flip(img, p.segment_offset(s) + byte, bit);
            Some(Damage {
                key: None,
                what: format!(
                    "segment {s} ({:?}) header byte {byte} bit {bit}",
                    p.segments[s as usize]
                ),
            })
        }
        other => panic!("unknown fault class {other}"),
    }
}

/// Checks every expected key: counts wrong values; returns the damaged
/// key's read outcome (error, intact, absent).
fn read_all(
    db: &Db,
    acked: &BTreeMap<Key, Val>,
    damaged: Option<&Key>,
    slot_damage: bool,
    t: &mut FaultTally,
    notes: &mut Vec<String>,
    others_lost: &mut u64,
) -> Option<&'static str> {
    let mut outcome = None;
    for (k, want) in acked {
        let got = db.get(k);
        let hit = damaged == Some(k);
        match got {
            Ok(Some(v)) if &v == want => {
                if hit {
                    outcome = Some("intact");
                }
            }
            Ok(Some(_)) if hit && slot_damage => {
                t.slot_stale += 1;
                outcome = Some("stale");
            }
            Ok(Some(v)) => {
                t.wrong_values += 1;
                notes.push(format!(
                    "get {} returned {} bytes that are not its value",
                    show_key(k),
                    v.len()
                ));
            }
            Ok(None) => {
                if hit {
                    outcome = Some("absent");
                } else {
                    *others_lost += 1;
                }
            }
            Err(_) => {
                if hit {
                    outcome = Some("error");
                } else {
                    *others_lost += 1;
                }
            }
        }
    }
    outcome
}

/// Injects `per_class` faults of every class into `image` (tiered: with
/// its data directory `ssd`) and classifies the outcomes. `notes` receives
/// a description of each failure. The damaged pool is written to `path`,
/// its data directory next to it.
#[allow(clippy::too_many_arguments)]
pub fn run(
    image: &[u8],
    ssd: Option<&SsdImage>,
    expect: &Expect,
    options: &Options,
    per_class: usize,
    rng: &mut StdRng,
    path: &Path,
    notes: &mut Vec<String>,
) -> FaultReport {
    let mut report = FaultReport::new();
    let Some(parsed) = poolfile::parse(image) else {
        return report;
    };
    let judge = Judge {
        path,
        data_dir: path.with_extension("data"),
        options: Options {
            verify_reads: true,
            ..oracle_options(options, expect.now_ms)
        },
        acked: expect.present(),
    };
    for &class in CLASSES {
        let t = report.entry(class).or_default();
        for n in 0..per_class {
            let mut img = image.to_vec();
            let mut dir = ssd.cloned();
            if n % 2 == 1 {
                // As after a crash: no trusted key count.
                img[SB_CLEAN_STATE..SB_CLEAN_STATE + 8].fill(0);
            }
            let damage = (0..10).find_map(|_| match (class.starts_with("extent"), &mut dir) {
                (true, Some(d)) => inject_extent(class, &img, d, &parsed, rng),
                (true, None) => None,
                (false, _) => inject(class, &mut img, &parsed, rng),
            });
            let Some(d) = damage else {
                continue;
            };
            t.injected += 1;
            judge.judge(class, &d, &img, dir.as_ref(), t, notes);
        }
    }
    report
}

/// What every damaged image of a run is judged against.
struct Judge<'a> {
    /// Where the damaged image is written (tiered: its data directory).
    path: &'a Path,
    data_dir: std::path::PathBuf,
    /// The oracle's options, with `verify_reads` on.
    options: Options,
    /// The acknowledged keys that hold a value, with it.
    acked: BTreeMap<Key, Val>,
}

impl Judge<'_> {
    /// Opens `img`, damaged by `d` (of `class`), and counts in `t` what the
    /// open, `check()` and reads (before and after new writes) make of it.
    fn judge(
        &self,
        class: &'static str,
        d: &Damage,
        img: &[u8],
        dir: Option<&SsdImage>,
        t: &mut FaultTally,
        notes: &mut Vec<String>,
    ) {
        let mut local = Vec::new();
        let failures_before = t.failures;
        let ssd = dir.map(|d| (d, self.data_dir.as_path()));
        oracle::write_image(img, ssd, self.path).expect("write the damaged image");
        let extent = class.starts_with("extent");
        let db = match Db::open(self.path, self.options.clone()) {
            Ok(db) => db,
            Err(e) => {
                t.open_error += 1;
                if extent {
                    t.failures += 1;
                    notes.push(format!("{class}: {}: the open failed: {e}", d.what));
                }
                return;
            }
        };
        db.wait_for_rebuild();
        let reported = db.check().map(|r| !r.is_ok()).unwrap_or(true);
        if reported {
            t.check_reported += 1;
        } else {
            t.check_silent += 1;
            if class.starts_with("record") || extent {
                t.failures += 1;
                local.push("check() did not report record damage".to_string());
            }
        }
        let wrong_before = t.wrong_values;
        let mut lost_before = 0;
        let slot_damage = class.starts_with("slot");
        match read_all(
            &db,
            &self.acked,
            d.key.as_ref(),
            slot_damage,
            t,
            &mut local,
            &mut lost_before,
        ) {
            Some("error") => t.read_error += 1,
            Some("intact") => {
                t.read_intact += 1;
                if class.starts_with("record") || extent {
                    t.failures += 1;
                    local.push("a read returned the damaged record as intact".into());
                }
            }
            Some("absent") if extent => {
                t.read_absent += 1;
                t.failures += 1;
                local.push("a read of the key with the damaged extent found nothing".into());
            }
            Some("absent") => t.read_absent += 1,
            _ => {}
        }
        if extent {
            self.judge_extent_read(&db, d, lost_before, t, &mut local);
        }
        // New writes after the damage must not turn it into wrong values.
        let mut acked_after = self.acked.clone();
        for i in 0..6u64 {
            let k = format!("fault-write-{i}").into_bytes();
            let v = format!("after-damage-{i}-{}", "w".repeat(40 * i as usize)).into_bytes();
            if db.put(&k, &v).is_ok() {
                acked_after.insert(k, v);
            }
        }
        let mut lost_after = 0;
        read_all(
            &db,
            &acked_after,
            d.key.as_ref(),
            slot_damage,
            t,
            &mut local,
            &mut lost_after,
        );
        if lost_after > lost_before {
            t.collateral += 1;
            if t.collateral <= 3 {
                notes.push(format!(
                    "finding ({class}: {}): {} other key(s) lost after new writes",
                    d.what,
                    lost_after - lost_before
                ));
            }
        }
        if t.wrong_values > wrong_before {
            t.failures += 1;
        }
        drop(db);
        if t.failures > failures_before {
            notes.push(format!("{class}: {}: {}", d.what, local.join("; ")));
        }
    }

    /// Extent damage: the damaged key's read fails with
    /// `ExtentCorruption` (its checksum), and no other key was lost.
    fn judge_extent_read(
        &self,
        db: &Db,
        d: &Damage,
        others_lost: u64,
        t: &mut FaultTally,
        local: &mut Vec<String>,
    ) {
        let Some(k) = &d.key else { return };
        match db.get(k) {
            Err(persimmon::Error::ExtentCorruption { .. }) => {}
            other => {
                t.failures += 1;
                local.push(format!(
                    "get {} returned {:?}, not ExtentCorruption",
                    show_key(k),
                    other.map(|v| v.map(|v| v.len()))
                ));
            }
        }
        if others_lost > 0 {
            t.failures += 1;
            local.push(format!(
                "{others_lost} other key(s) failed to read after damage to one extent"
            ));
        }
    }
}
