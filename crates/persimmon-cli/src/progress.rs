//! Progress bars, drawn on stderr only when stderr is a terminal.

use std::io::IsTerminal;
use std::time::Duration;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

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

/// A bar counting `len` items (hidden when stderr is not a terminal).
pub fn items(len: u64, what: &str) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len)
        .with_style(style("{msg:>6} [{bar:40}] {pos}/{len} ({rate}, eta {eta})"));
    bar.set_message(what.to_string());
    bar
}

/// A bar counting `len` bytes (hidden when stderr is not a terminal).
pub fn bytes(len: u64, what: &str) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len).with_style(style(
        "{msg:>6} [{bar:40}] {bytes}/{total_bytes} ({bytes_per_sec}, eta {eta})",
    ));
    bar.set_message(what.to_string());
    bar
}

/// A spinner with a running count of `what` (hidden when stderr is not a
/// terminal).
pub fn spinner(what: &str) -> ProgressBar {
    if !on_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new_spinner().with_style(style("{spinner} {pos} {msg} ({rate})"));
    bar.set_message(what.to_string());
    bar.enable_steady_tick(Duration::from_millis(100));
    bar
}
