//! A user: its name, whether it may log in (`on`/`off`), its passwords
//! (SHA-256 hashes, never the passwords themselves), and its selectors.
//! `ACL SETUSER`'s rules are parsed and applied here.
//!
//! Invariants:
//! - A user's rules change as a whole: `ACL SETUSER` applies its rules to
//!   a copy and stores the copy only when every rule was valid, so a
//!   failed SETUSER changes nothing.
//! - `unrestricted` is true exactly when the root selector allows every
//!   command, key and channel; the permission check then does nothing more
//!   (one atomic load per command for the default user).
//! - Passwords are kept as lowercase hex SHA-256, each at most once, in
//!   the order they were added.

use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, RwLock, RwLockReadGuard};

use sha2::{Digest, Sha256};

use crate::acl::commands::Commands;
use crate::acl::selector::{RuleError, Selector, SYNTAX};

/// A user's rules: everything `ACL SETUSER` sets.
#[derive(Clone, Debug)]
pub struct Rules {
    pub enabled: bool,
    pub nopass: bool,
    pub passwords: Vec<String>,
    pub root: Selector,
    pub selectors: Vec<Selector>,
}

/// A user the clients authenticate as; shared by its clients, so a change
/// of its rules applies to their next command.
pub struct User {
    pub name: String,
    rules: RwLock<Rules>,
    unrestricted: AtomicBool,
}

/// A refused rule: the rule as given and why.
#[derive(Debug)]
pub struct BadRule {
    pub rule: String,
    pub reason: String,
}

impl User {
    pub fn new(name: &str, rules: Rules) -> Arc<User> {
        let unrestricted = AtomicBool::new(rules.root.unrestricted());
        Arc::new(User {
            name: name.to_string(),
            rules: RwLock::new(rules),
            unrestricted,
        })
    }

    /// Whether every command, key and channel is allowed (no further check).
    #[inline]
    pub fn unrestricted(&self) -> bool {
        self.unrestricted.load(Ordering::Relaxed)
    }

    pub fn rules(&self) -> RwLockReadGuard<'_, Rules> {
        self.rules.read().unwrap_or_else(|e| e.into_inner())
    }

    pub fn replace(&self, rules: Rules) {
        let mut held = self.rules.write().unwrap_or_else(|e| e.into_inner());
        self.unrestricted
            .store(rules.root.unrestricted(), Ordering::Relaxed);
        *held = rules;
    }
}

/// The hex SHA-256 of a password, as stored.
pub fn hash(password: &[u8]) -> String {
    let digest = Sha256::digest(password);
    digest.iter().map(|b| format!("{b:02x}")).collect()
}

/// Compares two hashes without stopping at the first difference.
fn same_hash(a: &str, b: &str) -> bool {
    a.len() == b.len() && a.bytes().zip(b.bytes()).fold(0u8, |d, (x, y)| d | (x ^ y)) == 0
}

const BAD_HASH: &str =
    "The password hash must be exactly 64 characters and contain only lowercase hexadecimal characters";
const NO_SUCH_PASSWORD: &str = "The password you are trying to remove from the user does not exist";

fn checked_hash(text: &[u8]) -> Result<String, RuleError> {
    if text.len() != 64
        || !text
            .iter()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(b))
    {
        return Err(BAD_HASH);
    }
    Ok(String::from_utf8_lossy(text).into_owned())
}

impl Rules {
    /// A new user's rules: off, no password, nothing allowed.
    pub fn new(table: &dyn Commands, all_channels: bool) -> Rules {
        Rules {
            enabled: false,
            nopass: false,
            passwords: Vec::new(),
            root: Selector::new(table, all_channels),
            selectors: Vec::new(),
        }
    }

    /// The default user's rules when nothing configures it: `on nopass ~* &*
    /// +@all`.
    pub fn everything(table: &dyn Commands) -> Rules {
        let mut rules = Rules::new(table, true);
        for op in ["on", "nopass", "~*", "&*", "+@all"] {
            rules
                .apply(table, op.as_bytes(), true)
                .expect("valid rules");
        }
        rules
    }

    /// Whether `password` logs in as this user (enabled, and nopass or one
    /// of its passwords).
    pub fn accepts(&self, password: &[u8]) -> bool {
        if !self.enabled {
            return false;
        }
        let given = hash(password);
        let matched = self
            .passwords
            .iter()
            .fold(false, |m, p| m | same_hash(p, &given));
        self.nopass || matched
    }

    /// Applies one rule (a selector `(...)` included); `all_channels` is
    /// `acl-pubsub-default` for `reset` and new selectors.
    pub fn apply(
        &mut self,
        table: &dyn Commands,
        op: &[u8],
        all_channels: bool,
    ) -> Result<(), RuleError> {
        if op.first() == Some(&b'(') && op.last() == Some(&b')') && op.len() >= 2 {
            let mut selector = Selector::new(table, all_channels);
            for word in op[1..op.len() - 1]
                .split(|&b| b == b' ')
                .filter(|w| !w.is_empty())
            {
                selector.apply(table, word)?;
            }
            self.selectors.push(selector);
            return Ok(());
        }
        match &op.to_ascii_lowercase()[..] {
            b"on" => self.enabled = true,
            b"off" => self.enabled = false,
            b"nopass" => {
                self.nopass = true;
                self.passwords.clear();
            }
            b"resetpass" => {
                self.nopass = false;
                self.passwords.clear();
            }
            b"clearselectors" => self.selectors.clear(),
            b"reset" => {
                *self = Rules::new(table, all_channels);
            }
            b"skip-sanitize-payload" | b"sanitize-payload" => {}
            _ => return self.apply_password_or_selector(table, op),
        }
        Ok(())
    }

    fn apply_password_or_selector(
        &mut self,
        table: &dyn Commands,
        op: &[u8],
    ) -> Result<(), RuleError> {
        match op.first() {
            Some(b'>') => self.add_password(hash(&op[1..])),
            Some(b'#') => self.add_password(checked_hash(&op[1..])?),
            Some(b'<') => self.remove_password(&hash(&op[1..]))?,
            Some(b'!') => self.remove_password(&checked_hash(&op[1..])?)?,
            Some(b'(') | Some(b')') => return Err(SYNTAX),
            _ => self.root.apply(table, op)?,
        }
        Ok(())
    }

    fn add_password(&mut self, hash: String) {
        self.nopass = false;
        if !self.passwords.contains(&hash) {
            self.passwords.push(hash);
        }
    }

    fn remove_password(&mut self, hash: &str) -> Result<(), RuleError> {
        let before = self.passwords.len();
        self.passwords.retain(|p| p != hash);
        if self.passwords.len() == before {
            return Err(NO_SUCH_PASSWORD);
        }
        Ok(())
    }

    /// The user as `ACL LIST` shows it, without `user name`: flags,
    /// password hashes, root selector, added selectors in parentheses.
    pub fn describe(&self) -> String {
        let mut parts = vec![if self.enabled { "on" } else { "off" }.to_string()];
        if self.nopass {
            parts.push("nopass".into());
        }
        parts.extend(self.passwords.iter().map(|p| format!("#{p}")));
        parts.push(self.root.describe());
        parts.extend(self.selectors.iter().map(|s| format!("({})", s.describe())));
        parts.join(" ")
    }

    /// `ACL GETUSER`'s flags.
    pub fn flags(&self) -> Vec<&'static str> {
        let mut flags = vec![if self.enabled { "on" } else { "off" }];
        if self.nopass {
            flags.push("nopass");
        }
        flags
    }
}

/// `ACL SETUSER`'s arguments as rules: a selector given over several
/// arguments (`(~key` `+get)`) is joined with spaces.
pub fn merge_selectors(args: &[&[u8]]) -> Result<Vec<Vec<u8>>, String> {
    let mut out = Vec::new();
    let mut open: Option<Vec<u8>> = None;
    for &arg in args {
        match open.as_mut() {
            Some(sel) => {
                sel.push(b' ');
                sel.extend_from_slice(arg);
                if arg.last() == Some(&b')') {
                    out.push(open.take().unwrap_or_default());
                }
            }
            None if arg.first() == Some(&b'(') && arg.last() != Some(&b')') => {
                open = Some(arg.to_vec());
            }
            None => out.push(arg.to_vec()),
        }
    }
    if let Some(sel) = open {
        return Err(format!(
            "Unmatched parenthesis in acl selector starting at '{}'.",
            String::from_utf8_lossy(&sel)
        ));
    }
    Ok(out)
}

/// Applies `ops` in order to a copy of `rules`; the copy, or the first
/// refused rule.
pub fn applied(
    rules: &Rules,
    table: &dyn Commands,
    ops: &[Vec<u8>],
    all_channels: bool,
) -> Result<Rules, BadRule> {
    let mut copy = rules.clone();
    for op in ops {
        copy.apply(table, op, all_channels)
            .map_err(|reason| BadRule {
                rule: String::from_utf8_lossy(op).into_owned(),
                reason: reason.to_string(),
            })?;
    }
    Ok(copy)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashes_are_hex_sha256() {
        assert_eq!(
            hash(b"passwd4"),
            "34344e4d60c2b6d639b7bd22e18f2b0b91bc34bf0ac5f9952744435093cfb4e6"
        );
    }

    #[test]
    fn selectors_over_several_arguments_are_joined() {
        let args: Vec<&[u8]> = vec![b"on", b"(~a", b"+get", b")", b"(~b +set)"];
        let merged = merge_selectors(&args).unwrap();
        assert_eq!(
            merged,
            vec![
                b"on".to_vec(),
                b"(~a +get )".to_vec(),
                b"(~b +set)".to_vec()
            ]
        );
        assert!(merge_selectors(&[b"(~a"]).is_err());
    }
}
