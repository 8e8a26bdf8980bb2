//! Ordered reads over the ordered index: ranges (both directions), prefixes,
//! `first`, `last`, counts.
//!
//! A range cursor reads the skiplist's keys in batches (8, then twice as
//! many each time, up to 256): each batch pins an epoch and starts from the
//! key where the previous batch stopped (a fresh search, so nothing a batch
//! saw needs to stay alive between calls); a key is looked up in the point
//! index (presence and value) when the cursor returns it. Hence what an iterator
//! sees under concurrent writes:
//! - keys come in strictly ascending order (descending from the back), each
//!   at most once;
//! - every key present for the whole iteration is returned;
//! - a value returned is one the key held, durably, at some moment during
//!   the iteration (the point index's read protocol); keys inserted or
//!   deleted meanwhile may or may not appear.

use std::collections::VecDeque;
use std::ops::{Bound, RangeBounds};

use crossbeam_epoch as epoch;

use super::{Db, Engine};
use crate::error::{Error, Result};
use crate::ordered::Ordered;

/// Keys the first batch of a cursor reads from the skiplist; each later
/// batch of the same end reads twice as many, up to `MAX_BATCH` (a short
/// `take(n)` reads few nodes, a long scan few batches).
const FIRST_BATCH: usize = 8;
const MAX_BATCH: usize = 256;

type Item = (Vec<u8>, Option<Vec<u8>>);

struct Cursor<'a> {
    engine: &'a Engine,
    ordered: &'a Ordered,
    /// What is left to read: shrinks from both ends as batches are read.
    lower: Bound<Vec<u8>>,
    upper: Bound<Vec<u8>>,
    /// Keys read from the front, ascending; each is looked up in the point
    /// index only when it is returned.
    front: VecDeque<Vec<u8>>,
    /// Keys read from the back, descending.
    back: VecDeque<Vec<u8>>,
    front_done: bool,
    back_done: bool,
    front_batch: usize,
    back_batch: usize,
    values: bool,
}

fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
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

    fn fill_front(&mut self) -> Result<()> {
        let batch = self.front_batch;
        self.front_batch = (batch * 2).min(MAX_BATCH);
        let keys = {
            let guard = epoch::pin();
            self.ordered.collect_forward(
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
        self.front.extend(keys);
        Ok(())
    }

    fn fill_back(&mut self) -> Result<()> {
        let batch = self.back_batch;
        self.back_batch = (batch * 2).min(MAX_BATCH);
        for _ in 0..batch {
            let key = {
                let guard = epoch::pin();
                self.ordered
                    .before(&self.engine.pool, bound_ref(&self.upper), &guard)?
            };
            let Some(key) = key.filter(|k| !self.below_lower(k)) else {
                self.back_done = true;
                return Ok(());
            };
            self.upper = Bound::Excluded(key.clone());
            self.back.push_back(key);
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
            match self.lookup(&key) {
                Ok(Some(v)) => return Some(Ok((key, v))),
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
            match self.lookup(&key) {
                Ok(Some(v)) => return Some(Ok((key, v))),
                Ok(None) => continue,
                Err(e) => return self.fail(e),
            }
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
        self.cursor
            .next_front()
            .map(|r| r.map(|(k, v)| (k, v.unwrap_or_default())))
    }
}

impl DoubleEndedIterator for Range<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.cursor
            .next_back()
            .map(|r| r.map(|(k, v)| (k, v.unwrap_or_default())))
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
        self.cursor.next_front().map(|r| r.map(|(k, _)| k))
    }
}

impl DoubleEndedIterator for RangeKeys<'_> {
    fn next_back(&mut self) -> Option<Self::Item> {
        self.cursor.next_back().map(|r| r.map(|(k, _)| k))
    }
}

impl Db {
    /// Whether the pool keeps the ordered index (chosen at creation with
    /// `Options::ordered_index`).
    pub fn has_ordered_index(&self) -> bool {
        self.engine.ordered.is_some()
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
