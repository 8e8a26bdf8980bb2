//! `persimmon.Iterator`: the Python iterator over a `Cursor`.
//!
//! Invariants: each `__next__` releases the GIL, advances the cursor under
//! `Shared::with_cursor` and copies the key and value out into new `bytes`;
//! a cursor whose `Db` was closed raises `ClosedError`; an exhausted one
//! drops its engine iterator at once and keeps raising `StopIteration`.
//! Dropping the Python object drops the engine iterator under the state
//! lock (the `Db` is still open then, or the slot is already empty).

use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyTuple};

use crate::cursor::{Cursor, Source};
use crate::errors::Failure;
use crate::shared::{panic_failure, Shared};

/// A key and its value.
type Pair = (Vec<u8>, Vec<u8>);

/// What an iterator yields of each pair.
#[derive(Clone, Copy, Debug)]
pub enum Yields {
    Keys,
    Values,
    Items,
}

/// An iterator over the pairs of a Db: keys, values or `(key, value)`
/// tuples of `bytes`, depending on the method that made it. It keeps the
/// Db's pool open while it lives; closing the Db ends it (a later `next()`
/// raises `ClosedError`).
#[pyclass(module = "persimmon", name = "Iterator", frozen)]
pub struct DbIterator {
    shared: Arc<Shared>,
    slot: Arc<Mutex<Option<Cursor>>>,
    yields: Yields,
    exhausted: AtomicBool,
}

impl DbIterator {
    /// An iterator over `source` (call with the GIL released).
    pub fn open(
        shared: &Arc<Shared>,
        source: Source,
        yields: Yields,
    ) -> Result<DbIterator, Failure> {
        let slot = shared.with(|db| {
            // SAFETY: `db` is lent by `Shared::with`, under the state lock,
            // and the cursor is registered below before that lock is
            // released (the rules of the `cursor` module).
            let cursor = unsafe { Cursor::open(db, source)? };
            let slot = Arc::new(Mutex::new(Some(cursor)));
            shared.register(&slot);
            Ok(slot)
        })?;
        Ok(DbIterator {
            shared: shared.clone(),
            slot,
            yields,
            exhausted: AtomicBool::new(false),
        })
    }

    /// The next pair, or `None` at the end (GIL released by the caller).
    fn advance(&self) -> Result<Option<Pair>, Failure> {
        if self.exhausted.load(Ordering::Acquire) {
            return Ok(None);
        }
        self.shared.with_cursor(&self.slot, |slot| {
            let cursor = slot
                .as_mut()
                .ok_or(Failure::Closed("Db of this iterator"))?;
            let next =
                catch_unwind(AssertUnwindSafe(|| cursor.next_pair())).map_err(panic_failure)?;
            if next.is_none() {
                self.exhausted.store(true, Ordering::Release);
                *slot = None;
            }
            Ok(next.transpose()?)
        })
    }
}

#[pymethods]
impl DbIterator {
    fn __iter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    fn __next__(&self, py: Python<'_>) -> PyResult<Option<Py<PyAny>>> {
        let Some((k, v)) = py.detach(|| self.advance())? else {
            return Ok(None);
        };
        let out = match self.yields {
            Yields::Keys => PyBytes::new(py, &k).into_any(),
            Yields::Values => PyBytes::new(py, &v).into_any(),
            Yields::Items => {
                PyTuple::new(py, [PyBytes::new(py, &k), PyBytes::new(py, &v)])?.into_any()
            }
        };
        Ok(Some(out.unbind()))
    }

    /// Ends the iteration early and frees the engine iterator (a later
    /// `next()` raises `StopIteration`).
    fn close(&self, py: Python<'_>) {
        self.exhausted.store(true, Ordering::Release);
        py.detach(|| self.shared.with_cursor(&self.slot, Option::take));
    }
}

impl Drop for DbIterator {
    fn drop(&mut self) {
        self.shared.with_cursor(&self.slot, Option::take);
    }
}
