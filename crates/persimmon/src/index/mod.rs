//! The MPKV point index: a segmented extendible hash over the pool.
//!
//! A key's 64-bit hash `h` (xxh3, seeded per pool) is used three ways:
//! - its top 16 bits are the *fingerprint* stored in the slot;
//! - its top `depth` bits pick the index segment through the directory
//!   (so a fingerprint always carries its segment's prefix: depth <= 16);
//! - its low 32 bits pick the home bucket inside the segment; a key lives in
//!   its home bucket or the next one (wrapping inside the segment), and with
//!   [`Placement::ThreeChoice`] (format version 7) also in a third bucket
//!   `home + 2 + r`, `r` = bits 32.. of the hash modulo [`THIRD_SPAN`].
//!   Which buckets a key may use is decided here only ([`Index::probe`],
//!   [`Index::reach`], [`Index::preferred`]).
//!
//! Invariants:
//! - A slot word changes only while the writer holds the volatile lock of
//!   the *home* bucket of the key it names, except that an empty slot (0) may
//!   be claimed by compare-and-swap from any writer that holds its own key's
//!   home lock. So two writers never overwrite each other's slots.
//! - The directory lives in DRAM and is rebuilt at open from index segment
//!   headers: each directory entry belongs to the deepest segment whose
//!   (depth, prefix) covers it. A split never rewrites the old segment's
//!   header; its effective depth follows from the new segment's header.
//! - A slot whose fingerprint does not carry its segment's (effective)
//!   prefix is a stale copy left by a split: readers never match it (the
//!   fingerprint differs from any key routed here), writers may reuse it.
//! - Splits hold every lock of the lock table, so no writer runs during a
//!   split; readers never wait.

pub(crate) mod locks;

use crate::pmem::PmemFile;

use arc_swap::ArcSwap;

use crate::error::{Error, Result};
use crate::layout::{Slot, BUCKET_BYTES, SEGMENT_HEADER_BYTES, SLOTS_PER_BUCKET, SLOT_BYTES};

/// Deepest directory: the fingerprint has 16 bits.
pub(crate) const MAX_DEPTH: u8 = 16;

/// Three-choice placement: the third bucket is `home + 2 + r`, `r <
/// THIRD_SPAN` (wrapping inside the segment).
pub(crate) const THIRD_SPAN: u64 = 64;

/// Three-choice placement: a new entry goes to its home bucket while that
/// holds fewer entries than this, else to the least full of its buckets.
const HOME_FIRST_BELOW: usize = 4;

/// Most buckets a key may live in.
pub(crate) const MAX_PROBE: usize = 3;

/// Which buckets of its segment a key may live in (fixed per pool by the
/// superblock flag `SB_FLAG_THREE_CHOICE`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Placement {
    /// Home bucket or the next one (format versions 1–6, the Baseline
    /// layout, the DRAM point index).
    Pair,
    /// Home, next, or `home + 2 + r` (format version 7): segments split at
    /// about 75–80 % occupancy instead of 35–45 % (docs/design.md §4).
    ThreeChoice,
}

/// The buckets a key may live in, in the order readers look: the home
/// bucket first (the one whose lock guards the key).
#[derive(Clone, Copy, Debug)]
pub(crate) struct Probe {
    buckets: [u64; MAX_PROBE],
    len: usize,
}

impl std::ops::Deref for Probe {
    type Target = [u64];
    #[inline]
    fn deref(&self) -> &[u64] {
        &self.buckets[..self.len]
    }
}

impl IntoIterator for Probe {
    type Item = u64;
    type IntoIter = std::iter::Take<std::array::IntoIter<u64, MAX_PROBE>>;
    #[inline]
    fn into_iter(self) -> Self::IntoIter {
        self.buckets.into_iter().take(self.len)
    }
}

/// One index segment as the directory sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) struct SegRef {
    /// Pool offset of the segment.
    pub offset: u64,
    /// Effective local depth.
    pub depth: u8,
    /// Effective prefix: the top `depth` bits of every hash routed here.
    pub prefix: u64,
}

impl SegRef {
    /// Whether a slot's fingerprint belongs to this segment (not a stale
    /// copy left by a split).
    #[inline]
    pub fn owns_fingerprint(&self, fp: u16) -> bool {
        self.depth == 0 || (fp as u64 >> (16 - self.depth as u32)) == self.prefix
    }

    /// Pool offset of bucket `b`.
    #[inline]
    pub fn bucket_offset(&self, b: u64) -> u64 {
        self.offset + SEGMENT_HEADER_BYTES + b * BUCKET_BYTES
    }
}

/// The DRAM directory: `2^depth` entries indexed by the top bits of the hash.
pub(crate) struct Directory {
    pub depth: u8,
    pub entries: Vec<SegRef>,
}

impl Directory {
    #[inline]
    pub fn lookup(&self, h: u64) -> SegRef {
        self.entries[dir_index(h, self.depth)]
    }

    /// Each distinct segment once, in directory order.
    pub fn segments(&self) -> Vec<SegRef> {
        let mut out = Vec::new();
        let mut i = 0;
        while i < self.entries.len() {
            let s = self.entries[i];
            out.push(s);
            i += 1usize << (self.depth - s.depth);
        }
        out
    }

    /// Rebuilds the directory from index segment headers
    /// `(offset, header depth, header prefix)`: deeper segments win.
    pub fn rebuild(segments: &[(u64, u8, u64)]) -> Result<Directory, String> {
        if segments.is_empty() {
            return Err("no index segment".into());
        }
        let depth = segments.iter().map(|s| s.1).max().unwrap_or(0);
        if depth > MAX_DEPTH {
            return Err(format!("index segment depth {depth} exceeds {MAX_DEPTH}"));
        }
        let n = 1usize << depth;
        let mut owner: Vec<Option<(u64, u8)>> = vec![None; n];
        let mut sorted = segments.to_vec();
        sorted.sort_by_key(|s| (s.1, s.0));
        for &(off, d, p) in &sorted {
            if p >> d != 0 && d < 64 {
                return Err(format!(
                    "index segment at {off:#x}: prefix {p:#x} wider than depth {d}"
                ));
            }
            let shift = depth - d;
            let lo = (p as usize) << shift;
            let hi = ((p as usize) + 1) << shift;
            for e in &mut owner[lo..hi] {
                match e {
                    Some((_, od)) if *od == d => {
                        return Err(format!(
                            "two index segments claim prefix {p:#x} at depth {d}"
                        ))
                    }
                    _ => *e = Some((off, d)),
                }
            }
        }
        let mut entries = Vec::with_capacity(n);
        let mut i = 0;
        while i < n {
            let Some((off, _)) = owner[i] else {
                return Err(format!(
                    "no index segment covers directory entry {i} of {n}"
                ));
            };
            let mut j = i;
            while j < n && owner[j].map(|o| o.0) == Some(off) {
                j += 1;
            }
            let run = j - i;
            if !run.is_power_of_two() || i % run != 0 {
                return Err(format!(
                    "index segment at {off:#x} owns an unaligned directory range {i}..{j}"
                ));
            }
            let eff = depth - run.trailing_zeros() as u8;
            let seg = SegRef {
                offset: off,
                depth: eff,
                prefix: (i >> (depth - eff)) as u64,
            };
            entries.extend(std::iter::repeat_n(seg, run));
            i = j;
        }
        Ok(Directory { depth, entries })
    }

    /// The directory after `old` split into `low` and `high`.
    pub fn with_split(&self, old: SegRef, low: SegRef, high: SegRef) -> Directory {
        let mut depth = self.depth;
        let mut entries = self.entries.clone();
        if old.depth == depth {
            entries = entries.iter().flat_map(|&e| [e, e]).collect();
            depth += 1;
        }
        for (i, e) in entries.iter_mut().enumerate() {
            if *e == old {
                let bit = (i >> (depth - low.depth)) & 1;
                *e = if bit == 0 { low } else { high };
            }
        }
        Directory { depth, entries }
    }
}

#[inline]
pub(crate) fn dir_index(h: u64, depth: u8) -> usize {
    if depth == 0 {
        0
    } else {
        (h >> (64 - depth as u32)) as usize
    }
}

/// Fingerprint of a hash.
#[inline]
pub(crate) fn fingerprint(h: u64) -> u16 {
    (h >> 48) as u16
}

/// Buckets per index segment of `segment_bytes`.
#[inline]
pub(crate) fn buckets_per_segment(segment_bytes: u64) -> u64 {
    (segment_bytes - SEGMENT_HEADER_BYTES) / BUCKET_BYTES
}

/// Home bucket of hash `h` in a segment of `buckets` buckets.
#[inline]
pub(crate) fn home_bucket(h: u64, buckets: u64) -> u64 {
    ((h & 0xffff_ffff) * buckets) >> 32
}

/// Where the index segments live when the point index is in DRAM
/// (HybridIndex+ placement): two growable DRAM files addressed like the
/// pool. `slots` holds the segments (same layout as in the pool; headers
/// unused); `nodes` holds, at the offset of every slot, the ordered-index
/// node of the slot's key (writers need it to persist the key's record
/// word; readers never look at it). Segments are handed out from the start
/// and never given back (splits only add).
pub(crate) struct DramSpace {
    pub slots: PmemFile,
    pub nodes: PmemFile,
    next: parking_lot::Mutex<u64>,
    segment_bytes: u64,
}

impl DramSpace {
    /// Address space for `reserve_bytes` of index segments (nothing is
    /// allocated until segments are).
    pub fn new(segment_bytes: u64, reserve_bytes: u64) -> Result<DramSpace> {
        Ok(DramSpace {
            slots: PmemFile::volatile("persimmon-dram-index", reserve_bytes)?,
            nodes: PmemFile::volatile("persimmon-dram-index-nodes", reserve_bytes)?,
            next: parking_lot::Mutex::new(0),
            segment_bytes,
        })
    }

    /// A zeroed segment; returns its offset.
    pub fn alloc_segment(&self) -> Result<u64> {
        let mut next = self.next.lock();
        let off = *next;
        let end = off + self.segment_bytes;
        self.slots.grow(end).map_err(|e| self.full(e))?;
        self.nodes.grow(end).map_err(|e| self.full(e))?;
        *next = end;
        Ok(off)
    }

    fn full(&self, e: Error) -> Error {
        Error::IndexFull {
            detail: format!("the DRAM point index cannot grow: {e}"),
        }
    }

    /// DRAM the index occupies, in bytes (both files).
    pub fn bytes(&self) -> u64 {
        2 * *self.next.lock()
    }
}

/// The index: directory (swapped whole on a split) and bucket locks.
pub(crate) struct Index {
    pub dir: ArcSwap<Directory>,
    pub locks: locks::BucketLocks,
    pub buckets: u64,
    /// Data slots per bucket: 8, or 7 when the last slot is a lock word.
    pub slots_per_bucket: u64,
    pub placement: Placement,
}

impl Index {
    pub fn new(
        dir: Directory,
        segment_bytes: u64,
        locks: locks::BucketLocks,
        placement: Placement,
    ) -> Index {
        let slots_per_bucket = if locks.in_pm() {
            SLOTS_PER_BUCKET as u64 - 1
        } else {
            SLOTS_PER_BUCKET as u64
        };
        let buckets = buckets_per_segment(segment_bytes);
        // The three buckets are distinct (segments hold at least 1023).
        assert!(buckets > THIRD_SPAN + 2, "index segments too small");
        Index {
            dir: ArcSwap::from_pointee(dir),
            locks,
            buckets,
            slots_per_bucket,
            placement,
        }
    }

    /// Pool offsets of the data slots of the bucket at `bucket_offset`.
    #[inline]
    pub fn slots(&self, bucket_offset: u64) -> impl Iterator<Item = u64> {
        (0..self.slots_per_bucket).map(move |i| bucket_offset + i * SLOT_BYTES)
    }

    /// The offsets of the buckets `h` may live in, in `seg`: home first,
    /// then the next bucket, then (three-choice) the third.
    #[inline]
    pub fn probe(&self, seg: &SegRef, h: u64) -> Probe {
        let home = home_bucket(h, self.buckets);
        let at = |d: u64| {
            let b = home + d;
            seg.bucket_offset(if b >= self.buckets {
                b - self.buckets
            } else {
                b
            })
        };
        match self.placement {
            Placement::Pair => Probe {
                buckets: [at(0), at(1), 0],
                len: 2,
            },
            Placement::ThreeChoice => Probe {
                buckets: [at(0), at(1), at(2 + (h >> 32) % THIRD_SPAN)],
                len: 3,
            },
        }
    }

    /// How far past its home bucket a key may live: a key in bucket `b`
    /// has its home in `b - reach ..= b` (wrapping inside the segment).
    #[inline]
    pub fn reach(&self) -> u64 {
        match self.placement {
            Placement::Pair => 1,
            Placement::ThreeChoice => THIRD_SPAN + 1,
        }
    }

    /// Which of the probed buckets (index into [`Index::probe`]'s order) a
    /// new entry should go to first, given the free slots each has (empty
    /// slots and stale split copies). Pairs: the home bucket while it has
    /// room (first fit, as MPKV). Three-choice: the home bucket while it
    /// holds fewer than `HOME_FIRST_BELOW` entries, else the one with the
    /// most free slots (the earlier on a tie): this balancing is what lets
    /// segments fill to about 75–80 % before a probe finds all three full.
    #[inline]
    pub fn preferred(&self, free_per_bucket: &[usize]) -> usize {
        if self.placement == Placement::Pair
            || (self.slots_per_bucket as usize).saturating_sub(free_per_bucket[0])
                < HOME_FIRST_BELOW
        {
            return 0;
        }
        let mut best = 0;
        for (i, &f) in free_per_bucket.iter().enumerate().skip(1) {
            if f > free_per_bucket[best] {
                best = i;
            }
        }
        best
    }

    /// Whether slot word `s` is a live entry of `seg` (not empty, not a
    /// marker, not a stale split copy).
    #[inline]
    pub fn is_live_entry(seg: &SegRef, s: Slot) -> bool {
        s.names_record() && seg.owns_fingerprint(s.fingerprint())
    }
}

#[cfg(test)]
mod tests {
    use super::locks::mix64;
    use super::*;

    #[test]
    fn rebuild_prefers_deeper_segments_and_derives_effective_depth() {
        // S (depth 0) split into S' (implicit) and N (depth 1, prefix 1); then
        // S' split again into N2 (depth 2, prefix 0b01).
        let d = Directory::rebuild(&[(100, 0, 0), (200, 1, 1), (300, 2, 1)]).unwrap();
        assert_eq!(d.depth, 2);
        let offs: Vec<u64> = d.entries.iter().map(|e| e.offset).collect();
        assert_eq!(offs, vec![100, 300, 200, 200]);
        assert_eq!(
            d.entries[0],
            SegRef {
                offset: 100,
                depth: 2,
                prefix: 0
            }
        );
        assert_eq!(
            d.entries[2],
            SegRef {
                offset: 200,
                depth: 1,
                prefix: 1
            }
        );
        assert_eq!(d.segments().len(), 3);
    }

    #[test]
    fn rebuild_rejects_gaps_and_duplicates() {
        assert!(Directory::rebuild(&[(100, 1, 0)]).is_err());
        assert!(Directory::rebuild(&[(100, 1, 0), (200, 1, 0)]).is_err());
        assert!(Directory::rebuild(&[]).is_err());
    }

    #[test]
    fn with_split_doubles_when_needed() {
        let s = SegRef {
            offset: 100,
            depth: 0,
            prefix: 0,
        };
        let d = Directory {
            depth: 0,
            entries: vec![s],
        };
        let lo = SegRef {
            offset: 100,
            depth: 1,
            prefix: 0,
        };
        let hi = SegRef {
            offset: 200,
            depth: 1,
            prefix: 1,
        };
        let d2 = d.with_split(s, lo, hi);
        assert_eq!(d2.entries, vec![lo, hi]);
        let lo2 = SegRef {
            offset: 100,
            depth: 2,
            prefix: 0,
        };
        let hi2 = SegRef {
            offset: 300,
            depth: 2,
            prefix: 1,
        };
        let d3 = d2.with_split(lo, lo2, hi2);
        assert_eq!(d3.entries, vec![lo2, hi2, hi, hi]);
        let rebuilt = Directory::rebuild(&[(100, 0, 0), (200, 1, 1), (300, 2, 1)]).unwrap();
        assert_eq!(rebuilt.entries, d3.entries);
    }

    fn index(placement: Placement) -> Index {
        let dir = Directory {
            depth: 0,
            entries: vec![SegRef {
                offset: 4096,
                depth: 0,
                prefix: 0,
            }],
        };
        Index::new(
            dir,
            64 << 10,
            locks::BucketLocks::new(false, false, 1),
            placement,
        )
    }

    #[test]
    fn probes_stay_within_reach_of_home() {
        for placement in [Placement::Pair, Placement::ThreeChoice] {
            let ix = index(placement);
            let seg = ix.dir.load().entries[0];
            let n = ix.buckets;
            let mut third_seen = std::collections::BTreeSet::new();
            for i in 0..20_000u64 {
                let h = mix64(i);
                let p = ix.probe(&seg, h);
                let b: Vec<u64> = p
                    .iter()
                    .map(|&o| (o - seg.bucket_offset(0)) / BUCKET_BYTES)
                    .collect();
                assert_eq!(b.len(), if placement == Placement::Pair { 2 } else { 3 });
                assert_eq!(b[0], home_bucket(h, n));
                assert_eq!(b[1], (b[0] + 1) % n, "the pair is kept as the first two");
                for &x in &b {
                    // Every bucket lies within `reach` after home (wrapping).
                    assert!((x + n - b[0]) % n <= ix.reach());
                }
                if let Some(&t) = b.get(2) {
                    assert!(t != b[0] && t != b[1]);
                    third_seen.insert((t + n - b[0]) % n);
                }
                assert_eq!(p.into_iter().count(), b.len());
            }
            if placement == Placement::ThreeChoice {
                assert_eq!(third_seen.len() as u64, THIRD_SPAN);
            }
        }
    }

    #[test]
    fn preferred_bucket_balances_three_choices_only() {
        let pair = index(Placement::Pair);
        assert_eq!(pair.preferred(&[0, 8]), 0);
        assert_eq!(pair.preferred(&[1, 8]), 0);
        let three = index(Placement::ThreeChoice);
        // Home holds fewer than HOME_FIRST_BELOW entries: home.
        assert_eq!(three.preferred(&[8 - HOME_FIRST_BELOW + 1, 8, 8]), 0);
        // Else the emptiest, the earlier on a tie.
        assert_eq!(three.preferred(&[2, 5, 7]), 2);
        assert_eq!(three.preferred(&[2, 6, 6]), 1);
        assert_eq!(three.preferred(&[4, 4, 3]), 0);
        assert_eq!(three.preferred(&[0, 0, 0]), 0);
    }

    #[test]
    fn fingerprint_carries_prefix() {
        let seg = SegRef {
            offset: 0,
            depth: 3,
            prefix: 0b101,
        };
        assert!(seg.owns_fingerprint(0b1010_0000_0000_0000));
        assert!(!seg.owns_fingerprint(0b1000_0000_0000_0000));
        let h = 0b101u64 << 61;
        assert_eq!(dir_index(h, 3), 0b101);
        assert!(seg.owns_fingerprint(fingerprint(h)));
    }
}
