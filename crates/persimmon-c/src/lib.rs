//! The C library of Persimmon: `libpersimmon.so` / `libpersimmon.a` with the
//! header `include/persimmon.h` (generated from these doc comments by
//! cbindgen; `tests/header.rs` keeps it current).
//!
//! Rooms: `call` (every entry point's guard: status codes out, panics caught,
//! the thread's last error), `status` (the codes and the engine-error
//! mapping), `raw` (every raw-pointer conversion), `options`, `db` (open,
//! close), `point` (get, put, delete, update), `batch`, `iter`, `stats`
//! (stats, JSON, check), `limits`.
//!
//! Invariants:
//! - **No panic crosses into C**: every `extern "C"` function runs its body
//!   in `call::guard` (`catch_unwind`), which returns `PERSIMMON_INTERNAL`.
//! - **Pointers**: every pointer argument is NULL or valid for what its
//!   parameter documents (bytes for their length, a live handle, a
//!   writable out-slot). NULL where a value is needed, a length without
//!   bytes, or a key or value length over the engine's limit is refused
//!   with a status code before anything is read. Conversions happen only in
//!   `raw`, each with its `SAFETY` argument.
//! - **Handle ownership**: `persimmon_open`, `persimmon_batch_new` and the
//!   iterator constructors return a `Box` as a raw pointer; exactly one of
//!   `persimmon_close`, `persimmon_batch_free`, `persimmon_iter_free` takes
//!   it back. Using a handle after that is the caller's bug (undefined, as
//!   with `free`).
//! - **Lifetimes**: an iterator borrows its db's engine; the db handle
//!   counts its live iterators and `persimmon_close` refuses with
//!   `PERSIMMON_BUSY` until they are freed. Values lent to C (get callback,
//!   iterator pairs) are valid only for the documented span.
//! - **Threads**: a db handle is shared by any number of threads (the
//!   engine `Db` is `Send + Sync`), except that close excludes every other
//!   call on it; a batch or an iterator is used by one thread at a time.
//!   Callbacks (get, update) run on the calling thread and must not call
//!   into the same db.

// Each extern "C" function documents its pointer contract once in the
// header's preamble (cbindgen.toml) rather than in a per-function
// `# Safety` section.
#![allow(clippy::missing_safety_doc)]
#![deny(unsafe_op_in_unsafe_fn)]
#![deny(clippy::undocumented_unsafe_blocks)]

// The header follows this order: the API in the order a program meets it,
// then the error plumbing and the constants.
pub mod options;

pub mod db;

pub mod point;

pub mod batch;

pub mod iter;

pub mod stats;

pub mod call;

pub mod status;

pub mod limits;

mod raw;
