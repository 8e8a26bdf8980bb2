//! Point operations on one key: get (copied, or lent to a callback), put
//! (with or without a deadline), delete, contains, update.
//!
//! Invariants: a value is handed to C either copied into the caller's
//! buffer (only when it fits; otherwise the length needed is reported and
//! nothing is written) or lent to a callback for the callback's duration
//! only; every write is durable when its function returns `PERSIMMON_OK`.

use std::ffi::{c_int, c_void};

use engine::Update;

use crate::call::{guard, Failure};
use crate::db::Db;
use crate::raw;
use crate::status::Status;

/// `persimmon_update_cb` result: leave the key as it is.
pub const PERSIMMON_UPDATE_KEEP: c_int = 0;
/// `persimmon_update_cb` result: store the value set in `*new_value`,
/// `*new_value_len` (the key keeps its deadline, if any).
pub const PERSIMMON_UPDATE_PUT: c_int = 1;
/// `persimmon_update_cb` result: delete the key (nothing if absent).
pub const PERSIMMON_UPDATE_DELETE: c_int = 2;

/// Receives a value in place: `value` is valid for `value_len` bytes only
/// until the callback returns. It must not call any `persimmon_*` function
/// on the same db, must not block for long (the value is protected from
/// reclamation meanwhile), and must not `longjmp` out or throw.
pub type ValueCallback =
    Option<unsafe extern "C" fn(ctx: *mut c_void, value: *const u8, value_len: usize)>;

/// Decides an update: sees the key's current value (`present` false:
/// absent, `value` NULL) and returns `PERSIMMON_UPDATE_KEEP`, `_PUT` (after
/// setting `*new_value` and `*new_value_len`; the bytes must stay valid
/// until the callback returns — they are copied then) or `_DELETE`.
///
/// It runs with the key's bucket **locked**: it must not call any
/// `persimmon_*` function on the same db (that can deadlock), should be
/// short (writers of other keys in the bucket wait), and must not
/// `longjmp` out or throw.
pub type UpdateCallback = Option<
    unsafe extern "C" fn(
        ctx: *mut c_void,
        value: *const u8,
        value_len: usize,
        present: bool,
        new_value: *mut *const u8,
        new_value_len: *mut usize,
    ) -> c_int,
>;

/// Copies the value of `key` into `buf` (`buf_len` bytes) and stores its
/// length in `*value_len`.
///
/// Returns `PERSIMMON_OK`; `PERSIMMON_NOT_FOUND` when the key is absent or
/// expired (`*value_len` = 0); `PERSIMMON_BUFFER_TOO_SMALL` when the value
/// is longer than `buf_len` — then nothing is copied and `*value_len` holds
/// the length needed (`buf` may be NULL with `buf_len` 0 to ask for it; the
/// value may change before the next call).
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_get(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    buf: *mut u8,
    buf_len: usize,
    value_len: *mut usize,
) -> c_int {
    guard(|| {
        raw::required(value_len, "value_len")?;
        if buf.is_null() && buf_len > 0 {
            return Err(Failure::invalid(format!(
                "buf is NULL but buf_len is {buf_len}"
            )));
        }
        // SAFETY: db NULL or live, key readable for key_len, value_len
        // writable (checked non-NULL), buf writable for buf_len (contract).
        unsafe {
            raw::set(value_len, 0);
            let (db, key) = (raw::handle(db, "db")?, raw::key(key, key_len)?);
            let found = db.engine.get_with(key, |v| {
                let copied = v.len() <= buf_len;
                let result = if copied {
                    raw::copy_out(v, buf, buf_len)
                } else {
                    Ok(())
                };
                (v.len(), copied, result)
            })?;
            let Some((len, copied, result)) = found else {
                return Ok(Status::PERSIMMON_NOT_FOUND);
            };
            result?;
            raw::set(value_len, len);
            match copied {
                true => Ok(Status::PERSIMMON_OK),
                false => Err(too_small(len, buf_len)),
            }
        }
    })
}

fn too_small(len: usize, buf_len: usize) -> Failure {
    let message = format!("value is {len} bytes; the buffer holds {buf_len}");
    Failure::new(Status::PERSIMMON_BUFFER_TOO_SMALL, message)
}

/// Calls `callback(ctx, value, value_len)` with the value of `key` in place,
/// without copying it (see `persimmon_value_cb` for what the callback may
/// not do). Returns `PERSIMMON_OK` after the callback ran, or
/// `PERSIMMON_NOT_FOUND` (callback not called).
///
/// Thread safety: any thread, concurrently with any call but close; the
/// callback runs on the calling thread.
#[no_mangle]
pub unsafe extern "C" fn persimmon_get_with(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    callback: ValueCallback,
    ctx: *mut c_void,
) -> c_int {
    guard(|| {
        let callback = callback.ok_or_else(|| Failure::invalid("callback is NULL"))?;
        // SAFETY: db NULL or live, key readable for key_len (contract); the
        // callback receives a live slice for the duration of its call, and
        // ctx is passed through untouched.
        unsafe {
            let (db, key) = (raw::handle(db, "db")?, raw::key(key, key_len)?);
            let found = db
                .engine
                .get_with(key, |v| callback(ctx, v.as_ptr(), v.len()))?;
            Ok(found.map_or(Status::PERSIMMON_NOT_FOUND, |()| Status::PERSIMMON_OK))
        }
    })
}

/// Stores in `*present` whether `key` is present (and not expired).
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_contains(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    present: *mut bool,
) -> c_int {
    guard(|| {
        raw::required(present, "present")?;
        // SAFETY: db NULL or live, key readable, present writable (contract).
        unsafe {
            let (db, key) = (raw::handle(db, "db")?, raw::key(key, key_len)?);
            raw::set(present, db.engine.contains(key)?);
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Stores `value` under `key` (removing any deadline the key had). Durable
/// when it returns `PERSIMMON_OK`.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_put(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
) -> c_int {
    guard(|| {
        // SAFETY: db NULL or live, key and value readable (contract).
        unsafe {
            let db = raw::handle(db, "db")?;
            let (key, value) = (raw::key(key, key_len)?, raw::value(value, value_len)?);
            db.engine.put(key, value)?;
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Stores `value` under `key`, expiring at `deadline_ms` (milliseconds of
/// Unix time, as `persimmon_now_ms` counts them): from then on the key reads
/// as absent. A deadline already passed deletes the key at once; one past
/// `PERSIMMON_MAX_DEADLINE_MS` is refused (`PERSIMMON_DEADLINE_TOO_FAR`).
/// Durable when it returns `PERSIMMON_OK`.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_put_with_deadline(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    deadline_ms: u64,
) -> c_int {
    guard(|| {
        // SAFETY: db NULL or live, key and value readable (contract).
        unsafe {
            let db = raw::handle(db, "db")?;
            let (key, value) = (raw::key(key, key_len)?, raw::value(value, value_len)?);
            db.engine.put_with_deadline(key, value, deadline_ms)?;
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Stores `value` under `key` for `ttl_ms` milliseconds from now (the
/// deadline is `persimmon_now_ms() + ttl_ms`; 0 deletes the key at once).
/// Durable when it returns `PERSIMMON_OK`.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_put_with_ttl(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    value: *const u8,
    value_len: usize,
    ttl_ms: u64,
) -> c_int {
    guard(|| {
        // SAFETY: db NULL or live, key and value readable (contract).
        unsafe {
            let db = raw::handle(db, "db")?;
            let (key, value) = (raw::key(key, key_len)?, raw::value(value, value_len)?);
            let deadline = db.engine.now_ms().saturating_add(ttl_ms);
            db.engine.put_with_deadline(key, value, deadline)?;
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Deletes `key`; stores in `*existed` (which may be NULL) whether it was
/// present. Returns `PERSIMMON_OK` either way. Durable when it returns.
///
/// Thread safety: any thread, concurrently with any call but close.
#[no_mangle]
pub unsafe extern "C" fn persimmon_delete(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    existed: *mut bool,
) -> c_int {
    guard(|| {
        // SAFETY: db NULL or live, key readable, existed NULL or writable.
        unsafe {
            let (db, key) = (raw::handle(db, "db")?, raw::key(key, key_len)?);
            raw::set(existed, db.engine.delete(key)?);
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Atomic read-modify-write of `key`: `callback` sees the current value
/// with the key locked and decides (see `persimmon_update_cb`: it must not
/// call into the same db). Durable when it returns `PERSIMMON_OK`.
///
/// A callback result that is no `PERSIMMON_UPDATE_*` code, or a PUT whose
/// new value is NULL with a length or is too long, leaves the key unchanged
/// and returns `PERSIMMON_INVALID_ARGUMENT` / `PERSIMMON_VALUE_TOO_LARGE`.
///
/// Thread safety: any thread, concurrently with any call but close; updates
/// of one key are serialized, the callback runs on the calling thread.
#[no_mangle]
pub unsafe extern "C" fn persimmon_update(
    db: *const Db,
    key: *const u8,
    key_len: usize,
    callback: UpdateCallback,
    ctx: *mut c_void,
) -> c_int {
    guard(|| {
        let callback = callback.ok_or_else(|| Failure::invalid("callback is NULL"))?;
        // SAFETY: db NULL or live, key readable (contract); the callback
        // gets a live slice (or NULL when absent) and two local out-slots.
        let decided = unsafe {
            let (db, key) = (raw::handle(db, "db")?, raw::key(key, key_len)?);
            db.engine.update(key, |old| {
                let (mut new_value, mut new_len) = (std::ptr::null(), 0usize);
                let (ptr, len) = old.map_or((std::ptr::null(), 0), |v| (v.as_ptr(), v.len()));
                let action = callback(ctx, ptr, len, old.is_some(), &mut new_value, &mut new_len);
                decide(action, new_value, new_len)
            })?
        };
        decided.map(|()| Status::PERSIMMON_OK)
    })
}

/// The engine's `Update` for a callback's answer; an unusable answer keeps
/// the key and is the call's failure.
///
/// # Safety
/// For `PERSIMMON_UPDATE_PUT`, `new_value` is NULL or readable for
/// `new_len` bytes.
unsafe fn decide(
    action: c_int,
    new_value: *const u8,
    new_len: usize,
) -> (Update, Result<(), Failure>) {
    match action {
        PERSIMMON_UPDATE_KEEP => (Update::Keep, Ok(())),
        PERSIMMON_UPDATE_DELETE => (Update::Delete, Ok(())),
        // SAFETY: forwarded from this function's contract.
        PERSIMMON_UPDATE_PUT => match unsafe { raw::value(new_value, new_len) } {
            Ok(v) => (Update::Put(v.to_vec()), Ok(())),
            Err(f) => (Update::Keep, Err(f)),
        },
        other => {
            let f = Failure::invalid(format!(
                "update callback returned {other}, no PERSIMMON_UPDATE_* code"
            ));
            (Update::Keep, Err(f))
        }
    }
}
