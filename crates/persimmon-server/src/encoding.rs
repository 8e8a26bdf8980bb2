//! The internal encoding Redis would give a value, as `OBJECT ENCODING`
//! and `OBJECT REFCOUNT` report it, and the thresholds that decide it.
//!
//! This is reporting only: Persimmon stores every value its own way
//! (`value.rs`: one tagged engine value per key for a string; `coll`: a
//! meta record and pages for a collection) whatever the thresholds say.
//! A collection is judged read whole (`coll::whole::Whole`, O(size) as
//! Redis's own check of a listpack is). The report follows Redis 7.0's rules applied to the value as it is
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

use persimmon_resp::parse_i64;
use persimmon_types::coll::whole::Whole;
use persimmon_types::value::Stored;

use crate::settings::Settings;

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

    /// The encoding Redis would report for a collection holding `w`.
    pub fn collection(&self, w: &Whole) -> &'static str {
        match w {
            Whole::Hash(pairs) => {
                let max = self.hash_max_listpack_value;
                let fits = pairs
                    .iter()
                    .map(|(f, v)| f.len() as u64 <= max && v.len() as u64 <= max);
                if small(pairs.len(), self.hash_max_listpack_entries, fits) {
                    "listpack"
                } else {
                    "hashtable"
                }
            }
            Whole::ZSet(members) => {
                let max = self.zset_max_listpack_value;
                let fits = members.iter().map(|(_, m)| m.len() as u64 <= max);
                if small(members.len(), self.zset_max_listpack_entries, fits) {
                    "listpack"
                } else {
                    "skiplist"
                }
            }
            Whole::List(_) => "quicklist",
            Whole::Set(members) => {
                let fits = members.iter().map(|m| parse_i64(m).is_some());
                if small(members.len(), self.set_max_intset_entries, fits) {
                    "intset"
                } else {
                    "hashtable"
                }
            }
        }
    }
}

/// Whether `len` entries are at most `max_len` and every one `fits`.
fn small(len: usize, max_len: u64, mut fits: impl Iterator<Item = bool>) -> bool {
    len as u64 <= max_len && fits.all(|f| f)
}

/// `int`, `embstr` or `raw`, by the string's contents.
pub fn string_encoding(s: &[u8]) -> &'static str {
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

    fn bytes(items: &[&[u8]]) -> Vec<Vec<u8>> {
        items.iter().map(|i| i.to_vec()).collect()
    }

    #[test]
    fn collections_follow_the_thresholds() {
        let mut enc = Thresholds::default();
        let long = vec![b'v'; 65];
        let small = Whole::Hash(vec![(b"f".to_vec(), b"v".to_vec())]);
        assert_eq!(enc.collection(&small), "listpack");
        let h = Whole::Hash(vec![
            (b"f".to_vec(), long.clone()),
            (b"g".to_vec(), b"w".to_vec()),
        ]);
        assert_eq!(enc.collection(&h), "hashtable");
        let h = Whole::Hash(vec![(vec![b'f'; 64], vec![b'v'; 64])]);
        assert_eq!(enc.collection(&h), "listpack");
        enc.hash_max_listpack_entries = 0;
        assert_eq!(enc.collection(&small), "hashtable");
        assert_eq!(
            enc.collection(&Whole::ZSet(vec![(1.0, b"a".to_vec())])),
            "listpack"
        );
        assert_eq!(
            enc.collection(&Whole::ZSet(vec![(1.0, long.clone())])),
            "skiplist"
        );
        let many: Vec<(f64, Vec<u8>)> = (0..129).map(|i| (i as f64, vec![i as u8])).collect();
        assert_eq!(enc.collection(&Whole::ZSet(many)), "skiplist");
        let set = |m: &[&[u8]]| Whole::Set(bytes(m));
        assert_eq!(enc.collection(&set(&[b"1", b"-2"])), "intset");
        assert_eq!(enc.collection(&set(&[b"1", b"x"])), "hashtable");
        assert_eq!(enc.collection(&set(&[b"-0"])), "hashtable");
        let ints: Vec<Vec<u8>> = (0..513).map(|i: i32| i.to_string().into_bytes()).collect();
        assert_eq!(enc.collection(&Whole::Set(ints.clone())), "hashtable");
        assert_eq!(enc.collection(&Whole::Set(ints[..512].to_vec())), "intset");
        assert_eq!(enc.collection(&Whole::List(bytes(&[b"a"]))), "quicklist");
        assert_eq!(enc.collection(&Whole::List(vec![long; 1000])), "quicklist");
    }
}
