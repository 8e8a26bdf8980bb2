//! The errors that stop an analysis: a file that cannot be read, a manifest
//! that is not what cargo accepts, or a source file that does not parse.
//!
//! Invariant: every error names the file it is about, so the message alone
//! tells the developer where to look. None of them is a panic.

use std::path::PathBuf;

/// Why the workspace could not be analysed.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A file or directory could not be read.
    #[error("{}: {source}", path.display())]
    Io {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A `Cargo.toml` is not valid TOML or lacks what the analysis needs.
    #[error("{}: {message}", path.display())]
    Manifest { path: PathBuf, message: String },
    /// A `.rs` file is not valid Rust; `message` is syn's.
    #[error("{}:{line}:{column}: does not parse: {message}", path.display())]
    Parse {
        path: PathBuf,
        line: usize,
        column: usize,
        message: String,
    },
    /// `--crate NAME` named no member of the workspace.
    #[error("no workspace member is called `{name}` (members: {members})")]
    UnknownCrate { name: String, members: String },
}

impl Error {
    /// An I/O error on `path`.
    pub fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        Error::Io {
            path: path.into(),
            source,
        }
    }

    /// A manifest problem in `path`.
    pub fn manifest(path: impl Into<PathBuf>, message: impl Into<String>) -> Self {
        Error::Manifest {
            path: path.into(),
            message: message.into(),
        }
    }
}
