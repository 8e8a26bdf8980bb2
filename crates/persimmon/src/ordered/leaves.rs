//! The ordered index in leaves (format version 6, pools with the DRAM point
//! index): persistent leaves of up to 60 entries, each entry a key's record
//! word (its persistent truth, slot encoding) and the key's first 8 bytes;
//! the keys themselves live in the records. A DRAM map from each leaf's
//! *low key* to the leaf finds the leaf of a key (rebuilt at open from the
//! leaf headers). After HybridIndex+ (persistent B+-tree leaves read whole,
//! hash index beside them) and FP-Tree (unsorted leaves, inner levels in
//! DRAM).
//!
//! Ranges: a leaf covers the keys from its low key up to the next leaf's.
//! Entries are unsorted; a reader sorts a leaf's entries by prefix (by key
//! where prefixes tie) and reads each record once.
//!
//! Protocols (every persistent write through the pmem layer):
//! - *reserve* (new key, under its bucket lock and the leaf lock): take an
//!   entry that is empty (or holds a delete marker no writer owns), store
//!   the prefix, then a delete marker (absent to readers); the entry is
//!   *pinned* (busy bit) until the writer's locked section ends. Publishing
//!   the record word is the engine's (two-phase, like a slot).
//! - *pin* (a known key): under the leaf lock, check the entry still names
//!   the key's record and set its busy bit.
//! - *split* (leaf full, no entry pinned, leaf lock held): sort its keys
//!   with those about to be inserted, cut them into runs (halves for one
//!   new key, more for a batch's); per run but the first, write a new leaf
//!   (entries, low key, header but word 0), flush, **fence**; store word 0
//!   (magic, low key length), flush, **fence** (the new leaf exists); add
//!   it to the DRAM map; then clear the moved entries of the old leaf (no
//!   fence: a copy left behind by a crash lies outside the old leaf's range
//!   and is ignored, then cleared).
//!
//! Invariants:
//! - A key with a record has exactly one entry inside its leaf's range that
//!   names it; copies outside a leaf's range are stale (an interrupted
//!   split) and never read.
//! - An entry's address is stable while it is pinned: a split waits for a
//!   leaf with no busy bit, and setting one needs the leaf lock.
//! - A word with the persist bit clear, or a marker, in a pinned entry is a
//!   write in flight: readers wait for the pin to go. Unpinned, a marker is
//!   free space and an unpersisted word is a crash's leftover (persisted by
//!   whoever reads it first).
//! - The DRAM map holds a leaf only once it is durable; leaves are never
//!   freed (a leaf emptied by deletes keeps its range).

use std::cell::RefCell;
use std::cmp::Ordering as CmpOrdering;
use std::ops::Bound;
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::OnceLock;

use crate::error::{Error, Result};
use crate::layout::{
    self, key_prefix, Slot, LEAF_BODY_BYTES, LEAF_ENTRIES, LEAF_ENTRY_BYTES, LEAF_HEADER_BYTES,
    LEAF_MIN_CLASS, SEGMENT_HEADER_BYTES,
};
use crate::pool::Pool;

use super::leaf_dir::LeafDir;
use super::leaf_media::{entry_at, intact_record, read_header, record_key, write_leaf, Header};

/// DRAM state of one leaf slot.
struct LeafMeta {
    /// The leaf lock; it guards the leaf's high bound as last seen in the
    /// map (None: not looked up yet; Some(None): the last leaf), which only
    /// a split of this leaf, under this lock, changes.
    lock: parking_lot::Mutex<High>,
    /// Bit i: entry i is pinned by a writer.
    busy: AtomicU64,
}

/// DRAM state of one leaf segment.
struct SegMeta {
    class: u32,
    leaves: Box<[LeafMeta]>,
}

/// What [`Leaves::reserve`] got.
pub(crate) enum Reserve {
    /// The entry reserved for the key, pinned.
    Entry(u64),
    /// The leaf is full and has pinned entries: split it (with no lock
    /// held) and try again.
    Full(u64),
}

/// What [`Leaves::walk_leaves`] shows of one leaf.
#[derive(Default)]
pub(crate) struct LeafView {
    /// (key, entry, word) of the entries in range, by key.
    pub live: Vec<(Vec<u8>, u64, Slot)>,
    /// Entries naming records outside the leaf's range, with the word seen.
    pub stale: Vec<(u64, Slot)>,
    /// Entries whose record could not be read.
    pub damaged: Vec<(u64, Error)>,
}

/// One entry as a reader saw it.
#[derive(Clone, Copy)]
struct Seen {
    entry: u64,
    word: Slot,
    prefix: u64,
}

thread_local! {
    /// Entries this thread pinned since its innermost [`PinScope`] began.
    static PINS: RefCell<Vec<u64>> = const { RefCell::new(Vec::new()) };
}

/// Unpins, when dropped, every entry its thread pinned since it was made.
pub(crate) struct PinScope<'a> {
    leaves: &'a Leaves,
    mark: usize,
}

impl Drop for PinScope<'_> {
    fn drop(&mut self) {
        let pinned: Vec<u64> = PINS.with(|p| p.borrow_mut().drain(self.mark..).collect());
        for e in pinned {
            self.leaves.unpin(e);
        }
    }
}

/// The leaves of one open pool.
pub(crate) struct Leaves {
    /// Low key → leaf offset; the first leaf's low key is empty.
    dir: LeafDir,
    segs: Box<[OnceLock<SegMeta>]>,
    /// Free leaf slots per class (index class - LEAF_MIN_CLASS), and the
    /// bump range of the newest segment of each class.
    heap: parking_lot::Mutex<Vec<ClassHeap>>,
    segments: AtomicUsize,
    segment_bytes: u64,
    max_key: usize,
    /// The work after open is done (or there was none: a new index).
    settled: AtomicBool,
}

/// Free leaf slots of one class, and the bump range (next, end) of its
/// newest segment.
type ClassHeap = (Vec<u64>, Option<(u64, u64)>);

/// What a scan calls per entry: `(key, entry, word)`; false stops it.
pub(crate) type Visit<'v> = dyn FnMut(&[u8], u64, Slot) -> Result<bool> + 'v;

/// What [`Leaves::walk_leaves`] calls per leaf: `(low key, leaf, view)`.
pub(crate) type EachLeaf<'v> = dyn FnMut(&[u8], u64, LeafView) -> Result<()> + 'v;

/// A leaf's high bound, cached under its lock (see [`LeafMeta`]).
type High = Option<Option<Vec<u8>>>;

/// Shortest key `s` with `below < s <= above` (suffix truncation).
fn separator(below: &[u8], above: &[u8]) -> Vec<u8> {
    let common = below.iter().zip(above).take_while(|(a, b)| a == b).count();
    above[..(common + 1).min(above.len())].to_vec()
}

/// Whether `key` lies in the range of a leaf from `low` up to `high`.
fn in_leaf(key: &[u8], low: &[u8], high: Option<&[u8]>) -> bool {
    key >= low && high.is_none_or(|h| key < h)
}

/// Whether this thread holds a pin on `entry`.
fn pinned_here(entry: u64) -> bool {
    PINS.with(|p| p.borrow().contains(&entry))
}

fn spin(spins: &mut u32) {
    *spins += 1;
    if *spins < 64 {
        std::hint::spin_loop();
    } else {
        std::thread::yield_now();
    }
}

impl Leaves {
    /// Opens the leaves of a pool: reads the header of every leaf slot of
    /// the ordered segments (`scan`: segment, class) into the DRAM map, or
    /// creates the first leaf of a new pool.
    pub fn open(pool: &Pool, scan: &[(u32, u32, bool)]) -> Result<Leaves> {
        let max_segments =
            ((pool.pool_bytes_max - layout::SUPERBLOCK_BYTES) / pool.segment_bytes) as usize;
        let max_class = pool.segment_bytes.trailing_zeros() - 1;
        for &(seg, class, _) in scan {
            if !(LEAF_MIN_CLASS..=max_class).contains(&class) {
                return Err(Error::corruption(
                    pool.segment_offset(seg),
                    format!("ordered-index segment with leaf class {class}"),
                ));
            }
        }
        // After a clean close the map's copy beside the pool, if valid,
        // spares reading every leaf header.
        let copy = pool
            .clean_key_count
            .and_then(|_| LeafDir::load(&pool.path, &pool.sb.pool_id, pool.open_count - 1));
        let from_copy = copy.is_some();
        let mut leaves = Leaves {
            dir: copy.unwrap_or_else(|| LeafDir::from_pairs(Vec::new())),
            segs: (0..max_segments).map(|_| OnceLock::new()).collect(),
            heap: parking_lot::Mutex::new(
                (LEAF_MIN_CLASS..=max_class.max(LEAF_MIN_CLASS))
                    .map(|_| (Vec::new(), None))
                    .collect(),
            ),
            segments: AtomicUsize::new(0),
            segment_bytes: pool.segment_bytes,
            max_key: layout::leaf_max_key(pool.segment_bytes),
            settled: AtomicBool::new(false),
        };
        if from_copy {
            leaves.adopt_from_copy(pool, scan)?;
        } else {
            let mut pairs = Vec::new();
            for &(seg, class, _) in scan {
                leaves.adopt_segment(pool, seg, class, &mut pairs)?;
            }
            leaves.dir = LeafDir::from_pairs(pairs);
            if let Some(leaf) = leaves.dir.shared_low() {
                return Err(Error::corruption(leaf, "two leaves share a low key"));
            }
        }
        // No leaf at all is a new index — also when a crash interrupted the
        // first open after the first leaf segment was committed.
        if leaves.dir.len() == 0 {
            let first = leaves.alloc(pool, LEAF_MIN_CLASS)?;
            write_leaf(pool, first, 1 << LEAF_MIN_CLASS, &[], &[]);
            leaves.dir.insert(Vec::new(), first);
            // Nothing to rebuild after open.
            leaves.set_settled();
        } else if leaves.dir.first().is_none_or(|e| !e.0.is_empty()) {
            return Err(Error::corruption(
                layout::SUPERBLOCK_BYTES,
                "the ordered index has leaf segments but no first leaf",
            ));
        }
        Ok(leaves)
    }

    /// Reads the headers of segment `seg`'s leaf slots: leaves go to
    /// `pairs` (low key, leaf), free slots onto the free list.
    fn adopt_segment(
        &self,
        pool: &Pool,
        seg: u32,
        class: u32,
        pairs: &mut Vec<(Vec<u8>, u64)>,
    ) -> Result<()> {
        let slots = self.slots_per_segment(class);
        self.set_seg(seg, class, slots);
        let base = pool.segment_offset(seg) + SEGMENT_HEADER_BYTES;
        let mut free = Vec::new();
        for i in 0..slots {
            let leaf = base + (i << class);
            match read_header(pool, leaf, class)? {
                Header::Free => free.push(leaf),
                Header::Leaf(low) => pairs.push((low, leaf)),
            }
        }
        self.heap.lock()[(class - LEAF_MIN_CLASS) as usize]
            .0
            .extend(free.into_iter().rev());
        Ok(())
    }

    /// Sets up the segments of `scan` from the map's copy: every slot the
    /// map does not name is free (after a clean close no other slot holds
    /// a leaf). Checks that each leaf named sits on a slot of a leaf
    /// segment.
    fn adopt_from_copy(&self, pool: &Pool, scan: &[(u32, u32, bool)]) -> Result<()> {
        let mut used: Vec<Vec<bool>> = vec![Vec::new(); self.segs.len()];
        for &(seg, class, _) in scan {
            let slots = self.slots_per_segment(class);
            self.set_seg(seg, class, slots);
            used[seg as usize] = vec![false; slots as usize];
        }
        for leaf in self.dir.leaf_offsets() {
            let seg = pool.segment_of(leaf);
            let st = self.segs.get(seg as usize).and_then(|s| s.get());
            let (Some(st), Some(u)) = (st, used.get_mut(seg as usize)) else {
                return Err(Error::corruption(
                    leaf,
                    "the leaf map names a slot outside the leaf segments",
                ));
            };
            let within = leaf - pool.segment_offset(seg) - SEGMENT_HEADER_BYTES;
            let i = (within >> st.class) as usize;
            if !within.is_multiple_of(1 << st.class) || i >= u.len() {
                return Err(Error::corruption(
                    leaf,
                    "the leaf map names a slot off a leaf boundary",
                ));
            }
            u[i] = true;
        }
        let mut heap = self.heap.lock();
        for &(seg, class, _) in scan {
            let base = pool.segment_offset(seg) + SEGMENT_HEADER_BYTES;
            let free = &mut heap[(class - LEAF_MIN_CLASS) as usize].0;
            for (i, _) in used[seg as usize]
                .iter()
                .enumerate()
                .rev()
                .filter(|(_, u)| !**u)
            {
                free.push(base + ((i as u64) << class));
            }
        }
        Ok(())
    }

    /// Keeps the map's copy beside the pool for the next open (a clean
    /// close; best effort).
    pub fn save_map(&self, pool: &Pool) {
        let _ = self.dir.save(&pool.path, &pool.sb.pool_id, pool.open_count);
    }

    fn set_seg(&self, seg: u32, class: u32, slots: u64) {
        let meta = SegMeta {
            class,
            leaves: (0..slots)
                .map(|_| LeafMeta {
                    lock: parking_lot::Mutex::new(None),
                    busy: AtomicU64::new(0),
                })
                .collect(),
        };
        let _ = self.segs[seg as usize].set(meta);
        self.segments.fetch_add(1, Ordering::Relaxed);
    }

    /// Whether the work after open (the DRAM point index's rebuild from the
    /// leaves) is done, or there was none.
    pub fn settled(&self) -> bool {
        self.settled.load(Ordering::Acquire)
    }

    pub fn set_settled(&self) {
        self.settled.store(true, Ordering::Release);
    }

    /// Longest key this index holds.
    pub fn max_key(&self) -> usize {
        self.max_key
    }

    /// Leaves in use and leaf segments.
    pub fn figures(&self) -> (u64, usize) {
        (self.dir.len() as u64, self.segments.load(Ordering::Relaxed))
    }

    fn slots_per_segment(&self, class: u32) -> u64 {
        (self.segment_bytes - SEGMENT_HEADER_BYTES) >> class
    }

    /// The leaf holding `entry` (or the leaf at `entry` itself), its class
    /// and the DRAM state of the leaf.
    fn locate(&self, entry: u64) -> (u64, u32, &LeafMeta) {
        let seg = ((entry - layout::SUPERBLOCK_BYTES) / self.segment_bytes) as usize;
        let st = self.segs[seg].get().expect("leaf segment state");
        let base =
            layout::SUPERBLOCK_BYTES + seg as u64 * self.segment_bytes + SEGMENT_HEADER_BYTES;
        let i = (entry - base) >> st.class;
        (base + (i << st.class), st.class, &st.leaves[i as usize])
    }

    #[inline]
    fn entry_index(leaf: u64, entry: u64) -> usize {
        ((entry - leaf) as usize - LEAF_HEADER_BYTES) / LEAF_ENTRY_BYTES
    }

    fn alloc(&self, pool: &Pool, class: u32) -> Result<u64> {
        let mut heap = self.heap.lock();
        let c = &mut heap[(class - LEAF_MIN_CLASS) as usize];
        if let Some(l) = c.0.pop() {
            return Ok(l);
        }
        if let Some((next, end)) = c.1 {
            if next < end {
                c.1 = Some((next + (1 << class), end));
                return Ok(next);
            }
        }
        // A leaf slot that never held a leaf reads as free after a crash.
        let seg = super::slab::new_slab(pool, class)?;
        let slots = self.slots_per_segment(class);
        self.set_seg(seg, class, slots);
        let first = pool.segment_offset(seg) + SEGMENT_HEADER_BYTES;
        c.1 = Some((first + (1 << class), first + (slots << class)));
        Ok(first)
    }

    // ----------------------------------------------------------- the map

    /// The leaf whose range holds `key`, with its low key.
    fn leaf_for(&self, key: &[u8]) -> (Vec<u8>, u64) {
        self.dir
            .floor(key, false)
            .expect("the first leaf's low key is empty")
    }

    /// The low key of the leaf after the one whose low key is `low`.
    fn next_low(&self, low: &[u8]) -> Option<(Vec<u8>, u64)> {
        self.dir.ceil(low, true)
    }

    fn prev_leaf(&self, low: &[u8]) -> Option<(Vec<u8>, u64)> {
        self.dir.floor(low, true)
    }

    // ----------------------------------------------------------- entries

    /// Entries of `leaf` that name records, each word read with its prefix,
    /// all as they were at one moment: the leaf's 60 words are read again
    /// afterwards and the whole read repeated if any changed (so a batch is
    /// seen whole or not at all within a leaf, and leaves read one after
    /// the other give states that only move forward). A pinned entry (a
    /// write in flight) is waited for unless this thread pinned it; a
    /// crash's unpersisted word is persisted first.
    fn snapshot(&self, pool: &Pool, leaf: u64, out: &mut Vec<Seen>) {
        let pm = &pool.pm;
        let (_, _, meta) = self.locate(leaf);
        let mut raw = [0u64; LEAF_ENTRIES];
        loop {
            out.clear();
            for (i, r) in raw.iter_mut().enumerate() {
                *r = self.read_entry(pm, meta, leaf, i, out);
            }
            if (0..LEAF_ENTRIES).all(|i| pm.load_u64(entry_at(leaf, i)) == raw[i]) {
                return;
            }
        }
    }

    /// Reads entry `i` of `leaf` (see [`snapshot`](Self::snapshot)): adds it
    /// to `out` if it names a record; returns the word as it now stands.
    fn read_entry(
        &self,
        pm: &crate::pmem::PmemFile,
        meta: &LeafMeta,
        leaf: u64,
        i: usize,
        out: &mut Vec<Seen>,
    ) -> u64 {
        let at = entry_at(leaf, i);
        let busy = || meta.busy.load(Ordering::Acquire) & (1 << i) != 0 && !pinned_here(at);
        let mut spins = 0;
        loop {
            if busy() {
                spin(&mut spins);
                continue;
            }
            let w = Slot(pm.load_u64(at));
            let prefix = pm.load_u64(at + 8);
            // Pinned meanwhile (whoever stored what we read pinned first),
            // or changed: look again.
            if pm.load_u64(at) != w.0 || busy() {
                continue;
            }
            if !w.names_record() {
                return w.0;
            }
            if !w.persisted() {
                // Left by a crash: make it durable before acting on it.
                pm.flush(at, 8);
                pm.fence();
                let _ = pm.cas_u64(at, w.0, w.with_persist().0);
            }
            out.push(Seen {
                entry: at,
                word: w.with_persist(),
                prefix: u64::from_be(prefix),
            });
            return pm.load_u64(at);
        }
    }

    /// The entry of `key` in the leaf it belongs to, with its word (any
    /// state but empty or marker), read without locks.
    pub fn find(&self, pool: &Pool, key: &[u8], fp: u16) -> Result<Option<(u64, Slot)>> {
        loop {
            let (_, leaf) = self.leaf_for(key);
            let found = self.find_in(pool, leaf, key, fp)?;
            // A split may have moved the key out after the map was read.
            if self.leaf_for(key).1 == leaf {
                return Ok(found);
            }
        }
    }

    fn find_in(&self, pool: &Pool, leaf: u64, key: &[u8], fp: u16) -> Result<Option<(u64, Slot)>> {
        let pm = &pool.pm;
        for i in 0..LEAF_ENTRIES {
            let at = entry_at(leaf, i);
            let w = Slot(pm.load_u64(at));
            if !w.names_record() || w.fingerprint() != fp {
                continue;
            }
            if record_key(pool, w.offset())? == key {
                return Ok(Some((at, w)));
            }
        }
        Ok(None)
    }

    // ----------------------------------------------------------- writers

    /// Locks the leaf whose range holds `key`: the map's answer, checked
    /// under the leaf lock against the leaf's high bound (a split may have
    /// moved the range on since the map was read; the bound is stable
    /// under the lock). Returns its low key, the leaf, its state and the
    /// guard.
    fn lock_leaf_for(
        &self,
        key: &[u8],
    ) -> (Vec<u8>, u64, &LeafMeta, parking_lot::MutexGuard<'_, High>) {
        loop {
            let (low, leaf) = self.leaf_for(key);
            let (_, _, meta) = self.locate(leaf);
            let mut g = meta.lock.lock();
            let high = g.get_or_insert_with(|| self.next_low(&low).map(|n| n.0));
            if high.as_deref().is_none_or(|h| key < h) {
                return (low, leaf, meta, g);
            }
        }
    }

    /// Pins `entry` (its leaf's lock held) for this thread's scope. Only
    /// the holder of the key's bucket lock pins an entry, so a pin already
    /// there is this thread's own (a key looked up twice in one scope).
    fn pin_locked(&self, meta: &LeafMeta, leaf: u64, entry: u64) {
        let bit = 1u64 << Self::entry_index(leaf, entry);
        if meta.busy.load(Ordering::Acquire) & bit != 0 {
            debug_assert!(pinned_here(entry), "an entry pinned by another thread");
            return;
        }
        meta.busy.fetch_or(bit, Ordering::AcqRel);
        PINS.with(|p| p.borrow_mut().push(entry));
    }

    fn unpin(&self, entry: u64) {
        let (leaf, _, meta) = self.locate(entry);
        meta.busy
            .fetch_and(!(1u64 << Self::entry_index(leaf, entry)), Ordering::AcqRel);
    }

    /// A scope whose end unpins what this thread pins meanwhile.
    pub fn scope(&self) -> PinScope<'_> {
        PinScope {
            leaves: self,
            mark: PINS.with(|p| p.borrow().len()),
        }
    }

    /// Pins the entry of `key` (the caller holds the key's bucket lock):
    /// `hint` when it still names the record at `record`, else the one a
    /// search finds. Returns the entry, or None when the key has none.
    pub fn pin(
        &self,
        pool: &Pool,
        key: &[u8],
        fp: u16,
        hint: Option<u64>,
        record: u64,
    ) -> Result<Option<u64>> {
        if let Some(e) = hint.filter(|&e| e != 0) {
            let (leaf, _, meta) = self.locate(e);
            let _g = meta.lock.lock();
            let w = Slot(pool.pm.load_u64(e));
            if w.names_record() && w.offset() == record {
                self.pin_locked(meta, leaf, e);
                return Ok(Some(e));
            }
        }
        let (_, leaf, meta, _g) = self.lock_leaf_for(key);
        Ok(match self.find_in(pool, leaf, key, fp)? {
            Some((e, _)) => {
                self.pin_locked(meta, leaf, e);
                Some(e)
            }
            None => None,
        })
    }

    /// Reserves an entry for `key`, which has none (the caller holds its
    /// bucket lock): see the module header. Splits the leaf first when it
    /// is full and nothing in it is pinned.
    pub fn reserve(&self, pool: &Pool, key: &[u8], fp: u16) -> Result<Reserve> {
        if key.len() > self.max_key {
            return Err(Error::KeyTooLarge {
                len: key.len(),
                max: self.max_key,
            });
        }
        let pm = &pool.pm;
        loop {
            let (low, leaf, meta, mut g) = self.lock_leaf_for(key);
            // The caller found the key absent under its bucket lock.
            debug_assert!(
                self.find_in(pool, leaf, key, fp)?.is_none(),
                "reserving a present key"
            );
            let busy = meta.busy.load(Ordering::Acquire);
            for i in 0..LEAF_ENTRIES {
                let at = entry_at(leaf, i);
                let w = Slot(pm.load_u64(at));
                if busy & (1 << i) != 0 || !(w.is_empty() || w.is_marker()) {
                    continue;
                }
                // Prefix before the word, on the same line: where the word
                // is durable, so is the prefix.
                pm.store_u64(at + 8, key_prefix(key).to_be());
                pm.store_u64(at, Slot::delete_marker(fp).0);
                self.pin_locked(meta, leaf, at);
                return Ok(Reserve::Entry(at));
            }
            if busy != 0 {
                return Ok(Reserve::Full(leaf));
            }
            self.split_locked(pool, &low, leaf, &[key], &mut g)?;
            drop(g);
        }
    }

    /// Gives back an entry reserved but never published.
    pub fn give_back(&self, pool: &Pool, entry: u64) {
        debug_assert!(!Slot(pool.pm.load_u64(entry)).names_record());
        pool.pm.store_u64(entry, Slot::EMPTY.0);
    }

    /// Splits `leaf` once no entry of it is pinned (the caller holds no
    /// lock), so that it and the leaves split off can take `pending` (keys
    /// about to be inserted, e.g. a batch's). Returns at once if the leaf
    /// has room for them by then.
    pub fn split(&self, pool: &Pool, leaf: u64, pending: &[&[u8]]) -> Result<()> {
        let (_, class, meta) = self.locate(leaf);
        let Header::Leaf(low) = read_header(pool, leaf, class)? else {
            return Err(Error::corruption(
                leaf,
                "splitting a slot that is not a leaf",
            ));
        };
        let mut spins = 0;
        loop {
            {
                let mut g = meta.lock.lock();
                if meta.busy.load(Ordering::Acquire) == 0 {
                    return self.split_locked(pool, &low, leaf, pending, &mut g);
                }
            }
            spin(&mut spins);
        }
    }

    /// The split proper (leaf lock held, nothing pinned). Copies an
    /// interrupted split left behind are cleared first. If the leaf's keys
    /// and the `pending` keys of its range fit one leaf, nothing else
    /// happens; else they are cut into k ≥ 2 runs of at most ~45 (halves
    /// for one pending key), the leaf keeps the first and a new leaf takes
    /// each other run's entries, its low key the shortest separator from
    /// the run before.
    fn split_locked(
        &self,
        pool: &Pool,
        low: &[u8],
        leaf: u64,
        pending: &[&[u8]],
        cached: &mut High,
    ) -> Result<()> {
        let pm = &pool.pm;
        let mut seen = Vec::with_capacity(LEAF_ENTRIES);
        self.snapshot(pool, leaf, &mut seen);
        let high = self.next_low(low).map(|n| n.0);
        *cached = Some(high.clone());
        let mut all: Vec<(&[u8], Option<Seen>)> = Vec::with_capacity(seen.len() + pending.len());
        for s in &seen {
            pm.prefetch(s.word.offset());
        }
        for s in &seen {
            let key = record_key(pool, s.word.offset())?;
            if in_leaf(key, low, high.as_deref()) {
                all.push((key, Some(*s)));
            } else {
                pm.store_u64(s.entry, Slot::EMPTY.0);
                pm.flush(s.entry, 8);
            }
        }
        all.extend(
            pending
                .iter()
                .filter(|k| in_leaf(k, low, high.as_deref()))
                .map(|&k| (k, None)),
        );
        all.sort_unstable_by(|a, b| a.0.cmp(b.0).then(b.1.is_some().cmp(&a.1.is_some())));
        all.dedup_by(|b, a| a.0 == b.0);
        if all.len() <= LEAF_ENTRIES {
            return Ok(());
        }
        let runs = all.len().div_ceil(45).max(2);
        let size = all.len().div_ceil(runs);
        let seps: Vec<Vec<u8>> = (1..all.len().div_ceil(size))
            .map(|j| separator(all[j * size - 1].0, all[j * size].0))
            .collect();
        *cached = Some(seps.first().cloned());
        let mut moved = Vec::new();
        for (j, run) in all.chunks(size).enumerate().skip(1) {
            let sep = seps[j - 1].clone();
            debug_assert!(sep.as_slice() > low, "a separator above the leaf's low key");
            let class = layout::leaf_class_for(sep.len());
            let new = self.alloc(pool, class)?;
            // Its high bound: the next separator, or the split leaf's.
            *self.locate(new).2.lock.lock() = Some(seps.get(j).cloned().or_else(|| high.clone()));
            let entries: Vec<(u64, u64)> = run
                .iter()
                .filter_map(|(_, s)| s.map(|s| (s.word.0, s.prefix)))
                .collect();
            write_leaf(pool, new, 1 << class, &sep, &entries);
            self.dir.insert(sep, new);
            moved.extend(run.iter().filter_map(|(_, s)| s.map(|s| s.entry)));
        }
        // Only now that every new leaf is in the map.
        for e in moved {
            pm.store_u64(e, Slot::EMPTY.0);
            pm.flush(e, 8);
        }
        Ok(())
    }

    // ----------------------------------------------------------- readers

    /// Visits entries in key order from `from` (forward) or down from
    /// `from` (backward), leaf by leaf, while `visit(key, entry, word)`
    /// returns true. Keys of one call strictly ascend (descend); copies
    /// outside their leaf's range are skipped.
    pub fn scan(
        &self,
        pool: &Pool,
        from: Bound<&[u8]>,
        forward: bool,
        visit: &mut Visit<'_>,
    ) -> Result<()> {
        let mut cur = match (from, forward) {
            (Bound::Unbounded, true) => self.dir.first(),
            (Bound::Unbounded, false) => self.dir.last(),
            (Bound::Included(k) | Bound::Excluded(k), _) => Some(self.leaf_for(k)),
        };
        let mut seen = Vec::with_capacity(LEAF_ENTRIES);
        let mut keyed: Vec<(&[u8], Seen)> = Vec::with_capacity(LEAF_ENTRIES);
        // Backwards: the low key of the leaf read last (the exclusive top of
        // what is left), None before the first leaf.
        let mut top: Option<Vec<u8>> = None;
        while let Some((low, leaf)) = cur {
            self.snapshot(pool, leaf, &mut seen);
            if !forward {
                // A split may have put a new leaf between this one and the
                // top since this one was chosen: then that leaf comes first.
                let now = match (&top, from) {
                    (Some(t), _) => self.prev_leaf(t),
                    (None, Bound::Unbounded) => self.dir.last(),
                    (None, Bound::Included(k) | Bound::Excluded(k)) => Some(self.leaf_for(k)),
                };
                if now.as_ref().map(|n| n.1) != Some(leaf) {
                    cur = now;
                    continue;
                }
            }
            // Read after the entries: a split that cleared entries here had
            // published its new leaf before.
            let next = self.next_low(&low);
            let high = next.as_ref().map(|n| n.0.as_slice());
            // The next leaf's entries are wanted soon (forward scans).
            if let (true, Some((_, n))) = (forward, &next) {
                for line in (0..LEAF_BODY_BYTES as u64).step_by(64) {
                    pool.pm.prefetch(n + line);
                }
            }
            // Order and bounds by prefix; a record is read for its key only
            // where a prefix ties (and, below, for the pairs visited).
            keyed.clear();
            for s in &seen {
                let in_leaf = cmp_entry(pool, s, &low)?.is_ge()
                    && match high {
                        Some(h) => cmp_entry(pool, s, h)?.is_lt(),
                        None => true,
                    };
                if in_leaf && within_entry(pool, s, from, forward)? {
                    keyed.push((&[], *s));
                }
            }
            sort_entries(pool, &mut keyed, forward)?;
            const AHEAD: usize = 8;
            for (_, s) in keyed.iter().take(AHEAD) {
                pool.pm.prefetch(s.word.offset());
            }
            for i in 0..keyed.len() {
                if let Some((_, s)) = keyed.get(i + AHEAD) {
                    pool.pm.prefetch(s.word.offset());
                }
                let s = keyed[i].1;
                let key = record_key(pool, s.word.offset())?;
                if !visit(key, s.entry, s.word)? {
                    return Ok(());
                }
            }
            cur = if forward { next } else { self.prev_leaf(&low) };
            top = Some(low);
        }
        Ok(())
    }

    /// Every leaf in key order, for the rebuild after open and the check:
    /// `each(low key, leaf, view)` where the view holds the entries naming
    /// records in the leaf's range (sorted by key), the copies outside it,
    /// and entries whose record could not be read.
    pub fn walk_leaves(
        &self,
        pool: &Pool,
        stop: &AtomicBool,
        each: &mut EachLeaf<'_>,
    ) -> Result<()> {
        let mut seen = Vec::with_capacity(LEAF_ENTRIES);
        let mut cur = self.dir.first();
        while let Some((low, leaf)) = cur {
            if stop.load(Ordering::Acquire) {
                return Ok(());
            }
            self.snapshot(pool, leaf, &mut seen);
            let next = self.next_low(&low);
            let high = next.as_ref().map(|n| n.0.clone());
            let mut view = LeafView::default();
            for s in &seen {
                match record_key(pool, s.word.offset()) {
                    Ok(key) if in_leaf(key, &low, high.as_deref()) => {
                        view.live.push((key.to_vec(), s.entry, s.word))
                    }
                    // A copy a split left outside the range is an intact
                    // record; a record whose damaged key bytes put it
                    // outside is damage, never cleared as a copy.
                    Ok(_) => match intact_record(pool, s.word.offset()) {
                        Ok(()) => view.stale.push((s.entry, s.word)),
                        Err(e) => view.damaged.push((s.entry, e)),
                    },
                    Err(e) => view.damaged.push((s.entry, e)),
                }
            }
            view.live.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            each(&low, leaf, view)?;
            cur = next;
        }
        Ok(())
    }

    /// Clears `entry` if it still holds `word` and nobody pinned it (a copy
    /// an interrupted split left outside its leaf's range).
    pub fn clear_stale(&self, pool: &Pool, entry: u64, word: Slot) {
        let (leaf, _, meta) = self.locate(entry);
        let _g = meta.lock.lock();
        let bit = 1u64 << Self::entry_index(leaf, entry);
        if meta.busy.load(Ordering::Acquire) & bit == 0 {
            let cur = Slot(pool.pm.load_u64(entry));
            if cur.names_record() && cur.offset() == word.offset() {
                pool.pm.store_u64(entry, Slot::EMPTY.0);
                pool.pm.flush(entry, 8);
            }
        }
    }

    /// Checks that every leaf the map names has its header (magic, low key
    /// CRC) and the map's low key; problems go to `errors`.
    pub fn check_headers(&self, pool: &Pool, errors: &mut Vec<String>) {
        for (key, leaf) in self.dir.all() {
            let (_, class, _) = self.locate(leaf);
            match read_header(pool, leaf, class) {
                Ok(Header::Leaf(low)) if low == key => {}
                Ok(Header::Leaf(_)) => errors.push(format!(
                    "ordered index: leaf {leaf:#x}'s low key differs from the map's"
                )),
                Ok(Header::Free) => errors.push(format!(
                    "ordered index: leaf {leaf:#x} in the map has no header"
                )),
                Err(err) => errors.push(format!("ordered index: leaf {leaf:#x}: {err}")),
            }
        }
    }
}

/// The order of entry `s`'s key against `key`: by prefix, by the record's
/// key where the prefixes tie (zero padding keeps prefix order key order).
fn cmp_entry(pool: &Pool, s: &Seen, key: &[u8]) -> Result<CmpOrdering> {
    match s.prefix.cmp(&key_prefix(key)) {
        CmpOrdering::Equal => Ok(record_key(pool, s.word.offset())?.cmp(key)),
        o => Ok(o),
    }
}

/// Whether entry `s` lies on the scan's side of `from`.
fn within_entry(pool: &Pool, s: &Seen, from: Bound<&[u8]>, forward: bool) -> Result<bool> {
    Ok(match (from, forward) {
        (Bound::Unbounded, _) => true,
        (Bound::Included(f), true) => cmp_entry(pool, s, f)?.is_ge(),
        (Bound::Excluded(f), true) => cmp_entry(pool, s, f)?.is_gt(),
        (Bound::Included(f), false) => cmp_entry(pool, s, f)?.is_le(),
        (Bound::Excluded(f), false) => cmp_entry(pool, s, f)?.is_lt(),
    })
}

/// Sorts entries by key (descending unless `forward`): by prefix, then the
/// runs of one prefix by their records' keys.
fn sort_entries<'p>(pool: &'p Pool, v: &mut [(&'p [u8], Seen)], forward: bool) -> Result<()> {
    v.sort_unstable_by_key(|e| e.1.prefix);
    let mut i = 0;
    while i < v.len() {
        let mut j = i + 1;
        while j < v.len() && v[j].1.prefix == v[i].1.prefix {
            j += 1;
        }
        if j - i > 1 {
            for e in &mut v[i..j] {
                e.0 = record_key(pool, e.1.word.offset())?;
            }
            v[i..j].sort_unstable_by(|a, b| a.0.cmp(b.0));
        }
        i = j;
    }
    if !forward {
        v.reverse();
    }
    Ok(())
}
