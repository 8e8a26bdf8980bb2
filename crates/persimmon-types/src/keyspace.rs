//! A key space: one open pool seen as Redis's numbered databases, and what
//! every [`Store`](crate::Store) on it shares — the database map, the turns
//! of units that keep conflicting, the count of clients waiting for keys,
//! and the signal that it is closing.
//!
//! Invariants:
//! - The `Keyspace` owns the `Db`: the pool closes when the last
//!   `Arc<Keyspace>` goes (the server arranges that only after every
//!   connection has ended).
//! - `closing` goes from false to true once and never back; background work
//!   (the collection reclaimer) and long scans poll it, so closing does not
//!   wait for them.

use std::path::Path;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;

use persimmon::{Db, Options};

use crate::dbs::{BadMap, Databases};
use crate::error::Error;
use crate::turns::Turns;

/// Redis's default number of databases (`SELECT 0` to `SELECT 15`).
pub const DEFAULT_DATABASES: usize = 16;

/// One pool as Redis's databases, shared by every store on it.
pub struct Keyspace {
    pub db: Db,
    /// The databases and the namespace each uses.
    pub dbs: Arc<Databases>,
    /// Turns for atomic units that keep conflicting (`turns.rs`).
    pub turns: Turns,
    /// Clients waiting for keys to get values (see [`Waiters`]).
    pub waiters: Arc<Waiters>,
    closing: AtomicBool,
}

impl Keyspace {
    /// The key space of an open pool with `databases` databases (the map
    /// record a `SWAPDB` left in the pool is read; a record that does not
    /// parse is refused rather than guessed at).
    pub fn new(db: Db, databases: usize) -> Result<Keyspace, BadMap> {
        let dbs = Databases::load(&db, databases)?;
        Ok(Keyspace {
            db,
            dbs: Arc::new(dbs),
            turns: Turns::default(),
            waiters: Arc::default(),
            closing: AtomicBool::new(false),
        })
    }

    /// Opens (or creates) the pool at `path` with `options` as a key space
    /// of Redis's 16 databases: what `persimmon serve` serves, in-process.
    pub fn open(path: impl AsRef<Path>, options: Options) -> Result<Arc<Keyspace>, Error> {
        let db = Db::open(path, options)?;
        let keyspace = Keyspace::new(db, DEFAULT_DATABASES)
            .map_err(|e| Error::new(format!("ERR the database map does not parse: {}", e.0)))?;
        Ok(Arc::new(keyspace))
    }

    /// Asks background work and long scans to stop.
    pub fn close(&self) {
        self.closing.store(true, Ordering::Release);
    }

    pub fn is_closing(&self) -> bool {
        self.closing.load(Ordering::Acquire)
    }
}

/// How many clients wait for some key to get a value (a blocking pop, in
/// the server). While none does, a write records nothing for them: one
/// atomic load. A waiter is counted *before* it re-checks its keys, so a
/// write either sees the count or is seen by that re-check (both sides
/// `SeqCst`).
#[derive(Default)]
pub struct Waiters(AtomicUsize);

impl Waiters {
    pub fn add(&self) {
        self.0.fetch_add(1, Ordering::SeqCst);
    }

    pub fn remove(&self) {
        self.0.fetch_sub(1, Ordering::SeqCst);
    }

    /// Whether any client waits: the fast path of every write.
    pub fn any(&self) -> bool {
        self.0.load(Ordering::SeqCst) > 0
    }

    /// How many clients wait (a statistic).
    pub fn count(&self) -> usize {
        self.0.load(Ordering::Relaxed)
    }
}
