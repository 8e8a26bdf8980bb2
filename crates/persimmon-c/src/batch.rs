//! `persimmon_batch`: puts and deletes gathered in C memory, applied to a
//! db atomically by `persimmon_write`.
//!
//! Invariants: a batch owns copies of its keys and values (the caller's
//! buffers may be reused as soon as each call returns); it belongs to no
//! db until written, can be written to several and stays intact after a
//! write (clear or free it).

use std::ffi::c_int;

use crate::call::guard;
use crate::db::Db;
use crate::raw;
use crate::status::Status;

/// A write batch (`persimmon_batch` in C).
pub struct Batch(engine::WriteBatch);

/// The header's promise that a batch may move between threads, held at
/// compile time.
const _: () = {
    const fn movable_across_threads<T: Send>() {}
    movable_across_threads::<Batch>();
};

/// Stores a new, empty batch in `*batch`. Free it with
/// `persimmon_batch_free`.
///
/// Thread safety: any thread. A batch is used by one thread at a time (it
/// may move between threads).
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_new(batch: *mut *mut Batch) -> c_int {
    guard(|| {
        raw::required(batch, "batch (the out-pointer)")?;
        let handle = raw::into_handle(Batch(engine::WriteBatch::new()));
        // SAFETY: non-NULL and writable (contract).
        unsafe { raw::set(batch, handle) };
        Ok(Status::PERSIMMON_OK)
    })
}

/// Adds a put of `value` under `key` (copied). A later operation on the
/// same key replaces an earlier one.
///
/// Thread safety: one thread at a time per batch.
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_put(
    batch: *mut Batch,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: batch NULL or live and unshared, key and value readable.
        unsafe {
            let batch = raw::handle_mut(batch, "batch")?;
            let (key, value) = (raw::key(key, key_len)?, raw::value(value, value_len)?);
            batch.0.put(key, value);
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Adds a put of `value` under `key` expiring at `deadline_ms` (ms of Unix
/// time; checked when the batch is written).
///
/// Thread safety: one thread at a time per batch.
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_put_with_deadline(
    batch: *mut Batch,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    deadline_ms: u64,
) -> c_int {
    guard(|| {
        // SAFETY: batch NULL or live and unshared, key and value readable.
        unsafe {
            let batch = raw::handle_mut(batch, "batch")?;
            let (key, value) = (raw::key(key, key_len)?, raw::value(value, value_len)?);
            batch.0.put_with_deadline(key, value, deadline_ms);
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Adds a delete of `key` (nothing happens to an absent key).
///
/// Thread safety: one thread at a time per batch.
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_delete(
    batch: *mut Batch,
    key: *const u8,
    key_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: batch NULL or live and unshared, key readable.
        unsafe {
            let batch = raw::handle_mut(batch, "batch")?;
            batch.0.delete(raw::key(key, key_len)?);
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Stores the number of operations in the batch in `*count`.
///
/// Thread safety: one thread at a time per batch.
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_len(batch: *const Batch, count: *mut usize) -> c_int {
    guard(|| {
        raw::required(count, "count")?;
        // SAFETY: batch NULL or live, count writable (contract).
        unsafe { raw::set(count, raw::handle(batch, "batch")?.0.len()) };
        Ok(Status::PERSIMMON_OK)
    })
}

/// Empties the batch for reuse.
///
/// Thread safety: one thread at a time per batch.
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_clear(batch: *mut Batch) -> c_int {
    guard(|| {
        // SAFETY: batch NULL or live and unshared (contract).
        unsafe { raw::handle_mut(batch, "batch")? }.0.clear();
        Ok(Status::PERSIMMON_OK)
    })
}

/// Frees the batch. `NULL` is a no-op returning `PERSIMMON_OK`.
///
/// Thread safety: not concurrently with any other use of this batch; it
/// must not be used afterwards.
#[no_mangle]
pub unsafe extern "C" fn persimmon_batch_free(batch: *mut Batch) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live batch, not used after this (contract).
        drop(unsafe { raw::take_handle(batch) });
        Ok(Status::PERSIMMON_OK)
    })
}

/// Applies every operation of `batch` to `db` atomically: after a crash at
/// any instant the pool shows all of them or none, and no reader sees part
/// of it. Durable when it returns `PERSIMMON_OK`; on any failure nothing
/// was written. At most `PERSIMMON_MAX_BATCH_OPS` operations and
/// `PERSIMMON_MAX_BATCH_BYTES` of keys and values
/// (`PERSIMMON_BATCH_TOO_LARGE`). The batch is left as it was.
///
/// Thread safety: any thread, concurrently with any call on `db` but close;
/// the batch must not be changed by another thread meanwhile (several
/// threads may write the same unchanged batch).
#[no_mangle]
pub unsafe extern "C" fn persimmon_write(db: *const Db, batch: *const Batch) -> c_int {
    guard(|| {
        // SAFETY: db and batch NULL or live; nobody changes the batch during
        // the call (contract).
        unsafe {
            let (db, batch) = (raw::handle(db, "db")?, raw::handle(batch, "batch")?);
            db.engine.write(&batch.0)?;
        }
        Ok(Status::PERSIMMON_OK)
    })
}
