//! The `layers` command: prints the module structure of the workspace's
//! crates and exits 1 when modules (or crates) import each other in a
//! circle, 2 when the workspace cannot be read or a file does not parse.
//!
//! It always analyses the workspace it was built in, found from this
//! crate's manifest directory, wherever it is run from.

#![forbid(unsafe_code)]

use std::path::Path;
use std::process::ExitCode;

use layers::{analyze, workspace, Error, Report};

const USAGE: &str = "\
usage: cargo run -p layers -- [--crate NAME] [--quiet]

Prints the workspace's crate graph, then each crate's modules level by level
(level 0 imports no other module of its crate) and the circles of modules
that import each other, with the reference that makes each edge.

  --crate NAME  only the member crate NAME (the crate graph is not checked)
  --quiet       only the circles and the summary line
  --help        this text

Exit status: 0 no circle, 1 a circle or a crate cycle, 2 an error.";

/// The command line.
#[derive(Debug, Default)]
struct Options {
    only: Option<String>,
    quiet: bool,
    help: bool,
}

impl Options {
    fn parse(mut args: impl Iterator<Item = String>) -> Result<Options, String> {
        let mut options = Options::default();
        while let Some(arg) = args.next() {
            match arg.as_str() {
                "--crate" => {
                    let name = args.next().ok_or("--crate needs a crate name")?;
                    options.only = Some(name);
                }
                "--quiet" | "-q" => options.quiet = true,
                "--help" | "-h" => options.help = true,
                other => return Err(format!("unknown argument `{other}`")),
            }
        }
        Ok(options)
    }
}

fn main() -> ExitCode {
    let options = match Options::parse(std::env::args().skip(1)) {
        Ok(options) => options,
        Err(message) => {
            eprintln!("layers: {message}\n\n{USAGE}");
            return ExitCode::from(2);
        }
    };
    if options.help {
        println!("{USAGE}");
        return ExitCode::SUCCESS;
    }
    match run(&options) {
        Ok(true) => ExitCode::SUCCESS,
        Ok(false) => ExitCode::from(1),
        Err(error) => {
            eprintln!("layers: {error}");
            ExitCode::from(2)
        }
    }
}

/// Prints the report; `Ok(true)` when there is no circle.
fn run(options: &Options) -> Result<bool, Error> {
    let root = workspace::find_root(Path::new(env!("CARGO_MANIFEST_DIR")))?;
    let analysis = analyze(&root, options.only.as_deref())?;
    print!(
        "{}",
        Report {
            analysis: &analysis,
            quiet: options.quiet,
        }
    );
    Ok(analysis.is_clean())
}
