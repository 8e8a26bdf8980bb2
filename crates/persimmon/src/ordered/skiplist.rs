//! The ordered index of pools of format versions 2–5 (and of pools with
//! the PM point index): a persistent concurrent skiplist over the keys
//! (MixStore §3.1), kept next to the MPKV point index.
//!
//! Persistent part: a singly linked list of *nodes*, sorted by key, starting
//! at a head node with the empty key. A node holds its key (not the value:
//! values are found through the point index), in a slab of one size class
//! (`Ordered` segments; layout in `docs/design.md`). Volatile parts, rebuilt
//! after every open: the upper levels (a DRAM skip map from the keys of a
//! sample of nodes to their offsets: where a search starts its walk), the
//! range marks, the "deleted" bits and the free lists of the node heap.
//!
//! Protocols (all persistent writes go through the pmem layer):
//! - *insert* (a new key, under the key's bucket lock, before the point
//!   index names the record): search (pred, succ); take a node slot; mark
//!   pred's range and the new node's (so nothing links behind the node
//!   before its own link is durable); check
//!   again that pred is not deleted and still points at succ (else retry,
//!   the paper's double check); write the node with `next = succ`, flush,
//!   **fence**; store `pred.next = node`, flush, **fence** (the node is in
//!   the list); unmark.
//! - *remove* (under the key's bucket lock, after the point index dropped the
//!   key durably): search (pred, node); mark both ranges; double check; drop
//!   its hint and tell the walk after open the slot is taken (before anyone
//!   can see the node deleted); set the node's deleted bit (DRAM); store
//!   `pred.next = node.next`, flush, **fence**; unmark; free the node
//!   through the epoch.
//!
//! Invariants:
//! - A key the point index holds always has a node in the list (insert is
//!   durable before the point index names the key; remove follows the point
//!   index). The converse fails only transiently (a write in flight) or after
//!   a crash between the two steps: such an *orphan* node is skipped by every
//!   reader, because readers take presence and values from the point index,
//!   and the background walk after open unlinks it.
//! - The range of a node is the gap between it and its successor; writers
//!   that change the gap hold its mark (a DRAM word picked by hashing the
//!   node offset). A remove marks the gaps before and after the node, so an
//!   insert can never link behind a node being removed.
//! - A deleted node's `next` never changes again, so a reader standing on it
//!   still reaches every node that stays in the list; its memory is reused
//!   only after every thread pinned at its removal has unpinned.
//! - Slots of node segments found at open are handed out again only after the
//!   walk has seen which nodes are reachable; until then new nodes come from
//!   segments allocated in this open.

use std::collections::HashMap;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::Arc;

use crossbeam_epoch::Guard;
use crossbeam_skiplist::SkipMap;
use crossbeam_utils::CachePadded;

use crate::error::{Error, Result};
use crate::layout::{
    self, SegmentKind, NODE_CRC, NODE_HEADER_BYTES, NODE_KEY_LEN, NODE_MIN_CLASS, NODE_NEXT,
    NODE_RECORD, SEGMENT_HEADER_BYTES,
};
use crate::pool::Pool;

use super::slab::{commit_slab, new_slab, zero_slab};

/// Number of range marks.
const MARKS: usize = 4096;
/// One node in `1 << HINT_SHIFT` is a search hint.
const HINT_SHIFT: u32 = 3;
/// Nodes the walk after open visits per epoch pin.
const WALK_BATCH: usize = 1024;

/// DRAM state of one node segment.
struct SegState {
    class: u32,
    /// Deleted bit per slot.
    deleted: Box<[AtomicU64]>,
    /// Found at open: its free slots are known only after the walk.
    old: bool,
    /// Reachable bit per slot, set by the walk (old segments only).
    reachable: Box<[AtomicU64]>,
}

impl SegState {
    fn new(class: u32, slots: u64, old: bool) -> SegState {
        let words = slots.div_ceil(64) as usize;
        let bits = |n: usize| (0..n).map(|_| AtomicU64::new(0)).collect();
        SegState {
            class,
            deleted: bits(words),
            old,
            reachable: bits(if old { words } else { 0 }),
        }
    }
}

fn bit(words: &[AtomicU64], i: u64) -> bool {
    words[(i / 64) as usize].load(Ordering::Acquire) & (1 << (i % 64)) != 0
}

fn set_bit(words: &[AtomicU64], i: u64, on: bool) {
    let w = &words[(i / 64) as usize];
    if on {
        w.fetch_or(1 << (i % 64), Ordering::AcqRel);
    } else {
        w.fetch_and(!(1 << (i % 64)), Ordering::AcqRel);
    }
}

#[derive(Default)]
struct ClassHeap {
    free: Vec<u64>,
    /// Next never-used slot of the newest segment of this class, and its end.
    bump: Option<(u64, u64)>,
}

/// Node allocator: slabs of one size class per segment.
struct NodeHeap {
    segment_bytes: u64,
    /// Per segment index; set when the segment becomes a node segment.
    segs: Box<[std::sync::OnceLock<SegState>]>,
    classes: Vec<parking_lot::Mutex<ClassHeap>>,
    /// Frees of old-segment nodes before the walk finished.
    pending: parking_lot::Mutex<Option<Vec<u64>>>,
    nodes: std::sync::atomic::AtomicI64,
    segments: AtomicUsize,
}

/// The ordered index of one open pool.
pub(crate) struct Skiplist {
    head: u64,
    seed: u64,
    hints: SkipMap<Vec<u8>, u64>,
    marks: Box<[CachePadded<AtomicBool>]>,
    heap: Arc<NodeHeap>,
    walk_done: AtomicBool,
    max_key: usize,
}

/// What the walk after open found.
#[derive(Debug, Default)]
pub(crate) struct WalkReport {
    pub nodes: u64,
    pub orphans_unlinked: u64,
}

/// Releases range marks when dropped.
struct Marks<'a> {
    marks: &'a [CachePadded<AtomicBool>],
    held: [Option<usize>; 2],
}

impl Drop for Marks<'_> {
    fn drop(&mut self) {
        for i in self.held.iter().flatten() {
            self.marks[*i].store(false, Ordering::Release);
        }
    }
}

impl Skiplist {
    /// Sets up the ordered index of a pool: finds the head among the node
    /// segments of the header scan, or creates it in a new pool.
    pub fn open(pool: &Pool, scan: &[(u32, u32, bool)], seed: u64) -> Result<Skiplist> {
        let max_segments =
            ((pool.pool_bytes_max - layout::SUPERBLOCK_BYTES) / pool.segment_bytes) as usize;
        let heap = Arc::new(NodeHeap {
            segment_bytes: pool.segment_bytes,
            segs: (0..max_segments)
                .map(|_| std::sync::OnceLock::new())
                .collect(),
            classes: (NODE_MIN_CLASS..=pool.segment_bytes.trailing_zeros())
                .map(|_| parking_lot::Mutex::new(ClassHeap::default()))
                .collect(),
            pending: parking_lot::Mutex::new(Some(Vec::new())),
            nodes: std::sync::atomic::AtomicI64::new(0),
            segments: AtomicUsize::new(0),
        });
        let max_class = pool.segment_bytes.trailing_zeros() - 1;
        let mut head = None;
        for &(seg, class, is_head) in scan {
            if !(NODE_MIN_CLASS..=max_class).contains(&class) {
                return Err(Error::corruption(
                    pool.segment_offset(seg),
                    format!("ordered-index segment with node class {class}"),
                ));
            }
            let slots = heap.slots_per_segment(class);
            let _ = heap.segs[seg as usize].set(SegState::new(class, slots, true));
            heap.segments.fetch_add(1, Ordering::Relaxed);
            if is_head {
                if head.is_some() {
                    return Err(Error::corruption(
                        pool.segment_offset(seg),
                        "two ordered-index segments claim the head",
                    ));
                }
                head = Some(pool.segment_offset(seg) + SEGMENT_HEADER_BYTES);
            }
        }
        let head = match head {
            Some(h) => h,
            None if scan.is_empty() => create_head(pool, &heap)?,
            None => {
                return Err(Error::corruption(
                    layout::SUPERBLOCK_BYTES,
                    "the ordered index has node segments but no head",
                ))
            }
        };
        Ok(Skiplist {
            head,
            seed: seed ^ 0x6f72_6465_7265_6421,
            hints: SkipMap::new(),
            marks: (0..MARKS)
                .map(|_| CachePadded::new(AtomicBool::new(false)))
                .collect(),
            heap,
            walk_done: AtomicBool::new(scan.is_empty()),
            max_key: layout::node_max_key(pool.segment_bytes),
        })
    }

    /// Longest key the ordered index can hold (half a segment less the node
    /// header).
    pub fn max_key(&self) -> usize {
        self.max_key
    }

    pub fn walk_done(&self) -> bool {
        self.walk_done.load(Ordering::Acquire)
    }

    /// Nodes allocated (linked or waiting for their epoch) and node segments.
    pub fn heap_figures(&self) -> (u64, usize) {
        (
            self.heap.nodes.load(Ordering::Relaxed).max(0) as u64,
            self.heap.segments.load(Ordering::Relaxed),
        )
    }

    #[inline]
    fn sampled(&self, key: &[u8]) -> bool {
        xxhash_rust::xxh3::xxh3_64_with_seed(key, self.seed) >> (64 - HINT_SHIFT) == 0
    }

    // ------------------------------------------------------------- nodes

    /// Validates a node offset read from the media: inside a node segment,
    /// on a slot boundary.
    fn check_node(&self, pool: &Pool, off: u64) -> Result<&SegState> {
        if off < layout::SUPERBLOCK_BYTES + SEGMENT_HEADER_BYTES || off >= pool.pm.len() {
            return Err(Error::corruption(off, "skiplist link outside the pool"));
        }
        let seg = pool.segment_of(off);
        let st = self.heap.segs[seg as usize]
            .get()
            .filter(|_| pool.kind(seg) == SegmentKind::Ordered as u8)
            .ok_or_else(|| Error::corruption(off, "skiplist link into a non-node segment"))?;
        let within = off - pool.segment_offset(seg) - SEGMENT_HEADER_BYTES;
        if !within.is_multiple_of(1 << st.class)
            || within >> st.class >= self.heap.slots_per_segment(st.class)
        {
            return Err(Error::corruption(off, "skiplist link off a node boundary"));
        }
        Ok(st)
    }

    #[inline]
    fn next(&self, pool: &Pool, node: u64) -> Result<u64> {
        let n = pool.pm.load_u64(node + NODE_NEXT as u64);
        if n != 0 {
            self.check_node(pool, n)?;
        }
        Ok(n)
    }

    /// The key of `node` (checked against the node's CRC when `verify`).
    fn key<'p>(&self, pool: &'p Pool, node: u64, verify: bool) -> Result<&'p [u8]> {
        let st = self.check_node(pool, node)?;
        let head = pool.pm.slice(node + NODE_KEY_LEN as u64, 8)?;
        let len = u32::from_le_bytes(head[0..4].try_into().unwrap()) as usize;
        if NODE_HEADER_BYTES + len > 1 << st.class {
            return Err(Error::corruption(
                node,
                "skiplist node key longer than its slot",
            ));
        }
        let key = pool.pm.slice(node + NODE_HEADER_BYTES as u64, len)?;
        if verify {
            let crc = u32::from_le_bytes(head[4..8].try_into().unwrap());
            if crc != layout::node_crc(key) {
                return Err(Error::corruption(node, "skiplist node CRC32C mismatch"));
            }
        }
        Ok(key)
    }

    fn slot_of(&self, pool: &Pool, node: u64) -> (&SegState, u64) {
        self.heap.slot_of(pool, node)
    }

    fn is_deleted(&self, pool: &Pool, node: u64) -> bool {
        let (st, i) = self.slot_of(pool, node);
        bit(&st.deleted, i)
    }

    // ------------------------------------------------------------- marks

    #[inline]
    fn mark_index(node: u64) -> usize {
        (crate::index::locks::mix64(node) >> (64 - 12)) as usize
    }

    /// Takes the range marks of the gaps after `a` and after `b` (in index
    /// order, once when they share a word).
    fn mark(&self, a: u64, b: Option<u64>) -> Marks<'_> {
        let mut idx = [Some(Self::mark_index(a)), b.map(Self::mark_index)];
        if idx[0] == idx[1] {
            idx[1] = None;
        } else if let (Some(x), Some(y)) = (idx[0], idx[1]) {
            if y < x {
                idx = [Some(y), Some(x)];
            }
        }
        for i in idx.iter().flatten() {
            let m = &self.marks[*i];
            let mut spins = 0u32;
            while m
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                spins += 1;
                if spins < 64 {
                    std::hint::spin_loop();
                } else {
                    std::thread::yield_now();
                }
            }
        }
        Marks {
            marks: &self.marks,
            held: idx,
        }
    }

    // ------------------------------------------------------------ search

    /// The key of `node`, which follows a node with key `prev` (None: the
    /// head) in the list: keys strictly ascend along any traversal (a
    /// deleted node's `next` is frozen, slots are reused only after the
    /// epoch), so anything else — including a cycle — is damage.
    fn key_after<'p>(&self, pool: &'p Pool, node: u64, prev: Option<&[u8]>) -> Result<&'p [u8]> {
        let k = self.key(pool, node, false)?;
        match prev {
            Some(p) if k <= p => Err(Error::corruption(
                node,
                "skiplist keys do not ascend here (damaged link)",
            )),
            _ => Ok(k),
        }
    }

    /// The key of a search's start node: None for the head.
    fn start_key<'p>(&self, pool: &'p Pool, node: u64) -> Result<Option<&'p [u8]>> {
        if node == self.head {
            Ok(None)
        } else {
            self.key(pool, node, false).map(Some)
        }
    }

    /// Where a search for `key` starts: the hinted node with the greatest
    /// key below `key`, or the head.
    fn start(&self, key: &[u8]) -> u64 {
        self.hints
            .upper_bound(Bound::Excluded(key))
            .map(|e| *e.value())
            .unwrap_or(self.head)
    }

    /// (pred, succ): the last node with a key below `key` and the node after
    /// it (0 at the end). The caller is pinned.
    fn search(&self, pool: &Pool, key: &[u8]) -> Result<(u64, u64)> {
        let mut pred = self.start(key);
        let mut prev = self.start_key(pool, pred)?;
        let mut cur = self.next(pool, pred)?;
        while cur != 0 {
            let k = self.key_after(pool, cur, prev)?;
            if k >= key {
                break;
            }
            prev = Some(k);
            pred = cur;
            cur = self.next(pool, cur)?;
        }
        Ok((pred, cur))
    }

    // ------------------------------------------------------------ writes

    /// Links a node for `key` unless one is linked already (an orphan left by
    /// a crash, or a write in flight). The caller holds the key's bucket
    /// lock and is pinned. Returns the key's node and whether it was added.
    pub fn insert(&self, pool: &Pool, key: &[u8], _guard: &Guard) -> Result<(u64, bool)> {
        if key.len() > self.max_key {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: self.max_key,
            });
        }
        let pm = &pool.pm;
        let class = layout::node_class_for(key.len());
        // Allocated on the first attempt that gets as far as marking, kept
        // across retries.
        let mut fresh: Option<u64> = None;
        loop {
            let (pred, succ) = self.search(pool, key)?;
            if succ != 0 && self.key(pool, succ, false)? == key {
                if self.is_deleted(pool, succ) {
                    // Met through a node removed meanwhile: look again.
                    std::thread::yield_now();
                    continue;
                }
                if let Some(n) = fresh {
                    // Never linked, never seen: straight back to the heap.
                    self.heap.free(n, pool.segment_offset(pool.segment_of(n)));
                }
                return Ok((succ, false));
            }
            let node = match fresh {
                Some(n) => n,
                None => *fresh.insert(self.heap.alloc(pool, class)?),
            };
            // The new node's range is marked too, until its link is durable:
            // nobody may link behind it (or unlink its successor) on the
            // strength of a link that a crash could still undo.
            let marks = self.mark(pred, Some(node));
            if self.is_deleted(pool, pred) || pm.load_u64(pred + NODE_NEXT as u64) != succ {
                drop(marks);
                continue;
            }
            let mut head = [0u8; NODE_HEADER_BYTES];
            head[NODE_NEXT..NODE_NEXT + 8].copy_from_slice(&succ.to_le_bytes());
            head[NODE_RECORD..NODE_RECORD + 8].copy_from_slice(&0u64.to_le_bytes());
            head[NODE_KEY_LEN..NODE_KEY_LEN + 4].copy_from_slice(&(key.len() as u32).to_le_bytes());
            head[NODE_CRC..NODE_CRC + 4].copy_from_slice(&layout::node_crc(key).to_le_bytes());
            pm.write(node, &head);
            pm.write(node + NODE_HEADER_BYTES as u64, key);
            pm.flush(node, NODE_HEADER_BYTES + key.len());
            // Persist point: the node is durable before a link names it.
            pm.fence();
            // The marks keep `pred`'s link as checked until it is durable.
            debug_assert_eq!(pm.load_u64(pred + NODE_NEXT as u64), succ);
            pm.store_u64(pred + NODE_NEXT as u64, node);
            pm.flush(pred + NODE_NEXT as u64, 8);
            // Persist point: the node is in the list.
            pm.fence();
            debug_assert_eq!(pm.load_u64(pred + NODE_NEXT as u64), node);
            drop(marks);
            if self.sampled(key) {
                self.hints.insert(key.to_vec(), node);
            }
            return Ok((node, true));
        }
    }

    /// Unlinks the node of `key`. The caller holds the key's bucket lock (the
    /// point index no longer names the key, durably) and is pinned. Returns
    /// whether a node was unlinked.
    pub fn remove(&self, pool: &Pool, key: &[u8], guard: &Guard) -> Result<bool> {
        let pm = &pool.pm;
        loop {
            let (pred, node) = self.search(pool, key)?;
            if node == 0 || self.key(pool, node, false)? != key {
                return Ok(false);
            }
            let marks = self.mark(pred, Some(node));
            if self.is_deleted(pool, pred)
                || self.is_deleted(pool, node)
                || pm.load_u64(pred + NODE_NEXT as u64) != node
            {
                drop(marks);
                continue;
            }
            let next = self.next(pool, node)?;
            let (st, i) = self.slot_of(pool, node);
            // Before anything can see the node deleted or unlinked: no new
            // search starts from it, and the walk after open cannot take
            // its slot for one it never reached.
            if self.sampled(key) {
                self.hints.remove(key);
            }
            // A node whose record word names a record stays linked (the DRAM
            // point index's rebuild relies on it): the word is cleared first.
            debug_assert!({
                let word = layout::Slot(pm.load_u64(Self::record_word(node)));
                !word.names_record()
            });
            self.heap.note_unlinked(st, i);
            set_bit(&st.deleted, i, true);
            pm.store_u64(pred + NODE_NEXT as u64, next);
            pm.flush(pred + NODE_NEXT as u64, 8);
            // Persist point: the node is out of the list.
            pm.fence();
            debug_assert_eq!(pm.load_u64(pred + NODE_NEXT as u64), next);
            drop(marks);
            let heap = self.heap.clone();
            let seg_off = pool.segment_offset(pool.segment_of(node));
            guard.defer(move || heap.free(node, seg_off));
            return Ok(true);
        }
    }

    // ------------------------------------------------------------- reads

    /// The linked node of `key`, if any (the caller is pinned).
    pub fn find(&self, pool: &Pool, key: &[u8]) -> Result<Option<u64>> {
        let (_, node) = self.search(pool, key)?;
        if node != 0 && self.key(pool, node, false)? == key {
            Ok(Some(node))
        } else {
            Ok(None)
        }
    }

    /// Pool offset of `node`'s record word (see `layout::NODE_RECORD`).
    #[inline]
    pub fn record_word(node: u64) -> u64 {
        node + NODE_RECORD as u64
    }

    /// The key of a linked node (CRC checked).
    pub fn node_key<'p>(&self, pool: &'p Pool, node: u64) -> Result<&'p [u8]> {
        self.key(pool, node, true)
    }

    /// Keys of up to `limit` linked nodes after `from` (or from the first
    /// node) in ascending order, stopping past `upper`. Orphans are included:
    /// the caller filters through the point index.
    pub fn collect_forward(
        &self,
        pool: &Pool,
        from: Bound<&[u8]>,
        upper: Bound<&[u8]>,
        limit: usize,
        _guard: &Guard,
    ) -> Result<Vec<Vec<u8>>> {
        let mut node = match from {
            Bound::Unbounded => self.next(pool, self.head)?,
            Bound::Included(k) => self.search(pool, k)?.1,
            Bound::Excluded(k) => {
                let (_, mut n) = self.search(pool, k)?;
                if n != 0 && self.key(pool, n, false)? == k {
                    n = self.next(pool, n)?;
                }
                n
            }
        };
        let mut out: Vec<Vec<u8>> = Vec::new();
        while node != 0 && out.len() < limit {
            let k = self.key_after(pool, node, out.last().map(Vec::as_slice))?;
            let beyond = match upper {
                Bound::Unbounded => false,
                Bound::Included(u) => k > u,
                Bound::Excluded(u) => k >= u,
            };
            if beyond {
                break;
            }
            out.push(k.to_vec());
            node = self.next(pool, node)?;
        }
        Ok(out)
    }

    /// The key of the last linked node below `upper` (or at it, when
    /// included), if any.
    pub fn before(
        &self,
        pool: &Pool,
        upper: Bound<&[u8]>,
        _guard: &Guard,
    ) -> Result<Option<Vec<u8>>> {
        let pred = match upper {
            Bound::Unbounded => {
                // The greatest hint, then walk to the end.
                let mut pred = self.hints.back().map(|e| *e.value()).unwrap_or(self.head);
                let mut prev = self.start_key(pool, pred)?;
                loop {
                    let n = self.next(pool, pred)?;
                    if n == 0 {
                        break pred;
                    }
                    prev = Some(self.key_after(pool, n, prev)?);
                    pred = n;
                }
            }
            Bound::Excluded(u) => self.search(pool, u)?.0,
            Bound::Included(u) => {
                let (pred, cur) = self.search(pool, u)?;
                if cur != 0 && self.key(pool, cur, false)? == u {
                    cur
                } else {
                    pred
                }
            }
        };
        if pred == self.head {
            return Ok(None);
        }
        Ok(Some(self.key(pool, pred, false)?.to_vec()))
    }

    // -------------------------------------------------- after open, check

    /// DRAM point index only, before the walk: visits the node slots of the
    /// segments found at open in slab order (no links followed) and calls
    /// `live(key, node)` for every node whose record word names a record.
    /// Such a node is linked: the word is set only on a linked node and is
    /// cleared durably before its node is unlinked; and until the walk has
    /// finished no slot of these segments is handed out again. A first pass
    /// sets up the search hints (sampled keys only, no record read), so that
    /// searches run at full speed while the second pass calls `live`.
    /// A slot with a record word whose key or record is damaged (or for
    /// which `live` fails) is skipped and described in `damage`.
    pub fn scan_live(
        &self,
        pool: &Pool,
        stop: &AtomicBool,
        live: &mut dyn FnMut(&[u8], u64) -> Result<()>,
        damage: &mut Vec<String>,
    ) {
        for pass in 0..2 {
            for (seg, st) in self.heap.segs.iter().enumerate() {
                let Some(st) = st.get().filter(|st| st.old) else {
                    continue;
                };
                let first = pool.segment_offset(seg as u32) + SEGMENT_HEADER_BYTES;
                for i in 0..self.heap.slots_per_segment(st.class) {
                    if i % WALK_BATCH as u64 == 0 && stop.load(Ordering::Acquire) {
                        return;
                    }
                    let node = first + (i << st.class);
                    let word = layout::Slot(pool.pm.load_u64(Self::record_word(node)));
                    if !word.names_record() {
                        continue;
                    }
                    if pass == 0 {
                        // Cheap look first: only a sampled key is checked
                        // fully here (the rest are, in pass 1).
                        let len = pool.pm.load_u64(node + NODE_KEY_LEN as u64) as u32 as usize;
                        let sampled = NODE_HEADER_BYTES + len <= 1 << st.class
                            && pool
                                .pm
                                .slice(node + NODE_HEADER_BYTES as u64, len)
                                .is_ok_and(|k| self.sampled(k));
                        if !sampled {
                            continue;
                        }
                    }
                    let key = match self.key(pool, node, true) {
                        Ok(k) => k,
                        Err(e) => {
                            if pass == 1 {
                                damage.push(format!("a node with a record word: {e}"));
                            }
                            continue;
                        }
                    };
                    if pass == 1 {
                        if !word.persisted() {
                            // A word a crash left half done: persist it here,
                            // so that `live` (under a bucket lock) need not.
                            let at = Self::record_word(node);
                            pool.pm.flush(at, 8);
                            pool.pm.fence();
                            let _ = pool.pm.cas_u64(at, word.0, word.with_persist().0);
                        }
                        if let Err(e) = live(key, node) {
                            damage.push(format!("node {node:#x}: {e}"));
                        }
                    } else {
                        // Under the node's mark, as in the walk: a remove
                        // sets the deleted bit under it and drops the hint
                        // after.
                        let marks = self.mark(node, None);
                        if !bit(&st.deleted, i) {
                            self.hints.insert(key.to_vec(), node);
                        }
                        drop(marks);
                    }
                }
            }
        }
    }

    /// Walks the whole list after open: sets up the search hints, learns
    /// which old node slots are in use (the others become free), asks
    /// `present(key, node)` (pinned) whether the point index holds each key
    /// — with the DRAM point index, that call enters the key — and hands
    /// every node whose key it does not hold to `orphan` (called unpinned,
    /// which unlinks it under the key's bucket lock).
    pub fn walk(
        &self,
        pool: &Pool,
        present: &dyn Fn(&[u8], u64) -> Result<bool>,
        orphan: &dyn Fn(&[u8]) -> Result<bool>,
        stop: &AtomicBool,
    ) -> Result<WalkReport> {
        let mut report = WalkReport::default();
        {
            let (st, i) = self.slot_of(pool, self.head);
            if st.old {
                set_bit(&st.reachable, i, true);
            }
        }
        let mut last: Option<Vec<u8>> = None;
        loop {
            if stop.load(Ordering::Acquire) {
                return Ok(report);
            }
            let mut orphans = Vec::new();
            let mut finished = false;
            {
                let guard = crossbeam_epoch::pin();
                let mut node = match &last {
                    None => self.next(pool, self.head)?,
                    Some(k) => {
                        let (_, n) = self.search(pool, k)?;
                        if n != 0 && self.key(pool, n, false)? == k.as_slice() {
                            self.next(pool, n)?
                        } else {
                            n
                        }
                    }
                };
                for _ in 0..WALK_BATCH {
                    if node == 0 {
                        finished = true;
                        break;
                    }
                    let key = self.key(pool, node, true)?;
                    if last.as_deref().is_some_and(|l| key <= l) {
                        return Err(Error::corruption(
                            node,
                            "skiplist keys do not ascend here (damaged link)",
                        ));
                    }
                    let (st, i) = self.slot_of(pool, node);
                    if st.old {
                        set_bit(&st.reachable, i, true);
                    }
                    report.nodes += 1;
                    if self.sampled(key) {
                        // Only under the node's mark: a remove sets the
                        // deleted bit under it and drops the hint after.
                        let marks = self.mark(node, None);
                        if !bit(&st.deleted, i) {
                            self.hints.insert(key.to_vec(), node);
                        }
                        drop(marks);
                    }
                    if !present(key, node)? {
                        orphans.push(key.to_vec());
                    }
                    last = Some(key.to_vec());
                    node = self.next(pool, node)?;
                }
                drop(guard);
            }
            for k in orphans {
                if orphan(&k)? {
                    report.orphans_unlinked += 1;
                }
            }
            if finished {
                break;
            }
        }
        self.heap.finish_walk(pool);
        self.walk_done.store(true, Ordering::Release);
        Ok(report)
    }

    /// Walks the list with the check's eyes: keys strictly ascending, every
    /// node valid (CRC), nothing deleted still linked. Returns the keys and
    /// offsets of all linked nodes (the caller compares them with the point
    /// index).
    pub fn check(&self, pool: &Pool, errors: &mut Vec<String>) -> Vec<(Vec<u8>, u64)> {
        let _guard = crossbeam_epoch::pin();
        let mut keys: Vec<(Vec<u8>, u64)> = Vec::new();
        let mut seen = HashMap::new();
        let mut node = match self.next(pool, self.head) {
            Ok(n) => n,
            Err(e) => {
                errors.push(format!("ordered index: head: {e}"));
                return keys;
            }
        };
        while node != 0 {
            if seen.insert(node, ()).is_some() {
                errors.push(format!(
                    "ordered index: node {node:#x} is linked twice (cycle)"
                ));
                break;
            }
            let key = match self.key(pool, node, true) {
                Ok(k) => k,
                Err(e) => {
                    errors.push(format!("ordered index: {e}"));
                    break;
                }
            };
            if let Some((prev, _)) = keys.last() {
                if prev.as_slice() >= key {
                    errors.push(format!(
                        "ordered index: node {node:#x} is out of order ({:?} after {:?})",
                        String::from_utf8_lossy(key),
                        String::from_utf8_lossy(prev)
                    ));
                }
            }
            if self.is_deleted(pool, node) {
                errors.push(format!(
                    "ordered index: deleted node {node:#x} still linked"
                ));
            }
            keys.push((key.to_vec(), node));
            node = match self.next(pool, node) {
                Ok(n) => n,
                Err(e) => {
                    errors.push(format!("ordered index: {e}"));
                    break;
                }
            };
        }
        keys
    }
}

/// Creates the head node in the first node segment of a new ordered index.
fn create_head(pool: &Pool, heap: &NodeHeap) -> Result<u64> {
    let seg = pool.reserve(1)?;
    zero_slab(pool, seg);
    let node = pool.segment_offset(seg) + SEGMENT_HEADER_BYTES;
    let mut head = [0u8; NODE_HEADER_BYTES];
    head[NODE_CRC..NODE_CRC + 4].copy_from_slice(&layout::node_crc(&[]).to_le_bytes());
    pool.pm.write(node, &head);
    pool.pm.flush(node, NODE_HEADER_BYTES);
    // Persist point: the head node is durable before the header names it.
    pool.pm.fence();
    commit_slab(pool, seg, NODE_MIN_CLASS, true);
    let slots = heap.slots_per_segment(NODE_MIN_CLASS);
    let _ = heap.segs[seg as usize].set(SegState::new(NODE_MIN_CLASS, slots, false));
    heap.segments.fetch_add(1, Ordering::Relaxed);
    heap.nodes.fetch_add(1, Ordering::Relaxed);
    let seg_off = pool.segment_offset(seg);
    heap.classes[0].lock().bump = Some((
        node + (1 << NODE_MIN_CLASS),
        seg_off + SEGMENT_HEADER_BYTES + (slots << NODE_MIN_CLASS),
    ));
    Ok(node)
}

impl NodeHeap {
    fn slots_per_segment(&self, class: u32) -> u64 {
        (self.segment_bytes - SEGMENT_HEADER_BYTES) >> class
    }

    /// The state of the segment holding node `node` (a node this heap
    /// handed out or the walk reached) and the node's slot number in it.
    fn slot_of(&self, pool: &Pool, node: u64) -> (&SegState, u64) {
        let seg = pool.segment_of(node);
        let st = self.segs[seg as usize].get().expect("node segment state");
        let i = (node - pool.segment_offset(seg) - SEGMENT_HEADER_BYTES) >> st.class;
        (st, i)
    }

    fn alloc(&self, pool: &Pool, class: u32) -> Result<u64> {
        let mut c = self.classes[(class - NODE_MIN_CLASS) as usize].lock();
        let node = if let Some(n) = c.free.pop() {
            n
        } else {
            match c.bump {
                Some((next, end)) if next < end => {
                    c.bump = Some((next + (1 << class), end));
                    next
                }
                _ => {
                    let seg = new_slab(pool, class)?;
                    let slots = self.slots_per_segment(class);
                    // A segment index is reused only after release, and node
                    // segments are never released: the state is set once.
                    let _ = self.segs[seg as usize].set(SegState::new(class, slots, false));
                    self.segments.fetch_add(1, Ordering::Relaxed);
                    let first = pool.segment_offset(seg) + SEGMENT_HEADER_BYTES;
                    c.bump = Some((first + (1 << class), first + (slots << class)));
                    first
                }
            }
        };
        drop(c);
        let (st, i) = self.slot_of(pool, node);
        set_bit(&st.deleted, i, false);
        self.nodes.fetch_add(1, Ordering::Relaxed);
        Ok(node)
    }

    /// A node of an old segment was unlinked: while the walk runs, its slot
    /// must not be taken for one the walk found unreachable (the epoch will
    /// free it).
    fn note_unlinked(&self, st: &SegState, i: u64) {
        if !st.old {
            return;
        }
        let pending = self.pending.lock();
        if pending.is_some() {
            set_bit(&st.reachable, i, true);
        }
    }

    /// Returns an unlinked node (after its epoch).
    fn free(&self, node: u64, seg_off: u64) {
        let seg = ((seg_off - layout::SUPERBLOCK_BYTES) / self.segment_bytes) as usize;
        let st = self.segs[seg].get().expect("node segment state");
        self.nodes.fetch_sub(1, Ordering::Relaxed);
        if st.old {
            let mut pending = self.pending.lock();
            if let Some(p) = pending.as_mut() {
                p.push(node);
                return;
            }
        }
        self.classes[(st.class - NODE_MIN_CLASS) as usize]
            .lock()
            .free
            .push(node);
    }

    /// After the walk: every slot of an old segment the walk did not reach,
    /// or that was freed meanwhile, is free.
    fn finish_walk(&self, pool: &Pool) {
        let mut pending = self.pending.lock();
        let freed = pending.take().unwrap_or_default();
        for &node in &freed {
            let (st, i) = self.slot_of(pool, node);
            set_bit(&st.reachable, i, false);
        }
        let mut live = 0u64;
        for (seg, st) in self.segs.iter().enumerate() {
            let Some(st) = st.get().filter(|s| s.old) else {
                continue;
            };
            let base = pool.segment_offset(seg as u32) + SEGMENT_HEADER_BYTES;
            let mut c = self.classes[(st.class - NODE_MIN_CLASS) as usize].lock();
            for i in 0..self.slots_per_segment(st.class) {
                if bit(&st.reachable, i) {
                    live += 1;
                } else {
                    c.free.push(base + (i << st.class));
                }
            }
        }
        // Nodes of old segments were not counted at open; `free` already
        // subtracted the ones released since.
        self.nodes
            .fetch_add((live + freed.len() as u64) as i64, Ordering::Relaxed);
        drop(pending);
    }
}
