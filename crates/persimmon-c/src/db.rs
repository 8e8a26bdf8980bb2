//! `persimmon_db`: opening and closing a pool, and the figures of the
//! handle itself (key count, clock).
//!
//! Invariants: a `persimmon_db` owns one engine `Db` (one per pool file per
//! process: the engine's file lock refuses a second with
//! `PERSIMMON_LOCKED`); it counts the iterators borrowing it, and
//! `persimmon_close` frees it only when that count is 0 (else
//! `PERSIMMON_BUSY`, the handle untouched) — so no iterator ever outlives
//! the engine it reads.

use std::ffi::{c_char, c_int};
use std::sync::atomic::{AtomicUsize, Ordering};

use crate::call::{guard, Failure};
use crate::options::Options;
use crate::raw;
use crate::status::Status;

/// An open pool (`persimmon_db` in C).
pub struct Db {
    pub(crate) engine: engine::Db,
    /// Iterators made from this handle and not freed yet.
    live_iterators: AtomicUsize,
}

/// The header's promise that a db handle is shared by any threads, held at
/// compile time.
const _: () = {
    const fn shared_across_threads<T: Send + Sync>() {}
    shared_across_threads::<Db>();
};

impl Db {
    /// Counts an iterator that borrows this handle from now on.
    pub(crate) fn iterator_opened(&self) {
        self.live_iterators.fetch_add(1, Ordering::AcqRel);
    }

    /// Uncounts an iterator that no longer borrows this handle.
    pub(crate) fn iterator_closed(&self) {
        self.live_iterators.fetch_sub(1, Ordering::AcqRel);
    }
}

/// Opens the pool file at `path` (creating it when `options->create` and it
/// does not exist) and stores a new handle in `*db`.
///
/// `options` may be NULL for the defaults (see `persimmon_options_init`).
/// On failure `*db` is set to NULL. One handle per pool file per process:
/// a second open of the same file, or one held by another process, fails
/// with `PERSIMMON_LOCKED`. An existing file that is not a pool fails with
/// `PERSIMMON_NOT_A_POOL`; a missing one without `create`,
/// `PERSIMMON_POOL_NOT_FOUND`.
///
/// Thread safety: any thread. The handle it returns may be used from any
/// number of threads at once (see each function).
#[no_mangle]
pub unsafe extern "C" fn persimmon_open(
    path: *const c_char,
    options: *const Options,
    db: *mut *mut Db,
) -> c_int {
    guard(|| {
        raw::required(db, "db (the out-pointer)")?;
        // SAFETY: db is non-NULL and writable (header contract).
        unsafe { raw::set(db, std::ptr::null_mut()) };
        // SAFETY: path is NUL-terminated, options NULL or a valid struct
        // whose data_dir is NULL or NUL-terminated (header contract).
        let (path, options) = unsafe {
            let path = raw::path(path, "path")?;
            let options = match options.as_ref() {
                Some(o) => o.to_engine()?,
                None => engine::Options::default(),
            };
            (path, options)
        };
        let engine = engine::Db::open(&path, options)?;
        let handle = raw::into_handle(Db {
            engine,
            live_iterators: AtomicUsize::new(0),
        });
        // SAFETY: checked non-NULL and writable above.
        unsafe { raw::set(db, handle) };
        Ok(Status::PERSIMMON_OK)
    })
}

/// Closes the pool cleanly and frees the handle (the pool's next open is
/// then fast). `NULL` is a no-op that returns `PERSIMMON_OK`, like `free`.
///
/// Refuses with `PERSIMMON_BUSY`, changing nothing, while iterators made
/// from this handle are not freed: free them, then close again. Every write
/// was already durable when it returned; close adds no durability.
///
/// Thread safety: not concurrently with any other call on this handle (no
/// other thread may be using it); after `PERSIMMON_OK` the handle must not
/// be used again.
#[no_mangle]
pub unsafe extern "C" fn persimmon_close(db: *mut Db) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live handle that no other thread is using
        // (header contract for close).
        let Some(handle) = (unsafe { db.as_ref() }) else {
            return Ok(Status::PERSIMMON_OK);
        };
        let live = handle.live_iterators.load(Ordering::Acquire);
        if live > 0 {
            let message =
                format!("{live} iterator(s) on this db are not freed; free them, then close");
            return Err(Failure::new(Status::PERSIMMON_BUSY, message));
        }
        // SAFETY: a live handle from persimmon_open, no iterator borrows it,
        // and the caller does not use it after this call.
        drop(unsafe { raw::take_handle(db) });
        Ok(Status::PERSIMMON_OK)
    })
}

/// Stores the number of keys in `*count` (O(1); right after an open that
/// followed a crash it waits for the background recount).
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_len(db: *const Db, count: *mut u64) -> c_int {
    guard(|| {
        raw::required(count, "count")?;
        // SAFETY: db is NULL or a live handle, count writable (contract).
        unsafe {
            let db = raw::handle(db, "db")?;
            raw::set(count, db.engine.len());
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Stores in `*now_ms` the time deadlines are measured against, in
/// milliseconds of Unix time.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_now_ms(db: *const Db, now_ms: *mut u64) -> c_int {
    guard(|| {
        raw::required(now_ms, "now_ms")?;
        // SAFETY: db is NULL or a live handle, now_ms writable (contract).
        unsafe {
            let db = raw::handle(db, "db")?;
            raw::set(now_ms, db.engine.now_ms());
        }
        Ok(Status::PERSIMMON_OK)
    })
}
