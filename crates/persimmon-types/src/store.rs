//! Where a client's reads and writes go: its selected database, either
//! straight to the pool or, inside an atomic unit (a server's `EXEC`, a
//! multi-key command such as `MSET`, `RENAME`, `MOVE`, every change of a
//! collection), into an *overlay* that commits as one crash-atomic engine
//! batch.
//!
//! Callers name Redis keys; the store turns them into engine keys of the
//! selected database's namespace (`dbs`).
//!
//! Invariants:
//! - Outside an atomic unit every call is one engine call: atomic, durable
//!   on return.
//! - Inside one, reads see the pool as of their first read of each key plus
//!   the unit's own writes; nothing reaches the pool until `commit`, which
//!   writes every change in one batch only if every key the unit *read*
//!   (and every watched key) still has the version it had — else nothing is
//!   written and the unit runs again from the start. So a unit is
//!   serializable and all-or-nothing, across a crash too.
//! - A value whose deadline has passed reads as absent, in the pool (the
//!   engine) and in the overlay alike.
//! - Every write that leaves a value at a key, and every delete (outside a
//!   unit: once the engine call returned; inside one: once `commit` wrote
//!   the batch; a blocked stream-group reader must learn its stream is
//!   gone) goes
//!   through [`signal_ready`](Store::signal_ready), the one hook of the
//!   server's blocking commands: while any client waits for a key
//!   ([`Waiters`](crate::Waiters)) it records the key, and the server serves
//!   the key's waiters after the command. While nobody waits it costs one
//!   atomic load.
//! - *Parking* (only when the caller allowed it for the running unit: the
//!   server's runs of combined writes): a collection a command changed may
//!   stay decoded in the store ([`Parked`]) instead of being written into
//!   the overlay, so the next command of the unit that changes it takes it
//!   as it is. Every other access to one of its records writes it into the
//!   overlay first (as the earlier commands' change, which a later
//!   command's roll-back does not undo), and so does `commit`: what a unit
//!   reads and commits is what it would be without parking. A parked
//!   collection taken and then dropped unsaved (its command failed) poisons
//!   the unit: its caller must not commit it. A parking unit keeps no undo
//!   log ([`roll_back`](Store::roll_back) does nothing): a command that
//!   fails in it ends it, and its caller aborts it.

use std::any::Any;
use std::borrow::Cow;
use std::collections::HashMap;
use std::sync::Arc;

use persimmon::{Ttl, Update, Version, WriteBatch};

use crate::dbs;
use crate::error::{check_key, may_exist, Error};
use crate::keyspace::Keyspace;
use crate::value::Stored;

/// How many times an atomic unit runs before it gives up on conflicts.
pub const ATOMIC_ATTEMPTS: u32 = 64;
/// A unit that conflicted this many times takes a turn (`turns.rs`).
const ESCALATE_AFTER: u32 = 4;

/// A value and its deadline (ms of Unix time; `None`: none).
pub type Entry = (Vec<u8>, Option<u64>);

/// One key an atomic unit touched.
struct Touched {
    /// The key's version in the pool when the unit first touched it.
    base: Option<Version>,
    /// Whether the unit's decisions depend on the key's value (checked at
    /// commit) or only overwrite it.
    read: bool,
    /// The key as the unit sees it now.
    now: Option<Entry>,
    dirty: bool,
    /// When the unit first changed the key (the order blocked clients
    /// waiting on written keys are served in, as Redis serves them).
    first_change: u64,
}

/// A watched key: database, Redis key, version when `WATCH` ran.
pub struct Watched {
    pub db: usize,
    pub key: Vec<u8>,
    pub version: Option<Version>,
}

/// A client's view of the key space.
pub struct Store {
    keyspace: Arc<Keyspace>,
    /// The selected database.
    pub db: usize,
    overlay: Option<HashMap<Vec<u8>, Touched>>,
    /// Since the last [`mark`](Self::mark): each change of the overlay, with
    /// the key's state before it (for [`roll_back`](Self::roll_back)).
    undo: Vec<(Vec<u8>, Option<Entry>, bool)>,
    pub watched: Vec<Watched>,
    /// When set, every batch a unit commits is also recorded here (the
    /// crash harness replays them: `embedded.rs`).
    pub capture: Option<Vec<Captured>>,
    /// Changes numbered so far in the running unit (`Touched::first_change`).
    changes: u64,
    /// Engine keys written while some client was waiting, not yet taken.
    ready: Vec<Vec<u8>>,
    /// Whether the running unit may park collections, those it parked, and
    /// whether one was lost (see the module header).
    parking: bool,
    parked: Vec<Box<dyn Parked>>,
    poisoned: bool,
}

/// A value a unit keeps decoded between its commands (a collection).
pub trait Parked: Any + Send + Sync {
    /// Whether engine key `ek` is one of its records.
    fn covers(&self, ek: &[u8]) -> bool;
    /// Writes it into the running unit.
    fn write_back(self: Box<Self>, st: &mut Store) -> Result<(), Error>;
    fn into_any(self: Box<Self>) -> Box<dyn Any>;
}

/// One committed unit's writes: engine key and what it was set to (value
/// and deadline), or `None` for a delete.
pub type Captured = Vec<(Vec<u8>, Option<Entry>)>;

impl Store {
    pub fn new(keyspace: Arc<Keyspace>) -> Store {
        Store {
            keyspace,
            db: 0,
            overlay: None,
            undo: Vec::new(),
            watched: Vec::new(),
            capture: None,
            changes: 0,
            ready: Vec::new(),
            parking: false,
            parked: Vec::new(),
            poisoned: false,
        }
    }

    /// The key space this store reads and writes.
    pub fn keyspace(&self) -> &Arc<Keyspace> {
        &self.keyspace
    }

    pub fn now_ms(&self) -> u64 {
        self.keyspace.db.now_ms()
    }

    /// The namespace of the selected database.
    pub fn namespace(&self) -> u32 {
        self.keyspace.dbs.namespace(self.db)
    }

    /// The engine key of `key` in the selected database.
    pub fn engine_key<'k>(&self, key: &'k [u8]) -> Cow<'k, [u8]> {
        let ns = self.namespace();
        if ns == 0 && key.first() != Some(&0xFF) {
            Cow::Borrowed(key)
        } else {
            Cow::Owned(dbs::engine_key(ns, key))
        }
    }

    /// Runs `f` with database `db` selected, then selects the current one
    /// again.
    pub fn in_db<R>(&mut self, db: usize, f: impl FnOnce(&mut Store) -> R) -> R {
        let saved = std::mem::replace(&mut self.db, db);
        let r = f(self);
        self.db = saved;
        r
    }

    /// Reads `key` and its deadline through `f`.
    pub fn read_ttl<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Stored<'_>, Option<u64>) -> R,
    ) -> Result<Option<R>, Error> {
        let ek = self.engine_key(key);
        if !may_exist(&ek) {
            return Ok(None);
        }
        if self.overlay.is_none() {
            // Only a caller that wants the deadline pays for the copy.
            return Ok(self
                .keyspace
                .db
                .get_versioned(&ek)?
                .map(|e| f(Stored::decode(&e.value), e.deadline)));
        }
        let now = self.now_ms();
        let t = self.touch(&ek, true)?;
        Ok(live(&t.now, now).map(|(v, d)| f(Stored::decode(v), *d)))
    }

    /// Reads `key` through `f`: [`read_ttl`](Self::read_ttl) without the
    /// deadline and, outside a unit, in place (no copy of the value).
    pub fn get<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Stored<'_>) -> R,
    ) -> Result<Option<R>, Error> {
        if self.overlay.is_some() {
            return self.read_ttl(key, |v, _| f(v));
        }
        let ek = self.engine_key(key);
        if !may_exist(&ek) {
            return Ok(None);
        }
        Ok(self.keyspace.db.get_with(&ek, |v| f(Stored::decode(v)))?)
    }

    /// Reads `keys` through `f(i, value)`, once per key in order: each as
    /// [`get`](Self::get) would. Outside a unit one batched engine read
    /// (`Db::get_many_with`, the keys' cache misses overlapped; each key
    /// read at its own instant, as by one `get` after another); inside one,
    /// key by key through the overlay.
    pub fn get_many(
        &mut self,
        keys: &[&[u8]],
        mut f: impl FnMut(usize, Option<Stored<'_>>),
    ) -> Result<(), Error> {
        if self.overlay.is_some() {
            for (i, key) in keys.iter().enumerate() {
                self.get(key, |v| f(i, Some(v)))?
                    .unwrap_or_else(|| f(i, None));
            }
            return Ok(());
        }
        // Keys too long to exist are answered without the engine; `at`
        // holds the index of every key the engine reads.
        let mut engine_keys = Vec::with_capacity(keys.len());
        let mut at = Vec::with_capacity(keys.len());
        for (i, key) in keys.iter().enumerate() {
            let ek = self.engine_key(key);
            if may_exist(&ek) {
                engine_keys.push(ek);
                at.push(i);
            }
        }
        let refs: Vec<&[u8]> = engine_keys.iter().map(|k| &k[..]).collect();
        let mut next = 0;
        self.keyspace.db.get_many_with(&refs, |j, v| {
            while next < at[j] {
                f(next, None);
                next += 1;
            }
            f(next, v.map(Stored::decode));
            next += 1;
        })?;
        while next < keys.len() {
            f(next, None);
            next += 1;
        }
        Ok(())
    }

    /// Atomic read-modify-write of `key`; `f` sees the value and its
    /// deadline and decides (a plain `Update::Put` keeps the deadline). A
    /// key too long to exist (its engine key, with the database prefix) is
    /// missing to `f`; only storing it is refused.
    pub fn update_ttl<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<Stored<'_>>, Option<u64>) -> (Update, R),
    ) -> Result<R, Error> {
        let ek = self.engine_key(key);
        if !may_exist(&ek) {
            // Too long to exist: it reads as missing, and only a decision to
            // store it fails (with the engine's key-length error).
            let (decision, r) = f(None, None);
            return match decision {
                Update::Keep | Update::Delete => Ok(r),
                Update::Put(_) | Update::PutExpiring { .. } => check_key(&ek).map(|()| r),
            };
        }
        if self.overlay.is_none() {
            let mut stored = false;
            let r = self.keyspace.db.update_with_deadline(&ek, |v, d| {
                let (decision, r) = f(v.map(Stored::decode), d);
                stored = matches!(decision, Update::Put(_) | Update::PutExpiring { .. });
                (decision, r)
            })?;
            if stored {
                self.signal_ready_engine(&ek);
            }
            return Ok(r);
        }
        let now = self.now_ms();
        let t = self.touch(&ek, true)?;
        let current = live(&t.now, now).cloned();
        let (decision, r) = f(
            current.as_ref().map(|(v, _)| Stored::decode(v)),
            current.as_ref().and_then(|(_, d)| *d),
        );
        let next = match decision {
            Update::Keep => return Ok(r),
            Update::Put(v) => Some((v, current.and_then(|(_, d)| d))),
            Update::PutExpiring { value, deadline } => Some((value, deadline)),
            Update::Delete => None,
        };
        self.change(&ek, next.filter(|(_, d)| d.is_none_or(|d| d > now)));
        Ok(r)
    }

    /// [`update_ttl`](Self::update_ttl) for a decision that ignores the
    /// deadline.
    pub fn update<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<Stored<'_>>) -> (Update, R),
    ) -> Result<R, Error> {
        self.update_ttl(key, |v, _| f(v))
    }

    /// [`update`](Self::update) for a decision that can fail: on `Err` the
    /// value stays as it was.
    pub fn try_update<R>(
        &mut self,
        key: &[u8],
        f: impl FnOnce(Option<Stored<'_>>) -> Result<(Update, R), Error>,
    ) -> Result<R, Error> {
        self.update(key, |old| match f(old) {
            Ok((u, r)) => (u, Ok(r)),
            Err(e) => (Update::Keep, Err(e)),
        })?
    }

    /// Stores `value` (already encoded) under `key` with `deadline`,
    /// replacing whatever was there and its deadline.
    pub fn put(&mut self, key: &[u8], value: &[u8], deadline: Option<u64>) -> Result<(), Error> {
        let ek = self.engine_key(key);
        check_key(&ek)?;
        if self.overlay.is_none() {
            match deadline {
                None => self.keyspace.db.put(&ek, value)?,
                Some(d) => self.keyspace.db.put_with_deadline(&ek, value, d)?,
            }
            self.signal_ready_engine(&ek);
            return Ok(());
        }
        let now = self.now_ms();
        self.touch(&ek, false)?;
        let next = Some((value.to_vec(), deadline)).filter(|(_, d)| d.is_none_or(|d| d > now));
        self.change(&ek, next);
        Ok(())
    }

    /// Stores every (key, encoded value) pair without a deadline, all or
    /// none: one engine batch (no reads) outside a unit.
    pub fn put_many(&mut self, pairs: &[(&[u8], Vec<u8>)]) -> Result<(), Error> {
        if self.overlay.is_some() {
            for (key, value) in pairs {
                self.put(key, value, None)?;
            }
            return Ok(());
        }
        let mut batch = WriteBatch::new();
        for (key, value) in pairs {
            let ek = self.engine_key(key);
            check_key(&ek)?;
            batch.put(&ek, value);
        }
        self.keyspace.db.write(&batch)?;
        for (key, _) in pairs {
            self.signal_ready(key);
        }
        Ok(())
    }

    /// Writes `batch` — puts and deletes of engine keys, outside a unit —
    /// as independent writes sharing their fences
    /// ([`persimmon::Db::write_grouped`]: each key durable on return, not
    /// atomic across keys, nothing written on error), then signals every
    /// key it puts (`puts`: their Redis keys, in the selected database).
    pub fn write_grouped<'k>(
        &mut self,
        batch: &WriteBatch,
        puts: impl Iterator<Item = &'k [u8]>,
    ) -> Result<(), Error> {
        debug_assert!(self.overlay.is_none(), "a unit commits as one batch");
        self.keyspace.db.write_grouped(batch)?;
        for key in puts {
            self.signal_ready(key);
        }
        Ok(())
    }

    /// The engine's range write ([`persimmon::Db::write_range_after`]) on
    /// `key`, outside a unit; `None` when the value does not start with
    /// `head` — and always inside a unit, where the caller rewrites the
    /// value through [`update`](Self::update) instead.
    pub fn write_range_after(
        &mut self,
        key: &[u8],
        head: &[u8],
        at: Option<u64>,
        bytes: &[u8],
    ) -> Result<Option<u64>, Error> {
        if self.overlay.is_some() {
            return Ok(None);
        }
        let ek = self.engine_key(key);
        check_key(&ek)?;
        let written = self.keyspace.db.write_range_after(&ek, head, at, bytes)?;
        if written.is_some() {
            self.signal_ready_engine(&ek);
        }
        Ok(written)
    }

    /// Deletes `key`; returns whether it was present.
    pub fn delete(&mut self, key: &[u8]) -> Result<bool, Error> {
        let ek = self.engine_key(key);
        if !may_exist(&ek) {
            return Ok(false);
        }
        if self.overlay.is_none() {
            let deleted = self.keyspace.db.delete(&ek)?;
            if deleted {
                // A blocked stream-group reader learns its stream is gone.
                self.signal_ready_engine(&ek);
            }
            return Ok(deleted);
        }
        let now = self.now_ms();
        let t = self.touch(&ek, true)?;
        let was = live(&t.now, now).is_some();
        self.change(&ek, None);
        Ok(was)
    }

    /// Sets (`Some`; one already passed deletes the key) or removes
    /// (`None`) the deadline of `key`, keeping its value. Returns whether the
    /// key was present (`None`: whether it had a deadline to remove).
    pub fn set_deadline(&mut self, key: &[u8], deadline: Option<u64>) -> Result<bool, Error> {
        if self.overlay.is_none() {
            let ek = self.engine_key(key);
            if !may_exist(&ek) {
                return Ok(false);
            }
            return Ok(match deadline {
                Some(d) => self.keyspace.db.expire_at(&ek, d)?,
                None => self.keyspace.db.persist(&ek)?,
            });
        }
        self.update_ttl(key, |old, current| match old {
            Some(v) if deadline.is_some() || current.is_some() => (
                Update::PutExpiring {
                    value: v.encode(),
                    deadline,
                },
                true,
            ),
            _ => (Update::Keep, false),
        })
    }

    /// Whether `key` is present.
    pub fn exists(&mut self, key: &[u8]) -> Result<bool, Error> {
        Ok(self.get(key, |_| ())?.is_some())
    }

    /// The time to live of `key`.
    pub fn ttl(&mut self, key: &[u8]) -> Result<Ttl, Error> {
        if self.overlay.is_none() {
            let ek = self.engine_key(key);
            if !may_exist(&ek) {
                return Ok(Ttl::Missing);
            }
            return Ok(self.keyspace.db.ttl(&ek)?);
        }
        let now = self.now_ms();
        Ok(match self.read_ttl(key, |_, d| d)? {
            None => Ttl::Missing,
            Some(None) => Ttl::Persistent,
            Some(Some(at_ms)) => Ttl::Expires {
                at_ms,
                remaining_ms: at_ms.saturating_sub(now),
            },
        })
    }

    /// The version of `key` in database `db` now (for `WATCH`; the pool's,
    /// not a unit's).
    pub fn version_in(&self, db: usize, key: &[u8]) -> Result<Option<Version>, Error> {
        let ek = dbs::engine_key(self.keyspace.dbs.namespace(db), key);
        if !may_exist(&ek) {
            return Ok(None);
        }
        Ok(self.keyspace.db.version(&ek)?)
    }

    /// How the keys a running unit changed in namespace `ns` change its
    /// key count (+1 created, -1 deleted).
    pub fn unit_count_delta(&self, ns: u32) -> i64 {
        debug_assert!(self.parked.is_empty(), "not called in a run that parks");
        let now = self.now_ms();
        self.overlay.as_ref().map_or(0, |o| {
            o.iter()
                .filter(|(k, t)| t.dirty && dbs::key_in(ns, k).is_some())
                .map(|(_, t)| live(&t.now, now).is_some() as i64 - t.base.is_some() as i64)
                .sum()
        })
    }

    /// Runs `f` as one atomic unit (see the module header): again from the
    /// start after a conflict, at most [`ATOMIC_ATTEMPTS`] times. Inside a
    /// running unit (an `EXEC`) `f` just runs: the outer commit covers it.
    pub fn atomic<R>(
        &mut self,
        mut f: impl FnMut(&mut Store) -> Result<R, Error>,
    ) -> Result<R, Error> {
        if self.overlay.is_some() {
            return f(self);
        }
        for attempt in 0..ATOMIC_ATTEMPTS {
            // Only a unit that takes a turn holds its own reference to the
            // key space (the turn outlives this borrow of `self`): the
            // others touch no shared reference count.
            let escalated = (attempt >= ESCALATE_AFTER).then(|| self.keyspace.clone());
            let _turn = escalated.as_ref().map(|ks| ks.turns.take());
            if escalated.is_none() {
                self.keyspace.turns.wait_for_turns();
            }
            self.begin();
            let r = f(self);
            match r {
                Ok(r) => {
                    if self.commit(&[])? {
                        return Ok(r);
                    }
                }
                Err(e) => {
                    // A unit that read what another unit changed meanwhile
                    // may fail on the mixture (a collection's pages read in
                    // place after its meta changed): that is a conflict,
                    // and it runs again; any other failure is the answer.
                    let stale = !self.reads_still_valid()?;
                    self.abort();
                    if !stale {
                        return Err(e);
                    }
                }
            }
        }
        Err(conflict())
    }

    /// Whether every key the running unit read still has the version it
    /// read (what `commit` checks).
    fn reads_still_valid(&self) -> Result<bool, Error> {
        let Some(overlay) = &self.overlay else {
            return Ok(true);
        };
        for (key, t) in overlay.iter().filter(|(_, t)| t.read) {
            if self.keyspace.db.version(key)? != t.base {
                return Ok(false);
            }
        }
        Ok(true)
    }

    /// Starts an atomic unit.
    pub fn begin(&mut self) {
        debug_assert!(self.overlay.is_none(), "units do not nest");
        self.overlay = Some(HashMap::new());
        self.undo.clear();
    }

    /// Drops a running unit's changes.
    pub fn abort(&mut self) {
        self.overlay = None;
        self.undo.clear();
        self.end_parking();
    }

    /// Lets the running unit park collections until it ends.
    pub fn allow_parking(&mut self) {
        debug_assert!(self.overlay.is_some(), "parking is for a running unit");
        self.parking = true;
    }

    pub fn parking(&self) -> bool {
        self.parking
    }

    /// Keeps `value` decoded for the unit's next command (parking allowed).
    pub fn park(&mut self, value: Box<dyn Parked>) {
        debug_assert!(self.parking, "parking was allowed");
        self.parked.push(value);
    }

    /// Takes the parked value whose records include `ek`, if any.
    pub fn unpark(&mut self, ek: &[u8]) -> Option<Box<dyn Any>> {
        let at = self.parked.iter().position(|p| p.covers(ek))?;
        Some(self.parked.swap_remove(at).into_any())
    }

    /// A value taken from the park was dropped unsaved: the unit must not
    /// commit.
    pub fn poison(&mut self) {
        self.poisoned = true;
    }

    pub fn poisoned(&self) -> bool {
        self.poisoned
    }

    /// Writes every parked value covering `ek` (`None`: all) into the
    /// overlay, as the change of the commands before the running one (a
    /// parking unit keeps no undo log, so no roll-back reaches it).
    fn write_parked(&mut self, ek: Option<&[u8]>) -> Result<(), Error> {
        debug_assert!(
            self.parked.is_empty() || self.undo.is_empty(),
            "a parking unit keeps no undo log"
        );
        while let Some(at) = self
            .parked
            .iter()
            .position(|p| ek.is_none_or(|ek| p.covers(ek)))
        {
            self.parked.swap_remove(at).write_back(self)?;
        }
        Ok(())
    }

    fn end_parking(&mut self) {
        self.parking = false;
        self.parked.clear();
        self.poisoned = false;
    }

    /// Inside a unit: from here on, remember how to undo each change (one
    /// command of an EXEC starts).
    pub fn mark(&mut self) {
        self.undo.clear();
    }

    /// Inside a unit: undoes every change since [`mark`](Self::mark) (the
    /// command failed: as in Redis, it fails alone, having written nothing).
    pub fn roll_back(&mut self) {
        let Some(overlay) = self.overlay.as_mut() else {
            return;
        };
        while let Some((key, now, dirty)) = self.undo.pop() {
            if let Some(t) = overlay.get_mut(&key) {
                t.now = now;
                t.dirty = dirty;
            }
        }
    }

    /// Sets what the running unit sees of engine key `ek` (touched
    /// already), remembering the state before for [`roll_back`](Self::roll_back).
    fn change(&mut self, ek: &[u8], next: Option<Entry>) {
        let overlay = self.overlay.as_mut().expect("a unit is running");
        let t = overlay.get_mut(ek).expect("touched before it changes");
        let before = std::mem::replace(&mut t.now, next);
        if !self.parking {
            self.undo.push((ek.to_vec(), before, t.dirty));
        }
        t.dirty = true;
        if t.first_change == u64::MAX {
            t.first_change = self.changes;
            self.changes += 1;
        }
    }

    /// The Redis keys of namespace `ns` that the running unit holds live
    /// (written or read by it), which a walk of the pool may not show.
    pub fn unit_keys(&self, ns: u32) -> Vec<Vec<u8>> {
        debug_assert!(self.parked.is_empty(), "not called in a run that parks");
        let now = self.now_ms();
        self.overlay.as_ref().map_or(Vec::new(), |o| {
            o.iter()
                .filter(|(_, t)| live(&t.now, now).is_some())
                .filter_map(|(k, _)| dbs::key_in(ns, k).map(<[u8]>::to_vec))
                .collect()
        })
    }

    /// Inside a unit: `f` of engine key `ek` as the unit sees it (no
    /// namespace is applied; an expired value reads as absent). `depend`:
    /// the commit checks the key still has the version read; a key read
    /// without depending on it and not yet touched is read from the pool in
    /// place, without a copy in the overlay (`coll` pages, whose meta record
    /// the unit depends on).
    pub fn unit_read<R>(
        &mut self,
        ek: &[u8],
        depend: bool,
        f: impl FnOnce(Option<&[u8]>) -> R,
    ) -> Result<R, Error> {
        if !self.parked.is_empty() {
            self.write_parked(Some(ek))?;
        }
        let overlay = self.overlay.as_ref().expect("a unit is running");
        if !depend && !overlay.contains_key(ek) {
            let mut f = Some(f);
            let r = self
                .keyspace
                .db
                .get_with(ek, |v| (f.take().expect("called once"))(Some(v)))?;
            return Ok(match r {
                Some(r) => r,
                None => (f.take().expect("not called"))(None),
            });
        }
        let now = self.now_ms();
        let t = self.touch(ek, depend)?;
        Ok(f(live(&t.now, now).map(|(v, _)| v.as_slice())))
    }

    /// Inside a unit: sets engine key `ek`, which has no deadline and whose
    /// value the unit does not depend on (a collection's page), to `value`
    /// or deletes it, without reading what it holds now.
    pub fn unit_write_blind(&mut self, ek: &[u8], value: Option<Vec<u8>>) -> Result<(), Error> {
        check_key(ek)?;
        if !self.parked.is_empty() {
            self.write_parked(Some(ek))?;
        }
        let overlay = self.overlay.as_mut().expect("a unit is running");
        if !overlay.contains_key(ek) {
            // Outside parking a roll-back needs the state before: read it.
            // A parking unit keeps no undo log, and no version is checked
            // (the unit does not depend on the page's value).
            if !self.parking {
                return self.unit_write(ek, value);
            }
            overlay.insert(
                ek.to_vec(),
                Touched {
                    base: None,
                    read: false,
                    now: None,
                    dirty: false,
                    first_change: u64::MAX,
                },
            );
        }
        self.change(ek, value.map(|v| (v, None)));
        Ok(())
    }

    /// Inside a unit: sets engine key `ek` to `value` (keeping its
    /// deadline) or deletes it (`None`).
    pub fn unit_write(&mut self, ek: &[u8], value: Option<Vec<u8>>) -> Result<(), Error> {
        check_key(ek)?;
        let now = self.now_ms();
        let t = self.touch(ek, false)?;
        let deadline = live(&t.now, now).and_then(|(_, d)| *d);
        self.change(ek, value.map(|v| (v, deadline)));
        Ok(())
    }

    /// Ends the running unit: writes its changes as one batch if every key
    /// it read, and every key of `expected`, still has its version. Returns
    /// whether it did; the unit has ended either way.
    pub fn commit(&mut self, expected: &[(Vec<u8>, Option<Version>)]) -> Result<bool, Error> {
        debug_assert!(!self.poisoned, "a poisoned unit is aborted, not committed");
        let parked = self.write_parked(None);
        self.end_parking();
        let touched = self.overlay.take().expect("a unit is running");
        self.undo.clear();
        parked?;
        let mut batch = WriteBatch::new();
        let mut checks: Vec<(&[u8], Option<Version>)> =
            expected.iter().map(|(k, v)| (k.as_slice(), *v)).collect();
        for (key, t) in &touched {
            if t.read {
                checks.push((key, t.base));
            }
            if !t.dirty {
                continue;
            }
            match &t.now {
                Some((v, Some(d))) => batch.put_with_deadline(key, v, *d),
                Some((v, None)) => batch.put(key, v),
                None => batch.delete(key),
            };
        }
        if batch.is_empty() && checks.is_empty() {
            return Ok(true);
        }
        let written = self.keyspace.db.write_if(&batch, &checks)?;
        if written && self.keyspace.waiters.any() {
            let mut ready: Vec<(&Vec<u8>, &Touched)> =
                touched.iter().filter(|(_, t)| t.dirty).collect();
            ready.sort_by_key(|(_, t)| t.first_change);
            for (key, _) in ready {
                self.signal_ready_engine(key);
            }
        }
        if let (true, Some(capture), false) = (written, self.capture.as_mut(), batch.is_empty()) {
            capture.push(
                touched
                    .into_iter()
                    .filter(|(_, t)| t.dirty)
                    .map(|(k, t)| (k, t.now))
                    .collect(),
            );
        }
        Ok(written)
    }

    /// The hook of the blocking commands (see the module header): `key` of
    /// the selected database now holds a value, or was deleted, durably. Called by the
    /// store's own write paths; a command that changes keys another way
    /// (SWAPDB) calls it for them.
    pub fn signal_ready(&mut self, key: &[u8]) {
        if self.keyspace.waiters.any() {
            let ek = self.engine_key(key).into_owned();
            self.ready.push(ek);
        }
    }

    fn signal_ready_engine(&mut self, ek: &[u8]) {
        if self.keyspace.waiters.any() {
            self.ready.push(ek.to_vec());
        }
    }

    /// The engine keys signalled since the last call, each once.
    pub fn take_ready(&mut self) -> Vec<Vec<u8>> {
        let mut seen = std::collections::HashSet::new();
        let mut keys = std::mem::take(&mut self.ready);
        keys.retain(|k| seen.insert(k.clone()));
        keys
    }

    /// Whether a key was signalled and not yet taken.
    pub fn has_ready(&self) -> bool {
        !self.ready.is_empty()
    }

    /// Whether an atomic unit is running (an `EXEC`, a multi-key command).
    pub fn in_unit(&self) -> bool {
        self.overlay.is_some()
    }

    /// The unit's entry for engine key `ek`, read from the pool on first
    /// touch. `read`: the unit depends on the value.
    fn touch(&mut self, ek: &[u8], read: bool) -> Result<&mut Touched, Error> {
        if !self.parked.is_empty() {
            self.write_parked(Some(ek))?;
        }
        let overlay = self.overlay.as_mut().expect("a unit is running");
        if !overlay.contains_key(ek) {
            let seen = self.keyspace.db.get_versioned(ek)?;
            let t = Touched {
                base: seen.as_ref().map(|s| s.version),
                read: false,
                now: seen.map(|s| (s.value, s.deadline)),
                dirty: false,
                first_change: u64::MAX,
            };
            overlay.insert(ek.to_vec(), t);
        }
        let t = overlay.get_mut(ek).expect("just inserted");
        t.read |= read;
        Ok(t)
    }
}

/// `entry` unless its deadline has passed.
fn live(entry: &Option<Entry>, now: u64) -> Option<&Entry> {
    entry.as_ref().filter(|(_, d)| d.is_none_or(|d| d > now))
}

/// An atomic unit that kept meeting concurrent writers.
pub fn conflict() -> Error {
    Error::new(format!(
        "ERR the keys of this command kept changing under it: gave up after {ATOMIC_ATTEMPTS} attempts, nothing was written"
    ))
}
