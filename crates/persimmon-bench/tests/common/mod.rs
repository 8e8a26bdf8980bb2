//! Helpers shared by the bench crate's tests: a scratch directory on tmpfs,
//! `BenchArgs` parsed from command-line words, and a run's output or
//! error.
#![allow(dead_code)]

use clap::Parser;
use persimmon_bench::{BenchArgs, PoolSizes, Record};

#[derive(Parser)]
struct Cli {
    #[command(flatten)]
    bench: BenchArgs,
}

/// A fresh directory, on `/dev/shm` when there is one.
pub fn scratch() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("create a temporary directory")
}

/// `persimmon bench --pool-dir DIR EXTRA...` as parsed arguments.
pub fn args(dir: &std::path::Path, extra: &[&str]) -> BenchArgs {
    let mut argv = vec!["bench".to_string(), "--pool-dir".into()];
    argv.push(dir.display().to_string());
    argv.extend(extra.iter().map(|s| s.to_string()));
    Cli::try_parse_from(argv).expect("valid arguments").bench
}

/// `persimmon bench EXTRA...` as parsed arguments, or clap's error.
pub fn try_args(extra: &[&str]) -> Result<BenchArgs, String> {
    let argv = std::iter::once("bench").chain(extra.iter().copied());
    Cli::try_parse_from(argv)
        .map(|cli| cli.bench)
        .map_err(|e| e.to_string())
}

/// The records of a `--json` file.
pub fn records(path: &std::path::Path) -> Vec<Record> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}

/// Runs `persimmon bench` with `a` (default pool sizes); returns its stdout.
pub fn run_bench(a: &BenchArgs) -> String {
    let mut out = Vec::new();
    persimmon_bench::run(a, PoolSizes::default(), &mut out).expect("bench runs");
    String::from_utf8(out).expect("UTF-8 output")
}

/// `persimmon bench --pool-dir DIR` followed by the words of `line` (split
/// at spaces; paths in it must have none), as parsed arguments.
pub fn args_line(dir: &std::path::Path, line: &str) -> BenchArgs {
    args(dir, &line.split_whitespace().collect::<Vec<_>>())
}

/// The error `persimmon bench` with `a` fails with, as printed.
pub fn bench_error(a: &BenchArgs) -> String {
    let e = persimmon_bench::run(a, PoolSizes::default(), &mut Vec::new());
    e.expect_err("the run is refused").to_string()
}
