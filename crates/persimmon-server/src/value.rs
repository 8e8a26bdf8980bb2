//! How the server stores Redis values in the pool: one engine value per key,
//! a one-byte type tag followed by the body.
//!
//! | tag | type | body |
//! |---|---|---|
//! | `0x01` | string | the string's bytes |
//! | `0x02` | hash | `count: u32 LE`, then `count` times `field_len: u32 LE, field, value_len: u32 LE, value` (insertion order, fields unique) |
//! | `0x03` | sorted set | `count: u32 LE`, then `count` times `score: f64 LE, member_len: u32 LE, member`, sorted by (score, member), members unique, no NaN |
//!
//! A value whose first byte is neither tag (or an empty value) was written
//! outside the server (`persimmon put`, `persimmon load`, the Rust API) and is
//! served as a string made of the whole value, so plain text loaded through
//! the CLI reads back unchanged. (A foreign value starting with byte 0x01,
//! 0x02 or 0x03 is read through the tag; the server itself always writes a
//! tag.)
//!
//! A hash or sorted set is rewritten whole by every command that changes
//! it: fine for small ones (a YCSB record, YCSB's `_indices` set at its
//! default 1000 records), O(size) per write for large ones.
//!
//! Invariants: the server writes a value only through [`string`] and
//! [`HashBuilder`]; a body is never longer than [`MAX_STRING_BYTES`] (the
//! engine's 64 MiB value limit less the tag). Decoding never trusts the
//! lengths inside a stored hash: a body that does not parse exactly is
//! reported as damaged, never indexed out of bounds.

pub const TAG_STRING: u8 = 0x01;
pub const TAG_HASH: u8 = 0x02;
pub const TAG_ZSET: u8 = 0x03;

/// Longest string (or encoded hash body) the server can store.
pub const MAX_STRING_BYTES: usize = persimmon::MAX_VALUE_BYTES - 1;

/// A stored value, decoded just enough to know its type.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stored<'a> {
    String(&'a [u8]),
    Hash(&'a [u8]),
    ZSet(&'a [u8]),
}

impl<'a> Stored<'a> {
    pub fn decode(value: &'a [u8]) -> Stored<'a> {
        match value.split_first() {
            Some((&TAG_STRING, body)) => Stored::String(body),
            Some((&TAG_HASH, body)) => Stored::Hash(body),
            Some((&TAG_ZSET, body)) => Stored::ZSet(body),
            _ => Stored::String(value),
        }
    }

    /// The stored form again: the type tag and the body (a foreign value
    /// comes back as a tagged string).
    pub fn encode(&self) -> Vec<u8> {
        let (tag, body) = match *self {
            Stored::String(b) => (TAG_STRING, b),
            Stored::Hash(b) => (TAG_HASH, b),
            Stored::ZSet(b) => (TAG_ZSET, b),
        };
        let mut out = Vec::with_capacity(body.len() + 1);
        out.push(tag);
        out.extend_from_slice(body);
        out
    }

    /// The name `TYPE` replies.
    pub fn type_name(&self) -> &'static str {
        match self {
            Stored::String(_) => "string",
            Stored::Hash(_) => "hash",
            Stored::ZSet(_) => "zset",
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

/// A hash being edited: the stored fields plus changes, encoded back with
/// [`encode`](Self::encode). Lookups use a linear scan for small hashes and
/// an index once the hash grows (a YCSB record has 10 fields).
pub struct HashBuilder<'a> {
    /// Fields in order; `None` where a field was removed.
    fields: Vec<Option<(&'a [u8], &'a [u8])>>,
    index: Option<std::collections::HashMap<&'a [u8], usize>>,
    live: usize,
}

const INDEX_FROM_FIELDS: usize = 32;

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
pub fn zset_order(a: &(f64, &[u8]), b: &(f64, &[u8])) -> std::cmp::Ordering {
    a.0.total_cmp(&b.0).then_with(|| a.1.cmp(b.1))
}

/// Bytes `entries` take encoded (tag included).
pub fn zset_encoded_len(entries: &[(f64, &[u8])]) -> usize {
    1 + 4 + entries.iter().map(|(_, m)| 12 + m.len()).sum::<usize>()
}

/// Encodes sorted entries (sorted by [`zset_order`], unique members).
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
    fn damaged_hash_bodies_are_reported() {
        assert_eq!(hash_fields(b""), Err(DamagedHash));
        assert_eq!(hash_fields(&[1, 0, 0, 0, 9, 0, 0, 0]), Err(DamagedHash));
        assert_eq!(hash_fields(&[255, 255, 255, 255]), Err(DamagedHash));
        assert_eq!(hash_fields(&[0, 0, 0, 0, 0]), Err(DamagedHash));
        assert_eq!(hash_fields(&[0, 0, 0, 0]).unwrap(), vec![]);
    }
}
