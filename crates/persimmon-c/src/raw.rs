//! Raw pointers from C, turned into Rust references and back: the one room
//! where that happens, so each conversion's soundness argument is made once.
//!
//! Invariants: a NULL pointer or an impossible length never reaches a
//! dereference (it is a `Failure` first); a byte length over the engine's
//! key or value limit is refused before the bytes are touched, so a caller
//! passing a wrong length with a short buffer is told, not read past; every
//! function here that dereferences is `unsafe fn` and states in `# Safety`
//! what the header's pointer contract promises it.

use std::ffi::{c_char, CStr, OsStr};
use std::os::unix::ffi::OsStrExt;
use std::path::PathBuf;

use crate::call::Failure;

/// A slice of `len` bytes at `ptr`; `(NULL, 0)` is the empty slice.
///
/// # Safety
/// Unless NULL, `ptr` must be valid for reads of `len` bytes, not written
/// by anyone for `'a`.
unsafe fn bytes<'a>(ptr: *const u8, len: usize, what: &str) -> Result<&'a [u8], Failure> {
    if len == 0 {
        return Ok(&[]);
    }
    if ptr.is_null() {
        return Err(Failure::invalid(format!(
            "{what} is NULL but its length is {len}"
        )));
    }
    if len > isize::MAX as usize {
        return Err(Failure::invalid(format!(
            "{what} length {len} is impossible"
        )));
    }
    // SAFETY: ptr is non-NULL and, by the caller's contract, valid for `len`
    // bytes that nobody writes for 'a; len fits an isize (checked above).
    Ok(unsafe { std::slice::from_raw_parts(ptr, len) })
}

/// A key: at most `PERSIMMON_MAX_KEY_BYTES` long (longer is refused before
/// any byte is read).
///
/// # Safety
/// As for [`bytes`].
pub unsafe fn key<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8], Failure> {
    if len > engine::MAX_KEY_BYTES {
        let e = engine::Error::KeyTooLarge {
            len,
            max: engine::MAX_KEY_BYTES,
        };
        return Err(e.into());
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { bytes(ptr, len, "key") }
}

/// A value: at most `PERSIMMON_MAX_VALUE_BYTES` long (longer is refused
/// before any byte is read).
///
/// # Safety
/// As for [`bytes`].
pub unsafe fn value<'a>(ptr: *const u8, len: usize) -> Result<&'a [u8], Failure> {
    if len > engine::MAX_VALUE_BYTES {
        let e = engine::Error::ValueTooLarge {
            len,
            max: engine::MAX_VALUE_BYTES,
        };
        return Err(e.into());
    }
    // SAFETY: forwarded from this function's contract.
    unsafe { bytes(ptr, len, "value") }
}

/// A shared reference to the object behind a handle.
///
/// # Safety
/// Unless NULL, `ptr` must be a live handle of type `T` made by
/// [`into_handle`] and not freed for `'a`.
pub unsafe fn handle<'a, T>(ptr: *const T, what: &str) -> Result<&'a T, Failure> {
    // SAFETY: a non-NULL ptr is a live Box<T> allocation (caller's contract);
    // only shared references to it are made while it is shared.
    unsafe { ptr.as_ref() }.ok_or_else(|| Failure::invalid(format!("{what} is NULL")))
}

/// An exclusive reference to the object behind a handle.
///
/// # Safety
/// As for [`handle`], and no other reference to it is used for `'a` (the
/// header's rule: such a handle is used by one thread at a time).
pub unsafe fn handle_mut<'a, T>(ptr: *mut T, what: &str) -> Result<&'a mut T, Failure> {
    // SAFETY: a live Box<T> allocation used by this thread only (contract).
    unsafe { ptr.as_mut() }.ok_or_else(|| Failure::invalid(format!("{what} is NULL")))
}

/// A new handle owning `object`; C frees it with the matching function.
pub fn into_handle<T>(object: T) -> *mut T {
    Box::into_raw(Box::new(object))
}

/// Takes a handle's object back (to drop it); `None` for NULL.
///
/// # Safety
/// Unless NULL, `ptr` is a live handle made by [`into_handle`] with the same
/// `T`, used by no other thread, and never used again after this call.
pub unsafe fn take_handle<T>(ptr: *mut T) -> Option<Box<T>> {
    // SAFETY: ptr came from Box::into_raw of a Box<T> and is not used again
    // (caller's contract), so ownership returns to exactly one Box.
    (!ptr.is_null()).then(|| unsafe { Box::from_raw(ptr) })
}

/// Checks that an out-pointer the call must write is not NULL.
pub fn required<T>(ptr: *mut T, what: &str) -> Result<(), Failure> {
    match ptr.is_null() {
        true => Err(Failure::invalid(format!("{what} is NULL"))),
        false => Ok(()),
    }
}

/// Writes `value` through an out-pointer; NULL (an optional output the
/// caller does not want) is skipped.
///
/// # Safety
/// Unless NULL, `ptr` must be valid and aligned for a write of `T`.
pub unsafe fn set<T: Copy>(ptr: *mut T, value: T) {
    if !ptr.is_null() {
        // SAFETY: non-NULL, valid and aligned for T (caller's contract); T
        // is Copy, so overwriting without dropping the old value is right.
        unsafe { ptr.write(value) }
    }
}

/// Copies `src` into the caller's buffer of `cap` bytes, which must hold it.
///
/// # Safety
/// Unless NULL, `buf` must be valid for writes of `cap` bytes and not
/// overlap `src`.
pub unsafe fn copy_out(src: &[u8], buf: *mut u8, cap: usize) -> Result<(), Failure> {
    if src.is_empty() {
        return Ok(());
    }
    required(buf, "buffer")?;
    if cap < src.len() {
        return Err(Failure::invalid("buffer shorter than the bytes to copy"));
    }
    // SAFETY: buf is non-NULL and valid for cap >= src.len() bytes (caller's
    // contract), src is a live slice, and the two do not overlap.
    unsafe { std::ptr::copy_nonoverlapping(src.as_ptr(), buf, src.len()) };
    Ok(())
}

/// A file-system path from a NUL-terminated C string (any bytes but NUL:
/// Unix paths need not be UTF-8). NULL and "" are refused.
///
/// # Safety
/// Unless NULL, `ptr` must point to a NUL-terminated string.
pub unsafe fn path(ptr: *const c_char, what: &str) -> Result<PathBuf, Failure> {
    if ptr.is_null() {
        return Err(Failure::invalid(format!("{what} is NULL")));
    }
    // SAFETY: non-NULL and NUL-terminated (caller's contract); the bytes are
    // copied into the PathBuf before returning.
    let text = unsafe { CStr::from_ptr(ptr) };
    if text.is_empty() {
        return Err(Failure::invalid(format!("{what} is empty")));
    }
    Ok(PathBuf::from(OsStr::from_bytes(text.to_bytes())))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::status::Status;

    #[test]
    fn null_with_a_length_is_invalid_and_null_empty_is_empty() {
        // SAFETY: NULL pointers; nothing is dereferenced.
        unsafe {
            assert_eq!(key(std::ptr::null(), 0).unwrap(), b"");
            let e = key(std::ptr::null(), 3).unwrap_err();
            assert_eq!(e.status, Status::PERSIMMON_INVALID_ARGUMENT);
        }
    }

    #[test]
    fn over_long_lengths_are_refused_before_reading() {
        let one = [0u8; 1];
        // SAFETY: the lengths are over the limits, so the one-byte buffer is
        // never read (which is what this tests).
        unsafe {
            let e = key(one.as_ptr(), engine::MAX_KEY_BYTES + 1).unwrap_err();
            assert_eq!(e.status, Status::PERSIMMON_KEY_TOO_LARGE);
            let e = value(one.as_ptr(), usize::MAX).unwrap_err();
            assert_eq!(e.status, Status::PERSIMMON_VALUE_TOO_LARGE);
        }
    }

    #[test]
    fn paths_need_bytes_and_may_be_non_utf8() {
        // SAFETY: NULL and NUL-terminated literals.
        unsafe {
            assert!(path(std::ptr::null(), "path").is_err());
            assert!(path(c"".as_ptr(), "path").is_err());
            let p = path(c"/tmp/\xff.pool".as_ptr(), "path").unwrap();
            assert_eq!(p.as_os_str().as_bytes(), b"/tmp/\xff.pool");
        }
    }
}
