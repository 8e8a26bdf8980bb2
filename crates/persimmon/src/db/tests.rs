//! Regression: a lane repeated sequence numbers after the cleaner moved its
//! records away. A pool written through lane 5 was reopened with one lane, so
//! lane 5's segments were sealed and the cleaner copied their live records
//! (keeping their numbers) into lane 254's segments and freed them; reopened
//! with eight lanes, lane 5 restarted from its remaining segment bases and
//! handed out numbers that live records still carried (found in review: a put
//! waiting on a holder with such a number was eliminated against the moved
//! record, and its value was lost). Now every lane starts above a pool-wide
//! floor that covers the cleaner's copies.

use std::sync::atomic::Ordering;

use super::engine::THREAD_TICKET;
use super::Db;
use crate::layout::{self, SegmentHeader, SegmentKind};
use crate::log::COUNTER_MASK;
use crate::options::Options;
use crossbeam_epoch as epoch;

fn options(lanes: usize, cleaner: bool) -> Options {
    Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 1 << 30,
        segment_bytes: 64 << 10,
        lanes,
        cleaner,
        ..Options::default()
    }
}

/// Runs `f` on a fresh thread whose lane ticket maps to lane `want`.
fn on_lane(lanes: u64, want: u64, f: impl Fn() + Sync) {
    loop {
        let ran = std::thread::scope(|s| {
            s.spawn(|| {
                let ticket = THREAD_TICKET.with(|t| *t);
                if ticket % lanes == want {
                    f();
                    true
                } else {
                    false
                }
            })
            .join()
            .unwrap()
        });
        if ran {
            return;
        }
    }
}

#[test]
fn lanes_never_reuse_numbers_of_records_the_cleaner_moved() {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let path = dir.path().join("floor.pool");
    {
        let db = Db::open(&path, options(8, false)).unwrap();
        on_lane(8, 5, || {
            for i in 0..2000u32 {
                db.put(format!("key{i}").as_bytes(), &[7u8; 64]).unwrap();
            }
        });
        // Every lane-5 segment gets dead space (overwrites go to lane 6).
        on_lane(8, 6, || {
            for i in (0..2000u32).step_by(2) {
                db.put(format!("key{i}").as_bytes(), &[8u8; 64]).unwrap();
            }
        });
    }
    {
        let db = Db::open(&path, options(1, false)).unwrap();
        db.wait_for_rebuild();
        assert!(db.clean_now().unwrap() > 0);
        // Let the emptied lane-5 segments be released (state word 0 on media).
        for _ in 0..2000 {
            let guard = epoch::pin();
            guard.flush();
            drop(guard);
            if db.engine.pool.releases_pending.load(Ordering::Acquire) == 0 {
                break;
            }
            std::thread::sleep(std::time::Duration::from_micros(100));
        }
        let e = &db.engine;
        let lane5_left = (0..e.pool.segment_count())
            .filter(|&s| {
                let h = e.pool.pm.slice(e.pool.segment_offset(s), 64).unwrap();
                matches!(SegmentHeader::decode(h), layout::HeaderState::Valid(h) if h.lane_or_depth == 5 && h.kind == SegmentKind::Log)
            })
            .count();
        assert_eq!(
            lane5_left, 0,
            "the cleaner should have emptied every lane-5 segment"
        );
        assert!(db.check().unwrap().is_ok());
    }
    let db = Db::open(&path, options(8, false)).unwrap();
    db.wait_for_rebuild();
    let e = &db.engine;
    // The largest number any live record carries.
    let mut max_live = 0;
    for item in db.iter() {
        let (key, _) = item.unwrap();
        let h = e.hash(&key);
        let seg = e.index.dir.load().lookup(h);
        let (_, header) = e.find_lockfree(&seg, h, &key).unwrap().unwrap();
        max_live = max_live.max(header.seq & COUNTER_MASK);
    }
    let _ = e.lane(); // the first write path call raises every lane to the floor
    let next = e.lanes[5].next_seq(&e.pool) & COUNTER_MASK;
    assert!(
        next > max_live,
        "lane 5 hands out {next}, not above the live records' {max_live}"
    );
}

/// Three-choice buckets (format version 7): a new pool uses them; through
/// index splits every key sits in one of its three buckets, the second and
/// third buckets both take keys (the balancing that raises the load
/// factor), `check` agrees, and segments split well above the 50 % at
/// which bucket pairs split.
#[test]
fn three_choice_keys_use_all_three_buckets_through_splits() {
    let dir = tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap();
    let path = dir.path().join("three.pool");
    let db = Db::open(&path, options(1, false)).unwrap();
    let e = &db.engine;
    assert_eq!(e.index.placement, crate::index::Placement::ThreeChoice);
    assert_eq!(e.pool.format_version(), layout::FORMAT_VERSION_THREE_CHOICE);
    let slots_per_segment = e.index.buckets * e.index.slots_per_bucket;
    let mut first_split_at = None;
    let n = 40_000u64;
    for i in 0..n {
        db.put(&i.to_le_bytes(), &[1u8; 16]).unwrap();
        if first_split_at.is_none() && e.index.dir.load().segments().len() > 1 {
            first_split_at = Some(i);
        }
    }
    // The first split comes when one segment holds all keys so far.
    let load = first_split_at.unwrap() as f64 / slots_per_segment as f64;
    assert!(load > 0.6, "first split at load factor {load:.2}");
    let mut at = [0u64; 3];
    let pm = e.ipm();
    for i in 0..n {
        let key = i.to_le_bytes();
        let h = e.hash(&key);
        let seg = e.index.dir.load().lookup(h);
        let probe = e.index.probe(&seg, h);
        let pos = probe.iter().position(|&b| {
            e.index.slots(b).any(|a| {
                let s = layout::Slot(pm.load_u64(a));
                s.names_record()
                    && s.fingerprint() == crate::index::fingerprint(h)
                    && e.record_header(s.offset())
                        .and_then(|hd| e.record_key(s.offset(), &hd).map(|k| k == key))
                        .unwrap_or(false)
            })
        });
        at[pos.expect("every key in one of its buckets")] += 1;
    }
    assert!(at[0] > at[1] && at[1] > 0 && at[2] > 0, "{at:?}");
    db.wait_for_rebuild();
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(report.keys, n);
}
