//! The disk domain (`Domain::Disk`, what a pool on an ordinary file system
//! gets): writes are durable when their call returns, through the
//! write-ahead log beside the pool; a process killed at any moment loses no
//! acknowledged write; a clean close leaves the pool file whole; threads
//! share the log's syncs.

mod common;

use std::path::PathBuf;
use std::sync::Arc;

use persimmon::pmem::wal::log_path;
use persimmon::{Db, Domain, Durability, Options};

fn disk_options() -> Options {
    Options {
        domain: Domain::Disk,
        pool_bytes_initial: 8 << 20,
        disk_log_bytes: 8 << 20,
        ..Options::default()
    }
}

fn pool_in(dir: &tempfile::TempDir) -> PathBuf {
    dir.path().join("disk.pool")
}

#[test]
fn writes_survive_a_clean_close_and_the_pool_says_disk() {
    let dir = common::pool_dir();
    let path = pool_in(&dir);
    {
        let db = Db::open(&path, disk_options()).unwrap();
        assert_eq!(db.durability(), Durability::Disk);
        for i in 0..2000u32 {
            db.put(&i.to_le_bytes(), &[i as u8; 100]).unwrap();
        }
        db.delete(&7u32.to_le_bytes()).unwrap();
    }
    assert!(log_path(&path).exists(), "the log stays beside the pool");
    let db = Db::open(&path, disk_options()).unwrap();
    assert_eq!(db.len(), 1999);
    assert_eq!(db.get(&8u32.to_le_bytes()).unwrap(), Some(vec![8u8; 100]));
    assert_eq!(db.get(&7u32.to_le_bytes()).unwrap(), None);
    assert!(db.check().unwrap().is_ok());
    let stats = db.stats();
    assert_eq!(stats.format_version, persimmon::format::FORMAT_VERSION);
}

#[test]
fn after_a_clean_close_the_pool_file_alone_holds_everything() {
    let dir = common::pool_dir();
    let path = pool_in(&dir);
    {
        let db = Db::open(&path, disk_options()).unwrap();
        for i in 0..500u32 {
            db.put(&i.to_le_bytes(), b"value").unwrap();
        }
    }
    // The log is checkpointed at a clean close: without it, the pool opens
    // with every key (in a domain that has no log).
    std::fs::remove_file(log_path(&path)).unwrap();
    let db = Db::open(&path, Options::default()).unwrap();
    assert_eq!(db.len(), 500);
    assert!(db.check().unwrap().is_ok());
}

#[test]
fn threads_share_the_log_syncs() {
    let dir = common::pool_dir();
    let path = pool_in(&dir);
    let db = Arc::new(Db::open(&path, disk_options()).unwrap());
    let before = db.stats().log.expect("a disk pool has a log");
    let threads: Vec<_> = (0..8u32)
        .map(|t| {
            let db = db.clone();
            std::thread::spawn(move || {
                for i in 0..200u32 {
                    db.put(&(t * 1000 + i).to_le_bytes(), b"v").unwrap();
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let after = db.stats().log.unwrap();
    let syncs = after.syncs - before.syncs;
    assert!(syncs > 0, "the puts were synced");
    assert!(
        syncs < 1600,
        "1600 puts on 8 threads took {syncs} syncs: none were shared"
    );
    assert_eq!(db.len(), 1600);
}

#[test]
fn a_log_of_another_pool_is_refused() {
    let dir = common::pool_dir();
    let a = dir.path().join("a.pool");
    let b = dir.path().join("b.pool");
    drop(Db::open(&a, disk_options()).unwrap());
    drop(Db::open(&b, disk_options()).unwrap());
    std::fs::copy(log_path(&a), log_path(&b)).unwrap();
    let e = Db::open(&b, disk_options()).unwrap_err();
    assert!(e.to_string().contains("belongs to another pool"), "{e}");
}

/// The child half of `acknowledged_writes_survive_kill_9`: writes keys,
/// printing each one once its put returned, until it is killed.
#[test]
#[ignore = "run by acknowledged_writes_survive_kill_9 in a child process"]
fn child_writes_until_killed() {
    let Ok(path) = std::env::var("PERSIMMON_DISK_CHILD_POOL") else {
        return;
    };
    let db = Db::open(&path, disk_options()).unwrap();
    use std::io::Write;
    let mut out = std::io::stdout().lock();
    for i in 0u32.. {
        db.put(&i.to_le_bytes(), &[(i % 251) as u8; 300]).unwrap();
        writeln!(out, "acked {i}").unwrap();
        out.flush().unwrap();
    }
}

#[test]
fn acknowledged_writes_survive_kill_9() {
    let dir = common::pool_dir();
    let path = pool_in(&dir);
    let mut replayed_records = 0;
    for round in 0..3 {
        let child = common::spawn_child_test(
            "child_writes_until_killed",
            "PERSIMMON_DISK_CHILD_POOL",
            &path,
        );
        std::thread::sleep(std::time::Duration::from_millis(300 + 200 * round));
        // SAFETY: plain syscall on the child's pid.
        unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
        let out = child.wait_with_output().unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        let acked: Vec<u32> = text
            .lines()
            .filter_map(|l| l.strip_prefix("acked ")?.parse().ok())
            .collect();
        assert!(!acked.is_empty(), "the child acknowledged writes: {text}");
        let db = Db::open(&path, disk_options()).unwrap();
        for &i in &acked {
            assert_eq!(
                db.get(&i.to_le_bytes()).unwrap(),
                Some(vec![(i % 251) as u8; 300]),
                "acknowledged key {i} lost (round {round})"
            );
        }
        assert!(db.check().unwrap().is_ok());
        replayed_records += db.stats().log.unwrap().replayed.records;
    }
    assert!(
        replayed_records > 0,
        "the opens after kill -9 replayed the log"
    );
}

/// Many laps of the smallest ring with records of many sizes: every way a
/// lap can end (a pad record, or fewer bytes than a record header, which
/// the first version cut into a pad the applier refused) is met, and the
/// log stays healthy; everything written is there after a reopen.
#[test]
fn the_ring_wraps_at_every_offset_and_stays_healthy() {
    let dir = common::pool_dir();
    let path = pool_in(&dir);
    let opts = || Options {
        pool_bytes_initial: 64 << 20,
        ..disk_options()
    };
    let keys = 20_000u32;
    let value =
        |i: u32, round: u32| vec![(i ^ round) as u8; 1 + ((i * 7 + round * 13) % 150) as usize];
    {
        let db = Db::open(&path, opts()).unwrap();
        let capacity = db.stats().log.unwrap().capacity;
        // Not waiting per put: the syncer and the applier run behind.
        persimmon::defer_durability_waits(true);
        let mut round = 0;
        while db.stats().log.unwrap().appended < 12 * capacity {
            round += 1;
            for i in 0..keys {
                db.put(&i.to_le_bytes(), &value(i, round)).unwrap();
            }
        }
        persimmon::defer_durability_waits(false);
        db.durable()
            .wait()
            .expect("the log stayed healthy through every lap");
        let log = db.stats().log.unwrap();
        assert!(log.checkpoints >= 12, "{log:?}");
        for i in (0..keys).step_by(97) {
            assert_eq!(db.get(&i.to_le_bytes()).unwrap(), Some(value(i, round)));
        }
        drop(db);
        let db = Db::open(&path, opts()).unwrap();
        for i in 0..keys {
            assert_eq!(
                db.get(&i.to_le_bytes()).unwrap(),
                Some(value(i, round)),
                "key {i}"
            );
        }
    }
}
