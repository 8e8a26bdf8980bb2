//! Lanes: per-thread log-structured allocation of records.
//!
//! Each lane appends records to its own active log segment and hands out
//! sequence numbers `lane:8 | 0:1 | counter:55` (bits 63–56 the lane, bit 55
//! always 0, bits 54–0 the lane's counter). Nothing about a lane is persisted
//! on every write: its tail and counter are recovered by walking the active
//! segment once, on the lane's first use after open.
//!
//! Invariants:
//! - A lane's records are appended and made durable strictly one after the
//!   other (the lane mutex is held from reserving space until the record's
//!   fence), so after a crash the valid records of a log segment form a
//!   prefix, and every live record lies inside it — except inside an atomic
//!   batch or a cleaner chunk, whose records are appended under one hold of
//!   the mutex and fenced together (`append_many`), still under that hold: a
//!   crash before that fence may tear one of them, and every record from
//!   there to the tail belongs to that uncommitted batch (or is a copy no
//!   word names yet), so none is live. The fence must come before the mutex
//!   is released: a lane is shared by threads (and the cleaner's lane by the
//!   log cleaner and the tier's thread), and a record another thread appends
//!   and fences after the release would otherwise be live past a tear (the
//!   disk domain's kill -9 loop met exactly that: `check` reported live
//!   records past the valid prefix, and the cleaner, which walks the
//!   prefix, could never move them). After a restart a lane never appends
//!   to a segment of an earlier run: it starts a new one (the old one is
//!   sealed and left to the cleaner), so damage inside the old segment can
//!   never make it write over live records.
//! - Every sequence number a lane hands out is larger than every one it
//!   handed out before, across restarts: a new segment's header records a
//!   counter drawn at allocation, a large record's header its own sequence,
//!   and the walk of the active segment adds the records' own. The cleaner
//!   copies records of every lane into lane 254's segments, so after a
//!   restart every lane starts above a pool-wide floor: the largest base of
//!   any segment and the largest counter in the cleaner's active segment (the
//!   cleaner raises its own counter past each record it copies, so its later
//!   segments' bases cover the copies). A lane whose own segments were all
//!   cleaned away therefore cannot repeat a number.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use crate::error::Result;
use crate::layout::{
    self, RecordHeader, SegmentHeader, SegmentKind, MAX_KEY_BYTES, MAX_VALUE_BYTES,
};
use crate::pool::Pool;

/// Lane of the log cleaner: its segments hold relocated records, which keep
/// the sequence numbers of the lanes that wrote them.
pub(crate) const CLEANER_LANE: u8 = 254;
/// Lane id reserved for internal lock holders (tally, split, check); never
/// written into a record.
pub(crate) const INTERNAL_LANE: u64 = 255;
/// Bits of the lane counter in a sequence number. Bit 55 is never part of a
/// sequence number: the lock table uses it as the holder's "publishing" flag.
pub(crate) const COUNTER_MASK: u64 = (1 << 55) - 1;

pub(crate) struct Lane {
    pub id: u8,
    /// The cleaner's lane: may use the pool's spare segments.
    cleaner: bool,
    counter: AtomicU64,
    /// Largest counter of any record (of any lane) the recovery walk met.
    walked_max: AtomicU64,
    ready: AtomicBool,
    state: parking_lot::Mutex<LaneState>,
}

struct LaneState {
    /// Active segment index, if any.
    segment: Option<u32>,
    /// Pool offset where the next record goes.
    tail: u64,
    /// Pool offset of the active segment's end.
    end: u64,
    /// Active segment found at open, still to be walked.
    to_recover: Option<u32>,
}

/// One record met by [`walk_segment`].
pub(crate) struct WalkedRecord {
    pub offset: u64,
    pub header: RecordHeader,
}

/// The header of the record at `at` if it ends by `end`, its lengths are
/// within the limits and its CRC verifies.
pub(crate) fn verified_record(pool: &Pool, at: u64, end: u64) -> Option<RecordHeader> {
    if at + layout::RECORD_HEADER_BYTES as u64 > end {
        return None;
    }
    let h = RecordHeader::decode(pool.pm.slice(at, layout::RECORD_HEADER_BYTES).ok()?);
    if h.key_len as usize > MAX_KEY_BYTES
        || h.value_len as usize > MAX_VALUE_BYTES
        || at + h.total_bytes() > end
    {
        return None;
    }
    let body = pool.pm.slice(at + 4, h.body_len()).ok()?;
    (layout::record_crc(body) == h.crc).then_some(h)
}

/// Walks the valid record prefix of a log segment; returns the offset just
/// past it. `visit` sees each record.
pub(crate) fn walk_segment(pool: &Pool, index: u32, mut visit: impl FnMut(&WalkedRecord)) -> u64 {
    let start = pool.segment_offset(index);
    let end = start + pool.segment_bytes;
    let mut at = start + layout::SEGMENT_HEADER_BYTES;
    while let Some(h) = verified_record(pool, at, end) {
        visit(&WalkedRecord {
            offset: at,
            header: h,
        });
        at += h.total_bytes();
    }
    at
}

/// Visits every record that verifies (sane lengths, CRC) at any 8-byte
/// aligned position from `from` to the end of log segment `index`.
fn scan_verifiable(pool: &Pool, index: u32, from: u64, mut visit: impl FnMut(&RecordHeader)) {
    let end = pool.segment_offset(index) + pool.segment_bytes;
    let mut at = from.next_multiple_of(layout::RECORD_ALIGN);
    while at + layout::RECORD_HEADER_BYTES as u64 <= end {
        match verified_record(pool, at, end) {
            Some(h) => {
                visit(&h);
                at += h.total_bytes();
            }
            None => at += layout::RECORD_ALIGN,
        }
    }
}

impl Lane {
    pub fn new(id: u8, max_seq_seen: u64, to_recover: Option<u32>) -> Lane {
        Lane {
            id,
            cleaner: id == CLEANER_LANE,
            counter: AtomicU64::new((max_seq_seen & COUNTER_MASK) + 1),
            walked_max: AtomicU64::new(0),
            ready: AtomicBool::new(to_recover.is_none()),
            state: parking_lot::Mutex::new(LaneState {
                segment: None,
                tail: 0,
                end: 0,
                to_recover,
            }),
        }
    }

    /// Reads the active segment left by the previous run, if not done yet,
    /// for the sequence numbers its records carry. The lane never appends to
    /// it again (it stays sealed; the cleaner reclaims its free tail): a
    /// damaged record in the middle would otherwise end the valid prefix
    /// early, and appending there would overwrite live records after it.
    pub fn recover(&self, pool: &Pool) {
        if self.ready.load(Ordering::Acquire) {
            return;
        }
        let mut st = self.state.lock();
        if let Some(seg) = st.to_recover.take() {
            // Records of other lanes appear only in the cleaner's segments;
            // counting them too keeps its bases above everything it copied.
            let mut max = 0;
            let mut note = |h: &RecordHeader| max = max.max(h.seq & COUNTER_MASK);
            let prefix_end = walk_segment(pool, seg, |r| note(&r.header));
            // Past the valid prefix (a torn tail, damage, or records of an
            // earlier use of the segment), count every record that verifies.
            scan_verifiable(pool, seg, prefix_end, |h| note(h));
            self.walked_max.fetch_max(max, Ordering::AcqRel);
            self.counter.fetch_max(max + 1, Ordering::AcqRel);
        }
        self.ready.store(true, Ordering::Release);
    }

    /// Largest record counter the recovery walk met (0 before it ran).
    pub fn walked_max(&self) -> u64 {
        self.walked_max.load(Ordering::Acquire)
    }

    /// Makes every number handed out from now on larger than `counter`.
    pub fn raise(&self, counter: u64) {
        self.counter
            .fetch_max((counter & COUNTER_MASK) + 1, Ordering::AcqRel);
    }

    /// A fresh sequence number of this lane.
    #[inline]
    pub fn next_seq(&self, pool: &Pool) -> u64 {
        self.recover(pool);
        ((self.id as u64) << 56) | (self.counter.fetch_add(1, Ordering::Relaxed) & COUNTER_MASK)
    }

    /// Appends a record of `total` bytes: `write(at)` must store it and flush
    /// it; this issues the fence. Returns the record offset and, when the
    /// append sealed the previous active segment, that segment.
    pub fn append(
        &self,
        pool: &Pool,
        total: u64,
        write: impl FnOnce(u64),
    ) -> Result<(u64, Option<u32>)> {
        self.recover(pool);
        let mut st = self.state.lock();
        let sealed = self.make_room(&mut st, pool, total)?;
        let at = st.tail;
        write(at);
        // Persist point: the record is durable before any slot names it, and
        // before the next record of this lane is written.
        pool.pm.fence();
        st.tail = at + total;
        // Count the record live before the segment can be sealed by the next
        // append; the caller takes it back if the record is never published.
        pool.add_live(pool.segment_of(at), total);
        Ok((at, sealed))
    }

    /// Appends the records of a batch under one hold of the lane: `write(i,
    /// at)` stores record `i` (of `totals[i]` bytes) and flushes it; then
    /// **one fence**, before the lane is released, makes all of them durable
    /// (and whatever else this thread flushed before it). A crash before
    /// that fence may leave a torn record inside the batch, and nothing live
    /// ever follows it: no other thread sharing the lane appends before the
    /// fence, and the lane never appends to a segment of an earlier run.
    /// Each record's offset goes to `offsets` and each segment sealed on the
    /// way to `sealed`, also when an allocation fails part way (the caller
    /// takes those records back; the fence is issued then too).
    pub fn append_many(
        &self,
        pool: &Pool,
        totals: &[u64],
        offsets: &mut Vec<u64>,
        sealed: &mut Vec<u32>,
        mut write: impl FnMut(usize, u64),
    ) -> Result<()> {
        self.recover(pool);
        let mut st = self.state.lock();
        let mut appended = Ok(());
        for (i, &total) in totals.iter().enumerate() {
            match self.make_room(&mut st, pool, total) {
                Ok(s) => sealed.extend(s),
                Err(e) => {
                    appended = Err(e);
                    break;
                }
            }
            let at = st.tail;
            write(i, at);
            st.tail = at + total;
            pool.add_live(pool.segment_of(at), total);
            offsets.push(at);
        }
        // Persist point, with the lane still held: every record appended
        // here is durable before another thread's record can follow it.
        pool.pm.fence();
        appended
    }

    /// Makes room for `total` bytes at the tail, opening a new segment when
    /// the active one is full; returns the segment that sealed.
    fn make_room(&self, st: &mut LaneState, pool: &Pool, total: u64) -> Result<Option<u32>> {
        if st.segment.is_some() && st.tail + total <= st.end {
            return Ok(None);
        }
        let header = SegmentHeader {
            kind: SegmentKind::Log,
            lane_or_depth: self.id as u32,
            run_segments: 1,
            // Draw a number: bases strictly increase, so the newest
            // segment of the lane is the one with the highest base.
            base_seq_or_prefix: self.counter.fetch_add(1, Ordering::AcqRel) & COUNTER_MASK,
        };
        let seg = pool.allocate_as(header, self.cleaner)?;
        let sealed = st.segment.replace(seg);
        if let Some(old) = sealed {
            pool.seal(old);
        }
        st.tail = pool.segment_offset(seg) + layout::SEGMENT_HEADER_BYTES;
        st.end = pool.segment_offset(seg) + pool.segment_bytes;
        Ok(sealed)
    }
}

#[cfg(test)]
mod tests {
    //! Regression: sequence numbers repeated after a restart. Several threads
    //! sharing a lane drew numbers, then each append opened a new segment
    //! whose base was `counter.load()` — so three segments got the same base,
    //! the open-time scan picked the wrong one as active (ties broken by
    //! segment index, and freed segments are reused lowest first), and the
    //! counter restarted below numbers already written. Write elimination
    //! compares these numbers, so a repeat could drop an acknowledged put.
    use std::collections::{HashMap, HashSet};
    use std::sync::{mpsc, Arc};
    use std::thread::ThreadId;

    use super::*;
    use crate::options::Options;
    use crate::pmem::PersistObserver;

    /// A record's bytes (header, key, value) and its size in the log.
    fn record(seq: u64, value_len: usize) -> (Vec<u8>, u64) {
        let key = seq.to_le_bytes();
        let value = vec![1u8; value_len];
        let mut bytes = RecordHeader::encode(&key, &value, 0, seq, None).to_vec();
        bytes.extend_from_slice(&key);
        bytes.extend_from_slice(&value);
        (bytes, layout::record_bytes(key.len(), value_len))
    }

    fn append(pool: &Pool, lane: &Lane, seq: u64, value_len: usize) -> u64 {
        let (bytes, total) = record(seq, value_len);
        let (at, _) = lane
            .append(pool, total, |at| pool.pm.write_persistent(at, &bytes))
            .unwrap();
        at
    }

    #[test]
    fn sequence_numbers_never_repeat_across_restart_when_lane_is_shared() {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let path = dir.path().join("seq.pool");
        let options = Options {
            segment_bytes: 256 << 10,
            pool_bytes_initial: 16 << 20,
            lanes: 1,
            ..Options::default()
        };
        // Each record is just over half a segment: every append opens a segment.
        let big = ((options.segment_bytes - 64) / 2) as usize;
        let mut max_written = 0;
        {
            let (pool, _) = Pool::open(&path, &options, None).unwrap();
            let lane = Lane::new(0, 0, None);
            let spacer = pool
                .allocate(SegmentHeader {
                    kind: SegmentKind::Log,
                    lane_or_depth: 9,
                    run_segments: 1,
                    base_seq_or_prefix: 0,
                })
                .unwrap();
            // Three threads of the shared lane drew numbers before any appended.
            let drawn: Vec<u64> = (0..3).map(|_| lane.next_seq(&pool)).collect();
            let mut newest = 0;
            for (i, &seq) in drawn.iter().enumerate() {
                if i == 2 {
                    // Free a low segment so the newest segment reuses it.
                    pool.releases_pending.fetch_add(1, Ordering::AcqRel);
                    pool.release(spacer);
                }
                newest = pool.segment_of(append(&pool, &lane, seq, big));
                max_written = max_written.max(seq & COUNTER_MASK);
            }
            for _ in 0..5 {
                let seq = lane.next_seq(&pool);
                assert_eq!(pool.segment_of(append(&pool, &lane, seq, 100)), newest);
                max_written = max_written.max(seq & COUNTER_MASK);
            }
        }
        let (pool, scan) = Pool::open(&path, &options, None).unwrap();
        let lane = Lane::new(0, scan.lane_max_seq[0], scan.active_log[0].map(|a| a.0));
        let next = lane.next_seq(&pool) & COUNTER_MASK;
        assert!(
            next > max_written,
            "first number after restart {next} repeats one written before ({max_written})"
        );
    }

    /// A persistent-memory model: a line a thread flushed (or stored
    /// non-temporally) becomes durable at that thread's next fence.
    #[derive(Default)]
    struct Model {
        state: std::sync::Mutex<ModelState>,
    }

    #[derive(Default)]
    struct ModelState {
        pending: HashMap<ThreadId, HashSet<u64>>,
        durable: HashSet<u64>,
    }

    impl Model {
        fn pend(&self, offset: u64, len: u64) {
            let mut st = self.state.lock().unwrap();
            let mine = st.pending.entry(std::thread::current().id()).or_default();
            let mut line = offset & !63;
            while line < offset + len {
                mine.insert(line);
                line += 64;
            }
        }

        /// Whether every line of `offset..offset + len` is durable.
        fn durable(&self, offset: u64, len: u64) -> bool {
            let st = self.state.lock().unwrap();
            (offset & !63..offset + len)
                .step_by(64)
                .all(|line| st.durable.contains(&line))
        }
    }

    impl PersistObserver for Model {
        fn store(&self, _offset: u64, _data: &[u8]) {}
        fn nt_store(&self, offset: u64, data: &[u8]) {
            self.pend(offset, data.len() as u64);
        }
        fn flush(&self, offset: u64) {
            self.pend(offset, 1);
        }
        fn fence(&self) {
            let mut st = self.state.lock().unwrap();
            let mine = st
                .pending
                .remove(&std::thread::current().id())
                .unwrap_or_default();
            st.durable.extend(mine);
        }
    }

    /// Regression: a cleaner chunk's copies (`append_many`) were fenced by
    /// the caller after the lane was released, so the tier's thread, which
    /// shares the cleaner's lane, could append a record behind them, fence
    /// it and publish it while the copies were still unfenced. A crash
    /// then left a live record past a torn one: past the segment's valid
    /// prefix, where `check` reports damage and the cleaner (which walks
    /// the prefix) never finds it. The disk domain's kill -9 loop, whose
    /// kill drops every unfenced store, met it; on tmpfs the stores survive
    /// a kill. Now `append_many` fences before it releases the lane.
    #[test]
    fn records_appended_together_are_durable_before_another_thread_appends() {
        let dir = tempfile::tempdir_in("/dev/shm")
            .or_else(|_| tempfile::tempdir())
            .unwrap();
        let options = Options {
            segment_bytes: 256 << 10,
            pool_bytes_initial: 4 << 20,
            lanes: 1,
            ..Options::default()
        };
        let model = Arc::new(Model::default());
        let (pool, _) =
            Pool::open(&dir.path().join("many.pool"), &options, Some(model.clone())).unwrap();
        let lane = Lane::new(0, 0, None);
        // Two small records (cached stores and flushes) and a large one
        // (non-temporal stores where the CPU has them).
        let (records, totals): (Vec<Vec<u8>>, Vec<u64>) = [100, 1000, 40]
            .iter()
            .map(|&len| record(lane.next_seq(&pool), len))
            .unzip();
        let (appended_tx, appended_rx) = mpsc::channel();
        let (go_tx, go_rx) = mpsc::channel::<()>();
        std::thread::scope(|s| {
            // Dropped if an assertion below fails, so the thread ends.
            let go_tx = go_tx;
            s.spawn(|| {
                let (appended_tx, go_rx) = (appended_tx, go_rx);
                let (mut offsets, mut sealed) = (Vec::new(), Vec::new());
                lane.append_many(&pool, &totals, &mut offsets, &mut sealed, |i, at| {
                    pool.pm.write_persistent(at, &records[i])
                })
                .unwrap();
                appended_tx.send(offsets).unwrap();
                // The caller's own next steps (before this fix: its fence
                // of the records) come after another thread's append.
                let _ = go_rx.recv();
                pool.pm.fence();
            });
            let offsets = appended_rx.recv().unwrap();
            // Another thread of the lane appends a record and fences it.
            let later = append(&pool, &lane, lane.next_seq(&pool), 100);
            assert!(model.durable(later, record(0, 100).0.len() as u64));
            assert!(later > *offsets.last().unwrap());
            for (at, bytes) in offsets.iter().zip(&records) {
                assert!(
                    model.durable(*at, bytes.len() as u64),
                    "record {at:#x} of the batch is not durable, but a later record of the lane is"
                );
            }
            go_tx.send(()).unwrap();
        });
    }
}
