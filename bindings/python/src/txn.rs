//! `Db.transaction` and `persimmon.Transaction`: an engine transaction whose
//! body is a Python function.
//!
//! The engine's `Db::transaction` hands its closure a `&mut Transaction<'_>`
//! that lives for one attempt. The Python `Transaction` object given to the
//! function holds a raw pointer to it, set for the duration of the
//! function's call and cleared (under the object's mutex) before the
//! attempt returns to the engine: once the function returns, the object is
//! unusable (`ClosedError`), even if it was kept or handed to another
//! thread. Every use of the pointer is under that mutex, so uses are
//! serialized and none overlaps the engine's own use of the transaction.
//!
//! An exception from the function ends the engine transaction with nothing
//! written: the closure returns an error to the engine (`aborted()`, never
//! shown to anyone) and the exception, stashed aside, is raised instead.

use std::sync::Arc;

use parking_lot::Mutex;
use pyo3::prelude::*;
use pyo3::types::PyBytes;

use crate::convert::{bytes_of, deadline_arg};
use crate::errors::{key_not_found, Failure};
use crate::shared::Shared;

/// The engine transaction of the attempt in progress.
struct Live(*mut persimmon::Transaction<'static>);

// SAFETY: the pointer is dereferenced only under `Transaction::live`'s
// mutex while the attempt that owns the transaction is suspended in the
// Python function (see the module header); `persimmon::Transaction` is
// itself `Send` (checked below), so using it from another thread under the
// mutex is sound.
unsafe impl Send for Live {}

const _: () = {
    fn is_send<T: Send>() {}
    let _ = is_send::<persimmon::Transaction<'static>>;
};

/// The error an aborted attempt returns to the engine (the real exception
/// is stashed and raised instead; this one is never shown).
fn aborted() -> persimmon::Error {
    persimmon::Error::InvalidOptions("transaction aborted by its function".into())
}

/// A transaction in progress, handed to the function of `Db.transaction`.
/// Reads see the store and the transaction's own writes; writes are
/// buffered until the commit. Unusable once the function returns.
#[pyclass(module = "persimmon", name = "Transaction", frozen)]
pub struct Transaction {
    live: Mutex<Option<Live>>,
    shared: Arc<Shared>,
}

impl Transaction {
    /// Runs `f` on the live engine transaction, GIL released.
    fn with_txn<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&mut persimmon::Transaction<'static>) -> persimmon::Result<R> + Send,
    ) -> PyResult<R> {
        let r = py.detach(|| {
            let mut live = self.live.lock();
            let live = live
                .as_mut()
                .ok_or(Failure::Closed("transaction (its function returned)"))?;
            // SAFETY: `live` is set only while the attempt that owns the
            // transaction waits for the Python function, and cleared under
            // this mutex before the attempt goes on (module header); the
            // mutex is held for the whole use.
            let tx = unsafe { &mut *live.0 };
            Ok::<R, Failure>(f(tx)?)
        });
        Ok(r?)
    }
}

#[pymethods]
impl Transaction {
    /// The value of `key` as this transaction sees it, or `default`.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let k = bytes_of(key, "key")?;
        Ok(match self.with_txn(py, |tx| tx.get(&k))? {
            Some(v) => PyBytes::new(py, &v).into_any().unbind(),
            None => default.unwrap_or_else(|| py.None()),
        })
    }

    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        let k = bytes_of(key, "key")?;
        match self.with_txn(py, |tx| tx.get(&k))? {
            Some(v) => Ok(PyBytes::new(py, &v).unbind()),
            None => Err(key_not_found(py, key)),
        }
    }

    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_of(key, "key")?;
        self.with_txn(py, |tx| tx.contains(&k))
    }

    /// Stores `value` under `key` at commit (deadline as in `Db.put`).
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
        match deadline_arg(py, &self.shared, ttl, expire_at)? {
            Some(d) => self.with_txn(py, |tx| tx.put_with_deadline(&k, &v, d)),
            None => self.with_txn(py, |tx| tx.put(&k, &v)),
        }
    }

    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None, None)
    }

    /// Deletes `key` at commit (nothing happens if it is absent).
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        let k = bytes_of(key, "key")?;
        self.with_txn(py, |tx| tx.delete(&k))
    }

    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        self.delete(py, key)
    }
}

/// Runs `f` in an engine transaction (see `Db.transaction`).
pub fn run(
    py: Python<'_>,
    shared: &Arc<Shared>,
    f: Py<PyAny>,
    attempts: u32,
) -> PyResult<Py<PyAny>> {
    let mut raised: Option<PyErr> = None;
    let result = py.detach(|| {
        shared.with_held(|db| {
            let out = db.transaction_with_attempts(attempts, |tx| {
                Python::attach(|py| attempt(py, shared, &f, tx)).map_err(|e| {
                    raised = Some(e);
                    aborted()
                })
            });
            Ok(out?)
        })
    });
    if let Some(e) = raised {
        return Err(e);
    }
    Ok(result?)
}

/// One attempt: calls `f(txn)`, then makes `txn` unusable.
fn attempt(
    py: Python<'_>,
    shared: &Arc<Shared>,
    f: &Py<PyAny>,
    tx: &mut persimmon::Transaction<'_>,
) -> PyResult<Py<PyAny>> {
    let ptr = std::ptr::from_mut(tx).cast::<persimmon::Transaction<'static>>();
    let handle = Bound::new(
        py,
        Transaction {
            live: Mutex::new(Some(Live(ptr))),
            shared: shared.clone(),
        },
    )?;
    let out = f.call1(py, (handle.clone(),));
    handle.get().live.lock().take();
    out
}
