//! One page of a collection's tree: a leaf of (key, value) entries or an
//! inner node of (separator, child page, subtree count) entries, and its
//! byte form.
//!
//! | bytes | field |
//! |---|---|
//! | 1 | level: `0` leaf, `n ≥ 1` inner node whose children are level `n - 1` |
//! | varint | number of entries |
//! | leaf entry | `varint key_len, key, varint value_len, value` |
//! | node entry | `varint key_len, key, child page: u64 LE, varint subtree count` |
//!
//! Varints are LEB128 (at most 10 bytes for a u64). Entries of a leaf are
//! in tree order (by key for keyed trees, by position for a list); a node's
//! separator `i ≥ 1` is ≤ every key below child `i` and > every key below
//! child `i - 1` (the first separator is never compared). A positional
//! tree (a list) has empty keys and is navigated by the counts only.
//!
//! In memory a page is its bytes (an *arena*) plus one small item per
//! entry pointing into it, so decoding a page is two allocations whatever
//! its number of entries; a change appends to the arena (what it replaces
//! stays there, unused, until the page is encoded again).
//!
//! Invariants: decoding never trusts a length inside the bytes (a page that
//! does not parse exactly is `damaged`); `encoded_len` is the exact length
//! of `encode`'s output, and O(1): every change keeps the items' encoded
//! size (`body`) up to date; every item's spans lie inside the arena.

use crate::error::Error;

/// A leaf entry, owned: key (empty in a list) and value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// One entry: spans of its key and value in the arena; for a node entry
/// the child's page number and entry count (a leaf entry counts 1).
#[derive(Clone, Copy, Debug)]
struct Item {
    key: (u32, u32),
    value: (u32, u32),
    child: u64,
    count: u64,
}

/// A page, decoded.
#[derive(Clone, Debug, Default)]
pub struct Page {
    level: u8,
    arena: Vec<u8>,
    items: Vec<Item>,
    /// Bytes the items take encoded (`encoded_len` less the head), kept
    /// up to date by every change.
    body: usize,
}

/// A page's bytes did not parse.
#[cold]
#[inline(never)]
pub fn damaged() -> Error {
    Error::new("ERR a page of the collection stored at this key is damaged (it does not decode)")
}

impl PartialEq for Page {
    fn eq(&self, other: &Page) -> bool {
        self.level == other.level
            && self.width() == other.width()
            && (0..self.width()).all(|i| {
                self.key(i) == other.key(i)
                    && self.value(i) == other.value(i)
                    && self.items[i].child == other.items[i].child
                    && self.items[i].count == other.items[i].count
            })
    }
}

impl Eq for Page {}

impl Page {
    /// An empty leaf.
    pub fn empty() -> Page {
        Page::default()
    }

    /// An empty node of `level` (≥ 1).
    pub fn node(level: u8) -> Page {
        debug_assert!(level >= 1);
        Page {
            level,
            ..Page::default()
        }
    }

    pub fn level(&self) -> u8 {
        self.level
    }

    pub fn is_leaf(&self) -> bool {
        self.level == 0
    }

    /// Entries below this page.
    pub fn count(&self) -> u64 {
        if self.is_leaf() {
            self.items.len() as u64
        } else {
            self.items.iter().map(|i| i.count).sum()
        }
    }

    /// Entries (or children) in the page itself.
    pub fn width(&self) -> usize {
        self.items.len()
    }

    pub fn key(&self, i: usize) -> &[u8] {
        let (a, b) = self.items[i].key;
        &self.arena[a as usize..b as usize]
    }

    /// A leaf entry's value (empty for a node entry).
    pub fn value(&self, i: usize) -> &[u8] {
        let (a, b) = self.items[i].value;
        &self.arena[a as usize..b as usize]
    }

    /// A node entry's child page.
    pub fn child(&self, i: usize) -> u64 {
        self.items[i].child
    }

    /// A node entry's count of entries below its child (1 for a leaf entry).
    pub fn child_count(&self, i: usize) -> u64 {
        self.items[i].count
    }

    pub fn set_child_count(&mut self, i: usize, count: u64) {
        self.body -= self.entry_len(i);
        self.items[i].count = count;
        self.body += self.entry_len(i);
    }

    /// The key a parent keeps as this page's separator.
    pub fn first_key(&self) -> Vec<u8> {
        if self.items.is_empty() {
            Vec::new()
        } else {
            self.key(0).to_vec()
        }
    }

    /// Where `key` is among a leaf's keys: `Ok(i)` found, `Err(i)` where
    /// it would go.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        self.items
            .binary_search_by(|it| self.arena[it.key.0 as usize..it.key.1 as usize].cmp(key))
    }

    /// Where `key` leads in this page (as [`probe`] reads it from bytes).
    pub fn probe(&self, key: &[u8]) -> Result<Probe<'_>, Error> {
        if self.is_leaf() {
            return Ok(match self.search(key) {
                Ok(i) => Probe::Leaf {
                    at: i,
                    found: Some(self.value(i)),
                },
                Err(i) => Probe::Leaf { at: i, found: None },
            });
        }
        if self.width() == 0 {
            return Err(damaged());
        }
        let i = self.child_for_key(key);
        Ok(Probe::Child {
            no: self.child(i),
            before: (0..i).map(|j| self.child_count(j)).sum(),
        })
    }

    /// The child of a node a key belongs under.
    pub fn child_for_key(&self, key: &[u8]) -> usize {
        // Separators 1.. that are ≤ key.
        let seps = self.items.get(1..).unwrap_or_default();
        seps.partition_point(|it| &self.arena[it.key.0 as usize..it.key.1 as usize] <= key)
    }

    fn append(&mut self, bytes: &[u8]) -> (u32, u32) {
        let start = self.arena.len();
        self.arena.extend_from_slice(bytes);
        (start as u32, self.arena.len() as u32)
    }

    /// Inserts a leaf entry at `i`.
    pub fn insert_entry(&mut self, i: usize, key: &[u8], value: &[u8]) {
        debug_assert!(self.is_leaf());
        let key = self.append(key);
        let value = self.append(value);
        self.items.insert(
            i,
            Item {
                key,
                value,
                child: 0,
                count: 1,
            },
        );
        self.body += self.entry_len(i);
    }

    /// Replaces a leaf entry's value; returns the old one.
    pub fn set_value(&mut self, i: usize, value: &[u8]) -> Vec<u8> {
        let old = self.value(i).to_vec();
        self.body -= self.entry_len(i);
        self.items[i].value = self.append(value);
        self.body += self.entry_len(i);
        old
    }

    /// Removes entry `i`; returns its key and value.
    pub fn remove(&mut self, i: usize) -> Entry {
        let e = (self.key(i).to_vec(), self.value(i).to_vec());
        self.body -= self.entry_len(i);
        self.items.remove(i);
        e
    }

    /// Inserts a node entry at `i`.
    pub fn insert_child(&mut self, i: usize, key: &[u8], child: u64, count: u64) {
        debug_assert!(!self.is_leaf());
        let key = self.append(key);
        self.items.insert(
            i,
            Item {
                key,
                value: (0, 0),
                child,
                count,
            },
        );
        self.body += self.entry_len(i);
    }

    /// The leaf's entries, in order.
    pub fn entries(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        (0..self.width()).map(|i| (self.key(i), self.value(i)))
    }

    /// [`encoded_len`](Self::encoded_len) once leaf entry `i`'s value is
    /// replaced by one of `len` bytes.
    pub fn encoded_len_with_value(&self, i: usize, len: usize) -> usize {
        let old = self.value(i).len();
        self.encoded_len() - old - varint_len(old as u64) + len + varint_len(len as u64)
    }

    pub fn encoded_len(&self) -> usize {
        debug_assert_eq!(
            self.body,
            (0..self.width()).map(|i| self.entry_len(i)).sum::<usize>(),
            "the kept size is the items' encoded size"
        );
        1 + varint_len(self.width() as u64) + self.body
    }

    /// Bytes entry `i` takes encoded.
    fn entry_len(&self, i: usize) -> usize {
        let it = &self.items[i];
        let k = (it.key.1 - it.key.0) as u64;
        let key = varint_len(k) + k as usize;
        if self.is_leaf() {
            let v = (it.value.1 - it.value.0) as u64;
            key + varint_len(v) + v as usize
        } else {
            key + 8 + varint_len(it.count)
        }
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.push(self.level);
        put_varint(out, self.width() as u64);
        for i in 0..self.width() {
            put_bytes(out, self.key(i));
            if self.is_leaf() {
                put_bytes(out, self.value(i));
            } else {
                out.extend_from_slice(&self.items[i].child.to_le_bytes());
                put_varint(out, self.items[i].count);
            }
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.arena.len() + 2 * self.width() + 12);
        self.encode_into(&mut out);
        debug_assert_eq!(out.len(), self.encoded_len());
        out
    }

    /// Decodes a page; its bytes become the arena (one copy).
    pub fn decode(bytes: &[u8]) -> Result<Page, Error> {
        if bytes.len() > u32::MAX as usize {
            return Err(damaged());
        }
        let mut r = Reader::new(bytes);
        let level = r.byte()?;
        let n = r.varint()?;
        // Every entry takes at least two bytes: a larger count is damage.
        if n > r.left() as u64 / 2 {
            return Err(damaged());
        }
        let mut items = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let key = r.span()?;
            let (value, child, count) = if level == 0 {
                (r.span()?, 0, 1)
            } else {
                ((0, 0), r.u64()?, r.varint()?)
            };
            items.push(Item {
                key,
                value,
                child,
                count,
            });
        }
        if r.left() != 0 {
            return Err(damaged());
        }
        Ok(Page {
            level,
            arena: bytes.to_vec(),
            items,
            body: bytes.len() - 1 - varint_len(n),
        })
    }

    /// Splits an oversized page into pieces of about `target` bytes each
    /// (a single entry larger than that is a piece of its own). The first
    /// piece stays in `self`; the rest are returned in order.
    pub fn split(&mut self, target: usize) -> Vec<Page> {
        let sizes: Vec<usize> = (0..self.width()).map(|i| self.entry_len(i)).collect();
        let mut cuts = cut_points(&sizes, target);
        if cuts.is_empty() && self.width() > 1 {
            // Called on a page too large to keep: always two pieces or more.
            cuts.push(self.width() / 2);
        }
        let mut bounds = vec![0];
        bounds.extend(cuts);
        bounds.push(self.width());
        let pieces: Vec<Page> = bounds.windows(2).map(|w| self.slice(w[0], w[1])).collect();
        let mut pieces = pieces.into_iter();
        *self = pieces.next().unwrap_or_default();
        pieces.collect()
    }

    /// A compact copy of entries `from..to`.
    fn slice(&self, from: usize, to: usize) -> Page {
        let mut p = Page {
            level: self.level,
            arena: Vec::new(),
            items: Vec::with_capacity(to - from),
            body: 0,
        };
        for i in from..to {
            let key = p.append(self.key(i));
            let value = p.append(self.value(i));
            p.items.push(Item {
                key,
                value,
                ..self.items[i]
            });
            p.body += self.entry_len(i);
        }
        p
    }

    /// Appends `right`'s entries (a page of the same level, next in order).
    pub fn absorb(&mut self, right: Page) {
        debug_assert_eq!(self.level, right.level);
        for i in 0..right.width() {
            let key = self.append(right.key(i));
            let value = self.append(right.value(i));
            self.items.push(Item {
                key,
                value,
                ..right.items[i]
            });
        }
        self.body += right.body;
    }
}

/// Where to cut a run of items with `sizes` into pieces of about `target`
/// bytes: the indexes that start the second, third, ... piece.
fn cut_points(sizes: &[usize], target: usize) -> Vec<usize> {
    let mut cuts = Vec::new();
    let mut run = 0;
    for (i, &s) in sizes.iter().enumerate() {
        if run > 0 && run + s > target {
            cuts.push(i);
            run = 0;
        }
        run += s;
    }
    // A last piece much smaller than the others joins the one before.
    if let Some(&last) = cuts.last() {
        let tail: usize = sizes[last..].iter().sum();
        if tail < target / 2 && cuts.len() > 1 {
            cuts.pop();
        }
    }
    cuts
}

pub fn varint_len(mut n: u64) -> usize {
    let mut len = 1;
    while n >= 0x80 {
        n >>= 7;
        len += 1;
    }
    len
}

pub fn put_varint(out: &mut Vec<u8>, mut n: u64) {
    while n >= 0x80 {
        out.push((n as u8) | 0x80);
        n >>= 7;
    }
    out.push(n as u8);
}

fn put_bytes(out: &mut Vec<u8>, b: &[u8]) {
    if b.len() < 0x80 {
        out.push(b.len() as u8);
    } else {
        put_varint(out, b.len() as u64);
    }
    out.extend_from_slice(b);
}

/// Where a key leads in one page.
#[derive(Debug, PartialEq, Eq)]
pub enum Probe<'a> {
    /// A node: the child the key belongs under, and the number of entries
    /// under the children before it.
    Child { no: u64, before: u64 },
    /// A leaf: the number of entries before the key, and its value if the
    /// key is there.
    Leaf { at: usize, found: Option<&'a [u8]> },
}

/// Where `key` leads in the page encoded as `bytes`, read in place: no
/// copy, no allocation, and only as far as the key's position (a keyed
/// tree's entries are in order). Every length is checked before it is
/// used, as in [`Page::decode`]; damage past the key's position is left
/// for a full decode to find.
pub fn probe<'a>(bytes: &'a [u8], key: &[u8]) -> Result<Probe<'a>, Error> {
    let mut r = Reader::new(bytes);
    let level = r.byte()?;
    let n = r.varint()?;
    if level == 0 {
        for at in 0..n as usize {
            let k = r.bytes()?;
            let v = r.bytes()?;
            match k.cmp(key) {
                std::cmp::Ordering::Less => {}
                std::cmp::Ordering::Equal => return Ok(Probe::Leaf { at, found: Some(v) }),
                std::cmp::Ordering::Greater => return Ok(Probe::Leaf { at, found: None }),
            }
        }
        return Ok(Probe::Leaf {
            at: n as usize,
            found: None,
        });
    }
    // Child `i` is the last whose separator is ≤ key; the first separator
    // is never compared.
    let (mut no, mut before, mut below) = (None, 0u64, 0u64);
    for i in 0..n {
        let sep = r.bytes()?;
        let child = r.u64()?;
        let count = r.varint()?;
        if i > 0 && sep > key {
            break;
        }
        no = Some(child);
        before = below;
        below = below.checked_add(count).ok_or_else(damaged)?;
    }
    let no = no.ok_or_else(damaged)?;
    Ok(Probe::Child { no, before })
}

/// Reads varints, bytes and spans, never past the end.
pub struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    pub fn new(bytes: &'a [u8]) -> Reader<'a> {
        Reader { bytes, at: 0 }
    }

    /// Bytes not read yet.
    pub fn left(&self) -> usize {
        self.bytes.len() - self.at
    }

    #[inline]
    pub fn byte(&mut self) -> Result<u8, Error> {
        Ok(self.take(1)?[0])
    }

    #[inline]
    pub fn varint(&mut self) -> Result<u64, Error> {
        // Most lengths fit one byte.
        if let Some(&b) = self.bytes.get(self.at) {
            if b & 0x80 == 0 {
                self.at += 1;
                return Ok(u64::from(b));
            }
        }
        let mut n: u64 = 0;
        for i in 0..10 {
            let b = self.byte()?;
            n |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(damaged())
    }

    #[inline]
    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.left() {
            return Err(damaged());
        }
        let out = &self.bytes[self.at..self.at + n];
        self.at += n;
        Ok(out)
    }

    /// A length-prefixed run of bytes.
    pub fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let n = self.varint()?;
        self.take(usize::try_from(n).map_err(|_| damaged())?)
    }

    /// [`bytes`](Self::bytes) as a span of the input.
    #[inline]
    fn span(&mut self) -> Result<(u32, u32), Error> {
        let n = self.varint()?;
        let n = usize::try_from(n).map_err(|_| damaged())?;
        let start = self.at;
        self.take(n)?;
        Ok((start as u32, self.at as u32))
    }

    pub fn u64(&mut self) -> Result<u64, Error> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn probing_bytes_agrees_with_the_decoded_page() {
        let mut l = Page::empty();
        for (i, k) in [&b"b"[..], b"d", b"f", b"h"].iter().enumerate() {
            l.insert_entry(i, k, &[i as u8; 3]);
        }
        let mut n = Page::node(1);
        for (i, k) in [&b"a"[..], b"m", b"t"].iter().enumerate() {
            n.insert_child(i, k, 100 + i as u64, 10 * (i as u64 + 1));
        }
        for page in [&l, &n] {
            let bytes = page.encode();
            for key in [
                &b""[..],
                b"a",
                b"b",
                b"c",
                b"h",
                b"i",
                b"m",
                b"s",
                b"t",
                b"zz",
            ] {
                assert_eq!(
                    probe(&bytes, key).unwrap(),
                    page.probe(key).unwrap(),
                    "{key:?}"
                );
            }
        }
        assert_eq!(
            probe(&n.encode(), b"q").unwrap(),
            Probe::Child {
                no: 101,
                before: 10
            }
        );
        assert_eq!(
            probe(&l.encode(), b"f").unwrap(),
            Probe::Leaf {
                at: 2,
                found: Some(&[2, 2, 2][..])
            }
        );
        // Cut short, or an empty node: damaged, never a panic.
        let bytes = n.encode();
        for cut in 0..bytes.len() {
            assert!(probe(&bytes[..cut], b"zz").is_err(), "cut at {cut}");
        }
        assert!(probe(&Page::node(1).encode(), b"a").is_err());
    }

    fn leaf(entries: &[(&[u8], &[u8])]) -> Page {
        let mut p = Page::empty();
        for (i, (k, v)) in entries.iter().enumerate() {
            p.insert_entry(i, k, v);
        }
        p
    }

    #[test]
    fn pages_round_trip_and_their_length_is_exact() {
        let l = leaf(&[(b"a", b"1"), (b"", &[7; 300])]);
        let mut node = Page::node(2);
        node.insert_child(0, b"", 3, 1 << 40);
        node.insert_child(1, b"m", u64::MAX, 5);
        for p in [l, node, Page::empty()] {
            let bytes = p.encode();
            assert_eq!(bytes.len(), p.encoded_len());
            assert_eq!(Page::decode(&bytes).unwrap(), p);
        }
    }

    #[test]
    fn changes_append_and_encode_compact() {
        let mut p = leaf(&[(b"a", b"1"), (b"b", b"2")]);
        assert_eq!(p.set_value(0, b"one"), b"1".to_vec());
        assert_eq!(p.remove(1), (b"b".to_vec(), b"2".to_vec()));
        let bytes = p.encode();
        assert_eq!(bytes, leaf(&[(b"a", b"one")]).encode());
        assert_eq!(Page::decode(&bytes).unwrap().arena.len(), bytes.len());
    }

    #[test]
    fn damaged_pages_are_refused_not_indexed() {
        let bytes = leaf(&[(b"key", b"value")]).encode();
        for cut in 0..bytes.len() {
            assert!(Page::decode(&bytes[..cut]).is_err(), "cut at {cut}");
        }
        let mut longer = bytes.clone();
        longer.push(0);
        assert!(Page::decode(&longer).is_err());
        assert!(Page::decode(&[0, 0xFF, 0xFF, 0xFF, 0xFF, 0x0F]).is_err());
    }

    #[test]
    fn split_cuts_by_bytes_and_keeps_order() {
        let entries: Vec<Entry> = (0..100u32)
            .map(|i| (i.to_be_bytes().to_vec(), vec![0; 40]))
            .collect();
        let mut p = Page::empty();
        for (i, (k, v)) in entries.iter().enumerate() {
            p.insert_entry(i, k, v);
        }
        let rest = p.split(1000);
        assert!(!rest.is_empty());
        let mut joined = Vec::new();
        for piece in std::iter::once(&p).chain(&rest) {
            assert!(piece.encoded_len() <= 1100, "{}", piece.encoded_len());
            joined.extend(piece.entries().map(|(k, v)| (k.to_vec(), v.to_vec())));
        }
        assert_eq!(joined, entries);
        let mut again = p.clone();
        for r in rest {
            again.absorb(r);
        }
        assert_eq!(again.entries().count(), 100);
    }

    #[test]
    fn one_large_entry_is_a_piece_of_its_own() {
        let mut p = leaf(&[(b"a", &[0; 10]), (b"b", &[0; 5000]), (b"c", &[0; 10])]);
        let rest = p.split(1000);
        assert_eq!(p.width() + rest.iter().map(Page::width).sum::<usize>(), 3);
        assert!(!rest.is_empty());
    }
}
