//! Keyspace notifications (`notify-keyspace-events`): what a command did
//! to a key, published on `__keyspace@<db>__:<key>` (the event as the
//! message) and `__keyevent@<db>__:<event>` (the key as the message), with
//! Redis's classes and event names.
//!
//! A handler notes each event with [`event`] after its change succeeded;
//! the session keeps the notes and the dispatch publishes them once the
//! top-level command is over ([`flush`]): a transaction's or a script's
//! after its unit committed, in the order they were noted. An attempt that
//! runs again (a unit that lost to another writer) drops its notes first
//! ([`Notes::truncate`]), so an event is published once per change that
//! committed.
//!
//! Invariants:
//! - With `notify-keyspace-events` empty (the default) [`event`] is one
//!   relaxed load and returns: nothing is kept, nothing published.
//! - The dispatch's fast paths (a pipeline's grouped SETs, combined runs of
//!   collection writes) are off while any class is on, so every write runs
//!   through a handler that notes its events.
//! - Notes are published only after the command's writes are durable, so
//!   a subscriber never hears of a change a crash could take back.
//! - `expired` comes from the engine's background expiry
//!   ([`listen_for_expiry`]), after the key's delete is durable: a key a
//!   read already finds expired is announced when that delete runs (within
//!   about 100 ms of its deadline).

use std::sync::Arc;

use crate::session::Session;
use crate::shared::Shared;

pub mod classes;

pub use classes::*;

/// Whether any class is on (the fast paths are off then).
pub fn enabled(s: &Session) -> bool {
    s.shared.settings.notify_flags() != 0
}

/// Notes event `event` of class `class` on `key` in the selected database,
/// if the settings want it (see the module header).
pub fn event(s: &mut Session, class: u32, event: &'static str, key: &[u8]) {
    let db = s.store.db;
    event_in(s, db, class, event, key);
}

/// [`event`] in database `db` (MOVE's and COPY's destination).
pub fn event_in(s: &mut Session, db: usize, class: u32, event: &'static str, key: &[u8]) {
    let flags = s.shared.settings.notify_flags();
    if flags & class == 0 || flags & (KEYSPACE | KEYEVENT) == 0 {
        return;
    }
    s.notes.push(db, event, key);
}

/// Whether `key` is absent and `new` events are on: a write about to
/// create it then notes [`created`]. Reads the key only when they are on.
pub fn absent_if_watched(s: &mut Session, key: &[u8]) -> bool {
    s.shared.settings.notify_flags() & NEW != 0 && matches!(s.store.exists(key), Ok(false))
}

/// Notes `new` for a key a write created (`absent` from
/// [`absent_if_watched`], or known by the write itself).
pub fn created(s: &mut Session, absent: bool, key: &[u8]) {
    if absent {
        event(s, NEW, "new", key);
    }
}

/// Notes Redis's generic `del` for `key` if a removal left it empty (a
/// collection loses its key with its last element). Reads the key only
/// when generic events are on.
pub fn if_emptied(s: &mut Session, key: &[u8]) {
    if s.shared.settings.notify_flags() & GENERIC == 0 {
        return;
    }
    if matches!(s.store.exists(key), Ok(false)) {
        event(s, GENERIC, "del", key);
    }
}

/// Publishes the noted events, in order, and forgets them.
pub fn flush(s: &mut Session) {
    if s.notes.is_empty() {
        return;
    }
    for (db, event, key) in s.notes.take() {
        publish(&s.shared, db, event, &key);
    }
}

/// Publishes one event on the channels the settings name.
fn publish(shared: &Shared, db: usize, event: &str, key: &[u8]) {
    let flags = shared.settings.notify_flags();
    let limit = crate::pubsub::Limit::from_settings(shared.settings.pubsub_limit());
    if flags & KEYSPACE != 0 {
        let mut channel = format!("__keyspace@{db}__:").into_bytes();
        channel.extend_from_slice(key);
        shared.pubsub.publish(&channel, event.as_bytes(), limit);
    }
    if flags & KEYEVENT != 0 {
        let channel = format!("__keyevent@{db}__:{event}");
        shared.pubsub.publish(channel.as_bytes(), key, limit);
    }
}

/// Has the engine's background expiry report each key it deletes, as
/// Redis's `expired` event (class `x`). The listener holds the shared
/// state weakly: it does not keep a closed server's state alive.
pub fn listen_for_expiry(shared: &Arc<Shared>) {
    let weak = Arc::downgrade(shared);
    shared.keyspace.db.on_expired(move |engine_key| {
        let Some(shared) = weak.upgrade() else {
            return;
        };
        if shared.settings.notify_flags() & EXPIRED == 0 {
            return;
        }
        let Some((ns, key)) = persimmon_types::dbs::split(engine_key) else {
            return;
        };
        let dbs = &shared.keyspace.dbs;
        if let Some(db) = (0..dbs.count()).find(|&db| dbs.namespace(db) == ns) {
            publish(&shared, db, "expired", key);
        }
    });
}
