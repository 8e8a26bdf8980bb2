//! The command handlers, one module per family of commands (`strings`,
//! `hashes`, `lists`, `sets`, `zsets`, `geo`, `streams`, `keys`, `expire`, `multi`,
//! `replication`, ...), and the table that names them all (`table`).
//!
//! A handler reads its arguments, runs its command against the session's
//! store (`persimmon_types`) and queues its reply; it imports `session` and
//! the rooms below it, never the table or the dispatch above it (EXEC's
//! handler, `multi`, calls the dispatch for its queued commands). Adding a
//! command is one row in `table.rs` and one handler in its family's module.

pub mod acl;
pub mod bitfield;
pub mod bits;
pub mod blocking;
pub mod cluster;
pub mod command;
pub mod config;
pub mod connection;
pub mod dump;
pub mod expire;
pub mod geo;
pub mod geohash;
pub mod hash_walk;
pub mod hashes;
pub mod hll;
pub mod info;
pub mod keyflags;
pub mod keys;
pub mod latency;
pub mod lcs;
pub mod lists;
pub mod memory;
pub mod migrate;
pub mod monitor;
pub mod multi;
pub mod object;
pub mod ordered;
pub mod pause;
pub mod pubsub;
pub mod randomkey;
pub mod rename;
pub mod replication;
pub mod scripting;
pub mod server;
pub mod sets;
pub mod slowlog;
pub mod sort;
pub mod stream_groups;
pub mod stream_read;
pub mod streams;
pub mod strings;
pub mod table;
pub mod zset_ops;
pub mod zset_range;
pub mod zsets;
