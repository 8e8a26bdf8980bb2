//! The disk domain's clean close: the stores no fence carried.
//!
//! Persistent-memory code leaves some stores unflushed on purpose (a
//! record word's persist bit, set after the fence that made the word
//! durable): on persistent memory the cache writes them back sooner or
//! later. In the disk domain only flushed and fenced lines reach the log,
//! so such a store would live in the private mapping only and be lost at
//! every close; the next session would redo its work (a reader finding a
//! word without its persist bit flushes, fences and waits for a sync).
//!
//! At a clean close this room finds them: the pages the session wrote
//! (those the private mapping copied, from `/proc/self/pagemap`; every
//! page when it cannot be read) compared line by line with the pool file,
//! once the log is synced and applied. The lines that differ go into the
//! log as one last fence's records, so they reach the pool file by the
//! write-ahead rule like any other line.
//!
//! Invariants:
//! - It runs only when no operation is in flight (the pool is closing) and
//!   after every appended record is synced and applied: the memory state
//!   is then a persistent-memory state with every fence complete, in which
//!   any unflushed store may legally reach the media (early eviction).
//! - It changes nothing in memory; it only reads the mapping and the file.

use std::fs::File;
use std::io::Read;

use super::wal::{read_up_to, LINE_BYTES};

const PAGE: u64 = 4096;

/// Pages of `len` bytes mapped at `base` that this process wrote (copied
/// from the file by the private mapping), as runs `(first page offset,
/// pages)`; every page when the page map cannot be read.
pub fn written_pages(base: *const u8, len: u64) -> Vec<(u64, u64)> {
    let pages = len.div_ceil(PAGE);
    let Some(entries) = page_map(base as u64 / PAGE, pages) else {
        return vec![(0, pages)];
    };
    let mut runs: Vec<(u64, u64)> = Vec::new();
    for (i, entry) in entries.iter().enumerate() {
        if !copied(*entry) {
            continue;
        }
        match runs.last_mut() {
            Some((first, n)) if *first + *n == i as u64 => *n += 1,
            _ => runs.push((i as u64, 1)),
        }
    }
    runs
}

/// A page-map entry of a page the private mapping holds as its own copy:
/// present or swapped, and not a page of the file's cache.
fn copied(entry: u64) -> bool {
    let present = entry & (1 << 63) != 0;
    let swapped = entry & (1 << 62) != 0;
    let file_page = entry & (1 << 61) != 0;
    (present || swapped) && !file_page
}

fn page_map(first: u64, pages: u64) -> Option<Vec<u64>> {
    let mut f = File::open("/proc/self/pagemap").ok()?;
    let mut raw = vec![0u8; pages as usize * 8];
    use std::io::Seek;
    f.seek(std::io::SeekFrom::Start(first * 8)).ok()?;
    f.read_exact(&mut raw).ok()?;
    Some(
        raw.chunks_exact(8)
            .map(|c| u64::from_le_bytes(c.try_into().expect("8 bytes")))
            .collect(),
    )
}

/// The pool offsets of the lines in `runs` of pages whose bytes in
/// `memory` (the whole mapping) differ from `file`'s.
pub fn changed_lines(file: &File, memory: &[u8], runs: &[(u64, u64)]) -> std::io::Result<Vec<u64>> {
    const CHUNK: u64 = 256;
    let mut out = Vec::new();
    let mut disk = vec![0u8; (CHUNK * PAGE) as usize];
    for &(first, pages) in runs {
        let mut page = first;
        while page < first + pages {
            let n = CHUNK.min(first + pages - page);
            let from = page * PAGE;
            let to = ((page + n) * PAGE).min(memory.len() as u64);
            let buf = &mut disk[..(to - from) as usize];
            let got = read_up_to(file, buf, from)?;
            // Past the file's end (grown, never applied) reads as zeros.
            buf[got..].fill(0);
            let mem = &memory[from as usize..to as usize];
            for (i, (m, d)) in mem
                .chunks(LINE_BYTES)
                .zip(buf.chunks(LINE_BYTES))
                .enumerate()
            {
                if m != d {
                    out.push(from + (i * LINE_BYTES) as u64);
                }
            }
            page += n;
        }
    }
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_private_mappings_written_page_is_found_and_its_changed_line_named() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("f");
        std::fs::write(&path, vec![7u8; 4 * PAGE as usize]).unwrap();
        let file = File::open(&path).unwrap();
        let len = 4 * PAGE as usize;
        // SAFETY: a fresh private mapping of a file we own, unmapped below.
        let p = unsafe {
            libc::mmap(
                std::ptr::null_mut(),
                len,
                libc::PROT_READ | libc::PROT_WRITE,
                libc::MAP_PRIVATE,
                std::os::fd::AsRawFd::as_raw_fd(&file),
                0,
            )
        };
        assert_ne!(p, libc::MAP_FAILED);
        // SAFETY: `p` maps `len` bytes.
        let mem = unsafe { std::slice::from_raw_parts_mut(p as *mut u8, len) };
        // Read every page (file pages), write one line of page 2.
        assert!(mem.iter().all(|&b| b == 7));
        mem[2 * PAGE as usize + 130] = 9;
        let runs = written_pages(mem.as_ptr(), len as u64);
        assert_eq!(runs, vec![(2, 1)]);
        let lines = changed_lines(&file, mem, &runs).unwrap();
        assert_eq!(lines, vec![2 * PAGE + 128]);
        // Every page as candidates: still only that line differs.
        let all = changed_lines(&file, mem, &[(0, 4)]).unwrap();
        assert_eq!(all, vec![2 * PAGE + 128]);
        // SAFETY: unmaps the mapping made above.
        unsafe { libc::munmap(p, len) };
    }
}
