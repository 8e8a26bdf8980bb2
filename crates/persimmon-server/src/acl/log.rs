//! `ACL LOG`: the recent denials (a command, key or channel refused) and
//! failed authentications, newest first, with Redis's fields.
//!
//! Invariants:
//! - An event like a recent one (same reason, context, object and user,
//!   within 60 s of its last update) is counted in that entry, which moves
//!   to the front, instead of adding one.
//! - The log holds at most `acllog-max-len` entries (the oldest go).

use std::collections::VecDeque;
use std::sync::Mutex;
use std::time::{SystemTime, UNIX_EPOCH};

/// How long after its last update an entry absorbs like events.
const GROUPING_MS: u64 = 60_000;

/// Why an entry was logged.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Reason {
    Command,
    Key,
    Channel,
    Auth,
}

impl Reason {
    pub fn name(self) -> &'static str {
        match self {
            Reason::Command => "command",
            Reason::Key => "key",
            Reason::Channel => "channel",
            Reason::Auth => "auth",
        }
    }
}

/// Where the refused command ran.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Context {
    Toplevel,
    Multi,
    Lua,
}

impl Context {
    pub fn name(self) -> &'static str {
        match self {
            Context::Toplevel => "toplevel",
            Context::Multi => "multi",
            Context::Lua => "lua",
        }
    }
}

/// One event to log.
pub struct Event {
    pub reason: Reason,
    pub context: Context,
    pub object: String,
    pub username: String,
    /// The client's `CLIENT LIST` line.
    pub client_info: String,
}

pub struct Entry {
    pub event: Event,
    pub count: u64,
    pub id: u64,
    pub created_ms: u64,
    pub updated_ms: u64,
}

#[derive(Default)]
pub struct Log {
    inner: Mutex<Entries>,
}

#[derive(Default)]
struct Entries {
    list: VecDeque<Entry>,
    next_id: u64,
}

fn now_ms() -> u64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_millis() as u64)
}

impl Log {
    fn entries(&self) -> std::sync::MutexGuard<'_, Entries> {
        self.inner.lock().unwrap_or_else(|e| e.into_inner())
    }

    /// Logs `event`, keeping at most `max_len` entries.
    pub fn add(&self, event: Event, max_len: usize) {
        let now = now_ms();
        let mut e = self.entries();
        let similar = e.list.iter().position(|x| {
            let o = &x.event;
            o.reason == event.reason
                && o.context == event.context
                && o.object == event.object
                && o.username == event.username
                && now.saturating_sub(x.updated_ms) < GROUPING_MS
        });
        let entry = match similar.and_then(|i| e.list.remove(i)) {
            Some(mut old) => {
                old.count += 1;
                old.updated_ms = now;
                old.event.client_info = event.client_info;
                old
            }
            None => {
                let id = e.next_id;
                e.next_id += 1;
                Entry {
                    event,
                    count: 1,
                    id,
                    created_ms: now,
                    updated_ms: now,
                }
            }
        };
        e.list.push_front(entry);
        e.list.truncate(max_len);
    }

    pub fn reset(&self) {
        self.entries().list.clear();
    }

    /// Calls `f` with the newest `n` entries (all when `None`).
    pub fn with_newest<R>(
        &self,
        n: Option<usize>,
        f: impl FnOnce(&mut dyn Iterator<Item = &Entry>) -> R,
    ) -> R {
        let e = self.entries();
        let n = n.unwrap_or(e.list.len());
        f(&mut e.list.iter().take(n))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn event(object: &str) -> Event {
        Event {
            reason: Reason::Command,
            context: Context::Toplevel,
            object: object.into(),
            username: "u".into(),
            client_info: String::new(),
        }
    }

    #[test]
    fn like_events_are_counted_once_and_the_log_is_capped() {
        let log = Log::default();
        log.add(event("get"), 3);
        log.add(event("get"), 3);
        log.add(event("set"), 3);
        let counts = log.with_newest(None, |it| {
            it.map(|e| (e.event.object.clone(), e.count))
                .collect::<Vec<_>>()
        });
        assert_eq!(counts, [("set".into(), 1), ("get".to_string(), 2)]);
        for o in ["a", "b", "c"] {
            log.add(event(o), 3);
        }
        assert_eq!(log.with_newest(None, |it| it.count()), 3);
    }
}
