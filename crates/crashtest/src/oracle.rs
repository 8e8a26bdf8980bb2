//! The oracle: reopen a post-crash image with the real recovery code and
//! judge it against what the workload was told.
//!
//! Expected state (`Expect`): every key the workload touched, with the
//! state its last *acknowledged* operation left (absent, or a value and its
//! deadline), and the keys of the operations in flight with the set of
//! states they may legally hold (before or after the operation, per key).
//! When a reader saw an in-flight key's new value before the crash, the
//! old value is no longer legal. An operation that writes several keys
//! together (a batch, a transaction's commit) also forms a *group*: the
//! per-key rule alone would let a crash keep some of its writes and lose
//! others. A deadline is measured against the workload's clock
//! (`Expect::now_ms`, set with the manual clock the engines share): a key
//! whose deadline is at or before it must read as absent.
//!
//! Checks on one image, in order (the first failure is reported):
//! 1. `Db::open` succeeds (with a manual clock: the engine reads the time
//!    the expectation was made at);
//! 2. `wait_for_rebuild` returns (within `RECOVERY_TIMEOUT`: a recovery
//!    that hangs is an inconsistency too), then `check()` reports no error;
//! 3. every acknowledged key holds its value and deadline (`get` and
//!    `ttl`), every deleted key is absent, every in-flight key holds one of
//!    its legal states; a key whose deadline has passed reads as absent,
//!    whatever the image holds for it (an expired key never comes back);
//!    the joint rule: the keys of each group whose old and new states
//!    differ hold all their old states or all their new ones (a group is
//!    acknowledged as a whole once its operation returned);
//! 4. the key count `check()` found equals the keys present (plus, at
//!    most, the keys that may still hold an expired record on media,
//!    `Expect::maybe_expired`: a passed deadline hides a key at once, its
//!    record goes only when the expiry, a write or the cleaner takes it;
//!    checks 7, 10 and 14 allow for the same keys);
//! 5. space: every index segment owns a directory entry, and every dead
//!    data segment (no live record, not a lane's newest) is reported
//!    reclaimable by `check()` or already freed (see `poolfile.rs`);
//! 6. sometimes (`WriteProbe`): a put after recovery lands and `check()`
//!    still passes (`WriteProbe::Tiered`: a value on the tier, in a new
//!    data file numbered after those the crash left).
//!
//! On a tiered pool (`SB_TIER`, data directory), the image comes with the
//! directory image of the same moment (`ssd.rs`: unsynced writes dropped,
//! applied or torn), and the checks above cover the tiered values too:
//! `check()` reads every extent a record names back and verifies it (CRC,
//! bounds, tail, patches) and the live bytes per data file, and check 3's
//! `get` of every key returns the exact value — a value whose extent a
//! crash lost or tore is an error there, never accepted. At a crash point
//! inside a data file's sync the expectation is narrowed to old states
//! (`Expect::before_only`, see `sim.rs`).
//!
//! With the ordered index (`Options::ordered_index`), after
//! `wait_for_rebuild` (which includes the walk that unlinks orphan nodes):
//! 7. `check()` counts no orphan node, a linked node per present key, and
//!    the walk is reported done;
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
//!
//! With the ordered index in leaves (format version 6, superblock flag
//! `poolfile::FLAG_LEAVES`; the record words are leaf entries, see
//! `poolfile.rs`), checks 7 to 14 apply as they are (a leaf entry in
//! range is the key's record word, the keys on media are the leaves'
//! entries in range, by key), and besides:
//! 15. the image's superblock says leaves exactly when the workload asked
//!     for them (`Options::ordered_layout` with the DRAM point index);
//! 16. before the open, the crash image's leaves are readable by the
//!     harness's own parser (`poolfile::read_leaves`: magic, low keys and
//!     their CRCs, one leaf per low key, the first one's empty) and breach
//!     none of the rules that hold in every image: no key named by two
//!     entries in range, no entry below its leaf's low key, every prefix
//!     its key's (copies above a leaf's range, an interrupted split's, are
//!     allowed here);
//! 17. after the engine closed, no such copy is left (the rebuild cleared
//!     them) and check 16 still holds.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;
use std::sync::{mpsc, Arc};
use std::time::Duration;

use persimmon::format::SUPERBLOCK_BYTES;
use persimmon::{Clock, Db, Options, OrderedLayout, PointIndex, Ttl};

use crate::poolfile;
use crate::ssd::SsdImage;

pub type Key = Vec<u8>;
pub type Val = Vec<u8>;

/// What a key holds: its value and its deadline (ms of the workload's
/// clock; `None`: none). A key's *state* is `Option<Held>` (`None`: absent).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Held {
    pub value: Val,
    pub deadline: Option<u64>,
}

/// A key's state: `None` absent, else what it holds.
pub type State = Option<Held>;

impl Held {
    /// A value without a deadline.
    pub fn plain(value: Val) -> Held {
        Held {
            value,
            deadline: None,
        }
    }
}

/// One key of a group of writes that commit together: its state before
/// the operation and the state the operation leaves.
#[derive(Clone, Debug)]
pub struct GroupWrite {
    pub key: Key,
    pub before: State,
    pub after: State,
}

#[derive(Clone, Default)]
pub struct Expect {
    /// Acknowledged state of every key the workload touched.
    pub acked: BTreeMap<Key, State>,
    /// Keys of operations in flight → legal states.
    pub in_flight: BTreeMap<Key, Vec<State>>,
    /// The writes of operations in flight that change their keys together
    /// (a batch, a transaction's commit), by group number: every image
    /// shows all of a group's keys as before or all as after.
    pub groups: BTreeMap<u64, Vec<GroupWrite>>,
    next_group: u64,
    /// Now by the workload's clock: a deadline at or before it has passed,
    /// and its key reads as absent.
    pub now_ms: u64,
}

impl Expect {
    /// An empty expectation made at `now_ms` by the workload's clock.
    pub fn at(now_ms: u64) -> Expect {
        Expect {
            now_ms,
            ..Expect::default()
        }
    }

    /// `s` as a read at `now_ms` sees it: absent once its deadline passed.
    pub fn live(&self, s: &State) -> State {
        s.clone()
            .filter(|h| h.deadline.is_none_or(|d| d > self.now_ms))
    }

    /// The legal states of `key` right now (as stored, deadlines and all).
    pub fn legal_states(&self, key: &[u8]) -> Vec<State> {
        match self.in_flight.get(key) {
            Some(l) => l.clone(),
            None => vec![self.acked.get(key).cloned().flatten()],
        }
    }

    /// The values a read of `key` may legally return right now.
    pub fn legal(&self, key: &[u8]) -> Vec<Option<Val>> {
        let mut out: Vec<Option<Val>> = Vec::new();
        for s in self.legal_states(key) {
            let v = self.live(&s).map(|h| h.value);
            if !out.contains(&v) {
                out.push(v);
            }
        }
        out
    }

    /// Whether `seen` (a read of value and deadline) is a legal state of
    /// `key` right now.
    pub fn is_legal(&self, key: &[u8], seen: &State) -> bool {
        self.legal_states(key).iter().any(|s| self.live(s) == *seen)
    }

    /// The acknowledged state of `key`, as stored (an expired one too).
    pub fn stored(&self, key: &[u8]) -> State {
        self.acked.get(key).cloned().flatten()
    }

    /// The acknowledged value a read of `key` returns now.
    pub fn current(&self, key: &[u8]) -> Option<Val> {
        self.live(&self.stored(key)).map(|h| h.value)
    }

    /// The keys acknowledged present now (their deadlines not passed), with
    /// their values.
    pub fn present(&self) -> BTreeMap<Key, Val> {
        self.acked
            .iter()
            .filter_map(|(k, s)| Some((k.clone(), self.live(s)?.value)))
            .collect()
    }

    /// Marks `key` in flight with the value `after` (no deadline).
    pub fn begin(&mut self, key: &[u8], after: Option<Val>) {
        self.begin_state(key, after.map(Held::plain));
    }

    /// Marks `key` in flight with `after` (adding to what is legal already).
    pub fn begin_state(&mut self, key: &[u8], after: State) {
        let before = self.stored(key);
        let l = self
            .in_flight
            .entry(key.to_vec())
            .or_insert_with(|| vec![before]);
        if !l.contains(&after) {
            l.push(after);
        }
    }

    /// The operation on `key` returned, leaving `value` (no deadline).
    pub fn ack(&mut self, key: &[u8], value: Option<Val>) {
        self.ack_state(key, value.map(Held::plain));
    }

    /// The operation on `key` returned, leaving `state`.
    pub fn ack_state(&mut self, key: &[u8], state: State) {
        self.in_flight.remove(key);
        self.acked.insert(key.to_vec(), state);
    }

    /// An operation that writes `writes` together starts: each key goes in
    /// flight, and the writes form a group (see `groups`). Returns the
    /// group's number.
    pub fn begin_group(&mut self, writes: &[(Key, State)]) -> u64 {
        let id = self.next_group;
        self.next_group += 1;
        let group = writes
            .iter()
            .map(|(k, after)| {
                let before = self.stored(k);
                self.begin_state(k, after.clone());
                GroupWrite {
                    key: k.clone(),
                    before,
                    after: after.clone(),
                }
            })
            .collect();
        self.groups.insert(id, group);
        id
    }

    /// The operation of group `id` returned: every key holds its new state.
    pub fn ack_group(&mut self, id: u64) {
        for w in self.groups.remove(&id).unwrap_or_default() {
            self.ack_state(&w.key, w.after);
        }
    }

    /// The joint rule: for every group, the keys whose old and new states
    /// read differently show all old or all new states (`seen`: what a key
    /// reads as; a key it does not know, or that reads as neither, counts
    /// for no side — the per-key rule judges it).
    pub fn check_groups(&self, seen: impl Fn(&[u8]) -> Option<State>) -> Result<(), String> {
        for g in self.groups.values() {
            let (mut old, mut new) = (None, None);
            for w in g {
                let (before, after) = (self.live(&w.before), self.live(&w.after));
                if before == after {
                    continue;
                }
                match seen(&w.key) {
                    Some(s) if s == after => new = new.or(Some((w, s))),
                    Some(s) if s == before => old = old.or(Some((w, s))),
                    _ => {}
                }
            }
            if let (Some((n, ns)), Some((o, os))) = (new, old) {
                return Err(format!(
                    "the writes of one atomic operation ({} keys) are torn: {} holds its new state {}, {} its old state {}",
                    g.len(),
                    show_key(&n.key),
                    show_state(&ns),
                    show_key(&o.key),
                    show_state(&os)
                ));
            }
        }
        Ok(())
    }

    /// Keys that may hold on media a record whose deadline has passed (some
    /// legal state of theirs has expired): they read as absent, but until a
    /// write, the expiry or the cleaner takes the record away, `check()`
    /// counts them, the skiplist links them and their node words name them.
    pub fn maybe_expired(&self) -> BTreeSet<Key> {
        let keys: BTreeSet<&Key> = self.acked.keys().chain(self.in_flight.keys()).collect();
        keys.into_iter()
            .filter(|k| {
                self.legal_states(k)
                    .iter()
                    .any(|s| s.is_some() && self.live(s).is_none())
            })
            .cloned()
            .collect()
    }

    /// After a recovery: every key in flight reads as `seen` (each checked
    /// legal by the caller). Checks the joint rule, then acknowledges what
    /// they hold; no operation is in flight any more.
    pub fn resolve(&mut self, seen: BTreeMap<Key, State>) -> Result<(), String> {
        let torn = self.check_groups(|k| seen.get(k).cloned());
        self.groups.clear();
        for (k, s) in seen {
            self.ack_state(&k, s);
        }
        torn
    }

    /// A reader saw `seen` for an in-flight key: if that is a value the
    /// operation writes, the old value may no longer come back.
    pub fn reader_saw(&mut self, key: &[u8], seen: &Option<Val>) -> Result<(), String> {
        let before = self.current(key);
        if !self.in_flight.contains_key(key) {
            return Ok(());
        }
        if !self.legal(key).contains(seen) {
            return Err(format!(
                "reader saw {} for in-flight key {}, not a legal value",
                show(seen),
                show_key(key)
            ));
        }
        if *seen != before {
            let keep: Vec<State> = self
                .legal_states(key)
                .into_iter()
                .filter(|s| self.live(s).map(|h| h.value) == *seen)
                .collect();
            self.in_flight.insert(key.to_vec(), keep);
        }
        Ok(())
    }

    /// This expectation with every key in flight held to its state before
    /// its operation (the first of its legal states): a crash before any
    /// record of the operation can be published (in a data file's sync,
    /// `sim.rs`) leaves the old states, whatever the images hold.
    pub fn before_only(&self) -> Expect {
        let mut e = self.clone();
        for states in e.in_flight.values_mut() {
            states.truncate(1);
        }
        e
    }

    /// A digest of the expectation (images are deduplicated per digest).
    pub fn digest(&self) -> u64 {
        let mut h = xxhash_rust::xxh3::Xxh3::new();
        let state = |h: &mut xxhash_rust::xxh3::Xxh3, s: &State| {
            h.update(&[s.is_some() as u8]);
            if let Some(s) = s {
                h.update(&xxhash_rust::xxh3::xxh3_64(&s.value).to_le_bytes());
                h.update(&s.deadline.map_or(u64::MAX, |d| d).to_le_bytes());
            }
        };
        for (k, v) in &self.acked {
            h.update(k);
            state(&mut h, v);
        }
        h.update(b"|");
        for (k, l) in &self.in_flight {
            h.update(k);
            for v in l {
                state(&mut h, v);
            }
        }
        h.update(b"|");
        for (id, g) in &self.groups {
            h.update(&id.to_le_bytes());
            for w in g {
                h.update(&w.key);
            }
        }
        h.update(&self.now_ms.to_le_bytes());
        h.digest()
    }
}

pub fn show_key(k: &[u8]) -> String {
    String::from_utf8_lossy(k).into_owned()
}

/// A state for messages: the value, and its deadline if it has one.
pub fn show_state(s: &State) -> String {
    match s {
        Some(Held {
            value,
            deadline: Some(d),
        }) => format!("{} (deadline {d})", show(&Some(value.clone()))),
        s => show(&s.clone().map(|h| h.value)),
    }
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

/// Options for opening images: no cleaner and no background expiry
/// (deterministic), `create: false`; the workload's clock, a manual one
/// pinned at `now_ms`, the time of the expectation the image is checked
/// against (a crash point on a background thread — the disk domain's
/// syncs — is explored while the workload may move its own clock on).
pub fn oracle_options(base: &Options, now_ms: u64) -> Options {
    let clock = match &base.clock {
        Clock::Manual(_) => Clock::Manual(persimmon::ManualClock::new(now_ms)),
        other => other.clone(),
    };
    Options {
        create: false,
        cleaner: false,
        active_expiry: false,
        clock,
        ..base.clone()
    }
}

/// Check 6: whether a put follows the recovery, and of which value.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum WriteProbe {
    Off,
    /// A small value (in its record).
    Small,
    /// A value at the tier's threshold plus a tail: a new extent in a new
    /// data file (which the engine preallocates: costly on tmpfs, so kept
    /// for the images where a crash left data-file writes pending).
    Tiered,
}

/// What a passing `check_image` saw.
pub struct Checked {
    /// DRAM point index: `stats()` said the DRAM index was not ready yet
    /// just before check 12's reads began (the first of them, at least,
    /// could go through a node).
    pub read_before_ready: bool,
}

/// Writes `img` to `path` and runs every check. `Err` describes the first
/// inconsistency. A tiered pool's image comes with its data directory's
/// image (`ssd`: the image and where to put it): the pool image is written
/// naming that directory (`poolfile::set_data_dir`).
pub fn check_image(
    img: &[u8],
    ssd: Option<(&SsdImage, &Path)>,
    path: &Path,
    options: &Options,
    expect: &Expect,
    write_probe: WriteProbe,
) -> Result<Checked, String> {
    write_image(img, ssd, path)?;
    let parsed = poolfile::parse(img).ok_or("image has no readable superblock")?;
    let leaves = check_layout(img, options)?;
    // Check 16 reads the image before the open changes it; its verdict
    // comes after the open's own (whose message names the engine's view).
    let parsed_leaves = match leaves {
        true => check_leaves(img, &parsed, false).map_err(|e| format!("crash image: {e}")),
        false => Ok(()),
    };
    let db =
        Db::open(path, oracle_options(options, expect.now_ms)).map_err(
            |e| match &parsed_leaves {
                Ok(()) => format!("open failed: {e}"),
                Err(p) => format!("open failed: {e} ({p})"),
            },
        )?;
    parsed_leaves?;
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
    let expired = expect.maybe_expired();
    counted("keys", report.keys, &present, &expired)?;
    if db.has_ordered_index() != options.ordered_index {
        return Err(format!(
            "the pool has the ordered index: {}, the workload asked for {}",
            db.has_ordered_index(),
            options.ordered_index
        ));
    }
    if options.ordered_index {
        counted("linked nodes", report.ordered_nodes, &present, &expired)?;
        check_ordered(&db, &report, &present)?;
    }
    if !parsed.orphan_index_segments.is_empty() {
        return Err(format!(
            "index segments {:?} own no directory entry (leaked)",
            parsed.orphan_index_segments
        ));
    }
    let reclaimable = if write_probe != WriteProbe::Off {
        probe_write(&db, options, write_probe)?
    } else {
        report.reclaimable_segments
    };
    drop(db);
    check_closed_image(path, options, &present, &expired, reclaimable)?;
    Ok(Checked { read_before_ready })
}

/// Writes the pool image `img` to `path`; with `ssd`, writes the directory
/// image into its directory and makes the pool image name it.
pub fn write_image(img: &[u8], ssd: Option<(&SsdImage, &Path)>, path: &Path) -> Result<(), String> {
    let Some((dir_img, dir)) = ssd else {
        return std::fs::write(path, img).map_err(|e| format!("write image: {e}"));
    };
    dir_img
        .write_into(dir)
        .map_err(|e| format!("write the data directory image: {e}"))?;
    let mut sb = img
        .get(..SUPERBLOCK_BYTES as usize)
        .ok_or("image shorter than its superblock")?
        .to_vec();
    poolfile::set_data_dir(&mut sb, dir)?;
    std::fs::write(path, img).map_err(|e| format!("write image: {e}"))?;
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(path)
        .map_err(|e| format!("open image: {e}"))?;
    std::os::unix::fs::FileExt::write_all_at(&file, &sb, 0)
        .map_err(|e| format!("write image's superblock: {e}"))
}

/// Checks 4 and 7: `check()` counts (`what`) every present key, and
/// besides them at most the keys that may still hold an expired record.
fn counted(
    what: &str,
    counted: u64,
    present: &BTreeMap<Key, Val>,
    expired: &BTreeSet<Key>,
) -> Result<(), String> {
    let (n, extra) = (present.len() as u64, expired.len() as u64);
    if counted < n || counted > n + extra {
        let expect = match extra {
            0 => format!("{n}"),
            _ => format!("{n} to {} ({extra} may hold an expired record)", n + extra),
        };
        return Err(format!(
            "check counts {counted} {what}, the workload expects {expect}"
        ));
    }
    Ok(())
}

/// `on_media` (keys found on media, ascending) without the keys that may
/// still hold an expired record and are not present.
fn unexpired<'a>(
    on_media: impl Iterator<Item = &'a [u8]>,
    present: &BTreeMap<Key, Val>,
    expired: &BTreeSet<Key>,
) -> Vec<&'a [u8]> {
    on_media
        .filter(|k| present.contains_key(*k) || !expired.contains(*k))
        .collect()
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
fn probe_write(db: &Db, options: &Options, probe: WriteProbe) -> Result<u32, String> {
    let k = b"crashtest-probe-after-recovery";
    let v = match (probe, db.stats().tier_threshold) {
        (WriteProbe::Tiered, t) if t > 0 => vec![b'p'; t as usize + 100],
        _ => b"probe".to_vec(),
    };
    db.put(k, &v)
        .map_err(|e| format!("put after recovery: {e}"))?;
    if db.get(k).map_err(|e| e.to_string())?.as_deref() != Some(&v[..]) {
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
    expired: &BTreeSet<Key>,
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
        let want: Vec<&[u8]> = present.keys().map(|k| k.as_slice()).collect();
        if unexpired(on_media.iter().map(|k| k.as_slice()), present, expired) != want {
            return Err(format!(
                "skiplist on media after recovery and a clean close: {}",
                list_diff(&on_media, present)
            ));
        }
    }
    if options.point_index == PointIndex::Dram {
        check_words_on_media(&after, &p, present, expired)?;
    }
    if poolfile::flags(&after) & poolfile::FLAG_LEAVES != 0 {
        check_leaves(&after, &p, true)
            .map_err(|e| format!("after recovery and a clean close: {e}"))?;
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

/// What `key` reads as: `get`'s value with the deadline `ttl` reports.
pub fn observe(db: &Db, key: &[u8]) -> Result<State, String> {
    let got = db
        .get(key)
        .map_err(|e| format!("get {}: {e}", show_key(key)))?;
    let ttl = db
        .ttl(key)
        .map_err(|e| format!("ttl {}: {e}", show_key(key)))?;
    let deadline = match (&got, ttl) {
        (None, _) => None,
        (Some(_), Ttl::Persistent) => None,
        (Some(_), Ttl::Expires { at_ms, .. }) => Some(at_ms),
        (Some(_), Ttl::Missing) => {
            return Err(format!(
                "get {} returns a value, ttl says it is missing",
                show_key(key)
            ))
        }
    };
    Ok(got.map(|value| Held { value, deadline }))
}

/// Every key of `expect` read (`observe`), each judged by check 3's rules,
/// and every group of writes by the joint rule; returns the present keys
/// with their values.
fn read_expected(db: &Db, expect: &Expect) -> Result<BTreeMap<Key, Val>, String> {
    let mut seen: BTreeMap<Key, State> = BTreeMap::new();
    let keys: BTreeSet<&Key> = expect.acked.keys().chain(expect.in_flight.keys()).collect();
    for key in keys {
        let got = observe(db, key)?;
        if !expect.is_legal(key, &got) {
            let what = if expect.in_flight.contains_key(key.as_slice()) {
                "in-flight key"
            } else {
                "acknowledged key"
            };
            let legal: Vec<String> = expect
                .legal_states(key)
                .iter()
                .map(|s| show_state(&expect.live(s)))
                .collect();
            return Err(format!(
                "{what} {} holds {}, expected {}",
                show_key(key),
                show_state(&got),
                legal.join(" or ")
            ));
        }
        seen.insert(key.clone(), got);
    }
    expect.check_groups(|k| seen.get(k).cloned())?;
    Ok(seen
        .into_iter()
        .filter_map(|(k, s)| Some((k, s?.value)))
        .collect())
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
    expired: &BTreeSet<Key>,
) -> Result<(), String> {
    let all: BTreeMap<&[u8], &[u8]> = p
        .live
        .iter()
        .map(|r| (r.key.as_slice(), r.value(img)))
        .collect();
    let kept = unexpired(all.keys().copied(), present, expired);
    let on_media: BTreeMap<&[u8], &[u8]> = kept.into_iter().map(|k| (k, all[k])).collect();
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
            "record word at {:#x} ({}): {:#x} without its persist bit after recovery and a clean close",
            w.at,
            show_key(&w.key),
            w.word
        ));
    }
    Ok(())
}

/// Check 15: whether the image is a leaf pool, which it must be exactly
/// when `options` ask for one.
fn check_layout(img: &[u8], options: &Options) -> Result<bool, String> {
    let leaves = poolfile::flags(img) & poolfile::FLAG_LEAVES != 0;
    let asked = options.ordered_index
        && options.point_index == PointIndex::Dram
        && options.ordered_layout == OrderedLayout::Leaves;
    if leaves != asked {
        return Err(format!(
            "the superblock says leaves: {leaves}, the workload asked for {:?} with the point index {:?}",
            options.ordered_layout, options.point_index
        ));
    }
    Ok(leaves)
}

/// Checks 16 and 17 (`closed`): the leaves of `img`, read by the harness's
/// parser.
fn check_leaves(img: &[u8], p: &poolfile::Parsed, closed: bool) -> Result<(), String> {
    let l = poolfile::read_leaves(img, p).map_err(|e| format!("leaves unreadable: {e}"))?;
    if let Some(first) = l.problems.first() {
        return Err(format!(
            "{} breach(es) of the leaves' rules, first: {first}",
            l.problems.len()
        ));
    }
    if closed {
        if let Some((entry, key)) = l.stale.first() {
            return Err(format!(
                "{} copies above their leaf's range left (an interrupted split's), first entry {entry:#x} of {}",
                l.stale.len(),
                show_key(key)
            ));
        }
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

#[cfg(test)]
mod tests {
    use super::*;

    fn held(v: &str, deadline: Option<u64>) -> State {
        Some(Held {
            value: v.as_bytes().to_vec(),
            deadline,
        })
    }

    /// An expectation at time 100 where `a` and `b` hold "a0", "b0" and a
    /// batch writing "a1", "b1" and deleting the absent `c` is in flight.
    fn batch_in_flight() -> (Expect, u64) {
        let mut e = Expect::at(100);
        e.ack_state(b"a", held("a0", None));
        e.ack_state(b"b", held("b0", None));
        let writes = [
            (b"a".to_vec(), held("a1", None)),
            (b"b".to_vec(), held("b1", None)),
            (b"c".to_vec(), None),
        ];
        let id = e.begin_group(&writes);
        (e, id)
    }

    #[test]
    fn the_joint_rule_accepts_all_old_or_all_new_and_rejects_a_mix() {
        let (e, id) = batch_in_flight();
        let image = |a: &str, b: &str| {
            let m: BTreeMap<Key, State> = [
                (b"a".to_vec(), held(a, None)),
                (b"b".to_vec(), held(b, None)),
                (b"c".to_vec(), None),
            ]
            .into();
            move |k: &[u8]| m.get(k).cloned()
        };
        assert!(e.check_groups(image("a0", "b0")).is_ok());
        assert!(e.check_groups(image("a1", "b1")).is_ok());
        let torn = e.check_groups(image("a1", "b0")).unwrap_err();
        assert!(torn.contains("are torn"), "{torn}");
        // Each key on its own is legal: only the joint rule sees it.
        assert!(e.is_legal(b"a", &held("a1", None)) && e.is_legal(b"b", &held("b0", None)));
        let mut acked = e.clone();
        acked.ack_group(id);
        assert!(acked.groups.is_empty() && acked.in_flight.is_empty());
        assert_eq!(acked.current(b"b"), Some(b"b1".to_vec()));
    }

    #[test]
    fn a_recovery_that_tears_a_batch_is_reported_and_acknowledged() {
        let (mut e, _) = batch_in_flight();
        let seen: BTreeMap<Key, State> = [
            (b"a".to_vec(), held("a0", None)),
            (b"b".to_vec(), held("b1", None)),
            (b"c".to_vec(), None),
        ]
        .into();
        assert!(e.resolve(seen).is_err());
        assert!(e.groups.is_empty() && e.in_flight.is_empty());
        assert_eq!(e.current(b"a"), Some(b"a0".to_vec()));
    }

    #[test]
    fn a_passed_deadline_reads_as_absent_and_may_stay_on_media() {
        let mut e = Expect::at(100);
        e.ack_state(b"gone", held("g", Some(100)));
        e.ack_state(b"kept", held("k", Some(101)));
        e.ack_state(b"plain", held("p", None));
        assert_eq!(e.current(b"gone"), None);
        assert!(e.is_legal(b"gone", &None));
        assert!(!e.is_legal(b"gone", &held("g", Some(100))));
        assert!(e.is_legal(b"kept", &held("k", Some(101))));
        assert!(
            !e.is_legal(b"kept", &held("k", None)),
            "the deadline counts"
        );
        assert_eq!(e.present().len(), 2);
        assert_eq!(e.maybe_expired(), [b"gone".to_vec()].into());
        let before = e.digest();
        e.now_ms = 101;
        assert_eq!(e.current(b"kept"), None);
        assert_ne!(e.digest(), before, "the time is part of the expectation");
    }
}
