//! Ordered key-space commands, served by the pool's ordered index (a pool
//! created with `persimmon serve --ordered-index` or `ordered-index = true`):
//! KRANGE and KPREFIX. Redis has no ordered key space; the syntax borrows
//! ZRANGEBYLEX's `-`, `+` and LIMIT.
//!
//! ```text
//! KRANGE start end [REV] [LIMIT n] [WITHVALUES]   keys k with start <= k < end
//! KPREFIX prefix [REV] [LIMIT n] [WITHVALUES]     keys that start with prefix
//! ```
//!
//! - `start` of `-` and `end` of `+` are the open ends (so the keys `-` and
//!   `+` themselves cannot be given as those bounds). `start >= end` is an
//!   empty range.
//! - The reply is an array of keys in ascending byte order (descending with
//!   REV). WITHVALUES makes it a flat array `key, value, key, value, ...`, in
//!   RESP3 too (a RESP3 map may lose the order in clients); the value of a
//!   key holding a hash or a sorted set is nil, as MGET gives.
//! - `LIMIT n`: the first n keys in the chosen order; a negative n means no
//!   limit, as in ZRANGEBYLEX. Without LIMIT every key of the range.
//! - Paging: the next ascending page starts at the last key returned
//!   followed by a zero byte (`start` is inclusive); the next descending
//!   page ends at the last key returned (`end` is exclusive).
//!
//! Invariants:
//! - One reply never passes `client-output-buffer-limit`: a reply that
//!   would is refused with an error before anything of it is queued, and the
//!   connection stays open (KEYS closes the client instead; here the client
//!   can ask again with LIMIT).
//! - Under concurrent writes a reply has the engine's range guarantees
//!   (`Db::range`): keys in order, each at most once, every key present
//!   for the whole command included.
//! - A scan that may return more than [`INLINE_KEYS`] keys runs under
//!   `blocking`, so a long one does not stall the worker's other clients.

use std::ops::Bound;

use persimmon_resp::{Args, Reply};
use persimmon_types::dbs;
use persimmon_types::value::Stored;
use persimmon_types::Error;

use crate::session::{blocking, int_arg, is, syntax, Session};
use crate::shared::Shared;

/// Scans capped at this many keys run on the async worker (the work of an
/// MGET of as many keys); longer ones under `blocking`.
const INLINE_KEYS: usize = 1024;

/// The options after the range.
#[derive(Debug, Default)]
struct RangeOptions {
    rev: bool,
    /// `None`: no limit.
    limit: Option<usize>,
    values: bool,
}

/// Parses `[REV] [LIMIT n] [WITHVALUES]` (any order, any case) from `a[first..]`.
fn range_options(a: &Args<'_>, first: usize) -> Result<RangeOptions, Error> {
    let mut o = RangeOptions::default();
    let mut i = first;
    while i < a.len() {
        let opt = a.get(i);
        if is(opt, "REV") {
            o.rev = true;
        } else if is(opt, "WITHVALUES") {
            o.values = true;
        } else if is(opt, "LIMIT") {
            if i + 1 >= a.len() {
                return Err(syntax());
            }
            // A negative count is no limit, as in ZRANGEBYLEX.
            o.limit = usize::try_from(int_arg(a.get(i + 1))?).ok();
            i += 1;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    Ok(o)
}

fn need_ordered_index(s: &Session, command: &str) -> Result<(), Error> {
    if s.shared.keyspace.db.has_ordered_index() {
        return Ok(());
    }
    Err(Error::new(format!(
        "ERR {command} needs the ordered index, and this pool was created without it \
         (create the pool with `persimmon serve --ordered-index`, or `ordered-index = true` \
         in the config file)"
    )))
}

/// KRANGE start end [REV] [LIMIT n] [WITHVALUES]
pub fn krange(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (start, end) = (a.get(1), a.get(2));
    let o = range_options(&a, 3)?;
    need_ordered_index(s, "KRANGE")?;
    let lower: &[u8] = if start == b"-" { b"" } else { start };
    let upper = (end != b"+").then_some(end);
    reply_range(s, lower, upper, &o)
}

/// KPREFIX prefix [REV] [LIMIT n] [WITHVALUES]
pub fn kprefix(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let prefix = a.get(1);
    let o = range_options(&a, 2)?;
    need_ordered_index(s, "KPREFIX")?;
    let end = persimmon::prefix_end(prefix);
    reply_range(s, prefix, end.as_deref(), &o)
}

/// Engine key ranges, in order, and the namespace whose keys they hold.
struct Bounds {
    ns: u32,
    ranges: Vec<(Vec<u8>, Option<Vec<u8>>)>,
}

/// A key and, with WITHVALUES, its stored value.
type Item = persimmon::Result<(Vec<u8>, Option<Vec<u8>>)>;

/// Builds the whole reply for the selected database's keys from `lower`
/// (inclusive) to `upper` (exclusive; `None`: no end), then queues it, or
/// refuses it when it would pass the output limit.
fn reply_range(
    s: &mut Session,
    lower: &[u8],
    upper: Option<&[u8]>,
    o: &RangeOptions,
) -> Result<(), Error> {
    let ns = s.store.namespace();
    let mut ranges = dbs::engine_ranges(ns, lower, upper);
    if o.rev {
        ranges.reverse();
    }
    let bounds = Bounds { ns, ranges };
    let limit = o.limit.unwrap_or(usize::MAX);
    let output_limit = s.shared.settings.output_buffer_limit();
    let room = output_limit.saturating_sub(s.out.len());
    let mut body = Reply {
        buf: Vec::new(),
        resp3: s.out.resp3,
        errors: Default::default(),
    };
    let shared = s.shared.clone();
    let mut run = || fill(&shared, &bounds, o, limit, room, &mut body);
    let keys = if limit <= INLINE_KEYS {
        run()?
    } else {
        blocking(run)?
    };
    let Some(keys) = keys else {
        return Err(Error::new(format!(
            "ERR the reply would pass client-output-buffer-limit ({output_limit} bytes): ask \
             for fewer keys with LIMIT n, and page from the last key returned"
        )));
    };
    s.out.array(if o.values { 2 * keys } else { keys });
    s.out.buf.extend_from_slice(&body.buf);
    Ok(())
}

/// Encodes the keys (and values) of `bounds` into `body`; returns how many
/// keys, or `None` as soon as `body` grows past `room` bytes.
fn fill(
    shared: &Shared,
    bounds: &Bounds,
    o: &RangeOptions,
    limit: usize,
    room: usize,
    body: &mut Reply,
) -> Result<Option<usize>, Error> {
    let mut items: Box<dyn Iterator<Item = Item> + '_> = Box::new(std::iter::empty());
    for (lo, hi) in &bounds.ranges {
        let range = (
            Bound::Included(lo.as_slice()),
            hi.as_deref().map_or(Bound::Unbounded, Bound::Excluded),
        );
        items = Box::new(items.chain(range_items(&shared.keyspace.db, range, o)?));
    }
    let ns = bounds.ns;
    let items = items.map(move |r| {
        r.map(|(k, v)| {
            let key = dbs::key_in(ns, &k).map(<[u8]>::to_vec).unwrap_or_default();
            (key, v)
        })
    });
    let mut keys = 0;
    for item in items.take(limit) {
        if keys % 4096 == 4095 && shared.is_stopping() {
            break;
        }
        let (key, value) = item?;
        body.bulk(&key);
        if let Some(value) = value {
            match Stored::decode(&value) {
                Stored::String(text) => body.bulk(text),
                // As MGET: nil for a key of another type.
                _ => body.null(),
            }
        }
        keys += 1;
        if body.len() > room {
            return Ok(None);
        }
    }
    Ok(Some(keys))
}

/// The keys (and, with WITHVALUES, values) of one engine key range.
fn range_items<'d>(
    db: &'d persimmon::Db,
    range: (Bound<&[u8]>, Bound<&[u8]>),
    o: &RangeOptions,
) -> Result<Box<dyn Iterator<Item = Item> + 'd>, Error> {
    Ok(if o.values {
        let range = db
            .range::<[u8]>(range)?
            .map(|r| r.map(|(k, v)| (k, Some(v))));
        if o.rev {
            Box::new(range.rev())
        } else {
            Box::new(range)
        }
    } else {
        let keys = db.range_keys::<[u8]>(range)?.map(|r| r.map(|k| (k, None)));
        if o.rev {
            Box::new(keys.rev())
        } else {
            Box::new(keys)
        }
    })
}
