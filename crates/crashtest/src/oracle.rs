//! The oracle: reopen a post-crash image with the real recovery code and
//! judge it against what the workload was told.
//!
//! Expected state (`Expect`): every key the workload touched, with the value
//! its last *acknowledged* operation left (or absent), and the keys of the
//! operations in flight with the set of values they may legally hold
//! (before or after the operation, per key). When a reader saw an in-flight
//! key's new value before the crash, the old value is no longer legal.
//!
//! Checks on one image, in order (the first failure is reported):
//! 1. `Db::open` succeeds;
//! 2. after `wait_for_rebuild`, `check()` reports no error;
//! 3. every acknowledged key holds its value, every deleted key is absent,
//!    every in-flight key holds one of its legal values;
//! 4. the key count `check()` found equals the keys present;
//! 5. space: every index segment owns a directory entry, and every dead
//!    data segment (no live record, not a lane's newest) is reported
//!    reclaimable by `check()` or already freed (see `poolfile.rs`);
//! 6. sometimes (`write_probe`): a put after recovery lands and `check()`
//!    still passes.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

use persimmon::{Db, Options};

use crate::poolfile;

pub type Key = Vec<u8>;
pub type Val = Vec<u8>;

#[derive(Clone, Default)]
pub struct Expect {
    /// Acknowledged state: `Some(value)` present, `None` absent.
    pub acked: BTreeMap<Key, Option<Val>>,
    /// Keys of operations in flight → legal values (`None` = absent).
    pub in_flight: BTreeMap<Key, Vec<Option<Val>>>,
}

impl Expect {
    /// The legal values of `key` right now.
    pub fn legal(&self, key: &[u8]) -> Vec<Option<Val>> {
        match self.in_flight.get(key) {
            Some(l) => l.clone(),
            None => vec![self.acked.get(key).cloned().flatten()],
        }
    }

    pub fn current(&self, key: &[u8]) -> Option<Val> {
        self.acked.get(key).cloned().flatten()
    }

    /// Marks `key` in flight with `after` (adding to what is legal already).
    pub fn begin(&mut self, key: &[u8], after: Option<Val>) {
        let before = self.current(key);
        let l = self
            .in_flight
            .entry(key.to_vec())
            .or_insert_with(|| vec![before]);
        if !l.contains(&after) {
            l.push(after);
        }
    }

    /// The operation on `key` returned, leaving `value`.
    pub fn ack(&mut self, key: &[u8], value: Option<Val>) {
        self.in_flight.remove(key);
        self.acked.insert(key.to_vec(), value);
    }

    /// A reader saw `seen` for an in-flight key: if that is a value the
    /// operation writes, the old value may no longer come back.
    pub fn reader_saw(&mut self, key: &[u8], seen: &Option<Val>) -> Result<(), String> {
        let before = self.current(key);
        let Some(l) = self.in_flight.get_mut(key) else {
            return Ok(());
        };
        if !l.contains(seen) {
            return Err(format!(
                "reader saw {} for in-flight key {}, not a legal value",
                show(seen),
                show_key(key)
            ));
        }
        if *seen != before {
            l.retain(|v| v == seen);
        }
        Ok(())
    }

    /// A digest of the expectation (images are deduplicated per digest).
    pub fn digest(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        for (k, v) in &self.acked {
            h.update(k);
            h.update(&[v.is_some() as u8]);
            if let Some(v) = v {
                h.update(&xxhash_rust::xxh3::xxh3_64(v).to_le_bytes());
            }
        }
        h.update(b"|");
        for (k, l) in &self.in_flight {
            h.update(k);
            for v in l {
                h.update(&[v.is_some() as u8]);
                if let Some(v) = v {
                    h.update(&xxhash_rust::xxh3::xxh3_64(v).to_le_bytes());
                }
            }
        }
        h.digest()
    }
}

pub fn show_key(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

pub fn show(v: &Option<Val>) -> String {
    match v {
        None => "absent".into(),
        Some(v) if v.len() <= 24 => format!("{:?}", String::from_utf8_lossy(v)),
        Some(v) => format!(
            "{} bytes {:?}..",
            v.len(),
            String::from_utf8_lossy(&v[..16])
        ),
    }
}

/// Options for opening images: no cleaner (deterministic), `create: false`.
pub fn oracle_options(base: &Options) -> Options {
    Options {
        create: false,
        cleaner: false,
        ..base.clone()
    }
}

/// Writes `img` to `path` and runs every check. `Err` describes the first
/// inconsistency.
pub fn check_image(
    img: &[u8],
    path: &Path,
    options: &Options,
    expect: &Expect,
    write_probe: bool,
) -> Result<(), String> {
    std::fs::write(path, img).map_err(|e| format!("write image: {e}"))?;
    let parsed = poolfile::parse(img).ok_or("image has no readable superblock")?;
    let db = Db::open(path, oracle_options(options)).map_err(|e| format!("open failed: {e}"))?;
    db.wait_for_rebuild();
    let report = db
        .check()
        .map_err(|e| format!("check failed to run: {e}"))?;
    if !report.is_ok() {
        return Err(format!(
            "check reports {} error(s): {}",
            report.errors.len(),
            report
                .errors
                .iter()
                .take(3)
                .cloned()
                .collect::<Vec<_>>()
                .join("; ")
        ));
    }
    let mut present = 0u64;
    let keys: BTreeSet<&Key> = expect.acked.keys().chain(expect.in_flight.keys()).collect();
    for key in keys {
        let got = db
            .get(key)
            .map_err(|e| format!("get {}: {e}", show_key(key)))?;
        let legal = expect.legal(key);
        if !legal.contains(&got) {
            let what = if expect.in_flight.contains_key(key.as_slice()) {
                "in-flight key"
            } else {
                "acknowledged key"
            };
            return Err(format!(
                "{what} {} holds {}, expected {}",
                show_key(key),
                show(&got),
                legal.iter().map(show).collect::<Vec<_>>().join(" or ")
            ));
        }
        present += got.is_some() as u64;
    }
    if report.keys != present {
        return Err(format!(
            "check counts {} keys, the workload expects {present}",
            report.keys
        ));
    }
    if !parsed.orphan_index_segments.is_empty() {
        return Err(format!(
            "index segments {:?} own no directory entry (leaked)",
            parsed.orphan_index_segments
        ));
    }
    let mut reclaimable = report.reclaimable_segments;
    if write_probe {
        let k = b"crashtest-probe-after-recovery";
        db.put(k, b"probe")
            .map_err(|e| format!("put after recovery: {e}"))?;
        if db.get(k).map_err(|e| e.to_string())?.as_deref() != Some(&b"probe"[..]) {
            return Err("put after recovery is not readable".into());
        }
        let r = db.check().map_err(|e| e.to_string())?;
        if !r.is_ok() {
            return Err(format!("check after a put after recovery: {:?}", r.errors));
        }
        reclaimable = r.reclaimable_segments;
        db.delete(k)
            .map_err(|e| format!("delete after recovery: {e}"))?;
    }
    drop(db);
    // Dead segments still committed after the engine closed must all have
    // been among those it reported reclaimable (the rest it freed).
    let after = std::fs::read(path).map_err(|e| format!("read image back: {e}"))?;
    if let Some(p) = poolfile::parse(&after) {
        let dead = p.dead_heads();
        if dead.len() as u32 > reclaimable {
            return Err(format!(
                "space leak: {} dead data segment(s) {:?} after recovery, only {reclaimable} reported reclaimable",
                dead.len(),
                dead
            ));
        }
    }
    Ok(())
}
