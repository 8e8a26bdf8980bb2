//! The ACL file (`aclfile`): one `user <name> <rules...>` line per user,
//! as `ACL LIST` writes them. `ACL LOAD` reads it whole before changing
//! anything; `ACL SAVE` writes it atomically.
//!
//! Invariants:
//! - A file with any bad line (unknown rule, duplicate user, not a `user`
//!   line) loads nothing: the error names the file and the line.
//! - Saving writes a temporary file beside the target, fsyncs it, renames
//!   it over the target and fsyncs the directory: a crash leaves the old
//!   file or the new one, never a mix.
//! - Empty lines and lines starting with `#` are skipped.

use std::io::Write;
use std::path::Path;

use crate::acl::commands::Commands;
use crate::acl::user::{applied, merge_selectors, Rules};

/// The users of an ACL text (`source` names it in errors), in file order.
/// A file without `default` gets the default user that allows everything.
pub fn parse(
    text: &str,
    source: &str,
    table: &dyn Commands,
    all_channels: bool,
) -> Result<Vec<(String, Rules)>, String> {
    let mut users: Vec<(String, Rules)> = Vec::new();
    for (n, line) in text.lines().enumerate() {
        let line = line.trim();
        if line.is_empty() || line.starts_with('#') {
            continue;
        }
        let at = |msg: String| format!("{source}:{}: {msg}", n + 1);
        let (name, rules) = parse_line(line, table, all_channels).map_err(at)?;
        if users.iter().any(|(u, _)| *u == name) {
            return Err(at(format!("Duplicate user '{name}' found")));
        }
        users.push((name, rules));
    }
    if !users.iter().any(|(u, _)| u == "default") {
        users.push(("default".into(), Rules::everything(table)));
    }
    Ok(users)
}

/// One `user <name> <rules...>` line (also a config file's `user` value,
/// without the leading `user`).
pub fn parse_line(
    line: &str,
    table: &dyn Commands,
    all_channels: bool,
) -> Result<(String, Rules), String> {
    let words: Vec<&[u8]> = line.split_whitespace().map(str::as_bytes).collect();
    match words.first() {
        Some(w) if w.eq_ignore_ascii_case(b"user") => {}
        _ => return Err("should start with user keyword".into()),
    }
    let Some(name) = words.get(1) else {
        return Err("user name missing".into());
    };
    let name = String::from_utf8_lossy(name).into_owned();
    let ops = merge_selectors(&words[2..])?;
    let rules = applied(&Rules::new(table, all_channels), table, &ops, all_channels)
        .map_err(|e| format!("Error in user declaration '{}': {}", e.rule, e.reason))?;
    Ok((name, rules))
}

/// The file's text for `users` (sorted by name, as Redis writes them).
pub fn render(users: &[(String, String)]) -> String {
    users
        .iter()
        .map(|(name, described)| format!("user {name} {described}\n"))
        .collect()
}

/// Writes `text` to `path` atomically (temp file, fsync, rename, fsync of
/// the directory).
pub fn write_atomically(path: &Path, text: &str) -> std::io::Result<()> {
    let dir = path
        .parent()
        .filter(|d| !d.as_os_str().is_empty())
        .unwrap_or(Path::new("."));
    let file_name = path
        .file_name()
        .map(|n| n.to_string_lossy().into_owned())
        .unwrap_or_default();
    let temp = dir.join(format!(".{file_name}.tmp-{}", std::process::id()));
    let result = (|| {
        let mut f = std::fs::File::create(&temp)?;
        f.write_all(text.as_bytes())?;
        f.sync_all()?;
        std::fs::rename(&temp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&temp);
    }
    result
}
