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
//! Consecutive plain `GET key` requests likewise collect in a run read by
//! one `Db::get_many_with` (their cache misses overlapped), each answered
//! and counted (keyspace hits and misses, WRONGTYPE for another type) as
//! `strings::get` answers it.
//!
//! Consecutive writes of the commands `unit_run.rs` names (a collection's
//! pushes, pops, adds, removes, field sets: any keys, the same key or not)
//! collect in a run the connection hands to the combiner (`combiner/`),
//! which executes it as one atomic unit of the store, alone or with other
//! connections' runs.
//!
//! Invariants:
//! - Replies are queued only after the engine call returned, and the
//!   grouped write is durable on return: every `+OK` a client receives
//!   acknowledges a durable write, as for a single `SET`.
//! - The outcome is that of executing the run's requests one by one, in
//!   order: a run holds only requests that `execute` would run as a plain
//!   overwrite or read (exactly three arguments, `SET` with no option, or
//!   `GET key`; outside
//!   `MULTI`; authenticated; not refused by the settings: see
//!   `dispatch::runnable_as`), and a run ends before any other request, so
//!   nothing observes the session between its requests.
//! - Other clients see a run's writes in request order, as they would see
//!   single SETs: the grouped write stores the keys' words, then their
//!   DRAM copies, in the order of the run's requests (x86 keeps stores in
//!   program order), and a key
//!   appears at most once in a run — a SET of a key already in the run
//!   starts a new run — so no later SET's value shows before an earlier
//!   one's. (What the run does not keep is durability per request: a crash
//!   while it runs may keep a later SET and lose an earlier one; none of
//!   them had been answered.)
//! - When the run cannot go as one (a key or value over its limit, a client
//!   blocked on keys — whose serving order per command the run would not
//!   keep —, or the grouped write failed, which writes nothing), its
//!   requests are executed one by one through `execute`, each getting its
//!   own reply or error.
//! - A run of one request is executed through `execute` directly: a lone
//!   `SET` (`-P 1`) pays nothing for this room.
//! - A run of SETs holds at most `MAX_RUN` requests and `MAX_RUN_BYTES`
//!   of keys and values, well within the engine's batch limits; a run of
//!   GETs at most `MAX_GET_RUN` (their replies' size is not known before).
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
use persimmon_resp::Args;
use persimmon_types::error::{check_key, may_exist, wrongtype};
use persimmon_types::value::{self, Stored, MAX_STRING_BYTES};

use crate::commands::blocking::serve_ready;
use crate::dispatch::{execute, runnable_as};
use crate::runs::{OwnedRun, Run};
use crate::session::Session;
use crate::unit_run;

/// Most requests in one run of SETs.
pub const MAX_RUN: usize = 128;
/// Most bytes of keys and values in one run of SETs.
pub const MAX_RUN_BYTES: usize = 1 << 20;
/// Most requests in one run of GETs: their replies are queued before the
/// connection next checks its output limits (one by one, after each GET),
/// so the run is kept to one chunk of the engine's batched read.
pub const MAX_GET_RUN: usize = 16;
/// Most requests in one run of combined writes (`unit_run.rs`).
pub const MAX_UNIT_RUN: usize = 64;

/// What [`Pipeline::offer`] did with a request.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Offer {
    Joined,
    /// It may not join a run.
    Refused,
    /// It starts a new run: the pending one must run first.
    RunFirst,
}

/// What a run is made of.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kind {
    /// `SET key value`: one grouped engine write.
    Set,
    /// `GET key`: one batched engine read (`Db::get_many_with`).
    Get,
    /// Writes `unit_run` combines: one atomic unit of the store.
    Unit,
}

/// The requests of the run being collected: each one's arguments as
/// ranges of the connection's input buffer.
#[derive(Default)]
pub struct Pipeline {
    kind: Option<Kind>,
    /// Each request: where its arguments' ranges are in `args`.
    reqs: Vec<Range<usize>>,
    args: Vec<Range<usize>>,
    /// A hash of each SET's key: a key already in the run ends the run.
    keys: Vec<u64>,
    bytes: usize,
    /// Reused between runs.
    batch: WriteBatch,
}

impl Pipeline {
    pub fn new() -> Pipeline {
        Pipeline::default()
    }

    pub fn is_empty(&self) -> bool {
        self.reqs.is_empty()
    }

    /// Takes request `args` into the run if it may join one (a plain `SET`
    /// or `GET`, or a write `unit_run.rs` combines); `base`: where the
    /// buffer `args` was parsed from starts in `input`. `from_input`: the
    /// request was a multibulk one, whose arguments stay in the input (an
    /// inline request's do not). Takes nothing when the answer is
    /// [`Offer::Refused`] (the caller runs the pending run, then executes
    /// the request itself) or [`Offer::RunFirst`] (the request starts a
    /// new run: the caller runs the pending one, then offers it again).
    pub fn offer(
        &mut self,
        s: &mut Session,
        args: &Args<'_>,
        base: usize,
        from_input: bool,
    ) -> Offer {
        // While replication is on, every write runs through `execute`,
        // which propagates it in order (`repl/`).
        if !from_input || s.shared.repl.is_active() {
            return Offer::Refused;
        }
        // A monitor, or a slow log that keeps every command, sees each
        // request run on its own (`observe.rs`).
        if crate::observe::wants_each(s) {
            return Offer::Refused;
        }
        let kind = if runnable_as(s, args, "set", 3).is_some() {
            Kind::Set
        } else if runnable_as(s, args, "get", 2).is_some() {
            Kind::Get
        } else if unit_run::joins(s, args).is_some() {
            Kind::Unit
        } else {
            return Offer::Refused;
        };
        let hash = match kind {
            Kind::Set => fnv(args.get(1)),
            Kind::Get | Kind::Unit => 0,
        };
        if self.kind != Some(kind) || (kind == Kind::Set && self.keys.contains(&hash)) {
            if !self.reqs.is_empty() {
                return Offer::RunFirst;
            }
            self.kind = Some(kind);
        }
        if kind == Kind::Set {
            self.keys.push(hash);
        }
        let first = self.args.len();
        self.args.extend((0..args.len()).map(|i| {
            let r = args.range(i);
            base + r.start..base + r.end
        }));
        self.bytes += args.iter().skip(1).map(<[u8]>::len).sum::<usize>();
        self.reqs.push(first..self.args.len());
        Offer::Joined
    }

    /// The pending run, copied out of `input`, when it is a run of
    /// combined writes (`unit_run.rs`) the connection hands to the
    /// combiner (`combiner/`); `None` (and nothing taken) otherwise.
    pub fn take_unit(&mut self, input: &[u8]) -> Option<OwnedRun> {
        if self.kind != Some(Kind::Unit) || self.reqs.is_empty() {
            return None;
        }
        let owned = OwnedRun::copy(input, &self.args, std::mem::take(&mut self.reqs));
        self.args.clear();
        self.bytes = 0;
        Some(owned)
    }

    /// Whether the run must execute before another request may join it.
    pub fn is_full(&self) -> bool {
        match self.kind {
            Some(Kind::Get) => self.reqs.len() >= MAX_GET_RUN,
            Some(Kind::Unit) => self.reqs.len() >= MAX_UNIT_RUN || self.bytes >= MAX_RUN_BYTES,
            _ => self.reqs.len() >= MAX_RUN || self.bytes >= MAX_RUN_BYTES,
        }
    }

    /// Executes the pending run of SETs or GETs (see the module header)
    /// against `input`, the buffer its ranges point into, and empties it. A
    /// run of combined writes is not run here: the connection takes it
    /// ([`take_unit`](Self::take_unit)) to the combiner.
    pub fn run(&mut self, s: &mut Session, input: &[u8]) {
        let reqs = std::mem::take(&mut self.reqs);
        let args = std::mem::take(&mut self.args);
        self.bytes = 0;
        self.keys.clear();
        let run = Run::new(input, &args, &reqs);
        match (reqs.len(), self.kind) {
            (0, _) | (_, None) => {}
            (1, Some(_)) => one_by_one(s, &run),
            (_, Some(Kind::Set)) => {
                if !self.run_grouped(s, &run) {
                    one_by_one(s, &run);
                }
            }
            (_, Some(Kind::Get)) => run_gets(s, &run),
            (_, Some(Kind::Unit)) => {
                debug_assert!(false, "a run of combined writes goes to the combiner");
                one_by_one(s, &run);
            }
        }
        // Keep the buffers' allocations for the next run.
        (self.reqs, self.args) = (reqs, args);
        self.reqs.clear();
        self.args.clear();
    }

    /// The run as one grouped engine write; `false` (nothing written,
    /// nothing replied) when it cannot go as one.
    fn run_grouped(&mut self, s: &mut Session, run: &Run<'_>) -> bool {
        if s.shared.blocked.any() {
            return false;
        }
        let Some(row) = runnable_as(s, &run.args(0), "set", 3) else {
            return false;
        };
        let started = Instant::now();
        self.batch.clear();
        for i in 0..run.len() {
            let (key, body) = (run.arg(i, 1), run.arg(i, 2));
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
            // Replication turned on since the run was offered: the SETs go
            // one by one through `execute`, which propagates them.
            if s.shared.repl.is_active() {
                false
            } else {
                let keys = (0..run.len()).map(|i| run.arg(i, 1));
                let written = s.store.write_grouped(&self.batch, keys);
                if written.is_ok() {
                    serve_ready(s);
                }
                written.is_ok()
            }
        };
        s.map = Some(map);
        if !written {
            return false;
        }
        s.counters.group_runs += 1;
        s.counters.group_commands += run.len() as u64;
        let share = started.elapsed().as_nanos() as u64 / run.len() as u64;
        for _ in 0..run.len() {
            s.out.ok();
            s.count_call(row, share, false);
        }
        true
    }
}

/// A run of GETs as one batched engine read (`Store::get_many`): each
/// request's reply as `strings::get` gives it (the value, a null, or
/// WRONGTYPE for another type), counted alike. When the read fails part
/// way, the requests it answered keep their replies and the rest are
/// executed one by one (the failing one gets its own error).
fn run_gets(s: &mut Session, run: &Run<'_>) {
    let Some(row) = runnable_as(s, &run.args(0), "get", 2) else {
        return one_by_one(s, run);
    };
    let started = Instant::now();
    let keys: Vec<&[u8]> = (0..run.len()).map(|i| run.arg(i, 1)).collect();
    let mut failed = [false; MAX_GET_RUN];
    let (mut done, mut hits) = (0, 0);
    let map = s.map.take().expect("the map is back between commands");
    let result = {
        let _held = map.shared();
        let out = &mut s.out;
        s.store.get_many(&keys, |i, v| {
            match v {
                None => out.null(),
                Some(Stored::String(body)) => out.bulk(body),
                Some(_) => {
                    out.error(&wrongtype().0);
                    failed[i] = true;
                }
            }
            hits += v.is_some() as u64;
            done = i + 1;
        })
    };
    s.map = Some(map);
    s.counters.hits += hits;
    s.counters.misses += done as u64 - hits;
    let share = started.elapsed().as_nanos() as u64 / run.len() as u64;
    for &failed in &failed[..done] {
        s.count_call(row, share, failed);
    }
    if result.is_err() {
        one_by_one(s, &run.from(done));
    }
}

/// FNV-1a of a key (a repeat check; a collision only ends a run early).
fn fnv(key: &[u8]) -> u64 {
    key.iter().fold(0xcbf2_9ce4_8422_2325, |h, &b| {
        (h ^ b as u64).wrapping_mul(0x0100_0000_01b3)
    })
}

/// Executes the requests of `run` one by one, as if no run had been made.
pub fn one_by_one(s: &mut Session, run: &Run<'_>) {
    for i in 0..run.len() {
        execute(s, run.args(i));
    }
}
