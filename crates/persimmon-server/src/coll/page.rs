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
//! Invariants: decoding never trusts a length inside the bytes (a page that
//! does not parse exactly is `Damaged`); `encoded_len` is the exact length
//! of `encode`'s output.

use crate::session::Error;

/// A leaf entry: key (empty in a list) and value.
pub type Entry = (Vec<u8>, Vec<u8>);

/// An inner node's reference to a child page.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Child {
    /// Lower bound of the keys below (not compared for the first child).
    pub key: Vec<u8>,
    /// The child's page number within the collection.
    pub page: u64,
    /// Entries below the child.
    pub count: u64,
}

/// A page, decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Page {
    Leaf(Vec<Entry>),
    Node { level: u8, children: Vec<Child> },
}

/// A page's bytes did not parse.
pub fn damaged() -> Error {
    Error::new("ERR a page of the collection stored at this key is damaged (it does not decode)")
}

impl Page {
    pub fn empty() -> Page {
        Page::Leaf(Vec::new())
    }

    pub fn level(&self) -> u8 {
        match self {
            Page::Leaf(_) => 0,
            Page::Node { level, .. } => *level,
        }
    }

    /// Entries below this page.
    pub fn count(&self) -> u64 {
        match self {
            Page::Leaf(e) => e.len() as u64,
            Page::Node { children, .. } => children.iter().map(|c| c.count).sum(),
        }
    }

    /// Entries (or children) in the page itself.
    pub fn width(&self) -> usize {
        match self {
            Page::Leaf(e) => e.len(),
            Page::Node { children, .. } => children.len(),
        }
    }

    /// The key a parent keeps as this page's separator.
    pub fn first_key(&self) -> Vec<u8> {
        match self {
            Page::Leaf(e) => e.first().map(|(k, _)| k.clone()).unwrap_or_default(),
            Page::Node { children, .. } => {
                children.first().map(|c| c.key.clone()).unwrap_or_default()
            }
        }
    }

    pub fn encoded_len(&self) -> usize {
        let body: usize = match self {
            Page::Leaf(e) => e
                .iter()
                .map(|(k, v)| {
                    varint_len(k.len() as u64) + k.len() + varint_len(v.len() as u64) + v.len()
                })
                .sum(),
            Page::Node { children, .. } => children
                .iter()
                .map(|c| varint_len(c.key.len() as u64) + c.key.len() + 8 + varint_len(c.count))
                .sum(),
        };
        1 + varint_len(self.width() as u64) + body
    }

    pub fn encode_into(&self, out: &mut Vec<u8>) {
        out.reserve(self.encoded_len());
        out.push(self.level());
        put_varint(out, self.width() as u64);
        match self {
            Page::Leaf(e) => {
                for (k, v) in e {
                    put_bytes(out, k);
                    put_bytes(out, v);
                }
            }
            Page::Node { children, .. } => {
                for c in children {
                    put_bytes(out, &c.key);
                    out.extend_from_slice(&c.page.to_le_bytes());
                    put_varint(out, c.count);
                }
            }
        }
    }

    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::new();
        self.encode_into(&mut out);
        debug_assert_eq!(out.len(), self.encoded_len());
        out
    }

    pub fn decode(bytes: &[u8]) -> Result<Page, Error> {
        let mut r = Reader(bytes);
        let page = r.page()?;
        if !r.0.is_empty() {
            return Err(damaged());
        }
        Ok(page)
    }

    /// Splits an oversized page into pieces of about `target` bytes each
    /// (a single entry larger than that is a piece of its own). The first
    /// piece stays in `self`; the rest are returned in order.
    pub fn split(&mut self, target: usize) -> Vec<Page> {
        match self {
            Page::Leaf(entries) => {
                let sizes: Vec<usize> =
                    entries.iter().map(|(k, v)| k.len() + v.len() + 4).collect();
                let cuts = cut_points(&sizes, target);
                split_at(entries, &cuts)
                    .into_iter()
                    .map(Page::Leaf)
                    .collect()
            }
            Page::Node { level, children } => {
                let sizes: Vec<usize> = children.iter().map(|c| c.key.len() + 14).collect();
                let cuts = cut_points(&sizes, target);
                let level = *level;
                split_at(children, &cuts)
                    .into_iter()
                    .map(|children| Page::Node { level, children })
                    .collect()
            }
        }
    }

    /// Appends `right`'s entries (a page of the same level, next in order).
    pub fn absorb(&mut self, right: Page) {
        match (self, right) {
            (Page::Leaf(a), Page::Leaf(b)) => a.extend(b),
            (Page::Node { children: a, .. }, Page::Node { children: b, .. }) => a.extend(b),
            _ => debug_assert!(false, "pages of one level are of one kind"),
        }
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

/// Splits `items` at `cuts`: the first piece stays, the others are
/// returned.
fn split_at<T>(items: &mut Vec<T>, cuts: &[usize]) -> Vec<Vec<T>> {
    let mut pieces = Vec::with_capacity(cuts.len());
    for &cut in cuts.iter().rev() {
        pieces.push(items.split_off(cut));
    }
    pieces.reverse();
    pieces
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
    put_varint(out, b.len() as u64);
    out.extend_from_slice(b);
}

/// Reads pages, varints and length-prefixed bytes, never past the end.
pub struct Reader<'a>(pub &'a [u8]);

impl<'a> Reader<'a> {
    pub fn varint(&mut self) -> Result<u64, Error> {
        let mut n: u64 = 0;
        for i in 0..10 {
            let (&b, rest) = self.0.split_first().ok_or_else(damaged)?;
            self.0 = rest;
            n |= u64::from(b & 0x7F) << (7 * i);
            if b & 0x80 == 0 {
                return Ok(n);
            }
        }
        Err(damaged())
    }

    pub fn take(&mut self, n: usize) -> Result<&'a [u8], Error> {
        if n > self.0.len() {
            return Err(damaged());
        }
        let (head, rest) = self.0.split_at(n);
        self.0 = rest;
        Ok(head)
    }

    pub fn bytes(&mut self) -> Result<&'a [u8], Error> {
        let n = self.varint()?;
        self.take(usize::try_from(n).map_err(|_| damaged())?)
    }

    pub fn u64(&mut self) -> Result<u64, Error> {
        let b = self.take(8)?;
        Ok(u64::from_le_bytes(b.try_into().expect("8 bytes")))
    }

    pub fn page(&mut self) -> Result<Page, Error> {
        let level = *self.take(1)?.first().expect("1 byte");
        let n = self.varint()?;
        // Every entry takes at least two bytes: a larger count is damage.
        if n > self.0.len() as u64 / 2 {
            return Err(damaged());
        }
        if level == 0 {
            let mut entries = Vec::with_capacity(n as usize);
            for _ in 0..n {
                let k = self.bytes()?.to_vec();
                let v = self.bytes()?.to_vec();
                entries.push((k, v));
            }
            return Ok(Page::Leaf(entries));
        }
        let mut children = Vec::with_capacity(n as usize);
        for _ in 0..n {
            let key = self.bytes()?.to_vec();
            let page = self.u64()?;
            let count = self.varint()?;
            children.push(Child { key, page, count });
        }
        Ok(Page::Node { level, children })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pages_round_trip_and_their_length_is_exact() {
        let leaf = Page::Leaf(vec![(b"a".to_vec(), b"1".to_vec()), (vec![], vec![7; 300])]);
        let node = Page::Node {
            level: 2,
            children: vec![
                Child {
                    key: vec![],
                    page: 3,
                    count: 1 << 40,
                },
                Child {
                    key: b"m".to_vec(),
                    page: u64::MAX,
                    count: 5,
                },
            ],
        };
        for p in [leaf, node, Page::empty()] {
            let bytes = p.encode();
            assert_eq!(bytes.len(), p.encoded_len());
            assert_eq!(Page::decode(&bytes).unwrap(), p);
        }
    }

    #[test]
    fn damaged_pages_are_refused_not_indexed() {
        let bytes = Page::Leaf(vec![(b"key".to_vec(), b"value".to_vec())]).encode();
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
        let mut p = Page::Leaf(entries.clone());
        let rest = p.split(1000);
        assert!(!rest.is_empty());
        let mut all = vec![p.clone()];
        all.extend(rest);
        let mut joined = Vec::new();
        for piece in &all {
            assert!(piece.encoded_len() <= 1100, "{}", piece.encoded_len());
            let Page::Leaf(e) = piece else { panic!() };
            joined.extend(e.clone());
        }
        assert_eq!(joined, entries);
    }

    #[test]
    fn one_large_entry_is_a_piece_of_its_own() {
        let mut p = Page::Leaf(vec![
            (b"a".to_vec(), vec![0; 10]),
            (b"b".to_vec(), vec![0; 5000]),
            (b"c".to_vec(), vec![0; 10]),
        ]);
        let rest = p.split(1000);
        assert_eq!(p.width() + rest.iter().map(Page::width).sum::<usize>(), 3);
        assert!(!rest.is_empty());
    }
}
