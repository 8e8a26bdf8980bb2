//! `persimmon load`: stream key<TAB>value lines into the pool, `--batch`
//! records per atomic batch.
//!
//! Invariants:
//! - Records are committed in input order, up to `--batch` of them per
//!   atomic batch (`Db::write`; fewer when their bytes would pass
//!   `MAX_BATCH_BYTES`, and a lone record is a plain put): a crash leaves a
//!   prefix of whole batches.
//! - A bad line stops the load, and every record before it stays loaded
//!   (the message says how many), so a fixed file can simply be loaded
//!   again: the records before a bad line are committed first, and a batch
//!   the engine refuses is put again one record at a time up to the one
//!   that fails, whose line the message names.
//! - `loaded`, the progress bar and the summary count committed records
//!   only.
//! - Only LF ends a line; whatever else a line holds is the record's.

use std::fs::File;
use std::io::{self, BufRead, BufReader, Read, Write};
use std::path::Path;
use std::time::Instant;

use persimmon::{Db, WriteBatch, MAX_BATCH_BYTES};
use persimmon_bench::progress::{self, ProgressBar};

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

/// Records read but not yet committed: their bytes in one buffer, each
/// record's key and value as ranges of it.
struct Pending {
    bytes: Vec<u8>,
    /// Per record: where its key ends and its value starts, and its end.
    records: Vec<(usize, usize)>,
    /// Input line of the first record (record `i` is on line `first + i`).
    first_line: u64,
    /// Input bytes read up to the end of the last record.
    bytes_read: u64,
    limit: usize,
}

impl Pending {
    fn new(limit: usize) -> Pending {
        Pending {
            bytes: Vec::new(),
            records: Vec::with_capacity(limit),
            first_line: 0,
            bytes_read: 0,
            limit,
        }
    }

    fn is_full(&self) -> bool {
        self.records.len() >= self.limit
    }

    /// Whether a record of these sizes can join the batch without passing
    /// the engine's byte limit (an empty batch takes any record).
    fn fits(&self, key: &[u8], value: &[u8]) -> bool {
        self.records.is_empty() || self.bytes.len() + key.len() + value.len() <= MAX_BATCH_BYTES
    }

    fn push(&mut self, key: &[u8], value: &[u8], line: u64, bytes_read: u64) {
        if self.records.is_empty() {
            self.first_line = line;
        }
        self.bytes.extend_from_slice(key);
        let key_end = self.bytes.len();
        self.bytes.extend_from_slice(value);
        self.records.push((key_end, self.bytes.len()));
        self.bytes_read = bytes_read;
    }

    /// The records, in input order.
    fn iter(&self) -> impl Iterator<Item = (&[u8], &[u8])> {
        let starts = std::iter::once(0).chain(self.records.iter().map(|&(_, end)| end));
        starts.zip(&self.records).map(|(start, &(key_end, end))| {
            (&self.bytes[start..key_end], &self.bytes[key_end..end])
        })
    }

    /// Commits the records: several as one atomic batch, a lone one as a
    /// put. When the engine refuses the batch, puts them one at a time;
    /// returns how many are loaded and, on failure, the error of the next.
    fn commit(&self, db: &Db) -> (usize, Option<persimmon::Error>) {
        let n = self.records.len();
        if n > 1 {
            let mut batch = WriteBatch::new();
            for (key, value) in self.iter() {
                batch.put(key, value);
            }
            if db.write(&batch).is_ok() {
                return (n, None);
            }
        }
        for (i, (key, value)) in self.iter().enumerate() {
            if let Err(e) = db.put(key, value) {
                return (i, Some(e));
            }
        }
        (n, None)
    }

    fn clear(&mut self) {
        self.bytes.clear();
        self.records.clear();
    }
}

/// A load in progress: the pool, what is committed and what is not, and
/// the progress bar.
struct Loader<'a> {
    db: &'a Db,
    name: &'a str,
    pending: Pending,
    loaded: u64,
    /// `loaded` when the bar last moved.
    shown: u64,
    bar: ProgressBar,
    /// The bar counts input bytes (a regular file) rather than records.
    counts_bytes: bool,
}

impl Loader<'_> {
    /// The failure for `what` on input line `line`.
    fn fail(&self, line: u64, what: impl std::fmt::Display) -> Failure {
        Failure::error(format!(
            "{}: line {line}: {what} (records before it stay loaded: {})",
            self.name, self.loaded
        ))
    }

    /// Adds a record read from `line`, committing first when it would not
    /// fit and after when the batch is full.
    fn add(&mut self, key: &[u8], value: &[u8], line: u64, bytes_read: u64) -> Result<(), Failure> {
        if !self.pending.fits(key, value) {
            self.commit()?;
        }
        self.pending.push(key, value, line, bytes_read);
        if self.pending.is_full() {
            self.commit()?;
        }
        Ok(())
    }

    /// Commits the pending records and moves the bar.
    fn commit(&mut self) -> Result<(), Failure> {
        let (committed, error) = self.pending.commit(self.db);
        self.loaded += committed as u64;
        if let Some(e) = error {
            return Err(self.fail(self.pending.first_line + committed as u64, e));
        }
        if self.loaded - self.shown >= PROGRESS_EVERY {
            self.shown = self.loaded;
            let at = if self.counts_bytes {
                self.pending.bytes_read
            } else {
                self.loaded
            };
            self.bar.set_position(at);
        }
        self.pending.clear();
        Ok(())
    }
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
    let mut loader = Loader {
        db: &db,
        name: &name,
        pending: Pending::new(args.batch),
        loaded: 0,
        shown: 0,
        bar,
        counts_bytes: total.is_some(),
    };
    let mut reader = BufReader::with_capacity(READ_BUFFER_BYTES, input);
    let mut line = Vec::with_capacity(256);
    let (mut key_scratch, mut value_scratch) = (Vec::new(), Vec::new());
    let (mut line_no, mut bytes_read) = (0u64, 0u64);
    let start = Instant::now();
    loop {
        line.clear();
        let n = match reader.read_until(b'\n', &mut line) {
            Ok(n) => n,
            Err(e) => {
                loader.commit()?;
                return Err(Failure::error(format!(
                    "read {name}: {e} (records before it stay loaded: {})",
                    loader.loaded
                )));
            }
        };
        if n == 0 {
            break;
        }
        line_no += 1;
        bytes_read += n as u64;
        let body = line.strip_suffix(b"\n").unwrap_or(&line);
        match parse_record(body, &mut key_scratch, &mut value_scratch) {
            Ok((key, value)) => loader.add(key, value, line_no, bytes_read)?,
            Err(e) => {
                loader.commit()?;
                return Err(loader.fail(line_no, e));
            }
        }
    }
    loader.commit()?;
    let elapsed = start.elapsed().as_secs_f64();
    loader.bar.finish_and_clear();
    let loaded = loader.loaded;
    let rate = if elapsed > 0.0 {
        loaded as f64 / elapsed
    } else {
        0.0
    };
    // Nothing useful to do if stderr is gone: the records are loaded.
    let _ = writeln!(
        io::stderr(),
        "loaded {loaded} records in {elapsed:.3} s ({rate:.0} records/s, up to {} per batch)",
        args.batch
    );
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::Pending;

    #[test]
    fn pending_records_come_back_in_order_and_fill_up() {
        let mut p = Pending::new(3);
        p.push(b"k1", b"v1", 7, 6);
        p.push(b"", b"empty key", 8, 17);
        assert!(!p.is_full());
        p.push(b"k3", b"", 9, 21);
        assert!(p.is_full());
        let records: Vec<_> = p.iter().collect();
        assert_eq!(
            records,
            [
                (&b"k1"[..], &b"v1"[..]),
                (&b""[..], &b"empty key"[..]),
                (&b"k3"[..], &b""[..])
            ]
        );
        assert_eq!((p.first_line, p.bytes_read), (7, 21));
        p.clear();
        assert!(p.iter().next().is_none());
        p.push(b"k", b"v", 10, 25);
        assert_eq!(p.first_line, 10);
    }

    #[test]
    fn only_an_empty_batch_takes_a_record_past_the_byte_limit() {
        let mut p = Pending::new(10);
        let big = vec![0u8; persimmon::MAX_BATCH_BYTES];
        assert!(p.fits(b"k", &big), "alone, it goes as a put");
        p.push(b"k", b"v", 1, 4);
        assert!(!p.fits(b"k", &big));
        assert!(p.fits(b"k", &big[..persimmon::MAX_BATCH_BYTES - 4]));
    }
}
