//! `persimmon.Batch`: puts and deletes gathered in Python, applied at once.
//!
//! Invariants: nothing reaches the engine before `commit` (or a clean exit
//! from the `with` block), which applies every operation with `Db::write`:
//! atomic across a crash and durable when it returns. Leaving the block by
//! an exception discards the batch. A batch commits or is discarded once;
//! afterwards every method raises `ClosedError`.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;

use crate::convert::{bytes_of, deadline_arg};
use crate::errors::Failure;
use crate::shared::Shared;

/// An atomic batch of puts and deletes; see `Db.batch`. Later operations on
/// a key replace earlier ones.
///
/// ```python
/// with db.batch() as b:
///     b.put(b"a", b"1")
///     b.delete(b"b")
/// # committed here, atomically; an exception in the block discards it
/// ```
#[pyclass(module = "persimmon", name = "Batch", frozen)]
pub struct Batch {
    shared: Arc<Shared>,
    ops: Mutex<Option<persimmon::WriteBatch>>,
}

impl Batch {
    pub fn new(shared: Arc<Shared>) -> Batch {
        Batch {
            shared,
            ops: Mutex::new(Some(persimmon::WriteBatch::new())),
        }
    }

    /// Runs `f` on the pending batch (`ClosedError` once it is done).
    fn with_ops<R>(&self, f: impl FnOnce(&mut persimmon::WriteBatch) -> R) -> PyResult<R> {
        let mut ops = self.ops.lock();
        let ops = ops
            .as_mut()
            .ok_or(Failure::Closed("batch (committed or discarded)"))?;
        Ok(f(ops))
    }
}

#[pymethods]
impl Batch {
    /// Adds a put of `value` under `key` (with `ttl` seconds or `expire_at`
    /// seconds of Unix time: a deadline, as in `Db.put`).
    #[pyo3(signature = (key, value, ttl=None, expire_at=None))]
    fn put(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        expire_at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<()> {
        let (k, v) = (bytes_of(key, "key")?, bytes_of(value, "value")?);
        let deadline = deadline_arg(py, &self.shared, ttl, expire_at)?;
        self.with_ops(|ops| {
            match deadline {
                Some(d) => ops.put_with_deadline(&k, &v, d),
                None => ops.put(&k, &v),
            };
        })
    }

    /// Adds a delete of `key` (nothing happens if it is absent).
    fn delete(&self, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        self.with_ops(|ops| {
            ops.delete(&k);
        })
    }

    /// Number of operations in the batch.
    fn __len__(&self) -> PyResult<usize> {
        self.with_ops(|ops| ops.len())
    }

    /// Applies every operation atomically (durable when this returns) and
    /// ends the batch. An error (a key over its limit, a full pool, ...)
    /// writes nothing.
    fn commit(&self, py: Python<'_>) -> PyResult<()> {
        let ops = self
            .ops
            .lock()
            .take()
            .ok_or(Failure::Closed("batch (committed or discarded)"))?;
        Ok(py.detach(|| self.shared.with(|db| Ok(db.write(&ops)?)))?)
    }

    /// Drops every operation and ends the batch (nothing is written).
    fn discard(&self) {
        self.ops.lock().take();
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Commits on a clean exit, discards on an exception (which propagates).
    fn __exit__(
        &self,
        py: Python<'_>,
        exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        if exc_type.is_none() && self.ops.lock().is_some() {
            self.commit(py)?;
        } else {
            self.discard();
        }
        Ok(false)
    }
}
