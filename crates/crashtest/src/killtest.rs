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
//! A value id names a value deterministically (`value_for`), so the parent
//! can tell the old value from the new one.
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

/// The child runs with the background log cleaner on (it relocates records
/// while the child is killed); the parent verifies with it off.
pub fn options(cleaner: bool) -> Options {
    Options {
        pool_bytes_initial: 4 << 20,
        pool_bytes_max: 1 << 30,
        segment_bytes: 256 << 10,
        cleaner,
        ..Options::default()
    }
}

fn key_bytes(k: u64) -> Vec<u8> {
    format!("kill-{k:06}").into_bytes()
}

/// The value with id `id` of key `k` (`None` for id 0).
pub fn value_for(k: u64, id: u64) -> Option<Vec<u8>> {
    if id == 0 {
        return None;
    }
    let h = mix(k, id);
    let len = if h.is_multiple_of(211) {
        150_000 // a large record: a segment run of its own
    } else {
        16 + (h % 300) as usize
    };
    let mut v = format!("k{k}-id{id}-").into_bytes();
    let fill = b'A' + (h % 26) as u8;
    v.resize(len, fill);
    Some(v)
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

/// Child: random operations from `threads` threads until killed.
pub fn child(pool: &Path, state: &Path, seed: u64, threads: usize, keys: u64) -> ! {
    let db = match Db::open(pool, options(true)) {
        Ok(db) => Arc::new(db),
        Err(e) => {
            eprintln!("MISMATCH child could not open the pool: {e}");
            std::process::exit(3);
        }
    };
    let state = Arc::new(State::open(state, keys));
    let stripes: Arc<Vec<Mutex<()>>> = Arc::new((0..STRIPES).map(|_| Mutex::new(())).collect());
    println!("ready");
    let handles: Vec<_> = (0..threads)
        .map(|t| {
            let (db, state, stripes) = (db.clone(), state.clone(), stripes.clone());
            std::thread::spawn(move || {
                let mut rng = StdRng::seed_from_u64(mix(seed, t as u64));
                loop {
                    child_op(&db, &state, &stripes, &mut rng, keys);
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

fn child_op(db: &Db, state: &State, stripes: &[Mutex<()>], rng: &mut StdRng, keys: u64) {
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
        if got != value_for(k, cur) {
            mismatch(format!("child read of key {k} does not hold id {cur}"));
        }
        return;
    }
    let new = if roll < 35 { 0 } else { cur + 1 };
    state.set(k, cur | (new << 32) | PENDING);
    if roll < 35 {
        db.delete(&key)
            .unwrap_or_else(|err| mismatch(format!("delete {k}: {err}")));
    } else if roll < 50 {
        let want_old = value_for(k, cur);
        let saw = db
            .update(&key, |old| {
                let ok = old.map(|o| o.to_vec()) == want_old;
                (Update::Put(value_for(k, new).unwrap()), ok)
            })
            .unwrap_or_else(|err| mismatch(format!("update {k}: {err}")));
        if !saw {
            mismatch(format!("update of key {k} saw a value other than id {cur}"));
        }
    } else {
        db.put(&key, &value_for(k, new).unwrap())
            .unwrap_or_else(|err| mismatch(format!("put {k}: {err}")));
    }
    state.set(k, new);
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

/// Parent: `rounds` rounds of run, kill, verify.
pub fn run(rounds: u64, seed: u64, threads: usize, keys: u64, replay: &str) -> KillReport {
    let dir = tempfile::Builder::new()
        .prefix("crashtest-kill")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("scratch directory");
    let pool: PathBuf = dir.path().join("kill.pool");
    let state_path = dir.path().join("expected.state");
    std::fs::write(&state_path, vec![0u8; keys as usize * 8]).expect("create the state file");
    let child = ChildCommand {
        exe: std::env::current_exe().expect("path of this binary"),
        pool: &pool,
        state: &state_path,
        threads,
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
        messages: Vec::new(),
    };
    for round in 0..rounds {
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
        if !verify(round, &pool, &state_path, keys, &mut r) {
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
        let mut child = Command::new(&self.exe)
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

/// After round `round`: reopens the pool, checks it and verifies every key
/// against the expected state (resolving in-flight operations). Returns
/// false when the pool could not be reopened: the loop stops.
fn verify(round: u64, pool: &Path, state_path: &Path, keys: u64, r: &mut KillReport) -> bool {
    // The child changed the file: load it afresh.
    let state = State::open(state_path, keys);
    let db = match Db::open(pool, options(false)) {
        Ok(db) => db,
        Err(e) => {
            r.note(format!("round {round}: reopen failed: {e}"));
            return false;
        }
    };
    db.wait_for_rebuild();
    match db.check() {
        Ok(rep) if rep.is_ok() => {}
        Ok(rep) => r.note(format!(
            "round {round}: check: {:?}",
            &rep.errors[..rep.errors.len().min(3)]
        )),
        Err(e) => r.note(format!("round {round}: check failed: {e}")),
    }
    r.keys_present = 0;
    for k in 0..keys {
        let got = match db.get(&key_bytes(k)) {
            Ok(v) => v,
            Err(err) => {
                r.note(format!("round {round}: get {k}: {err}"));
                continue;
            }
        };
        r.keys_verified += 1;
        r.keys_present += got.is_some() as u64;
        verify_key(round, k, got, &state, r);
    }
    true
}

/// Compares key `k`'s value `got` with its expected state entry; an
/// in-flight operation resolves to its old or its new value.
fn verify_key(round: u64, k: u64, got: Option<Vec<u8>>, state: &State, r: &mut KillReport) {
    let e = state.get(k);
    let old = committed(e);
    if got == value_for(k, old) {
        if e & PENDING != 0 {
            r.ops_resolved_old += 1;
            state.set(k, old);
        }
        return;
    }
    if e & PENDING != 0 && got == value_for(k, pending_id(e)) {
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
