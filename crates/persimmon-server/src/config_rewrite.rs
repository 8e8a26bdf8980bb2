//! `CONFIG REWRITE`: writes the parameters changed at run time (`CONFIG
//! SET`) back into the TOML file the server was started with, so they
//! survive a restart (Redis Sentinel sends it after every reconfiguration).
//!
//! Where a parameter goes: a parameter that is also a top-level key of the
//! file (`maxclients`, `requirepass`, `protected-mode`,
//! `proto-max-bulk-len`, `client-query-buffer-limit`,
//! `client-output-stall-secs`) is written there, typed (`true`, `1048576`);
//! every other one goes in the `[settings]` table as a string, which the
//! server applies at start as `CONFIG SET` would. Keys already in
//! `[settings]` are brought up to date too.
//!
//! Users (`ACL SETUSER`) are written as the top-level `user` list, one
//! string per user as `ACL LIST` shows it, unless the server keeps them in
//! an ACL file (`ACL SAVE`), as Redis rewrites its `user` lines.
//!
//! Invariants:
//! - Everything else in the file stays as it was: comments, blank lines,
//!   key order, unknown-to-us formatting (the file is edited as a TOML
//!   document, not regenerated); a new key is appended to its table.
//! - The file is replaced atomically: the new text goes to a temporary
//!   file in the same directory, is synced, then renamed over the old one,
//!   so a crash leaves the old file or the new one, never half of one.
//! - The written file parses back to the running configuration's values
//!   (checked before the rename: a file the server could not start from
//!   is never written).

use std::io::Write;
use std::path::Path;

use toml_edit::{value, DocumentMut, Item, Table, Value};

use crate::settings::{Settings, TomlForm};

/// Parameters that are top-level keys of the file, with the same name.
const TOP_LEVEL: &[&str] = &[
    "requirepass",
    "protected-mode",
    "maxclients",
    "proto-max-bulk-len",
    "client-query-buffer-limit",
    "client-output-stall-secs",
];

/// One key to write: its name, its value (`None`: remove the key), its
/// form, and whether it is a top-level key of the file (else it goes in
/// `[settings]`). State kept outside `Settings` (a replica's master, say)
/// is written by adding its own entry to [`changed_entries`]'s.
pub struct Entry {
    pub name: String,
    pub value: Option<Vec<u8>>,
    pub form: TomlForm,
    pub top_level: bool,
}

/// The entries a rewrite writes: every parameter changed at run time.
pub fn changed_entries(settings: &Settings) -> Vec<Entry> {
    settings
        .changed()
        .into_iter()
        .map(|(name, value, form)| Entry {
            name: name.to_string(),
            value: Some(value),
            form,
            top_level: TOP_LEVEL.contains(&name),
        })
        .collect()
}

/// Rewrites the file at `path` with `entries` (see the module's rules);
/// the error is the reason, for `ERR Rewriting config file: ...`.
pub fn rewrite(path: &Path, settings: &Settings, entries: &[Entry]) -> Result<(), String> {
    let text = std::fs::read_to_string(path).map_err(|e| e.to_string())?;
    let mut doc: DocumentMut = text.parse().map_err(|e| format!("{e}"))?;
    for entry in entries {
        set(&mut doc, entry)?;
    }
    refresh_settings_table(&mut doc, settings)?;
    let new_text = doc.to_string();
    let mut check = crate::config::Config::default();
    check
        .apply_toml(&new_text)
        .map_err(|e| format!("the rewritten file would not load: {e}"))?;
    replace_file(path, new_text.as_bytes()).map_err(|e| e.to_string())
}

/// Writes (or removes) one entry at the top level or in `[settings]`.
fn set(doc: &mut DocumentMut, entry: &Entry) -> Result<(), String> {
    let table = if entry.top_level {
        doc.as_table_mut()
    } else {
        settings_table(doc)?
    };
    let Some(value) = &entry.value else {
        table.remove(&entry.name);
        return Ok(());
    };
    let text = String::from_utf8(value.clone())
        .map_err(|_| format!("the value of {} is not UTF-8", entry.name))?;
    let value = if entry.top_level {
        typed(&text, entry.form)
    } else {
        Value::from(text)
    };
    replace(table, &entry.name, value);
    Ok(())
}

/// Sets `key` in `table` to `new`, keeping the old value's surrounding
/// comment and spacing when there was one.
fn replace(table: &mut Table, key: &str, mut new: Value) {
    match table.get_mut(key).and_then(Item::as_value_mut) {
        Some(old) => {
            *new.decor_mut() = old.decor().clone();
            *old = new;
        }
        None => {
            table[key] = value(new);
        }
    }
}

/// The value as the file's top-level key wants it.
fn typed(text: &str, form: TomlForm) -> Value {
    match form {
        TomlForm::Bool => Value::from(text == "yes"),
        TomlForm::Int => match text.parse::<i64>() {
            Ok(n) => Value::from(n),
            Err(_) => Value::from(text),
        },
        TomlForm::Text => Value::from(text),
        TomlForm::Lines => Value::Array(text.lines().map(Value::from).collect()),
    }
}

/// The `[settings]` table, created (at the end) when missing.
fn settings_table(doc: &mut DocumentMut) -> Result<&mut Table, String> {
    let item = doc
        .entry("settings")
        .or_insert_with(|| Item::Table(Table::new()));
    item.as_table_mut()
        .ok_or_else(|| "settings is not a table".to_string())
}

/// Brings every key already in `[settings]` to the value it has now.
fn refresh_settings_table(doc: &mut DocumentMut, settings: &Settings) -> Result<(), String> {
    let Some(table) = doc.get_mut("settings").and_then(Item::as_table_mut) else {
        return Ok(());
    };
    let names: Vec<String> = table.iter().map(|(k, _)| k.to_string()).collect();
    for name in names {
        if let Some(now) = settings.value(&name) {
            let text =
                String::from_utf8(now).map_err(|_| format!("the value of {name} is not UTF-8"))?;
            replace(table, &name, Value::from(text));
        }
    }
    Ok(())
}

/// Replaces `path` with `bytes` atomically (temporary file, sync, rename).
fn replace_file(path: &Path, bytes: &[u8]) -> std::io::Result<()> {
    let dir = path.parent().filter(|d| !d.as_os_str().is_empty());
    let dir = dir.unwrap_or(Path::new("."));
    let name = path.file_name().map(|n| n.to_string_lossy().into_owned());
    let tmp = dir.join(format!(
        ".{}.rewrite-{}",
        name.unwrap_or_default(),
        std::process::id()
    ));
    let result = (|| {
        let mut f = std::fs::File::create(&tmp)?;
        f.write_all(bytes)?;
        f.sync_all()?;
        std::fs::rename(&tmp, path)?;
        std::fs::File::open(dir)?.sync_all()
    })();
    if result.is_err() {
        let _ = std::fs::remove_file(&tmp);
    }
    result
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::config::Config;

    fn entry(name: &str, value: Option<&str>, form: TomlForm) -> Entry {
        Entry {
            name: name.into(),
            value: value.map(|v| v.as_bytes().to_vec()),
            form,
            top_level: true,
        }
    }

    #[test]
    fn keeps_comments_and_places_keys_where_they_belong() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(
            &path,
            "# my server\npool = \"/dev/shm/x.pool\" # the pool\nmaxclients = 10 # few\n\n[settings]\ntimeout = \"5\"\n",
        )
        .unwrap();
        let mut config = Config::default();
        config.apply_file(&path).unwrap();
        let settings = Settings::new(&config.startup_values(), &config.settings);
        settings
            .set(&[
                (b"maxclients", b"20"),
                (b"maxmemory", b"1mb"),
                (b"timeout", b"7"),
                (b"protected-mode", b"no"),
            ])
            .unwrap();
        let entries = changed_entries(&settings);
        rewrite(&path, &settings, &entries).unwrap();
        let text = std::fs::read_to_string(&path).unwrap();
        assert!(text.starts_with("# my server\npool = \"/dev/shm/x.pool\" # the pool\n"));
        assert!(text.contains("maxclients = 20 # few\n"), "{text}");
        assert!(text.contains("protected-mode = false"), "{text}");
        assert!(text.contains("timeout = \"7\""), "{text}");
        assert!(text.contains("maxmemory = \"1048576\""), "{text}");
        let mut again = Config::default();
        again.apply_toml(&text).unwrap();
        assert_eq!(again.limits.maxclients, 20);
        assert!(!again.protected_mode);
        let restarted = Settings::new(&again.startup_values(), &again.settings);
        assert_eq!(restarted.maxmemory(), 1 << 20);
        assert_eq!(restarted.value("timeout").unwrap(), b"7");
    }

    #[test]
    fn users_are_written_as_a_list_that_loads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "pool = \"/dev/shm/x.pool\"\n").unwrap();
        let settings = Settings::new(&Config::default().startup_values(), &[]);
        let users = entry(
            "user",
            Some("alice on nopass ~app:* resetchannels -@all +get\ndefault on nopass ~* &* +@all"),
            TomlForm::Lines,
        );
        rewrite(&path, &settings, &[users]).unwrap();
        let mut again = Config::default();
        again.apply_file(&path).unwrap();
        assert_eq!(
            again.users,
            [
                "alice on nopass ~app:* resetchannels -@all +get",
                "default on nopass ~* &* +@all"
            ]
        );
    }

    #[test]
    fn an_entry_without_a_value_removes_its_key() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, "port = 7000\nmaxclients = 5 # small\n").unwrap();
        let settings = Settings::new(&Config::default().startup_values(), &[]);
        let entries = [entry("maxclients", None, TomlForm::Int)];
        rewrite(&path, &settings, &entries).unwrap();
        assert_eq!(std::fs::read_to_string(&path).unwrap(), "port = 7000\n");
    }

    #[test]
    fn a_file_that_is_not_toml_is_left_alone() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("bad.toml");
        std::fs::write(&path, "this is = = not toml").unwrap();
        let settings = Settings::new(&Config::default().startup_values(), &[]);
        let e = rewrite(
            &path,
            &settings,
            &[entry("maxclients", Some("3"), TomlForm::Int)],
        );
        assert!(e.is_err());
        assert_eq!(
            std::fs::read_to_string(&path).unwrap(),
            "this is = = not toml"
        );
    }
}
