//! Where results go: rows on stdout, `--json`, `--markdown` and `--plot`
//! files; and where `--report` reads `--json` files back.
//!
//! Invariants:
//! - `--json` is rewritten whole after every result, so an interrupted run
//!   still leaves a valid JSON array of what it measured.
//! - Every JSON file this tool writes reads back with [`read_results`]
//!   (bench and probe records in one array or several files); fields
//!   missing from an older file read as their defaults.
//! - A write error names the file; one on stdout is an I/O error that the
//!   CLI recognises as a closed pipe.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::args::BenchArgs;
use crate::error::{Error, Result};
use crate::record::{ProbeRecord, Record};
use crate::{plot, report};

pub(crate) fn write_out(out: &mut dyn Write, text: &str) -> Result<()> {
    out.write_all(text.as_bytes())
        .and_then(|()| out.flush())
        .map_err(|e| Error::io("write to standard output", e))
}

pub(crate) fn write_file(path: &Path, text: &str) -> Result<()> {
    std::fs::write(path, text).map_err(|e| Error::file("write", path, e))
}

pub(crate) fn write_json<T: serde::Serialize>(path: &Path, items: &[T]) -> Result<()> {
    let text = serde_json::to_string_pretty(items).expect("records serialize");
    write_file(path, &(text + "\n"))
}

/// Rewrites `--json`, if asked for, with every record so far.
pub(crate) fn write_json_arg(args: &BenchArgs, records: &[Record]) -> Result<()> {
    match &args.json {
        Some(path) => write_json(path, records),
        None => Ok(()),
    }
}

/// Writes `--plot` (SVG) and `--markdown` for the records of this run, if
/// asked for.
pub(crate) fn write_plot_and_markdown(args: &BenchArgs, records: &[Record]) -> Result<()> {
    if let Some(path) = &args.plot {
        write_file(path, &plot::svg(records))?;
    }
    let source = args
        .json
        .as_ref()
        .map_or("this run".to_string(), |p| p.display().to_string());
    if let Some(path) = &args.markdown {
        write_file(path, &report::markdown(records, None, &source))?;
    }
    Ok(())
}

/// Reads records from JSON files written by `--json` (bench and probe).
pub fn read_results(paths: &[PathBuf]) -> Result<(Vec<Record>, Option<ProbeRecord>)> {
    let (mut records, mut probe) = (Vec::new(), None);
    for path in paths {
        let text = std::fs::read_to_string(path).map_err(|e| Error::file("read", path, e))?;
        let items: Vec<serde_json::Value> = serde_json::from_str(&text).map_err(|e| {
            Error::usage(format!(
                "{}: not a JSON array of results: {e}",
                path.display()
            ))
        })?;
        for item in items {
            let bad = |e: serde_json::Error| {
                Error::usage(format!("{}: a result does not parse: {e}", path.display()))
            };
            if item.get("engine").and_then(|e| e.as_str()) == Some("probe") {
                probe = Some(serde_json::from_value(item).map_err(bad)?);
            } else {
                records.push(serde_json::from_value(item).map_err(bad)?);
            }
        }
    }
    Ok((records, probe))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_field_names_are_the_interface() {
        let r = crate::report::tests::record("persimmon", "get-ratio:50", 2, 1e6);
        let v = serde_json::to_value(&r).unwrap();
        for field in [
            "engine",
            "workload",
            "threads",
            "value_size",
            "ops_per_sec",
            "p50_ns",
            "p99_ns",
            "p999_ns",
            "max_ns",
            "pm_bytes_per_op",
            "flushes_per_op",
            "fences_per_op",
            "durability",
            "distribution",
            "keys",
            "items_per_sec",
            "scans",
            "items",
        ] {
            assert!(v.get(field).is_some(), "missing {field}: {v}");
        }
        let p = serde_json::to_value(ProbeRecord {
            engine: "probe".into(),
            ..ProbeRecord::default()
        })
        .unwrap();
        for field in [
            "engine",
            "dependent_load_ns",
            "nt_write_gbps",
            "get_floor_ns",
        ] {
            assert!(p.get(field).is_some(), "missing {field}: {p}");
        }
    }

    #[test]
    fn results_round_trip_through_json_files() {
        let dir = tempfile::tempdir().unwrap();
        let a = dir.path().join("a.json");
        let records = vec![crate::report::tests::record("persimmon", "ycsb-a", 2, 1e6)];
        write_json(&a, &records).unwrap();
        let probe = ProbeRecord {
            engine: "probe".into(),
            dependent_load_ns: 90.0,
            ..ProbeRecord::default()
        };
        let b = dir.path().join("b.json");
        write_json(&b, std::slice::from_ref(&probe)).unwrap();
        let (read, p) = read_results(&[a, b]).unwrap();
        assert_eq!(read, records);
        assert_eq!(p, Some(probe));
    }

    #[test]
    fn results_written_before_scans_existed_still_read() {
        let dir = tempfile::tempdir().unwrap();
        let old = dir.path().join("old.json");
        std::fs::write(
            &old,
            r#"[{"engine": "persimmon", "workload": "ycsb-a", "threads": 2, "ops_per_sec": 1e6}]"#,
        )
        .unwrap();
        let (read, _) = read_results(&[old]).unwrap();
        assert_eq!(read[0].ops_per_sec, 1e6);
        assert_eq!(
            (read[0].items_per_sec, read[0].scans, read[0].items),
            (0.0, 0, 0)
        );
    }
}
