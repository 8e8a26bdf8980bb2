//! Concurrency story of atomic batches and transactions: readers never see
//! part of a batch, and transactions keep an invariant across racing
//! threads.
//!
//! 1. One writer commits batches 1, 2, 3, … Batch `i` sets every key of
//!    `EVERY` to `i` (key `e` is deleted and put again inside the batch:
//!    the later op wins); odd `i` deletes `c` and `d` together, even `i`
//!    puts both to `i`. So the store after batch `i` is one *state* `i`,
//!    and every read names the states it is consistent with: `x = v` only
//!    state `v`; `c` or `d` absent only odd states. Reader threads read the
//!    keys one at a time (forward, reverse, through `iter()` and, on
//!    ordered pools, `range(..)`) and check that one nondecreasing sequence
//!    of states explains their reads in order — once a reader has seen
//!    batch `i`'s value of one key, every key of that batch it reads
//!    afterwards shows `i` or later (and a reader that saw `c` deleted by
//!    batch `i` cannot then see `d` from batch `i - 1`). Each read must also
//!    show at least the last batch committed before it started (a batch is
//!    visible when `write` returns) and at most the last one begun when it
//!    ended. The writer runs for a bounded time; the test asserts the
//!    readers read while batches committed and saw `c` both present and
//!    deleted. Runs on the PM point index (lock-free and Baseline locked
//!    reads), with the ordered index, and on the DRAM point index.
//! 2. Two threads move amounts between accounts in transactions (an
//!    account that reaches 0 is deleted; absent reads as 0) while readers
//!    sum every account in read-only transactions: every sum is the total.

mod common;

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::{Duration, Instant};

use persimmon::{Db, Mechanisms, Options, PointIndex, WriteBatch};

/// Keys every batch sets to its number.
const EVERY: [&[u8]; 8] = [b"a", b"b", b"e", b"k0", b"k1", b"k2", b"k3", b"k4"];
/// Keys odd batches delete and even batches put.
const TOGGLED: [&[u8]; 2] = [b"c", b"d"];
/// How long the writer commits batches, per pool.
const RUN: Duration = Duration::from_millis(500);

/// A value naming batch `i`; lengths vary up to 300 bytes (some copies are
/// non-temporal).
fn value(i: u64) -> Vec<u8> {
    let mut v = i.to_le_bytes().to_vec();
    v.resize(8 + (i as usize * 37) % 300, i as u8);
    v
}

fn batch_of(v: &[u8]) -> u64 {
    u64::from_le_bytes(v[..8].try_into().expect("a value starts with its batch"))
}

fn batch(i: u64) -> WriteBatch {
    let mut b = WriteBatch::new();
    b.delete(b"e");
    for k in EVERY {
        b.put(k, &value(i));
    }
    for k in TOGGLED {
        if i % 2 == 1 {
            b.delete(k);
        } else {
            b.put(k, &value(i));
        }
    }
    b
}

/// What one read showed: the state it names.
#[derive(Debug, Clone, Copy)]
enum Seen {
    /// A key's value from batch `i`: state `i` exactly.
    Batch(u64),
    /// A toggled key absent: some odd state.
    Odd,
}

/// The writer's progress: batches begun and committed.
#[derive(Default)]
struct Progress {
    begun: AtomicU64,
    committed: AtomicU64,
    stop: AtomicBool,
}

/// Checks that one nondecreasing sequence of states explains a reader's
/// reads, each within its real-time window.
#[derive(Default)]
struct Reader {
    /// The earliest state consistent with every read so far.
    state: u64,
    reads: u64,
    toggled_absent: u64,
    toggled_present: u64,
}

impl Reader {
    /// Accounts for one read of `key` (`None`: absent) made after
    /// `committed` batches had committed and before batch `begun + 1` began.
    fn saw(&mut self, key: &[u8], read: Option<&[u8]>, committed: u64, begun: u64) {
        let toggled = TOGGLED.contains(&key);
        let seen = match read {
            Some(v) => Seen::Batch(batch_of(v)),
            None if toggled => Seen::Odd,
            None => panic!("key {key:?}, set by every batch, read as absent"),
        };
        if toggled {
            match seen {
                Seen::Odd => self.toggled_absent += 1,
                Seen::Batch(_) => self.toggled_present += 1,
            }
        }
        let floor = self.state.max(committed);
        let state = match seen {
            Seen::Batch(i) => {
                assert!(
                    i >= floor,
                    "key {:?} shows batch {i} after this reader saw state {} (batch {committed} was committed before the read)",
                    String::from_utf8_lossy(key),
                    self.state
                );
                assert!(
                    !toggled || i % 2 == 0,
                    "toggled key present from odd batch {i}"
                );
                i
            }
            Seen::Odd => floor | 1,
        };
        assert!(
            state <= begun,
            "key {:?} read as {seen:?}: needs state {state}, but only {begun} batches had begun",
            String::from_utf8_lossy(key)
        );
        self.state = state;
        self.reads += 1;
    }
}

/// How a reader thread reads the keys.
#[derive(Clone, Copy, Debug)]
enum Way {
    Forward,
    Reverse,
    Iter,
    Range,
}

fn all_keys() -> Vec<&'static [u8]> {
    EVERY.iter().chain(&TOGGLED).copied().collect()
}

fn read_points(db: &Db, p: &Progress, r: &mut Reader, keys: &[&[u8]]) {
    for &k in keys {
        let committed = p.committed.load(Ordering::SeqCst);
        let v = db.get(k).unwrap();
        let begun = p.begun.load(Ordering::SeqCst);
        r.saw(k, v.as_deref(), committed, begun);
    }
}

/// One pass of `iter()` or `range(..)`: the values in the order returned
/// (each read when returned), and every key set by all batches present.
fn read_scan(db: &Db, p: &Progress, r: &mut Reader, way: Way) {
    let committed = p.committed.load(Ordering::SeqCst);
    let items: Vec<(Vec<u8>, Vec<u8>)> = match way {
        Way::Iter => db.iter().map(|x| x.unwrap()).collect(),
        _ => db.range::<[u8]>(..).unwrap().map(|x| x.unwrap()).collect(),
    };
    let begun = p.begun.load(Ordering::SeqCst);
    for (k, v) in &items {
        r.saw(k, Some(v), committed, begun);
    }
    for k in EVERY {
        assert!(
            items.iter().any(|(x, _)| x == k),
            "{way:?} missed key {k:?}, present throughout"
        );
    }
}

fn reader(db: &Db, p: &Progress, way: Way) -> Reader {
    let mut r = Reader::default();
    let forward = all_keys();
    let reverse: Vec<&[u8]> = forward.iter().rev().copied().collect();
    while !p.stop.load(Ordering::SeqCst) {
        match way {
            Way::Forward => read_points(db, p, &mut r, &forward),
            Way::Reverse => read_points(db, p, &mut r, &reverse),
            Way::Iter | Way::Range => read_scan(db, p, &mut r, way),
        }
    }
    r
}

fn writer(db: &Db, p: &Progress) {
    let end = Instant::now() + RUN;
    let mut i = 0;
    while Instant::now() < end {
        i += 1;
        p.begun.store(i, Ordering::SeqCst);
        db.write(&batch(i)).unwrap();
        p.committed.store(i, Ordering::SeqCst);
    }
    p.stop.store(true, Ordering::SeqCst);
}

fn readers_never_see_part_of_a_batch(options: Options, ways: &[Way]) {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("atomic.pool"), options).unwrap();
    db.write(&batch(0)).unwrap();
    let p = Progress::default();
    let (readers, batches) = std::thread::scope(|s| {
        let (db, p) = (&db, &p);
        let handles: Vec<_> = ways
            .iter()
            .map(|&way| (way, s.spawn(move || reader(db, p, way))))
            .collect();
        writer(db, p);
        let readers: Vec<(Way, Reader)> = handles
            .into_iter()
            .map(|(way, h)| (way, h.join().unwrap()))
            .collect();
        (readers, p.committed.load(Ordering::SeqCst))
    });
    assert!(batches >= 20, "only {batches} batches committed");
    for (way, r) in &readers {
        assert!(r.reads >= 20, "{way:?} reader read only {} times", r.reads);
        assert!(r.state > 0, "{way:?} reader never saw a batch commit");
        if matches!(way, Way::Forward | Way::Reverse) {
            assert!(
                r.toggled_absent > 0 && r.toggled_present > 0,
                "{way:?}: c and d seen absent {} and present {} times",
                r.toggled_absent,
                r.toggled_present
            );
        }
    }
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    assert_eq!(
        report.keys,
        (EVERY.len() + if batches % 2 == 0 { 2 } else { 0 }) as u64
    );
}

fn options() -> Options {
    Options {
        cleaner: true,
        ..common::small_options()
    }
}

/// Options of a pool with or without the ordered index, with its point
/// index in PM or DRAM, with the given mechanisms.
fn pool(ordered_index: bool, point_index: PointIndex, mechanisms: Mechanisms) -> Options {
    Options {
        ordered_index,
        point_index,
        mechanisms,
        ..options()
    }
}

#[test]
fn readers_never_see_part_of_a_batch_on_any_pool() {
    use Way::{Forward, Iter, Range, Reverse};
    let baseline = Options::baseline().mechanisms;
    let pools = [
        (
            false,
            PointIndex::Pm,
            Mechanisms::ALL,
            [Forward, Reverse, Iter],
        ),
        (false, PointIndex::Pm, baseline, [Forward, Reverse, Iter]),
        (
            true,
            PointIndex::Pm,
            Mechanisms::ALL,
            [Forward, Reverse, Range],
        ),
        (
            true,
            PointIndex::Dram,
            Mechanisms::ALL,
            [Forward, Iter, Range],
        ),
    ];
    for (ordered, point_index, mechanisms, ways) in pools {
        // Shown if the run fails.
        eprintln!("ordered index {ordered}, {point_index:?} point index, {mechanisms:?}");
        let options = pool(ordered, point_index, mechanisms);
        readers_never_see_part_of_a_batch(options, &ways);
    }
}

// ------------------------------------------------------------ transactions

const ACCOUNTS: u64 = 8;
const OPENING_BALANCE: u64 = 1000;

fn account(i: u64) -> Vec<u8> {
    format!("account-{i}").into_bytes()
}

/// A balance; an absent account holds 0.
fn balance(v: Option<Vec<u8>>) -> u64 {
    v.map_or(0, |v| {
        u64::from_le_bytes(v.try_into().expect("8-byte balance"))
    })
}

/// Moves a pseudo-random amount between two accounts, deleting one that
/// reaches 0. Returns whether anything moved.
fn transfer(db: &Db, seed: &mut u64) -> bool {
    *seed ^= *seed << 13;
    *seed ^= *seed >> 7;
    *seed ^= *seed << 17;
    let (from, to) = (*seed % ACCOUNTS, (*seed >> 8) % ACCOUNTS);
    let amount = (*seed >> 16) % 400;
    if from == to {
        return false;
    }
    db.transaction_with_attempts(100_000, |tx| {
        let have = balance(tx.get(&account(from))?);
        let take = amount.min(have);
        if take == 0 {
            return Ok(false);
        }
        let to_balance = balance(tx.get(&account(to))?);
        match have - take {
            0 => tx.delete(&account(from))?,
            left => tx.put(&account(from), &left.to_le_bytes())?,
        }
        tx.put(&account(to), &(to_balance + take).to_le_bytes())?;
        Ok(true)
    })
    .unwrap()
}

fn sum_in_a_transaction(db: &Db) -> u64 {
    db.transaction_with_attempts(100_000, |tx| {
        (0..ACCOUNTS).try_fold(0, |sum, i| Ok(sum + balance(tx.get(&account(i))?)))
    })
    .unwrap()
}

#[test]
fn racing_transfers_keep_the_total_for_transactional_readers() {
    let dir = common::pool_dir();
    let db = Db::open(dir.path().join("bank.pool"), options()).unwrap();
    for i in 0..ACCOUNTS {
        db.put(&account(i), &OPENING_BALANCE.to_le_bytes()).unwrap();
    }
    let total = ACCOUNTS * OPENING_BALANCE;
    let stop = AtomicBool::new(false);
    let (moved, sums) = std::thread::scope(|s| {
        let movers: Vec<_> = (1..=2u64)
            .map(|t| {
                let (db, stop) = (&db, &stop);
                s.spawn(move || {
                    let mut seed = 0x9E37_79B9_7F4A_7C15u64.wrapping_mul(t);
                    let mut moved = 0u64;
                    while !stop.load(Ordering::Relaxed) {
                        moved += transfer(db, &mut seed) as u64;
                    }
                    moved
                })
            })
            .collect();
        let summer = s.spawn(|| {
            let mut sums = 0u64;
            while !stop.load(Ordering::Relaxed) {
                assert_eq!(sum_in_a_transaction(&db), total, "a reader saw money move");
                sums += 1;
            }
            sums
        });
        std::thread::sleep(RUN);
        stop.store(true, Ordering::Relaxed);
        let moved: u64 = movers.into_iter().map(|h| h.join().unwrap()).sum();
        (moved, summer.join().unwrap())
    });
    assert!(moved >= 50, "only {moved} transfers committed");
    assert!(sums >= 20, "only {sums} sums read");
    assert_eq!(sum_in_a_transaction(&db), total);
    let report = db.check().unwrap();
    assert!(report.is_ok(), "{:?}", report.errors);
    drop(db);
    let db = Db::open(dir.path().join("bank.pool"), options()).unwrap();
    assert_eq!(sum_in_a_transaction(&db), total, "after reopen");
}
