//! The `persimmon` command: a thin shell over the `persimmon` engine.
//!
//! Argument parsing lives in [`cli`], the commands in [`commands`] (with the
//! longer ones in [`load`] and [`demo`]; `bench` is the `persimmon-bench`
//! crate behind a few lines), the `key<TAB>value` text format in
//! [`escape`]. Every failure becomes a [`failure::Failure`], which carries the
//! exit status and the message printed as `persimmon: <message>`.

#![forbid(unsafe_code)]

mod cli;
mod commands;
mod demo;
mod escape;
mod failure;
mod load;
mod progress;
mod serve;
mod size;

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
