//! Reads that pick or walk the entries of a collection by rank: HRANDFIELD
//! (random fields of a hash) and the HSCAN/SSCAN cursor (shared with
//! `sets`). Each runs in one atomic unit and builds its reply in a scratch
//! buffer, copied out once the unit committed.
//!
//! Invariants:
//! - Errors come in Redis's order: the arguments Redis parses before the
//!   key, then the key's type, then (scans) the options, which a missing
//!   key skips (it answers an empty scan).
//! - HRANDFIELD draws ranks uniformly (`random`), each fetched in
//!   O(height): with a positive count it returns distinct fields (all of
//!   them, in field order, when the count is at least the hash's size);
//!   with a negative one, `-count` independent uniform draws. A reply that
//!   passes the output limit stops early and the connection is closed.
//! - A scan cursor is the rank (in byte order of fields or members) to
//!   continue from; 0 starts and ends an iteration. Each call examines up
//!   to COUNT entries (default 10) from the cursor and returns those that
//!   match. Guarantee: an iteration over a collection that does not change
//!   meanwhile returns every entry exactly once. If entries are added or
//!   removed meanwhile, an entry before the cursor that goes (comes) shifts
//!   the later ones back (forth) by one rank, so an entry present the
//!   whole time may be missed (repeated) once per such change — weaker
//!   than Redis's guarantee, which never misses such an entry.

use persimmon_resp::{Args, Reply};
use persimmon_types::coll::{self, Coll, Kind};
use persimmon_types::random;
use persimmon_types::store::Store;
use persimmon_types::Error;

use super::hashes::reply_from_collection;
use crate::glob;
use crate::session::{int_arg, int_arg_within, is, syntax, Session};

/// HRANDFIELD key [count [WITHVALUES]].
pub fn hrandfield(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() == 2 {
        return one_random(s, a.get(1), Kind::Hash);
    }
    let (count, with_values) = count_args(&a)?;
    let limit = s.shared.settings.output_buffer_limit();
    reply_from_collection(
        s,
        a.get(1),
        Kind::Hash,
        |out| out.array(0),
        |st, c, r| random_fields(st, c, r, count, with_values, limit),
    )
}

/// HRANDFIELD and SRANDMEMBER without a count: one field or member, or
/// nil for a missing key.
pub(super) fn one_random(s: &mut Session, key: &[u8], kind: Kind) -> Result<(), Error> {
    let picked = coll::with(&mut s.store, key, kind, |st, c| {
        c.at(st, 0, random::below(c.len()))
    })?;
    match picked.flatten() {
        Some((f, _)) => s.out.bulk(&f),
        None => s.out.null(),
    }
    Ok(())
}

/// HRANDFIELD's count and WITHVALUES, with Redis's bounds: the count's
/// magnitude fits a C `long` (and, with values, half of one).
fn count_args(a: &Args<'_>) -> Result<(i64, bool), Error> {
    let count = int_arg_within(a.get(2), -i64::MAX, i64::MAX)?;
    let with_values = match a.len() {
        3 => false,
        4 if is(a.get(3), "WITHVALUES") => true,
        _ => return Err(syntax()),
    };
    if with_values && !(-i64::MAX / 2..=i64::MAX / 2).contains(&count) {
        return Err(Error::new("ERR value is out of range"));
    }
    Ok((count, with_values))
}

/// The ranks a count picks from `n` entries: `|count|` uniform draws when
/// `count` is negative (drawn as they are written), else every rank or
/// `count` distinct ones.
pub(super) enum Picks {
    All,
    Distinct(Vec<u64>),
    Repeating(u64),
}

pub(super) fn picks(n: u64, count: i64) -> Picks {
    match count {
        c if c < 0 => Picks::Repeating(c.unsigned_abs()),
        c if c as u64 >= n => Picks::All,
        c => Picks::Distinct(random::distinct_below(n, c as u64)),
    }
}

/// Writes the entries `picks` names into `r` as an array (each entry by
/// `emit`), stopping once `r` passes `limit` bytes.
pub(super) fn write_picks(
    st: &mut Store,
    c: &mut Coll,
    r: &mut Reply,
    picks: Picks,
    per_entry: usize,
    limit: usize,
    mut emit: impl FnMut(&mut Reply, &[u8], &[u8]),
) -> Result<(), Error> {
    let n = c.len();
    match picks {
        Picks::All => {
            r.array(n as usize * per_entry);
            c.walk(st, 0, 0, false, |k, v| {
                emit(r, k, v);
                Ok(r.len() <= limit)
            })
        }
        Picks::Distinct(ranks) => {
            r.array(ranks.len() * per_entry);
            for rank in ranks {
                let (k, v) = c
                    .at(st, 0, rank)?
                    .ok_or_else(persimmon_types::coll::page::damaged)?;
                emit(r, &k, &v);
                if r.len() > limit {
                    break;
                }
            }
            Ok(())
        }
        Picks::Repeating(k) => {
            r.array(if n == 0 { 0 } else { k as usize * per_entry });
            for _ in 0..if n == 0 { 0 } else { k } {
                let (k, v) = c
                    .at(st, 0, random::below(n))?
                    .ok_or_else(persimmon_types::coll::page::damaged)?;
                emit(r, &k, &v);
                if r.len() > limit {
                    break;
                }
            }
            Ok(())
        }
    }
}

/// HRANDFIELD's reply with a count (see [`picks`]); in RESP3 each field
/// and value WITHVALUES come as a pair.
fn random_fields(
    st: &mut Store,
    c: &mut Coll,
    r: &mut Reply,
    count: i64,
    with_values: bool,
    limit: usize,
) -> Result<(), Error> {
    let flat = with_values && !r.resp3;
    let per_entry = if flat { 2 } else { 1 };
    write_picks(
        st,
        c,
        r,
        picks(c.len(), count),
        per_entry,
        limit,
        |r, f, v| {
            if with_values && r.resp3 {
                r.array(2);
            }
            r.bulk(f);
            if with_values {
                r.bulk(v);
            }
        },
    )
}

/// A SCAN cursor as Redis reads one (C's `strtoul`: an optional sign,
/// decimal digits, a negative one wrapping around).
fn scan_cursor(arg: &[u8]) -> Result<u64, Error> {
    let invalid = || Error::new("ERR invalid cursor");
    let (neg, digits) = match arg.first() {
        Some(b'-') => (true, &arg[1..]),
        Some(b'+') => (false, &arg[1..]),
        _ => (false, arg),
    };
    if arg.is_empty() {
        return Ok(0);
    }
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return Err(invalid());
    }
    let n = std::str::from_utf8(digits)
        .ok()
        .and_then(|d| d.parse::<u64>().ok())
        .ok_or_else(invalid)?;
    Ok(if neg { n.wrapping_neg() } else { n })
}

/// A scan's options: the MATCH pattern (`None`: every entry) and COUNT.
#[derive(Clone)]
struct ScanOptions<'a> {
    pattern: Option<&'a [u8]>,
    count: u64,
}

fn scan_options<'a>(a: &Args<'a>) -> Result<ScanOptions<'a>, Error> {
    let mut o = ScanOptions {
        pattern: None,
        count: 10,
    };
    let mut i = 3;
    while i < a.len() {
        if i + 1 >= a.len() {
            return Err(syntax());
        }
        let (opt, value) = (a.get(i), a.get(i + 1));
        if is(opt, "COUNT") {
            let n = int_arg(value)?;
            if n < 1 {
                return Err(syntax());
            }
            o.count = n as u64;
        } else if is(opt, "MATCH") {
            o.pattern = Some(value).filter(|p| *p != b"*");
        } else {
            return Err(syntax());
        }
        i += 2;
    }
    Ok(o)
}

/// HSCAN/SSCAN key cursor [MATCH pattern] [COUNT count] on a collection of
/// `kind` (a hash lists field and value, a set its members). Errors in
/// Redis's order: the cursor, the key's type, then the options (a missing
/// key answers an empty scan whatever they are).
pub(super) fn scan(s: &mut Session, a: Args<'_>, kind: Kind) -> Result<(), Error> {
    let cursor = scan_cursor(a.get(2))?;
    let options = scan_options(&a);
    let limit = s.shared.settings.output_buffer_limit();
    let mut items: Vec<Vec<u8>> = Vec::new();
    let next = coll::with(&mut s.store, a.get(1), kind, |st, c| {
        items.clear();
        let o = options.clone()?;
        let mut examined = 0u64;
        let mut bytes = 0usize;
        if cursor < c.len() {
            c.walk(st, 0, cursor, false, |k, v| {
                examined += 1;
                if o.pattern.is_none_or(|p| glob::matches(p, k)) {
                    bytes += k.len() + v.len();
                    items.push(k.to_vec());
                    match kind {
                        Kind::Hash => items.push(v.to_vec()),
                        Kind::ZSet => {
                            items.push(super::zsets::score_text(coll::decode_score(v)).into_bytes())
                        }
                        // Only hashes, sets and sorted sets are scanned.
                        Kind::Set | Kind::List | Kind::Stream => {}
                    }
                }
                Ok(examined < o.count && bytes <= limit)
            })?;
        }
        let next = cursor.saturating_add(examined);
        Ok(if next >= c.len() { 0 } else { next })
    })?;
    s.out.array(2);
    s.out.bulk(next.unwrap_or(0).to_string().as_bytes());
    s.out.array(items.len());
    for i in &items {
        s.out.bulk(i);
    }
    s.output_over_limit();
    Ok(())
}

/// HSCAN key cursor [MATCH pattern] [COUNT count].
pub fn hscan(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    scan(s, a, Kind::Hash)
}
