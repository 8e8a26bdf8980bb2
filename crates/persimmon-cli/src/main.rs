//! The `persimmon` command: a thin shell over the `persimmon` engine.
//!
//! Argument parsing lives in [`cli`], the commands in [`commands`] (with the
//! longer ones in [`load`] and [`demo`]), the `key<TAB>value` text format in
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
mod size;

use std::process::ExitCode;

use clap::Parser;

fn main() -> ExitCode {
    let cli = cli::Cli::parse();
    match commands::run(cli) {
        Ok(()) => ExitCode::SUCCESS,
        Err(failure) => failure.report(),
    }
}
