//! Batched point reads: many independent keys read at once, their cache
//! misses overlapped (`Db::get_many_with`, `Db::get_many`).
//!
//! A single `get` waits for two dependent misses: the key's bucket, then the
//! record its slot names. Keys of a batch do not depend on each other, so the
//! read goes in chunks of [`CHUNK`] keys and stages:
//! 1. hash every key of the chunk, find its segment in the directory and
//!    prefetch the buckets of its probe window;
//! 2. scan each key's probe window for slots with its fingerprint
//!    ([`Engine::prefetch_records`], over the same probe `get` walks) and prefetch
//!    the first lines of the records they name;
//! 3. read each key, in order, with the single-key read
//!    ([`Engine::read_record_hashed`]) — by now its lines are in the caches —
//!    and hand its value to the caller.
//!
//! Invariants:
//! - Stages 1 and 2 only prefetch: they act on no slot and no record (a
//!   prefetch is a hint; a stale or damaged offset costs at most a useless
//!   line). Every answer comes from stage 3, which is `get`'s own read, so
//!   a batched read keeps every rule of `get`: slots and record words seen
//!   with persist=0 are persisted before they are acted on, a record of a
//!   batch still publishing makes the read wait and look again (never half a
//!   batch), expired keys and tombstones are absent, tiered values are
//!   assembled from their extents, a miss of a DRAM point index not yet
//!   rebuilt goes to the locked read, and a split met meanwhile is retried.
//! - Each key is read at its own instant, as by one `get` after another:
//!   the batch is not a snapshot (use a transaction for that).
//! - One epoch pin covers a chunk, so no record the chunk may still read is
//!   reclaimed under it; `f` runs inside it, as `get_with`'s closure does.
//! - `f(i, value)` is called once per key, in order of `i`. On an error (an
//!   oversized key, a damaged record, an unreadable extent) the read stops
//!   there: `f` has been called for exactly the keys before it.

use crossbeam_epoch as epoch;

use super::engine::{check_key, Engine};
use crate::error::Result;
use crate::index::SegRef;

/// Keys whose misses are in flight together. Each costs up to two bucket
/// lines and a record line or two; more than the core's outstanding-miss
/// slots gains nothing.
pub(super) const CHUNK: usize = 16;

impl Engine {
    /// Reads `keys` in order, calling `f(i, value)` for each (`None`: absent
    /// or expired). See the module header.
    pub(super) fn get_many_with(
        &self,
        keys: &[&[u8]],
        mut f: impl FnMut(usize, Option<&[u8]>),
    ) -> Result<()> {
        let mut at = [(0u64, SegRef::default()); CHUNK];
        for (c, chunk) in keys.chunks(CHUNK).enumerate() {
            let _guard = epoch::pin();
            self.prefetch_chunk(chunk, &mut at[..chunk.len()]);
            for (j, key) in chunk.iter().enumerate() {
                let i = c * CHUNK + j;
                check_key(key)?;
                let found = self.read_record_hashed(key, at[j].0, |off, hdr| {
                    f(i, Some(&self.record_value(off, hdr)?));
                    Ok(())
                })?;
                if found.is_none() {
                    f(i, None);
                }
            }
        }
        Ok(())
    }

    /// Stages 1 and 2: hashes `chunk` into `at` (hash, segment) and
    /// prefetches its buckets, then the records its fingerprints name.
    #[inline]
    fn prefetch_chunk(&self, chunk: &[&[u8]], at: &mut [(u64, SegRef)]) {
        let pm = self.ipm();
        {
            let dir = self.index.dir.load();
            for (key, at) in chunk.iter().zip(at.iter_mut()) {
                let h = self.hash(key);
                let seg = dir.lookup(h);
                *at = (h, seg);
                for bucket in self.index.probe(&seg, h) {
                    pm.prefetch(bucket);
                }
            }
        }
        for (key, (h, seg)) in chunk.iter().zip(at.iter()) {
            self.prefetch_records(seg, *h, key.len());
        }
    }
}
