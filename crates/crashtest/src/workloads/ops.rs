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
//! Invariants the operations check as they return:
//! - `get` returns the acknowledged value and deadline (`ttl`), absent
//!   once the deadline passed;
//! - `expire_at` reports the key present, and `persist` a deadline
//!   removed, exactly when the expectation says so; `expire_now` deletes
//!   exactly the acknowledged keys whose deadline passed and whose expired
//!   record the expectation still holds (the workload keeps that exact
//!   where a crash or the cleaner decides, `expiry.rs`);
//! - a transaction (`txn.rs`) ran its closure as often as its race makes
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

use persimmon::{Db, Update, WriteBatch};

use super::txn::Txn;
use crate::oracle::{observe, show, show_key, show_state, Held, Key, State, Val};
use crate::sim::{lock, Sim};

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
    /// A transaction, and the put that races it (`txn.rs`).
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
        Op::Txn(t) => super::txn::exec_txn(sim, db, t),
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
