//! Prints an analysis as text: the crate graph, then per crate its circles
//! and its modules level by level, then the summary line `circles: N`.
//!
//! Invariants:
//! - one line per crate in the crate graph and one line per module in the
//!   layers, so the output stays readable for a hundred modules;
//! - every circle edge is printed with the file (from the workspace root)
//!   and line of the reference that makes it, and the path as written;
//! - the quiet form prints only crate cycles, circles and the summary;
//! - the last line is always `circles: N`, N summed over the crates shown.

use std::fmt::{self, Display, Formatter};
use std::path::Path;

use crate::analysis::{Analysis, Circle, CrateAnalysis, CrateGraph};

/// The text of an analysis; `quiet` keeps only the problems and the summary.
pub struct Report<'a> {
    pub analysis: &'a Analysis,
    pub quiet: bool,
}

impl Display for Report<'_> {
    fn fmt(&self, f: &mut Formatter<'_>) -> fmt::Result {
        if let Some(graph) = &self.analysis.crate_graph {
            write_crate_graph(f, graph, self.quiet)?;
        }
        for crate_ in &self.analysis.crates {
            write_crate(f, crate_, &self.analysis.root, self.quiet)?;
        }
        writeln!(f, "circles: {}", self.analysis.circle_count())
    }
}

fn write_crate_graph(f: &mut Formatter<'_>, graph: &CrateGraph, quiet: bool) -> fmt::Result {
    let cycles: Vec<&[usize]> = graph.layers.circles().collect();
    if !quiet {
        writeln!(f, "crate graph ({} crates, by level):", graph.names.len())?;
        for c in by_level(&graph.layers.level) {
            let deps: Vec<&str> = graph.successors[c]
                .iter()
                .map(|&d| graph.names[d].as_str())
                .collect();
            write!(f, "  {}", graph.names[c])?;
            if !deps.is_empty() {
                write!(f, " -> {}", deps.join(", "))?;
            }
            writeln!(f)?;
        }
        if cycles.is_empty() {
            writeln!(f, "crate cycles: none")?;
        }
    }
    for cycle in &cycles {
        let names: Vec<&str> = cycle.iter().map(|&c| graph.names[c].as_str()).collect();
        writeln!(f, "crate cycle: {}", names.join(", "))?;
    }
    if !quiet || !cycles.is_empty() {
        writeln!(f)?;
    }
    Ok(())
}

fn write_crate(
    f: &mut Formatter<'_>,
    crate_: &CrateAnalysis,
    root: &Path,
    quiet: bool,
) -> fmt::Result {
    let circles = crate_.circles();
    if quiet && circles.is_empty() {
        return Ok(());
    }
    write!(
        f,
        "{}: {} modules, {} lines, ",
        crate_.name,
        crate_.graph.modules.len(),
        crate_.graph.lines(),
    )?;
    let test_only = crate_.graph.test_only_files.len();
    if test_only > 0 {
        write!(f, "{} left out, ", plural(test_only, "test-only file"))?;
    }
    writeln!(f, "{}", plural(circles.len(), "circle"))?;
    let dir = crate_.dir.strip_prefix(root).unwrap_or(&crate_.dir);
    for (i, circle) in circles.iter().enumerate() {
        write_circle(f, crate_, dir, i + 1, circle)?;
    }
    if !quiet {
        write_levels(f, crate_, &circles)?;
    }
    writeln!(f)
}

fn write_circle(
    f: &mut Formatter<'_>,
    crate_: &CrateAnalysis,
    dir: &Path,
    number: usize,
    circle: &Circle,
) -> fmt::Result {
    let modules = &crate_.graph.modules;
    let names: Vec<&str> = circle
        .modules
        .iter()
        .map(|&m| modules[m].name.as_str())
        .collect();
    writeln!(
        f,
        "  circle {number} ({} modules): {}",
        names.len(),
        names.join(", ")
    )?;
    for edge @ (from, to) in &circle.edges {
        let reference = &crate_.graph.edges[edge];
        writeln!(
            f,
            "    {} -> {} at {}:{} `{}`",
            modules[*from].name,
            modules[*to].name,
            dir.join(&modules[*from].file).display(),
            reference.line,
            reference.path,
        )?;
    }
    Ok(())
}

fn write_levels(f: &mut Formatter<'_>, crate_: &CrateAnalysis, circles: &[Circle]) -> fmt::Result {
    let levels = &crate_.layers.level;
    let mut current = None;
    for m in by_level(levels) {
        if current != Some(levels[m]) {
            current = Some(levels[m]);
            writeln!(f, "  level {}:", levels[m])?;
        }
        write!(f, "    {}", crate_.graph.modules[m].name)?;
        if let Some(i) = circles.iter().position(|c| c.modules.contains(&m)) {
            write!(f, " [circle {}]", i + 1)?;
        }
        let imports: Vec<&str> = crate_
            .imports(m)
            .map(|i| crate_.graph.modules[i].name.as_str())
            .collect();
        if !imports.is_empty() {
            write!(f, " -> {}", imports.join(", "))?;
        }
        writeln!(f)?;
    }
    Ok(())
}

/// Node indexes ordered by level, then by index.
fn by_level(levels: &[usize]) -> Vec<usize> {
    let mut order: Vec<usize> = (0..levels.len()).collect();
    order.sort_by_key(|&n| (levels[n], n));
    order
}

fn plural(n: usize, word: &str) -> String {
    if n == 1 {
        format!("1 {word}")
    } else {
        format!("{n} {word}s")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::analysis::analyze_sources;
    use crate::modules::SourceFile;

    fn analysis(files: &[(&str, &str)]) -> Analysis {
        let sources = SourceFile::fixtures(files);
        let root = Path::new("/ws");
        let crate_ = analyze_sources("demo", &root.join("crates/demo"), &sources).unwrap();
        Analysis {
            root: root.to_path_buf(),
            crate_graph: None,
            crates: vec![crate_],
        }
    }

    const CIRCULAR: &[(&str, &str)] = &[
        ("lib.rs", "mod a;\nmod b;\nmod c;"),
        ("a.rs", "use crate::b::X;\npub struct Y;"),
        (
            "b.rs",
            "pub struct X;\nfn f(_: crate::a::Y, _: crate::c::Z) {}",
        ),
        ("c.rs", "pub struct Z;"),
    ];

    #[test]
    fn the_full_report_shows_circles_with_references_and_levels() {
        let text = Report {
            analysis: &analysis(CIRCULAR),
            quiet: false,
        }
        .to_string();
        let expected = "\
demo: 4 modules, 8 lines, 1 circle
  circle 1 (2 modules): a, b
    a -> b at crates/demo/src/a.rs:1 `crate::b::X`
    b -> a at crates/demo/src/b.rs:2 `crate::a::Y`
  level 0:
    lib
    c
  level 1:
    a [circle 1] -> b
    b [circle 1] -> a, c

circles: 1
";
        assert_eq!(text, expected);
    }

    #[test]
    fn the_quiet_report_leaves_out_clean_crates_and_levels() {
        let clean = analysis(&[("lib.rs", "mod a;"), ("a.rs", "")]);
        let text = Report {
            analysis: &clean,
            quiet: true,
        }
        .to_string();
        assert_eq!(text, "circles: 0\n");
        let text = Report {
            analysis: &analysis(CIRCULAR),
            quiet: true,
        }
        .to_string();
        assert!(text.contains("circle 1 (2 modules): a, b\n"), "{text}");
        assert!(!text.contains("level"), "{text}");
    }
}
