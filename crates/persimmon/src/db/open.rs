//! Opening a pool: validate and map it (`Pool::open`), choose the point
//! index's placement, rebuild the DRAM state that is cheap to rebuild (the
//! directory, the lanes), open the ordered index, and start the background
//! work after open. No index or log scan runs before `open` returns.
//!
//! Invariants:
//! - A pool whose headers contradict its flags is refused: index segments
//!   in a DRAM-index pool, records without any index segment, ordered-index
//!   segments in a pool created without it (or records with none in one
//!   created with it). These checks follow `Pool::open`, which has already
//!   marked the pool open (clean state 0, open count raised), and, for an
//!   empty PM-index pool without an index segment, after that segment is
//!   created: the ordered-index checks come last.
//! - The key count starts from the clean close's count only when the
//!   placement trusts it (`IndexPlacement::clean_key_count`); otherwise it
//!   is counted by the tally or the DRAM rebuild, and `len` waits for that.
//! - A new ordered index has nothing to walk: the placement is complete and
//!   the walk has ended before `open` returns, and no walk thread starts.
//! - Batches a crash interrupted are undone (or, past their commit point,
//!   finished) right after `Pool::open`, before the engine reads any word.
//! - The threads of the work after open yield before they start, so that
//!   on busy cores the open returns before they take the core it runs on.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicI64, AtomicU64, Ordering};
use std::sync::{Arc, Condvar, Mutex};
use std::thread::JoinHandle;

use crossbeam_utils::CachePadded;

use super::deadlines::Expiry;
use super::engine::Engine;
use super::handle::{Db, EngineHandle};
use super::placement::IndexPlacement;
use crate::batch_table::{self, BatchRecovery, BatchTable};
use crate::error::{Error, Result};
use crate::index::locks::BucketLocks;
use crate::index::Index;
use crate::layout;
use crate::log::{Lane, CLEANER_LANE};
use crate::options::Options;
use crate::ordered::Ordered;
use crate::pmem::PersistObserver;
use crate::pool::Pool;
use crate::segment_scan::ScanResult;
use crate::tier::Tier;

impl Db {
    /// Opens the pool at `path`, creating it when it does not exist (unless
    /// `options.create` is false). Serves requests at once: no index or log
    /// scan happens before this returns; live-space accounting is rebuilt
    /// by a background thread.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Db> {
        Self::open_observed(path.as_ref(), options, None)
    }

    /// Like [`open`](Self::open), with every store, flush and fence on the
    /// pool reported to `observer` (the crash simulator's hook).
    #[doc(hidden)]
    pub fn open_observed(
        path: &Path,
        options: Options,
        observer: Option<Arc<dyn PersistObserver>>,
    ) -> Result<Db> {
        let (pool, scan) = Pool::open(path, &options, observer)?;
        // Before anything reads a word: undo or finish the batches a crash
        // interrupted.
        let recovery = batch_table::recover(&pool)?;
        let engine = Engine::new(pool, &scan, &options, recovery)?;
        let background = engine.start_background(&options)?;
        let ordered_walk = engine.start_ordered_walk()?;
        let expiry_thread = engine.start_expiry(&options)?;
        let tier_thread = engine.start_tier(&options)?;
        Ok(Db {
            engine: EngineHandle(Some(engine)),
            background: Some(background),
            ordered_walk,
            expiry_thread,
            tier_thread,
        })
    }
}

impl Engine {
    /// The engine over an opened pool; nothing runs in the background yet.
    fn new(
        pool: Pool,
        scan: &ScanResult,
        options: &Options,
        batch_recovery: BatchRecovery,
    ) -> Result<Arc<Engine>> {
        let (point_index, dir) = IndexPlacement::open(&pool, scan)?;
        let lanes: Vec<CachePadded<Lane>> = (0..options.lanes)
            .map(|i| {
                let active = scan.active_log[i].map(|(s, _)| s);
                CachePadded::new(Lane::new(i as u8, scan.lane_max_seq[i], active))
            })
            .collect();
        let cleaner_lane = Lane::new(
            CLEANER_LANE,
            scan.lane_max_seq[CLEANER_LANE as usize],
            scan.active_log[CLEANER_LANE as usize].map(|(s, _)| s),
        );
        let base_seq_floor = scan.lane_max_seq.iter().copied().max().unwrap_or(0);
        let clean_count = point_index.clean_key_count(&pool);
        let mech = options.mechanisms;
        let locks = BucketLocks::new(
            !mech.volatile_lock_table,
            !mech.lock_free_reads,
            pool.open_count,
        );
        let placement = if pool.sb.flags & layout::SB_FLAG_THREE_CHOICE != 0 {
            crate::index::Placement::ThreeChoice
        } else {
            crate::index::Placement::Pair
        };
        let index = Index::new(dir, pool.segment_bytes, locks, placement);
        let seed = pool.sb.hash_seed;
        let ordered = open_ordered(&pool, scan, seed)?;
        let lane_count = lanes.len();
        let tier = match &pool.tier {
            Some(s) => Some(Tier::open(
                &s.dir,
                s.threshold,
                pool.sb.pool_id,
                options.cache_bytes,
                options.cache_policy,
                options.ssd_observer.clone(),
            )?),
            None => None,
        };
        Ok(Arc::new_cyclic(|me| Engine {
            pool,
            index,
            point_index,
            reclaim_blocked: AtomicBool::new(false),
            ordered,
            ordered_walk_errors: parking_lot::Mutex::new(Vec::new()),
            ordered_walk_ended: AtomicBool::new(false),
            lanes,
            cleaner_lane,
            base_seq_floor,
            seq_floor_ready: std::sync::Once::new(),
            seed,
            verify_reads: options.verify_reads,
            eliminate: mech.write_elimination,
            two_phase: mech.lock_free_reads,
            clean_open: clean_count.is_some(),
            tally_cursor: AtomicU64::new(0),
            tally_done: AtomicBool::new(false),
            tally_signal: (Mutex::new(0), Condvar::new()),
            base_count: AtomicU64::new(clean_count.unwrap_or(0)),
            count_deltas: (0..lane_count)
                .map(|_| CachePadded::new(AtomicI64::new(0)))
                .collect(),
            stop: AtomicBool::new(false),
            expiry_held: AtomicBool::new(false),
            me: me.clone(),
            split_mutex: parking_lot::Mutex::new(()),
            chunk_mutex: parking_lot::Mutex::new(()),
            eliminated_puts: AtomicU64::new(0),
            splits: AtomicU64::new(0),
            cleaned_segments: AtomicU64::new(0),
            cleaned_bytes: AtomicU64::new(0),
            tally_errors: parking_lot::Mutex::new(Vec::new()),
            batches: BatchTable::default(),
            batch_recovery,
            expiry: Expiry::new(options.clock.clone()),
            tier,
            tier_moved: AtomicU64::new(0),
            tier_merges: AtomicU64::new(0),
            merges: Default::default(),
        }))
    }

    /// Starts the SSD tier's background merge and cleaning (tiered pools,
    /// when the cleaner is enabled).
    fn start_tier(self: &Arc<Self>, options: &Options) -> Result<Option<JoinHandle<()>>> {
        if self.tier.is_none() || !options.cleaner {
            return Ok(None);
        }
        let e = self.clone();
        spawn_after_open("persimmon-tier", "spawn the tier thread", move || {
            e.tier_loop()
        })
        .map(Some)
    }

    /// Starts the background expiry (when enabled).
    fn start_expiry(self: &Arc<Self>, options: &Options) -> Result<Option<JoinHandle<()>>> {
        if !options.active_expiry {
            return Ok(None);
        }
        let e = self.clone();
        spawn_after_open("persimmon-expiry", "spawn the expiry thread", move || {
            e.expiry_loop()
        })
        .map(Some)
    }

    /// Starts the background thread: the rebuild after open, then (when
    /// enabled) the log cleaner.
    fn start_background(self: &Arc<Self>, options: &Options) -> Result<JoinHandle<()>> {
        let bg = self.clone();
        let (run_cleaner, cleaner_rate) = (options.cleaner, options.cleaner_bytes_per_sec);
        spawn_after_open(
            "persimmon-background",
            "spawn the rebuild thread",
            move || {
                bg.rebuild();
                bg.sweep_data_files();
                if run_cleaner {
                    bg.cleaner_loop(cleaner_rate);
                }
            },
        )
    }

    /// Starts the ordered index's walk after open, when there is one to walk.
    fn start_ordered_walk(self: &Arc<Self>) -> Result<Option<JoinHandle<()>>> {
        match &self.ordered {
            Some(o) if !o.walk_done() => {
                let walker = self.clone();
                let handle = spawn_after_open(
                    "persimmon-ordered",
                    "spawn the ordered-index walk",
                    move || walker.ordered_walk(),
                )?;
                Ok(Some(handle))
            }
            Some(_) => {
                // A new ordered index: nothing to walk, nothing to enter.
                self.point_index.set_complete();
                self.ordered_walk_ended.store(true, Ordering::Release);
                Ok(None)
            }
            None => Ok(None),
        }
    }
}

/// Starts a thread of the work after open. Its first act is to yield: on
/// a machine whose cores are all busy, the kernel lets a new thread run
/// before the thread that created it, and a rebuild thread would then hold
/// the core the open runs on for a whole time slice (measured: open to
/// first GET 5–14 ms instead of 0.6 ms, medians over 21 opens of a
/// 10^6-key pool on 2 busy cores) before the open could return.
fn spawn_after_open(
    name: &str,
    what: &str,
    work: impl FnOnce() + Send + 'static,
) -> Result<JoinHandle<()>> {
    std::thread::Builder::new()
        .name(name.into())
        .spawn(move || {
            std::thread::yield_now();
            work()
        })
        .map_err(|e| Error::io(what, e))
}

/// The ordered index, when the pool was created with one.
fn open_ordered(pool: &Pool, scan: &ScanResult, seed: u64) -> Result<Option<Ordered>> {
    if pool.sb.flags & layout::SB_FLAG_ORDERED_INDEX != 0 {
        if scan.ordered_segments.is_empty() && scan.has_records {
            return Err(Error::corruption(
                layout::SUPERBLOCK_BYTES,
                "the pool holds records but its ordered index has no segment (damaged head?)",
            ));
        }
        return Ok(Some(Ordered::open(pool, &scan.ordered_segments, seed)?));
    }
    if let Some(&(s, _, _)) = scan.ordered_segments.first() {
        return Err(Error::corruption(
            pool.segment_offset(s),
            "an ordered-index segment in a pool created without the ordered index",
        ));
    }
    Ok(None)
}
