//! The log's records: how a fence's lines are encoded into records (line
//! images and runs of zero lines, cut at `MAX_RECORD_BYTES`, a pad or bare
//! zeros where a lap ends), how they are read back, and the newest image of
//! each line they hold (`LineImages`), which the applier's checkpoint and
//! the replay write into the pool file.
//!
//! Invariants:
//! - A record never crosses the ring's end; fewer than
//!   `RECORD_HEADER_BYTES` left before it are bare zeros, where no record
//!   starts (`end_gap`), and readers skip them.
//! - A record is whole only with its magic, its own LSN and a CRC32C over
//!   header and payload that match: a torn record, or one of another lap,
//!   does not parse.
//! - `LineImages` keeps entries in log order and sorts them stably, so the
//!   last image of a line is the newest.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::sync::Arc;

use crate::pmem::wal::observer::{DiskFile, DiskObserver};

const REC_MAGIC: u32 = 0x5257_4C41; // "ALWR" little-endian
const KIND_LINES: u16 = 1;
const KIND_PAD: u16 = 2;
/// Record header fields.
const R_KIND: usize = 4;
const R_LSN: usize = 8;
const R_BYTES: usize = 16;
const R_LINES: usize = 20;
const R_CRC: usize = 24;
/// Record header bytes.
pub const RECORD_HEADER_BYTES: usize = 32;
/// A cache line: what a fence logs of each line it flushed.
pub const LINE_BYTES: usize = 64;
/// An entry of a record: a line image (its offset, then its 64 bytes) or a
/// run of zero lines (its first line's offset with bit 0 set, then the
/// number of lines) — a zeroed segment costs 16 bytes, not 72 per line.
const LINE_ENTRY_BYTES: usize = 8 + LINE_BYTES;
const ZERO_RUN_BYTES: usize = 16;
const ZERO_RUN_FLAG: u64 = 1;
/// A fence's entries are cut into records of at most this many bytes (a
/// fence need not be one record: before it completes, any of its lines
/// may reach persistent memory without the others).
pub(super) const MAX_RECORD_BYTES: usize = 256 << 10;

/// Bytes a record of `lines` line images takes.
pub fn record_bytes(lines: usize) -> u64 {
    (RECORD_HEADER_BYTES + lines * LINE_ENTRY_BYTES) as u64
}

/// Encodes the header of a record at `lsn` of `bytes` bytes and `lines`
/// lines, with the CRC over the header and `payload`.
fn record_header(kind: u16, lsn: u64, bytes: u64, lines: u32, payload: &[u8]) -> [u8; 32] {
    let mut h = [0u8; RECORD_HEADER_BYTES];
    h[..4].copy_from_slice(&REC_MAGIC.to_le_bytes());
    h[R_KIND..R_KIND + 2].copy_from_slice(&kind.to_le_bytes());
    h[R_LSN..R_LSN + 8].copy_from_slice(&lsn.to_le_bytes());
    h[R_BYTES..R_BYTES + 4].copy_from_slice(&(bytes as u32).to_le_bytes());
    h[R_LINES..R_LINES + 4].copy_from_slice(&lines.to_le_bytes());
    let crc = crc32c::crc32c_append(crc32c::crc32c(&h[..R_CRC]), payload);
    h[R_CRC..R_CRC + 4].copy_from_slice(&crc.to_le_bytes());
    h
}

/// An entry of a record read back.
#[derive(Debug, PartialEq, Eq)]
pub(super) enum Entry<'a> {
    Line(u64, &'a [u8]),
    Zeros { first: u64, lines: u64 },
}

/// A record read back: its length and its entries (none for a pad).
pub(super) struct ReadRecord<'a> {
    pub(super) bytes: u64,
    entries: Vec<Entry<'a>>,
}

/// The bytes left before the ring's end at `lsn` when they are fewer than a
/// record header: no record starts there (appends skip them as zeros), so
/// readers skip them too.
pub(super) fn end_gap(lsn: u64, capacity: u64) -> Option<u64> {
    let room = capacity - lsn % capacity;
    (room < RECORD_HEADER_BYTES as u64).then_some(room)
}

/// The record at `lsn` at the start of `buf` (a slice of the ring that
/// reaches at most to the ring's end), if it is whole and of this lap.
pub(super) fn parse_record(buf: &[u8], lsn: u64) -> Option<ReadRecord<'_>> {
    if buf.len() < RECORD_HEADER_BYTES {
        return None;
    }
    let u32_at = |at: usize| u32::from_le_bytes(buf[at..at + 4].try_into().expect("4 bytes"));
    let kind = u16::from_le_bytes(buf[R_KIND..R_KIND + 2].try_into().expect("2 bytes"));
    let bytes = u32_at(R_BYTES) as u64;
    let count = u32_at(R_LINES) as usize;
    let rec_lsn = u64::from_le_bytes(buf[R_LSN..R_LSN + 8].try_into().expect("8 bytes"));
    if u32_at(0) != REC_MAGIC
        || rec_lsn != lsn
        || bytes < RECORD_HEADER_BYTES as u64
        || bytes > buf.len() as u64
        || !bytes.is_multiple_of(8)
    {
        return None;
    }
    let payload_end = match kind {
        KIND_LINES => bytes as usize,
        KIND_PAD if count == 0 => RECORD_HEADER_BYTES,
        _ => return None,
    };
    let payload = &buf[RECORD_HEADER_BYTES..payload_end];
    let crc = crc32c::crc32c_append(crc32c::crc32c(&buf[..R_CRC]), payload);
    if crc != u32_at(R_CRC) {
        return None;
    }
    let entries = parse_entries(payload, count)?;
    Some(ReadRecord { bytes, entries })
}

/// The `count` entries that make up `payload` exactly.
fn parse_entries(payload: &[u8], count: usize) -> Option<Vec<Entry<'_>>> {
    let word = |at: usize| -> Option<u64> {
        Some(u64::from_le_bytes(
            payload.get(at..at + 8)?.try_into().ok()?,
        ))
    };
    let mut entries = Vec::with_capacity(count);
    let mut at = 0;
    for _ in 0..count {
        let w = word(at)?;
        if w & ZERO_RUN_FLAG == 0 {
            let data = payload.get(at + 8..at + LINE_ENTRY_BYTES)?;
            entries.push(Entry::Line(w, data));
            at += LINE_ENTRY_BYTES;
        } else {
            let lines = word(at + 8)?;
            entries.push(Entry::Zeros {
                first: w & !ZERO_RUN_FLAG,
                lines,
            });
            at += ZERO_RUN_BYTES;
        }
    }
    (at == payload.len()).then_some(entries)
}

/// Encodes a fence's lines as records from `lsn` on (a pad first wherever a
/// record would cross the ring's end), into `out`. Each line's contents
/// come from `read_line`; runs of zero lines become zero-run entries.
pub(super) fn encode_fence(
    lines: &[u64],
    read_line: &mut impl FnMut(u64, &mut [u8]),
    mut lsn: u64,
    capacity: u64,
    out: &mut Vec<u8>,
) {
    let mut entries: Vec<u8> = Vec::with_capacity(lines.len().min(4096) * LINE_ENTRY_BYTES);
    let mut count: u32 = 0;
    let mut zero_run: Option<(u64, u64)> = None;
    let mut line = [0u8; LINE_BYTES];
    let emit = |entries: &mut Vec<u8>, count: &mut u32, lsn: &mut u64, out: &mut Vec<u8>| {
        if *count == 0 {
            return;
        }
        let bytes = (RECORD_HEADER_BYTES + entries.len()) as u64;
        let room_to_end = capacity - *lsn % capacity;
        if room_to_end < bytes {
            // The rest of the ring: a pad record, or, when less than a
            // header is left, bare zeros that readers skip (`end_gap`).
            let start = out.len();
            if end_gap(*lsn, capacity).is_none() {
                out.extend_from_slice(&record_header(KIND_PAD, *lsn, room_to_end, 0, &[]));
            }
            out.resize(start + room_to_end as usize, 0);
            *lsn += room_to_end;
        }
        out.extend_from_slice(&record_header(KIND_LINES, *lsn, bytes, *count, entries));
        out.extend_from_slice(entries);
        *lsn += bytes;
        entries.clear();
        *count = 0;
    };
    let push_zero_run = |entries: &mut Vec<u8>, count: &mut u32, (first, n): (u64, u64)| {
        entries.extend_from_slice(&(first | ZERO_RUN_FLAG).to_le_bytes());
        entries.extend_from_slice(&n.to_le_bytes());
        *count += 1;
    };
    for &off in lines {
        read_line(off, &mut line);
        if line == [0u8; LINE_BYTES] {
            match &mut zero_run {
                Some((first, n)) if *first + *n * LINE_BYTES as u64 == off => *n += 1,
                run => {
                    if let Some(done) = run.take() {
                        push_zero_run(&mut entries, &mut count, done);
                    }
                    *run = Some((off, 1));
                }
            }
        } else {
            if let Some(done) = zero_run.take() {
                push_zero_run(&mut entries, &mut count, done);
            }
            entries.extend_from_slice(&off.to_le_bytes());
            entries.extend_from_slice(&line);
            count += 1;
        }
        if RECORD_HEADER_BYTES + entries.len() + LINE_ENTRY_BYTES > MAX_RECORD_BYTES {
            emit(&mut entries, &mut count, &mut lsn, out);
        }
    }
    if let Some(done) = zero_run.take() {
        push_zero_run(&mut entries, &mut count, done);
    }
    emit(&mut entries, &mut count, &mut lsn, out);
}

/// Lines to write into the pool file: the newest image of each line. It
/// borrows the images from the records it was given (the replay's ring, the
/// checkpoint's chunks) and keeps, per entry, the line's offset and its
/// image (`None`: a zero line), in log order; `write_into` sorts them by
/// offset, stably, so the last entry of an offset is its newest image. (A
/// hash map of copied images cost a replay of a 1 GiB log 2.8 GB of memory
/// and most of its time.)
#[derive(Default)]
pub(super) struct LineImages<'a> {
    lines: Vec<(u64, Option<&'a [u8; LINE_BYTES]>)>,
}

impl<'a> LineImages<'a> {
    pub(super) fn take_record(&mut self, rec: &ReadRecord<'a>) {
        for entry in &rec.entries {
            match *entry {
                Entry::Line(off, data) => {
                    let image = data.try_into().expect("a line is 64 bytes");
                    self.lines.push((off, Some(image)));
                }
                Entry::Zeros { first, lines } => {
                    let zeros = (0..lines).map(|i| (first + i * LINE_BYTES as u64, None));
                    self.lines.extend(zeros);
                }
            }
        }
    }

    /// Writes every line's newest image into `pool` (runs of adjacent lines
    /// as one write) and syncs it; returns the distinct lines written. The
    /// file is extended first when a line lies past its end (the pool grew
    /// after the last checkpoint).
    pub(super) fn write_into(
        mut self,
        pool: &File,
        (base, unit): (u64, u64),
        observer: Option<&Arc<dyn DiskObserver>>,
    ) -> std::io::Result<usize> {
        // Stable: entries of one offset keep their log order.
        self.lines.sort_by_key(|&(off, _)| off);
        let Some(&(last, _)) = self.lines.last() else {
            return Ok(0);
        };
        let end = last + LINE_BYTES as u64;
        if pool.metadata()?.len() < end {
            // The pool grew after the last checkpoint and the new length did
            // not reach the disk: extend it to whole segments again.
            let len = base + (end.saturating_sub(base)).div_ceil(unit) * unit;
            pool.set_len(len)?;
            if let Some(o) = observer {
                o.resized(DiskFile::Pool, len);
            }
        }
        let mut run: Vec<u8> = Vec::with_capacity(RUN_BYTES);
        let mut run_start = 0;
        let flush = |run: &mut Vec<u8>, at: u64| -> std::io::Result<()> {
            if run.is_empty() {
                return Ok(());
            }
            if let Some(o) = observer {
                o.wrote(DiskFile::Pool, at, run);
            }
            pool.write_all_at(run, at)?;
            run.clear();
            Ok(())
        };
        let mut distinct = 0;
        for (i, &(off, image)) in self.lines.iter().enumerate() {
            if self.lines.get(i + 1).is_some_and(|&(next, _)| next == off) {
                continue; // a newer image of this line follows
            }
            distinct += 1;
            if run.is_empty() || run_start + run.len() as u64 != off || run.len() >= RUN_BYTES {
                flush(&mut run, run_start)?;
                run_start = off;
            }
            run.extend_from_slice(image.unwrap_or(&[0; LINE_BYTES]));
        }
        flush(&mut run, run_start)?;
        pool.sync_data()?;
        if let Some(o) = observer {
            o.synced(DiskFile::Pool);
        }
        Ok(distinct)
    }
}

/// The largest single write into the pool file.
const RUN_BYTES: usize = 1 << 20;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn record_layout() {
        let line = [7u8; 64];
        let mut payload = 128u64.to_le_bytes().to_vec();
        payload.extend_from_slice(&line);
        let head = record_header(KIND_LINES, 64, record_bytes(1), 1, &payload);
        assert_eq!(record_bytes(1), 32 + 72);
        assert_eq!(
            u32::from_le_bytes(head[0..4].try_into().unwrap()),
            REC_MAGIC
        );
        assert_eq!(
            u16::from_le_bytes(head[4..6].try_into().unwrap()),
            KIND_LINES
        );
        assert_eq!(u64::from_le_bytes(head[8..16].try_into().unwrap()), 64);
        assert_eq!(u32::from_le_bytes(head[16..20].try_into().unwrap()), 104);
        assert_eq!(u32::from_le_bytes(head[20..24].try_into().unwrap()), 1);
        let mut rec = head.to_vec();
        rec.extend_from_slice(&payload);
        let parsed = parse_record(&rec, 64).expect("parses");
        assert_eq!(parsed.bytes, 104);
        assert_eq!(parsed.entries, vec![Entry::Line(128, &line[..])]);
        // Another lap's record, or a torn one, is not this lap's record.
        assert!(parse_record(&rec, 64 + (1 << 20)).is_none());
        rec[80] ^= 1;
        assert!(parse_record(&rec, 64).is_none());
    }

    /// Lines of a fence as `encode_fence` gets them: line `i` holds `i`
    /// in its first byte, except the zero lines.
    fn fence_of(lines: &[u64], zero: impl Fn(u64) -> bool, lsn: u64, capacity: u64) -> Vec<u8> {
        let mut out = Vec::new();
        let mut read = |off: u64, dst: &mut [u8]| {
            dst.fill(0);
            if !zero(off) {
                dst[0] = (off / 64) as u8;
                dst[1] = 1;
            }
        };
        encode_fence(lines, &mut read, lsn, capacity, &mut out);
        out
    }

    #[test]
    fn zero_lines_become_runs_and_big_fences_several_records() {
        // A zeroed segment: one record of one zero run.
        let lines: Vec<u64> = (0..16384u64).map(|i| 4096 + i * 64).collect();
        let out = fence_of(&lines, |_| true, 0, 8 << 20);
        assert_eq!(out.len(), RECORD_HEADER_BYTES + ZERO_RUN_BYTES);
        let rec = parse_record(&out, 0).unwrap();
        assert_eq!(
            rec.entries,
            vec![Entry::Zeros {
                first: 4096,
                lines: 16384
            }]
        );
        // Data lines around a zero run, in order.
        let lines = [0, 64, 128, 192, 256];
        let out = fence_of(&lines, |off| off == 64 || off == 128, 0, 8 << 20);
        let rec = parse_record(&out, 0).unwrap();
        assert_eq!(rec.entries.len(), 4);
        assert!(matches!(
            rec.entries[1],
            Entry::Zeros {
                first: 64,
                lines: 2
            }
        ));
        // A fence of many data lines: records of at most MAX_RECORD_BYTES,
        // one after the other, with the LSNs they are at.
        let lines: Vec<u64> = (0..10_000u64).map(|i| i * 64).collect();
        let out = fence_of(&lines, |_| false, 1000 * 8, 8 << 20);
        let (mut at, mut lsn, mut seen) = (0usize, 8000u64, 0usize);
        while at < out.len() {
            let rec = parse_record(&out[at..], lsn).expect("each record parses");
            assert!(rec.bytes as usize <= MAX_RECORD_BYTES);
            seen += rec.entries.len();
            at += rec.bytes as usize;
            lsn += rec.bytes;
        }
        assert_eq!(seen, 10_000);
        // At the ring's end a pad takes the rest, and the record starts the
        // next lap at offset 0 of the ring.
        let capacity = 1 << 20;
        let out = fence_of(&[64], |_| false, capacity - 40, capacity);
        let pad = parse_record(&out, capacity - 40).expect("a pad record");
        assert!(pad.entries.is_empty());
        assert_eq!(pad.bytes, 40);
        let rec = parse_record(&out[40..], capacity).expect("the record after the pad");
        assert_eq!(rec.entries.len(), 1);
        // Less than a header left (8, 16, 24 bytes): bare zeros, no pad,
        // and readers skip them (the 1st version wrote a cut pad header
        // there, which the applier refused, poisoning the log).
        for left in [8u64, 16, 24] {
            let out = fence_of(&[64], |_| false, capacity - left, capacity);
            assert_eq!(&out[..left as usize], &vec![0u8; left as usize][..]);
            assert_eq!(end_gap(capacity - left, capacity), Some(left));
            let rec = parse_record(&out[left as usize..], capacity).expect("the record");
            assert_eq!(rec.entries.len(), 1);
        }
        assert_eq!(end_gap(capacity - 32, capacity), None);
    }
}
