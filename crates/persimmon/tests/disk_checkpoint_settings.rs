//! The disk domain's checkpoint settings (`Options::disk_checkpoint_bytes`,
//! `Options::disk_checkpoint_interval`) are honoured: a high threshold and a
//! long interval keep more of the write-ahead log in use than the defaults
//! do, a short interval empties it, a threshold at the ring's size never
//! leaves writes waiting, and a threshold past the ring is refused at open.

mod common;

use std::path::Path;
use std::sync::mpsc;
use std::time::{Duration, Instant};

use persimmon::{Db, Domain, Error, LogFigures, Options};

const RING: u64 = 8 << 20;
const HOUR: Duration = Duration::from_secs(3600);

fn disk_options() -> Options {
    Options {
        domain: Domain::Disk,
        pool_bytes_initial: 8 << 20,
        disk_log_bytes: RING,
        // Nothing in the background appends to the log.
        cleaner: false,
        active_expiry: false,
        ..Options::default()
    }
}

fn tuned(bytes: Option<u64>, interval: Duration) -> Options {
    Options {
        disk_checkpoint_bytes: bytes,
        disk_checkpoint_interval: interval,
        ..disk_options()
    }
}

fn log(db: &Db) -> LogFigures {
    db.stats().log.expect("a pool in the disk domain has a log")
}

fn put(db: &Db, i: u32) {
    db.put(&i.to_le_bytes(), &[(i % 251) as u8; 1024]).unwrap();
}

/// Puts 1 KiB values until the log has had `bytes` appended; returns how
/// many.
fn put_until_appended(db: &Db, bytes: u64) -> u32 {
    let from = log(db).appended;
    let mut i = 0;
    while log(db).appended - from < bytes {
        put(db, i);
        i += 1;
    }
    i
}

/// Polls the log's figures until `done` holds or `within` passes.
fn wait_for(db: &Db, within: Duration, done: impl Fn(&LogFigures) -> bool) -> LogFigures {
    let until = Instant::now() + within;
    loop {
        let f = log(db);
        if done(&f) || Instant::now() >= until {
            return f;
        }
        std::thread::sleep(Duration::from_millis(10));
    }
}

#[test]
fn a_high_threshold_and_a_long_interval_keep_more_of_the_log_than_the_defaults() {
    let dir = common::pool_dir();
    // Past half the ring: the defaults checkpoint at a quarter (and at half
    // full, and after 500 ms).
    let target = RING * 5 / 8;

    let path = dir.path().join("tuned.pool");
    let db = Db::open(&path, tuned(Some(RING), HOUR)).unwrap();
    let puts = put_until_appended(&db, target);
    let f = log(&db);
    assert_eq!(
        f.checkpoints, 0,
        "no checkpoint before the threshold: {f:?}"
    );
    assert!(f.used >= target, "the log keeps what was appended: {f:?}");
    // Longer than the default interval: still nothing applied.
    std::thread::sleep(Duration::from_millis(1200));
    let later = log(&db);
    assert_eq!(later.checkpoints, 0, "{later:?}");
    assert_eq!(later.used, f.used, "{later:?}");
    drop(db);

    let path = dir.path().join("default.pool");
    let db = Db::open(&path, disk_options()).unwrap();
    for i in 0..puts {
        put(&db, i);
    }
    // A checkpoint was due at a quarter of the ring; it runs in the
    // background, so give it a moment to finish.
    let d = wait_for(&db, Duration::from_secs(5), |l| l.checkpoints >= 1);
    assert!(d.checkpoints >= 1, "the defaults checkpoint by now: {d:?}");
    assert!(
        d.used < f.used,
        "the defaults keep less of the log in use: {d:?} vs {f:?}"
    );
    // And after the default interval, nothing at all.
    let d = wait_for(&db, Duration::from_secs(5), |l| l.used == 0);
    assert_eq!(d.used, 0, "the idle checkpoint empties the log: {d:?}");
}

#[test]
fn a_short_interval_empties_the_log_under_a_high_threshold() {
    let dir = common::pool_dir();
    let path = dir.path().join("interval.pool");
    let db = Db::open(&path, tuned(Some(RING), Duration::from_millis(50))).unwrap();
    for i in 0..200 {
        put(&db, i);
    }
    let f = wait_for(&db, Duration::from_secs(5), |l| l.used == 0);
    assert_eq!(f.used, 0, "{f:?}");
    assert!(f.checkpoints >= 1, "{f:?}");
}

#[test]
fn a_threshold_at_the_ring_never_leaves_writes_waiting() {
    let dir = common::pool_dir();
    let path = dir.path().join("full.pool");
    let db = std::sync::Arc::new(Db::open(&path, tuned(Some(RING), HOUR)).unwrap());
    let (tx, rx) = mpsc::channel();
    let writer = db.clone();
    // Three rings' worth: the ring fills several times over, and only the
    // threshold (clamped below the ring) and waiting writers can start a
    // checkpoint (the interval is an hour).
    std::thread::spawn(move || {
        let n = put_until_appended(&writer, 3 * RING);
        tx.send(n).unwrap();
    });
    let n = rx
        .recv_timeout(Duration::from_secs(120))
        .expect("writes went on through full rings");
    let f = log(&db);
    assert!(f.checkpoints >= 2, "{f:?}");
    assert!(f.used <= f.capacity, "{f:?}");
    for i in (0..n).step_by(97) {
        assert_eq!(
            db.get(&i.to_le_bytes()).unwrap(),
            Some(vec![(i % 251) as u8; 1024])
        );
    }
}

#[test]
fn a_write_bigger_than_the_room_left_gets_a_checkpoint() {
    let dir = common::pool_dir();
    let path = dir.path().join("big.pool");
    let db = std::sync::Arc::new(Db::open(&path, tuned(Some(RING), HOUR)).unwrap());
    // Just under the threshold (the ring less 512 KiB), where neither the
    // threshold nor the interval starts a checkpoint...
    let under = RING - (512 << 10) - (48 << 10);
    put_until_appended(&db, under);
    let f = log(&db);
    assert_eq!(f.checkpoints, 0, "{f:?}");
    // ...a write whose lines need more than the room left waits for one.
    let (tx, rx) = mpsc::channel();
    let writer = db.clone();
    std::thread::spawn(move || {
        writer.put(b"big", &[7u8; 900 << 10]).unwrap();
        tx.send(()).unwrap();
    });
    rx.recv_timeout(Duration::from_secs(60))
        .expect("a write waiting for room got a checkpoint");
    let f = log(&db);
    assert!(f.checkpoints >= 1, "{f:?}");
    assert_eq!(db.get(b"big").unwrap(), Some(vec![7u8; 900 << 10]));
}

fn refused(path: &Path, opts: Options) -> String {
    match Db::open(path, opts) {
        Err(e @ Error::InvalidOptions(_)) => e.to_string(),
        Err(e) => panic!("expected InvalidOptions, got {e}"),
        Ok(_) => panic!("opened with an invalid checkpoint threshold"),
    }
}

#[test]
fn a_threshold_past_the_ring_is_refused_at_open() {
    let dir = common::pool_dir();
    let path = dir.path().join("refused.pool");
    for bytes in [RING + 1, 1 << 40, u64::MAX] {
        let e = refused(&path, tuned(Some(bytes), HOUR));
        assert!(e.contains("disk_checkpoint_bytes"), "{e}");
        assert!(e.contains(&RING.to_string()), "names the ring: {e}");
        assert!(!path.exists(), "nothing created for a refused open");
    }
    // A ring asked smaller than the least the log takes is measured as the
    // log takes it (8 MiB).
    let small = Options {
        disk_log_bytes: 1 << 20,
        ..tuned(Some(RING), HOUR)
    };
    drop(Db::open(&path, small).unwrap());
    // Outside the disk domain too: the setting is wrong wherever the pool
    // lives.
    let e = refused(
        &path,
        Options {
            disk_checkpoint_bytes: Some(RING + 4096),
            disk_log_bytes: RING,
            ..Options::default()
        },
    );
    assert!(e.contains("disk_checkpoint_bytes"), "{e}");
    // The edges that are accepted: zero (checkpoint after every sync), the
    // ring itself (clamped), and any interval.
    for (bytes, interval) in [
        (Some(0), Duration::ZERO),
        (Some(RING), Duration::MAX),
        (None, Duration::from_nanos(1)),
    ] {
        let db = Db::open(&path, tuned(bytes, interval)).unwrap();
        put(&db, 1);
        drop(db);
    }
}
