//! Runs of a pipeline executed as one engine call (group commit, issue 19).
//!
//! A client that pipelines sends many requests per read. The connection
//! (`conn.rs`) offers each complete request here; consecutive plain
//! `SET key value` requests collect in a *run*, which executes as one
//! grouped engine write (`Db::write_grouped`: two fences for the whole run,
//! where a `put` per SET costs two each). Then each request gets exactly
//! the reply and bookkeeping `execute` would have given it: `+OK`, a call
//! of `set` in `INFO commandstats` (timed as `Tally::times` picks, each
//! timed call charged the run's time divided by its length), the command
//! count, `CLIENT LIST`'s last command, the blocked clients served.
//!
//! Invariants:
//! - Replies are queued only after the engine call returned, and the
//!   grouped write is durable on return: every `+OK` a client receives
//!   acknowledges a durable write, as for a single `SET`.
//! - The outcome is that of executing the run's requests one by one, in
//!   order: a run holds only requests that `execute` would run as a plain
//!   overwrite (exactly three arguments, `SET` with no option; outside
//!   `MULTI`; authenticated; not refused by the settings: see
//!   `commands::runnable_as`), and a run ends before any other request, so
//!   nothing observes the session between its requests. Two SETs of one key
//!   in a run leave the later value (the engine's rule for a batch). Other
//!   clients may see some keys of a run written before others — as they
//!   may when the SETs run one by one.
//! - When the run cannot go as one (a key or value over its limit, a client
//!   blocked on keys — whose serving order per command the run would not
//!   keep —, or the grouped write failed, which writes nothing), its
//!   requests are executed one by one through `execute`, each getting its
//!   own reply or error.
//! - A run of one request is executed through `execute` directly: a lone
//!   `SET` (`-P 1`) pays nothing for this room.
//! - A run holds at most `MAX_RUN` requests and `MAX_RUN_BYTES` of keys
//!   and values, well within the engine's batch limits.
//!
//! What a plain `SET` does besides the engine write (`commands/strings.rs`,
//! `store.rs`), and how a run keeps it: the key and value length checks
//! (done for the whole run first); the value encoded with its type tag;
//! the overwrite of a key of any type — a collection's meta record is
//! replaced, and its pages are reclaimed in the background from the
//! registry (`coll/reclaim.rs`), as after a single SET; WATCH needs
//! nothing (EXEC compares versions, and every write changes the key's
//! version); blocked clients' `signal_ready` (only with clients blocked,
//! and then the run is not used).

use std::ops::Range;
use std::time::Instant;

use persimmon::WriteBatch;

use crate::commands::{execute, runnable_as, serve_ready};
use crate::protocol::Args;
use crate::session::{check_key, may_exist, Session};
use crate::value::{self, MAX_STRING_BYTES};

/// Most requests in one run.
pub const MAX_RUN: usize = 512;
/// Most bytes of keys and values in one run.
pub const MAX_RUN_BYTES: usize = 1 << 20;

/// The requests of the run being collected: each one's three arguments
/// (command, key, value) as ranges of the connection's input buffer.
#[derive(Default)]
pub struct Pipeline {
    sets: Vec<[Range<usize>; 3]>,
    bytes: usize,
    /// Reused between runs.
    batch: WriteBatch,
}

impl Pipeline {
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    pub fn is_empty(&self) -> bool {
        self.sets.is_empty()
    }

    /// Takes request `args` into the run if it is a plain `SET` that may
    /// join it; `base`: where the buffer `args` was parsed from starts in
    /// the input. Returns `false` (and takes nothing) otherwise: the caller
    /// runs the pending run, then executes the request itself.
    /// `from_input`: the request was a multibulk one, whose arguments stay
    /// in the input (an inline request's do not).
    pub fn offer(&mut self, s: &Session, args: &Args<'_>, base: usize, from_input: bool) -> bool {
        if !from_input || runnable_as(s, args, "set", 3).is_none() {
            return false;
        }
        let at = |i: usize| {
            let r = args.range(i);
            base + r.start..base + r.end
        };
        self.bytes += args.get(1).len() + args.get(2).len();
        self.sets.push([at(0), at(1), at(2)]);
        true
    }

    /// Whether the run must execute before another request may join it.
    pub fn is_full(&self) -> bool {
        self.sets.len() >= MAX_RUN || self.bytes >= MAX_RUN_BYTES
    }

    /// Executes the pending run (see the module header) against `input`,
    /// the buffer its ranges point into, and empties it.
    pub fn run(&mut self, s: &mut Session, input: &[u8]) {
        let sets = std::mem::take(&mut self.sets);
        self.bytes = 0;
        match sets.len() {
            0 => {}
            1 => one_by_one(s, input, &sets),
            _ => {
                if !self.run_grouped(s, input, &sets) {
                    one_by_one(s, input, &sets);
                }
            }
        }
        // Keep the buffer's allocation for the next run.
        self.sets = sets;
        self.sets.clear();
    }

    /// The run as one grouped engine write; `false` (nothing written,
    /// nothing replied) when it cannot go as one.
    fn run_grouped(&mut self, s: &mut Session, input: &[u8], sets: &[[Range<usize>; 3]]) -> bool {
        if s.shared.blocked.any() {
            return false;
        }
        let Some(row) = runnable_as(s, &args_of(input, &sets[0]), "set", 3) else {
            return false;
        };
        let started = Instant::now();
        self.batch.clear();
        for [_, key, body] in sets {
            let (key, body) = (&input[key.clone()], &input[body.clone()]);
            let ek = s.store.engine_key(key);
            if check_key(key).is_err() || body.len() > MAX_STRING_BYTES || !may_exist(&ek) {
                return false;
            }
            value::string_into(body, &mut s.scratch);
            self.batch.put(&ek, &s.scratch);
        }
        let map = s.map.take().expect("the map is back between commands");
        let written = {
            let _held = map.shared();
            let keys = sets.iter().map(|[_, key, _]| &input[key.clone()]);
            let written = s.store.write_grouped(&self.batch, keys);
            if written.is_ok() {
                serve_ready(s);
            }
            written.is_ok()
        };
        s.map = Some(map);
        if !written {
            return false;
        }
        s.counters.group_runs += 1;
        s.counters.group_commands += sets.len() as u64;
        let share = started.elapsed().as_nanos() as u64 / sets.len() as u64;
        for _ in sets {
            let timed = s.tally.times(row).then_some(share);
            s.out.ok();
            s.counters.commands += 1;
            s.tally.called(row, timed, false);
        }
        s.info
            .last_command
            .store(row + 1, std::sync::atomic::Ordering::Relaxed);
        true
    }
}

/// The arguments of a run's request.
fn args_of<'a>(input: &'a [u8], ranges: &'a [Range<usize>; 3]) -> Args<'a> {
    Args::new(input, ranges)
}

/// Executes the run's requests one by one, as if no run had been made.
fn one_by_one(s: &mut Session, input: &[u8], sets: &[[Range<usize>; 3]]) {
    for ranges in sets {
        execute(s, args_of(input, ranges));
    }
}
