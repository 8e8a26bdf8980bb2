//! The workspace itself: no crate's modules import each other in a circle,
//! and no crates depend on each other in a cycle. On failure the message is
//! the tool's own quiet report: every circle with the reference behind each
//! of its edges.

use std::path::Path;

use layers::{analyze, workspace, Report};

#[test]
fn no_module_circles_and_no_crate_cycles_in_the_workspace() {
    let root = workspace::find_root(Path::new(env!("CARGO_MANIFEST_DIR"))).unwrap();
    let analysis = analyze(&root, None).unwrap_or_else(|e| panic!("{e}"));
    assert!(
        analysis.crates.len() > 1,
        "the analysis found the workspace's members"
    );
    assert!(
        analysis.is_clean(),
        "modules import each other in a circle (cut one edge of each):\n{}",
        Report {
            analysis: &analysis,
            quiet: true,
        }
    );
}
