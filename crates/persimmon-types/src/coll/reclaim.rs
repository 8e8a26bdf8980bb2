//! The reclaimer: a background thread that deletes the pages of external
//! trees whose meta record is gone (DEL, an overwrite, expiry, FLUSHDB,
//! FLUSHALL) or names another tree, so those commands are O(1) to the
//! client whatever the collection's size.
//!
//! A round walks the registry (`mod.rs`). For each tree it checks, in one
//! unit, that the meta at the registered key does not name the tree, and
//! marks the entry *dying* (an empty meta key) — serializable against a
//! RENAME or MOVE, which rewrite the entry in their own unit. A dying tree
//! can never be named again, so its pages are then deleted in batches of
//! [`PAGES_PER_UNIT`], children before parents and the roots last, with the
//! registry entry in the last batch.
//!
//! Invariants: a page is deleted only after every page below it was (so a
//! crash part way leaves a tree whose remaining pages are all reachable
//! from the roots still there, and the next round finishes it); a live
//! collection's pages are never deleted.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Weak};
use std::time::Duration;

use super::collection::{page_key, read_page, registry_set, Coll, EXTERNAL, MAX_TREES, PREFIX};
use crate::error::Error;
use crate::keyspace::Keyspace;
use crate::store::Store;
use crate::value::{Kind, Stored};

/// Pages deleted per engine batch.
const PAGES_PER_UNIT: usize = 2000;
/// Registry entries examined per unit.
const ENTRIES_PER_ROUND: usize = 512;
/// Pause between rounds.
const PAUSE: Duration = Duration::from_millis(250);

/// Pages deleted since the process started (the server's INFO).
pub static PAGES_RECLAIMED: AtomicU64 = AtomicU64::new(0);
/// Trees whose pages were all deleted since the process started.
pub static TREES_RECLAIMED: AtomicU64 = AtomicU64::new(0);

/// Starts the reclaimer thread; it ends when the key space closes or goes.
pub fn spawn(keyspace: &Arc<Keyspace>) {
    let weak = Arc::downgrade(keyspace);
    let started = std::thread::Builder::new()
        .name("persimmon-reclaim".into())
        .spawn(move || run(weak));
    if let Err(e) = started {
        eprintln!("persimmon: the collection reclaimer did not start: {e}");
    }
}

fn run(weak: Weak<Keyspace>) {
    loop {
        std::thread::sleep(PAUSE);
        let Some(keyspace) = weak.upgrade() else {
            return;
        };
        if keyspace.is_closing() {
            return;
        }
        if let Err(e) = round(&keyspace) {
            eprintln!("persimmon: collection reclaimer: {}", e.0);
        }
    }
}

/// One round: every dead tree of the registry found and freed. Returns the
/// number of trees freed.
pub fn round(keyspace: &Arc<Keyspace>) -> Result<u64, Error> {
    round_in(&mut Store::new(keyspace.clone()))
}

/// [`round`] through the store `st` (its own units, one after another).
pub fn round_in(st: &mut Store) -> Result<u64, Error> {
    let keyspace = st.keyspace().clone();
    let mut freed = 0;
    let mut after: Option<Vec<u8>> = None;
    loop {
        let batch = registry_entries(st, after.as_deref())?;
        let Some((last, _)) = batch.last() else { break };
        after = Some(last.clone());
        for (id, meta_key) in &batch {
            if keyspace.is_closing() {
                return Ok(freed);
            }
            let id = u64::from_be_bytes(
                id.as_slice()
                    .try_into()
                    .map_err(|_| super::page::damaged())?,
            );
            if meta_key.is_empty() || mark_if_dead(st, id, meta_key)? {
                free_tree(st, id)?;
                freed += 1;
            }
        }
        if batch.len() < ENTRIES_PER_ROUND {
            break;
        }
    }
    Ok(freed)
}

/// Up to [`ENTRIES_PER_ROUND`] registry entries after key `after`.
fn registry_entries(
    st: &mut Store,
    after: Option<&[u8]>,
) -> Result<Vec<super::page::Entry>, Error> {
    st.atomic(|st| {
        let Some(mut reg) = Coll::open_engine_key(st, PREFIX.to_vec(), Kind::Hash)? else {
            return Ok(Vec::new());
        };
        let from = match after {
            Some(k) => {
                let (rank, found) = reg.rank(st, 0, k)?;
                rank + found as u64
            }
            None => 0,
        };
        let mut out = Vec::new();
        reg.walk(st, 0, from, false, |k, v| {
            out.push((k.to_vec(), v.to_vec()));
            Ok(out.len() < ENTRIES_PER_ROUND)
        })?;
        Ok(out)
    })
}

/// Whether tree `id` registered at `meta_key` is dead; if so its entry is
/// marked dying in the same unit.
fn mark_if_dead(st: &mut Store, id: u64, meta_key: &[u8]) -> Result<bool, Error> {
    st.atomic(|st| {
        let names = st.unit_read(meta_key, true, |v| v.is_some_and(|v| names_tree(v, id)))?;
        if names {
            return Ok(false);
        }
        registry_set(st, id, Some(b""))?;
        Ok(true)
    })
}

/// Whether a stored value is the meta of external tree `id`.
pub fn names_tree(value: &[u8], id: u64) -> bool {
    match Stored::decode(value) {
        Stored::Coll(_, body) => {
            body.len() >= 10
                && body[1] & EXTERNAL != 0
                && u64::from_le_bytes(body[2..10].try_into().expect("8 bytes")) == id
        }
        _ => false,
    }
}

/// Deletes every page of dying tree `id`, then its registry entry. The
/// tree's kind is gone with its meta, so every page that may be a root
/// (pages 1 to [`MAX_TREES`]) is walked as one; a page that was not a root
/// is reached twice and deleted once, in its first place (below its
/// parents' places either way).
fn free_tree(st: &mut Store, id: u64) -> Result<(), Error> {
    let mut order = Vec::new();
    st.atomic(|st| {
        order.clear();
        let mut io = Pages { st, id };
        for root in 1..=MAX_TREES as u64 {
            if let Some(page) = super::tree::PageIo::load(&mut io, root)? {
                super::tree::Tree::pages(&mut io, &page, &mut order)?;
                order.push(root);
            }
        }
        Ok(())
    })?;
    let mut seen = std::collections::HashSet::new();
    order.retain(|no| seen.insert(*no));
    let total = order.len();
    let mut chunks = order.chunks(PAGES_PER_UNIT).peekable();
    if chunks.peek().is_none() {
        return st.atomic(|st| registry_set(st, id, None));
    }
    while let Some(chunk) = chunks.next() {
        let last = chunks.peek().is_none();
        st.atomic(|st| {
            for &no in chunk {
                st.unit_write(&page_key(id, no), None)?;
            }
            if last {
                registry_set(st, id, None)?;
            }
            Ok(())
        })?;
    }
    PAGES_RECLAIMED.fetch_add(total as u64, Ordering::Relaxed);
    TREES_RECLAIMED.fetch_add(1, Ordering::Relaxed);
    Ok(())
}

/// Read-only page access to a dying tree.
struct Pages<'a> {
    st: &'a mut Store,
    id: u64,
}

impl super::tree::PageIo for Pages<'_> {
    fn load(&mut self, no: u64) -> Result<Option<super::page::Page>, Error> {
        read_page(self.st, &page_key(self.id, no))
    }
    fn save(&mut self, _: u64, _: super::page::Page) -> Result<(), Error> {
        unreachable!("the reclaimer only reads and deletes pages")
    }
    fn free(&mut self, _: u64) -> Result<(), Error> {
        unreachable!("the reclaimer deletes pages itself")
    }
    fn alloc(&mut self) -> u64 {
        unreachable!("the reclaimer allocates no page")
    }
}
