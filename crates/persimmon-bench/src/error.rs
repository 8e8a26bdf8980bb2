//! Errors of the benchmark tool. Each carries a message that names what
//! failed (the engine, the file, the argument).
//!
//! Invariant: a write to a closed stdout stays recognisable
//! ([`Error::is_broken_pipe`]), so that `persimmon bench | head` ends
//! quietly instead of with an error.

use std::path::Path;

/// Result alias of the crate.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything that can stop a benchmark run.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// Arguments that cannot be used together or an engine this build lacks.
    #[error("{0}")]
    Usage(String),
    /// An engine under test failed.
    #[error("{engine}: {detail}")]
    Engine { engine: String, detail: String },
    /// A file or directory could not be created, written or read.
    #[error("{context}: {source}")]
    Io {
        context: String,
        #[source]
        source: std::io::Error,
    },
}

impl Error {
    pub fn usage(message: impl Into<String>) -> Error {
        Error::Usage(message.into())
    }

    pub fn engine(engine: &str, detail: impl std::fmt::Display) -> Error {
        Error::Engine {
            engine: engine.to_string(),
            detail: detail.to_string(),
        }
    }

    pub fn io(context: impl Into<String>, source: std::io::Error) -> Error {
        Error::Io {
            context: context.into(),
            source,
        }
    }

    /// An I/O error on `path`, described by `what` ("create", "write", ...).
    pub fn file(what: &str, path: &Path, source: std::io::Error) -> Error {
        Error::io(format!("{what} {}", path.display()), source)
    }

    /// Whether this is a write to a closed pipe (`persimmon bench | head`).
    pub fn is_broken_pipe(&self) -> bool {
        matches!(self, Error::Io { source, .. } if source.kind() == std::io::ErrorKind::BrokenPipe)
    }
}
