//! Tests of the ACS read cache: hits, removal, capacity, async fills and
//! their races with removes, scan resistance per policy, the filler
//! thread's life, exact byte accounting under concurrent use.

use std::collections::HashSet;
use std::time::{Duration, Instant};

use super::*;

/// A value of `len` bytes.
fn value(len: usize) -> Arc<[u8]> {
    vec![7u8; len].into()
}

/// A one-shard cache holding exactly `entries` values of `len` bytes.
fn one_shard(entries: u64, len: usize, policy: Policy) -> Arc<AcsCache> {
    AcsCache::with_shards(entries * charge(&value(len)), policy, 1)
}

/// Waits (at most 10 s) until `done` holds.
fn wait_until(mut done: impl FnMut() -> bool) {
    let deadline = Instant::now() + Duration::from_secs(10);
    while !done() {
        assert!(Instant::now() < deadline, "timed out");
        std::thread::sleep(Duration::from_millis(1));
    }
}

/// A key that lands in shard `shard`.
fn key_in_shard(cache: &AcsCache, shard: usize, from: ExtentKey) -> ExtentKey {
    (from..)
        .find(|&k| std::ptr::eq(cache.shared.slot(k), &*cache.shared.shards[shard]))
        .expect("some key")
}

/// Checks every shard's invariants; returns the sum of live entries'
/// charges, computed from the entries themselves.
fn check(cache: &AcsCache) -> u64 {
    let mut total = 0;
    for slot in cache.shared.shards.iter() {
        total += slot.state.lock().check();
    }
    assert!(total <= cache.capacity_bytes);
    total
}

impl Shard {
    /// Walks both queues; asserts links, counts, bytes and the map agree.
    fn check(&self) -> u64 {
        let mut seen = 0;
        let mut total = 0;
        for queue in [QueueId::Main, QueueId::Small] {
            let q = self.nodes.queue(queue);
            let (mut index, mut older, mut entries, mut bytes) = (q.oldest, NIL, 0, 0);
            while index != NIL {
                let node = self.nodes.node(index);
                assert_eq!(node.queue, queue);
                assert_eq!(node.older, older);
                assert_eq!(self.map.get(&node.key), Some(&index));
                if self.policy != Policy::S3Fifo {
                    assert_eq!(queue, QueueId::Main);
                }
                entries += 1;
                bytes += charge(&node.value);
                (older, index) = (index, node.newer);
            }
            assert_eq!(q.newest, older);
            assert_eq!((q.entries, q.bytes), (entries, bytes));
            seen += entries;
            total += bytes;
        }
        assert_eq!(seen, self.map.len() as u64);
        let live = self.nodes.slots.iter().filter(|s| s.is_some()).count();
        assert_eq!(live, self.map.len());
        assert!(total <= self.capacity_bytes);
        total
    }
}

#[test]
fn policy_names_round_trip() {
    for policy in Policy::ALL {
        assert_eq!(policy.name().parse::<Policy>(), Ok(policy));
    }
    assert!("arc".parse::<Policy>().is_err());
}

#[test]
fn shards_get_at_least_four_mib_and_at_most_sixty_four() {
    assert_eq!(shard_count(1), 1);
    assert_eq!(shard_count(8 << 20), 2);
    assert_eq!(shard_count(100 << 20), 16);
    assert_eq!(shard_count(4 << 30), 64);
}

#[test]
fn hit_after_insert_and_miss_after_remove() {
    for policy in Policy::ALL {
        let cache = AcsCache::new(64 << 20, policy);
        assert!(cache.get(1).is_none());
        cache.insert(1, value(100));
        assert_eq!(cache.get(1).as_deref(), Some(&[7u8; 100][..]));
        cache.remove(1);
        assert!(cache.get(1).is_none());
        let stats = cache.stats();
        assert_eq!((stats.hits, stats.misses, stats.inserts), (1, 2, 1));
        assert_eq!((stats.entries, stats.bytes), (0, 0));
    }
}

#[test]
fn insert_replaces_the_cached_value() {
    let cache = one_shard(4, 100, Policy::S3Fifo);
    cache.insert(1, value(100));
    cache.insert(1, vec![9u8; 50].into());
    assert_eq!(cache.get(1).as_deref(), Some(&[9u8; 50][..]));
    assert_eq!(cache.stats().bytes, 50 + ENTRY_OVERHEAD_BYTES);
    check(&cache);
}

#[test]
fn a_value_larger_than_a_shard_is_never_cached() {
    let cache = AcsCache::with_shards(4 * 1024, Policy::Lru, 2);
    cache.insert(1, value(1000));
    cache.insert(1, value(2048)); // charge 2048 + overhead > 2048 per shard
    assert!(
        cache.get(1).is_none(),
        "the old value went, the new one never came"
    );
    cache.fill_async(2, value(2048));
    assert_eq!(cache.stats().entries, 0);
}

#[test]
fn capacity_holds_under_random_inserts() {
    for policy in Policy::ALL {
        let cache = AcsCache::with_shards(256 * 1024, policy, 4);
        let mut x = 1u64;
        for round in 0..20_000u64 {
            x = mix64(x + round);
            let key = x % 2_000;
            match x >> 60 {
                0 => cache.remove(key),
                1..=7 => drop(cache.get(key)),
                _ => cache.insert(key, value((x >> 20) as usize % 9_000)),
            }
            if round % 1_000 == 0 {
                check(&cache);
            }
        }
        let stats = cache.stats();
        assert_eq!(check(&cache), stats.bytes);
        assert!(stats.bytes <= stats.capacity_bytes);
        assert!(
            stats.evictions > 0,
            "{policy}: the test must fill the cache"
        );
    }
}

#[test]
fn async_fill_lands() {
    let cache = AcsCache::new(64 << 20, Policy::default());
    cache.fill_async(5, value(4096));
    wait_until(|| cache.stats().inserts == 1);
    assert_eq!(cache.get(5).as_deref(), Some(&[7u8; 4096][..]));
}

#[test]
fn fills_beyond_the_queue_are_dropped_and_counted() {
    let cache = one_shard(1_000, 10, Policy::Lru);
    let fills = FILL_QUEUE_FILLS as u64 + 50;
    {
        // The filler stalls on the shard lock with (at most) one fill.
        let _stall = cache.shared.shards[0].state.lock();
        for key in 0..fills {
            cache.fill_async(key, value(10));
        }
        let dropped = cache.stats_unlocked_fills_dropped();
        assert!((49..=50).contains(&dropped), "dropped {dropped}");
    }
    wait_until(|| {
        let stats = cache.stats();
        stats.inserts + stats.fills_dropped == fills
    });
    check(&cache);
}

impl AcsCache {
    /// `fills_dropped` without taking the shard locks.
    fn stats_unlocked_fills_dropped(&self) -> u64 {
        self.shared.fills_dropped.load(Ordering::Relaxed)
    }
}

#[test]
fn disabled_cache_stores_and_counts_nothing() {
    let cache = AcsCache::new(0, Policy::Lru);
    assert!(cache.filler.is_none());
    cache.insert(1, value(10));
    cache.fill_async(2, value(10));
    assert!(cache.get(1).is_none());
    assert!(cache.get(2).is_none());
    cache.remove(1);
    assert_eq!(cache.stats(), CacheStats::default());
}

/// Accesses `hot` twice, then `gap` cold keys once each, `rounds` times,
/// in a one-shard cache of 100 entries; says whether the last round's
/// first access of `hot` hit.
fn hot_key_survives(policy: Policy, gap: u64, rounds: u64) -> bool {
    let cache = one_shard(100, 64, policy);
    let hot = u64::MAX;
    let mut cold = 0;
    let mut hit = false;
    for _ in 0..rounds {
        hit = cache.get(hot).is_some();
        if !hit {
            cache.insert(hot, value(64));
        }
        assert!(cache.get(hot).is_some());
        for _ in 0..gap {
            assert!(cache.get(cold).is_none());
            cache.insert(cold, value(64));
            cold += 1;
        }
    }
    check(&cache);
    hit
}

#[test]
fn every_policy_keeps_a_key_reused_within_its_capacity() {
    for policy in Policy::ALL {
        assert!(hot_key_survives(policy, 50, 20), "{policy}");
    }
}

#[test]
fn s3_fifo_keeps_a_hot_key_through_scans_that_flush_lru_and_clock() {
    // Each scan is three times the cache: LRU and CLOCK lose the hot key
    // every round; S3-FIFO's scans pass through its small queue.
    assert!(!hot_key_survives(Policy::Lru, 300, 20));
    assert!(!hot_key_survives(Policy::Clock, 300, 20));
    assert!(hot_key_survives(Policy::S3Fifo, 300, 20));
}

#[test]
fn the_ghost_remembers_the_last_window_of_keys() {
    let mut ghost = Ghost::new();
    for key in 0..1_000 {
        ghost.push(key, 100);
    }
    assert!(ghost.places.len() >= 200);
    assert!(!ghost.take(800, 100), "pushed 200 pushes ago");
    let recent = (900..1_000).filter(|&k| ghost.take(k, 100)).count();
    assert!(recent >= 70, "a collision loses a key, rarely: {recent}");
    assert!(!ghost.take(999, 100), "taken already");
    for key in 5_000..5_100 {
        ghost.push(key, 1_000); // grows the table, keeping its keys
    }
    assert!(ghost.take(5_050, 1_000));
}

#[test]
fn s3_fifo_admits_a_ghost_straight_into_main() {
    let cache = one_shard(100, 64, Policy::S3Fifo);
    for key in 0..200 {
        cache.insert(key, value(64));
    }
    // Key 0 was evicted from the small queue into the ghost.
    assert!(cache.get(0).is_none());
    cache.insert(0, value(64));
    let shard = cache.shared.shards[0].state.lock();
    let index = shard.map[&0];
    assert_eq!(shard.nodes.node(index).queue, QueueId::Main);
}

#[test]
fn the_filler_exits_when_the_cache_is_dropped() {
    let cache = AcsCache::new(64 << 20, Policy::Lru);
    let shared = Arc::downgrade(&cache.shared);
    let filler = cache.filler.as_ref().expect("a filler").thread().id();
    assert_ne!(filler, std::thread::current().id());
    for key in 0..FILL_QUEUE_FILLS as u64 * 4 {
        cache.fill_async(key, value(100));
    }
    drop(cache);
    // Drop joined the thread, and the thread let go of the shards.
    assert!(shared.upgrade().is_none());
}

#[test]
fn a_fill_queued_before_a_remove_never_lands_after_it() {
    let cache = AcsCache::with_shards(64 << 20, Policy::Lru, 2);
    let blocker = key_in_shard(&cache, 0, 0);
    let victim = key_in_shard(&cache, 1, 0);
    let sentinel = key_in_shard(&cache, 1, victim + 1);
    {
        // The filler takes `blocker` and waits on shard 0; `victim`'s
        // fill waits in the queue while it is removed.
        let _stall = cache.shared.shards[0].state.lock();
        cache.fill_async(blocker, value(10));
        cache.fill_async(victim, value(10));
        cache.remove(victim);
        cache.fill_async(sentinel, value(10));
    }
    // Fills are applied in order: once the sentinel is in, the victim's
    // fill has been seen (and dropped).
    wait_until(|| cache.stats().inserts == 2);
    assert!(cache.get(sentinel).is_some());
    assert!(cache.get(victim).is_none());
    assert_eq!(cache.stats().fills_dropped, 1);
}

#[test]
fn fills_and_removes_racing_leave_no_removed_key() {
    let cache = AcsCache::new(64 << 20, Policy::S3Fifo);
    let mut removed = 0;
    for key in 0..20_000 {
        cache.fill_async(key, value(10));
        if key % 2 == 0 {
            cache.remove(key);
            removed += 1;
        }
    }
    let sentinel = u64::MAX;
    wait_until(|| {
        cache.fill_async(sentinel, value(10));
        cache.get(sentinel).is_some()
    });
    for key in (0..20_000).step_by(2) {
        assert!(cache.get(key).is_none(), "removed key {key} came back");
    }
    assert!(cache.stats().entries <= 20_000 - removed + 1);
    check(&cache);
}

#[test]
fn an_insert_supersedes_a_queued_fill() {
    let cache = AcsCache::with_shards(64 << 20, Policy::Clock, 2);
    let blocker = key_in_shard(&cache, 0, 0);
    let key = key_in_shard(&cache, 1, 0);
    {
        let _stall = cache.shared.shards[0].state.lock();
        cache.fill_async(blocker, value(10));
        cache.fill_async(key, value(10));
        cache.insert(key, vec![1u8; 3].into());
    }
    wait_until(|| {
        let stats = cache.stats();
        stats.inserts + stats.fills_dropped == 3
    });
    assert_eq!(cache.get(key).as_deref(), Some(&[1u8; 3][..]));
    assert_eq!(cache.stats().fills_dropped, 1);
}

#[test]
fn four_threads_keep_byte_accounting_exact() {
    for policy in Policy::ALL {
        let cache = AcsCache::with_shards(2 << 20, policy, 8);
        let mut gets = std::thread::scope(|scope| {
            let threads: Vec<_> = (0..4u64)
                .map(|thread| {
                    let cache = &cache;
                    scope.spawn(move || {
                        let mut gets = 0;
                        let mut x = thread + 1;
                        for round in 0..50_000u64 {
                            x = mix64(x ^ round);
                            let key = x % 5_000;
                            let len = (x >> 32) as usize % 20_000;
                            match x >> 61 {
                                0 => cache.remove(key),
                                1 => cache.insert(key, value(len)),
                                2 => cache.fill_async(key, value(len)),
                                _ => {
                                    gets += 1;
                                    drop(cache.get(key));
                                }
                            }
                        }
                        gets
                    })
                })
                .collect();
            threads
                .into_iter()
                .map(|t| t.join().expect("no panic"))
                .sum::<u64>()
        });
        // Quiet the filler: once a fresh sentinel landed, the queue has
        // been worked through.
        let sentinel = u64::MAX;
        wait_until(|| {
            cache.fill_async(sentinel, value(10));
            gets += 1;
            cache.get(sentinel).is_some()
        });
        let live = check(&cache);
        let stats = cache.stats();
        assert_eq!(stats.bytes, live, "{policy}");
        assert_eq!(stats.hits + stats.misses, gets, "{policy}");
        assert!(
            stats.evictions > 0,
            "{policy}: the test must fill the cache"
        );
        let keys: HashSet<_> = cache
            .shared
            .shards
            .iter()
            .flat_map(|s| s.state.lock().map.keys().copied().collect::<Vec<_>>())
            .collect();
        assert_eq!(keys.len() as u64, stats.entries);
    }
}
