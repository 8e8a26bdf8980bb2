//! Pool files outside the engine: deterministic creation and an independent
//! parser of images, both written from the format in `docs/design.md` §3.
//!
//! Creation: the engine draws a pool's hash seed at random, so where keys
//! land (and when an index segment splits) would change from run to run. The
//! harness writes the superblock itself with a seed derived from the run's
//! seed, then lets `Db::open` do the rest (the first index segment).
//!
//! Parsing: the oracle and the fault injector need to know, from the bytes
//! alone, which segments are committed, which slots are live and where their
//! records are. The parser mirrors the engine's rules:
//! - a slot is live when it is neither empty nor a delete marker, names a
//!   record with a valid CRC whose key's hash carries the slot's fingerprint,
//!   and the key routes to this index segment (the deepest index segment
//!   whose (depth, prefix) covers the key's hash);
//! - a data segment (log, or a large run) is *needed* when a live slot names
//!   a record in it, or when it is its lane's newest log segment (the lane
//!   appends there after a restart); any other committed data segment is
//!   dead and must be reclaimable after recovery.
//!
//! Ordered index (format version 2, superblock flag bit 1, §10): node
//! segments (kind 4) hold slabs of one size class; the persistent skiplist
//! is the chain of `next` words from the head node (the first node of the
//! node segment whose header says head). `ordered_keys` follows that chain
//! from the bytes alone, so the oracle can compare what a recovered pool
//! left on media with what the engine answered.
//!
//! DRAM point index (format version 3, superblock flag bit 2, HybridIndex+):
//! the pool holds no index segment; the persistent truth of a key is the
//! *record word* of its skiplist node (`NODE_RECORD`, a slot word in the
//! same encoding). There a key is live when its node is linked and the word
//! is neither 0 nor a delete marker, names a record with a valid CRC whose
//! key is the node's, and carries that key's fingerprint; `LiveRecord`'s
//! `slot_addr` is then the record word's address. A linked node whose word
//! names no record is an orphan (`record_words` lists every word).
//!
//! Ordered index in leaves (format version 6, superblock flag bit 4, with
//! the DRAM point index; `read_leaves`): the ordered segments (kind 4)
//! hold leaf slots of `1 << class` bytes (the header's class, at least
//! 2^10) from byte 64 of the segment. A slot is a leaf when its word 0
//! carries the leaf magic in bits 0..32 (bits 32..64: the low key's
//! length); the low key's CRC32C (as a node's: length, then key) is at 8,
//! the low key inline at 16 when at most 48 bytes, else at 1024. Then 60
//! entries of 16 bytes from 64: a record word (slot encoding; 0 or a delete
//! marker: free) and the key's first 8 bytes, big-endian, zero padded.
//! Leaves sorted by low key cover the keys from their low key up to the
//! next one's; the first has the empty low key. An entry naming a record
//! whose key lies inside its leaf's range is the key's record word: the key
//! is live when that record's CRC is valid and the word carries the key's
//! fingerprint (`LiveRecord::slot_addr` is the entry). An entry naming a
//! record outside its leaf's range (above it) is a copy an interrupted
//! split left behind: ignored, cleared by the next open. Two entries in
//! range naming one key, an entry below its leaf's low key, or a prefix
//! that is not its key's are breaches in any image (`Leaves::problems`).
//!
//! Rooms: `words` (integers at offsets, the slot word, record words),
//! `parsed` (what `parse` returns: segment kinds, live records) and
//! `leaves` (leaf pools), all below this file, which creates pools and
//! parses whole images with them.

use std::collections::BTreeSet;
use std::path::Path;

use persimmon::format::{
    FORMAT_VERSION, MAGIC, RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, SUPERBLOCK_BYTES,
};
use persimmon::tier::ident::{self, TierSettings};

mod leaves;
mod parsed;
mod words;

pub use leaves::{read_leaves, Leaves, LEAF_ENTRIES, LEAF_MIN_CLASS};
pub use parsed::{ExtentAt, LiveRecord, Parsed, SegKind};
use words::{get_u32, get_u64};
pub use words::{slot_fingerprint, slot_offset, NodeWord, MARKER_OFFSET};

/// The batch commit table of format version 4 (docs/design.md §3, §6a):
/// 64 entries of 16 bytes at superblock offset 1024 (an entry not zero is
/// a batch begun or committed, which the recovery at open undoes or
/// finishes).
pub const BATCH_TABLE: std::ops::Range<usize> = 1024..1024 + 64 * 16;

/// Superblock flag bit 0: buckets carry a persistent lock word in their last
/// slot (the Baseline layout, `Mechanisms::volatile_lock_table = false`).
pub const FLAG_PERSISTENT_LOCKS: u64 = 1;

/// Superblock flag bit 1: the pool keeps the ordered index (the skiplist;
/// `SB_FLAG_ORDERED_INDEX` in the engine's layout, docs/design.md §3/§10).
pub const FLAG_ORDERED_INDEX: u64 = 2;

/// Superblock flag bit 2: the point index lives in DRAM, the skiplist
/// nodes' record words name the keys' records (`SB_FLAG_DRAM_POINT_INDEX`;
/// format version 3, needs `FLAG_ORDERED_INDEX` and no persistent locks).
pub const FLAG_DRAM_POINT_INDEX: u64 = 4;

/// Superblock flag bit 3: large values live on an SSD tier whose data
/// directory the settings at `SB_TIER` name (format version 5, §6c).
pub const FLAG_TIERED: u64 = 8;

/// Superblock flag bit 4: the ordered index is kept in leaves, not in a
/// skiplist (`SB_FLAG_LEAVES`; format version 6, with `FLAG_ORDERED_INDEX`
/// and `FLAG_DRAM_POINT_INDEX`).
pub const FLAG_LEAVES: u64 = 16;

/// Superblock flag bit 5: a point-index key may live in a third bucket
/// besides its home and the next one (`SB_FLAG_THREE_CHOICE`; format
/// version 7, point index in PM without persistent locks). The parser does
/// not check bucket placement, so it reads both placements alike.
pub const FLAG_THREE_CHOICE: u64 = 32;

/// Where a tiered pool's superblock keeps its tier settings (1024 bytes:
/// magic, threshold, path length, CRC, the data directory's absolute path;
/// `persimmon::tier::ident`).
pub const SB_TIER: usize = 2048;

/// Skiplist node layout (docs/design.md §10): `next` (pool offset of the
/// next node, 0 at the end), the record word (DRAM point index: the key's
/// record as a slot word, 0 = none; else 0), key length (u32), CRC32C over
/// the key length and the key (u32), then the key.
const NODE_NEXT: usize = 0;
pub const NODE_RECORD: usize = 8;
const NODE_KEY_LEN: usize = 16;
const NODE_CRC: usize = 20;
const NODE_HEADER_BYTES: usize = 24;

/// The superblock's flags word of an image (0 when unreadable).
pub fn flags(img: &[u8]) -> u64 {
    if img.len() < 64 {
        return 0;
    }
    get_u64(img, 56)
}

/// The pool id the harness gives every pool it creates (the SSD tier's
/// identity file and data-file headers carry it too).
pub const POOL_ID: [u8; 16] = [0xC7; 16];

/// Writes a fresh, empty pool of `segments` segments with the given hash
/// seed and flags (every segment free; the first open creates the index).
/// With `tier` (data directory, threshold), the pool is tiered: flag
/// `FLAG_TIERED`, the settings at `SB_TIER`, and the directory claimed for
/// it (its identity file written) before the pool file exists, as the
/// engine does.
pub fn create(
    path: &Path,
    segment_bytes: u64,
    segments: u64,
    hash_seed: u64,
    flags: u64,
    tier: Option<(&Path, u64)>,
) -> std::io::Result<()> {
    let mut sb = vec![0u8; SUPERBLOCK_BYTES as usize];
    let flags = flags | tier.map_or(0, |_| FLAG_TIERED);
    sb[0..8].copy_from_slice(&MAGIC);
    // The lowest version that expresses the flags, as the engine writes
    // them: 7 with three-choice buckets, 6 with leaves, 5 with the SSD tier, 3 with the DRAM point
    // index, 2 with the ordered index, else 1. This superblock is written by hand: a new
    // version must be looked at here before the harness writes it.
    // (Version 4 — batches, deadlines — is reached in place by the engine's
    // first batch or deadline; version 8 — the disk domain — by its first
    // open in that domain.)
    const _: () = assert!(FORMAT_VERSION == 8);
    sb[8..12].copy_from_slice(&format_version(flags).to_le_bytes());
    sb[12..16].copy_from_slice(&(SUPERBLOCK_BYTES as u32).to_le_bytes());
    sb[16..24].copy_from_slice(&segment_bytes.to_le_bytes());
    sb[24..32].copy_from_slice(&hash_seed.to_le_bytes());
    sb[32..48].copy_from_slice(&POOL_ID);
    sb[48..56].copy_from_slice(&1_700_000_000u64.to_le_bytes());
    sb[56..64].copy_from_slice(&flags.to_le_bytes());
    let crc = crc32c::crc32c(&sb[..124]);
    sb[124..128].copy_from_slice(&crc.to_le_bytes());
    if let Some((dir, threshold)) = tier {
        let dir = ident::claim(dir, &POOL_ID).map_err(std::io::Error::other)?;
        let settings = TierSettings { dir, threshold }
            .encode()
            .map_err(std::io::Error::other)?;
        sb[SB_TIER..SB_TIER + settings.len()].copy_from_slice(&settings);
    }
    let mut file = std::fs::File::create(path)?;
    std::io::Write::write_all(&mut file, &sb)?;
    file.set_len(SUPERBLOCK_BYTES + segments * segment_bytes)?;
    Ok(())
}

/// Makes the tiered pool image `img` name `dir` as its data directory
/// (the settings at `SB_TIER`, their threshold kept). The engine writes
/// them once, when the pool is created, and never again: an image whose
/// data files were put in another directory names that one instead, as if
/// the pool had been created there.
pub fn set_data_dir(img: &mut [u8], dir: &Path) -> Result<(), String> {
    let at = SB_TIER..SB_TIER + 1024;
    let raw = img
        .get(at.clone())
        .ok_or("image shorter than its superblock")?;
    let old = TierSettings::decode(raw)
        .map_err(|e| format!("tier settings: {e}"))?
        .ok_or("the image has no tier settings")?;
    let dir = dir
        .canonicalize()
        .map_err(|e| format!("resolve {}: {e}", dir.display()))?;
    let new = TierSettings {
        dir,
        threshold: old.threshold,
    }
    .encode()
    .map_err(|e| e.to_string())?;
    img[at.clone()].fill(0);
    img[SB_TIER..SB_TIER + new.len()].copy_from_slice(&new);
    Ok(())
}

/// The format version a pool with superblock `flags` is written at.
pub fn format_version(flags: u64) -> u32 {
    if flags & FLAG_THREE_CHOICE != 0 {
        7
    } else if flags & FLAG_LEAVES != 0 {
        6
    } else if flags & FLAG_TIERED != 0 {
        5
    } else if flags & FLAG_DRAM_POINT_INDEX != 0 {
        3
    } else if flags & FLAG_ORDERED_INDEX != 0 {
        2
    } else {
        1
    }
}

fn decode_header(h: &[u8]) -> SegKind {
    let state = get_u64(h, 0);
    if state == 0 {
        return SegKind::Free;
    }
    if (state >> 8) & 0xff != 0xA7 || (state >> 32) as u32 != crc32c::crc32c(&h[8..64]) {
        return SegKind::Damaged;
    }
    match state & 0xff {
        1 => SegKind::Log {
            lane: get_u32(h, 8),
            base: get_u64(h, 16),
        },
        2 => SegKind::Index {
            depth: get_u32(h, 8) as u8,
            prefix: get_u64(h, 16),
        },
        3 => SegKind::Large {
            run: get_u32(h, 12).max(1),
        },
        4 => SegKind::Ordered {
            class: get_u32(h, 8),
            head: get_u64(h, 16) == 1,
        },
        _ => SegKind::Damaged,
    }
}

/// Parses an image. Returns `None` when the superblock is unreadable.
pub fn parse(img: &[u8]) -> Option<Parsed> {
    if img.len() < SUPERBLOCK_BYTES as usize || img[0..8] != MAGIC {
        return None;
    }
    let segment_bytes = get_u64(img, 16);
    let hash_seed = get_u64(img, 24);
    if !segment_bytes.is_power_of_two() || segment_bytes < 64 << 10 {
        return None;
    }
    let segments = segment_kinds(img, segment_bytes);
    let directory = Directory::new(&segments);
    let mut p = Parsed {
        segment_bytes,
        segments,
        live: Vec::new(),
        orphan_index_segments: directory.orphans(),
    };
    p.live = if flags(img) & FLAG_LEAVES != 0 {
        // The entries in range name the records (a damaged structure,
        // which the engine refuses at open, leaves none).
        let leaves = read_leaves(img, &p).ok();
        leaves
            .iter()
            .flat_map(|l| l.words.iter())
            .filter_map(|w| live_from_word(img, w, hash_seed))
            .collect()
    } else if flags(img) & FLAG_DRAM_POINT_INDEX != 0 {
        // No index segment to read (one would be damage the engine refuses
        // at open): the linked nodes' record words name the records.
        let words = record_words(img, &p).unwrap_or_default();
        words
            .iter()
            .filter_map(|w| live_from_word(img, w, hash_seed))
            .collect()
    } else {
        live_from_slots(img, &p, &directory, hash_seed)
    };
    Some(p)
}

/// The kind of every segment of the image, from its header (the segments
/// a large run covers after its head are `Continuation`).
fn segment_kinds(img: &[u8], segment_bytes: u64) -> Vec<SegKind> {
    let n = ((img.len() as u64 - SUPERBLOCK_BYTES) / segment_bytes) as usize;
    let mut segments = vec![SegKind::Free; n];
    let mut i = 0;
    while i < n {
        let off = (SUPERBLOCK_BYTES + i as u64 * segment_bytes) as usize;
        let k = decode_header(&img[off..off + 64]);
        segments[i] = k;
        if let SegKind::Large { run } = k {
            for c in 1..run as usize {
                if i + c < n {
                    segments[i + c] = SegKind::Continuation;
                }
            }
            i += run as usize;
            continue;
        }
        i += 1;
    }
    segments
}

/// The index segments as the directory sees them: (segment, depth,
/// prefix), deepest first, so the owner of a hash is the first segment
/// that covers it.
struct Directory {
    index: Vec<(u32, u8, u64)>,
}

impl Directory {
    fn new(segments: &[SegKind]) -> Directory {
        let mut index: Vec<(u32, u8, u64)> = segments
            .iter()
            .enumerate()
            .filter_map(|(i, k)| match k {
                SegKind::Index { depth, prefix } => Some((i as u32, *depth, *prefix)),
                _ => None,
            })
            .collect();
        index.sort_by_key(|s| std::cmp::Reverse(s.1));
        Directory { index }
    }

    /// The index segment that owns hash `h`.
    fn owner(&self, h: u64) -> Option<u32> {
        self.index
            .iter()
            .find(|&&(_, d, p)| d == 0 || (d <= 16 && h >> (64 - d as u32) == p))
            .map(|s| s.0)
    }

    /// The index segments that own no directory entry.
    fn orphans(&self) -> Vec<u32> {
        let max_depth = self.index.iter().map(|s| s.1).max().unwrap_or(0).min(16);
        let mut owns: BTreeSet<u32> = BTreeSet::new();
        for e in 0..(1u64 << max_depth) {
            let h = if max_depth == 0 {
                0
            } else {
                e << (64 - max_depth as u32)
            };
            if let Some(o) = self.owner(h) {
                owns.insert(o);
            }
        }
        self.index
            .iter()
            .map(|s| s.0)
            .filter(|s| !owns.contains(s))
            .collect()
    }
}

/// The live records the index segments' slots name: a slot counts when its
/// record parses, its fingerprint matches the key's hash, its segment owns
/// that hash, and no earlier slot named the same key.
fn live_from_slots(
    img: &[u8],
    p: &Parsed,
    directory: &Directory,
    hash_seed: u64,
) -> Vec<LiveRecord> {
    let buckets = (p.segment_bytes - SEGMENT_HEADER_BYTES) / 64;
    // With persistent bucket locks the last slot of a bucket is a lock word.
    let lock_slot = flags(img) & FLAG_PERSISTENT_LOCKS != 0;
    let mut seen_keys: BTreeSet<Vec<u8>> = BTreeSet::new();
    let mut live = Vec::new();
    for &(seg, _, _) in &directory.index {
        let base = p.segment_offset(seg) + SEGMENT_HEADER_BYTES;
        for s in 0..buckets * 8 {
            let addr = base + s * 8;
            if lock_slot && s % 8 == 7 {
                continue;
            }
            let w = get_u64(img, addr as usize);
            let off = slot_offset(w);
            if w == 0 || off == MARKER_OFFSET {
                continue;
            }
            let Some(rec) = read_record(img, off) else {
                continue;
            };
            let h = xxhash_rust::xxh3::xxh3_64_with_seed(&rec.key, hash_seed);
            if (h >> 48) as u16 != slot_fingerprint(w) || directory.owner(h) != Some(seg) {
                continue;
            }
            if !seen_keys.insert(rec.key.clone()) {
                continue;
            }
            live.push(LiveRecord {
                slot_addr: addr,
                ..rec
            });
        }
    }
    live
}

/// The record words of the linked nodes of `img`, in list order; in a
/// leaf pool, the entries in range that name records, by key.
pub fn record_words(img: &[u8], p: &Parsed) -> Result<Vec<NodeWord>, String> {
    if flags(img) & FLAG_LEAVES != 0 {
        return Ok(read_leaves(img, p)?.words);
    }
    Ok(skiplist(img, p)?
        .into_iter()
        .map(|(node, key)| NodeWord {
            node,
            at: node + NODE_RECORD as u64,
            word: get_u64(img, node as usize + NODE_RECORD),
            key,
        })
        .collect())
}

/// The live record a node's record word (a leaf entry) names, if any (see
/// the header).
fn live_from_word(img: &[u8], w: &NodeWord, hash_seed: u64) -> Option<LiveRecord> {
    let off = slot_offset(w.word);
    if w.word == 0 || off == MARKER_OFFSET {
        return None;
    }
    let rec = read_record(img, off)?;
    let h = xxhash_rust::xxh3::xxh3_64_with_seed(&rec.key, hash_seed);
    if rec.key != w.key || (h >> 48) as u16 != slot_fingerprint(w.word) {
        return None;
    }
    Some(LiveRecord {
        slot_addr: w.at,
        ..rec
    })
}

/// The record at `off` if its lengths are sane and its CRC verifies.
fn read_record(img: &[u8], off: u64) -> Option<LiveRecord> {
    let off_us = off as usize;
    if off < SUPERBLOCK_BYTES || off_us + RECORD_HEADER_BYTES > img.len() || !off.is_multiple_of(8)
    {
        return None;
    }
    let key_len = get_u32(img, off_us + 4) as usize;
    let value_len = get_u32(img, off_us + 8) as usize;
    if key_len > 64 << 10 || value_len > 64 << 20 {
        return None;
    }
    // A record with a deadline (flag bit 4) carries it in 8 bytes between
    // its header and its key.
    let flags = get_u32(img, off_us + 12);
    let ext = if flags & 16 != 0 { 8 } else { 0 };
    let body_end = off_us + RECORD_HEADER_BYTES + key_len + value_len + ext;
    if body_end > img.len() {
        return None;
    }
    if crc32c::crc32c(&img[off_us + 4..body_end]) != get_u32(img, off_us) {
        return None;
    }
    let key_at = off_us + RECORD_HEADER_BYTES + ext;
    Some(LiveRecord {
        slot_addr: 0,
        record: off,
        body_end: body_end as u64,
        value_at: (key_at + key_len) as u64,
        key: img[key_at..key_at + key_len].to_vec(),
        flags,
    })
}

/// The keys of the ordered index of `img` in order: the skiplist's in list
/// order (the head left out), or the leaves' keys (`ordered_list`).
pub fn ordered_keys(img: &[u8], p: &Parsed) -> Result<Vec<Vec<u8>>, String> {
    Ok(ordered_list(img, p)?.into_iter().map(|(_, k)| k).collect())
}

/// The ordered index of `img` in order, as (pool offset, key): the
/// skiplist's nodes (`skiplist`), or in a leaf pool the entries in range
/// that name records (offset: the entry), by key (a key two entries name
/// is listed twice).
pub fn ordered_list(img: &[u8], p: &Parsed) -> Result<Vec<(u64, Vec<u8>)>, String> {
    if flags(img) & FLAG_LEAVES != 0 {
        let l = read_leaves(img, p)?;
        return Ok(l.words.into_iter().map(|w| (w.at, w.key)).collect());
    }
    skiplist(img, p)
}

/// The nodes of the skiplist of `img` in list order (the head left out),
/// as (pool offset, key), following `next` words from the head node. `Err`
/// names the first link that is not a valid node: outside a node segment,
/// off a slot boundary, a key longer than its slot, a CRC mismatch, or a
/// cycle. A pool without node segments has an empty list.
fn skiplist(img: &[u8], p: &Parsed) -> Result<Vec<(u64, Vec<u8>)>, String> {
    let heads: Vec<u32> = p
        .segments
        .iter()
        .enumerate()
        .filter(|(_, k)| matches!(k, SegKind::Ordered { head: true, .. }))
        .map(|(i, _)| i as u32)
        .collect();
    let head = match heads.as_slice() {
        [] if !p
            .segments
            .iter()
            .any(|k| matches!(k, SegKind::Ordered { .. })) =>
        {
            return Ok(Vec::new())
        }
        [h] => p.segment_offset(*h) + SEGMENT_HEADER_BYTES,
        _ => return Err(format!("node segments claim the head: {heads:?}")),
    };
    let node_at = |off: u64| -> Result<Vec<u8>, String> {
        if off < SUPERBLOCK_BYTES + SEGMENT_HEADER_BYTES || off as usize >= img.len() {
            return Err(format!("link {off:#x} outside the pool"));
        }
        let seg = p.segment_of(off);
        let SegKind::Ordered { class, .. } = p.segments[seg as usize] else {
            return Err(format!(
                "link {off:#x} into segment {seg} ({:?})",
                p.segments[seg as usize]
            ));
        };
        let within = off - p.segment_offset(seg) - SEGMENT_HEADER_BYTES;
        if class >= 32 || !within.is_multiple_of(1 << class) {
            return Err(format!("link {off:#x} off a node boundary (class {class})"));
        }
        let at = off as usize;
        let len = get_u32(img, at + NODE_KEY_LEN) as usize;
        if NODE_HEADER_BYTES + len > 1 << class {
            return Err(format!(
                "node {off:#x}: key of {len} bytes overflows its slot"
            ));
        }
        let key = &img[at + NODE_HEADER_BYTES..at + NODE_HEADER_BYTES + len];
        let crc = crc32c::crc32c_append(crc32c::crc32c(&(len as u32).to_le_bytes()), key);
        if crc != get_u32(img, at + NODE_CRC) {
            return Err(format!("node {off:#x}: CRC32C mismatch"));
        }
        Ok(key.to_vec())
    };
    let head_key = node_at(head)?;
    if !head_key.is_empty() {
        return Err(format!("head node {head:#x} holds a key"));
    }
    let mut keys = Vec::new();
    let mut seen = BTreeSet::new();
    let mut node = get_u64(img, head as usize + NODE_NEXT);
    while node != 0 {
        if !seen.insert(node) {
            return Err(format!("node {node:#x} linked twice (cycle)"));
        }
        keys.push((node, node_at(node)?));
        node = get_u64(img, node as usize + NODE_NEXT);
    }
    Ok(keys)
}

#[cfg(test)]
mod tests {
    use super::leaves::{
        LEAF_BODY_BYTES, LEAF_ENTRY_BYTES, LEAF_HEADER_BYTES, LEAF_INLINE_LOW, LEAF_LOW_INLINE,
    };
    use super::*;
    use persimmon::{Db, Options};
    use std::collections::BTreeMap;

    /// The parser follows the engine's list: a pool the engine wrote lists
    /// its keys in order; a link bent back into the list is a cycle.
    #[test]
    fn ordered_list_reads_the_engines_skiplist() {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let path = dir.path().join("o.pool");
        create(&path, 64 << 10, 8, 7, FLAG_ORDERED_INDEX, None).unwrap();
        let keys: [&[u8]; 5] = [b"", b"a", &[b'm'; 100], b"z", &[0xff; 3]];
        {
            let opts = Options {
                create: false,
                cleaner: false,
                ..Options::default()
            };
            let db = Db::open(&path, opts).unwrap();
            assert!(db.has_ordered_index());
            for k in keys.iter().rev() {
                db.put(k, b"v").unwrap();
            }
            db.delete(b"a").unwrap();
        }
        let mut img = std::fs::read(&path).unwrap();
        let p = parse(&img).unwrap();
        let list = ordered_list(&img, &p).unwrap();
        let got: Vec<&[u8]> = list.iter().map(|(_, k)| k.as_slice()).collect();
        assert_eq!(got, vec![&b""[..], &[b'm'; 100][..], b"z", &[0xff; 3][..]]);
        // The last node's `next` back to the first node: a cycle.
        let (first, last) = (list[0].0, list[list.len() - 1].0);
        img[last as usize..last as usize + 8].copy_from_slice(&first.to_le_bytes());
        let err = ordered_list(&img, &p).unwrap_err();
        assert!(err.contains("cycle"), "{err}");
    }

    /// A DRAM point-index pool (version 3): no index segment; the live
    /// records are the ones the linked nodes' record words name, with their
    /// current values; a word of 0 or a delete marker leaves an orphan, a
    /// word without its persist bit still names its record.
    /// The image of a pool with the DRAM point index at `path`, checked to
    /// be of `version` with `pool_flags` and to hold no index segment.
    fn dram_image(path: &Path, version: u32, pool_flags: u64) -> (Vec<u8>, Parsed) {
        let img = std::fs::read(path).unwrap();
        assert_eq!(get_u32(&img, 8), version, "format version");
        assert_eq!(flags(&img), pool_flags);
        let p = parse(&img).unwrap();
        assert!(!p
            .segments
            .iter()
            .any(|k| matches!(k, SegKind::Index { .. })));
        (img, p)
    }

    #[test]
    fn dram_pool_records_come_from_node_record_words() {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let path = dir.path().join("d.pool");
        let dram_flags = FLAG_ORDERED_INDEX | FLAG_DRAM_POINT_INDEX;
        create(&path, 64 << 10, 8, 11, dram_flags, None).unwrap();
        let keys: [&[u8]; 5] = [b"", b"b", &[b'm'; 100], b"x", b"z"];
        {
            let opts = Options {
                create: false,
                cleaner: false,
                ordered_index: true,
                point_index: persimmon::PointIndex::Dram,
                ..Options::default()
            };
            let db = Db::open(&path, opts).unwrap();
            assert_eq!(db.point_index(), persimmon::PointIndex::Dram);
            for k in keys {
                db.put(k, b"first").unwrap();
            }
            db.put(b"x", b"second value").unwrap(); // the word moves on
            db.delete(b"b").unwrap(); // marker, 0, unlinked
        }
        let (mut img, p) = dram_image(&path, 3, dram_flags);
        let words = record_words(&img, &p).unwrap();
        let listed: Vec<&[u8]> = words.iter().map(|w| w.key.as_slice()).collect();
        assert_eq!(listed, vec![&b""[..], &[b'm'; 100][..], b"x", b"z"]);
        assert!(words.iter().all(|w| w.word & 1 == 1 && !w.half_done()));
        let live: Vec<(&[u8], &[u8], u64)> = p
            .live
            .iter()
            .map(|r| (r.key.as_slice(), r.value(&img), r.slot_addr))
            .collect();
        let want: Vec<(&[u8], &[u8], u64)> = words
            .iter()
            .map(|w| {
                let v: &[u8] = if w.key == b"x" {
                    b"second value"
                } else {
                    b"first"
                };
                (w.key.as_slice(), v, w.node + NODE_RECORD as u64)
            })
            .collect();
        assert_eq!(live, want);
        // Half done (persist bit clear): still names its record.
        let at = |w: &NodeWord| w.node as usize + NODE_RECORD;
        let (z, m, empty) = (&words[3], &words[1], &words[0]);
        img[at(z)..at(z) + 8].copy_from_slice(&(z.word & !1).to_le_bytes());
        // A delete marker, and a word of 0: orphans.
        let marker = (m.word & !(((1u64 << 47) - 1) << 1)) | (MARKER_OFFSET >> 3) << 1;
        img[at(m)..at(m) + 8].copy_from_slice(&marker.to_le_bytes());
        img[at(empty)..at(empty) + 8].fill(0);
        let p = parse(&img).unwrap();
        let live: Vec<&[u8]> = p.live.iter().map(|r| r.key.as_slice()).collect();
        assert_eq!(live, vec![&b"x"[..], b"z"]);
        let words = record_words(&img, &p).unwrap();
        assert!(words[3].half_done() && !words[2].half_done());
        assert_eq!(slot_offset(words[1].word), MARKER_OFFSET);
    }
    /// A leaf pool (version 6): no index segment; leaves split as keys
    /// come (long keys sharing a long prefix give a separator over 48
    /// bytes, out of line in a larger leaf); the entries in range name the
    /// live records; a copy above its leaf's range is stale, one below it,
    /// a second entry of a key or a wrong prefix is a problem, a damaged
    /// low key makes the structure unreadable.
    #[test]
    fn leaf_pool_records_come_from_leaf_entries() {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let path = dir.path().join("l.pool");
        let leaf_flags = FLAG_ORDERED_INDEX | FLAG_DRAM_POINT_INDEX | FLAG_LEAVES;
        create(&path, 64 << 10, 16, 13, leaf_flags, None).unwrap();
        let long = |i: u32| format!("L{}{i:04}", "x".repeat(60)).into_bytes();
        let mut want: BTreeMap<Vec<u8>, Vec<u8>> = BTreeMap::new();
        {
            let opts = Options {
                create: false,
                cleaner: false,
                ordered_index: true,
                point_index: persimmon::PointIndex::Dram,
                ..Options::default()
            };
            let db = Db::open(&path, opts).unwrap();
            for i in 0..150u32 {
                for k in [format!("k{i:04}").into_bytes(), long(i)] {
                    let v = format!("v{i}-{}", k.len()).into_bytes();
                    db.put(&k, &v).unwrap();
                    want.insert(k, v);
                }
            }
            db.put(b"", b"empty").unwrap();
            want.insert(Vec::new(), b"empty".to_vec());
            for i in (0..150u32).step_by(7) {
                db.delete(&long(i)).unwrap();
                want.remove(&long(i));
            }
        }
        let (mut img, p) = dram_image(&path, 6, leaf_flags);
        let l = read_leaves(&img, &p).unwrap();
        assert!(l.leaves.len() >= 6, "{} leaves", l.leaves.len());
        assert!(l.leaves[0].low.is_empty());
        assert!(l
            .leaves
            .iter()
            .any(|f| f.low.len() > LEAF_INLINE_LOW && f.class > LEAF_MIN_CLASS));
        assert!(
            l.stale.is_empty() && l.problems.is_empty(),
            "{:?}",
            l.problems
        );
        let keys: Vec<&[u8]> = l.words.iter().map(|w| w.key.as_slice()).collect();
        assert_eq!(keys, want.keys().map(|k| k.as_slice()).collect::<Vec<_>>());
        assert_eq!(ordered_keys(&img, &p).unwrap().len(), want.len());
        let live: BTreeMap<Vec<u8>, Vec<u8>> = p
            .live
            .iter()
            .map(|r| (r.key.clone(), r.value(&img).to_vec()))
            .collect();
        assert_eq!(live, want);
        assert!(p
            .live
            .iter()
            .all(|r| l.words.iter().any(|w| w.at == r.slot_addr)));
        // A free entry of leaf `n`, and an entry of leaf 1 copied into it.
        let free = |img: &[u8], n: usize| {
            (0..LEAF_ENTRIES)
                .map(|i| l.leaves[n].at as usize + LEAF_HEADER_BYTES + i * LEAF_ENTRY_BYTES)
                .find(|&e| get_u64(img, e) == 0)
                .unwrap()
        };
        let (from, _, _) = l.leaves[1].entries[0];
        let entry = img[from as usize..from as usize + 16].to_vec();
        let copy = |img: &mut Vec<u8>, n: usize| {
            let at = free(img, n);
            img[at..at + 16].copy_from_slice(&entry);
            at
        };
        let mut stale = img.clone();
        let at = copy(&mut stale, 0); // above leaf 0's range: stale
        let s = read_leaves(&stale, &parse(&stale).unwrap()).unwrap();
        assert_eq!(s.stale.iter().map(|e| e.0).collect::<Vec<_>>(), [at as u64]);
        assert!(s.problems.is_empty() && s.words.len() == want.len());
        let mut below = img.clone();
        copy(&mut below, 2); // below leaf 2's low key
        let b = read_leaves(&below, &parse(&below).unwrap()).unwrap();
        assert!(b.problems[0].contains("below"), "{:?}", b.problems);
        let mut twice = img.clone();
        copy(&mut twice, 1); // a second entry of the key in its leaf
        let t = read_leaves(&twice, &parse(&twice).unwrap()).unwrap();
        assert!(t.problems[0].contains("both name"), "{:?}", t.problems);
        // A wrong prefix.
        let e = from as usize + 8;
        img[e] ^= 0x40;
        let w = read_leaves(&img, &p).unwrap();
        assert!(w.problems[0].contains("prefix"), "{:?}", w.problems);
        img[e] ^= 0x40;
        // A damaged low key (inline, or out of line): the structure is
        // unreadable.
        for long in [false, true] {
            let leaf = l
                .leaves
                .iter()
                .find(|f| !f.low.is_empty() && (f.low.len() > LEAF_INLINE_LOW) == long)
                .unwrap();
            let at = if long {
                LEAF_BODY_BYTES
            } else {
                LEAF_LOW_INLINE
            };
            let mut damaged = img.clone();
            damaged[leaf.at as usize + at] ^= 1;
            let err = read_leaves(&damaged, &p).unwrap_err();
            assert!(err.contains("CRC32C"), "{err}");
        }
    }
}
