//! The simulator's run over the workloads: which ones, for how long, with
//! which seeds; what each run of a workload adds to the tallies; the
//! summary and the contract's last line.
//!
//! Invariants:
//! - Every run of a workload has a seed of its own, printed with the one
//!   command that replays it (`--workload W --seed S`); a replay runs the
//!   same seed again and explores without a deadline.
//! - The time left is shared among the workloads left in a round, so every
//!   workload of the plan runs at least once per round until the deadline.
//! - The last line counts every inconsistency of the run (simulator and
//!   media faults); [`run`] fails exactly when it is not zero.

use std::collections::BTreeMap;
use std::path::Path;
use std::process::ExitCode;
use std::time::{Duration, Instant};

use rand::rngs::StdRng;
use rand::SeedableRng;

use crate::faults::{self, FaultReport, FaultTally};
use crate::model::OpTraffic;
use crate::sim::mix;
use crate::workloads::{self, Finished};

/// The simulator's settings, from the command line.
pub struct Settings {
    /// The run's seed (given or drawn).
    pub seed: u64,
    /// Whether `--seed` was given (a replay of one workload run).
    pub seed_given: bool,
    pub seconds: Option<u64>,
    pub workload: Option<String>,
    pub only: Option<String>,
    pub cap: u64,
    pub samples: usize,
    pub faults: usize,
}

/// Findings listed at most (they are not inconsistencies).
const MAX_FINDINGS: usize = 8;
/// Inconsistencies listed at most (all are counted).
const MAX_LISTED_FAILURES: usize = 30;

/// Which workloads run, and until when.
struct Plan {
    workloads: Vec<&'static str>,
    deadline: Option<Instant>,
    /// `--workload`: one workload, replayed (or rerun with new seeds until
    /// `--seconds`).
    single: bool,
}

impl Plan {
    /// The plan of `settings`, or the exit status after a message naming
    /// the known workloads.
    fn new(settings: &Settings, started: Instant) -> Result<Plan, ExitCode> {
        let known = || workloads::WORKLOADS.join(", ");
        match &settings.workload {
            Some(w) => {
                let Some(&name) = workloads::WORKLOADS.iter().find(|n| **n == w.as_str()) else {
                    eprintln!("unknown workload {w}; known: {}", known());
                    return Err(ExitCode::from(2));
                };
                Ok(Plan {
                    workloads: vec![name],
                    deadline: settings.seconds.map(|s| started + Duration::from_secs(s)),
                    single: true,
                })
            }
            None => {
                let prefix = settings.only.as_deref().unwrap_or("");
                let plan: Vec<&'static str> = workloads::WORKLOADS
                    .iter()
                    .copied()
                    .filter(|w| w.starts_with(prefix))
                    .collect();
                if plan.is_empty() {
                    eprintln!("no workload starts with {prefix:?}; known: {}", known());
                    return Err(ExitCode::from(2));
                }
                Ok(Plan {
                    workloads: plan,
                    deadline: Some(started + Duration::from_secs(settings.seconds.unwrap_or(60))),
                    single: false,
                })
            }
        }
    }

    /// The seed of workload `index` in `round`. One workload: `--seed`
    /// replays that run (every round); without it, rounds after the first
    /// draw new seeds, as a full run does.
    fn run_seed(&self, settings: &Settings, round: u64, index: usize) -> u64 {
        if self.single && (round == 0 || settings.seed_given) {
            settings.seed
        } else {
            mix(settings.seed, round * 1000 + index as u64) % 1_000_000_000
        }
    }

    /// The deadline of workload `index` starting `now`: a share of what is
    /// left of the run among the workloads left in this round (at least a
    /// second); a replay explores without one.
    fn workload_deadline(&self, now: Instant, index: usize) -> Option<Instant> {
        self.deadline.filter(|_| !self.single).map(|d| {
            let left = (self.workloads.len() - index) as u32;
            now + (d.saturating_duration_since(now) / left).max(Duration::from_secs(1))
        })
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
    /// Tiered workloads: see `SimStats::ssd_points` and its neighbours.
    ssd_points: u64,
    ssd_images: u64,
    ssd_torn: u64,
    ssd_dropped: u64,
    ssd_unlinked_back: u64,
}

/// Everything the run counted.
#[derive(Default)]
struct Tally {
    totals: BTreeMap<&'static str, Totals>,
    traffic: BTreeMap<&'static str, OpTraffic>,
    benign: BTreeMap<&'static str, u64>,
    faults: BTreeMap<&'static str, FaultTally>,
    /// Inconsistencies, each with its replay command.
    failures: Vec<String>,
    /// Findings (reported, not counted), the first [`MAX_FINDINGS`].
    findings: Vec<String>,
    inconsistencies: u64,
}

/// One run of one workload: what the simulator and the fault injection
/// found.
struct WorkloadRun<'a> {
    workload: &'static str,
    seed: u64,
    fin: &'a Finished,
    faults: &'a FaultReport,
    /// The fault injection's notes: findings, and failures otherwise.
    notes: Vec<String>,
    secs: f64,
}

/// Runs the simulator over the workloads of `settings`; prints a line per
/// workload run, then the summary and the contract's last line.
pub fn run(settings: &Settings) -> ExitCode {
    let scratch = tempfile::Builder::new()
        .prefix("crashtest")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("scratch directory");
    let plan = match Plan::new(settings, Instant::now()) {
        Ok(plan) => plan,
        Err(code) => return code,
    };
    println!(
        "crashtest: seed={} cap={} samples={} faults/class={} scratch={}",
        settings.seed,
        settings.cap,
        settings.samples,
        settings.faults,
        scratch.path().display()
    );
    let mut tally = Tally::default();
    let mut round = 0u64;
    'rounds: loop {
        for (i, &w) in plan.workloads.iter().enumerate() {
            let now = Instant::now();
            if plan.deadline.is_some_and(|d| now >= d) && !(plan.single && round == 0) {
                break 'rounds;
            }
            let seed = plan.run_seed(settings, round, i);
            let deadline = plan.workload_deadline(now, i);
            let dir = scratch.path().join(format!("{w}-{round}"));
            run_workload(settings, w, seed, deadline, &dir, &mut tally);
        }
        round += 1;
        if plan.single && plan.deadline.is_none_or(|d| Instant::now() >= d) {
            break;
        }
    }
    tally.report(settings.seed)
}

/// Runs workload `w` once with `seed` in `dir`, then damages its final
/// image on purpose; prints its line and counts it in `tally`.
fn run_workload(
    settings: &Settings,
    w: &'static str,
    seed: u64,
    deadline: Option<Instant>,
    dir: &Path,
    tally: &mut Tally,
) {
    std::fs::create_dir_all(dir).expect("workload directory");
    let cfg = workloads::config(
        w,
        seed,
        dir.to_path_buf(),
        settings.cap,
        settings.samples,
        deadline,
    );
    let t0 = Instant::now();
    let fin = workloads::run(&cfg);
    // Media faults on the final image.
    let mut notes = Vec::new();
    let mut frng = StdRng::seed_from_u64(mix(seed, 0xFA17));
    let faults = faults::run(
        &fin.final_image,
        fin.final_ssd.as_ref(),
        &fin.expect,
        &fin.options,
        settings.faults,
        &mut frng,
        &dir.join("fault.pool"),
        &mut notes,
    );
    let run = WorkloadRun {
        workload: w,
        seed,
        fin: &fin,
        faults: &faults,
        notes,
        secs: t0.elapsed().as_secs_f64(),
    };
    tally.add(run, &replay_command(settings, w, seed));
    let _ = std::fs::remove_dir_all(dir);
}

/// The command that replays one workload run.
fn replay_command(settings: &Settings, workload: &str, seed: u64) -> String {
    let mut s =
        format!("cargo run --release --bin crashtest -- --workload {workload} --seed {seed}");
    if settings.cap != 4096 {
        s += &format!(" --cap {}", settings.cap);
    }
    if settings.samples != 48 {
        s += &format!(" --samples {}", settings.samples);
    }
    if settings.faults != 4 {
        s += &format!(" --faults {}", settings.faults);
    }
    s
}

impl Tally {
    /// Counts `run` (whose replay command is `replay`) and prints its line.
    fn add(&mut self, run: WorkloadRun<'_>, replay: &str) {
        let WorkloadRun {
            workload: w,
            seed,
            fin,
            faults,
            notes,
            secs,
        } = run;
        let mut fault_failures = 0;
        for (class, t) in faults {
            self.faults.entry(class).or_default().add(t);
            fault_failures += t.failures;
        }
        let bad = fin.stats.inconsistencies + fault_failures;
        self.inconsistencies += bad;
        let (found, bad_notes): (Vec<String>, Vec<String>) =
            notes.into_iter().partition(|n| n.starts_with("finding"));
        for f in fin.stats.failures.iter().chain(bad_notes.iter()) {
            self.failures
                .push(format!("[{w} seed={seed}] {f}\n    replay: {replay}"));
        }
        for f in found {
            if self.findings.len() < MAX_FINDINGS {
                self.findings
                    .push(format!("[{w} seed={seed}] {f}\n    replay: {replay}"));
            }
        }
        let st = &fin.stats;
        let ssd = match fin.final_ssd {
            Some(_) => format!(
                " ssd_images={} torn={} dropped={}",
                st.ssd_images, st.ssd_torn, st.ssd_dropped
            ),
            None => String::new(),
        };
        println!(
            "  {w:<20} seed={seed:<10} ops={:<4} points={:<5} images={:<6} dup={:<5} probes={:<3} faults={:<3} bad={bad}{ssd} {:.1}s{}",
            fin.ops,
            st.points,
            st.images,
            st.duplicates,
            st.probes,
            faults.values().map(|t| t.injected).sum::<u64>(),
            secs,
            fin.note.as_ref().map(|n| format!(" ({n})")).unwrap_or_default()
        );
        let t = self.totals.entry(w).or_default();
        t.runs += 1;
        t.ops += fin.ops;
        t.points += fin.stats.points;
        t.exhaustive += fin.stats.points_exhaustive;
        t.images += fin.stats.images;
        t.duplicates += fin.stats.duplicates;
        t.probes += fin.stats.probes;
        t.inconsistencies += bad;
        t.secs += secs;
        t.ssd_points += st.ssd_points;
        t.ssd_images += st.ssd_images;
        t.ssd_torn += st.ssd_torn;
        t.ssd_dropped += st.ssd_dropped;
        t.ssd_unlinked_back += st.ssd_unlinked_back;
        if let Some(n) = &fin.note {
            if !t.notes.contains(n) && t.notes.len() < 2 {
                t.notes.push(n.clone());
            }
        }
        for (k, v) in &fin.traffic {
            self.traffic.entry(k).or_default().add(v);
        }
        for (k, v) in &fin.benign {
            *self.benign.entry(k.name()).or_default() += v;
        }
    }

    /// Prints the summary, the findings, the inconsistencies and the last
    /// line; the exit status says whether there was any inconsistency.
    fn report(&self, seed: u64) -> ExitCode {
        self.print_workloads();
        self.print_ssd();
        self.print_traffic();
        self.print_faults();
        if !self.findings.is_empty() {
            println!("\nfindings (reported, not counted as inconsistencies):");
            for f in &self.findings {
                println!("  {f}");
            }
        }
        if !self.failures.is_empty() {
            println!(
                "\nINCONSISTENCIES (first {} shown):",
                self.failures.len().min(MAX_LISTED_FAILURES)
            );
            for f in self.failures.iter().take(MAX_LISTED_FAILURES) {
                println!("  {f}");
            }
        }
        let sum = |f: fn(&Totals) -> u64| -> u64 { self.totals.values().map(f).sum() };
        let (points, images) = (sum(|t| t.points), sum(|t| t.images));
        let (ssd_images, ssd_torn) = (sum(|t| t.ssd_images), sum(|t| t.ssd_torn));
        let ssd_dropped = sum(|t| t.ssd_dropped);
        let inconsistencies = self.inconsistencies;
        println!(
            "crashtest: points={points} images={images} ssd_images={ssd_images} ssd_torn={ssd_torn} ssd_dropped={ssd_dropped} inconsistencies={inconsistencies} seed={seed}"
        );
        if inconsistencies > 0 {
            ExitCode::FAILURE
        } else {
            ExitCode::SUCCESS
        }
    }

    /// Crash points and images per workload.
    fn print_workloads(&self) {
        println!("\ncrash points and images per workload:");
        println!(
            "  {:<20} {:>4} {:>6} {:>7} {:>10} {:>8} {:>6} {:>6} {:>6} {:>7}",
            "workload",
            "runs",
            "ops",
            "points",
            "exhaustive",
            "images",
            "dup",
            "probes",
            "bad",
            "secs"
        );
        for w in workloads::WORKLOADS {
            let Some(t) = self.totals.get(w) else {
                continue;
            };
            println!(
                "  {:<20} {:>4} {:>6} {:>7} {:>10} {:>8} {:>6} {:>6} {:>6} {:>7.1}{}",
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
    }

    /// The tiered workloads' crash points and images that involved the
    /// data directory (writes pending or unlinks not yet durable).
    fn print_ssd(&self) {
        let tiered: Vec<(&&str, &Totals)> = self
            .totals
            .iter()
            .filter(|(_, t)| t.ssd_points > 0)
            .collect();
        if tiered.is_empty() {
            return;
        }
        println!(
            "\nSSD tier: crash points with data-file writes or unlinks pending, and their images:"
        );
        println!(
            "  {:<20} {:>7} {:>7} {:>7} {:>8} {:>13}",
            "workload", "points", "images", "torn", "dropped", "unlinked-back"
        );
        for (w, t) in tiered {
            println!(
                "  {:<20} {:>7} {:>7} {:>7} {:>8} {:>13}",
                w, t.ssd_points, t.ssd_images, t.ssd_torn, t.ssd_dropped, t.ssd_unlinked_back
            );
        }
    }

    /// Persistence traffic per operation type, and the stores left pending
    /// by design.
    fn print_traffic(&self) {
        println!("\npersistence traffic per operation type (observed pool):");
        println!(
            "  {:<11} {:>7} {:>11} {:>8} {:>10} {:>8} {:>10}",
            "op", "ops", "bytes", "flushes", "redundant", "fences", "redundant"
        );
        for (k, t) in &self.traffic {
            println!(
                "  {:<11} {:>7} {:>11} {:>8} {:>10} {:>8} {:>10}",
                k,
                t.ops,
                t.store_bytes,
                t.flushes,
                t.redundant_flushes,
                t.fences,
                t.redundant_fences
            );
        }
        let b: Vec<String> = self
            .benign
            .iter()
            .map(|(k, v)| format!("{k} {v}"))
            .collect();
        println!(
            "  stores left pending on return by design: {}",
            b.join(", ")
        );
    }

    /// Media faults per class, then their totals.
    fn print_faults(&self) {
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
            let t = self.faults.get(class).copied().unwrap_or_default();
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
        let all = self
            .faults
            .values()
            .fold(FaultTally::default(), |mut a, t| {
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
}
