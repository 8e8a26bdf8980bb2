//! The latency monitor: for each event (`command`, `fast-command`, ...),
//! the latest samples of how long it took when it took at least
//! `latency-monitor-threshold` milliseconds (`LATENCY LATEST`, `HISTORY`,
//! `RESET`, `DOCTOR`, `GRAPH`).
//!
//! Invariants:
//! - An event keeps at most `SAMPLES` samples, one per second: a second
//!   sample in the same second keeps the larger latency. Its all-time
//!   maximum survives the samples it outlived, until `LATENCY RESET`.
//! - Nothing is recorded while the threshold is 0; the dispatch compares
//!   a command's time with the threshold and calls [`Latency::add`] only
//!   past it, so a command pays one compare.

use std::collections::{BTreeMap, VecDeque};
use std::sync::{Mutex, MutexGuard};

/// Samples an event keeps (Redis keeps 160).
pub const SAMPLES: usize = 160;

/// One event's samples: (Unix seconds, milliseconds), oldest first.
#[derive(Clone, Debug, Default)]
pub struct Series {
    pub samples: VecDeque<(u64, u64)>,
    pub max: u64,
}

/// The server's latency events, by name.
#[derive(Default)]
pub struct Latency {
    events: Mutex<BTreeMap<String, Series>>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Latency {
    /// Records that `event` took `ms` milliseconds at Unix second `now`.
    pub fn add(&self, event: &str, now: u64, ms: u64) {
        let mut events = lock(&self.events);
        let series = events.entry(event.to_string()).or_default();
        series.max = series.max.max(ms);
        match series.samples.back_mut() {
            Some(last) if last.0 == now => last.1 = last.1.max(ms),
            _ => {
                series.samples.push_back((now, ms));
                if series.samples.len() > SAMPLES {
                    series.samples.pop_front();
                }
            }
        }
    }

    /// Every event with its samples, by name.
    pub fn events(&self) -> Vec<(String, Series)> {
        lock(&self.events)
            .iter()
            .map(|(n, s)| (n.clone(), s.clone()))
            .collect()
    }

    /// One event's samples (`None`: never recorded).
    pub fn series(&self, event: &[u8]) -> Option<Series> {
        let name = std::str::from_utf8(event).ok()?;
        lock(&self.events).get(name).cloned()
    }

    /// Forgets the named events (every event with none); how many there
    /// were.
    pub fn reset(&self, names: &[&[u8]]) -> usize {
        let mut events = lock(&self.events);
        if names.is_empty() {
            let n = events.len();
            events.clear();
            return n;
        }
        names
            .iter()
            .filter_map(|n| std::str::from_utf8(n).ok())
            .filter(|n| events.remove(*n).is_some())
            .count()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_one_sample_a_second_and_the_maximum() {
        let l = Latency::default();
        l.add("command", 10, 300);
        l.add("command", 10, 200);
        l.add("command", 11, 100);
        let s = l.series(b"command").unwrap();
        assert_eq!(s.samples, [(10, 300), (11, 100)]);
        assert_eq!(s.max, 300);
        for t in 0..200 {
            l.add("command", 100 + t, 1);
        }
        let s = l.series(b"command").unwrap();
        assert_eq!(s.samples.len(), SAMPLES);
        assert_eq!(s.max, 300);
        assert_eq!(l.reset(&[b"nosuch"]), 0);
        assert_eq!(l.reset(&[]), 1);
        assert!(l.events().is_empty());
    }
}
