//! Options for opening or creating a pool.
//!
//! Fields marked *creation* are written into the superblock when the pool is
//! created and ignored afterwards; the others apply to this open only.

/// How persist points reach the persistence domain.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum FlushMode {
    /// Flush cache lines (`clwb` > `clflushopt` > `clflush`) and fence.
    #[default]
    Flush,
    /// The platform flushes CPU caches on power loss (eADR): skip the cache-line
    /// flushes, keep the fences that order stores.
    Eadr,
}

/// Where a pool's durability comes from ([`Options::domain`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum Domain {
    /// From where the file lives: a DAX mount (or [`FlushMode::Eadr`]) is
    /// persistent memory, tmpfs keeps data across a process crash, any
    /// other file system is the disk domain (a write-ahead log beside the
    /// pool, synced before a write returns).
    #[default]
    Detect,
    /// The disk domain wherever the file lives (the crash simulator and
    /// tests run it on tmpfs).
    Disk,
}

/// The three MPKV mechanisms, each of which can be switched off alone to
/// measure what it buys (ablation). All on is the normal engine; all off is
/// the MPKV paper's *Baseline* ([`Options::baseline`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Mechanisms {
    /// Writers lock buckets through a lock table in DRAM. Off: each bucket
    /// carries a reader-writer lock word in persistent memory (its last slot),
    /// as in the Baseline. This one changes the bucket layout, so it is fixed
    /// when the pool is created and must match on every open.
    pub volatile_lock_table: bool,
    /// Two-phase atomic write with lock-free reads. Off: a writer stores the
    /// slot with its persist bit already set and readers take the bucket's
    /// read lock.
    pub lock_free_reads: bool,
    /// Concurrent write elimination. Off: every put writes.
    pub write_elimination: bool,
}

impl Mechanisms {
    /// All three mechanisms on (the default).
    pub const ALL: Mechanisms = Mechanisms {
        volatile_lock_table: true,
        lock_free_reads: true,
        write_elimination: true,
    };
    /// All three off: the MPKV paper's Baseline.
    pub const NONE: Mechanisms = Mechanisms {
        volatile_lock_table: false,
        lock_free_reads: false,
        write_elimination: false,
    };
}

impl Default for Mechanisms {
    fn default() -> Self {
        Mechanisms::ALL
    }
}

/// Where the point index (key → record) lives; chosen when the pool is
/// created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum PointIndex {
    /// In persistent memory (MPKV): usable the moment the pool opens.
    #[default]
    Pm,
    /// In DRAM (HybridIndex+): a point read touches persistent memory only
    /// for the record. Nothing of it is persisted: after every open it is
    /// rebuilt in the background from the ordered index, which serves point
    /// reads (more slowly) until the rebuild is done. Needs the ordered
    /// index and all three [`Mechanisms`].
    Dram,
}

/// How the ordered index is laid out in the pool; chosen when the pool is
/// created.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum OrderedLayout {
    /// Leaves of up to 60 record words each, found through a DRAM index of
    /// their low keys (format version 6). A range read streams through
    /// leaves and reads each record directly. Used with
    /// [`PointIndex::Dram`]; a pool with the PM point index keeps the
    /// skiplist.
    #[default]
    Leaves,
    /// The persistent skiplist of one node per key (format versions 2–5);
    /// what older builds can open.
    Skiplist,
}

impl PointIndex {
    pub fn name(self) -> &'static str {
        match self {
            PointIndex::Pm => "pm",
            PointIndex::Dram => "dram",
        }
    }
}

impl std::str::FromStr for PointIndex {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        match s {
            "pm" => Ok(PointIndex::Pm),
            "dram" => Ok(PointIndex::Dram),
            other => Err(format!(
                "point index placement {other:?}: expected pm or dram"
            )),
        }
    }
}

/// Options for [`crate::Db::open`].
#[derive(Clone, Debug)]
pub struct Options {
    /// Create the pool when the file does not exist (default `true`).
    pub create: bool,
    /// *Creation*: initial size of the pool file in bytes (default 64 MiB).
    pub pool_bytes_initial: u64,
    /// Largest size the pool file may grow to, in bytes (default 64 GiB).
    /// Address space for this much is reserved at open; the file itself grows
    /// on demand in steps. `PoolFull` is returned only at this size.
    pub pool_bytes_max: u64,
    /// *Creation*: size of one segment in bytes (power of two, 64 KiB..=64 MiB;
    /// default 1 MiB).
    pub segment_bytes: u64,
    /// Number of log lanes (1..=254). Each lane appends to its own segment;
    /// threads are spread over lanes. Default: 4 × available cores, at most 64.
    pub lanes: usize,
    /// Flush mode (default [`FlushMode::Flush`]).
    pub flush_mode: FlushMode,
    /// Verify the CRC32C of every record a read returns (default `false`; a
    /// mismatch is returned as [`crate::Error::Corruption`]).
    pub verify_reads: bool,
    /// Which MPKV mechanisms are on (default: all). See [`Mechanisms`].
    pub mechanisms: Mechanisms,
    /// *Creation*: keep the ordered index, a persistent skiplist over the
    /// keys that serves [`crate::Db::range`], prefix scans, `first`/`last`
    /// (default `false`). At open, the pool's own setting applies;
    /// [`crate::Db::has_ordered_index`] tells which it is.
    pub ordered_index: bool,
    /// *Creation*: where the point index lives (default [`PointIndex::Pm`]).
    /// [`PointIndex::Dram`] needs `ordered_index`. At open, the pool's own
    /// setting applies; [`crate::Db::point_index`] tells which it is.
    pub point_index: PointIndex,
    /// *Creation*: the ordered index's layout (default
    /// [`OrderedLayout::Leaves`], which applies to pools with the DRAM point
    /// index; others get the skiplist). At open, the pool's own layout
    /// applies.
    pub ordered_layout: OrderedLayout,
    /// Run the background log cleaner (default `true`).
    pub cleaner: bool,
    /// Most bytes per second the cleaner copies while the pool has room to
    /// spare (default 256 MiB/s); it runs unthrottled when free space is low.
    pub cleaner_bytes_per_sec: u64,
    /// The clock key deadlines are measured against (default: the system
    /// clock; tests use a [`ManualClock`]).
    pub clock: Clock,
    /// Run the background expiry thread, which deletes keys whose deadline
    /// has passed (default `true`; expired keys read as absent either way).
    pub active_expiry: bool,
    /// *Creation*: keep large values on an SSD tier, in data files in this
    /// directory (MixStore's split: the pool keeps the key, the extent's
    /// address and checksum and the value's unaligned tail). `None` (the
    /// default): every value lives in the pool. The pool remembers the
    /// directory; at a later open `None` means "the one the pool names",
    /// and a different directory is refused.
    pub data_dir: Option<std::path::PathBuf>,
    /// *Creation*: values of at least this many bytes go to the SSD tier
    /// (default [`DEFAULT_TIER_THRESHOLD`]; only with `data_dir`).
    pub tier_threshold: u64,
    /// Bytes of DRAM for the ACS read cache of values read from the SSD tier
    /// (0 disables it). Default: 1/8 of physical memory, at most 4 GiB.
    pub cache_bytes: u64,
    /// Replacement policy of the ACS read cache (default S3-FIFO; LRU is
    /// the AEP paper's).
    pub cache_policy: crate::tier::cache::Policy,
    /// Observes the SSD tier's file writes and syncs (the crash simulator);
    /// `None` normally.
    pub ssd_observer: Option<std::sync::Arc<dyn crate::tier::SsdObserver>>,
    /// Where the pool's durability comes from (default [`Domain::Detect`]).
    pub domain: Domain,
    /// Disk domain: the size of the write-ahead log's ring in bytes
    /// (default 64 MiB; at least 8 MiB, rounded up to whole 4 KiB pages).
    /// The log file takes this plus 4 KiB, whatever is in use; a replay
    /// after a crash reads at most this much. How much of it is in use at
    /// steady state is up to the two checkpoint settings below.
    pub disk_log_bytes: u64,
    /// Disk domain: a checkpoint — the log's synced lines written into the
    /// pool file, the pool file synced, the log's start moved past them —
    /// starts once more than this many synced log bytes wait to be applied.
    /// `None` (the default): a quarter of the ring.
    ///
    /// Larger means fewer checkpoints: fewer pool-file syncs, and a line
    /// written many times between two checkpoints reaches the pool file
    /// once. The price: more of the log is in use at steady state, a replay
    /// after a crash reads and applies up to that much more (open takes
    /// longer, about in proportion), and each checkpoint writes more at
    /// once. Smaller means the reverse. Whatever it says, a checkpoint also
    /// starts once the ring is more than half full (or more than this, if
    /// larger) and whenever a write waits for room in a full ring.
    ///
    /// More than the ring ([`disk_log_bytes`](Self::disk_log_bytes) as the
    /// log takes it) is refused at open; a value within 512 KiB of the ring
    /// acts as the ring less 512 KiB (room for one largest record), so
    /// writes go on while a checkpoint runs.
    pub disk_checkpoint_bytes: Option<u64>,
    /// Disk domain: the longest synced log bytes wait before a checkpoint
    /// applies them, counted from the last checkpoint (default 500 ms).
    /// It bounds how long a lightly written pool keeps its log in use, and
    /// so the replay after a crash in a quiet period. Longer means fewer
    /// pool-file syncs under a light load; shorter, a log emptied sooner
    /// (zero checkpoints after every log sync).
    pub disk_checkpoint_interval: std::time::Duration,
    /// Observes the disk domain's file writes and syncs (the crash
    /// simulator); `None` normally.
    pub disk_observer: Option<std::sync::Arc<dyn crate::pmem::wal::DiskObserver>>,
}

/// Default [`Options::disk_log_bytes`]: 64 MiB.
pub const DEFAULT_DISK_LOG_BYTES: u64 = 64 << 20;

/// Default [`Options::disk_checkpoint_interval`]: 500 ms.
pub const DEFAULT_DISK_CHECKPOINT_INTERVAL: std::time::Duration =
    crate::pmem::wal::DEFAULT_CHECKPOINT_INTERVAL;

/// Default [`Options::tier_threshold`]: 4 KiB.
pub const DEFAULT_TIER_THRESHOLD: u64 = 4096;

/// Default [`Options::cache_bytes`]: an eighth of physical memory, at most
/// 4 GiB (64 MiB when the memory size is unknown).
pub fn default_cache_bytes() -> u64 {
    let total = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            s.lines()
                .find_map(|l| l.strip_prefix("MemTotal:"))
                .and_then(|v| v.trim().trim_end_matches("kB").trim().parse::<u64>().ok())
        })
        .map(|kib| kib * 1024);
    total.map_or(64 << 20, |t| (t / 8).min(4 << 30))
}

/// Where "now" comes from for key deadlines, in milliseconds of Unix time.
#[derive(Clone, Debug, Default)]
pub enum Clock {
    /// The system's real-time clock.
    #[default]
    System,
    /// A clock that moves only when told to (tests, simulations).
    Manual(ManualClock),
}

impl Clock {
    /// Milliseconds of Unix time now.
    pub fn now_ms(&self) -> u64 {
        match self {
            Clock::System => std::time::SystemTime::now()
                .duration_since(std::time::UNIX_EPOCH)
                .map(|d| d.as_millis() as u64)
                .unwrap_or(0),
            Clock::Manual(m) => m.now_ms(),
        }
    }
}

/// A shared clock set by hand: clones see the same time.
#[derive(Clone, Debug, Default)]
pub struct ManualClock(std::sync::Arc<std::sync::atomic::AtomicU64>);

impl ManualClock {
    /// A clock that reads `ms` (milliseconds of Unix time).
    pub fn new(ms: u64) -> ManualClock {
        ManualClock(std::sync::Arc::new(ms.into()))
    }

    pub fn now_ms(&self) -> u64 {
        self.0.load(std::sync::atomic::Ordering::Acquire)
    }

    pub fn set(&self, ms: u64) {
        self.0.store(ms, std::sync::atomic::Ordering::Release);
    }

    pub fn advance(&self, ms: u64) {
        self.0.fetch_add(ms, std::sync::atomic::Ordering::AcqRel);
    }
}

impl Options {
    /// Options for the MPKV paper's Baseline: locks in the persistent
    /// buckets, locked reads, no write elimination; everything else default.
    pub fn baseline() -> Options {
        Options {
            mechanisms: Mechanisms::NONE,
            ..Options::default()
        }
    }
}

impl Default for Options {
    fn default() -> Self {
        let cores = std::thread::available_parallelism()
            .map(|n| n.get())
            .unwrap_or(1);
        Options {
            create: true,
            pool_bytes_initial: 64 << 20,
            pool_bytes_max: 64 << 30,
            segment_bytes: 1 << 20,
            lanes: (cores * 4).clamp(1, 64),
            flush_mode: FlushMode::Flush,
            verify_reads: false,
            mechanisms: Mechanisms::ALL,
            ordered_index: false,
            point_index: PointIndex::Pm,
            ordered_layout: OrderedLayout::Leaves,
            cleaner: true,
            cleaner_bytes_per_sec: 256 << 20,
            clock: Clock::System,
            active_expiry: true,
            data_dir: None,
            tier_threshold: DEFAULT_TIER_THRESHOLD,
            cache_bytes: default_cache_bytes(),
            cache_policy: Default::default(),
            ssd_observer: None,
            domain: Domain::Detect,
            disk_log_bytes: DEFAULT_DISK_LOG_BYTES,
            disk_checkpoint_bytes: None,
            disk_checkpoint_interval: DEFAULT_DISK_CHECKPOINT_INTERVAL,
            disk_observer: None,
        }
    }
}
