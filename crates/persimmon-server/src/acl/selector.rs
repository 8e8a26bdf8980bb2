//! One selector: which commands, keys and channels it allows. A user has a
//! root selector and any number of added ones (`(...)`); a request is
//! allowed when one selector allows all of it (command, keys, channels).
//!
//! Invariants:
//! - `allowed` has one flag per command table row (commands and
//!   subcommands); `+cmd` sets a container and all its subcommands,
//!   `+cmd|sub` one subcommand, `+cmd|arg` (a command without
//!   subcommands) allows that first argument only (`first_args`).
//! - `rules` is the command rules as they read back (`ACL GETUSER`'s
//!   `commands`): it starts with `+@all` or `-@all` (a new selector:
//!   `-@all`), each later rule for a command replaces the earlier ones for
//!   it and its subcommands, and a rule that changes nothing is dropped.
//! - `all_keys` / `all_channels` are the `~*` / `&*` flags; then the
//!   pattern list is empty. A key pattern has R, W or both (`%R~`, `%W~`,
//!   `~`); the same pattern given again merges its permissions.

use crate::acl::categories;
use crate::acl::commands::Commands;
use crate::glob;

/// What a key of a request needs from a key pattern.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Need {
    Read,
    Write,
    ReadWrite,
    /// Either read or write (existence and size checks: EXISTS, TYPE).
    Either,
}

#[derive(Clone, Debug)]
pub struct KeyPattern {
    pub pattern: Vec<u8>,
    pub read: bool,
    pub write: bool,
}

impl KeyPattern {
    fn grants(&self, need: Need) -> bool {
        match need {
            Need::Read => self.read,
            Need::Write => self.write,
            Need::ReadWrite => self.read && self.write,
            Need::Either => self.read || self.write,
        }
    }
}

#[derive(Clone, Debug)]
pub struct Selector {
    allowed: Vec<bool>,
    first_args: FirstArgs,
    rules: Vec<String>,
    pub all_keys: bool,
    pub keys: Vec<KeyPattern>,
    pub all_channels: bool,
    pub channels: Vec<Vec<u8>>,
}

/// Per row, the first arguments `+cmd|arg` allows.
type FirstArgs = Vec<(usize, Vec<Vec<u8>>)>;

/// Why a rule was refused (the `ACL SETUSER` error's text).
pub type RuleError = &'static str;

pub const SYNTAX: RuleError = "Syntax error";
pub const UNKNOWN: RuleError = "Unknown command or category name in ACL";
const KEYS_AFTER_ALL: RuleError = "Adding a pattern after the * pattern (or the 'allkeys' flag) \
is not valid and does not have any effect. Try 'resetkeys' to start with an empty list of patterns";
const CHANNELS_AFTER_ALL: RuleError = "Adding a pattern after the * pattern (or the \
'allchannels' flag) is not valid and does not have any effect. Try 'resetchannels' to start with \
an empty list of channels";
const SUBCOMMAND_ARG: RuleError = "Allowing first-arg of a subcommand is not supported";

impl Selector {
    /// A selector that allows nothing (`-@all resetkeys`); its channels are
    /// all or none as `acl-pubsub-default` says.
    pub fn new(table: &dyn Commands, all_channels: bool) -> Selector {
        Selector {
            allowed: vec![false; table.len()],
            first_args: Vec::new(),
            rules: vec!["-@all".into()],
            all_keys: false,
            keys: Vec::new(),
            all_channels,
            channels: Vec::new(),
        }
    }

    /// Whether the selector allows every command, key and channel (the
    /// check's fast path).
    pub fn unrestricted(&self) -> bool {
        self.all_keys && self.all_channels && self.allowed.iter().all(|&a| a)
    }

    /// Applies one selector rule (`+get`, `~key*`, `&chan`, `allkeys`...).
    pub fn apply(&mut self, table: &dyn Commands, op: &[u8]) -> Result<(), RuleError> {
        let lower = op.to_ascii_lowercase();
        match &lower[..] {
            b"allkeys" | b"~*" => self.set_all_keys(),
            b"resetkeys" => {
                self.all_keys = false;
                self.keys.clear();
            }
            b"allchannels" | b"&*" => self.set_all_channels(),
            b"resetchannels" => {
                self.all_channels = false;
                self.channels.clear();
            }
            b"allcommands" => self.set_all_commands(true),
            b"nocommands" => self.set_all_commands(false),
            _ => return self.apply_pattern_or_command(table, op),
        }
        Ok(())
    }

    fn apply_pattern_or_command(
        &mut self,
        table: &dyn Commands,
        op: &[u8],
    ) -> Result<(), RuleError> {
        match op.first() {
            Some(b'~') => self.add_key(&op[1..], true, true),
            Some(b'%') => self.add_flagged_key(&op[1..]),
            Some(b'&') => self.add_channel(&op[1..]),
            Some(&sign @ (b'+' | b'-')) => self.apply_command(table, sign == b'+', &op[1..]),
            _ => Err(SYNTAX),
        }
    }

    fn set_all_keys(&mut self) {
        self.all_keys = true;
        self.keys.clear();
    }

    fn set_all_channels(&mut self) {
        self.all_channels = true;
        self.channels.clear();
    }

    fn set_all_commands(&mut self, on: bool) {
        self.allowed.fill(on);
        self.first_args.clear();
        self.rules = vec![if on { "+@all" } else { "-@all" }.into()];
    }

    /// `%R~pat`, `%W~pat`, `%RW~pat` (`op` without its `%`).
    fn add_flagged_key(&mut self, op: &[u8]) -> Result<(), RuleError> {
        let tilde = op.iter().position(|&b| b == b'~').ok_or(SYNTAX)?;
        let (mut read, mut write) = (false, false);
        for &b in &op[..tilde] {
            match b.to_ascii_uppercase() {
                b'R' => read = true,
                b'W' => write = true,
                _ => return Err(SYNTAX),
            }
        }
        if !read && !write {
            return Err(SYNTAX);
        }
        self.add_key(&op[tilde + 1..], read, write)
    }

    fn add_key(&mut self, pattern: &[u8], read: bool, write: bool) -> Result<(), RuleError> {
        if self.all_keys {
            return Err(KEYS_AFTER_ALL);
        }
        if pattern == b"*" && read && write {
            self.set_all_keys();
            return Ok(());
        }
        match self.keys.iter_mut().find(|k| k.pattern == pattern) {
            Some(k) => {
                k.read |= read;
                k.write |= write;
            }
            None => self.keys.push(KeyPattern {
                pattern: pattern.to_vec(),
                read,
                write,
            }),
        }
        Ok(())
    }

    fn add_channel(&mut self, pattern: &[u8]) -> Result<(), RuleError> {
        if self.all_channels {
            return Err(CHANNELS_AFTER_ALL);
        }
        if pattern == b"*" {
            self.set_all_channels();
        } else if !self.channels.iter().any(|c| c == pattern) {
            self.channels.push(pattern.to_vec());
        }
        Ok(())
    }

    /// `+name` / `-name` (`name` without its sign): a category, a command,
    /// a subcommand or a command's first argument.
    fn apply_command(
        &mut self,
        table: &dyn Commands,
        on: bool,
        name: &[u8],
    ) -> Result<(), RuleError> {
        let sign = if on { '+' } else { '-' };
        if let Some(category) = name.strip_prefix(b"@") {
            if category.eq_ignore_ascii_case(b"all") {
                self.set_all_commands(on);
                return Ok(());
            }
            let mask = categories::bit(category).ok_or(UNKNOWN)?;
            self.apply_category(table, on, mask);
            let rule = format!(
                "{sign}@{}",
                String::from_utf8_lossy(category).to_ascii_lowercase()
            );
            self.rules.retain(|r| r[1..] != rule[1..]);
            self.rules.push(rule);
            return Ok(());
        }
        let text = String::from_utf8_lossy(name).to_ascii_lowercase();
        let mut parts = text.split('|');
        let command = parts.next().unwrap_or_default();
        let second = parts.next();
        if parts.next().is_some() {
            return Err(
                if second
                    .is_some_and(|s| table.lookup(format!("{command}|{s}").as_bytes()).is_some())
                {
                    SUBCOMMAND_ARG
                } else {
                    UNKNOWN
                },
            );
        }
        let index = table
            .lookup(command.as_bytes())
            .filter(|&i| !table.is_subcommand(i))
            .ok_or(UNKNOWN)?;
        let before = (self.allowed.clone(), self.first_args.clone());
        match second {
            None => self.set_command(table, index, on),
            Some(sub) if table.is_container(index) => {
                let row = table
                    .lookup(format!("{command}|{sub}").as_bytes())
                    .ok_or(UNKNOWN)?;
                self.allowed[row] = on;
            }
            Some(arg) => {
                if sub_arg_rule(on)? {
                    self.add_first_arg(index, arg.as_bytes());
                }
            }
        }
        self.record(&text, sign, command, before);
        Ok(())
    }

    /// Keeps the rule `sign text` in `rules` unless it changed nothing;
    /// earlier rules for the same command (and, for a command, its
    /// subcommands) go.
    fn record(&mut self, text: &str, sign: char, command: &str, before: (Vec<bool>, FirstArgs)) {
        let changed = before.0 != self.allowed || before.1 != self.first_args;
        let whole = !text.contains('|');
        let prefix = format!("{command}|");
        let covered = |r: &String| {
            let name = &r[1..];
            name == text || (whole && name.starts_with(&prefix))
        };
        if changed || self.rules.iter().any(&covered) {
            self.rules.retain(|r| !covered(r));
            if changed {
                self.rules.push(format!("{sign}{text}"));
            }
        }
    }

    fn set_command(&mut self, table: &dyn Commands, index: usize, on: bool) {
        self.allowed[index] = on;
        for &sub in table.subcommands(index) {
            self.allowed[sub] = on;
        }
        self.first_args.retain(|(i, _)| *i != index);
    }

    fn add_first_arg(&mut self, index: usize, arg: &[u8]) {
        if self.allowed[index] {
            return;
        }
        match self.first_args.iter_mut().find(|(i, _)| *i == index) {
            Some((_, args)) if args.iter().any(|a| a == arg) => {}
            Some((_, args)) => args.push(arg.to_vec()),
            None => self.first_args.push((index, vec![arg.to_vec()])),
        }
    }

    fn apply_category(&mut self, table: &dyn Commands, on: bool, mask: u32) {
        for i in 0..table.len() {
            if categories::of_row(table, i) & mask != 0 {
                self.allowed[i] = on;
                if !table.is_subcommand(i) {
                    self.first_args.retain(|(r, _)| *r != i);
                }
            }
        }
    }

    /// Whether row `index` may run with these words (the name first).
    pub fn allows_command(&self, index: usize, words: &[&[u8]]) -> bool {
        if self.allowed[index] {
            return true;
        }
        let Some(arg) = words.get(1) else {
            return false;
        };
        self.first_args
            .iter()
            .find(|(i, _)| *i == index)
            .is_some_and(|(_, args)| args.iter().any(|a| a.eq_ignore_ascii_case(arg)))
    }

    pub fn allows_key(&self, key: &[u8], need: Need) -> bool {
        self.all_keys
            || self
                .keys
                .iter()
                .any(|k| k.grants(need) && glob::matches(&k.pattern, key))
    }

    /// Whether a channel (or, `pattern`, a PSUBSCRIBE pattern, which must
    /// be allowed literally) is allowed.
    pub fn allows_channel(&self, channel: &[u8], pattern: bool) -> bool {
        self.all_channels
            || self.channels.iter().any(|c| {
                if pattern {
                    c == channel
                } else {
                    glob::matches(c, channel)
                }
            })
    }

    /// Whether some key pattern reads every key (`SORT BY` and `GET`).
    pub fn reads_all_keys(&self) -> bool {
        self.all_keys || self.keys.iter().any(|k| k.read && k.pattern == b"*")
    }

    /// The command rules (`-@all +get`).
    pub fn command_rules(&self) -> String {
        self.rules.join(" ")
    }

    /// The key patterns (`~*`, `%R~foo ~bar`).
    pub fn key_rules(&self) -> String {
        if self.all_keys {
            return "~*".into();
        }
        let words: Vec<String> = self
            .keys
            .iter()
            .map(|k| {
                let flags = match (k.read, k.write) {
                    (true, true) => "",
                    (true, false) => "%R",
                    _ => "%W",
                };
                format!("{flags}~{}", String::from_utf8_lossy(&k.pattern))
            })
            .collect();
        words.join(" ")
    }

    /// The channel patterns as `ACL GETUSER` shows them (`&*`, `&a &b`,
    /// or empty).
    pub fn channel_rules(&self) -> String {
        if self.all_channels {
            return "&*".into();
        }
        let words: Vec<String> = self
            .channels
            .iter()
            .map(|c| format!("&{}", String::from_utf8_lossy(c)))
            .collect();
        words.join(" ")
    }

    /// The whole selector as `ACL LIST` writes it (`~* &* +@all`), which
    /// read back gives the same selector.
    pub fn describe(&self) -> String {
        let mut parts = Vec::new();
        let keys = self.key_rules();
        if !keys.is_empty() {
            parts.push(keys);
        }
        if self.all_channels {
            parts.push("&*".into());
        } else {
            parts.push("resetchannels".into());
            let channels = self.channel_rules();
            if !channels.is_empty() {
                parts.push(channels);
            }
        }
        parts.push(self.command_rules());
        parts.join(" ")
    }
}

/// `+cmd|arg` is allowed (first arguments can only be added); `-cmd|arg`
/// is refused as Redis refuses it.
fn sub_arg_rule(on: bool) -> Result<bool, RuleError> {
    if on {
        Ok(true)
    } else {
        Err(UNKNOWN)
    }
}
