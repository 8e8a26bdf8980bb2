//! The open pool as the Python objects share it: one `persimmon::Db` behind
//! a reader-writer lock, and the registry of the cursors that borrow it.
//!
//! Invariants:
//! - Every engine call runs with the GIL released and the state lock held
//!   for reading (`read_recursive`: a transaction's callback may call the
//!   Db again on the same thread). `close` takes it for writing, so it
//!   waits for the calls in flight and no call starts on a closing Db.
//! - The lock is never held while this thread waits for the GIL, except in
//!   a transaction's callback; the only writer (`close`) needs no GIL, so
//!   a thread that blocks on the lock while holding the GIL waits only for
//!   `close` to finish, never for a thread that waits for the GIL.
//! - The `Db` is boxed, so its address is stable while it is open; cursors
//!   borrow it (see `cursor`). `close` empties every registered cursor
//!   under the write lock before it drops the `Db`: no borrow outlives it.
//! - A transaction holds the read lock while its Python function runs; the
//!   thread notes this (`HELD`), and `close` on that thread refuses with
//!   `Failure::Busy` instead of waiting for itself forever.
//! - A panic in an engine call is caught here and becomes `InternalError`;
//!   it never unwinds into Python.

use std::cell::RefCell;
use std::panic::{catch_unwind, AssertUnwindSafe};
use std::sync::{Arc, Weak};

use parking_lot::{Mutex, RwLock};

use crate::cursor::Cursor;
use crate::errors::Failure;

thread_local! {
    /// The `Shared`s (by address) whose read lock this thread holds while
    /// it runs Python code (a transaction's function).
    static HELD: RefCell<Vec<usize>> = const { RefCell::new(Vec::new()) };
}

/// The pool and what borrows it.
pub struct Shared {
    state: RwLock<Option<Box<persimmon::Db>>>,
    cursors: Mutex<Vec<Weak<Mutex<Option<Cursor>>>>>,
    /// The pool's path, kept for `repr` and `Db.path` after close.
    pub path: std::path::PathBuf,
}

impl Shared {
    pub fn new(db: persimmon::Db) -> Arc<Shared> {
        let path = db.path().to_path_buf();
        Arc::new(Shared {
            state: RwLock::new(Some(Box::new(db))),
            cursors: Mutex::new(Vec::new()),
            path,
        })
    }

    /// Runs `f` on the open `Db` (call with the GIL released).
    pub fn with<R>(
        &self,
        f: impl FnOnce(&persimmon::Db) -> Result<R, Failure>,
    ) -> Result<R, Failure> {
        let state = self.state.read_recursive();
        let db = state.as_deref().ok_or(Failure::Closed("Db"))?;
        catch_unwind(AssertUnwindSafe(|| f(db))).unwrap_or_else(|p| Err(panic_failure(p)))
    }

    /// Like `with`, for an `f` that runs Python code while the lock is held
    /// (noted in `HELD` for the time, so that `close` can refuse).
    pub fn with_held<R>(
        &self,
        f: impl FnOnce(&persimmon::Db) -> Result<R, Failure>,
    ) -> Result<R, Failure> {
        let me = self as *const Shared as usize;
        HELD.with(|h| h.borrow_mut().push(me));
        let _pop = Pop(me);
        self.with(f)
    }

    pub fn is_closed(&self) -> bool {
        self.state.read_recursive().is_none()
    }

    /// Registers a cursor's slot so that `close` can empty it.
    pub fn register(&self, slot: &Arc<Mutex<Option<Cursor>>>) {
        let mut cursors = self.cursors.lock();
        cursors.retain(|w| w.strong_count() > 0);
        cursors.push(Arc::downgrade(slot));
    }

    /// Locks the state for reading and runs `f` on a cursor slot: the `Db`
    /// the cursor borrows stays open while `f` runs.
    pub fn with_cursor<R>(
        &self,
        slot: &Mutex<Option<Cursor>>,
        f: impl FnOnce(&mut Option<Cursor>) -> R,
    ) -> R {
        let _state = self.state.read_recursive();
        let mut slot = slot.lock();
        f(&mut slot)
    }

    /// `close`, unless this thread holds the lock across Python code (inside
    /// a transaction's function), where it would wait for itself.
    pub fn close_checked(&self) -> Result<(), Failure> {
        let me = self as *const Shared as usize;
        if HELD.with(|h| h.borrow().contains(&me)) {
            return Err(Failure::Busy(
                "the Db cannot be closed inside one of its own transactions",
            ));
        }
        self.close();
        Ok(())
    }

    /// Ends every cursor, then closes the pool (the engine's clean close).
    /// Waits for the calls in flight; a second close does nothing.
    pub fn close(&self) {
        let mut state = self.state.write();
        for slot in self.cursors.lock().drain(..) {
            if let Some(slot) = slot.upgrade() {
                slot.lock().take();
            }
        }
        if let Some(db) = state.take() {
            let _ = catch_unwind(AssertUnwindSafe(|| drop(db)));
        }
    }
}

impl Drop for Shared {
    fn drop(&mut self) {
        self.close();
    }
}

/// Takes a `Shared` off `HELD` when a `with_held` ends (even by a panic).
struct Pop(usize);

impl Drop for Pop {
    fn drop(&mut self) {
        HELD.with(|h| {
            let mut h = h.borrow_mut();
            if let Some(i) = h.iter().rposition(|&p| p == self.0) {
                h.remove(i);
            }
        });
    }
}

/// The message of a caught panic.
pub fn panic_failure(payload: Box<dyn std::any::Any + Send>) -> Failure {
    let msg = payload
        .downcast_ref::<&str>()
        .map(|s| s.to_string())
        .or_else(|| payload.downcast_ref::<String>().cloned())
        .unwrap_or_else(|| "unknown panic".into());
    Failure::Panic(msg)
}
