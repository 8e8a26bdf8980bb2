//! Python arguments → bytes the engine takes, and time arguments → deadlines.
//!
//! Invariants: keys and values are `bytes`, `bytearray`, `memoryview` (or
//! any object exporting a C-contiguous byte buffer) or `str` (stored as its
//! UTF-8 encoding); anything else is an `InvalidTypeError`. A `bytes` or
//! `str` argument is borrowed, not copied: both are immutable and the
//! caller's reference keeps them alive while the GIL is released. A
//! `bytearray` or buffer can change under another thread once the GIL is
//! released, so it is copied first.

use std::borrow::Cow;

use pyo3::buffer::PyBuffer;
use pyo3::prelude::*;
use pyo3::types::{PyByteArray, PyBytes, PyString};

use crate::errors::{argument_error, type_error};
use crate::shared::Shared;

/// The bytes of a key or value argument (`what` names it in errors).
pub fn bytes_of<'a>(obj: &'a Bound<'_, PyAny>, what: &str) -> PyResult<Cow<'a, [u8]>> {
    if let Ok(b) = obj.cast::<PyBytes>() {
        return Ok(Cow::Borrowed(b.as_bytes()));
    }
    if let Ok(s) = obj.cast::<PyString>() {
        return Ok(Cow::Borrowed(s.to_str()?.as_bytes()));
    }
    if let Ok(b) = obj.cast::<PyByteArray>() {
        return Ok(Cow::Owned(b.to_vec()));
    }
    if let Ok(buf) = PyBuffer::<u8>::get(obj) {
        if buf.is_c_contiguous() {
            return Ok(Cow::Owned(buf.to_vec(obj.py())?));
        }
    }
    Err(type_error(
        obj.py(),
        format!(
            "{what} must be bytes, bytearray, memoryview or str, not {}",
            type_name(obj)
        ),
    ))
}

/// The name of `obj`'s type, for messages.
pub fn type_name(obj: &Bound<'_, PyAny>) -> String {
    obj.get_type()
        .name()
        .map(|n| n.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// The deadline (ms of Unix time) that a call's `ttl` (seconds from now) or
/// `expire_at` (seconds of Unix time) argument names, if any; the engine's
/// clock is read, with the GIL released, only for a `ttl`.
pub fn deadline_arg(
    py: Python<'_>,
    shared: &Shared,
    ttl: Option<&Bound<'_, PyAny>>,
    expire_at: Option<&Bound<'_, PyAny>>,
) -> PyResult<Option<u64>> {
    let (ttl, at) = (seconds(ttl, "ttl")?, seconds(expire_at, "expire_at")?);
    let now = match ttl {
        Some(_) => py.detach(|| shared.with(|db| Ok(db.now_ms())))?,
        None => 0,
    };
    deadline(py, now, ttl, at)
}

/// A deadline in ms of Unix time from `ttl` (seconds from `now_ms`) or
/// `expire_at` (seconds of Unix time); `None` when neither is given.
fn deadline(
    py: Python<'_>,
    now_ms: u64,
    ttl: Option<f64>,
    expire_at: Option<f64>,
) -> PyResult<Option<u64>> {
    match (ttl, expire_at) {
        (None, None) => Ok(None),
        (Some(_), Some(_)) => Err(argument_error(py, "give ttl or expire_at, not both")),
        (Some(ttl), None) => {
            let ms = seconds_to_ms(py, ttl, "ttl")?;
            if ms == 0 {
                return Err(argument_error(
                    py,
                    format!("ttl must be > 0 seconds, got {ttl}"),
                ));
            }
            Ok(Some(now_ms.saturating_add(ms)))
        }
        (None, Some(at)) => Ok(Some(seconds_to_ms(py, at, "expire_at")?)),
    }
}

/// Seconds (a float) as whole milliseconds, rounded up so that a tiny
/// positive ttl still gives the key a future deadline.
fn seconds_to_ms(py: Python<'_>, seconds: f64, what: &str) -> PyResult<u64> {
    if !seconds.is_finite() || seconds < 0.0 {
        return Err(argument_error(
            py,
            format!("{what} must be a finite number >= 0, got {seconds}"),
        ));
    }
    let ms = (seconds * 1000.0).ceil();
    if ms >= u64::MAX as f64 {
        return Err(argument_error(py, format!("{what} {seconds} is too large")));
    }
    Ok(ms as u64)
}

/// A number of seconds argument (`None` or absent: `None`); a value that is
/// not a real number is an `InvalidTypeError`.
pub fn seconds(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<f64>> {
    let Some(obj) = obj.filter(|o| !o.is_none()) else {
        return Ok(None);
    };
    if obj.cast::<PyString>().is_ok() || obj.cast::<PyBytes>().is_ok() {
        return Err(not_a_number(obj, what));
    }
    obj.extract::<f64>()
        .map(Some)
        .map_err(|_| not_a_number(obj, what))
}

fn not_a_number(obj: &Bound<'_, PyAny>, what: &str) -> PyErr {
    type_error(
        obj.py(),
        format!("{what} must be a number of seconds, not {}", type_name(obj)),
    )
}
