//! Workloads: sequences of operations that drive every persist path of the
//! engine while the simulator explores their crash points.
//!
//! | workload        | persist path it covers                                         |
//! |-----------------|----------------------------------------------------------------|
//! | insert          | pool open (first index segment), put of new keys, claim CAS    |
//! | update          | put over an existing key (record, slot, persist bit)           |
//! | delete          | delete marker, fence, final 0; re-insert after delete          |
//! | rmw             | `update()`: append, delete, keep; new key via update           |
//! | elimination     | two threads put one key; the waiter is eliminated              |
//! | split           | index segment split (fast-forwarded to just before it)         |
//! | large           | records > half a segment: runs of 1..4 segments, freeing them  |
//! | log-segments    | new log segment allocation, non-temporal records, sealing      |
//! | pool-growth     | file extension when no free segment is left                    |
//! | lanes           | three threads on three lanes, interleaved                      |
//! | reopen          | recover from a crash image, then more operations, clean reopen |
//! | cleaner         | `Db::clean_now`: live records relocated out of dirty segments  |
//! |                 | (records dead by overwrites and by deletes); new keys after it |
//! | baseline        | `Options::baseline()`: persistent bucket locks, locked reads,  |
//! |                 | slots stored with the persist bit, no elimination              |
//! | ordered-insert  | ordered index (skiplist): first open (head node); links into   |
//! |                 | the empty list, before the first node (the empty key, the      |
//! |                 | smallest keys), after the last, between neighbours, next to    |
//! |                 | hinted nodes; node segments of the 32 B, 64 B, 128 B, 1 KiB    |
//! |                 | and 8 KiB classes, and a second 8 KiB segment when one fills   |
//! | ordered-delete  | overwrites of the first, a middle and the last key (also to a  |
//! |                 | large run and back); unlink of the first, last, middle and     |
//! |                 | adjacent nodes; delete then re-insert (node slot reuse), long  |
//! |                 | keys; deletes and inserts through `update`; emptying the list  |
//! |                 | and refilling it                                               |
//! | ordered-lanes   | three threads insert and delete neighbouring keys; pairs of    |
//! |                 | writers overlap (one held at a fence while the other links or  |
//! |                 | unlinks next to it: range marks, the double check)             |
//! | ordered-reopen  | recover from a crash image with orphan nodes (the walk after   |
//! |                 | open unlinks them), a put while the walk runs, reuse of old    |
//! |                 | node slots after it, clean reopen                              |
//! | dram-insert     | `ordered-insert` with the point index in DRAM (format 3): no   |
//! |                 | index segment; a new key's node is linked with record word 0,  |
//! |                 | then the record, then the word (two-phase)                     |
//! | dram-update-    | `ordered-delete` in DRAM: overwrites move the node's record    |
//! | delete          | word (two-phase, also to a large run and back); deletes store  |
//! |                 | the marker, fence, 0, then unlink; re-inserts; `update`        |
//! | dram-cleaner    | `cleaner` in DRAM: each relocation switches the node's word    |
//! |                 | (two-phase); then new node classes take node segments on the   |
//! |                 | log segments the cleaner freed (zeroed before use)             |
//! | dram-lanes      | `ordered-lanes` in DRAM (three threads, overlapping writers)   |
//! | dram-reopen     | `ordered-reopen` in DRAM: the crash image also has a half-done |
//! |                 | record word on one of the first nodes; the engine's rebuild of |
//! |                 | the DRAM index after open is held at its first fence (helping  |
//! |                 | persist that word) while every key is read and later keys are  |
//! |                 | overwritten, deleted, re-inserted and updated (served by their |
//! |                 | nodes), then let go; orphans unlinked; clean reopen            |
//!
//! Invariants:
//! - Every workload is a function of its seed: keys, values, which
//!   operations are explored (`explore` windows) and the pool's hash seed
//!   (the harness writes the superblock, see `poolfile.rs`).
//! - An operation is announced to the simulator (`Sim::begin`) before it
//!   starts and acknowledged (`Sim::end`) after it returns, on the thread
//!   that runs it; the expectation therefore always knows which keys are in
//!   flight.
//! - Operations run one at a time, except in `elimination`, where two puts
//!   of one key overlap on purpose (both stay in flight until both return),
//!   in `ordered-lanes`' overlapping pairs (two writers of neighbouring
//!   keys), in `ordered-reopen`'s put while the walk after open runs, and
//!   in `dram-reopen`'s operations (one at a time, on a thread of their
//!   own) while the engine's rebuild of the DRAM index is held at a fence.
//! - The `ordered-*` workloads create their pools with the ordered index
//!   (superblock flag, `pool_flags`), the `dram-*` ones also with the DRAM
//!   point index; every open checks that the engine found what was asked.
//!   The `dram-*` workloads are the ordered (or generic) ones run on that
//!   placement: the workload code is shared, the paths differ underneath.

use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;
use std::time::Duration;

use persimmon::{Db, Options, PersistObserver, PointIndex, Update};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::model::{Benign, OpTraffic};
use crate::oracle::{show, show_key, Expect, Key, Val};
use crate::poolfile;
use crate::sim::{lock, mix, Gate, Sim, SimConfig, SimStats};

mod ordered;

/// Every workload by name, in the order a run visits them.
pub const WORKLOADS: &[&str] = &[
    "insert",
    "update",
    "delete",
    "rmw",
    "elimination",
    "split",
    "large",
    "log-segments",
    "pool-growth",
    "lanes",
    "reopen",
    "cleaner",
    "baseline",
    "ordered-insert",
    "ordered-delete",
    "ordered-lanes",
    "ordered-reopen",
    "dram-insert",
    "dram-update-delete",
    "dram-cleaner",
    "dram-lanes",
    "dram-reopen",
];

/// Pool geometry shared by the workloads: 64 KiB segments (a split after a
/// few thousand keys), one lane unless the workload says otherwise.
pub fn base_options() -> Options {
    Options {
        create: false,
        pool_bytes_initial: 0,
        pool_bytes_max: 256 << 20,
        segment_bytes: 64 << 10,
        lanes: 1,
        cleaner: false,
        ..Options::default()
    }
}

#[derive(Clone, Copy, Debug)]
pub enum UpdateMode {
    Append(u8),
    Delete,
    Keep,
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
        Op::Put(k, v) => {
            sim.begin("put", Some((k, Some(v.clone()))));
            let r = db.put(k, v);
            match r {
                Ok(()) => sim.end(Some((k, Some(v.clone())))),
                Err(e) => {
                    sim.end(None);
                    return Err(format!("put {}: {e}", show_key(k)));
                }
            }
        }
        Op::Delete(k) => {
            let had = lock(&sim.expect).current(k).is_some();
            sim.begin("delete", Some((k, None)));
            match db.delete(k) {
                Ok(existed) => {
                    sim.end(Some((k, None)));
                    if existed != had {
                        return Err(format!(
                            "delete {} returned existed={existed}, expected {had}",
                            show_key(k)
                        ));
                    }
                }
                Err(e) => {
                    sim.end(None);
                    return Err(format!("delete {}: {e}", show_key(k)));
                }
            }
        }
        Op::Update(k, mode) => {
            let before = lock(&sim.expect).current(k);
            let after = match mode {
                UpdateMode::Append(b) => {
                    let mut v = before.clone().unwrap_or_default();
                    v.push(*b);
                    Some(v)
                }
                UpdateMode::Delete => None,
                UpdateMode::Keep => before.clone(),
            };
            sim.begin("update", Some((k, after.clone())));
            let r = db.update(k, |cur| {
                let saw = cur.map(|c| c.to_vec());
                let decision = match (mode, &after) {
                    (UpdateMode::Keep, _) => Update::Keep,
                    (UpdateMode::Delete, _) => Update::Delete,
                    (UpdateMode::Append(_), a) => Update::Put(a.clone().unwrap_or_default()),
                };
                (decision, saw)
            });
            match r {
                Ok(saw) => {
                    sim.end(Some((k, after)));
                    if saw != before {
                        return Err(format!(
                            "update {} saw {}, expected {}",
                            show_key(k),
                            show(&saw),
                            show(&before)
                        ));
                    }
                }
                Err(e) => {
                    sim.end(None);
                    return Err(format!("update {}: {e}", show_key(k)));
                }
            }
        }
        Op::CleanNow => {
            sim.begin("clean_now", None);
            let r = db.clean_now();
            sim.end(None);
            let n = r.map_err(|e| format!("clean_now: {e}"))?;
            if n == 0 {
                return Err("clean_now found no segment to clean".into());
            }
        }
        Op::Scan => scan(sim, db)?,
        Op::Get(k) => {
            let want = lock(&sim.expect).current(k);
            sim.begin("get", None);
            let got = db.get(k);
            sim.end(None);
            let got = got.map_err(|e| format!("get {}: {e}", show_key(k)))?;
            if got != want {
                return Err(format!(
                    "get {} returned {}, expected {}",
                    show_key(k),
                    show(&got),
                    show(&want)
                ));
            }
        }
    }
    Ok(())
}

/// `Op::Scan`: the ordered listing against the expectation.
fn scan(sim: &Sim, db: &Db) -> Result<(), String> {
    let (present, in_flight) = {
        let e = lock(&sim.expect);
        let present: Vec<Key> = e
            .acked
            .iter()
            .filter(|(k, v)| v.is_some() && !e.in_flight.contains_key(*k))
            .map(|(k, _)| k.clone())
            .collect();
        let in_flight: std::collections::BTreeSet<Key> = e.in_flight.keys().cloned().collect();
        (present, in_flight)
    };
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
    backward.reverse();
    if in_flight.is_empty() {
        if backward != forward {
            return Err(format!(
                "scan: range_keys(..).rev() lists {} keys, forward {}",
                backward.len(),
                forward.len()
            ));
        }
        let (f, l) = (first.map(|e| e.0), last.map(|e| e.0));
        if f.as_ref() != forward.first() || l.as_ref() != forward.last() {
            return Err(format!(
                "scan: first/last {:?}/{:?}, the listing runs from {:?} to {:?}",
                f.as_deref().map(show_key),
                l.as_deref().map(show_key),
                forward.first().map(|k| show_key(k)),
                forward.last().map(|k| show_key(k))
            ));
        }
    }
    Ok(())
}

/// A thread that runs operations sent to it (lanes follow threads).
struct Worker {
    tx: mpsc::Sender<Op>,
    rx: mpsc::Receiver<Result<(), String>>,
    handle: Option<std::thread::JoinHandle<()>>,
}

impl Worker {
    fn spawn(sim: Arc<Sim>, db: Arc<Db>) -> Worker {
        let (tx, rx_op) = mpsc::channel::<Op>();
        let (tx_res, rx) = mpsc::channel();
        let handle = std::thread::spawn(move || {
            for op in rx_op {
                let r = exec(&sim, &db, &op);
                settle();
                if tx_res.send(r).is_err() {
                    break;
                }
            }
        });
        Worker {
            tx,
            rx,
            handle: Some(handle),
        }
    }
}

/// Lets deferred (epoch) work run at an operation boundary, so releases of
/// dead segments happen at the same place on every run.
fn settle() {
    for _ in 0..3 {
        crossbeam_epoch::pin().flush();
    }
}

/// Runs deferred (epoch) work until the queue is drained: the oracle's own
/// engines fill the global queue, of which one `flush` collects a few bags,
/// so a node or segment freed by the last operation may otherwise wait for
/// a later one.
fn drain_epoch() {
    for _ in 0..64 {
        crossbeam_epoch::pin().flush();
    }
}

/// The segments of the live pool file (the engine's mapping), by index.
fn segment_kinds(c: &Ctx) -> Vec<poolfile::SegKind> {
    std::fs::read(&c.pool)
        .ok()
        .and_then(|b| poolfile::parse(&b))
        .map(|p| p.segments)
        .unwrap_or_default()
}

/// The lanes that own log segments in the live pool file.
fn log_lanes(c: &Ctx) -> std::collections::BTreeSet<u32> {
    segment_kinds(c)
        .iter()
        .filter_map(|k| match k {
            poolfile::SegKind::Log { lane, .. } => Some(*lane),
            _ => None,
        })
        .collect()
}

/// What one workload run leaves behind.
pub struct Finished {
    pub ops: u64,
    pub stats: SimStats,
    pub traffic: std::collections::BTreeMap<&'static str, OpTraffic>,
    pub benign: std::collections::BTreeMap<Benign, u64>,
    /// The pool after a clean close, and what it must hold.
    pub final_image: Vec<u8>,
    pub expect: Expect,
    pub options: Options,
    pub note: Option<String>,
}

/// A running workload: its simulator, engine and random source.
pub struct Ctx {
    pub sim: Arc<Sim>,
    pub db: Option<Arc<Db>>,
    pub rng: StdRng,
    pub pool: PathBuf,
    pub cfg: SimConfig,
    workers: Vec<Worker>,
    pub ops: u64,
    pub broken: bool,
    /// Statistics of simulators replaced by `reopen_from`.
    earlier: Vec<(
        SimStats,
        std::collections::BTreeMap<&'static str, OpTraffic>,
    )>,
    note: Option<String>,
}

impl Ctx {
    /// Creates a fresh pool of `segments` segments and opens it observed.
    fn start(cfg: &SimConfig, segments: u64, explore_open: bool) -> Ctx {
        let pool = cfg.dir.join("pool.pool");
        let _ = std::fs::remove_file(&pool);
        poolfile::create(
            &pool,
            cfg.options.segment_bytes,
            segments,
            mix(cfg.seed, 0x5EED),
            pool_flags(&cfg.options),
        )
        .expect("create the pool file");
        let initial = std::fs::read(&pool).expect("read the new pool");
        let sim = Sim::new(cfg.clone(), &pool, initial, Expect::default());
        let mut ctx = Ctx {
            sim,
            db: None,
            rng: StdRng::seed_from_u64(mix(cfg.seed, 1)),
            pool,
            cfg: cfg.clone(),
            workers: Vec::new(),
            ops: 0,
            broken: false,
            earlier: Vec::new(),
            note: None,
        };
        ctx.open(explore_open);
        ctx
    }

    /// Opens the pool file observed by `self.sim` (whose model must hold
    /// the file's bytes) and waits for the background rebuild.
    fn open(&mut self, explore_open: bool) {
        self.open_as(explore_open, true);
    }

    /// Like `open`; with `wait` false, returns as soon as `Db::open` does,
    /// while the rebuild and the ordered index's walk still run (and are
    /// explored when `explore_open` is): the caller waits for them.
    fn open_as(&mut self, explore_open: bool, wait: bool) {
        self.sim.set_explore(explore_open);
        self.sim.begin("open", None);
        let db = Db::open_observed(
            &self.pool,
            self.cfg.options.clone(),
            Some(self.sim.clone() as Arc<dyn PersistObserver>),
        );
        let db = match db {
            Ok(db) => Arc::new(db),
            Err(e) => {
                self.sim.end(None);
                self.sim
                    .fail(format!("open of the workload pool failed: {e}"));
                self.broken = true;
                return;
            }
        };
        if wait {
            db.wait_for_rebuild();
        }
        self.sim.end(None);
        self.opened(db, !wait);
    }

    /// Takes over a freshly opened `db`; exploration ends unless
    /// `keep_exploring`.
    fn opened(&mut self, db: Arc<Db>, keep_exploring: bool) {
        if db.has_ordered_index() != self.cfg.options.ordered_index {
            self.sim.fail(format!(
                "the pool has the ordered index: {}, the workload created it with {}",
                db.has_ordered_index(),
                self.cfg.options.ordered_index
            ));
            self.broken = true;
        }
        if db.point_index() != self.cfg.options.point_index {
            self.sim.fail(format!(
                "the pool's point index is {:?}, the workload created it {:?}",
                db.point_index(),
                self.cfg.options.point_index
            ));
            self.broken = true;
        }
        self.sim.set_db(&db);
        self.db = Some(db);
        if !keep_exploring {
            self.sim.set_explore(false);
        }
    }

    fn db(&self) -> &Arc<Db> {
        self.db.as_ref().expect("pool open")
    }

    pub fn explore(&self, on: bool) {
        self.sim.set_explore(on);
    }

    /// Runs `op` on this thread.
    pub fn run(&mut self, op: Op) {
        if self.broken {
            return;
        }
        let db = self.db().clone();
        if let Err(e) = exec(&self.sim, &db, &op) {
            self.sim.fail(format!("workload operation: {e}"));
            self.broken = true;
        }
        settle();
        self.ops += 1;
    }

    /// Runs `op` on worker thread `w` (spawned on first use) and waits.
    pub fn run_on(&mut self, w: usize, op: Op) {
        if self.broken {
            return;
        }
        while self.workers.len() <= w {
            let worker = Worker::spawn(self.sim.clone(), self.db().clone());
            self.workers.push(worker);
        }
        let worker = &self.workers[w];
        let r = worker
            .tx
            .send(op)
            .map_err(|e| e.to_string())
            .and_then(|_| worker.rx.recv().map_err(|e| e.to_string()))
            .and_then(|r| r);
        if let Err(e) = r {
            self.sim
                .fail(format!("workload operation on worker {w}: {e}"));
            self.broken = true;
        }
        self.ops += 1;
    }

    fn stop_workers(&mut self) {
        for mut w in self.workers.drain(..) {
            drop(w.tx);
            if let Some(h) = w.handle.take() {
                let _ = h.join();
            }
        }
    }

    /// Closes the pool cleanly (exploring the close if exploration is on).
    fn close(&mut self) {
        self.stop_workers();
        if let Some(db) = self.db.take() {
            match Arc::try_unwrap(db) {
                Ok(db) => {
                    self.sim.begin("close", None);
                    drop(db);
                    self.sim.end(None);
                }
                Err(_) => self
                    .sim
                    .fail("the workload Db is still shared at close".into()),
            }
        }
    }

    /// Closes the engine cleanly, then reopens the closed pool (the open
    /// explored) expecting what the workload was told, and explores what
    /// follows.
    fn clean_reopen(&mut self) {
        let expect = lock(&self.sim.expect).clone();
        self.close();
        let bytes = std::fs::read(&self.pool).expect("read the closed pool");
        self.reopen_from(&bytes, expect, true);
        self.explore(true);
    }

    /// Replaces the pool with `image` (a crash image) and opens it with a
    /// fresh simulator that expects `expect`.
    fn reopen_from(&mut self, image: &[u8], expect: Expect, explore_open: bool) {
        self.reopen_from_as(image, expect, explore_open, true, None);
    }

    /// `reopen_from` with `open_as`'s `wait`, and `gate` (one for a thread
    /// of the engine, `Gate::on_thread_named`) armed on the new simulator
    /// before the open.
    fn reopen_from_as(
        &mut self,
        image: &[u8],
        expect: Expect,
        explore_open: bool,
        wait: bool,
        gate: Option<&Arc<Gate>>,
    ) {
        self.close();
        std::fs::write(&self.pool, image).expect("write the recovered image");
        let old = std::mem::replace(
            &mut self.sim,
            Sim::new(self.cfg.clone(), &self.pool, image.to_vec(), expect),
        );
        let traffic = old.model().traffic.clone();
        let stats = lock(&old.stats).clone();
        self.earlier.push((stats, traffic));
        if let Some(g) = gate {
            self.sim.arm_gate(g);
        }
        self.open_as(explore_open, wait);
    }

    /// After a recovery: the in-flight keys took one of their legal values;
    /// acknowledge what they hold now.
    fn resolve_in_flight(&mut self) {
        let keys: Vec<Key> = lock(&self.sim.expect).in_flight.keys().cloned().collect();
        for k in keys {
            let got = match self.db().get(&k) {
                Ok(v) => v,
                Err(e) => {
                    self.sim.fail(format!("get after recovery: {e}"));
                    continue;
                }
            };
            let legal = lock(&self.sim.expect).legal(&k);
            if !legal.contains(&got) {
                self.sim.fail(format!(
                    "after recovery, in-flight key {} holds {}",
                    show_key(&k),
                    show(&got)
                ));
            }
            lock(&self.sim.expect).ack(&k, got);
        }
    }

    /// The workload's note; with the DRAM point index, followed by how
    /// many checked images the oracle began reading before the DRAM index
    /// was rebuilt.
    fn dram_note(&mut self, stats: &SimStats) -> Option<String> {
        if self.cfg.options.point_index != PointIndex::Dram || stats.images == 0 {
            return self.note.take();
        }
        let oracle = format!(
            "oracle read {} of {} images before the DRAM index was ready",
            stats.before_ready, stats.images
        );
        Some(match self.note.take() {
            Some(n) => format!("{n}; {oracle}"),
            None => oracle,
        })
    }

    /// A final quiescent crash point, a clean close, and the results.
    fn finish(mut self) -> Finished {
        if !self.broken {
            self.explore(true);
            self.sim.crash_point();
        }
        self.close();
        let final_image = std::fs::read(&self.pool).unwrap_or_default();
        let mut stats = lock(&self.sim.stats).clone();
        let mut traffic = self.sim.model().traffic.clone();
        for (s, t) in self.earlier.drain(..) {
            stats.points += s.points;
            stats.points_exhaustive += s.points_exhaustive;
            stats.images += s.images;
            stats.duplicates += s.duplicates;
            stats.probes += s.probes;
            stats.before_ready += s.before_ready;
            stats.inconsistencies += s.inconsistencies;
            stats.failures.extend(s.failures);
            for (k, v) in t {
                traffic.entry(k).or_default().add(&v);
            }
        }
        let benign = self.sim.model().benign.clone();
        let expect = lock(&self.sim.expect).clone();
        let note = self.dram_note(&stats);
        Finished {
            ops: self.ops,
            stats,
            traffic,
            benign,
            final_image,
            expect,
            options: self.cfg.options.clone(),
            note,
        }
    }
}

/// Superblock flags a pool for `options` must be created with.
fn pool_flags(options: &Options) -> u64 {
    let mut flags = 0;
    if !options.mechanisms.volatile_lock_table {
        flags |= poolfile::FLAG_PERSISTENT_LOCKS;
    }
    if options.ordered_index {
        flags |= poolfile::FLAG_ORDERED_INDEX;
    }
    if options.point_index == PointIndex::Dram {
        flags |= poolfile::FLAG_DRAM_POINT_INDEX;
    }
    flags
}

fn key(prefix: &str, i: u64) -> Key {
    format!("{prefix}-{i:06}").into_bytes()
}

/// A value of `len` bytes that names its key and a version.
fn value(rng: &mut StdRng, len: usize) -> Val {
    let tag: u32 = rng.gen();
    let mut v = format!("v{tag:08x}-").into_bytes();
    let fill = b'a' + (tag % 26) as u8;
    v.resize(len.max(v.len()), fill);
    v.truncate(len.max(1));
    v
}

fn small_len(rng: &mut StdRng) -> usize {
    match rng.gen_range(0..10) {
        0 => rng.gen_range(256..700), // non-temporal copy
        1 => 1,
        _ => rng.gen_range(8..120),
    }
}

/// Builds the configuration of one workload run.
pub fn config(
    workload: &'static str,
    seed: u64,
    dir: PathBuf,
    cap: u64,
    samples: usize,
    deadline: Option<std::time::Instant>,
) -> SimConfig {
    let mut options = base_options();
    if workload.ends_with("lanes") {
        options.lanes = 4;
    }
    if workload.starts_with("ordered-") || workload.starts_with("dram-") {
        options.ordered_index = true;
    }
    if workload.starts_with("dram-") {
        options.point_index = PointIndex::Dram;
    }
    if workload == "baseline" {
        options.mechanisms = persimmon::Mechanisms::NONE;
    }
    SimConfig {
        workload,
        seed,
        options,
        cap,
        samples,
        dir,
        deadline,
        // No probes for two writers of one key (two keys in flight), nor
        // with locked reads: there a reader waits for the writer's bucket
        // lock, so it cannot see a write in flight (and would wait for the
        // writer paused at the crash point forever).
        probe_every: if workload == "elimination" || workload == "baseline" {
            0
        } else {
            4
        },
    }
}

/// Runs workload `cfg.workload`.
pub fn run(cfg: &SimConfig) -> Finished {
    match cfg.workload {
        "insert" => insert(cfg),
        "update" => update(cfg),
        "delete" => delete(cfg),
        "rmw" => rmw(cfg),
        "elimination" => elimination(cfg),
        "split" => split(cfg),
        "large" => large(cfg),
        "log-segments" => log_segments(cfg),
        "pool-growth" => pool_growth(cfg),
        "lanes" => lanes(cfg),
        "reopen" => reopen(cfg),
        "cleaner" => cleaner(cfg),
        "baseline" => baseline(cfg),
        // The DRAM placement runs the same workloads (the placement is in
        // `cfg.options`, see `config`).
        "ordered-insert" | "dram-insert" => ordered::insert(cfg),
        "ordered-delete" | "dram-update-delete" => ordered::delete(cfg),
        "ordered-lanes" | "dram-lanes" => ordered::lanes(cfg),
        "ordered-reopen" | "dram-reopen" => ordered::reopen(cfg),
        "dram-cleaner" => cleaner(cfg),
        other => panic!("unknown workload {other}"),
    }
}

fn insert(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, true);
    c.explore(true);
    for i in 0..14 {
        let len = small_len(&mut c.rng);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("ins", i), v));
        if i % 4 == 3 {
            let k = key("ins", c.rng.gen_range(0..=i));
            c.run(Op::Get(k));
        }
    }
    c.run(Op::Get(key("ins", 999)));
    c.finish()
}

fn update(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..10 {
        let v = value(&mut c.rng, 40);
        c.run(Op::Put(key("upd", i), v));
    }
    c.explore(true);
    for _ in 0..14 {
        let k = key("upd", c.rng.gen_range(0..10));
        let len = small_len(&mut c.rng);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(k.clone(), v));
        c.run(Op::Get(k));
    }
    c.finish()
}

fn delete(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..12 {
        let v = value(&mut c.rng, 30);
        c.run(Op::Put(key("del", i), v));
    }
    c.explore(true);
    for i in 0..8 {
        c.run(Op::Delete(key("del", i)));
    }
    c.run(Op::Delete(key("del", 100))); // absent
    c.run(Op::Delete(key("del", 3))); // already deleted
    let v = value(&mut c.rng, 50);
    c.run(Op::Put(key("del", 3), v)); // re-insert
    c.run(Op::Get(key("del", 3)));
    c.run(Op::Delete(key("del", 3)));
    c.finish()
}

fn rmw(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    for i in 0..6 {
        let v = value(&mut c.rng, 20);
        c.run(Op::Put(key("rmw", i), v));
    }
    c.explore(true);
    let modes = [
        (0, UpdateMode::Append(b'+')),
        (1, UpdateMode::Keep),
        (2, UpdateMode::Delete),
        (10, UpdateMode::Append(b'n')), // new key through update
        (11, UpdateMode::Keep),         // absent, kept absent
        (12, UpdateMode::Delete),       // absent
        (0, UpdateMode::Append(b'!')),
        (2, UpdateMode::Append(b'r')), // re-created after delete
    ];
    for (i, m) in modes {
        c.run(Op::Update(key("rmw", i), m));
    }
    for _ in 0..6 {
        let i = c.rng.gen_range(0..6);
        let b = c.rng.gen_range(b'a'..=b'z');
        c.run(Op::Update(key("rmw", i), UpdateMode::Append(b)));
    }
    c.finish()
}

/// Two puts of one key overlap: thread A is held at its first fence (its
/// record is written, its slot not yet published, its bucket lock held)
/// until thread B has started its put and waits for the lock; B then finds
/// A's record and is eliminated. Retried until `eliminated_puts` moves.
fn elimination(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let k = key("elim", 0);
    let v0 = value(&mut c.rng, 32);
    c.run(Op::Put(k.clone(), v0));
    c.explore(true);
    let mut eliminated = false;
    for attempt in 0..6 {
        if c.broken {
            break;
        }
        let db = c.db().clone();
        let before = db.stats().eliminated_puts;
        let (va, vb) = (value(&mut c.rng, 48), value(&mut c.rng, 56));
        let gate = Gate::new();
        let a = {
            let (sim, db, k, va, gate) = (
                c.sim.clone(),
                db.clone(),
                k.clone(),
                va.clone(),
                gate.clone(),
            );
            std::thread::spawn(move || {
                sim.begin("put", Some((&k, Some(va.clone()))));
                sim.arm_gate(&gate);
                let r = db.put(&k, &va);
                sim.end(None);
                r
            })
        };
        gate.wait_reached();
        let b = {
            let (sim, db, k, vb) = (c.sim.clone(), db.clone(), k.clone(), vb.clone());
            std::thread::spawn(move || {
                sim.begin("put", Some((&k, Some(vb.clone()))));
                let r = db.put(&k, &vb);
                sim.end(None);
                r
            })
        };
        std::thread::sleep(Duration::from_millis(20 + 20 * attempt));
        gate.release();
        let ra = a.join().expect("thread A");
        let rb = b.join().expect("thread B");
        if let Err(e) = ra.and(rb) {
            c.sim.fail(format!("elimination put failed: {e}"));
            c.broken = true;
            break;
        }
        settle();
        c.ops += 2;
        let moved = db.stats().eliminated_puts > before;
        let got = db.get(&k).ok().flatten();
        // B waited for A's lock before A published: if B was eliminated it
        // is ordered just before A, so A's value must be the one left.
        let ok = if moved {
            got.as_ref() == Some(&va)
        } else {
            got.as_ref() == Some(&vb) || got.as_ref() == Some(&va)
        };
        if !ok {
            c.sim.fail(format!(
                "elimination: key holds {} after both puts (eliminated={moved})",
                show(&got)
            ));
        }
        lock(&c.sim.expect).ack(&k, got);
        if moved {
            eliminated = true;
            break;
        }
    }
    if !eliminated && !c.broken {
        c.note = Some("no put was eliminated in 6 attempts".into());
    }
    c.run(Op::Get(k));
    c.finish()
}

/// Fast-forwards to just before the first index split (found by a dry run
/// on an unobserved pool with the same hash seed) and explores a window
/// around it, then reads keys of both halves.
fn split(cfg: &SimConfig) -> Finished {
    let dry_dir = cfg.dir.join("dry");
    let _ = std::fs::create_dir_all(&dry_dir);
    let dry_pool = dry_dir.join("dry.pool");
    let _ = std::fs::remove_file(&dry_pool);
    poolfile::create(
        &dry_pool,
        cfg.options.segment_bytes,
        16,
        mix(cfg.seed, 0x5EED),
        pool_flags(&cfg.options),
    )
    .expect("create the dry-run pool");
    let mut split_at = None;
    {
        let db = Db::open(&dry_pool, cfg.options.clone()).expect("open the dry-run pool");
        db.wait_for_rebuild();
        let mut rng = StdRng::seed_from_u64(mix(cfg.seed, 2));
        for i in 0..20_000u64 {
            let len = rng.gen_range(4..24);
            db.put(&key("spl", i), &value(&mut rng, len))
                .expect("dry-run put");
            if db.stats().index_splits > 0 {
                split_at = Some(i);
                break;
            }
        }
    }
    let _ = std::fs::remove_file(&dry_pool);
    let mut c = Ctx::start(cfg, 16, false);
    let Some(split_at) = split_at else {
        c.sim
            .fail("split: the dry run never split the index".into());
        return c.finish();
    };
    let mut rng = StdRng::seed_from_u64(mix(cfg.seed, 2));
    for i in 0..=split_at + 2 {
        let len = rng.gen_range(4..24);
        let v = value(&mut rng, len);
        c.explore(i + 2 >= split_at);
        c.run(Op::Put(key("spl", i), v));
    }
    let splits = c.db().stats().index_splits;
    if splits == 0 {
        c.sim.fail(format!(
            "split: no split after {} inserts (the dry run split at {split_at})",
            split_at + 3
        ));
    }
    c.note = Some(format!("split at insert {split_at}"));
    for _ in 0..6 {
        let i = c.rng.gen_range(0..split_at);
        c.run(Op::Get(key("spl", i)));
    }
    let i = c.rng.gen_range(0..split_at);
    c.run(Op::Delete(key("spl", i)));
    c.finish()
}

fn large(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    c.run(Op::Put(key("lg", 100), b"small".to_vec()));
    c.explore(true);
    let seg = cfg.options.segment_bytes as usize;
    let sizes = [seg / 2 + 1000, seg + 20_000, 3 * seg + 5];
    for (i, &len) in sizes.iter().enumerate() {
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("lg", i as u64), v));
    }
    // Overwrite the two-segment run (its old run is freed), delete the
    // four-segment one, shrink the first to a small record.
    let v = value(&mut c.rng, seg + 30_000);
    c.run(Op::Put(key("lg", 1), v));
    c.run(Op::Delete(key("lg", 2)));
    c.run(Op::Put(key("lg", 0), b"now small".to_vec()));
    c.run(Op::Get(key("lg", 1)));
    c.finish()
}

fn log_segments(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 24, false);
    c.explore(true);
    for i in 0..48u64 {
        let k = key("seg", i % 20);
        match c.rng.gen_range(0..10) {
            0 => c.run(Op::Delete(k)),
            _ => {
                let len = c.rng.gen_range(1_000..7_000);
                let v = value(&mut c.rng, len);
                c.run(Op::Put(k, v));
            }
        }
    }
    c.finish()
}

fn pool_growth(cfg: &SimConfig) -> Finished {
    // Two segments: the first index segment and one log segment; the next
    // log segment needs the file extended.
    let mut c = Ctx::start(cfg, 2, true);
    c.explore(true);
    for i in 0..30u64 {
        let len = c.rng.gen_range(2_000..5_000);
        let v = value(&mut c.rng, len);
        c.run(Op::Put(key("grow", i), v));
    }
    let len = c.db().stats().pool_bytes;
    c.note = Some(format!(
        "pool grew to {} segments",
        (len - 4096) / cfg.options.segment_bytes
    ));
    c.finish()
}

fn lanes(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    c.explore(true);
    for i in 0..30u64 {
        let w = (i % 3) as usize;
        let k = key("lane", c.rng.gen_range(0..12));
        let op = match c.rng.gen_range(0..10) {
            0 => Op::Delete(k),
            1 => Op::Update(k, UpdateMode::Append(b'u')),
            2 => Op::Get(k),
            _ => {
                let len = if c.rng.gen_range(0..4) == 0 {
                    c.rng.gen_range(2_000..6_000)
                } else {
                    small_len(&mut c.rng)
                };
                Op::Put(k, value(&mut c.rng, len))
            }
        };
        c.run_on(w, op);
    }
    // The pool file is the live mapping: count the lanes that own segments.
    let lanes = log_lanes(&c);
    c.note = Some(format!("log segments on lanes {lanes:?}"));
    if lanes.len() < 3 && !c.broken {
        c.sim
            .fail(format!("lanes: three threads used only lanes {lanes:?}"));
    }
    c.finish()
}

/// Runs operations unexplored, captures a random image of a crash point in
/// the middle of one, recovers from it (exploring the recovery), checks the
/// in-flight key, runs more operations (explored), then closes cleanly,
/// reopens and runs more.
fn reopen(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, false);
    let crash_op = c.rng.gen_range(4..16u64);
    for i in 0..64u64 {
        if i == crash_op {
            let f = c.rng.gen_range(0..3);
            c.sim.request_capture(f);
        }
        let k = key("ro", c.rng.gen_range(0..8));
        let op = match c.rng.gen_range(0..6) {
            0 => Op::Delete(k),
            1 => Op::Update(k, UpdateMode::Append(b'x')),
            _ => {
                let len = small_len(&mut c.rng);
                Op::Put(k, value(&mut c.rng, len))
            }
        };
        c.run(op);
        // Ops without enough fences (a delete of an absent key) push the
        // capture into the next operation.
        if i >= crash_op && c.sim.has_capture() {
            break;
        }
    }
    let Some(captured) = c.sim.take_capture() else {
        c.sim.fail("reopen: no crash image was captured".into());
        return c.finish();
    };
    // Recover from the crash image, exploring crashes during recovery.
    c.reopen_from(&captured.image, captured.expect, true);
    if c.broken {
        return c.finish();
    }
    c.resolve_in_flight();
    c.explore(true);
    for i in 0..10u64 {
        let k = key("ro", (i * 3) % 10);
        let op = if i % 4 == 3 {
            Op::Get(k)
        } else {
            let len = small_len(&mut c.rng);
            Op::Put(k, value(&mut c.rng, len))
        };
        c.run(op);
    }
    // Clean close, reopen (explored), more operations.
    c.explore(false);
    c.clean_reopen();
    for i in 0..4u64 {
        let v = value(&mut c.rng, 30);
        c.run(Op::Put(key("ro", 20 + i), v));
    }
    c.run(Op::Delete(key("ro", 20)));
    c.finish()
}

/// Fills a few log segments, overwrites most keys so the sealed segments
/// are partly dead, then runs the cleaner inside the explored window: every
/// relocation (record copy to the cleaner's lane, then the slot switched
/// with the two-phase write) is a series of crash points at which every key
/// must still hold its value. Afterwards the victims must be freed (or
/// reclaimable) and the keys readable; then more writes.
fn cleaner(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 24, false);
    let keys = 60u64;
    for round in 0..3 {
        for i in 0..keys {
            if round > 0 && c.rng.gen_range(0..3) == 0 {
                continue; // stays live in its old segment
            }
            let len = c.rng.gen_range(600..2_000);
            let v = value(&mut c.rng, len);
            c.run(Op::Put(key("cln", i), v));
        }
    }
    // Some records die by deletes, not overwrites: the cleaner skips them.
    for i in (3..keys).step_by(11) {
        c.run(Op::Delete(key("cln", i)));
    }
    let before = segment_kinds(&c);
    c.explore(true);
    c.run(Op::CleanNow);
    for _ in 0..4 {
        let i = c.rng.gen_range(0..keys);
        c.run(Op::Get(key("cln", i)));
    }
    for i in 0..4 {
        let v = value(&mut c.rng, 300);
        c.run(Op::Put(key("cln", i), v));
    }
    // New keys, longer ones too: with the ordered index, their node classes
    // take new node segments, which may be the log segments the cleaner
    // freed (old records in them: zeroed before use).
    drain_epoch();
    for (i, len) in [(0u64, 0usize), (1, 40), (2, 100), (3, 1000)] {
        let mut k = key("cln-new", i);
        k.resize(k.len().max(len), b'+');
        let v = value(&mut c.rng, 200);
        c.run(Op::Put(k, v));
    }
    if cfg.options.ordered_index {
        let reused = segment_kinds(&c)
            .iter()
            .zip(&before)
            .filter(|(k, b)| {
                matches!(k, poolfile::SegKind::Ordered { .. })
                    && matches!(b, poolfile::SegKind::Log { .. })
            })
            .count();
        c.note = Some(format!(
            "{reused} new node segment(s) on log segments the cleaner freed"
        ));
    }
    c.finish()
}

/// The MPKV paper's Baseline (every mechanism off): lock words in the
/// persistent buckets (never flushed; a crash must never leave a bucket
/// locked: the next open's tag makes stale words read as unlocked), readers
/// that lock, slots written with the persist bit set, deletes that store 0.
fn baseline(cfg: &SimConfig) -> Finished {
    let mut c = Ctx::start(cfg, 16, true);
    c.explore(true);
    for i in 0..24u64 {
        let k = key("base", c.rng.gen_range(0..10));
        let op = match c.rng.gen_range(0..10) {
            0 | 1 => Op::Delete(k),
            2 => Op::Update(k, UpdateMode::Append(b'b')),
            3 | 4 => Op::Get(k),
            _ => {
                let len = small_len(&mut c.rng);
                Op::Put(k, value(&mut c.rng, len))
            }
        };
        c.run(op);
        if i == 12 {
            // A clean close and reopen: the open count moves on.
            c.clean_reopen();
        }
    }
    c.finish()
}
