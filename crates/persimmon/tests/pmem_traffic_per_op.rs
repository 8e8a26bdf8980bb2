//! Persistent-memory traffic story: how much each operation writes, flushes
//! and fences, and that what a write stores is durable when it returns.
//!
//! 1. With `persimmon::pmem::thread_counters()` deltas on a warm pool (the
//!    background rebuild done, the lane's log segment allocated): a put of a
//!    new 8-byte key with a 64-byte value costs exactly two fences (one for
//!    the record, one for the slot) and three cache-line flushes; an
//!    overwrite and a delete are as cheap as the protocol says; a get of a
//!    present key (its slot's persist bit already set) or of an absent key
//!    writes, flushes and fences nothing.
//! 2. With a `PersistObserver` recording every store, flush and fence: when
//!    a put, delete or update returns, every cache line it stored has been
//!    flushed after its last store and a fence followed that flush; the only
//!    stores left unflushed are the two the protocol leaves so on purpose
//!    (the slot's persist bit after a put, the slot's final 0 after a
//!    delete). Checked over a workload that also allocates log segments,
//!    writes large and non-temporal records, splits the index and grows and
//!    recycles the pool.

mod common;

use std::collections::HashMap;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex};
use std::thread::ThreadId;

use persimmon::pmem::{self, PmemCounters};
use persimmon::{Db, PersistObserver, Update};

/// The tests here measure per-thread counters exactly. Epoch-deferred work
/// of one `Db` (freeing a segment: store, flush, fence) may run on any
/// thread of the process that pins an epoch, so these tests do not run
/// alongside each other.
static SERIAL: Mutex<()> = Mutex::new(());

fn serial() -> std::sync::MutexGuard<'static, ()> {
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn delta(f: impl FnOnce()) -> PmemCounters {
    let before = pmem::thread_counters();
    f();
    pmem::thread_counters().since(&before)
}

const ZERO: PmemCounters = PmemCounters {
    flushes: 0,
    fences: 0,
    bytes_written: 0,
    nt_bytes_written: 0,
};

#[test]
fn warm_put_costs_two_fences_and_gets_cost_nothing() {
    let _serial = serial();
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("traffic.pool"), common::small_options()).unwrap();
    db.wait_for_rebuild();
    let flushing = db.stats().flush_instruction != "none (eADR)";
    let value = [0x5Au8; 64];
    // Warm up: the first put on this thread's lane allocates its log segment.
    db.put(&u64::MAX.to_le_bytes(), &value).unwrap();

    for i in 0..500u64 {
        let key = i.to_le_bytes();
        let put = delta(|| db.put(&key, &value).unwrap());
        // Fence 1: the record (header + key + value, 96 bytes) is durable
        // before any slot names it. Fence 2: the slot naming it is durable;
        // the persist bit stored after that is deliberately not flushed.
        assert_eq!(put.fences, 2, "put {i}: {put:?}");
        if flushing {
            // 96-byte records in a 64-byte-aligned segment start on a line
            // boundary or 32 bytes into one: always two lines; plus the
            // slot's line.
            assert_eq!(put.flushes, 3, "put {i}: {put:?}");
        }
        // Record 96 bytes, then three 8-byte slot stores: claim (CAS to a
        // delete marker), the slot with persist=0, the persist bit.
        assert_eq!(put.bytes_written, 96 + 3 * 8, "put {i}: {put:?}");
        assert_eq!(put.nt_bytes_written, 0, "below the non-temporal threshold");

        let get = delta(|| assert_eq!(db.get(&key).unwrap().as_deref(), Some(&value[..])));
        assert_eq!(get, ZERO, "get of present key {i}");
        let get_with = delta(|| assert_eq!(db.get_with(&key, |v| v.len()).unwrap(), Some(64)));
        assert_eq!(get_with, ZERO, "get_with of present key {i}");
        let absent = (i + 1_000_000).to_le_bytes();
        let miss = delta(|| assert_eq!(db.get(&absent).unwrap(), None));
        assert_eq!(miss, ZERO, "get of absent key {i}");
        let contains = delta(|| assert!(!db.contains(&absent).unwrap()));
        assert_eq!(contains, ZERO, "contains of absent key {i}");
    }

    for i in 0..100u64 {
        let key = i.to_le_bytes();
        // Overwrite: same two fences, no claim.
        let put = delta(|| db.put(&key, &[0xA5; 64]).unwrap());
        assert_eq!(put.fences, 2, "overwrite {i}: {put:?}");
        if flushing {
            assert_eq!(put.flushes, 3, "overwrite {i}: {put:?}");
        }
        assert_eq!(put.bytes_written, 96 + 2 * 8, "overwrite {i}: {put:?}");

        // Delete: marker, flush, fence (durable), then 0 left unflushed.
        let del = delta(|| assert!(db.delete(&key).unwrap()));
        assert_eq!(del.fences, 1, "delete {i}: {del:?}");
        if flushing {
            assert_eq!(del.flushes, 1, "delete {i}: {del:?}");
        }
        assert_eq!(del.bytes_written, 2 * 8, "delete {i}: {del:?}");

        let gone = delta(|| assert_eq!(db.get(&key).unwrap(), None));
        assert_eq!(gone, ZERO, "get of deleted key {i}");
        let del_absent = delta(|| assert!(!db.delete(&key).unwrap()));
        assert_eq!(del_absent, ZERO, "delete of absent key {i}");
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}

// ------------------------------------------------------- persistence property

#[derive(Clone, Debug)]
enum Event {
    Store { offset: u64, data: Vec<u8> },
    NtStore { offset: u64, data: Vec<u8> },
    Flush { line: u64 },
    Fence,
}

/// Records the events of one thread while enabled.
struct Recorder {
    thread: Mutex<Option<ThreadId>>,
    enabled: AtomicBool,
    events: Mutex<Vec<Event>>,
}

impl Recorder {
    fn new() -> Self {
        Recorder {
            thread: Mutex::new(None),
            enabled: AtomicBool::new(false),
            events: Mutex::new(Vec::new()),
        }
    }

    fn record(&self, e: Event) {
        if !self.enabled.load(Ordering::Acquire) {
            return;
        }
        if *self.thread.lock().unwrap() != Some(std::thread::current().id()) {
            return; // the background rebuild, or another thread
        }
        self.events.lock().unwrap().push(e);
    }

    /// Runs `f` on this thread and returns the events it caused here.
    fn capture(&self, f: impl FnOnce()) -> Vec<Event> {
        *self.thread.lock().unwrap() = Some(std::thread::current().id());
        self.events.lock().unwrap().clear();
        self.enabled.store(true, Ordering::Release);
        f();
        self.enabled.store(false, Ordering::Release);
        std::mem::take(&mut *self.events.lock().unwrap())
    }
}

impl PersistObserver for Recorder {
    fn store(&self, offset: u64, data: &[u8]) {
        self.record(Event::Store {
            offset,
            data: data.to_vec(),
        });
    }
    fn nt_store(&self, offset: u64, data: &[u8]) {
        self.record(Event::NtStore {
            offset,
            data: data.to_vec(),
        });
    }
    fn flush(&self, offset: u64) {
        self.record(Event::Flush {
            line: offset & !(LINE - 1),
        });
    }
    fn fence(&self) {
        self.record(Event::Fence);
    }
}

const LINE: u64 = 64; // cache line bytes

fn lines(offset: u64, len: usize) -> impl Iterator<Item = u64> {
    let first = offset & !(LINE - 1);
    let end = offset + len.max(1) as u64;
    (first..end).step_by(LINE as usize)
}

fn word(data: &[u8]) -> Option<u64> {
    (data.len() == 8).then(|| u64::from_le_bytes(data.try_into().unwrap()))
}

/// A slot word that is a delete marker (record offset field == 8).
fn is_marker(w: u64) -> bool {
    ((w >> 1) & ((1u64 << 47) - 1)) << 3 == 8
}

/// Which stores the protocol leaves unflushed on purpose, by kind.
#[derive(Debug, Default, PartialEq, Eq)]
struct Excluded {
    persist_bits: usize,
    delete_zeros: usize,
}

/// Checks that every cache line stored in `events` was flushed after its last
/// store and that a fence followed the flush, leaving out (and counting)
/// the deliberate unflushed stores. Returns a description of the first
/// violation.
fn check_persisted(events: &[Event]) -> Result<Excluded, String> {
    // Index of the previous 8-byte store per address, to recognise the
    // deliberate stores.
    let mut last_word_store: HashMap<u64, usize> = HashMap::new();
    let mut excluded = vec![false; events.len()];
    let mut kinds = Excluded::default();
    for (i, e) in events.iter().enumerate() {
        let Event::Store { offset, data } = e else {
            continue;
        };
        if let (Some(v), Some(&p)) = (word(data), last_word_store.get(offset)) {
            let Event::Store { data: pdata, .. } = &events[p] else {
                unreachable!()
            };
            let prev = word(pdata).unwrap();
            if prev & 1 == 0 && v == prev | 1 {
                // The persist bit after the slot's persist point.
                excluded[i] = true;
                kinds.persist_bits += 1;
            } else if v == 0 && is_marker(prev) {
                // The final 0 of a delete: only if the marker before it was
                // flushed and then fenced.
                let line = offset & !(LINE - 1);
                let between = &events[p + 1..i];
                if let Some(f) = between
                    .iter()
                    .position(|e| matches!(e, Event::Flush { line: l } if *l == line))
                {
                    if between[f + 1..].iter().any(|e| matches!(e, Event::Fence)) {
                        excluded[i] = true;
                        kinds.delete_zeros += 1;
                    }
                }
            }
        }
        if data.len() == 8 {
            last_word_store.insert(*offset, i);
        }
    }
    // Last (non-excluded) store per line, and whether it was non-temporal.
    let mut last_store: HashMap<u64, (usize, bool)> = HashMap::new();
    for (i, e) in events.iter().enumerate() {
        match e {
            Event::Store { offset, data } if !excluded[i] => {
                for l in lines(*offset, data.len()) {
                    last_store.insert(l, (i, false));
                }
            }
            Event::NtStore { offset, data } => {
                for l in lines(*offset, data.len()) {
                    last_store.insert(l, (i, true));
                }
            }
            _ => {}
        }
    }
    let mut lines_sorted: Vec<_> = last_store.into_iter().collect();
    lines_sorted.sort();
    for (line, (at, nt)) in lines_sorted {
        // A non-temporal store (and the flushed head/tail lines of the same
        // copy) needs only a fence after it.
        let flushed_at = if nt {
            Some(at)
        } else {
            events[at + 1..]
                .iter()
                .position(|e| matches!(e, Event::Flush { line: l } if *l == line))
                .map(|p| at + 1 + p)
        };
        let Some(f) = flushed_at else {
            return Err(format!(
                "line {line:#x}: last store (event {at}: {:?}) is never flushed",
                events[at]
            ));
        };
        if !events[f + 1..].iter().any(|e| matches!(e, Event::Fence)) {
            return Err(format!(
                "line {line:#x}: flushed at event {f} but no fence follows"
            ));
        }
    }
    Ok(kinds)
}

#[test]
fn every_store_of_a_write_is_flushed_and_fenced_when_it_returns() {
    let _serial = serial();
    let dir = common::pool_dir();
    let path = dir.path().join("observed.pool");
    let recorder = Arc::new(Recorder::new());
    let db = Db::open_observed(
        &path,
        common::small_options(),
        Some(recorder.clone() as Arc<dyn PersistObserver>),
    )
    .unwrap();
    db.wait_for_rebuild();

    let mut rng_state = 0x2545_F491_4F6C_DD1Du64;
    let mut next = move || {
        rng_state ^= rng_state << 13;
        rng_state ^= rng_state >> 7;
        rng_state ^= rng_state << 17;
        rng_state
    };
    let keys = 40_000u64;
    let mut present = vec![false; keys as usize];
    let mut ops = (0usize, 0usize, 0usize); // puts, deletes, updates
    let fail = |what: String, events: &[Event], err: String| -> ! {
        let tail: Vec<_> = events.iter().rev().take(12).rev().collect();
        panic!("{what}: {err}\nlast events: {tail:#?}")
    };
    for n in 0..60_000u64 {
        // The first pass inserts every key (so the index splits); after it,
        // a random mix of overwrites, deletes and updates.
        let k = if n < keys { n } else { next() % keys };
        let key = format!("key-{k:08}").into_bytes();
        let roll = next() % 100;
        let len = match roll {
            0 => 150_000,                         // large record: a run of its own
            1..=20 => 256 + (roll * 37) as usize, // non-temporal copy
            _ => (roll * 3) as usize,
        };
        let value = vec![(n % 251) as u8; len];
        if n < keys || roll < 60 {
            let events = recorder.capture(|| db.put(&key, &value).unwrap());
            match check_persisted(&events) {
                Ok(ex) => assert_eq!(
                    ex,
                    Excluded {
                        persist_bits: 1,
                        delete_zeros: 0
                    },
                    "put {n}: exactly one persist-bit store is left unflushed"
                ),
                Err(e) => fail(format!("put {n} of key {k}"), &events, e),
            }
            present[k as usize] = true;
            ops.0 += 1;
        } else if roll < 80 {
            let events = recorder.capture(|| {
                assert_eq!(db.delete(&key).unwrap(), present[k as usize]);
            });
            let want = Excluded {
                persist_bits: 0,
                delete_zeros: present[k as usize] as usize,
            };
            match check_persisted(&events) {
                Ok(ex) => assert_eq!(ex, want, "delete {n}"),
                Err(e) => fail(format!("delete {n} of key {k}"), &events, e),
            }
            present[k as usize] = false;
            ops.1 += 1;
        } else if present[k as usize] {
            // Updates of present keys: an append (a put) or a delete.
            let delete = roll >= 95;
            let events = recorder.capture(|| {
                db.update(&key, |cur| {
                    assert!(cur.is_some());
                    let d = if delete {
                        Update::Delete
                    } else {
                        let mut v = cur.unwrap().to_vec();
                        v.push(1);
                        Update::Put(v)
                    };
                    (d, ())
                })
                .unwrap()
            });
            let want = Excluded {
                persist_bits: !delete as usize,
                delete_zeros: delete as usize,
            };
            match check_persisted(&events) {
                Ok(ex) => assert_eq!(ex, want, "update {n}"),
                Err(e) => fail(format!("update {n} of key {k}"), &events, e),
            }
            present[k as usize] = !delete;
            ops.2 += 1;
        }
    }
    let stats = db.stats();
    eprintln!(
        "observed {ops:?} (puts, deletes, updates); {} splits, pool {} bytes, {} large",
        stats.index_splits, stats.pool_bytes, stats.segments_large
    );
    assert!(stats.index_splits > 0, "the workload must split the index");
    assert!(
        stats.pool_bytes > common::small_options().pool_bytes_initial,
        "the workload must grow the pool"
    );
    let expected = present.iter().filter(|p| **p).count() as u64;
    assert_eq!(db.len(), expected);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, expected);
}

/// The property checker itself: it must flag what it is meant to flag.
#[test]
fn persistence_checker_flags_unflushed_or_unfenced_stores() {
    let store = |offset: u64, v: u64| Event::Store {
        offset,
        data: v.to_le_bytes().to_vec(),
    };
    let flush = |offset: u64| Event::Flush {
        line: offset & !(LINE - 1),
    };
    let slot = 0x1_0000_0000_0040u64 << 1; // persist bit clear
    let marker = (0xBEEFu64 << 48) | ((8 >> 3) << 1);
    // Store, flush, fence: fine.
    assert!(check_persisted(&[store(4160, slot), flush(4160), Event::Fence]).is_ok());
    // Never flushed, or flushed but not fenced.
    assert!(check_persisted(&[store(4160, slot), Event::Fence]).is_err());
    assert!(check_persisted(&[store(4160, slot), flush(4160)]).is_err());
    // A store after the flush makes the line dirty again.
    assert!(check_persisted(&[flush(4160), store(4160, slot), Event::Fence]).is_err());
    // Flushing another line does not count.
    assert!(check_persisted(&[store(4160, slot), flush(4224), Event::Fence]).is_err());
    // A multi-line store needs every line flushed.
    let wide = Event::Store {
        offset: 4200,
        data: vec![1; 100],
    };
    assert!(check_persisted(&[wide.clone(), flush(4200), Event::Fence]).is_err());
    // 4200..4300 touches the lines at 4160, 4224 and 4288.
    assert!(check_persisted(&[wide.clone(), flush(4200), flush(4290), Event::Fence]).is_err());
    assert!(check_persisted(&[wide, flush(4200), flush(4250), flush(4290), Event::Fence]).is_ok());
    // Non-temporal stores need only a fence.
    let nt = Event::NtStore {
        offset: 8192,
        data: vec![0; 512],
    };
    assert!(check_persisted(&[nt.clone(), Event::Fence]).is_ok());
    assert!(check_persisted(&[nt]).is_err());
    // The persist bit after a persisted slot is excluded, and counted.
    assert_eq!(
        check_persisted(&[
            store(4160, slot),
            flush(4160),
            Event::Fence,
            store(4160, slot | 1)
        ]),
        Ok(Excluded {
            persist_bits: 1,
            delete_zeros: 0
        })
    );
    // Any other unflushed store after the persist point is not.
    assert!(check_persisted(&[
        store(4160, slot),
        flush(4160),
        Event::Fence,
        store(4160, slot | 3)
    ])
    .is_err());
    // The final 0 of a delete is excluded only after a flushed, fenced marker.
    assert_eq!(
        check_persisted(&[
            store(4160, marker),
            flush(4160),
            Event::Fence,
            store(4160, 0)
        ]),
        Ok(Excluded {
            persist_bits: 0,
            delete_zeros: 1
        })
    );
    assert!(check_persisted(&[store(4160, marker), flush(4160), store(4160, 0)]).is_err());
    assert!(check_persisted(&[store(4160, marker), Event::Fence, store(4160, 0)]).is_err());
}
