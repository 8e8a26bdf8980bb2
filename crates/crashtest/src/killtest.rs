//! The kill -9 loop: a child process (this binary, `--kill-child`) runs
//! random operations from several threads on a real pool in /dev/shm; the
//! parent kills it with SIGKILL at a random moment, reopens the pool,
//! verifies every key, and starts the next round.
//!
//! Expected state, kept the RocksDB crash-test way in a file shared by both
//! processes (one 8-byte entry per key, written with `pwrite`, which a
//! SIGKILL cannot tear):
//! - bits 0..32: the value id the key holds (0 = absent);
//! - bits 32..63: the value id an operation in progress will leave;
//! - bit 63: pending — set before the operation starts, cleared (with the
//!   new committed id) after it returns.
//!
//! A value id names a value deterministically (`values::value_for`), so
//! the parent can tell the old value from the new one.
//!
//! Two stores (`Store`): a pool of PM only, and a pool with an SSD tier
//! (data directory next to it, threshold 4 KiB, the tier's background
//! merge running in the child): there values from 1 B to 20 KiB, and
//! `append` / `write_range` edits of them (patches on PM).
//!
//! Invariants:
//! - A key's entry changes only while the child thread holds that key's
//!   stripe lock, so one operation per key is in progress at a time.
//! - After a kill, a key without the pending bit must hold exactly its
//!   committed value; a key with it may hold the old or the new one (the
//!   parent then records which, clearing the bit).
//! - The child also checks its own reads (and what `update` closures see);
//!   a mismatch there is printed to stderr as `MISMATCH ...` and the child
//!   exits with status 3.

use std::fs::{File, OpenOptions};
use std::io::{BufRead, BufReader, Read};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::process::{Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use persimmon::{Db, Options, Update};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};

use crate::sim::mix;

const PENDING: u64 = 1 << 63;
const STRIPES: usize = 64;

mod values;

pub use values::Store;
use values::{change, value_for, Change};

/// The child runs with the background log cleaner on (it relocates records
/// while the child is killed; on a tiered pool the tier's thread merges
/// patches too); the parent verifies with it off. `data_dir`: the SSD tier's
/// directory (tiered store; given at creation and every open).
pub fn options(cleaner: bool, data_dir: Option<&Path>) -> Options {
    Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 1 << 30,
        segment_bytes: 256 << 10,
        cleaner,
        data_dir: data_dir.map(Path::to_path_buf),
        tier_threshold: values::THRESHOLD as u64,
        cache_bytes: 8 << 20,
        ..Options::default()
    }
}

fn key_bytes(k: u64) -> Vec<u8> {
    format!("kill-{k:06}").into_bytes()
}

/// The expected-state file, mirrored in memory (the file is written
/// through on every change; reads come from the mirror, which only the
/// writer of an entry changes).
struct State {
    file: File,
    mirror: Vec<AtomicU64>,
}

impl State {
    fn open(path: &Path, keys: u64) -> State {
        let file = OpenOptions::new()
            .read(true)
            .write(true)
            .open(path)
            .expect("open the expected-state file");
        let mut bytes = vec![0u8; keys as usize * 8];
        file.read_exact_at(&mut bytes, 0)
            .expect("read the expected-state file");
        let mirror = bytes
            .chunks_exact(8)
            .map(|c| AtomicU64::new(u64::from_le_bytes(c.try_into().unwrap())))
            .collect();
        State { file, mirror }
    }

    fn get(&self, k: u64) -> u64 {
        self.mirror[k as usize].load(Ordering::Acquire)
    }

    fn set(&self, k: u64, entry: u64) {
        self.file
            .write_all_at(&entry.to_le_bytes(), k * 8)
            .expect("write the expected-state file");
        self.mirror[k as usize].store(entry, Ordering::Release);
    }
}

fn committed(e: u64) -> u64 {
    e & 0xffff_ffff
}

fn pending_id(e: u64) -> u64 {
    (e >> 32) & 0x7fff_ffff
}

/// What a child runs: its pool (tiered: with `data_dir`), expected-state
/// file, seed, threads and keys.
pub struct ChildArgs<'a> {
    pub pool: &'a Path,
    pub data_dir: Option<&'a Path>,
    pub state: &'a Path,
    pub seed: u64,
    pub threads: usize,
    pub keys: u64,
}

/// Child: random operations from `threads` threads until killed.
pub fn child(a: &ChildArgs) -> ! {
    let (seed, keys) = (a.seed, a.keys);
    let store = match a.data_dir {
        Some(_) => Store::Tiered,
        None => Store::Pm,
    };
    let db = match Db::open(a.pool, options(true, a.data_dir)) {
        Ok(db) => Arc::new(db),
        Err(e) => {
            eprintln!("MISMATCH child could not open the pool: {e}");
            std::process::exit(3);
        }
    };
    let state = Arc::new(State::open(a.state, keys));
    let stripes: Arc<Vec<Mutex<()>>> = Arc::new((0..STRIPES).map(|_| Mutex::new(())).collect());
    println!("ready");
    let handles: Vec<_> = (0..a.threads)
        .map(|t| {
            let (db, state, stripes) = (db.clone(), state.clone(), stripes.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(mix(seed, t as u64));
                loop {
                    child_op(store, &db, &state, &stripes, &mut rng, keys);
                }
            })
        })
        .collect();
    for h in handles {
        let _ = h.join();
    }
    std::process::exit(0)
}

fn mismatch(msg: String) -> ! {
    eprintln!("MISMATCH {msg}");
    std::process::exit(3)
}

fn child_op(
    store: Store,
    db: &Db,
    state: &State,
    stripes: &[Mutex<()>],
    rng: &mut StdRng,
    keys: u64,
) {
    let k = rng.gen_range(0..keys);
    let _g = stripes[k as usize % STRIPES]
        .lock()
        .unwrap_or_else(|e| e.into_inner());
    let e = state.get(k);
    let cur = committed(e);
    let key = key_bytes(k);
    let roll = rng.gen_range(0..100);
    if roll < 20 {
        let got = db
            .get(&key)
            .unwrap_or_else(|err| mismatch(format!("get {k}: {err}")));
        if got != value_for(store, k, cur) {
            mismatch(format!("child read of key {k} does not hold id {cur}"));
        }
        return;
    }
    let new = if roll < 35 { 0 } else { cur + 1 };
    state.set(k, cur | (new << 32) | PENDING);
    if roll < 35 {
        db.delete(&key)
            .unwrap_or_else(|err| mismatch(format!("delete {k}: {err}")));
        state.set(k, new);
        return;
    }
    let old = value_for(store, k, cur);
    let step = change(store, k, new, old.as_ref().map_or(0, Vec::len));
    match step {
        Change::Fresh(v) if roll < 50 => {
            let saw = db
                .update(&key, |o| (Update::Put(v), o.map(|o| o.to_vec()) == old))
                .unwrap_or_else(|err| mismatch(format!("update {k}: {err}")));
            if !saw {
                mismatch(format!("update of key {k} saw a value other than id {cur}"));
            }
        }
        Change::Fresh(v) => db
            .put(&key, &v)
            .unwrap_or_else(|err| mismatch(format!("put {k}: {err}"))),
        Change::Append(b) => edited(k, new, db.append(&key, &b), store),
        Change::WriteRange(at, b) => edited(k, new, db.write_range(&key, at, &b), store),
    }
    state.set(k, new);
}

/// An edit of key `k` to id `new` returned `len`: its value's length.
fn edited(k: u64, new: u64, len: persimmon::Result<u64>, store: Store) {
    let want = value_for(store, k, new).map_or(0, |v| v.len() as u64);
    match len {
        Ok(len) if len == want => {}
        Ok(len) => mismatch(format!(
            "edit of key {k} to id {new} returned length {len}, expected {want}"
        )),
        Err(err) => mismatch(format!("edit of key {k} to id {new}: {err}")),
    }
}

pub struct KillReport {
    pub rounds: u64,
    pub keys_verified: u64,
    pub mismatches: u64,
    pub ops_resolved_new: u64,
    pub ops_resolved_old: u64,
    /// Keys present after the last round, and log segments cleaned by the
    /// children's cleaners as far as the pool shows (segments with lane 254).
    pub keys_present: u64,
    /// Log segments of the cleaner's lane (254) in the pool at the end.
    pub cleaner_segments: u64,
    /// Tiered store, at the last verification: data files, extent bytes
    /// live records name, and values that were on the tier (their extents
    /// read back and verified by `check()`).
    pub ssd_files: u64,
    pub ssd_live_bytes: u64,
    pub ssd_extents_checked: u64,
    /// The durability the verifier's opens reported (`disk` when the
    /// scratch directory is on an ordinary file system).
    pub durability: &'static str,
    pub messages: Vec<String>,
}

impl KillReport {
    /// Counts a mismatch; the first ten are kept for the report.
    fn note(&mut self, m: String) {
        self.mismatches += 1;
        if self.messages.len() < 10 {
            self.messages.push(m);
        }
    }
}

/// What the parent loop runs: `rounds` rounds on `store` with the child's
/// `threads` and `keys`, its pool in a scratch directory made in
/// `scratch_in` (`/dev/shm` for the persistent-memory emulation; the working
/// directory for the disk domain).
pub struct Loop {
    pub scratch_in: PathBuf,
    pub store: Store,
    pub rounds: u64,
    pub seed: u64,
    pub threads: usize,
    pub keys: u64,
}

/// Parent: `rounds` rounds of run, kill, verify.
pub fn run(l: &Loop, replay: &str) -> KillReport {
    let (seed, keys) = (l.seed, l.keys);
    let dir = tempfile::Builder::new()
        .prefix("crashtest-kill")
        .tempdir_in(&l.scratch_in)
        .or_else(|_| tempfile::tempdir())
        .expect("scratch directory");
    let pool: PathBuf = dir.path().join("kill.pool");
    let data_dir = (l.store == Store::Tiered).then(|| dir.path().join("data"));
    let state_path = dir.path().join("expected.state");
    std::fs::write(&state_path, vec![0u8; keys as usize * 8]).expect("create the state file");
    let child = ChildCommand {
        exe: std::env::current_exe().expect("path of this binary"),
        pool: &pool,
        data_dir: data_dir.as_deref(),
        state: &state_path,
        threads: l.threads,
        keys,
    };
    let mut rng = StdRng::seed_from_u64(seed);
    let mut r = KillReport {
        rounds: 0,
        keys_verified: 0,
        mismatches: 0,
        ops_resolved_new: 0,
        ops_resolved_old: 0,
        keys_present: 0,
        cleaner_segments: 0,
        ssd_files: 0,
        ssd_live_bytes: 0,
        ssd_extents_checked: 0,
        durability: "",
        messages: Vec::new(),
    };
    let verifier = Verifier {
        store: l.store,
        pool: &pool,
        data_dir: data_dir.as_deref(),
        state: &state_path,
        keys,
    };
    for round in 0..l.rounds {
        let killed = child.run(mix(seed, round), &mut rng);
        for l in killed.stderr.lines().filter(|l| l.starts_with("MISMATCH")) {
            r.note(format!("round {round} (child): {l}"));
        }
        if !killed.ready {
            r.note(format!(
                "round {round}: child never became ready ({}): {}",
                killed.status, killed.stderr
            ));
            break;
        }
        r.rounds += 1;
        if !verifier.verify(round, &mut r) {
            break;
        }
    }
    r.cleaner_segments = cleaner_segments(&pool);
    if r.mismatches > 0 {
        eprintln!("killtest: replay with: {replay}");
    }
    r
}

/// How the parent starts a child.
struct ChildCommand<'a> {
    exe: PathBuf,
    pool: &'a Path,
    data_dir: Option<&'a Path>,
    state: &'a Path,
    threads: usize,
    keys: u64,
}

/// What a child did before it was killed.
struct Killed {
    /// It said `ready` (the pool was open).
    ready: bool,
    status: ExitStatus,
    stderr: String,
}

impl ChildCommand<'_> {
    /// Starts a child with `seed`, lets it run for a random 20 to 400 ms
    /// once ready (or until it exits by itself: a mismatch, stderr says),
    /// then kills it with SIGKILL.
    fn run(&self, seed: u64, rng: &mut StdRng) -> Killed {
        let mut command = Command::new(&self.exe);
        if let Some(d) = self.data_dir {
            command.arg("--data-dir").arg(d);
        }
        let mut child = command
            .args(["--kill-child", "--pool"])
            .arg(self.pool)
            .arg("--state")
            .arg(self.state)
            .args([
                "--seed",
                &seed.to_string(),
                "--threads",
                &self.threads.to_string(),
                "--keys",
                &self.keys.to_string(),
            ])
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .expect("spawn the child");
        let mut out = BufReader::new(child.stdout.take().unwrap());
        let mut line = String::new();
        let ready = out.read_line(&mut line).is_ok() && line.trim() == "ready";
        let run_ms = rng.gen_range(20..400);
        let started = Instant::now();
        while ready && started.elapsed() < Duration::from_millis(run_ms) {
            if let Ok(Some(_)) = child.try_wait() {
                break; // exited by itself: a mismatch (stderr says)
            }
            std::thread::sleep(Duration::from_millis(5));
        }
        let _ = child.kill(); // SIGKILL
        let status = child.wait().expect("wait for the child");
        let mut stderr = String::new();
        let _ = child.stderr.take().unwrap().read_to_string(&mut stderr);
        Killed {
            ready,
            status,
            stderr,
        }
    }
}

/// How the parent checks a pool after a kill.
struct Verifier<'a> {
    store: Store,
    pool: &'a Path,
    data_dir: Option<&'a Path>,
    state: &'a Path,
    keys: u64,
}

impl Verifier<'_> {
    /// After round `round`: reopens the pool, checks it and verifies every
    /// key against the expected state (resolving in-flight operations).
    /// Returns false when the pool could not be reopened: the loop stops.
    fn verify(&self, round: u64, r: &mut KillReport) -> bool {
        // The child changed the file: load it afresh.
        let state = State::open(self.state, self.keys);
        let db = match Db::open(self.pool, options(false, self.data_dir)) {
            Ok(db) => db,
            Err(e) => {
                r.note(format!("round {round}: reopen failed: {e}"));
                return false;
            }
        };
        r.durability = db.durability().name();
        db.wait_for_rebuild();
        match db.check() {
            Ok(rep) if rep.is_ok() => r.ssd_extents_checked = rep.ssd_extents,
            Ok(rep) => r.note(format!(
                "round {round}: check: {:?}",
                &rep.errors[..rep.errors.len().min(3)]
            )),
            Err(e) => r.note(format!("round {round}: check failed: {e}")),
        }
        r.keys_present = 0;
        for k in 0..self.keys {
            let got = match db.get(&key_bytes(k)) {
                Ok(v) => v,
                Err(err) => {
                    r.note(format!("round {round}: get {k}: {err}"));
                    continue;
                }
            };
            r.keys_verified += 1;
            r.keys_present += got.is_some() as u64;
            verify_key(self.store, round, k, got, &state, r);
        }
        let stats = db.stats();
        r.ssd_files = stats.ssd_files;
        r.ssd_live_bytes = stats.ssd_live_bytes;
        true
    }
}

/// Compares key `k`'s value `got` with its expected state entry; an
/// in-flight operation resolves to its old or its new value.
fn verify_key(
    store: Store,
    round: u64,
    k: u64,
    got: Option<Vec<u8>>,
    state: &State,
    r: &mut KillReport,
) {
    let e = state.get(k);
    let old = committed(e);
    if got == value_for(store, k, old) {
        if e & PENDING != 0 {
            r.ops_resolved_old += 1;
            state.set(k, old);
        }
        return;
    }
    if e & PENDING != 0 && got == value_for(store, k, pending_id(e)) {
        r.ops_resolved_new += 1;
        state.set(k, pending_id(e));
        return;
    }
    let want = if e & PENDING != 0 {
        format!("id {old} or id {}", pending_id(e))
    } else {
        format!("id {old}")
    };
    r.note(format!(
        "round {round}: key {k} holds {}, expected {want}",
        match &got {
            None => "nothing".to_string(),
            Some(v) => format!("{:?}", String::from_utf8_lossy(&v[..v.len().min(20)])),
        }
    ));
    // Take what is there as the new truth so one loss is counted once.
    let id = got
        .as_ref()
        .and_then(|v| std::str::from_utf8(&v[..v.len().min(24)]).ok())
        .and_then(|s| s.split("-id").nth(1))
        .and_then(|s| s.split('-').next())
        .and_then(|s| s.parse().ok())
        .unwrap_or(0);
    state.set(k, id);
}

/// Log segments of the cleaner's lane (254) in the pool file.
fn cleaner_segments(pool: &Path) -> u64 {
    let Some(p) = std::fs::read(pool)
        .ok()
        .and_then(|b| crate::poolfile::parse(&b))
    else {
        return 0;
    };
    p.segments
        .iter()
        .filter(|k| matches!(k, crate::poolfile::SegKind::Log { lane: 254, .. }))
        .count() as u64
}
