//! The ACS read cache (the AEP paper's asynchronous cache scheme): a bounded
//! DRAM cache of extents read from the SSD tier, keyed by [`ExtentKey`].
//!
//! How the engine uses it: a read looks here first ([`AcsCache::get`]); on a
//! miss it reads the extent itself and hands the bytes to
//! [`AcsCache::fill_async`], which queues them for the filler thread (queue
//! full: the fill is dropped and counted, the reader never waits). A write
//! inserts its new extent synchronously ([`AcsCache::insert`], write-through);
//! a delete or overwrite removes the old key synchronously
//! ([`AcsCache::remove`]).
//!
//! The cache is split into shards (a power of two, at most 64, each at least
//! 4 MiB) chosen by a hash of the key, each behind its own mutex, so threads
//! reading different keys rarely meet. Each shard runs the replacement policy
//! on its own share of the capacity.
//!
//! Invariants:
//! - A shard's `bytes` is the sum of its entries' charges (value length +
//!   [`ENTRY_OVERHEAD_BYTES`]) and never exceeds its capacity (capacity /
//!   shards): room is made before an entry goes in, and a value whose charge
//!   exceeds a shard's capacity is never stored. So the whole cache never
//!   holds more than `capacity_bytes`.
//! - Every entry is in exactly one of its shard's queues, and the shard's map
//!   and queues hold the same keys.
//! - Fills never resurrect a key written since: `insert(k)` and `remove(k)`
//!   bump a generation (one of 16 stripes per shard) under the shard lock;
//!   `fill_async(k)` records the generation when it queues, and the filler,
//!   under the same lock, drops a fill whose generation moved (counted in
//!   `fills_dropped`). Hence: if `fill_async(k, v)` returned before
//!   `remove(k)` was called, then once `remove(k)` returns no `get(k)` sees
//!   `v`, now or later. A fill queued *after* `remove(k)` returned does land:
//!   the cache cannot tell it from a fill of a live extent. The engine only
//!   does that when a reader found the extent before a concurrent delete;
//!   extent keys are never reused while the pool is open, so no reader asks
//!   for that key again and the entry just ages out (memory, not staleness).
//! - The filler thread holds the shards, never the cache: dropping the last
//!   `Arc<AcsCache>` closes the queue and joins the thread.
//! - Capacity 0 disables the cache: no shards, no thread; every call returns
//!   at once and nothing is counted.
//!
//! Policies (per shard; hits and inserts take the shard lock in all three):
//! - LRU (the paper's): a hit moves the entry to the newest end; evict the
//!   oldest.
//! - CLOCK: one FIFO with a reference bit; a hit sets the bit; eviction
//!   gives each entry with the bit set a second lap (clears it, requeues).
//! - S3-FIFO: a small FIFO (10 % of the bytes) where new keys enter, a main
//!   FIFO with a 2-bit frequency (a hit adds 1, at most 3; eviction requeues
//!   an entry with frequency > 0 and subtracts 1), and a ghost FIFO of keys
//!   recently evicted from the small queue (as many as the shard has
//!   entries). Leaving the small queue, an entry hit at least once moves to
//!   main, the others are evicted into the ghost; a key found in the ghost is
//!   inserted straight into main. One-hit keys (scans) pass through the small
//!   queue without disturbing main. The ghost is a hash-indexed table of
//!   (key, stamp), two places per entry (charged in the entry overhead).
//!
//! Figures (`cargo run --release -p persimmon --example cache_policies --
//! --extents 1000000 --accesses 10000000 --repeat 3`: 1,000,000 extents of
//! 16 KiB, 10,000,000 accesses, the cache holding 1 % or 10 % of the
//! extents; hit ratio after a warm-up of the first 10 % of the accesses;
//! replay = get, insert on a miss; rates in millions of operations per
//! CPU-second of the replaying threads, best of 3, on a 2-core machine
//! shared with compile jobs, so they are rough):
//!
//! | keys      | cache | policy  | hit ratio | 1 thread | 2 threads |
//! |-----------|-------|---------|-----------|----------|-----------|
//! | zipf 0.99 | 1 %   | lru     | 0.573     | 17.6     | 17.8      |
//! | zipf 0.99 | 1 %   | clock   | 0.583     | 17.9     | 17.2      |
//! | zipf 0.99 | 1 %   | s3-fifo | 0.653     | 16.1     | 17.6      |
//! | zipf 0.99 | 10 %  | lru     | 0.770     | 5.0      | 5.4       |
//! | zipf 0.99 | 10 %  | clock   | 0.777     | 10.6     | 9.3       |
//! | zipf 0.99 | 10 %  | s3-fifo | 0.812     | 7.3      | 5.8       |
//! | uniform   | 1 %   | lru     | 0.010     | 13.2     | 12.9      |
//! | uniform   | 1 %   | clock   | 0.010     | 13.8     | 13.0      |
//! | uniform   | 1 %   | s3-fifo | 0.010     | 10.2     | 8.9       |
//! | uniform   | 10 %  | lru     | 0.100     | 3.8      | 2.7       |
//! | uniform   | 10 %  | clock   | 0.100     | 3.2      | 3.6       |
//! | uniform   | 10 %  | s3-fifo | 0.100     | 2.8      | 2.1       |
//!
//! Hits alone (10,000 cached extents, random order), millions of gets per
//! CPU-second, 1 / 2 threads: LRU 26.4 / 24.7, CLOCK 33.4 / 29.0, S3-FIFO
//! 29.4 / 37.8.
//!
//! Default: S3-FIFO. On zipfian keys it hits 8 points more often than the
//! paper's LRU at 1 % and 4 points more at 10 % (about a fifth fewer SSD
//! reads at both sizes), and equals it on uniform keys, where no policy can
//! beat the cached fraction. Its hits only bump a counter (LRU relinks the
//! entry), so they cost no more than LRU's; its misses cost 20 to 90 ns more
//! in these runs (the ghost, the small queue's promotions), nothing next to
//! the SSD read a miss leads to. The 10 % rows are slower for every policy
//! because their 100,000 entries no longer fit in the CPU caches.

use std::collections::HashMap;
use std::fmt;
use std::hash::{BuildHasherDefault, Hasher};
use std::str::FromStr;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, SyncSender};
use std::sync::Arc;
use std::thread::JoinHandle;

use crossbeam_utils::CachePadded;
use parking_lot::Mutex;

use super::key::ExtentKey;

/// Bytes charged per entry on top of its value: the node (key, value
/// pointer, links, tags: 40), its map slot with the table's spare room (about
/// 24), the value's `Arc` header (16) and S3-FIFO's two ghost places (32),
/// rounded up.
pub const ENTRY_OVERHEAD_BYTES: u64 = 128;

/// Fills the filler thread may have waiting; one more is dropped and counted.
pub const FILL_QUEUE_FILLS: usize = 256;

/// Most shards a cache is split into.
const MAX_SHARDS: u64 = 64;
/// Least capacity a shard gets (smaller caches have fewer shards), so each
/// shard holds enough entries for its policy to work.
const MIN_SHARD_BYTES: u64 = 4 << 20;
/// Remove generations per shard (keys are spread over them by hash), so a
/// remove supersedes only the queued fills of few other keys.
const GENERATION_STRIPES: usize = 16;
/// S3-FIFO: the small queue's share of a shard's bytes, in percent.
const SMALL_QUEUE_PERCENT: u64 = 10;
/// S3-FIFO: the frequency counter saturates here (2 bits).
const MAX_FREQUENCY: u8 = 3;

/// How a shard picks the entry to evict.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Policy {
    /// Least recently used (the AEP paper's choice).
    Lru,
    /// CLOCK (second chance): FIFO with a reference bit.
    Clock,
    /// S3-FIFO: small + main FIFOs with a ghost queue.
    S3Fifo,
}

impl Policy {
    /// All policies, for measurements and tests.
    pub const ALL: [Policy; 3] = [Policy::Lru, Policy::Clock, Policy::S3Fifo];

    /// The name used on command lines and in reports.
    pub fn name(self) -> &'static str {
        match self {
            Policy::Lru => "lru",
            Policy::Clock => "clock",
            Policy::S3Fifo => "s3-fifo",
        }
    }
}

impl Default for Policy {
    /// S3-FIFO: see the figures in the module header.
    fn default() -> Self {
        Policy::S3Fifo
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| format!("unknown cache policy {s:?} (expected lru, clock or s3-fifo)"))
    }
}

/// Counters and sizes, summed over the shards (each shard read under its
/// lock, so the sum is not one instant's).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct CacheStats {
    /// The configured capacity.
    pub capacity_bytes: u64,
    /// Charged bytes held (values + per-entry overhead).
    pub bytes: u64,
    /// Entries held.
    pub entries: u64,
    /// `get` calls that found their key.
    pub hits: u64,
    /// `get` calls that did not.
    pub misses: u64,
    /// Entries added (by `insert` or by a fill).
    pub inserts: u64,
    /// Entries evicted to make room (removes are not evictions).
    pub evictions: u64,
    /// Fills that never landed: the queue was full, or the key was written
    /// or removed after the fill was queued.
    pub fills_dropped: u64,
}

/// The ACS read cache; see the module header. Shared as `Arc<AcsCache>`.
pub struct AcsCache {
    capacity_bytes: u64,
    policy: Policy,
    shared: Arc<Shared>,
    /// The only sender: dropping it ends the filler thread. `None` when the
    /// cache is disabled (or once dropped).
    fills: Option<SyncSender<Fill>>,
    filler: Option<JoinHandle<()>>,
}

impl AcsCache {
    /// A cache of `capacity_bytes` (0 disables it) with `policy`.
    pub fn new(capacity_bytes: u64, policy: Policy) -> Arc<AcsCache> {
        Self::with_shards(capacity_bytes, policy, shard_count(capacity_bytes))
    }

    fn with_shards(capacity_bytes: u64, policy: Policy, shards: u64) -> Arc<AcsCache> {
        debug_assert!(shards.is_power_of_two());
        let shard_bytes = capacity_bytes / shards;
        let shared = Arc::new(Shared::new(shard_bytes, policy, shards));
        let (fills, filler) = if capacity_bytes == 0 {
            (None, None)
        } else {
            spawn_filler(&shared)
        };
        Arc::new(AcsCache {
            capacity_bytes,
            policy,
            shared,
            fills,
            filler,
        })
    }

    /// The policy this cache was built with.
    pub fn policy(&self) -> Policy {
        self.policy
    }

    fn enabled(&self) -> bool {
        self.capacity_bytes != 0
    }

    /// The cached value of `key`, counting a hit or a miss.
    pub fn get(&self, key: ExtentKey) -> Option<Arc<[u8]>> {
        if !self.enabled() {
            return None;
        }
        self.shared.slot(key).state.lock().get(key)
    }

    /// Caches `value` as `key` now (replacing any cached value), as a write
    /// does for its new extent. Supersedes fills of `key` already queued.
    pub fn insert(&self, key: ExtentKey, value: Arc<[u8]>) {
        if !self.enabled() {
            return;
        }
        let mut shard = self.lock_superseding(key);
        shard.remove(key);
        shard.insert(key, value);
    }

    /// Queues `value` (just read from the SSD after a miss) for the filler
    /// thread; drops it, counted, when the queue is full. Never blocks.
    pub fn fill_async(&self, key: ExtentKey, value: Arc<[u8]>) {
        let Some(fills) = &self.fills else { return };
        if charge(&value) > self.shared.shard_bytes {
            return; // would never be stored
        }
        let generation = self
            .shared
            .slot(key)
            .generation(key)
            .load(Ordering::Relaxed);
        let fill = Fill {
            key,
            value,
            generation,
        };
        if fills.try_send(fill).is_err() {
            self.shared.fills_dropped.fetch_add(1, Ordering::Relaxed);
        }
    }

    /// Forgets `key` now (its extent was deleted or overwritten), including
    /// fills of it already queued.
    pub fn remove(&self, key: ExtentKey) {
        if !self.enabled() {
            return;
        }
        let mut shard = self.lock_superseding(key);
        shard.remove(key);
        shard.forget_ghost(key);
    }

    /// Locks the shard of `key` and makes every fill of it queued so far
    /// stale (the filler drops fills whose generation changed).
    fn lock_superseding(&self, key: ExtentKey) -> parking_lot::MutexGuard<'_, Shard> {
        let slot = self.shared.slot(key);
        let shard = slot.state.lock();
        slot.generation(key).fetch_add(1, Ordering::Relaxed);
        shard
    }

    /// Sizes and counters, summed over the shards.
    pub fn stats(&self) -> CacheStats {
        let mut stats = CacheStats {
            capacity_bytes: self.capacity_bytes,
            fills_dropped: self.shared.fills_dropped.load(Ordering::Relaxed),
            ..CacheStats::default()
        };
        for slot in self.shared.shards.iter() {
            slot.state.lock().add_stats(&mut stats);
        }
        stats
    }
}

impl fmt::Debug for AcsCache {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("AcsCache")
            .field("capacity_bytes", &self.capacity_bytes)
            .field("policy", &self.policy)
            .field("shards", &self.shared.shards.len())
            .finish_non_exhaustive()
    }
}

impl Drop for AcsCache {
    fn drop(&mut self) {
        // The filler stops at its next fill, or when it sees the queue
        // closed; joining keeps "no filler outlives its cache" exact.
        self.shared.closing.store(true, Ordering::Relaxed);
        drop(self.fills.take());
        if let Some(filler) = self.filler.take() {
            // A filler that panicked has nothing left to clean up.
            let _ = filler.join();
        }
    }
}

/// Shards for a cache of `capacity_bytes`: the largest power of two that
/// gives each at least [`MIN_SHARD_BYTES`], between 1 and [`MAX_SHARDS`].
fn shard_count(capacity_bytes: u64) -> u64 {
    let wanted = (capacity_bytes / MIN_SHARD_BYTES).clamp(1, MAX_SHARDS);
    1 << wanted.ilog2()
}

/// An entry's charge against the capacity.
fn charge(value: &[u8]) -> u64 {
    value.len() as u64 + ENTRY_OVERHEAD_BYTES
}

/// Murmur3's 64-bit finalizer: every input bit moves every output bit.
fn mix64(mut x: u64) -> u64 {
    x ^= x >> 33;
    x = x.wrapping_mul(0xff51_afd7_ed55_8ccd);
    x ^= x >> 33;
    x = x.wrapping_mul(0xc4ce_b9fe_1a85_ec53);
    x ^ (x >> 33)
}

/// Seeds the hash that picks a key's shard and stripe, so it is independent
/// of the shard map's hash (which must not see keys sharing high bits).
const SHARD_HASH_SEED: u64 = 0x9e37_79b9_7f4a_7c15;

/// Hashes extent keys for a shard's map (the keys themselves are file and
/// block numbers, far from uniform).
#[derive(Default)]
struct KeyHasher(u64);

impl Hasher for KeyHasher {
    fn finish(&self) -> u64 {
        self.0
    }
    fn write(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 = mix64(self.0 ^ b as u64);
        }
    }
    fn write_u64(&mut self, n: u64) {
        self.0 = mix64(n);
    }
}

type KeyMap<V> = HashMap<ExtentKey, V, BuildHasherDefault<KeyHasher>>;

/// What the cache and its filler thread share.
struct Shared {
    shards: Box<[CachePadded<ShardSlot>]>,
    /// Each shard's capacity.
    shard_bytes: u64,
    /// Set when the cache is dropped: the filler stops applying fills.
    closing: AtomicBool,
    /// Fills refused because the queue was full.
    fills_dropped: AtomicU64,
}

/// One shard: its state behind a mutex, and its remove generations, read
/// without the lock when a fill is queued and changed only under it.
struct ShardSlot {
    state: Mutex<Shard>,
    generations: [AtomicU64; GENERATION_STRIPES],
}

impl ShardSlot {
    fn generation(&self, key: ExtentKey) -> &AtomicU64 {
        let hash = mix64(key ^ SHARD_HASH_SEED);
        &self.generations[(hash >> 32) as usize % GENERATION_STRIPES]
    }
}

impl Shared {
    fn new(shard_bytes: u64, policy: Policy, shards: u64) -> Shared {
        let shards = (0..shards)
            .map(|_| {
                CachePadded::new(ShardSlot {
                    state: Mutex::new(Shard::new(shard_bytes, policy)),
                    generations: Default::default(),
                })
            })
            .collect();
        Shared {
            shards,
            shard_bytes,
            closing: AtomicBool::new(false),
            fills_dropped: AtomicU64::new(0),
        }
    }

    fn slot(&self, key: ExtentKey) -> &ShardSlot {
        let hash = mix64(key ^ SHARD_HASH_SEED);
        &self.shards[hash as usize & (self.shards.len() - 1)]
    }

    /// Lands a fill unless its key was written or removed since it was
    /// queued, or is cached already (another reader's fill: same bytes).
    fn apply_fill(&self, fill: Fill) {
        let slot = self.slot(fill.key);
        let mut shard = slot.state.lock();
        // Generations change only under this lock, so this check and the
        // insert below see the same one.
        if slot.generation(fill.key).load(Ordering::Relaxed) != fill.generation {
            shard.fills_superseded += 1;
            return;
        }
        if !shard.map.contains_key(&fill.key) {
            shard.insert(fill.key, fill.value);
        }
    }
}

/// A value on its way to the filler thread.
struct Fill {
    key: ExtentKey,
    value: Arc<[u8]>,
    /// The key's stripe generation when the fill was queued.
    generation: u64,
}

fn spawn_filler(shared: &Arc<Shared>) -> (Option<SyncSender<Fill>>, Option<JoinHandle<()>>) {
    let (sender, receiver) = mpsc::sync_channel(FILL_QUEUE_FILLS);
    let worker = Arc::clone(shared);
    let filler = std::thread::Builder::new()
        .name("acs-filler".into())
        .spawn(move || run_filler(&worker, receiver));
    // Without a thread the receiver is gone: every fill is dropped, counted.
    (Some(sender), filler.ok())
}

/// The filler thread: applies fills in queue order until the cache is
/// dropped (the queue closes, or `closing` is seen first).
fn run_filler(shared: &Shared, fills: Receiver<Fill>) {
    for fill in fills.iter() {
        if shared.closing.load(Ordering::Relaxed) {
            break;
        }
        shared.apply_fill(fill);
    }
}

/// "No node": the end of a queue.
const NIL: u32 = u32::MAX;

/// Which of a shard's queues a node is in. LRU and CLOCK use `Main` only.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum QueueId {
    Main = 0,
    Small = 1,
}

struct Node {
    key: ExtentKey,
    value: Arc<[u8]>,
    /// Towards the oldest end of its queue.
    older: u32,
    /// Towards the newest end.
    newer: u32,
    queue: QueueId,
    /// CLOCK's reference bit (0 or 1); S3-FIFO's frequency (0..=3).
    frequency: u8,
}

/// A doubly linked FIFO of nodes, oldest first.
#[derive(Clone, Copy, Debug)]
struct Queue {
    oldest: u32,
    newest: u32,
    entries: u64,
    bytes: u64,
}

impl Queue {
    const EMPTY: Queue = Queue {
        oldest: NIL,
        newest: NIL,
        entries: 0,
        bytes: 0,
    };
}

/// The shard's nodes in a slab (indices are stable while a node lives),
/// threaded on its queues.
struct Nodes {
    slots: Vec<Option<Node>>,
    free: Vec<u32>,
    queues: [Queue; 2],
}

impl Nodes {
    fn new() -> Nodes {
        Nodes {
            slots: Vec::new(),
            free: Vec::new(),
            queues: [Queue::EMPTY; 2],
        }
    }

    fn node(&self, index: u32) -> &Node {
        self.slots[index as usize].as_ref().expect("a live node")
    }

    fn node_mut(&mut self, index: u32) -> &mut Node {
        self.slots[index as usize].as_mut().expect("a live node")
    }

    fn queue(&self, queue: QueueId) -> &Queue {
        &self.queues[queue as usize]
    }

    fn oldest(&self, queue: QueueId) -> Option<u32> {
        let oldest = self.queue(queue).oldest;
        (oldest != NIL).then_some(oldest)
    }

    /// A new node at the newest end of `queue`.
    fn push(&mut self, queue: QueueId, key: ExtentKey, value: Arc<[u8]>) -> u32 {
        let node = Node {
            key,
            value,
            older: NIL,
            newer: NIL,
            queue,
            frequency: 0,
        };
        let index = match self.free.pop() {
            Some(index) => {
                debug_assert!(self.slots[index as usize].is_none());
                self.slots[index as usize] = Some(node);
                index
            }
            None => {
                self.slots.push(Some(node));
                u32::try_from(self.slots.len() - 1).expect("fewer than 2^32 entries per shard")
            }
        };
        self.link(queue, index);
        index
    }

    /// Takes node `index` out of its queue and the slab.
    fn take(&mut self, index: u32) -> Node {
        self.unlink(index);
        self.free.push(index);
        self.slots[index as usize].take().expect("a live node")
    }

    /// Moves node `index` to the newest end of `queue`.
    fn requeue(&mut self, index: u32, queue: QueueId) {
        self.unlink(index);
        self.link(queue, index);
    }

    fn link(&mut self, queue: QueueId, index: u32) {
        let newest = self.queue(queue).newest;
        let node = self.node_mut(index);
        node.queue = queue;
        node.older = newest;
        node.newer = NIL;
        let bytes = charge(&node.value);
        if newest == NIL {
            self.queues[queue as usize].oldest = index;
        } else {
            self.node_mut(newest).newer = index;
        }
        let q = &mut self.queues[queue as usize];
        q.newest = index;
        q.entries += 1;
        q.bytes += bytes;
    }

    fn unlink(&mut self, index: u32) {
        let node = self.node(index);
        let (older, newer, queue, bytes) =
            (node.older, node.newer, node.queue, charge(&node.value));
        match older {
            NIL => self.queues[queue as usize].oldest = newer,
            older => self.node_mut(older).newer = newer,
        }
        match newer {
            NIL => self.queues[queue as usize].newest = older,
            newer => self.node_mut(newer).older = older,
        }
        let q = &mut self.queues[queue as usize];
        q.entries -= 1;
        q.bytes -= bytes;
    }
}

/// S3-FIFO's ghost queue: the keys of the last `window` evictions from the
/// small queue, as a table indexed by key hash holding each key's eviction
/// stamp. A key is in the ghost while its stamp is within the window. Two
/// keys hashing to one place keep the later (the ghost is a hint; this
/// costs one memory access per push and per lookup instead of a map and a
/// queue). The table holds twice the window, growing with it.
struct Ghost {
    /// (key, stamp); stamp 0 marks an empty place.
    places: Vec<(ExtentKey, u64)>,
    /// The stamp the next push gets (stamps start at 1).
    now: u64,
}

impl Ghost {
    const MIN_PLACES: usize = 64;

    fn new() -> Ghost {
        Ghost {
            places: vec![(0, 0); Self::MIN_PLACES],
            now: 1,
        }
    }

    fn place(&self, key: ExtentKey) -> usize {
        mix64(key) as usize & (self.places.len() - 1)
    }

    /// Remembers `key` as the newest of the last `window` keys.
    fn push(&mut self, key: ExtentKey, window: usize) {
        if window * 2 > self.places.len() {
            self.grow(window * 2);
        }
        let place = self.place(key);
        self.places[place] = (key, self.now);
        self.now += 1;
    }

    /// Forgets `key` if it is among the last `window` pushed; says whether
    /// it was.
    fn take(&mut self, key: ExtentKey, window: usize) -> bool {
        let place = self.place(key);
        let (held, stamp) = self.places[place];
        let remembered = held == key && stamp != 0 && self.now - stamp <= window as u64;
        if remembered {
            self.places[place] = (0, 0);
        }
        remembered
    }

    /// A table of at least `places` places holding the same keys.
    fn grow(&mut self, places: usize) {
        let old = std::mem::replace(&mut self.places, vec![(0, 0); places.next_power_of_two()]);
        for (key, stamp) in old.into_iter().filter(|&(_, stamp)| stamp != 0) {
            let place = self.place(key);
            if self.places[place].1 < stamp {
                self.places[place] = (key, stamp);
            }
        }
    }
}

/// One shard's entries and counters (behind the shard's mutex).
struct Shard {
    policy: Policy,
    capacity_bytes: u64,
    map: KeyMap<u32>,
    nodes: Nodes,
    ghost: Ghost,
    hits: u64,
    misses: u64,
    inserts: u64,
    evictions: u64,
    /// Fills dropped because their key was written or removed since.
    fills_superseded: u64,
}

impl Shard {
    fn new(capacity_bytes: u64, policy: Policy) -> Shard {
        Shard {
            policy,
            capacity_bytes,
            map: KeyMap::default(),
            nodes: Nodes::new(),
            ghost: Ghost::new(),
            hits: 0,
            misses: 0,
            inserts: 0,
            evictions: 0,
            fills_superseded: 0,
        }
    }

    fn bytes(&self) -> u64 {
        self.nodes.queues.iter().map(|q| q.bytes).sum()
    }

    fn get(&mut self, key: ExtentKey) -> Option<Arc<[u8]>> {
        let Some(&index) = self.map.get(&key) else {
            self.misses += 1;
            return None;
        };
        self.hits += 1;
        match self.policy {
            Policy::Lru => self.nodes.requeue(index, QueueId::Main),
            Policy::Clock => self.nodes.node_mut(index).frequency = 1,
            Policy::S3Fifo => {
                let node = self.nodes.node_mut(index);
                node.frequency = (node.frequency + 1).min(MAX_FREQUENCY);
            }
        }
        Some(Arc::clone(&self.nodes.node(index).value))
    }

    /// Adds `key` (not cached) unless its value can never fit.
    fn insert(&mut self, key: ExtentKey, value: Arc<[u8]>) {
        debug_assert!(!self.map.contains_key(&key));
        let bytes = charge(&value);
        if bytes > self.capacity_bytes {
            return;
        }
        let small = self.policy == Policy::S3Fifo && !self.forget_ghost(key);
        let queue = if small { QueueId::Small } else { QueueId::Main };
        while self.bytes() + bytes > self.capacity_bytes {
            self.evict_one();
        }
        let index = self.nodes.push(queue, key, value);
        self.map.insert(key, index);
        self.inserts += 1;
        debug_assert!(self.bytes() <= self.capacity_bytes);
    }

    /// Takes `key` out of the ghost; says whether it was there.
    fn forget_ghost(&mut self, key: ExtentKey) -> bool {
        self.ghost.take(key, self.ghost_window())
    }

    /// S3-FIFO's ghost remembers as many keys as the shard holds entries.
    fn ghost_window(&self) -> usize {
        self.map.len().max(1)
    }

    fn remove(&mut self, key: ExtentKey) {
        if let Some(index) = self.map.remove(&key) {
            self.nodes.take(index);
        }
    }

    fn evict_one(&mut self) {
        debug_assert!(!self.map.is_empty(), "over capacity with nothing cached");
        let victim = match self.policy {
            Policy::Lru => self.nodes.oldest(QueueId::Main).expect("non-empty"),
            Policy::Clock => self.clock_victim(),
            Policy::S3Fifo => self.s3_fifo_victim(),
        };
        let node = self.nodes.take(victim);
        let removed = self.map.remove(&node.key);
        debug_assert_eq!(removed, Some(victim));
        self.evictions += 1;
    }

    /// The oldest entry whose reference bit is clear, clearing (and
    /// requeueing) the set ones on the way.
    fn clock_victim(&mut self) -> u32 {
        loop {
            let index = self.nodes.oldest(QueueId::Main).expect("non-empty");
            let node = self.nodes.node_mut(index);
            if node.frequency == 0 {
                return index;
            }
            node.frequency = 0;
            self.nodes.requeue(index, QueueId::Main);
        }
    }

    fn s3_fifo_victim(&mut self) -> u32 {
        let small_target = self.capacity_bytes * SMALL_QUEUE_PERCENT / 100;
        let small = self.nodes.queue(QueueId::Small);
        if small.bytes >= small_target || self.nodes.queue(QueueId::Main).entries == 0 {
            if let Some(victim) = self.evict_small() {
                return victim;
            }
        }
        self.evict_main()
    }

    /// Drains the small queue from its oldest end: entries hit since they
    /// came in move to main; the first one that was not is the victim, and
    /// its key goes into the ghost. `None` when all moved.
    fn evict_small(&mut self) -> Option<u32> {
        while let Some(index) = self.nodes.oldest(QueueId::Small) {
            let node = self.nodes.node_mut(index);
            if node.frequency == 0 {
                let (key, window) = (node.key, self.ghost_window());
                self.ghost.push(key, window);
                return Some(index);
            }
            node.frequency = 0;
            self.nodes.requeue(index, QueueId::Main);
        }
        None
    }

    /// The oldest main entry with frequency 0, giving the others another lap
    /// each with one less.
    fn evict_main(&mut self) -> u32 {
        loop {
            let index = self
                .nodes
                .oldest(QueueId::Main)
                .expect("main holds entries");
            let node = self.nodes.node_mut(index);
            if node.frequency == 0 {
                return index;
            }
            node.frequency -= 1;
            self.nodes.requeue(index, QueueId::Main);
        }
    }

    fn add_stats(&self, stats: &mut CacheStats) {
        stats.bytes += self.bytes();
        stats.entries += self.map.len() as u64;
        stats.hits += self.hits;
        stats.misses += self.misses;
        stats.inserts += self.inserts;
        stats.evictions += self.evictions;
        stats.fills_dropped += self.fills_superseded;
    }
}

#[cfg(test)]
mod tests;
