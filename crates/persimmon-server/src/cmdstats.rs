//! Per-command and per-error counts, for `INFO commandstats` and `INFO
//! errorstats`: a connection's own tally, and the server's totals it is
//! added to now and then (as the other `INFO` counters are).
//!
//! What is counted is what Redis counts:
//! - `calls` and `usec`: commands that ran (their handler was called),
//!   whether they succeeded or not; `usec` is the time in the handler
//!   (every call is timed: the slow log and the latency monitor need each
//!   call's time anyway; a pipeline's grouped run charges each of its
//!   commands a share of the run's time).
//! - `LATENCY HISTOGRAM`: per command, how many calls took up to 1, 2, 4,
//!   ... microseconds (`HIST_BUCKETS` powers of two, the last one open).
//! - `rejected_calls`: commands refused before they ran (wrong number of
//!   arguments, `NOAUTH`); an unknown command has no row to count it in.
//! - `failed_calls`: commands that ran and replied with an error.
//! - `errorstat_<CODE>`: every error reply, by its first word (`ERR`,
//!   `WRONGTYPE`, ...), including those of unknown commands and protocol
//!   errors.
//!
//! Invariants:
//! - Counting a command is a few additions to the connection's own memory;
//!   the shared totals are touched only when a connection publishes (once
//!   per many batches, and before it runs INFO), under one lock.
//! - `CONFIG RESETSTAT` starts a new epoch: a connection whose tally was
//!   gathered in an earlier epoch drops it instead of publishing it, so a
//!   reset is not undone by counts that were pending when it happened.
//! - At most `MAX_ERROR_CODES` distinct codes are kept (they come from the
//!   server's own texts, so there are far fewer); more are still counted in
//!   the total of error replies.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Mutex;

use persimmon_resp::ErrorTally;

/// Most distinct error codes the totals keep.
const MAX_ERROR_CODES: usize = 128;

/// Buckets of a latency histogram: calls up to 2^i microseconds.
pub const HIST_BUCKETS: usize = 32;

/// A command's latency histogram (see [`bucket`]).
pub type Histogram = [u64; HIST_BUCKETS];

/// The bucket of a call that took `nanos`: the smallest `i` with the
/// time at most 2^i microseconds.
pub fn bucket(nanos: u64) -> usize {
    let micros = nanos.div_ceil(1000).max(1);
    let i = (64 - (micros - 1).leading_zeros()) as usize;
    i.min(HIST_BUCKETS - 1)
}

/// How often one command ran, failed, or was refused, and its time.
#[derive(Default, Clone, Copy, Debug, PartialEq, Eq)]
pub struct CommandCounts {
    pub calls: u64,
    /// Calls that were timed, and their nanoseconds in the handler.
    pub timed: u64,
    pub timed_nanos: u64,
    pub rejected: u64,
    pub failed: u64,
}

impl CommandCounts {
    fn add(&mut self, other: &CommandCounts) {
        self.calls += other.calls;
        self.timed += other.timed;
        self.timed_nanos += other.timed_nanos;
        self.rejected += other.rejected;
        self.failed += other.failed;
    }

    pub fn is_zero(&self) -> bool {
        self.calls == 0 && self.rejected == 0 && self.failed == 0
    }

    /// Microseconds in the handler, all calls together (the timed calls'
    /// time scaled to every call).
    pub fn usec(&self) -> f64 {
        if self.timed == 0 {
            return 0.0;
        }
        self.timed_nanos as f64 / 1000.0 * self.calls as f64 / self.timed as f64
    }
}

/// A connection's counts per command table row since it last published.
#[derive(Debug)]
pub struct Tally {
    rows: Vec<CommandCounts>,
    /// Latency histograms of the rows called (made at a row's first call).
    hists: Vec<Option<Box<Histogram>>>,
    dirty: bool,
    epoch: u64,
}

impl Tally {
    /// Row `row` ran (for `nanos`, if it was timed); `failed` if it
    /// replied with an error.
    #[inline]
    pub fn called(&mut self, row: usize, nanos: Option<u64>, failed: bool) {
        if let Some(c) = self.rows.get_mut(row) {
            c.calls += 1;
            if let Some(nanos) = nanos {
                c.timed += 1;
                c.timed_nanos += nanos;
                let h = self.hists[row].get_or_insert_with(|| Box::new([0; HIST_BUCKETS]));
                h[bucket(nanos)] += 1;
            }
            c.failed += failed as u64;
            self.dirty = true;
        }
    }

    /// Row `row`, counted when it ran, ended with an error later (a
    /// blocked command's wait failed).
    pub fn failed_later(&mut self, row: usize) {
        if let Some(c) = self.rows.get_mut(row) {
            c.failed += 1;
            self.dirty = true;
        }
    }

    /// Row `row` was refused before it ran.
    pub fn rejected(&mut self, row: usize) {
        if let Some(c) = self.rows.get_mut(row) {
            c.rejected += 1;
            self.dirty = true;
        }
    }

    fn clear(&mut self) {
        if self.dirty {
            self.rows.fill(CommandCounts::default());
            for h in self.hists.iter_mut().flatten() {
                h.fill(0);
            }
            self.dirty = false;
        }
    }
}

/// The server's totals.
#[derive(Default)]
pub struct CommandStats {
    totals: Mutex<Totals>,
    epoch: AtomicU64,
}

#[derive(Default)]
struct Totals {
    rows: Vec<CommandCounts>,
    hists: Vec<Histogram>,
    errors: BTreeMap<String, u64>,
}

impl CommandStats {
    /// A new connection's tally, for a table of `commands` rows.
    pub fn tally(&self, commands: usize) -> Tally {
        Tally {
            rows: vec![CommandCounts::default(); commands],
            hists: vec![None; commands],
            dirty: false,
            epoch: self.epoch.load(Ordering::Acquire),
        }
    }

    /// Adds a connection's tallies to the totals and clears them, and
    /// returns how many error replies they held (for
    /// `total_error_replies`). Tallies from before the last reset are
    /// dropped: `None` (the caller drops its other pending counts too).
    pub fn publish(&self, tally: &mut Tally, errors: &mut ErrorTally) -> Option<u64> {
        let epoch = self.epoch.load(Ordering::Acquire);
        if tally.epoch != epoch {
            tally.epoch = epoch;
            tally.clear();
            errors.clear();
            return None;
        }
        let error_replies = errors.unpublished();
        if !tally.dirty && error_replies == 0 {
            return Some(0);
        }
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        if tally.dirty {
            if totals.rows.len() < tally.rows.len() {
                totals
                    .rows
                    .resize(tally.rows.len(), CommandCounts::default());
            }
            for (total, mine) in totals.rows.iter_mut().zip(&tally.rows) {
                total.add(mine);
            }
            if totals.hists.len() < tally.hists.len() {
                totals.hists.resize(tally.hists.len(), [0; HIST_BUCKETS]);
            }
            for (total, mine) in totals.hists.iter_mut().zip(&tally.hists) {
                for (t, m) in total.iter_mut().zip(mine.iter().flat_map(|h| h.iter())) {
                    *t += m;
                }
            }
        }
        for (code, n) in errors.take_codes() {
            if let Some(count) = totals.errors.get_mut(&*code) {
                *count += n;
            } else if totals.errors.len() < MAX_ERROR_CODES {
                totals.errors.insert(code.into(), n);
            }
        }
        drop(totals);
        tally.clear();
        errors.clear();
        Some(error_replies)
    }

    /// Zeroes the totals and starts a new epoch (`CONFIG RESETSTAT`); the
    /// caller's own tallies are cleared and join the new epoch.
    pub fn reset(&self, tally: &mut Tally, errors: &mut ErrorTally) {
        let mut totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        totals.rows.clear();
        totals.hists.clear();
        totals.errors.clear();
        tally.epoch = self.epoch.fetch_add(1, Ordering::AcqRel) + 1;
        tally.clear();
        errors.clear();
    }

    /// The counts of every table row (rows never counted may be missing).
    pub fn commands(&self) -> Vec<CommandCounts> {
        self.totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .rows
            .clone()
    }

    /// The latency histograms of every table row (rows never timed may be
    /// missing).
    pub fn histograms(&self) -> Vec<Histogram> {
        self.totals
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .hists
            .clone()
    }

    /// Error replies by code, in byte order of the codes.
    pub fn errors(&self) -> Vec<(String, u64)> {
        let totals = self.totals.lock().unwrap_or_else(|e| e.into_inner());
        totals.errors.iter().map(|(c, n)| (c.clone(), *n)).collect()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_are_powers_of_two_microseconds() {
        assert_eq!(bucket(0), 0);
        assert_eq!(bucket(1000), 0);
        assert_eq!(bucket(1001), 1);
        assert_eq!(bucket(2000), 1);
        assert_eq!(bucket(3000), 2);
        assert_eq!(bucket(1024 * 1000), 10);
        assert_eq!(bucket(u64::MAX), HIST_BUCKETS - 1);
    }

    #[test]
    fn publish_adds_and_reset_drops_what_was_pending() {
        let stats = CommandStats::default();
        let (mut a, mut ea) = (stats.tally(3), ErrorTally::default());
        let (mut b, mut eb) = (stats.tally(3), ErrorTally::default());
        a.called(1, Some(1000), false);
        a.called(1, None, true);
        ea.count("ERR x");
        b.rejected(2);
        assert_eq!(stats.publish(&mut a, &mut ea), Some(1));
        assert_eq!(stats.publish(&mut a, &mut ea), Some(0));
        assert_eq!(ea.seen(), 1);
        let rows = stats.commands();
        assert_eq!(
            rows[1],
            CommandCounts {
                calls: 2,
                timed: 1,
                timed_nanos: 1000,
                rejected: 0,
                failed: 1
            }
        );
        assert_eq!(rows[1].usec(), 2.0);
        // The timed call took 1 µs: the first bucket.
        assert_eq!(stats.histograms()[1][0], 1);
        assert_eq!(stats.histograms()[1][1..].iter().sum::<u64>(), 0);
        assert_eq!(stats.errors(), vec![("ERR".to_string(), 1)]);
        // b's pending count predates the reset: dropped.
        stats.reset(&mut a, &mut ea);
        assert_eq!(stats.publish(&mut b, &mut eb), None);
        assert!(stats.commands().iter().all(CommandCounts::is_zero));
        b.rejected(2);
        eb.count("WRONGTYPE y");
        assert_eq!(stats.publish(&mut b, &mut eb), Some(1));
        assert_eq!(stats.commands()[2].rejected, 1);
        assert_eq!(stats.errors(), vec![("WRONGTYPE".to_string(), 1)]);
        // A connection that starts after the reset publishes normally.
        let (mut c, mut ec) = (stats.tally(3), ErrorTally::default());
        c.called(0, None, false);
        assert_eq!(stats.publish(&mut c, &mut ec), Some(0));
        assert_eq!(stats.commands()[0].calls, 1);
    }
}
