//! Keyword arguments of `persimmon.open` → `persimmon::Options`, plus the
//! binding's own `release_gil` (see `gil`).
//!
//! Invariants: the names are the engine's `Options` field names (and
//! `release_gil`); an unknown
//! name, a value of the wrong type or an impossible value is an
//! `InvalidOptionsError` that names the option. Sizes (`*_bytes*`,
//! `tier_threshold`) take an int or a size string such as `"64M"` or
//! `"1.5GiB"` (the engine's `size::parse_size`). Options the engine keeps
//! for tests and tools (clock, mechanisms, observers) are not offered.

use std::path::PathBuf;

use persimmon::{FlushMode, Options, OrderedLayout, PointIndex};
use pyo3::prelude::*;
use pyo3::types::{PyBool, PyDict, PyInt, PyString};

use crate::convert::type_name;
use crate::errors::raise;
use crate::gil::Policy;

/// The option names `open` accepts, in the order the docs list them.
pub const NAMES: &[&str] = &[
    "create",
    "pool_bytes_initial",
    "pool_bytes_max",
    "segment_bytes",
    "lanes",
    "flush_mode",
    "verify_reads",
    "ordered_index",
    "point_index",
    "ordered_layout",
    "cleaner",
    "cleaner_bytes_per_sec",
    "active_expiry",
    "data_dir",
    "tier_threshold",
    "cache_bytes",
    "cache_policy",
    "release_gil",
];

/// What `open`'s keyword arguments ask for.
pub struct Opening {
    pub engine: Options,
    pub release_gil: Policy,
}

/// The options of `open`'s keyword arguments (defaults for the rest).
pub fn from_kwargs(kwargs: Option<&Bound<'_, PyDict>>) -> PyResult<Opening> {
    let mut o = Opening {
        engine: Options::default(),
        release_gil: Policy::Auto,
    };
    for (name, value) in kwargs.into_iter().flat_map(|k| k.iter()) {
        let name: String = name.extract()?;
        if name == "release_gil" {
            let policies = [("auto", Policy::Auto), ("always", Policy::Always)];
            o.release_gil = choice(&name, &value, &policies)?;
        } else {
            set(&mut o.engine, &name, &value)?;
        }
    }
    Ok(o)
}

fn set(o: &mut Options, name: &str, v: &Bound<'_, PyAny>) -> PyResult<()> {
    match name {
        "create" => o.create = flag(name, v)?,
        "pool_bytes_initial" => o.pool_bytes_initial = size(name, v)?,
        "pool_bytes_max" => o.pool_bytes_max = size(name, v)?,
        "segment_bytes" => o.segment_bytes = size(name, v)?,
        "lanes" => o.lanes = int(name, v)? as usize,
        "flush_mode" => {
            o.flush_mode = choice(
                name,
                v,
                &[("flush", FlushMode::Flush), ("eadr", FlushMode::Eadr)],
            )?
        }
        "verify_reads" => o.verify_reads = flag(name, v)?,
        "ordered_index" => o.ordered_index = flag(name, v)?,
        "point_index" => {
            o.point_index = choice(
                name,
                v,
                &[("pm", PointIndex::Pm), ("dram", PointIndex::Dram)],
            )?
        }
        "ordered_layout" => {
            o.ordered_layout = choice(
                name,
                v,
                &[
                    ("leaves", OrderedLayout::Leaves),
                    ("skiplist", OrderedLayout::Skiplist),
                ],
            )?
        }
        "cleaner" => o.cleaner = flag(name, v)?,
        "cleaner_bytes_per_sec" => o.cleaner_bytes_per_sec = size(name, v)?,
        "active_expiry" => o.active_expiry = flag(name, v)?,
        "data_dir" => o.data_dir = data_dir(name, v)?,
        "tier_threshold" => o.tier_threshold = size(name, v)?,
        "cache_bytes" => o.cache_bytes = size(name, v)?,
        "cache_policy" => {
            o.cache_policy = text(name, v)?
                .parse()
                .map_err(|e: String| invalid(v.py(), name, e))?
        }
        _ => {
            return Err(invalid(
                v.py(),
                name,
                format!("unknown option (known: {})", NAMES.join(", ")),
            ))
        }
    }
    Ok(())
}

fn invalid(py: Python<'_>, name: &str, detail: impl std::fmt::Display) -> PyErr {
    raise(
        py,
        "InvalidOptionsError",
        format!("invalid options: {name}: {detail}"),
    )
}

fn wrong_type(name: &str, v: &Bound<'_, PyAny>, expected: &str) -> PyErr {
    invalid(
        v.py(),
        name,
        format!("expected {expected}, got {}", type_name(v)),
    )
}

fn flag(name: &str, v: &Bound<'_, PyAny>) -> PyResult<bool> {
    v.cast::<PyBool>()
        .map(|b| b.is_true())
        .map_err(|_| wrong_type(name, v, "True or False"))
}

/// A non-negative int (bools are refused: `lanes=True` is a mistake).
fn int(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if v.cast::<PyBool>().is_ok() || v.cast::<PyInt>().is_err() {
        return Err(wrong_type(name, v, "an int"));
    }
    v.extract::<u64>()
        .map_err(|_| invalid(v.py(), name, "must be an int from 0 to 2**64-1"))
}

/// A byte size: an int, or a string such as "64M" or "1.5GiB".
fn size(name: &str, v: &Bound<'_, PyAny>) -> PyResult<u64> {
    if let Ok(s) = v.cast::<PyString>() {
        let s = s.to_str()?;
        return persimmon::size::parse_size(s).map_err(|e| invalid(v.py(), name, e));
    }
    if v.cast::<PyInt>().is_err() {
        return Err(wrong_type(name, v, "an int or a size string like \"64M\""));
    }
    int(name, v)
}

fn text(name: &str, v: &Bound<'_, PyAny>) -> PyResult<String> {
    v.cast::<PyString>()
        .map_err(|_| wrong_type(name, v, "a str"))?
        .to_str()
        .map(str::to_owned)
}

fn choice<T: Copy>(name: &str, v: &Bound<'_, PyAny>, choices: &[(&str, T)]) -> PyResult<T> {
    let s = text(name, v)?;
    choices
        .iter()
        .find(|(n, _)| *n == s)
        .map(|(_, c)| *c)
        .ok_or_else(|| {
            let names: Vec<&str> = choices.iter().map(|(n, _)| *n).collect();
            invalid(
                v.py(),
                name,
                format!("{s:?}: expected one of {}", names.join(", ")),
            )
        })
}

fn data_dir(name: &str, v: &Bound<'_, PyAny>) -> PyResult<Option<PathBuf>> {
    if v.is_none() {
        return Ok(None);
    }
    v.extract::<PathBuf>()
        .map(Some)
        .map_err(|_| wrong_type(name, v, "a path (str or os.PathLike) or None"))
}
