//! `persimmon._persimmon`: the native module of the `persimmon` Python
//! package (the Python part, `python/persimmon`, re-exports it).
//!
//! Rooms: `shared` (the open `Db` behind its lock, and the registry of
//! live cursors), `cursor` (engine iterators with their borrow erased; the
//! one `unsafe` lifetime argument), `iterator` (the Python iterator),
//! `db` (the `Db` class), `gil` (when a call gives the GIL up), `batch`, `txn` (transactions; the raw pointer to
//! the live engine transaction), `update` (read-modify-write), `options`
//! (keyword arguments → `Options`), `convert` (bytes-like arguments,
//! deadlines), `errors` (engine errors → the classes of
//! `persimmon/_errors.py`), `report` (stats and check as dicts).
//!
//! Thread-safety model: every object is `frozen` and `Sync`; engine calls
//! release the GIL (short point calls keep it under the default
//! `release_gil="auto"`, see `gil`), so threads run the engine in
//! parallel; no Python code runs while an engine lock is held.

#![deny(clippy::undocumented_unsafe_blocks)]
#![deny(unsafe_op_in_unsafe_fn)]

use pyo3::prelude::*;

mod batch;
mod convert;
mod cursor;
mod db;
mod errors;
mod gil;
mod iterator;
mod options;
mod report;
mod shared;
mod txn;
mod update;

#[pymodule]
fn _persimmon(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<db::Db>()?;
    m.add_class::<batch::Batch>()?;
    m.add_class::<txn::Transaction>()?;
    m.add_class::<iterator::DbIterator>()?;
    m.add_class::<update::Keep>()?;
    m.add("KEEP", Bound::new(m.py(), update::Keep)?)?;
    m.add("MAX_KEY_BYTES", persimmon::MAX_KEY_BYTES)?;
    m.add("MAX_VALUE_BYTES", persimmon::MAX_VALUE_BYTES)?;
    m.add("MAX_BATCH_OPS", persimmon::MAX_BATCH_OPS)?;
    m.add("MAX_BATCH_BYTES", persimmon::MAX_BATCH_BYTES)?;
    m.add("OPTION_NAMES", options::NAMES.to_vec())?;
    Ok(())
}
