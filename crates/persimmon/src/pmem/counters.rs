//! Per-thread counters of persistence work: cache lines flushed, fences,
//! bytes stored to PM (and how many of them non-temporally).
//!
//! Each thread owns one block and is its only writer (plain load + store, no
//! read-modify-write); readers sum all live blocks plus the totals left by
//! threads that exited. These are product metrics (PM write traffic per
//! operation) as well as test hooks.

use std::cell::Cell;
use std::sync::atomic::{AtomicU64, Ordering::Relaxed};
use std::sync::{Arc, Mutex};

/// A snapshot of persistence counters.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct PmemCounters {
    /// Cache lines flushed (`clwb`/`clflushopt`/`clflush`; 0 under eADR).
    pub flushes: u64,
    /// Store fences issued.
    pub fences: u64,
    /// Bytes stored into the pool (regular and non-temporal).
    pub bytes_written: u64,
    /// Of `bytes_written`, the bytes written with non-temporal stores.
    pub nt_bytes_written: u64,
}

impl PmemCounters {
    /// `self - earlier`, field by field.
    pub fn since(&self, earlier: &PmemCounters) -> PmemCounters {
        PmemCounters {
            flushes: self.flushes - earlier.flushes,
            fences: self.fences - earlier.fences,
            bytes_written: self.bytes_written - earlier.bytes_written,
            nt_bytes_written: self.nt_bytes_written - earlier.nt_bytes_written,
        }
    }
}

#[derive(Default)]
struct Block {
    flushes: AtomicU64,
    fences: AtomicU64,
    bytes_written: AtomicU64,
    nt_bytes_written: AtomicU64,
}

impl Block {
    fn snapshot(&self) -> PmemCounters {
        PmemCounters {
            flushes: self.flushes.load(Relaxed),
            fences: self.fences.load(Relaxed),
            bytes_written: self.bytes_written.load(Relaxed),
            nt_bytes_written: self.nt_bytes_written.load(Relaxed),
        }
    }
}

struct Registry {
    live: Vec<Arc<Block>>,
    retired: PmemCounters,
}

static REGISTRY: Mutex<Registry> = Mutex::new(Registry {
    live: Vec::new(),
    retired: PmemCounters {
        flushes: 0,
        fences: 0,
        bytes_written: 0,
        nt_bytes_written: 0,
    },
});

struct Owner(Arc<Block>);

impl Drop for Owner {
    fn drop(&mut self) {
        let mut reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
        let s = self.0.snapshot();
        reg.retired.flushes += s.flushes;
        reg.retired.fences += s.fences;
        reg.retired.bytes_written += s.bytes_written;
        reg.retired.nt_bytes_written += s.nt_bytes_written;
        reg.live.retain(|b| !Arc::ptr_eq(b, &self.0));
    }
}

thread_local! {
    static OWNER: Owner = {
        let block = Arc::new(Block::default());
        REGISTRY.lock().unwrap_or_else(|e| e.into_inner()).live.push(block.clone());
        Owner(block)
    };
    // Mirror of this thread's block without the Arc indirection on the hot path.
    static LOCAL: Cell<PmemCounters> = const { Cell::new(PmemCounters { flushes: 0, fences: 0, bytes_written: 0, nt_bytes_written: 0 }) };
}

#[inline]
fn bump(f: impl FnOnce(&mut PmemCounters)) {
    LOCAL.with(|local| {
        let mut c = local.get();
        f(&mut c);
        local.set(c);
        // Publish to the shared block so other threads can sum it.
        let _ = OWNER.try_with(|o| {
            o.0.flushes.store(c.flushes, Relaxed);
            o.0.fences.store(c.fences, Relaxed);
            o.0.bytes_written.store(c.bytes_written, Relaxed);
            o.0.nt_bytes_written.store(c.nt_bytes_written, Relaxed);
        });
    });
}

#[inline]
pub(crate) fn add_flushes(n: u64) {
    bump(|c| c.flushes += n);
}

#[inline]
pub(crate) fn add_fence() {
    bump(|c| c.fences += 1);
}

#[inline]
pub(crate) fn add_bytes(n: u64, nt: bool) {
    bump(|c| {
        c.bytes_written += n;
        if nt {
            c.nt_bytes_written += n;
        }
    });
}

/// This thread's counters since it started.
pub fn thread_counters() -> PmemCounters {
    LOCAL.with(|l| l.get())
}

/// The sum over every thread of the process, live or exited.
pub fn process_counters() -> PmemCounters {
    let reg = REGISTRY.lock().unwrap_or_else(|e| e.into_inner());
    let mut total = reg.retired;
    for b in &reg.live {
        let s = b.snapshot();
        total.flushes += s.flushes;
        total.fences += s.fences;
        total.bytes_written += s.bytes_written;
        total.nt_bytes_written += s.nt_bytes_written;
    }
    total
}
