//! The simulator: a `PersistObserver` that feeds the model, and at every
//! fence (a crash point) builds the post-crash images and runs the oracle.
//!
//! Invariants:
//! - Every store, flush and fence on the observed pool reaches the model in
//!   the order the observer sees them, under one mutex; the model lock is
//!   never held while the engine or the oracle runs, so callbacks that come
//!   back re-entrantly (epoch-deferred work of the observed engine running
//!   inside oracle code) are modelled, never explored.
//! - A crash point is explored *before* the fence is applied to the model:
//!   the fencing thread's flushed lines are then still optional, which
//!   covers every crash moment between the previous fence and this one.
//! - Exploring stops at the run's deadline (`SimConfig::deadline`), also
//!   between two images of one crash point; a replay has none.
//! - Crash points are explored one at a time (`exploring`); a fence that
//!   arrives while one is explored is modelled, not explored. Such fences
//!   come from work the observed engine deferred through the epoch, which
//!   crossbeam may run on *any* thread that collects garbage — including the
//!   oracle's own engine threads, which the explorer is waiting for (waiting
//!   there would deadlock). Reader probes (`get` from the prober thread in
//!   the middle of a write) run with exploration suppressed; their flushes
//!   and fences are modelled like any other thread's.
//! - A crash point's media (model) and expectation are read together under
//!   the model lock: when two writers run at once (`ordered-lanes`), the
//!   other cannot fence and acknowledge between the two reads.
//! - Everything random is drawn from the run seed and the crash point's
//!   number, so one (workload, seed) replays the same images (where two
//!   writers overlap, which fence comes first is up to the scheduler).
//! - On a tiered pool the simulator is also the engine's `SsdObserver`: its
//!   data directory is modelled (`ssd.rs`, under its own lock, taken after
//!   the model's), and a data file's sync is a crash point too, explored
//!   before the sync is applied (the file's writes since its last sync are
//!   then still optional: dropped, applied or torn). Each image of a crash
//!   point pairs a PM image with a directory image; the oracle opens the
//!   pool image with that directory (`oracle::check_image`). At a sync
//!   crash point whose only operation in flight is the syncing thread's, no
//!   record of that operation can be published yet (an extent is durable
//!   before its record is written): its keys must hold their old states.

use std::cell::Cell;
use std::collections::HashSet;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::mpsc;
use std::sync::{Arc, Condvar, Mutex, MutexGuard, Weak};
use std::thread::ThreadId;
use std::time::Instant;

use persimmon::tier::files::file_name;
use persimmon::tier::SsdObserver;
use persimmon::{Db, DiskFile, DiskObserver, Options, PersistObserver};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::disk::DiskModel;
use crate::images;
use crate::model::{Model, OpTag};
use crate::oracle::{self, Expect, Key, State, Val, WriteProbe};
use crate::poolfile;
use crate::ssd::{self, SsdImage, SsdModel};

/// Directory picks of one crash point are all enumerated up to this many
/// (`ssd::plan`), else this many sampled.
const SSD_CAP: u64 = 24;
const SSD_SAMPLES: usize = 8;

thread_local! {
    /// Set while this thread runs the oracle: its callbacks are only modelled.
    static IN_ORACLE: Cell<bool> = const { Cell::new(false) };
}

pub fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// splitmix64: derives independent seeds.
pub fn mix(a: u64, b: u64) -> u64 {
    let mut x = a ^ b.wrapping_mul(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
    x ^ (x >> 31)
}

#[derive(Clone)]
pub struct SimConfig {
    pub workload: &'static str,
    pub seed: u64,
    pub options: Options,
    /// Enumerate every focus combination when there are at most this many.
    pub cap: u64,
    /// Random images per crash point otherwise.
    pub samples: usize,
    /// Scratch directory (under /dev/shm) for pools and images.
    pub dir: PathBuf,
    /// Stop exploring after this moment (the workload still completes).
    pub deadline: Option<Instant>,
    /// One crash point in this many gets a reader probe (0: never).
    pub probe_every: u64,
    /// Tiered pools: the observed engine's data directory (the pool is
    /// created naming it).
    pub data_dir: Option<PathBuf>,
    /// The disk domain (`--domain disk`): crash images are the pool file
    /// and its write-ahead log as the disk model has them (`disk.rs`),
    /// replayed as an open would; a sync of either file is the crash point.
    pub disk: bool,
}

#[derive(Clone, Debug, Default)]
pub struct SimStats {
    pub points: u64,
    pub points_exhaustive: u64,
    pub images: u64,
    pub duplicates: u64,
    pub probes: u64,
    /// DRAM point index: images whose reads right after open began before
    /// the DRAM index was ready (`oracle::Checked`).
    pub before_ready: u64,
    pub inconsistencies: u64,
    pub failures: Vec<String>,
    /// Tiered pools: crash points with data-file writes pending or unlinks
    /// not yet durable, images whose directory image came from such a
    /// point, and among those the images with a write torn, one dropped,
    /// and an unlinked file back.
    pub ssd_points: u64,
    pub ssd_images: u64,
    pub ssd_torn: u64,
    pub ssd_dropped: u64,
    pub ssd_unlinked_back: u64,
    /// Disk domain: crash points with writes to the pool file or the log
    /// pending, and images in which some pending write was torn or dropped.
    pub disk_points: u64,
    pub disk_torn: u64,
    pub disk_dropped: u64,
}

/// Holds one thread at a fence until released (write elimination,
/// overlapping writers of neighbouring keys, the ordered index's walk after
/// open): the thread passes `skip` fences first, then waits at the next one.
pub struct Gate {
    thread: Mutex<Option<ThreadId>>,
    /// Or, for a thread the engine spawns: its name (see `Sim::arm_gate`).
    named: Option<&'static str>,
    skip: Mutex<u64>,
    state: Mutex<(bool, bool)>, // (reached, released)
    cv: Condvar,
}

impl Gate {
    pub fn new() -> Arc<Gate> {
        Gate::after(0)
    }

    /// A gate that holds its thread at its fence number `skip` (from 0).
    pub fn after(skip: u64) -> Arc<Gate> {
        Gate::build(skip, None)
    }

    fn build(skip: u64, named: Option<&'static str>) -> Arc<Gate> {
        Arc::new(Gate {
            thread: Mutex::new(None),
            named,
            skip: Mutex::new(skip),
            state: Mutex::new((false, false)),
            cv: Condvar::new(),
        })
    }

    /// A gate for the engine's thread called `name` (e.g. the ordered
    /// index's walk after open, "persimmon-ordered"), held at its first
    /// fence; armed with `Sim::arm_gate` from any thread.
    pub fn on_thread_named(name: &'static str) -> Arc<Gate> {
        Gate::build(0, Some(name))
    }

    pub fn wait_reached(&self) {
        let mut s = lock(&self.state);
        while !s.0 {
            s = self.cv.wait(s).unwrap_or_else(|e| e.into_inner());
        }
    }

    /// Waits until the thread is held or `done()` says it finished without
    /// reaching the gate (an operation with fewer fences). Returns whether
    /// the thread is held.
    pub fn wait_reached_or(&self, done: impl Fn() -> bool) -> bool {
        let mut s = lock(&self.state);
        loop {
            if s.0 {
                return true;
            }
            if done() {
                return false;
            }
            s = self
                .cv
                .wait_timeout(s, std::time::Duration::from_millis(2))
                .unwrap_or_else(|e| e.into_inner())
                .0;
        }
    }

    pub fn release(&self) {
        lock(&self.state).1 = true;
        self.cv.notify_all();
    }
}

/// What a capture request grabbed: one image of a crash point and the
/// expectation at that moment.
pub struct Captured {
    pub image: Vec<u8>,
    /// Tiered pools: the data directory's image.
    pub ssd: Option<SsdImage>,
    /// Some data-file write of the directory image is torn.
    pub ssd_torn: bool,
    pub expect: Expect,
}

/// A capture request: the crash point `fences` crash points from now.
struct Capture {
    fences: u64,
    /// Prefer a directory image with every pending write torn.
    torn: bool,
    got: Option<Captured>,
}

/// What made a crash point.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Moment {
    /// A fence.
    Fence,
    /// A quiescent moment (the workload asks for it: after its last
    /// operation, ...).
    Quiescent,
    /// Disk domain: a sync of the pool file or of the log, before it is
    /// applied.
    DiskSync(DiskFile),
    /// A data file's sync by this thread, before it is applied.
    Sync(ThreadId),
    /// A data file's unlink, after it (it may not be durable yet).
    Unlink,
}

/// Everything one crash point's images are built from, read at one moment.
struct Snapshot {
    durable: Vec<u8>,
    choices: Vec<crate::model::LineChoices>,
    focus_ops: Vec<u64>,
    generation: u64,
    expect: Expect,
    ssd: Option<SsdModel>,
    /// Disk domain: the pool file and its log.
    disk: Option<DiskModel>,
}

struct Prober {
    tx: mpsc::Sender<(Arc<Db>, Vec<u8>)>,
    rx: mpsc::Receiver<Result<Option<Val>, String>>,
}

pub struct Sim {
    pub cfg: SimConfig,
    pool_path: PathBuf,
    image_path: PathBuf,
    model: Mutex<Model>,
    pub expect: Mutex<Expect>,
    explore: AtomicBool,
    suppress: AtomicBool,
    exploring: AtomicBool,
    pub stats: Mutex<SimStats>,
    seen: Mutex<HashSet<(u128, u64)>>,
    db: Mutex<Weak<Db>>,
    prober: Mutex<Option<Prober>>,
    gate: Mutex<Option<Arc<Gate>>>,
    capture: Mutex<Option<Capture>>,
    /// Tiered pools: the data directory's model.
    ssd: Mutex<SsdModel>,
    /// Disk domain: the pool file's and the log's model.
    disk: Mutex<DiskModel>,
    /// Where the oracle puts the directory image of the image it checks.
    ssd_image_dir: PathBuf,
    /// The observed engine's data directory (as it reported it).
    data_dir: Mutex<Option<PathBuf>>,
    next_op: AtomicU64,
    saved_failures: AtomicU64,
}

impl Sim {
    /// A simulator for the pool at `pool_path`, whose media holds `initial`
    /// (and, tiered, whose data directory holds `ssd`).
    pub fn new(
        cfg: SimConfig,
        pool_path: &Path,
        initial: Vec<u8>,
        ssd: SsdModel,
        expect: Expect,
    ) -> Arc<Sim> {
        let image_path = cfg.dir.join("image.pool");
        let ssd_image_dir = cfg.dir.join("image-data");
        let disk = match cfg.disk {
            true => DiskModel::from_disk(pool_path),
            false => DiskModel::default(),
        };
        Arc::new(Sim {
            disk: Mutex::new(disk),
            ssd: Mutex::new(ssd),
            ssd_image_dir,
            data_dir: Mutex::new(None),
            cfg,
            pool_path: pool_path.to_path_buf(),
            image_path,
            model: Mutex::new(Model::new(initial)),
            expect: Mutex::new(expect),
            explore: AtomicBool::new(false),
            suppress: AtomicBool::new(false),
            exploring: AtomicBool::new(false),
            stats: Mutex::new(SimStats::default()),
            seen: Mutex::new(HashSet::new()),
            db: Mutex::new(Weak::new()),
            prober: Mutex::new(None),
            gate: Mutex::new(None),
            capture: Mutex::new(None),
            next_op: AtomicU64::new(1),
            saved_failures: AtomicU64::new(0),
        })
    }

    pub fn model(&self) -> MutexGuard<'_, Model> {
        lock(&self.model)
    }

    pub fn set_explore(&self, on: bool) {
        self.explore
            .store(on && !self.past_deadline(), Ordering::SeqCst);
    }

    /// The `Db` reader probes use (held weakly: the workload owns it).
    pub fn set_db(self: &Arc<Self>, db: &Arc<Db>) {
        *lock(&self.db) = Arc::downgrade(db);
        if self.cfg.probe_every > 0 && lock(&self.prober).is_none() {
            let (tx, rx_job) = mpsc::channel::<(Arc<Db>, Vec<u8>)>();
            let (tx_res, rx) = mpsc::channel();
            let me = Arc::downgrade(self);
            std::thread::Builder::new()
                .name("crashtest-prober".into())
                .spawn(move || {
                    for (db, key) in rx_job {
                        let sim = me.upgrade();
                        if let Some(s) = &sim {
                            s.model().begin_op(
                                std::thread::current().id(),
                                OpTag {
                                    id: s.next_op.fetch_add(1, Ordering::Relaxed),
                                    kind: "reader-probe",
                                },
                            );
                        }
                        let r = db.get(&key).map_err(|e| e.to_string());
                        if let Some(s) = &sim {
                            // A reader's persist-bit CAS is left pending by
                            // design: no persistence assertion for probes.
                            s.model().end_op_unchecked(std::thread::current().id());
                        }
                        drop(sim);
                        drop(db);
                        if tx_res.send(r).is_err() {
                            break;
                        }
                    }
                })
                .expect("spawn the prober thread");
            *lock(&self.prober) = Some(Prober { tx, rx });
        }
    }

    pub fn fail(&self, msg: String) {
        let mut s = lock(&self.stats);
        s.inconsistencies += 1;
        if s.failures.len() < 10 {
            s.failures.push(msg);
        }
    }

    /// Starts an operation of `kind` on this thread; `key`/`after` (when
    /// given) enter the expectation as in flight.
    pub fn begin(&self, kind: &'static str, key: Option<(&[u8], Option<Val>)>) -> OpTag {
        let tag = OpTag {
            id: self.next_op.fetch_add(1, Ordering::Relaxed),
            kind,
        };
        if let Some((k, after)) = key {
            lock(&self.expect).begin(k, after);
        }
        self.model().begin_op(std::thread::current().id(), tag);
        tag
    }

    /// Starts an operation of `kind` on this thread that leaves `writes`
    /// together: they enter the expectation as a group (`Expect::groups`).
    /// Returns the group's number, for `end_group`.
    pub fn begin_group(&self, kind: &'static str, writes: &[(Key, State)]) -> u64 {
        let id = lock(&self.expect).begin_group(writes);
        self.begin(kind, None);
        id
    }

    /// Ends this thread's operation (as `end`); with `ack`, that group's
    /// writes are acknowledged.
    pub fn end_group(&self, ack: Option<u64>) {
        self.end(None);
        if let Some(id) = ack {
            lock(&self.expect).ack_group(id);
        }
    }

    /// Ends this thread's operation (persistence assertions run here); when
    /// `ack` is given the key is acknowledged with that value.
    pub fn end(&self, ack: Option<(&[u8], Option<Val>)>) {
        let (before, after, msg) = {
            let mut m = self.model();
            let before = m.violation_count;
            m.end_op(std::thread::current().id());
            (before, m.violation_count, m.violations.last().cloned())
        };
        if after > before {
            self.fail(format!(
                "persistence assertion: {}",
                msg.unwrap_or_default()
            ));
        }
        if let Some((k, v)) = ack {
            lock(&self.expect).ack(k, v);
        }
    }

    /// Holds the calling thread (or, for a gate `on_thread_named`, the
    /// observed engine's thread of that name) at its next fence (after the
    /// gate's `skip` fences) until `gate` is released.
    ///
    /// A named gate catches its thread only while no crash point is being
    /// explored: the oracle's own engines run threads of the same names,
    /// and those may run deferred work of the observed engine (fences on
    /// this pool) while the oracle checks an image; holding one of them
    /// would hang the explorer that waits for it.
    pub fn arm_gate(&self, gate: &Arc<Gate>) {
        if gate.named.is_none() {
            *lock(&gate.thread) = Some(std::thread::current().id());
        }
        *lock(&self.gate) = Some(gate.clone());
    }

    /// Forgets an armed gate its thread never reached.
    pub fn disarm_gate(&self) {
        lock(&self.gate).take();
    }

    /// Grabs one random image of the crash point `fences` crash points
    /// from now (fences; on a tiered pool also data-file syncs and unlinks).
    pub fn request_capture(&self, fences: u64) {
        self.request(fences, false);
    }

    /// Like `request_capture`, but the directory image has every pending
    /// data-file write torn (when there is one).
    pub fn request_capture_torn(&self, fences: u64) {
        self.request(fences, true);
    }

    fn request(&self, fences: u64, torn: bool) {
        // An exploration still under way (a background thread's crash
        // point, begun before the workload turned exploring off) would
        // keep the capture's crash point from being explored.
        while self.exploring.load(Ordering::SeqCst) {
            std::thread::sleep(std::time::Duration::from_millis(1));
        }
        *lock(&self.capture) = Some(Capture {
            fences,
            torn,
            got: None,
        });
    }

    pub fn has_capture(&self) -> bool {
        lock(&self.capture)
            .as_ref()
            .is_some_and(|c| c.got.is_some())
    }

    pub fn take_capture(&self) -> Option<Captured> {
        lock(&self.capture).take().and_then(|c| c.got)
    }

    /// The data directory as the model has it now, every write applied and
    /// unlinks done (what a clean close leaves).
    pub fn ssd_settled(&self) -> SsdImage {
        lock(&self.ssd).settled()
    }

    /// The pool as the engine holds it now: the pool file; in the disk
    /// domain, the pool file and its log with every write applied, the log
    /// replayed into a copy (the applier need not have reached the file).
    pub fn live_pool(&self) -> Option<Vec<u8>> {
        if !self.cfg.disk {
            return std::fs::read(&self.pool_path).ok();
        }
        let model = lock(&self.disk).clone();
        let all: Vec<u16> = model.units().iter().map(|u| u.choices() - 1).collect();
        disk_image(&model, &all, &self.image_path.with_extension("live")).ok()
    }

    fn pool_len(&self) -> u64 {
        std::fs::metadata(&self.pool_path)
            .map(|m| m.len())
            .unwrap_or(0)
    }

    /// Explores the current state as a crash point: a quiescent moment (after
    /// the last operation, ...).
    pub fn crash_point(&self) {
        self.crash_at(Moment::Quiescent);
    }

    fn crash_at(&self, moment: Moment) {
        if IN_ORACLE.with(|f| f.get()) || self.suppress.load(Ordering::SeqCst) {
            return;
        }
        // The applier's syncs of the pool file come when its timer says,
        // not at a point of the operation a capture names: never captured.
        let capturable = moment != Moment::DiskSync(DiskFile::Pool);
        let capture_now = capturable && {
            let mut c = lock(&self.capture);
            match c.as_mut() {
                Some(c) if c.got.is_none() && c.fences == 0 => true,
                Some(c) if c.got.is_none() => {
                    c.fences -= 1;
                    false
                }
                _ => false,
            }
        };
        // In the disk domain a fence changes no file: its crash points are
        // the files' syncs (and quiescent moments); a fence only counts
        // toward a capture.
        let explores =
            !(self.cfg.disk && moment == Moment::Fence) && self.explore.load(Ordering::SeqCst);
        if !(capture_now || explores) {
            return;
        }
        if self
            .exploring
            .compare_exchange(false, true, Ordering::SeqCst, Ordering::SeqCst)
            .is_err()
        {
            return; // modelled only: see the module header
        }
        self.explore_exclusive(capture_now, moment);
        self.exploring.store(false, Ordering::SeqCst);
    }

    /// Whether the run's deadline for exploring has passed.
    fn past_deadline(&self) -> bool {
        self.cfg.deadline.is_some_and(|d| Instant::now() >= d)
    }

    fn explore_exclusive(&self, capture_now: bool, moment: Moment) {
        if self.past_deadline() {
            self.explore.store(false, Ordering::SeqCst);
            if !capture_now {
                return;
            }
        }
        let point = {
            let mut s = lock(&self.stats);
            s.points += 1;
            s.points
        };
        let mut rng = StdRng::seed_from_u64(mix(self.cfg.seed, point));
        if self.cfg.probe_every > 0 && rng.gen_range(0..self.cfg.probe_every) == 0 {
            self.probe();
        }
        let snap = self.snapshot(moment);
        if self.cfg.disk {
            self.explore_disk(point, &snap, capture_now, moment, &mut rng);
            return;
        }
        let plan = images::plan(&snap.choices, self.cfg.cap, self.cfg.samples, &mut rng);
        let units = snap.ssd.as_ref().map(|m| m.units()).unwrap_or_default();
        let ssd_picks = ssd::plan(&units, SSD_CAP, SSD_SAMPLES, &mut rng);
        if capture_now {
            self.fill_capture(&snap, &plan, &units, &ssd_picks, &mut rng);
            if !self.explore.load(Ordering::SeqCst) {
                return;
            }
        }
        if plan.exhaustive {
            lock(&self.stats).points_exhaustive += 1;
        }
        if !units.is_empty() {
            lock(&self.stats).ssd_points += 1;
        }
        IN_ORACLE.with(|f| f.set(true));
        self.check_images(point, &snap, &plan, &units, &ssd_picks, &mut rng);
        IN_ORACLE.with(|f| f.set(false));
    }

    /// The media (PM model, data directory model) and the expectation of
    /// this moment, read together under the model lock: with two writers
    /// in flight, the other one cannot fence and acknowledge in between.
    /// At a sync of the one operation in flight, its keys are held to their
    /// old states (see the module header).
    fn snapshot(&self, moment: Moment) -> Snapshot {
        let m = self.model();
        let in_flight = m.ops_in_flight();
        let focus_ops: Vec<u64> = in_flight.iter().map(|o| o.id).collect();
        let len = self.pool_len();
        let ssd = self.cfg.data_dir.as_ref().map(|_| lock(&self.ssd).clone());
        let mut expect = lock(&self.expect).clone();
        if let Some(op) = match moment {
            Moment::Sync(t) => m.op_of(t),
            _ => None,
        } {
            if focus_ops == [op.id] {
                expect = expect.before_only();
            }
        }
        let disk = self.cfg.disk.then(|| lock(&self.disk).clone());
        Snapshot {
            durable: m.durable_image(len),
            choices: m.choices(&focus_ops),
            focus_ops,
            generation: m.durable_generation,
            expect,
            ssd,
            disk,
        }
    }

    /// The disk domain's crash point: images of the pool file and its log
    /// (each pending write dropped, applied or torn), replayed as an open
    /// would, paired in turn with images of a tiered pool's data directory
    /// (as in `check_images`), checked by the oracle; a capture takes one
    /// of them.
    fn explore_disk(
        &self,
        point: u64,
        snap: &Snapshot,
        capture_now: bool,
        moment: Moment,
        rng: &mut StdRng,
    ) {
        let model = snap.disk.as_ref().expect("a disk snapshot");
        let units = model.units();
        let picks = ssd::plan(&units, self.cfg.cap, self.cfg.samples, rng);
        let dir_units = snap.ssd.as_ref().map(|m| m.units()).unwrap_or_default();
        let dir_picks = ssd::plan(&dir_units, SSD_CAP, SSD_SAMPLES, rng);
        if capture_now {
            self.fill_disk_capture(snap, &picks, &dir_units, &dir_picks, rng);
            if !self.explore.load(Ordering::SeqCst) || moment == Moment::Fence {
                return;
            }
        }
        if !units.is_empty() {
            lock(&self.stats).disk_points += 1;
        }
        if !dir_units.is_empty() {
            lock(&self.stats).ssd_points += 1;
        }
        IN_ORACLE.with(|f| f.set(true));
        let digest = snap.expect.digest();
        let ssd_generation = snap.ssd.as_ref().map_or(0, |m| m.generation);
        let count = picks.len().max(dir_picks.len());
        for i in 0..count {
            if self.past_deadline() {
                break;
            }
            let pick = &picks[i % picks.len()];
            let dir_pick = &dir_picks[i % dir_picks.len()];
            let id = ssd::image_id(model.generation, pick)
                ^ ssd::image_id(ssd_generation, dir_pick).rotate_left(1);
            if !lock(&self.seen).insert((id, digest)) {
                lock(&self.stats).duplicates += 1;
                continue;
            }
            {
                let k = ssd::describe(&units, pick);
                let mut st = lock(&self.stats);
                st.disk_torn += k.torn as u64;
                st.disk_dropped += k.dropped as u64;
            }
            self.count_image(&dir_units, dir_pick);
            let dir_img = snap.ssd.as_ref().map(|m| m.build(dir_pick));
            let probe = write_probe(&dir_units, rng);
            let checked = disk_image(model, pick, &self.image_path).and_then(|img| {
                let ssd = dir_img.as_ref().map(|d| (d, self.ssd_image_dir.as_path()));
                oracle::check_image(
                    &img,
                    ssd,
                    &self.image_path,
                    &self.cfg.options,
                    &snap.expect,
                    probe,
                )
            });
            match checked {
                Ok(c) => lock(&self.stats).before_ready += c.read_before_ready as u64,
                Err(e) => self.fail(format!(
                    "crash point {point} (ops in flight {:?}), disk image {i} of {count} ({} file writes, {} data-file writes or unlinks pending): {e}",
                    snap.focus_ops,
                    units.len(),
                    dir_units.len()
                )),
            }
        }
        IN_ORACLE.with(|f| f.set(false));
    }

    /// `fill_capture` for the disk domain: a random pair of the pool
    /// file's and log's images, replayed, and a directory image (every
    /// pending write torn, when asked for).
    fn fill_disk_capture(
        &self,
        snap: &Snapshot,
        picks: &[Vec<u16>],
        dir_units: &[ssd::Unit],
        dir_picks: &[Vec<u16>],
        rng: &mut StdRng,
    ) {
        let model = snap.disk.as_ref().expect("a disk snapshot");
        let pick = &picks[rng.gen_range(0..picks.len())];
        let image = match disk_image(model, pick, &self.image_path.with_extension("capture")) {
            Ok(image) => image,
            Err(e) => return self.fail(format!("capture: {e}")),
        };
        self.answer_capture(snap, image, dir_units, dir_picks, rng);
    }

    /// Fills the pending capture request with one image of this crash
    /// point: a random PM image, and a random directory image (or one with
    /// every pending write torn, when asked for).
    fn fill_capture(
        &self,
        snap: &Snapshot,
        plan: &images::Plan,
        units: &[ssd::Unit],
        ssd_picks: &[Vec<u16>],
        rng: &mut StdRng,
    ) {
        let pick = &plan.picks[rng.gen_range(0..plan.picks.len())];
        let image = images::build(&snap.durable, &snap.choices, pick);
        self.answer_capture(snap, image, units, ssd_picks, rng);
    }

    /// Answers the pending capture request (if it is still there) with
    /// `image` of the pool and a random directory image of this crash
    /// point (or one with every pending write torn, when asked for).
    fn answer_capture(
        &self,
        snap: &Snapshot,
        image: Vec<u8>,
        units: &[ssd::Unit],
        ssd_picks: &[Vec<u16>],
        rng: &mut StdRng,
    ) {
        let mut c = lock(&self.capture);
        let Some(req) = c.as_mut() else { return };
        let ssd_pick = match (req.torn, units.is_empty()) {
            (true, _) => ssd::torn_pick(units),
            (false, true) => Vec::new(),
            (false, false) => ssd_picks[rng.gen_range(0..ssd_picks.len())].clone(),
        };
        req.got = Some(Captured {
            image,
            ssd: snap.ssd.as_ref().map(|m| m.build(&ssd_pick)),
            ssd_torn: ssd::describe(units, &ssd_pick).torn,
            expect: snap.expect.clone(),
        });
    }

    /// Builds and checks the images of crash point `point`: PM picks and
    /// directory picks paired in turn (as many images as the longer list),
    /// each skipped when it was checked before against the same
    /// expectation.
    fn check_images(
        &self,
        point: u64,
        snap: &Snapshot,
        plan: &images::Plan,
        units: &[ssd::Unit],
        ssd_picks: &[Vec<u16>],
        rng: &mut StdRng,
    ) {
        let digest = snap.expect.digest();
        let ssd_generation = snap.ssd.as_ref().map_or(0, |m| m.generation);
        let count = plan.picks.len().max(ssd_picks.len());
        for i in 0..count {
            if self.past_deadline() {
                // One crash point may have thousands of images (a batch's
                // many lines): the deadline stops it midway too.
                break;
            }
            let pick = &plan.picks[i % plan.picks.len()];
            let ssd_pick = &ssd_picks[i % ssd_picks.len()];
            let pm_id = images::image_id(
                snap.generation,
                snap.durable.len() as u64,
                &snap.choices,
                pick,
            );
            let id = pm_id ^ ssd::image_id(ssd_generation, ssd_pick).rotate_left(1);
            if !lock(&self.seen).insert((id, digest)) {
                lock(&self.stats).duplicates += 1;
                continue;
            }
            let img = images::build(&snap.durable, &snap.choices, pick);
            let dir_img = snap.ssd.as_ref().map(|m| m.build(ssd_pick));
            self.count_image(units, ssd_pick);
            let write_probe = write_probe(units, rng);
            let ssd = dir_img.as_ref().map(|d| (d, self.ssd_image_dir.as_path()));
            match oracle::check_image(
                &img,
                ssd,
                &self.image_path,
                &self.cfg.options,
                &snap.expect,
                write_probe,
            ) {
                Ok(c) => lock(&self.stats).before_ready += c.read_before_ready as u64,
                Err(e) => {
                    let saved = self.save_failing_image(&img, dir_img.as_ref(), point, i);
                    self.fail(format!(
                        "crash point {point} (ops in flight {:?}), image {i} of {count} ({} lines, {} data-file writes or unlinks pending): {e}{saved}",
                        snap.focus_ops,
                        snap.choices.len(),
                        units.len()
                    ));
                }
            }
        }
    }

    /// Counts one image in the statistics by what its directory pick does.
    fn count_image(&self, units: &[ssd::Unit], ssd_pick: &[u16]) {
        let mut s = lock(&self.stats);
        s.images += 1;
        if units.is_empty() {
            return;
        }
        let k = ssd::describe(units, ssd_pick);
        s.ssd_images += 1;
        s.ssd_torn += k.torn as u64;
        s.ssd_dropped += k.dropped as u64;
        s.ssd_unlinked_back += k.unlinked_back as u64;
    }

    fn save_failing_image(
        &self,
        img: &[u8],
        dir_img: Option<&SsdImage>,
        point: u64,
        i: usize,
    ) -> String {
        if self.saved_failures.fetch_add(1, Ordering::Relaxed) >= 2 {
            return String::new();
        }
        let p = std::env::temp_dir().join(format!(
            "crashtest-{}-{}-p{point}-i{i}.pool",
            self.cfg.workload, self.cfg.seed
        ));
        let mut img = img.to_vec();
        let mut data = String::new();
        if let Some(d) = dir_img {
            let dir = p.with_extension("data");
            if d.write_into(&dir).is_ok() && poolfile::set_data_dir(&mut img, &dir).is_ok() {
                data = format!(", its data directory {}", dir.display());
            }
        }
        match std::fs::write(&p, img) {
            Ok(()) => format!(" [image saved to {}{data}]", p.display()),
            Err(_) => String::new(),
        }
    }

    /// A reader `get`s the one in-flight key from another thread, in the
    /// middle of the write; what it saw must survive every later crash.
    fn probe(&self) {
        let key = {
            let e = lock(&self.expect);
            if e.in_flight.len() != 1 {
                return;
            }
            e.in_flight.keys().next().cloned().unwrap()
        };
        let Some(db) = lock(&self.db).upgrade() else {
            return;
        };
        if db.point_index() == persimmon::PointIndex::Dram && !db.stats().point_index_ready {
            // Until the DRAM point index is rebuilt, a read it cannot answer
            // takes the key's bucket lock (design.md §10a), which the paused
            // writer holds: such a probe would wait for the very write it
            // interrupts. (Once ready never reverts, reads are lock-free.)
            return;
        }
        let guard = lock(&self.prober);
        let Some(p) = guard.as_ref() else { return };
        self.suppress.store(true, Ordering::SeqCst);
        let sent = p.tx.send((db, key.clone())).is_ok();
        let got = if sent { p.rx.recv().ok() } else { None };
        self.suppress.store(false, Ordering::SeqCst);
        drop(guard);
        lock(&self.stats).probes += 1;
        match got {
            Some(Ok(seen)) => {
                if let Err(e) = lock(&self.expect).reader_saw(&key, &seen) {
                    self.fail(e);
                }
            }
            Some(Err(e)) => self.fail(format!("reader probe: get failed: {e}")),
            None => {}
        }
    }

    fn pass_gate(&self, t: ThreadId) {
        let gate = {
            let mut g = lock(&self.gate);
            let matches = |gate: &Gate| match gate.named {
                None => *lock(&gate.thread) == Some(t),
                Some(name) => {
                    std::thread::current().name() == Some(name)
                        && !self.exploring.load(Ordering::SeqCst)
                }
            };
            match g.as_ref() {
                Some(gate) if matches(gate) => {
                    let mut skip = lock(&gate.skip);
                    if *skip > 0 {
                        *skip -= 1;
                        None
                    } else {
                        drop(skip);
                        g.take()
                    }
                }
                _ => None,
            }
        };
        if let Some(gate) = gate {
            let mut s = lock(&gate.state);
            s.0 = true;
            gate.cv.notify_all();
            while !s.1 {
                s = gate.cv.wait(s).unwrap_or_else(|e| e.into_inner());
            }
        }
    }
}

/// Whether the oracle writes after recovering an image (check 6): one
/// image in eight; where data-file writes were pending (`units`), one in
/// four of those writes a tiered value (a new data file, which the engine
/// preallocates: costly on tmpfs). Draws as the PM-only harness always did
/// when nothing is pending, so their seeds replay the same images.
fn write_probe(units: &[ssd::Unit], rng: &mut StdRng) -> WriteProbe {
    if units.is_empty() {
        return match rng.gen_range(0..8) {
            0 => WriteProbe::Small,
            _ => WriteProbe::Off,
        };
    }
    match rng.gen_range(0..32) {
        0 => WriteProbe::Tiered,
        1..=3 => WriteProbe::Small,
        _ => WriteProbe::Off,
    }
}

impl std::fmt::Debug for Sim {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sim")
            .field("workload", &self.cfg.workload)
            .field("seed", &self.cfg.seed)
            .finish_non_exhaustive()
    }
}

impl SsdObserver for Sim {
    fn opened(&self, dir: &Path) {
        *lock(&self.data_dir) = Some(dir.to_path_buf());
    }

    fn created(&self, file: u32) {
        // Created and preallocated before it is reported: its length is
        // the file system's.
        let dir = lock(&self.data_dir).clone();
        let len = dir
            .and_then(|d| std::fs::metadata(d.join(file_name(file))).ok())
            .map_or(0, |m| m.len());
        lock(&self.ssd).created(file, len);
    }

    fn wrote(&self, file: u32, offset: u64, data: &[u8]) {
        lock(&self.ssd).wrote(file, offset, data);
    }

    fn synced(&self, file: u32) {
        self.crash_at(Moment::Sync(std::thread::current().id()));
        lock(&self.ssd).synced(file);
    }

    fn removed(&self, file: u32) {
        lock(&self.ssd).removed(file);
        self.crash_at(Moment::Unlink);
    }
}

impl DiskObserver for Sim {
    fn wrote(&self, file: DiskFile, offset: u64, data: &[u8]) {
        lock(&self.disk).wrote(file, offset, data);
    }

    fn synced(&self, file: DiskFile) {
        self.crash_at(Moment::DiskSync(file));
        lock(&self.disk).synced(file);
    }

    fn resized(&self, file: DiskFile, len: u64) {
        lock(&self.disk).resized(file, len);
    }
}

/// The pool image a crash leaves in the disk domain for `pick`: the pool
/// file and its log built at `path`, the log replayed into the pool file.
fn disk_image(model: &DiskModel, pick: &[u16], path: &Path) -> Result<Vec<u8>, String> {
    let (pool, log) = model.build(pick);
    crate::disk::replayed(&pool, &log, path)
}

impl PersistObserver for Sim {
    fn store(&self, offset: u64, data: &[u8]) {
        self.model()
            .store(std::thread::current().id(), offset, data);
    }

    fn nt_store(&self, offset: u64, data: &[u8]) {
        self.model()
            .nt_store(std::thread::current().id(), offset, data);
    }

    fn flush(&self, offset: u64) {
        self.model().flush(std::thread::current().id(), offset);
    }

    fn fence(&self) {
        let t = std::thread::current().id();
        self.crash_at(Moment::Fence);
        self.model().fence(t);
        self.pass_gate(t);
    }
}
