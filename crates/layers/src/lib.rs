//! `layers`: the workspace's module structure, level by level, and the
//! circles that break it.
//!
//! For every member crate it builds the graph of its source files (an edge
//! A -> B when file A names module B through `crate::`, `super::`, `self::`
//! or a child module), finds the strongly connected components, and gives
//! each module a level (0 = imports no other module of its crate). A
//! component of more than one module is a circle: the command reports it
//! with one reference per edge and fails. The crate graph (members'
//! dependencies on each other) is checked the same way.
//!
//! Modules of this crate name each other by their own paths
//! (`crate::error::Error`), never through the re-exports below: a re-export
//! used inside the crate would make every module depend on the root, a
//! circle this very tool would report.

#![forbid(unsafe_code)]

pub mod analysis;
pub mod error;
pub mod graph;
pub mod modules;
pub mod report;
pub mod workspace;

pub use analysis::{analyze, Analysis, Circle, CrateAnalysis};
pub use error::Error;
pub use report::Report;
