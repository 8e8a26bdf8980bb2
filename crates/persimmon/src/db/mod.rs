//! The `Db`: a key-value store on one pool file, and the `Engine` behind it.
//!
//! This module states the write protocol and the invariants its rooms keep
//! together, and re-exports the public types. The public type and the
//! engine's state have rooms of their own:
//! - `handle`: the `Db`, which hands each call to the engine;
//! - `engine`: the engine's state, and what every room needs of it (the key
//!   hash, this thread's lane, the key and value checks);
//!
//! and so does each protocol, as an `impl Engine` block:
//! - `open`: opening a pool and starting the background work after open;
//! - `read`: point reads (lock-free, or under the bucket lock while a DRAM
//!   index is rebuilt) and record decoding;
//! - `read_many`: batched point reads (`get_many`), their misses overlapped;
//! - `write`: put, delete, update, the bucket-locked lookup and publishing;
//! - `space`: live-byte and key accounting, freeing dead segments;
//! - `split`: index segment splits;
//! - `rebuild`: the tally, the DRAM index rebuild and the ordered walk after
//!   open;
//! - `cleaner`: the log cleaner; `check`: `Db::check`; `stats`: `Db::stats`;
//!   `iter`: `Db::iter`; `range`: ordered reads;
//! - `batch`: atomic write batches (and the commit of a transaction);
//!   `txn`: optimistic transactions; `expiry`: key deadlines and the
//!   background expiry (`deadlines`: their heap and clock);
//! - `placement`: where the point index lives (PM or DRAM), as a type;
//!   `tiered`: where a value lives (in its record, or on the SSD tier);
//!   `patch`: range writes (patches on PM for tiered values);
//!   `tier_clean`: the tier's background merge and data-file cleaning
//!   (`merge_queue`: what waits for it).
//!
//! Write path of a `put` (every persist point in order; see docs/design.md):
//! 1. take the home bucket's volatile lock (DRAM) with this put's sequence
//!    number; remember the last holder seen while waiting;
//! 2. if the key's slot now names a record carrying that holder's number,
//!    the two puts overlapped: this one is ordered first and returns
//!    (concurrent write elimination) — nothing written;
//! 3. for a new key, claim an empty slot by CAS to a delete marker (absent
//!    to readers);
//! 4. append the record to the lane's segment, flush, **fence** — the record
//!    is durable, no slot names it yet;
//! 5. store `<fp, offset, persist=0>` in the slot, flush, **fence** — the put
//!    is durable; a crash from here on keeps it;
//! 6. store `<fp, offset, persist=1>` (not flushed: readers that see 0 flush
//!    the slot themselves before using it), unlock, return.
//!
//! A delete stores a delete marker, flushes, **fences** (durable: absent),
//! then stores 0. With the point index in DRAM, steps 5–6 and the delete
//! write the key's ordered-index node's record word instead of the slot, and
//! the DRAM slot is stored afterwards (see `placement`).
//!
//! Invariants:
//! - A reader (`get`) takes no lock and writes nothing to PM unless it meets
//!   a slot with persist=0, which it flushes, fences and marks persisted
//!   before using: no reader returns data (or an absence) that a crash could
//!   undo.
//! - Records are reclaimed segment by segment: a sealed segment whose live
//!   bytes reach 0 is freed through an epoch, after every reader that might
//!   hold an offset into it has moved on.
//! - Live bytes and the key count are exact once the background tally after
//!   open has finished; until then a writer applies its own accounting only
//!   to buckets the tally has already passed (the tally holds the bucket's
//!   locks while it passes).
//! - Internal lock holders (split, tally, check, ordered walk, locked reads,
//!   cleaner) carry sequence numbers of lane 255, which no record carries,
//!   so no put is ever eliminated against them.

mod batch;
mod check;
mod cleaner;
mod deadlines;
mod engine;
mod expiry;
mod handle;
mod iter;
mod merge_queue;
mod open;
mod patch;
mod placement;
mod range;
mod read;
mod read_many;
mod rebuild;
mod space;
mod split;
mod stats;
#[cfg(test)]
mod tests;
mod tier_clean;
mod tiered;
mod txn;
mod write;

pub use batch::Version;
pub use batch::{WriteBatch, MAX_BATCH_BYTES, MAX_BATCH_OPS};
pub use check::CheckReport;
pub use expiry::{Ttl, MAX_DEADLINE_MS};
pub use handle::Db;
pub use iter::Iter;
pub use range::{prefix_end, Range, RangeKeys};
pub use stats::{StatValue, Stats};
pub use txn::{Transaction, Versioned, DEFAULT_TRANSACTION_ATTEMPTS};
pub use write::Update;
