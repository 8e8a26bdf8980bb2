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
//! 2. `wait_for_rebuild` returns (within `RECOVERY_TIMEOUT`: a recovery
//!    that hangs is an inconsistency too), then `check()` reports no error;
//! 3. every acknowledged key holds its value, every deleted key is absent,
//!    every in-flight key holds one of its legal values;
//! 4. the key count `check()` found equals the keys present;
//! 5. space: every index segment owns a directory entry, and every dead
//!    data segment (no live record, not a lane's newest) is reported
//!    reclaimable by `check()` or already freed (see `poolfile.rs`);
//! 6. sometimes (`write_probe`): a put after recovery lands and `check()`
//!    still passes.
//!
//! With the ordered index (`Options::ordered_index`), after
//! `wait_for_rebuild` (which includes the walk that unlinks orphan nodes):
//! 7. `check()` counts no orphan node, and the walk is reported done;
//! 8. `range_keys(..)` lists exactly the keys `get` finds present, strictly
//!    ascending; `range(..).rev()` gives them in reverse with the values
//!    `get` returns; `first`/`last`, `count_range(..)` and one bounded range
//!    agree with that listing;
//! 9. the write probe's key appears in the listing, and is gone after its
//!    delete;
//! 10. after the engine closed, the skiplist on media (followed from the
//!     bytes by `poolfile::ordered_keys`) holds exactly the present keys:
//!     the repair of orphans was durable.
//!
//! With the point index in DRAM (`Options::point_index`, format version 3;
//! the image holds no index segment, the skiplist nodes' record words name
//! the records):
//! 11. the engine opened the pool with `PointIndex::Dram`, and the image
//!     holds no index segment;
//! 12. right after `Db::open` returns, before `wait_for_rebuild`, while the
//!     engine may still be entering keys into the DRAM index (a key it
//!     misses is looked up through its node), every key holds a legal value
//!     (check 3's rules), and after the wait it holds the very same value;
//! 13. after the wait `stats()` reports the point index ready, no index
//!     segment in the pool and a DRAM index of non-zero size;
//! 14. after the engine closed, the record words of the nodes on media name
//!     exactly the present keys' records with their values, every one with
//!     its persist bit (the rebuild helped persist the half-done ones).

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use persimmon::{Db, Options, PointIndex};

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

/// What a passing `check_image` saw.
pub struct Checked {
    /// DRAM point index: `stats()` said the DRAM index was not ready yet
    /// just before check 12's reads began (the first of them, at least,
    /// could go through a node).
    pub read_before_ready: bool,
}

/// Writes `img` to `path` and runs every check. `Err` describes the first
/// inconsistency.
pub fn check_image(
    img: &[u8],
    path: &Path,
    options: &Options,
    expect: &Expect,
    write_probe: bool,
) -> Result<Checked, String> {
    std::fs::write(path, img).map_err(|e| format!("write image: {e}"))?;
    let parsed = poolfile::parse(img).ok_or("image has no readable superblock")?;
    let db = Db::open(path, oracle_options(options)).map_err(|e| format!("open failed: {e}"))?;
    let db = Arc::new(db);
    let dram = options.point_index == PointIndex::Dram;
    let mut read_before_ready = false;
    if db.point_index() != options.point_index {
        return Err(format!(
            "the pool's point index is {:?}, the workload created it {:?}",
            db.point_index(),
            options.point_index
        ));
    }
    let early = if dram {
        if parsed
            .segments
            .iter()
            .any(|k| matches!(k, poolfile::SegKind::Index { .. }))
        {
            return Err("an index segment in a pool whose point index lives in DRAM".into());
        }
        // Nothing here that waits for the rebuild (`len()`, `iter()`).
        read_before_ready = !db.stats().point_index_ready;
        Some(read_expected(&db, expect).map_err(|e| {
            format!("right after open (the DRAM index being rebuilt, nodes serving misses): {e}")
        })?)
    } else {
        None
    };
    wait_recovered(&db, path)?;
    let report = clean_check(&db)?;
    let present = read_expected(&db, expect)?;
    if let Some(early) = &early {
        same_values(early, &present)?;
        check_dram(&db)?;
    }
    if report.keys != present.len() as u64 {
        return Err(format!(
            "check counts {} keys, the workload expects {}",
            report.keys,
            present.len()
        ));
    }
    if db.has_ordered_index() != options.ordered_index {
        return Err(format!(
            "the pool has the ordered index: {}, the workload asked for {}",
            db.has_ordered_index(),
            options.ordered_index
        ));
    }
    if options.ordered_index {
        check_ordered(&db, &report, &present)?;
    }
    if !parsed.orphan_index_segments.is_empty() {
        return Err(format!(
            "index segments {:?} own no directory entry (leaked)",
            parsed.orphan_index_segments
        ));
    }
    let reclaimable = if write_probe {
        probe_write(&db, options)?
    } else {
        report.reclaimable_segments
    };
    drop(db);
    check_closed_image(path, options, &present, reclaimable)?;
    Ok(Checked { read_before_ready })
}

/// Check 2's second half: `check()` runs and reports no error.
fn clean_check(db: &Db) -> Result<persimmon::CheckReport, String> {
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
    Ok(report)
}

/// Check 12's second half: every key holds after `wait_for_rebuild` the
/// value it held right after open.
fn same_values(early: &BTreeMap<Key, Val>, present: &BTreeMap<Key, Val>) -> Result<(), String> {
    let keys: BTreeSet<&Key> = early.keys().chain(present.keys()).collect();
    match keys.into_iter().find(|k| early.get(*k) != present.get(*k)) {
        Some(k) => Err(format!(
            "key {} held {} right after open, {} after wait_for_rebuild",
            show_key(k),
            show(&early.get(k).cloned()),
            show(&present.get(k).cloned())
        )),
        None => Ok(()),
    }
}

/// Checks 6 and 9: a put after recovery lands (and is listed by the
/// ordered index), `check()` still passes, and its delete takes it away
/// again. Returns the reclaimable segments `check()` then reports.
fn probe_write(db: &Db, options: &Options) -> Result<u32, String> {
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
    if options.ordered_index && !listing(db)?.iter().any(|l| l.as_slice() == k) {
        return Err("the put after recovery is missing from range_keys(..)".into());
    }
    db.delete(k)
        .map_err(|e| format!("delete after recovery: {e}"))?;
    if options.ordered_index && listing(db)?.iter().any(|l| l.as_slice() == k) {
        return Err("range_keys(..) still lists the key deleted after recovery".into());
    }
    Ok(r.reclaimable_segments)
}

/// Checks 5 (space), 10 and 14 on the image the engine left at `path`
/// after a clean close.
fn check_closed_image(
    path: &Path,
    options: &Options,
    present: &BTreeMap<Key, Val>,
    reclaimable: u32,
) -> Result<(), String> {
    // Dead segments still committed after the engine closed must all have
    // been among those it reported reclaimable (the rest it freed).
    let after = std::fs::read(path).map_err(|e| format!("read image back: {e}"))?;
    let Some(p) = poolfile::parse(&after) else {
        return Ok(());
    };
    if options.ordered_index {
        let on_media = poolfile::ordered_keys(&after, &p)
            .map_err(|e| format!("skiplist on media after recovery: {e}"))?;
        let want: Vec<&Key> = present.keys().collect();
        if on_media.iter().collect::<Vec<_>>() != want {
            return Err(format!(
                "skiplist on media after recovery and a clean close: {}",
                list_diff(&on_media, present)
            ));
        }
    }
    if options.point_index == PointIndex::Dram {
        check_words_on_media(&after, &p, present)?;
    }
    let dead = p.dead_heads();
    if dead.len() as u32 > reclaimable {
        return Err(format!(
            "space leak: {} dead data segment(s) {:?} after recovery, only {reclaimable} reported reclaimable",
            dead.len(),
            dead
        ));
    }
    Ok(())
}

/// Every key of `expect` by `get`, each judged by check 3's rules; returns
/// the present ones with their values.
fn read_expected(db: &Db, expect: &Expect) -> Result<BTreeMap<Key, Val>, String> {
    let mut present: BTreeMap<Key, Val> = BTreeMap::new();
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
        if let Some(v) = got {
            present.insert(key.clone(), v);
        }
    }
    Ok(present)
}

/// Check 13 of the module header (after `wait_for_rebuild`).
fn check_dram(db: &Db) -> Result<(), String> {
    let s = db.stats();
    if s.point_index != PointIndex::Dram || !s.point_index_ready {
        return Err(format!(
            "after wait_for_rebuild: stats say point index {:?}, ready {}",
            s.point_index, s.point_index_ready
        ));
    }
    if s.segments_index != 0 || s.dram_index_bytes == 0 {
        return Err(format!(
            "DRAM point index: {} index segment(s) in the pool, {} bytes of DRAM index",
            s.segments_index, s.dram_index_bytes
        ));
    }
    Ok(())
}

/// Check 14: the record words on media after a clean close.
fn check_words_on_media(
    img: &[u8],
    p: &poolfile::Parsed,
    present: &BTreeMap<Key, Val>,
) -> Result<(), String> {
    let on_media: BTreeMap<&[u8], &[u8]> = p
        .live
        .iter()
        .map(|r| (r.key.as_slice(), r.value(img)))
        .collect();
    let want: BTreeMap<&[u8], &[u8]> = present
        .iter()
        .map(|(k, v)| (k.as_slice(), v.as_slice()))
        .collect();
    if on_media != want {
        let differ: Vec<String> = want
            .iter()
            .filter(|(k, v)| on_media.get(*k) != Some(*v))
            .chain(on_media.iter().filter(|(k, _)| !want.contains_key(*k)))
            .take(3)
            .map(|(k, _)| show_key(k))
            .collect();
        return Err(format!(
            "node record words on media after recovery and a clean close name {} records, {} keys are present; differ at {differ:?}",
            on_media.len(),
            want.len()
        ));
    }
    let words = poolfile::record_words(img, p)?;
    if let Some(w) = words.iter().find(|w| w.half_done()) {
        return Err(format!(
            "node {:#x} ({}): record word {:#x} without its persist bit after recovery and a clean close",
            w.node,
            show_key(&w.key),
            w.word
        ));
    }
    Ok(())
}

/// How long the background work after open (rebuild, ordered walk) may take
/// on an image of a few MiB before it counts as hung.
const RECOVERY_TIMEOUT: Duration = Duration::from_secs(20);

/// `wait_for_rebuild`, with a hang reported instead of waited for. A hung
/// engine's threads cannot be stopped: its `Db` is left to the waiting
/// thread (never dropped, which would join them), and its image file is
/// moved aside, so the next image is written to a new file rather than
/// under the stuck engine's mapping.
fn wait_recovered(db: &Arc<Db>, path: &Path) -> Result<(), String> {
    let (tx, rx) = mpsc::channel();
    let waiter = db.clone();
    let handle = std::thread::Builder::new()
        .name("crashtest-recovery-wait".into())
        .spawn(move || {
            waiter.wait_for_rebuild();
            let _ = tx.send(());
        })
        .map_err(|e| format!("spawn the recovery waiter: {e}"))?;
    match rx.recv_timeout(RECOVERY_TIMEOUT) {
        Ok(()) => {
            // Its reference is gone once it ended: the caller's drop closes.
            let _ = handle.join();
            Ok(())
        }
        Err(_) => {
            let _ = std::fs::rename(path, path.with_extension("hung"));
            Err(format!(
                "recovery hangs: wait_for_rebuild did not return within {} s",
                RECOVERY_TIMEOUT.as_secs()
            ))
        }
    }
}

/// Every key of `range_keys(..)`, ascending.
fn listing(db: &Db) -> Result<Vec<Key>, String> {
    db.range_keys::<[u8]>(..)
        .map_err(|e| format!("range_keys(..): {e}"))?
        .collect::<persimmon::Result<Vec<Key>>>()
        .map_err(|e| format!("range_keys(..) item: {e}"))
}

/// How a key listing differs from the present keys (for messages).
fn list_diff(listed: &[Key], present: &BTreeMap<Key, Val>) -> String {
    if let Some(w) = listed.windows(2).find(|w| w[0] >= w[1]) {
        return format!(
            "not strictly ascending ({} then {})",
            show_key(&w[0]),
            show_key(&w[1])
        );
    }
    let listed_set: BTreeSet<&Key> = listed.iter().collect();
    let extra: Vec<String> = listed
        .iter()
        .filter(|k| !present.contains_key(*k))
        .take(3)
        .map(|k| show_key(k))
        .collect();
    let missing: Vec<String> = present
        .keys()
        .filter(|k| !listed_set.contains(k))
        .take(3)
        .map(|k| show_key(k))
        .collect();
    format!(
        "{} keys listed, {} present; listed but absent {extra:?}, present but not listed {missing:?}",
        listed.len(),
        present.len()
    )
}

/// Checks 7 to 8 of the module header: the ordered index agrees with the
/// point index (`present`: every key `get` found, with its value).
fn check_ordered(
    db: &Db,
    report: &persimmon::CheckReport,
    present: &BTreeMap<Key, Val>,
) -> Result<(), String> {
    if report.ordered_orphans != 0 {
        return Err(format!(
            "check counts {} orphan node(s) after the walk",
            report.ordered_orphans
        ));
    }
    if report.ordered_nodes != present.len() as u64 {
        return Err(format!(
            "check counts {} linked nodes, {} keys are present",
            report.ordered_nodes,
            present.len()
        ));
    }
    if !db.stats().ordered_walk_done {
        return Err("the ordered index's walk is not done after wait_for_rebuild".into());
    }
    let listed = listing(db)?;
    if !listed.iter().eq(present.keys()) {
        return Err(format!("range_keys(..): {}", list_diff(&listed, present)));
    }
    let mut reverse: Vec<(Key, Val)> = db
        .range::<[u8]>(..)
        .map_err(|e| format!("range(..): {e}"))?
        .rev()
        .collect::<persimmon::Result<_>>()
        .map_err(|e| format!("range(..).rev() item: {e}"))?;
    reverse.reverse();
    if !reverse.iter().map(|(k, v)| (k, v)).eq(present.iter()) {
        let keys: Vec<Key> = reverse.iter().map(|(k, _)| k.clone()).collect();
        return Err(format!(
            "range(..).rev() disagrees with get: {}",
            if keys.iter().eq(present.keys()) {
                "a value differs".to_string()
            } else {
                list_diff(&keys, present)
            }
        ));
    }
    let first = db.first().map_err(|e| format!("first: {e}"))?;
    let last = db.last().map_err(|e| format!("last: {e}"))?;
    let want_first = present.iter().next().map(|(k, v)| (k.clone(), v.clone()));
    let want_last = present
        .iter()
        .next_back()
        .map(|(k, v)| (k.clone(), v.clone()));
    if first != want_first || last != want_last {
        let key = |e: &Option<(Key, Val)>| e.as_ref().map(|(k, _)| show_key(k));
        return Err(format!(
            "first/last are {:?}/{:?}, the present keys run from {:?} to {:?}",
            key(&first),
            key(&last),
            key(&want_first),
            key(&want_last)
        ));
    }
    let count = db
        .count_range::<[u8]>(..)
        .map_err(|e| format!("count_range(..): {e}"))?;
    if count != present.len() as u64 {
        return Err(format!(
            "count_range(..) = {count}, {} keys are present",
            present.len()
        ));
    }
    // One bounded range, inclusive at both ends, from a third to two thirds.
    if listed.len() >= 3 {
        let (a, b) = (&listed[listed.len() / 3], &listed[2 * listed.len() / 3]);
        let got: Vec<Key> = db
            .range_keys(a.as_slice()..=b.as_slice())
            .map_err(|e| format!("range_keys(a..=b): {e}"))?
            .collect::<persimmon::Result<_>>()
            .map_err(|e| format!("range_keys(a..=b) item: {e}"))?;
        let want = &listed[listed.len() / 3..=2 * listed.len() / 3];
        if got != want {
            return Err(format!(
                "range_keys({}..={}) lists {} keys, {} expected",
                show_key(a),
                show_key(b),
                got.len(),
                want.len()
            ));
        }
    }
    Ok(())
}
