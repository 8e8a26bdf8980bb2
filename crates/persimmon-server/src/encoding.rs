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
//! Invariants: the thresholds have one home, the run-time settings
//! (`settings.rs`: `CONFIG SET hash-max-listpack-entries` and the rest,
//! Redis 7.0's defaults until then); every report reads them afresh
//! ([`Thresholds::of`]), so a `CONFIG SET` shows in the next report.

use crate::protocol::parse_i64;
use crate::settings::Settings;
use crate::value::{hash_fields, items, zset_entries, Stored};

/// Longest string Redis keeps in one allocation with its header.
const EMBSTR_MAX_BYTES: usize = 44;
/// Redis shares the integers `0..SHARED_INTEGERS` between keys.
const SHARED_INTEGERS: i64 = 10_000;
/// The reference count Redis reports for a shared object.
const SHARED_REFCOUNT: i64 = i32::MAX as i64;

/// The thresholds under which Redis keeps a small hash or sorted set as a
/// listpack and a small set of integers as an intset.
#[derive(Clone, Copy, Debug)]
pub struct Thresholds {
    pub hash_max_listpack_entries: u64,
    pub hash_max_listpack_value: u64,
    pub zset_max_listpack_entries: u64,
    pub zset_max_listpack_value: u64,
    pub set_max_intset_entries: u64,
}

impl Default for Thresholds {
    /// Redis 7.0's compiled-in defaults.
    fn default() -> Thresholds {
        Thresholds {
            hash_max_listpack_entries: 512,
            hash_max_listpack_value: 64,
            zset_max_listpack_entries: 128,
            zset_max_listpack_value: 64,
            set_max_intset_entries: 512,
        }
    }
}

/// A stored hash, sorted set, list or set that does not decode.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Damaged;

impl Thresholds {
    /// The thresholds the settings hold now (a value that does not read as
    /// a number keeps Redis's default; `CONFIG SET` never stores one).
    pub fn of(settings: &Settings) -> Thresholds {
        let mut t = Thresholds::default();
        for (name, field) in [
            (
                "hash-max-listpack-entries",
                &mut t.hash_max_listpack_entries,
            ),
            ("hash-max-listpack-value", &mut t.hash_max_listpack_value),
            (
                "zset-max-listpack-entries",
                &mut t.zset_max_listpack_entries,
            ),
            ("zset-max-listpack-value", &mut t.zset_max_listpack_value),
            ("set-max-intset-entries", &mut t.set_max_intset_entries),
        ] {
            let value = settings.value(name).unwrap_or_default();
            if let Some(n) = std::str::from_utf8(&value)
                .ok()
                .and_then(|v| v.parse().ok())
            {
                *field = n;
            }
        }
        t
    }

    /// The encoding Redis would report for `value`.
    pub fn encoding(&self, value: Stored<'_>) -> Result<&'static str, Damaged> {
        Ok(match value {
            Stored::String(s) => string_encoding(s),
            // Every Redis 7.0 list is a quicklist, whatever its size.
            Stored::Coll(crate::value::Kind::List, _) => "quicklist",
            // WIP(issue 17): read through coll::whole.
            Stored::Coll(..) => return Err(Damaged),
            Stored::Hash(body) => {
                let fields = hash_fields(body).map_err(|_| Damaged)?;
                let max = self.hash_max_listpack_value;
                let small = fields.len() as u64 <= self.hash_max_listpack_entries
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
                let small = members.len() as u64 <= self.zset_max_listpack_entries
                    && members
                        .iter()
                        .all(|(_, m)| m.len() as u64 <= self.zset_max_listpack_value);
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
                let small = members.len() as u64 <= self.set_max_intset_entries
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
        let mut enc = Thresholds::default();
        let long = [b'v'; 65];
        let h =
            |pairs: &[(&'static [u8], &'static [u8])]| HashBuilder::new(pairs.to_vec()).encode();
        let small = h(&[(b"f", b"v")]);
        assert_eq!(enc.encoding(Stored::decode(&small)), Ok("listpack"));
        let mut b = HashBuilder::new(vec![(&b"f"[..], &long[..])]);
        b.set(b"g", b"w");
        assert_eq!(enc.encoding(Stored::decode(&b.encode())), Ok("hashtable"));
        enc.hash_max_listpack_entries = 0;
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
    }
}
