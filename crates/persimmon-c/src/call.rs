//! How a call ends: every entry point runs its body through [`guard`],
//! which turns the body's result into a status code, records a failure's
//! message for `persimmon_errmsg`, and catches any panic so that none
//! crosses into C.
//!
//! Invariants: no panic leaves a `persimmon_*` function (a caught panic is
//! `PERSIMMON_INTERNAL`); the last-error message is per thread and changes
//! only when a call on that thread fails; the pointer `persimmon_errmsg`
//! returns stays valid until the next failing call on the same thread.

use std::cell::RefCell;
use std::ffi::{c_char, c_int, CString};
use std::panic::{catch_unwind, AssertUnwindSafe};

use crate::status::Status;

/// A failed call: its status code and the message C reads back.
#[derive(Debug)]
pub struct Failure {
    pub status: Status,
    pub message: String,
}

impl Failure {
    pub fn new(status: Status, message: impl Into<String>) -> Failure {
        Failure {
            status,
            message: message.into(),
        }
    }

    /// `PERSIMMON_INVALID_ARGUMENT` with a message naming the argument.
    pub fn invalid(message: impl Into<String>) -> Failure {
        Failure::new(Status::PERSIMMON_INVALID_ARGUMENT, message)
    }
}

impl From<engine::Error> for Failure {
    fn from(e: engine::Error) -> Failure {
        Failure::new(Status::of(&e), e.to_string())
    }
}

/// What a body returns: an outcome code (OK, NOT_FOUND, END) or a failure.
pub type Outcome = Result<Status, Failure>;

thread_local! {
    static LAST_ERROR: RefCell<CString> = RefCell::new(CString::default());
}

/// Runs one entry point's body: its outcome as a C status code, a failure's
/// message recorded for this thread, a panic caught as `PERSIMMON_INTERNAL`.
pub fn guard(body: impl FnOnce() -> Outcome) -> c_int {
    let outcome = catch_unwind(AssertUnwindSafe(body)).unwrap_or_else(|panic| {
        let what = panic
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| panic.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a panic without a message".to_string());
        Err(Failure::new(
            Status::PERSIMMON_INTERNAL,
            format!("internal error (a bug in Persimmon; close the handle): {what}"),
        ))
    });
    match outcome {
        Ok(status) => status.code(),
        Err(failure) => {
            remember(&failure.message);
            failure.status.code()
        }
    }
}

/// Records `message` as this thread's last error (interior NULs become '?').
fn remember(message: &str) {
    let text = CString::new(message.replace('\0', "?")).unwrap_or_default();
    // A thread being torn down has no slot left: its message is dropped.
    let _ = LAST_ERROR.try_with(|slot| *slot.borrow_mut() = text);
}

/// The message of the calling thread's last failed call, NUL-terminated
/// UTF-8 ("" when no call on this thread has failed yet). Never NULL.
///
/// The string belongs to the library: it stays valid until the next call on
/// this thread that fails; copy it to keep it. Successful calls and
/// `PERSIMMON_NOT_FOUND` / `PERSIMMON_END` outcomes leave it unchanged.
///
/// Thread safety: any thread; each thread sees only its own last error.
#[no_mangle]
pub extern "C" fn persimmon_errmsg() -> *const c_char {
    LAST_ERROR
        .try_with(|slot| slot.borrow().as_ptr())
        .unwrap_or(c"".as_ptr())
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::ffi::CStr;

    fn last() -> String {
        // SAFETY: persimmon_errmsg returns a NUL-terminated string owned by
        // this thread's slot, not changed before this read.
        unsafe { CStr::from_ptr(persimmon_errmsg()) }
            .to_string_lossy()
            .into_owned()
    }

    #[test]
    fn a_panic_becomes_internal_with_its_message() {
        let code = guard(|| panic!("boom {}", 7));
        assert_eq!(code, Status::PERSIMMON_INTERNAL.code());
        assert!(last().contains("boom 7"), "{}", last());
    }

    #[test]
    fn outcomes_leave_the_message_and_failures_set_it() {
        guard(|| Err(Failure::invalid("first")));
        assert_eq!(guard(|| Ok(Status::PERSIMMON_NOT_FOUND)), 1);
        assert_eq!(guard(|| Ok(Status::PERSIMMON_OK)), 0);
        assert_eq!(last(), "first");
        let code = guard(|| Err(Failure::invalid("a\0b")));
        assert_eq!(code, Status::PERSIMMON_INVALID_ARGUMENT.code());
        assert_eq!(last(), "a?b");
    }

    #[test]
    fn messages_are_per_thread() {
        guard(|| Err(Failure::invalid("main thread")));
        std::thread::spawn(|| {
            assert_eq!(last(), "");
            guard(|| Err(Failure::invalid("other thread")));
            assert_eq!(last(), "other thread");
        })
        .join()
        .unwrap();
        assert_eq!(last(), "main thread");
    }
}
