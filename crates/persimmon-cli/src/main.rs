//! The `persimmon` command: a thin shell over the `persimmon` engine.
//!
//! Modules, top down (each uses only those below it):
//! - [`commands`]: dispatches to the commands; the short ones live there,
//!   the longer ones in [`load`], [`demo`] and [`serve`] (`bench` is the
//!   `persimmon-bench` crate behind a few lines).
//! - [`report`]: the texts of `stats` and `check`.
//! - [`pool`]: opening the pool as a command needs it; [`output`]: stdout.
//! - [`cli`]: argument parsing; [`expiry`]: `--ttl` and the text of
//!   `ttl`; [`escape`]: the `key<TAB>value` text format; [`failure`]:
//!   every failure, which carries the exit status and the message printed
//!   as `persimmon: <message>`.
//!
//! Sizes are parsed and printed by `persimmon::size`, and progress bars
//! drawn by `persimmon_bench::progress`, the same as in the other front
//! ends.

#![forbid(unsafe_code)]

mod cli;
mod commands;
mod demo;
mod escape;
mod expiry;
mod failure;
mod load;
mod output;
mod pool;
mod report;
mod serve;

use std::process::ExitCode;

use clap::{CommandFactory, FromArgMatches};

fn main() -> ExitCode {
    let matches = cli::Cli::command().get_matches();
    let mut cli = cli::Cli::from_arg_matches(&matches)
        .map_err(|e| e.format(&mut cli::Cli::command()))
        .unwrap_or_else(|e| e.exit());
    serve::note_pool_source(&mut cli, &matches);
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
