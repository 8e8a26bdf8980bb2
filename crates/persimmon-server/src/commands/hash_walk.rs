//! Reads that walk a whole hash: HRANDFIELD (random fields) and HSCAN.
//! A hash is one stored value, so both behave as Redis does for its small
//! (listpack) hashes: HSCAN returns every field in one call with cursor 0,
//! HRANDFIELD samples the stored fields.
//!
//! Invariants:
//! - Errors come in Redis's order: the arguments Redis parses before the
//!   key, then the key's type, then (HSCAN) the options, which a missing
//!   key skips (it answers an empty scan).
//! - HRANDFIELD with a positive count returns distinct fields (all of them
//!   when the count is at least the hash's size); with a negative one,
//!   `-count` independent uniform draws. A reply that passes the output
//!   limit stops early and the connection is closed.

use crate::glob;
use crate::protocol::Args;
use crate::random;
use crate::reply::Reply;
use crate::session::{int_arg, int_arg_within, is, syntax, Error, Session};

use super::hashes::with_fields;

/// HRANDFIELD key [count [WITHVALUES]].
pub fn hrandfield(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    if a.len() == 2 {
        return one_random_field(s, a.get(1));
    }
    let (count, with_values) = count_args(&a)?;
    let found = {
        let out = &mut s.out;
        let limit = s.shared.settings.output_buffer_limit();
        with_fields(&mut s.store, a.get(1), |fields| {
            random_fields(out, fields, count, with_values, limit)
        })?
    };
    if found.is_none() {
        s.out.array(0);
    }
    s.output_over_limit();
    Ok(())
}

/// HRANDFIELD without a count: one field, or nil for a missing key.
fn one_random_field(s: &mut Session, key: &[u8]) -> Result<(), Error> {
    let out = &mut s.out;
    let found = with_fields(&mut s.store, key, |fields| match fields.len() {
        0 => out.null(),
        n => out.bulk(fields[random::index_below(n)].0),
    })?;
    if found.is_none() {
        s.out.null();
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

/// HRANDFIELD's reply with a count: `|count|` fields drawn with repetition
/// when `count` is negative, else up to `count` distinct ones. Stops early
/// once the reply passes `limit` bytes (the connection is then closed).
fn random_fields(
    out: &mut Reply,
    fields: &[(&[u8], &[u8])],
    count: i64,
    with_values: bool,
    limit: usize,
) {
    let n = fields.len();
    let picks = match count {
        _ if n == 0 => 0,
        c if c < 0 => c.unsigned_abs(),
        c => (c as u64).min(n as u64),
    };
    let flat = with_values && !out.resp3;
    out.array(picks as usize * if flat { 2 } else { 1 });
    let emit = |out: &mut Reply, (f, v): (&[u8], &[u8])| {
        if with_values && out.resp3 {
            out.array(2);
        }
        out.bulk(f);
        if with_values {
            out.bulk(v);
        }
    };
    if count < 0 {
        for i in 0..picks {
            emit(out, fields[random::index_below(n)]);
            if i % 1024 == 1023 && out.len() > limit {
                return;
            }
        }
        return;
    }
    // Distinct fields: all of them, or the head of a partial shuffle.
    let mut order: Vec<usize> = (0..n).collect();
    if picks < n as u64 {
        for i in 0..picks as usize {
            let j = i + random::index_below(n - i);
            order.swap(i, j);
        }
    }
    for &i in &order[..picks as usize] {
        emit(out, fields[i]);
    }
}

/// A SCAN cursor as Redis reads one (C's `strtoul`: an optional sign,
/// decimal digits, a negative one wrapping around).
pub(super) fn scan_cursor(arg: &[u8]) -> Result<u64, Error> {
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

/// HSCAN's options: the MATCH pattern (`None`: every field). COUNT is
/// checked and otherwise moot: the whole hash comes in one reply.
pub(super) fn hscan_pattern<'a>(a: &Args<'a>) -> Result<Option<&'a [u8]>, Error> {
    let mut pattern = None;
    let mut i = 3;
    while i < a.len() {
        if i + 1 >= a.len() {
            return Err(syntax());
        }
        let (opt, value) = (a.get(i), a.get(i + 1));
        if is(opt, "COUNT") {
            if int_arg(value)? < 1 {
                return Err(syntax());
            }
        } else if is(opt, "MATCH") {
            pattern = Some(value).filter(|p| *p != b"*");
        } else {
            return Err(syntax());
        }
        i += 2;
    }
    Ok(pattern)
}

/// HSCAN key cursor [MATCH pattern] [COUNT count]: a hash is one stored
/// value, so the first call returns every field (those matching) and
/// cursor 0, as Redis does for its small hashes. Errors in Redis's order:
/// the cursor, the key's type, then the options (a missing key answers an
/// empty scan whatever they are).
pub fn hscan(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    scan_cursor(a.get(2))?;
    let options = hscan_pattern(&a);
    let out = &mut s.out;
    let found = with_fields(&mut s.store, a.get(1), |fields| {
        let pattern = options.clone()?;
        let shown: Vec<_> = fields
            .iter()
            .filter(|(f, _)| pattern.is_none_or(|p| glob::matches(p, f)))
            .collect();
        out.array(2);
        out.bulk(b"0");
        out.array(shown.len() * 2);
        for (f, v) in shown {
            out.bulk(f);
            out.bulk(v);
        }
        Ok::<(), Error>(())
    })?;
    match found {
        Some(r) => r?,
        None => {
            s.out.array(2);
            s.out.bulk(b"0");
            s.out.array(0);
        }
    }
    s.output_over_limit();
    Ok(())
}
