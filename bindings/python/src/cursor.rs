//! Engine iterators with their borrow of the `Db` erased, so that a Python
//! iterator object can own one.
//!
//! `persimmon::Iter<'a>` and `persimmon::Range<'a>` borrow the `Db` they walk.
//! A Python object cannot carry that lifetime, so a `Cursor` holds them as
//! `'static`. That is sound because of how `shared::Shared` keeps them:
//! - a cursor is made from a `&Db` handed out by `Shared::with`, under the
//!   state lock held for reading, and registered in `Shared`'s registry
//!   before that lock is released (so `close` cannot run in between);
//! - it lives only in a registered slot, and is advanced or dropped only
//!   through `Shared::with_cursor`, under the state lock held for reading:
//!   the `Db` cannot be dropped meanwhile;
//! - `Shared::close` (and so `Shared`'s `Drop`) empties every registered
//!   slot under the write lock, dropping each cursor, before it drops the
//!   boxed `Db`: no cursor outlives the `Db` it borrows. The `Db` is boxed
//!   and never moved while open, so the address the cursor holds stays valid.
//!
//! Invariant: a slot that holds a cursor implies the `Db` is open.

type Item = persimmon::Result<(Vec<u8>, Vec<u8>)>;

/// An engine iterator over a `Db` kept open by `Shared`.
pub enum Cursor {
    /// `Db::iter`: every pair, in hash order.
    Hash(persimmon::Iter<'static>),
    /// `Db::range` / `Db::prefix`: pairs in key order, or reversed.
    Ordered {
        range: persimmon::Range<'static>,
        reverse: bool,
    },
}

/// What a cursor walks.
pub enum Source {
    /// Every pair, in hash order (`Db::iter`).
    All,
    /// Keys in `[lower, upper)` (`None`: unbounded), in key order.
    Range {
        lower: Option<Vec<u8>>,
        upper: Option<Vec<u8>>,
        reverse: bool,
    },
    /// Keys starting with `prefix`, in key order.
    Prefix { prefix: Vec<u8>, reverse: bool },
}

impl Cursor {
    /// A cursor over `source` in `db`, its borrow of `db` erased.
    ///
    /// # Safety
    /// The caller upholds the module's rules: `db` is the `Db` of a
    /// `Shared` whose state lock it holds for reading, and the cursor goes
    /// into a slot registered with that `Shared` before the lock is released.
    pub unsafe fn open(db: &persimmon::Db, source: Source) -> persimmon::Result<Cursor> {
        use std::ops::Bound::{Excluded, Included, Unbounded};
        Ok(match source {
            // SAFETY: this function's contract.
            Source::All => Cursor::Hash(unsafe { erase_iter(db.iter()) }),
            Source::Range {
                lower,
                upper,
                reverse,
            } => {
                let lo = lower.as_deref().map_or(Unbounded, Included);
                let hi = upper.as_deref().map_or(Unbounded, Excluded);
                // SAFETY: this function's contract.
                let range = unsafe { erase_range(db.range::<[u8]>((lo, hi))?) };
                Cursor::Ordered { range, reverse }
            }
            Source::Prefix { prefix, reverse } => {
                // SAFETY: this function's contract.
                let range = unsafe { erase_range(db.prefix(&prefix)?) };
                Cursor::Ordered { range, reverse }
            }
        })
    }

    /// The next pair (call under `Shared::with_cursor`).
    pub fn next_pair(&mut self) -> Option<Item> {
        match self {
            Cursor::Hash(iter) => iter.next(),
            Cursor::Ordered {
                range,
                reverse: false,
            } => range.next(),
            Cursor::Ordered {
                range,
                reverse: true,
            } => range.next_back(),
        }
    }
}

/// # Safety
/// `Cursor::open`'s contract: the `Db` outlives the cursor keeping `iter`.
unsafe fn erase_iter(iter: persimmon::Iter<'_>) -> persimmon::Iter<'static> {
    // SAFETY: only the lifetime changes (the type is otherwise the same);
    // the caller guarantees that the `Db` outlives the cursor that keeps
    // this iterator (module header).
    unsafe { std::mem::transmute::<persimmon::Iter<'_>, persimmon::Iter<'static>>(iter) }
}

/// # Safety
/// As for `erase_iter`.
unsafe fn erase_range(range: persimmon::Range<'_>) -> persimmon::Range<'static> {
    // SAFETY: as in `erase_iter`.
    unsafe { std::mem::transmute::<persimmon::Range<'_>, persimmon::Range<'static>>(range) }
}
