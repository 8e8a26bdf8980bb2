//! SVG plots of throughput, drawn by hand (no font or plotting library):
//! one panel per figure (see [`crate::report::figures`]), the varying
//! quantity on x at evenly spaced categories, throughput on y from zero,
//! one line per engine for sweeps, grouped bars for YCSB workloads, a
//! legend on the right. Scan figures (`scan:N`) draw items per second
//! against the scan length.
//!
//! Invariants:
//! - y starts at zero, so the heights of two engines compare as their
//!   throughputs do.
//! - The SVG depends on the records alone: `--report` on a run's JSON
//!   redraws the run's figure byte for byte.

use std::fmt::Write as _;

use crate::record::Record;
use crate::report::{figures, Figure};

const PANEL_WIDTH: f64 = 900.0;
const PANEL_HEIGHT: f64 = 460.0;
const LEFT: f64 = 90.0;
const RIGHT: f64 = 230.0;
const TOP: f64 = 76.0;
const BOTTOM: f64 = 70.0;
const COLORS: [&str; 10] = [
    "#1f77b4", "#d62728", "#2ca02c", "#ff7f0e", "#9467bd", "#8c564b", "#e377c2", "#7f7f7f",
    "#bcbd22", "#17becf",
];

fn escape(text: &str) -> String {
    text.replace('&', "&amp;")
        .replace('<', "&lt;")
        .replace('>', "&gt;")
        .replace('"', "&quot;")
}

/// Tick step for an axis from 0 to `max`: 1, 2, 2.5 or 5 × 10^k, about 5
/// ticks.
fn tick_step(max: f64) -> f64 {
    if max <= 0.0 || !max.is_finite() {
        return 1.0;
    }
    let raw = max / 5.0;
    let magnitude = 10f64.powf(raw.log10().floor());
    [1.0, 2.0, 2.5, 5.0, 10.0]
        .iter()
        .map(|m| m * magnitude)
        .find(|s| *s >= raw)
        .unwrap_or(10.0 * magnitude)
}

fn tick_label(v: f64) -> String {
    let s = format!("{v:.3}");
    s.trim_end_matches('0').trim_end_matches('.').to_string()
}

/// A marker of shape `i` (circle, square, triangle, diamond) at `(x, y)`.
fn marker(s: &mut String, i: usize, x: f64, y: f64, color: &str) {
    let r = 4.5;
    let _ = match i % 4 {
        0 => write!(
            s,
            r#"<circle cx="{x:.1}" cy="{y:.1}" r="{r}" fill="{color}"/>"#
        ),
        1 => write!(
            s,
            r#"<rect x="{:.1}" y="{:.1}" width="{}" height="{}" fill="{color}"/>"#,
            x - r,
            y - r,
            2.0 * r,
            2.0 * r
        ),
        2 => write!(
            s,
            r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{color}"/>"#,
            x,
            y - r - 1.0,
            x - r - 1.0,
            y + r,
            x + r + 1.0,
            y + r
        ),
        _ => write!(
            s,
            r#"<polygon points="{:.1},{:.1} {:.1},{:.1} {:.1},{:.1} {:.1},{:.1}" fill="{color}"/>"#,
            x,
            y - r - 1.0,
            x + r + 1.0,
            y,
            x,
            y + r + 1.0,
            x - r - 1.0,
            y
        ),
    };
    s.push('\n');
}

/// Where a panel draws: its plot area, the x band of each category and
/// the y axis's scale (throughput / `scale` in `unit`, ticks every `step`
/// up to `y_max`).
struct Frame {
    x0: f64,
    x1: f64,
    /// The bottom (zero) and the top of the y axis.
    y0: f64,
    y1: f64,
    band: f64,
    scale: f64,
    unit: String,
    step: f64,
    y_max: f64,
}

impl Frame {
    /// The frame of `fig` in the panel starting at `top`.
    fn new(fig: &Figure<'_>, top: f64) -> Frame {
        let (x0, x1) = (LEFT, PANEL_WIDTH - RIGHT);
        let (y0, y1) = (top + PANEL_HEIGHT - BOTTOM, top + TOP);
        let max = (0..fig.xs.len())
            .flat_map(|x| (0..fig.engines.len()).map(move |e| (x, e)))
            .filter_map(|(x, e)| fig.cell(x, e))
            .map(|r| fig.throughput(r))
            .fold(0.0f64, f64::max);
        let (prefix, scale) = if max >= 1e6 {
            ("M ", 1e6)
        } else if max >= 1e3 {
            ("K ", 1e3)
        } else {
            ("", 1.0)
        };
        let step = tick_step(max / scale);
        Frame {
            x0,
            x1,
            y0,
            y1,
            band: (x1 - x0) / fig.xs.len().max(1) as f64,
            scale,
            unit: format!("{prefix}{}/s", fig.unit()),
            step,
            y_max: ((max / scale) / step).ceil().max(1.0) * step,
        }
    }

    /// The y of throughput `v`.
    fn y_of(&self, v: f64) -> f64 {
        self.y0 - (v / self.scale) / self.y_max * (self.y0 - self.y1)
    }

    /// The x of the middle of category `i`.
    fn x_of(&self, i: usize) -> f64 {
        self.x0 + (i as f64 + 0.5) * self.band
    }
}

fn panel(s: &mut String, fig: &Figure<'_>, top: f64) {
    let frame = Frame::new(fig, top);
    titles(s, fig, top);
    axes(s, fig, &frame);
    for (e, engine) in fig.engines.iter().enumerate() {
        let color = COLORS[e % COLORS.len()];
        series(s, fig, &frame, e, color);
        legend_entry(s, fig, &frame, e, engine, color);
    }
}

/// The panel's title and subtitle.
fn titles(s: &mut String, fig: &Figure<'_>, top: f64) {
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="17" font-weight="bold" text-anchor="middle">{}</text>"#,
        PANEL_WIDTH / 2.0,
        top + 28.0,
        escape(&fig.title)
    );
    let _ = writeln!(
        s,
        r##"<text x="{:.1}" y="{:.1}" font-size="13" fill="#444444" text-anchor="middle">{}</text>"##,
        PANEL_WIDTH / 2.0,
        top + 50.0,
        escape(&fig.subtitle)
    );
}

/// The grid, the axes, their ticks and their labels.
fn axes(s: &mut String, fig: &Figure<'_>, f: &Frame) {
    let Frame { x0, x1, y0, y1, .. } = *f;
    // Grid and y ticks.
    let mut v = 0.0;
    while v <= f.y_max + f.step / 2.0 {
        let y = f.y_of(v * f.scale);
        let _ = writeln!(
            s,
            r##"<line x1="{x0}" y1="{y:.1}" x2="{x1}" y2="{y:.1}" stroke="#dddddd"/><text x="{:.1}" y="{:.1}" font-size="12" text-anchor="end">{}</text>"##,
            x0 - 8.0,
            y + 4.0,
            tick_label(v)
        );
        v += f.step;
    }
    // Axes.
    let _ = writeln!(
        s,
        r#"<line x1="{x0}" y1="{y0}" x2="{x1}" y2="{y0}" stroke="black"/><line x1="{x0}" y1="{y0}" x2="{x0}" y2="{y1}" stroke="black"/>"#
    );
    for (i, label) in fig.xs.iter().enumerate() {
        let x = f.x_of(i);
        let _ = writeln!(
            s,
            r#"<line x1="{x:.1}" y1="{y0}" x2="{x:.1}" y2="{:.1}" stroke="black"/><text x="{x:.1}" y="{:.1}" font-size="12" text-anchor="middle">{}</text>"#,
            y0 + 5.0,
            y0 + 20.0,
            escape(label)
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="14" text-anchor="middle">{}</text>"#,
        (x0 + x1) / 2.0,
        y0 + 48.0,
        escape(fig.x_axis.label())
    );
    let (ly, lx) = ((y0 + y1) / 2.0, x0 - 62.0);
    let _ = writeln!(
        s,
        r#"<text x="{lx:.1}" y="{ly:.1}" font-size="14" text-anchor="middle" transform="rotate(-90 {lx:.1} {ly:.1})">throughput ({})</text>"#,
        f.unit
    );
}

/// The data of engine `e`: a line with markers for a sweep, a bar per
/// category otherwise.
fn series(s: &mut String, fig: &Figure<'_>, f: &Frame, e: usize, color: &str) {
    if fig.x_axis.is_sweep() {
        let points: Vec<(f64, f64)> = (0..fig.xs.len())
            .filter_map(|x| fig.cell(x, e).map(|r| (x, fig.throughput(r))))
            .map(|(x, v)| (f.x_of(x), f.y_of(v)))
            .collect();
        let path: Vec<String> = points
            .iter()
            .map(|(x, y)| format!("{x:.1},{y:.1}"))
            .collect();
        let _ = writeln!(
            s,
            r#"<polyline points="{}" fill="none" stroke="{color}" stroke-width="2.2"/>"#,
            path.join(" ")
        );
        for (x, y) in &points {
            marker(s, e, *x, *y, color);
        }
    } else {
        let width = f.band * 0.8 / fig.engines.len() as f64;
        for xi in 0..fig.xs.len() {
            if let Some(r) = fig.cell(xi, e) {
                let x = f.x0 + xi as f64 * f.band + f.band * 0.1 + e as f64 * width;
                let y = f.y_of(fig.throughput(r));
                let _ = writeln!(
                    s,
                    r#"<rect x="{x:.1}" y="{y:.1}" width="{:.1}" height="{:.1}" fill="{color}"/>"#,
                    width * 0.92,
                    f.y0 - y
                );
            }
        }
    }
}

/// The legend entry of engine `e` (the `e`-th line on the right).
fn legend_entry(s: &mut String, fig: &Figure<'_>, f: &Frame, e: usize, engine: &str, color: &str) {
    let (lx, ly) = (f.x1 + 24.0, f.y1 + 10.0 + 24.0 * e as f64);
    if fig.x_axis.is_sweep() {
        let _ = writeln!(
            s,
            r#"<line x1="{lx:.1}" y1="{ly:.1}" x2="{:.1}" y2="{ly:.1}" stroke="{color}" stroke-width="2.2"/>"#,
            lx + 30.0
        );
        marker(s, e, lx + 15.0, ly, color);
    } else {
        let _ = writeln!(
            s,
            r#"<rect x="{lx:.1}" y="{:.1}" width="30" height="12" fill="{color}"/>"#,
            ly - 6.0
        );
    }
    let _ = writeln!(
        s,
        r#"<text x="{:.1}" y="{:.1}" font-size="13">{}</text>"#,
        lx + 38.0,
        ly + 4.5,
        escape(engine)
    );
}

/// An SVG document with one panel per figure of `records`.
pub fn svg(records: &[Record]) -> String {
    let figs = figures(records);
    let height = PANEL_HEIGHT * figs.len().max(1) as f64;
    let mut s = String::new();
    let _ = writeln!(
        s,
        r#"<svg xmlns="http://www.w3.org/2000/svg" width="{PANEL_WIDTH}" height="{height}" viewBox="0 0 {PANEL_WIDTH} {height}" font-family="Helvetica, Arial, sans-serif">"#
    );
    let _ = writeln!(
        s,
        r#"<rect width="{PANEL_WIDTH}" height="{height}" fill="white"/>"#
    );
    if figs.is_empty() {
        let _ = writeln!(s, r#"<text x="20" y="40" font-size="16">no results</text>"#);
    }
    for (i, fig) in figs.iter().enumerate() {
        panel(&mut s, fig, i as f64 * PANEL_HEIGHT);
    }
    s.push_str("</svg>\n");
    s
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::report::tests::record;

    #[test]
    fn ticks_are_round() {
        assert_eq!(tick_step(10.0), 2.0);
        assert_eq!(tick_step(3.2), 1.0);
        assert_eq!(tick_step(12.0), 2.5);
        assert_eq!(tick_step(0.0), 1.0);
        assert_eq!(tick_label(2.5), "2.5");
        assert_eq!(tick_label(4.0), "4");
    }

    #[test]
    fn sweep_plot_has_axes_labels_lines_and_a_legend() {
        let mut rs = Vec::new();
        for r in [0, 50, 95, 100] {
            rs.push(record(
                "persimmon",
                &format!("get-ratio:{r}"),
                2,
                1e6 + r as f64 * 1e4,
            ));
            rs.push(record("rocksdb", &format!("get-ratio:{r}"), 2, 2e5));
        }
        let svg = svg(&rs);
        assert!(svg.starts_with("<svg"));
        assert!(svg.trim_end().ends_with("</svg>"));
        assert!(svg.contains("GET ratio (%)"));
        assert!(svg.contains("throughput (M ops/s)"));
        assert_eq!(svg.matches("<polyline").count(), 2);
        assert!(svg.contains(">persimmon</text>") && svg.contains(">rocksdb</text>"));
        for x in ["0", "50", "95", "100"] {
            assert!(svg.contains(&format!(">{x}</text>")), "x label {x}");
        }
    }

    #[test]
    fn ycsb_plot_uses_bars() {
        let rs = vec![
            record("persimmon", "ycsb-a", 2, 1e6),
            record("lmdb", "ycsb-a", 2, 5e5),
            record("persimmon", "ycsb-b", 2, 2e6),
            record("lmdb", "ycsb-b", 2, 1e6),
        ];
        let svg = svg(&rs);
        assert!(!svg.contains("<polyline"));
        // Four bars plus two legend swatches and the background.
        assert_eq!(svg.matches("<rect").count(), 4 + 2 + 1);
        assert!(svg.contains("Throughput per workload"));
    }

    #[test]
    fn scan_plot_draws_items_per_second_against_scan_length() {
        let mut rs = Vec::new();
        for n in [1000, 10, 100] {
            for (engine, ops) in [("persimmon-ordered", 1e5), ("lmdb", 5e4)] {
                let mut r = record(engine, &format!("scan:{n}"), 2, ops);
                r.scans = 1000;
                r.items = 1000 * n;
                r.items_per_sec = ops * n as f64;
                rs.push(r);
            }
        }
        let svg = svg(&rs);
        assert!(svg.contains("scan length (items)"), "{svg}");
        assert!(svg.contains("throughput (M items/s)"), "{svg}");
        assert_eq!(svg.matches("<polyline").count(), 2);
        // X labels in order of the scan length.
        let x = |n: &str| svg.find(&format!(r#""middle">{n}</text>"#)).unwrap();
        assert!(x("10") < x("100") && x("100") < x("1000"), "{svg}");
    }
}
