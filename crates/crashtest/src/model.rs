//! The persistence-domain model: what is durable, and what may be.
//!
//! Fed by every store, non-temporal store, flush and fence the engine issues
//! on the observed pool (through `PersistObserver`, see `sim.rs`), it keeps
//! - `durable`: the bytes that are certainly on media;
//! - per 64-byte line, the *pending* stores: 8-byte pieces (a store is split
//!   at 8-byte boundaries) not yet known durable, in program order;
//! - per thread, the lines it flushed (and the newest pending piece of each
//!   at the time) and its non-temporal stores since its last fence.
//!
//! Invariants (the rules of the model):
//! - A piece becomes durable only at a fence of the thread that flushed its
//!   line (or stored it non-temporally) after storing it; the fence makes the
//!   line's pending pieces up to the flushed one durable, in order.
//! - Before that, any in-order prefix of a line's pending pieces may have
//!   reached media (lines can be evicted at any time), independently per
//!   line. A crash image is `durable` plus one such prefix per line.
//! - A line whose pending list is empty holds on media what `durable` says.
//!
//! The model also checks the engine's persistence discipline: when an
//! operation returns, none of its stores may still be pending, except the
//! deliberate ones the protocol leaves unflushed (`Benign`). It counts
//! redundant flushes (a line flushed with no store since its last flush) and
//! redundant fences (a fence with nothing flushed or NT-stored on that
//! thread since its last fence) per operation kind.

use std::collections::{BTreeMap, HashMap};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::thread::ThreadId;

/// Self-test of the harness (`--mutant`): every third fence of a thread that
/// has something to persist is ignored, as if the engine had left that fence
/// out. The oracle and the persistence assertions must then report
/// inconsistencies; if they do not, the harness is blind.
pub static MUTANT_LOSE_FENCES: AtomicBool = AtomicBool::new(false);
static MUTANT_COUNTER: AtomicU64 = AtomicU64::new(0);

/// Cache line size of the model (and of every x86 CPU Persimmon runs on).
pub const LINE: u64 = 64;

/// Offset stored in a delete marker slot (see docs/design.md §3).
const MARKER_OFFSET: u64 = 8;

/// Why a store may legally still be pending when its operation returns.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord)]
pub enum Benign {
    /// A put's final persist-bit store: the previous store to the word, with
    /// bit 0 set (the slot was made durable just before).
    PersistBit,
    /// A delete's final 0 after its delete marker was made durable (by the
    /// delete's fence, or by a reader that helped persist the marker: also
    /// a claim's marker, which a reader can meet while the claiming
    /// `update` links the key's ordered-index node).
    DeleteZero,
    /// A slot claimed for a new key (CAS to a delete marker) and given back
    /// (0) within the same operation, neither flushed: both read as absent.
    /// Also a leaf entry reserved and given back: its marker, and the key
    /// prefix stored just before it. Not in the engine's documented list;
    /// reported separately.
    ReleasedClaim,
    /// A store to a bucket's persistent lock word (Baseline layout), which
    /// the engine never flushes by design (docs/design.md, ablation modes).
    LockWord,
    /// A full word stored with the value the word's previous store (of this
    /// recording) left: it changes no image, whatever reaches media. Not
    /// in the engine's documented list (seen: a leaf entry given back
    /// after its delete stored 0 there already); reported separately.
    SameValue,
}

impl Benign {
    pub fn name(self) -> &'static str {
        match self {
            Benign::PersistBit => "persist-bit store",
            Benign::DeleteZero => "delete's final 0",
            Benign::ReleasedClaim => "released claim (marker then 0)",
            Benign::LockWord => "persistent lock word",
            Benign::SameValue => "same value again (redundant)",
        }
    }
}

/// The operation a store belongs to.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct OpTag {
    pub id: u64,
    pub kind: &'static str,
}

/// One pending 8-byte (or shorter) piece of a store.
#[derive(Clone, Debug)]
pub struct Piece {
    /// Position in its line's store order.
    pub seq: u64,
    pub offset: u64,
    pub len: u8,
    pub bytes: [u8; 8],
    pub op: Option<OpTag>,
    pub benign: Option<Benign>,
}

#[derive(Default)]
struct LineState {
    pending: Vec<Piece>,
    next_seq: u64,
    /// Stored since its last flush (a flush now is not redundant).
    dirty: bool,
}

#[derive(Default)]
struct ThreadState {
    /// Line → newest piece seq covered by a flush or NT store since the last fence.
    to_persist: HashMap<u64, u64>,
    op: Option<OpTag>,
}

/// Traffic of one operation kind.
#[derive(Clone, Copy, Debug, Default)]
pub struct OpTraffic {
    pub ops: u64,
    pub store_bytes: u64,
    pub flushes: u64,
    pub redundant_flushes: u64,
    pub fences: u64,
    pub redundant_fences: u64,
}

impl OpTraffic {
    pub fn add(&mut self, o: &OpTraffic) {
        self.ops += o.ops;
        self.store_bytes += o.store_bytes;
        self.flushes += o.flushes;
        self.redundant_flushes += o.redundant_flushes;
        self.fences += o.fences;
        self.redundant_fences += o.redundant_fences;
    }
}

/// The line contents a crash may leave, for one line with pending pieces.
pub struct LineChoices {
    pub line: u64,
    /// Distinct contents; `variants[0]` = nothing pending reached media.
    pub variants: Vec<[u8; LINE as usize]>,
    /// Index of the content when every pending piece reached media.
    pub all: usize,
    /// Some pending piece belongs to an operation in flight.
    pub focus: bool,
}

pub struct Model {
    durable: Vec<u8>,
    lines: HashMap<u64, LineState>,
    threads: HashMap<ThreadId, ThreadState>,
    /// Last full 8-byte value stored per aligned word (for `Benign` rules).
    last_word: HashMap<u64, u64>,
    pub traffic: BTreeMap<&'static str, OpTraffic>,
    pub benign: BTreeMap<Benign, u64>,
    /// Persistence-assertion failures (descriptions).
    pub violations: Vec<String>,
    pub violation_count: u64,
    /// Bumped whenever a fence changes `durable`: images built on the same
    /// generation differ only in their pending lines.
    pub durable_generation: u64,
    /// Pool geometry, for recognising lock words: segment size, whether
    /// buckets carry persistent lock words, and the index segments (by
    /// offset), learnt from the initial image and from header stores.
    segment_bytes: u64,
    lock_words: bool,
    index_segments: std::collections::HashSet<u64>,
}

/// A segment state word committing an index segment (kind 2, tag 0xA7).
fn is_index_state_word(w: u64) -> bool {
    w & 0xff == 2 && (w >> 8) & 0xff == 0xA7
}

fn is_marker(word: u64) -> bool {
    ((word >> 1) & ((1u64 << 47) - 1)) << 3 == MARKER_OFFSET
}

impl Model {
    /// A model whose media holds `initial` (the pool file before open).
    pub fn new(initial: Vec<u8>) -> Model {
        let segment_bytes = if initial.len() >= 24 {
            u64::from_le_bytes(initial[16..24].try_into().unwrap()).max(1)
        } else {
            u64::MAX
        };
        let lock_words =
            crate::poolfile::flags(&initial) & crate::poolfile::FLAG_PERSISTENT_LOCKS != 0;
        let mut index_segments = std::collections::HashSet::new();
        let mut at = 4096u64;
        while segment_bytes != u64::MAX && at + 8 <= initial.len() as u64 {
            let w = u64::from_le_bytes(initial[at as usize..at as usize + 8].try_into().unwrap());
            if is_index_state_word(w) {
                index_segments.insert(at);
            }
            at += segment_bytes;
        }
        Model {
            segment_bytes,
            lock_words,
            index_segments,
            durable: initial,
            lines: HashMap::new(),
            threads: HashMap::new(),
            last_word: HashMap::new(),
            traffic: BTreeMap::new(),
            benign: BTreeMap::new(),
            violations: Vec::new(),
            violation_count: 0,
            durable_generation: 0,
        }
    }

    fn kind_of(&self, t: ThreadId) -> &'static str {
        self.threads
            .get(&t)
            .and_then(|s| s.op)
            .map(|o| o.kind)
            .unwrap_or("background")
    }

    fn traffic_of(&mut self, t: ThreadId) -> &mut OpTraffic {
        let k = self.kind_of(t);
        self.traffic.entry(k).or_default()
    }

    fn ensure_len(&mut self, end: u64) {
        let end = end.next_multiple_of(LINE) as usize;
        if self.durable.len() < end {
            self.durable.resize(end, 0);
        }
    }

    pub fn begin_op(&mut self, t: ThreadId, tag: OpTag) {
        self.threads.entry(t).or_default().op = Some(tag);
        self.traffic.entry(tag.kind).or_default().ops += 1;
    }

    /// Ends thread `t`'s operation without checking its stores.
    pub fn end_op_unchecked(&mut self, t: ThreadId) {
        if let Some(s) = self.threads.get_mut(&t) {
            s.op = None;
        }
    }

    /// Ends thread `t`'s operation and asserts that none of its stores is
    /// still pending (save the benign ones).
    pub fn end_op(&mut self, t: ThreadId) {
        let Some(tag) = self.threads.get_mut(&t).and_then(|s| s.op.take()) else {
            return;
        };
        let mut bad: Vec<&Piece> = self
            .lines
            .values()
            .flat_map(|l| l.pending.iter())
            .filter(|p| p.op.map(|o| o.id) == Some(tag.id) && p.benign.is_none())
            .collect();
        if bad.is_empty() {
            return;
        }
        bad.sort_by_key(|p| p.offset);
        self.violation_count += 1;
        let flushed = |p: &Piece| {
            self.threads
                .get(&t)
                .and_then(|s| s.to_persist.get(&(p.offset & !(LINE - 1))))
                .is_some_and(|&upto| upto >= p.seq)
        };
        let first = bad[0];
        let what = if flushed(first) {
            "flushed but not fenced"
        } else {
            "never flushed"
        };
        if self.violations.len() < 20 {
            self.violations.push(format!(
                "{} (op {}): {} store(s) still pending when it returned; first at {:#x} ({} bytes {:02x?}) {what}",
                tag.kind,
                tag.id,
                bad.len(),
                first.offset,
                first.len,
                &first.bytes[..first.len as usize]
            ));
        }
    }

    /// Classifies a full aligned 8-byte store against the previous one.
    fn classify(&mut self, offset: u64, value: u64, op: Option<OpTag>) -> Option<Benign> {
        if offset >= 4096 && (offset - 4096).is_multiple_of(self.segment_bytes) {
            // A segment header's state word: track index segments.
            if is_index_state_word(value) {
                self.index_segments.insert(offset);
            } else {
                self.index_segments.remove(&offset);
            }
        } else if self.lock_words && offset % 64 == 56 && offset >= 4096 {
            let seg = offset - (offset - 4096) % self.segment_bytes;
            if self.index_segments.contains(&seg) && offset - seg >= 64 {
                self.last_word.insert(offset, value);
                return Some(Benign::LockWord);
            }
        }
        // The word's previous value: the last store this recording saw, or,
        // for a word not stored to since the image was opened (a reader
        // helping persist a slot after recovery), what the image holds.
        let last = self.last_word.insert(offset, value);
        let prev = match last {
            Some(p) => p,
            None => {
                let at = offset as usize;
                let bytes = self.durable.get(at..at + 8)?;
                u64::from_le_bytes(bytes.try_into().ok()?)
            }
        };
        if value == prev | 1 && prev != 0 {
            return Some(Benign::PersistBit);
        }
        if value == 0 && is_marker(prev) {
            let Some(line) = self.lines.get_mut(&(offset & !(LINE - 1))) else {
                return Some(Benign::DeleteZero);
            };
            // A reader that met the marker may have helped persist it (flush,
            // fence, persist bit): its persist-bit store names the same
            // marker and is passed over; the marker itself is then durable.
            let marker = line.pending.iter_mut().rev().find(|p| {
                p.offset == offset
                    && p.len == 8
                    && !(p.benign == Some(Benign::PersistBit)
                        && is_marker(u64::from_le_bytes(p.bytes)))
            });
            let claim_seq = match marker {
                // The marker is durable: the delete committed.
                None => return Some(Benign::DeleteZero),
                Some(m) if m.op.is_some() && m.op == op => {
                    m.benign = Some(Benign::ReleasedClaim);
                    m.seq
                }
                Some(_) => return None,
            };
            // A leaf entry's reserve stores the key's prefix in the word
            // after the entry's, just before the marker: released with it,
            // it lies in a free entry (and reaches media, if at all, before
            // the marker).
            if let Some(prefix) = line.pending.iter_mut().find(|p| {
                p.offset == offset + 8 && p.len == 8 && p.op == op && p.seq + 1 == claim_seq
            }) {
                prefix.benign = Some(Benign::ReleasedClaim);
            }
            return Some(Benign::ReleasedClaim);
        }
        // (Only after a store of this recording: a record's zero words
        // over zeroed media are the record's, and stay checked.)
        if last == Some(value) {
            return Some(Benign::SameValue);
        }
        None
    }

    fn add_pieces(&mut self, t: ThreadId, offset: u64, data: &[u8], nt: bool) {
        if data.is_empty() {
            return;
        }
        self.ensure_len(offset + data.len() as u64);
        let op = self.threads.get(&t).and_then(|s| s.op);
        self.traffic_of(t).store_bytes += data.len() as u64;
        let mut at = 0usize;
        while at < data.len() {
            let off = offset + at as u64;
            let n = (8 - (off % 8) as usize).min(data.len() - at);
            let mut bytes = [0u8; 8];
            bytes[..n].copy_from_slice(&data[at..at + n]);
            let benign = if n == 8 && !nt {
                self.classify(off, u64::from_le_bytes(bytes), op)
            } else {
                self.last_word.remove(&(off & !7));
                None
            };
            if let Some(b) = benign {
                *self.benign.entry(b).or_default() += 1;
            }
            let line_off = off & !(LINE - 1);
            let line = self.lines.entry(line_off).or_default();
            let seq = line.next_seq;
            line.next_seq += 1;
            line.pending.push(Piece {
                seq,
                offset: off,
                len: n as u8,
                bytes,
                op,
                benign,
            });
            line.dirty = !nt;
            if nt {
                self.threads
                    .entry(t)
                    .or_default()
                    .to_persist
                    .insert(line_off, seq);
            }
            at += n;
        }
    }

    pub fn store(&mut self, t: ThreadId, offset: u64, data: &[u8]) {
        self.add_pieces(t, offset, data, false);
    }

    pub fn nt_store(&mut self, t: ThreadId, offset: u64, data: &[u8]) {
        self.add_pieces(t, offset, data, true);
    }

    pub fn flush(&mut self, t: ThreadId, offset: u64) {
        let line_off = offset & !(LINE - 1);
        let (redundant, newest) = match self.lines.get_mut(&line_off) {
            Some(l) => {
                let r = !l.dirty;
                l.dirty = false;
                (r, l.pending.last().map(|p| p.seq))
            }
            None => (true, None),
        };
        let tr = self.traffic_of(t);
        tr.flushes += 1;
        tr.redundant_flushes += redundant as u64;
        if let Some(seq) = newest {
            let to = &mut self.threads.entry(t).or_default().to_persist;
            let e = to.entry(line_off).or_insert(seq);
            *e = (*e).max(seq);
        }
    }

    pub fn fence(&mut self, t: ThreadId) {
        let tr = self.traffic_of(t);
        tr.fences += 1;
        let nothing = self.threads.get(&t).is_none_or(|s| s.to_persist.is_empty());
        self.traffic_of(t).redundant_fences += nothing as u64;
        if !nothing
            && MUTANT_LOSE_FENCES.load(Ordering::Relaxed)
            && MUTANT_COUNTER.fetch_add(1, Ordering::Relaxed) % 3 == 2
        {
            return; // the mutant: this fence persists nothing
        }
        let to = std::mem::take(&mut self.threads.entry(t).or_default().to_persist);
        for (line_off, upto) in to {
            let Some(line) = self.lines.get_mut(&line_off) else {
                continue;
            };
            let n = line.pending.partition_point(|p| p.seq <= upto);
            if n > 0 {
                self.durable_generation += 1;
            }
            for p in line.pending.drain(..n) {
                let at = p.offset as usize;
                self.durable[at..at + p.len as usize].copy_from_slice(&p.bytes[..p.len as usize]);
            }
            if line.pending.is_empty() && !line.dirty {
                self.lines.remove(&line_off);
            }
        }
    }

    /// Operations currently in flight (on any thread).
    /// The operation thread `t` runs now, if any.
    pub fn op_of(&self, t: ThreadId) -> Option<OpTag> {
        self.threads.get(&t).and_then(|s| s.op)
    }

    pub fn ops_in_flight(&self) -> Vec<OpTag> {
        self.threads.values().filter_map(|s| s.op).collect()
    }

    /// The durable bytes, `len` long (zeros past what was ever stored).
    pub fn durable_image(&self, len: u64) -> Vec<u8> {
        let mut v = self.durable.clone();
        v.resize(len as usize, 0);
        v
    }

    /// Every line with pending pieces and the distinct contents a crash may
    /// leave in it, sorted by line offset. `focus_ops` marks lines holding a
    /// piece of an in-flight operation.
    pub fn choices(&self, focus_ops: &[u64]) -> Vec<LineChoices> {
        let mut out: Vec<LineChoices> = Vec::new();
        for (&line_off, line) in &self.lines {
            if line.pending.is_empty() {
                continue;
            }
            let mut content = [0u8; LINE as usize];
            let base = line_off as usize;
            content.copy_from_slice(&self.durable[base..base + LINE as usize]);
            let mut variants = vec![content];
            let mut all = 0;
            for p in &line.pending {
                let at = (p.offset - line_off) as usize;
                content[at..at + p.len as usize].copy_from_slice(&p.bytes[..p.len as usize]);
                all = match variants.iter().position(|v| v == &content) {
                    Some(i) => i,
                    None => {
                        variants.push(content);
                        variants.len() - 1
                    }
                };
            }
            if variants.len() < 2 {
                continue; // nothing pending changes the line
            }
            let focus = line
                .pending
                .iter()
                .any(|p| p.op.is_some_and(|o| focus_ops.contains(&o.id)));
            out.push(LineChoices {
                line: line_off,
                variants,
                all,
                focus,
            });
        }
        out.sort_by_key(|c| c.line);
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn tid() -> ThreadId {
        std::thread::current().id()
    }

    fn other_thread() -> ThreadId {
        std::thread::spawn(|| std::thread::current().id())
            .join()
            .unwrap()
    }

    #[test]
    fn flush_then_fence_on_the_same_thread_makes_durable() {
        let mut m = Model::new(vec![0; 256]);
        m.store(tid(), 64, &7u64.to_le_bytes());
        assert_eq!(m.choices(&[]).len(), 1, "pending before the flush");
        m.flush(tid(), 64);
        m.fence(other_thread());
        assert_eq!(
            m.choices(&[]).len(),
            1,
            "another thread's fence does nothing"
        );
        m.fence(tid());
        assert!(m.choices(&[]).is_empty());
        assert_eq!(&m.durable_image(256)[64..72], &7u64.to_le_bytes());
    }

    #[test]
    fn a_store_after_the_flush_stays_pending() {
        let mut m = Model::new(vec![0; 128]);
        m.store(tid(), 0, &1u64.to_le_bytes());
        m.flush(tid(), 0);
        m.store(tid(), 8, &2u64.to_le_bytes());
        m.fence(tid());
        let c = m.choices(&[]);
        assert_eq!(c.len(), 1);
        assert_eq!(c[0].variants.len(), 2);
        assert_eq!(&m.durable_image(128)[0..8], &1u64.to_le_bytes());
        assert_eq!(&m.durable_image(128)[8..16], &[0; 8]);
    }

    #[test]
    fn stores_split_into_prefixes_per_line() {
        let mut m = Model::new(vec![0; 256]);
        // 100 bytes from offset 60: pieces 60..64 (line 0), then 64.. (line 1 and 2).
        m.store(tid(), 60, &[9u8; 100]);
        let c = m.choices(&[]);
        assert_eq!(c.len(), 3);
        assert_eq!(c[0].variants.len(), 2); // one 4-byte piece
        assert_eq!(c[1].variants.len(), 9); // 8 pieces
        assert_eq!(c[2].variants.len(), 5); // 32 bytes: 4 pieces
    }

    #[test]
    fn nt_stores_need_only_a_fence_and_redundancy_is_counted() {
        let mut m = Model::new(vec![0; 1024]);
        m.nt_store(tid(), 0, &[1u8; 512]);
        m.fence(tid());
        assert!(m.choices(&[]).is_empty());
        m.flush(tid(), 0); // nothing stored since: redundant
        m.fence(tid()); // nothing to persist: redundant
        let t = m.traffic["background"];
        assert_eq!((t.redundant_flushes, t.redundant_fences), (1, 1));
    }

    #[test]
    fn persistence_assertion_and_benign_stores() {
        let mut m = Model::new(vec![0; 4096]);
        let slot = 0x1234u64 << 48 | (4096 >> 3) << 1;
        m.begin_op(tid(), OpTag { id: 1, kind: "put" });
        m.store(tid(), 128, &slot.to_le_bytes());
        m.flush(tid(), 128);
        m.fence(tid());
        m.store(tid(), 128, &(slot | 1).to_le_bytes());
        m.end_op(tid());
        assert_eq!(m.violation_count, 0);
        assert_eq!(m.benign[&Benign::PersistBit], 1);

        m.begin_op(tid(), OpTag { id: 2, kind: "put" });
        m.store(tid(), 256, &slot.to_le_bytes());
        m.flush(tid(), 256);
        m.end_op(tid());
        assert_eq!(m.violation_count, 1, "flushed, never fenced");

        let marker = 0x1234u64 << 48 | (MARKER_OFFSET >> 3) << 1;
        m.begin_op(
            tid(),
            OpTag {
                id: 3,
                kind: "update",
            },
        );
        m.store(tid(), 512, &marker.to_le_bytes());
        m.store(tid(), 512, &0u64.to_le_bytes());
        m.end_op(tid());
        assert_eq!(m.violation_count, 1);
        assert_eq!(
            m.benign[&Benign::ReleasedClaim],
            1,
            "one per released claim"
        );

        // A claim's marker that a reader helped persist (flush, fence, then
        // the persist bit, left pending), then given back: the 0 follows a
        // durable marker.
        let reader = other_thread();
        m.begin_op(
            tid(),
            OpTag {
                id: 4,
                kind: "update",
            },
        );
        m.store(tid(), 1024, &marker.to_le_bytes());
        m.begin_op(
            reader,
            OpTag {
                id: 5,
                kind: "reader-probe",
            },
        );
        m.flush(reader, 1024);
        m.fence(reader);
        m.store(reader, 1024, &(marker | 1).to_le_bytes());
        m.end_op_unchecked(reader);
        m.store(tid(), 1024, &0u64.to_le_bytes());
        m.end_op(tid());
        assert_eq!(
            m.violation_count, 1,
            "the 0 after a durable marker is benign"
        );
        assert_eq!(m.benign[&Benign::DeleteZero], 1);
    }
}
