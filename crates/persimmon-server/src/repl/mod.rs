//! Replication, Redis's protocol: a master propagates every write to a
//! stream its replicas follow (`stream`, `backlog`), serves `PSYNC`/`SYNC`
//! with a snapshot in RDB form or from the backlog (`feed`, `snapshot`);
//! a replica follows a master — Persimmon or redis-server — through a link
//! task (`link`) that loads the master's RDB (`load`) and applies its
//! stream as the master client. `WAIT` counts the replicas whose
//! acknowledged offset reached a client's last write (`wait`).
//!
//! The one ordering rule: every command that may write (and EXEC, and a
//! blocked client's own re-check) runs holding the stream's lock
//! (`state::Replication::turn`) from before its engine call until its
//! propagation is appended, whenever a backlog exists. So the stream holds
//! the writes in the order they took effect, and a snapshot taken holding
//! the same lock is exactly the data at its offset (writers wait while it
//! is taken; reads go on). While no backlog exists (no replica ever
//! attached, and this server never was a replica) writes take no lock and
//! append nothing: one atomic load per write.
//!
//! Invariants:
//! - The stream's offset names the same data on a master and each of its
//!   replicas: a replica relays its master's bytes verbatim into its own
//!   stream after applying them, so its offset is the master's, and its
//!   own replicas can chain or, after a promotion, continue (psync2).
//! - A replica acknowledges an offset only after every write up to it
//!   returned from the engine (durable).
//! - Role changes (`REPLICAOF`) bump the link's epoch; a link task whose
//!   epoch is no longer current stops at its next step and changes nothing
//!   after that (it checks the epoch under the state lock before loading
//!   or applying).

pub mod backlog;
pub mod client;
pub mod expiry;
pub mod feed;
pub mod info;
pub mod link;
pub mod load;
pub mod role;
pub mod snapshot;
pub mod state;
pub mod stream;
pub mod upkeep;
pub mod wait;
