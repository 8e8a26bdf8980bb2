//! The replication stream: what a master sends its replicas after a
//! snapshot — every write as the RESP array of a command, a `SELECT n`
//! before a command of another database than the last — numbered byte by
//! byte (`master_repl_offset`), kept in the backlog, and copied to the feed
//! of each attached replica.
//!
//! A command's writes are collected in its session's `ClientRepl` while it
//! runs (the verbatim request, or the rewrites a handler chose) and
//! appended here only once it succeeded, under the stream's lock, which
//! every write command holds from before its engine call until its
//! propagation is appended (see `repl/mod.rs`): so the stream's order is the
//! order the writes took effect in.
//!
//! Invariants:
//! - `offset` only grows, by exactly the bytes appended; the backlog (once
//!   created) always ends at `offset`; every feed receives every byte
//!   appended after it was attached, in order, or is dropped (its replica
//!   disconnected) when it falls more than its limit behind.
//! - Nothing is appended while there is no backlog (no replica ever
//!   attached and this server is no replica): writes then cost one atomic
//!   load.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::Arc;

use bytes::Bytes;
use persimmon_resp::encode;
use tokio::sync::mpsc;

use super::backlog::Backlog;
use super::expiry::Deadlines;
use crate::clock::{fresh_id, unix_time};

/// A replica's feed: the stream's bytes since it attached.
pub struct Feed {
    pub client: u64,
    tx: mpsc::UnboundedSender<Bytes>,
    /// Bytes sent into the channel and not yet written to the socket.
    queued: Arc<AtomicUsize>,
}

/// The receiving end of a feed.
pub struct FeedRx {
    pub rx: mpsc::UnboundedReceiver<Bytes>,
    pub queued: Arc<AtomicUsize>,
}

/// A replica this far behind (bytes queued, not written) is disconnected
/// (Redis's `client-output-buffer-limit replica 256mb`).
pub const FEED_LIMIT: usize = 256 << 20;

/// The stream's state, behind `Replication::stream`.
pub struct Stream {
    pub replid: String,
    /// The replication id this server had before (a promoted replica's
    /// former master's), accepted up to `second_offset`.
    pub replid2: String,
    /// The first byte number *not* valid for `replid2` (-1: none).
    pub second_offset: i64,
    pub offset: u64,
    pub backlog: Option<Backlog>,
    /// The database of the last command appended (`None`: a `SELECT`
    /// precedes the next one).
    selected: Option<usize>,
    feeds: Vec<Feed>,
    /// Deadlines the replicas were given, to propagate expiries (`expiry`).
    pub deadlines: Deadlines,
}

pub const NO_ID: &str = "0000000000000000000000000000000000000000";

/// A new replication id (a new history starts: at start, at a promotion).
pub fn new_replid() -> String {
    fresh_id("replid")
}

impl Stream {
    pub fn new() -> Stream {
        Stream {
            replid: new_replid(),
            replid2: NO_ID.to_string(),
            second_offset: -1,
            offset: 0,
            backlog: None,
            selected: None,
            feeds: Vec::new(),
            deadlines: Deadlines::default(),
        }
    }

    /// Creates the backlog if there is none (replication starts).
    pub fn ensure_backlog(&mut self, size: usize) {
        if self.backlog.is_none() {
            self.backlog = Some(Backlog::new(size, self.offset));
            self.selected = None;
        }
    }

    /// Appends bytes of the stream: to the backlog and every feed.
    pub fn append(&mut self, bytes: &[u8]) {
        let Some(backlog) = self.backlog.as_mut() else {
            return;
        };
        backlog.push(bytes);
        self.offset += bytes.len() as u64;
        debug_assert_eq!(
            backlog.first() + backlog.len() as u64,
            self.offset + 1,
            "the backlog ends at the stream's end"
        );
        if self.feeds.is_empty() {
            return;
        }
        let shared = Bytes::copy_from_slice(bytes);
        self.feeds.retain(|f| {
            let queued = f.queued.fetch_add(shared.len(), Ordering::AcqRel) + shared.len();
            queued <= FEED_LIMIT && f.tx.send(shared.clone()).is_ok()
        });
    }

    /// Appends one command of database `db`, with a `SELECT` first when
    /// the last command appended was of another database.
    pub fn command(&mut self, db: usize, args: &[Vec<u8>]) {
        if self.backlog.is_none() {
            return;
        }
        let now = unix_time().as_millis() as u64;
        self.deadlines.note(db, args, now);
        if self.selected != Some(db) {
            let select = encode(&[b"SELECT".to_vec(), db.to_string().into_bytes()]);
            self.append(&select);
            self.selected = Some(db);
        }
        self.append(&encode(args));
    }

    /// Appends a command that belongs to no database (PING, REPLCONF).
    pub fn command_anywhere(&mut self, args: &[Vec<u8>]) {
        self.append(&encode(args));
    }

    /// Appends the master's bytes as they came (on a replica), after
    /// they were applied. `selected` is unknown after them.
    pub fn relay(&mut self, bytes: &[u8]) {
        self.append(bytes);
        self.selected = None;
    }

    /// Attaches a feed: it receives every byte appended from now on.
    pub fn attach(&mut self, client: u64) -> FeedRx {
        let (tx, rx) = mpsc::unbounded_channel();
        let queued = Arc::new(AtomicUsize::new(0));
        self.feeds.retain(|f| f.client != client);
        self.feeds.push(Feed {
            client,
            tx,
            queued: queued.clone(),
        });
        FeedRx { rx, queued }
    }

    pub fn detach(&mut self, client: u64) {
        self.feeds.retain(|f| f.client != client);
    }

    /// Drops every feed (their replicas reconnect and resynchronise).
    pub fn detach_all(&mut self) {
        self.feeds.clear();
    }

    /// Forgets the database of the last command (a new snapshot: the
    /// replica starts in database 0 with no `SELECT` seen).
    pub fn forget_selected(&mut self) {
        self.selected = None;
    }

    /// The bytes from number `from` on, if `replid` names this stream's
    /// history up to there (`PSYNC`'s test for `+CONTINUE`).
    pub fn continue_from(&self, replid: &str, from: u64) -> Option<Vec<u8>> {
        let ours = replid == self.replid;
        let former =
            replid == self.replid2 && self.second_offset >= 0 && from <= self.second_offset as u64;
        if !(ours || former) {
            return None;
        }
        self.backlog.as_ref()?.since(from)
    }

    /// A new history starts here (promotion): the old id stays valid up to
    /// this point.
    pub fn shift_ids(&mut self, new_id: String) {
        debug_assert_ne!(new_id, self.replid, "a new history has a new id");
        self.replid2 = std::mem::replace(&mut self.replid, new_id);
        self.second_offset = self.offset as i64 + 1;
    }
}

impl Default for Stream {
    fn default() -> Self {
        Stream::new()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn selects_only_when_the_database_changes_and_counts_every_byte() {
        let mut s = Stream::new();
        s.command(0, &args(&["SET", "a", "1"]));
        assert_eq!(s.offset, 0, "no backlog: nothing appended");
        s.ensure_backlog(1 << 20);
        let mut feed = s.attach(7);
        s.command(0, &args(&["SET", "a", "1"]));
        s.command(0, &args(&["DEL", "a"]));
        s.command(2, &args(&["DEL", "b"]));
        let mut got = Vec::new();
        while let Ok(b) = feed.rx.try_recv() {
            got.extend_from_slice(&b);
        }
        let want = b"*2\r\n$6\r\nSELECT\r\n$1\r\n0\r\n*3\r\n$3\r\nSET\r\n$1\r\na\r\n$1\r\n1\r\n\
*2\r\n$3\r\nDEL\r\n$1\r\na\r\n*2\r\n$6\r\nSELECT\r\n$1\r\n2\r\n*2\r\n$3\r\nDEL\r\n$1\r\nb\r\n";
        assert_eq!(got, want.to_vec());
        assert_eq!(s.offset, want.len() as u64);
        assert_eq!(
            s.continue_from(&s.replid.clone(), 1).unwrap(),
            want.to_vec()
        );
        assert!(s.continue_from("nope", 1).is_none());
    }

    #[test]
    fn a_promoted_stream_accepts_its_former_id_up_to_the_switch() {
        let mut s = Stream::new();
        s.ensure_backlog(1 << 20);
        s.command(0, &args(&["SET", "a", "1"]));
        let old = s.replid.clone();
        let at = s.offset + 1;
        s.shift_ids(new_replid());
        s.command(0, &args(&["SET", "b", "2"]));
        assert_eq!(
            s.continue_from(&old, at).unwrap().len() as u64,
            s.offset + 1 - at
        );
        assert!(s.continue_from(&old, at + 1).is_none());
    }
}
