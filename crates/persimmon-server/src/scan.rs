//! `SCAN` cursors over an unordered engine.
//!
//! The engine's iterator cannot be resumed from a position, so a cursor
//! names a place in an order of the server's own: keys sorted by a 44-bit
//! hash (xxh3 of the key). A cursor is `generation:20 | hash:44`: "the keys
//! whose hash is at least `hash`", plus the snapshot it was read from.
//!
//! A *snapshot* is the sorted list of (hash, key) of every key, taken by one
//! pass over the pool when a scan starts (cursor 0). Later calls binary-search
//! the snapshot named by their cursor's generation, so a whole scan costs
//! one pass plus O(COUNT · log n) per call, like Redis. A cursor whose
//! snapshot is gone (evicted, or the server restarted) gets a fresh snapshot
//! and goes on from its hash.
//!
//! Guarantees (Redis's, kept even across evictions and restarts): a key
//! present for the whole scan is returned — every snapshot used was taken
//! after the scan began, so it holds the key, and the hash thresholds only
//! move forward over keys already returned; a key is returned at most once
//! per scan, unless it was deleted and re-created — except that keys whose
//! hashes collide exactly are returned together, never split across calls.
//! Keys added or deleted during the scan may or may not be returned; a
//! returned key may have been deleted since the snapshot (the reply is
//! filtered through a lookup only when `TYPE` is given).

use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use persimmon::Db;

const HASH_BITS: u32 = 44;
const HASH_MASK: u64 = (1 << HASH_BITS) - 1;
const GENERATION_MASK: u64 = (1 << (64 - HASH_BITS)) - 1;

/// Snapshots kept at once, and for how long an unused one is kept.
const SNAPSHOTS_KEPT: usize = 4;
const SNAPSHOT_IDLE: Duration = Duration::from_secs(120);

/// The 44-bit scan hash of a key.
pub fn scan_hash(key: &[u8]) -> u64 {
    xxhash_rust::xxh3::xxh3_64(key) & HASH_MASK
}

/// Keys sorted by scan hash, taken at one moment.
pub struct Snapshot {
    generation: u64,
    /// (hash, key), sorted.
    entries: Vec<(u64, Box<[u8]>)>,
    last_used: Mutex<Instant>,
}

#[derive(Default)]
pub struct ScanCache {
    snapshots: Mutex<Vec<Arc<Snapshot>>>,
    next_generation: Mutex<u64>,
}

/// A decoded cursor.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Cursor {
    pub generation: u64,
    pub hash: u64,
}

impl Cursor {
    pub fn decode(cursor: u64) -> Option<Cursor> {
        (cursor != 0).then_some(Cursor {
            generation: cursor >> HASH_BITS,
            hash: cursor & HASH_MASK,
        })
    }

    pub fn encode(self) -> u64 {
        (self.generation << HASH_BITS) | self.hash
    }
}

/// The keys of one `SCAN` step and the next cursor.
pub type ScanStep = (Vec<Box<[u8]>>, u64);

impl ScanCache {
    /// The snapshot with `generation`, if still kept.
    fn find(&self, generation: u64) -> Option<Arc<Snapshot>> {
        let mut snaps = self.snapshots.lock().unwrap_or_else(|e| e.into_inner());
        snaps.retain(|s| {
            s.last_used
                .lock()
                .map(|t| t.elapsed() < SNAPSHOT_IDLE)
                .unwrap_or(false)
        });
        let found = snaps.iter().find(|s| s.generation == generation).cloned();
        if let Some(s) = &found {
            *s.last_used.lock().unwrap_or_else(|e| e.into_inner()) = Instant::now();
        }
        found
    }

    fn keep(&self, snapshot: Arc<Snapshot>) {
        let mut snaps = self.snapshots.lock().unwrap_or_else(|e| e.into_inner());
        if snaps.len() >= SNAPSHOTS_KEPT {
            snaps.remove(0);
        }
        snaps.push(snapshot);
    }

    fn generation(&self) -> u64 {
        let mut g = self
            .next_generation
            .lock()
            .unwrap_or_else(|e| e.into_inner());
        *g = (*g + 1) & GENERATION_MASK;
        if *g == 0 {
            *g = 1;
        }
        *g
    }

    /// One `SCAN` step over `db`: up to about `count` keys from `cursor` on
    /// (more when hashes tie at the end), and the next cursor (0 at the
    /// end). Takes a new snapshot for cursor 0 or when the cursor's snapshot
    /// is gone: one pass over the pool, cut short once `stopping` says so;
    /// run it off the async workers.
    pub fn step(
        &self,
        db: &Db,
        stopping: impl Fn() -> bool,
        cursor: u64,
        count: usize,
    ) -> Result<ScanStep, persimmon::Error> {
        let cursor = Cursor::decode(cursor);
        let cached = cursor.and_then(|c| self.find(c.generation));
        let snapshot = match cached {
            Some(s) => s,
            None => {
                let s = Arc::new(self.take_snapshot(db, stopping)?);
                self.keep(s.clone());
                s
            }
        };
        let from = cursor.map_or(0, |c| c.hash);
        let entries = &snapshot.entries;
        let start = entries.partition_point(|(h, _)| *h < from);
        let mut end = (start + count.max(1)).min(entries.len());
        while end < entries.len() && end > start && entries[end].0 == entries[end - 1].0 {
            end += 1;
        }
        let keys = entries[start..end].iter().map(|(_, k)| k.clone()).collect();
        let next = if end == entries.len() {
            0
        } else {
            // entries[end - 1].0 < entries[end].0 <= HASH_MASK, so this fits.
            Cursor {
                generation: snapshot.generation,
                hash: entries[end - 1].0 + 1,
            }
            .encode()
        };
        Ok((keys, next))
    }

    fn take_snapshot(
        &self,
        db: &Db,
        stopping: impl Fn() -> bool,
    ) -> Result<Snapshot, persimmon::Error> {
        let generation = self.generation();
        let mut entries = Vec::new();
        for (i, item) in db.iter().enumerate() {
            if i % 4096 == 0 && stopping() {
                break;
            }
            let (key, _value) = item?;
            entries.push((scan_hash(&key), key.into_boxed_slice()));
        }
        entries.sort_unstable();
        // An index split during the pass can return a key twice.
        entries.dedup();
        Ok(Snapshot {
            generation,
            entries,
            last_used: Mutex::new(Instant::now()),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursor_round_trips_and_zero_is_the_start() {
        assert_eq!(Cursor::decode(0), None);
        let c = Cursor {
            generation: 5,
            hash: 12345,
        };
        assert_eq!(Cursor::decode(c.encode()), Some(c));
        let top = Cursor {
            generation: GENERATION_MASK,
            hash: HASH_MASK,
        };
        assert_eq!(Cursor::decode(top.encode()), Some(top));
    }
}
