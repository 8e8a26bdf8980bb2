//! The server's commands in-process, without a network: a pool opened as
//! `persimmon serve` opens it and one client session on it. For harnesses
//! that need the server's own writes — the crash harness replays each
//! command's engine batch under its persistence-domain simulator
//! (`crashtest`'s `collections` workload) — and for checking a pool's
//! collections (`coll::check`).
//!
//! Invariants: every call runs as one atomic unit of the session's store,
//! so each call is exactly one engine batch (none if it wrote nothing),
//! which it returns: [`Embedded::call`] runs one command in it (as a
//! command inside EXEC runs); [`Embedded::call_combined`] runs several, all
//! of them commands a pipeline's run may combine (`unit_run::joins`),
//! through the server's own run of combined writes (`unit_run::execute`),
//! collections parked between them and encoded once at the commit — the
//! batch is the whole run's, all its commands or none. No background thread
//! runs (the reclaimer runs only when [`Embedded::reclaim`] is called).

use std::path::Path;
use std::sync::Arc;

use crate::client::ClientInfo;
use crate::commands::table::COMMANDS;
use crate::config::Config;
use crate::dispatch::{execute, run_in_unit};
use crate::runs::{OwnedRun, Run};
use crate::session::Session;
use crate::shared::Shared;
use crate::unit_run::{self, Part};
use persimmon_resp::Request;
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
        let acl = crate::acl::Acl::from_config(&config, &COMMANDS)?;
        let shared = Arc::new(Shared::new(Arc::new(keyspace), config, None, addr, acl));
        let info = Arc::new(ClientInfo::new(1, addr, addr, -1, 0));
        let mut session = Session::new(shared, info, &COMMANDS);
        session.store.capture = Some(Vec::new());
        Ok(Embedded { session })
    }

    /// Runs one command as one atomic unit; returns its reply (RESP2
    /// bytes) and the writes of the batch it committed (empty if it wrote
    /// nothing).
    pub fn call(&mut self, args: &[&[u8]]) -> Result<(Vec<u8>, Captured), String> {
        let request = Request::from_words(args);
        let s = &mut self.session;
        s.out.buf.clear();
        s.store.begin();
        execute(s, request.args());
        if !s.store.commit(&[]).map_err(|e| e.0.to_string())? {
            return Err("the unit conflicted (no other client runs: a bug)".into());
        }
        let reply = std::mem::take(&mut s.out.buf);
        Ok((reply, self.take_captured().pop().unwrap_or_default()))
    }

    /// Runs `commands` as one atomic unit, as the server runs a pipeline's
    /// run of combined writes (`unit_run`: collections parked between the
    /// commands, the unit committed as one batch); returns each command's
    /// reply (RESP2 bytes) and the writes of the one batch the unit
    /// committed (empty if it wrote nothing). Every command must be one a
    /// run may hold (`unit_run::joins`); if one is not, or one fails, the
    /// error names it and nothing is written.
    pub fn call_combined(
        &mut self,
        commands: &[&[&[u8]]],
    ) -> Result<(Vec<Vec<u8>>, Captured), String> {
        if commands.is_empty() {
            return Err("no commands to combine".into());
        }
        let owned = OwnedRun::from_words(commands);
        let s = &mut self.session;
        let run = owned.view();
        let mut rows = Vec::with_capacity(commands.len());
        for (i, command) in commands.iter().enumerate() {
            match unit_run::joins(s, &run.args(i)) {
                Some(row) => rows.push(row),
                None => return Err(format!("{} may not join a run", show(command))),
            }
        }
        // One part per command: each part's replies are its command's.
        let parts: Vec<Part<'_>> = (0..run.len())
            .map(|i| Part {
                db: s.store.db,
                resp3: s.out.resp3,
                run: run.request(i),
                rows: &rows[i..i + 1],
            })
            .collect();
        s.out.buf.clear();
        self.take_captured();
        let s = &mut self.session;
        let Some(replies) = unit_run::execute(s, &parts) else {
            return Err(self.why_not_combined(&run, &rows, commands));
        };
        let s = &mut self.session;
        unit_run::count(s, &rows, 0);
        let out = std::mem::take(&mut s.out.buf);
        let replies = replies.into_iter().map(|r| out[r].to_vec()).collect();
        let mut batches = self.take_captured();
        if batches.len() > 1 {
            return Err(format!("the unit committed {} batches", batches.len()));
        }
        Ok((replies, batches.pop().unwrap_or_default()))
    }

    /// Why a combined run did not commit: the first of its commands that
    /// fails when run one by one in a unit that is then dropped (nothing
    /// written).
    fn why_not_combined(&mut self, run: &Run<'_>, rows: &[usize], commands: &[&[&[u8]]]) -> String {
        let s = &mut self.session;
        let (mark, errors) = (s.out.len(), s.out.errors.clone());
        s.store.begin();
        let mut why = None;
        for (i, &row) in rows.iter().enumerate() {
            let start = s.out.len();
            if run_in_unit(s, row, run.args(i)) {
                let reply = String::from_utf8_lossy(&s.out.buf[start..]).into_owned();
                why = Some(format!(
                    "{} replied {}",
                    show(commands[i]),
                    reply.trim_end()
                ));
                break;
            }
        }
        s.store.abort();
        s.out.buf.truncate(mark);
        s.out.errors = errors;
        why.unwrap_or_else(|| {
            "the combined run did not commit, though no command fails one by one".into()
        })
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

/// A command for a message: its words, lossily as text.
fn show(args: &[&[u8]]) -> String {
    let words: Vec<String> = args
        .iter()
        .map(|a| String::from_utf8_lossy(a).into_owned())
        .collect();
    format!("{words:?}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(s: &str) -> Vec<&[u8]> {
        s.split(' ').map(str::as_bytes).collect()
    }

    /// A combined run's replies and final state are the commands' one by
    /// one, in one batch; a failing command writes nothing and is named.
    #[test]
    fn combined_calls_are_one_batch_of_the_same_outcome() {
        let dir = tempfile::tempdir().expect("a directory");
        let mut one = Embedded::open(&dir.path().join("one.pool")).expect("a pool");
        let mut all = Embedded::open(&dir.path().join("all.pool")).expect("a pool");
        let mut fill = vec!["RPUSH", "q"];
        let items: Vec<String> = (0..600).map(|i| format!("element-{i:05}")).collect();
        fill.extend(items.iter().map(String::as_str));
        let fill: Vec<&[u8]> = fill.iter().map(|w| w.as_bytes()).collect();
        one.call(&fill).expect("a fill");
        all.call(&fill).expect("a fill");
        let script = [
            "LPUSH q a b c",
            "RPOP q",
            "LPOP q",
            "RPUSH q x y",
            "HSET h f 1 g 2",
            "HDEL h f",
            "HINCRBY h g 5",
            "ZADD z 1 m 2 n 3 o",
            "ZPOPMIN z",
            "ZINCRBY z 10 n",
            "SADD s a b c",
            "SREM s b",
            "SPOP s",
        ];
        let cmds: Vec<Vec<&[u8]>> = script.iter().map(|c| words(c)).collect();
        // The two share this thread's random draws (tree ids, SPOP): each
        // runs the script from the same seed.
        one.seed(5);
        let mut expected = Vec::new();
        for c in &cmds {
            expected.push(one.call(c).expect("a command").0);
        }
        let refs: Vec<&[&[u8]]> = cmds.iter().map(Vec::as_slice).collect();
        all.seed(5);
        let (replies, batch) = all.call_combined(&refs).expect("a combined run");
        assert_eq!(replies, expected);
        assert!(!batch.is_empty());
        for read in [
            "LRANGE q 0 -1",
            "HGETALL h",
            "ZRANGE z 0 -1 WITHSCORES",
            "SMEMBERS s",
        ] {
            let a = one.call(&words(read)).expect("a read").0;
            let b = all.call(&words(read)).expect("a read").0;
            assert_eq!(a, b, "{read}");
        }
        all.check().expect("the collections check");

        let bad: Vec<Vec<&[u8]>> = ["RPUSH q more", "SADD q x"]
            .iter()
            .map(|c| words(c))
            .collect();
        let refs: Vec<&[&[u8]]> = bad.iter().map(Vec::as_slice).collect();
        let e = all.call_combined(&refs).expect_err("a wrong type");
        assert!(e.contains("SADD") && e.contains("WRONGTYPE"), "{e}");
        let e = all
            .call_combined(&[&words("LRANGE q 0 1")])
            .expect_err("not a combined write");
        assert!(e.contains("LRANGE"), "{e}");
        let len = all.call(&words("LLEN q")).expect("a read").0;
        assert_eq!(len, one.call(&words("LLEN q")).expect("a read").0);
    }
}
