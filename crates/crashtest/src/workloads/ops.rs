//! Operations: what a workload does to the engine, each one announced to
//! the simulator and checked against the expectation as it returns.
//!
//! How the oracle is told what a crash may leave: an operation is announced
//! (`announced`: `Sim::begin_group`, with the keys it writes and the state
//! it leaves each in) before it starts, which puts its keys *in flight*:
//! from then on a crash image may hold their old or their new states, and
//! (the joint rule) all old or all new. It is acknowledged (`Sim::end_group`)
//! after it returns: from then on every image must hold the new states.
//! Both happen on the thread that runs the operation; the end also runs the
//! model's persistence assertions (none of the operation's stores may still
//! be pending, except the ones the protocol leaves unflushed, `Benign`). An
//! operation that fails is ended without acknowledgement (its keys stay in
//! flight) and breaks the workload. A state carries the key's deadline:
//! `put_with_deadline` leaves one (a deadline already passed: the key
//! absent), `persist` takes it away, `expire_at` sets it on a present key,
//! an `update` keeps it; `expire_now` leaves the expired keys absent (they
//! read as absent before it too).
//!
//! Transactions (`Op::Txn`, the `txn` and `batch` workloads): a transaction
//! (`Txn`) reads some keys and writes others: puts of values derived from
//! what it read (`derive`), deletes, a deadline on some. The racing put
//! writes the first key read, which the transaction never writes (two
//! writers of one key in flight would need the expectation to know their
//! order). Every run is a function of its seed: the racing put runs either
//! inside the first attempt's closure, to completion, after the reads (so
//! that attempt must conflict and the second commit on the new value), or
//! is started while the committing thread is held at its commit fence
//! number `n` (`Gate`), when it holds the locks of every key it read, so
//! the put waits for it whenever it starts (the run fails if the put
//! finished while the commit was held); the thread is let go 20 ms later.
//! The order of the two is therefore fixed, and with it every value.
//!
//! Invariants the operations check as they return:
//! - `get` returns the acknowledged value and deadline (`ttl`), absent
//!   once the deadline passed;
//! - `expire_at` reports the key present, and `persist` a deadline
//!   removed, exactly when the expectation says so; `expire_now` deletes
//!   exactly the acknowledged keys whose deadline passed and whose expired
//!   record the expectation still holds (the workload keeps that exact
//!   where a crash or the cleaner decides, `expiry.rs`);
//! - a transaction (`Txn`) ran its closure as often as its race makes
//!   it, and committed having read what the serial order says;
//! - `delete` reports `existed` exactly when the expectation holds the key;
//! - `update`'s closure sees the acknowledged value, and the key is left
//!   with what the `UpdateMode` makes of it;
//! - `clean_now` finds at least one segment to clean;
//! - `write_range` and `append` return the value's new length (the key
//!   keeps its deadline; a gap is zero-filled);
//! - `Scan` (ordered index): the listing is strictly ascending and holds
//!   every present key that is not in flight and no absent one; with no key
//!   in flight it reads the same backwards and `first`/`last` are its ends.

use std::collections::BTreeSet;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use persimmon::{Db, Transaction, Update, WriteBatch};

use crate::oracle::{observe, show, show_key, show_state, Held, Key, State, Val};
use crate::sim::{lock, Gate, Sim};

/// What `Op::Update` does with the value it finds.
#[derive(Clone, Copy, Debug)]
pub enum UpdateMode {
    /// Appends this byte (to the empty value when the key is absent).
    Append(u8),
    Delete,
    Keep,
}

impl UpdateMode {
    /// The value the update leaves when it finds `before`.
    fn after(self, before: &Option<Val>) -> Option<Val> {
        match self {
            UpdateMode::Append(b) => {
                let mut v = before.clone().unwrap_or_default();
                v.push(b);
                Some(v)
            }
            UpdateMode::Delete => None,
            UpdateMode::Keep => before.clone(),
        }
    }

    /// The closure's decision that leaves `after`.
    fn decision(self, after: &Option<Val>) -> Update {
        match self {
            UpdateMode::Keep => Update::Keep,
            UpdateMode::Delete => Update::Delete,
            UpdateMode::Append(_) => Update::Put(after.clone().unwrap_or_default()),
        }
    }
}

#[derive(Clone, Debug)]
pub enum Op {
    Put(Key, Val),
    Delete(Key),
    Update(Key, UpdateMode),
    Get(Key),
    /// Runs the log cleaner once; changes no key.
    CleanNow,
    /// Ordered index: `range_keys(..)` both ways, `first` and `last` must
    /// agree with the expectation (keys in flight may or may not appear).
    Scan,
    /// `Db::write` of a batch of these writes, all or nothing.
    Batch(Vec<Write>),
    /// `Db::write_grouped` of these writes: each key old or new on its
    /// own until it returns, all new after.
    Grouped(Vec<Write>),
    /// `put_with_deadline(key, value, deadline)`.
    PutExpiring(Key, Val, u64),
    /// `expire_at(key, deadline)`.
    ExpireAt(Key, u64),
    /// `persist(key)`: the key's deadline removed.
    Persist(Key),
    /// `expire_now()`: one pass of active expiry; changes what the keys
    /// whose deadline passed hold on media, not what they read as.
    ExpireNow,
    /// A transaction, and the put that races it (`Txn`).
    Txn(Txn),
    /// `write_range(key, at, bytes)` (on the SSD tier: a patch on PM).
    WriteRange(Key, u64, Val),
    /// `append(key, bytes)`.
    Append(Key, Val),
    /// `clean_tier_now()`: merges queued patches and rewrites the live
    /// extents of data files with dead bytes; changes no key.
    CleanTier,
}

/// One write of a batch.
#[derive(Clone, Debug)]
pub enum Write {
    Put(Key, Val),
    /// A put with a deadline (ms of the workload's clock).
    PutExpiring(Key, Val, u64),
    Delete(Key),
}

impl Write {
    pub fn key(&self) -> &[u8] {
        match self {
            Write::Put(k, _) | Write::PutExpiring(k, _, _) | Write::Delete(k) => k,
        }
    }

    /// The state it leaves its key in at `now` (a deadline already passed
    /// deletes the key).
    fn state(&self, now: u64) -> State {
        match self {
            Write::Put(_, v) => Some(Held::plain(v.clone())),
            Write::PutExpiring(_, v, d) => (*d > now).then(|| Held {
                value: v.clone(),
                deadline: Some(*d),
            }),
            Write::Delete(_) => None,
        }
    }
}

/// Runs one operation on the calling thread, announcing it to `sim`.
pub fn exec(sim: &Sim, db: &Db, op: &Op) -> Result<(), String> {
    match op {
        Op::Put(k, v) => put(sim, db, k, v),
        Op::Delete(k) => delete(sim, db, k),
        Op::Update(k, mode) => update(sim, db, k, *mode),
        Op::Get(k) => get(sim, db, k),
        Op::CleanNow => clean_now(sim, db),
        Op::Scan => scan(sim, db),
        Op::Batch(writes) => batch(sim, db, writes),
        Op::Grouped(writes) => grouped(sim, db, writes),
        Op::PutExpiring(k, v, d) => put_expiring(sim, db, k, v, *d),
        Op::ExpireAt(k, d) => expire_at(sim, db, k, *d),
        Op::Persist(k) => persist(sim, db, k),
        Op::ExpireNow => expire_now(sim, db),
        Op::Txn(t) => exec_txn(sim, db, t),
        Op::WriteRange(k, at, bytes) => write_range(sim, db, k, Some(*at), bytes),
        Op::Append(k, bytes) => write_range(sim, db, k, None, bytes),
        Op::CleanTier => clean_tier(sim, db),
    }
}

/// Runs `call`, the engine call of operation `kind` that leaves `writes`
/// together, announced to `sim` (`Sim::begin_group`): acknowledged when it
/// returns `Ok`; otherwise its keys stay in flight and the message names
/// the operation and its first key.
pub(super) fn announced<R>(
    sim: &Sim,
    kind: &'static str,
    writes: &[(Key, State)],
    call: impl FnOnce() -> persimmon::Result<R>,
) -> Result<R, String> {
    let id = sim.begin_group(kind, writes);
    match call() {
        Ok(r) => {
            sim.end_group(Some(id));
            Ok(r)
        }
        Err(e) => {
            sim.end_group(None);
            let first = writes.first().map(|w| show_key(&w.0)).unwrap_or_default();
            Err(format!("{kind} ({} keys, {first}..): {e}", writes.len()))
        }
    }
}

fn put(sim: &Sim, db: &Db, k: &[u8], v: &Val) -> Result<(), String> {
    let after = Some(Held::plain(v.clone()));
    announced(sim, "put", &[(k.to_vec(), after)], || db.put(k, v))
}

fn delete(sim: &Sim, db: &Db, k: &[u8]) -> Result<(), String> {
    let had = lock(&sim.expect).current(k).is_some();
    let existed = announced(sim, "delete", &[(k.to_vec(), None)], || db.delete(k))?;
    if existed != had {
        return Err(format!(
            "delete {} returned existed={existed}, expected {had}",
            show_key(k)
        ));
    }
    Ok(())
}

fn update(sim: &Sim, db: &Db, k: &[u8], mode: UpdateMode) -> Result<(), String> {
    let (stored, live) = live_state(sim, k);
    let before = live.as_ref().map(|h| h.value.clone());
    let after_value = mode.after(&before);
    // A read-modify-write keeps the key's deadline; `Keep` changes nothing
    // (an expired record stays where it is).
    let after = match mode {
        UpdateMode::Keep => stored,
        _ => after_value.clone().map(|value| Held {
            value,
            deadline: live.and_then(|h| h.deadline),
        }),
    };
    let saw = announced(sim, "update", &[(k.to_vec(), after)], || {
        db.update(k, |cur| {
            (mode.decision(&after_value), cur.map(|c| c.to_vec()))
        })
    })?;
    if saw != before {
        return Err(unexpected("update", k, "saw", &saw, &before));
    }
    Ok(())
}

/// The acknowledged state of `k` as stored, and as a read sees it now.
fn live_state(sim: &Sim, k: &[u8]) -> (State, State) {
    let e = lock(&sim.expect);
    let stored = e.stored(k);
    let live = e.live(&stored);
    (stored, live)
}

fn get(sim: &Sim, db: &Db, k: &[u8]) -> Result<(), String> {
    let (_, want) = live_state(sim, k);
    sim.begin("get", None);
    let got = observe(db, k);
    sim.end(None);
    let got = got?;
    if got != want {
        return Err(format!(
            "get {} returned {}, expected {}",
            show_key(k),
            show_state(&got),
            show_state(&want)
        ));
    }
    Ok(())
}

/// The message for operation `what` on `k`, which `did` (saw, returned)
/// `got` where the expectation says `want`.
fn unexpected(what: &str, k: &[u8], did: &str, got: &Option<Val>, want: &Option<Val>) -> String {
    format!(
        "{what} {} {did} {}, expected {}",
        show_key(k),
        show(got),
        show(want)
    )
}

/// `Op::Batch`: the batch's keys in flight as one group, each with the
/// state the last write to it leaves.
fn batch(sim: &Sim, db: &Db, writes: &[Write]) -> Result<(), String> {
    let (b, after) = batch_of(sim, writes);
    announced(sim, "batch", &after, || db.write(&b))
}

/// `Op::Grouped`: each key in flight as a group of its own (so the joint
/// rule asks nothing across keys: a grouped write is not atomic), with the
/// state the last write to it leaves; all acknowledged once it returns.
fn grouped(sim: &Sim, db: &Db, writes: &[Write]) -> Result<(), String> {
    let (b, after) = batch_of(sim, writes);
    let ids: Vec<u64> = {
        let mut e = lock(&sim.expect);
        after
            .iter()
            .map(|w| e.begin_group(std::slice::from_ref(w)))
            .collect()
    };
    sim.begin("grouped", None);
    let result = db.write_grouped(&b);
    sim.end(None);
    match result {
        Ok(()) => {
            let mut e = lock(&sim.expect);
            ids.into_iter().for_each(|id| e.ack_group(id));
            Ok(())
        }
        Err(e) => {
            let first = after.first().map(|w| show_key(&w.0)).unwrap_or_default();
            Err(format!("grouped ({} keys, {first}..): {e}", after.len()))
        }
    }
}

/// The engine batch of `writes`, and each key with the state the last
/// write to it leaves.
fn batch_of(sim: &Sim, writes: &[Write]) -> (WriteBatch, Vec<(Key, State)>) {
    let now = lock(&sim.expect).now_ms;
    let mut b = WriteBatch::new();
    let mut after: Vec<(Key, State)> = Vec::new();
    for w in writes {
        match w {
            Write::Put(k, v) => b.put(k, v),
            Write::PutExpiring(k, v, d) => b.put_with_deadline(k, v, *d),
            Write::Delete(k) => b.delete(k),
        };
        let s = w.state(now);
        match after.iter_mut().find(|a| a.0 == w.key()) {
            Some(a) => a.1 = s,
            None => after.push((w.key().to_vec(), s)),
        }
    }
    (b, after)
}

fn put_expiring(sim: &Sim, db: &Db, k: &[u8], v: &Val, d: u64) -> Result<(), String> {
    let now = lock(&sim.expect).now_ms;
    let after = Write::PutExpiring(k.to_vec(), v.clone(), d).state(now);
    announced(sim, "put_expiring", &[(k.to_vec(), after)], || {
        db.put_with_deadline(k, v, d)
    })
}

/// `expire_at`: a present key keeps its value with deadline `d` (or goes,
/// when `d` has passed); an absent or expired one is left as it is. Returns
/// whether the key was present.
fn expire_at(sim: &Sim, db: &Db, k: &[u8], d: u64) -> Result<(), String> {
    let now = lock(&sim.expect).now_ms;
    let (stored, live) = live_state(sim, k);
    let after = match &live {
        Some(h) => Write::PutExpiring(k.to_vec(), h.value.clone(), d).state(now),
        None => stored,
    };
    let was = announced(sim, "expire_at", &[(k.to_vec(), after)], || {
        db.expire_at(k, d)
    })?;
    returned("expire_at", k, was, live.is_some())
}

/// `persist`: a present key with a deadline keeps its value without one.
/// Returns whether there was a deadline to remove.
fn persist(sim: &Sim, db: &Db, k: &[u8]) -> Result<(), String> {
    let (stored, live) = live_state(sim, k);
    let had = live.as_ref().is_some_and(|h| h.deadline.is_some());
    let after = match live {
        Some(h) if had => Some(Held::plain(h.value)),
        _ => stored,
    };
    let was = announced(sim, "persist", &[(k.to_vec(), after)], || db.persist(k))?;
    returned("persist", k, was, had)
}

/// Checks the flag operation `what` on `k` returned.
fn returned(what: &str, k: &[u8], got: bool, want: bool) -> Result<(), String> {
    if got != want {
        return Err(format!(
            "{what} {} returned {got}, expected {want}",
            show_key(k)
        ));
    }
    Ok(())
}

/// `expire_now`: every key whose deadline passed and whose record is still
/// there (no write took it away since) is deleted: announced as a group
/// (they read as absent before and after), acknowledged absent, and the
/// pass must report exactly that many.
fn expire_now(sim: &Sim, db: &Db) -> Result<(), String> {
    let due: Vec<(Key, State)> = {
        let e = lock(&sim.expect);
        e.acked
            .iter()
            .filter(|(_, s)| s.is_some() && e.live(s).is_none())
            .map(|(k, _)| (k.clone(), None))
            .collect()
    };
    let n = announced(sim, "expire_now", &due, || db.expire_now())?;
    if n != due.len() as u64 {
        return Err(format!(
            "expire_now deleted {n} keys, {} had passed their deadline",
            due.len()
        ));
    }
    Ok(())
}

/// `write_range` at `at` (`None`: `append`): the key keeps its deadline
/// and holds its value with `bytes` written there (a gap zero-filled; an
/// absent key starts empty); the new length returned must be the value's.
fn write_range(sim: &Sim, db: &Db, k: &[u8], at: Option<u64>, bytes: &[u8]) -> Result<(), String> {
    let (_, live) = live_state(sim, k);
    let mut value = live.as_ref().map(|h| h.value.clone()).unwrap_or_default();
    let from = at.map_or(value.len(), |a| a as usize);
    if value.len() < from + bytes.len() {
        value.resize(from + bytes.len(), 0);
    }
    value[from..from + bytes.len()].copy_from_slice(bytes);
    let len = value.len() as u64;
    let after = Some(Held {
        value,
        deadline: live.and_then(|h| h.deadline),
    });
    let kind = if at.is_some() {
        "write_range"
    } else {
        "append"
    };
    let returned = announced(sim, kind, &[(k.to_vec(), after)], || match at {
        Some(at) => db.write_range(k, at, bytes),
        None => db.append(k, bytes),
    })?;
    if returned != len {
        return Err(format!(
            "{kind} {} returned length {returned}, expected {len}",
            show_key(k)
        ));
    }
    Ok(())
}

fn clean_tier(sim: &Sim, db: &Db) -> Result<(), String> {
    sim.begin("clean_tier", None);
    let r = db.clean_tier_now();
    sim.end(None);
    r.map(|_| ()).map_err(|e| format!("clean_tier_now: {e}"))
}

fn clean_now(sim: &Sim, db: &Db) -> Result<(), String> {
    sim.begin("clean_now", None);
    let r = db.clean_now();
    sim.end(None);
    let n = r.map_err(|e| format!("clean_now: {e}"))?;
    if n == 0 {
        return Err("clean_now found no segment to clean".into());
    }
    Ok(())
}

/// `Op::Scan`: the ordered listing against the expectation.
fn scan(sim: &Sim, db: &Db) -> Result<(), String> {
    let (present, in_flight) = settled_keys(sim);
    sim.begin("scan", None);
    let forward = db
        .range_keys::<[u8]>(..)
        .and_then(|it| it.collect::<persimmon::Result<Vec<Key>>>());
    let backward = db
        .range_keys::<[u8]>(..)
        .and_then(|it| it.rev().collect::<persimmon::Result<Vec<Key>>>());
    let ends = db.first().and_then(|f| Ok((f, db.last()?)));
    sim.end(None);
    let forward = forward.map_err(|e| format!("scan: range_keys(..): {e}"))?;
    let mut backward = backward.map_err(|e| format!("scan: range_keys(..).rev(): {e}"))?;
    let (first, last) = ends.map_err(|e| format!("scan: first/last: {e}"))?;
    check_listing(&forward, &present, &in_flight)?;
    backward.reverse();
    if in_flight.is_empty() {
        let ends = (first.map(|e| e.0), last.map(|e| e.0));
        check_settled_listing(&forward, &backward, ends)?;
    }
    Ok(())
}

/// The keys acknowledged present and not in flight (ascending), and the
/// keys in flight.
fn settled_keys(sim: &Sim) -> (Vec<Key>, BTreeSet<Key>) {
    let e = lock(&sim.expect);
    let present: Vec<Key> = e
        .present()
        .into_keys()
        .filter(|k| !e.in_flight.contains_key(k))
        .collect();
    let in_flight: BTreeSet<Key> = e.in_flight.keys().cloned().collect();
    (present, in_flight)
}

/// The forward listing is strictly ascending and, leaving out the keys in
/// flight, lists exactly `present`.
fn check_listing(
    forward: &[Key],
    present: &[Key],
    in_flight: &BTreeSet<Key>,
) -> Result<(), String> {
    if let Some(w) = forward.windows(2).find(|w| w[0] >= w[1]) {
        return Err(format!(
            "scan: {} listed after {}",
            show_key(&w[1]),
            show_key(&w[0])
        ));
    }
    let settled: Vec<Key> = forward
        .iter()
        .filter(|k| !in_flight.contains(*k))
        .cloned()
        .collect();
    if settled != present {
        let extra: Vec<String> = settled
            .iter()
            .filter(|k| !present.contains(k))
            .map(|k| show_key(k))
            .collect();
        let missing: Vec<String> = present
            .iter()
            .filter(|k| !settled.contains(k))
            .map(|k| show_key(k))
            .collect();
        return Err(format!(
            "scan: range_keys(..) lists absent keys {extra:?}, misses present keys {missing:?}"
        ));
    }
    Ok(())
}

/// With no key in flight: the reversed backward listing equals the forward
/// one, and `first`/`last` (`ends`) are its ends.
fn check_settled_listing(
    forward: &[Key],
    backward: &[Key],
    ends: (Option<Key>, Option<Key>),
) -> Result<(), String> {
    if backward != forward {
        return Err(format!(
            "scan: range_keys(..).rev() lists {} keys, forward {}",
            backward.len(),
            forward.len()
        ));
    }
    let (f, l) = ends;
    if f.as_ref() != forward.first() || l.as_ref() != forward.last() {
        return Err(format!(
            "scan: first/last {:?}/{:?}, the listing runs from {:?} to {:?}",
            f.as_deref().map(show_key),
            l.as_deref().map(show_key),
            forward.first().map(|k| show_key(k)),
            forward.last().map(|k| show_key(k))
        ));
    }
    Ok(())
}

/// A transaction: the keys it reads (the first is the raced one), what it
/// writes, and the put that races it.
#[derive(Clone, Debug)]
pub struct Txn {
    pub reads: Vec<Key>,
    pub writes: Vec<(Key, TxWrite)>,
    pub race: Race,
}

/// What a transaction writes to one key.
#[derive(Clone, Copy, Debug)]
pub enum TxWrite {
    /// A value derived from what the transaction read (`derive`), with a
    /// deadline or none.
    Derived {
        tag: u32,
        deadline: Option<u64>,
    },
    Delete,
}

impl TxWrite {
    /// The state it leaves `key` in when the transaction read `reads`, at
    /// `now`.
    fn state(self, key: &[u8], reads: &[Option<Val>], now: u64) -> State {
        match self {
            TxWrite::Derived { tag, deadline } => {
                let value = derive(tag, key, reads);
                deadline
                    .is_none_or(|d| d > now)
                    .then_some(Held { value, deadline })
            }
            TxWrite::Delete => None,
        }
    }
}

/// The put that races a transaction (of `Txn::reads[0]`, with this value).
#[derive(Clone, Debug)]
pub enum Race {
    None,
    /// Runs to completion between the first attempt's reads and its commit.
    BeforeCommit(Val),
    /// Starts while the committing thread is held at its commit fence
    /// `fence` (if the commit has that many; `held` counts the times it
    /// had).
    AtFence {
        fence: u64,
        value: Val,
        held: Arc<AtomicU64>,
    },
}

/// The value a transaction writes to `key` after reading `reads`.
fn derive(tag: u32, key: &[u8], reads: &[Option<Val>]) -> Val {
    let mut h = xxhash_rust::xxh3::Xxh3::new();
    h.update(key);
    for r in reads {
        match r {
            Some(v) => {
                h.update(&[1]);
                h.update(v);
            }
            None => h.update(&[0]),
        }
    }
    format!("tx{tag:08x}-{:016x}", h.digest()).into_bytes()
}

/// `Op::Txn`: runs the transaction on this thread with its race, announced
/// as one group of writes; checks the attempts and what was read.
fn exec_txn(sim: &Sim, db: &Db, t: &Txn) -> Result<(), String> {
    let raced = t
        .reads
        .first()
        .ok_or("a transaction reads at least one key")?;
    if t.writes.iter().any(|(k, _)| k == raced) {
        return Err(format!(
            "txn: the raced key {} is written too",
            show_key(raced)
        ));
    }
    let (want_reads, after, runs_wanted) = serial_outcome(sim, t);
    let (read, runs) = run_raced(sim, db, t, &after)?;
    if runs != runs_wanted {
        return Err(format!(
            "txn: the closure ran {runs} times, the race makes it {runs_wanted}"
        ));
    }
    if let Some(i) = (0..read.len()).find(|&i| read[i] != want_reads[i]) {
        return Err(format!(
            "txn: committed having read {} = {}, the serial order says {}",
            show_key(&t.reads[i]),
            show(&read[i]),
            show(&want_reads[i])
        ));
    }
    Ok(())
}

/// What the serial order (the racing put before the commit when it runs
/// before it, else after) makes of `t`: what its committing attempt reads,
/// the state it leaves each key it writes in, and how many times its
/// closure runs.
fn serial_outcome(sim: &Sim, t: &Txn) -> (Vec<Option<Val>>, Vec<(Key, State)>, u32) {
    let e = lock(&sim.expect);
    let mut reads: Vec<Option<Val>> = t.reads.iter().map(|k| e.current(k)).collect();
    let before_commit = matches!(t.race, Race::BeforeCommit(_));
    if let Race::BeforeCommit(v) = &t.race {
        reads[0] = Some(v.clone());
    }
    let after = t
        .writes
        .iter()
        .map(|(k, w)| (k.clone(), w.state(k, &reads, e.now_ms)))
        .collect();
    (reads, after, if before_commit { 2 } else { 1 })
}

/// Runs `t` and its race, announced as a group leaving `after`; returns
/// what the committing attempt read and how many times the closure ran.
fn run_raced(
    sim: &Sim,
    db: &Db,
    t: &Txn,
    after: &[(Key, State)],
) -> Result<(Vec<Option<Val>>, u32), String> {
    let runs = AtomicU32::new(0);
    let race_error = Mutex::new(None);
    let read = std::thread::scope(|s| {
        let racer = match &t.race {
            Race::AtFence {
                fence, value, held, ..
            } => {
                let put = Op::Put(t.reads[0].clone(), value.clone());
                Some(held_race(s, sim, db, *fence, put, held.clone()))
            }
            _ => None,
        };
        let r = announced(sim, "txn", after, || {
            db.transaction(|tx| attempt(tx, t, sim, db, &runs, &race_error))
        });
        if let Some((gate, done, racer)) = racer {
            sim.disarm_gate();
            done.store(true, Ordering::SeqCst);
            gate.release();
            if let Err(e) = racer.join().expect("the racing put's thread") {
                *lock(&race_error) = Some(e);
            }
        }
        r
    })?;
    let race_error = lock(&race_error).take();
    match race_error {
        Some(e) => Err(format!("txn: the racing put: {e}")),
        None => Ok((read, runs.load(Ordering::SeqCst))),
    }
}

/// One run of a transaction's closure: reads, the racing put when it comes
/// before the first commit, the writes. Returns what it read.
fn attempt(
    tx: &mut Transaction,
    t: &Txn,
    sim: &Sim,
    db: &Db,
    runs: &AtomicU32,
    race_error: &Mutex<Option<String>>,
) -> persimmon::Result<Vec<Option<Val>>> {
    let run = runs.fetch_add(1, Ordering::SeqCst);
    let reads = t
        .reads
        .iter()
        .map(|k| tx.get(k))
        .collect::<persimmon::Result<Vec<_>>>()?;
    if let (0, Race::BeforeCommit(v)) = (run, &t.race) {
        let put = Op::Put(t.reads[0].clone(), v.clone());
        let r = std::thread::scope(|s| s.spawn(|| exec(sim, db, &put)).join());
        if let Err(e) = r.expect("the racing put's thread") {
            *lock(race_error) = Some(e);
        }
    }
    for (k, w) in &t.writes {
        match w {
            TxWrite::Derived {
                tag,
                deadline: None,
            } => tx.put(k, &derive(*tag, k, &reads))?,
            TxWrite::Derived {
                tag,
                deadline: Some(d),
            } => tx.put_with_deadline(k, &derive(*tag, k, &reads), *d)?,
            TxWrite::Delete => tx.delete(k)?,
        }
    }
    Ok(reads)
}

/// The racer of `Race::AtFence`: a gate armed on this (the committing)
/// thread at its fence `n`, and a thread that waits for it to be reached,
/// then starts `put` on a thread of its own and lets the committer go 20 ms
/// later (counted in `held`): the put must not have finished by then (the
/// commit holds the lock of every key it read until its writes are
/// published). If the commit ends first (fewer fences), the put runs after
/// it. Returns the gate, the flag to raise when the commit returned, and
/// the racer.
#[allow(clippy::type_complexity)]
fn held_race<'s>(
    s: &'s std::thread::Scope<'s, '_>,
    sim: &'s Sim,
    db: &'s Db,
    n: u64,
    put: Op,
    held: Arc<AtomicU64>,
) -> (
    Arc<Gate>,
    Arc<AtomicBool>,
    std::thread::ScopedJoinHandle<'s, Result<(), String>>,
) {
    let gate = Gate::after(n);
    sim.arm_gate(&gate);
    let done = Arc::new(AtomicBool::new(false));
    let (g, d) = (gate.clone(), done.clone());
    let racer = s.spawn(move || {
        let reached = g.wait_reached_or(|| d.load(Ordering::SeqCst));
        std::thread::scope(|inner| {
            let p = inner.spawn(|| exec(sim, db, &put));
            if !reached {
                return p.join().expect("the racing put");
            }
            held.fetch_add(1, Ordering::SeqCst);
            std::thread::sleep(Duration::from_millis(20));
            let early = p.is_finished();
            g.release();
            p.join().expect("the racing put")?;
            match early {
                true => Err(format!(
                    "it finished while the commit, held at its fence {n}, held the lock of the key it read"
                )),
                false => Ok(()),
            }
        })
    });
    (gate, done, racer)
}
