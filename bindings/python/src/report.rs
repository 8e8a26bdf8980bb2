//! `Db.stats()` and `Db.check()` as Python dicts.
//!
//! Invariant: `stats()` has exactly the names of `Stats::fields` (the
//! engine's single list), so the binding cannot drift from the CLI's
//! `stats --json`.

use pyo3::prelude::*;
use pyo3::types::PyDict;

/// `Stats::fields` as a dict: ints, bools, strs, `None` for absent figures.
pub fn stats<'py>(py: Python<'py>, stats: &persimmon::Stats) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    for (name, value) in stats.fields() {
        match value {
            persimmon::StatValue::Count(n) => d.set_item(name, n)?,
            persimmon::StatValue::Flag(b) => d.set_item(name, b)?,
            persimmon::StatValue::Text(s) => d.set_item(name, s)?,
            persimmon::StatValue::Absent => d.set_item(name, py.None())?,
        }
    }
    Ok(d)
}

/// A `CheckReport` as a dict, with `ok` and the list of `errors`.
pub fn check<'py>(py: Python<'py>, r: &persimmon::CheckReport) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    d.set_item("ok", r.is_ok())?;
    d.set_item("keys", r.keys)?;
    d.set_item("index_segments", r.index_segments)?;
    d.set_item("log_segments", r.log_segments)?;
    d.set_item("large_records", r.large_records)?;
    d.set_item("live_bytes", r.live_bytes)?;
    d.set_item("reclaimable_segments", r.reclaimable_segments)?;
    d.set_item("ordered_nodes", r.ordered_nodes)?;
    d.set_item("ordered_orphans", r.ordered_orphans)?;
    d.set_item("ssd_extents", r.ssd_extents)?;
    d.set_item("ssd_extent_bytes", r.ssd_extent_bytes)?;
    d.set_item("ssd_orphan_files", r.ssd_orphan_files)?;
    d.set_item("errors", r.errors.clone())?;
    Ok(d)
}
