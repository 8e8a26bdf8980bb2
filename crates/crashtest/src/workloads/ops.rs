//! Operations: what a workload does to the engine, each one announced to
//! the simulator and checked against the expectation as it returns.
//!
//! How the oracle is told what a crash may leave: an operation is announced
//! (`Sim::begin`, with its key and the value it leaves) before it starts,
//! which puts the key *in flight*: from then on a crash image may hold its
//! old or its new value. It is acknowledged (`Sim::end` with the key) after
//! it returns: from then on every image must hold the new value. Both
//! happen on the thread that runs the operation; `Sim::end` also runs the
//! model's persistence assertions (none of the operation's stores may still
//! be pending, except the ones the protocol leaves unflushed, `Benign`). An
//! operation that fails is ended without acknowledgement (its key stays in
//! flight) and breaks the workload.
//!
//! Invariants the operations check as they return:
//! - `get` returns the acknowledged value;
//! - `delete` reports `existed` exactly when the expectation holds the key;
//! - `update`'s closure sees the acknowledged value, and the key is left
//!   with what the `UpdateMode` makes of it;
//! - `clean_now` finds at least one segment to clean;
//! - `Scan` (ordered index): the listing is strictly ascending and holds
//!   every present key that is not in flight and no absent one; with no key
//!   in flight it reads the same backwards and `first`/`last` are its ends.

use std::collections::BTreeSet;

use persimmon::{Db, Update};

use crate::oracle::{show, show_key, Key, Val};
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
    }
}

/// Ends the operation `what` on `k`, which failed with `e`, unacknowledged
/// (the key stays in flight); returns the message.
fn failed(sim: &Sim, what: &str, k: &[u8], e: persimmon::Error) -> String {
    sim.end(None);
    format!("{what} {}: {e}", show_key(k))
}

fn put(sim: &Sim, db: &Db, k: &[u8], v: &Val) -> Result<(), String> {
    sim.begin("put", Some((k, Some(v.clone()))));
    db.put(k, v).map_err(|e| failed(sim, "put", k, e))?;
    sim.end(Some((k, Some(v.clone()))));
    Ok(())
}

fn delete(sim: &Sim, db: &Db, k: &[u8]) -> Result<(), String> {
    let had = lock(&sim.expect).current(k).is_some();
    sim.begin("delete", Some((k, None)));
    let existed = db.delete(k).map_err(|e| failed(sim, "delete", k, e))?;
    sim.end(Some((k, None)));
    if existed != had {
        return Err(format!(
            "delete {} returned existed={existed}, expected {had}",
            show_key(k)
        ));
    }
    Ok(())
}

fn update(sim: &Sim, db: &Db, k: &[u8], mode: UpdateMode) -> Result<(), String> {
    let before = lock(&sim.expect).current(k);
    let after = mode.after(&before);
    sim.begin("update", Some((k, after.clone())));
    let saw = db
        .update(k, |cur| (mode.decision(&after), cur.map(|c| c.to_vec())))
        .map_err(|e| failed(sim, "update", k, e))?;
    sim.end(Some((k, after)));
    if saw != before {
        return Err(unexpected("update", k, "saw", &saw, &before));
    }
    Ok(())
}

fn get(sim: &Sim, db: &Db, k: &[u8]) -> Result<(), String> {
    let want = lock(&sim.expect).current(k);
    sim.begin("get", None);
    let got = db.get(k);
    sim.end(None);
    let got = got.map_err(|e| format!("get {}: {e}", show_key(k)))?;
    if got != want {
        return Err(unexpected("get", k, "returned", &got, &want));
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
        .acked
        .iter()
        .filter(|(k, v)| v.is_some() && !e.in_flight.contains_key(*k))
        .map(|(k, _)| k.clone())
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
