//! Reads during the DRAM point index's rebuild never go back in time
//! (found by review; design.md §10a): a writer stores a key's node record
//! word before its DRAM slot, so a reader that misses the DRAM index while
//! the rebuild runs reads the node *under the key's bucket lock* — it waits
//! for a writer that is between the two stores, instead of returning a
//! value that a later reader (finding the index complete but the slot not
//! yet stored) would not see.
//!
//! Schedule (persist observer): the rebuild's scan is parked on the last
//! node (its word's persist bit cleared: a legal crash image), a writer of
//! a new key is parked right after its node-word store; reader A must not
//! return while the writer is parked; after the scan has finished and the
//! writer has gone on, A and a later reader both see the new value.
mod common;

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use persimmon::{Db, Options, OrderedLayout, PersistObserver, PointIndex};

#[derive(Default)]
struct Gate {
    open: Mutex<bool>,
    cv: Condvar,
    parked: Mutex<bool>,
    parked_cv: Condvar,
}
impl Gate {
    fn park(&self) {
        *self.parked.lock().unwrap() = true;
        self.parked_cv.notify_all();
        let mut o = self.open.lock().unwrap();
        while !*o {
            o = self.cv.wait(o).unwrap();
        }
    }
    fn wait_parked(&self) {
        let mut p = self.parked.lock().unwrap();
        while !*p {
            p = self
                .parked_cv
                .wait_timeout(p, Duration::from_secs(10))
                .unwrap()
                .0;
        }
    }
    fn release(&self) {
        *self.open.lock().unwrap() = true;
        self.cv.notify_all();
    }
}

thread_local! {
    static WRITER: Cell<bool> = const { Cell::new(false) };
    static LAST_NODE_HEADER: Cell<u64> = const { Cell::new(u64::MAX) };
    static PARKED_ONCE: Cell<bool> = const { Cell::new(false) };
}

struct Obs {
    scan_line: u64,
    scan_gate: Gate,
    writer_gate: Gate,
}

impl PersistObserver for Obs {
    fn store(&self, offset: u64, data: &[u8]) {
        if !WRITER.with(|w| w.get()) {
            return;
        }
        if data.len() == 24 {
            // Ordered::insert writes the node header (24 bytes) first.
            LAST_NODE_HEADER.with(|n| n.set(offset));
        } else if data.len() == 8
            && offset == LAST_NODE_HEADER.with(|n| n.get()).wrapping_add(8)
            && !PARKED_ONCE.with(|p| p.replace(true))
        {
            // publish_word: the node's record word was just stored (persist=0).
            self.writer_gate.park();
        }
    }
    fn nt_store(&self, offset: u64, data: &[u8]) {
        self.store(offset, data)
    }
    fn flush(&self, offset: u64) {
        if offset & !63 == self.scan_line
            && std::thread::current().name() == Some("persimmon-ordered")
            && !PARKED_ONCE.with(|p| p.replace(true))
        {
            self.scan_gate.park();
        }
    }
    fn fence(&self) {}
}

fn key(i: u32) -> Vec<u8> {
    format!("k{i:04}").into_bytes()
}

#[test]
fn a_read_during_the_rebuild_waits_for_a_writer_between_node_and_index() {
    let dir = common::pool_dir();
    let path = dir.path().join("inv.pool");
    let opts = Options {
        ordered_index: true,
        point_index: PointIndex::Dram,
        cleaner: false,
        // The schedule parks on skiplist node stores.
        ordered_layout: OrderedLayout::Skiplist,
        ..common::small_options()
    };
    let n = 300u32;
    {
        let db = Db::open(&path, opts.clone()).unwrap();
        for i in 0..n {
            db.put(&key(i), b"old").unwrap();
        }
    }
    // Find the node of the last key put (the last live node in slab order)
    // and clear its record word's persist bit (a legal crash image: the bit
    // is set by a store nobody flushes).
    let mut bytes = std::fs::read(&path).unwrap();
    let last = key(n - 1);
    let mut node = None;
    for pos in 24..bytes.len() - last.len() {
        if bytes[pos..pos + last.len()] == last[..]
            && (pos - 24) % 32 == 0
            && bytes[pos - 8..pos - 4] == (last.len() as u32).to_le_bytes()
        {
            node = Some((pos - 24) as u64);
        }
    }
    let node = node.expect("node of the last key");
    let w = (node + 8) as usize;
    let word = u64::from_le_bytes(bytes[w..w + 8].try_into().unwrap());
    assert!(
        word & 1 == 1 && word > 1,
        "a persisted record word: {word:#x}"
    );
    bytes[w..w + 8].copy_from_slice(&(word & !1).to_le_bytes());
    std::fs::write(&path, &bytes).unwrap();

    let obs = Arc::new(Obs {
        scan_line: (node + 8) & !63,
        scan_gate: Gate::default(),
        writer_gate: Gate::default(),
    });
    let db = Arc::new(Db::open_observed(&path, opts, Some(obs.clone())).unwrap());
    // The scan reaches the last node and parks (dram_filled still false).
    obs.scan_gate.wait_parked();

    let new_key = b"k9999".to_vec();
    let writer = {
        let (db, k) = (db.clone(), new_key.clone());
        std::thread::spawn(move || {
            WRITER.with(|w| w.set(true));
            db.put(&k, b"new").unwrap();
        })
    };
    obs.writer_gate.wait_parked();

    // Reader A: the DRAM index misses (slot only claimed); it must wait.
    let reader_a = {
        let (db, k) = (db.clone(), new_key.clone());
        std::thread::spawn(move || db.get(&k).unwrap())
    };
    std::thread::sleep(Duration::from_millis(200));
    assert!(
        !reader_a.is_finished(),
        "reader A answered from the node while its writer was between the node and the DRAM index"
    );
    // Let the scan finish: the index reports itself complete.
    obs.scan_gate.release();
    std::thread::sleep(Duration::from_millis(200));
    assert!(db.stats().point_index_ready);
    obs.writer_gate.release();
    writer.join().unwrap();
    assert_eq!(
        reader_a.join().unwrap().as_deref(),
        Some(&b"new"[..]),
        "reader A"
    );
    assert_eq!(
        db.get(&new_key).unwrap().as_deref(),
        Some(&b"new"[..]),
        "reader B"
    );
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
}
