//! The one collection: a meta record at the Redis key and, past one page,
//! a counted B+ tree of page records (see `coll/mod.rs` for the layout),
//! opened inside the store's running unit, changed through its methods and
//! saved; the registry of external trees; collections read or written
//! whole; and the entry points every caller uses ([`with`], [`with_new`],
//! [`read_key`]).
//!
//! Invariants (see `coll/mod.rs` for the whole list): every change runs
//! inside one atomic unit and rewrites the meta record, so two units
//! changing one collection conflict; a meta names a tree id no other meta
//! names; an empty collection has no meta.

use rustc_hash::FxHashMap;

use super::page::{self, put_varint, Entry, Page, Reader};
use super::score::{decode_score, norm, score_key, split_score_key};
use super::tree::{PageIo, Tree};
use super::whole::{self, Whole};
use crate::error::{wrongtype, Error};
use crate::store::{Parked, Store};
use crate::value::{Kind, Stored, MAX_STRING_BYTES};

/// The prefix of every page key and the registry's key.
pub const PREFIX: [u8; 3] = [0xFF, 0x80, 0x00];
const FORMAT: u8 = 1;
pub(crate) const EXTERNAL: u8 = 1;

/// Room a page record needs around its one entry (varints, tags, meta).
const ELEMENT_OVERHEAD: usize = 64;

/// Refuses an element (a hash's field and value, a set's member) that
/// could not be stored as one engine value.
pub fn check_element(key: &[u8], value: &[u8]) -> Result<(), Error> {
    let len = key.len() + value.len();
    if len + ELEMENT_OVERHEAD > MAX_STRING_BYTES {
        return Err(Error::new(format!(
            "ERR element is {len} bytes; persimmon stores at most {} bytes per collection \
             element (its 64 MiB value limit less the page's own bytes)",
            MAX_STRING_BYTES - ELEMENT_OVERHEAD
        )));
    }
    Ok(())
}

/// The engine key of page `page` of tree `tree_id`.
pub fn page_key(tree_id: u64, page: u64) -> Vec<u8> {
    let mut k = Vec::with_capacity(19);
    k.extend_from_slice(&PREFIX);
    k.extend_from_slice(&tree_id.to_be_bytes());
    k.extend_from_slice(&page.to_be_bytes());
    k
}

fn trees_of(kind: Kind) -> usize {
    match kind {
        Kind::ZSet => 2,
        Kind::Stream => MAX_TREES,
        _ => 1,
    }
}

/// The most trees a collection of any kind has (a stream's): the
/// reclaimer, which no longer knows a dead tree's kind, looks for roots up
/// to here.
pub(crate) const MAX_TREES: usize = 4;

/// A collection opened inside an atomic unit. Change it through its
/// methods, then [`save`](Self::save) it (a change not saved is lost with
/// the unit's other writes only if the unit fails; saving is what keeps
/// the meta and the pages in step).
pub struct Coll {
    pub kind: Kind,
    /// The meta record's engine key.
    ek: Vec<u8>,
    pub(super) tree_id: u64,
    pages: Pages,
    pub(super) external: bool,
    pub(super) trees: Vec<Tree>,
    dirty: bool,
}

/// Page access for one tree id, inside the store's running unit.
pub(super) struct Io<'a> {
    store: &'a mut Store,
    tree_id: u64,
    pages: &'a mut Pages,
}

/// The pages an open collection has read or changed: each page is decoded
/// at most once per command and encoded once, when the collection is saved.
#[derive(Default)]
struct Pages {
    next_page: u64,
    /// Page number → the page (`None`: freed) and whether it changed.
    /// Page numbers are ours, not a client's: a fast unkeyed hash is safe.
    cache: FxHashMap<u64, (Option<Page>, bool)>,
    /// Pages taken out of `cache` to be changed, and whether they had
    /// changed before (`PageIo::take`).
    taken: FxHashMap<u64, bool>,
}

impl PageIo for Io<'_> {
    fn load(&mut self, no: u64) -> Result<Option<Page>, Error> {
        if let Some((page, _)) = self.pages.cache.get(&no) {
            return Ok(page.clone());
        }
        let key = page_key(self.tree_id, no);
        let page = read_page(self.store, &key)?;
        self.pages.cache.insert(no, (page.clone(), false));
        Ok(page)
    }
    fn take(&mut self, no: u64) -> Result<Option<Page>, Error> {
        let page = match self.pages.cache.remove(&no) {
            Some((Some(page), dirty)) => {
                self.pages.taken.insert(no, dirty);
                return Ok(Some(page));
            }
            // Freed: stays freed.
            Some(freed) => {
                self.pages.cache.insert(no, freed);
                return Ok(None);
            }
            None => read_page(self.store, &page_key(self.tree_id, no))?,
        };
        if page.is_some() {
            self.pages.taken.insert(no, false);
        }
        Ok(page)
    }
    fn put_back(&mut self, no: u64, page: Page) {
        let dirty = self.pages.taken.remove(&no).unwrap_or(false);
        self.pages.cache.insert(no, (Some(page), dirty));
    }
    fn probe<R>(
        &mut self,
        no: u64,
        key: &[u8],
        f: impl FnOnce(page::Probe<'_>) -> R,
    ) -> Result<Option<R>, Error> {
        debug_assert!(
            !self.pages.taken.contains_key(&no),
            "a taken page is not probed"
        );
        if let Some((page, _)) = self.pages.cache.get(&no) {
            return page.as_ref().map(|p| p.probe(key).map(f)).transpose();
        }
        // Read in place from the unit or the engine: not decoded, not kept.
        let pk = page_key(self.tree_id, no);
        self.store
            .unit_read(&pk, false, |v| v.map(|b| page::probe(b, key).map(f)))?
            .transpose()
    }
    fn save(&mut self, no: u64, page: Page) -> Result<(), Error> {
        self.pages.taken.remove(&no);
        self.pages.cache.insert(no, (Some(page), true));
        Ok(())
    }
    fn free(&mut self, no: u64) -> Result<(), Error> {
        self.pages.taken.remove(&no);
        self.pages.cache.insert(no, (None, true));
        Ok(())
    }
    fn alloc(&mut self) -> u64 {
        let no = self.pages.next_page;
        self.pages.next_page += 1;
        no
    }
}

impl Io<'_> {
    /// Writes every changed page into the store's unit.
    fn flush(&mut self) -> Result<(), Error> {
        debug_assert!(self.pages.taken.is_empty(), "every taken page came back");
        for (no, (page, dirty)) in self.pages.cache.iter_mut() {
            if std::mem::take(dirty) {
                let key = page_key(self.tree_id, *no);
                self.store
                    .unit_write_blind(&key, page.as_ref().map(Page::encode))?;
            }
        }
        Ok(())
    }
}

/// The first page number after the roots of an external collection of
/// `kind`: root `t` is page `t + 1` (1 and 2, or 1 to 4 for a stream), so
/// pages are numbered from 3 (5 for a stream).
fn first_free_page(kind: Kind) -> u64 {
    (trees_of(kind) as u64 + 1).max(3)
}

impl Coll {
    /// A new, empty collection of `kind` at engine key `ek`.
    pub fn new(ek: Vec<u8>, kind: Kind) -> Coll {
        Coll::with_id(ek, kind, new_tree_id())
    }

    fn with_id(ek: Vec<u8>, kind: Kind, tree_id: u64) -> Coll {
        Coll {
            kind,
            ek,
            tree_id,
            pages: Pages {
                next_page: first_free_page(kind),
                cache: FxHashMap::default(),
                taken: FxHashMap::default(),
            },
            external: false,
            trees: (0..trees_of(kind))
                .map(|_| Tree::new(Page::empty()))
                .collect(),
            dirty: false,
        }
    }

    /// The collection of `kind` at Redis key `key`; `None` when the key is
    /// missing, WRONGTYPE when it holds another type. Must run in a unit.
    pub fn open(st: &mut Store, key: &[u8], kind: Kind) -> Result<Option<Coll>, Error> {
        let ek = st.engine_key(key).into_owned();
        Coll::open_engine_key(st, ek, kind)
    }

    /// [`open`](Self::open), or a new empty collection for a missing key.
    pub fn open_or_new(st: &mut Store, key: &[u8], kind: Kind) -> Result<Coll, Error> {
        let ek = st.engine_key(key).into_owned();
        crate::error::check_key(&ek)?;
        Ok(match Coll::open_engine_key(st, ek.clone(), kind)? {
            Some(c) => c,
            None => Coll::new(ek, kind),
        })
    }

    pub fn open_engine_key(st: &mut Store, ek: Vec<u8>, kind: Kind) -> Result<Option<Coll>, Error> {
        // A key too long for the engine (with a database prefix) cannot
        // exist: it reads as missing, as the store's reads do.
        if !crate::error::may_exist(&ek) {
            return Ok(None);
        }
        let meta = st.unit_read(&ek, true, |v| v.map(<[u8]>::to_vec))?;
        let Some(meta) = meta else { return Ok(None) };
        match Stored::decode(&meta) {
            Stored::Coll(k, body) if k == kind => Coll::decode(st, ek, kind, body).map(Some),
            Stored::Coll(..) | Stored::String(_) => Err(wrongtype()),
            legacy => {
                // The whole-value encoding of earlier versions: converted
                // on this first access (the caller's save writes it).
                let whole = whole::from_legacy(legacy)?.expect("only legacy values are left");
                if whole.kind() != kind {
                    return Err(wrongtype());
                }
                let mut c = Coll::new(ek, kind);
                fill(st, &mut c, &whole)?;
                c.dirty = true;
                Ok(Some(c))
            }
        }
    }

    fn decode(st: &mut Store, ek: Vec<u8>, kind: Kind, body: &[u8]) -> Result<Coll, Error> {
        let mut r = Reader::new(body);
        let head = r.take(2)?;
        if head[0] != FORMAT {
            return Err(Error::new(format!(
                "ERR the collection at this key has format {}; this server reads format {FORMAT}",
                head[0]
            )));
        }
        let external = head[1] & EXTERNAL != 0;
        let tree_id = r.u64()?;
        let next_page = r.u64()?;
        let mut c = Coll {
            kind,
            ek,
            tree_id,
            pages: Pages {
                next_page,
                cache: FxHashMap::default(),
                taken: FxHashMap::default(),
            },
            external,
            trees: Vec::new(),
            dirty: false,
        };
        for t in 0..trees_of(kind) {
            let root = if external {
                c.io(st).load(t as u64 + 1)?.ok_or_else(page::damaged)?
            } else {
                Page::decode(r.bytes()?)?
            };
            c.trees.push(Tree::new(root));
        }
        if r.left() != 0 {
            return Err(page::damaged());
        }
        Ok(c)
    }

    pub(super) fn io<'a>(&'a mut self, st: &'a mut Store) -> Io<'a> {
        Io {
            store: st,
            tree_id: self.tree_id,
            pages: &mut self.pages,
        }
    }

    /// Splits the borrow: tree `t` and the page access.
    fn parts<'a>(&'a mut self, st: &'a mut Store, t: usize) -> (&'a mut Tree, Io<'a>) {
        let io = Io {
            store: st,
            tree_id: self.tree_id,
            pages: &mut self.pages,
        };
        (&mut self.trees[t], io)
    }

    /// Entries of tree 0 (members, fields, elements).
    pub fn len(&self) -> u64 {
        self.trees[0].len()
    }

    /// Entries of tree `t`.
    pub fn len_of(&self, t: usize) -> u64 {
        self.trees[t].len()
    }

    /// Whether every tree is empty (a stream's record keeps it alive
    /// without entries).
    pub fn is_empty(&self) -> bool {
        self.trees.iter().all(|t| t.len() == 0)
    }

    pub fn get(&mut self, st: &mut Store, t: usize, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
        let (tree, mut io) = self.parts(st, t);
        tree.get(&mut io, key)
    }

    /// The number of keys before `key` in tree `t`, and whether it is there.
    pub fn rank(&mut self, st: &mut Store, t: usize, key: &[u8]) -> Result<(u64, bool), Error> {
        let (tree, mut io) = self.parts(st, t);
        tree.rank(&mut io, key)
    }

    pub fn at(&mut self, st: &mut Store, t: usize, rank: u64) -> Result<Option<Entry>, Error> {
        let (tree, mut io) = self.parts(st, t);
        tree.at(&mut io, rank)
    }

    /// Calls `f` with the entries of tree `t` from `rank` on (backwards
    /// with `rev`) until it returns false.
    pub fn walk(
        &mut self,
        st: &mut Store,
        t: usize,
        rank: u64,
        rev: bool,
        f: impl FnMut(&[u8], &[u8]) -> Result<bool, Error>,
    ) -> Result<(), Error> {
        let (tree, mut io) = self.parts(st, t);
        tree.walk(&mut io, rank, rev, f)
    }

    /// Sets `key` to `value` in tree `t`; returns the value it had. Setting
    /// the value a key already has changes nothing (as SADD of a member, the
    /// collection is not written).
    pub fn insert(
        &mut self,
        st: &mut Store,
        t: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        let (tree, mut io) = self.parts(st, t);
        let old = tree.insert(&mut io, key, value)?;
        self.dirty |= old.as_deref() != Some(value);
        Ok(old)
    }

    /// Adds `key` with an empty value to tree `t` (a set's member);
    /// returns whether it is new. A member already there is not written.
    pub fn add(&mut self, st: &mut Store, t: usize, key: &[u8]) -> Result<bool, Error> {
        let (tree, mut io) = self.parts(st, t);
        let new = tree.add(&mut io, key)?;
        self.dirty |= new;
        Ok(new)
    }

    pub fn remove(
        &mut self,
        st: &mut Store,
        t: usize,
        key: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        let (tree, mut io) = self.parts(st, t);
        let old = tree.remove(&mut io, key)?;
        self.dirty |= old.is_some();
        Ok(old)
    }

    pub fn insert_at(&mut self, st: &mut Store, rank: u64, value: &[u8]) -> Result<(), Error> {
        self.dirty = true;
        let (tree, mut io) = self.parts(st, 0);
        tree.insert_at(&mut io, rank, value)
    }

    pub fn set_at(
        &mut self,
        st: &mut Store,
        rank: u64,
        value: &[u8],
    ) -> Result<Option<Entry>, Error> {
        self.dirty = true;
        let (tree, mut io) = self.parts(st, 0);
        tree.set_at(&mut io, rank, value)
    }

    pub fn remove_at(&mut self, st: &mut Store, rank: u64) -> Result<Option<Entry>, Error> {
        let (tree, mut io) = self.parts(st, 0);
        let old = tree.remove_at(&mut io, rank)?;
        self.dirty |= old.is_some();
        Ok(old)
    }

    /// Writes what changed: the meta (and the roots of an external tree),
    /// or deletes the key when the collection is empty. Registers the tree
    /// when it has just become external.
    pub fn save(mut self, st: &mut Store) -> Result<(), Error> {
        if !self.dirty {
            return Ok(());
        }
        if self.is_empty() && !self.is_registry() {
            // The pages of an external tree go with the reclaimer.
            return st.unit_write(&self.ek, None);
        }
        let external = self.external || self.trees.iter().any(|t| t.root.level() > 0);
        // Turning external writes every root, changed or not (a stream's
        // untouched trees too): each must be a page from now on.
        let newly = external && !self.external;
        if newly {
            self.external = true;
            if !self.is_registry() {
                registry_set(st, self.tree_id, Some(&self.ek))?;
            }
        }
        if self.external {
            for t in 0..self.trees.len() {
                if self.trees[t].root_dirty || newly {
                    let root = self.trees[t].root.clone();
                    self.io(st).save(t as u64 + 1, root)?;
                }
            }
        }
        self.io(st).flush()?;
        let meta = self.encode_meta();
        st.unit_write(&self.ek, Some(meta))
    }

    /// Parks the collection when the running unit allows it (`Store`'s
    /// parking), else saves it. An emptied one is saved (its key deleted):
    /// the unit's next command must find the key missing.
    fn park_or_save(self, st: &mut Store) -> Result<(), Error> {
        match st.parking() && self.dirty && !self.is_empty() && !self.is_registry() {
            true => {
                st.park(Box::new(self));
                Ok(())
            }
            false => self.save(st),
        }
    }

    fn is_registry(&self) -> bool {
        self.ek == PREFIX
    }

    fn encode_meta(&self) -> Vec<u8> {
        let mut out = vec![
            self.kind.tag(),
            FORMAT,
            if self.external { EXTERNAL } else { 0 },
        ];
        out.extend_from_slice(&self.tree_id.to_le_bytes());
        out.extend_from_slice(&self.pages.next_page.to_le_bytes());
        if !self.external {
            for t in &self.trees {
                let root = t.root.encode();
                put_varint(&mut out, root.len() as u64);
                out.extend_from_slice(&root);
            }
        }
        out
    }

    /// A copy of this collection at engine key `ek` under a new tree id
    /// (COPY, and RESTORE's target); the copy is saved, this one untouched.
    pub fn copy_to(&mut self, st: &mut Store, ek: Vec<u8>) -> Result<(), Error> {
        let mut copy = Coll::new(ek, self.kind);
        for t in 0..self.trees.len() {
            let mut entries = Vec::new();
            self.walk(st, t, 0, false, |k, v| {
                entries.push((k.to_vec(), v.to_vec()));
                Ok(true)
            })?;
            copy.load_sorted(st, t, entries)?;
        }
        copy.save(st)
    }

    /// Appends `entries` (in tree order) to tree `t`, which is empty.
    pub fn load_sorted(
        &mut self,
        st: &mut Store,
        t: usize,
        entries: Vec<Entry>,
    ) -> Result<(), Error> {
        self.dirty = true;
        let (tree, mut io) = self.parts(st, t);
        for (i, (k, v)) in entries.into_iter().enumerate() {
            if k.is_empty() {
                tree.insert_at(&mut io, i as u64, &v)?;
            } else {
                tree.insert(&mut io, &k, &v)?;
            }
        }
        Ok(())
    }
}

/// The page at engine key `key`, read in place in the store's running unit
/// (its collection's meta is what the unit depends on).
pub(crate) fn read_page(st: &mut Store, key: &[u8]) -> Result<Option<Page>, Error> {
    st.unit_read(key, false, |v| v.map(Page::decode))?
        .transpose()
}

/// Sets `member`'s score in sorted set `c`; returns the score it had.
pub fn zset_put(
    st: &mut Store,
    c: &mut Coll,
    member: &[u8],
    score: f64,
) -> Result<Option<f64>, Error> {
    debug_assert_eq!(c.kind, Kind::ZSet);
    let score = norm(score);
    let old = c
        .insert(st, 0, member, &score.to_le_bytes())?
        .map(|v| decode_score(&v));
    if let Some(o) = old {
        if o.to_bits() == score.to_bits() {
            return Ok(old);
        }
        c.remove(st, 1, &score_key(o, member))?;
    }
    c.insert(st, 1, &score_key(score, member), b"")?;
    Ok(old)
}

/// Removes `member` from sorted set `c`; returns its score.
pub fn zset_remove(st: &mut Store, c: &mut Coll, member: &[u8]) -> Result<Option<f64>, Error> {
    let old = c.remove(st, 0, member)?.map(|v| decode_score(&v));
    if let Some(o) = old {
        c.remove(st, 1, &score_key(o, member))?;
    }
    Ok(old)
}

/// The collection at `key` read whole (`None`: missing or a string),
/// for the commands that are O(size) anyway. Writes nothing: a value in
/// the whole-value encoding of earlier versions is decoded as it is (it is
/// converted by the first command that changes it).
pub fn read_key(st: &mut Store, key: &[u8]) -> Result<Option<Whole>, Error> {
    st.atomic(|st| {
        let found = st.get(key, |v| match v {
            Stored::Coll(k, _) => Ok((Some(k), None)),
            legacy => whole::from_legacy(legacy).map(|w| (None, w)),
        })?;
        let kind = match found.transpose()? {
            None | Some((None, None)) => return Ok(None),
            Some((_, Some(w))) => return Ok(Some(w)),
            Some((Some(kind), None)) => kind,
        };
        let Some(mut c) = Coll::open(st, key, kind)? else {
            return Ok(None);
        };
        read_whole(st, &mut c).map(Some)
    })
}

/// A fresh random tree id (never 0, the registry's).
fn new_tree_id() -> u64 {
    loop {
        let id = crate::random::below(u64::MAX);
        if id != 0 {
            return id;
        }
    }
}

/// Sets (`Some(meta key)`) or removes the registry's entry for `tree_id`.
pub fn registry_set(st: &mut Store, tree_id: u64, meta_key: Option<&[u8]>) -> Result<(), Error> {
    let mut reg = match Coll::open_engine_key(st, PREFIX.to_vec(), Kind::Hash)? {
        Some(r) => r,
        None => Coll::with_id(PREFIX.to_vec(), Kind::Hash, 0),
    };
    let id = tree_id.to_be_bytes();
    match meta_key {
        Some(k) => {
            reg.insert(st, 0, &id, k)?;
        }
        None => {
            reg.remove(st, 0, &id)?;
        }
    }
    reg.save(st)
}

/// A stored value moved from one engine key to another (RENAME, MOVE): an
/// external collection's registry entry follows it. Call inside the unit
/// that moves it.
pub fn moved(st: &mut Store, value: &[u8], new_ek: &[u8]) -> Result<(), Error> {
    if let Stored::Coll(_, body) = Stored::decode(value) {
        if body.len() >= 10 && body[1] & EXTERNAL != 0 {
            let id = u64::from_le_bytes(body[2..10].try_into().expect("8 bytes"));
            registry_set(st, id, Some(new_ek))?;
        }
    }
    Ok(())
}

/// Runs `f` on the collection at `key` in its own atomic unit (or in the
/// running one), saving it afterwards. `None` when the key is missing (a
/// key too long to exist too, answered without a unit).
pub fn with<R>(
    st: &mut Store,
    key: &[u8],
    kind: Kind,
    mut f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    if !crate::error::may_exist(&st.engine_key(key)) {
        return Ok(None);
    }
    st.atomic(|st| match take_or_open(st, key, kind, false)? {
        Some((c, parked)) => change(st, c, parked, &mut f).map(Some),
        None => Ok(None),
    })
}

/// [`with`] on the collection at `key`, created empty when missing (and
/// deleted again if `f` leaves it empty).
pub fn with_new<R>(
    st: &mut Store,
    key: &[u8],
    kind: Kind,
    mut f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<R, Error> {
    st.atomic(|st| {
        let (c, parked) = take_or_open(st, key, kind, true)?.expect("created when missing");
        change(st, c, parked, &mut f)
    })
}

/// The collection of `kind` at Redis key `key` inside the running unit,
/// and whether it came from the park (`Store`'s parking): parked, else
/// opened (`create`: a new empty one for a missing key; else `None`).
fn take_or_open(
    st: &mut Store,
    key: &[u8],
    kind: Kind,
    create: bool,
) -> Result<Option<(Coll, bool)>, Error> {
    let ek = st.engine_key(key).into_owned();
    if let Some(c) = unpark(st, &ek, kind) {
        return Ok(Some((c, true)));
    }
    let c = match create {
        true => Some(Coll::open_or_new(st, key, kind)?),
        false => Coll::open_engine_key(st, ek, kind)?,
    };
    Ok(c.map(|c| (c, false)))
}

/// The collection of `kind` parked at engine key `ek` (see `Store`'s
/// parking). One of another kind is written back instead: the caller's
/// open then finds the type it has.
fn unpark(st: &mut Store, ek: &[u8], kind: Kind) -> Option<Coll> {
    if !st.parking() {
        return None;
    }
    let c = st.unpark(ek)?.downcast::<Coll>().ok()?;
    if c.kind == kind && c.ek == ek {
        return Some(*c);
    }
    st.park(c);
    None
}

/// `f` on `c`, which is then parked or saved. When `c` came from the park
/// and `f` fails, the changes of the unit's earlier commands it held are
/// gone: the unit is poisoned.
fn change<R>(
    st: &mut Store,
    mut c: Coll,
    parked: bool,
    f: &mut impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<R, Error> {
    let r = f(st, &mut c);
    if r.is_err() && parked {
        st.poison();
    }
    let r = r?;
    c.park_or_save(st)?;
    Ok(r)
}

impl Parked for Coll {
    fn covers(&self, ek: &[u8]) -> bool {
        ek == self.ek
            || (ek.len() == 19 && ek[..3] == PREFIX && ek[3..11] == self.tree_id.to_be_bytes())
    }

    fn write_back(self: Box<Self>, st: &mut Store) -> Result<(), Error> {
        self.save(st)
    }

    fn into_any(self: Box<Self>) -> Box<dyn std::any::Any> {
        self
    }
}

/// Invariant of the three below: `write_whole` always creates a new tree
/// id (a copy never shares pages with its source).
/// The elements of collection `c`.
pub fn read_whole(st: &mut Store, c: &mut Coll) -> Result<Whole, Error> {
    if c.kind == Kind::Stream {
        return Err(Error::new(
            "ERR this command does not support streams yet (persimmon keeps no whole-value form of a stream)",
        ));
    }
    let tree = if c.kind == Kind::ZSet { 1 } else { 0 };
    let mut entries = Vec::with_capacity(c.len() as usize);
    c.walk(st, tree, 0, false, |k, v| {
        entries.push((k.to_vec(), v.to_vec()));
        Ok(true)
    })?;
    Ok(match c.kind {
        Kind::Hash => Whole::Hash(entries),
        Kind::Set => Whole::Set(entries.into_iter().map(|(k, _)| k).collect()),
        Kind::List => Whole::List(entries.into_iter().map(|(_, v)| v).collect()),
        Kind::ZSet => Whole::ZSet(
            entries
                .iter()
                .map(|(k, _)| {
                    let (score, m) = split_score_key(k);
                    (score, m.to_vec())
                })
                .collect(),
        ),
        Kind::Stream => unreachable!("refused above"),
    })
}

/// Builds a new collection holding `whole` at engine key `ek` and saves
/// it (the caller has deleted or checked what was there). An empty `whole`
/// writes nothing.
pub fn write_whole(st: &mut Store, ek: Vec<u8>, whole: &Whole) -> Result<(), Error> {
    let mut c = Coll::new(ek, whole.kind());
    fill(st, &mut c, whole)?;
    c.save(st)
}

/// Adds `whole`'s elements to `c`, a new collection of its kind (RESTORE,
/// SORT STORE, the conversion of an old whole value).
pub fn fill(st: &mut Store, c: &mut Coll, whole: &Whole) -> Result<(), Error> {
    debug_assert_eq!(c.kind, whole.kind());
    match whole {
        Whole::Hash(pairs) => {
            for (f, v) in pairs {
                c.insert(st, 0, f, v)?;
            }
        }
        Whole::Set(members) => {
            for m in members {
                c.insert(st, 0, m, b"")?;
            }
        }
        Whole::List(items) => {
            for (i, e) in items.iter().enumerate() {
                c.insert_at(st, i as u64, e)?;
            }
        }
        Whole::ZSet(entries) => {
            for (score, m) in entries {
                zset_put(st, c, m, *score)?;
            }
        }
    }
    Ok(())
}

#[cfg(test)]
pub mod tests {
    use super::*;
    use crate::coll::reclaim;
    use crate::keyspace::Keyspace;

    /// A store over a fresh pool in a temporary directory (kept alive by
    /// the returned guard).
    pub fn store() -> (Store, tempfile::TempDir) {
        let dir = tempfile::Builder::new()
            .prefix("persimmon-coll")
            .tempdir_in(if std::path::Path::new("/dev/shm").is_dir() {
                "/dev/shm"
            } else {
                "/tmp"
            })
            .expect("temp dir");
        let keyspace =
            Keyspace::open(dir.path().join("c.pool"), persimmon::Options::default()).expect("pool");
        (Store::new(keyspace), dir)
    }

    /// Engine keys of pages and the registry in the pool.
    fn internal_records(st: &Store) -> usize {
        st.keyspace()
            .db
            .iter()
            .filter(|r| r.as_ref().is_ok_and(|(k, _)| k.starts_with(&PREFIX)))
            .count()
    }

    fn big_hash(st: &mut Store, key: &[u8], n: u32) {
        with_new(st, key, Kind::Hash, |st, c| {
            for i in 0..n {
                c.insert(st, 0, format!("field:{i}").as_bytes(), &[b'v'; 20])?;
            }
            Ok(())
        })
        .unwrap();
    }

    fn hash_len(st: &mut Store, key: &[u8]) -> Option<u64> {
        with(st, key, Kind::Hash, |_, c| Ok(c.len())).unwrap()
    }

    #[test]
    fn a_small_collection_is_one_record_and_a_large_one_is_registered() {
        let (mut st, _dir) = store();
        big_hash(&mut st, b"small", 10);
        assert_eq!(internal_records(&st), 0, "a small hash lives in its meta");
        big_hash(&mut st, b"big", 5000);
        assert_eq!(hash_len(&mut st, b"big"), Some(5000));
        let pages = internal_records(&st);
        assert!(pages > 10, "{pages} records");
        // Still whole after a reclaimer round: it is alive.
        assert_eq!(reclaim::round(st.keyspace()).unwrap(), 0);
        assert_eq!(internal_records(&st), pages);
        let got = with(&mut st, b"big", Kind::Hash, |st, c| {
            c.get(st, 0, b"field:4321")
        })
        .unwrap();
        assert_eq!(got, Some(Some(vec![b'v'; 20])));
    }

    #[test]
    fn deleting_a_large_collection_leaves_its_pages_to_the_reclaimer() {
        let (mut st, _dir) = store();
        big_hash(&mut st, b"big", 5000);
        assert!(st.delete(b"big").unwrap());
        assert!(internal_records(&st) > 10, "DEL only removes the meta");
        assert_eq!(reclaim::round(st.keyspace()).unwrap(), 1);
        assert_eq!(
            internal_records(&st),
            1,
            "only the (now empty) registry's meta is left"
        );
        // The name is reusable at once, and the new one is not reclaimed.
        big_hash(&mut st, b"big", 3000);
        assert_eq!(reclaim::round(st.keyspace()).unwrap(), 0);
        assert_eq!(hash_len(&mut st, b"big"), Some(3000));
    }

    #[test]
    fn a_moved_collection_keeps_its_pages() {
        let (mut st, _dir) = store();
        big_hash(&mut st, b"from", 5000);
        st.atomic(|st| {
            let (value, deadline) = st
                .read_ttl(b"from", |v, d| (v.encode(), d))?
                .expect("present");
            st.put(b"to", &value, deadline)?;
            let ek = st.engine_key(b"to").into_owned();
            moved(st, &value, &ek)?;
            st.delete(b"from").map(|_| ())
        })
        .unwrap();
        assert_eq!(reclaim::round(st.keyspace()).unwrap(), 0);
        assert_eq!(hash_len(&mut st, b"to"), Some(5000));
        assert_eq!(hash_len(&mut st, b"from"), None);
    }

    #[test]
    fn an_overwritten_collection_is_reclaimed() {
        let (mut st, _dir) = store();
        big_hash(&mut st, b"k", 5000);
        st.put(b"k", &crate::value::string(b"now a string"), None)
            .unwrap();
        assert_eq!(reclaim::round(st.keyspace()).unwrap(), 1);
        assert_eq!(internal_records(&st), 1);
    }

    #[test]
    fn legacy_values_convert_on_first_access() {
        let (mut st, _dir) = store();
        let legacy = crate::value::list_encode(&[b"a", b"b", b"c"]);
        st.put(b"l", &legacy, None).unwrap();
        let items = with(&mut st, b"l", Kind::List, |st, c| {
            let mut out = Vec::new();
            c.walk(st, 0, 0, false, |_, v| {
                out.push(v.to_vec());
                Ok(true)
            })?;
            Ok(out)
        })
        .unwrap();
        assert_eq!(
            items,
            Some(vec![b"a".to_vec(), b"b".to_vec(), b"c".to_vec()])
        );
        let tag = st.get(b"l", |v| v.type_name()).unwrap();
        assert_eq!(tag, Some("list"));
        assert!(st
            .get(b"l", |v| matches!(v, Stored::Coll(Kind::List, _)))
            .unwrap()
            .unwrap());
        assert!(
            with(&mut st, b"l", Kind::Hash, |_, _| Ok(())).is_err(),
            "WRONGTYPE"
        );
    }

    #[test]
    fn score_keys_sort_as_scores() {
        let scores = [
            f64::NEG_INFINITY,
            -1e300,
            -2.5,
            -0.0,
            0.0,
            1e-300,
            3.0,
            f64::INFINITY,
        ];
        let keys: Vec<Vec<u8>> = scores.iter().map(|&s| score_key(s, b"m")).collect();
        assert!(keys.windows(2).all(|w| w[0] <= w[1]));
        for &s in &scores {
            let k = score_key(s, b"member");
            let (back, m) = split_score_key(&k);
            assert_eq!(back.to_bits(), s.to_bits());
            assert_eq!(m, b"member");
        }
    }

    #[test]
    fn page_keys_belong_to_no_database() {
        assert_eq!(crate::dbs::split(&page_key(7, 9)), None);
        assert_eq!(crate::dbs::split(&PREFIX), None);
        assert_eq!(crate::dbs::split(&page_key(u64::MAX, 0)), None);
    }
}
