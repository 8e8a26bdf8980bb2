//! Progress bars on stderr, drawn only when stderr is a terminal (so
//! redirected output and CI logs stay clean).

use std::io::IsTerminal;

use indicatif::{ProgressBar, ProgressState, ProgressStyle};

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

/// A bar counting `len` keys loaded.
pub fn load_bar(len: u64, what: String) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar = ProgressBar::new(len).with_style(style(
        "{msg} [{bar:30}] {pos}/{len} keys ({rate}, eta {eta})",
    ));
    bar.set_message(what);
    bar
}

/// A bar over the `millis` milliseconds of a timed phase (warm-up included).
pub fn time_bar(millis: u64, what: String) -> ProgressBar {
    if !std::io::stderr().is_terminal() {
        return ProgressBar::hidden();
    }
    let bar =
        ProgressBar::new(millis.max(1)).with_style(style("{msg} [{bar:30}] {elapsed}/{duration}"));
    bar.set_message(what);
    bar
}
