//! Leaf pools (format version 6, superblock flag `FLAG_LEAVES`) read from
//! the bytes alone, as the parent module's header says: the leaves, each
//! key's record word in its leaf's range, copies left above a leaf's range,
//! and breaches of the rules every image keeps.

use persimmon::format::{RECORD_HEADER_BYTES, SEGMENT_HEADER_BYTES, SUPERBLOCK_BYTES};

use super::parsed::{Parsed, SegKind};
use super::words::{get_u32, get_u64, slot_offset, NodeWord, MARKER_OFFSET};

/// Leaf layout (format version 6, see the module header): word 0 = magic
/// (bits 0..32) and the low key's length (bits 32..64); the low key's
/// CRC32C (u32) at 8; the low key inline at 16 up to 48 bytes, else at
/// `LEAF_BODY_BYTES`; 60 entries of 16 bytes (record word, big-endian key
/// prefix) from 64.
const LEAF_MAGIC: u32 = 0x4641_454c;
const LEAF_LOW_CRC: usize = 8;
pub(super) const LEAF_LOW_INLINE: usize = 16;
pub(super) const LEAF_INLINE_LOW: usize = 48;
pub(super) const LEAF_HEADER_BYTES: usize = 64;
pub const LEAF_ENTRIES: usize = 60;
pub(super) const LEAF_ENTRY_BYTES: usize = 16;
pub(super) const LEAF_BODY_BYTES: usize = LEAF_HEADER_BYTES + LEAF_ENTRIES * LEAF_ENTRY_BYTES;
/// Smallest leaf class: 2^10 = 1 KiB.
pub const LEAF_MIN_CLASS: u32 = 10;

/// One leaf of a leaf pool's ordered index.
#[derive(Clone, Debug)]
pub struct Leaf {
    /// The leaf's pool offset, and its size class (`1 << class` bytes).
    pub at: u64,
    pub class: u32,
    pub low: Vec<u8>,
    /// The entries that name records: (entry offset, record word, prefix).
    pub entries: Vec<(u64, u64, u64)>,
}

/// What the leaves of an image hold (`read_leaves`).
#[derive(Clone, Debug, Default)]
pub struct Leaves {
    /// Every leaf, by low key (the first one's is empty).
    pub leaves: Vec<Leaf>,
    /// The entries naming records inside their leaf's range, by key: the
    /// keys' record words.
    pub words: Vec<NodeWord>,
    /// Entries naming records above their leaf's range, copies an
    /// interrupted split left behind: (entry, the record's key).
    pub stale: Vec<(u64, Vec<u8>)>,
    /// Breaches of what holds in every image, crash images included: two
    /// entries in range naming one key, an entry naming a record below its
    /// leaf's low key or one that cannot be read, an entry in range whose
    /// prefix is not its key's.
    pub problems: Vec<String>,
}

/// The first 8 bytes of `key`, big-endian, zero padded (a leaf entry's
/// prefix).
pub fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

/// The key of the record at `off`, read from its header as the engine
/// reads it for a leaf entry (no CRC check; `None` when the header is not
/// a plausible record's).
fn raw_record_key(img: &[u8], off: u64) -> Option<&[u8]> {
    let at = usize::try_from(off).ok()?;
    if off < SUPERBLOCK_BYTES || !off.is_multiple_of(8) || at + RECORD_HEADER_BYTES > img.len() {
        return None;
    }
    let key_len = get_u32(img, at + 4) as usize;
    let ext = if get_u32(img, at + 12) & 16 != 0 {
        8
    } else {
        0
    };
    let key_at = at + RECORD_HEADER_BYTES + ext;
    if key_len > 64 << 10 || key_at + key_len > img.len() {
        return None;
    }
    Some(&img[key_at..key_at + key_len])
}

/// The leaf slot at `at` (class `class`): `Ok(None)` when it is free (no
/// magic), the leaf (entries naming records) when its header is valid.
fn read_leaf(img: &[u8], at: u64, class: u32) -> Result<Option<Leaf>, String> {
    let a = at as usize;
    let w0 = get_u64(img, a);
    if w0 as u32 != LEAF_MAGIC {
        return Ok(None);
    }
    let len = (w0 >> 32) as usize;
    let low_at = if len <= LEAF_INLINE_LOW {
        LEAF_LOW_INLINE
    } else {
        LEAF_BODY_BYTES
    };
    if low_at + len > 1 << class {
        return Err(format!(
            "leaf {at:#x}: a low key of {len} bytes overflows its {} B slot",
            1u64 << class
        ));
    }
    let low = &img[a + low_at..a + low_at + len];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&(len as u32).to_le_bytes()), low);
    if crc != get_u32(img, a + LEAF_LOW_CRC) {
        return Err(format!("leaf {at:#x}: low key CRC32C mismatch"));
    }
    let entries = (0..LEAF_ENTRIES)
        .map(|i| a + LEAF_HEADER_BYTES + i * LEAF_ENTRY_BYTES)
        .map(|e| {
            let prefix = u64::from_be_bytes(img[e + 8..e + 16].try_into().unwrap());
            (e as u64, get_u64(img, e), prefix)
        })
        .filter(|&(_, w, _)| w != 0 && slot_offset(w) != MARKER_OFFSET)
        .collect();
    Ok(Some(Leaf {
        at,
        class,
        low: low.to_vec(),
        entries,
    }))
}

/// The leaves of a leaf pool's image (see the module header). `Err` when
/// the structure itself is unreadable, as the engine's open would refuse
/// it: a leaf segment of an impossible class, a leaf whose low key
/// overflows its slot or fails its CRC, two leaves with one low key, or
/// leaves without a first one (the empty low key). A pool without leaves
/// (never opened, or a crash in its first open before the first leaf's
/// word 0, with its segment committed) has an empty index.
pub fn read_leaves(img: &[u8], p: &Parsed) -> Result<Leaves, String> {
    let max_class = p.segment_bytes.trailing_zeros() - 1;
    let mut leaves: Vec<Leaf> = Vec::new();
    for (i, k) in p.segments.iter().enumerate() {
        let SegKind::Ordered { class, .. } = *k else {
            continue;
        };
        if !(LEAF_MIN_CLASS..=max_class).contains(&class) {
            return Err(format!("ordered segment {i}: leaf class {class}"));
        }
        let base = p.segment_offset(i as u32) + SEGMENT_HEADER_BYTES;
        let slots = (p.segment_bytes - SEGMENT_HEADER_BYTES) >> class;
        for s in 0..slots {
            if let Some(leaf) = read_leaf(img, base + (s << class), class)? {
                leaves.push(leaf);
            }
        }
    }
    leaves.sort_by(|a, b| a.low.cmp(&b.low));
    if let Some(w) = leaves.windows(2).find(|w| w[0].low == w[1].low) {
        return Err(format!(
            "leaves {:#x} and {:#x} share a low key",
            w[0].at, w[1].at
        ));
    }
    if leaves.first().is_some_and(|l| !l.low.is_empty()) {
        return Err("leaves, but none with the empty low key".into());
    }
    let mut out = Leaves::default();
    for (i, leaf) in leaves.iter().enumerate() {
        let high = leaves.get(i + 1).map(|n| n.low.as_slice());
        for &(entry, word, prefix) in &leaf.entries {
            let Some(key) = raw_record_key(img, slot_offset(word)) else {
                out.problems.push(format!(
                    "leaf {:#x}: entry {entry:#x} names no readable record ({word:#x})",
                    leaf.at
                ));
                continue;
            };
            if key < leaf.low.as_slice() {
                out.problems.push(format!(
                    "leaf {:#x}: entry {entry:#x} names a record of {:?}, below the leaf's low key {:?}",
                    leaf.at,
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(&leaf.low)
                ));
            } else if high.is_some_and(|h| key >= h) {
                out.stale.push((entry, key.to_vec()));
            } else {
                if prefix != key_prefix(key) {
                    out.problems.push(format!(
                        "leaf {:#x}: entry {entry:#x} of {:?} has prefix {prefix:#018x}, not its key's",
                        leaf.at,
                        String::from_utf8_lossy(key)
                    ));
                }
                out.words.push(NodeWord {
                    node: leaf.at,
                    at: entry,
                    key: key.to_vec(),
                    word,
                });
            }
        }
    }
    out.words.sort_by(|a, b| a.key.cmp(&b.key));
    for w in out.words.windows(2).filter(|w| w[0].key == w[1].key) {
        out.problems.push(format!(
            "entries {:#x} and {:#x} both name key {:?} inside their leaves' ranges",
            w[0].at,
            w[1].at,
            String::from_utf8_lossy(&w[0].key)
        ));
    }
    out.leaves = leaves;
    Ok(out)
}
