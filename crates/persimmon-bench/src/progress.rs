//! Progress bars on stderr, for the benchmark and for the `persimmon`
//! command (load, dump, demo): one style, one place.
//!
//! Invariants:
//! - A bar is drawn only when stderr is a terminal; otherwise it is hidden
//!   and costs nothing, so redirected output and CI logs stay clean.
//! - Bars write to stderr only: stdout carries results, which scripts read.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressState, ProgressStyle};

/// The bar type, for front ends that keep one (the `persimmon` command).
pub use indicatif::ProgressBar;

/// `template` with `{rate}`: items per second, rounded.
fn style(template: &str) -> ProgressStyle {
    ProgressStyle::with_template(template)
        .unwrap_or_else(|_| ProgressStyle::default_bar())
        .with_key(
            "rate",
            |state: &ProgressState, w: &mut dyn std::fmt::Write| {
                let _ = write!(w, "{:.0}/s", state.per_sec());
            },
        )
        .progress_chars("=> ")
}

fn on_terminal() -> bool {
    std::io::stderr().is_terminal()
}

/// `bar` in the style of `template`, with message `what`.
fn styled(bar: ProgressBar, template: &str, what: String) -> ProgressBar {
    let bar = bar.with_style(style(template));
    bar.set_message(what);
    bar
}

// Each bar below is hidden when stderr is not a terminal.

/// A bar counting `len` keys loaded.
pub fn load_bar(len: u64, what: String) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let template = "{msg} [{bar:30}] {pos}/{len} keys ({rate}, eta {eta})";
    styled(ProgressBar::new(len), template, what)
}

/// A bar over the `millis` milliseconds of a timed phase (warm-up included).
pub fn time_bar(millis: u64, what: String) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let template = "{msg} [{bar:30}] {elapsed}/{duration}";
    styled(ProgressBar::new(millis.max(1)), template, what)
}

/// A bar counting `len` items.
pub fn items(len: u64, what: &str) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let template = "{msg:>6} [{bar:40}] {pos}/{len} ({rate}, eta {eta})";
    styled(ProgressBar::new(len), template, what.to_string())
}

/// A bar counting `len` bytes.
pub fn bytes(len: u64, what: &str) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let template = "{msg:>6} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})";
    styled(ProgressBar::new(len), template, what.to_string())
}

/// A spinner with a running count of `what`.
pub fn spinner(what: &str) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let template = "{spinner} {pos} {msg} ({rate})";
    let bar = styled(ProgressBar::new_spinner(), template, what.to_string());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}
