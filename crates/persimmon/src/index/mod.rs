//! The MPKV point index: a segmented extendible hash over the pool.
//!
//! A key's 64-bit hash `h` (xxh3, seeded per pool) is used three ways:
//! - its top 16 bits are the *fingerprint* stored in the slot;
//! - its top `depth` bits pick the index segment through the directory
//!   (so a fingerprint always carries its segment's prefix: depth <= 16);
//! - its low 32 bits pick the home bucket inside the segment; a key lives in
//!   its home bucket or the next one (wrapping inside the segment).
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

/// A 64-bit finaliser (from splitmix64) to spread bucket offsets over locks.
#[inline]
pub(crate) fn mix64(mut x: u64) -> u64 {
    x ^= x >> 30;
    x = x.wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x ^= x >> 27;
    x = x.wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
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
}

impl Index {
    pub fn new(dir: Directory, segment_bytes: u64, locks: locks::BucketLocks) -> Index {
        let slots_per_bucket = if locks.in_pm() {
            SLOTS_PER_BUCKET as u64 - 1
        } else {
            SLOTS_PER_BUCKET as u64
        };
        Index {
            dir: ArcSwap::from_pointee(dir),
            locks,
            buckets: buckets_per_segment(segment_bytes),
            slots_per_bucket,
        }
    }

    /// Pool offsets of the data slots of the bucket at `bucket_offset`.
    #[inline]
    pub fn slots(&self, bucket_offset: u64) -> impl Iterator<Item = u64> {
        (0..self.slots_per_bucket).map(move |i| bucket_offset + i * SLOT_BYTES)
    }

    /// The home and neighbour bucket offsets of `h` in `seg`.
    #[inline]
    pub fn probe(&self, seg: &SegRef, h: u64) -> [u64; 2] {
        let home = home_bucket(h, self.buckets);
        let next = if home + 1 == self.buckets {
            0
        } else {
            home + 1
        };
        [seg.bucket_offset(home), seg.bucket_offset(next)]
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
