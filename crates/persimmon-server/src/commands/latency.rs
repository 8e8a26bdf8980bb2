//! The LATENCY subcommands, one handler each: LATEST, HISTORY, RESET,
//! DOCTOR, GRAPH, HISTOGRAM, HELP. The events are kept by `latency.rs`
//! (recorded after each command past `latency-monitor-threshold`, see
//! `observe.rs`); the per-command histograms by `cmdstats.rs`.
//!
//! Invariants:
//! - Replies have Redis 7.0's shapes: LATEST `[event, time, latest, max]`
//!   per event, HISTORY `[time, latency]` per sample, HISTOGRAM a map of
//!   command name to `calls` and `histogram_usec` (the power-of-two
//!   bucket upper bounds in microseconds, each with the calls up to it).
//! - HISTOGRAM names rows as Redis 7 does (`client|list`); a container
//!   stands for its subcommands; unknown names are skipped.

use std::fmt::Write;

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::cmdstats::{Histogram, HIST_BUCKETS};
use crate::latency::Series;
use crate::session::Session;

const LATENCY_HELP: [&str; 15] = [
    "LATENCY <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "DOCTOR",
    "    Return a human readable latency analysis report.",
    "GRAPH <event>",
    "    Return an ASCII latency graph for the <event> class.",
    "HISTORY <event>",
    "    Return time-latency samples for the <event> class.",
    "LATEST",
    "    Return the latest latency samples for all events.",
    "RESET [<event> ...]",
    "    Reset latency data of one or more <event> classes.",
    "    (default: reset all data for all event classes)",
    "HISTOGRAM [COMMAND ...]",
    "    Return a cumulative distribution of latencies in the format of a histogram for the specified command names.",
    "    If no commands are specified then all histograms are replied.",
];

/// LATENCY LATEST
pub fn latest(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let events = s.shared.latency.events();
    s.out.array(events.len());
    for (name, series) in events {
        let (time, ms) = series.samples.back().copied().unwrap_or((0, 0));
        s.out.array(4);
        s.out.bulk(name.as_bytes());
        s.out.int(time as i64);
        s.out.int(ms as i64);
        s.out.int(series.max as i64);
    }
    Ok(())
}

/// LATENCY HISTORY event
pub fn history(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let series = s.shared.latency.series(a.get(2)).unwrap_or_default();
    s.out.array(series.samples.len());
    for (time, ms) in series.samples {
        s.out.array(2);
        s.out.int(time as i64);
        s.out.int(ms as i64);
    }
    Ok(())
}

/// LATENCY RESET [event ...]: how many events were reset.
pub fn reset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let names: Vec<&[u8]> = a.from(2).collect();
    let n = s.shared.latency.reset(&names);
    s.out.int(n as i64);
    Ok(())
}

/// LATENCY DOCTOR: a report of the events recorded.
pub fn doctor(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    let events = s.shared.latency.events();
    let threshold = s.shared.settings.latency_threshold();
    let mut text = String::new();
    if threshold == 0 {
        text.push_str(
            "I'm sorry, Dave, I can't do that. Latency monitoring is disabled in this \
             Persimmon instance. You may use \"CONFIG SET latency-monitor-threshold \
             <milliseconds>.\" in order to enable it.\n",
        );
    } else if events.is_empty() {
        text.push_str(
            "Dave, no latency spike was observed during the lifetime of this instance.\n",
        );
    } else {
        text.push_str("Dave, I have observed latency spikes in this instance.\n\n");
        for (i, (name, series)) in events.iter().enumerate() {
            describe(&mut text, i + 1, name, series);
        }
    }
    s.out.verbatim(text.as_bytes());
    Ok(())
}

/// One event's paragraph of the doctor's report.
fn describe(text: &mut String, n: usize, name: &str, series: &Series) {
    let count = series.samples.len().max(1) as u64;
    let sum: u64 = series.samples.iter().map(|(_, ms)| ms).sum();
    let _ = writeln!(
        text,
        "{n}. {name}: {} latency spikes (average {}ms, worst {}ms).",
        series.samples.len(),
        sum / count,
        series.max
    );
}

/// LATENCY GRAPH event: the samples as columns of `#`, highest on top.
pub fn graph(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let name = String::from_utf8_lossy(a.get(2)).into_owned();
    let Some(series) = s.shared.latency.series(a.get(2)) else {
        return Err(Error::new(format!(
            "ERR No samples available for event '{name}'"
        )));
    };
    let low = series.samples.iter().map(|x| x.1).min().unwrap_or(0);
    let high = series.samples.iter().map(|x| x.1).max().unwrap_or(0);
    let mut text = format!(
        "{name} - high {high} ms, low {low} ms (all time high {} ms)\n",
        series.max
    );
    text.push_str(&"-".repeat(80));
    text.push('\n');
    const ROWS: u64 = 4;
    for row in (1..=ROWS).rev() {
        for (_, ms) in &series.samples {
            let level = if high == low {
                ROWS
            } else {
                1 + (ms - low) * (ROWS - 1) / (high - low)
            };
            text.push(if level >= row { '#' } else { ' ' });
        }
        text.push('\n');
    }
    s.out.verbatim(text.as_bytes());
    Ok(())
}

/// LATENCY HISTOGRAM [command ...]
pub fn histogram(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    s.publish_counters();
    let counts = s.shared.command_stats.commands();
    let hists = s.shared.command_stats.histograms();
    let rows = histogram_rows(s, &a);
    let called: Vec<usize> = rows
        .into_iter()
        .filter(|&i| counts.get(i).is_some_and(|c| c.calls > 0) && hists.get(i).is_some())
        .collect();
    s.out.map(called.len());
    for i in called {
        s.out.bulk(s.commands.row(i).name.as_bytes());
        s.out.map(2);
        s.out.bulk(b"calls");
        s.out.int(counts[i].calls as i64);
        s.out.bulk(b"histogram_usec");
        cumulative(s, &hists[i]);
    }
    Ok(())
}

/// The rows HISTOGRAM's arguments name (every row without any), each
/// once, in table order.
fn histogram_rows(s: &Session, a: &Args<'_>) -> Vec<usize> {
    let table = s.commands;
    let all = 0..table.rows().len();
    if a.len() == 2 {
        return all.collect();
    }
    let mut picked = vec![false; table.rows().len()];
    for name in a.from(2) {
        let name = String::from_utf8_lossy(name).to_ascii_lowercase();
        for i in all.clone() {
            let row = table.row(i).name;
            let container = row.split_once('|').is_some_and(|(c, _)| c == name);
            picked[i] |= row == name || container;
        }
    }
    all.filter(|&i| picked[i]).collect()
}

/// A histogram as Redis replies it: each non-empty bucket's upper bound
/// with the calls up to it.
fn cumulative(s: &mut Session, h: &Histogram) {
    let used: Vec<usize> = (0..HIST_BUCKETS).filter(|&b| h[b] > 0).collect();
    s.out.map(used.len());
    let mut total = 0;
    for b in (0..HIST_BUCKETS).filter(|&b| h[b] > 0) {
        total += h[b];
        s.out.int(1i64 << b);
        s.out.int(total as i64);
    }
}

/// LATENCY HELP
pub fn help(s: &mut Session, _a: Args<'_>) -> Result<(), Error> {
    s.out.simple_lines(&LATENCY_HELP);
    Ok(())
}
