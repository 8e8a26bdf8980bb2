//! How a command fails: the exit status and the message for stderr.
//!
//! Invariants: each kind of failure has exactly one exit status (1 not
//! found, 2 error, 3 inconsistent, 141 broken pipe), since scripts branch
//! on them; the message is printed once, as `persimmon: <message>`, and a
//! closed stderr never turns a failure into a panic.

use std::io::{self, Write};
use std::process::ExitCode;

/// Why a command did not succeed. Each variant maps to one exit status.
#[derive(Debug)]
pub enum Failure {
    /// Exit 1: the key asked for is not in the pool (get, del).
    NotFound(String),
    /// Exit 2: anything that went wrong (bad input, unreadable files, a
    /// file that is not a pool, engine errors).
    Error(String),
    /// Exit 3: `check` found the pool inconsistent.
    Inconsistent(String),
    /// The reader of standard output went away (`persimmon dump | head`):
    /// stop quietly with the status of a process killed by SIGPIPE.
    BrokenPipe,
}

impl Failure {
    pub fn error(message: impl Into<String>) -> Failure {
        Failure::Error(message.into())
    }

    /// The exit status of this failure.
    pub fn code(&self) -> u8 {
        match self {
            Failure::NotFound(_) => 1,
            Failure::Error(_) => 2,
            Failure::Inconsistent(_) => 3,
            Failure::BrokenPipe => 141,
        }
    }

    /// Prints the message (if any) to stderr and returns the exit status.
    pub fn report(self) -> ExitCode {
        let code = self.code();
        match self {
            Failure::NotFound(m) | Failure::Error(m) | Failure::Inconsistent(m) => {
                // Never panic on a closed stderr: the status still tells.
                let _ = writeln!(io::stderr(), "persimmon: {m}");
            }
            Failure::BrokenPipe => {}
        }
        ExitCode::from(code)
    }

    /// A failed write to standard output.
    pub fn stdout(e: io::Error) -> Failure {
        if e.kind() == io::ErrorKind::BrokenPipe {
            Failure::BrokenPipe
        } else {
            Failure::Error(format!("write to standard output: {e}"))
        }
    }
}

impl From<persimmon::Error> for Failure {
    fn from(e: persimmon::Error) -> Failure {
        Failure::Error(e.to_string())
    }
}
