//! `persimmon load`: stream key<TAB>value lines into the pool.
//!
//! Invariants:
//! - Records are put one at a time, in input order: a bad line stops the
//!   load, and every record before it stays loaded (the message says how
//!   many), so a fixed file can simply be loaded again.
//! - Only LF ends a line; whatever else a line holds is the record's.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use persimmon_bench::progress;

use crate::cli::{LoadArgs, PoolArgs};
use crate::escape::parse_record;
use crate::failure::Failure;
use crate::pool::open;

/// Input buffer: large reads keep the syscall count negligible.
const READ_BUFFER_BYTES: usize = 4 << 20;
/// Records between progress bar updates.
const PROGRESS_EVERY: u64 = 4096;

/// The input of a load: the reader, its length when it has one (a regular
/// file) and its name for messages.
struct Input {
    reader: Box<dyn Read>,
    total: Option<u64>,
    name: String,
}

/// Opens FILE, or stdin when it is absent or `-`.
fn open_input(file: Option<&Path>) -> Result<Input, Failure> {
    let Some(path) = file.filter(|p| *p != Path::new("-")) else {
        return Ok(Input {
            reader: Box::new(io::stdin().lock()),
            total: None,
            name: "stdin".to_string(),
        });
    };
    let f =
        File::open(path).map_err(|e| Failure::error(format!("open {}: {e}", path.display())))?;
    let meta = f
        .metadata()
        .map_err(|e| Failure::error(format!("stat {}: {e}", path.display())))?;
    if meta.is_dir() {
        return Err(Failure::error(format!("{} is a directory", path.display())));
    }
    Ok(Input {
        reader: Box::new(f),
        // Pipes and devices have no length: count records instead.
        total: meta.is_file().then_some(meta.len()),
        name: path.display().to_string(),
    })
}

pub fn run(pool: &PoolArgs, args: LoadArgs) -> Result<(), Failure> {
    let Input {
        reader: input,
        total,
        name,
    } = open_input(args.file.as_deref())?;
    let db = open(pool, true)?;
    let bar = match total {
        Some(len) => progress::bytes(len, "load"),
        None => progress::spinner("records"),
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, input);
    let mut line = Vec::with_capacity(256);
    let (mut key_scratch, mut value_scratch) = (Vec::new(), Vec::new());
    let (mut line_no, mut bytes_read, mut loaded) = (0u64, 0u64, 0u64);
    let start = Instant::now();
    let fail = |line_no: u64, loaded: u64, what: String| {
        Failure::error(format!(
            "{name}: line {line_no}: {what} (records before it stay loaded: {loaded})"
        ))
    };
    loop {
        line.clear();
        let n = reader
            .read_until(b'\n', &mut line)
            .map_err(|e| Failure::error(format!("read {name}: {e}")))?;
        if n == 0 {
            break;
        }
        line_no += 1;
        bytes_read += n as u64;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        let (key, value) = parse_record(body, &mut key_scratch, &mut value_scratch)
            .map_err(|e| fail(line_no, loaded, e.to_string()))?;
        db.put(key, value)
            .map_err(|e| fail(line_no, loaded, e.to_string()))?;
        loaded += 1;
        if loaded % PROGRESS_EVERY == 0 {
            bar.set_position(if total.is_some() { bytes_read } else { loaded });
        }
    }
    let elapsed = start.elapsed().as_secs_f64();
    bar.finish_and_clear();
    let rate = if elapsed > 0.0 {
        loaded as f64 / elapsed
    } else {
        0.0
    };
    // Nothing useful to do if stderr is gone: the records are loaded.
    let _ = writeln!(
        io::stderr(),
        "loaded {loaded} records in {elapsed:.3} s ({rate:.0} records/s)"
    );
    Ok(())
}
