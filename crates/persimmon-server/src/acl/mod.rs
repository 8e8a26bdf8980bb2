//! Redis 7.0's ACL: users, their rules, the permission check, the log and
//! the ACL file. The room's parts: `categories` (each command's
//! `@categories`), `selector` (one selector's commands, keys and
//! channels), `user` (a user's flags, passwords, selectors, and the rules
//! that set them), `access` (what a request touches), `log` (`ACL LOG`),
//! `file` (`aclfile`), `commands` (the command table as the room reads it,
//! a trait, so the room imports nothing above it). [`Acl`] is the server's registry of users; the
//! dispatch calls [`check`] for every command on every path (plain, queued
//! in MULTI and again at EXEC, a script's `redis.call`).
//!
//! Invariants:
//! - The `default` user always exists and is never replaced: `ACL LOAD`
//!   and `requirepass` change its rules in place, so its clients keep it.
//! - A client that is not authenticated runs only `no_auth` commands while
//!   [`Acl::auth_required`]: the default user has a password (not
//!   `nopass`) or is off, as in Redis.
//! - [`check`] of a user whose root selector allows everything is one
//!   atomic load; any other user's check reads its rules under a read lock
//!   and walks the request's keys and channels once per selector.
//! - A request is allowed when one selector allows its command, all its
//!   keys and all its channels; otherwise the refusal is the furthest one
//!   (command < key < channel, then the later argument), as Redis reports.

pub mod access;
pub mod categories;
pub mod commands;
pub mod file;
pub mod log;
pub mod selector;
pub mod user;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};

use commands::Commands;
use log::{Context, Reason};
use selector::Selector;
use user::{Rules, User};

/// The server's users.
pub struct Acl {
    users: Mutex<BTreeMap<String, Arc<User>>>,
    default: Arc<User>,
    pub log: log::Log,
    file: Mutex<Option<PathBuf>>,
    auth_required: AtomicBool,
}

/// A refused request: why, and the argument at fault (0: the command).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Denial {
    pub reason: Reason,
    pub pos: usize,
}

fn rank(d: &Denial) -> (u8, usize) {
    let r = match d.reason {
        Reason::Command => 1,
        Reason::Key => 2,
        Reason::Auth => 3,
        Reason::Channel => 4,
    };
    (r, d.pos)
}

/// Checks request `words` (the name first) of row `index` against `user`.
pub fn check(
    user: &User,
    table: &dyn Commands,
    index: usize,
    words: &[&[u8]],
) -> Result<(), Denial> {
    if user.unrestricted() {
        return Ok(());
    }
    let rules = user.rules();
    let mut worst: Option<Denial> = None;
    for selector in std::iter::once(&rules.root).chain(&rules.selectors) {
        match check_selector(selector, table, index, words) {
            Ok(()) => return Ok(()),
            Err(d) => {
                if worst.is_none_or(|w| rank(&d) > rank(&w)) {
                    worst = Some(d);
                }
            }
        }
    }
    Err(worst.unwrap_or(Denial {
        reason: Reason::Command,
        pos: 0,
    }))
}

fn check_selector(
    sel: &Selector,
    table: &dyn Commands,
    index: usize,
    words: &[&[u8]],
) -> Result<(), Denial> {
    let no_auth = table.flags(index).contains(&"no_auth");
    if !no_auth && !sel.allows_command(index, words) {
        return Err(Denial {
            reason: Reason::Command,
            pos: 0,
        });
    }
    if !sel.all_keys {
        for (pos, need) in access::keys(table, index, words) {
            if !sel.allows_key(words[pos], need) {
                return Err(Denial {
                    reason: Reason::Key,
                    pos,
                });
            }
        }
    }
    if !sel.all_channels {
        for (pos, pattern) in access::channels(table.name(index), words) {
            if !sel.allows_channel(words[pos], pattern) {
                return Err(Denial {
                    reason: Reason::Channel,
                    pos,
                });
            }
        }
    }
    Ok(())
}

/// The object a denial names in `ACL LOG`: the command's full name, the
/// key or the channel.
pub fn object(d: &Denial, name: &str, words: &[&[u8]]) -> String {
    match d.reason {
        Reason::Command => name.to_string(),
        Reason::Auth => "AUTH".into(),
        _ => String::from_utf8_lossy(words[d.pos]).into_owned(),
    }
}

/// Redis's error for a denial in `context`.
pub fn error_text(d: &Denial, name: &str, context: Context) -> String {
    if context == Context::Lua {
        return match d.reason {
            Reason::Command => "ERR The user executing the script can't run this command or subcommand",
            Reason::Key => "ERR The user executing the script can't access at least one of the keys mentioned in the command",
            _ => "ERR The user executing the script can't publish to the channel mentioned in the command",
        }
        .into();
    }
    match d.reason {
        Reason::Command => {
            format!("NOPERM this user has no permissions to run the '{name}' command")
        }
        Reason::Key => {
            "NOPERM this user has no permissions to access one of the keys used as arguments".into()
        }
        _ => "NOPERM this user has no permissions to access one of the channels used as arguments"
            .into(),
    }
}

/// `ACL DRYRUN`'s text for a denial.
pub fn dry_run_text(d: &Denial, name: &str, words: &[&[u8]]) -> String {
    let what = match d.reason {
        Reason::Command => {
            return format!("This user has no permissions to run the '{name}' command")
        }
        Reason::Key => "key",
        _ => "channel",
    };
    format!(
        "This user has no permissions to access the '{}' {what}",
        String::from_utf8_lossy(words[d.pos])
    )
}

/// Whether a user may read every key (`SORT ... BY` and `GET` patterns
/// read keys the request does not name).
pub fn reads_all_keys(user: &User) -> bool {
    if user.unrestricted() {
        return true;
    }
    let rules = user.rules();
    std::iter::once(&rules.root)
        .chain(&rules.selectors)
        .any(Selector::reads_all_keys)
}

/// Whether `user` may stay subscribed to `channels` and `patterns` (after
/// its rules changed): a client that may not is disconnected.
pub fn may_stay_subscribed(user: &User, channels: &[Vec<u8>], patterns: &[Vec<u8>]) -> bool {
    let rules = user.rules();
    let root = &rules.root;
    channels.iter().all(|c| root.allows_channel(c, false))
        && patterns.iter().all(|p| root.allows_channel(p, true))
}

/// Redis's refusal of a user name.
pub fn check_name(name: &[u8]) -> Result<(), String> {
    if name.iter().any(|&b| b == b' ' || b == 0) {
        return Err("ERR Usernames can't contain spaces or null characters".into());
    }
    Ok(())
}

impl Acl {
    /// The registry with only `default` (`on nopass ~* &* +@all`).
    pub fn new(table: &dyn Commands) -> Acl {
        let default = User::new("default", Rules::everything(table));
        let mut users = BTreeMap::new();
        users.insert("default".to_string(), default.clone());
        Acl {
            users: Mutex::new(users),
            default,
            log: log::Log::default(),
            file: Mutex::new(None),
            auth_required: AtomicBool::new(false),
        }
    }

    /// The registry a server starts with: `requirepass`, then the `user`
    /// lines or the ACL file of `config`.
    pub fn from_config(
        config: &crate::config::Config,
        table: &dyn Commands,
    ) -> Result<Acl, String> {
        let acl = Acl::new(table);
        let all_channels = config
            .settings
            .iter()
            .any(|(n, v)| n == "acl-pubsub-default" && v == "allchannels");
        // `requirepass` in the file's `[settings]` applies after the key.
        let requirepass = config
            .settings
            .iter()
            .rev()
            .find(|(n, _)| n == "requirepass")
            .map(|(_, v)| v.as_str())
            .or(config.requirepass.as_deref());
        acl.start(
            table,
            requirepass.map(str::as_bytes),
            &config.users,
            config.aclfile.clone(),
            all_channels,
        )?;
        Ok(acl)
    }

    fn users(&self) -> MutexGuard<'_, BTreeMap<String, Arc<User>>> {
        self.users.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Sets up the users from the startup configuration: `requirepass`,
    /// the `user` lines, the `aclfile` (not both).
    pub fn start(
        &self,
        table: &dyn Commands,
        requirepass: Option<&[u8]>,
        user_lines: &[String],
        aclfile: Option<PathBuf>,
        all_channels: bool,
    ) -> Result<(), String> {
        if aclfile.is_some() && !user_lines.is_empty() {
            return Err("Configuring Redis with users defined in redis.conf and at the same setting an ACL file path is invalid. This setup is very likely to lead to configuration errors and security holes, please define either an ACL file or declare users directly in your redis.conf, but not both.".into());
        }
        if let Some(p) = requirepass {
            self.set_requirepass(table, p);
        }
        let mut seen = Vec::new();
        for line in user_lines {
            let (name, rules) = file::parse_line(&format!("user {line}"), table, all_channels)?;
            if seen.contains(&name) {
                return Err(format!("Duplicate user '{name}' found"));
            }
            seen.push(name.clone());
            self.install(&name, rules);
        }
        *self.file.lock().unwrap_or_else(|e| e.into_inner()) = aclfile.clone();
        if aclfile.is_some() {
            self.load(table, all_channels)?;
        }
        Ok(())
    }

    /// Stores `rules` as user `name`'s (creating it), keeping the default
    /// user's identity.
    fn install(&self, name: &str, rules: Rules) -> Arc<User> {
        let mut users = self.users();
        let user = match users.get(name) {
            Some(u) => {
                u.replace(rules);
                u.clone()
            }
            None => {
                let u = User::new(name, rules);
                users.insert(name.to_string(), u.clone());
                u
            }
        };
        drop(users);
        self.refresh();
        user
    }

    fn refresh(&self) {
        let d = self.default.rules();
        self.auth_required
            .store(!d.nopass || !d.enabled, Ordering::Relaxed);
    }

    /// Whether clients must authenticate (the default user has a password
    /// or is off).
    #[inline]
    pub fn auth_required(&self) -> bool {
        self.auth_required.load(Ordering::Relaxed)
    }

    pub fn default_user(&self) -> Arc<User> {
        self.default.clone()
    }

    pub fn user(&self, name: &[u8]) -> Option<Arc<User>> {
        self.users().get(&*String::from_utf8_lossy(name)).cloned()
    }

    /// The user `name` if `password` logs in as it.
    pub fn authenticate(&self, name: &[u8], password: &[u8]) -> Option<Arc<User>> {
        self.user(name).filter(|u| u.rules().accepts(password))
    }

    /// `requirepass`: the default user's only password (`nopass` when
    /// empty).
    pub fn set_requirepass(&self, table: &dyn Commands, password: &[u8]) {
        let mut rules = self.default.rules().clone();
        let _ = rules.apply(table, b"resetpass", false);
        let mut op = b">".to_vec();
        op.extend_from_slice(password);
        let _ = rules.apply(
            table,
            if password.is_empty() { b"nopass" } else { &op },
            false,
        );
        self.install("default", rules);
    }

    /// `ACL SETUSER name ops...`: creates or changes a user, all rules or
    /// none. The error is the reply's text.
    pub fn set_user(
        &self,
        table: &dyn Commands,
        name: &[u8],
        args: &[&[u8]],
        all_channels: bool,
    ) -> Result<Arc<User>, String> {
        check_name(name)?;
        let ops = user::merge_selectors(args).map_err(|e| format!("ERR {e}"))?;
        let current = self.user(name).map(|u| u.rules().clone());
        let start = current.unwrap_or_else(|| Rules::new(table, all_channels));
        let rules = user::applied(&start, table, &ops, all_channels).map_err(|e| {
            format!(
                "ERR Error in ACL SETUSER modifier '{}': {}",
                e.rule, e.reason
            )
        })?;
        Ok(self.install(&String::from_utf8_lossy(name), rules))
    }

    /// Deletes users (never `default`); the names deleted.
    pub fn delete(&self, names: &[&[u8]]) -> Result<Vec<String>, String> {
        if names.iter().any(|n| *n == b"default") {
            return Err("ERR The 'default' user cannot be removed".into());
        }
        let mut users = self.users();
        Ok(names
            .iter()
            .map(|n| String::from_utf8_lossy(n).into_owned())
            .filter(|n| users.remove(n).is_some())
            .collect())
    }

    /// Every user with its description, by name.
    pub fn list(&self) -> Vec<(String, String)> {
        self.users()
            .iter()
            .map(|(n, u)| (n.clone(), u.rules().describe()))
            .collect()
    }

    pub fn aclfile(&self) -> Option<PathBuf> {
        self.file.lock().unwrap_or_else(|e| e.into_inner()).clone()
    }

    /// `ACL LOAD`: replaces every user with the file's (the default user's
    /// rules in place). Returns the users replaced, whose clients must go.
    pub fn load(&self, table: &dyn Commands, all_channels: bool) -> Result<Vec<String>, String> {
        let path = self.aclfile().ok_or(NO_ACLFILE)?;
        let text = std::fs::read_to_string(&path)
            .map_err(|e| format!("Error loading ACLs, opening file '{}': {e}", path.display()))?;
        let loaded = file::parse(&text, &path.display().to_string(), table, all_channels)?;
        let mut users = self.users();
        let gone: Vec<String> = users.keys().filter(|n| *n != "default").cloned().collect();
        users.retain(|n, _| n == "default");
        for (name, rules) in loaded {
            if name == "default" {
                self.default.replace(rules);
            } else {
                users.insert(name.clone(), User::new(&name, rules));
            }
        }
        drop(users);
        self.refresh();
        Ok(gone)
    }

    /// `ACL SAVE`: writes every user to the ACL file, atomically.
    pub fn save(&self) -> Result<(), String> {
        let path = self.aclfile().ok_or(NO_ACLFILE)?;
        file::write_atomically(&path, &file::render(&self.list()))
            .map_err(|e| format!("There was an error trying to save the ACLs. Please check the server logs for more information ({e})"))
    }
}

const NO_ACLFILE: &str = "This Redis instance is not configured to use an ACL file. You may want to specify users via the ACL SETUSER command and then issue a CONFIG REWRITE (assuming you have a Redis configuration file set) in order to store users in the Redis configuration.";
