//! A counted B+ tree of pages: the structure every large collection is
//! stored in. Each inner entry keeps the number of entries below it, so
//! the tree is navigated by key (hashes, sets, sorted sets) or by position
//! (lists, ranks, random picks) in O(height) page reads, and a run of `k`
//! entries from any position costs O(height + k / entries per page).
//!
//! The root lives in the [`Tree`] value (its owner stores it); every other
//! page is read and written through a [`PageIo`] by page number.
//!
//! Invariants (checked by `check` in the tests after every operation):
//! - every leaf is at level 0 and all leaves are at the same depth;
//! - a child's `count` is the number of entries below it;
//! - in a keyed tree, keys are unique and strictly increasing along the
//!   leaves, and separators bound them as `page.rs` states;
//! - no page other than the root is empty; a page is split once its
//!   encoding passes [`PAGE_MAX`] (unless it holds one entry) and merged
//!   with a neighbour when both fit in one;
//! - a root that is a node has at least two children (a single child is
//!   pulled up into the root).

use super::page::{damaged, Entry, Page, Probe};
use crate::error::Error;

/// A page is split once its encoding is longer than this.
pub const PAGE_MAX: usize = 1024;
/// A split aims at pieces of this size.
const PAGE_TARGET: usize = PAGE_MAX / 2;
/// A page smaller than this after a removal is merged with a neighbour
/// when the two fit in one.
const PAGE_MIN: usize = PAGE_MAX / 4;

/// Where the tree's pages other than the root are kept.
pub trait PageIo {
    /// The page numbered `no`; `None` if there is no such page.
    fn load(&mut self, no: u64) -> Result<Option<Page>, Error>;
    /// The page numbered `no` to change: the caller then saves or frees
    /// it, or gives it back unchanged ([`put_back`](Self::put_back)).
    fn take(&mut self, no: u64) -> Result<Option<Page>, Error> {
        self.load(no)
    }
    /// A page [`take`](Self::take)n and not changed.
    fn put_back(&mut self, _no: u64, _page: Page) {}
    /// Where `key` leads in page `no`, given to `f` (`None`: no such
    /// page). An implementation may read the page's bytes in place
    /// ([`page::probe`](super::page::probe)) rather than decode it.
    fn probe<R>(
        &mut self,
        no: u64,
        key: &[u8],
        f: impl FnOnce(Probe<'_>) -> R,
    ) -> Result<Option<R>, Error> {
        match self.load(no)? {
            Some(page) => Ok(Some(f(page.probe(key)?))),
            None => Ok(None),
        }
    }
    fn save(&mut self, no: u64, page: Page) -> Result<(), Error>;
    fn free(&mut self, no: u64) -> Result<(), Error>;
    /// A page number not in use.
    fn alloc(&mut self) -> u64;
}

fn must_load(io: &mut impl PageIo, no: u64) -> Result<Page, Error> {
    io.load(no)?.ok_or_else(damaged)
}

/// Which entry an operation is about.
#[derive(Clone, Copy)]
enum Target<'a> {
    Key(&'a [u8]),
    Rank(u64),
}

/// What an operation does at its entry.
#[derive(Clone, Copy)]
enum Op<'a> {
    /// Keyed: set the key's value, adding the key if absent.
    Upsert(&'a [u8]),
    /// Positional: a new entry at the rank (rank = length appends).
    InsertAt(&'a [u8]),
    /// Positional: replace the value at the rank.
    SetAt(&'a [u8]),
    Remove,
}

/// What an operation changed.
struct Done {
    /// The entry before (for `Upsert`, `SetAt` and `Remove`).
    old: Option<Entry>,
    /// Entries added (+1) or removed (-1).
    delta: i64,
    /// The page the operation was applied to changed (and its caller must
    /// save it). A value replaced in a leaf changes the leaf only: its
    /// ancestors keep their counts and children, so they are not written.
    changed: bool,
}

impl Done {
    /// Nothing changed: no key added or removed, no value replaced by a
    /// different one.
    fn nothing(old: Option<Entry>) -> Done {
        Done {
            old,
            delta: 0,
            changed: false,
        }
    }
}

/// A counted B+ tree whose root is held here.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Tree {
    pub root: Page,
    /// The root changed since it was loaded or saved.
    pub root_dirty: bool,
}

/// Calls `f` with `key`'s value (if it is there), its rank (the number of
/// keys before it) and the page number of its leaf (`None`: the root),
/// found by probing the pages on its path: nothing is decoded or copied
/// but the pages the unit already holds decoded.
fn locate<R>(
    io: &mut impl PageIo,
    root: &Page,
    key: &[u8],
    f: impl FnOnce(Option<&[u8]>, u64, Option<u64>) -> R,
) -> Result<R, Error> {
    /// One level down, or the answer.
    enum Step<R> {
        Down(u64, u64),
        Done(R),
    }
    let mut f = Some(f);
    let mut answer = |probe: Probe<'_>, before: u64, leaf: Option<u64>| match probe {
        Probe::Child { no, before: b } => Step::Down(no, before + b),
        Probe::Leaf { at, found } => Step::Done((f.take().expect("one leaf"))(
            found,
            before + at as u64,
            leaf,
        )),
    };
    let mut step = answer(root.probe(key)?, 0, None);
    loop {
        match step {
            Step::Done(out) => return Ok(out),
            Step::Down(no, before) => {
                step = io
                    .probe(no, key, |p| answer(p, before, Some(no)))?
                    .ok_or_else(damaged)?;
            }
        }
    }
}

impl Tree {
    pub fn new(root: Page) -> Tree {
        Tree {
            root,
            root_dirty: false,
        }
    }

    pub fn len(&self) -> u64 {
        self.root.count()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The value of `key`.
    pub fn get(&self, io: &mut impl PageIo, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        locate(io, &self.root, key, |found, _, _| found.map(<[u8]>::to_vec))
    }

    /// The number of keys smaller than `key`, and whether `key` is there.
    pub fn rank(&self, io: &mut impl PageIo, key: &[u8]) -> Result<(u64, bool), Error> {
        locate(io, &self.root, key, |found, rank, _| {
            (rank, found.is_some())
        })
    }

    /// The entry at `rank` (0 first).
    pub fn at(&self, io: &mut impl PageIo, rank: u64) -> Result<Option<Entry>, Error> {
        let mut found = None;
        self.walk(io, rank, false, |k, v| {
            found = Some((k.to_vec(), v.to_vec()));
            Ok(false)
        })?;
        Ok(found)
    }

    /// Calls `f` with each entry from `rank` on (towards the end, or with
    /// `rev` towards the start, `rank` included) until it returns false.
    pub fn walk(
        &self,
        io: &mut impl PageIo,
        rank: u64,
        rev: bool,
        mut f: impl FnMut(&[u8], &[u8]) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let len = self.len();
        if len == 0 || (rank >= len && !rev) {
            return Ok(());
        }
        walk_page(io, &self.root, rank.min(len - 1), rev, &mut f).map(|_| ())
    }

    /// Sets `key` to `value`; returns the value it had.
    ///
    /// Below a root node the key is probed for first: a value equal to the
    /// one there changes nothing, and a value replaced in a leaf that keeps
    /// its size within bounds rewrites that leaf alone, without decoding
    /// the nodes above it (HSET of a field, ZADD of a member's score).
    pub fn insert(
        &mut self,
        io: &mut impl PageIo,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        if !self.root.is_leaf() {
            let (same, leaf) = locate(io, &self.root, key, |found, _, leaf| {
                (found.map(|v| v == value), leaf)
            })?;
            match (same, leaf) {
                (Some(true), _) => return Ok(Some(value.to_vec())),
                (Some(false), Some(no)) => {
                    if let Some(old) = replace_in_leaf(io, no, key, value)? {
                        return Ok(Some(old));
                    }
                }
                _ => {}
            }
        }
        let done = self.apply(io, Target::Key(key), Op::Upsert(value), key)?;
        Ok(done.old.map(|(_, v)| v))
    }

    /// Adds `key` with an empty value (a set's member); returns whether it
    /// is new. A member already there is found by probing, without
    /// decoding a page (a set's adds are mostly of members it has).
    pub fn add(&mut self, io: &mut impl PageIo, key: &[u8]) -> Result<bool, Error> {
        if locate(io, &self.root, key, |found, _, _| found.is_some())? {
            return Ok(false);
        }
        Ok(self.insert(io, key, b"")?.is_none())
    }

    /// Removes `key`; returns its value.
    pub fn remove(&mut self, io: &mut impl PageIo, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let done = self.apply(io, Target::Key(key), Op::Remove, key)?;
        Ok(done.old.map(|(_, v)| v))
    }

    /// Inserts an entry with an empty key at `rank` (≤ len) of a positional
    /// tree.
    pub fn insert_at(
        &mut self,
        io: &mut impl PageIo,
        rank: u64,
        value: &[u8],
    ) -> Result<(), Error> {
        debug_assert!(rank <= self.len());
        self.apply(io, Target::Rank(rank), Op::InsertAt(value), b"")
            .map(|_| ())
    }

    /// Replaces the value at `rank` (< len); returns the old entry.
    pub fn set_at(
        &mut self,
        io: &mut impl PageIo,
        rank: u64,
        value: &[u8],
    ) -> Result<Option<Entry>, Error> {
        if rank >= self.len() {
            return Ok(None);
        }
        Ok(self
            .apply(io, Target::Rank(rank), Op::SetAt(value), b"")?
            .old)
    }

    /// Removes the entry at `rank`; returns it.
    pub fn remove_at(&mut self, io: &mut impl PageIo, rank: u64) -> Result<Option<Entry>, Error> {
        if rank >= self.len() {
            return Ok(None);
        }
        Ok(self.apply(io, Target::Rank(rank), Op::Remove, b"")?.old)
    }

    /// Every page number below the root, children before their parent.
    /// Pages that are missing (already freed) are skipped with their
    /// subtrees.
    pub fn pages(io: &mut impl PageIo, root: &Page, out: &mut Vec<u64>) -> Result<(), Error> {
        if root.is_leaf() {
            return Ok(());
        }
        for i in 0..root.width() {
            if let Some(child) = io.load(root.child(i))? {
                Tree::pages(io, &child, out)?;
                out.push(root.child(i));
            }
        }
        Ok(())
    }

    fn apply(
        &mut self,
        io: &mut impl PageIo,
        target: Target<'_>,
        op: Op<'_>,
        key: &[u8],
    ) -> Result<Done, Error> {
        let done = change(io, &mut self.root, target, op, key)?;
        if !done.changed {
            return Ok(done);
        }
        self.root_dirty = true;
        if self.root.encoded_len() > PAGE_MAX && self.root.width() > 1 {
            self.grow(io)?;
        }
        while !self.root.is_leaf() {
            match self.root.width() {
                0 => self.root = Page::empty(),
                1 => {
                    let only = self.root.child(0);
                    self.root = must_load(io, only)?;
                    io.free(only)?;
                }
                _ => break,
            }
        }
        Ok(done)
    }

    /// The root is too large: its pieces become children of a new root one
    /// level higher.
    fn grow(&mut self, io: &mut impl PageIo) -> Result<(), Error> {
        let level = self.root.level() + 1;
        let mut first = std::mem::take(&mut self.root);
        let rest = first.split(PAGE_TARGET);
        let mut root = Page::node(level);
        for (i, piece) in std::iter::once(first).chain(rest).enumerate() {
            let page = io.alloc();
            root.insert_child(i, &piece.first_key(), page, piece.count());
            io.save(page, piece)?;
        }
        debug_assert!(root.width() >= 2, "a grown root has two children");
        self.root = root;
        Ok(())
    }
}

/// The child of node `page` a rank falls in, and the rank within it.
/// `append`: a rank equal to the count falls in the last child (an
/// insertion at the end).
fn child_for_rank(page: &Page, mut rank: u64, append: bool) -> (usize, u64) {
    let n = page.width();
    for i in 0..n {
        let c = page.child_count(i);
        if rank < c || (append && rank == c && i + 1 == n) {
            return (i, rank);
        }
        rank -= c;
    }
    (n.saturating_sub(1), rank)
}

/// Replaces `key`'s value in leaf `no`, which holds it, when the leaf's
/// size stays within [`PAGE_MIN`]..=[`PAGE_MAX`]: then the leaf is the only
/// page that changes (no split, no merge, no count above it), as
/// [`change`] would have found. Returns the old value, or `None` (nothing
/// changed) when the leaf must be reshaped.
fn replace_in_leaf(
    io: &mut impl PageIo,
    no: u64,
    key: &[u8],
    value: &[u8],
) -> Result<Option<Vec<u8>>, Error> {
    let mut leaf = io.take(no)?.ok_or_else(damaged)?;
    let Ok(i) = leaf.search(key) else {
        io.put_back(no, leaf);
        return Err(damaged());
    };
    if !(PAGE_MIN..=PAGE_MAX).contains(&leaf.encoded_len_with_value(i, value.len())) {
        io.put_back(no, leaf);
        return Ok(None);
    }
    let old = leaf.set_value(i, value);
    debug_assert!(
        leaf.encoded_len() <= PAGE_MAX,
        "a replaced value keeps the leaf in bounds"
    );
    io.save(no, leaf)?;
    Ok(Some(old))
}

/// Applies `op` below `page` (which the caller saves).
fn change(
    io: &mut impl PageIo,
    page: &mut Page,
    target: Target<'_>,
    op: Op<'_>,
    key: &[u8],
) -> Result<Done, Error> {
    if page.is_leaf() {
        return change_leaf(page, target, op, key);
    }
    if page.width() == 0 {
        // Only a unit that read pages while another changed them can see
        // this (it then runs again): never index into it.
        return Err(damaged());
    }
    let (i, local) = match target {
        Target::Key(k) => (page.child_for_key(k), target),
        Target::Rank(r) => {
            let (i, r) = child_for_rank(page, r, matches!(op, Op::InsertAt(_)));
            (i, Target::Rank(r))
        }
    };
    let no = page.child(i);
    let mut child = io.take(no)?.ok_or_else(damaged)?;
    let mut done = match change(io, &mut child, local, op, key) {
        Ok(done) if done.changed => done,
        other => {
            io.put_back(no, child);
            return other;
        }
    };
    let count = page.child_count(i) as i64 + done.delta;
    if count < 0 {
        return Err(damaged());
    }
    page.set_child_count(i, count as u64);
    let reshaped = fit_child(io, page, i, child)?;
    done.changed = done.delta != 0 || reshaped;
    Ok(done)
}

fn change_leaf(leaf: &mut Page, target: Target<'_>, op: Op<'_>, key: &[u8]) -> Result<Done, Error> {
    let (i, found) = match target {
        Target::Key(k) => match leaf.search(k) {
            Ok(i) => (i, true),
            Err(i) => (i, false),
        },
        Target::Rank(r) => (r as usize, (r as usize) < leaf.width()),
    };
    Ok(match op {
        Op::Upsert(v) | Op::SetAt(v) if found && leaf.value(i) == v => {
            Done::nothing(Some((leaf.key(i).to_vec(), v.to_vec())))
        }
        Op::Upsert(v) | Op::SetAt(v) if found => {
            let old = leaf.set_value(i, v);
            Done {
                old: Some((leaf.key(i).to_vec(), old)),
                delta: 0,
                changed: true,
            }
        }
        Op::Upsert(v) | Op::InsertAt(v) => {
            if i > leaf.width() {
                // A rank past the leaf: counts and pages read at different
                // moments (the unit runs again), never an index past the end.
                return Err(damaged());
            }
            leaf.insert_entry(i, key, v);
            Done {
                old: None,
                delta: 1,
                changed: true,
            }
        }
        Op::Remove if found => Done {
            old: Some(leaf.remove(i)),
            delta: -1,
            changed: true,
        },
        Op::SetAt(_) | Op::Remove => Done::nothing(None),
    })
}

/// Stores child `i` of a node after it changed: frees it when empty, splits
/// it when too large, merges it with a neighbour when small. Returns
/// whether the node's entries changed (a child freed, split or merged).
fn fit_child(io: &mut impl PageIo, node: &mut Page, i: usize, child: Page) -> Result<bool, Error> {
    if child.width() == 0 {
        io.free(node.child(i))?;
        node.remove(i);
        return Ok(true);
    }
    let len = child.encoded_len();
    if len > PAGE_MAX && child.width() > 1 {
        split_child(io, node, i, child)?;
        return Ok(true);
    }
    if len < PAGE_MIN && node.width() > 1 {
        let (left, right) = if i + 1 < node.width() {
            (i, i + 1)
        } else {
            (i - 1, i)
        };
        let other = must_load(io, node.child(if left == i { right } else { left }))?;
        if other.encoded_len() + len <= PAGE_MAX * 3 / 4 {
            let (mut a, b) = if left == i {
                (child, other)
            } else {
                (other, child)
            };
            a.absorb(b);
            node.set_child_count(left, node.child_count(left) + node.child_count(right));
            io.save(node.child(left), a)?;
            io.free(node.child(right))?;
            node.remove(right);
            return Ok(true);
        }
    }
    io.save(node.child(i), child)?;
    Ok(false)
}

fn split_child(
    io: &mut impl PageIo,
    node: &mut Page,
    i: usize,
    mut child: Page,
) -> Result<(), Error> {
    let rest = child.split(PAGE_TARGET);
    node.set_child_count(i, child.count());
    io.save(node.child(i), child)?;
    for (j, piece) in rest.into_iter().enumerate() {
        let page = io.alloc();
        node.insert_child(i + 1 + j, &piece.first_key(), page, piece.count());
        io.save(page, piece)?;
    }
    Ok(())
}

/// [`Tree::walk`] below `page`, from local `rank`; false once `f` stopped.
fn walk_page(
    io: &mut impl PageIo,
    page: &Page,
    rank: u64,
    rev: bool,
    f: &mut impl FnMut(&[u8], &[u8]) -> Result<bool, Error>,
) -> Result<bool, Error> {
    if page.is_leaf() {
        let r = (rank as usize).min(page.width().saturating_sub(1));
        let order: Box<dyn Iterator<Item = usize>> = if rev {
            Box::new((0..=r).rev())
        } else {
            Box::new(rank as usize..page.width())
        };
        for i in order {
            if !f(page.key(i), page.value(i))? {
                return Ok(false);
            }
        }
        return Ok(true);
    }
    if page.width() == 0 {
        return Err(damaged());
    }
    let (start, local) = child_for_rank(page, rank, false);
    let order: Box<dyn Iterator<Item = usize>> = if rev {
        Box::new((0..=start).rev())
    } else {
        Box::new(start..page.width())
    };
    for i in order {
        let from = if i == start {
            local
        } else if rev {
            page.child_count(i).saturating_sub(1)
        } else {
            0
        };
        let no = page.child(i);
        let child = io.take(no)?.ok_or_else(damaged)?;
        let more = walk_page(io, &child, from, rev, f);
        io.put_back(no, child);
        if !more? {
            return Ok(false);
        }
    }
    Ok(true)
}

#[cfg(test)]
pub mod tests {
    use std::collections::{BTreeMap, HashMap};

    use proptest::prelude::*;

    use super::*;

    /// Pages in a map, for tests.
    #[derive(Default)]
    pub struct MemPages {
        pub pages: HashMap<u64, Vec<u8>>,
        next: u64,
        /// Pages saved so far.
        pub saves: usize,
    }

    impl PageIo for MemPages {
        fn load(&mut self, no: u64) -> Result<Option<Page>, Error> {
            self.pages.get(&no).map(|b| Page::decode(b)).transpose()
        }
        fn save(&mut self, no: u64, page: Page) -> Result<(), Error> {
            self.saves += 1;
            self.pages.insert(no, page.encode());
            Ok(())
        }
        fn free(&mut self, no: u64) -> Result<(), Error> {
            assert!(self.pages.remove(&no).is_some(), "freed page {no} twice");
            Ok(())
        }
        fn alloc(&mut self) -> u64 {
            self.next += 1;
            self.next
        }
    }

    /// Checks the invariants of the module header; returns the entries.
    pub fn check(io: &mut MemPages, tree: &Tree, keyed: bool) -> Vec<Entry> {
        let mut out = Vec::new();
        let mut leaf_depths = Vec::new();
        check_page(io, &tree.root, 0, &mut out, &mut leaf_depths);
        assert!(
            leaf_depths.windows(2).all(|w| w[0] == w[1]),
            "leaves at one depth"
        );
        if !tree.root.is_leaf() {
            assert!(
                tree.root.width() >= 2,
                "a node root has two children or more"
            );
        }
        if keyed {
            assert!(
                out.windows(2).all(|w| w[0].0 < w[1].0),
                "keys strictly increase"
            );
        }
        let mut reachable = Vec::new();
        Tree::pages(io, &tree.root, &mut reachable).unwrap();
        assert_eq!(reachable.len(), io.pages.len(), "no page leaks");
        out
    }

    fn check_page(
        io: &mut MemPages,
        page: &Page,
        depth: usize,
        out: &mut Vec<Entry>,
        leaves: &mut Vec<usize>,
    ) {
        if page.is_leaf() {
            leaves.push(depth);
            out.extend(page.entries().map(|(k, v)| (k.to_vec(), v.to_vec())));
            return;
        }
        for i in 0..page.width() {
            let child = io.load(page.child(i)).unwrap().expect("child page present");
            assert_eq!(child.level() + 1, page.level());
            assert_eq!(child.count(), page.child_count(i), "counts match");
            assert!(child.width() > 0, "no empty page below the root");
            let before = out.len();
            let sep = page.key(i).to_vec();
            if i > 0 && !sep.is_empty() {
                // The first separator is never compared.
                if let Some(last) = out.last() {
                    assert!(last.0 < sep, "separator above the left");
                }
            }
            check_page(io, &child, depth + 1, out, leaves);
            if let (true, Some(first)) = (i > 0, out.get(before)) {
                assert!(sep <= first.0 || sep.is_empty());
            }
        }
    }

    #[derive(Clone, Debug)]
    enum KeyedOp {
        Insert(u16, u16),
        Remove(u16),
    }

    fn keyed_op() -> impl Strategy<Value = KeyedOp> {
        prop_oneof![
            3 => (0..2000u16, 0..300u16).prop_map(|(k, v)| KeyedOp::Insert(k, v)),
            1 => (0..2000u16).prop_map(KeyedOp::Remove),
        ]
    }

    fn key(k: u16) -> Vec<u8> {
        format!("key:{k:05}").into_bytes()
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(48))]
        #[test]
        fn a_keyed_tree_behaves_as_a_sorted_map(ops in proptest::collection::vec(keyed_op(), 1..1500)) {
            let mut io = MemPages::default();
            let mut tree = Tree::new(Page::empty());
            let mut model = BTreeMap::new();
            for op in &ops {
                match *op {
                    KeyedOp::Insert(k, v) => {
                        let value = vec![v as u8; v as usize];
                        let old = tree.insert(&mut io, &key(k), &value).unwrap();
                        prop_assert_eq!(old, model.insert(key(k), value));
                    }
                    KeyedOp::Remove(k) => {
                        prop_assert_eq!(tree.remove(&mut io, &key(k)).unwrap(), model.remove(&key(k)));
                    }
                }
            }
            let entries = check(&mut io, &tree, true);
            let expect: Vec<Entry> = model.clone().into_iter().collect();
            prop_assert_eq!(&entries, &expect);
            prop_assert_eq!(tree.len(), model.len() as u64);
            for (i, (k, v)) in expect.iter().enumerate().step_by(37) {
                prop_assert_eq!(tree.rank(&mut io, k).unwrap(), (i as u64, true));
                let got = tree.get(&mut io, k).unwrap();
                prop_assert_eq!(got.as_ref(), Some(v));
                prop_assert_eq!(tree.at(&mut io, i as u64).unwrap(), Some((k.clone(), v.clone())));
                let mut back = Vec::new();
                tree.walk(&mut io, i as u64, true, |k, _| { back.push(k.to_vec()); Ok(back.len() < 50) }).unwrap();
                let want: Vec<Vec<u8>> = expect[..=i].iter().rev().take(50).map(|(k, _)| k.clone()).collect();
                prop_assert_eq!(back, want);
            }
        }

        #[test]
        fn a_positional_tree_behaves_as_a_vector(ops in proptest::collection::vec((0..4u8, any::<u32>(), 0..200u16), 1..1500)) {
            let mut io = MemPages::default();
            let mut tree = Tree::new(Page::empty());
            let mut model: Vec<Vec<u8>> = Vec::new();
            for &(kind, at, size) in &ops {
                let value = vec![size as u8; size as usize];
                match kind {
                    0 | 1 => {
                        let at = at as usize % (model.len() + 1);
                        tree.insert_at(&mut io, at as u64, &value).unwrap();
                        model.insert(at, value);
                    }
                    2 if !model.is_empty() => {
                        let at = at as usize % model.len();
                        let old = tree.set_at(&mut io, at as u64, &value).unwrap();
                        prop_assert_eq!(old.map(|e| e.1), Some(std::mem::replace(&mut model[at], value)));
                    }
                    _ if !model.is_empty() => {
                        let at = at as usize % model.len();
                        let old = tree.remove_at(&mut io, at as u64).unwrap();
                        prop_assert_eq!(old.map(|e| e.1), Some(model.remove(at)));
                    }
                    _ => {}
                }
            }
            let entries: Vec<Vec<u8>> = check(&mut io, &tree, false).into_iter().map(|e| e.1).collect();
            prop_assert_eq!(&entries, &model);
        }
    }

    #[test]
    fn a_long_list_grows_levels_of_nodes_and_shrinks_back() {
        let mut io = MemPages::default();
        let mut tree = Tree::new(Page::empty());
        for i in 0..150_000u32 {
            tree.insert_at(&mut io, tree.len(), &i.to_le_bytes())
                .unwrap();
        }
        assert!(tree.root.level() >= 2, "level {}", tree.root.level());
        let entries = check(&mut io, &tree, false);
        assert_eq!(entries.len(), 150_000);
        assert_eq!(
            tree.at(&mut io, 123_456).unwrap().unwrap().1,
            123_456u32.to_le_bytes()
        );
        while !tree.is_empty() {
            tree.remove_at(&mut io, tree.len() / 2).unwrap();
        }
        assert!(io.pages.is_empty(), "{} pages left", io.pages.len());
    }

    #[test]
    fn a_million_entries_stay_shallow_and_free_every_page() {
        let mut io = MemPages::default();
        let mut tree = Tree::new(Page::empty());
        for i in 0..200_000u32 {
            tree.insert(&mut io, &i.to_be_bytes(), b"v").unwrap();
        }
        assert!(tree.root.level() <= 3, "height {}", tree.root.level());
        let mut pages = Vec::new();
        Tree::pages(&mut io, &tree.root, &mut pages).unwrap();
        assert_eq!(pages.len(), io.pages.len());
        for i in 0..200_000u32 {
            tree.remove(&mut io, &i.to_be_bytes()).unwrap();
        }
        assert_eq!(tree.len(), 0);
        assert!(io.pages.is_empty(), "{} pages left", io.pages.len());
    }

    #[test]
    fn a_replaced_value_writes_its_leaf_only_and_an_equal_one_writes_nothing() {
        let mut io = MemPages::default();
        let mut tree = Tree::new(Page::empty());
        for i in 0..50_000u32 {
            tree.insert(&mut io, &i.to_be_bytes(), b"value-1").unwrap();
        }
        assert!(tree.root.level() >= 2, "level {}", tree.root.level());
        tree.root_dirty = false;
        let key = 31_337u32.to_be_bytes();

        io.saves = 0;
        let old = tree.insert(&mut io, &key, b"value-1").unwrap();
        assert_eq!(old.as_deref(), Some(&b"value-1"[..]));
        assert_eq!((io.saves, tree.root_dirty), (0, false), "an equal value");
        assert!(
            !tree.add(&mut io, &key).unwrap(),
            "a key there is not added"
        );
        assert_eq!(
            (io.saves, tree.root_dirty),
            (0, false),
            "adding a key there"
        );

        let old = tree.insert(&mut io, &key, b"value-2").unwrap();
        assert_eq!(old.as_deref(), Some(&b"value-1"[..]));
        assert_eq!((io.saves, tree.root_dirty), (1, false), "a same-size value");
        assert_eq!(
            tree.get(&mut io, &key).unwrap().as_deref(),
            Some(&b"value-2"[..])
        );

        io.saves = 0;
        tree.insert(&mut io, b"\xff new", b"v").unwrap();
        assert!(
            io.saves >= 2 && tree.root_dirty,
            "a new key changes the counts up the path"
        );
        let entries = check(&mut io, &tree, true);
        assert_eq!(entries.len(), 50_001);
    }
}
