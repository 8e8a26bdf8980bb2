//! Engine errors → Python exceptions.
//!
//! Invariants: every exception raised by this crate is an instance of a
//! class defined in `persimmon/_errors.py`, all of which derive from
//! `persimmon.Error`; each engine `Error` variant maps to one named class
//! (the `match` is exhaustive, so a new variant cannot be forgotten) and
//! keeps the engine's message. The classes are looked up by name in
//! `persimmon._errors` (Python code, so that they can also derive from
//! `TypeError`, `KeyError`, `OSError`...), which needs the GIL: errors are
//! built after the engine call has returned and the GIL is held again.

use pyo3::prelude::*;
use pyo3::types::PyType;

/// A failure met with the GIL released, turned into a Python exception once
/// it is held again.
#[derive(Debug)]
pub enum Failure {
    /// The engine returned an error.
    Engine(persimmon::Error),
    /// The Db (or the iterator, batch, transaction) is closed.
    Closed(&'static str),
    /// A call that would deadlock (closing a Db from inside its own
    /// transaction).
    Busy(&'static str),
    /// The engine panicked (a bug); the panic's message.
    Panic(String),
}

impl From<persimmon::Error> for Failure {
    fn from(e: persimmon::Error) -> Self {
        Failure::Engine(e)
    }
}

impl From<Failure> for PyErr {
    fn from(f: Failure) -> PyErr {
        Python::attach(|py| match f {
            Failure::Engine(e) => engine_error(py, e),
            Failure::Closed(what) => raise(py, "ClosedError", format!("{what} is closed")),
            Failure::Busy(msg) => raise(py, "BusyError", msg),
            Failure::Panic(msg) => raise(
                py,
                "InternalError",
                format!("the engine panicked (a bug in Persimmon): {msg}"),
            ),
        })
    }
}

/// An exception of the class `name` of `persimmon._errors` with `msg`.
pub fn raise(py: Python<'_>, name: &str, msg: impl Into<String>) -> PyErr {
    let msg = msg.into();
    match class(py, name) {
        Ok(cls) => PyErr::from_type(cls, (msg,)),
        Err(e) => e,
    }
}

/// `InvalidTypeError` (a `TypeError`) with `msg`.
pub fn type_error(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    raise(py, "InvalidTypeError", msg)
}

/// `InvalidArgumentError` (a `ValueError`) with `msg`.
pub fn argument_error(py: Python<'_>, msg: impl Into<String>) -> PyErr {
    raise(py, "InvalidArgumentError", msg)
}

/// `KeyNotFoundError` (a `KeyError`) whose argument is the key itself, as
/// a dict's `KeyError` has.
pub fn key_not_found(py: Python<'_>, key: &Bound<'_, PyAny>) -> PyErr {
    match class(py, "KeyNotFoundError") {
        Ok(cls) => PyErr::from_type(cls, (key.clone().unbind(),)),
        Err(e) => e,
    }
}

fn class<'py>(py: Python<'py>, name: &str) -> PyResult<Bound<'py, PyType>> {
    let module = py.import("persimmon._errors")?;
    Ok(module.getattr(name)?.cast_into::<PyType>()?)
}

/// The class name for each engine error, and the message to raise it with.
fn engine_error(py: Python<'_>, e: persimmon::Error) -> PyErr {
    use persimmon::Error as E;
    let name = match &e {
        E::Io { source, .. } => return io_error(py, source.raw_os_error(), e.to_string()),
        E::NotAPool { .. } => "NotAPoolError",
        E::Truncated { .. } => "TruncatedError",
        E::CorruptSuperblock { .. } => "CorruptSuperblockError",
        E::UnsupportedVersion { .. } => "UnsupportedVersionError",
        E::Locked { .. } => "LockedError",
        E::NotFound { .. } => "PoolNotFoundError",
        E::KeyTooLarge { .. } => "KeyTooLargeError",
        E::ValueTooLarge { .. } => "ValueTooLargeError",
        E::PoolFull { .. } => "PoolFullError",
        E::IndexFull { .. } => "IndexFullError",
        E::Corruption { .. } => "CorruptionError",
        E::PdvInvalidPattern { .. } => "PdvError",
        E::PdvValueTooLarge { .. } => "PdvValueTooLargeError",
        E::DeadlineTooFar { .. } => "DeadlineTooFarError",
        E::BatchTooLarge { .. } => "BatchTooLargeError",
        E::TransactionConflict { .. } => "TransactionConflictError",
        E::DataDir { .. } => "DataDirError",
        E::DataDirFull { .. } => "DataDirFullError",
        E::ExtentCorruption { .. } => "ExtentCorruptionError",
        E::InvalidOptions(_) => "InvalidOptionsError",
        E::NoOrderedIndex { .. } => "NoOrderedIndexError",
    };
    raise(py, name, e.to_string())
}

/// `IoError` (an `OSError`): `(errno, message)` when the OS gave an errno,
/// so that `err.errno` is set; the message alone otherwise.
fn io_error(py: Python<'_>, errno: Option<i32>, msg: String) -> PyErr {
    match (class(py, "IoError"), errno) {
        (Err(e), _) => e,
        (Ok(cls), Some(errno)) => PyErr::from_type(cls, (errno, msg)),
        (Ok(cls), None) => PyErr::from_type(cls, (msg,)),
    }
}
