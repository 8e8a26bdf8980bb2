//! Collections (hashes, sets, lists, sorted sets) of any size: a *meta
//! record* at the Redis key and, once the collection outgrows one page, a
//! counted B+ tree of page records (`tree.rs`, `page.rs`) outside every
//! database's key space.
//!
//! | engine key | record |
//! |---|---|
//! | the Redis key (in its database's namespace) | meta: `tag, format 1, flags, tree id: u64 LE, next page: u64 LE`, then, unless external, each tree's root page as `varint len, page` |
//! | `FF 80 00` + tree id (u64 BE) + page number (u64 BE) | one page of the tree |
//! | `FF 80 00` | the registry: a hash-kind collection (tree id 0) of every external tree, tree id (u64 BE) → its meta's engine key |
//!
//! Tags: `0x06` hash (one tree, field → value), `0x07` sorted set (two
//! trees: member → score as f64 LE, and sortable score + member → empty),
//! `0x08` list (one positional tree), `0x09` set (one tree, member →
//! empty), `0x0A` stream (four trees: entries, the stream's record and
//! groups, pending entries, consumers; see `stream/`). `FF 80 00` is a non-canonical namespace varint, so no database
//! key, walk or range ever reaches these records (`dbs::split`).
//!
//! A collection whose roots are leaves keeps them inside the meta record:
//! one record, like Redis's listpack encodings. Once a root becomes a node
//! the collection turns *external*: root `t` is page `t + 1`, every page is
//! its own record, and the registry names the tree. The registry is what
//! the reclaimer (`reclaim.rs`) walks to find trees whose meta is gone
//! (DEL, an overwrite, expiry, FLUSHDB) and delete their pages in the
//! background, so deleting a huge collection is O(1) to the client.
//!
//! Invariants:
//! - Every change runs inside one atomic unit of the `Store`, and every
//!   change rewrites the meta record, which the unit read with its version:
//!   two units changing one collection conflict, so each command is
//!   serializable and crash-atomic (one engine batch).
//! - A meta names a tree id no other meta names: a new collection, COPY and
//!   RESTORE draw a new random id; RENAME and MOVE carry the id and update
//!   the registry in the same unit.
//! - An external tree is in the registry from the unit that made it
//!   external until the reclaimer deleted its last page.
//! - An empty collection has no meta (its key is deleted, as in Redis);
//!   a stream is never empty in this sense (its record is in tree 1).

pub mod check;
pub mod collection;
pub mod page;
pub mod reclaim;
pub mod score;
pub mod tree;
pub mod whole;

pub use crate::value::Kind;
pub use collection::{
    check_element, moved, page_key, read_key, read_whole, registry_set, with, with_new,
    write_whole, zset_put, zset_remove, Coll, PREFIX,
};
pub use score::{decode_score, score_key, split_score_key};
