//! Model-based story of batches, transactions and key expiry: a random
//! sequence of puts (with and without deadlines), deletes, atomic batches,
//! transactions, deadline changes, clock moves, active-expiry passes, reads,
//! iterations, ranges, batched reads (`get_many`) and reopens runs against both a `Db` on a manual clock
//! and a `BTreeMap` model, and the two must agree after every step.
//!
//! The model maps each key the engine still holds to its value and deadline.
//! A key whose deadline has passed reads as absent but stays in the model
//! (and in `len()` and `check().keys`) until something reclaims it: an
//! active-expiry pass (`expire_now`, which must report exactly how many it
//! reclaimed), a delete (plain, in a batch, or a put whose deadline has
//! already passed), a write over it, or the log cleaner (`Clean`, which is
//! followed by an active-expiry pass so the model knows again what is
//! held). The background expiry and cleaner are off (`active_expiry:
//! false`, `cleaner: false`), so nothing else reclaims.
//!
//! Keys come from a small space (the empty key and some long keys
//! included); a batch may touch a key several times (the later operation
//! wins); deadlines are past (including exactly now), near (a clock advance
//! may pass them) or far. A transaction reads some keys (it must see the
//! model, then its own writes), writes some and commits — single-threaded,
//! so it never conflicts — or its closure fails and nothing is written.
//! After every reopen and at the end the whole pool is compared: `iter()` as
//! a set, `range(..)` in key order on pools with the ordered index, `len()`,
//! `check()` with no errors and as many keys as the model, and a heap of
//! deadlines holding at least every key that has one. A batched read of
//! random keys (repeats and the empty list included) must agree with the
//! model and with `get` of each key; right after each reopen one reads the
//! whole key space before anything waits for the background work (on the
//! DRAM point index: before its rebuild is complete).
//!
//! The story runs on the PM point index, on the PM point index with the
//! ordered index, on the DRAM point index (which needs the ordered index),
//! and with the Baseline mechanisms (locked reads, persistent bucket locks).
//! 64 cases per mode by default; set `PROPTEST_CASES` to run more or fewer.

mod common;

use std::collections::BTreeMap;
use std::path::Path;

use common::{key_bytes, proptest_cases, value_bytes};
use persimmon::{
    Clock, Db, Error, ManualClock, Mechanisms, Options, PointIndex, Ttl, Update, WriteBatch,
};
use proptest::prelude::*;

/// A value and its deadline (ms of the manual clock).
type Entry = (Vec<u8>, Option<u64>);
type Model = BTreeMap<Vec<u8>, Entry>;
/// A write with its deadline resolved: the key and what it stores (`None`:
/// delete).
type Resolved = (Vec<u8>, Option<Entry>);
/// A transaction's read: key, what it returned, what the model says.
type TxRead = (Vec<u8>, Option<Vec<u8>>, Option<Vec<u8>>);

/// The manual clock starts here (November 2023).
const T0: u64 = 1_700_000_000_000;
const KEY_SPACE: u8 = 16;

/// A deadline relative to the clock when the operation runs.
#[derive(Debug, Clone, Copy)]
enum When {
    /// `now - back`: already passed (0 is exactly now, which has passed too).
    Past(u64),
    /// `now + ahead`, ahead in 1..300 ms: a clock advance may pass it.
    Near(u64),
    /// A day or more ahead.
    Far(u64),
}

impl When {
    fn at(self, now: u64) -> u64 {
        match self {
            When::Past(back) => now - back,
            When::Near(ahead) | When::Far(ahead) => now + ahead,
        }
    }
}

/// One write of a batch or a transaction.
#[derive(Debug, Clone)]
enum Write {
    Put {
        key: u8,
        len: usize,
        seed: u8,
    },
    PutDeadline {
        key: u8,
        len: usize,
        seed: u8,
        when: When,
    },
    Delete {
        key: u8,
    },
}

#[derive(Debug, Clone)]
enum Op {
    /// A single put, put with a deadline, or delete.
    Write(Write),
    Batch(Vec<Write>),
    /// Reads `reads`, writes `writes`, reads `reread` (its own writes
    /// included); with `fail` the closure then returns an error.
    Transaction {
        reads: Vec<u8>,
        writes: Vec<Write>,
        reread: Vec<u8>,
        fail: bool,
    },
    ExpireAt {
        key: u8,
        when: When,
    },
    Persist {
        key: u8,
    },
    Ttl {
        key: u8,
    },
    /// An `update` appending one byte (keeps a live deadline).
    Append {
        key: u8,
        byte: u8,
    },
    Advance(u64),
    ExpireNow,
    /// The log cleaner over every segment with dead space (it may reclaim
    /// expired keys it meets), then an active-expiry pass for the rest.
    Clean,
    Get {
        key: u8,
    },
    /// `get_many` of these keys (in this order, repeats allowed).
    GetMany(Vec<u8>),
    IterCompare,
    RangeCompare,
    Len,
    Reopen,
}

fn when_strategy() -> impl Strategy<Value = When> {
    prop_oneof![
        1 => Just(When::Past(0)),
        2 => (1u64..1_000_000).prop_map(When::Past),
        4 => (1u64..300).prop_map(When::Near),
        3 => (86_400_000u64..10 * 86_400_000).prop_map(When::Far),
    ]
}

fn len_strategy() -> impl Strategy<Value = usize> {
    // Up to 300 bytes: cached and non-temporal copies; a few kilobytes:
    // segments fill; over half a segment: a run of its own.
    prop_oneof![
        12 => 0usize..64,
        4 => 250usize..300,
        2 => 2000usize..5000,
        1 => 33_000usize..40_000,
    ]
}

fn write_strategy() -> impl Strategy<Value = Write> {
    let key = 0..KEY_SPACE;
    prop_oneof![
        4 => (key.clone(), len_strategy(), any::<u8>())
            .prop_map(|(key, len, seed)| Write::Put { key, len, seed }),
        3 => (key.clone(), len_strategy(), any::<u8>(), when_strategy())
            .prop_map(|(key, len, seed, when)| Write::PutDeadline { key, len, seed, when }),
        3 => key.prop_map(|key| Write::Delete { key }),
    ]
}

fn op_strategy() -> impl Strategy<Value = Op> {
    let key = || 0..KEY_SPACE;
    let keys = || prop::collection::vec(0..KEY_SPACE, 0..4);
    prop_oneof![
        14 => write_strategy().prop_map(Op::Write),
        5 => prop::collection::vec(write_strategy(), 0..12).prop_map(Op::Batch),
        4 => (keys(), prop::collection::vec(write_strategy(), 0..6), keys(), prop::bool::weighted(0.2))
            .prop_map(|(reads, writes, reread, fail)| Op::Transaction { reads, writes, reread, fail }),
        3 => (key(), when_strategy()).prop_map(|(key, when)| Op::ExpireAt { key, when }),
        2 => key().prop_map(|key| Op::Persist { key }),
        2 => key().prop_map(|key| Op::Ttl { key }),
        2 => (key(), any::<u8>()).prop_map(|(key, byte)| Op::Append { key, byte }),
        4 => prop_oneof![3 => 0u64..200, 1 => 200u64..2_000_000].prop_map(Op::Advance),
        2 => Just(Op::ExpireNow),
        1 => Just(Op::Clean),
        4 => key().prop_map(|key| Op::Get { key }),
        3 => prop::collection::vec(0..KEY_SPACE, 0..40).prop_map(Op::GetMany),
        1 => Just(Op::IterCompare),
        1 => Just(Op::RangeCompare),
        1 => Just(Op::Len),
        1 => Just(Op::Reopen),
    ]
}

/// A pool configuration the story runs on.
#[derive(Clone, Copy)]
struct Mode {
    point_index: PointIndex,
    ordered_index: bool,
    mechanisms: Mechanisms,
}

const PM: Mode = Mode {
    point_index: PointIndex::Pm,
    ordered_index: false,
    mechanisms: Mechanisms::ALL,
};

fn open(path: &Path, mode: Mode, clock: &ManualClock) -> Db {
    let options = Options {
        point_index: mode.point_index,
        ordered_index: mode.ordered_index,
        mechanisms: mode.mechanisms,
        clock: Clock::Manual(clock.clone()),
        active_expiry: false,
        cleaner: false,
        // One lane of small segments, so segments fill and the cleaner
        // has sealed ones to clean.
        lanes: 1,
        segment_bytes: 64 << 10,
        ..common::small_options()
    };
    Db::open(path, options).expect("open pool")
}

fn fail(when: &str, what: &str, e: Error) -> TestCaseError {
    TestCaseError::fail(format!("{when}: {what} failed: {e}"))
}

/// The model: what the engine holds and what reads see.
struct Story {
    model: Model,
    clock: ManualClock,
}

impl Story {
    fn now(&self) -> u64 {
        self.clock.now_ms()
    }

    fn live(&self, d: Option<u64>) -> bool {
        d.is_none_or(|d| d > self.now())
    }

    /// What a read of `k` returns.
    fn visible(&self, k: &[u8]) -> Option<Entry> {
        self.model.get(k).filter(|(_, d)| self.live(*d)).cloned()
    }

    fn visible_map(&self) -> BTreeMap<Vec<u8>, Vec<u8>> {
        self.model
            .iter()
            .filter(|(_, (_, d))| self.live(*d))
            .map(|(k, (v, _))| (k.clone(), v.clone()))
            .collect()
    }

    /// A put with `deadline`: one already passed deletes the key.
    fn put(&mut self, k: Vec<u8>, v: Vec<u8>, deadline: Option<u64>) {
        if self.live(deadline) {
            self.model.insert(k, (v, deadline));
        } else {
            self.model.remove(&k);
        }
    }

    /// A write of a batch or transaction: the key and what it stores
    /// (`None`: delete), with the deadline resolved against the clock now.
    fn resolve(&self, w: &Write) -> Resolved {
        match *w {
            Write::Put { key, len, seed } => (key_bytes(key), Some((value_bytes(len, seed), None))),
            Write::PutDeadline {
                key,
                len,
                seed,
                when,
            } => (
                key_bytes(key),
                Some((value_bytes(len, seed), Some(when.at(self.now())))),
            ),
            Write::Delete { key } => (key_bytes(key), None),
        }
    }

    fn apply(&mut self, k: Vec<u8>, op: Option<Entry>) {
        match op {
            Some((v, d)) => self.put(k, v, d),
            None => {
                self.model.remove(&k);
            }
        }
    }

    /// Reclaims every key whose deadline has passed; returns how many.
    fn expire(&mut self) -> u64 {
        let now = self.now();
        let before = self.model.len();
        self.model.retain(|_, (_, d)| d.is_none_or(|d| d > now));
        (before - self.model.len()) as u64
    }

    fn with_deadline(&self) -> u64 {
        self.model.values().filter(|(_, d)| d.is_some()).count() as u64
    }
}

/// Full comparison: iteration (each key once), ordered range, length,
/// `check()`, and the heap of deadlines.
fn compare_all(db: &Db, story: &Story, when: &str) -> Result<(), TestCaseError> {
    compare_iter(db, story, when)?;
    if db.has_ordered_index() {
        compare_range(db, story, when)?;
    }
    prop_assert_eq!(db.len(), story.model.len() as u64, "{}: len()", when);
    let report = db.check().map_err(|e| fail(when, "check()", e))?;
    prop_assert!(
        report.is_ok(),
        "{}: check() errors {:?}",
        when,
        report.errors
    );
    prop_assert_eq!(
        report.keys,
        story.model.len() as u64,
        "{}: check().keys",
        when
    );
    let pending = db.stats().deadlines_pending;
    prop_assert!(
        pending >= story.with_deadline(),
        "{}: {} heap entries for {} keys with a deadline",
        when,
        pending,
        story.with_deadline()
    );
    Ok(())
}

fn compare_iter(db: &Db, story: &Story, when: &str) -> Result<(), TestCaseError> {
    let mut seen = BTreeMap::new();
    for item in db.iter() {
        let (k, v) = item.map_err(|e| fail(when, "iter", e))?;
        prop_assert!(
            seen.insert(k.clone(), v).is_none(),
            "{}: iter returned {:?} twice",
            when,
            k
        );
    }
    prop_assert_eq!(seen, story.visible_map(), "{}: iter() differs", when);
    Ok(())
}

fn compare_range(db: &Db, story: &Story, when: &str) -> Result<(), TestCaseError> {
    let got: Vec<(Vec<u8>, Vec<u8>)> = db
        .range::<[u8]>(..)
        .map_err(|e| fail(when, "range", e))?
        .collect::<persimmon::Result<_>>()
        .map_err(|e| fail(when, "range item", e))?;
    let want: Vec<(Vec<u8>, Vec<u8>)> = story.visible_map().into_iter().collect();
    prop_assert_eq!(got, want, "{}: range(..) differs", when);
    Ok(())
}

/// Checks one key's value and time to live against the model.
fn compare_key(db: &Db, story: &Story, k: &[u8], when: &str) -> Result<(), TestCaseError> {
    let want = story.visible(k);
    let got = db.get(k).map_err(|e| fail(when, "get", e))?;
    prop_assert_eq!(
        &got,
        &want.as_ref().map(|(v, _)| v.clone()),
        "{}: get",
        when
    );
    let contains = db.contains(k).map_err(|e| fail(when, "contains", e))?;
    prop_assert_eq!(contains, want.is_some(), "{}: contains", when);
    let ttl = db.ttl(k).map_err(|e| fail(when, "ttl", e))?;
    let want_ttl = match want {
        None => Ttl::Missing,
        Some((_, None)) => Ttl::Persistent,
        Some((_, Some(at_ms))) => Ttl::Expires {
            at_ms,
            remaining_ms: at_ms - story.now(),
        },
    };
    prop_assert_eq!(ttl, want_ttl, "{}: ttl", when);
    Ok(())
}

/// Checks a batched read of `keys` against the model and against `get`:
/// `f` is called once per key, in order.
fn compare_get_many(db: &Db, story: &Story, keys: &[u8], when: &str) -> Result<(), TestCaseError> {
    let keys: Vec<Vec<u8>> = keys.iter().map(|&k| key_bytes(k)).collect();
    let refs: Vec<&[u8]> = keys.iter().map(Vec::as_slice).collect();
    let mut got = Vec::new();
    db.get_many_with(&refs, |i, v| got.push((i, v.map(<[u8]>::to_vec))))
        .map_err(|e| fail(when, "get_many_with", e))?;
    let copied = db.get_many(&refs).map_err(|e| fail(when, "get_many", e))?;
    prop_assert_eq!(got.len(), keys.len(), "{}: calls of f", when);
    for (j, (k, (i, v))) in keys.iter().zip(got).enumerate() {
        prop_assert_eq!(i, j, "{}: f called out of order", when);
        let want = story.visible(k).map(|(v, _)| v);
        prop_assert_eq!(&v, &want, "{}: get_many of key {:?} (#{})", when, k, j);
        prop_assert_eq!(&copied[j], &want, "{}: get_many (copied), #{}", when, j);
        let single = db.get(k).map_err(|e| fail(when, "get", e))?;
        prop_assert_eq!(&single, &want, "{}: get of key {:?}", when, k);
    }
    Ok(())
}

/// A single put, put with a deadline, or delete.
fn run_write(db: &Db, story: &mut Story, w: &Write, when: &str) -> Result<(), TestCaseError> {
    let (k, op) = story.resolve(w);
    match &op {
        Some((v, None)) => db.put(&k, v).map_err(|e| fail(when, "put", e))?,
        Some((v, Some(at))) => db
            .put_with_deadline(&k, v, *at)
            .map_err(|e| fail(when, "put_with_deadline", e))?,
        None => {
            let existed = db.delete(&k).map_err(|e| fail(when, "delete", e))?;
            prop_assert_eq!(existed, story.visible(&k).is_some(), "{}: delete", when);
        }
    }
    story.apply(k.clone(), op);
    compare_key(db, story, &k, when)
}

fn run_batch(
    db: &Db,
    story: &mut Story,
    writes: &[Write],
    when: &str,
) -> Result<(), TestCaseError> {
    let mut batch = WriteBatch::new();
    let resolved: Vec<_> = writes.iter().map(|w| story.resolve(w)).collect();
    for (k, op) in &resolved {
        match op {
            Some((v, None)) => batch.put(k, v),
            Some((v, Some(d))) => batch.put_with_deadline(k, v, *d),
            None => batch.delete(k),
        };
    }
    db.write(&batch)
        .map_err(|e| fail(when, "write(batch)", e))?;
    for (k, op) in &resolved {
        story.apply(k.clone(), op.clone());
    }
    for (k, _) in &resolved {
        compare_key(db, story, k, when)?;
    }
    Ok(())
}

/// Runs a transaction: reads (checked against the model), writes, rereads
/// (its own writes seen), then commits or fails on purpose.
fn run_transaction(
    db: &Db,
    story: &mut Story,
    reads: &[u8],
    writes: &[Write],
    reread: &[u8],
    fail_it: bool,
    when: &str,
) -> Result<(), TestCaseError> {
    let resolved: Vec<_> = writes.iter().map(|w| story.resolve(w)).collect();
    // What the transaction sees after its writes: the model with them.
    let mut after = Story {
        model: story.model.clone(),
        clock: story.clock.clone(),
    };
    for (k, op) in &resolved {
        after.apply(k.clone(), op.clone());
    }
    let mut seen: Vec<TxRead> = Vec::new();
    let result = db.transaction(|tx| {
        seen.clear();
        for &k in reads {
            let k = key_bytes(k);
            let got = tx.get(&k)?;
            seen.push((k.clone(), got, story.visible(&k).map(|(v, _)| v)));
        }
        for (k, op) in &resolved {
            match op {
                Some((v, None)) => tx.put(k, v)?,
                Some((v, Some(d))) => tx.put_with_deadline(k, v, *d)?,
                None => tx.delete(k)?,
            }
        }
        for &k in reread {
            let k = key_bytes(k);
            let got = tx.get(&k)?;
            seen.push((k.clone(), got, after.visible(&k).map(|(v, _)| v)));
        }
        if fail_it {
            return Err(Error::InvalidOptions("the closure fails on purpose".into()));
        }
        Ok(())
    });
    for (k, got, want) in &seen {
        prop_assert_eq!(got, want, "{}: tx.get({:?})", when, k);
    }
    match (result, fail_it) {
        (Ok(()), false) => story.model = after.model,
        (Err(Error::InvalidOptions(_)), true) => {}
        (r, _) => prop_assert!(false, "{}: transaction returned {:?}", when, r),
    }
    for (k, _) in &resolved {
        compare_key(db, story, k, when)?;
    }
    Ok(())
}

fn run(ops: Vec<Op>, mode: Mode) -> Result<(), TestCaseError> {
    let dir = common::pool_dir();
    let path = dir.path().join("model.pool");
    let clock = ManualClock::new(T0);
    let mut db = Some(open(&path, mode, &clock));
    let mut story = Story {
        model: Model::new(),
        clock: clock.clone(),
    };
    for (step, op) in ops.into_iter().enumerate() {
        let d = db.as_ref().unwrap();
        let when = format!("step {step} at {} ({op:?})", story.now() - T0);
        match op {
            Op::Write(w) => run_write(d, &mut story, &w, &when)?,
            Op::Batch(writes) => run_batch(d, &mut story, &writes, &when)?,
            Op::Transaction {
                reads,
                writes,
                reread,
                fail,
            } => run_transaction(d, &mut story, &reads, &writes, &reread, fail, &when)?,
            Op::ExpireAt { key, when: w } => {
                let (k, at) = (key_bytes(key), w.at(story.now()));
                let present = d
                    .expire_at(&k, at)
                    .map_err(|e| fail(&when, "expire_at", e))?;
                let want = story.visible(&k);
                prop_assert_eq!(present, want.is_some(), "{}: expire_at", when);
                if let Some((v, _)) = want {
                    story.put(k.clone(), v, Some(at));
                }
                compare_key(d, &story, &k, &when)?;
            }
            Op::Persist { key } => {
                let k = key_bytes(key);
                let had = d.persist(&k).map_err(|e| fail(&when, "persist", e))?;
                let want = story.visible(&k).filter(|(_, dl)| dl.is_some());
                prop_assert_eq!(had, want.is_some(), "{}: persist", when);
                if let Some((v, _)) = want {
                    story.put(k.clone(), v, None);
                }
                compare_key(d, &story, &k, &when)?;
            }
            Op::Ttl { key } | Op::Get { key } => compare_key(d, &story, &key_bytes(key), &when)?,
            Op::GetMany(keys) => compare_get_many(d, &story, &keys, &when)?,
            Op::Append { key, byte } => {
                let k = key_bytes(key);
                let saw = d
                    .update(&k, |cur| {
                        let mut v = cur.map(<[u8]>::to_vec).unwrap_or_default();
                        v.push(byte);
                        (Update::Put(v), cur.map(<[u8]>::to_vec))
                    })
                    .map_err(|e| fail(&when, "update", e))?;
                let want = story.visible(&k);
                prop_assert_eq!(&saw, &want.as_ref().map(|(v, _)| v.clone()), "{}", when);
                let (mut v, deadline) = want.unwrap_or_default();
                v.push(byte);
                story.put(k.clone(), v, deadline);
                compare_key(d, &story, &k, &when)?;
            }
            Op::Advance(ms) => clock.advance(ms),
            Op::ExpireNow => {
                let n = d.expire_now().map_err(|e| fail(&when, "expire_now", e))?;
                prop_assert_eq!(n, story.expire(), "{}: keys expire_now reclaimed", when);
                prop_assert_eq!(d.len(), story.model.len() as u64, "{}: len", when);
            }
            Op::Clean => {
                d.clean_now().map_err(|e| fail(&when, "clean_now", e))?;
                let n = d.expire_now().map_err(|e| fail(&when, "expire_now", e))?;
                let due = story.expire();
                prop_assert!(n <= due, "{}: {} reclaimed, {} were due", when, n, due);
                compare_all(d, &story, &when)?;
            }
            Op::IterCompare => compare_iter(d, &story, &when)?,
            Op::RangeCompare if d.has_ordered_index() => compare_range(d, &story, &when)?,
            Op::RangeCompare => {}
            Op::Len => {
                prop_assert_eq!(d.len(), story.model.len() as u64, "{}: len", when);
            }
            Op::Reopen => {
                drop(db.take());
                let d = open(&path, mode, &clock);
                // Before anything waits for the work after open.
                let every: Vec<u8> = (0..KEY_SPACE).rev().collect();
                compare_get_many(&d, &story, &every, &when)?;
                compare_all(&d, &story, &when)?;
                db = Some(d);
            }
        }
    }
    let d = db.take().unwrap();
    compare_all(&d, &story, "end")?;
    for k in 0..KEY_SPACE {
        compare_key(&d, &story, &key_bytes(k), "end")?;
    }
    let every: Vec<u8> = (0..KEY_SPACE).chain(0..KEY_SPACE).collect();
    compare_get_many(&d, &story, &every, "end")?;
    let n = d.expire_now().map_err(|e| fail("end", "expire_now", e))?;
    prop_assert_eq!(n, story.expire(), "end: keys expire_now reclaimed");
    compare_all(&d, &story, "end, after expire_now")?;
    drop(d);
    let d = open(&path, mode, &clock);
    compare_all(&d, &story, "final reopen")?;
    Ok(())
}

fn ops() -> impl Strategy<Value = Vec<Op>> {
    prop::collection::vec(op_strategy(), 1..120)
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(proptest_cases(64)))]

    #[test]
    fn pm_point_index_agrees_with_the_expiry_model(ops in ops()) {
        run(ops, PM)?;
    }

    #[test]
    fn ordered_index_ranges_agree_with_the_expiry_model(ops in ops()) {
        run(ops, Mode { ordered_index: true, ..PM })?;
    }

    #[test]
    fn dram_point_index_agrees_with_the_expiry_model(ops in ops()) {
        run(ops, Mode { point_index: PointIndex::Dram, ordered_index: true, ..PM })?;
    }

    #[test]
    fn baseline_locked_reads_agree_with_the_expiry_model(ops in ops()) {
        run(ops, Mode { mechanisms: Options::baseline().mechanisms, ..PM })?;
    }
}
