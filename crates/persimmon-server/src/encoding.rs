//! The internal encoding Redis would give a value, as `OBJECT ENCODING`
//! and `OBJECT REFCOUNT` report it, and the thresholds that decide it.
//!
//! This is reporting only: Persimmon stores every value its own way
//! (`value.rs`: one tagged engine value per key) whatever the thresholds
//! say. The report follows Redis 7.0's rules applied to the value as it is
//! now, so clients and tests that check an encoding see what Redis would
//! show for the same contents:
//! - a string is `int` when it is an integer that fits a `long` in Redis's
//!   strict form (`string2l`: no sign but `-`, no leading zero, no blank),
//!   else `embstr` up to 44 bytes, else `raw`;
//! - a hash is `listpack` while it has at most `hash-max-listpack-entries`
//!   fields and every field and value is at most `hash-max-listpack-value`
//!   bytes, else `hashtable`;
//! - a sorted set is `listpack` under `zset-max-listpack-entries` and
//!   `zset-max-listpack-value` (members), else `skiplist`;
//! - a list is `quicklist` (Redis 7.0 stores every list so);
//! - a set is `intset` while it has at most `set-max-intset-entries`
//!   members and every one is an integer (`string2ll`), else `hashtable`.
//!
//! Where Redis's encoding depends on history rather than contents (a
//! string made by `APPEND` is `raw` however short; a hash that outgrew the
//! listpack stays a hash table after shrinking) the report follows the
//! contents.
//!
//! Invariants: the thresholds live here and only here ([`Encodings`], one
//! per server in `Shared`); `CONFIG SET` changes them through
//! [`Encodings::named`], and every report reads them afresh. They are
//! relaxed atomics: a report racing a `CONFIG SET` may use either value.

use std::sync::atomic::{AtomicU64, Ordering};

use crate::protocol::parse_i64;
use crate::value::{hash_fields, items, zset_entries, Stored};

/// Longest string Redis keeps in one allocation with its header.
const EMBSTR_MAX_BYTES: usize = 44;
/// Redis shares the integers `0..SHARED_INTEGERS` between keys.
const SHARED_INTEGERS: i64 = 10_000;
/// The reference count Redis reports for a shared object.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// The thresholds under which Redis keeps a small hash or sorted set as a
/// listpack (Redis 7.0's defaults: 128 entries, 64 bytes) and a small set
/// of integers as an intset (512 members).
pub struct Encodings {
    pub hash_max_listpack_entries: AtomicU64,
    pub hash_max_listpack_value: AtomicU64,
    pub zset_max_listpack_entries: AtomicU64,
    pub zset_max_listpack_value: AtomicU64,
    pub set_max_intset_entries: AtomicU64,
}

impl Default for Encodings {
    fn default() -> Encodings {
        Encodings {
            hash_max_listpack_entries: AtomicU64::new(128),
            hash_max_listpack_value: AtomicU64::new(64),
            zset_max_listpack_entries: AtomicU64::new(128),
            zset_max_listpack_value: AtomicU64::new(64),
            set_max_intset_entries: AtomicU64::new(512),
        }
    }
}

/// A stored hash or sorted set that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damaged;

impl Encodings {
    /// The threshold a configuration parameter names (any case), Redis 7.0's
    /// older `ziplist` names included.
    #[allow(dead_code)] // until CONFIG SET (another branch) calls it
    pub fn named(&self, name: &str) -> Option<&AtomicU64> {
        Some(match name.to_ascii_lowercase().as_str() {
            "hash-max-listpack-entries" | "hash-max-ziplist-entries" => {
                &self.hash_max_listpack_entries
            }
            "hash-max-listpack-value" | "hash-max-ziplist-value" => &self.hash_max_listpack_value,
            "zset-max-listpack-entries" | "zset-max-ziplist-entries" => {
                &self.zset_max_listpack_entries
            }
            "zset-max-listpack-value" | "zset-max-ziplist-value" => &self.zset_max_listpack_value,
            "set-max-intset-entries" => &self.set_max_intset_entries,
            _ => return None,
        })
    }

    /// The encoding Redis would report for `value`.
    pub fn encoding(&self, value: Stored<'_>) -> Result<&'static str, Damaged> {
        let load = |a: &AtomicU64| a.load(Ordering::Relaxed);
        Ok(match value {
            Stored::String(s) => string_encoding(s),
            Stored::Hash(body) => {
                let fields = hash_fields(body).map_err(|_| Damaged)?;
                let (entries, max) = (
                    load(&self.hash_max_listpack_entries),
                    load(&self.hash_max_listpack_value),
                );
                let small = fields.len() as u64 <= entries
                    && fields
                        .iter()
                        .all(|(f, v)| f.len() as u64 <= max && v.len() as u64 <= max);
                if small {
                    "listpack"
                } else {
                    "hashtable"
                }
            }
            Stored::ZSet(body) => {
                let members = zset_entries(body).map_err(|_| Damaged)?;
                let (entries, max) = (
                    load(&self.zset_max_listpack_entries),
                    load(&self.zset_max_listpack_value),
                );
                let small = members.len() as u64 <= entries
                    && members.iter().all(|(_, m)| m.len() as u64 <= max);
                if small {
                    "listpack"
                } else {
                    "skiplist"
                }
            }
            Stored::List(body) => {
                items(body).map_err(|_| Damaged)?;
                "quicklist"
            }
            Stored::Set(body) => {
                let members = items(body).map_err(|_| Damaged)?;
                let small = members.len() as u64 <= load(&self.set_max_intset_entries)
                    && members.iter().all(|m| parse_i64(m).is_some());
                if small {
                    "intset"
                } else {
                    "hashtable"
                }
            }
        })
    }
}

/// `int`, `embstr` or `raw`, by the string's contents.
fn string_encoding(s: &[u8]) -> &'static str {
    if parse_i64(s).is_some() {
        "int"
    } else if s.len() <= EMBSTR_MAX_BYTES {
        "embstr"
    } else {
        "raw"
    }
}

/// The reference count Redis would report: the shared-object count for a
/// small non-negative integer string (Redis shares `0..10000`), else 1.
pub fn refcount(value: Stored<'_>) -> i64 {
    match value {
        Stored::String(s) if parse_i64(s).is_some_and(|n| (0..SHARED_INTEGERS).contains(&n)) => {
            SHARED_REFCOUNT
        }
        _ => 1,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::value::{list_encode, zset_encode, HashBuilder, SetBuilder};

    #[test]
    fn strings_follow_redis_rules() {
        for (s, e) in [
            (&b"12"[..], "int"),
            (b"-9223372036854775808", "int"),
            (b"9223372036854775808", "embstr"),
            (b"012", "embstr"),
            (b"-0", "embstr"),
            (b"+1", "embstr"),
            (b"", "embstr"),
            (&[b'x'; 44], "embstr"),
            (&[b'x'; 45], "raw"),
        ] {
            assert_eq!(string_encoding(s), e, "{s:?}");
        }
        assert_eq!(refcount(Stored::String(b"9999")), SHARED_REFCOUNT);
        assert_eq!(refcount(Stored::String(b"10000")), 1);
        assert_eq!(refcount(Stored::String(b"-1")), 1);
    }

    #[test]
    fn containers_follow_the_thresholds() {
        let enc = Encodings::default();
        let long = [b'v'; 65];
        let h =
            |pairs: &[(&'static [u8], &'static [u8])]| HashBuilder::new(pairs.to_vec()).encode();
        let small = h(&[(b"f", b"v")]);
        assert_eq!(enc.encoding(Stored::decode(&small)), Ok("listpack"));
        let mut b = HashBuilder::new(vec![(&b"f"[..], &long[..])]);
        b.set(b"g", b"w");
        assert_eq!(enc.encoding(Stored::decode(&b.encode())), Ok("hashtable"));
        enc.named("HASH-MAX-ZIPLIST-ENTRIES")
            .unwrap()
            .store(0, Ordering::Relaxed);
        assert_eq!(enc.encoding(Stored::decode(&small)), Ok("hashtable"));
        let z = zset_encode(&[(1.0, &b"a"[..])]);
        assert_eq!(enc.encoding(Stored::decode(&z)), Ok("listpack"));
        let z = zset_encode(&[(1.0, &long[..])]);
        assert_eq!(enc.encoding(Stored::decode(&z)), Ok("skiplist"));
        assert_eq!(enc.encoding(Stored::Hash(b"xx")), Err(Damaged));
        let set = |members: &[&[u8]]| {
            let mut b = SetBuilder::new();
            for m in members {
                b.add(m);
            }
            b.encode()
        };
        assert_eq!(
            enc.encoding(Stored::decode(&set(&[b"1", b"-2"]))),
            Ok("intset")
        );
        assert_eq!(
            enc.encoding(Stored::decode(&set(&[b"1", b"x"]))),
            Ok("hashtable")
        );
        assert_eq!(
            enc.encoding(Stored::decode(&set(&[b"-0"]))),
            Ok("hashtable")
        );
        let list = list_encode(&[b"a"]);
        assert_eq!(enc.encoding(Stored::decode(&list)), Ok("quicklist"));
        assert!(enc.named("list-max-listpack-size").is_none());
    }
}
