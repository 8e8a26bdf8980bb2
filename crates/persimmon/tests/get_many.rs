//! Batched reads (`Db::get_many_with`, `Db::get_many`): each key answers as
//! `get` would — present, absent, deleted, overwritten, on the SSD tier, on
//! the DRAM point index before and after its rebuild — the callback runs
//! once per key in order (repeats included), an error stops the read at its
//! key, and keys written concurrently, by single puts or atomic batches,
//! are never seen going back in time or in half a batch. (Expiry, batches,
//! transactions and reopens against a model: `model_based_batches_expiry`.)

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use persimmon::{Db, Error, Mechanisms, Options, PointIndex, WriteBatch, MAX_KEY_BYTES};

fn key(i: u32) -> Vec<u8> {
    format!("m{:08}", i.wrapping_mul(2_654_435_761) % 100_000_000).into_bytes()
}

fn value(i: u32, round: u32) -> Vec<u8> {
    let mut v = format!("value-{i}-{round}-").into_bytes();
    v.resize(16 + (i as usize % 80), b'.');
    v
}

/// Every answer of `get_many_with` (index, value), in call order.
fn answers(db: &Db, keys: &[Vec<u8>]) -> persimmon::Result<Vec<(usize, Option<Vec<u8>>)>> {
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut out = Vec::new();
    db.get_many_with(&refs, |i, v| out.push((i, v.map(<[u8]>::to_vec))))?;
    Ok(out)
}

/// `get_many` agrees with `get` of each key, and `f` is called once per
/// key in order.
fn assert_agrees_with_get(db: &Db, keys: &[Vec<u8>]) {
    let got = answers(db, keys).unwrap();
    assert_eq!(got.len(), keys.len());
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let copied = db.get_many(&refs).unwrap();
    for (j, ((i, v), k)) in got.into_iter().zip(keys).enumerate() {
        assert_eq!(i, j, "f called out of order");
        let single = db.get(k).unwrap();
        assert_eq!(v, single, "key #{j} {:?}", String::from_utf8_lossy(k));
        assert_eq!(copied[j], single, "get_many, key #{j}");
    }
}

#[test]
fn present_absent_deleted_overwritten_repeated_and_empty() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("p.pool"), common::small_options()).unwrap();
    for i in 0..2000 {
        db.put(&key(i), &value(i, 0)).unwrap();
    }
    for i in (0..2000).step_by(7) {
        assert!(db.delete(&key(i)).unwrap());
    }
    for i in (0..2000).step_by(5) {
        db.put(&key(i), &value(i, 1)).unwrap();
    }
    db.put(b"", b"the empty key").unwrap();
    // Several chunks: every key, absent ones, repeats, the empty key.
    let mut keys: Vec<Vec<u8>> = (0..2100).map(key).collect();
    keys.extend((0..50).map(|i| key(i * 3)));
    keys.push(Vec::new());
    keys.push(b"never written".to_vec());
    assert_agrees_with_get(&db, &keys);
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let got = db.get_many(&refs).unwrap();
    assert_eq!(got[1], Some(value(1, 0)));
    assert_eq!(got[5], Some(value(5, 1)));
    assert_eq!(got[7], None, "deleted");
    assert_eq!(got[35], Some(value(35, 1)), "deleted, then put again");
    assert_eq!(got[2050], None, "never written");
    assert_eq!(got[2150].as_deref(), Some(&b"the empty key"[..]));
    assert_eq!(got[2151], None);
    // Repeats of one key, in one call.
    let same: Vec<&[u8]> = vec![b"m-same"; 40];
    db.put(b"m-same", b"v").unwrap();
    assert!(db
        .get_many(&same)
        .unwrap()
        .iter()
        .all(|v| v.as_deref() == Some(&b"v"[..])));
    // The empty call.
    assert_eq!(db.get_many(&[]).unwrap(), Vec::<Option<Vec<u8>>>::new());
    let mut calls = 0;
    db.get_many_with(&[], |_, _| calls += 1).unwrap();
    assert_eq!(calls, 0);
}

#[test]
fn an_error_stops_the_read_at_its_key() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("e.pool"), common::small_options()).unwrap();
    for i in 0..100 {
        db.put(&key(i), &value(i, 0)).unwrap();
    }
    let long = vec![b'x'; MAX_KEY_BYTES + 1];
    let mut keys: Vec<&[u8]> = Vec::new();
    let owned: Vec<Vec<u8>> = (0..40).map(key).collect();
    keys.extend(owned.iter().map(Vec::as_slice));
    keys[21] = &long;
    let mut seen = Vec::new();
    let err = db
        .get_many_with(&keys, |i, v| seen.push((i, v.is_some())))
        .unwrap_err();
    assert!(matches!(err, Error::KeyTooLarge { .. }), "{err}");
    assert_eq!(seen, (0..21).map(|i| (i, true)).collect::<Vec<_>>());
    assert!(db.get_many(&keys).is_err());
}

#[test]
fn values_on_the_ssd_tier_come_back_whole() {
    let dir = common::pool_dir();
    let options = Options {
        data_dir: Some(dir.path().join("data")),
        cache_bytes: 1 << 20,
        ..common::small_options()
    };
    let db = Db::open(dir.path().join("t.pool"), options).unwrap();
    let sizes = [100usize, 4096, 5000, 70_001];
    let keys: Vec<Vec<u8>> = (0..40).map(key).collect();
    for (i, k) in keys.iter().enumerate() {
        let len = sizes[i % sizes.len()];
        db.put(k, &common::value_bytes(len, i as u8)).unwrap();
    }
    // A range write leaves a patch on PM over the extent.
    db.write_range(&keys[3], 10, b"patched").unwrap();
    assert!(
        db.stats().ssd_extents_written > 0,
        "values went to the tier"
    );
    assert_agrees_with_get(&db, &keys);
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let got = db.get_many(&refs).unwrap();
    assert_eq!(got[2].as_ref().map(Vec::len), Some(5000));
    assert_eq!(&got[3].as_ref().unwrap()[10..17], b"patched");
}

fn dram_options() -> Options {
    Options {
        ordered_index: true,
        point_index: PointIndex::Dram,
        ..common::small_options()
    }
}

#[test]
fn dram_point_index_answers_before_and_after_its_rebuild() {
    let dir = common::pool_dir();
    let path = dir.path().join("d.pool");
    let n = 60_000u32;
    {
        let db = Db::open(&path, dram_options()).unwrap();
        for i in 0..n {
            db.put(&key(i), &value(i, 1)).unwrap();
        }
        for i in (0..n).step_by(10) {
            assert!(db.delete(&key(i)).unwrap());
        }
    }
    let want = |i: u32| (!i.is_multiple_of(10)).then(|| value(i, 1));
    let mut unready_reads = false;
    for _reopen in 0..2 {
        let db = Db::open(&path, dram_options()).unwrap();
        // Misses of the DRAM index are no answer until it is complete: every
        // present key must still be found.
        for start in (0..n).step_by(64) {
            let ready_before = db.stats().point_index_ready;
            let keys: Vec<Vec<u8>> = (start..(start + 64).min(n)).map(key).collect();
            let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
            db.get_many_with(&refs, |j, v| {
                let i = start + j as u32;
                assert_eq!(v.map(<[u8]>::to_vec), want(i), "key {i}");
            })
            .unwrap();
            unready_reads |= !ready_before && !db.stats().point_index_ready;
        }
        db.wait_for_rebuild();
        assert!(db.stats().point_index_ready);
        let keys: Vec<Vec<u8>> = (0..n).map(key).collect();
        let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
        let got = db.get_many(&refs).unwrap();
        for i in 0..n {
            assert_eq!(got[i as usize], want(i), "key {i} after the rebuild");
        }
    }
    assert!(
        unready_reads,
        "no batched read ran before the index was complete"
    );
}

/// Keys every batch `g` sets to `g`.
const GROUP: u32 = 48;
/// Keys single puts count up, each on its own.
const SINGLES: u32 = 16;

fn group_key(i: u32) -> Vec<u8> {
    format!("group-{i}").into_bytes()
}

fn single_key(i: u32) -> Vec<u8> {
    format!("single-{i}").into_bytes()
}

fn number(v: Option<&[u8]>) -> u64 {
    let v = v.expect("the key is always present");
    assert_eq!(v.len(), 24, "a whole value");
    let n = u64::from_le_bytes(v[..8].try_into().unwrap());
    assert!(v[8..].iter().all(|&b| b == n as u8), "a torn value: {v:?}");
    n
}

fn numbered(n: u64) -> Vec<u8> {
    let mut v = n.to_le_bytes().to_vec();
    v.resize(24, n as u8);
    v
}

/// One batch writer, one single-put writer and two readers for `RUN`.
/// Readers read every key of both sets in one call, in a shuffled order
/// with repeats: in reading order the group's numbers never decrease (a
/// read that saw batch `g` in one key and an older batch in a later key
/// would have seen half of batch `g`), each single key's number never
/// decreases, and the group shows at least the last batch committed before
/// the call began.
fn concurrent_writers(options: Options) {
    const RUN: Duration = Duration::from_millis(400);
    let dir = common::pool_dir();
    let db = Arc::new(Db::open(dir.path().join("c.pool"), options).unwrap());
    let mut first = WriteBatch::new();
    for i in 0..GROUP {
        first.put(&group_key(i), &numbered(0));
    }
    db.write(&first).unwrap();
    for i in 0..SINGLES {
        db.put(&single_key(i), &numbered(0)).unwrap();
    }
    let committed = Arc::new(AtomicU64::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let batches = {
        let (db, committed, stop) = (db.clone(), committed.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut g = 0;
            while !stop.load(Ordering::Relaxed) {
                g += 1;
                let mut b = WriteBatch::new();
                for i in 0..GROUP {
                    b.put(&group_key(i), &numbered(g));
                }
                db.write(&b).unwrap();
                committed.store(g, Ordering::Release);
            }
            g
        })
    };
    let singles = {
        let (db, stop) = (db.clone(), stop.clone());
        std::thread::spawn(move || {
            let mut n = 0;
            while !stop.load(Ordering::Relaxed) {
                n += 1;
                for i in 0..SINGLES {
                    db.put(&single_key(i), &numbered(n)).unwrap();
                }
            }
        })
    };
    let readers: Vec<_> = (0..2u64)
        .map(|t| {
            let (db, committed, stop) = (db.clone(), committed.clone(), stop.clone());
            std::thread::spawn(move || {
                // Both sets, shuffled by a fixed stride, each group key twice.
                let mut order: Vec<(bool, u32)> = (0..GROUP)
                    .chain(0..GROUP)
                    .map(|i| (true, i))
                    .chain((0..SINGLES).map(|i| (false, i)))
                    .collect();
                let len = order.len();
                let mut x = 0x9E37_79B9_7F4A_7C15u64 ^ t;
                for i in (1..len).rev() {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    order.swap(i, (x % (i as u64 + 1)) as usize);
                }
                let keys: Vec<Vec<u8>> = order
                    .iter()
                    .map(|&(g, i)| if g { group_key(i) } else { single_key(i) })
                    .collect();
                let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
                let mut last_single = vec![0u64; SINGLES as usize];
                let mut calls = 0u64;
                while !stop.load(Ordering::Relaxed) {
                    let floor = committed.load(Ordering::Acquire);
                    let mut group_seen = floor;
                    db.get_many_with(&refs, |j, v| {
                        let n = number(v);
                        match order[j] {
                            (true, i) => {
                                assert!(
                                    n >= group_seen,
                                    "group key {i} shows batch {n} after batch {group_seen} \
                                     (half a batch, or back in time; committed {floor})"
                                );
                                group_seen = n;
                            }
                            (false, i) => {
                                let last = &mut last_single[i as usize];
                                assert!(n >= *last, "single key {i}: {n} after {last}");
                                *last = n;
                            }
                        }
                    })
                    .unwrap();
                    calls += 1;
                }
                calls
            })
        })
        .collect();
    let start = Instant::now();
    while start.elapsed() < RUN {
        std::thread::sleep(Duration::from_millis(10));
    }
    stop.store(true, Ordering::Relaxed);
    let g = batches.join().unwrap();
    singles.join().unwrap();
    let mut calls = 0;
    for r in readers {
        calls += r.join().unwrap();
    }
    assert!(g > 10 && calls > 10, "{g} batches, {calls} batched reads");
    // After the writers: every group key shows the last batch.
    let keys: Vec<Vec<u8>> = (0..GROUP).map(group_key).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    for v in db.get_many(&refs).unwrap() {
        assert_eq!(number(v.as_deref()), g);
    }
}

#[test]
fn concurrent_batches_are_never_seen_in_part_pm() {
    concurrent_writers(common::small_options());
}

#[test]
fn concurrent_batches_are_never_seen_in_part_dram() {
    concurrent_writers(dram_options());
}

#[test]
fn concurrent_batches_are_never_seen_in_part_locked_reads() {
    concurrent_writers(Options {
        mechanisms: Mechanisms {
            lock_free_reads: false,
            ..Mechanisms::ALL
        },
        ..common::small_options()
    });
}
