//! Databases: Redis's numbered databases (`SELECT`, `MOVE`, `SWAPDB`) laid
//! over the pool's one key space.
//!
//! Each database is a *namespace* of engine keys; which namespace a
//! database uses is the *map* (database `i` uses namespace `i` until a
//! `SWAPDB` exchanges two entries). An engine key is:
//!
//! | engine key | namespace | Redis key |
//! |---|---|---|
//! | `k` (first byte not `0xFF`) | 0 | `k` |
//! | `0xFF 0x00 k` | 0 | `k` (a namespace-0 key that itself starts with `0xFF`) |
//! | `0xFF varint(n) k`, `n ≥ 1` | `n` | `k` |
//! | `0xFF` alone | — | the map record (not a Redis key) |
//!
//! `varint` is LEB128 (prefix-free, so `0xFF varint(n)` is the contiguous
//! prefix of namespace `n` in byte order). Namespace 0 keeps plain keys, so
//! database 0 of a pool is what the CLI and the Rust API see (until a
//! `SWAPDB` moves database 0 to another namespace).
//!
//! The map record (only written by the first `SWAPDB`; absent means the
//! identity map) is `"PSMDB1"`, `count: u32 LE`, then `count` namespaces
//! (`u32 LE`).
//!
//! Invariants:
//! - Every command runs holding the map lock: shared for a plain command
//!   (one piece of the lock, its worker thread's), exclusive for `SWAPDB`
//!   (every piece; `SWAPDB` is refused inside `MULTI`). So no command sees a
//!   database half-swapped, and a command never writes through a mapping
//!   that a swap has already replaced.
//! - The map in DRAM changes only after its record is durable; the two
//!   namespaces a swap exchanges stay distinct (the map is a permutation
//!   of distinct namespaces).

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{RwLock, RwLockReadGuard, RwLockWriteGuard};

use persimmon::Db;

/// The engine key of the map record.
pub const MAP_KEY: &[u8] = &[0xFF];
const MAP_MAGIC: &[u8] = b"PSMDB1";
/// Most databases a server may be configured with.
pub const MAX_DATABASES: usize = 1 << 16;

/// The databases of a server: how many, and which namespace each uses.
pub struct Databases {
    /// The namespace of each database the map record names, and of each
    /// configured one (more than `count` when the record was written with
    /// a larger `databases` setting: kept, so a later SWAPDB keeps them).
    map: Vec<AtomicU32>,
    count: usize,
    lock: MapLock,
}

/// How many pieces the map lock has: a command takes the piece of its
/// worker thread, so the workers do not share a lock word on every command.
const LOCK_SHARDS: usize = 16;

/// A reader-writer lock in pieces: shared = one piece (the calling
/// thread's), exclusive = every piece, in order. A holder of one piece
/// never waits for another, so the order makes deadlock impossible.
struct MapLock {
    shards: Box<[Padded]>,
}

/// One piece on its own cache lines.
#[repr(align(128))]
#[derive(Default)]
struct Padded(RwLock<()>);

/// The map held exclusively: every piece.
pub struct Exclusive<'a> {
    _held: Vec<RwLockWriteGuard<'a, ()>>,
}

fn my_shard() -> usize {
    use std::sync::atomic::AtomicUsize;
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    thread_local! {
        static SHARD: usize = NEXT.fetch_add(1, Ordering::Relaxed) % LOCK_SHARDS;
    }
    SHARD.with(|s| *s)
}

/// A map record that does not parse (the pool was written by something
/// else, or damaged): the server refuses to start rather than guess.
#[derive(Debug)]
pub struct BadMap(pub String);

impl Databases {
    /// The map of `count` databases, read from the pool's map record.
    pub fn load(db: &Db, count: usize) -> Result<Databases, BadMap> {
        let stored = match db.get(MAP_KEY) {
            Ok(v) => v,
            Err(e) => return Err(BadMap(format!("reading the database map: {e}"))),
        };
        let mut map: Vec<u32> = match stored {
            Some(bytes) => decode_map(&bytes)?,
            None => Vec::new(),
        };
        // Databases the record does not cover get the next unused
        // namespaces (their own number, unless a swap took it).
        let mut used: std::collections::HashSet<u32> = map.iter().copied().collect();
        let mut next = map.iter().copied().max().map_or(0, |m| m + 1);
        for i in map.len()..count {
            let ns = if used.contains(&(i as u32)) {
                next
            } else {
                i as u32
            };
            next = next.max(ns + 1);
            used.insert(ns);
            map.push(ns);
        }
        Ok(Databases {
            map: map.into_iter().map(AtomicU32::new).collect(),
            count,
            lock: MapLock {
                shards: (0..LOCK_SHARDS).map(|_| Padded::default()).collect(),
            },
        })
    }

    /// How many databases there are (`SELECT` takes `0..count`).
    pub fn count(&self) -> usize {
        self.count
    }

    /// The namespace database `db` uses (`db < count`).
    pub fn namespace(&self, db: usize) -> u32 {
        self.map[db].load(Ordering::Acquire)
    }

    /// Holds the map for a command that reads through it.
    pub fn shared(&self) -> RwLockReadGuard<'_, ()> {
        let piece = &self.lock.shards[my_shard()].0;
        piece.read().unwrap_or_else(|e| e.into_inner())
    }

    /// Holds the map for a command that may change it: no other command
    /// runs until the guard goes.
    pub fn exclusive(&self) -> Exclusive<'_> {
        let held = self
            .lock
            .shards
            .iter()
            .map(|p| p.0.write().unwrap_or_else(|e| e.into_inner()))
            .collect();
        Exclusive { _held: held }
    }

    /// The map record after swapping databases `a` and `b`.
    pub fn swapped_record(&self, a: usize, b: usize) -> Vec<u8> {
        let mut map: Vec<u32> = (0..self.map.len()).map(|i| self.namespace(i)).collect();
        map.swap(a, b);
        encode_map(&map)
    }

    /// Installs a swap whose record is durable. Only SWAPDB calls this, and
    /// the dispatch runs SWAPDB under the exclusive lock.
    pub fn apply_swap(&self, a: usize, b: usize) {
        let (na, nb) = (self.namespace(a), self.namespace(b));
        debug_assert_ne!(na, nb, "a swap exchanges two distinct namespaces");
        self.map[a].store(nb, Ordering::Release);
        self.map[b].store(na, Ordering::Release);
    }

    /// For each database holding keys: its index, its key count and how
    /// many of its keys have a deadline (`INFO keyspace`). One walk of the
    /// pool, plus a deadline lookup per key.
    pub fn key_counts(
        &self,
        db: &Db,
        stop: impl Fn() -> bool,
    ) -> Result<Vec<(usize, u64, u64)>, persimmon::Error> {
        let owner: std::collections::HashMap<u32, usize> =
            (0..self.count()).map(|i| (self.namespace(i), i)).collect();
        let mut counts = vec![(0u64, 0u64); self.count()];
        for (i, item) in db.iter().enumerate() {
            if i % 4096 == 4095 && stop() {
                break;
            }
            let (key, _) = item?;
            let Some(&d) = split(&key).and_then(|(ns, _)| owner.get(&ns)) else {
                continue;
            };
            counts[d].0 += 1;
            if matches!(db.ttl(&key)?, persimmon::Ttl::Expires { .. }) {
                counts[d].1 += 1;
            }
        }
        Ok(counts
            .into_iter()
            .enumerate()
            .filter(|(_, (keys, _))| *keys > 0)
            .map(|(d, (keys, expires))| (d, keys, expires))
            .collect())
    }
}

/// Calls `f` with each Redis key of namespace `ns` (in byte order with
/// the ordered index, else in the pool's order) until it returns `false`
/// or `stop()` says the server is stopping. A key written or deleted while
/// the walk runs may or may not be seen.
pub fn keys_of(
    db: &Db,
    ns: u32,
    stop: impl Fn() -> bool,
    mut f: impl FnMut(&[u8]) -> Result<bool, persimmon::Error>,
) -> Result<(), persimmon::Error> {
    let mut seen = 0usize;
    let mut visit = |engine_key: &[u8]| -> Result<bool, persimmon::Error> {
        seen += 1;
        if seen.is_multiple_of(4096) && stop() {
            return Ok(false);
        }
        match key_in(ns, engine_key) {
            Some(key) => f(key),
            None => Ok(true),
        }
    };
    if db.has_ordered_index() {
        for (lo, hi) in engine_ranges(ns, b"", None) {
            let keys = match hi {
                Some(hi) => db.range_keys(lo.as_slice()..hi.as_slice())?,
                None => db.range_keys(lo.as_slice()..)?,
            };
            for key in keys {
                if !visit(&key?)? {
                    return Ok(());
                }
            }
        }
        return Ok(());
    }
    for item in db.iter() {
        let (key, _) = item?;
        if !visit(&key)? {
            return Ok(());
        }
    }
    Ok(())
}

fn encode_map(map: &[u32]) -> Vec<u8> {
    let mut out = Vec::with_capacity(MAP_MAGIC.len() + 4 + 4 * map.len());
    out.extend_from_slice(MAP_MAGIC);
    out.extend_from_slice(&(map.len() as u32).to_le_bytes());
    for ns in map {
        out.extend_from_slice(&ns.to_le_bytes());
    }
    out
}

fn decode_map(bytes: &[u8]) -> Result<Vec<u32>, BadMap> {
    let bad = || BadMap("the database map record (engine key 0xFF) does not parse".into());
    let rest = bytes.strip_prefix(MAP_MAGIC).ok_or_else(bad)?;
    let (count, rest) = rest.split_first_chunk::<4>().ok_or_else(bad)?;
    let count = u32::from_le_bytes(*count) as usize;
    if rest.len() != count * 4 {
        return Err(bad());
    }
    let map: Vec<u32> = rest
        .chunks_exact(4)
        .map(|c| u32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect();
    let mut sorted = map.clone();
    sorted.sort_unstable();
    sorted.dedup();
    if sorted.len() != map.len() {
        return Err(bad());
    }
    Ok(map)
}

/// Writes the engine key of Redis key `key` in namespace `ns` into `out`
/// (cleared first).
pub fn engine_key_into(ns: u32, key: &[u8], out: &mut Vec<u8>) {
    out.clear();
    if ns == 0 {
        if key.first() == Some(&0xFF) {
            out.extend_from_slice(&[0xFF, 0x00]);
        }
    } else {
        namespace_prefix_into(ns, out);
    }
    out.extend_from_slice(key);
}

/// The engine key of Redis key `key` in namespace `ns`.
pub fn engine_key(ns: u32, key: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(key.len() + 6);
    engine_key_into(ns, key, &mut out);
    out
}

/// Appends `0xFF varint(ns)`: the prefix every key of namespace `ns ≥ 1`
/// starts with.
fn namespace_prefix_into(ns: u32, out: &mut Vec<u8>) {
    debug_assert!(ns >= 1);
    out.push(0xFF);
    let mut n = ns;
    loop {
        let low = (n & 0x7F) as u8;
        n >>= 7;
        if n == 0 {
            out.push(low);
            break;
        }
        out.push(low | 0x80);
    }
}

/// The namespace and Redis key of an engine key; `None` for the map record
/// and for keys no namespace encodes.
pub fn split(engine_key: &[u8]) -> Option<(u32, &[u8])> {
    let Some(rest) = engine_key.strip_prefix(&[0xFF]) else {
        return Some((0, engine_key));
    };
    match rest.first()? {
        0 => Some((0, &rest[1..])),
        _ => {
            let mut ns: u64 = 0;
            for (i, &b) in rest.iter().enumerate().take(5) {
                ns |= u64::from(b & 0x7F) << (7 * i);
                if b & 0x80 == 0 {
                    // Only the shortest encoding names a namespace (a last
                    // byte of 0 after others is a longer spelling).
                    if b == 0 && i > 0 {
                        return None;
                    }
                    return u32::try_from(ns).ok().map(|ns| (ns, &rest[i + 1..]));
                }
            }
            None
        }
    }
}

/// The Redis key of `engine_key` if it belongs to namespace `ns`.
pub fn key_in(ns: u32, engine_key: &[u8]) -> Option<&[u8]> {
    split(engine_key).and_then(|(n, key)| (n == ns).then_some(key))
}

/// The byte ranges of engine keys that hold namespace `ns`'s keys from
/// Redis key `start` (inclusive) to `end` (exclusive; `None`: no end), in
/// byte order: one range for `ns ≥ 1`, up to two for namespace 0 (plain
/// keys below `0xFF`, then the escaped ones).
pub fn engine_ranges(ns: u32, start: &[u8], end: Option<&[u8]>) -> Vec<(Vec<u8>, Option<Vec<u8>>)> {
    if ns != 0 {
        let mut prefix = Vec::new();
        namespace_prefix_into(ns, &mut prefix);
        let upper = match end {
            Some(e) => Some(join(&prefix, e)),
            None => persimmon::prefix_end(&prefix),
        };
        return vec![(join(&prefix, start), upper)];
    }
    let mut out = Vec::new();
    let plain_end: &[u8] = &[0xFF];
    if start < plain_end {
        let upper = match end {
            Some(e) if e < plain_end => e.to_vec(),
            _ => plain_end.to_vec(),
        };
        out.push((start.to_vec(), Some(upper)));
    }
    if end.is_none_or(|e| e > plain_end) {
        let escaped_start = if start < plain_end { plain_end } else { start };
        let upper = match end {
            Some(e) => join(&[0xFF, 0x00], e),
            None => vec![0xFF, 0x01],
        };
        out.push((join(&[0xFF, 0x00], escaped_start), Some(upper)));
    }
    out
}

fn join(a: &[u8], b: &[u8]) -> Vec<u8> {
    let mut v = Vec::with_capacity(a.len() + b.len());
    v.extend_from_slice(a);
    v.extend_from_slice(b);
    v
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn engine_keys_round_trip_and_never_collide() {
        let keys: [&[u8]; 5] = [b"", b"a", &[0xFF], &[0xFF, 0x00, 1], &[0x00]];
        let mut seen = std::collections::HashSet::new();
        for ns in [0u32, 1, 9, 127, 128, 129, 300, 65_535, u32::MAX] {
            for key in keys {
                let e = engine_key(ns, key);
                assert_ne!(e, MAP_KEY);
                assert_eq!(split(&e), Some((ns, key)), "ns {ns} key {key:?}");
                assert!(seen.insert(e), "two keys share an engine key");
            }
        }
        assert_eq!(split(MAP_KEY), None);
        // A longer spelling of a namespace is no key.
        assert_eq!(split(&[0xFF, 0x81, 0x00, b'k']), None);
        // A varint that never ends is no key.
        assert_eq!(split(&[0xFF, 0x80, 0x80, 0x80, 0x80, 0x80, 1]), None);
    }

    #[test]
    fn ranges_cover_exactly_the_namespace_keys_in_order() {
        let ks: Vec<&[u8]> = vec![
            b"",
            b"a",
            b"b",
            b"zz",
            &[0xFE, 9],
            &[0xFF],
            &[0xFF, 7],
            &[0xFF, 0xFF],
        ];
        for ns in [0u32, 1, 200] {
            for (start, end) in [
                (&b""[..], None),
                (&b"b"[..], Some(&[0xFF, 1][..])),
                (&[0xFF][..], None),
                (&b"a"[..], Some(&b"zz"[..])),
            ] {
                let ranges = engine_ranges(ns, start, end);
                for k in &ks {
                    let e = engine_key(ns, k);
                    let wanted = *k >= start && end.is_none_or(|x| *k < x);
                    let inside = ranges
                        .iter()
                        .any(|(lo, hi)| e >= *lo && hi.as_ref().is_none_or(|h| e < *h));
                    assert_eq!(inside, wanted, "ns {ns} key {k:?} range {start:?}..{end:?}");
                }
                // Another namespace's keys fall in none of them.
                let other = engine_key(ns + 1, b"a");
                assert!(!ranges
                    .iter()
                    .any(|(lo, hi)| other >= *lo && hi.as_ref().is_none_or(|h| other < *h)));
            }
        }
    }

    #[test]
    fn map_records_parse_strictly() {
        assert_eq!(decode_map(&encode_map(&[1, 0, 2])).unwrap(), vec![1, 0, 2]);
        assert!(decode_map(b"PSMDB1").is_err());
        assert!(decode_map(&encode_map(&[1, 1])).is_err());
        let mut long = encode_map(&[0]);
        long.push(0);
        assert!(decode_map(&long).is_err());
    }
}
