//! Ordered reads over the ordered index: ranges (both directions), prefixes,
//! `first`, `last`, counts.
//!
//! A range cursor reads the ordered index in batches (8 keys from the
//! skiplist, 40 from leaves, then twice as many each time, up to 256): each
//! batch pins an epoch and starts from
//! the key where the previous batch stopped (a fresh search, so nothing a
//! batch saw needs to stay alive between calls). With the skiplist a key is
//! looked up in the point index (presence and value) when the cursor
//! returns it; with leaves the batch reads each value from the record its
//! entry names, inside the batch's pin (waiting for writes in flight on
//! the entry, see `ordered::leaves`). Hence what an iterator sees under
//! concurrent writes:
//! - keys come in strictly ascending order (descending from the back), each
//!   at most once;
//! - every key present for the whole iteration is returned;
//! - a value returned is one the key held, durably, at some moment during
//!   the iteration (the point index's read protocol); keys inserted or
//!   deleted meanwhile may or may not appear.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

use crossbeam_epoch as epoch;

use super::engine::Engine;
use super::handle::Db;
use crate::error::{Error, Result};
use crate::layout::Slot;
use crate::options::OrderedLayout;
use crate::ordered::{bound_ref, Leaves, Ordered};

/// Keys the first batch of a cursor reads from the skiplist; each later
/// batch of the same end reads twice as many, up to `MAX_BATCH` (a short
/// `take(n)` reads few nodes, a long scan few batches).
const FIRST_BATCH: usize = 8;
const MAX_BATCH: usize = 256;
/// First batch of a cursor over leaves (each read costs a leaf).
const LEAF_FIRST_BATCH: usize = 40;

type Item = (Vec<u8>, Option<Vec<u8>>);

/// A key read from the skiplist (its value is looked up when returned), or
/// a pair read from a leaf.
enum Pending {
    Key(Vec<u8>),
    Item(Item),
}

struct Cursor<'a> {
    engine: &'a Engine,
    ordered: &'a Ordered,
    /// What is left to read: shrinks from both ends as batches are read.
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// Read from the front, ascending (skiplist keys are looked up in the
    /// point index only when returned).
    front: VecDeque<Pending>,
    /// Read from the back, descending.
    back: VecDeque<Pending>,
    front_done: bool,
    back_done: bool,
    front_batch: usize,
    back_batch: usize,
    values: bool,
}

fn owned<K: AsRef<[u8]> + ?Sized>(b: Bound<&K>) -> Bound<Vec<u8>> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_ref().to_vec()),
        Bound::Excluded(k) => Bound::Excluded(k.as_ref().to_vec()),
        Bound::Unbounded => Bound::Unbounded,
    }
}

/// The smallest key greater than every key starting with `prefix`, or
/// `None` when no such key exists (`prefix` is empty or all `0xff`): the
/// exclusive end of a prefix range.
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut end = prefix.to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return Some(end);
        }
    }
    None
}

impl<'a> Cursor<'a> {
    /// The key's value (or just its presence) from the point index.
    fn lookup(&self, key: &[u8]) -> Result<Option<Option<Vec<u8>>>> {
        if self.values {
            Ok(self.engine.get_with(key, |v| Some(v.to_vec()))?)
        } else {
            Ok(self.engine.get_with(key, |_| None)?)
        }
    }

    fn below_lower(&self, key: &[u8]) -> bool {
        match &self.lower {
            Bound::Unbounded => false,
            Bound::Included(l) => key < l.as_slice(),
            Bound::Excluded(l) => key <= l.as_slice(),
        }
    }

    fn above_upper(&self, key: &[u8]) -> bool {
        match &self.upper {
            Bound::Unbounded => false,
            Bound::Included(u) => key > u.as_slice(),
            Bound::Excluded(u) => key >= u.as_slice(),
        }
    }

    /// Reads up to a batch of pairs from the leaves, from the front
    /// (`forward`) or the back; returns them and whether the end of the
    /// range was reached.
    fn fill_leaves(&mut self, l: &Leaves, forward: bool) -> Result<bool> {
        let counter = if forward {
            &mut self.front_batch
        } else {
            &mut self.back_batch
        };
        // A leaf is read whole anyway: a first batch of two thirds of one.
        let batch = (*counter).max(LEAF_FIRST_BATCH);
        *counter = (batch * 2).min(MAX_BATCH);
        let mut items = Vec::new();
        let mut last: Option<Vec<u8>> = None;
        let mut ended = true;
        {
            let _guard = epoch::pin();
            let from = if forward { &self.lower } else { &self.upper };
            let (engine, values) = (self.engine, self.values);
            let this = &*self;
            l.scan(
                &engine.pool,
                bound_ref(from),
                forward,
                &mut |key, _, word| {
                    let beyond = if forward {
                        this.above_upper(key)
                    } else {
                        this.below_lower(key)
                    };
                    if beyond {
                        return Ok(false);
                    }
                    let value =
                        engine.with_value_in(key, word, values, |v| values.then(|| v.to_vec()))?;
                    if let Some(v) = value {
                        items.push(Pending::Item((key.to_vec(), v)));
                    }
                    last = Some(key.to_vec());
                    if items.len() >= batch {
                        ended = false;
                        return Ok(false);
                    }
                    Ok(true)
                },
            )?;
        }
        if let Some(k) = last {
            if forward {
                self.lower = Bound::Excluded(k);
            } else {
                self.upper = Bound::Excluded(k);
            }
        }
        if forward {
            self.front.extend(items);
        } else {
            self.back.extend(items);
        }
        Ok(ended)
    }

    fn fill_front(&mut self) -> Result<()> {
        let ordered = self.ordered;
        if let Some(l) = ordered.leaves() {
            self.front_done = self.fill_leaves(l, true)?;
            return Ok(());
        }
        let batch = self.front_batch;
        self.front_batch = (batch * 2).min(MAX_BATCH);
        let skiplist = self.ordered.skiplist().expect("one of the two layouts");
        let keys = {
            let guard = epoch::pin();
            skiplist.collect_forward(
                &self.engine.pool,
                bound_ref(&self.lower),
                bound_ref(&self.upper),
                batch,
                &guard,
            )?
        };
        if keys.len() < batch {
            self.front_done = true;
        }
        if let Some(last) = keys.last() {
            self.lower = Bound::Excluded(last.clone());
        }
        self.front.extend(keys.into_iter().map(Pending::Key));
        Ok(())
    }

    fn fill_back(&mut self) -> Result<()> {
        let ordered = self.ordered;
        if let Some(l) = ordered.leaves() {
            self.back_done = self.fill_leaves(l, false)?;
            return Ok(());
        }
        let batch = self.back_batch;
        self.back_batch = (batch * 2).min(MAX_BATCH);
        let skiplist = self.ordered.skiplist().expect("one of the two layouts");
        for _ in 0..batch {
            let key = {
                let guard = epoch::pin();
                skiplist.before(&self.engine.pool, bound_ref(&self.upper), &guard)?
            };
            let Some(key) = key.filter(|k| !self.below_lower(k)) else {
                self.back_done = true;
                return Ok(());
            };
            self.upper = Bound::Excluded(key.clone());
            self.back.push_back(Pending::Key(key));
        }
        Ok(())
    }

    /// Stops the cursor after an error (which is returned once).
    fn fail(&mut self, e: Error) -> Option<Result<Item>> {
        self.front_done = true;
        self.back_done = true;
        self.front.clear();
        self.back.clear();
        Some(Err(e))
    }

    /// A pending entry as an item: a skiplist key is looked up in the point
    /// index (None: deleted meanwhile, or an orphan node).
    fn resolve(&self, p: Pending) -> Result<Option<Item>> {
        match p {
            Pending::Item(item) => Ok(Some(item)),
            Pending::Key(key) => Ok(self.lookup(&key)?.map(|v| (key, v))),
        }
    }

    /// The next key from the front that the point index holds, with its
    /// value (keys whose lookup finds nothing — deleted meanwhile, or an
    /// orphan node — are skipped).
    fn next_front(&mut self) -> Option<Result<Item>> {
        loop {
            let key = match self.front.pop_front() {
                Some(k) => k,
                None if self.front_done || self.back_done => {
                    // What is left sits in the other buffer.
                    self.back.pop_back()?
                }
                None => {
                    if let Err(e) = self.fill_front() {
                        return self.fail(e);
                    }
                    continue;
                }
            };
            match self.resolve(key) {
                Ok(Some(item)) => return Some(Ok(item)),
                Ok(None) => continue,
                Err(e) => return self.fail(e),
            }
        }
    }

    fn next_back(&mut self) -> Option<Result<Item>> {
        loop {
            let key = match self.back.pop_front() {
                Some(k) => k,
                None if self.front_done || self.back_done => self.front.pop_back()?,
                None => {
                    if let Err(e) = self.fill_back() {
                        return self.fail(e);
                    }
                    continue;
                }
            };
            match self.resolve(key) {
                Ok(Some(item)) => return Some(Ok(item)),
                Ok(None) => continue,
                Err(e) => return self.fail(e),
            }
        }
    }
}

impl Engine {
    /// Lends the value of `key` from the record `word` names (a leaf entry,
    /// final) to `f` — an empty slice, the value not read, unless `values`:
    /// `None` when the record is a tombstone or expired. A record of a
    /// batch still publishing is looked up through the point index instead.
    fn with_value_in<R>(
        &self,
        key: &[u8],
        word: Slot,
        values: bool,
        f: impl FnOnce(&[u8]) -> R,
    ) -> Result<Option<R>> {
        let off = word.offset();
        let hdr = self.record_header(off)?;
        match self.visibility(off, &hdr)? {
            super::read::Visible::Yes if values => Ok(Some(f(&self.record_value(off, &hdr)?))),
            super::read::Visible::Yes => Ok(Some(f(&[]))),
            super::read::Visible::Absent => Ok(None),
            super::read::Visible::AfterBatch => self.get_with(key, f),
        }
    }
}

/// Key-value pairs of a key range in order; see [`Db::range`]. Iterates
/// from either end (`rev()` for descending order).
pub struct Range<'a> {
    cursor: Cursor<'a>,
}

impl Iterator for Range<'_> {
    type Item = Result<(Vec<u8>, Vec<u8>)>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.cursor.next_front()?;
        Some(
            self.cursor
                .engine
                .settle(item)
                .map(|(k, v)| (k, v.unwrap_or_default())),
        )
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let item = self.cursor.next_back()?;
        Some(
            self.cursor
                .engine
                .settle(item)
                .map(|(k, v)| (k, v.unwrap_or_default())),
        )
    }
}

/// Keys of a key range in order, without reading values; see
/// [`Db::range_keys`].
pub struct RangeKeys<'a> {
    cursor: Cursor<'a>,
}

impl Iterator for RangeKeys<'_> {
    type Item = Result<Vec<u8>>;

    fn next(&mut self) -> Option<Self::Item> {
        let item = self.cursor.next_front()?;
        Some(self.cursor.engine.settle(item).map(|(k, _)| k))
    }
}

impl DoubleEndedIterator for RangeKeys<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        let item = self.cursor.next_back()?;
        Some(self.cursor.engine.settle(item).map(|(k, _)| k))
    }
}

impl Db {
    /// Whether the pool keeps the ordered index (chosen at creation with
    /// `Options::ordered_index`).
    pub fn has_ordered_index(&self) -> bool {
        self.engine.ordered.is_some()
    }

    /// The ordered index's layout, if the pool keeps one (chosen at
    /// creation: leaves with the DRAM point index unless
    /// `Options::ordered_layout` asked for the skiplist).
    pub fn ordered_layout(&self) -> Option<OrderedLayout> {
        self.engine.ordered.as_ref().map(|o| match o.leaves() {
            Some(_) => OrderedLayout::Leaves,
            None => OrderedLayout::Skiplist,
        })
    }

    fn cursor(
        &self,
        lower: Bound<Vec<u8>>,
        upper: Bound<Vec<u8>>,
        values: bool,
    ) -> Result<Cursor<'_>> {
        let ordered = self
            .engine
            .ordered
            .as_ref()
            .ok_or_else(|| Error::NoOrderedIndex {
                path: self.engine.pool.path.clone(),
            })?;
        Ok(Cursor {
            engine: &self.engine,
            ordered,
            lower,
            upper,
            front: VecDeque::new(),
            back: VecDeque::new(),
            front_done: false,
            back_done: false,
            front_batch: FIRST_BATCH,
            back_batch: FIRST_BATCH,
            values,
        })
    }

    /// Calls `f(key, value)` for the pairs with keys in `range`, in
    /// ascending order, up to `limit` of them or until `f` returns false;
    /// returns how many it visited. Keys and values are lent, not copied
    /// (on a pool whose ordered index is in leaves: the whole scan holds one
    /// epoch pin, so keep `limit` modest; with the skiplist this is
    /// [`range`](Self::range) underneath). Same guarantees as `range`.
    pub fn scan_with<K: AsRef<[u8]> + ?Sized>(
        &self,
        range: impl RangeBounds<K>,
        limit: usize,
        mut f: impl FnMut(&[u8], &[u8]) -> bool,
    ) -> Result<usize> {
        let (lower, upper) = (owned(range.start_bound()), owned(range.end_bound()));
        let cursor = self.cursor(lower.clone(), upper, true)?;
        let Some(l) = cursor.ordered.leaves() else {
            let mut n = 0;
            let range = Range { cursor };
            for item in range.take(limit) {
                let (k, v) = item?;
                n += 1;
                if !f(&k, &v) {
                    break;
                }
            }
            return Ok(n);
        };
        let engine = &*self.engine;
        let mut n = 0;
        let _guard = epoch::pin();
        l.scan(
            &engine.pool,
            bound_ref(&lower),
            true,
            &mut |key, _, word| {
                if n >= limit || cursor.above_upper(key) {
                    return Ok(false);
                }
                let go = engine.with_value_in(key, word, true, |v| {
                    n += 1;
                    f(key, v)
                })?;
                Ok(go.unwrap_or(true))
            },
        )?;
        engine.settle(Ok(n))
    }

    /// Key-value pairs with keys in `range`, in ascending byte order (or
    /// descending with `.rev()`). Needs a pool with the ordered index.
    ///
    /// Under concurrent writes: keys come in order, each at most once; every
    /// key present for the whole iteration is returned; each value is one
    /// the key held, durably, during the iteration; keys inserted or
    /// deleted meanwhile may or may not appear.
    ///
    /// ```no_run
    /// # let db = persimmon::Db::open("/dev/shm/r.pool", persimmon::Options { ordered_index: true, ..Default::default() })?;
    /// for item in db.range(&b"user:"[..]..&b"user;"[..])? {
    ///     let (key, value) = item?;
    ///     println!("{key:?} = {value:?}");
    /// }
    /// # Ok::<(), persimmon::Error>(())
    /// ```
    pub fn range<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Result<Range<'_>> {
        Ok(Range {
            cursor: self.cursor(owned(range.start_bound()), owned(range.end_bound()), true)?,
        })
    }

    /// Like [`range`](Self::range), keys only (no value is copied).
    pub fn range_keys<K: AsRef<[u8]> + ?Sized>(
        &self,
        range: impl RangeBounds<K>,
    ) -> Result<RangeKeys<'_>> {
        Ok(RangeKeys {
            cursor: self.cursor(owned(range.start_bound()), owned(range.end_bound()), false)?,
        })
    }

    /// Key-value pairs whose keys start with `prefix`, in order.
    pub fn prefix(&self, prefix: &[u8]) -> Result<Range<'_>> {
        let upper = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        Ok(Range {
            cursor: self.cursor(Bound::Included(prefix.to_vec()), upper, true)?,
        })
    }

    /// Keys that start with `prefix`, in order.
    pub fn prefix_keys(&self, prefix: &[u8]) -> Result<RangeKeys<'_>> {
        let upper = prefix_end(prefix).map_or(Bound::Unbounded, Bound::Excluded);
        Ok(RangeKeys {
            cursor: self.cursor(Bound::Included(prefix.to_vec()), upper, false)?,
        })
    }

    /// Key-value pairs from the first key at or after `key` onwards (the
    /// same as `range(key..)`).
    pub fn seek(&self, key: &[u8]) -> Result<Range<'_>> {
        self.range(key..)
    }

    /// The smallest key and its value.
    pub fn first(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.range::<[u8]>(..)?.next().transpose()
    }

    /// The greatest key and its value.
    pub fn last(&self) -> Result<Option<(Vec<u8>, Vec<u8>)>> {
        self.range::<[u8]>(..)?.next_back().transpose()
    }

    /// Number of keys in `range` (one pass over them; same guarantees as
    /// [`range`](Self::range)).
    pub fn count_range<K: AsRef<[u8]> + ?Sized>(&self, range: impl RangeBounds<K>) -> Result<u64> {
        let mut n = 0;
        for k in self.range_keys(range)? {
            k?;
            n += 1;
        }
        Ok(n)
    }
}

#[cfg(test)]
mod tests {
    use super::prefix_end;

    #[test]
    fn prefix_end_is_the_next_prefix() {
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(b"a\xff"), Some(b"b".to_vec()));
        assert_eq!(prefix_end(b"\xff\xff"), None);
        assert_eq!(prefix_end(b""), None);
    }
}
