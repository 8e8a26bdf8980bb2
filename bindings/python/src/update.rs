//! `Db.update`: atomic read-modify-write with a Python function.
//!
//! The engine's `Db::update` runs its closure with the key's bucket lock
//! held. Calling Python there would hold an engine lock while waiting for
//! the GIL and while arbitrary Python runs (a function that touched the
//! same bucket through the Db would deadlock, and every writer of that
//! bucket would wait for the Python code). So this is a compare-and-swap
//! loop instead: read the value and its version (`get_versioned`), call the
//! function with no lock held, and write with `write_if`, which applies the
//! write only if the key still has the version read (checked and written
//! under the key's lock). A lost race reads again, up to `attempts` times.
//!
//! Invariants: what the function returns is stored atomically with respect
//! to the value it saw; a stored value keeps the key's deadline; `KEEP`
//! and "delete an absent key" write nothing.

use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{bytes_of, type_name};
use crate::db::{conflict, Db};
use crate::errors::type_error;

/// The `persimmon.KEEP` sentinel: returned by an `update` function, it
/// leaves the key as it is.
#[pyclass(module = "persimmon", name = "_Keep", frozen)]
pub struct Keep;

#[pymethods]
impl Keep {
    fn __repr__(&self) -> &'static str {
        "persimmon.KEEP"
    }
}

/// Runs the compare-and-swap loop of `Db.update`.
pub fn run(
    db: &Db,
    py: Python<'_>,
    key: &Bound<'_, PyAny>,
    f: &Bound<'_, PyAny>,
    attempts: u32,
) -> PyResult<Py<PyAny>> {
    if !f.is_callable() {
        return Err(type_error(
            py,
            format!("fn must be callable, not {}", type_name(f)),
        ));
    }
    let k = bytes_of(key, "key")?;
    for attempt in 0..attempts.max(1) {
        let seen = db.call(py, |d| d.get_versioned(&k))?;
        let old = seen.as_ref().map(|s| PyBytes::new(py, &s.value).into_any());
        let new = f.call1((old.clone(),))?;
        if new.is_instance_of::<Keep>() {
            return Ok(old.map_or_else(|| py.None(), Bound::unbind));
        }
        let mut batch = persimmon::WriteBatch::new();
        let stored = if new.is_none() {
            if seen.is_none() {
                return Ok(py.None());
            }
            batch.delete(&k);
            py.None()
        } else {
            let v = bytes_of(&new, "the value fn returned")?;
            match seen.as_ref().and_then(|s| s.deadline) {
                Some(d) => batch.put_with_deadline(&k, &v, d),
                None => batch.put(&k, &v),
            };
            PyBytes::new(py, &v).into_any().unbind()
        };
        let expected = [(&k[..], seen.map(|s| s.version))];
        if db.call(py, |d| d.write_if(&batch, &expected))? {
            return Ok(stored);
        }
        backoff(py, attempt);
    }
    Err(conflict(py, "update", attempts.max(1)))
}

/// Waits a little longer after each lost race (GIL released).
fn backoff(py: Python<'_>, attempt: u32) {
    let micros = 1u64 << attempt.min(10);
    py.detach(|| std::thread::sleep(std::time::Duration::from_micros(micros)));
}
