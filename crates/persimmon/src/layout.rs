//! On-media formats: superblock, segment header, record, bucket and slot.
//!
//! Everything here is little-endian, fixed-size and free of `usize`; the byte
//! offsets are the ones drawn in `docs/design.md`, and the tests at the end of
//! this file assert each of them so prose and code cannot drift.
//!
//! Invariants:
//! - Offsets below `SUPERBLOCK_BYTES` never name a record: the slot word 0
//!   is an empty slot, and a slot whose offset is `MARKER_OFFSET` (8) is a
//!   delete marker (any fingerprint, including 0, stays non-zero).
//! - A segment header's first word is its *state word* (kind + CRC of the
//!   rest of the header). It is the header's commit point: the other fields
//!   are written and persisted first, then the state word in one 8-byte
//!   atomic store. A state word of 0 means "free".
//! - A record is immutable once written; its CRC32C covers everything after
//!   the CRC field (rest of header, key, value).

/// Pool magic, first 8 bytes of the file.
pub const MAGIC: [u8; 8] = *b"PERSIMMN";
/// Format version written by this build. Version 2 added the ordered index
/// (superblock flag, segment kind 4, skiplist nodes); version 3 the DRAM
/// point index (superblock flag; the node's record word names the key's
/// record); version 4 atomic batches and key deadlines (record flags
/// `REC_FLAG_BATCH`, `REC_FLAG_TOMBSTONE`, `REC_FLAG_UNDO`,
/// `REC_FLAG_DEADLINE` and the batch commit table in the superblock);
/// version 5 the SSD tier (superblock flag `SB_FLAG_TIERED`, the tier
/// settings at `SB_TIER`, record flag `REC_FLAG_EXTERNAL`); version 6 the
/// ordered index in leaves (superblock flag `SB_FLAG_LEAVES`: the ordered
/// segments hold leaves of many record words instead of skiplist nodes);
/// version 7 the three-choice point index (superblock flag
/// `SB_FLAG_THREE_CHOICE`: a key may also live in a third bucket, §4);
/// version 8 a pool kept in the disk domain, whose newest fenced lines may
/// be in the write-ahead log beside it (`<pool>.wal`, §2a) rather than in
/// the pool file — the pool file layout is unchanged, the version only keeps
/// builds that cannot replay the log from opening an older state.
/// A pool is
/// written at the lowest version that expresses it (a pool of an older
/// version is raised to 4 by its first batch or deadline; a tiered pool is
/// created at 5; a pool is raised to 8 when it is first opened in the disk
/// domain), and older versions are still read.
pub const FORMAT_VERSION: u32 = 8;
/// First format version of a pool kept in the disk domain.
pub const FORMAT_VERSION_DISK_LOG: u32 = 8;
/// First format version with the three-choice point index.
pub const FORMAT_VERSION_THREE_CHOICE: u32 = 7;
/// First format version with the ordered index in leaves.
pub const FORMAT_VERSION_LEAVES: u32 = 6;
/// First format version with the SSD tier.
pub const FORMAT_VERSION_TIER: u32 = 5;
/// First format version with batches and deadlines.
pub const FORMAT_VERSION_BATCHES: u32 = 4;
/// Oldest format version this build opens.
pub const FORMAT_VERSION_MIN: u32 = 1;
/// Bytes reserved for the superblock; segment 0 starts here.
pub const SUPERBLOCK_BYTES: u64 = 4096;

// Superblock field offsets.
pub const SB_MAGIC: usize = 0;
pub const SB_FORMAT_VERSION: usize = 8;
pub const SB_SUPERBLOCK_BYTES: usize = 12;
pub const SB_SEGMENT_BYTES: usize = 16;
pub const SB_HASH_SEED: usize = 24;
pub const SB_POOL_ID: usize = 32;
pub const SB_CREATED_UNIX_SECS: usize = 48;
pub const SB_FLAGS: usize = 56;
pub const SB_CRC: usize = 124;
/// Bytes covered by the superblock CRC (`0..SB_CRC`).
pub const SB_FIXED_BYTES: usize = 128;
/// Mutable word on its own cache line: bit 0 = closed cleanly, bits 1.. =
/// key count at that clean close.
pub const SB_CLEAN_STATE: u64 = 512;
/// Mutable word, same line: number of opens, rewritten at every open (its
/// low 24 bits tag persistent bucket lock words in the Baseline layout).
pub const SB_OPEN_COUNT: u64 = 520;
/// Batch commit table (format version 4): `BATCH_TABLE_ENTRIES` entries of
/// 16 bytes, one per batch being committed: word 0 = pool offset of the
/// batch's undo record | bit 0 "committed, deletes to finish", or 0 when the
/// entry is free; word 1 = the batch's sequence number (the undo record
/// carries the same). Zero in pools of older versions.
pub const SB_BATCH_TABLE: u64 = 1024;
pub const BATCH_TABLE_ENTRIES: usize = 64;
pub const BATCH_ENTRY_BYTES: u64 = 16;
/// The SSD tier's settings (format version 5, pools with `SB_FLAG_TIERED`):
/// the data directory's path and the threshold, drawn in `tier::ident`.
pub const SB_TIER: u64 = 2048;
/// Bytes reserved for the tier settings.
pub const SB_TIER_BYTES: usize = 1024;
/// Staged copy of the 128 fixed superblock bytes, written (and persisted)
/// before the fixed bytes are rewritten in place when a pool's format version
/// is raised; cleared after. An open that finds the fixed bytes damaged and
/// a valid staged copy finishes the rewrite.
pub const SB_STAGED: u64 = 3072;
/// Superblock flag: buckets keep a reader-writer lock word in their last
/// slot (the Baseline layout; `Mechanisms::volatile_lock_table` off).
pub const SB_FLAG_PM_BUCKET_LOCKS: u64 = 1;
/// Superblock flag: the pool keeps the ordered index (a persistent skiplist
/// over the keys, format version 2).
pub const SB_FLAG_ORDERED_INDEX: u64 = 2;
/// Superblock flag: the point index lives in DRAM and is rebuilt after open
/// from the ordered index, whose nodes name their keys' records (format
/// version 3; needs the ordered-index flag, no persistent bucket locks).
pub const SB_FLAG_DRAM_POINT_INDEX: u64 = 4;
/// Superblock flag: large values live on an SSD tier in the data directory
/// the settings at `SB_TIER` name (format version 5).
pub const SB_FLAG_TIERED: u64 = 8;
/// Superblock flag: the ordered index is kept in leaves (format version 6;
/// with the ordered-index and DRAM point-index flags).
pub const SB_FLAG_LEAVES: u64 = 16;
/// Superblock flag: a key of the (persistent) point index lives in its home
/// bucket, the next one, or a third bucket a little further on
/// (`index::Placement::ThreeChoice`; format version 7; not with the DRAM
/// point index or persistent bucket locks). Without it: home or next.
pub const SB_FLAG_THREE_CHOICE: u64 = 32;
/// Every flag this build understands.
pub const SB_KNOWN_FLAGS: u64 = SB_FLAG_PM_BUCKET_LOCKS
    | SB_FLAG_ORDERED_INDEX
    | SB_FLAG_DRAM_POINT_INDEX
    | SB_FLAG_TIERED
    | SB_FLAG_LEAVES
    | SB_FLAG_THREE_CHOICE;

/// Immutable superblock fields.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Superblock {
    pub format_version: u32,
    pub segment_bytes: u64,
    pub hash_seed: u64,
    pub pool_id: [u8; 16],
    pub created_unix_secs: u64,
    pub flags: u64,
}

impl Superblock {
    pub fn encode(&self) -> [u8; SB_FIXED_BYTES] {
        let mut b = [0u8; SB_FIXED_BYTES];
        b[SB_MAGIC..SB_MAGIC + 8].copy_from_slice(&MAGIC);
        put_u32(&mut b, SB_FORMAT_VERSION, self.format_version);
        put_u32(&mut b, SB_SUPERBLOCK_BYTES, SUPERBLOCK_BYTES as u32);
        put_u64(&mut b, SB_SEGMENT_BYTES, self.segment_bytes);
        put_u64(&mut b, SB_HASH_SEED, self.hash_seed);
        b[SB_POOL_ID..SB_POOL_ID + 16].copy_from_slice(&self.pool_id);
        put_u64(&mut b, SB_CREATED_UNIX_SECS, self.created_unix_secs);
        put_u64(&mut b, SB_FLAGS, self.flags);
        let crc = crc32c::crc32c(&b[..SB_CRC]);
        put_u32(&mut b, SB_CRC, crc);
        b
    }

    /// Decodes and validates; the error string says what is wrong.
    pub fn decode(b: &[u8]) -> Result<Superblock, SuperblockError> {
        if b.len() < SB_FIXED_BYTES {
            return Err(SuperblockError::Short);
        }
        if b[SB_MAGIC..SB_MAGIC + 8] != MAGIC {
            return Err(SuperblockError::BadMagic);
        }
        let stored = get_u32(b, SB_CRC);
        let computed = crc32c::crc32c(&b[..SB_CRC]);
        let version = get_u32(b, SB_FORMAT_VERSION);
        if stored != computed {
            return Err(SuperblockError::Damaged(format!(
                "checksum {stored:#010x} does not match contents {computed:#010x}"
            )));
        }
        if !(FORMAT_VERSION_MIN..=FORMAT_VERSION).contains(&version) {
            return Err(SuperblockError::Version(version));
        }
        let sb = Superblock {
            format_version: version,
            segment_bytes: get_u64(b, SB_SEGMENT_BYTES),
            hash_seed: get_u64(b, SB_HASH_SEED),
            pool_id: b[SB_POOL_ID..SB_POOL_ID + 16].try_into().unwrap(),
            created_unix_secs: get_u64(b, SB_CREATED_UNIX_SECS),
            flags: get_u64(b, SB_FLAGS),
        };
        if version < 2 && sb.flags & SB_FLAG_ORDERED_INDEX != 0 {
            return Err(SuperblockError::Damaged(
                "a version-1 superblock with the ordered-index flag".into(),
            ));
        }
        if sb.flags & SB_FLAG_DRAM_POINT_INDEX != 0 {
            if version < 3 {
                return Err(SuperblockError::Damaged(format!(
                    "a version-{version} superblock with the DRAM point-index flag"
                )));
            }
            if sb.flags & SB_FLAG_ORDERED_INDEX == 0 || sb.flags & SB_FLAG_PM_BUCKET_LOCKS != 0 {
                return Err(SuperblockError::Damaged(format!(
                    "the DRAM point-index flag with flags {:#x} (needs the ordered index and no persistent bucket locks)",
                    sb.flags
                )));
            }
        }
        if sb.flags & SB_FLAG_LEAVES != 0
            && (version < FORMAT_VERSION_LEAVES || sb.flags & SB_FLAG_DRAM_POINT_INDEX == 0)
        {
            return Err(SuperblockError::Damaged(format!(
                "a version-{version} superblock with the leaves flag and flags {:#x} (needs version 6 and the DRAM point index)",
                sb.flags
            )));
        }
        if sb.flags & SB_FLAG_THREE_CHOICE != 0
            && (version < FORMAT_VERSION_THREE_CHOICE
                || sb.flags & (SB_FLAG_DRAM_POINT_INDEX | SB_FLAG_PM_BUCKET_LOCKS) != 0)
        {
            return Err(SuperblockError::Damaged(format!(
                "a version-{version} superblock with the three-choice flag and flags {:#x} (needs version 7, the point index in PM and no persistent bucket locks)",
                sb.flags
            )));
        }
        if version < FORMAT_VERSION_TIER && sb.flags & SB_FLAG_TIERED != 0 {
            return Err(SuperblockError::Damaged(format!(
                "a version-{version} superblock with the SSD-tier flag"
            )));
        }
        if sb.flags & !SB_KNOWN_FLAGS != 0 {
            return Err(SuperblockError::Damaged(format!(
                "unknown flags {:#x}",
                sb.flags & !SB_KNOWN_FLAGS
            )));
        }
        if get_u32(b, SB_SUPERBLOCK_BYTES) as u64 != SUPERBLOCK_BYTES {
            return Err(SuperblockError::Damaged("superblock size field".into()));
        }
        if !valid_segment_bytes(sb.segment_bytes) {
            return Err(SuperblockError::Damaged(format!(
                "segment size {} is not a power of two in 64 KiB..=64 MiB",
                sb.segment_bytes
            )));
        }
        Ok(sb)
    }
}

#[derive(Debug)]
pub enum SuperblockError {
    Short,
    BadMagic,
    Damaged(String),
    Version(u32),
}

pub const MIN_SEGMENT_BYTES: u64 = 64 << 10;
pub const MAX_SEGMENT_BYTES: u64 = 64 << 20;

pub fn valid_segment_bytes(n: u64) -> bool {
    n.is_power_of_two() && (MIN_SEGMENT_BYTES..=MAX_SEGMENT_BYTES).contains(&n)
}

// ---------------------------------------------------------------- segments

/// Bytes of the header at the start of every segment.
pub const SEGMENT_HEADER_BYTES: u64 = 64;
pub const SEG_STATE: usize = 0;
pub const SEG_LANE_OR_DEPTH: usize = 8;
pub const SEG_RUN_SEGMENTS: usize = 12;
pub const SEG_BASE_SEQ_OR_PREFIX: usize = 16;
/// Tag byte in the state word, so random bytes rarely pass as a header.
pub const SEG_TAG: u8 = 0xA7;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum SegmentKind {
    Free = 0,
    /// Records appended by one lane.
    Log = 1,
    /// Buckets of the point index.
    Index = 2,
    /// First segment of a run holding one large record.
    Large = 3,
    /// Nodes of the ordered index (skiplist), all of one size class.
    Ordered = 4,
}

/// Decoded segment header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SegmentHeader {
    pub kind: SegmentKind,
    /// Log/Large: lane that owns it. Index: local depth. Ordered: log2 of
    /// the node size of its class.
    pub lane_or_depth: u32,
    /// Large: number of segments in the run. Others: 1.
    pub run_segments: u32,
    /// Log: lane sequence counter at allocation. Index: hash prefix (the top
    /// `depth` bits of the hash, right-aligned). Ordered: 1 when its first
    /// node is the skiplist head, else 0.
    pub base_seq_or_prefix: u64,
}

/// What a header's state word says.
#[derive(Debug, PartialEq, Eq)]
pub enum HeaderState {
    Free,
    Valid(SegmentHeader),
    /// Non-zero state word that does not verify: media damage.
    Damaged(String),
}

impl SegmentHeader {
    /// The 56 bytes after the state word.
    pub fn encode_body(&self) -> [u8; 56] {
        let mut b = [0u8; 56];
        put_u32(&mut b, SEG_LANE_OR_DEPTH - 8, self.lane_or_depth);
        put_u32(&mut b, SEG_RUN_SEGMENTS - 8, self.run_segments);
        put_u64(&mut b, SEG_BASE_SEQ_OR_PREFIX - 8, self.base_seq_or_prefix);
        b
    }

    /// The state word committing a body: kind | tag | crc32c(body) << 32.
    pub fn state_word(&self, body: &[u8; 56]) -> u64 {
        (self.kind as u64) | ((SEG_TAG as u64) << 8) | ((crc32c::crc32c(body) as u64) << 32)
    }

    pub fn decode(header: &[u8]) -> HeaderState {
        let state = get_u64(header, SEG_STATE);
        if state == 0 {
            return HeaderState::Free;
        }
        let body = &header[8..64];
        let kind = match state & 0xff {
            1 => SegmentKind::Log,
            2 => SegmentKind::Index,
            3 => SegmentKind::Large,
            4 => SegmentKind::Ordered,
            k => return HeaderState::Damaged(format!("unknown segment kind {k}")),
        };
        if (state >> 8) & 0xff != SEG_TAG as u64 {
            return HeaderState::Damaged("bad header tag".into());
        }
        if (state >> 16) & 0xffff != 0 {
            return HeaderState::Damaged("reserved bits of the state word are set".into());
        }
        if (state >> 32) as u32 != crc32c::crc32c(body) {
            return HeaderState::Damaged("header checksum mismatch".into());
        }
        HeaderState::Valid(SegmentHeader {
            kind,
            lane_or_depth: get_u32(header, SEG_LANE_OR_DEPTH),
            run_segments: get_u32(header, SEG_RUN_SEGMENTS),
            base_seq_or_prefix: get_u64(header, SEG_BASE_SEQ_OR_PREFIX),
        })
    }
}

// ----------------------------------------------------------------- records

pub const RECORD_HEADER_BYTES: usize = 24;
/// Longest key accepted, in bytes (64 KiB).
pub const MAX_KEY_BYTES: usize = 64 << 10;
/// Longest value accepted, in bytes (64 MiB).
pub const MAX_VALUE_BYTES: usize = 64 << 20;
pub const REC_CRC: usize = 0;
pub const REC_KEY_LEN: usize = 4;
pub const REC_VALUE_LEN: usize = 8;
pub const REC_FLAGS: usize = 12;
pub const REC_SEQ: usize = 16;
/// Record flag: written by a read-modify-write (`update`); such a record must
/// never let a concurrent `put` be eliminated (the update read the old value).
pub const REC_FLAG_RMW: u32 = 1;
/// Record flag: written by an atomic batch or transaction commit; every
/// record of one batch carries the batch's sequence number. While the batch
/// publishes, a reader that meets such a record waits for it to finish.
pub const REC_FLAG_BATCH: u32 = 2;
/// Record flag: a batch's delete of its key (no value): the key is absent.
/// A word names it only while its batch publishes, or after a crash inside
/// the commit until recovery finishes the deletes.
pub const REC_FLAG_TOMBSTONE: u32 = 4;
/// Record flag: a batch's undo list (empty key; the value is pairs of
/// little-endian u64 `(word address | 1 if the op deletes, old word)`).
/// Never named by a slot; the batch commit table names it.
pub const REC_FLAG_UNDO: u32 = 8;
/// Record flag: the key has a deadline, stored as 8 little-endian bytes of
/// milliseconds of Unix time right after the header, before the key (on the
/// cache lines a reader touches anyway; covered by the CRC).
pub const REC_FLAG_DEADLINE: u32 = 16;
/// Record flag: the value lives on the SSD tier; the record's value bytes
/// are an extent descriptor, the value's unaligned tail and patches not yet
/// merged (drawn in `tier::extent`; format version 5).
pub const REC_FLAG_EXTERNAL: u32 = 32;
/// Every record flag this build understands.
pub const REC_KNOWN_FLAGS: u32 = REC_FLAG_RMW
    | REC_FLAG_BATCH
    | REC_FLAG_TOMBSTONE
    | REC_FLAG_UNDO
    | REC_FLAG_DEADLINE
    | REC_FLAG_EXTERNAL;
/// Bytes of the deadline between the header and the key of a
/// `REC_FLAG_DEADLINE` record.
pub const DEADLINE_BYTES: usize = 8;
/// Records are 8-byte aligned.
pub const RECORD_ALIGN: u64 = 8;

/// Total bytes a record without a deadline occupies in the log (header,
/// key, value, padding).
#[cfg(test)]
pub fn record_bytes(key_len: usize, value_len: usize) -> u64 {
    record_bytes_with(key_len, value_len, 0)
}

/// Total bytes a record with `flags` occupies (a deadline adds 8).
#[inline]
pub fn record_bytes_with(key_len: usize, value_len: usize, flags: u32) -> u64 {
    (RECORD_HEADER_BYTES as u64 + key_len as u64 + value_len as u64 + ext_bytes(flags) as u64)
        .next_multiple_of(RECORD_ALIGN)
}

/// Bytes between the header and the key that `flags` call for (the deadline).
#[inline]
pub fn ext_bytes(flags: u32) -> usize {
    if flags & REC_FLAG_DEADLINE != 0 {
        DEADLINE_BYTES
    } else {
        0
    }
}

/// Decoded record header.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct RecordHeader {
    pub crc: u32,
    pub key_len: u32,
    pub value_len: u32,
    pub flags: u32,
    pub seq: u64,
}

impl RecordHeader {
    #[inline]
    pub fn decode(b: &[u8]) -> RecordHeader {
        RecordHeader {
            crc: get_u32(b, REC_CRC),
            key_len: get_u32(b, REC_KEY_LEN),
            value_len: get_u32(b, REC_VALUE_LEN),
            flags: get_u32(b, REC_FLAGS),
            seq: get_u64(b, REC_SEQ),
        }
    }

    /// Header bytes of a record, CRC filled in. `REC_FLAG_DEADLINE` is set
    /// from `deadline`; the deadline bytes follow the header, before the
    /// key, and are covered by the CRC.
    #[inline]
    pub fn encode(
        key: &[u8],
        value: &[u8],
        flags: u32,
        seq: u64,
        deadline: Option<u64>,
    ) -> [u8; RECORD_HEADER_BYTES] {
        let flags = match deadline {
            Some(_) => flags | REC_FLAG_DEADLINE,
            None => flags & !REC_FLAG_DEADLINE,
        };
        let mut b = [0u8; RECORD_HEADER_BYTES];
        put_u32(&mut b, REC_KEY_LEN, key.len() as u32);
        put_u32(&mut b, REC_VALUE_LEN, value.len() as u32);
        put_u32(&mut b, REC_FLAGS, flags);
        put_u64(&mut b, REC_SEQ, seq);
        let mut crc = crc32c::crc32c(&b[4..]);
        if let Some(d) = deadline {
            crc = crc32c::crc32c_append(crc, &d.to_le_bytes());
        }
        let crc = crc32c::crc32c_append(crc32c::crc32c_append(crc, key), value);
        put_u32(&mut b, REC_CRC, crc);
        b
    }

    /// Bytes the record occupies in the log, padding included.
    #[inline]
    pub fn total_bytes(&self) -> u64 {
        record_bytes_with(self.key_len as usize, self.value_len as usize, self.flags)
    }

    /// Bytes the record's CRC covers: everything after the CRC field up to
    /// the padding.
    #[inline]
    pub fn body_len(&self) -> usize {
        RECORD_HEADER_BYTES - 4 + self.key_len as usize + self.value_len as usize + self.ext_len()
    }

    /// Bytes between the header and the key (the deadline, when the record
    /// has one).
    #[inline]
    pub fn ext_len(&self) -> usize {
        ext_bytes(self.flags)
    }

    /// Offset of the deadline from the record's start, when it has one.
    #[inline]
    pub fn deadline_at(&self) -> Option<u64> {
        (self.flags & REC_FLAG_DEADLINE != 0).then_some(RECORD_HEADER_BYTES as u64)
    }

    /// Offset of the key from the record's start.
    #[inline]
    pub fn key_at(&self) -> u64 {
        (RECORD_HEADER_BYTES + self.ext_len()) as u64
    }

    /// Offset of the value from the record's start.
    #[inline]
    pub fn value_at(&self) -> u64 {
        self.key_at() + self.key_len as u64
    }
}

/// CRC32C a record should carry, computed from its bytes after the CRC field.
pub fn record_crc(record_after_crc: &[u8]) -> u32 {
    crc32c::crc32c(record_after_crc)
}

// ------------------------------------------------------- ordered index nodes

/// Skiplist node: `next` (pool offset of the next node, 0 at the end).
pub const NODE_NEXT: usize = 0;
/// Record word: with the DRAM point index, the key's record as a slot word
/// (`Slot` encoding, two-phase persist bit; 0 = no record); 0 otherwise.
pub const NODE_RECORD: usize = 8;
pub const NODE_KEY_LEN: usize = 16;
/// CRC32C over the key length (4 bytes, little-endian) and the key.
pub const NODE_CRC: usize = 20;
pub const NODE_HEADER_BYTES: usize = 24;
/// Smallest node size class: 2^5 = 32 bytes.
pub const NODE_MIN_CLASS: u32 = 5;
/// Node size classes are powers of two from 32 bytes up to half a segment.
pub fn node_class_for(key_len: usize) -> u32 {
    let need = (NODE_HEADER_BYTES + key_len).next_power_of_two() as u64;
    need.trailing_zeros().max(NODE_MIN_CLASS)
}
/// Largest key the ordered index can hold with `segment_bytes` segments.
pub fn node_max_key(segment_bytes: u64) -> usize {
    (segment_bytes / 2) as usize - NODE_HEADER_BYTES
}
/// CRC a node carries for `key`.
pub fn node_crc(key: &[u8]) -> u32 {
    crc32c::crc32c_append(crc32c::crc32c(&(key.len() as u32).to_le_bytes()), key)
}

// ------------------------------------------------------- ordered-index leaves

/// Leaf header word 0: `LEAF_MAGIC` in bits 0..32, the low key's length in
/// bits 32..64. Stored last, after everything else of the leaf is durable:
/// a slot whose word 0 lacks the magic is not a leaf.
pub const LEAF_WORD0: usize = 0;
pub const LEAF_MAGIC: u32 = 0x4641_454c;
/// CRC32C over the low key's length (4 bytes, little-endian) and the key.
pub const LEAF_LOW_CRC: usize = 8;
/// Where a low key of at most `LEAF_INLINE_LOW` bytes lives; a longer one
/// lives at `LEAF_BODY_BYTES` (the leaf's size class is then larger).
pub const LEAF_LOW_INLINE: usize = 16;
pub const LEAF_INLINE_LOW: usize = 48;
pub const LEAF_HEADER_BYTES: usize = 64;
/// Entries per leaf; an entry is a record word (slot encoding) and the
/// key's first 8 bytes, big-endian, zero padded (its *prefix*).
pub const LEAF_ENTRIES: usize = 60;
pub const LEAF_ENTRY_BYTES: usize = 16;
pub const LEAF_BODY_BYTES: usize = LEAF_HEADER_BYTES + LEAF_ENTRIES * LEAF_ENTRY_BYTES;
/// Smallest leaf size class: 2^10 = 1 KiB.
pub const LEAF_MIN_CLASS: u32 = 10;
/// The size class of a leaf whose low key is `low_len` bytes.
pub fn leaf_class_for(low_len: usize) -> u32 {
    let extra = if low_len <= LEAF_INLINE_LOW {
        0
    } else {
        low_len
    };
    let need = (LEAF_BODY_BYTES + extra).next_power_of_two() as u64;
    need.trailing_zeros().max(LEAF_MIN_CLASS)
}
/// Largest key a leaf pool's ordered index holds (a low key must fit a
/// leaf of at most half a segment).
pub fn leaf_max_key(segment_bytes: u64) -> usize {
    (segment_bytes / 2) as usize - LEAF_BODY_BYTES
}
/// The prefix a leaf entry keeps of `key`.
#[inline]
pub fn key_prefix(key: &[u8]) -> u64 {
    let mut b = [0u8; 8];
    let n = key.len().min(8);
    b[..n].copy_from_slice(&key[..n]);
    u64::from_be_bytes(b)
}

// ------------------------------------------------------------ bucket, slot

pub const SLOT_BYTES: u64 = 8;
pub const SLOTS_PER_BUCKET: usize = 8;
pub const BUCKET_BYTES: u64 = 64;

/// A slot word: `fingerprint:16 | record offset / 8 : 47 | persist:1`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Slot(pub u64);

impl Slot {
    pub const EMPTY: Slot = Slot(0);
    pub const PERSIST_BIT: u64 = 1;
    /// Largest record offset a slot can hold (47 bits of 8-byte units).
    pub const MAX_OFFSET: u64 = ((1u64 << 47) - 1) * 8;

    #[inline]
    pub fn new(fingerprint: u16, record_offset: u64, persist: bool) -> Slot {
        debug_assert!(record_offset.is_multiple_of(8) && record_offset <= Self::MAX_OFFSET);
        Slot(((fingerprint as u64) << 48) | ((record_offset >> 3) << 1) | persist as u64)
    }

    /// Offset stored in a delete marker (inside the superblock, never a record).
    pub const MARKER_OFFSET: u64 = 8;

    /// A delete marker for `fingerprint`, not yet known durable.
    #[inline]
    pub fn delete_marker(fingerprint: u16) -> Slot {
        Slot::new(fingerprint, Self::MARKER_OFFSET, false)
    }

    #[inline]
    pub fn fingerprint(self) -> u16 {
        (self.0 >> 48) as u16
    }

    #[inline]
    pub fn offset(self) -> u64 {
        ((self.0 >> 1) & ((1u64 << 47) - 1)) << 3
    }

    #[inline]
    pub fn persisted(self) -> bool {
        self.0 & Self::PERSIST_BIT != 0
    }

    #[inline]
    pub fn with_persist(self) -> Slot {
        Slot(self.0 | Self::PERSIST_BIT)
    }

    #[inline]
    pub fn is_empty(self) -> bool {
        self.0 == 0
    }

    /// A delete marker.
    #[inline]
    pub fn is_marker(self) -> bool {
        self.offset() == Self::MARKER_OFFSET
    }

    /// Names a record: neither empty nor a delete marker.
    #[inline]
    pub fn names_record(self) -> bool {
        !self.is_empty() && !self.is_marker()
    }
}

// ------------------------------------------------------------------ helpers

#[inline]
pub fn get_u32(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(b[at..at + 4].try_into().unwrap())
}

#[inline]
pub fn get_u64(b: &[u8], at: usize) -> u64 {
    u64::from_le_bytes(b[at..at + 8].try_into().unwrap())
}

#[inline]
pub fn put_u32(b: &mut [u8], at: usize, v: u32) {
    b[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

#[inline]
pub fn put_u64(b: &mut [u8], at: usize, v: u64) {
    b[at..at + 8].copy_from_slice(&v.to_le_bytes());
}

const _: () = assert!(SLOT_BYTES as usize == std::mem::size_of::<u64>());
const _: () = assert!(BUCKET_BYTES == SLOT_BYTES * SLOTS_PER_BUCKET as u64);
const _: () = assert!(SEGMENT_HEADER_BYTES == BUCKET_BYTES);
const _: () =
    assert!(SB_CLEAN_STATE as usize >= SB_FIXED_BYTES && SB_CLEAN_STATE.is_multiple_of(64));
const _: () = assert!(RECORD_HEADER_BYTES.is_multiple_of(RECORD_ALIGN as usize));

#[cfg(test)]
mod tests {
    //! These assert every offset `docs/design.md` states; change both together.
    use super::*;

    #[test]
    fn superblock_offsets_match_design_doc() {
        assert_eq!(SUPERBLOCK_BYTES, 4096);
        assert_eq!(
            [
                SB_MAGIC,
                SB_FORMAT_VERSION,
                SB_SUPERBLOCK_BYTES,
                SB_SEGMENT_BYTES,
                SB_HASH_SEED
            ],
            [0, 8, 12, 16, 24]
        );
        assert_eq!(
            [SB_POOL_ID, SB_CREATED_UNIX_SECS, SB_FLAGS, SB_CRC],
            [32, 48, 56, 124]
        );
        assert_eq!(SB_CLEAN_STATE, 512);
        let sb = Superblock {
            format_version: FORMAT_VERSION,
            segment_bytes: 1 << 20,
            hash_seed: 0x1122_3344_5566_7788,
            pool_id: [7; 16],
            created_unix_secs: 99,
            flags: 0,
        };
        let b = sb.encode();
        assert_eq!(&b[0..8], b"PERSIMMN");
        assert_eq!(get_u32(&b, 8), 8);
        assert_eq!(get_u32(&b, 12), 4096);
        assert_eq!(get_u64(&b, 16), 1 << 20);
        assert_eq!(get_u64(&b, 24), 0x1122_3344_5566_7788);
        assert_eq!(get_u32(&b, 124), crc32c::crc32c(&b[..124]));
        assert_eq!(Superblock::decode(&b).unwrap(), sb);
    }

    #[test]
    fn superblock_rejects_damage_and_new_versions() {
        let sb = Superblock {
            format_version: FORMAT_VERSION,
            segment_bytes: 1 << 20,
            hash_seed: 1,
            pool_id: [0; 16],
            created_unix_secs: 0,
            flags: 0,
        };
        let mut b = sb.encode();
        b[30] ^= 1;
        assert!(matches!(
            Superblock::decode(&b),
            Err(SuperblockError::Damaged(_))
        ));
        let mut next = sb;
        next.format_version = FORMAT_VERSION + 1;
        assert!(matches!(
            Superblock::decode(&next.encode()),
            Err(SuperblockError::Version(9))
        ));
        // The three-choice flag: version 7, PM point index, DRAM lock table.
        let mut three = sb;
        three.flags = SB_FLAG_THREE_CHOICE | SB_FLAG_ORDERED_INDEX | SB_FLAG_TIERED;
        assert_eq!(Superblock::decode(&three.encode()).unwrap(), three);
        for (version, flags) in [
            (6, SB_FLAG_THREE_CHOICE),
            (7, SB_FLAG_THREE_CHOICE | SB_FLAG_PM_BUCKET_LOCKS),
            (
                7,
                SB_FLAG_THREE_CHOICE | SB_FLAG_DRAM_POINT_INDEX | SB_FLAG_ORDERED_INDEX,
            ),
        ] {
            let mut bad = sb;
            bad.format_version = version;
            bad.flags = flags;
            assert!(
                matches!(
                    Superblock::decode(&bad.encode()),
                    Err(SuperblockError::Damaged(_))
                ),
                "version {version} flags {flags:#x}"
            );
        }
        // The leaves flag: version 6, with the DRAM point index.
        let mut leaves = sb;
        leaves.flags = SB_FLAG_LEAVES | SB_FLAG_DRAM_POINT_INDEX | SB_FLAG_ORDERED_INDEX;
        assert_eq!(Superblock::decode(&leaves.encode()).unwrap(), leaves);
        leaves.format_version = 5;
        assert!(matches!(
            Superblock::decode(&leaves.encode()),
            Err(SuperblockError::Damaged(_))
        ));
        leaves.format_version = 6;
        leaves.flags = SB_FLAG_LEAVES | SB_FLAG_ORDERED_INDEX;
        assert!(matches!(
            Superblock::decode(&leaves.encode()),
            Err(SuperblockError::Damaged(_))
        ));
        // The tier flag: version 5 on.
        let mut tiered = sb;
        tiered.flags = SB_FLAG_TIERED;
        assert_eq!(Superblock::decode(&tiered.encode()).unwrap(), tiered);
        tiered.format_version = 4;
        assert!(matches!(
            Superblock::decode(&tiered.encode()),
            Err(SuperblockError::Damaged(_))
        ));
        // The DRAM point-index flag: version 3 and the ordered index only.
        let mut dram = sb;
        dram.flags = SB_FLAG_DRAM_POINT_INDEX | SB_FLAG_ORDERED_INDEX;
        assert_eq!(Superblock::decode(&dram.encode()).unwrap(), dram);
        for (version, flags) in [
            (2, SB_FLAG_DRAM_POINT_INDEX | SB_FLAG_ORDERED_INDEX),
            (3, SB_FLAG_DRAM_POINT_INDEX),
            (
                3,
                SB_FLAG_DRAM_POINT_INDEX | SB_FLAG_ORDERED_INDEX | SB_FLAG_PM_BUCKET_LOCKS,
            ),
        ] {
            let mut bad = sb;
            bad.format_version = version;
            bad.flags = flags;
            assert!(
                matches!(
                    Superblock::decode(&bad.encode()),
                    Err(SuperblockError::Damaged(_))
                ),
                "version {version} flags {flags:#x}"
            );
        }
        let mut v0 = sb;
        v0.format_version = 0;
        assert!(matches!(
            Superblock::decode(&v0.encode()),
            Err(SuperblockError::Version(0))
        ));
        // Version 1 is read, but never with the ordered-index flag.
        let mut v1 = sb;
        v1.format_version = 1;
        assert_eq!(Superblock::decode(&v1.encode()).unwrap(), v1);
        v1.flags = SB_FLAG_ORDERED_INDEX;
        assert!(matches!(
            Superblock::decode(&v1.encode()),
            Err(SuperblockError::Damaged(_))
        ));
        let mut bad = sb.encode();
        bad[0] = b'X';
        assert!(matches!(
            Superblock::decode(&bad),
            Err(SuperblockError::BadMagic)
        ));
    }

    #[test]
    fn segment_header_offsets_match_design_doc() {
        assert_eq!(SEGMENT_HEADER_BYTES, 64);
        assert_eq!(
            [
                SEG_STATE,
                SEG_LANE_OR_DEPTH,
                SEG_RUN_SEGMENTS,
                SEG_BASE_SEQ_OR_PREFIX
            ],
            [0, 8, 12, 16]
        );
        let h = SegmentHeader {
            kind: SegmentKind::Log,
            lane_or_depth: 3,
            run_segments: 1,
            base_seq_or_prefix: 0xABCD,
        };
        let body = h.encode_body();
        let state = h.state_word(&body);
        assert_eq!(state & 0xff, 1);
        assert_eq!((state >> 8) & 0xff, 0xA7);
        let mut full = [0u8; 64];
        full[..8].copy_from_slice(&state.to_le_bytes());
        full[8..].copy_from_slice(&body);
        assert_eq!(get_u32(&full, 8), 3);
        assert_eq!(get_u32(&full, 12), 1);
        assert_eq!(get_u64(&full, 16), 0xABCD);
        assert_eq!(SegmentHeader::decode(&full), HeaderState::Valid(h));
        full[20] ^= 0x10;
        assert!(matches!(
            SegmentHeader::decode(&full),
            HeaderState::Damaged(_)
        ));
        assert_eq!(SegmentHeader::decode(&[0u8; 64]), HeaderState::Free);
    }

    #[test]
    fn record_offsets_match_design_doc() {
        assert_eq!(RECORD_HEADER_BYTES, 24);
        assert_eq!(
            [REC_CRC, REC_KEY_LEN, REC_VALUE_LEN, REC_FLAGS, REC_SEQ],
            [0, 4, 8, 12, 16]
        );
        let h = RecordHeader::encode(b"key", b"value", REC_FLAG_RMW, 42, None);
        let d = RecordHeader::decode(&h);
        assert_eq!((d.key_len, d.value_len, d.flags, d.seq), (3, 5, 1, 42));
        let mut all = h.to_vec();
        all.extend_from_slice(b"keyvalue");
        assert_eq!(record_crc(&all[4..]), d.crc);
        assert_eq!(record_bytes(8, 64), 96);
        assert_eq!(record_bytes(3, 5), 32);
        assert_eq!(record_bytes(0, 0), 24);
        // A deadline: 8 bytes between the header and the key, covered by the CRC.
        let h = RecordHeader::encode(b"key", b"value", REC_FLAG_BATCH, 7, Some(0x0102_0304));
        let d = RecordHeader::decode(&h);
        assert_eq!(d.flags, REC_FLAG_BATCH | REC_FLAG_DEADLINE);
        assert_eq!(d.deadline_at(), Some(24));
        assert_eq!((d.key_at(), d.value_at()), (32, 35));
        assert_eq!(d.total_bytes(), 40);
        assert_eq!(d.body_len(), 20 + 8 + 3 + 5);
        let mut all = h.to_vec();
        all.extend_from_slice(&0x0102_0304u64.to_le_bytes());
        all.extend_from_slice(b"keyvalue");
        assert_eq!(record_crc(&all[4..]), d.crc);
        assert_eq!(
            [
                REC_FLAG_RMW,
                REC_FLAG_BATCH,
                REC_FLAG_TOMBSTONE,
                REC_FLAG_UNDO,
                REC_FLAG_DEADLINE
            ],
            [1, 2, 4, 8, 16]
        );
    }

    #[test]
    fn batch_table_sits_in_the_superblock() {
        assert_eq!(
            (SB_BATCH_TABLE, BATCH_ENTRY_BYTES, BATCH_TABLE_ENTRIES),
            (1024, 16, 64)
        );
        assert_eq!(SB_STAGED, 3072);
        let table_end = SB_BATCH_TABLE + BATCH_ENTRY_BYTES * BATCH_TABLE_ENTRIES as u64;
        assert!(SB_OPEN_COUNT + 8 <= SB_BATCH_TABLE && table_end <= SB_STAGED);
        assert!(SB_STAGED + SB_FIXED_BYTES as u64 <= SUPERBLOCK_BYTES);
    }

    /// Rows `| offset | bytes | field |` of the table between
    /// `<!-- layout:NAME -->` and `<!-- /layout -->` in docs/design.md.
    fn design_table(name: &str) -> Vec<(u64, String)> {
        let doc = include_str!("../../../docs/design.md");
        let start = doc
            .find(&format!("<!-- layout:{name} -->"))
            .unwrap_or_else(|| panic!("table {name} missing from docs/design.md"));
        let body = &doc[start..];
        let body = &body[..body.find("<!-- /layout -->").expect("table end")];
        body.lines()
            .filter_map(|l| {
                let cells: Vec<&str> = l.split('|').map(str::trim).collect();
                let first = cells.get(1)?;
                let offset = first.split('–').next()?.parse::<u64>().ok()?;
                Some((
                    offset,
                    cells.get(3).map(|c| c.to_string()).unwrap_or_default(),
                ))
            })
            .collect()
    }

    #[test]
    fn design_doc_tables_match_code() {
        let sb: Vec<u64> = design_table("superblock").iter().map(|r| r.0).collect();
        assert_eq!(
            sb,
            vec![
                SB_MAGIC as u64,
                SB_FORMAT_VERSION as u64,
                SB_SUPERBLOCK_BYTES as u64,
                SB_SEGMENT_BYTES as u64,
                SB_HASH_SEED as u64,
                SB_POOL_ID as u64,
                SB_CREATED_UNIX_SECS as u64,
                SB_FLAGS as u64,
                SB_CRC as u64,
                SB_CLEAN_STATE,
                SB_OPEN_COUNT,
                SB_BATCH_TABLE,
                SB_TIER,
                SB_STAGED,
            ]
        );
        // The external value field (tier::extent): the doc's offsets hold
        // what `encode` writes there.
        let ext: Vec<u64> = design_table("external-value").iter().map(|r| r.0).collect();
        assert_eq!(ext, vec![0, 4, 8, 16, 20, 24, 28, 32]);
        let e = crate::tier::extent::Extent {
            file: 7,
            offset: 3 << 12,
            bytes: 2 << 12,
            crc: 0xABCD,
        };
        let f = crate::tier::extent::encode(&e, 9000, b"tail", 2);
        assert_eq!(
            (
                get_u32(&f, 0),
                get_u32(&f, 4),
                get_u64(&f, 8),
                get_u32(&f, 16)
            ),
            (7, 2 << 12, 3 << 12, 0xABCD)
        );
        assert_eq!(
            (get_u32(&f, 20), get_u32(&f, 24), get_u32(&f, 28)),
            (9000, 4, 2)
        );
        assert_eq!(&f[32..], b"tail");
        let seg: Vec<u64> = design_table("segment").iter().map(|r| r.0).collect();
        assert_eq!(
            seg,
            vec![
                SEG_STATE as u64,
                SEG_LANE_OR_DEPTH as u64,
                SEG_RUN_SEGMENTS as u64,
                SEG_BASE_SEQ_OR_PREFIX as u64,
                24
            ]
        );
        let rec: Vec<u64> = design_table("record").iter().map(|r| r.0).collect();
        assert_eq!(
            rec,
            vec![
                REC_CRC as u64,
                REC_KEY_LEN as u64,
                REC_VALUE_LEN as u64,
                REC_FLAGS as u64,
                REC_SEQ as u64,
                RECORD_HEADER_BYTES as u64
            ]
        );
        let node: Vec<u64> = design_table("node").iter().map(|r| r.0).collect();
        assert_eq!(
            node,
            vec![
                NODE_NEXT as u64,
                NODE_RECORD as u64,
                NODE_KEY_LEN as u64,
                NODE_CRC as u64,
                NODE_HEADER_BYTES as u64
            ]
        );
        let leaf: Vec<u64> = design_table("leaf").iter().map(|r| r.0).collect();
        assert_eq!(
            leaf,
            vec![
                LEAF_WORD0 as u64,
                LEAF_LOW_CRC as u64,
                LEAF_LOW_INLINE as u64,
                LEAF_HEADER_BYTES as u64,
                LEAF_BODY_BYTES as u64
            ]
        );
        assert_eq!(LEAF_HEADER_BYTES + LEAF_ENTRIES * LEAF_ENTRY_BYTES, 1024);
        assert_eq!(LEAF_LOW_INLINE + LEAF_INLINE_LOW, LEAF_HEADER_BYTES);
        assert_eq!(leaf_class_for(48), 10);
        assert_eq!(leaf_class_for(49), 11);
        assert_eq!(key_prefix(b"ab"), 0x6162_0000_0000_0000);
        // Slot bit fields: fingerprint from bit 48, offset/8 from bit 1, persist bit 0.
        let slot: Vec<u64> = design_table("slot").iter().map(|r| r.0).collect();
        assert_eq!(slot, vec![48, 1, 0]);
        let s = Slot::new(0xFFFF, 8 * 3, true);
        assert_eq!(s.0 >> 48, 0xFFFF);
        assert_eq!((s.0 >> 1) & ((1 << 47) - 1), 3);
        assert_eq!(s.0 & 1, 1);
    }

    #[test]
    fn slot_packs_fingerprint_offset_persist() {
        let s = Slot::new(0xBEEF, 0x1234_5678, false);
        assert_eq!(s.0 >> 48, 0xBEEF);
        assert_eq!(s.0 & 1, 0);
        assert_eq!((s.0 >> 1) & ((1 << 47) - 1), 0x1234_5678 >> 3);
        assert_eq!(s.offset(), 0x1234_5678);
        assert_eq!(s.fingerprint(), 0xBEEF);
        assert!(s.with_persist().persisted());
        let max = Slot::new(0xFFFF, Slot::MAX_OFFSET, true);
        assert_eq!(max.offset(), Slot::MAX_OFFSET);
        assert!(Slot::delete_marker(5).is_marker());
        assert!(Slot::delete_marker(0).is_marker());
        assert_ne!(Slot::delete_marker(0), Slot::EMPTY);
        assert!(!Slot::EMPTY.is_marker());
        assert_eq!(BUCKET_BYTES, 64);
        assert_eq!(SLOTS_PER_BUCKET, 8);
    }
}
