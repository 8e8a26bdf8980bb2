//! Reads the workspace's manifests: the root `Cargo.toml`'s `members` and,
//! for each member, its package name and its normal dependencies on other
//! members.
//!
//! Invariants:
//! - members keep the order of the root's `members` array (a `dir/*` entry
//!   expands to its subdirectories with a `Cargo.toml`, in name order, less
//!   the `exclude` list);
//! - a dependency counts only when it points at a member's directory, by its
//!   own `path` or through a `[workspace.dependencies]` entry with a `path`;
//!   the key under which it is declared does not matter (`engine = { package
//!   = "persimmon", path = ... }` is a dependency on `persimmon`);
//! - `[dependencies]` and `[target.*.dependencies]` make the crate graph;
//!   dev- and build-dependencies do not.

use std::collections::HashMap;
use std::fs;
use std::path::{Path, PathBuf};

use toml::{Table, Value};

use crate::error::Error;

/// The workspace: its root directory and its member crates.
#[derive(Debug, Clone)]
pub struct Workspace {
    pub root: PathBuf,
    pub members: Vec<Member>,
}

/// One member crate.
#[derive(Debug, Clone)]
pub struct Member {
    /// The package name (`[package] name`).
    pub name: String,
    /// The directory of its `Cargo.toml`.
    pub dir: PathBuf,
    /// Package names of the members it depends on (normal dependencies),
    /// sorted and without repeats.
    pub depends_on: Vec<String>,
}

/// The nearest directory at or above `start` whose `Cargo.toml` has a
/// `[workspace]` table.
pub fn find_root(start: &Path) -> Result<PathBuf, Error> {
    for dir in start.ancestors() {
        let manifest = dir.join("Cargo.toml");
        if manifest.is_file() && read_manifest(&manifest)?.contains_key("workspace") {
            return Ok(dir.to_path_buf());
        }
    }
    Err(Error::manifest(
        start,
        "no Cargo.toml with a [workspace] table here or above",
    ))
}

/// Reads the workspace rooted at `root`.
pub fn read(root: &Path) -> Result<Workspace, Error> {
    let root = &fs::canonicalize(root).map_err(|e| Error::io(root, e))?;
    let root_manifest = root.join("Cargo.toml");
    let table = read_manifest(&root_manifest)?;
    let workspace = table
        .get("workspace")
        .and_then(Value::as_table)
        .ok_or_else(|| Error::manifest(&root_manifest, "no [workspace] table"))?;
    let shared_paths = workspace_dependency_dirs(root, workspace);

    let mut pending = Vec::new();
    for dir in member_dirs(root, &root_manifest, workspace)? {
        pending.push(read_member(&dir, &shared_paths)?);
    }
    let name_of_dir: HashMap<&Path, &str> = pending
        .iter()
        .map(|(member, _)| (member.dir.as_path(), member.name.as_str()))
        .collect();
    let depends_on: Vec<Vec<String>> = pending
        .iter()
        .map(|(_, dep_dirs)| {
            let mut names: Vec<String> = dep_dirs
                .iter()
                .filter_map(|dir| name_of_dir.get(dir.as_path()))
                .map(|name| name.to_string())
                .collect();
            names.sort();
            names.dedup();
            names
        })
        .collect();
    let members = pending
        .into_iter()
        .zip(depends_on)
        .map(|((member, _), depends_on)| Member {
            depends_on,
            ..member
        })
        .collect();
    Ok(Workspace {
        root: root.to_path_buf(),
        members,
    })
}

/// Parses one `Cargo.toml`.
fn read_manifest(path: &Path) -> Result<Table, Error> {
    let text = fs::read_to_string(path).map_err(|e| Error::io(path, e))?;
    text.parse::<Table>()
        .map_err(|e| Error::manifest(path, e.to_string().trim_end().to_string()))
}

/// The member directories, canonical, in the order of `members`.
fn member_dirs(root: &Path, manifest: &Path, workspace: &Table) -> Result<Vec<PathBuf>, Error> {
    let excluded: Vec<PathBuf> = strings(workspace.get("exclude"))
        .map(|p| normalized(&root.join(p)))
        .collect();
    let mut dirs = Vec::new();
    for entry in strings(workspace.get("members")) {
        if let Some(parent) = entry.strip_suffix("/*") {
            let children = glob_children(&root.join(parent))?;
            dirs.extend(
                children
                    .into_iter()
                    .filter(|d| !excluded.contains(&normalized(d))),
            );
        } else if entry.contains(['*', '?', '[']) {
            return Err(Error::manifest(
                manifest,
                format!("member pattern `{entry}` is not supported (only `dir/*`)"),
            ));
        } else {
            dirs.push(root.join(entry));
        }
    }
    dirs.iter()
        .map(|d| fs::canonicalize(d).map_err(|e| Error::io(d, e)))
        .collect()
}

/// The subdirectories of `parent` that hold a `Cargo.toml`, in name order.
fn glob_children(parent: &Path) -> Result<Vec<PathBuf>, Error> {
    let entries = fs::read_dir(parent).map_err(|e| Error::io(parent, e))?;
    let mut dirs = Vec::new();
    for entry in entries {
        let path = entry.map_err(|e| Error::io(parent, e))?.path();
        if path.join("Cargo.toml").is_file() {
            dirs.push(path);
        }
    }
    dirs.sort();
    Ok(dirs)
}

/// `[workspace.dependencies]` entries with a `path`: key -> canonical directory.
fn workspace_dependency_dirs(root: &Path, workspace: &Table) -> HashMap<String, PathBuf> {
    let Some(deps) = workspace.get("dependencies").and_then(Value::as_table) else {
        return HashMap::new();
    };
    deps.iter()
        .filter_map(|(key, spec)| {
            let path = spec.as_table()?.get("path")?.as_str()?;
            Some((key.clone(), fs::canonicalize(root.join(path)).ok()?))
        })
        .collect()
}

/// A member's name and the directories of its path dependencies.
fn read_member(
    dir: &Path,
    shared_paths: &HashMap<String, PathBuf>,
) -> Result<(Member, Vec<PathBuf>), Error> {
    let manifest = dir.join("Cargo.toml");
    let table = read_manifest(&manifest)?;
    let name = table
        .get("package")
        .and_then(|p| p.get("name"))
        .and_then(Value::as_str)
        .ok_or_else(|| Error::manifest(&manifest, "no [package] name"))?
        .to_string();
    let dep_dirs = normal_dependency_tables(&table)
        .flat_map(|deps| deps.iter())
        .filter_map(|(key, spec)| dependency_dir(dir, key, spec, shared_paths))
        .collect();
    let member = Member {
        name,
        dir: dir.to_path_buf(),
        depends_on: Vec::new(),
    };
    Ok((member, dep_dirs))
}

/// `[dependencies]` and every `[target.<cfg>.dependencies]`.
fn normal_dependency_tables(manifest: &Table) -> impl Iterator<Item = &Table> {
    let plain = manifest.get("dependencies").and_then(Value::as_table);
    let per_target = manifest
        .get("target")
        .and_then(Value::as_table)
        .into_iter()
        .flat_map(|targets| targets.values())
        .filter_map(|target| target.get("dependencies").and_then(Value::as_table));
    plain.into_iter().chain(per_target)
}

/// The canonical directory a dependency points at, if it is a path one.
fn dependency_dir(
    member_dir: &Path,
    key: &str,
    spec: &Value,
    shared_paths: &HashMap<String, PathBuf>,
) -> Option<PathBuf> {
    let spec = spec.as_table()?;
    if spec.get("workspace").and_then(Value::as_bool) == Some(true) {
        return shared_paths.get(key).cloned();
    }
    let path = spec.get("path")?.as_str()?;
    fs::canonicalize(member_dir.join(path)).ok()
}

/// The strings of a TOML array (nothing if it is absent or not an array).
fn strings(value: Option<&Value>) -> impl Iterator<Item = &str> {
    value
        .and_then(Value::as_array)
        .into_iter()
        .flatten()
        .filter_map(Value::as_str)
}

/// `path` with inner `.` components and trailing slashes dropped, for
/// comparing paths that may not exist.
fn normalized(path: &Path) -> PathBuf {
    path.components().collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn write(dir: &Path, relative: &str, text: &str) {
        let path = dir.join(relative);
        fs::create_dir_all(path.parent().unwrap()).unwrap();
        fs::write(path, text).unwrap();
    }

    fn package(name: &str, deps: &str) -> String {
        format!("[package]\nname = \"{name}\"\nversion = \"0.1.0\"\n\n{deps}")
    }

    #[test]
    fn reads_members_and_their_dependencies_on_each_other() {
        let tmp = tempfile::tempdir().unwrap();
        let root = tmp.path();
        write(
            root,
            "Cargo.toml",
            r#"[workspace]
members = ["crates/core", "crates/app", "tools/*"]
exclude = ["tools/skipped"]
[workspace.dependencies]
core = { path = "crates/core" }
serde = "1"
"#,
        );
        write(root, "crates/core/Cargo.toml", &package("core", ""));
        write(
            root,
            "crates/app/Cargo.toml",
            &package(
                "app",
                "[dependencies]\ncore.workspace = true\nserde.workspace = true\n\
                 [dev-dependencies]\ntool = { path = \"../../tools/tool\" }\n",
            ),
        );
        write(
            root,
            "tools/tool/Cargo.toml",
            &package(
                "tool",
                "[target.'cfg(unix)'.dependencies]\nengine = { package = \"app\", path = \"../../crates/app\" }\n",
            ),
        );
        write(root, "tools/skipped/Cargo.toml", &package("skipped", ""));

        let workspace = read(root).unwrap();
        let summary: Vec<(String, Vec<String>)> = workspace
            .members
            .iter()
            .map(|m| (m.name.clone(), m.depends_on.clone()))
            .collect();
        assert_eq!(
            summary,
            vec![
                ("core".to_string(), vec![]),
                ("app".to_string(), vec!["core".to_string()]),
                ("tool".to_string(), vec!["app".to_string()]),
            ]
        );
        assert_eq!(workspace.root, fs::canonicalize(root).unwrap());
        assert_eq!(find_root(&root.join("crates/app")).unwrap(), root);
    }

    #[test]
    fn a_broken_manifest_is_reported_with_its_path() {
        let tmp = tempfile::tempdir().unwrap();
        write(tmp.path(), "Cargo.toml", "[workspace\nmembers = []\n");
        let message = read(tmp.path()).unwrap_err().to_string();
        assert!(message.contains("Cargo.toml"), "{message}");
    }
}
