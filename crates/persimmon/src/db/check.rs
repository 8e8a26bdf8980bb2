//! `Db::check`: walks the whole pool and verifies it against itself — the
//! test oracle and the CLI's `check`.
//!
//! What it proves, for every live index entry: the record it names lies in a
//! log segment (inside the segment's valid record prefix) or heads a large
//! run, has a valid CRC, and its key hashes to the entry's fingerprint, its
//! segment and its buckets (pair or three-choice); no key appears twice. Then: live bytes per
//! segment equal what the index references, the key count equals the
//! entries, and the ordered index lists exactly the point index's keys (or
//! orphans a crash may leave). With the DRAM point index, each entry mirrors
//! its node's record word.
//!
//! Invariants: it runs after the tally, with no split in flight and every
//! bucket lock held, so writers wait and nothing it reads changes; readers
//! do not wait. It reports; it never repairs.

use std::collections::{HashMap, HashSet};

use super::engine::{Engine, CHECK_SEQ};
use crate::error::Result;
use crate::index::{self, Index, SegRef};
use crate::layout::{self, HeaderState, RecordHeader, SegmentHeader, SegmentKind, Slot};
use crate::log::walk_segment;
use crate::ordered::Ordered;
use crate::segment_scan::{KIND_DAMAGED, KIND_FREEING};
use crate::tier::extent::ExternalValue;

/// Result of [`Db::check`](super::Db::check).
#[derive(Clone, Debug, Default)]
pub struct CheckReport {
    pub keys: u64,
    pub index_segments: u32,
    pub log_segments: u32,
    pub large_records: u32,
    pub live_bytes: u64,
    /// Segments with no live record still waiting for their epoch to pass.
    pub reclaimable_segments: u32,
    /// Ordered index: linked nodes, and nodes whose key the point index does
    /// not hold (left by a crash between the two; the walk after open
    /// unlinks them).
    pub ordered_nodes: u64,
    pub ordered_orphans: u64,
    /// SSD tier: values whose extents were read back and verified (CRC,
    /// bounds, tail and patches), and their extent bytes.
    pub ssd_extents: u64,
    pub ssd_extent_bytes: u64,
    /// SSD tier: data files no live record names (dead extents only, left
    /// by overwrites or a crash; reclaimed in the background).
    pub ssd_orphan_files: u64,
    /// Every inconsistency found; empty when the pool is consistent.
    pub errors: Vec<String>,
}

impl CheckReport {
    pub fn is_ok(&self) -> bool {
        self.errors.is_empty()
    }
}

/// What the walk over the index has gathered so far.
struct Walk {
    report: CheckReport,
    /// Per segment: live bytes the index references.
    expected_live: Vec<u64>,
    /// Per log segment walked: the end of its valid record prefix.
    walk_end: HashMap<u32, u64>,
    /// Keys the point index holds (only with the ordered index).
    point_keys: HashSet<Vec<u8>>,
    /// Per data file: extent bytes live records name.
    extent_live: HashMap<u32, u64>,
}

/// Where an entry's record lies, once its offset is found plausible.
struct Located {
    segment: u32,
    in_log: bool,
}

impl Engine {
    pub(super) fn check(&self) -> Result<CheckReport> {
        self.wait_tally();
        // No split may add a segment between listing and locking them.
        let _serial = self.split_mutex.lock();
        // No cleaner chunk has copies counted live but not yet named.
        let _chunk = self.chunk_mutex.lock();
        let pm = self.ipm();
        let segments: Vec<u64> = self
            .index
            .dir
            .load()
            .segments()
            .iter()
            .map(|s| s.offset)
            .collect();
        let held = self
            .index
            .locks
            .lock_all(pm, &segments, self.index.buckets, CHECK_SEQ);
        let report = self.check_locked();
        self.index.locks.unlock_all(pm, held);
        Ok(report)
    }

    fn check_locked(&self) -> CheckReport {
        let n = self.pool.segment_count();
        let mut w = Walk {
            report: CheckReport::default(),
            expected_live: vec![0u64; n as usize],
            walk_end: HashMap::new(),
            point_keys: HashSet::new(),
            extent_live: HashMap::new(),
        };
        let r = &mut w.report;
        r.errors.extend(self.tally_errors.lock().iter().cloned());
        r.errors
            .extend(self.ordered_walk_errors.lock().iter().cloned());
        self.check_segment_kinds(r);
        let dir = self.index.dir.load_full();
        let segs = dir.segments();
        w.report.index_segments = segs.len() as u32;
        for seg in &segs {
            for b in 0..self.index.buckets {
                for addr in self.index.slots(seg.bucket_offset(b)) {
                    let s = Slot(self.ipm().load_u64(addr));
                    if Index::is_live_entry(seg, s) {
                        self.check_entry(&mut w, seg, addr, s);
                    }
                }
            }
        }
        self.check_live_bytes(&mut w);
        self.check_extent_live(&mut w);
        if let Some(o) = &self.ordered {
            self.check_ordered(&mut w, o);
        }
        let count = self.count_now();
        if count != w.report.keys {
            w.report.errors.push(format!(
                "key count {count} does not match {} keys in the index",
                w.report.keys
            ));
        }
        w.report
    }

    /// Whose log segment `s` is, for a report: `lane N` from its header.
    fn segment_lane(&self, s: u32) -> String {
        let header = self.pool.pm.slice(
            self.pool.segment_offset(s),
            layout::SEGMENT_HEADER_BYTES as usize,
        );
        match header.map(SegmentHeader::decode) {
            Ok(HeaderState::Valid(h)) => format!("lane {}", h.lane_or_depth),
            _ => "header unreadable".to_string(),
        }
    }

    /// Counts log segments and large runs; reports damaged headers.
    fn check_segment_kinds(&self, r: &mut CheckReport) {
        for s in 0..self.pool.segment_count() {
            match self.pool.kind(s) {
                KIND_DAMAGED => r.errors.push(format!(
                    "segment {s} at {:#x}: damaged header",
                    self.pool.segment_offset(s)
                )),
                k if k == SegmentKind::Log as u8 => r.log_segments += 1,
                k if k == SegmentKind::Large as u8 => r.large_records += 1,
                _ => {}
            }
        }
    }

    /// Checks one live entry (slot `addr` of `seg`, holding `s`) and the
    /// record it names; counts it.
    fn check_entry(&self, w: &mut Walk, seg: &SegRef, addr: u64, s: Slot) {
        let off = s.offset();
        let mut errors = Vec::new();
        let mut err = |m: String| errors.push(format!("slot at {addr:#x}: {m}"));
        let checked = self
            .locate_record(off)
            .and_then(|at| {
                let h = self.record_header(off).map_err(|e| e.to_string())?;
                self.verify_record(off, &h).map_err(|e| e.to_string())?;
                if h.flags & (layout::REC_FLAG_TOMBSTONE | layout::REC_FLAG_UNDO) != 0 {
                    // Only a batch that is publishing (it holds the lock
                    // `check` waits for) names these.
                    return Err(format!("names a batch's tombstone or undo record {off:#x}"));
                }
                let key = self
                    .record_key(off, &h)
                    .map_err(|_| "key unreadable".to_string())?;
                Ok((at, h, key))
            })
            .map_err(&mut err);
        let Ok((at, h, key)) = checked else {
            w.report.errors.extend(errors);
            return;
        };
        self.check_placement_of(seg, addr, s, key, &mut err);
        if let Some(o) = &self.ordered {
            self.check_mirror(o, addr, s, key, &mut err);
        }
        w.report.errors.extend(errors);
        if at.in_log {
            let end = *w
                .walk_end
                .entry(at.segment)
                .or_insert_with(|| walk_segment(&self.pool, at.segment, |_| {}));
            if off + h.total_bytes() > end {
                w.report.errors.push(format!(
                    "record {off:#x} lies past the valid record prefix of segment {} ({}, ends {end:#x})",
                    at.segment,
                    self.segment_lane(at.segment)
                ));
            }
        }
        w.expected_live[at.segment as usize] += h.total_bytes();
        if h.flags & layout::REC_FLAG_EXTERNAL != 0 {
            self.check_extent(w, off, &h);
        }
        if self.ordered.is_some() {
            w.point_keys.insert(key.to_vec());
        }
        w.report.keys += 1;
        w.report.live_bytes += h.total_bytes();
    }

    /// Reads the extent of external record `off` back from its file and
    /// assembles the value (CRC, bounds, tail, patches); counts its bytes.
    fn check_extent(&self, w: &mut Walk, off: u64, h: &RecordHeader) {
        let decoded = self
            .record_field(off, h)
            .map_err(|e| e.to_string())
            .and_then(|field| ExternalValue::decode(field).map_err(str::to_string));
        let ev = match decoded {
            Ok(ev) => ev,
            Err(m) => {
                w.report.errors.push(format!(
                    "record {off:#x}: external value field does not decode: {m}"
                ));
                return;
            }
        };
        let e = ev.extent;
        let verified = match self.tier() {
            None => Err("the record names an SSD extent but the pool has no tier".to_string()),
            Some(t) => t
                .read_uncached(&e)
                .map_err(|e| e.to_string())
                .and_then(|bytes| ev.assemble(&bytes).map(|_| ()).map_err(str::to_string)),
        };
        if let Err(m) = verified {
            w.report.errors.push(format!("record {off:#x}: {m}"));
        }
        *w.extent_live.entry(e.file).or_default() += e.bytes as u64;
        w.report.ssd_extents += 1;
        w.report.ssd_extent_bytes += e.bytes as u64;
    }

    /// Live extent bytes tracked per data file equal what the records
    /// name; counts files no record names.
    fn check_extent_live(&self, w: &mut Walk) {
        let Some(t) = self.tier() else { return };
        for no in t.damaged_headers() {
            w.report
                .errors
                .push(format!("data file {no}: damaged header"));
        }
        for no in t.file_numbers() {
            let expected = w.extent_live.remove(&no).unwrap_or(0);
            let tracked = t.file_live(no).unwrap_or(0);
            if tracked != expected {
                w.report.errors.push(format!(
                    "data file {no}: live bytes tracked {tracked}, records name {expected}"
                ));
            }
            if expected == 0 {
                w.report.ssd_orphan_files += 1;
            }
        }
        for (no, bytes) in std::mem::take(&mut w.extent_live) {
            w.report.errors.push(format!(
                "records name {bytes} bytes of extents in data file {no}, which does not exist"
            ));
        }
    }

    /// Where record `off` lies: in a log segment, or at the head of a large
    /// run; anything else is an error.
    fn locate_record(&self, off: u64) -> std::result::Result<Located, String> {
        if off < layout::SUPERBLOCK_BYTES || off >= self.pool.pm.len() {
            return Err(format!("record offset {off:#x} outside the pool"));
        }
        let rs = self.pool.segment_of(off);
        let kind = self.pool.kind(rs);
        let in_log = kind == SegmentKind::Log as u8;
        let in_large = kind == SegmentKind::Large as u8
            && off == self.pool.segment_offset(rs) + layout::SEGMENT_HEADER_BYTES;
        if !in_log && !in_large {
            return Err(format!(
                "record {off:#x} is not in a log segment or large run (segment {rs}, kind {kind})"
            ));
        }
        Ok(Located {
            segment: rs,
            in_log,
        })
    }

    /// The entry sits where its key routes: fingerprint, segment, one of
    /// its probed buckets, and it is their only entry of the key.
    fn check_placement_of(
        &self,
        seg: &SegRef,
        addr: u64,
        s: Slot,
        key: &[u8],
        err: &mut impl FnMut(String),
    ) {
        let kh = self.hash(key);
        if index::fingerprint(kh) != s.fingerprint() {
            err("fingerprint does not match the record's key".into());
        }
        if self.index.dir.load().lookup(kh) != *seg {
            err("entry sits in the wrong index segment".into());
        }
        let probe = self.index.probe(seg, kh);
        if !probe
            .iter()
            .any(|&p| (p..p + layout::BUCKET_BYTES).contains(&addr))
        {
            err("entry sits outside its key's buckets".into());
        }
        // The first slot of the key's buckets naming it must be this one.
        let names_key = |o: Slot| {
            self.record_header(o.offset())
                .and_then(|oh: RecordHeader| self.record_key(o.offset(), &oh).map(|k| k == key))
                .unwrap_or(false)
        };
        let first = probe.iter().flat_map(|&p| self.index.slots(p)).find(|&a| {
            let o = Slot(self.ipm().load_u64(a));
            Index::is_live_entry(seg, o) && o.fingerprint() == s.fingerprint() && names_key(o)
        });
        if first != Some(addr) {
            err("key appears in more than one slot".into());
        }
    }

    /// DRAM point index: the entry mirrors its node's record word, and the
    /// node holds its key. (PM keeps no node per slot: nothing to check.)
    fn check_mirror(
        &self,
        o: &Ordered,
        addr: u64,
        s: Slot,
        key: &[u8],
        err: &mut impl FnMut(String),
    ) {
        let Some(hint) = self.point_index.node_of(addr) else {
            return;
        };
        // With leaves the remembered entry is a hint (a split may have
        // moved the key): the check looks the key up.
        let node = match o.leaves() {
            None => hint,
            Some(_) => match o.find(&self.pool, key, s.fingerprint()) {
                Ok(Some(e)) => e,
                Ok(None) => return err("its key has no leaf entry".into()),
                Err(e) => return err(format!("its leaf entry: {e}")),
            },
        };
        match o.key_of(&self.pool, node) {
            Ok(k) if k == key => {}
            Ok(_) => err("its node holds another key".into()),
            Err(e) => err(format!("its node: {e}")),
        }
        let word = self.node_word(node);
        if word.with_persist() != s.with_persist() {
            err(format!(
                "its node names {:#x}, the DRAM index {:#x}",
                word.offset(),
                s.offset()
            ));
        }
    }

    /// Live bytes tracked per segment equal what the index references;
    /// counts segments waiting to be freed.
    fn check_live_bytes(&self, w: &mut Walk) {
        for s in 0..self.pool.segment_count() {
            let kind = self.pool.kind(s);
            let live = self.pool.live_bytes(s);
            if live != w.expected_live[s as usize] {
                w.report.errors.push(format!(
                    "segment {s}: live bytes tracked {live}, index references {}",
                    w.expected_live[s as usize]
                ));
            }
            if kind == KIND_FREEING || self.pool.dead_kind(s).is_some() {
                w.report.reclaimable_segments += 1;
            }
        }
    }

    /// The ordered index is well formed and lists exactly the point index's
    /// keys, apart from orphans (which, with the DRAM point index, must not
    /// name a record).
    fn check_ordered(&self, w: &mut Walk, o: &Ordered) {
        let r = &mut w.report;
        let listed = o.check(&self.pool, &mut r.errors);
        r.ordered_nodes = listed.len() as u64;
        let mut in_list = 0u64;
        for (k, node) in &listed {
            if w.point_keys.contains(k) {
                in_list += 1;
                continue;
            }
            r.ordered_orphans += 1;
            if self.node_names_record(*node) {
                r.errors.push(format!(
                    "ordered index: node {node:#x} names record {:#x}, but the DRAM point index does not hold its key",
                    self.node_word(*node).offset()
                ));
            }
        }
        if in_list != w.point_keys.len() as u64 {
            r.errors.push(format!(
                "ordered index lists {in_list} of the {} keys in the point index",
                w.point_keys.len()
            ));
        }
    }
}
