//! `persimmon_iter`: iteration over a db — every pair in hash order, or a
//! key range / prefix in byte order on pools with the ordered index.
//!
//! Memory model: `persimmon_iter_next` lends the current key and value; the
//! pointers stay valid until the next `persimmon_iter_next` or
//! `persimmon_iter_free` on the same iterator (the iterator owns copies of
//! them, so writes to the db never move them).
//!
//! Invariants: an iterator borrows its db's engine; it is counted on the
//! db handle from creation until it is freed, and `persimmon_close` refuses
//! while the count is not 0, so the engine outlives every iterator. The
//! engine iterator is dropped before the count goes down.

use std::ffi::c_int;
use std::ops::Bound;

use crate::call::{guard, Failure, Outcome};
use crate::db::Db;
use crate::raw;
use crate::status::Status;

/// The engine's pairs, borrowing the db for as long as the iterator lives.
/// `Send`: an iterator may move between threads (the engine's iterators
/// hold no epoch pin or lock between calls).
type Pairs = Box<dyn Iterator<Item = engine::Result<(Vec<u8>, Vec<u8>)>> + Send>;

/// An iterator (`persimmon_iter` in C).
pub struct Iter {
    /// `None` only while being dropped.
    pairs: Option<Pairs>,
    /// The handle the pairs borrow; `'static` stands for "until this
    /// iterator is freed", which the handle's iterator count enforces.
    owner: &'static Db,
    /// The pair the last `persimmon_iter_next` lent out.
    current: (Vec<u8>, Vec<u8>),
}

/// The header's promise that an iterator may move between threads, held at
/// compile time.
const _: () = {
    const fn movable_across_threads<T: Send>() {}
    movable_across_threads::<Iter>();
};

impl Iter {
    fn new(owner: &'static Db, pairs: Pairs) -> Iter {
        owner.iterator_opened();
        Iter {
            pairs: Some(pairs),
            owner,
            current: (Vec::new(), Vec::new()),
        }
    }
}

impl Drop for Iter {
    fn drop(&mut self) {
        drop(self.pairs.take());
        self.owner.iterator_closed();
    }
}

/// Makes an iterator over `db` from `make` and stores it in `*out`.
///
/// # Safety
/// `db` is NULL or a live handle; `out` is NULL or writable.
unsafe fn start(
    db: *const Db,
    out: *mut *mut Iter,
    make: impl FnOnce(&'static engine::Db) -> Result<Pairs, Failure>,
) -> Outcome {
    raw::required(out, "iter (the out-pointer)")?;
    // SAFETY: out is non-NULL and writable (contract).
    unsafe { raw::set(out, std::ptr::null_mut()) };
    // SAFETY: db is a live handle (contract). It is borrowed as 'static for
    // the iterator, which is counted on the handle before this returns;
    // persimmon_close refuses while the count is not 0, so the borrow ends
    // (iterator freed) before the handle can be freed.
    let db: &'static Db = unsafe { raw::handle(db, "db") }?;
    let iter = raw::into_handle(Iter::new(db, make(&db.engine)?));
    // SAFETY: as above.
    unsafe { raw::set(out, iter) };
    Ok(Status::PERSIMMON_OK)
}

/// Stores in `*iter` an iterator over every pair of the db, in no
/// particular order.
///
/// Under concurrent writes it never fails because of them; every key
/// present for the whole iteration is returned at least once (exactly once
/// unless the index splits meanwhile); each value is one the key held,
/// durably, at some moment during the iteration. The db cannot be closed
/// until the iterator is freed (`PERSIMMON_BUSY`).
///
/// Thread safety: any thread, concurrently with any call on the db but
/// close. The iterator is used by one thread at a time (it may move).
#[no_mangle]
pub unsafe extern "C" fn persimmon_iter_new(db: *const Db, iter: *mut *mut Iter) -> c_int {
    // SAFETY: forwarded from the header's contract.
    guard(|| unsafe { start(db, iter, |e| Ok(Box::new(e.iter().fuse()))) })
}

/// Stores in `*iter` an iterator over the pairs with `start <= key < end`
/// in ascending byte order (descending when `reverse`). A NULL `start`
/// (with length 0) means from the first key, a NULL `end` to the last.
///
/// Needs a pool created with `ordered_index`, else
/// `PERSIMMON_NO_ORDERED_INDEX`. Under concurrent writes keys come in
/// order, each at most once; every key present throughout is returned.
///
/// Thread safety: as `persimmon_iter_new`.
#[no_mangle]
pub unsafe extern "C" fn persimmon_range(
    db: *const Db,
    start_key: *const u8,
    start_len: usize,
    end_key: *const u8,
    end_len: usize,
    reverse: bool,
    iter: *mut *mut Iter,
) -> c_int {
    guard(|| {
        // SAFETY: bounds NULL or readable for their lengths (contract).
        let (lo, hi) = unsafe {
            (
                bound(start_key, start_len, Bound::Included)?,
                bound(end_key, end_len, Bound::Excluded)?,
            )
        };
        let make = |e: &'static engine::Db| -> Result<Pairs, Failure> {
            let pairs = e.range::<[u8]>((lo, hi))?;
            Ok(match reverse {
                true => Box::new(pairs.rev().fuse()),
                false => Box::new(pairs.fuse()),
            })
        };
        // SAFETY: forwarded from the header's contract.
        unsafe { start(db, iter, make) }
    })
}

/// A range bound: unbounded for a NULL key, else `kind` of the key.
///
/// # Safety
/// As for `raw::key`.
unsafe fn bound<'a>(
    key: *const u8,
    len: usize,
    kind: fn(&'a [u8]) -> Bound<&'a [u8]>,
) -> Result<Bound<&'a [u8]>, Failure> {
    if key.is_null() && len == 0 {
        return Ok(Bound::Unbounded);
    }
    // SAFETY: forwarded from this function's contract.
    Ok(kind(unsafe { raw::key(key, len) }?))
}

/// Stores in `*iter` an iterator over the pairs whose keys start with
/// `prefix`, in ascending byte order (an empty prefix: every key).
///
/// Needs a pool created with `ordered_index`, else
/// `PERSIMMON_NO_ORDERED_INDEX`. Same guarantees as `persimmon_range`.
///
/// Thread safety: as `persimmon_iter_new`.
#[no_mangle]
pub unsafe extern "C" fn persimmon_prefix(
    db: *const Db,
    prefix: *const u8,
    prefix_len: usize,
    iter: *mut *mut Iter,
) -> c_int {
    guard(|| {
        // SAFETY: prefix readable for prefix_len (contract).
        let prefix = unsafe { raw::key(prefix, prefix_len) }?;
        let make = |e: &'static engine::Db| -> Result<Pairs, Failure> {
            Ok(Box::new(e.prefix(prefix)?.fuse()))
        };
        // SAFETY: forwarded from the header's contract.
        unsafe { start(db, iter, make) }
    })
}

/// Advances the iterator: returns `PERSIMMON_OK` and lends the next pair
/// through `*key`, `*key_len`, `*value`, `*value_len` (any of the four may
/// be NULL when not wanted), or `PERSIMMON_END` when every pair has been
/// returned (and again on every later call).
///
/// The lent pointers stay valid until the next `persimmon_iter_next` or
/// `persimmon_iter_free` on this iterator; copy the bytes to keep them. An
/// error (e.g. `PERSIMMON_CORRUPTION` from a damaged record) is returned
/// once; later calls go on with the next pairs or `PERSIMMON_END`.
///
/// Thread safety: one thread at a time per iterator; other threads may use
/// the db meanwhile.
#[no_mangle]
pub unsafe extern "C" fn persimmon_iter_next(
    iter: *mut Iter,
    key: *mut *const u8,
    key_len: *mut usize,
    value: *mut *const u8,
    value_len: *mut usize,
) -> c_int {
    guard(|| {
        // SAFETY: iter NULL or live and used by this thread only (contract).
        let iter = unsafe { raw::handle_mut(iter, "iter") }?;
        let pairs = iter.pairs.as_mut().expect("pairs are taken only in drop");
        let Some(pair) = pairs.next() else {
            return Ok(Status::PERSIMMON_END);
        };
        iter.current = pair?;
        let (k, v) = &iter.current;
        // SAFETY: the outs are NULL or writable (contract); the pointers
        // lent name the iterator's own copies, alive until the next call.
        unsafe {
            raw::set(key, k.as_ptr());
            raw::set(key_len, k.len());
            raw::set(value, v.as_ptr());
            raw::set(value_len, v.len());
        }
        Ok(Status::PERSIMMON_OK)
    })
}

/// Frees the iterator (and the pair it lent last). `NULL` is a no-op
/// returning `PERSIMMON_OK`. Once every iterator of a db is freed, the db
/// can be closed.
///
/// Thread safety: not concurrently with any other use of this iterator; it
/// must not be used afterwards. Other threads may use the db meanwhile.
#[no_mangle]
pub unsafe extern "C" fn persimmon_iter_free(iter: *mut Iter) -> c_int {
    guard(|| {
        // SAFETY: NULL or a live iterator, not used after this (contract).
        drop(unsafe { raw::take_handle(iter) });
        Ok(Status::PERSIMMON_OK)
    })
}
