//! Collections (hashes, sets, lists, sorted sets) of any size: a *meta
//! record* at the Redis key and, once the collection outgrows one page, a
//! counted B+ tree of page records (`tree.rs`, `page.rs`) outside every
//! database's key space.
//!
//! | engine key | record |
//! |---|---|
//! | the Redis key (in its database's namespace) | meta: `tag, format 1, flags, tree id: u64 LE, next page: u64 LE`, then, unless external, each tree's root page as `varint len, page` |
//! | `FF 80 00` + tree id (u64 BE) + page number (u64 BE) | one page of the tree |
//! | `FF 80 00` | the registry: a hash-kind collection (tree id 0) of every external tree, tree id (u64 BE) → its meta's engine key |
//!
//! Tags: `0x06` hash (one tree, field → value), `0x07` sorted set (two
//! trees: member → score as f64 LE, and sortable score + member → empty),
//! `0x08` list (one positional tree), `0x09` set (one tree, member →
//! empty). `FF 80 00` is a non-canonical namespace varint, so no database
//! key, walk or range ever reaches these records (`dbs::split`).
//!
//! A collection whose roots are leaves keeps them inside the meta record:
//! one record, like Redis's listpack encodings. Once a root becomes a node
//! the collection turns *external*: root `t` is page `t + 1`, every page is
//! its own record, and the registry names the tree. The registry is what
//! the reclaimer (`reclaim.rs`) walks to find trees whose meta is gone
//! (DEL, an overwrite, expiry, FLUSHDB) and delete their pages in the
//! background, so deleting a huge collection is O(1) to the client.
//!
//! Invariants:
//! - Every change runs inside one atomic unit of the `Store`, and every
//!   change rewrites the meta record, which the unit read with its version:
//!   two units changing one collection conflict, so each command is
//!   serializable and crash-atomic (one engine batch).
//! - A meta names a tree id no other meta names: a new collection, COPY and
//!   RESTORE draw a new random id; RENAME and MOVE carry the id and update
//!   the registry in the same unit.
//! - An external tree is in the registry from the unit that made it
//!   external until the reclaimer deleted its last page.
//! - An empty collection has no meta (its key is deleted, as in Redis).

pub mod page;
pub mod reclaim;
pub mod tree;
pub mod whole;

use crate::session::{wrongtype, Error};
use crate::store::Store;
use crate::value::Stored;
use page::{put_varint, Entry, Page, Reader};
use tree::{PageIo, Tree};

pub use crate::value::Kind;

/// The prefix of every page key and the registry's key.
pub const PREFIX: [u8; 3] = [0xFF, 0x80, 0x00];
const FORMAT: u8 = 1;
pub(crate) const EXTERNAL: u8 = 1;

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
        _ => 1,
    }
}

/// A collection opened inside an atomic unit. Change it through its
/// methods, then [`save`](Self::save) it (a change not saved is lost with
/// the unit's other writes only if the unit fails; saving is what keeps
/// the meta and the pages in step).
pub struct Coll {
    pub kind: Kind,
    /// The meta record's engine key.
    ek: Vec<u8>,
    tree_id: u64,
    next_page: u64,
    external: bool,
    trees: Vec<Tree>,
    dirty: bool,
}

/// Page access for one tree id, inside the store's running unit.
struct Io<'a> {
    store: &'a mut Store,
    tree_id: u64,
    next_page: &'a mut u64,
}

impl PageIo for Io<'_> {
    fn load(&mut self, no: u64) -> Result<Option<Page>, Error> {
        let key = page_key(self.tree_id, no);
        self.store
            .unit_read(&key, false, |v| v.map(Page::decode))?
            .transpose()
    }
    fn save(&mut self, no: u64, page: &Page) -> Result<(), Error> {
        self.store
            .unit_write(&page_key(self.tree_id, no), Some(page.encode()))
    }
    fn free(&mut self, no: u64) -> Result<(), Error> {
        self.store.unit_write(&page_key(self.tree_id, no), None)
    }
    fn alloc(&mut self) -> u64 {
        let no = *self.next_page;
        *self.next_page += 1;
        no
    }
}

/// Page numbers of the roots of an external collection: 1 and 2.
const FIRST_FREE_PAGE: u64 = 3;

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
            next_page: FIRST_FREE_PAGE,
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
        crate::session::check_key(&ek)?;
        Ok(match Coll::open_engine_key(st, ek.clone(), kind)? {
            Some(c) => c,
            None => Coll::new(ek, kind),
        })
    }

    pub fn open_engine_key(st: &mut Store, ek: Vec<u8>, kind: Kind) -> Result<Option<Coll>, Error> {
        // A key too long for the engine (with a database prefix) cannot
        // exist: it reads as missing, as the store's reads do.
        if !crate::session::may_exist(&ek) {
            return Ok(None);
        }
        let meta = st.unit_read(&ek, true, |v| v.map(<[u8]>::to_vec))?;
        let Some(meta) = meta else { return Ok(None) };
        match Stored::decode(&meta) {
            Stored::Coll(k, body) if k == kind => Coll::decode(st, ek, kind, body).map(Some),
            Stored::Coll(..) | Stored::String(_) => Err(wrongtype()),
            legacy => {
                if legacy_kind(&legacy) != Some(kind) {
                    return Err(wrongtype());
                }
                let mut c = Coll::new(ek, kind);
                c.convert(st, legacy)?;
                Ok(Some(c))
            }
        }
    }

    fn decode(st: &mut Store, ek: Vec<u8>, kind: Kind, body: &[u8]) -> Result<Coll, Error> {
        let mut r = Reader(body);
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
            next_page,
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
        if !r.0.is_empty() {
            return Err(page::damaged());
        }
        Ok(c)
    }

    fn io<'a>(&'a mut self, st: &'a mut Store) -> Io<'a> {
        Io {
            store: st,
            tree_id: self.tree_id,
            next_page: &mut self.next_page,
        }
    }

    /// Splits the borrow: tree `t` and the page access.
    fn parts<'a>(&'a mut self, st: &'a mut Store, t: usize) -> (&'a mut Tree, Io<'a>) {
        let io = Io {
            store: st,
            tree_id: self.tree_id,
            next_page: &mut self.next_page,
        };
        (&mut self.trees[t], io)
    }

    /// Entries of tree 0 (members, fields, elements).
    pub fn len(&self) -> u64 {
        self.trees[0].len()
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    pub fn tree_id(&self) -> u64 {
        self.tree_id
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

    pub fn insert(
        &mut self,
        st: &mut Store,
        t: usize,
        key: &[u8],
        value: &[u8],
    ) -> Result<Option<Vec<u8>>, Error> {
        self.dirty = true;
        let (tree, mut io) = self.parts(st, t);
        tree.insert(&mut io, key, value)
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
        if external && !self.external {
            self.external = true;
            if !self.is_registry() {
                registry_set(st, self.tree_id, Some(&self.ek))?;
            }
        }
        if self.external {
            for t in 0..self.trees.len() {
                if self.trees[t].root_dirty {
                    let root = self.trees[t].root.clone();
                    self.io(st).save(t as u64 + 1, &root)?;
                }
            }
        }
        let meta = self.encode_meta();
        st.unit_write(&self.ek, Some(meta))
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
        out.extend_from_slice(&self.next_page.to_le_bytes());
        if !self.external {
            for t in &self.trees {
                let root = t.root.encode();
                put_varint(&mut out, root.len() as u64);
                out.extend_from_slice(&root);
            }
        }
        out
    }

    /// Fills this new collection from a value in the whole-value encoding
    /// of earlier versions (tags 0x02 to 0x05), which is converted on its
    /// first access.
    fn convert(&mut self, st: &mut Store, legacy: Stored<'_>) -> Result<(), Error> {
        use crate::value::{hash_fields, items, zset_entries};
        fn bad<E>(_: E) -> Error {
            Error::new("ERR the value stored at this key is damaged (it does not decode)")
        }
        match legacy {
            Stored::Hash(body) => {
                for (f, v) in hash_fields(body).map_err(bad)? {
                    self.insert(st, 0, f, v)?;
                }
            }
            Stored::Set(body) => {
                for m in items(body).map_err(bad)? {
                    self.insert(st, 0, m, b"")?;
                }
            }
            Stored::List(body) => {
                for (i, e) in items(body).map_err(bad)?.into_iter().enumerate() {
                    self.insert_at(st, i as u64, e)?;
                }
            }
            Stored::ZSet(body) => {
                for (score, m) in zset_entries(body).map_err(bad)? {
                    self.insert(st, 0, m, &score.to_le_bytes())?;
                    self.insert(st, 1, &score_key(score, m), b"")?;
                }
            }
            Stored::String(_) | Stored::Coll(..) => unreachable!("only legacy values convert"),
        }
        self.dirty = true;
        Ok(())
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

/// Which kind a whole-value encoding of earlier versions holds.
fn legacy_kind(v: &Stored<'_>) -> Option<Kind> {
    match v {
        Stored::Hash(_) => Some(Kind::Hash),
        Stored::ZSet(_) => Some(Kind::ZSet),
        Stored::List(_) => Some(Kind::List),
        Stored::Set(_) => Some(Kind::Set),
        Stored::String(_) | Stored::Coll(..) => None,
    }
}

/// The key of a sorted set's score tree: the score in an order-keeping
/// byte form, then the member.
pub fn score_key(score: f64, member: &[u8]) -> Vec<u8> {
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    let mut k = Vec::with_capacity(8 + member.len());
    k.extend_from_slice(&ordered.to_be_bytes());
    k.extend_from_slice(member);
    k
}

/// The score and member of a score-tree key.
pub fn split_score_key(k: &[u8]) -> (f64, &[u8]) {
    let (head, member) = k.split_at(8.min(k.len()));
    let ordered = u64::from_be_bytes(head.try_into().unwrap_or([0; 8]));
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    (f64::from_bits(bits), member)
}

/// A score as a sorted set stores it (-0 is 0, as Redis compares them).
fn norm(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// The score stored in a sorted set's member tree.
pub fn decode_score(v: &[u8]) -> f64 {
    f64::from_le_bytes(v.try_into().unwrap_or([0; 8]))
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
/// for the commands that are O(size) anyway.
pub fn read_key(st: &mut Store, key: &[u8]) -> Result<Option<whole::Whole>, Error> {
    st.atomic(|st| {
        let kind = st.get(key, |v| match v {
            Stored::Coll(k, _) => Some(k),
            other => legacy_kind(&other),
        })?;
        let Some(Some(kind)) = kind else {
            return Ok(None);
        };
        let Some(mut c) = Coll::open(st, key, kind)? else {
            return Ok(None);
        };
        let w = whole::read(st, &mut c)?;
        c.save(st)?;
        Ok(Some(w))
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
/// running one), saving it afterwards. `None` when the key is missing.
pub fn with<R>(
    st: &mut Store,
    key: &[u8],
    kind: Kind,
    mut f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    st.atomic(|st| {
        let Some(mut c) = Coll::open(st, key, kind)? else {
            return Ok(None);
        };
        let r = f(st, &mut c)?;
        c.save(st)?;
        Ok(Some(r))
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
        let mut c = Coll::open_or_new(st, key, kind)?;
        let r = f(st, &mut c)?;
        c.save(st)?;
        Ok(r)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
