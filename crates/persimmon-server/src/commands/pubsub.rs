//! Pub/sub commands: SUBSCRIBE, UNSUBSCRIBE, PSUBSCRIBE, PUNSUBSCRIBE,
//! PUBLISH, SSUBSCRIBE, SUNSUBSCRIBE, SPUBLISH, the PUBSUB subcommands (CHANNELS, NUMSUB, NUMPAT,
//! SHARDCHANNELS, SHARDNUMSUB, HELP), and RESET (which also ends a
//! client's subscriptions).
//! The registry and the delivery are in `../pubsub.rs`.
//!
//! Invariants:
//! - Every (un)subscription gets its own confirmation, in the order given
//!   (a RESP3 push, a RESP2 array), with the client's count after it, as
//!   Redis sends them; `UNSUBSCRIBE` with nothing to unsubscribe still
//!   replies once, with a null channel.
//! - A PUBLISH's own subscribed connection gets the message before the
//!   reply (the mailbox is moved into the output right after delivery).
//! - `CLIENT REPLY OFF|SKIP` silences replies but not pub/sub output
//!   (confirmations and messages), as in Redis 7.
//! - Shard channels (SSUBSCRIBE, SPUBLISH) are a namespace of their own,
//!   as on a Redis that is not a cluster: SPUBLISH reaches only shard
//!   subscribers (`smessage`), and their count is kept apart.

use persimmon_resp::Args;
use persimmon_types::Error;

use crate::pubsub::{Kind, Limit};
use crate::session::{arity, subcommand_syntax, Session};

/// Bytes of messages moved into the output at a time (the connection
/// writes between moves).
pub const DRAIN_BYTES: usize = 64 << 10;

pub fn subscribe(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    subscribe_all(s, &a, Kind::Channel);
    Ok(())
}

pub fn psubscribe(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    subscribe_all(s, &a, Kind::Pattern);
    Ok(())
}

/// SSUBSCRIBE shardchannel ...
pub fn ssubscribe(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    subscribe_all(s, &a, Kind::Shard);
    Ok(())
}

/// SUNSUBSCRIBE [shardchannel ...]
pub fn sunsubscribe(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    unsubscribe_all(s, &a, Kind::Shard);
    Ok(())
}

/// SPUBLISH shardchannel message: the number of shard subscribers reached.
pub fn spublish(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let limit = Limit::from_settings(s.shared.settings.pubsub_limit());
    let receivers = s.shared.pubsub.shard_publish(a.get(1), a.get(2), limit);
    let start = s.out.len();
    while s.pubsub.drain(&mut s.out, DRAIN_BYTES) {
        if s.output_over_limit() {
            break;
        }
    }
    keep_if_silenced(s, start);
    s.out.int(receivers as i64);
    Ok(())
}

pub fn unsubscribe(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    unsubscribe_all(s, &a, Kind::Channel);
    Ok(())
}

pub fn punsubscribe(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    unsubscribe_all(s, &a, Kind::Pattern);
    Ok(())
}

fn subscribe_all(s: &mut Session, a: &Args<'_>, kind: Kind) {
    let (name, _) = kind.names();
    for channel in a.from(1) {
        let count = s.pubsub.subscribe(kind, channel);
        confirm(s, name, Some(channel), count);
    }
}

fn unsubscribe_all(s: &mut Session, a: &Args<'_>, kind: Kind) {
    let (_, name) = kind.names();
    let names: Vec<Vec<u8>> = if a.len() > 1 {
        a.from(1).map(<[u8]>::to_vec).collect()
    } else {
        s.pubsub.names(kind)
    };
    if names.is_empty() {
        let count = s.pubsub.count_of(kind);
        confirm(s, name, None, count);
    }
    for channel in names {
        let count = s.pubsub.unsubscribe(kind, &channel);
        confirm(s, name, Some(&channel), count);
    }
}

/// `[kind, channel, count]`, a push in RESP3.
fn confirm(s: &mut Session, kind: &str, channel: Option<&[u8]>, count: usize) {
    let start = s.out.len();
    s.out.push(3);
    s.out.bulk(kind.as_bytes());
    match channel {
        Some(c) => s.out.bulk(c),
        None => s.out.null(),
    }
    s.out.int(count as i64);
    keep_if_silenced(s, start);
}

/// Marks the output since `start` as pub/sub output, which `CLIENT REPLY
/// OFF|SKIP` does not silence.
fn keep_if_silenced(s: &mut Session, start: usize) {
    if s.reply_mode != crate::session::ReplyMode::On {
        s.pushed.push(start..s.out.len());
    }
}

/// PUBLISH channel message: the number of deliveries.
pub fn publish(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let limit = Limit::from_settings(s.shared.settings.pubsub_limit());
    let receivers = s.shared.pubsub.publish(a.get(1), a.get(2), limit);
    // Messages to this very client go before the reply, as in Redis.
    let start = s.out.len();
    while s.pubsub.drain(&mut s.out, DRAIN_BYTES) {
        if s.output_over_limit() {
            break;
        }
    }
    keep_if_silenced(s, start);
    s.out.int(receivers as i64);
    Ok(())
}

const PUBSUB_HELP: [&str; 13] = [
    "PUBSUB <subcommand> [<arg> [value] [opt] ...]. Subcommands are:",
    "CHANNELS [<pattern>]",
    "    Return the currently active channels matching a <pattern> (default: '*').",
    "NUMPAT",
    "    Return number of subscriptions to patterns.",
    "NUMSUB [<channel> ...]",
    "    Return the number of subscribers for the specified channels, excluding",
    "    pattern subscriptions(default: no channels).",
    "SHARDCHANNELS [<pattern>]",
    "    Return the currently active shard level channels matching a <pattern> (default: '*').",
    "SHARDNUMSUB [<shardchannel> ...]",
    "    Return the number of subscribers for the specified shard level channel(s)",
    "HELP",
];

/// PUBSUB CHANNELS [pattern]: the channels with subscribers.
pub fn channels(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let argc = a.len();
    if argc > 3 {
        return Err(subcommand_syntax("pubsub", a.get(1)));
    }
    let pattern = (argc == 3).then(|| a.get(2));
    let names = s.shared.pubsub.channels(pattern, false);
    s.out.array(names.len());
    for name in names {
        s.out.bulk(&name);
    }
    Ok(())
}

/// PUBSUB NUMSUB [channel ...]: each channel and its subscribers.
pub fn numsub(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    s.out.array(2 * (a.len() - 2));
    for channel in a.from(2) {
        s.out.bulk(channel);
        let n = s.shared.pubsub.numsub(channel, false);
        s.out.int(n as i64);
    }
    Ok(())
}

/// PUBSUB NUMPAT: the pattern subscriptions.
pub fn numpat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() != 2 {
        return Err(subcommand_syntax("pubsub", a.get(1)));
    }
    let n = s.shared.pubsub.numpat();
    s.out.int(n as i64);
    Ok(())
}

/// PUBSUB SHARDCHANNELS [pattern]: the shard channels with subscribers.
pub fn shardchannels(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() > 3 {
        return Err(subcommand_syntax("pubsub", a.get(1)));
    }
    let pattern = (a.len() == 3).then(|| a.get(2));
    let names = s.shared.pubsub.channels(pattern, true);
    s.out.array(names.len());
    for name in names {
        s.out.bulk(&name);
    }
    Ok(())
}

/// PUBSUB SHARDNUMSUB [shardchannel ...]: each and its subscribers.
pub fn shardnumsub(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    s.out.array(2 * (a.len() - 2));
    for channel in a.from(2) {
        s.out.bulk(channel);
        let n = s.shared.pubsub.numsub(channel, true);
        s.out.int(n as i64);
    }
    Ok(())
}

/// PUBSUB HELP
pub fn help(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() != 2 {
        return Err(subcommand_syntax("pubsub", a.get(1)));
    }
    let mut lines = PUBSUB_HELP.to_vec();
    lines.push("    Print this help.");
    s.out.simple_lines(&lines);
    Ok(())
}

/// RESET: the connection as if new (out of MULTI, nothing watched, no
/// subscription, database 0, RESP2, no name, and logged out when a
/// password is set); replies `+RESET`.
pub fn reset(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() != 1 {
        return Err(arity("reset"));
    }
    s.multi = None;
    s.store.watched.clear();
    s.store.db = 0;
    s.info.db.store(0, std::sync::atomic::Ordering::Relaxed);
    s.pubsub.clear();
    s.monitor = None;
    s.out.resp3 = false;
    s.info.resp.store(2, std::sync::atomic::Ordering::Relaxed);
    s.info
        .name
        .lock()
        .unwrap_or_else(|e| e.into_inner())
        .clear();
    s.authenticated = !s.shared.acl.auth_required();
    s.user = s.shared.acl.default_user();
    s.info.set_user_name("default");
    s.out.simple("RESET");
    Ok(())
}
