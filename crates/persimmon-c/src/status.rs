//! Status codes: what every `persimmon_*` function returns, and how each
//! engine error maps onto one.
//!
//! Invariants: `PERSIMMON_OK` is 0 and every other code is positive and
//! stable (codes are only ever added, never renumbered); every variant of
//! the engine's `Error` maps to exactly one code (the match below is
//! exhaustive, so a new engine error does not compile until it has one).

use std::ffi::{c_char, c_int};

use engine::Error;

/// Status codes returned by every `persimmon_*` function (as `int`).
///
/// `PERSIMMON_OK` is 0; every other code is positive. `PERSIMMON_NOT_FOUND`
/// and `PERSIMMON_END` report an outcome, not a failure: they leave
/// `persimmon_errmsg()` unchanged. Every other non-zero code is a failure
/// whose message `persimmon_errmsg()` returns on the same thread.
#[repr(C)]
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[allow(non_camel_case_types, clippy::upper_case_acronyms)]
pub enum Status {
    /// Success.
    PERSIMMON_OK = 0,
    /// The key is absent (or expired). Not a failure.
    PERSIMMON_NOT_FOUND = 1,
    /// The caller's buffer is too small; the length needed was reported.
    PERSIMMON_BUFFER_TOO_SMALL = 2,
    /// A NULL pointer where one is required, a length without bytes, an
    /// empty path, an unknown option or callback value.
    PERSIMMON_INVALID_ARGUMENT = 3,
    /// A key longer than `PERSIMMON_MAX_KEY_BYTES`.
    PERSIMMON_KEY_TOO_LARGE = 4,
    /// A value longer than `PERSIMMON_MAX_VALUE_BYTES`.
    PERSIMMON_VALUE_TOO_LARGE = 5,
    /// The file exists but is not a Persimmon pool.
    PERSIMMON_NOT_A_POOL = 6,
    /// The pool is open elsewhere (another process, or another handle in
    /// this one): one open handle per pool file.
    PERSIMMON_LOCKED = 7,
    /// The pool file does not exist and `create` was false.
    PERSIMMON_POOL_NOT_FOUND = 8,
    /// No space is left: the pool is at `pool_bytes_max`, the point index
    /// is at its maximum depth, or the data directory's file system is full.
    /// Nothing of the failed write was applied.
    PERSIMMON_POOL_FULL = 9,
    /// Damaged data: a bad checksum, a truncated pool file, a damaged
    /// superblock or SSD extent, or (from `persimmon_check`) an
    /// inconsistency.
    PERSIMMON_CORRUPTION = 10,
    /// An operating-system call failed.
    PERSIMMON_IO = 11,
    /// A range or prefix read on a pool created without the ordered index.
    PERSIMMON_NO_ORDERED_INDEX = 12,
    /// `persimmon_close` refused: iterators on the handle are still live.
    PERSIMMON_BUSY = 13,
    /// The pool was written by a newer format version than this library
    /// reads.
    PERSIMMON_UNSUPPORTED_VERSION = 14,
    /// Options that cannot be used together, or a data directory that
    /// cannot be used (missing, another pool's, not the one the pool names).
    PERSIMMON_INVALID_OPTIONS = 15,
    /// A deadline past `PERSIMMON_MAX_DEADLINE_MS` (the end of year 9999).
    PERSIMMON_DEADLINE_TOO_FAR = 16,
    /// A batch over `PERSIMMON_MAX_BATCH_OPS` operations or
    /// `PERSIMMON_MAX_BATCH_BYTES` bytes of keys and values.
    PERSIMMON_BATCH_TOO_LARGE = 17,
    /// A transaction conflicted with other writers on every attempt.
    PERSIMMON_CONFLICT = 18,
    /// An iterator has returned every pair. Not a failure.
    PERSIMMON_END = 19,
    /// A bug in Persimmon (a panic, caught at the library boundary). The
    /// handle should be closed.
    PERSIMMON_INTERNAL = 20,
}

impl Status {
    /// The code as C sees it.
    pub fn code(self) -> i32 {
        self as i32
    }

    /// The family an engine error belongs to.
    pub fn of(error: &Error) -> Status {
        use Status::*;
        match error {
            Error::Io { .. } => PERSIMMON_IO,
            Error::NotAPool { .. } => PERSIMMON_NOT_A_POOL,
            Error::Truncated { .. }
            | Error::CorruptSuperblock { .. }
            | Error::Corruption { .. }
            | Error::PdvInvalidPattern { .. }
            | Error::ExtentCorruption { .. } => PERSIMMON_CORRUPTION,
            Error::UnsupportedVersion { .. } => PERSIMMON_UNSUPPORTED_VERSION,
            Error::Locked { .. } => PERSIMMON_LOCKED,
            Error::NotFound { .. } => PERSIMMON_POOL_NOT_FOUND,
            Error::KeyTooLarge { .. } => PERSIMMON_KEY_TOO_LARGE,
            Error::ValueTooLarge { .. } => PERSIMMON_VALUE_TOO_LARGE,
            Error::PoolFull { .. } | Error::IndexFull { .. } | Error::DataDirFull { .. } => {
                PERSIMMON_POOL_FULL
            }
            Error::PdvValueTooLarge { .. } => PERSIMMON_INVALID_ARGUMENT,
            Error::DeadlineTooFar { .. } => PERSIMMON_DEADLINE_TOO_FAR,
            Error::BatchTooLarge { .. } => PERSIMMON_BATCH_TOO_LARGE,
            Error::TransactionConflict { .. } => PERSIMMON_CONFLICT,
            Error::DataDir { .. } | Error::InvalidOptions(_) => PERSIMMON_INVALID_OPTIONS,
            Error::NoOrderedIndex { .. } => PERSIMMON_NO_ORDERED_INDEX,
        }
    }

    /// A static, NUL-terminated description of the code.
    pub fn describe(code: i32) -> &'static std::ffi::CStr {
        use Status::*;
        let all = [
            (PERSIMMON_OK, c"ok"),
            (PERSIMMON_NOT_FOUND, c"key not found"),
            (PERSIMMON_BUFFER_TOO_SMALL, c"buffer too small"),
            (PERSIMMON_INVALID_ARGUMENT, c"invalid argument"),
            (PERSIMMON_KEY_TOO_LARGE, c"key too large"),
            (PERSIMMON_VALUE_TOO_LARGE, c"value too large"),
            (PERSIMMON_NOT_A_POOL, c"not a Persimmon pool"),
            (PERSIMMON_LOCKED, c"pool is already open"),
            (PERSIMMON_POOL_NOT_FOUND, c"pool does not exist"),
            (PERSIMMON_POOL_FULL, c"pool is full"),
            (PERSIMMON_CORRUPTION, c"corruption"),
            (PERSIMMON_IO, c"I/O error"),
            (PERSIMMON_NO_ORDERED_INDEX, c"pool has no ordered index"),
            (PERSIMMON_BUSY, c"iterators are still open on this handle"),
            (
                PERSIMMON_UNSUPPORTED_VERSION,
                c"unsupported pool format version",
            ),
            (PERSIMMON_INVALID_OPTIONS, c"invalid options"),
            (PERSIMMON_DEADLINE_TOO_FAR, c"deadline too far"),
            (PERSIMMON_BATCH_TOO_LARGE, c"batch too large"),
            (PERSIMMON_CONFLICT, c"transaction conflict"),
            (PERSIMMON_END, c"end of iteration"),
            (PERSIMMON_INTERNAL, c"internal error (a bug in Persimmon)"),
        ];
        all.iter()
            .find(|(s, _)| s.code() == code)
            .map_or(c"unknown status code", |(_, text)| text)
    }
}

/// A static, NUL-terminated English description of a status code ("unknown
/// status code" for a value that is none). Never NULL; the string lives as
/// long as the program.
///
/// Thread safety: any thread, any time.
#[no_mangle]
pub extern "C" fn persimmon_strerror(code: c_int) -> *const c_char {
    Status::describe(code).as_ptr()
}

#[cfg(test)]
mod tests {
    use super::Status;

    #[test]
    fn every_code_has_its_own_description() {
        let mut seen = std::collections::HashSet::new();
        for code in 0..=Status::PERSIMMON_INTERNAL.code() {
            let text = Status::describe(code);
            assert_ne!(text, c"unknown status code", "code {code}");
            assert!(seen.insert(text), "code {code} shares {text:?}");
        }
        assert_eq!(Status::describe(-1), c"unknown status code");
        assert_eq!(Status::describe(999), c"unknown status code");
    }

    #[test]
    fn engine_errors_map_to_their_family() {
        let locked = engine::Error::Locked { path: "/x".into() };
        assert_eq!(Status::of(&locked), Status::PERSIMMON_LOCKED);
        let full = engine::Error::IndexFull {
            detail: "depth".into(),
        };
        assert_eq!(Status::of(&full), Status::PERSIMMON_POOL_FULL);
    }
}
