//! Redis's data model over a Persimmon pool, with no network: the middle
//! layer of Persimmon's server, and a library a Rust program can call
//! in-process.
//!
//! ```text
//!   persimmon-server   listener, connections, command table, handlers, replication
//!      |          \
//!      v           v
//!   persimmon-types   persimmon-resp
//!      |   ^ this crate: keys, values, databases, atomic units
//!      v
//!   persimmon          the engine
//! ```
//!
//! ```
//! use persimmon_types::list::End;
//! use persimmon_types::{hash, list, Keyspace, Store};
//!
//! # let dir = tempfile::tempdir().unwrap();
//! # let path = dir.path().join("app.pool");
//! let mut st = Store::new(Keyspace::open(&path, persimmon::Options::default())?);
//! hash::set(&mut st, b"user:1", &[(b"name", b"Ada")])?;      // durable on return
//! list::push(&mut st, b"jobs", End::Tail, &[b"build", b"test"])?;
//! assert_eq!(hash::get(&mut st, b"user:1", b"name")?.as_deref(), Some(&b"Ada"[..]));
//! assert_eq!(list::pop(&mut st, b"jobs", End::Head, 1)?, Some(vec![b"build".to_vec()]));
//! # Ok::<(), persimmon_types::Error>(())
//! ```
//!
//! The data types, each a room with its rules and its calls: [`string`],
//! [`hash`] (get, set, delete, len, scan), [`list`] (push, pop, range,
//! move), [`set`] (add, remove, members, contains), [`zset`] (add, range,
//! rank, score, pop), [`stream`] (entries, groups, consumers). The server's commands are built on the same calls.
//!
//! Rooms underneath:
//! - [`keyspace`]: one pool as Redis's numbered databases ([`dbs`]: each a
//!   namespace of engine keys) and what every store on it shares.
//! - [`store`]: a client's view — its selected database, reads and writes
//!   of Redis keys, and *atomic units* (an overlay committed as one engine
//!   batch); [`error`]: the error every call returns, in Redis's words.
//! - [`value`]: how a Redis value is one engine value (a type tag and a
//!   body); [`coll`]: collections of any size (a meta record and a counted
//!   B+ tree of pages), their background reclaim and structural check.
//! - [`rdb`]: Redis's serialization (`DUMP`/`RESTORE` payloads, RDB
//!   files); [`transfer`]: a key's value read out or written whole in it.
//! - [`index`]: Redis's index arithmetic (negative from the end, ranges
//!   clamped); [`random`]: the random picks of SPOP, SRANDMEMBER, tree ids.
//!
//! What a unit guarantees. Every call of a [`Store`] outside a unit is one
//! engine call; every change of a collection, and every unit a caller runs
//! with [`Store::atomic`], is one engine batch. Either way it is
//! - *atomic*: no other store sees part of it, and it is serializable
//!   (a unit commits only if every key it read still has the version it
//!   read; otherwise nothing is written and it runs again);
//! - *crash-atomic*: after a crash at any instant, all of it or none of it
//!   is in the pool;
//! - *durable on return*: when the call returns `Ok`, it survives a crash
//!   of the process (and, on a DAX pool, a power failure).
//!
//! Who else uses it: the crash harness (`crashtest`) and anything that
//! wants Redis's types in-process over the same pool a server serves
//! (one process at a time: the engine refuses a second open of a pool).

#![forbid(unsafe_code)]

pub mod coll;
pub mod dbs;
pub mod error;
pub mod hash;
pub mod index;
pub mod keyspace;
pub mod list;
pub mod random;
pub mod rdb;
pub mod set;
pub mod store;
pub mod stream;
pub mod string;
pub mod transfer;
mod turns;
pub mod value;
pub mod zset;

pub use error::Error;
pub use keyspace::{Keyspace, Waiters};
pub use store::Store;
pub use value::{Kind, MAX_STRING_BYTES};
