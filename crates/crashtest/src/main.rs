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
//!   skiplist, `ordered-*`, the point index in DRAM, `dram-*`, the ordered
//!   index in leaves (format version 6), `leaves-*`, atomic
//!   batches, transactions and key expiry, `batch*`, `txn`, `expiry`;
//!   `--only PREFIX` runs a subset); afterwards its final image is damaged
//!   on purpose (`faults`; on a tiered pool its extents too). The tiered
//!   workloads (`tier-*`) also model the SSD tier's data directory
//!   (`ssd`): unsynced writes to data files may be lost or torn at any
//!   crash point, and a data file's sync is a crash point of its own.
//!   Three hidden self-tests make the harness prove it can fail:
//!   `--mutant` (the model loses fences), `--mutant-batch-table` (crash
//!   images lose the batch commit table) and `--mutant-ssd-sync` (a data
//!   file's sync is modelled one sync late). `campaign` runs the workloads
//!   in rounds until the deadline, tallies them and prints the summary.
//! - the **kill -9 loop** (`--kill-rounds N`): a child process writes from
//!   several threads and is killed with SIGKILL; the parent verifies every
//!   key against a shared expected-state file (`killtest`); N rounds on a
//!   pool of PM only, then N on a tiered pool.
//!
//! Invariants of the program:
//! - The last line is the contract's summary line; the exit status is
//!   non-zero exactly when it counts an inconsistency or mismatch.
//! - Every failure is printed with the seed and the one command that
//!   replays it.
//! - Pools and images live in a scratch directory under /dev/shm that is
//!   removed at exit (failing images are kept: their path is printed).

#![forbid(unsafe_code)]

mod campaign;
mod disk;
mod faults;
mod images;
mod killtest;
mod model;
mod oracle;
mod poolfile;
mod sim;
mod ssd;
mod workloads;

use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Instant;

use clap::Parser;

use crate::killtest::Store;
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
    /// Keys of the kill -9 workload (the tiered store takes a fifth of
    /// them, at least 50: its edits pile up patches to merge).
    #[arg(long, default_value_t = 2000)]
    keys: u64,
    /// Run the kill -9 loop on one store only: `pm` (a pool of PM only) or
    /// `tiered` (a pool with an SSD tier); default both, one after the
    /// other.
    #[arg(long, value_name = "STORE")]
    kill_store: Option<String>,
    /// List the workloads and exit.
    #[arg(long)]
    list: bool,
    /// Harness self-test: the model ignores every third fence; the run must
    /// then report inconsistencies (exit status 0 only if it does).
    #[arg(long, hide = true)]
    mutant: bool,
    /// Harness self-test: every crash image loses its batch commit table
    /// (interrupted batches are not undone); the run must then report
    /// inconsistencies (exit status 0 only if it does).
    #[arg(long, hide = true)]
    mutant_batch_table: bool,
    /// Harness self-test: a data file's sync makes durable only what its
    /// previous sync covered (records get published before their extents
    /// are durable); a run of a tiered workload must then report
    /// inconsistencies (exit status 0 only if it does).
    #[arg(long, hide = true)]
    mutant_ssd_sync: bool,
    /// Harness self-test (with `--domain disk`): a sync of the write-ahead
    /// log makes nothing durable, as if the engine acknowledged writes
    /// without syncing; the run must then report inconsistencies (exit
    /// status 0 only if it does).
    #[arg(long, hide = true)]
    mutant_skip_log_sync: bool,
    /// The persistence domain the workloads run in: `pm` (the default: the
    /// pool's stores, flushes and fences modelled as persistent memory) or
    /// `disk` (a pool on an ordinary file system: its write-ahead log and
    /// the pool file modelled as files, a sync of either the crash point).
    /// The kill -9 loop's `disk` puts its pool on the working directory.
    #[arg(long, value_name = "DOMAIN", default_value = "pm")]
    domain: String,
    #[arg(long, hide = true)]
    kill_child: bool,
    #[arg(long, hide = true)]
    pool: Option<PathBuf>,
    #[arg(long, hide = true)]
    state: Option<PathBuf>,
    /// The kill -9 child's SSD tier directory (the tiered store).
    #[arg(long, hide = true)]
    data_dir: Option<PathBuf>,
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
        killtest::child(&killtest::ChildArgs {
            pool,
            data_dir: cli.data_dir.as_deref(),
            state,
            seed,
            threads: cli.threads,
            keys: cli.keys,
        });
    }
    if cli.list {
        for w in workloads::WORKLOADS {
            println!("{w}");
        }
        return ExitCode::SUCCESS;
    }
    let seed = cli.seed.unwrap_or_else(default_seed);
    match cli.domain.as_str() {
        "pm" => {}
        "disk" => disk::DISK_DOMAIN.store(true, Ordering::Relaxed),
        other => {
            eprintln!("crashtest: --domain {other}: expected pm or disk");
            return ExitCode::from(2);
        }
    }
    if cli.mutant_skip_log_sync {
        let flag = &disk::MUTANT_SKIP_LOG_SYNC;
        return mutant(&cli, seed, flag, "log syncs skipped");
    }
    if cli.mutant {
        return mutant(&cli, seed, &model::MUTANT_LOSE_FENCES, "lost fences");
    }
    if cli.mutant_batch_table {
        let flag = &images::MUTANT_FORGET_BATCHES;
        return mutant(&cli, seed, flag, "batch table forgotten");
    }
    if cli.mutant_ssd_sync {
        let flag = &ssd::MUTANT_LATE_SYNC;
        return mutant(&cli, seed, flag, "data-file syncs late");
    }
    if let Some(rounds) = cli.kill_rounds {
        return kill_main(&cli, rounds, seed);
    }
    campaign::run(&sim_settings(&cli, seed))
}

/// Runs the simulator with the self-test `flag` set: succeeds exactly when
/// the run reports inconsistencies (the mutant, `what`, is caught).
fn mutant(cli: &Cli, seed: u64, flag: &AtomicBool, what: &str) -> ExitCode {
    flag.store(true, Ordering::Relaxed);
    let caught = campaign::run(&sim_settings(cli, seed)) != ExitCode::SUCCESS;
    println!(
        "crashtest: mutant ({what}) {}",
        if caught {
            "caught"
        } else {
            "NOT caught: the harness is blind"
        }
    );
    if caught {
        ExitCode::SUCCESS
    } else {
        ExitCode::FAILURE
    }
}

/// The kill -9 loop: `rounds` rounds on each store (`--kill-store`), then
/// the contract's last line with the totals.
fn kill_main(cli: &Cli, rounds: u64, seed: u64) -> ExitCode {
    let stores = match cli.kill_store.as_deref() {
        None => vec![Store::Pm, Store::Tiered],
        Some("pm") => vec![Store::Pm],
        Some("tiered") => vec![Store::Tiered],
        Some(other) => {
            eprintln!("unknown --kill-store {other}; known: pm, tiered");
            return ExitCode::from(2);
        }
    };
    let mut replay =
        format!("cargo run --release --bin crashtest -- --kill-rounds {rounds} --seed {seed}");
    if cli.threads != 4 || cli.keys != 2000 {
        replay += &format!(" --threads {} --keys {}", cli.threads, cli.keys);
    }
    if let Some(s) = &cli.kill_store {
        replay += &format!(" --kill-store {s}");
    }
    let scratch_in = match cli.domain.as_str() {
        "disk" => {
            replay += " --domain disk";
            PathBuf::from(".")
        }
        _ => PathBuf::from("/dev/shm"),
    };
    let (mut rounds_done, mut verified, mut mismatches) = (0, 0, 0);
    for store in stores {
        let keys = match store {
            Store::Pm => cli.keys,
            Store::Tiered => (cli.keys / 5).max(50),
        };
        let l = killtest::Loop {
            scratch_in: scratch_in.clone(),
            store,
            rounds,
            seed,
            threads: cli.threads,
            keys,
        };
        let r = kill_store(&l, &replay);
        rounds_done += r.rounds;
        verified += r.keys_verified;
        mismatches += r.mismatches;
        if cli.domain == "disk" && r.durability != "disk" {
            println!(
                "MISMATCH --domain disk: the pool in the working directory opened with durability {} (run it on an ordinary file system, not tmpfs)",
                r.durability
            );
            mismatches += 1;
        }
    }
    println!("killtest: rounds={rounds_done} keys_verified={verified} mismatches={mismatches}");
    if mismatches > 0 {
        ExitCode::FAILURE
    } else {
        ExitCode::SUCCESS
    }
}

/// Runs loop `l` and prints what it found.
fn kill_store(l: &killtest::Loop, replay: &str) -> killtest::KillReport {
    let store = l.store.name();
    println!(
        "killtest: store={store} seed={} threads={} keys={}",
        l.seed, l.threads, l.keys
    );
    let started = Instant::now();
    let r = killtest::run(l, replay);
    for m in &r.messages {
        println!("MISMATCH [{store}] {m}");
    }
    println!(
        "killtest: store={store}: durability {}; in-flight operations found done {} / not done {}; {} keys present at the end; {} cleaner-lane segments in the pool; {:.1}s",
        r.durability,
        r.ops_resolved_new,
        r.ops_resolved_old,
        r.keys_present,
        r.cleaner_segments,
        started.elapsed().as_secs_f64()
    );
    if l.store == Store::Tiered {
        println!(
            "killtest: store={store}: {} values on the tier verified by check() at the end, {} data file(s), {} live extent bytes",
            r.ssd_extents_checked, r.ssd_files, r.ssd_live_bytes
        );
    }
    if r.mismatches > 0 {
        println!("killtest: replay (kill timing is not reproducible): {replay}");
    }
    println!(
        "killtest: store={store} rounds={} keys_verified={} mismatches={}",
        r.rounds, r.keys_verified, r.mismatches
    );
    r
}

/// The simulator's settings from the command line; `seed` is the run's.
fn sim_settings(cli: &Cli, seed: u64) -> campaign::Settings {
    campaign::Settings {
        seed,
        seed_given: cli.seed.is_some(),
        seconds: cli.seconds,
        workload: cli.workload.clone(),
        only: cli.only.clone(),
        cap: cli.cap,
        samples: cli.samples,
        faults: cli.faults,
    }
}
