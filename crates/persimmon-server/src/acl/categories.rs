//! ACL categories (`@read`, `@write`, ...): Redis 7.0's list, and the
//! categories of each command row. One source of truth: a row's categories
//! are derived from its flags and group, plus any `@category` the row names
//! among its flags (for what flags and group cannot tell, such as
//! `@dangerous` for KEYS). `COMMAND INFO`, `COMMAND LIST FILTERBY ACLCAT`,
//! `ACL CAT` and the `+@category` rules all read [`of`].
//!
//! Invariants:
//! - Every row is `@fast` or `@slow`, never both (Redis's binary world).
//! - `@read` is not given to scripting rows (EVAL_RO needs `+eval_ro`), as
//!   in Redis.
//! - A group with a category of its own (`stream`, `geo`, ...) gives it to
//!   every row of the group: a new family needs no per-row work.

use crate::acl::commands::Commands;

/// Redis 7.0's categories, in `ACL CAT` order; a category's bit is its
/// index.
pub const NAMES: [&str; 21] = [
    "keyspace",
    "read",
    "write",
    "set",
    "sortedset",
    "list",
    "hash",
    "string",
    "bitmap",
    "hyperloglog",
    "geo",
    "stream",
    "pubsub",
    "admin",
    "fast",
    "slow",
    "blocking",
    "dangerous",
    "connection",
    "transaction",
    "scripting",
];

/// The bit of category `name` (without its `@`, any case).
pub fn bit(name: &[u8]) -> Option<u32> {
    NAMES
        .iter()
        .position(|n| n.as_bytes().eq_ignore_ascii_case(name))
        .map(|i| 1 << i)
}

fn named(name: &str) -> u32 {
    bit(name.as_bytes()).expect("a category of NAMES")
}

/// The category a command group gives its rows.
fn of_group(group: &str) -> Option<&'static str> {
    Some(match group {
        "string" => "string",
        "hash" => "hash",
        "sorted_set" | "sorted-set" => "sortedset",
        "list" => "list",
        "set" => "set",
        "generic" => "keyspace",
        "connection" => "connection",
        "transactions" => "transaction",
        "scripting" => "scripting",
        "geo" => "geo",
        "bitmap" => "bitmap",
        "hyperloglog" => "hyperloglog",
        "pubsub" => "pubsub",
        "stream" => "stream",
        _ => return None,
    })
}

/// Row `row`'s categories.
pub fn of_row(table: &dyn Commands, row: usize) -> u32 {
    of(table.flags(row), table.group(row))
}

/// The categories of a row with these flags and group, as a mask of
/// [`NAMES`] bits.
pub fn of(flags: &[&str], group: &str) -> u32 {
    let flag = |f: &str| flags.contains(&f);
    let mut mask = of_group(group).map_or(0, named);
    if flag("write") {
        mask |= named("write");
    }
    if flag("readonly") && mask & named("scripting") == 0 {
        mask |= named("read");
    }
    if flag("admin") {
        mask |= named("admin") | named("dangerous");
    }
    if flag("pubsub") {
        mask |= named("pubsub");
    }
    if flag("blocking") {
        mask |= named("blocking");
    }
    for extra in flags.iter().filter_map(|f| f.strip_prefix('@')) {
        mask |= bit(extra.as_bytes()).unwrap_or(0);
    }
    mask | named(if flag("fast") { "fast" } else { "slow" })
}

/// The `@name`s of a mask, in [`NAMES`] order.
pub fn names(mask: u32) -> impl Iterator<Item = &'static str> {
    NAMES
        .iter()
        .enumerate()
        .filter(move |(i, _)| mask & (1 << i) != 0)
        .map(|(_, n)| *n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn category_bits_round_trip() {
        assert_eq!(bit(b"READ"), Some(2));
        assert_eq!(bit(b"nope"), None);
        let mask = named("keyspace") | named("scripting");
        assert_eq!(names(mask).collect::<Vec<_>>(), ["keyspace", "scripting"]);
    }
}
