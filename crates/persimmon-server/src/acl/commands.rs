//! What the ACL reads of the command table: the trait [`Commands`], which
//! the table implements (`session::CommandTable`), so this room imports
//! nothing above it (the table's rows hold handlers, which need the
//! session, which holds a user).
//!
//! Invariant: rows are numbered as the table numbers them (`0..len`), a
//! subcommand's row apart from its container's, so a selector's flags and
//! a request's resolved row agree.

/// The command table as the ACL sees it.
pub trait Commands {
    /// How many rows (commands and subcommands).
    fn len(&self) -> usize;
    /// The row's name (`get`, `config|set`).
    fn name(&self, row: usize) -> &'static str;
    fn flags(&self, row: usize) -> &'static [&'static str];
    fn group(&self, row: usize) -> &'static str;
    /// The row named `name` (any case; `config|get` names a subcommand).
    fn lookup(&self, name: &[u8]) -> Option<usize>;
    fn is_subcommand(&self, row: usize) -> bool;
    fn is_container(&self, row: usize) -> bool;
    fn subcommands(&self, row: usize) -> &[usize];
    /// The positions of the keys of a request of this row (its words, the
    /// name first); `None` when it has none or the words do not reach
    /// them.
    fn key_positions(&self, row: usize, words: &[&[u8]]) -> Option<Vec<usize>>;
}
