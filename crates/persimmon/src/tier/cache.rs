//! The ACS read cache (interim: a bounded FIFO behind one mutex, with the
//! API the cache room provides; replaced by the sharded, measured cache).

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;

use super::ExtentKey;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Policy {
    Fifo,
}

impl Policy {
    pub fn name(self) -> &'static str {
        "fifo"
    }
}

#[derive(Clone, Debug, Default)]
pub struct CacheStats {
    pub capacity_bytes: u64,
    pub bytes: u64,
    pub entries: u64,
    pub hits: u64,
    pub misses: u64,
    pub inserts: u64,
    pub evictions: u64,
    pub fills_dropped: u64,
}

#[derive(Default)]
struct Inner {
    map: HashMap<ExtentKey, Arc<[u8]>>,
    order: VecDeque<ExtentKey>,
    bytes: u64,
}

pub struct AcsCache {
    capacity: u64,
    inner: Mutex<Inner>,
    hits: AtomicU64,
    misses: AtomicU64,
    inserts: AtomicU64,
    evictions: AtomicU64,
}

impl AcsCache {
    pub fn new(capacity_bytes: u64, _policy: Policy) -> Arc<AcsCache> {
        Arc::new(AcsCache {
            capacity: capacity_bytes,
            inner: Mutex::default(),
            hits: AtomicU64::new(0),
            misses: AtomicU64::new(0),
            inserts: AtomicU64::new(0),
            evictions: AtomicU64::new(0),
        })
    }

    pub fn get(&self, key: ExtentKey) -> Option<Arc<[u8]>> {
        if self.capacity == 0 {
            return None;
        }
        let v = self.inner.lock().map.get(&key).cloned();
        let c = if v.is_some() {
            &self.hits
        } else {
            &self.misses
        };
        c.fetch_add(1, Ordering::Relaxed);
        v
    }

    pub fn insert(&self, key: ExtentKey, value: Arc<[u8]>) {
        if value.len() as u64 > self.capacity {
            return;
        }
        let mut g = self.inner.lock();
        g.bytes += value.len() as u64;
        if let Some(old) = g.map.insert(key, value) {
            g.bytes -= old.len() as u64;
        } else {
            g.order.push_back(key);
        }
        self.inserts.fetch_add(1, Ordering::Relaxed);
        while g.bytes > self.capacity {
            let Some(k) = g.order.pop_front() else { break };
            if let Some(v) = g.map.remove(&k) {
                g.bytes -= v.len() as u64;
                self.evictions.fetch_add(1, Ordering::Relaxed);
            }
        }
    }

    pub fn fill_async(&self, key: ExtentKey, value: Arc<[u8]>) {
        self.insert(key, value);
    }

    pub fn remove(&self, key: ExtentKey) {
        let mut g = self.inner.lock();
        if let Some(v) = g.map.remove(&key) {
            g.bytes -= v.len() as u64;
        }
    }

    pub fn policy(&self) -> Policy {
        Policy::Fifo
    }

    pub fn stats(&self) -> CacheStats {
        let g = self.inner.lock();
        CacheStats {
            capacity_bytes: self.capacity,
            bytes: g.bytes,
            entries: g.map.len() as u64,
            hits: self.hits.load(Ordering::Relaxed),
            misses: self.misses.load(Ordering::Relaxed),
            inserts: self.inserts.load(Ordering::Relaxed),
            evictions: self.evictions.load(Ordering::Relaxed),
            fills_dropped: 0,
        }
    }
}
