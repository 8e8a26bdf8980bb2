//! Redis's `DUMP`/`RESTORE` serialization format, so values move between
//! Redis 7.0 and Persimmon: [`dump`] writes a payload Redis 7.0's `RESTORE`
//! accepts, [`restore`] reads the payloads Redis 7.0's `DUMP` writes (and the
//! older encodings it still accepts) for strings, hashes, sorted sets,
//! lists, sets and streams (`stream.rs`).
//!
//! A payload is `type byte, object, RDB version (u16 LE), CRC64 (u64 LE)`,
//! the checksum taken over everything before it. [`dump`] writes a string as
//! type 0 (integers in Redis's integer encodings, nothing compressed), a hash
//! as type 4 (plain pairs), a sorted set as type 5 (binary doubles), a list
//! as type 18 (quicklist 2: listpack nodes of up to [`LIST_NODE_BYTES`], as
//! Redis 7.0 writes lists), a set as type 2 (plain members), a stream as
//! type 19 (listpack nodes of 100 entries, `stream.rs`), RDB version 10
//! (Redis 7.0's). [`restore`] also reads lists as types 1, 10 and 14 and
//! sets as types 11 (intset) and 20 (listpack, Redis 7.2's; only under an
//! RDB version Redis 7.0 reads), streams as types 15 (Redis 5 to 6.2's) and
//! 19.
//!
//! Rooms: `primitives` reads the RDB primitives (lengths, strings,
//! doubles) off the untrusted bytes and writes them; `lzf` undoes LZF
//! compression; `packed` reads the
//! ziplist, listpack, zipmap and intset blobs older and smaller objects are
//! stored in, and writes listpacks; `crc64` is Redis's checksum.
//!
//! Invariants: [`restore`] never panics and never allocates from a length
//! read from the payload before checking it against the bytes that remain
//! (LZF output, which can legitimately outgrow its input, is bounded by
//! LZF's own maximum ratio). A payload is accepted only if it parses
//! exactly: every byte between the type and the footer is consumed, hash
//! fields and set and sorted set members are unique, scores are never NaN,
//! and no collection is empty. Every refusal carries the text
//! Redis replies (`ERR DUMP payload version or checksum are wrong`,
//! `ERR Bad data format`), or says which type Persimmon does not store.

mod crc64;
pub mod file;
mod lzf;
mod packed;
pub mod payload;
mod primitives;
pub mod stream;
#[cfg(test)]
mod tests;
pub mod value;

pub use payload::{dump, restore, LIST_NODE_BYTES, RDB_VERSION};
pub use value::{RdbError, RdbValue};
