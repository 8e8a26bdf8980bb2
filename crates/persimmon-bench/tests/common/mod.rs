//! Helpers shared by the bench crate's tests: a scratch directory on tmpfs
//! and `BenchArgs` parsed from command-line words.
#![allow(dead_code)]

use clap::Parser;
use persimmon_bench::{BenchArgs, Record};

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

/// The records of a `--json` file.
pub fn records(path: &std::path::Path) -> Vec<Record> {
    serde_json::from_str(&std::fs::read_to_string(path).unwrap()).unwrap()
}
