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

pub const GENERIC: u32 = 1 << 0;
pub const STRING: u32 = 1 << 1;
pub const LIST: u32 = 1 << 2;
pub const SET: u32 = 1 << 3;
pub const HASH: u32 = 1 << 4;
pub const ZSET: u32 = 1 << 5;
pub const EXPIRED: u32 = 1 << 6;
pub const EVICTED: u32 = 1 << 7;
pub const STREAM: u32 = 1 << 8;
pub const MODULE: u32 = 1 << 9;
pub const KEYSPACE: u32 = 1 << 10;
pub const KEYEVENT: u32 = 1 << 11;
pub const KEY_MISS: u32 = 1 << 12;
pub const NEW: u32 = 1 << 13;
/// `A`: every class but key misses and new keys.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The letters of the classes, in the order Redis writes them back.
const CLASSES: [(u8, u32); 10] = [
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
];

/// The flags of a `notify-keyspace-events` value; `None` for a letter
/// Redis does not know.
pub fn parse(value: &[u8]) -> Option<u32> {
    value.iter().try_fold(0, |flags, &c| {
        let flag = match c {
            b'A' => ALL,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b'm' => KEY_MISS,
            b'n' => NEW,
            c => CLASSES.iter().find(|(l, _)| *l == c)?.1,
        };
        Some(flags | flag)
    })
}

/// `flags` as Redis writes them back (`CONFIG GET`): `A` or the classes,
/// then `K`, `E`, `m`, `n`.
pub fn format(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (letter, flag) in CLASSES {
            if flags & flag != 0 {
                out.push(letter as char);
            }
        }
    }
    for (letter, flag) in [
        ('K', KEYSPACE),
        ('E', KEYEVENT),
        ('m', KEY_MISS),
        ('n', NEW),
    ] {
        if flags & flag != 0 {
            out.push(letter);
        }
    }
    out
}

/// One event to publish: its database, name and key.
struct Note {
    db: usize,
    event: &'static str,
    key: Vec<u8>,
}

/// The events a session noted and has not published yet.
#[derive(Default)]
pub struct Notes(Vec<Note>);

impl Notes {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Drops the notes after the first `len` (an attempt that runs again).
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }
}

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
    s.notes.0.push(Note {
        db,
        event,
        key: key.to_vec(),
    });
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
    for note in std::mem::take(&mut s.notes.0) {
        publish(&s.shared, note.db, note.event, &note.key);
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_and_format_as_redis_writes_them() {
        for (given, shown) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("", ""),
            ("nEm", "Emn"),
            ("Ex", "xE"),
        ] {
            let flags = parse(given.as_bytes()).unwrap();
            assert_eq!(format(flags), shown, "{given}");
        }
        assert_eq!(parse(b"Kq"), None);
        assert_eq!(parse(b"A").unwrap() & (KEY_MISS | NEW), 0);
    }
}
