//! The ordered index never lets a write build on a link that a crash could
//! still undo (found by review; design.md §10): an insert that has stored
//! `pred.next = node` but not yet flushed and fenced it holds the new node's
//! range mark too, so a second insert right behind the new node waits. Were
//! it not so, the second key could be acknowledged while its node hangs
//! off a link that a crash loses: unreachable, yet (DRAM point index) named
//! by its record word, so the slab scan would enter it and the walk would
//! free its slot under it.
//!
//! Schedule (persist observer): thread A puts K1 and is parked right after
//! its link store `P.next = N1`, before the flush; thread B puts K2 (K1 < K2
//! < S) and must not finish while A is parked. A crash image is taken then
//! (the pool file with A's one unflushed store reverted; every other store
//! in it is flushed and fenced: 64-byte nodes, one per line), and must
//! reopen consistent with every acknowledged key, in both placements, also
//! after new nodes reuse the slots the walk frees and another reopen.
mod common;

use std::cell::Cell;
use std::sync::{Arc, Condvar, Mutex};
use std::time::Duration;

use persimmon::{Db, Options, OrderedLayout, PersistObserver, PointIndex};

#[derive(Default)]
struct Parked {
    at: Mutex<Option<(u64, u64)>>, // (offset of A's link store, its old value)
    cv: Condvar,
    open: Mutex<bool>,
    open_cv: Condvar,
}

thread_local! {
    static A: Cell<bool> = const { Cell::new(false) };
    static HEADER: Cell<(u64, u64)> = const { Cell::new((u64::MAX, 0)) }; // (node, its next)
}

struct Obs(Arc<Parked>);

impl PersistObserver for Obs {
    fn store(&self, offset: u64, data: &[u8]) {
        if !A.with(|a| a.get()) {
            return;
        }
        if data.len() == 24 {
            let next = u64::from_le_bytes(data[0..8].try_into().unwrap());
            HEADER.with(|h| h.set((offset, next)));
        } else if data.len() == 8 {
            let (node, next) = HEADER.with(|h| h.get());
            if u64::from_le_bytes(data.try_into().unwrap()) == node {
                // `pred.next = node` is visible, not yet flushed.
                *self.0.at.lock().unwrap() = Some((offset, next));
                self.0.cv.notify_all();
                let mut o = self.0.open.lock().unwrap();
                while !*o {
                    o = self.0.open_cv.wait(o).unwrap();
                }
            }
        }
    }
    fn nt_store(&self, _offset: u64, _data: &[u8]) {}
    fn flush(&self, _offset: u64) {}
    fn fence(&self) {}
}

/// 40-byte keys: 24-byte node header + key = 64 bytes, one node per line.
fn k(n: u32) -> Vec<u8> {
    format!("key-{n:036}").into_bytes()
}

fn opts(point_index: PointIndex) -> Options {
    Options {
        ordered_index: true,
        point_index,
        cleaner: false,
        // The schedule parks on a skiplist link store.
        ordered_layout: OrderedLayout::Skiplist,
        ..common::small_options()
    }
}

#[test]
fn no_insert_links_behind_a_link_not_yet_durable_pm() {
    run(PointIndex::Pm);
}

#[test]
fn no_insert_links_behind_a_link_not_yet_durable_dram() {
    run(PointIndex::Dram);
}

fn run(point_index: PointIndex) {
    let opts = || opts(point_index);
    let dir = common::pool_dir();
    let path = dir.path().join("live.pool");
    let image = dir.path().join("image.pool");
    let parked = Arc::new(Parked::default());
    let db =
        Arc::new(Db::open_observed(&path, opts(), Some(Arc::new(Obs(parked.clone())))).unwrap());
    db.put(&k(10), b"p").unwrap(); // P
    db.put(&k(50), b"s").unwrap(); // S
    let a = {
        let db = db.clone();
        std::thread::spawn(move || {
            A.with(|a| a.set(true));
            db.put(&k(20), b"k1").unwrap(); // K1: parked after `P.next = N1`
        })
    };
    let (link_at, old_next) = {
        let mut at = parked.at.lock().unwrap();
        while at.is_none() {
            at = parked
                .cv
                .wait_timeout(at, Duration::from_secs(10))
                .unwrap()
                .0;
        }
        at.unwrap()
    };
    // K2 would link behind N1: it must wait for A's link to be durable.
    let b = {
        let db = db.clone();
        std::thread::spawn(move || db.put(&k(30), b"k2").unwrap())
    };
    std::thread::sleep(Duration::from_millis(300));
    assert!(
        !b.is_finished(),
        "K2 was acknowledged while the link in front of its node was not durable"
    );
    // Crash now: A's link store never reached the media.
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[link_at as usize..link_at as usize + 8].copy_from_slice(&old_next.to_le_bytes());
    std::fs::write(&image, &bytes).unwrap();
    *parked.open.lock().unwrap() = true;
    parked.open_cv.notify_all();
    a.join().unwrap();
    b.join().unwrap();
    assert_eq!(db.get(&k(30)).unwrap().as_deref(), Some(&b"k2"[..]));
    drop(db);

    let mut problems = Vec::new();
    // Acknowledged before the crash image: P and S (K1 and K2 were in flight).
    let mut acked: std::collections::BTreeMap<Vec<u8>, Vec<u8>> =
        [(k(10), b"p".to_vec()), (k(50), b"s".to_vec())].into();
    {
        let db = Db::open(&image, opts()).unwrap();
        db.wait_for_rebuild();
        let keys: Vec<Vec<u8>> = db
            .range_keys::<[u8]>(..)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        for key in [k(20), k(30)] {
            let listed = keys.contains(&key);
            let present = db.get(&key).unwrap().is_some();
            if listed != present {
                problems.push(format!(
                    "after the crash {}: listed {listed}, readable {present}",
                    String::from_utf8_lossy(&key)
                ));
            }
        }
        let r = db.check().unwrap();
        if !r.is_ok() {
            problems.push(format!("check after the crash: {:?}", r.errors));
        }
        // New keys of the same node size: the walk freed K2's unreachable slot.
        for i in 1000..6000 {
            db.put(&k(i), format!("v{i}").as_bytes()).unwrap();
            acked.insert(k(i), format!("v{i}").into_bytes());
        }
        let r = db.check().unwrap();
        if !r.is_ok() {
            problems.push(format!(
                "check after reusing node slots: {:?}",
                &r.errors[..r.errors.len().min(3)]
            ));
        }
        db.put(&k(30), b"k2-again").unwrap();
        acked.insert(k(30), b"k2-again".to_vec());
    }
    {
        let db = Db::open(&image, opts()).unwrap();
        db.wait_for_rebuild();
        let r = db.check().unwrap();
        if !r.is_ok() {
            problems.push(format!(
                "check after reopen: {:?}",
                &r.errors[..r.errors.len().min(3)]
            ));
        }
        for (key, v) in &acked {
            match db.get(key) {
                Ok(Some(got)) if &got == v => {}
                other => problems.push(format!(
                    "acknowledged {} = {:?}: get gives {:?}",
                    String::from_utf8_lossy(key),
                    String::from_utf8_lossy(v),
                    other.map(|o| o.map(|g| String::from_utf8_lossy(&g).into_owned()))
                )),
            }
        }
    }
    assert!(
        problems.is_empty(),
        "{} problem(s):\n{}",
        problems.len(),
        problems.join("\n")
    );
}
