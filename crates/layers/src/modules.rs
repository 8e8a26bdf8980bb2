//! Builds one crate's module graph from its `src/` files, parsed with syn.
//!
//! A node is a source file; its module path comes from where the file is:
//! `src/a/b.rs` and `src/a/b/mod.rs` are `a::b`, `src/lib.rs` (or
//! `src/main.rs` when there is no `lib.rs`) is the crate root. Each
//! `src/bin/x.rs` or `src/bin/x/main.rs` is the root of its own tree `bin/x`,
//! and a `main.rs` beside a `lib.rs` is a root of its own, `main`, that
//! reaches the files of `src/` through its `crate::` paths.
//!
//! An edge A -> B means file A names module B or an item inside it:
//! - in a `use` tree starting with `crate`, `super`, `self` or one of A's own
//!   child modules (groups, globs and renames expanded);
//! - in any path of the code with at least two segments starting the same
//!   way, including the paths found in macro invocations' tokens.
//!
//! Invariants:
//! - a referenced path resolves to the longest prefix that is a module file
//!   of the same tree, else to the tree's root (an item of `lib.rs`);
//!   `super`/`self` count from the innermost inline module they appear in,
//!   and inline modules belong to their file;
//! - self-edges are dropped;
//! - an edge keeps the first reference (lowest line) that makes it;
//! - items, inline modules, statements, fields and arms under `#[cfg(test)]`
//!   are skipped, and so are files that only exist for tests (declared by a
//!   `#[cfg(test)] mod x;` or starting with `#![cfg(test)]`): they are not
//!   nodes;
//! - `pub(crate)`/`pub(in path)` visibilities are not references.

use std::collections::btree_map::Entry;
use std::collections::{BTreeMap, HashMap, HashSet};
use std::fs;
use std::path::{Path, PathBuf};

use proc_macro2::{TokenStream, TokenTree};
use syn::ext::IdentExt;
use syn::parse::{ParseStream, Parser};
use syn::punctuated::Punctuated;
use syn::visit::{self, Visit};
use syn::{Attribute, Ident, ImplItem, Item, Meta, Token, TraitItem, UseTree};

use crate::error::Error;

/// One `.rs` file of a crate's `src/`.
#[derive(Debug, Clone)]
pub struct SourceFile {
    /// The path relative to `src/`.
    pub path: PathBuf,
    pub text: String,
}

#[cfg(test)]
impl SourceFile {
    /// In-memory files for tests: (path under src/, text) pairs.
    pub(crate) fn fixtures(files: &[(&str, &str)]) -> Vec<SourceFile> {
        files
            .iter()
            .map(|(path, text)| SourceFile {
                path: std::path::PathBuf::from(path),
                text: text.to_string(),
            })
            .collect()
    }
}

/// A node of the module graph: one source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Module {
    /// `lib`, `main`, `bin/x`, `a::b` or `bin/x::a`.
    pub name: String,
    /// The file, relative to the crate's directory (`src/a/b.rs`).
    pub file: PathBuf,
    pub lines: usize,
}

/// The reference that makes an edge: in the edge's source file.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Reference {
    pub line: usize,
    /// The path as written (`crate::b::Thing`, `super::*`, `x::f`).
    pub path: String,
}

/// The module graph of one crate.
#[derive(Debug, Clone, Default)]
pub struct ModuleGraph {
    /// Roots first, then modules in path order.
    pub modules: Vec<Module>,
    /// (from, to) -> the first reference in `from`'s file that makes it.
    pub edges: BTreeMap<(usize, usize), Reference>,
    /// Files left out because only tests compile them (relative to the crate).
    pub test_only_files: Vec<PathBuf>,
}

impl ModuleGraph {
    /// Successor lists, indexed like `modules`.
    pub fn successors(&self) -> Vec<Vec<usize>> {
        let mut successors = vec![Vec::new(); self.modules.len()];
        for &(from, to) in self.edges.keys() {
            successors[from].push(to);
        }
        successors
    }

    /// Total lines of the crate's (non-test) files.
    pub fn lines(&self) -> usize {
        self.modules.iter().map(|m| m.lines).sum()
    }
}

/// Every `.rs` file under `src`, in path order (none if `src` is absent).
pub fn load_sources(src: &Path) -> Result<Vec<SourceFile>, Error> {
    let mut files = Vec::new();
    if src.is_dir() {
        collect_rs_files(src, src, &mut files)?;
    }
    files.sort_by(|a, b| a.path.cmp(&b.path));
    Ok(files)
}

fn collect_rs_files(src: &Path, dir: &Path, files: &mut Vec<SourceFile>) -> Result<(), Error> {
    for entry in fs::read_dir(dir).map_err(|e| Error::io(dir, e))? {
        let path = entry.map_err(|e| Error::io(dir, e))?.path();
        if path.is_dir() {
            collect_rs_files(src, &path, files)?;
        } else if path.extension().is_some_and(|ext| ext == "rs") {
            let text = fs::read_to_string(&path).map_err(|e| Error::io(&path, e))?;
            let relative = path.strip_prefix(src).unwrap_or(&path).to_path_buf();
            files.push(SourceFile {
                path: relative,
                text,
            });
        }
    }
    Ok(())
}

/// Builds the module graph of the crate in `crate_dir` from its sources.
/// `crate_dir` only serves to name a file that does not parse.
pub fn build(crate_dir: &Path, sources: &[SourceFile]) -> Result<ModuleGraph, Error> {
    let has_lib = sources.iter().any(|s| s.path == Path::new("lib.rs"));
    let parsed = parse_all(crate_dir, sources, has_lib)?;
    let test_only = test_only_modules(&parsed);
    let (mut kept, dropped): (Vec<Parsed>, Vec<Parsed>) = parsed
        .into_iter()
        .partition(|p| !p.location.is_test_only(&test_only));
    kept.sort_by(|a, b| a.location.order_key().cmp(&b.location.order_key()));
    let mut test_only_files: Vec<PathBuf> = dropped.into_iter().map(|p| p.shown).collect();
    test_only_files.sort();
    Ok(ModuleGraph {
        modules: kept.iter().map(|p| p.module(has_lib)).collect(),
        edges: edges_between(&kept),
        test_only_files,
    })
}

/// A parsed source file and where it sits.
struct Parsed {
    location: Location,
    file: syn::File,
    /// The path relative to the crate (`src/a.rs`).
    shown: PathBuf,
    lines: usize,
}

impl Parsed {
    fn module(&self, has_lib: bool) -> Module {
        Module {
            name: self.location.name(has_lib),
            file: self.shown.clone(),
            lines: self.lines,
        }
    }
}

fn parse_all(
    crate_dir: &Path,
    sources: &[SourceFile],
    has_lib: bool,
) -> Result<Vec<Parsed>, Error> {
    let mut parsed = Vec::new();
    for source in sources {
        let Some(location) = locate(&source.path, has_lib) else {
            continue;
        };
        parsed.push(Parsed {
            location,
            file: parse(crate_dir, source)?,
            shown: Path::new("src").join(&source.path),
            lines: source.text.lines().count(),
        });
    }
    Ok(parsed)
}

/// The edges between the files of `nodes`, each with its first reference.
fn edges_between(nodes: &[Parsed]) -> BTreeMap<(usize, usize), Reference> {
    let trees = Trees::new(nodes.iter().map(|p| &p.location));
    let mut edges = BTreeMap::new();
    for (from, node) in nodes.iter().enumerate() {
        for found in References::of_file(&node.location.path, &node.file) {
            match trees.resolve(&node.location, &found.absolute) {
                Some(to) if to != from => add_edge(&mut edges, (from, to), found.reference),
                _ => {}
            }
        }
    }
    edges
}

/// Keeps the reference with the lowest line for each edge.
fn add_edge(
    edges: &mut BTreeMap<(usize, usize), Reference>,
    edge: (usize, usize),
    reference: Reference,
) {
    match edges.entry(edge) {
        Entry::Vacant(slot) => {
            slot.insert(reference);
        }
        Entry::Occupied(mut slot) if reference.line < slot.get().line => {
            slot.insert(reference);
        }
        Entry::Occupied(_) => {}
    }
}

fn parse(crate_dir: &Path, source: &SourceFile) -> Result<syn::File, Error> {
    syn::parse_file(&source.text).map_err(|e| {
        let start = e.span().start();
        Error::Parse {
            path: crate_dir.join("src").join(&source.path),
            line: start.line,
            column: start.column + 1,
            message: e.to_string(),
        }
    })
}

/// Where a file sits: its tree and its module path inside the tree.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Location {
    /// `""` for the crate's main tree, `bin/x` for a binary, `main` for a
    /// `main.rs` beside a `lib.rs`.
    tree: String,
    /// Empty for a root.
    path: Vec<String>,
}

/// The location of `src/<relative>`, or `None` for a name that is not UTF-8.
fn locate(relative: &Path, has_lib: bool) -> Option<Location> {
    let mut parts: Vec<&str> = relative
        .components()
        .map(|c| c.as_os_str().to_str())
        .collect::<Option<_>>()?;
    let file = parts.pop()?;
    parts.push(file.strip_suffix(".rs")?);
    let location = match parts.as_slice() {
        ["bin", name] => Location::root(format!("bin/{name}")),
        ["bin", name, rest @ ..] => Location::module(format!("bin/{name}"), rest, "main"),
        ["main"] if has_lib => Location::root("main".to_string()),
        rest => Location::module(String::new(), rest, if has_lib { "lib" } else { "main" }),
    };
    Some(location)
}

impl Location {
    fn root(tree: String) -> Self {
        Location {
            tree,
            path: Vec::new(),
        }
    }

    /// The module of `parts` (file stem last) in `tree`; `[root_stem]` is
    /// the tree's root and a trailing `mod` names its directory.
    fn module(tree: String, parts: &[&str], root_stem: &str) -> Self {
        let mut path: Vec<String> = parts.iter().map(|p| p.to_string()).collect();
        if path == [root_stem] || path.last().is_some_and(|p| p == "mod") {
            path.pop();
        }
        Location { tree, path }
    }

    fn is_root(&self) -> bool {
        self.path.is_empty()
    }

    /// Shown name: `lib`, `main`, `bin/x`, `a::b`, `bin/x::a`.
    fn name(&self, has_lib: bool) -> String {
        match (self.tree.as_str(), self.is_root()) {
            ("", true) if has_lib => "lib".to_string(),
            ("", true) => "main".to_string(),
            ("", false) => self.path.join("::"),
            (tree, true) => tree.to_string(),
            (tree, false) => format!("{tree}::{}", self.path.join("::")),
        }
    }

    /// Main tree first, roots first, then module paths in order.
    fn order_key(&self) -> (bool, &str, bool, &[String]) {
        (
            !self.tree.is_empty(),
            &self.tree,
            !self.is_root(),
            &self.path,
        )
    }

    /// The tree whose module files this location's paths name: a `main.rs`
    /// beside a `lib.rs` names the files of `src/`.
    fn lookup_tree(&self) -> &str {
        if self.tree == "main" {
            ""
        } else {
            &self.tree
        }
    }

    /// Whether a prefix of this module was declared for tests only.
    fn is_test_only(&self, test_only: &HashMap<String, HashSet<Vec<String>>>) -> bool {
        let Some(declared) = test_only.get(self.lookup_tree()) else {
            return false;
        };
        (1..=self.path.len()).any(|k| declared.contains(&self.path[..k]))
    }
}

/// Module paths that only tests compile, per lookup tree: declared under
/// `#[cfg(test)]` (`mod tests;`, or an inline test module whose children
/// would be test-only too), or files starting with `#![cfg(test)]`.
fn test_only_modules(parsed: &[Parsed]) -> HashMap<String, HashSet<Vec<String>>> {
    let mut declared: HashMap<String, HashSet<Vec<String>>> = HashMap::new();
    for Parsed { location, file, .. } in parsed {
        let mut found = Vec::new();
        if is_test_only(&file.attrs) && !location.is_root() {
            found.push(location.path.clone());
        }
        collect_test_modules(&file.items, &location.path, &mut found);
        declared
            .entry(location.lookup_tree().to_string())
            .or_default()
            .extend(found);
    }
    declared
}

fn collect_test_modules(items: &[Item], scope: &[String], found: &mut Vec<Vec<String>>) {
    for item in items {
        let Item::Mod(module) = item else { continue };
        let mut path = scope.to_vec();
        path.push(module.ident.unraw().to_string());
        if is_test_only(&module.attrs) {
            found.push(path);
        } else if let Some((_, inner)) = &module.content {
            collect_test_modules(inner, &path, found);
        }
    }
}

/// Module files per tree, for resolving absolute module paths to nodes.
struct Trees {
    /// lookup tree -> module path -> node (roots are not in it).
    modules: HashMap<String, HashMap<Vec<String>, usize>>,
    /// tree -> its root node.
    roots: HashMap<String, usize>,
}

impl Trees {
    fn new<'a>(locations: impl Iterator<Item = &'a Location>) -> Self {
        let mut trees = Trees {
            modules: HashMap::new(),
            roots: HashMap::new(),
        };
        for (node, location) in locations.enumerate() {
            if location.is_root() {
                trees.roots.insert(location.tree.clone(), node);
            } else {
                trees
                    .modules
                    .entry(location.tree.clone())
                    .or_default()
                    .insert(location.path.clone(), node);
            }
        }
        trees
    }

    /// The node that `absolute` (a path from the root of the tree of
    /// `from`) names: the longest prefix that is a module file, else the
    /// root of `from`'s tree.
    fn resolve(&self, from: &Location, absolute: &[String]) -> Option<usize> {
        if let Some(modules) = self.modules.get(from.lookup_tree()) {
            for k in (1..=absolute.len()).rev() {
                if let Some(&node) = modules.get(&absolute[..k]) {
                    return Some(node);
                }
            }
        }
        self.roots.get(&from.tree).copied()
    }
}

/// Whether `attrs` hold a `#[cfg]` that needs `test` (`test` or `all(.., test, ..)`).
pub fn is_test_only(attrs: &[Attribute]) -> bool {
    attrs.iter().any(|attr| {
        attr.path().is_ident("cfg") && attr.parse_args::<Meta>().is_ok_and(|m| requires_test(&m))
    })
}

fn requires_test(meta: &Meta) -> bool {
    match meta {
        Meta::Path(path) => path.is_ident("test"),
        Meta::List(list) if list.path.is_ident("all") => list
            .parse_args_with(Punctuated::<Meta, Token![,]>::parse_terminated)
            .is_ok_and(|all| all.iter().any(requires_test)),
        _ => false,
    }
}

/// A reference found in a file, with the module path it names.
struct Found {
    /// From the root of the file's tree.
    absolute: Vec<String>,
    reference: Reference,
}

/// Collects the references of one file: the syn visitor.
struct References {
    /// The current module: the file's, then the inline modules entered.
    module: Vec<String>,
    /// The modules declared in each enclosing module scope, innermost last.
    children: Vec<HashSet<String>>,
    found: Vec<Found>,
}

impl References {
    /// The references of `file`, whose module path is `module`.
    fn of_file(module: &[String], file: &syn::File) -> Vec<Found> {
        let mut references = References {
            module: module.to_vec(),
            children: vec![declared_modules(&file.items)],
            found: Vec::new(),
        };
        for item in &file.items {
            references.visit_item(item);
        }
        references.found
    }

    /// Records `segments` if they name a module of the crate from here.
    fn record(&mut self, segments: &[String], line: usize, written: String) {
        if let Some(absolute) = self.absolute(segments) {
            self.found.push(Found {
                absolute,
                reference: Reference {
                    line,
                    path: written,
                },
            });
        }
    }

    /// The path from the tree's root that `segments` name, if they start
    /// with `crate`, `super`, `self` or a module declared in this scope.
    fn absolute(&self, segments: &[String]) -> Option<Vec<String>> {
        let (first, rest) = segments.split_first()?;
        match first.as_str() {
            "crate" => Some(rest.to_vec()),
            "self" | "super" => {
                let mut base = self.module.clone();
                let relative = segments
                    .iter()
                    .take_while(|s| *s == "self" || *s == "super")
                    .count();
                for segment in &segments[..relative] {
                    if segment == "super" {
                        base.pop()?;
                    }
                }
                base.extend_from_slice(&segments[relative..]);
                Some(base)
            }
            name if self.children.last().is_some_and(|c| c.contains(name)) => {
                let mut base = self.module.clone();
                base.extend_from_slice(segments);
                Some(base)
            }
            _ => None,
        }
    }

    fn inline_module(&mut self, name: &Ident, items: &[Item]) {
        self.module.push(name.unraw().to_string());
        self.children.push(declared_modules(items));
        for item in items {
            self.visit_item(item);
        }
        self.children.pop();
        self.module.pop();
    }

    fn use_tree(&mut self, tree: &UseTree) {
        let mut leaves = Vec::new();
        expand_use(tree, &mut Vec::new(), &mut leaves);
        for leaf in leaves {
            self.record(&leaf.segments, leaf.line, leaf.written);
        }
    }

    /// Records a path of the code, at the line of its first segment.
    fn path_segments(&mut self, idents: &[Ident]) {
        let Some(first) = idents.first() else { return };
        let segments: Vec<String> = idents.iter().map(|i| i.unraw().to_string()).collect();
        let written = segments.join("::");
        self.record(&segments, first.span().start().line, written);
    }
}

impl<'ast> Visit<'ast> for References {
    fn visit_item(&mut self, item: &'ast Item) {
        if is_test_only(item_attrs(item)) {
            return;
        }
        match item {
            Item::Use(u) if u.leading_colon.is_none() => self.use_tree(&u.tree),
            Item::Use(_) => {}
            Item::Mod(m) => {
                if let Some((_, items)) = &m.content {
                    self.inline_module(&m.ident, items);
                }
            }
            _ => visit::visit_item(self, item),
        }
    }

    fn visit_impl_item(&mut self, item: &'ast ImplItem) {
        if !is_test_only(impl_item_attrs(item)) {
            visit::visit_impl_item(self, item);
        }
    }

    fn visit_trait_item(&mut self, item: &'ast TraitItem) {
        if !is_test_only(trait_item_attrs(item)) {
            visit::visit_trait_item(self, item);
        }
    }

    fn visit_local(&mut self, local: &'ast syn::Local) {
        if !is_test_only(&local.attrs) {
            visit::visit_local(self, local);
        }
    }

    fn visit_stmt_macro(&mut self, stmt: &'ast syn::StmtMacro) {
        if !is_test_only(&stmt.attrs) {
            visit::visit_stmt_macro(self, stmt);
        }
    }

    fn visit_field(&mut self, field: &'ast syn::Field) {
        if !is_test_only(&field.attrs) {
            visit::visit_field(self, field);
        }
    }

    fn visit_variant(&mut self, variant: &'ast syn::Variant) {
        if !is_test_only(&variant.attrs) {
            visit::visit_variant(self, variant);
        }
    }

    fn visit_arm(&mut self, arm: &'ast syn::Arm) {
        if !is_test_only(&arm.attrs) {
            visit::visit_arm(self, arm);
        }
    }

    /// `pub(crate)`, `pub(super)`, `pub(in crate::a)` say who may see an
    /// item; they do not use anything.
    fn visit_vis_restricted(&mut self, _: &'ast syn::VisRestricted) {}

    fn visit_path(&mut self, path: &'ast syn::Path) {
        if path.leading_colon.is_none() && path.segments.len() >= 2 {
            let idents: Vec<Ident> = path.segments.iter().map(|s| s.ident.clone()).collect();
            self.path_segments(&idents);
        }
        visit::visit_path(self, path);
    }

    fn visit_macro(&mut self, mac: &'ast syn::Macro) {
        visit::visit_macro(self, mac);
        for idents in paths_in_tokens(mac.tokens.clone()) {
            self.path_segments(&idents);
        }
    }
}

/// The names of the (non-test) modules declared among `items`.
fn declared_modules(items: &[Item]) -> HashSet<String> {
    items
        .iter()
        .filter_map(|item| match item {
            Item::Mod(m) if !is_test_only(&m.attrs) => Some(m.ident.unraw().to_string()),
            _ => None,
        })
        .collect()
}

/// One leaf of an expanded `use` tree.
#[derive(Debug, PartialEq, Eq)]
struct UseLeaf {
    /// The path it names (`a::{self}` names `a`, a glob names its prefix).
    segments: Vec<String>,
    /// As written, flattened: `crate::a::B`, `crate::a::*`, `crate::a::self`.
    written: String,
    line: usize,
}

/// Flattens `tree` under `prefix` into one leaf per name, glob or rename.
fn expand_use(tree: &UseTree, prefix: &mut Vec<String>, leaves: &mut Vec<UseLeaf>) {
    match tree {
        UseTree::Path(p) => {
            prefix.push(p.ident.unraw().to_string());
            expand_use(&p.tree, prefix, leaves);
            prefix.pop();
        }
        UseTree::Name(n) => leaves.push(use_leaf(prefix, &n.ident)),
        UseTree::Rename(r) => leaves.push(use_leaf(prefix, &r.ident)),
        UseTree::Glob(g) => leaves.push(UseLeaf {
            segments: prefix.clone(),
            written: format!("{}::*", prefix.join("::")),
            line: g.star_token.spans[0].start().line,
        }),
        UseTree::Group(g) => {
            for tree in &g.items {
                expand_use(tree, prefix, leaves);
            }
        }
    }
}

/// The leaf `prefix::name`; `prefix::self` names `prefix`.
fn use_leaf(prefix: &[String], name: &Ident) -> UseLeaf {
    let name_text = name.unraw().to_string();
    let mut segments = prefix.to_vec();
    let written = segments
        .iter()
        .chain([&name_text])
        .map(String::as_str)
        .collect::<Vec<_>>()
        .join("::");
    if name_text != "self" {
        segments.push(name_text);
    }
    UseLeaf {
        segments,
        written,
        line: name.span().start().line,
    }
}

/// The `a::b::c` paths (two segments or more) among a macro's tokens, at
/// any depth of delimiters. Each path is taken whole, so the tail of
/// `std::fmt::Display` is never read as a path starting with `fmt`.
fn paths_in_tokens(tokens: TokenStream) -> Vec<Vec<Ident>> {
    let mut found = Vec::new();
    let scan = |input: ParseStream| scan_tokens(input, &mut found);
    // The scanner accepts every token stream; an error cannot happen.
    let _ = scan.parse2(tokens);
    found
}

fn scan_tokens(input: ParseStream, found: &mut Vec<Vec<Ident>>) -> syn::Result<()> {
    while !input.is_empty() {
        if input.peek(Ident::peek_any) {
            let mut idents = vec![Ident::parse_any(input)?];
            while continues_path(input) {
                input.parse::<Token![::]>()?;
                idents.push(Ident::parse_any(input)?);
            }
            if idents.len() >= 2 {
                found.push(idents);
            }
        } else if let TokenTree::Group(group) = input.parse::<TokenTree>()? {
            found.extend(paths_in_tokens(group.stream()));
        }
    }
    Ok(())
}

/// Whether `::` and a name come next. (`::` is two tokens, so `peek2`
/// would look at its second colon.)
fn continues_path(input: ParseStream) -> bool {
    let ahead = input.fork();
    ahead.parse::<Token![::]>().is_ok() && ahead.peek(Ident::peek_any)
}

fn item_attrs(item: &Item) -> &[Attribute] {
    match item {
        Item::Const(i) => &i.attrs,
        Item::Enum(i) => &i.attrs,
        Item::ExternCrate(i) => &i.attrs,
        Item::Fn(i) => &i.attrs,
        Item::ForeignMod(i) => &i.attrs,
        Item::Impl(i) => &i.attrs,
        Item::Macro(i) => &i.attrs,
        Item::Mod(i) => &i.attrs,
        Item::Static(i) => &i.attrs,
        Item::Struct(i) => &i.attrs,
        Item::Trait(i) => &i.attrs,
        Item::TraitAlias(i) => &i.attrs,
        Item::Type(i) => &i.attrs,
        Item::Union(i) => &i.attrs,
        Item::Use(i) => &i.attrs,
        _ => &[],
    }
}

fn impl_item_attrs(item: &ImplItem) -> &[Attribute] {
    match item {
        ImplItem::Const(i) => &i.attrs,
        ImplItem::Fn(i) => &i.attrs,
        ImplItem::Type(i) => &i.attrs,
        ImplItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

fn trait_item_attrs(item: &TraitItem) -> &[Attribute] {
    match item {
        TraitItem::Const(i) => &i.attrs,
        TraitItem::Fn(i) => &i.attrs,
        TraitItem::Type(i) => &i.attrs,
        TraitItem::Macro(i) => &i.attrs,
        _ => &[],
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The graph of an in-memory crate: (path under src/, text) pairs.
    fn graph_of(files: &[(&str, &str)]) -> ModuleGraph {
        let sources = SourceFile::fixtures(files);
        build(Path::new("fixture"), &sources).unwrap()
    }

    /// Edges as "from -> to" strings, in order.
    fn edges(files: &[(&str, &str)]) -> Vec<String> {
        let graph = graph_of(files);
        graph
            .edges
            .keys()
            .map(|&(a, b)| format!("{} -> {}", graph.modules[a].name, graph.modules[b].name))
            .collect()
    }

    #[test]
    fn file_locations_give_module_paths() {
        let graph = graph_of(&[
            ("lib.rs", "mod a; mod x;"),
            ("a.rs", ""),
            ("x/mod.rs", "mod y;"),
            ("x/y.rs", ""),
            ("main.rs", ""),
            ("bin/tool.rs", ""),
            ("bin/big/main.rs", "mod part;"),
            ("bin/big/part.rs", ""),
        ]);
        let names: Vec<&str> = graph.modules.iter().map(|m| m.name.as_str()).collect();
        assert_eq!(
            names,
            [
                "lib",
                "a",
                "x",
                "x::y",
                "bin/big",
                "bin/big::part",
                "bin/tool",
                "main"
            ]
        );
        assert_eq!(graph.modules[3].file, Path::new("src/x/y.rs"));
    }

    #[test]
    fn super_from_a_nested_file_names_a_sibling() {
        let e = edges(&[
            ("lib.rs", "mod x;"),
            ("x/mod.rs", "mod y; mod z;"),
            ("x/y.rs", "fn f() -> super::z::Q { todo!() }"),
            ("x/z.rs", "pub struct Q;"),
        ]);
        assert_eq!(e, ["x::y -> x::z"]);
    }

    #[test]
    fn group_uses_are_expanded_with_globs_and_renames() {
        let e = edges(&[
            ("lib.rs", "mod a; mod b; mod c; mod d; mod e;"),
            (
                "a.rs",
                "use crate::{b::{self as bee, X}, c::*, d::{inner::{Y as Why}}};\n\
                 use self::super::e;",
            ),
            ("b.rs", ""),
            ("c.rs", ""),
            ("d.rs", "pub mod inner { pub struct Y; }"),
            ("e.rs", ""),
        ]);
        assert_eq!(e, ["a -> b", "a -> c", "a -> d", "a -> e"]);
    }

    #[test]
    fn an_item_of_the_crate_root_is_an_edge_to_the_root() {
        let graph = graph_of(&[
            ("lib.rs", "mod a;\npub struct Config;"),
            ("a.rs", "\n\nfn f(c: &crate::Config) {}"),
        ]);
        let (&(from, to), reference) = graph.edges.iter().next().unwrap();
        assert_eq!(
            (
                graph.modules[from].name.as_str(),
                graph.modules[to].name.as_str()
            ),
            ("a", "lib")
        );
        assert_eq!(
            reference,
            &Reference {
                line: 3,
                path: "crate::Config".into()
            }
        );
    }

    #[test]
    fn test_code_adds_no_edge() {
        let e = edges(&[
            ("lib.rs", "mod a; mod b; #[cfg(test)] mod tests;"),
            (
                "a.rs",
                "#[cfg(test)] mod tests { use crate::b::*; use super::*; }\n\
                 #[cfg(all(test, unix))] fn helper() { crate::b::f(); }\n\
                 struct S; impl S { #[cfg(test)] fn t() { crate::b::f(); } }",
            ),
            ("b.rs", "pub fn f() {}"),
            ("tests.rs", "use crate::a::*;"),
        ]);
        assert!(e.is_empty(), "{e:?}");
        let graph = graph_of(&[
            ("lib.rs", "#[cfg(test)] mod tests; mod fixtures;"),
            ("tests.rs", ""),
            ("fixtures.rs", "#![cfg(test)]\nmod data;"),
            ("fixtures/data.rs", ""),
        ]);
        assert_eq!(graph.modules.len(), 1);
        assert_eq!(
            graph.test_only_files,
            ["src/fixtures/data.rs", "src/fixtures.rs", "src/tests.rs"].map(PathBuf::from)
        );
    }

    #[test]
    fn super_inside_an_inline_module_counts_from_that_module() {
        let e = edges(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "mod inner { use super::*; use super::super::b::X; }",
            ),
            ("b.rs", "pub struct X;"),
        ]);
        assert_eq!(e, ["a -> b"]);
    }

    #[test]
    fn paths_through_own_children_are_edges_to_them() {
        let e = edges(&[
            ("lib.rs", "mod a;"),
            (
                "a.rs",
                "mod child; mod local {}\nfn f() { child::g(); local::h(); std::fmt::x(); }",
            ),
            ("a/child.rs", "pub fn g() {}"),
        ]);
        assert_eq!(e, ["a -> a::child"]);
    }

    #[test]
    fn paths_in_macro_tokens_and_macro_rules_count() {
        let e = edges(&[
            ("lib.rs", "mod a; mod b; mod c; mod d;"),
            ("a.rs", "fn f() { println!(\"{}\", crate::b::X); }"),
            ("b.rs", "macro_rules! m { () => { $crate::c::f() }; }"),
            ("c.rs", "fn g() { assert!(matches!(x, crate::d::E::V)); }"),
            ("d.rs", ""),
        ]);
        assert_eq!(e, ["a -> b", "b -> c", "c -> d"]);
    }

    #[test]
    fn visibility_paths_are_not_references() {
        let e = edges(&[
            ("lib.rs", "mod a; mod b;"),
            (
                "a.rs",
                "pub(crate) fn f() {} pub(super) struct S; pub(in crate::b) fn g() {}",
            ),
            ("b.rs", ""),
        ]);
        assert!(e.is_empty(), "{e:?}");
    }

    #[test]
    fn an_edge_keeps_its_first_reference() {
        let graph = graph_of(&[
            ("lib.rs", "mod a; mod b;"),
            ("a.rs", "fn f() {\n crate::b::one();\n}\nuse crate::b::two;"),
            ("b.rs", ""),
        ]);
        let reference = graph.edges.values().next().unwrap();
        assert_eq!(
            reference,
            &Reference {
                line: 2,
                path: "crate::b::one".into()
            }
        );
    }

    #[test]
    fn a_file_that_does_not_parse_is_an_error_naming_it() {
        let sources = [SourceFile {
            path: PathBuf::from("broken.rs"),
            text: "fn f( {".to_string(),
        }];
        let error = build(Path::new("crates/x"), &sources).unwrap_err();
        let message = error.to_string();
        assert!(
            message.starts_with("crates/x/src/broken.rs:1:"),
            "{message}"
        );
    }
}
