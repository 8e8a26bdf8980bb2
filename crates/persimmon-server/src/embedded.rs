//! The server's commands in-process, without a network: a pool opened as
//! `persimmon serve` opens it and one client session on it. For harnesses
//! that need the server's own writes — the crash harness replays each
//! command's engine batch under its persistence-domain simulator
//! (`crashtest`'s `collections` workload) — and for checking a pool's
//! collections (`coll::check`).
//!
//! Invariants: every call runs as one atomic unit of the session's store
//! (as a command inside EXEC does), so each call is exactly one engine
//! batch, which [`Embedded::call`] returns; no background thread runs (the
//! reclaimer runs only when [`Embedded::reclaim`] is called).

use std::path::Path;
use std::sync::Arc;

use crate::client::ClientInfo;
use crate::commands::table::COMMANDS;
use crate::config::Config;
use crate::dispatch::execute;
use crate::session::Session;
use crate::shared::Shared;
use persimmon_resp::Args;
pub use persimmon_types::store::Captured;
use persimmon_types::Keyspace;

/// A pool and one client session on it.
pub struct Embedded {
    session: Session,
}

impl Embedded {
    /// Opens (creating if needed) the pool at `path` with the server's
    /// default configuration.
    pub fn open(path: &Path) -> Result<Embedded, String> {
        let config = Config {
            pool: path.to_path_buf(),
            ..Config::default()
        };
        let options = config.engine_options()?;
        let db = persimmon::Db::open(path, options).map_err(|e| e.to_string())?;
        let keyspace = Keyspace::new(db, config.databases)
            .map_err(|e| format!("the database map does not parse: {e:?}"))?;
        let addr = "127.0.0.1:0".parse().expect("an address");
        let shared = Arc::new(Shared::new(Arc::new(keyspace), config, None, addr));
        let info = Arc::new(ClientInfo::new(1, addr, addr, -1, 0));
        let mut session = Session::new(shared, info, &COMMANDS);
        session.store.capture = Some(Vec::new());
        Ok(Embedded { session })
    }

    /// Runs one command as one atomic unit; returns its reply (RESP2
    /// bytes) and the writes of the batch it committed (empty if it wrote
    /// nothing).
    pub fn call(&mut self, args: &[&[u8]]) -> Result<(Vec<u8>, Captured), String> {
        let mut data = Vec::new();
        let mut ranges = Vec::new();
        for a in args {
            ranges.push(data.len()..data.len() + a.len());
            data.extend_from_slice(a);
        }
        let s = &mut self.session;
        s.out.buf.clear();
        s.store.begin();
        execute(s, Args::new(&data, &ranges));
        if !s.store.commit(&[]).map_err(|e| e.0.to_string())? {
            return Err("the unit conflicted (no other client runs: a bug)".into());
        }
        let reply = std::mem::take(&mut s.out.buf);
        Ok((reply, self.take_captured().pop().unwrap_or_default()))
    }

    /// Makes the random choices of this thread's calls (tree ids, SPOP,
    /// SRANDMEMBER...) a function of `seed`, so a run can be replayed.
    pub fn seed(&mut self, seed: u64) {
        persimmon_types::random::seed_thread(seed);
    }

    /// One round of the collection reclaimer; returns the batches it
    /// committed, in order.
    pub fn reclaim(&mut self) -> Result<Vec<Captured>, String> {
        self.take_captured();
        persimmon_types::coll::reclaim::round_in(&mut self.session.store)
            .map_err(|e| e.0.to_string())?;
        Ok(self.take_captured())
    }

    /// The structural check of every collection (`coll::check`): its
    /// counts on success.
    pub fn check(&mut self) -> Result<persimmon_types::coll::check::Report, String> {
        persimmon_types::coll::check::all(&mut self.session.store).map_err(|e| e.0.to_string())
    }

    fn take_captured(&mut self) -> Vec<Captured> {
        self.session
            .store
            .capture
            .replace(Vec::new())
            .unwrap_or_default()
    }
}
