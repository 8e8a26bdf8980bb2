//! Optimistic transactions (`Db::transaction`), each racing a plain put of
//! a key it read, with the point index in the pool and in DRAM.
//!
//! | workload | persist path it covers                                        |
//! |----------|---------------------------------------------------------------|
//! | txn      | a transaction's commit (validation under the locks of the     |
//! |          | keys it read and writes, then one atomic batch: records and   |
//! |          | undo record, fences A to D, to F with a delete), racing a put |
//! |          | of a key it read on another thread: before its commit (the    |
//! |          | commit conflicts, the closure runs again on the new value),   |
//! |          | and held at each of its commit fences (the put waits for the  |
//! |          | transaction's lock and lands after it); a read-only one; a    |
//! |          | crash in a commit recovered from (undo, or finished deletes), |
//! |          | a transaction and a batch right after that open               |
//! | dram-txn | `txn` with the point index in DRAM (the node record words);   |
//! |          | the writes after the recovery run beside the engine's rebuild |
//! |          | of the DRAM index, held at its first fence                    |
//!
//! A transaction (`Txn`) reads some keys and writes others: puts of values
//! derived from what it read (`derive`), deletes, a deadline on some. The
//! racing put writes the first key read, which the transaction never
//! writes (two writers of one key in flight would need the expectation to
//! know their order). Every run is a function of its seed: the racing put
//! runs either inside the first attempt's closure, to completion, after the
//! reads (so that attempt must conflict and the second commit on the new
//! value), or is started while the committing thread is held at its commit
//! fence number `n` (`Gate`), when it holds the locks of every key it read,
//! so the put waits for it whenever it starts (the run fails if the put
//! finished while the commit was held); the thread is let go 20 ms later.
//! The order of the two is therefore fixed, and with it every value.
//!
//! What the oracle checks: the transaction's writes form a group
//! (`Expect::groups`): at every crash point all of them or none are on
//! media; once it returned, all of them. The racing put is judged per key,
//! as any put. The operation itself checks that the closure ran exactly as
//! often as the race makes it (twice when the put came between its reads
//! and its commit, else once) and that the committing attempt read what the
//! serial order says (the racing put's value, or the value before it).
//!
//! Invariants of these workloads: the pool is at format 4 before the first
//! raced commit (an unexplored batch raises it), so every fence of a
//! commit comes after its locks are taken; no commit needs a split (a few
//! dozen keys), which would release the locks midway.

use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use persimmon::{Db, Transaction};
use rand::Rng;

use super::ops::{announced, exec, Op, Write};
use super::{crash_in, fill, key, small_value, Ctx, Finished};
use crate::oracle::{show, show_key, Held, Key, State, Val};
use crate::sim::{lock, Gate, Sim, SimConfig};

/// Keys read (and raced) by the workload's transactions: `txr-*`; keys
/// they write: `txw-*`.
const READ_KEYS: u64 = 4;
const WRITE_KEYS: u64 = 8;

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
pub(super) fn exec_txn(sim: &Sim, db: &Db, t: &Txn) -> Result<(), String> {
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

/// Transactions racing puts (before the commit, at every commit fence),
/// a read-only one, and a crash in a commit recovered from.
pub fn txn(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    fill(&mut c, "txr", READ_KEYS);
    fill(&mut c, "txw", WRITE_KEYS);
    // Raises the pool to format 4 (unexplored): later commits fence only
    // after taking their locks.
    c.run(Op::Batch(vec![Write::Put(key("txw", 99), b"v4".to_vec())]));
    c.explore(true);
    let plain = transaction(&mut c, 0, Race::None);
    c.run_on(0, Op::Txn(plain));
    let v = small_value(&mut c.rng);
    let before = transaction(&mut c, 1, Race::BeforeCommit(v));
    c.run_on(0, Op::Txn(before));
    let fences = if cfg.options.ordered_index { 8 } else { 6 };
    let held = Arc::new(AtomicU64::new(0));
    for fence in 0..fences {
        let race = Race::AtFence {
            fence,
            value: small_value(&mut c.rng),
            held: held.clone(),
        };
        let t = transaction(&mut c, 2 + fence, race);
        c.run_on(0, Op::Txn(t));
    }
    // Fences A to D at least: a put that never met a held commit raced
    // nothing.
    let held = held.load(Ordering::SeqCst);
    c.add_note(format!(
        "{held} of {fences} racing puts waited for a held commit"
    ));
    if held < 4 && !c.broken {
        c.sim.fail(format!(
            "txn: only {held} racing puts met a commit held at its fence"
        ));
    }
    let read_only = Txn {
        reads: vec![key("txr", 0), key("txw", 3)],
        writes: Vec::new(),
        race: Race::None,
    };
    c.run_on(0, Op::Txn(read_only));
    for i in 0..READ_KEYS {
        c.run(Op::Get(key("txr", i)));
    }
    // A crash in a commit that deletes (unexplored up to the capture).
    let fence = c.rng.gen_range(0..6);
    let last = transaction(&mut c, 20, Race::None);
    let side = Txn {
        reads: vec![key("txr", 1)],
        writes: vec![
            (
                key("txl", 0),
                TxWrite::Derived {
                    tag: 7,
                    deadline: None,
                },
            ),
            (
                key("txl", 1),
                TxWrite::Derived {
                    tag: 8,
                    deadline: None,
                },
            ),
        ],
        race: Race::None,
    };
    let beside = vec![Op::Txn(side), Op::Batch(vec![Write::Delete(key("txl", 0))])];
    crash_in(&mut c, Op::Txn(last), fence, beside);
    let after = transaction(&mut c, 21, Race::None);
    c.run(Op::Txn(after));
    c.finish()
}

/// Transaction number `i`: reads two `txr` keys (the first raced), puts
/// derived values to two `txw` keys (one with a deadline every third time)
/// and deletes a present third one (so its commit has fences E and F);
/// every fourth one also creates a new key (not when held at a fence: the
/// new key's node links would shift the fence numbers on ordered pools).
fn transaction(c: &mut Ctx, i: u64, race: Race) -> Txn {
    let raced = key("txr", i % READ_KEYS);
    let other = key(
        "txr",
        (i + 1 + c.rng.gen_range(0..READ_KEYS - 1)) % READ_KEYS,
    );
    let w = |j: u64| key("txw", (i * 3 + j) % WRITE_KEYS);
    let deadline = (i % 3 == 2).then(|| lock(&c.sim.expect).now_ms + 60_000);
    let mut writes = vec![
        (
            w(0),
            TxWrite::Derived {
                tag: c.rng.gen(),
                deadline: None,
            },
        ),
        (
            w(1),
            TxWrite::Derived {
                tag: c.rng.gen(),
                deadline,
            },
        ),
    ];
    let doomed = (2..WRITE_KEYS)
        .map(w)
        .find(|k| lock(&c.sim.expect).current(k).is_some());
    if let Some(k) = doomed {
        writes.push((k, TxWrite::Delete));
    }
    if i.is_multiple_of(4) && !matches!(race, Race::AtFence { .. }) {
        writes.push((
            key("txn-new", i),
            TxWrite::Derived {
                tag: c.rng.gen(),
                deadline: None,
            },
        ));
    }
    Txn {
        reads: vec![raced, other],
        writes,
        race,
    }
}
