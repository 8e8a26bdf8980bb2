//! crashtest: Persimmon's crash-consistency and fault harness (issue 4).
//!
//! Two harnesses in one binary:
//! - the **simulator** (`--seconds N`, or `--workload W --seed S` to replay
//!   one run): every store, flush and fence of the engine goes through a
//!   `PersistObserver` into a model of the persistence domain (`model`); at
//!   every fence the post-crash images it allows are built (`images`),
//!   reopened with the real recovery code and judged (`oracle`); the same
//!   recording checks that operations return only with their stores
//!   durable. Each workload (`workloads`) targets persist paths (including
//!   the log cleaner, the Baseline ablation mode, the ordered index's
//!   skiplist, `ordered-*`, and the point index in DRAM, `dram-*`;
//!   `--only PREFIX` runs a subset); afterwards its final image is damaged
//!   on purpose (`faults`).
//! - the **kill -9 loop** (`--kill-rounds N`): a child process writes from
//!   several threads and is killed with SIGKILL; the parent verifies every
//!   key against a shared expected-state file (`killtest`).
//!
//! Invariants of the program:
//! - The last line is the contract's summary line; the exit status is
//!   non-zero exactly when it counts an inconsistency or mismatch.
//! - Every failure is printed with the seed and the one command that
//!   replays it.
//! - Pools and images live in a scratch directory under /dev/shm that is
//!   removed at exit (failing images are kept: their path is printed).

#![forbid(unsafe_code)]

mod faults;
mod images;
mod killtest;
mod model;
mod oracle;
mod poolfile;
mod sim;
mod workloads;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use clap::Parser;
use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::faults::FaultTally;
use crate::model::OpTraffic;
use crate::sim::mix;

#[derive(Parser, Debug)]
#[command(
    name = "crashtest",
    about = "Crash-consistency and fault harness for Persimmon",
    after_help = "Examples:\n  crashtest --seconds 90                simulator, all workloads, 90 s\n  crashtest --seconds 300 --only dram-  the DRAM point-index workloads, 300 s\n  crashtest --workload split --seed 7   replay one workload run\n  crashtest --kill-rounds 50            kill -9 loop"
)]
struct Cli {
    /// Run the simulator over all workloads for this many seconds.
    #[arg(long)]
    seconds: Option<u64>,
    /// Seed of the run (default: drawn from the clock and printed).
    #[arg(long)]
    seed: Option<u64>,
    /// Run one workload once with `--seed` (a replay), exploring fully; with
    /// `--seconds` and no `--seed`, run it again with new seeds until then.
    #[arg(long)]
    workload: Option<String>,
    /// With `--seconds` and no `--workload`: run only the workloads whose
    /// names start with this prefix (e.g. `dram-`).
    #[arg(long, value_name = "PREFIX")]
    only: Option<String>,
    /// Enumerate every combination of in-flight lines up to this many images
    /// per crash point; sample above it.
    #[arg(long, default_value_t = 4096)]
    cap: u64,
    /// Random images per crash point when sampling.
    #[arg(long, default_value_t = 48)]
    samples: usize,
    /// Faults injected per class into each workload's final image.
    #[arg(long, default_value_t = 4)]
    faults: usize,
    /// Run the kill -9 loop for this many rounds.
    #[arg(long)]
    kill_rounds: Option<u64>,
    /// Threads of the kill -9 child.
    #[arg(long, default_value_t = 4)]
    threads: usize,
    /// Keys of the kill -9 workload.
    #[arg(long, default_value_t = 2000)]
    keys: u64,
    /// List the workloads and exit.
    #[arg(long)]
    list: bool,
    /// Harness self-test: the model ignores every third fence; the run must
    /// then report inconsistencies (exit status 0 only if it does).
    #[arg(long, hide = true)]
    mutant: bool,
    #[arg(long, hide = true)]
    kill_child: bool,
    #[arg(long, hide = true)]
    pool: Option<PathBuf>,
    #[arg(long, hide = true)]
    state: Option<PathBuf>,
}

fn default_seed() -> u64 {
    let t = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(1);
    mix(t, std::process::id() as u64) % 1_000_000_000
}

fn main() -> ExitCode {
    let cli = Cli::parse();
    if cli.kill_child {
        let (Some(pool), Some(state), Some(seed)) = (&cli.pool, &cli.state, cli.seed) else {
            eprintln!("MISMATCH --kill-child needs --pool, --state and --seed");
            return ExitCode::from(2);
        };
        killtest::child(pool, state, seed, cli.threads, cli.keys);
    }
    if cli.list {
        for w in workloads::WORKLOADS {
            println!("{w}");
        }
        return ExitCode::SUCCESS;
    }
    let seed = cli.seed.unwrap_or_else(default_seed);
    if cli.mutant {
        model::MUTANT_LOSE_FENCES.store(true, std::sync::atomic::Ordering::Relaxed);
        let code = sim_main(&cli, seed);
        let caught = code != ExitCode::SUCCESS;
        println!(
            "crashtest: mutant (lost fences) {}",
            if caught {
                "caught"
            } else {
                "NOT caught: the harness is blind"
            }
        );
        return if caught {
            ExitCode::SUCCESS
        } else {
            ExitCode::FAILURE
        };
    }
    if let Some(rounds) = cli.kill_rounds {
        return kill_main(&cli, rounds, seed);
    }
    sim_main(&cli, seed)
}

fn kill_main(cli: &Cli, rounds: u64, seed: u64) -> ExitCode {
    let replay = format!(
        "cargo run --release --bin crashtest -- --kill-rounds {rounds} --seed {seed}{}",
        if cli.threads != 4 || cli.keys != 2000 {
            format!(" --threads {} --keys {}", cli.threads, cli.keys)
        } else {
            String::new()
        }
    );
    println!(
        "killtest: seed={seed} threads={} keys={}",
        cli.threads, cli.keys
    );
    let started = Instant::now();
    let r = killtest::run(rounds, seed, cli.threads, cli.keys, &replay);
    for m in &r.messages {
        println!("MISMATCH {m}");
    }
    println!(
        "killtest: in-flight operations found done {} / not done {}; {} keys present at the end; {} cleaner-lane segments in the pool; {:.1}s",
        r.ops_resolved_new,
        r.ops_resolved_old,
        r.keys_present,
        r.cleaner_segments,
        started.elapsed().as_secs_f64()
    );
    if r.mismatches > 0 {
        println!("killtest: replay (kill timing is not reproducible): {replay}");
    }
    println!(
        "killtest: rounds={} keys_verified={} mismatches={}",
        r.rounds, r.keys_verified, r.mismatches
    );
    if r.mismatches > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Totals of one workload over every run of it.
#[derive(Default)]
struct Totals {
    runs: u64,
    ops: u64,
    points: u64,
    exhaustive: u64,
    images: u64,
    duplicates: u64,
    probes: u64,
    inconsistencies: u64,
    secs: f64,
    notes: Vec<String>,
}

fn replay_command(cli: &Cli, workload: &str, seed: u64) -> String {
    let mut s =
        format!("cargo run --release --bin crashtest -- --workload {workload} --seed {seed}");
    if cli.cap != 4096 {
        s += &format!(" --cap {}", cli.cap);
    }
    if cli.samples != 48 {
        s += &format!(" --samples {}", cli.samples);
    }
    if cli.faults != 4 {
        s += &format!(" --faults {}", cli.faults);
    }
    s
}

fn sim_main(cli: &Cli, seed: u64) -> ExitCode {
    let scratch = tempfile::Builder::new()
        .prefix("crashtest")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("scratch directory");
    let started = Instant::now();
    let (plan, global_deadline): (Vec<&'static str>, Option<Instant>) = match &cli.workload {
        Some(w) => {
            let Some(&name) = workloads::WORKLOADS.iter().find(|n| **n == w.as_str()) else {
                eprintln!(
                    "unknown workload {w}; known: {}",
                    workloads::WORKLOADS.join(", ")
                );
                return ExitCode::from(2);
            };
            (
                vec![name],
                cli.seconds.map(|s| started + Duration::from_secs(s)),
            )
        }
        None => {
            let prefix = cli.only.as_deref().unwrap_or("");
            let plan: Vec<&'static str> = workloads::WORKLOADS
                .iter()
                .copied()
                .filter(|w| w.starts_with(prefix))
                .collect();
            if plan.is_empty() {
                eprintln!(
                    "no workload starts with {prefix:?}; known: {}",
                    workloads::WORKLOADS.join(", ")
                );
                return ExitCode::from(2);
            }
            (
                plan,
                Some(started + Duration::from_secs(cli.seconds.unwrap_or(60))),
            )
        }
    };
    println!(
        "crashtest: seed={seed} cap={} samples={} faults/class={} scratch={}",
        cli.cap,
        cli.samples,
        cli.faults,
        scratch.path().display()
    );
    let mut totals: BTreeMap<&'static str, Totals> = BTreeMap::new();
    let mut traffic: BTreeMap<&'static str, OpTraffic> = BTreeMap::new();
    let mut benign: BTreeMap<&'static str, u64> = BTreeMap::new();
    let mut faults_total: BTreeMap<&'static str, FaultTally> = BTreeMap::new();
    let mut failures: Vec<String> = Vec::new();
    let mut findings: Vec<String> = Vec::new();
    let mut inconsistencies = 0u64;
    let single = cli.workload.is_some();
    let mut round = 0u64;
    'rounds: loop {
        for (i, &w) in plan.iter().enumerate() {
            let now = Instant::now();
            if global_deadline.is_some_and(|d| now >= d) && !(single && round == 0) {
                break 'rounds;
            }
            // One workload: `--seed` replays that run (every round); without
            // it, rounds after the first draw new seeds, as a full run does.
            let run_seed = if single && (round == 0 || cli.seed.is_some()) {
                seed
            } else {
                mix(seed, round * 1000 + i as u64) % 1_000_000_000
            };
            // Share what is left of the run among the workloads left in
            // this round; a replay explores without a deadline.
            let deadline = global_deadline.filter(|_| !single).map(|d| {
                let left = (plan.len() - i) as u32;
                now + (d.saturating_duration_since(now) / left).max(Duration::from_secs(1))
            });
            let dir = scratch.path().join(format!("{w}-{round}"));
            std::fs::create_dir_all(&dir).expect("workload directory");
            let cfg = workloads::config(w, run_seed, dir.clone(), cli.cap, cli.samples, deadline);
            let t0 = Instant::now();
            let fin = workloads::run(&cfg);
            // Media faults on the final image.
            let mut notes = Vec::new();
            let mut frng = StdRng::seed_from_u64(mix(run_seed, 0xFA17));
            let fr = faults::run(
                &fin.final_image,
                &fin.expect,
                &fin.options,
                cli.faults,
                &mut frng,
                &dir.join("fault.pool"),
                &mut notes,
            );
            let secs = t0.elapsed().as_secs_f64();
            let mut fault_failures = 0;
            for (class, t) in &fr {
                faults_total.entry(class).or_default().add(t);
                fault_failures += t.failures;
            }
            let bad = fin.stats.inconsistencies + fault_failures;
            inconsistencies += bad;
            let replay = replay_command(cli, w, run_seed);
            let (found, bad_notes): (Vec<String>, Vec<String>) =
                notes.into_iter().partition(|n| n.starts_with("finding"));
            for f in fin.stats.failures.iter().chain(bad_notes.iter()) {
                failures.push(format!("[{w} seed={run_seed}] {f}\n    replay: {replay}"));
            }
            for f in found {
                if findings.len() < 8 {
                    findings.push(format!("[{w} seed={run_seed}] {f}\n    replay: {replay}"));
                }
            }
            println!(
                "  {w:<18} seed={run_seed:<10} ops={:<4} points={:<5} images={:<6} dup={:<5} probes={:<3} faults={:<3} bad={bad} {:.1}s{}",
                fin.ops,
                fin.stats.points,
                fin.stats.images,
                fin.stats.duplicates,
                fin.stats.probes,
                fr.values().map(|t| t.injected).sum::<u64>(),
                secs,
                fin.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
            );
            let t = totals.entry(w).or_default();
            t.runs += 1;
            t.ops += fin.ops;
            t.points += fin.stats.points;
            t.exhaustive += fin.stats.points_exhaustive;
            t.images += fin.stats.images;
            t.duplicates += fin.stats.duplicates;
            t.probes += fin.stats.probes;
            t.inconsistencies += bad;
            t.secs += secs;
            if let Some(n) = fin.note {
                if !t.notes.contains(&n) && t.notes.len() < 2 {
                    t.notes.push(n);
                }
            }
            for (k, v) in &fin.traffic {
                traffic.entry(k).or_default().add(v);
            }
            for (k, v) in &fin.benign {
                *benign.entry(k.name()).or_default() += v;
            }
            let _ = std::fs::remove_dir_all(&dir);
        }
        round += 1;
        if single && global_deadline.is_none_or(|d| Instant::now() >= d) {
            break;
        }
    }
    print_summary(&totals, &traffic, &benign, &faults_total);
    if !findings.is_empty() {
        println!("\nfindings (reported, not counted as inconsistencies):");
        for f in &findings {
            println!("  {f}");
        }
    }
    if !failures.is_empty() {
        println!(
            "\nINCONSISTENCIES (first {} shown):",
            failures.len().min(30)
        );
        for f in failures.iter().take(30) {
            println!("  {f}");
        }
    }
    let points: u64 = totals.values().map(|t| t.points).sum();
    let images: u64 = totals.values().map(|t| t.images).sum();
    println!(
        "crashtest: points={points} images={images} inconsistencies={inconsistencies} seed={seed}"
    );
    if inconsistencies > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

fn print_summary(
    totals: &BTreeMap<&'static str, Totals>,
    traffic: &BTreeMap<&'static str, OpTraffic>,
    benign: &BTreeMap<&'static str, u64>,
    faults: &BTreeMap<&'static str, FaultTally>,
) {
    println!("\ncrash points and images per workload:");
    println!(
        "  {:<18} {:>4} {:>6} {:>7} {:>10} {:>8} {:>6} {:>6} {:>6} {:>7}",
        "workload", "runs", "ops", "points", "exhaustive", "images", "dup", "probes", "bad", "secs"
    );
    for w in workloads::WORKLOADS {
        let Some(t) = totals.get(w) else { continue };
        println!(
            "  {:<18} {:>4} {:>6} {:>7} {:>10} {:>8} {:>6} {:>6} {:>6} {:>7.1}{}",
            w,
            t.runs,
            t.ops,
            t.points,
            t.exhaustive,
            t.images,
            t.duplicates,
            t.probes,
            t.inconsistencies,
            t.secs,
            if t.notes.is_empty() {
                String::new()
            } else {
                format!("  ({})", t.notes.join("; "))
            }
        );
    }
    println!("\npersistence traffic per operation type (observed pool):");
    println!(
        "  {:<11} {:>7} {:>11} {:>8} {:>10} {:>8} {:>10}",
        "op", "ops", "bytes", "flushes", "redundant", "fences", "redundant"
    );
    for (k, t) in traffic {
        println!(
            "  {:<11} {:>7} {:>11} {:>8} {:>10} {:>8} {:>10}",
            k, t.ops, t.store_bytes, t.flushes, t.redundant_flushes, t.fences, t.redundant_fences
        );
    }
    let b: Vec<String> = benign.iter().map(|(k, v)| format!("{k} {v}")).collect();
    println!(
        "  stores left pending on return by design: {}",
        b.join(", ")
    );
    println!("\nmedia faults (verify_reads on):");
    println!(
        "  {:<15} {:>8} {:>9} {:>8} {:>7} {:>9} {:>8} {:>7} {:>6} {:>10} {:>4}",
        "class",
        "injected",
        "open-err",
        "check",
        "silent",
        "read-err",
        "read-ok",
        "absent",
        "wrong",
        "collateral",
        "bad"
    );
    for class in faults::CLASSES {
        let t = faults.get(class).copied().unwrap_or_default();
        println!(
            "  {:<15} {:>8} {:>9} {:>8} {:>7} {:>9} {:>8} {:>7} {:>6} {:>10} {:>4}",
            class,
            t.injected,
            t.open_error,
            t.check_reported,
            t.check_silent,
            t.read_error,
            t.read_intact,
            t.read_absent,
            t.wrong_values,
            t.collateral,
            t.failures
        );
    }
    let all = faults.values().fold(FaultTally::default(), |mut a, t| {
        a.add(t);
        a
    });
    println!(
        "  faults injected={} detected={} wrong_values={} slot_stale={}",
        all.injected,
        all.open_error + all.check_reported,
        all.wrong_values,
        all.slot_stale
    );
    println!(
        "  (damaged key read back: read-err = error, read-ok = intact value, absent = not found;"
    );
    println!(
        "   collateral = after new writes another key was lost; bad = counted as inconsistency)"
    );
}
