//! The slow log: the commands that ran longer than
//! `slowlog-log-slower-than` microseconds, newest first, at most
//! `slowlog-max-len` of them (`SLOWLOG GET|LEN|RESET`).
//!
//! An entry is what Redis 7.0 keeps: a unique id (counting from 0 since
//! the server started; `SLOWLOG RESET` does not restart it), the Unix time
//! in seconds the command ended, its duration in microseconds, its
//! arguments as the client sent them (not as rewritten for replicas), and
//! the client's address and name.
//!
//! Invariants:
//! - At most `MAX_ARGS` arguments are kept: past that the last kept one
//!   says `... (N more arguments)`; an argument longer than `MAX_ARG_BYTES`
//!   keeps that many bytes and says `... (N more bytes)`; arguments that
//!   carry secrets are `(redacted)` (see `redact.rs`).
//! - The log never holds more than `slowlog-max-len` entries: a push
//!   drops the oldest, and so does lowering the setting (at the next push).
//! - The dispatch decides what is logged (one clock read and a compare per
//!   command); this room only keeps the entries, under one lock.

use std::collections::VecDeque;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, MutexGuard};

/// Arguments an entry keeps (the last one counting the rest).
pub const MAX_ARGS: usize = 32;
/// Bytes an argument keeps.
pub const MAX_ARG_BYTES: usize = 128;

/// One logged command.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Entry {
    pub id: u64,
    pub unix_secs: u64,
    pub micros: u64,
    pub args: Vec<Vec<u8>>,
    pub addr: String,
    pub name: Vec<u8>,
}

/// The server's slow log.
#[derive(Default)]
pub struct Slowlog {
    entries: Mutex<VecDeque<Entry>>,
    next_id: AtomicU64,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

/// A command's arguments as an entry keeps them: at most `MAX_ARGS`, each
/// at most `MAX_ARG_BYTES`, the `redacted` ones replaced.
pub fn trimmed(args: &[&[u8]], redacted: &[bool]) -> Vec<Vec<u8>> {
    let kept = args.len().min(MAX_ARGS);
    let mut out = Vec::with_capacity(kept);
    for (i, arg) in args.iter().take(kept).enumerate() {
        if kept < args.len() && i == kept - 1 {
            let more = args.len() - kept + 1;
            out.push(format!("... ({more} more arguments)").into_bytes());
        } else if redacted.get(i).copied().unwrap_or(false) {
            out.push(b"(redacted)".to_vec());
        } else if arg.len() > MAX_ARG_BYTES {
            let mut a = arg[..MAX_ARG_BYTES].to_vec();
            let more = arg.len() - MAX_ARG_BYTES;
            a.extend_from_slice(format!("... ({more} more bytes)").as_bytes());
            out.push(a);
        } else {
            out.push(arg.to_vec());
        }
    }
    out
}

impl Slowlog {
    /// Logs a command (arguments already trimmed) as the newest entry,
    /// dropping the oldest past `max_len`.
    pub fn push(&self, mut entry: Entry, max_len: usize) {
        let mut entries = lock(&self.entries);
        entry.id = self.next_id.fetch_add(1, Ordering::Relaxed);
        entries.push_front(entry);
        entries.truncate(max_len);
    }

    /// The newest `count` entries (all with `None`), newest first.
    pub fn newest(&self, count: Option<usize>) -> Vec<Entry> {
        let entries = lock(&self.entries);
        let n = count.unwrap_or(entries.len()).min(entries.len());
        entries.iter().take(n).cloned().collect()
    }

    pub fn len(&self) -> usize {
        lock(&self.entries).len()
    }

    /// Empties the log (ids go on counting).
    pub fn reset(&self) {
        lock(&self.entries).clear();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entry(arg: &str) -> Entry {
        Entry {
            id: 0,
            unix_secs: 1,
            micros: 2,
            args: vec![arg.as_bytes().to_vec()],
            addr: "127.0.0.1:1".into(),
            name: Vec::new(),
        }
    }

    #[test]
    fn keeps_the_newest_up_to_the_limit_with_growing_ids() {
        let log = Slowlog::default();
        for a in ["a", "b", "c"] {
            log.push(entry(a), 2);
        }
        let got = log.newest(None);
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].id, got[0].args[0].as_slice()), (2, &b"c"[..]));
        assert_eq!((got[1].id, got[1].args[0].as_slice()), (1, &b"b"[..]));
        assert_eq!(log.newest(Some(1)).len(), 1);
        log.reset();
        assert_eq!(log.len(), 0);
        log.push(entry("d"), 2);
        assert_eq!(log.newest(None)[0].id, 3);
    }

    #[test]
    fn trims_arguments_as_redis_does() {
        let many: Vec<Vec<u8>> = (0..35).map(|i| i.to_string().into_bytes()).collect();
        let refs: Vec<&[u8]> = many.iter().map(|a| a.as_slice()).collect();
        let t = trimmed(&refs, &[]);
        assert_eq!(t.len(), 32);
        assert_eq!(t[30], b"30");
        assert_eq!(t[31], b"... (4 more arguments)");
        let long = vec![b'A'; 129];
        let t = trimmed(&[b"set", &long], &[false, false]);
        assert_eq!(t[1].len(), 128 + "... (1 more bytes)".len());
        assert!(t[1].ends_with(b"A... (1 more bytes)"));
        let t = trimmed(&[b"auth", b"pw"], &[false, true]);
        assert_eq!(t[1], b"(redacted)");
    }
}
