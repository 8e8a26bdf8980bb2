//! Standard output of the commands: whole texts, and the `key<TAB>value`
//! lines of `dump` and `scan`.
//!
//! Invariants:
//! - Every write error goes through [`Failure::stdout`], so a reader that
//!   went away (`persimmon dump | head`) ends the command quietly with the
//!   status of SIGPIPE instead of an error message.
//! - Record lines are escaped ([`record_line`]): one record is one line,
//!   whatever bytes its key and value hold, and `load` reads it back.

use std::io::{self, BufWriter, Write};

use crate::escape::record_line;
use crate::failure::Failure;

/// Output buffer of the record writers: large writes keep the syscall
/// count negligible.
const WRITE_BUFFER_BYTES: usize = 1 << 20;

/// Writes `text` to stdout.
pub fn print(text: &str) -> Result<(), Failure> {
    print_bytes(text.as_bytes())
}

/// Writes `bytes` to stdout as they are.
pub fn print_bytes(bytes: &[u8]) -> Result<(), Failure> {
    let mut out = io::stdout().lock();
    out.write_all(bytes)
        .and_then(|()| out.flush())
        .map_err(Failure::stdout)
}

/// Buffered `key<TAB>value` lines on stdout.
pub struct RecordWriter {
    out: BufWriter<io::StdoutLock<'static>>,
    line: Vec<u8>,
}

impl RecordWriter {
    pub fn new() -> RecordWriter {
        RecordWriter {
            out: BufWriter::with_capacity(WRITE_BUFFER_BYTES, io::stdout().lock()),
            line: Vec::with_capacity(256),
        }
    }

    /// Writes the line of `key` (and, when given, its `value`).
    pub fn write(&mut self, key: &[u8], value: Option<&[u8]>) -> Result<(), Failure> {
        record_line(key, value, &mut self.line);
        self.out.write_all(&self.line).map_err(Failure::stdout)
    }

    /// Flushes what is buffered; call it once at the end.
    pub fn finish(mut self) -> Result<(), Failure> {
        self.out.flush().map_err(Failure::stdout)
    }
}
