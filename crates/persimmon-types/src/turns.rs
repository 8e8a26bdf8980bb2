//! Turns for atomic units that keep losing to others (many clients on one
//! hot collection): such a unit runs its next attempts holding the turn,
//! and while any unit holds or waits for one, new units wait for it before
//! they start.
//!
//! Invariants: a unit with the turn can lose only to units that started
//! before it took it — a few at most — so none starves; units that never
//! conflict pay one atomic load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

/// The turns of one key space (one, in its `Keyspace`).
#[derive(Default)]
pub struct Turns {
    wanted: AtomicUsize,
    lock: Mutex<()>,
}

/// A held turn.
pub struct Turn<'a> {
    turns: &'a Turns,
    _held: MutexGuard<'a, ()>,
}

impl Turns {
    /// Takes the turn, waiting for the unit that holds it.
    pub fn take(&self) -> Turn<'_> {
        self.wanted.fetch_add(1, Ordering::SeqCst);
        let held = self.lock.lock().unwrap_or_else(|e| e.into_inner());
        Turn {
            turns: self,
            _held: held,
        }
    }

    /// Waits while another unit holds or wants a turn.
    pub fn wait_for_turns(&self) {
        if self.wanted.load(Ordering::SeqCst) > 0 {
            drop(self.lock.lock().unwrap_or_else(|e| e.into_inner()));
        }
    }
}

impl Drop for Turn<'_> {
    fn drop(&mut self) {
        self.turns.wanted.fetch_sub(1, Ordering::SeqCst);
    }
}
