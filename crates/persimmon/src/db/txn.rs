//! Optimistic transactions: a closure reads and writes through a
//! [`Transaction`]; reads go to the store lock-free and remember which
//! record they saw, writes stay in the transaction; at commit the keys read
//! are validated under their bucket locks and the writes commit as one
//! atomic batch (`batch`), under the same locks.
//!
//! Invariants:
//! - Serializable for the keys a transaction reads and writes: at its commit
//!   point every key it read still names the record it read (or is still
//!   absent), checked with the locks of all its keys held until its writes
//!   are published. Expiry counts as a change (an expired key reads as
//!   absent at validation).
//! - A transaction reads its own writes (a put whose deadline has passed
//!   reads as absent, as the commit will delete the key), and reads a key
//!   the same way every time (the first read is remembered).
//! - A conflicting attempt writes nothing; the closure runs again, at most
//!   `attempts` times in all, then `TransactionConflict`. An error from the
//!   closure ends the transaction at once, with nothing written.
//! - Transaction records carry `REC_FLAG_RMW`: a concurrent put is never
//!   eliminated against them.

use std::collections::HashMap;

use super::batch::{BatchOp, Commit, ReadCheck, Version, WriteBatch};
use super::engine::{check_key, Engine};
use crate::error::{Error, Result};

/// Attempts [`Db::transaction`](super::Db::transaction) makes before giving
/// up with [`Error::TransactionConflict`].
pub const DEFAULT_TRANSACTION_ATTEMPTS: u32 = 64;

/// A transaction in progress; see [`Db::transaction`](super::Db::transaction).
pub struct Transaction<'a> {
    engine: &'a Engine,
    /// Keys read from the store: the version seen and the value returned.
    reads: HashMap<Vec<u8>, Seen>,
    /// Keys written: `None` = deleted.
    writes: HashMap<Vec<u8>, Option<Pending>>,
}

/// What a transaction's first read of a key saw (`None`s: absent).
type Seen = (Option<Version>, Option<Vec<u8>>);
/// A value a transaction will store, with its deadline.
type Pending = (Vec<u8>, Option<u64>);

impl<'a> Transaction<'a> {
    fn new(engine: &'a Engine) -> Transaction<'a> {
        Transaction {
            engine,
            reads: HashMap::new(),
            writes: HashMap::new(),
        }
    }

    /// The value of `key` as this transaction sees it (its own write of a
    /// deadline already passed reads as absent: the commit deletes the key).
    pub fn get(&mut self, key: &[u8]) -> Result<Option<Vec<u8>>> {
        if let Some(w) = self.writes.get(key) {
            let now = self.engine.expiry.now_ms();
            let live = w.as_ref().filter(|(_, d)| d.is_none_or(|d| d > now));
            return Ok(live.map(|(v, _)| v.clone()));
        }
        if let Some((_, v)) = self.reads.get(key) {
            return Ok(v.clone());
        }
        let seen = self.engine.read_record(key, |offset, h| {
            let v = self.engine.record_value(offset, h)?.into_owned();
            Ok((Version { offset, seq: h.seq }, v))
        })?;
        let (version, value) = match seen {
            Some((ver, v)) => (Some(ver), Some(v)),
            None => (None, None),
        };
        self.reads.insert(key.to_vec(), (version, value.clone()));
        Ok(value)
    }

    /// Whether `key` is present, as this transaction sees it.
    pub fn contains(&mut self, key: &[u8]) -> Result<bool> {
        Ok(self.get(key)?.is_some())
    }

    /// Stores `value` under `key` at commit (without a deadline).
    pub fn put(&mut self, key: &[u8], value: &[u8]) -> Result<()> {
        self.write(key, Some((value.to_vec(), None)))
    }

    /// Stores `value` under `key` at commit, expiring at `deadline_ms`.
    pub fn put_with_deadline(&mut self, key: &[u8], value: &[u8], deadline_ms: u64) -> Result<()> {
        self.write(key, Some((value.to_vec(), Some(deadline_ms))))
    }

    /// Deletes `key` at commit.
    pub fn delete(&mut self, key: &[u8]) -> Result<()> {
        self.write(key, None)
    }

    fn write(&mut self, key: &[u8], op: Option<(Vec<u8>, Option<u64>)>) -> Result<()> {
        check_key(key)?;
        self.writes.insert(key.to_vec(), op);
        Ok(())
    }

    /// Validates the reads and commits the writes.
    fn commit(self) -> Result<Commit> {
        let ops: Vec<BatchOp> = self
            .writes
            .into_iter()
            .map(|(key, op)| match op {
                Some((value, deadline)) => BatchOp::Put {
                    key,
                    value,
                    deadline,
                },
                None => BatchOp::Delete { key },
            })
            .collect();
        let reads: Vec<ReadCheck> = self
            .reads
            .iter()
            .map(|(key, (version, _))| ReadCheck {
                key,
                version: *version,
            })
            .collect();
        self.engine.commit_batch(&ops, &reads, true)
    }
}

/// A key's value as one versioned read saw it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Versioned {
    pub value: Vec<u8>,
    /// Ms of Unix time, or `None` for a key without a deadline.
    pub deadline: Option<u64>,
    pub version: Version,
}

impl Engine {
    /// The value, deadline and version of `key` (absent or expired: `None`),
    /// all of the one record the read found.
    pub(super) fn get_versioned(&self, key: &[u8]) -> Result<Option<Versioned>> {
        self.read_record(key, |offset, h| {
            Ok(Versioned {
                value: self.record_value(offset, h)?.into_owned(),
                deadline: self.record_deadline(offset, h)?,
                version: Version { offset, seq: h.seq },
            })
        })
    }

    /// The version of `key` (absent or expired: `None`).
    pub(super) fn version(&self, key: &[u8]) -> Result<Option<Version>> {
        self.read_record(key, |offset, h| Ok(Version { offset, seq: h.seq }))
    }

    /// Commits `batch` only if every key in `expected` still has the version
    /// given (`None`: absent), checked under the keys' locks. Returns whether
    /// it committed; on `false` nothing was written.
    pub(super) fn write_if(
        &self,
        batch: &WriteBatch,
        expected: &[(&[u8], Option<Version>)],
    ) -> Result<bool> {
        let reads: Vec<ReadCheck> = expected
            .iter()
            .map(|&(key, version)| ReadCheck { key, version })
            .collect();
        Ok(self.commit_batch(batch.ops(), &reads, true)? == Commit::Done)
    }

    /// Runs `f` in a transaction until it commits without conflict, at most
    /// `attempts` times.
    pub(super) fn transaction<R>(
        &self,
        attempts: u32,
        mut f: impl FnMut(&mut Transaction) -> Result<R>,
    ) -> Result<R> {
        for attempt in 0..attempts.max(1) {
            let mut tx = Transaction::new(self);
            let result = f(&mut tx)?;
            if tx.commit()? == Commit::Done {
                return Ok(result);
            }
            backoff(attempt);
        }
        Err(Error::TransactionConflict {
            attempts: attempts.max(1),
        })
    }
}

/// Waits a little longer after each conflict so racing transactions spread.
fn backoff(attempt: u32) {
    if attempt < 4 {
        std::thread::yield_now();
    } else {
        let micros = 1u64 << attempt.min(10);
        std::thread::sleep(std::time::Duration::from_micros(micros));
    }
}
