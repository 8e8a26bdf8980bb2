//! The context a workload runs in (`Ctx`): its pool file, the simulator
//! that observes it, the engine opened on it, worker threads, and the
//! reopens from crash images or after clean closes; what a finished run
//! hands the campaign (`Finished`); and what its expectation holds present
//! (`present`, `present_keys`).
//!
//! Invariants:
//! - The pool is created by the harness (`poolfile::create`, superblock
//!   flags from the options, `pool_flags`, hash seed from the run seed) and
//!   opened with `Db::open_observed`, the simulator as `PersistObserver`:
//!   every store, flush and fence of that engine reaches the model. Every
//!   open checks that the engine found the ordered index and the point
//!   index placement the workload asked for, and the superblock the
//!   ordered index's layout (leaves or skiplist).
//! - Opens, reopens and the clean close are announced to the simulator
//!   like operations (`open`, `close`) and explored when exploration is on:
//!   a crash during recovery or close must leave an image the oracle
//!   accepts too.
//! - A reopen from a crash image replaces the simulator (a fresh model that
//!   holds the image, expecting what the image was captured with); the old
//!   one's statistics are kept and summed up in `finish`.
//! - After the first failure (`broken`) no more operations run; the run
//!   still finishes and reports what it found.
//! - `finish` explores one last quiescent crash point, closes cleanly and
//!   hands over the final image with its expectation (for the media-fault
//!   pass).
//! - Tiered workloads (`SimConfig::data_dir`): the pool is created naming
//!   the data directory, which is claimed for it; every engine opened on it
//!   reports its data-file traffic to the simulator (`SsdObserver`). A
//!   reopen from a crash image restores the directory image captured with
//!   it into the data directory first; a clean reopen keeps the directory,
//!   which the new simulator's model then holds as durable.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::mpsc;
use std::sync::Arc;

use persimmon::tier::SsdObserver;
use persimmon::{Clock, Db, DiskObserver, Options, OrderedLayout, PersistObserver, PointIndex};
use rand::rngs::StdRng;
use rand::SeedableRng;

use super::epoch::settle;
use super::ops::{exec, Op};
use super::pool::pool_flags;
use crate::model::{Benign, OpTraffic};
use crate::oracle::{observe, show_key, show_state, Expect, Key};
use crate::poolfile;
use crate::sim::{lock, mix, Gate, Sim, SimConfig, SimStats};
use crate::ssd::{SsdImage, SsdModel};

/// Persist traffic (stores, flushes, fences) per operation kind.
type Traffic = BTreeMap<&'static str, OpTraffic>;

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

/// What one workload run leaves behind.
pub struct Finished {
    pub ops: u64,
    pub stats: SimStats,
    pub traffic: Traffic,
    pub benign: BTreeMap<Benign, u64>,
    /// The pool after a clean close (tiered: and its data directory), and
    /// what it must hold.
    pub final_image: Vec<u8>,
    pub final_ssd: Option<SsdImage>,
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
    earlier: Vec<(SimStats, Traffic)>,
    /// What the run's line in the report says after its figures.
    pub(super) note: Option<String>,
}

impl Ctx {
    /// Creates a fresh pool of `segments` segments and opens it observed.
    pub(super) fn start(cfg: &SimConfig, segments: u64, explore_open: bool) -> Ctx {
        let pool = cfg.dir.join("pool.pool");
        let _ = std::fs::remove_file(&pool);
        let tier = cfg.data_dir.as_ref().map(|d| {
            let _ = std::fs::remove_dir_all(d);
            (d.as_path(), cfg.options.tier_threshold)
        });
        poolfile::create(
            &pool,
            cfg.options.segment_bytes,
            segments,
            mix(cfg.seed, 0x5EED),
            pool_flags(&cfg.options),
            tier,
        )
        .expect("create the pool file");
        let initial = std::fs::read(&pool).expect("read the new pool");
        let now = cfg.options.clock.now_ms();
        let ssd = SsdModel::default();
        let sim = Sim::new(cfg.clone(), &pool, initial, ssd, Expect::at(now));
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
        let mut options = self.cfg.options.clone();
        if self.cfg.data_dir.is_some() {
            options.ssd_observer = Some(self.sim.clone() as Arc<dyn SsdObserver>);
        }
        if self.cfg.disk {
            options.disk_observer = Some(self.sim.clone() as Arc<dyn DiskObserver>);
        }
        let db = Db::open_observed(
            &self.pool,
            options,
            Some(self.sim.clone() as Arc<dyn PersistObserver>),
        );
        let db = match db {
            Ok(db) => Arc::new(db),
            Err(e) => {
                self.sim.end(None);
                self.stop(format!("open of the workload pool failed: {e}"));
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
        let asked = &self.cfg.options;
        let (ordered, point) = (asked.ordered_index, asked.point_index);
        if db.has_ordered_index() != ordered {
            self.stop(format!(
                "the pool has the ordered index: {}, the workload created it with {ordered}",
                db.has_ordered_index()
            ));
        }
        if db.point_index() != point {
            self.stop(format!(
                "the pool's point index is {:?}, the workload created it {point:?}",
                db.point_index()
            ));
        }
        // The layout is the pool's, fixed in the superblock the harness
        // wrote: leaves exactly when asked for (with the DRAM point index).
        let want_leaves = ordered
            && point == PointIndex::Dram
            && self.cfg.options.ordered_layout == OrderedLayout::Leaves;
        let flags = std::fs::File::open(&self.pool).and_then(|f| {
            let mut sb = [0u8; 64];
            std::os::unix::fs::FileExt::read_exact_at(&f, &mut sb, 0)?;
            Ok(poolfile::flags(&sb))
        });
        match flags {
            Ok(f) if (f & poolfile::FLAG_LEAVES != 0) == want_leaves => {}
            Ok(f) => self.stop(format!(
                "the pool's superblock flags are {f:#x}, the workload asked for leaves: {want_leaves}"
            )),
            Err(e) => self.stop(format!("read the pool's superblock: {e}")),
        }
        self.sim.set_db(&db);
        self.db = Some(db);
        if !keep_exploring {
            self.sim.set_explore(false);
        }
    }

    /// Reports `msg` as an inconsistency; no more operations run.
    pub(super) fn stop(&mut self, msg: String) {
        self.sim.fail(msg);
        self.broken = true;
    }

    pub(super) fn db(&self) -> &Arc<Db> {
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
            self.stop(format!("workload operation: {e}"));
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
            self.stop(format!("workload operation on worker {w}: {e}"));
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
    pub(super) fn clean_reopen(&mut self) {
        let expect = lock(&self.sim.expect).clone();
        self.close();
        let bytes = std::fs::read(&self.pool).expect("read the closed pool");
        self.reopen_from(&bytes, None, expect, true);
        self.explore(true);
    }

    /// Replaces the pool with `image` (a crash image) and, tiered, the data
    /// directory with `ssd` (`None`: the directory stays as the closed
    /// engine left it), and opens it with a fresh simulator that expects
    /// `expect`.
    pub(super) fn reopen_from(
        &mut self,
        image: &[u8],
        ssd: Option<&SsdImage>,
        expect: Expect,
        explore_open: bool,
    ) {
        self.reopen_from_as(image, ssd, expect, explore_open, true, None);
    }

    /// `reopen_from` with `open_as`'s `wait`, and `gate` (one for a thread
    /// of the engine, `Gate::on_thread_named`) armed on the new simulator
    /// before the open.
    pub(super) fn reopen_from_as(
        &mut self,
        image: &[u8],
        ssd: Option<&SsdImage>,
        expect: Expect,
        explore_open: bool,
        wait: bool,
        gate: Option<&Arc<Gate>>,
    ) {
        self.close();
        std::fs::write(&self.pool, image).expect("write the recovered image");
        let model = self.restore_data_dir(ssd);
        let old = std::mem::replace(
            &mut self.sim,
            Sim::new(self.cfg.clone(), &self.pool, image.to_vec(), model, expect),
        );
        let traffic = old.model().traffic.clone();
        let stats = lock(&old.stats).clone();
        self.earlier.push((stats, traffic));
        if let Some(g) = gate {
            self.sim.arm_gate(g);
        }
        self.open_as(explore_open, wait);
    }

    /// Tiered: puts directory image `ssd` into the data directory (or, with
    /// `None`, takes the directory as the closed engine left it) and returns
    /// the model of it for the next simulator, all durable.
    fn restore_data_dir(&mut self, ssd: Option<&SsdImage>) -> SsdModel {
        let Some(dir) = self.cfg.data_dir.clone() else {
            return SsdModel::default();
        };
        let img = match ssd {
            Some(img) => img.clone(),
            None => self.sim.ssd_settled(),
        };
        if let Err(e) = img.write_into(&dir) {
            self.stop(format!("restore the data directory: {e}"));
        }
        SsdModel::from_image(&img)
    }

    /// Adds `n` to what the run's line in the report says.
    pub(super) fn add_note(&mut self, n: String) {
        self.note = Some(match self.note.take() {
            Some(old) => format!("{old}; {n}"),
            None => n,
        });
    }

    /// Sets the workload's manual clock, which its engine and the oracle's
    /// engines share, and the time the expectation is made at, together.
    pub(super) fn set_clock(&mut self, ms: u64) {
        let Clock::Manual(clock) = &self.cfg.options.clock else {
            self.stop(format!(
                "{}: set_clock without a manual clock",
                self.cfg.workload
            ));
            return;
        };
        let mut e = lock(&self.sim.expect);
        clock.set(ms);
        e.now_ms = ms;
    }

    /// After a recovery: the in-flight keys took one of their legal states,
    /// and the writes of an interrupted batch all or none of theirs;
    /// acknowledge what they hold now.
    pub(super) fn resolve_in_flight(&mut self) {
        let keys: Vec<Key> = lock(&self.sim.expect).in_flight.keys().cloned().collect();
        let mut seen = BTreeMap::new();
        for k in keys {
            let got = match observe(self.db(), &k) {
                Ok(s) => s,
                Err(e) => {
                    self.sim.fail(format!("after recovery: {e}"));
                    continue;
                }
            };
            if !lock(&self.sim.expect).is_legal(&k, &got) {
                self.sim.fail(format!(
                    "after recovery, in-flight key {} holds {}",
                    show_key(&k),
                    show_state(&got)
                ));
            }
            seen.insert(k, got);
        }
        let torn = lock(&self.sim.expect).resolve(seen);
        if let Err(e) = torn {
            self.sim.fail(format!("after recovery: {e}"));
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

    /// The statistics and traffic of the current simulator, summed with
    /// those of the simulators `reopen_from` replaced.
    fn totals(&mut self) -> (SimStats, Traffic) {
        let mut stats = lock(&self.sim.stats).clone();
        let mut traffic = self.sim.model().traffic.clone();
        for (s, t) in self.earlier.drain(..) {
            stats.points += s.points;
            stats.points_exhaustive += s.points_exhaustive;
            stats.images += s.images;
            stats.duplicates += s.duplicates;
            stats.probes += s.probes;
            stats.before_ready += s.before_ready;
            stats.ssd_points += s.ssd_points;
            stats.ssd_images += s.ssd_images;
            stats.ssd_torn += s.ssd_torn;
            stats.ssd_dropped += s.ssd_dropped;
            stats.ssd_unlinked_back += s.ssd_unlinked_back;
            stats.inconsistencies += s.inconsistencies;
            stats.failures.extend(s.failures);
            for (k, v) in t {
                traffic.entry(k).or_default().add(&v);
            }
        }
        (stats, traffic)
    }

    /// A final quiescent crash point, a clean close, and the results.
    pub(super) fn finish(mut self) -> Finished {
        if !self.broken {
            self.explore(true);
            self.sim.crash_point();
        }
        self.close();
        let final_image = std::fs::read(&self.pool).unwrap_or_default();
        let final_ssd = self.cfg.data_dir.as_ref().map(|_| self.sim.ssd_settled());
        let (stats, traffic) = self.totals();
        let benign = self.sim.model().benign.clone();
        let expect = lock(&self.sim.expect).clone();
        let note = self.dram_note(&stats);
        Finished {
            ops: self.ops,
            stats,
            traffic,
            benign,
            final_image,
            final_ssd,
            expect,
            options: self.cfg.options.clone(),
            note,
        }
    }
}

/// Whether the expectation holds `k` present (acknowledged).
pub(super) fn present(c: &Ctx, k: &[u8]) -> bool {
    lock(&c.sim.expect).current(k).is_some()
}

/// The keys acknowledged present, ascending.
pub(super) fn present_keys(c: &Ctx) -> Vec<Key> {
    lock(&c.sim.expect).present().into_keys().collect()
}
