//! `persimmon.Db`: the Python face of `persimmon::Db`.
//!
//! Invariants: every engine call goes through `Db::call`, which releases the
//! GIL, or `Db::call_point`, which keeps it for a short point call when the
//! `release_gil` policy says so (`gil`); both run under the shared state
//! lock (`shared`); no Python code runs
//! while an engine lock is held (`update` is a compare-and-swap loop over
//! `get_versioned`/`write_if` for that reason, see `update`); results are
//! copied into new `bytes` objects once the GIL is held again.

use std::sync::Arc;

use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict, PyList};

use crate::batch::Batch;
use crate::convert::{bytes_of, deadline_arg, type_name};
use crate::cursor::Source;
use crate::errors::{argument_error, key_not_found, raise, type_error, Failure};
use crate::gil::Policy;
use crate::iterator::{DbIterator, Yields};
use crate::report;
use crate::shared::Shared;
use crate::{options, txn, update};

/// A Persimmon key-value store on one pool file; see `persimmon.open`.
///
/// Keys and values are `bytes` (also accepted: `bytearray`, `memoryview`,
/// and `str`, stored as UTF-8); every read returns new `bytes` (a copy).
/// Every write is durable when the call returns. The Db may be shared by
/// any number of threads: calls release the GIL while the engine runs
/// (short point calls keep it, see `release_gil` in `persimmon.open`).
#[pyclass(module = "persimmon", name = "Db", frozen)]
pub struct Db {
    pub(crate) shared: Arc<Shared>,
    release_gil: Policy,
    /// The pool has an SSD tier (a point read may wait for the disk).
    tiered: bool,
}

impl Db {
    /// Runs `f` on the engine with the GIL released.
    pub(crate) fn call<R: Send>(
        &self,
        py: Python<'_>,
        f: impl FnOnce(&persimmon::Db) -> persimmon::Result<R> + Send,
    ) -> PyResult<R> {
        Ok(py.detach(|| self.shared.with(|db| Ok(f(db)?)))?)
    }

    /// Runs the point call `f`, which moves `bytes` of key and value, on
    /// the engine: with the GIL held when the policy keeps it for so short
    /// a call, else as `call`.
    fn call_point<R: Send>(
        &self,
        py: Python<'_>,
        bytes: usize,
        f: impl FnOnce(&persimmon::Db) -> persimmon::Result<R> + Send,
    ) -> PyResult<R> {
        if self.release_gil.keeps(self.tiered, bytes) {
            Ok(self.shared.with(|db| Ok(f(db)?))?)
        } else {
            self.call(py, f)
        }
    }

    /// The value of `key` as a new `bytes`. With the GIL held (the policy
    /// keeps it for a short key on a pool without an SSD tier) the `bytes`
    /// is built from the value in place, one copy; else the engine copies
    /// the value out with the GIL released and the `bytes` copies that.
    fn get_bytes(&self, py: Python<'_>, key: &[u8]) -> PyResult<Option<Py<PyBytes>>> {
        if self.release_gil.keeps(self.tiered, key.len()) {
            let read = |db: &persimmon::Db| db.get_with(key, |v| PyBytes::new(py, v).unbind());
            Ok(self.shared.with(|db| Ok(read(db)?))?)
        } else {
            let value = self.call(py, |db| db.get(key))?;
            Ok(value.map(|v| PyBytes::new(py, &v).unbind()))
        }
    }

    fn iterate(&self, py: Python<'_>, source: Source, yields: Yields) -> PyResult<DbIterator> {
        Ok(py.detach(|| DbIterator::open(&self.shared, source, yields))?)
    }
}

#[pymethods]
impl Db {
    /// Opens (or creates) the pool at `path`; `options` are the engine's
    /// `Options` by name (see `persimmon.open`).
    #[new]
    #[pyo3(signature = (path, **options))]
    fn new(
        py: Python<'_>,
        path: &Bound<'_, PyAny>,
        options: Option<&Bound<'_, PyDict>>,
    ) -> PyResult<Db> {
        let path: std::path::PathBuf = path.extract().map_err(|_| {
            type_error(
                py,
                format!("path must be str or os.PathLike, not {}", type_name(path)),
            )
        })?;
        let opening = options::from_kwargs(options)?;
        let db = py
            .detach(|| persimmon::Db::open(&path, opening.engine))
            .map_err(Failure::from)?;
        Ok(Db {
            tiered: db.data_dir().is_some(),
            shared: Shared::new(db),
            release_gil: opening.release_gil,
        })
    }

    /// `db[key]`: the value of `key`; `KeyNotFoundError` (a `KeyError`)
    /// when it is absent.
    fn __getitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Py<PyBytes>> {
        let k = bytes_of(key, "key")?;
        self.get_bytes(py, &k)?
            .ok_or_else(|| key_not_found(py, key))
    }

    /// `db[key] = value`: stores `value` under `key` (no deadline).
    fn __setitem__(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        value: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.put(py, key, value, None, None)
    }

    /// `del db[key]`: deletes `key`; `KeyNotFoundError` when it is absent.
    fn __delitem__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<()> {
        if self.delete(py, key)? {
            Ok(())
        } else {
            Err(key_not_found(py, key))
        }
    }

    /// `key in db`.
    fn __contains__(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_of(key, "key")?;
        self.call_point(py, k.len(), |db| db.contains(&k))
    }

    /// `len(db)`: the number of keys (O(1)).
    fn __len__(&self, py: Python<'_>) -> PyResult<usize> {
        self.call_point(py, 0, |db| Ok(db.len() as usize))
    }

    /// `iter(db)`: the keys, in no particular order (see `keys`).
    fn __iter__(&self, py: Python<'_>) -> PyResult<DbIterator> {
        self.keys(py)
    }

    fn __enter__(slf: PyRef<'_, Self>) -> PyRef<'_, Self> {
        slf
    }

    /// Closes the Db on leaving a `with` block (exceptions propagate).
    fn __exit__(
        &self,
        py: Python<'_>,
        _exc_type: &Bound<'_, PyAny>,
        _exc: &Bound<'_, PyAny>,
        _tb: &Bound<'_, PyAny>,
    ) -> PyResult<bool> {
        self.close(py)?;
        Ok(false)
    }

    fn __repr__(&self) -> String {
        let state = if self.shared.is_closed() {
            "closed"
        } else {
            "open"
        };
        format!("<persimmon.Db {:?} ({state})>", self.shared.path.display())
    }

    /// The value of `key`, or `default` when it is absent.
    #[pyo3(signature = (key, default=None))]
    fn get(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        default: Option<Py<PyAny>>,
    ) -> PyResult<Py<PyAny>> {
        let k = bytes_of(key, "key")?;
        Ok(match self.get_bytes(py, &k)? {
            Some(v) => v.into_any(),
            None => default.unwrap_or_else(|| py.None()),
        })
    }

    /// Stores `value` under `key`, durably when this returns. With `ttl`
    /// (seconds, float ok) or `expire_at` (seconds of Unix time) the key
    /// expires then; without either it has no deadline (a previous one is
    /// dropped).
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
        let bytes = k.len() + v.len();
        match deadline_arg(py, &self.shared, ttl, expire_at)? {
            None => self.call_point(py, bytes, |db| db.put(&k, &v)),
            Some(d) => self.call_point(py, bytes, |db| db.put_with_deadline(&k, &v, d)),
        }
    }

    /// Deletes `key`; returns whether it existed. Durable when it returns.
    fn delete(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_of(key, "key")?;
        self.call_point(py, k.len(), |db| db.delete(&k))
    }

    /// Seconds left before `key` expires (a float), `None` when it has no
    /// deadline; `KeyNotFoundError` when it is absent (or expired).
    fn ttl(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<Option<f64>> {
        let k = bytes_of(key, "key")?;
        match self.call(py, |db| db.ttl(&k))? {
            persimmon::Ttl::Missing => Err(key_not_found(py, key)),
            persimmon::Ttl::Persistent => Ok(None),
            persimmon::Ttl::Expires { remaining_ms, .. } => Ok(Some(remaining_ms as f64 / 1000.0)),
        }
    }

    /// Gives `key` a deadline: `ttl` seconds from now, or `expire_at`
    /// (seconds of Unix time). Returns whether the key exists.
    #[pyo3(signature = (key, ttl=None, expire_at=None))]
    fn expire(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        ttl: Option<&Bound<'_, PyAny>>,
        expire_at: Option<&Bound<'_, PyAny>>,
    ) -> PyResult<bool> {
        let k = bytes_of(key, "key")?;
        let Some(d) = deadline_arg(py, &self.shared, ttl, expire_at)? else {
            return Err(argument_error(py, "expire needs ttl or expire_at"));
        };
        self.call(py, |db| db.expire_at(&k, d))
    }

    /// Removes the deadline of `key`; returns whether it had one.
    fn persist(&self, py: Python<'_>, key: &Bound<'_, PyAny>) -> PyResult<bool> {
        let k = bytes_of(key, "key")?;
        self.call(py, |db| db.persist(&k))
    }

    /// The values of `keys` (any iterable), in order: `bytes`, or `None`
    /// for an absent key. The engine overlaps the lookups.
    fn get_many(&self, py: Python<'_>, keys: &Bound<'_, PyAny>) -> PyResult<Py<PyList>> {
        let objs: Vec<Bound<'_, PyAny>> = keys
            .try_iter()
            .map_err(|_| {
                type_error(
                    py,
                    format!("keys must be an iterable, not {}", type_name(keys)),
                )
            })?
            .collect::<PyResult<_>>()?;
        let owned = objs
            .iter()
            .map(|k| bytes_of(k, "key"))
            .collect::<PyResult<Vec<_>>>()?;
        let refs: Vec<&[u8]> = owned.iter().map(|k| &k[..]).collect();
        let values = self.call(py, |db| db.get_many(&refs))?;
        let out = values
            .iter()
            .map(|v| v.as_deref().map(|v| PyBytes::new(py, v)));
        Ok(PyList::new(py, out)?.unbind())
    }

    /// An iterator over the keys, in no particular order (hash order; use
    /// `range` for key order). Keys written while it runs may or may not
    /// appear; a key present throughout appears (at least) once.
    fn keys(&self, py: Python<'_>) -> PyResult<DbIterator> {
        self.iterate(py, Source::All, Yields::Keys)
    }

    /// An iterator over the values, in the order of `keys`.
    fn values(&self, py: Python<'_>) -> PyResult<DbIterator> {
        self.iterate(py, Source::All, Yields::Values)
    }

    /// An iterator over `(key, value)` pairs, in the order of `keys`.
    fn items(&self, py: Python<'_>) -> PyResult<DbIterator> {
        self.iterate(py, Source::All, Yields::Items)
    }

    /// `(key, value)` pairs with `start <= key < end` in byte order
    /// (`None`: unbounded), descending with `reverse=True`. Needs a pool
    /// created with `ordered_index=True` (else `NoOrderedIndexError`).
    #[pyo3(signature = (start=None, end=None, reverse=false))]
    fn range(
        &self,
        py: Python<'_>,
        start: Option<&Bound<'_, PyAny>>,
        end: Option<&Bound<'_, PyAny>>,
        reverse: bool,
    ) -> PyResult<DbIterator> {
        let source = Source::Range {
            lower: bound(start, "start")?,
            upper: bound(end, "end")?,
            reverse,
        };
        self.iterate(py, source, Yields::Items)
    }

    /// `(key, value)` pairs whose key starts with `prefix`, in byte order
    /// (descending with `reverse=True`). Needs the ordered index.
    #[pyo3(signature = (prefix, reverse=false))]
    fn prefix(
        &self,
        py: Python<'_>,
        prefix: &Bound<'_, PyAny>,
        reverse: bool,
    ) -> PyResult<DbIterator> {
        let prefix = bytes_of(prefix, "prefix")?.into_owned();
        self.iterate(py, Source::Prefix { prefix, reverse }, Yields::Items)
    }

    /// Atomic read-modify-write of `key`: calls `fn(old)` with the current
    /// value (`bytes`, or `None` when absent) and stores what it returns:
    /// `bytes`-like to store it (the key keeps its deadline), `None` to
    /// delete the key, `persimmon.KEEP` to leave it as it is. Returns the
    /// value the key holds afterwards. `fn` may run more than once (when
    /// another writer changes the key meanwhile), so it should have no
    /// side effects; it runs with no engine lock held and may use the Db.
    #[pyo3(signature = (key, r#fn, attempts=persimmon::DEFAULT_TRANSACTION_ATTEMPTS))]
    fn update(
        &self,
        py: Python<'_>,
        key: &Bound<'_, PyAny>,
        r#fn: &Bound<'_, PyAny>,
        attempts: u32,
    ) -> PyResult<Py<PyAny>> {
        update::run(self, py, key, r#fn, attempts)
    }

    /// A new batch of puts and deletes, applied atomically by
    /// `Batch.commit` or on leaving its `with` block without an exception.
    fn batch(&self) -> Batch {
        Batch::new(self.shared.clone())
    }

    /// Runs `fn(txn)` as an optimistic transaction and returns its result.
    /// `txn` reads the store and its own writes (`txn.get`, `txn[key]`) and
    /// buffers writes (`txn.put`, `txn[key] = v`, `txn.delete`); at the end
    /// the keys it read are checked unchanged and its writes commit as one
    /// atomic batch. On a conflict `fn` runs again with a new `txn`, up to
    /// `attempts` times, then `TransactionConflictError`. An exception from
    /// `fn` propagates with nothing written. `txn` is unusable once `fn`
    /// returns.
    #[pyo3(signature = (r#fn, attempts=persimmon::DEFAULT_TRANSACTION_ATTEMPTS))]
    fn transaction(&self, py: Python<'_>, r#fn: Py<PyAny>, attempts: u32) -> PyResult<Py<PyAny>> {
        txn::run(py, &self.shared, r#fn, attempts)
    }

    /// Figures about the pool, as a dict (the names of `persimmon stats
    /// --json`): ints, bools, strs, or `None` for a figure the pool lacks.
    fn stats<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let stats = self.call(py, |db| Ok(db.stats()))?;
        report::stats(py, &stats)
    }

    /// Walks the whole pool and verifies it; returns a dict of what it
    /// counted, with `ok` (bool) and `errors` (list of str). Writers wait
    /// while it runs.
    fn check<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        let r = self.call(py, |db| db.check())?;
        report::check(py, &r)
    }

    /// Closes the pool cleanly: waits for calls in flight, ends every live
    /// iterator (their next `next()` raises `ClosedError`) and releases the
    /// pool's lock, so it can be opened again. Closing twice is harmless.
    /// Inside one of the Db's own transactions it raises `BusyError`.
    fn close(&self, py: Python<'_>) -> PyResult<()> {
        Ok(py.detach(|| self.shared.close_checked())?)
    }

    /// Whether the Db is closed.
    #[getter]
    fn closed(&self) -> bool {
        self.shared.is_closed()
    }

    /// The pool file's path (str).
    #[getter]
    fn path(&self) -> String {
        self.shared.path.display().to_string()
    }

    /// The `release_gil` policy this Db was opened with ("auto" or
    /// "always").
    #[getter]
    fn release_gil(&self) -> &'static str {
        self.release_gil.name()
    }

    /// Whether the pool keeps the ordered index (`range`, `prefix`).
    #[getter]
    fn ordered(&self, py: Python<'_>) -> PyResult<bool> {
        self.call(py, |db| Ok(db.has_ordered_index()))
    }
}

/// A range bound argument: bytes-like, or `None` for unbounded.
fn bound(obj: Option<&Bound<'_, PyAny>>, what: &str) -> PyResult<Option<Vec<u8>>> {
    match obj {
        Some(o) if !o.is_none() => Ok(Some(bytes_of(o, what)?.into_owned())),
        _ => Ok(None),
    }
}

/// `TransactionConflictError` after `attempts` conflicts.
pub(crate) fn conflict(py: Python<'_>, what: &str, attempts: u32) -> PyErr {
    raise(
        py,
        "TransactionConflictError",
        format!(
            "{what} conflicted with other writers on all {attempts} attempts; nothing was written"
        ),
    )
}
