//! How the server stores Redis values in the pool: one engine value per key,
//! a one-byte type tag followed by the body.
//!
//! | tag | type | body |
//! |---|---|---|
//! | `0x01` | string | the string's bytes |
//! | `0x02` | hash | `count: u32 LE`, then `count` times `field_len: u32 LE, field, value_len: u32 LE, value` (insertion order, fields unique) |
//! | `0x03` | sorted set | `count: u32 LE`, then `count` times `score: f64 LE, member_len: u32 LE, member`, sorted by (score, member), members unique, no NaN |
//! | `0x04` | list | `count: u32 LE`, then `count` times `len: u32 LE, element`, head first |
//! | `0x05` | set | `count: u32 LE`, then `count` times `len: u32 LE, member` (members unique, in no promised order) |
//!
//! A value whose first byte is none of these tags (or an empty value) was
//! written outside the server (`persimmon put`, `persimmon load`, the Rust
//! API) and is served as a string made of the whole value, so plain text
//! loaded through the CLI reads back unchanged. (A foreign value starting
//! with a byte from 0x01 to 0x05 is read through the tag; the server itself
//! always writes a tag.)
//!
//! Tags `0x02` to `0x05` are the whole-value encodings of earlier
//! versions, rewritten whole by every write: the server reads them (and
//! `coll` converts them on first access) but no longer writes them; their
//! writers here serve the tests that make such values. Collections are
//! written as `coll` meta records:
//!
//! | tag | type | body (see `coll/mod.rs`) |
//! |---|---|---|
//! | `0x06` | hash | collection meta |
//! | `0x07` | sorted set | collection meta |
//! | `0x08` | list | collection meta |
//! | `0x09` | set | collection meta |
//! | `0x0A` | stream | collection meta (four trees, see `stream/`) |
//!
//! Invariants: the server writes a string only through [`string`] and a
//! collection only through `coll`; a body is never longer than
//! [`MAX_STRING_BYTES`] (the engine's 64 MiB value limit less the tag).
//! Decoding never trusts the lengths inside a stored body: one that does
//! not parse exactly is reported as damaged, never indexed out of bounds.

pub const TAG_STRING: u8 = 0x01;
pub const TAG_HASH: u8 = 0x02;
pub const TAG_ZSET: u8 = 0x03;
pub const TAG_LIST: u8 = 0x04;
pub const TAG_SET: u8 = 0x05;
pub const TAG_COLL_HASH: u8 = 0x06;
pub const TAG_COLL_ZSET: u8 = 0x07;
pub const TAG_COLL_LIST: u8 = 0x08;
pub const TAG_COLL_SET: u8 = 0x09;
pub const TAG_COLL_STREAM: u8 = 0x0A;

/// The five collection types, stored as a meta record and pages
/// (`coll`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Hash,
    ZSet,
    List,
    Set,
    Stream,
}

impl Kind {
    pub fn tag(self) -> u8 {
        match self {
            Kind::Hash => TAG_COLL_HASH,
            Kind::ZSet => TAG_COLL_ZSET,
            Kind::List => TAG_COLL_LIST,
            Kind::Set => TAG_COLL_SET,
            Kind::Stream => TAG_COLL_STREAM,
        }
    }

    pub fn type_name(self) -> &'static str {
        match self {
            Kind::Hash => "hash",
            Kind::ZSet => "zset",
            Kind::List => "list",
            Kind::Set => "set",
            Kind::Stream => "stream",
        }
    }
}

/// Longest string (or encoded hash, sorted set, list or set body) the
/// server can store.
pub const MAX_STRING_BYTES: usize = persimmon::MAX_VALUE_BYTES - 1;

/// A stored value, decoded just enough to know its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    String(&'a [u8]),
    Hash(&'a [u8]),
    ZSet(&'a [u8]),
    List(&'a [u8]),
    Set(&'a [u8]),
    /// A collection's meta record (`coll`): its kind and the body after
    /// the tag.
    Coll(Kind, &'a [u8]),
}

impl<'a> Stored<'a> {
    pub fn decode(value: &'a [u8]) -> Stored<'a> {
        match value.split_first() {
            Some((&TAG_STRING, body)) => Stored::String(body),
            Some((&TAG_HASH, body)) => Stored::Hash(body),
            Some((&TAG_ZSET, body)) => Stored::ZSet(body),
            Some((&TAG_LIST, body)) => Stored::List(body),
            Some((&TAG_SET, body)) => Stored::Set(body),
            Some((&TAG_COLL_HASH, body)) => Stored::Coll(Kind::Hash, body),
            Some((&TAG_COLL_ZSET, body)) => Stored::Coll(Kind::ZSet, body),
            Some((&TAG_COLL_LIST, body)) => Stored::Coll(Kind::List, body),
            Some((&TAG_COLL_SET, body)) => Stored::Coll(Kind::Set, body),
            Some((&TAG_COLL_STREAM, body)) => Stored::Coll(Kind::Stream, body),
            _ => Stored::String(value),
        }
    }

    /// The stored form again: the type tag and the body (a foreign value
    /// comes back as a tagged string).
    pub fn encode(&self) -> Vec<u8> {
        let (tag, body) = self.tagged();
        let mut out = Vec::with_capacity(body.len() + 1);
        out.push(tag);
        out.extend_from_slice(body);
        out
    }

    /// The length of [`encode`](Self::encode)'s bytes, without them.
    pub fn encoded_len(&self) -> usize {
        self.tagged().1.len() + 1
    }

    fn tagged(&self) -> (u8, &'a [u8]) {
        match *self {
            Stored::String(b) => (TAG_STRING, b),
            Stored::Hash(b) => (TAG_HASH, b),
            Stored::ZSet(b) => (TAG_ZSET, b),
            Stored::List(b) => (TAG_LIST, b),
            Stored::Set(b) => (TAG_SET, b),
            Stored::Coll(k, b) => (k.tag(), b),
        }
    }

    /// The name `TYPE` replies.
    pub fn type_name(&self) -> &'static str {
        match self {
            Stored::String(_) => "string",
            Stored::Hash(_) => "hash",
            Stored::ZSet(_) => "zset",
            Stored::List(_) => "list",
            Stored::Set(_) => "set",
            Stored::Coll(k, _) => k.type_name(),
        }
    }
}

/// Encodes a string value into `out` (cleared first).
pub fn string_into(body: &[u8], out: &mut Vec<u8>) {
    out.clear();
    out.reserve(body.len() + 1);
    out.push(TAG_STRING);
    out.extend_from_slice(body);
}

/// Encodes a string value.
pub fn string(body: &[u8]) -> Vec<u8> {
    let mut out = Vec::new();
    string_into(body, &mut out);
    out
}

/// A stored hash body that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedHash;

/// A hash's fields as (field, value) pairs, in stored order.
pub type Fields<'a> = Vec<(&'a [u8], &'a [u8])>;

/// The fields of a stored hash body, in stored order.
pub fn hash_fields(body: &[u8]) -> Result<Fields<'_>, DamagedHash> {
    let mut reader = Reader(body);
    let count = reader.u32()? as usize;
    // Each field takes at least 8 bytes: a count larger than that is damage.
    if count > body.len() / 8 {
        return Err(DamagedHash);
    }
    let mut fields = Vec::with_capacity(count);
    for _ in 0..count {
        let field = reader.bytes()?;
        let value = reader.bytes()?;
        fields.push((field, value));
    }
    if !reader.0.is_empty() {
        return Err(DamagedHash);
    }
    Ok(fields)
}

/// Number of fields of a stored hash body (checked like [`hash_fields`]).
#[cfg(test)]
pub fn hash_len(body: &[u8]) -> Result<usize, DamagedHash> {
    hash_fields(body).map(|f| f.len())
}

struct Reader<'a>(&'a [u8]);

impl<'a> Reader<'a> {
    fn u32(&mut self) -> Result<u32, DamagedHash> {
        let (head, rest) = self.0.split_first_chunk::<4>().ok_or(DamagedHash)?;
        self.0 = rest;
        Ok(u32::from_le_bytes(*head))
    }

    fn bytes(&mut self) -> Result<&'a [u8], DamagedHash> {
        let len = self.u32()? as usize;
        if len > self.0.len() {
            return Err(DamagedHash);
        }
        let (data, rest) = self.0.split_at(len);
        self.0 = rest;
        Ok(data)
    }
}

#[cfg(test)]
/// A hash being edited: the stored fields plus changes, encoded back with
/// [`encode`](Self::encode). Lookups use a linear scan for small hashes and
/// an index once the hash grows (a YCSB record has 10 fields).
pub struct HashBuilder<'a> {
    /// Fields in order; `None` where a field was removed.
    fields: Vec<Option<(&'a [u8], &'a [u8])>>,
    index: Option<std::collections::HashMap<&'a [u8], usize>>,
    live: usize,
}

#[cfg(test)]
const INDEX_FROM_FIELDS: usize = 32;

#[cfg(test)]
impl<'a> HashBuilder<'a> {
    pub fn new(fields: Vec<(&'a [u8], &'a [u8])>) -> HashBuilder<'a> {
        let live = fields.len();
        let mut b = HashBuilder {
            fields: fields.into_iter().map(Some).collect(),
            index: None,
            live,
        };
        b.maybe_index();
        b
    }

    fn maybe_index(&mut self) {
        if self.index.is_none() && self.fields.len() >= INDEX_FROM_FIELDS {
            let index = self
                .fields
                .iter()
                .enumerate()
                .filter_map(|(i, e)| e.map(|(f, _)| (f, i)))
                .collect();
            self.index = Some(index);
        }
    }

    fn position(&self, field: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(field).copied(),
            None => self
                .fields
                .iter()
                .position(|e| e.is_some_and(|(f, _)| f == field)),
        }
    }

    /// Sets `field`; returns whether it is new.
    pub fn set(&mut self, field: &'a [u8], value: &'a [u8]) -> bool {
        match self.position(field) {
            Some(i) => {
                self.fields[i] = Some((field, value));
                false
            }
            None => {
                if let Some(index) = &mut self.index {
                    index.insert(field, self.fields.len());
                }
                self.fields.push(Some((field, value)));
                self.live += 1;
                self.maybe_index();
                true
            }
        }
    }

    pub fn get(&self, field: &[u8]) -> Option<&'a [u8]> {
        self.position(field)
            .and_then(|i| self.fields[i].map(|(_, v)| v))
    }

    /// Removes `field`; returns whether it was there.
    pub fn remove(&mut self, field: &[u8]) -> bool {
        match self.position(field) {
            Some(i) => {
                if let Some(index) = &mut self.index {
                    index.remove(field);
                }
                self.fields[i] = None;
                self.live -= 1;
                true
            }
            None => false,
        }
    }

    /// Number of fields.
    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.live
    }

    #[cfg(test)]
    pub fn is_empty(&self) -> bool {
        self.live == 0
    }

    /// Bytes the encoded value (tag included) takes.
    pub fn encoded_len(&self) -> usize {
        1 + 4
            + self
                .fields
                .iter()
                .flatten()
                .map(|(f, v)| 8 + f.len() + v.len())
                .sum::<usize>()
    }

    /// The stored value: tag, count, fields.
    pub fn encode(&self) -> Vec<u8> {
        let mut out = Vec::with_capacity(self.encoded_len());
        out.push(TAG_HASH);
        out.extend_from_slice(&(self.live as u32).to_le_bytes());
        for (f, v) in self.fields.iter().flatten() {
            out.extend_from_slice(&(f.len() as u32).to_le_bytes());
            out.extend_from_slice(f);
            out.extend_from_slice(&(v.len() as u32).to_le_bytes());
            out.extend_from_slice(v);
        }
        out
    }
}

/// A stored sorted-set body that does not parse.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedZSet;

/// A sorted set's (score, member) entries, in stored (sorted) order.
pub type Entries<'a> = Vec<(f64, &'a [u8])>;

/// The entries of a stored sorted-set body.
pub fn zset_entries(body: &[u8]) -> Result<Entries<'_>, DamagedZSet> {
    let mut reader = Reader(body);
    let count = reader.u32().map_err(|_| DamagedZSet)? as usize;
    // Each entry takes at least 12 bytes.
    if count > body.len() / 12 {
        return Err(DamagedZSet);
    }
    let mut entries = Vec::with_capacity(count);
    for _ in 0..count {
        let (score, rest) = reader.0.split_first_chunk::<8>().ok_or(DamagedZSet)?;
        reader.0 = rest;
        let score = f64::from_le_bytes(*score);
        if score.is_nan() {
            return Err(DamagedZSet);
        }
        let member = reader.bytes().map_err(|_| DamagedZSet)?;
        entries.push((score, member));
    }
    if !reader.0.is_empty() {
        return Err(DamagedZSet);
    }
    Ok(entries)
}

/// Orders sorted-set entries as Redis does: by score, then member bytes.
#[cfg(test)]
pub fn zset_order(a: &(f64, &[u8]), b: &(f64, &[u8])) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1))
}

/// Bytes `entries` take encoded (tag included).
#[cfg(test)]
pub fn zset_encoded_len(entries: &[(f64, &[u8])]) -> usize {
    1 + 4 + entries.iter().map(|(_, m)| 12 + m.len()).sum::<usize>()
}

/// Encodes sorted entries (sorted by [`zset_order`], unique members).
#[cfg(test)]
pub fn zset_encode(entries: &[(f64, &[u8])]) -> Vec<u8> {
    debug_assert!(entries.windows(2).all(|w| zset_order(&w[0], &w[1]).is_lt()));
    let mut out = Vec::with_capacity(zset_encoded_len(entries));
    out.push(TAG_ZSET);
    out.extend_from_slice(&(entries.len() as u32).to_le_bytes());
    for (score, member) in entries {
        out.extend_from_slice(&score.to_le_bytes());
        out.extend_from_slice(&(member.len() as u32).to_le_bytes());
        out.extend_from_slice(member);
    }
    out
}

/// A stored list or set body that does not parse (or a set body with a
/// member twice).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct DamagedItems;

/// The elements of a stored list body, head first (or the members of a
/// stored set body, unchecked for repeats: see [`SetBuilder::open`]). A
/// count of 0 is damage too: the server deletes a list or set with its last
/// item, so every stored one has at least one.
pub fn items(body: &[u8]) -> Result<Vec<&[u8]>, DamagedItems> {
    let mut reader = Reader(body);
    let count = reader.u32().map_err(|_| DamagedItems)? as usize;
    // Each item takes at least 4 bytes: a count larger than that is damage.
    if count == 0 || count > body.len() / 4 {
        return Err(DamagedItems);
    }
    let mut items = Vec::with_capacity(count);
    for _ in 0..count {
        items.push(reader.bytes().map_err(|_| DamagedItems)?);
    }
    if !reader.0.is_empty() {
        return Err(DamagedItems);
    }
    Ok(items)
}

#[cfg(test)]
/// Bytes `items` take encoded as a list or a set (tag included).
pub fn items_encoded_len(items: &[&[u8]]) -> usize {
    1 + 4 + items.iter().map(|i| 4 + i.len()).sum::<usize>()
}

#[cfg(test)]
fn items_encode(tag: u8, items: &[&[u8]]) -> Vec<u8> {
    let mut out = Vec::with_capacity(items_encoded_len(items));
    out.push(tag);
    out.extend_from_slice(&(items.len() as u32).to_le_bytes());
    for item in items {
        out.extend_from_slice(&(item.len() as u32).to_le_bytes());
        out.extend_from_slice(item);
    }
    out
}

/// Encodes a list, head first (the caller checked
/// [`items_encoded_len`] against the limit).
#[cfg(test)]
pub fn list_encode(elements: &[&[u8]]) -> Vec<u8> {
    items_encode(TAG_LIST, elements)
}

/// A set being read or edited (never empty when read from a stored body):
/// its members in a vector (so a random member
/// is one index away), plus an index of them once the set grows. Removing a
/// member moves the last one into its place, so the stored order is
/// insertion order only until the first removal.
#[cfg(test)]
pub struct SetBuilder<'a> {
    members: Vec<&'a [u8]>,
    index: Option<std::collections::HashMap<&'a [u8], usize>>,
}

#[cfg(test)]
const INDEX_FROM_MEMBERS: usize = 32;

#[cfg(test)]
impl<'a> SetBuilder<'a> {
    /// An empty set.
    pub fn new() -> SetBuilder<'a> {
        SetBuilder {
            members: Vec::new(),
            index: None,
        }
    }

    /// The set of a stored body; damaged if it does not parse or holds a
    /// member twice.
    pub fn open(body: &'a [u8]) -> Result<SetBuilder<'a>, DamagedItems> {
        let members = items(body)?;
        let mut set = SetBuilder::new();
        set.members.reserve(members.len());
        for m in members {
            if !set.add(m) {
                return Err(DamagedItems);
            }
        }
        Ok(set)
    }

    fn maybe_index(&mut self) {
        if self.index.is_none() && self.members.len() >= INDEX_FROM_MEMBERS {
            let index = self
                .members
                .iter()
                .enumerate()
                .map(|(i, m)| (*m, i))
                .collect();
            self.index = Some(index);
        }
    }

    fn position(&self, member: &[u8]) -> Option<usize> {
        match &self.index {
            Some(index) => index.get(member).copied(),
            None => self.members.iter().position(|m| *m == member),
        }
    }

    pub fn contains(&self, member: &[u8]) -> bool {
        self.position(member).is_some()
    }

    /// Adds `member`; returns whether it is new.
    pub fn add(&mut self, member: &'a [u8]) -> bool {
        if self.contains(member) {
            return false;
        }
        if let Some(index) = &mut self.index {
            index.insert(member, self.members.len());
        }
        self.members.push(member);
        self.maybe_index();
        true
    }

    /// Removes `member`; returns whether it was there.
    pub fn remove(&mut self, member: &[u8]) -> bool {
        match self.position(member) {
            Some(i) => {
                self.remove_at(i);
                true
            }
            None => false,
        }
    }

    /// Removes and returns the member at `i` (< `len`); the last member
    /// takes its place.
    pub fn remove_at(&mut self, i: usize) -> &'a [u8] {
        let member = self.members.swap_remove(i);
        if let Some(index) = &mut self.index {
            index.remove(member);
            if let Some(moved) = self.members.get(i) {
                index.insert(moved, i);
            }
        }
        member
    }

    pub fn members(&self) -> &[&'a [u8]] {
        &self.members
    }

    /// Bytes the encoded value (tag included) takes.
    pub fn encoded_len(&self) -> usize {
        items_encoded_len(&self.members)
    }

    /// The stored value: tag, count, members.
    pub fn encode(&self) -> Vec<u8> {
        items_encode(TAG_SET, &self.members)
    }
}

#[cfg(test)]
impl Default for SetBuilder<'_> {
    fn default() -> Self {
        SetBuilder::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn strings_and_foreign_values_decode() {
        assert_eq!(Stored::decode(&string(b"abc")), Stored::String(b"abc"));
        assert_eq!(Stored::decode(&string(b"")), Stored::String(b""));
        assert_eq!(Stored::decode(b"plain"), Stored::String(b"plain"));
        assert_eq!(Stored::decode(b""), Stored::String(b""));
    }

    #[test]
    fn hash_round_trip_with_set_and_remove() {
        let mut b = HashBuilder::new(Vec::new());
        assert!(b.set(b"f1", b"v1"));
        assert!(b.set(b"", b"empty field"));
        assert!(!b.set(b"f1", b"v1b"));
        assert!(b.set(b"f2", b""));
        assert!(b.remove(b"f2"));
        assert!(!b.remove(b"f2"));
        let enc = b.encode();
        assert_eq!(enc.len(), b.encoded_len());
        let Stored::Hash(body) = Stored::decode(&enc) else {
            panic!("not a hash")
        };
        assert_eq!(
            hash_fields(body).unwrap(),
            vec![(&b"f1"[..], &b"v1b"[..]), (&b""[..], &b"empty field"[..])]
        );
    }

    #[test]
    fn large_hashes_use_the_index_consistently() {
        let names: Vec<Vec<u8>> = (0..100).map(|i| format!("field{i}").into_bytes()).collect();
        let mut b = HashBuilder::new(Vec::new());
        for n in &names {
            assert!(b.set(n, n));
        }
        for n in names.iter().step_by(3) {
            assert!(b.remove(n));
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(b.get(n).is_some(), i % 3 != 0);
        }
        let enc = b.encode();
        assert_eq!(hash_len(&enc[1..]).unwrap(), b.len());
    }

    #[test]
    fn zset_round_trip_and_damage() {
        let mut entries = vec![(2.0, &b"b"[..]), (1.0, &b"z"[..]), (1.0, &b"a"[..])];
        entries.sort_by(zset_order);
        let enc = zset_encode(&entries);
        assert_eq!(enc.len(), zset_encoded_len(&entries));
        let Stored::ZSet(body) = Stored::decode(&enc) else {
            panic!("not a zset")
        };
        assert_eq!(
            zset_entries(body).unwrap(),
            vec![(1.0, &b"a"[..]), (1.0, &b"z"[..]), (2.0, &b"b"[..])]
        );
        assert_eq!(zset_entries(&body[..body.len() - 1]), Err(DamagedZSet));
        let mut nan = enc.clone();
        nan[5..13].copy_from_slice(&f64::NAN.to_le_bytes());
        assert_eq!(zset_entries(&nan[1..]), Err(DamagedZSet));
    }

    #[test]
    fn list_round_trip_and_damage() {
        let elements: Vec<&[u8]> = vec![b"a", b"", b"a", b"long element"];
        let enc = list_encode(&elements);
        assert_eq!(enc.len(), items_encoded_len(&elements));
        let Stored::List(body) = Stored::decode(&enc) else {
            panic!("not a list")
        };
        assert_eq!(Stored::decode(&enc).type_name(), "list");
        assert_eq!(Stored::decode(&enc).encode(), enc);
        assert_eq!(items(body).unwrap(), elements);
        assert_eq!(items(&body[..body.len() - 1]), Err(DamagedItems));
        assert_eq!(items(b""), Err(DamagedItems));
        assert_eq!(items(&[255, 255, 255, 255]), Err(DamagedItems));
        assert_eq!(items(&[1, 0, 0, 0, 9, 0, 0, 0]), Err(DamagedItems));
        assert_eq!(items(&[0, 0, 0, 0, 0]), Err(DamagedItems));
        assert_eq!(items(&[0, 0, 0, 0]), Err(DamagedItems));
        assert_eq!(items(&[1, 0, 0, 0, 0, 0, 0, 0]).unwrap(), vec![&b""[..]]);
    }

    #[test]
    fn sets_keep_members_unique_small_and_large() {
        let names: Vec<Vec<u8>> = (0..100).map(|i| format!("m{i}").into_bytes()).collect();
        let mut set = SetBuilder::new();
        for n in &names {
            assert!(set.add(n));
            assert!(!set.add(n));
        }
        for n in names.iter().step_by(3) {
            assert!(set.remove(n));
            assert!(!set.remove(n));
        }
        for (i, n) in names.iter().enumerate() {
            assert_eq!(set.contains(n), i % 3 != 0, "{i}");
        }
        let taken = set.remove_at(0);
        assert!(!set.contains(taken));
        let enc = set.encode();
        assert_eq!(enc.len(), set.encoded_len());
        let Stored::Set(body) = Stored::decode(&enc) else {
            panic!("not a set")
        };
        assert_eq!(Stored::decode(&enc).type_name(), "set");
        let again = SetBuilder::open(body).unwrap();
        assert_eq!(again.members(), set.members());
        assert!(again.members().iter().all(|m| again.contains(m)));
        // A member stored twice is damage.
        let twice = items_encode(TAG_SET, &[b"x", b"y", b"x"]);
        assert_eq!(SetBuilder::open(&twice[1..]).err(), Some(DamagedItems));
    }

    #[test]
    fn damaged_hash_bodies_are_reported() {
        assert_eq!(hash_fields(b""), Err(DamagedHash));
        assert_eq!(hash_fields(&[1, 0, 0, 0, 9, 0, 0, 0]), Err(DamagedHash));
        assert_eq!(hash_fields(&[255, 255, 255, 255]), Err(DamagedHash));
        assert_eq!(hash_fields(&[0, 0, 0, 0, 0]), Err(DamagedHash));
        assert_eq!(hash_fields(&[0, 0, 0, 0]).unwrap(), vec![]);
    }
}
