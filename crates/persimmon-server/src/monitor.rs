//! `MONITOR`: the feed of every command the server runs, to the clients
//! that asked for it, one line per command in Redis's format:
//! `+<unix secs>.<micros> [<db> <client address>] "arg" "arg"...`, where a
//! script's commands show `lua` for the address, each argument quoted and
//! escaped as Redis quotes (`\"`, `\\`, `\n`, `\r`, `\t`, `\a`, `\b`,
//! `\xHH` for other unprintable bytes), secrets `(redacted)`
//! (`redact.rs`).
//!
//! Invariants:
//! - Costs nothing when no client monitors: the dispatch reads one atomic
//!   count per command ([`Monitors::any`]) and formats nothing when it is
//!   0.
//! - Every monitor gets the lines in one order, the order their commands
//!   were fed (appending holds the registry's lock).
//! - A monitor's connection writes its queue itself (`conn.rs`), woken by
//!   its `Notify`; a queue past `client-output-buffer-limit` is dropped
//!   and its client killed, so a monitor that does not read never grows
//!   without bound.
//! - A [`Watch`] is the monitor's membership: dropping it (RESET, the
//!   connection ends) takes the client out and the count down.

use std::collections::BTreeMap;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{SystemTime, UNIX_EPOCH};

use tokio::sync::Notify;

use crate::client::ClientInfo;

/// The clients in `MONITOR` mode.
#[derive(Default)]
pub struct Monitors {
    count: AtomicUsize,
    feeds: Mutex<BTreeMap<u64, Arc<Feed>>>,
}

/// One monitor's lines not written yet.
pub struct Feed {
    client: Arc<ClientInfo>,
    lines: Mutex<Vec<u8>>,
    notify: Notify,
}

/// A client's membership of the monitors (see the module's invariants).
pub struct Watch {
    monitors: Arc<Monitors>,
    feed: Arc<Feed>,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Monitors {
    /// Whether any client monitors (one relaxed load).
    #[inline]
    pub fn any(&self) -> bool {
        self.count.load(Ordering::Relaxed) > 0
    }

    /// Makes `client` a monitor until the returned watch is dropped.
    pub fn watch(self: &Arc<Self>, client: Arc<ClientInfo>) -> Watch {
        client.monitor.store(true, Ordering::Relaxed);
        let feed = Arc::new(Feed {
            client,
            lines: Mutex::default(),
            notify: Notify::new(),
        });
        let mut feeds = lock(&self.feeds);
        feeds.insert(feed.client.id, feed.clone());
        self.count.store(feeds.len(), Ordering::Relaxed);
        Watch {
            monitors: self.clone(),
            feed,
        }
    }

    /// Feeds one command run in database `db` by `source` (a client's
    /// address, or `lua`) to every monitor; a queue past `limit` bytes is
    /// dropped and its client killed.
    pub fn feed(&self, db: usize, source: &str, args: &[&[u8]], limit: usize) {
        let line = line(now(), db, source, args);
        let feeds = lock(&self.feeds);
        for f in feeds.values() {
            let mut lines = lock(&f.lines);
            if lines.len() + line.len() > limit {
                lines.clear();
                f.client.kill();
                continue;
            }
            lines.extend_from_slice(&line);
            drop(lines);
            f.notify.notify_one();
        }
    }
}

impl Watch {
    /// Moves the queued lines to `out`; whether there were any.
    pub fn drain(&self, out: &mut Vec<u8>) -> bool {
        let mut lines = lock(&self.feed.lines);
        if lines.is_empty() {
            return false;
        }
        out.extend_from_slice(&lines);
        lines.clear();
        true
    }

    /// Resolves when lines were queued since the last drain (maybe
    /// spuriously).
    pub async fn ready(&self) {
        self.feed.notify.notified().await
    }
}

impl Drop for Watch {
    fn drop(&mut self) {
        let mut feeds = lock(&self.monitors.feeds);
        feeds.remove(&self.feed.client.id);
        self.feed.client.monitor.store(false, Ordering::Relaxed);
        self.monitors.count.store(feeds.len(), Ordering::Relaxed);
    }
}

fn now() -> (u64, u32) {
    let t = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .unwrap_or_default();
    (t.as_secs(), t.subsec_micros())
}

/// One feed line, as a RESP simple string.
fn line(at: (u64, u32), db: usize, source: &str, args: &[&[u8]]) -> Vec<u8> {
    let hidden = crate::redact::redacted(args);
    let mut out = format!("+{}.{:06} [{db} {source}]", at.0, at.1).into_bytes();
    for (i, arg) in args.iter().enumerate() {
        out.push(b' ');
        if hidden.as_ref().is_some_and(|h| h[i]) {
            quote(b"(redacted)", &mut out);
        } else {
            quote(arg, &mut out);
        }
    }
    out.extend_from_slice(b"\r\n");
    out
}

/// `arg` quoted as Redis quotes it (`sdscatrepr`).
pub fn quote(arg: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in arg {
        match b {
            b'\\' | b'"' => out.extend_from_slice(&[b'\\', b]),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            7 => out.extend_from_slice(b"\\a"),
            8 => out.extend_from_slice(b"\\b"),
            0x20..=0x7e => out.push(b),
            _ => out.extend_from_slice(format!("\\x{b:02x}").as_bytes()),
        }
    }
    out.push(b'"');
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn formats_lines_as_redis() {
        let l = line((12, 34), 3, "127.0.0.1:5", &[b"set", b"k\"\n\x01", b"v"]);
        assert_eq!(
            String::from_utf8(l).unwrap(),
            "+12.000034 [3 127.0.0.1:5] \"set\" \"k\\\"\\n\\x01\" \"v\"\r\n"
        );
        let l = line((1, 0), 0, "lua", &[b"auth", b"secret"]);
        assert_eq!(
            String::from_utf8(l).unwrap(),
            "+1.000000 [0 lua] \"auth\" \"(redacted)\"\r\n"
        );
    }

    #[test]
    fn a_watch_counts_while_it_lives() {
        let m = Arc::new(Monitors::default());
        let addr = "127.0.0.1:1".parse().unwrap();
        let w = m.watch(Arc::new(ClientInfo::new(1, addr, addr, -1, 0)));
        assert!(m.any());
        m.feed(0, "x", &[b"ping"], 1 << 20);
        let mut out = Vec::new();
        assert!(w.drain(&mut out));
        assert!(out.ends_with(b"[0 x] \"ping\"\r\n"));
        drop(w);
        assert!(!m.any());
    }
}
