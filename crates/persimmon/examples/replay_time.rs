//! Replay time after a crash in the disk domain, and the write-ahead log's
//! space at steady state.
//!
//! **crash** (the default mode): for each run, a child process (this
//! program re-run with `child`) creates a pool in `--dir` with a log ring of
//! `--log-mib` MiB and checkpoint settings that keep every synced byte in
//! the log (`disk_checkpoint_bytes` = the ring, clamped just below it;
//! `disk_checkpoint_interval` = an hour), and writes values of
//! `--value-bytes` under random keys from `--threads` threads (`--batch`
//! keys per `Db::write_grouped`, each durable when it returns; `--batch 1`
//! is one `Db::put` per key) until `log_used_bytes` reaches `--fill` percent
//! of the ring. It stops its writers, prints the log's figures and how many
//! keys each thread had acknowledged, and the parent kills it with SIGKILL.
//! The parent then times `Db::open` (the replay of the whole log into the
//! pool file, then the rest of open) and the first get, and reads back a
//! sample of the acknowledged keys (every thread's last ones among them).
//! `--cold` evicts the pool file and the log from the page cache first
//! (`POSIX_FADV_DONTNEED` on those two files only), as after a power loss;
//! without it the cache is warm, as after a process crash.
//!
//! **steady**: one process writes the same way for `--seconds`, with the
//! default checkpoint settings and a ring of `--log-mib` MiB (default 64,
//! the library's default), overwriting `--keys` random keys, and samples
//! `log_used_bytes` every 20 ms (after a 2 s warm-up): how much of the
//! log a sustained write load keeps in use. The `.wal` file's size is
//! fixed (4 KiB + the ring) whatever is in use.
//!
//! The directory must be on an ordinary file system (ext4, xfs): there the
//! pool is in the disk domain. On tmpfs or DAX it is not, and the program
//! says so and stops.
//!
//! ```sh
//! cargo run --release -p persimmon --example replay_time -- --dir /work/benchdir --log-mib 1024 --runs 3
//! cargo run --release -p persimmon --example replay_time -- steady --dir /work/benchdir --seconds 60
//! ```

use std::io::{BufRead, BufReader, Write};
use std::os::unix::io::AsRawFd;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::Arc;
use std::time::{Duration, Instant};

use persimmon::{Db, Durability, LogFigures, Options, WriteBatch};

const MIB: u64 = 1 << 20;

/// The command line: a mode word, then `--name value` pairs and flags.
struct Args(Vec<String>);

impl Args {
    fn value(&self, name: &str) -> Option<&str> {
        self.0
            .iter()
            .position(|a| a == name)
            .map(|i| self.0.get(i + 1).map(String::as_str))
            .map(|v| v.unwrap_or_else(|| die(&format!("{name} needs a value"))))
    }
    fn num(&self, name: &str, default: u64) -> u64 {
        self.value(name).map_or(default, |v| {
            v.parse()
                .unwrap_or_else(|_| die(&format!("{name} {v:?}: expected a number")))
        })
    }
    fn flag(&self, name: &str) -> bool {
        self.0.iter().any(|a| a == name)
    }
    fn dir(&self) -> PathBuf {
        PathBuf::from(self.value("--dir").unwrap_or("/work/benchdir"))
    }
}

fn die(msg: &str) -> ! {
    eprintln!("replay_time: {msg}");
    std::process::exit(2)
}

fn splitmix64(mut x: u64) -> u64 {
    x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    x = (x ^ (x >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    x = (x ^ (x >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    x ^ (x >> 31)
}

/// Key `i` of writer thread `t`: random-looking, distinct for every
/// `(t, i)` (splitmix64 is a bijection).
fn key(t: u64, i: u64) -> [u8; 8] {
    splitmix64((t << 40) | i).to_be_bytes()
}

/// The value stored under `key`, `len` bytes, rebuilt from the key alone.
fn value(key: &[u8; 8], len: usize) -> Vec<u8> {
    let mut x = u64::from_be_bytes(*key);
    let mut v = Vec::with_capacity(len + 8);
    while v.len() < len {
        x = splitmix64(x);
        v.extend_from_slice(&x.to_le_bytes());
    }
    v.truncate(len);
    v
}

fn log(db: &Db) -> LogFigures {
    db.stats().log.expect("a pool in the disk domain has a log")
}

/// Removes the pool and the files beside it (its log, and the copy of its
/// segment headers a clean close writes).
fn remove_pool(path: &Path) {
    let _ = std::fs::remove_file(path);
    for suffix in [".wal", ".segments"] {
        let _ = std::fs::remove_file(beside(path, suffix));
    }
}

/// `<pool><suffix>`.
fn beside(pool: &Path, suffix: &str) -> PathBuf {
    let mut name = pool.file_name().unwrap_or_default().to_os_string();
    name.push(suffix);
    pool.with_file_name(name)
}

/// CPU time this process has used (all threads), and how often its
/// threads were preempted: on a shared machine, open's wall time includes
/// waiting for a core.
fn cpu_used() -> (Duration, u64) {
    // SAFETY: getrusage fills the struct it is given.
    let mut u: libc::rusage = unsafe { std::mem::zeroed() };
    unsafe { libc::getrusage(libc::RUSAGE_SELF, &mut u) };
    let tv = |t: libc::timeval| Duration::new(t.tv_sec as u64, t.tv_usec as u32 * 1000);
    (tv(u.ru_utime) + tv(u.ru_stime), u.ru_nivcsw as u64)
}

fn load_average() -> String {
    std::fs::read_to_string("/proc/loadavg")
        .map(|s| s.split_whitespace().take(3).collect::<Vec<_>>().join(" "))
        .unwrap_or_default()
}

fn mib(bytes: u64) -> f64 {
    bytes as f64 / MIB as f64
}

/// Writers: `threads` threads write `value_bytes` values in groups of
/// `batch` (1: `Db::put`) until `stop`; `acked[t]` counts thread `t`'s
/// writes that returned (durable). `pick(t, n)` is the key index of the
/// `n`th write of thread `t`.
fn spawn_writers(
    db: &Arc<Db>,
    threads: u64,
    batch: u64,
    value_bytes: usize,
    stop: &Arc<AtomicBool>,
    acked: &Arc<Vec<AtomicU64>>,
    pick: fn(u64, u64) -> u64,
) -> Vec<std::thread::JoinHandle<()>> {
    (0..threads)
        .map(|t| {
            let (db, stop, acked) = (db.clone(), stop.clone(), acked.clone());
            std::thread::spawn(move || {
                let mut n = 0u64;
                let mut group = WriteBatch::new();
                while !stop.load(Ordering::Relaxed) {
                    if batch <= 1 {
                        let k = key(t, pick(t, n));
                        db.put(&k, &value(&k, value_bytes)).expect("put");
                    } else {
                        group.clear();
                        for j in 0..batch {
                            let k = key(t, pick(t, n + j));
                            group.put(&k, &value(&k, value_bytes));
                        }
                        db.write_grouped(&group).expect("write_grouped");
                    }
                    n += batch.max(1);
                    acked[t as usize].store(n, Ordering::Release);
                }
            })
        })
        .collect()
}

fn crash_options(log_bytes: u64) -> Options {
    Options {
        disk_log_bytes: log_bytes,
        // Every synced byte stays in the log: the threshold is the ring
        // (clamped to leave one largest record of room), the interval an
        // hour; nothing applies the log before it is 90 % full.
        disk_checkpoint_bytes: Some(persimmon::pmem::wal::ring_capacity(log_bytes)),
        disk_checkpoint_interval: Duration::from_secs(3600),
        ..Options::default()
    }
}

/// The child of a crash run: fills the log, reports, waits to be killed.
fn child(args: &Args) {
    let path = PathBuf::from(args.value("--pool").unwrap_or_else(|| die("child: --pool")));
    let log_bytes = args.num("--log-mib", 1024) * MIB;
    let threads = args.num("--threads", 4).max(1);
    let batch = args.num("--batch", 32);
    let value_bytes = args.num("--value-bytes", 1024) as usize;
    // Below the checkpoint threshold (the ring less 512 KiB).
    let fill = args.num("--fill", 90).min(99);
    let started = Instant::now();
    let db = Arc::new(
        Db::open(&path, crash_options(log_bytes)).unwrap_or_else(|e| {
            die(&format!("open {}: {e}", path.display()));
        }),
    );
    if db.durability() != Durability::Disk {
        die(&format!(
            "{} is kept durable as {:?}, not through the disk domain's log: use a directory on an ordinary file system (ext4, xfs), not tmpfs or DAX",
            path.display(),
            db.durability()
        ));
    }
    let capacity = log(&db).capacity;
    let target = capacity * fill / 100;
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
    let writers = spawn_writers(&db, threads, batch, value_bytes, &stop, &acked, |_, n| n);
    let mut last_report = Instant::now();
    while log(&db).used < target {
        std::thread::sleep(Duration::from_millis(2));
        if last_report.elapsed() >= Duration::from_secs(10) {
            last_report = Instant::now();
            let f = log(&db);
            eprintln!(
                "  child: {:.0} s, log {:.0} of {:.0} MiB in use",
                started.elapsed().as_secs_f64(),
                mib(f.used),
                mib(f.capacity)
            );
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    // Every write counted in `acked` returned, so it is durable.
    let f = log(&db);
    let acked: Vec<String> = acked
        .iter()
        .map(|a| a.load(Ordering::Acquire).to_string())
        .collect();
    let mut out = std::io::stdout().lock();
    writeln!(
        out,
        "filled used={} capacity={} appended={} checkpoints={} syncs={} secs={:.1} pool_bytes={} acked={}",
        f.used,
        f.capacity,
        f.appended,
        f.checkpoints,
        f.syncs,
        started.elapsed().as_secs_f64(),
        db.stats().pool_bytes,
        acked.join(",")
    )
    .and_then(|_| out.flush())
    .expect("write to the parent");
    drop(out);
    // Killed by the parent; never closes the pool.
    loop {
        std::thread::sleep(Duration::from_secs(60));
    }
}

/// Drops `path`'s pages from the page cache (it is synced first; only
/// clean pages can be dropped).
fn evict(path: &Path) {
    let f = std::fs::File::open(path).expect("open to evict");
    f.sync_all().expect("sync before evicting");
    // SAFETY: plain syscall on an open descriptor.
    let r = unsafe { libc::posix_fadvise(f.as_raw_fd(), 0, 0, libc::POSIX_FADV_DONTNEED) };
    assert_eq!(r, 0, "posix_fadvise");
}

fn field<'a>(line: &'a str, name: &str) -> &'a str {
    line.split_whitespace()
        .find_map(|w| w.strip_prefix(name)?.strip_prefix('='))
        .unwrap_or_else(|| die(&format!("the child's report has no {name}: {line}")))
}

fn num(line: &str, name: &str) -> u64 {
    field(line, name).parse().expect("a number")
}

struct RunResult {
    open: Duration,
    cpu: Duration,
    first_get: Duration,
    replay_micros: u64,
    replayed: u64,
}

fn crash_run(args: &Args, run: u64) -> RunResult {
    let dir = args.dir();
    let log_mib = args.num("--log-mib", 1024);
    let value_bytes = args.num("--value-bytes", 1024) as usize;
    let threads = args.num("--threads", 4).max(1);
    let path = dir.join(format!("replay-time-{}-{run}.pool", std::process::id()));
    remove_pool(&path);
    let mut cmd = Command::new(std::env::current_exe().expect("own path"));
    cmd.arg("child").arg("--pool").arg(&path);
    for name in [
        "--log-mib",
        "--threads",
        "--batch",
        "--value-bytes",
        "--fill",
    ] {
        if let Some(v) = args.value(name) {
            cmd.args([name, v]);
        }
    }
    let mut child = cmd.stdout(Stdio::piped()).spawn().expect("start the child");
    let stdout = child.stdout.take().expect("piped");
    let line = BufReader::new(stdout)
        .lines()
        .map(|l| l.expect("read the child"))
        .find(|l| l.starts_with("filled "));
    // SAFETY: plain syscall on the child's pid.
    unsafe { libc::kill(child.id() as i32, libc::SIGKILL) };
    let status = child.wait().expect("wait for the child");
    let Some(line) = line else {
        remove_pool(&path);
        die(&format!(
            "the child ended ({status}) without filling the log"
        ));
    };
    let acked: Vec<u64> = field(&line, "acked")
        .split(',')
        .map(|n| n.parse().expect("a count"))
        .collect();
    let used = num(&line, "used");
    let capacity = num(&line, "capacity");
    println!(
        "run {run}: child filled the log to {:.1} of {:.1} MiB ({:.1} %) in {} s with {} checkpoints, {} syncs; {} keys acknowledged; pool file {:.0} MiB; killed ({status})",
        mib(used),
        mib(capacity),
        100.0 * used as f64 / capacity as f64,
        field(&line, "secs"),
        num(&line, "checkpoints"),
        num(&line, "syncs"),
        acked.iter().sum::<u64>(),
        mib(num(&line, "pool_bytes")),
    );
    let wal = beside(&path, ".wal");
    if args.flag("--cold") {
        evict(&path);
        evict(&wal);
    }
    let opts = Options {
        disk_log_bytes: log_mib * MIB,
        ..Options::default()
    };
    let load = load_average();
    let (cpu0, preempted0) = cpu_used();
    let t = Instant::now();
    let db = Db::open(&path, opts).expect("open after the crash");
    let open = t.elapsed();
    let (cpu1, preempted1) = cpu_used();
    assert!(acked[0] > 0, "thread 0 acknowledged writes");
    let k = key(0, acked[0] - 1);
    let got = db.get(&k).expect("first get");
    let first_get = t.elapsed();
    assert_eq!(
        got,
        Some(value(&k, value_bytes)),
        "the last acknowledged key of thread 0"
    );
    let f = log(&db);
    // A sample of the acknowledged keys: every thread's last 1000 and
    // 5000 spread over the rest.
    let mut checked = 0u64;
    for (t, &n) in acked.iter().enumerate() {
        let t = t as u64;
        let spread = (n / (5000 / threads).max(1)).max(1);
        let sample = (n.saturating_sub(1000)..n).chain((0..n).step_by(spread as usize));
        for i in sample {
            let k = key(t, i);
            let v = db.get(&k).expect("get");
            assert_eq!(
                v.as_deref(),
                Some(&value(&k, value_bytes)[..]),
                "acknowledged key {i} of thread {t} lost or wrong after the crash"
            );
            checked += 1;
        }
    }
    assert!(
        f.replayed.bytes + 4096 >= used,
        "the open replayed {} bytes of the {used} the child had in use",
        f.replayed.bytes
    );
    println!(
        "run {run}: {} open: replayed {:.1} MiB ({} records, {} lines) in {:.0} ms; Db::open {:.0} ms ({:.0} ms of CPU, preempted {} times; load average {load}); first get {:.1} ms after open began; {checked} acknowledged keys verified",
        if args.flag("--cold") { "cold" } else { "warm" },
        mib(f.replayed.bytes),
        f.replayed.records,
        f.replayed.lines,
        f.replayed.nanos as f64 / 1e6,
        open.as_secs_f64() * 1e3,
        (cpu1 - cpu0).as_secs_f64() * 1e3,
        preempted1 - preempted0,
        first_get.as_secs_f64() * 1e3,
    );
    drop(db);
    if !args.flag("--keep") {
        remove_pool(&path);
    }
    RunResult {
        open,
        cpu: cpu1 - cpu0,
        first_get,
        replay_micros: f.replayed.nanos / 1000,
        replayed: f.replayed.bytes,
    }
}

fn crash(args: &Args) {
    let runs = args.num("--runs", 3);
    let results: Vec<RunResult> = (0..runs).map(|r| crash_run(args, r)).collect();
    let range = |f: fn(&RunResult) -> f64| {
        let v: Vec<f64> = results.iter().map(f).collect();
        (
            v.iter().cloned().fold(f64::MAX, f64::min),
            v.iter().cloned().fold(f64::MIN, f64::max),
        )
    };
    let (o0, o1) = range(|r| r.open.as_secs_f64() * 1e3);
    let (g0, g1) = range(|r| r.first_get.as_secs_f64() * 1e3);
    let (r0, r1) = range(|r| r.replay_micros as f64 / 1e3);
    let (b0, b1) = range(|r| mib(r.replayed));
    let (c0, c1) = range(|r| r.cpu.as_secs_f64() * 1e3);
    println!(
        "{runs} runs: replayed {b0:.0}..{b1:.0} MiB; replay {r0:.0}..{r1:.0} ms; Db::open {o0:.0}..{o1:.0} ms ({c0:.0}..{c1:.0} ms of CPU); open + first get {g0:.0}..{g1:.0} ms"
    );
    println!(
        "steady state: these runs kept every synced byte in the log on purpose (checkpoint threshold = the ring, interval an hour), \
         the worst case for a replay. With the default settings a checkpoint starts once a quarter of the ring is synced and unapplied \
         (or half of it is in use, or 500 ms after the last one); how much stays in use depends on the write rate against the \
         checkpoints' speed: measure it with the `steady` mode. The .wal file is 4 KiB + the ring ({} MiB) whatever is in use.",
        args.num("--log-mib", 1024)
    );
}

fn percentile(sorted: &[u64], p: f64) -> u64 {
    sorted[((sorted.len() - 1) as f64 * p).round() as usize]
}

fn steady(args: &Args) {
    let dir = args.dir();
    let log_bytes = args.num("--log-mib", persimmon::DEFAULT_DISK_LOG_BYTES / MIB) * MIB;
    let threads = args.num("--threads", 4).max(1);
    let batch = args.num("--batch", 32);
    let value_bytes = args.num("--value-bytes", 1024) as usize;
    let seconds = args.num("--seconds", 60);
    let keys = args.num("--keys", 200_000);
    let path = dir.join(format!("replay-steady-{}.pool", std::process::id()));
    remove_pool(&path);
    let opts = Options {
        disk_log_bytes: log_bytes,
        ..Options::default()
    };
    let db = Arc::new(Db::open(&path, opts).expect("open"));
    if db.durability() != Durability::Disk {
        let how = db.durability();
        drop(db);
        remove_pool(&path);
        die(&format!(
            "{} is kept durable as {how:?}, not through the disk domain's log: use a directory on an ordinary file system",
            path.display(),
        ));
    }
    // The key space is shared among the threads through the key's thread
    // part: thread t overwrites keys (t, 0..keys/threads) at random.
    static PER_THREAD: AtomicU64 = AtomicU64::new(1);
    PER_THREAD.store((keys / threads).max(1), Ordering::Relaxed);
    let stop = Arc::new(AtomicBool::new(false));
    let acked: Arc<Vec<AtomicU64>> = Arc::new((0..threads).map(|_| AtomicU64::new(0)).collect());
    let before = log(&db);
    let writers = spawn_writers(&db, threads, batch, value_bytes, &stop, &acked, |t, n| {
        splitmix64(n ^ (t << 56)) % PER_THREAD.load(Ordering::Relaxed)
    });
    let started = Instant::now();
    let warmup = Duration::from_secs(2);
    let mut samples = Vec::new();
    let mut peak = 0;
    while started.elapsed() < Duration::from_secs(seconds) {
        std::thread::sleep(Duration::from_millis(20));
        let used = log(&db).used;
        peak = peak.max(used);
        if started.elapsed() >= warmup {
            samples.push(used);
        }
    }
    stop.store(true, Ordering::Relaxed);
    for w in writers {
        w.join().expect("writer");
    }
    let elapsed = started.elapsed().as_secs_f64();
    let after = log(&db);
    let wal = beside(&path, ".wal");
    let wal_len = std::fs::metadata(&wal).map(|m| m.len()).unwrap_or(0);
    let writes: u64 = acked.iter().map(|a| a.load(Ordering::Relaxed)).sum();
    let near_full = samples
        .iter()
        .filter(|&&u| u * 100 >= after.capacity * 99)
        .count();
    samples.sort_unstable();
    let mean = samples.iter().sum::<u64>() as f64 / samples.len().max(1) as f64;
    println!(
        "steady: {seconds} s, {threads} threads, {} keys of {value_bytes}-byte values per write, {keys} keys overwritten at random: {writes} writes ({:.0}/s), log appended {:.0} MiB ({:.1} MiB/s), {} syncs, {} checkpoints ({:.1}/s)",
        batch.max(1),
        writes as f64 / elapsed,
        mib(after.appended - before.appended),
        mib(after.appended - before.appended) / elapsed,
        after.syncs - before.syncs,
        after.checkpoints - before.checkpoints,
        (after.checkpoints - before.checkpoints) as f64 / elapsed,
    );
    if samples.is_empty() {
        die("no samples after the warm-up: run longer (--seconds)");
    }
    println!(
        "steady: log_used_bytes over {} samples (every 20 ms after a 2 s warm-up), ring {:.0} MiB: min {:.1} MiB, median {:.1}, mean {:.1}, p90 {:.1}, p99 {:.1}, max {:.1} MiB (peak including warm-up {:.1} MiB); {:.1} % of samples at 99 % of the ring or more (writers waiting for room); {} file {} bytes (4096 + the ring)",
        samples.len(),
        mib(after.capacity),
        mib(samples[0]),
        mib(percentile(&samples, 0.5)),
        mean / MIB as f64,
        mib(percentile(&samples, 0.9)),
        mib(percentile(&samples, 0.99)),
        mib(*samples.last().expect("samples")),
        mib(peak),
        100.0 * near_full as f64 / samples.len() as f64,
        wal.display(),
        wal_len,
    );
    drop(db);
    if !args.flag("--keep") {
        remove_pool(&path);
    }
}

fn main() {
    let args = Args(std::env::args().skip(1).collect());
    match args.0.first().map(String::as_str) {
        Some("child") => child(&args),
        Some("steady") => steady(&args),
        Some("crash") | None => crash(&args),
        Some(a) if a.starts_with("--") => crash(&args),
        Some(other) => die(&format!("unknown mode {other:?}: crash (default), steady")),
    }
}
