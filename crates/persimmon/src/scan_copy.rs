//! The copy of the segment-header scan kept beside the pool across a clean
//! close (`<pool>.segments`), so that an open after a clean close reads one
//! small file instead of one header line per segment.
//!
//! What open needs from the headers (§7 of docs/design.md) is each
//! segment's kind, the index segments' depths and prefixes, each lane's
//! newest log segment and highest base sequence, and the ordered index's
//! segments: a [`ScanResult`]. At a clean close, once nothing can write a
//! segment header any more, the engine scans the headers of the pool it
//! has mapped (warm) and writes what it found here; the next open uses it
//! instead of scanning again.
//!
//! Invariants:
//! - The copy is a cache, never the truth: it is used only when the pool's
//!   clean-state word says the last session closed cleanly, its tag equals
//!   the open count of that session (the superblock's open count before
//!   this open raises it), its pool id is the pool's, its segment count is
//!   the file's, its CRC verifies and its contents are consistent (kinds
//!   known, lists naming segments of their kind). Anything else — a crash,
//!   a missing, torn, foreign or stale copy, an older build that opened the
//!   pool since — and open scans the headers, as without a copy.
//! - It is written after the last write of its session to the pool (the
//!   scan runs in the engine's drop, after every thread and every
//!   epoch-deferred release that held the engine, and after the clean
//!   mark), so a copy with the session's tag describes exactly the headers
//!   the next open would read. Every later open raises the open count, so
//!   the copy is stale from the first write of the next session on.
//! - The copy also names the pool *file* as the close left it: device,
//!   inode, length, change and modification times, read from the open
//!   descriptor after the clean mark. Open compares them with the file it
//!   has just opened, before writing anything. The tag alone cannot tell
//!   apart two histories of one pool that reached the same open count (a
//!   crash image or a backup put back, then opened again: the same pool
//!   id and session number, different headers); putting other contents
//!   into the file by writing it, copying over it or renaming another file
//!   onto its name changes these, so such a copy is not used.
//! - A scan that found a damaged header is not copied (damage is reported
//!   by the scan at every open).
//! - Written to a temporary name, then renamed; nothing in the pool is
//!   written, so the pool's format is unchanged.
//!
//! Layout (little-endian): magic `PMSEGS02` (8), pool id (16), tag (8),
//! segment count n (4), CRC32C of the body (4), body length (8), the
//! file's identity (device, inode, length, change time in ns, modification
//! time in ns: 5 × u64) — 88 bytes;
//! then the body: n kind bytes; index segments (count u32, then per segment
//! u32 index, u8 depth, u64 prefix); lanes with a log segment or a base
//! sequence (count u32, then per lane u8 lane, u32 newest log segment or
//! `u32::MAX`, u64 its base, u64 highest base); ordered segments (count
//! u32, then per segment u32 index, u32 class, u8 holds the head); u8
//! has_records.

use std::path::{Path, PathBuf};

use crate::layout::SegmentKind;
use crate::segment_scan::{ScanResult, KIND_CONTINUATION};

const MAGIC: &[u8; 8] = b"PMSEGS02";
const HEAD: usize = 88;
const LANES: usize = 256;
const NO_SEGMENT: u32 = u32::MAX;

/// The identity of a pool file as its metadata gives it: device, inode,
/// length, change and modification times (ns).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct FileId(pub [u64; 5]);

impl FileId {
    pub fn of(meta: &std::fs::Metadata) -> FileId {
        use std::os::unix::fs::MetadataExt;
        let ns = |s: i64, n: i64| {
            (s as u64)
                .wrapping_mul(1_000_000_000)
                .wrapping_add(n as u64)
        };
        FileId([
            meta.dev(),
            meta.ino(),
            meta.size(),
            ns(meta.ctime(), meta.ctime_nsec()),
            ns(meta.mtime(), meta.mtime_nsec()),
        ])
    }
}

/// Where the copy of the pool at `pool` lives.
pub(crate) fn copy_path(pool: &Path) -> PathBuf {
    let mut p = pool.as_os_str().to_owned();
    p.push(".segments");
    PathBuf::from(p)
}

/// Writes the copy of `scan` for a clean close of the session `tag`. Best
/// effort: a copy that is missing or torn is not used. A scan that found
/// damage is not written (and an older copy is removed).
pub(crate) fn save(pool: &Path, pool_id: &[u8; 16], tag: u64, file: FileId, scan: &ScanResult) {
    let path = copy_path(pool);
    let Some(bytes) = encode(pool_id, tag, file, scan) else {
        let _ = std::fs::remove_file(&path);
        return;
    };
    let mut tmp = path.as_os_str().to_owned();
    tmp.push(".tmp");
    let tmp = PathBuf::from(tmp);
    if std::fs::write(&tmp, &bytes).is_err() || std::fs::rename(&tmp, &path).is_err() {
        let _ = std::fs::remove_file(&tmp);
        let _ = std::fs::remove_file(&path);
    }
}

/// The scan from the copy beside the pool, if there is a valid one for this
/// pool, session `tag`, pool file `file` and `segments` segments (one read
/// of one file).
pub(crate) fn load(
    pool: &Path,
    pool_id: &[u8; 16],
    tag: u64,
    file: FileId,
    segments: u32,
) -> Option<ScanResult> {
    let bytes = std::fs::read(copy_path(pool)).ok()?;
    decode(&bytes, pool_id, tag, file, segments)
}

/// The copy's bytes; `None` when the scan found damage.
pub(crate) fn encode(
    pool_id: &[u8; 16],
    tag: u64,
    file: FileId,
    scan: &ScanResult,
) -> Option<Vec<u8>> {
    if !scan.damaged.is_empty() {
        return None;
    }
    let n = u32::try_from(scan.kinds.len()).ok()?;
    let mut body = Vec::with_capacity(scan.kinds.len() + 64 + 16 * scan.index_segments.len());
    body.extend_from_slice(&scan.kinds);
    body.extend_from_slice(&(scan.index_segments.len() as u32).to_le_bytes());
    for &(seg, depth, prefix) in &scan.index_segments {
        body.extend_from_slice(&seg.to_le_bytes());
        body.push(depth);
        body.extend_from_slice(&prefix.to_le_bytes());
    }
    let lanes: Vec<usize> = (0..LANES)
        .filter(|&l| scan.active_log[l].is_some() || scan.lane_max_seq[l] != 0)
        .collect();
    body.extend_from_slice(&(lanes.len() as u32).to_le_bytes());
    for l in lanes {
        let (seg, base) = scan.active_log[l].unwrap_or((NO_SEGMENT, 0));
        body.push(l as u8);
        body.extend_from_slice(&seg.to_le_bytes());
        body.extend_from_slice(&base.to_le_bytes());
        body.extend_from_slice(&scan.lane_max_seq[l].to_le_bytes());
    }
    body.extend_from_slice(&(scan.ordered_segments.len() as u32).to_le_bytes());
    for &(seg, class, head) in &scan.ordered_segments {
        body.extend_from_slice(&seg.to_le_bytes());
        body.extend_from_slice(&class.to_le_bytes());
        body.push(head as u8);
    }
    body.push(scan.has_records as u8);
    let mut out = Vec::with_capacity(HEAD + body.len());
    out.extend_from_slice(MAGIC);
    out.extend_from_slice(pool_id);
    out.extend_from_slice(&tag.to_le_bytes());
    out.extend_from_slice(&n.to_le_bytes());
    out.extend_from_slice(&crc32c::crc32c(&body).to_le_bytes());
    out.extend_from_slice(&(body.len() as u64).to_le_bytes());
    for w in file.0 {
        out.extend_from_slice(&w.to_le_bytes());
    }
    out.extend_from_slice(&body);
    Some(out)
}

/// Reads little-endian fields off a byte slice; `None` past its end.
struct Reader<'a> {
    bytes: &'a [u8],
    at: usize,
}

impl<'a> Reader<'a> {
    fn take(&mut self, n: usize) -> Option<&'a [u8]> {
        let end = self.at.checked_add(n)?;
        let s = self.bytes.get(self.at..end)?;
        self.at = end;
        Some(s)
    }

    fn u8(&mut self) -> Option<u8> {
        Some(self.take(1)?[0])
    }

    fn u32(&mut self) -> Option<u32> {
        Some(u32::from_le_bytes(self.take(4)?.try_into().ok()?))
    }

    fn u64(&mut self) -> Option<u64> {
        Some(u64::from_le_bytes(self.take(8)?.try_into().ok()?))
    }
}

/// The scan a copy holds, if it is one for this pool, session `tag`, pool
/// file `file` and `segments` segments, whole and consistent.
pub(crate) fn decode(
    bytes: &[u8],
    pool_id: &[u8; 16],
    tag: u64,
    file: FileId,
    segments: u32,
) -> Option<ScanResult> {
    let mut head = Reader { bytes, at: 0 };
    if head.take(8)? != MAGIC || head.take(16)? != pool_id || head.u64()? != tag {
        return None;
    }
    let n = head.u32()?;
    let crc = head.u32()?;
    let body_len = usize::try_from(head.u64()?).ok()?;
    for w in file.0 {
        if head.u64()? != w {
            return None;
        }
    }
    if n != segments || bytes.len() != HEAD.checked_add(body_len)? {
        return None;
    }
    let body = &bytes[HEAD..];
    if crc32c::crc32c(body) != crc {
        return None;
    }
    let mut r = Reader { bytes: body, at: 0 };
    let kinds = r.take(n as usize)?.to_vec();
    let kind_of = |seg: u32| kinds.get(seg as usize).copied();
    // Kinds known, and every continuation follows a large head or another
    // continuation.
    let mut prev = SegmentKind::Free as u8;
    for &k in &kinds {
        let known = k <= SegmentKind::Ordered as u8 || k == KIND_CONTINUATION;
        let follows =
            k != KIND_CONTINUATION || prev == SegmentKind::Large as u8 || prev == KIND_CONTINUATION;
        if !known || !follows {
            return None;
        }
        prev = k;
    }
    let mut index_segments = Vec::new();
    for _ in 0..r.u32()? {
        let (seg, depth, prefix) = (r.u32()?, r.u8()?, r.u64()?);
        if kind_of(seg)? != SegmentKind::Index as u8 {
            return None;
        }
        index_segments.push((seg, depth, prefix));
    }
    let mut active_log = vec![None; LANES];
    let mut lane_max_seq = vec![0; LANES];
    for _ in 0..r.u32()? {
        let (lane, seg, base, max) = (r.u8()? as usize, r.u32()?, r.u64()?, r.u64()?);
        if seg != NO_SEGMENT {
            if kind_of(seg)? != SegmentKind::Log as u8 || base > max {
                return None;
            }
            active_log[lane] = Some((seg, base));
        }
        lane_max_seq[lane] = max;
    }
    let mut ordered_segments = Vec::new();
    for _ in 0..r.u32()? {
        let (seg, class, head) = (r.u32()?, r.u32()?, r.u8()?);
        if kind_of(seg)? != SegmentKind::Ordered as u8 || head > 1 {
            return None;
        }
        ordered_segments.push((seg, class, head == 1));
    }
    let has_records = r.u8()? == 1;
    let count = |kind: SegmentKind| kinds.iter().filter(|&&k| k == kind as u8).count();
    let records = count(SegmentKind::Log) + count(SegmentKind::Large) > 0;
    if r.at != body.len()
        || count(SegmentKind::Index) != index_segments.len()
        || count(SegmentKind::Ordered) != ordered_segments.len()
        || has_records != records
    {
        return None;
    }
    Some(ScanResult {
        index_segments,
        active_log,
        lane_max_seq,
        damaged: Vec::new(),
        ordered_segments,
        has_records,
        kinds,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const F: FileId = FileId([1, 2, 3, 4, 5]);

    fn scan() -> ScanResult {
        let mut active_log = vec![None; LANES];
        let mut lane_max_seq = vec![0; LANES];
        active_log[0] = Some((1, 40));
        lane_max_seq[0] = 40;
        active_log[3] = Some((5, 0));
        lane_max_seq[7] = 99;
        ScanResult {
            index_segments: vec![(0, 1, 0), (2, 1, 1)],
            active_log,
            lane_max_seq,
            damaged: Vec::new(),
            ordered_segments: vec![(6, 7, true)],
            has_records: true,
            kinds: vec![2, 1, 2, 3, KIND_CONTINUATION, 1, 4, 0],
        }
    }

    fn same(a: &ScanResult, b: &ScanResult) -> bool {
        a.index_segments == b.index_segments
            && a.active_log == b.active_log
            && a.lane_max_seq == b.lane_max_seq
            && a.damaged == b.damaged
            && a.ordered_segments == b.ordered_segments
            && a.has_records == b.has_records
            && a.kinds == b.kinds
    }

    #[test]
    fn a_copy_reads_back_for_its_pool_session_file_and_size_only() {
        let s = scan();
        let bytes = encode(&[7; 16], 5, F, &s).unwrap();
        assert!(same(&decode(&bytes, &[7; 16], 5, F, 8).unwrap(), &s));
        assert!(decode(&bytes, &[8; 16], 5, F, 8).is_none(), "another pool");
        assert!(
            decode(&bytes, &[7; 16], 6, F, 8).is_none(),
            "another session"
        );
        assert!(decode(&bytes, &[7; 16], 5, F, 9).is_none(), "the pool grew");
        for i in 0..5 {
            let mut other = F;
            other.0[i] += 1;
            assert!(decode(&bytes, &[7; 16], 5, other, 8).is_none(), "file {i}");
        }
        assert!(decode(&bytes[..bytes.len() - 1], &[7; 16], 5, F, 8).is_none());
        for at in [0, 30, 60, HEAD, HEAD + 3, bytes.len() - 1] {
            let mut torn = bytes.clone();
            torn[at] ^= 0x10;
            assert!(decode(&torn, &[7; 16], 5, F, 8).is_none(), "byte {at}");
        }
    }

    #[test]
    fn damage_is_never_copied_and_inconsistent_copies_are_refused() {
        let mut s = scan();
        s.damaged.push((7, "bad".into()));
        assert!(encode(&[7; 16], 5, F, &s).is_none());
        let mut s = scan();
        s.kinds[7] = KIND_CONTINUATION; // a continuation after no large head
        assert!(decode(&encode(&[7; 16], 5, F, &s).unwrap(), &[7; 16], 5, F, 8).is_none());
        let mut s = scan();
        s.active_log[3] = Some((6, 0)); // names an ordered segment
        assert!(decode(&encode(&[7; 16], 5, F, &s).unwrap(), &[7; 16], 5, F, 8).is_none());
        let mut s = scan();
        s.kinds[0] = 0; // an index segment listed, but free
        assert!(decode(&encode(&[7; 16], 5, F, &s).unwrap(), &[7; 16], 5, F, 8).is_none());
    }
}
