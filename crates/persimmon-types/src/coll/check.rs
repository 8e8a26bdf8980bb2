//! The structural check of every collection in a pool: what the crash
//! harness and the tests run after each step (`embedded.rs`).
//!
//! It holds when:
//! - every tree's pages decode, its leaves are at one depth, every node's
//!   child counts are the counts below, no page below a root is empty, and
//!   keyed trees' keys strictly increase (separators bounding them);
//! - a sorted set's two trees agree: the same members, each member's score
//!   in tree 0 is the one in its tree-1 key;
//! - every external collection is in the registry under its own key, and
//!   every page record in the pool belongs to a live collection or to a
//!   registered tree (a dead one the reclaimer has yet to free).

use std::collections::{BTreeSet, HashMap};

use super::collection::{Coll, PREFIX};
use super::page::Page;
use super::score::{decode_score, split_score_key};
use super::tree::PageIo;
use crate::error::Error;
use crate::store::Store;
use crate::value::{Kind, Stored};

/// What the check found.
#[derive(Debug, Default, Clone, PartialEq, Eq)]
pub struct Report {
    pub collections: u64,
    pub external: u64,
    pub elements: u64,
    pub pages: u64,
    /// Registered trees that no live meta names (left to the reclaimer).
    pub dead_trees: u64,
}

fn bad(msg: String) -> Error {
    Error::new(format!("ERR collection check: {msg}"))
}

/// Checks every collection in the pool `st` works on (see the header).
pub fn all(st: &mut Store) -> Result<Report, Error> {
    let db = &st.keyspace().db;
    let mut metas = Vec::new();
    let mut page_records: HashMap<u64, BTreeSet<u64>> = HashMap::new();
    for item in db.iter() {
        let (key, value) = item.map_err(|e| bad(e.to_string()))?;
        if key.len() == 19 && key.starts_with(&PREFIX) {
            let id = u64::from_be_bytes(key[3..11].try_into().expect("8 bytes"));
            let no = u64::from_be_bytes(key[11..19].try_into().expect("8 bytes"));
            page_records.entry(id).or_default().insert(no);
        } else if let Stored::Coll(kind, _) = Stored::decode(&value) {
            metas.push((key, kind));
        }
    }
    let mut report = Report::default();
    let mut live = HashMap::new();
    st.atomic(|st| {
        report = Report::default();
        live.clear();
        for (ek, kind) in &metas {
            let Some(mut c) = Coll::open_engine_key(st, ek.clone(), *kind)? else {
                continue;
            };
            report.collections += 1;
            report.elements += c.len();
            let pages = check_coll(st, &mut c).map_err(|e| bad(format!("key {ek:?}: {}", e.0)))?;
            if c.external {
                report.external += 1;
                live.insert(c.tree_id, (ek.clone(), pages));
            } else if !pages.is_empty() {
                return Err(bad(format!("key {ek:?}: an inline collection with pages")));
            }
        }
        Ok(())
    })?;
    let registry = registry_entries(st)?;
    for (id, (ek, pages)) in &live {
        if registry.get(id) != Some(ek) {
            return Err(bad(format!(
                "tree {id:x} of key {ek:?} is not registered under it"
            )));
        }
        let stored = page_records.remove(id).unwrap_or_default();
        let missing: Vec<_> = pages.difference(&stored).collect();
        if !missing.is_empty() {
            return Err(bad(format!("tree {id:x}: pages {missing:?} missing")));
        }
        let extra: Vec<_> = stored.difference(pages).collect();
        if !extra.is_empty() {
            return Err(bad(format!("tree {id:x}: pages {extra:?} unreachable")));
        }
        report.pages += stored.len() as u64;
    }
    page_records.remove(&0);
    for id in page_records.keys() {
        if !registry.contains_key(id) {
            return Err(bad(format!(
                "pages of tree {id:x}, which is neither live nor registered"
            )));
        }
    }
    report.dead_trees = registry.keys().filter(|id| !live.contains_key(id)).count() as u64;
    Ok(report)
}

/// The registry: tree id → registered meta key.
fn registry_entries(st: &mut Store) -> Result<HashMap<u64, Vec<u8>>, Error> {
    st.atomic(|st| {
        let mut out = HashMap::new();
        let Some(mut reg) = Coll::open_engine_key(st, PREFIX.to_vec(), Kind::Hash)? else {
            return Ok(out);
        };
        reg.walk(st, 0, 0, false, |k, v| {
            let id = u64::from_be_bytes(
                k.try_into()
                    .map_err(|_| bad("a registry key is not 8 bytes".into()))?,
            );
            out.insert(id, v.to_vec());
            Ok(true)
        })?;
        Ok(out)
    })
}

/// Checks collection `c`'s trees; returns its page numbers (roots of an
/// external one included).
fn check_coll(st: &mut Store, c: &mut Coll) -> Result<BTreeSet<u64>, Error> {
    let mut pages = BTreeSet::new();
    let keyed = c.kind != Kind::List;
    for t in 0..c.trees.len() {
        if c.external {
            pages.insert(t as u64 + 1);
        }
        let root = c.trees[t].root.clone();
        let mut io = c.io(st);
        let mut last: Option<Vec<u8>> = None;
        check_page(&mut io, &root, &mut pages, keyed, &mut last, true)?;
        if !root.is_leaf() && root.width() < 2 {
            return Err(bad("a node root with fewer than two children".into()));
        }
    }
    if c.kind == Kind::ZSet {
        check_zset(st, c)?;
    }
    Ok(pages)
}

/// Checks the page and everything below it; returns its level.
fn check_page(
    io: &mut impl PageIo,
    page: &Page,
    pages: &mut BTreeSet<u64>,
    keyed: bool,
    last: &mut Option<Vec<u8>>,
    is_root: bool,
) -> Result<u8, Error> {
    if !is_root && page.width() == 0 {
        return Err(bad("an empty page below the root".into()));
    }
    if page.is_leaf() {
        for (k, _) in page.entries() {
            if keyed {
                if last.as_deref().is_some_and(|l| l >= k) {
                    return Err(bad("keys out of order".into()));
                }
                *last = Some(k.to_vec());
            } else if !k.is_empty() {
                return Err(bad("a list entry with a key".into()));
            }
        }
        return Ok(0);
    }
    for i in 0..page.width() {
        let no = page.child(i);
        if !pages.insert(no) {
            return Err(bad(format!("page {no} reached twice")));
        }
        let below = io
            .load(no)?
            .ok_or_else(|| bad(format!("page {no} missing")))?;
        if below.count() != page.child_count(i) {
            return Err(bad(format!(
                "page {no}: count {} under a child count {}",
                below.count(),
                page.child_count(i)
            )));
        }
        if keyed && i > 0 && last.as_deref().is_some_and(|l| l >= page.key(i)) {
            return Err(bad("a separator not above the keys on its left".into()));
        }
        let level = check_page(io, &below, pages, keyed, last, false)?;
        if level + 1 != page.level() {
            return Err(bad(format!("page {no} at the wrong level")));
        }
    }
    Ok(page.level())
}

/// A sorted set's trees hold the same (member, score) pairs.
fn check_zset(st: &mut Store, c: &mut Coll) -> Result<(), Error> {
    if c.trees[0].len() != c.trees[1].len() {
        return Err(bad("the member and score trees differ in size".into()));
    }
    let mut by_score = Vec::new();
    c.walk(st, 1, 0, false, |k, _| {
        let (score, m) = split_score_key(k);
        by_score.push((m.to_vec(), score));
        Ok(true)
    })?;
    for (m, score) in by_score {
        let stored = c.get(st, 0, &m)?.map(|v| decode_score(&v));
        if stored.map(f64::to_bits) != Some(score.to_bits()) {
            return Err(bad(format!(
                "member {m:?}: score {stored:?} in one tree, {score} in the other"
            )));
        }
    }
    Ok(())
}
