//! Puts the pieces together: the workspace's crate graph and, for each
//! crate, its module graph, circles and levels.
//!
//! Invariants:
//! - a circle is a strongly connected component of more than one module;
//!   its edges are every edge between two of its members, each with the
//!   reference that makes it;
//! - the crate graph is only checked when the whole workspace is analysed
//!   (not for `--crate NAME`);
//! - nothing here prints: `report` does.

use std::path::{Path, PathBuf};

use crate::error::Error;
use crate::graph::{condense, Condensation};
use crate::modules::{self, ModuleGraph, SourceFile};
use crate::workspace::{self, Workspace};

/// The result of analysing the workspace, or one crate of it.
#[derive(Debug, Clone)]
pub struct Analysis {
    /// The workspace's root directory (canonical).
    pub root: PathBuf,
    /// `None` when one crate was asked for.
    pub crate_graph: Option<CrateGraph>,
    pub crates: Vec<CrateAnalysis>,
}

/// Members and their dependencies on each other.
#[derive(Debug, Clone)]
pub struct CrateGraph {
    pub names: Vec<String>,
    pub successors: Vec<Vec<usize>>,
    pub layers: Condensation,
}

/// One crate's module graph and its condensation.
#[derive(Debug, Clone)]
pub struct CrateAnalysis {
    pub name: String,
    pub dir: PathBuf,
    pub graph: ModuleGraph,
    pub layers: Condensation,
}

/// Modules that import each other in a circle.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Circle {
    /// Indexes into the crate's modules, sorted.
    pub modules: Vec<usize>,
    /// The edges between members, in (from, to) order.
    pub edges: Vec<(usize, usize)>,
}

impl Analysis {
    /// Circles over all analysed crates.
    pub fn circle_count(&self) -> usize {
        self.crates.iter().map(|c| c.circles().len()).sum()
    }

    /// Cycles between crates (empty when one crate was analysed).
    pub fn crate_cycles(&self) -> Vec<&[usize]> {
        self.crate_graph
            .iter()
            .flat_map(|g| g.layers.circles())
            .collect()
    }

    /// No circle in any module graph and no cycle between crates.
    pub fn is_clean(&self) -> bool {
        self.circle_count() == 0 && self.crate_cycles().is_empty()
    }
}

impl CrateAnalysis {
    /// The circles of this crate's module graph, in the condensation's order.
    pub fn circles(&self) -> Vec<Circle> {
        self.layers
            .circles()
            .map(|members| Circle {
                modules: members.to_vec(),
                edges: self
                    .graph
                    .edges
                    .keys()
                    .copied()
                    .filter(|(a, b)| members.contains(a) && members.contains(b))
                    .collect(),
            })
            .collect()
    }

    /// The modules that `module` imports, in index order.
    pub fn imports(&self, module: usize) -> impl Iterator<Item = usize> + '_ {
        self.graph
            .edges
            .range((module, 0)..(module + 1, 0))
            .map(|(&(_, to), _)| to)
    }
}

/// Analyses the workspace rooted at `root`; with `only`, just that member.
pub fn analyze(root: &Path, only: Option<&str>) -> Result<Analysis, Error> {
    let workspace = workspace::read(root)?;
    let members: Vec<_> = match only {
        None => workspace.members.iter().collect(),
        Some(name) => vec![workspace
            .members
            .iter()
            .find(|m| m.name == name)
            .ok_or_else(|| unknown_crate(name, &workspace))?],
    };
    let crates = members
        .into_iter()
        .map(|m| analyze_crate(&m.name, &m.dir))
        .collect::<Result<_, _>>()?;
    let crate_graph = only.is_none().then(|| crate_graph(&workspace));
    Ok(Analysis {
        root: workspace.root.clone(),
        crate_graph,
        crates,
    })
}

/// Analyses the crate in `dir` from the files of its `src/`.
pub fn analyze_crate(name: &str, dir: &Path) -> Result<CrateAnalysis, Error> {
    let sources = modules::load_sources(&dir.join("src"))?;
    analyze_sources(name, dir, &sources)
}

/// Analyses a crate given its sources (paths relative to `src/`).
pub fn analyze_sources(
    name: &str,
    dir: &Path,
    sources: &[SourceFile],
) -> Result<CrateAnalysis, Error> {
    let graph = modules::build(dir, sources)?;
    let layers = condense(&graph.successors());
    Ok(CrateAnalysis {
        name: name.to_string(),
        dir: dir.to_path_buf(),
        graph,
        layers,
    })
}

fn crate_graph(workspace: &Workspace) -> CrateGraph {
    let names: Vec<String> = workspace.members.iter().map(|m| m.name.clone()).collect();
    let successors: Vec<Vec<usize>> = workspace
        .members
        .iter()
        .map(|m| {
            m.depends_on
                .iter()
                .filter_map(|dep| names.iter().position(|n| n == dep))
                .collect()
        })
        .collect();
    let layers = condense(&successors);
    CrateGraph {
        names,
        successors,
        layers,
    }
}

fn unknown_crate(name: &str, workspace: &Workspace) -> Error {
    let members: Vec<&str> = workspace.members.iter().map(|m| m.name.as_str()).collect();
    Error::UnknownCrate {
        name: name.to_string(),
        members: members.join(", "),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn analysis_of(files: &[(&str, &str)]) -> CrateAnalysis {
        let sources = SourceFile::fixtures(files);
        analyze_sources("fixture", Path::new("fixture"), &sources).unwrap()
    }

    /// Each circle as its module names.
    fn circles(crate_: &CrateAnalysis) -> Vec<Vec<&str>> {
        crate_
            .circles()
            .iter()
            .map(|c| {
                c.modules
                    .iter()
                    .map(|&m| crate_.graph.modules[m].name.as_str())
                    .collect()
            })
            .collect()
    }

    #[test]
    fn two_modules_naming_each_other_are_one_circle_of_two() {
        let crate_ = analysis_of(&[
            ("lib.rs", "pub mod a;\npub mod b;"),
            ("a.rs", "pub struct Y;\npub fn f(_: crate::b::X) {}"),
            ("b.rs", "pub struct X;\n\n\npub fn g(_: crate::a::Y) {}"),
        ]);
        assert_eq!(circles(&crate_), [["a", "b"]]);
        let circle = &crate_.circles()[0];
        assert_eq!(circle.edges.len(), 2);
        let b_to_a = &crate_.graph.edges[&circle.edges[1]];
        assert_eq!((b_to_a.line, b_to_a.path.as_str()), (4, "crate::a::Y"));
    }

    #[test]
    fn a_mod_rs_reexporting_its_child_that_uses_its_item_is_a_circle() {
        let crate_ = analysis_of(&[
            ("lib.rs", "mod store;"),
            (
                "store/mod.rs",
                "mod child;\npub use child::T;\npub struct Item;",
            ),
            ("store/child.rs", "pub struct T(super::Item);"),
        ]);
        assert_eq!(circles(&crate_), [["store", "store::child"]]);
    }

    #[test]
    fn super_from_a_nested_file_resolves_to_the_sibling() {
        let crate_ = analysis_of(&[
            ("lib.rs", "mod x;"),
            ("x/mod.rs", "mod y;\nmod z;"),
            ("x/y.rs", "use super::z::Q;"),
            ("x/z.rs", "pub struct Q;\nfn back() { crate::x::y::f(); }"),
        ]);
        assert_eq!(circles(&crate_), [["x::y", "x::z"]]);
    }

    #[test]
    fn a_test_module_reaching_back_makes_no_circle() {
        let crate_ = analysis_of(&[
            ("lib.rs", "mod a;\nmod b;"),
            (
                "a.rs",
                "pub struct A;\n#[cfg(test)]\nmod tests { use crate::b::*; }",
            ),
            ("b.rs", "use crate::a::A;"),
        ]);
        assert!(circles(&crate_).is_empty());
    }

    #[test]
    fn a_group_use_closes_a_circle_through_any_of_its_leaves() {
        let crate_ = analysis_of(&[
            ("lib.rs", "mod a;\nmod b;\nmod c;"),
            ("a.rs", "use crate::{c::C, b::{self, B}};"),
            ("b.rs", "pub struct B;"),
            ("c.rs", "pub struct C;\nuse crate::a as _;"),
        ]);
        assert_eq!(circles(&crate_), [["a", "c"]]);
    }

    #[test]
    fn a_crate_root_item_used_by_a_module_the_root_imports_is_a_circle() {
        let crate_ = analysis_of(&[
            ("lib.rs", "mod a;\npub use a::run;\npub struct Config;"),
            ("a.rs", "pub fn run(_: &crate::Config) {}"),
        ]);
        assert_eq!(circles(&crate_), [["lib", "a"]]);
    }

    #[test]
    fn an_acyclic_crate_has_no_circle_and_layered_levels() {
        let crate_ = analysis_of(&[
            (
                "lib.rs",
                "pub mod error;\npub mod store;\npub mod api;\npub use api::serve;",
            ),
            ("error.rs", "pub struct Error;"),
            ("store.rs", "use crate::error::Error;"),
            (
                "api.rs",
                "use crate::{error::Error, store};\npub fn serve() {}",
            ),
        ]);
        assert!(crate_.circles().is_empty());
        let level_of = |name: &str| {
            let m = crate_
                .graph
                .modules
                .iter()
                .position(|m| m.name == name)
                .unwrap();
            crate_.layers.level[m]
        };
        assert_eq!(["error", "store", "api", "lib"].map(level_of), [0, 1, 2, 3]);
    }
}
