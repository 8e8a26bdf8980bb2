//! Dead-record hints: one DRAM bit per 32 bytes of a log segment, set when
//! a record's key moves on (its word names another record, or none), so
//! the cleaner can pass over records it knows are dead without looking
//! their keys up in the index (a random bucket read each).
//!
//! Invariants:
//! - A hint, never a truth anything depends on: a set bit is trusted only
//!   to skip relocating a record, and a victim is freed only when its live
//!   bytes reach zero, so a wrong bit could leave a victim uncleaned, never
//!   lose a record. A missing bit (after a restart: none are kept) costs
//!   the cleaner one lookup.
//! - Only records of at least 32 bytes are marked or trusted. Records are
//!   8-aligned and at least 24 bytes long, so at most one record of 32
//!   bytes or more starts in a 32-byte window: its bit is its own.
//! - Marks are a load and a store: two writers marking in the same word at
//!   once may lose one mark (a missing hint), never invent one.
//! - A segment's bits are cleared when it is committed as a log segment,
//!   before any record is appended to it; marks come from writers holding
//!   an epoch pin, so they never reach a segment freed and reused under
//!   them.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::OnceLock;

/// Bytes of segment one bit stands for.
const WINDOW: u64 = 32;

/// The bits of one segment, allocated on its first mark.
#[derive(Default)]
pub(crate) struct DeadBits(OnceLock<Box<[AtomicU64]>>);

impl DeadBits {
    /// Marks the record at `rel` (bytes from the segment start) of `total`
    /// bytes dead, in a segment of `segment_bytes`.
    #[inline]
    pub fn mark(&self, segment_bytes: u64, rel: u64, total: u64) {
        if total < WINDOW {
            return;
        }
        let words = self.0.get_or_init(|| {
            (0..segment_bytes.div_ceil(WINDOW * 64))
                .map(|_| AtomicU64::new(0))
                .collect()
        });
        let (w, bit) = position(rel);
        // A load and a store, not a locked read-modify-write (which would
        // wait for the writer's store buffer to drain): a mark lost to a
        // concurrent one in the same word is only a missing hint.
        let cur = words[w].load(Ordering::Relaxed);
        if cur & bit == 0 {
            words[w].store(cur | bit, Ordering::Relaxed);
        }
    }

    /// Whether the record at `rel` of `total` bytes is known dead.
    #[inline]
    pub fn is_marked(&self, rel: u64, total: u64) -> bool {
        if total < WINDOW {
            return false;
        }
        let (w, bit) = position(rel);
        self.0
            .get()
            .is_some_and(|words| words[w].load(Ordering::Relaxed) & bit != 0)
    }

    /// Forgets every mark (the segment starts a new life as a log segment).
    pub fn clear(&self) {
        if let Some(words) = self.0.get() {
            for w in words.iter() {
                w.store(0, Ordering::Relaxed);
            }
        }
    }
}

#[inline]
fn position(rel: u64) -> (usize, u64) {
    let window = rel / WINDOW;
    ((window / 64) as usize, 1 << (window % 64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn marks_are_per_record_and_cleared() {
        let bits = DeadBits::default();
        assert!(!bits.is_marked(64, 96), "nothing marked yet");
        bits.mark(1 << 20, 64, 96);
        assert!(bits.is_marked(64, 96));
        assert!(!bits.is_marked(160, 96), "the next record is not marked");
        // Records under 32 bytes share windows: never marked, never trusted.
        bits.mark(1 << 20, 256, 24);
        assert!(!bits.is_marked(256, 24));
        assert!(
            !bits.is_marked(280, 40),
            "a 24-byte record's mark would be shared"
        );
        bits.clear();
        assert!(!bits.is_marked(64, 96));
        // The last window of the segment.
        bits.mark(1 << 20, (1 << 20) - 32, 32);
        assert!(bits.is_marked((1 << 20) - 32, 32));
    }
}
