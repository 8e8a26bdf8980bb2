//! The ordered index, in one of its two layouts (chosen at creation, read
//! from the superblock at open):
//! - [`leaves`]: leaves of up to 60 record words, DRAM map of low keys
//!   (format version 6, pools with the DRAM point index);
//! - [`skiplist`]: one node per key in a persistent linked list (versions
//!   2–5, and pools with the PM point index).
//!
//! Both keep their nodes or leaves in slabs of `Ordered` segments (`slab`).
//!
//! The engine sees one type. Its handle on a key's place in the index is
//! the address of the key's *record word*: a leaf entry, or a skiplist
//! node's record word (the skiplist's own calls take nodes; this type
//! converts). With leaves the address is stable only while the entry is
//! pinned ([`Leaves::scope`]); the engine pins under the key's bucket lock.

mod leaf_dir;
mod leaf_media;
pub(crate) mod leaves;
mod skiplist;
mod slab;

use std::ops::Bound;
use std::sync::atomic::AtomicBool;

use crossbeam_epoch::Guard;

pub(crate) use leaves::{Leaves, PinScope, Reserve};
use skiplist::Skiplist;

use crate::error::{Error, Result};
use crate::layout::{self, Slot, NODE_RECORD};
use crate::pool::Pool;

/// The ordered index of one open pool.
pub(crate) enum Ordered {
    Skiplist(Skiplist),
    Leaves(Leaves),
}

/// What [`Ordered::insert`] did.
pub(crate) enum Inserted {
    /// The key's record word (`new`: placed now, holding no record yet).
    Word { word: u64, new: bool },
    /// The key's leaf is full and has pinned entries: split it with no
    /// lock held, then retry.
    Full(u64),
}

#[inline]
fn node_word(node: u64) -> u64 {
    node + NODE_RECORD as u64
}

#[inline]
fn word_node(word: u64) -> u64 {
    word - NODE_RECORD as u64
}

impl Ordered {
    /// Opens the layout the pool was created with.
    pub fn open(pool: &Pool, scan: &[(u32, u32, bool)], seed: u64) -> Result<Ordered> {
        if pool.sb.flags & layout::SB_FLAG_LEAVES != 0 {
            Ok(Ordered::Leaves(Leaves::open(pool, scan)?))
        } else {
            Ok(Ordered::Skiplist(Skiplist::open(pool, scan, seed)?))
        }
    }

    pub fn leaves(&self) -> Option<&Leaves> {
        match self {
            Ordered::Leaves(l) => Some(l),
            Ordered::Skiplist(_) => None,
        }
    }

    /// A scope unpinning, when dropped, what this thread pins meanwhile
    /// (leaves only).
    pub fn scope(&self) -> Option<PinScope<'_>> {
        self.leaves().map(Leaves::scope)
    }

    pub fn max_key(&self) -> usize {
        match self {
            Ordered::Skiplist(s) => s.max_key(),
            Ordered::Leaves(l) => l.max_key(),
        }
    }

    /// Whether the walk after open is done (leaves: the rebuild of the
    /// DRAM point index from them), or there is none.
    pub fn walk_done(&self) -> bool {
        match self {
            Ordered::Skiplist(s) => s.walk_done(),
            Ordered::Leaves(l) => l.settled(),
        }
    }

    /// Nodes (leaves) in use and their segments.
    pub fn heap_figures(&self) -> (u64, usize) {
        match self {
            Ordered::Skiplist(s) => s.heap_figures(),
            Ordered::Leaves(l) => l.figures(),
        }
    }

    /// Gives `key` a place (the caller holds its bucket lock, the key has no
    /// record): a linked skiplist node, or a reserved and pinned entry.
    pub fn insert(&self, pool: &Pool, key: &[u8], fp: u16, guard: &Guard) -> Result<Inserted> {
        match self {
            Ordered::Skiplist(s) => {
                let (node, new) = s.insert(pool, key, guard)?;
                Ok(Inserted::Word {
                    word: node_word(node),
                    new,
                })
            }
            Ordered::Leaves(l) => Ok(match l.reserve(pool, key, fp)? {
                Reserve::Entry(entry) => Inserted::Word {
                    word: entry,
                    new: true,
                },
                Reserve::Full(leaf) => Inserted::Full(leaf),
            }),
        }
    }

    /// Undoes an [`insert`](Self::insert) whose write failed, or follows a
    /// delete that is durable already: unlinks the skiplist node; gives a
    /// reserved leaf entry back (a published one is empty already).
    pub fn remove(&self, pool: &Pool, key: &[u8], word: u64, guard: &Guard) -> Result<bool> {
        match self {
            Ordered::Skiplist(s) => s.remove(pool, key, guard),
            Ordered::Leaves(l) => {
                // A reservation never published holds a marker; after a
                // delete the entry is empty already.
                if word != 0 && Slot(pool.pm.load_u64(word)).is_marker() {
                    l.give_back(pool, word);
                }
                Ok(false)
            }
        }
    }

    /// The record word of `key` (any record word for the skiplist, a word
    /// naming a record for leaves), read without locks.
    pub fn find(&self, pool: &Pool, key: &[u8], fp: u16) -> Result<Option<u64>> {
        match self {
            Ordered::Skiplist(s) => Ok(s.find(pool, key)?.map(node_word)),
            Ordered::Leaves(l) => Ok(l.find(pool, key, fp)?.map(|(e, _)| e)),
        }
    }

    /// The key whose record word is at `word` (skiplist: the node's key,
    /// CRC checked; leaves: the key of the record it names).
    pub fn key_of<'p>(&self, pool: &'p Pool, word: u64) -> Result<&'p [u8]> {
        match self {
            Ordered::Skiplist(s) => s.node_key(pool, word_node(word)),
            Ordered::Leaves(_) => {
                let w = Slot(pool.pm.load_u64(word));
                if !w.names_record() {
                    return Err(Error::corruption(word, "leaf entry names no record"));
                }
                leaf_media::record_key(pool, w.offset())
            }
        }
    }

    /// The skiplist, for the reads that walk it.
    pub fn skiplist(&self) -> Option<&Skiplist> {
        match self {
            Ordered::Skiplist(s) => Some(s),
            Ordered::Leaves(_) => None,
        }
    }

    /// DRAM point index rebuild: calls `live(key, word)` for every key with
    /// a record (see each layout's rules); damage goes to `damage`.
    pub fn scan_live(
        &self,
        pool: &Pool,
        stop: &AtomicBool,
        live: &mut dyn FnMut(&[u8], u64) -> Result<()>,
        damage: &mut Vec<String>,
    ) {
        match self {
            Ordered::Skiplist(s) => {
                s.scan_live(pool, stop, &mut |k, node| live(k, node_word(node)), damage)
            }
            Ordered::Leaves(l) => {
                let r = l.walk_leaves(pool, stop, &mut |_, _, view| {
                    for (key, entry, _) in &view.live {
                        if let Err(e) = live(key, *entry) {
                            damage.push(format!("leaf entry {entry:#x}: {e}"));
                        }
                    }
                    for (e, seen) in view.stale {
                        l.clear_stale(pool, e, seen);
                    }
                    for (e, err) in view.damaged {
                        damage.push(format!("leaf entry {e:#x} with a record word: {err}"));
                    }
                    Ok(())
                });
                if let Err(e) = r {
                    damage.push(format!("leaves: {e}"));
                }
            }
        }
    }

    /// The walk after open (skiplist only; see there).
    pub fn walk(
        &self,
        pool: &Pool,
        present: &dyn Fn(&[u8], u64) -> Result<bool>,
        orphan: &dyn Fn(&[u8]) -> Result<bool>,
        stop: &AtomicBool,
    ) -> Result<()> {
        match self {
            Ordered::Skiplist(s) => s
                .walk(pool, &|k, node| present(k, node_word(node)), orphan, stop)
                .map(|_| ()),
            Ordered::Leaves(l) => {
                l.set_settled();
                Ok(())
            }
        }
    }

    /// Structure check: every key the index lists with its record word, in
    /// ascending order; problems go to `errors`.
    pub fn check(&self, pool: &Pool, errors: &mut Vec<String>) -> Vec<(Vec<u8>, u64)> {
        match self {
            Ordered::Skiplist(s) => s
                .check(pool, errors)
                .into_iter()
                .map(|(k, n)| (k, node_word(n)))
                .collect(),
            Ordered::Leaves(l) => check_leaves(l, pool, errors),
        }
    }
}

fn check_leaves(l: &Leaves, pool: &Pool, errors: &mut Vec<String>) -> Vec<(Vec<u8>, u64)> {
    l.check_headers(pool, errors);
    let mut out: Vec<(Vec<u8>, u64)> = Vec::new();
    let stop = AtomicBool::new(false);
    let r = l.walk_leaves(pool, &stop, &mut |low, leaf, view| {
        for (e, err) in view.damaged {
            errors.push(format!("ordered index: leaf entry {e:#x}: {err}"));
        }
        let entries = view.live;
        for (e, _) in view.stale {
            errors.push(format!(
                "ordered index: leaf {leaf:#x} (low key {:?}) holds entry {e:#x} outside its range",
                String::from_utf8_lossy(low)
            ));
        }
        for (key, entry, _) in entries {
            if let Some((prev, _)) = out.last() {
                if *prev >= key {
                    errors.push(format!(
                        "ordered index: key {:?} at entry {entry:#x} is not above {:?}",
                        String::from_utf8_lossy(&key),
                        String::from_utf8_lossy(prev)
                    ));
                }
            }
            out.push((key, entry));
        }
        Ok(())
    });
    if let Err(e) = r {
        errors.push(format!("ordered index: {e}"));
    }
    out
}

/// A bound over owned keys as one over slices.
pub(crate) fn bound_ref(b: &Bound<Vec<u8>>) -> Bound<&[u8]> {
    match b {
        Bound::Included(k) => Bound::Included(k.as_slice()),
        Bound::Excluded(k) => Bound::Excluded(k.as_slice()),
        Bound::Unbounded => Bound::Unbounded,
    }
}
