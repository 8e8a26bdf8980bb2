//! The replication backlog: the last `size` bytes of the replication
//! stream, so a replica that lost its link briefly resumes from where it
//! was (`PSYNC` → `+CONTINUE`) instead of loading a whole snapshot.
//!
//! Offsets are Redis's: the stream's bytes are numbered from 1, and
//! `master_repl_offset` is the number of the last byte written. The backlog
//! holds bytes `first .. first + len` (`repl_backlog_first_byte_offset`,
//! `repl_backlog_histlen`).
//!
//! Invariants: `first + len == offset + 1` at all times (the backlog ends at
//! the stream's end); `len <= size`; a range is handed out only if the
//! backlog holds every byte of it.

use std::collections::VecDeque;

pub struct Backlog {
    bytes: VecDeque<u8>,
    size: usize,
    /// Number of the first byte held.
    first: u64,
}

impl Backlog {
    /// An empty backlog whose next byte is number `offset + 1`.
    pub fn new(size: usize, offset: u64) -> Backlog {
        Backlog {
            bytes: VecDeque::new(),
            size: size.max(1),
            first: offset + 1,
        }
    }

    pub fn push(&mut self, data: &[u8]) {
        if data.len() >= self.size {
            let skip = data.len() - self.size;
            self.first += (self.bytes.len() + skip) as u64;
            self.bytes.clear();
            self.bytes.extend(&data[skip..]);
        } else {
            let over = (self.bytes.len() + data.len()).saturating_sub(self.size);
            self.bytes.drain(..over);
            self.first += over as u64;
            self.bytes.extend(data);
        }
        debug_assert!(self.bytes.len() <= self.size);
    }

    /// Number of the first byte held.
    pub fn first(&self) -> u64 {
        self.first
    }

    pub fn len(&self) -> usize {
        self.bytes.len()
    }

    pub fn size(&self) -> usize {
        self.size
    }

    /// Changes the size, keeping the newest bytes that fit.
    pub fn resize(&mut self, size: usize) {
        self.size = size.max(1);
        let over = self.bytes.len().saturating_sub(self.size);
        self.bytes.drain(..over);
        self.first += over as u64;
    }

    /// Every byte from number `from` to the end, if the backlog holds them
    /// all (`from` may be one past the end: nothing to send).
    pub fn since(&self, from: u64) -> Option<Vec<u8>> {
        let end = self.first + self.bytes.len() as u64;
        if from < self.first || from > end {
            return None;
        }
        let skip = (from - self.first) as usize;
        Some(self.bytes.range(skip..).copied().collect())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_the_newest_bytes_and_their_numbers() {
        let mut b = Backlog::new(8, 100);
        b.push(b"abcde");
        assert_eq!(b.first(), 101);
        assert_eq!(b.since(103).unwrap(), b"cde");
        b.push(b"fghij");
        assert_eq!((b.first(), b.len()), (103, 8));
        assert_eq!(b.since(103).unwrap(), b"cdefghij");
        assert_eq!(b.since(111).unwrap(), b"");
        assert!(b.since(102).is_none());
        assert!(b.since(112).is_none());
        b.push(b"0123456789");
        assert_eq!(
            (b.first(), b.since(113).unwrap()),
            (113, b"23456789".to_vec())
        );
        b.resize(3);
        assert_eq!((b.first(), b.since(118).unwrap()), (118, b"789".to_vec()));
    }
}
