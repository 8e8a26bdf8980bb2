//! Pub/sub: who is subscribed to which channel or pattern, and how a
//! published message reaches each subscriber's connection.
//!
//! Every subscribed connection has one [`Mailbox`]: a queue of messages
//! its task has not written yet, and a `Notify` that wakes the task. The
//! [`PubSub`] registry maps each channel and each pattern to the mailboxes
//! subscribed to it. `PUBLISH` appends the message to every matching
//! mailbox (never waiting for a socket) and wakes their tasks; each task
//! encodes its messages in its own protocol (RESP2 arrays, RESP3 pushes)
//! and writes them. A connection's [`Subscriptions`] is its own side: what
//! it subscribed to (for the replies' counts and `UNSUBSCRIBE` with no
//! argument); dropping it (the connection ends, however) removes every one.
//!
//! Invariants:
//! - One order for everyone: a publish appends to the mailboxes while
//!   holding the registry's lock, so publishes are serialized and every
//!   subscriber receives the messages it gets in the same order, which is
//!   the order their `PUBLISH`es ran (a connection's own publishes in the
//!   order it sent them).
//! - Replies and messages keep Redis's order on a subscriber's connection:
//!   the connection moves its mailbox into its output buffer before it
//!   runs each command, and `PUBLISH` moves the publisher's own mailbox
//!   right after delivering, before its reply (messages a client publishes
//!   to itself arrive before the `PUBLISH` reply, as in Redis).
//! - A slow subscriber never holds up a publisher: appending is O(1). Its
//!   queue is bounded by the `pubsub` class of `client-output-buffer-limit`
//!   (hard bytes; soft bytes for soft seconds): past it the queue is
//!   dropped and the client killed (`ClientInfo::kill`), as Redis closes
//!   it. A message's size is counted as its encoded length.
//! - Lock order: the registry's lock, then a mailbox's lock; a mailbox lock
//!   is never held while taking the registry's.
//! - The registry and `ClientInfo`'s `sub`/`psub` counts change together,
//!   under the registry's lock; a channel or pattern with no subscriber is
//!   removed from the registry (`PUBSUB CHANNELS`, `NUMPAT`, `INFO`).

use std::collections::{BTreeMap, HashMap, HashSet, VecDeque};
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use persimmon_resp::Reply;
use tokio::sync::Notify;

use crate::client::ClientInfo;

/// Subscribers of one channel or pattern, by client id.
type Subscribers = BTreeMap<u64, Arc<Mailbox>>;

/// The server's subscriptions.
#[derive(Default)]
pub struct PubSub {
    registry: Mutex<Registry>,
}

#[derive(Default)]
struct Registry {
    channels: HashMap<Vec<u8>, Subscribers>,
    patterns: HashMap<Vec<u8>, Subscribers>,
    /// Shard channels (SSUBSCRIBE, SPUBLISH): a namespace of their own.
    shards: HashMap<Vec<u8>, Subscribers>,
}

/// The `pubsub` output limit: hard bytes, soft bytes, soft seconds (0:
/// none), from `Settings::pubsub_limit`.
#[derive(Clone, Copy, Debug)]
pub struct Limit {
    pub hard: u64,
    pub soft: u64,
    pub soft_secs: u64,
}

impl Limit {
    pub fn from_settings(l: [u64; 3]) -> Limit {
        Limit {
            hard: l[0],
            soft: l[1],
            soft_secs: l[2],
        }
    }
}

/// One published message as a subscriber receives it.
struct Message {
    /// The pattern that matched (`pmessage`), or none (`message`).
    pattern: Option<Arc<[u8]>>,
    /// Published with SPUBLISH (`smessage`).
    shard: bool,
    channel: Arc<[u8]>,
    payload: Arc<[u8]>,
}

impl Message {
    /// Bytes of its RESP encoding (near enough: the headers' digits are
    /// counted as 10 each).
    fn cost(&self) -> usize {
        let kind = if self.pattern.is_some() { 8 } else { 7 };
        let parts = 1 + kind + self.channel.len() + self.payload.len();
        parts + self.pattern.as_ref().map_or(0, |p| p.len()) + 4 * 16
    }

    fn encode(&self, out: &mut Reply) {
        match &self.pattern {
            Some(pattern) => {
                out.push(4);
                out.bulk(b"pmessage");
                out.bulk(pattern);
            }
            None => {
                out.push(3);
                out.bulk(if self.shard { b"smessage" } else { b"message" });
            }
        }
        out.bulk(&self.channel);
        out.bulk(&self.payload);
    }
}

/// A subscribed connection's queue of messages not yet written.
pub struct Mailbox {
    client: Arc<ClientInfo>,
    queue: Mutex<Queue>,
    notify: Notify,
}

#[derive(Default)]
struct Queue {
    messages: VecDeque<Message>,
    bytes: usize,
    /// Since when the queue has been above the soft limit.
    over_soft_since: Option<Instant>,
    /// The limit was broken: the queue is dropped, the client killed.
    closed: bool,
}

fn lock<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|e| e.into_inner())
}

impl Mailbox {
    fn new(client: Arc<ClientInfo>) -> Mailbox {
        Mailbox {
            client,
            queue: Mutex::default(),
            notify: Notify::new(),
        }
    }

    /// Appends a message and wakes the connection; past the limit, drops
    /// the queue and kills the client instead.
    fn deliver(&self, message: Message, limit: Limit, now: Instant) {
        let mut q = lock(&self.queue);
        if q.closed {
            return;
        }
        q.bytes += message.cost();
        q.messages.push_back(message);
        if q.breaks(limit, now) {
            q.closed = true;
            q.messages = VecDeque::new();
            q.bytes = 0;
            drop(q);
            self.client.kill();
            return;
        }
        drop(q);
        self.notify.notify_one();
    }
}

impl Queue {
    /// Whether the queue now breaks the limit: above the hard limit, or
    /// above the soft one for longer than its seconds.
    fn breaks(&mut self, limit: Limit, now: Instant) -> bool {
        let bytes = self.bytes as u64;
        if limit.hard > 0 && bytes > limit.hard {
            return true;
        }
        if limit.soft == 0 || bytes <= limit.soft {
            self.over_soft_since = None;
            return false;
        }
        let since = *self.over_soft_since.get_or_insert(now);
        now.duration_since(since) > Duration::from_secs(limit.soft_secs)
    }
}

impl PubSub {
    /// Sends `payload` to every subscriber of `channel` and of each pattern
    /// matching it; returns how many deliveries were made (a client
    /// subscribed to the channel and to two matching patterns counts 3, as
    /// in Redis).
    pub fn publish(&self, channel: &[u8], payload: &[u8], limit: Limit) -> usize {
        let registry = lock(&self.registry);
        let now = Instant::now();
        let channel: Arc<[u8]> = Arc::from(channel);
        let payload: Arc<[u8]> = Arc::from(payload);
        let mut receivers = 0;
        if let Some(subscribers) = registry.channels.get(&*channel) {
            for mailbox in subscribers.values() {
                let message = Message {
                    pattern: None,
                    shard: false,
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                mailbox.deliver(message, limit, now);
                receivers += 1;
            }
        }
        for (pattern, subscribers) in &registry.patterns {
            if !crate::glob::matches(pattern, &channel) {
                continue;
            }
            let pattern: Arc<[u8]> = Arc::from(pattern.as_slice());
            for mailbox in subscribers.values() {
                let message = Message {
                    pattern: Some(pattern.clone()),
                    shard: false,
                    channel: channel.clone(),
                    payload: payload.clone(),
                };
                mailbox.deliver(message, limit, now);
                receivers += 1;
            }
        }
        receivers
    }

    /// SPUBLISH: sends `payload` to the subscribers of shard channel
    /// `channel`; returns how many there were.
    pub fn shard_publish(&self, channel: &[u8], payload: &[u8], limit: Limit) -> usize {
        let registry = lock(&self.registry);
        let Some(subscribers) = registry.shards.get(channel) else {
            return 0;
        };
        let (channel, payload): (Arc<[u8]>, Arc<[u8]>) = (Arc::from(channel), Arc::from(payload));
        let now = Instant::now();
        for mailbox in subscribers.values() {
            let message = Message {
                pattern: None,
                shard: true,
                channel: channel.clone(),
                payload: payload.clone(),
            };
            mailbox.deliver(message, limit, now);
        }
        subscribers.len()
    }

    /// The channels (`shard`: shard channels) with at least one subscriber
    /// that match `pattern` (all of them without one), sorted.
    pub fn channels(&self, pattern: Option<&[u8]>, shard: bool) -> Vec<Vec<u8>> {
        let registry = lock(&self.registry);
        let map = if shard {
            &registry.shards
        } else {
            &registry.channels
        };
        let mut names: Vec<Vec<u8>> = map
            .keys()
            .filter(|name| pattern.is_none_or(|p| crate::glob::matches(p, name)))
            .cloned()
            .collect();
        names.sort();
        names
    }

    /// How many clients are subscribed to `channel` (patterns not counted;
    /// `shard`: to shard channel `channel`).
    pub fn numsub(&self, channel: &[u8], shard: bool) -> usize {
        let registry = lock(&self.registry);
        let map = if shard {
            &registry.shards
        } else {
            &registry.channels
        };
        map.get(channel).map_or(0, |s| s.len())
    }

    /// How many distinct patterns some client is subscribed to.
    pub fn numpat(&self) -> usize {
        lock(&self.registry).patterns.len()
    }

    /// How many channels have a subscriber.
    pub fn numchannels(&self) -> usize {
        lock(&self.registry).channels.len()
    }

    /// The channels and the patterns client `id` is subscribed to (for the
    /// ACL check of a user whose rules changed).
    pub fn subscriptions_of(&self, id: u64) -> (Vec<Vec<u8>>, Vec<Vec<u8>>) {
        let registry = lock(&self.registry);
        let of = |map: &HashMap<Vec<u8>, Subscribers>| {
            map.iter()
                .filter(|(_, subs)| subs.contains_key(&id))
                .map(|(name, _)| name.clone())
                .collect()
        };
        let mut channels: Vec<Vec<u8>> = of(&registry.channels);
        channels.extend(of(&registry.shards));
        (channels, of(&registry.patterns))
    }
}

/// Channels or patterns: the two kinds of subscription.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Kind {
    Channel,
    Pattern,
    /// A shard channel (SSUBSCRIBE).
    Shard,
}

impl Kind {
    /// The reply names: `subscribe`/`unsubscribe`, `psubscribe`/`punsubscribe`.
    pub fn names(self) -> (&'static str, &'static str) {
        match self {
            Kind::Channel => ("subscribe", "unsubscribe"),
            Kind::Pattern => ("psubscribe", "punsubscribe"),
            Kind::Shard => ("ssubscribe", "sunsubscribe"),
        }
    }
}

/// A connection's subscriptions; dropping it unsubscribes from all.
pub struct Subscriptions {
    pubsub: Arc<PubSub>,
    client: Arc<ClientInfo>,
    /// Created at the first subscription, kept for the connection's life.
    mailbox: Option<Arc<Mailbox>>,
    channels: HashSet<Vec<u8>>,
    patterns: HashSet<Vec<u8>>,
    shards: HashSet<Vec<u8>>,
}

impl Subscriptions {
    pub fn new(pubsub: Arc<PubSub>, client: Arc<ClientInfo>) -> Subscriptions {
        Subscriptions {
            pubsub,
            client,
            mailbox: None,
            channels: HashSet::new(),
            patterns: HashSet::new(),
            shards: HashSet::new(),
        }
    }

    /// Channels plus patterns subscribed to (the count in the replies).
    pub fn count(&self) -> usize {
        self.channels.len() + self.patterns.len()
    }

    /// The count a confirmation of `kind` shows: shard channels are
    /// counted apart, as in Redis.
    pub fn count_of(&self, kind: Kind) -> usize {
        match kind {
            Kind::Shard => self.shards.len(),
            _ => self.count(),
        }
    }

    /// Whether RESP2's subscribed mode applies (some subscription).
    pub fn active(&self) -> bool {
        self.count() + self.shards.len() > 0
    }

    /// Whether the connection ever subscribed (messages may be queued).
    pub fn has_mailbox(&self) -> bool {
        self.mailbox.is_some()
    }

    fn mine(&mut self, kind: Kind) -> &mut HashSet<Vec<u8>> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shards,
        }
    }

    /// Subscribes to `name`; returns the new count. Subscribing twice is
    /// one subscription.
    pub fn subscribe(&mut self, kind: Kind, name: &[u8]) -> usize {
        if !self.mine(kind).contains(name) {
            let client = self.client.clone();
            let mailbox = self
                .mailbox
                .get_or_insert_with(|| Arc::new(Mailbox::new(client)))
                .clone();
            let pubsub = self.pubsub.clone();
            let mut registry = lock(&pubsub.registry);
            registry
                .map(kind)
                .entry(name.to_vec())
                .or_default()
                .insert(self.client.id, mailbox);
            self.mine(kind).insert(name.to_vec());
            self.publish_counts();
        }
        self.count_of(kind)
    }

    /// Unsubscribes from `name` (a no-op when not subscribed); returns the
    /// new count.
    pub fn unsubscribe(&mut self, kind: Kind, name: &[u8]) -> usize {
        if self.mine(kind).remove(name) {
            let mut registry = lock(&self.pubsub.registry);
            registry.remove(kind, name, self.client.id);
            self.publish_counts();
        }
        self.count_of(kind)
    }

    /// The names of `kind` subscribed to, in no particular order (as
    /// Redis's `UNSUBSCRIBE` with no argument).
    pub fn names(&self, kind: Kind) -> Vec<Vec<u8>> {
        match kind {
            Kind::Channel => self.channels.iter().cloned().collect(),
            Kind::Pattern => self.patterns.iter().cloned().collect(),
            Kind::Shard => self.shards.iter().cloned().collect(),
        }
    }

    fn publish_counts(&self) {
        let c = &self.client;
        c.sub.store(self.channels.len(), Ordering::Relaxed);
        c.psub.store(self.patterns.len(), Ordering::Relaxed);
    }

    /// Moves queued messages into `out`, encoded in its protocol, until
    /// about `max_bytes` were added; returns whether any are left.
    pub fn drain(&self, out: &mut Reply, max_bytes: usize) -> bool {
        let Some(mailbox) = &self.mailbox else {
            return false;
        };
        let mut q = lock(&mailbox.queue);
        let start = out.len();
        while out.len() - start < max_bytes {
            let Some(message) = q.messages.pop_front() else {
                break;
            };
            q.bytes = q.bytes.saturating_sub(message.cost());
            message.encode(out);
        }
        if q.bytes == 0 {
            q.over_soft_since = None;
        }
        !q.messages.is_empty()
    }

    /// Resolves when a message may be waiting (never without a mailbox).
    /// Cancel-safe; spurious wake-ups are possible.
    pub async fn mail(&self) {
        match &self.mailbox {
            Some(mailbox) => mailbox.notify.notified().await,
            None => std::future::pending().await,
        }
    }

    /// Unsubscribes from everything (`RESET`, the connection's end).
    pub fn clear(&mut self) {
        if !self.active() {
            return;
        }
        let mut registry = lock(&self.pubsub.registry);
        for name in self.channels.drain() {
            registry.remove(Kind::Channel, &name, self.client.id);
        }
        for name in self.patterns.drain() {
            registry.remove(Kind::Pattern, &name, self.client.id);
        }
        for name in self.shards.drain() {
            registry.remove(Kind::Shard, &name, self.client.id);
        }
        drop(registry);
        self.publish_counts();
    }
}

impl Drop for Subscriptions {
    fn drop(&mut self) {
        self.clear();
    }
}

impl Registry {
    fn map(&mut self, kind: Kind) -> &mut HashMap<Vec<u8>, Subscribers> {
        match kind {
            Kind::Channel => &mut self.channels,
            Kind::Pattern => &mut self.patterns,
            Kind::Shard => &mut self.shards,
        }
    }

    /// Takes client `id` off `name`; forgets `name` once nobody is on it.
    fn remove(&mut self, kind: Kind, name: &[u8], id: u64) {
        let map = self.map(kind);
        if let Some(subscribers) = map.get_mut(name) {
            subscribers.remove(&id);
            if subscribers.is_empty() {
                map.remove(name);
            }
        }
    }
}

/// Whether a RESP2 client with subscriptions may run `command` (Redis's
/// subscribed mode).
pub fn allowed_while_subscribed(command: &str) -> bool {
    matches!(
        command,
        "subscribe"
            | "unsubscribe"
            | "psubscribe"
            | "punsubscribe"
            | "ssubscribe"
            | "sunsubscribe"
            | "ping"
            | "quit"
            | "reset"
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::net::SocketAddr;

    fn client(id: u64) -> Arc<ClientInfo> {
        let addr: SocketAddr = "127.0.0.1:1".parse().unwrap();
        Arc::new(ClientInfo::new(id, addr, addr, 0, 0))
    }

    const NO_LIMIT: Limit = Limit {
        hard: 0,
        soft: 0,
        soft_secs: 0,
    };

    fn drained(s: &Subscriptions) -> Vec<u8> {
        let mut out = Reply::new();
        while s.drain(&mut out, 1 << 20) {}
        out.buf
    }

    #[test]
    fn channels_and_patterns_reach_their_subscribers_in_order() {
        let ps = Arc::new(PubSub::default());
        let mut a = Subscriptions::new(ps.clone(), client(1));
        let mut b = Subscriptions::new(ps.clone(), client(2));
        assert_eq!(a.subscribe(Kind::Channel, b"news"), 1);
        assert_eq!(a.subscribe(Kind::Channel, b"news"), 1);
        assert_eq!(a.subscribe(Kind::Pattern, b"n*"), 2);
        assert_eq!(b.subscribe(Kind::Pattern, b"x*"), 1);
        assert_eq!(ps.publish(b"news", b"1", NO_LIMIT), 2);
        assert_eq!(ps.publish(b"xnews", b"2", NO_LIMIT), 1);
        assert_eq!(ps.publish(b"news", b"3", NO_LIMIT), 2);
        assert_eq!(
            drained(&a),
            b"*3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$1\r\n1\r\n\
              *4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$1\r\n1\r\n\
              *3\r\n$7\r\nmessage\r\n$4\r\nnews\r\n$1\r\n3\r\n\
              *4\r\n$8\r\npmessage\r\n$2\r\nn*\r\n$4\r\nnews\r\n$1\r\n3\r\n"
        );
        assert_eq!(ps.numsub(b"news", false), 1);
        assert_eq!(ps.numpat(), 2);
        assert_eq!(ps.channels(None, false), vec![b"news".to_vec()]);
        drop(a);
        assert_eq!(ps.numsub(b"news", false), 0);
        assert_eq!(ps.numpat(), 1);
        assert_eq!(ps.publish(b"news", b"4", NO_LIMIT), 0);
        assert_eq!(b.unsubscribe(Kind::Pattern, b"x*"), 0);
        assert_eq!(ps.numpat(), 0);
    }

    #[test]
    fn a_subscriber_past_the_hard_limit_is_killed_and_its_queue_dropped() {
        let ps = Arc::new(PubSub::default());
        let info = client(7);
        let mut s = Subscriptions::new(ps.clone(), info.clone());
        s.subscribe(Kind::Channel, b"c");
        let limit = Limit {
            hard: 1000,
            soft: 0,
            soft_secs: 0,
        };
        ps.publish(b"c", &[b'x'; 500], limit);
        assert!(!info.is_killed());
        ps.publish(b"c", &[b'x'; 500], limit);
        assert!(info.is_killed());
        assert!(drained(&s).is_empty(), "the queue was dropped");
    }

    #[test]
    fn the_soft_limit_needs_its_seconds() {
        let mut q = Queue::default();
        let limit = Limit {
            hard: 0,
            soft: 10,
            soft_secs: 1,
        };
        let t0 = Instant::now();
        q.bytes = 11;
        assert!(!q.breaks(limit, t0));
        assert!(!q.breaks(limit, t0 + Duration::from_millis(900)));
        assert!(q.breaks(limit, t0 + Duration::from_millis(1100)));
        q.bytes = 5;
        assert!(!q.breaks(limit, t0 + Duration::from_secs(5)));
        q.bytes = 11;
        assert!(!q.breaks(limit, t0 + Duration::from_secs(5)), "restarted");
    }
}
