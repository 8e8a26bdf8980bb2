//! SORT and SORT_RO: the elements of a list, set or sorted set, ordered
//! numerically (the default) or as byte strings (ALPHA), by the elements
//! themselves or by weights found through a BY pattern, cut by LIMIT,
//! mapped through GET patterns, and replied or written to a list (STORE).
//!
//! The source is read whole (`coll::read_key`, O(size) as SORT is in
//! Redis); a `->field` lookup reads one field of a hash (`coll::with`,
//! O(height)); STORE writes a new list (`coll::write_whole`).
//!
//! Invariants:
//! - The whole command (the source, every BY and GET lookup and the STORE
//!   write) is one atomic unit of the store: it sees one state of the
//!   selected database and writes only if none of what it read changed.
//! - Everything is decided before anything is written: a syntax error,
//!   WRONGTYPE for a source that is no list, set or sorted set, or a weight
//!   that is no double ("One or more scores can't be converted into
//!   double") writes nothing.
//! - Replies follow Redis 7.0.15: options in any order (the last BY, LIMIT
//!   and STORE win; any BY without `*` means no sorting), a missing source is
//!   empty, LIMIT clamps as Redis does, ties in a numeric sort fall back to
//!   the elements' bytes, weights parse as C's `strtod` does (leading
//!   blanks, hex, `inf`; nothing after the number; no overflow, underflow
//!   or NaN), ALPHA compares bytes (Redis's `strcoll` in the C or C.UTF-8
//!   locale; up to a NUL byte when replying, whole when storing, as Redis).
//!   BY nosort keeps a list's or sorted set's own order (reversed by DESC);
//!   a set under BY nosort and STORE is sorted ALPHA so the stored list is
//!   deterministic.
//! - STORE writes a list without a time to live in place of whatever the
//!   destination held, deletes it when the result is empty, and replies
//!   the count; SORT_RO refuses STORE as a syntax error.

use std::cmp::Ordering;
use std::ops::Range;

use persimmon_resp::Args;
use persimmon_types::coll::{self, whole::Whole};
use persimmon_types::error::wrongtype;
use persimmon_types::store::Store;
use persimmon_types::value::Stored;
use persimmon_types::Error;

use crate::session::{int_arg, is, syntax, Session};

/// A parsed request.
struct Request<'a> {
    key: &'a [u8],
    /// The last BY pattern.
    by: Option<&'a [u8]>,
    /// Some BY pattern had no `*`: keep the source's order.
    nosort: bool,
    /// LIMIT offset and count (count -1: all).
    limit: (i64, i64),
    gets: Vec<&'a [u8]>,
    desc: bool,
    alpha: bool,
    store: Option<&'a [u8]>,
}

/// Reads the options after the key, in Redis's order of checks. BY with a
/// pattern and GET read keys the request does not name: a user that may
/// not read every key (`reads_all`, see `acl`) is refused them.
fn parse<'a>(a: &Args<'a>, read_only: bool, reads_all: bool) -> Result<Request<'a>, Error> {
    let mut r = Request {
        key: a.get(1),
        by: None,
        nosort: false,
        limit: (0, -1),
        gets: Vec::new(),
        desc: false,
        alpha: false,
        store: None,
    };
    let mut i = 2;
    while i < a.len() {
        let (word, left) = (a.get(i), a.len() - i - 1);
        if is(word, "asc") || is(word, "desc") {
            r.desc = is(word, "desc");
        } else if is(word, "alpha") {
            r.alpha = true;
        } else if is(word, "limit") && left >= 2 {
            r.limit = (int_arg(a.get(i + 1))?, int_arg(a.get(i + 2))?);
            i += 2;
        } else if is(word, "store") && left >= 1 && !read_only {
            r.store = Some(a.get(i + 1));
            i += 1;
        } else if is(word, "by") && left >= 1 {
            let pattern = a.get(i + 1);
            r.nosort |= !pattern.contains(&b'*');
            if pattern.contains(&b'*') && !reads_all {
                return Err(Error::new(
                    "ERR BY option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            r.by = Some(pattern);
            i += 1;
        } else if is(word, "get") && left >= 1 {
            if !reads_all {
                return Err(Error::new(
                    "ERR GET option of SORT denied due to insufficient ACL permissions.",
                ));
            }
            r.gets.push(a.get(i + 1));
            i += 1;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    Ok(r)
}

/// What kind of value the source is (a missing one is an empty list).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    List,
    Set,
    ZSet,
}

/// The source's kind and elements: a list's from the head, a set's by
/// member bytes, a sorted set's by (score, member).
fn source(st: &mut Store, key: &[u8]) -> Result<(Kind, Vec<Vec<u8>>), Error> {
    let sortable = |v: Stored<'_>| {
        !matches!(
            v,
            Stored::String(_) | Stored::Coll(persimmon_types::Kind::Stream, _)
        )
    };
    if st.get(key, sortable)? == Some(false) {
        return Err(wrongtype());
    }
    Ok(match coll::read_key(st, key)? {
        None => (Kind::List, Vec::new()),
        Some(Whole::List(e)) => (Kind::List, e),
        Some(Whole::Set(m)) => (Kind::Set, m),
        Some(Whole::ZSet(e)) => (Kind::ZSet, e.into_iter().map(|(_, m)| m).collect()),
        Some(Whole::Hash(_)) => return Err(wrongtype()),
    })
}

/// The positions LIMIT `offset count` selects among `len` ordered
/// elements, clamped as Redis clamps them.
fn window((offset, count): (i64, i64), len: usize) -> Range<usize> {
    let len = len as i64;
    let mut start = offset.clamp(0, len);
    let count = count.clamp(-1, len);
    let mut end = if count < 0 {
        len - 1
    } else {
        start + count - 1
    };
    if start >= len {
        start = len - 1;
        end = len - 2;
    }
    end = end.min(len - 1);
    if end < start {
        return 0..0;
    }
    start as usize..end as usize + 1
}

/// Finds `needle` in `hay`.
fn find(hay: &[u8], needle: &[u8]) -> Option<usize> {
    hay.windows(needle.len()).position(|w| w == needle)
}

/// What a BY or GET pattern gives for `element`: `#` the element itself;
/// else the first `*` replaced by the element names a key, whose string
/// value it is — or, with `->field` after the `*`, that field of the hash
/// at the key. `None` for a pattern without `*`, a missing key or field, or
/// a value of another type.
fn lookup(st: &mut Store, pattern: &[u8], element: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    if pattern == b"#" {
        return Ok(Some(element.to_vec()));
    }
    let Some(star) = pattern.iter().position(|&b| b == b'*') else {
        return Ok(None);
    };
    let rest = &pattern[star + 1..];
    let (tail, field) = match find(rest, b"->") {
        Some(f) if f + 2 < rest.len() => (&rest[..f], Some(&rest[f + 2..])),
        _ => (rest, None),
    };
    let key = [&pattern[..star], element, tail].concat();
    let kind = st.get(&key, |v| match v {
        Stored::String(b) => Err(b.to_vec()),
        Stored::Coll(k, _) => Ok(k),
        Stored::Hash(_) => Ok(coll::Kind::Hash),
        _ => Ok(coll::Kind::List),
    })?;
    match (kind, field) {
        (Some(Err(string)), None) => Ok(Some(string)),
        (Some(Ok(coll::Kind::Hash)), Some(field)) => {
            Ok(coll::with(st, &key, coll::Kind::Hash, |st, c| c.get(st, 0, field))?.flatten())
        }
        _ => Ok(None),
    }
}

/// `strtod`'s blanks (C's `isspace`).
fn c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// A weight as SORT reads it: C's `strtod` over the text up to its first
/// NUL byte, which must take all of it (an empty text is 0) and give a
/// number that neither overflows, underflows nor is NaN. `None`: it is not.
fn weight_score(text: &[u8]) -> Option<f64> {
    let text = &text[..text.iter().position(|&b| b == 0).unwrap_or(text.len())];
    if text.is_empty() {
        return Some(0.0);
    }
    let start = text.iter().position(|&b| !c_space(b))?;
    let text = &text[start..];
    let (negative, body) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, text),
    };
    if body.starts_with(b"0x") || body.starts_with(b"0X") {
        let x = hex_float(&body[2..])?;
        return Some(if negative { -x } else { x });
    }
    let x = decimal_float(body)?;
    Some(if negative { -x } else { x })
}

/// An unsigned decimal float, `inf` or `infinity` (`strtod`'s grammar).
fn decimal_float(body: &[u8]) -> Option<f64> {
    if matches!(body.first(), Some(b'+' | b'-')) {
        return None;
    }
    let text = std::str::from_utf8(body).ok()?;
    let x: f64 = text.parse().ok()?;
    let infinite_word = text.eq_ignore_ascii_case("inf") || text.eq_ignore_ascii_case("infinity");
    let mantissa = &body[..body
        .iter()
        .position(|&b| b == b'e' || b == b'E')
        .unwrap_or(body.len())];
    let nonzero = mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    in_range(x, nonzero, infinite_word)
}

/// `x` unless `strtod` would report it out of range (overflow, a result
/// that underflows to zero or to a subnormal: a decimal one is never
/// exact in practice) or it is NaN.
fn in_range(x: f64, nonzero_digits: bool, infinite_word: bool) -> Option<f64> {
    let bad = x.is_nan()
        || (x.is_infinite() && !infinite_word)
        || (x == 0.0 && nonzero_digits)
        || (x != 0.0 && x.abs() < f64::MIN_POSITIVE);
    (!bad).then_some(x)
}

/// The value of hex digits (after `0x`): `h.hhh` and an optional binary
/// exponent `p[+-]d`, correctly rounded (GEO's coordinates read them too).
pub(super) fn hex_float(body: &[u8]) -> Option<f64> {
    let (mut mantissa, mut sticky, mut exp, mut digits) = (0u64, false, 0i64, 0);
    let mut fraction = false;
    let mut i = 0;
    while let Some(&b) = body.get(i) {
        if b == b'.' && !fraction {
            fraction = true;
        } else if let Some(d) = (b as char).to_digit(16) {
            digits += 1;
            if mantissa < 1 << 60 {
                mantissa = mantissa * 16 + d as u64;
                exp -= 4 * fraction as i64;
            } else {
                sticky |= d != 0;
                exp += 4 * !fraction as i64;
            }
        } else {
            break;
        }
        i += 1;
    }
    if digits == 0 {
        return None;
    }
    let power = match &body[i..] {
        [] => 0,
        [b'p' | b'P', rest @ ..] => binary_exponent(rest)?,
        _ => return None,
    };
    let exp = exp.saturating_add(power);
    let x = scale((mantissa | sticky as u64) as f64, exp);
    // glibc reports a tiny result only when it is inexact (a hex text can
    // name a subnormal exactly).
    let tiny = mantissa != 0 && x.abs() < f64::MIN_POSITIVE;
    let exact = !sticky && exact_double(mantissa, exp);
    (!x.is_infinite() && (!tiny || exact)).then_some(x)
}

/// Whether `mantissa` times 2 to the `exp` is a double exactly (ignoring
/// overflow).
fn exact_double(mantissa: u64, exp: i64) -> bool {
    if mantissa == 0 {
        return true;
    }
    let zeros = mantissa.trailing_zeros();
    let odd = mantissa >> zeros;
    let bits = 64 - odd.leading_zeros();
    exp + zeros as i64 >= -1074 && bits <= 53
}

/// A decimal exponent after `p`: an optional sign and digits, all of it
/// (saturated far past any double's range).
fn binary_exponent(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        (b'+', rest) => (false, rest),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, d| (n * 10 + (d - b'0') as i64).min(1 << 20));
    Some(if negative { -n } else { n })
}

/// `m` times 2 to the `exp`, by exact steps (a power of two scales a double
/// exactly until the result leaves the normal range).
fn scale(mut m: f64, exp: i64) -> f64 {
    let mut exp = exp.clamp(-5000, 5000);
    while exp != 0 && m != 0.0 && m.is_finite() {
        let step = exp.clamp(-1000, 1000);
        m *= 2f64.powi(step as i32);
        exp -= step;
    }
    m
}

/// What an element is ordered by.
enum Weight {
    Score(f64),
    /// The BY value of an ALPHA sort (`None`: missing, before any value).
    Text(Option<Vec<u8>>),
    /// ALPHA without BY: the element itself.
    Element,
}

/// How the elements are ordered, once Redis's adjustments are made.
struct Plan<'a> {
    by: Option<&'a [u8]>,
    nosort: bool,
    alpha: bool,
    desc: bool,
    /// Compare whole byte strings (STORE) rather than up to a NUL byte.
    binary: bool,
}

impl<'a> Plan<'a> {
    fn of(r: &Request<'a>, kind: Kind) -> Plan<'a> {
        let mut plan = Plan {
            by: r.by,
            nosort: r.nosort,
            alpha: r.alpha,
            desc: r.desc,
            binary: r.store.is_some(),
        };
        if plan.nosort && kind == Kind::Set && r.store.is_some() {
            // A set has no order of its own: what is stored is sorted.
            plan.nosort = false;
            plan.alpha = true;
            plan.by = None;
        }
        plan
    }

    fn weight(&self, st: &mut Store, element: &[u8]) -> Result<Weight, Error> {
        let value = match self.by {
            Some(pattern) => lookup(st, pattern, element)?,
            None if self.alpha => return Ok(Weight::Element),
            None => Some(element.to_vec()),
        };
        if self.alpha {
            return Ok(Weight::Text(value));
        }
        match value {
            None => Ok(Weight::Score(0.0)),
            Some(text) => weight_score(&text)
                .map(Weight::Score)
                .ok_or_else(|| Error::new("ERR One or more scores can't be converted into double")),
        }
    }

    fn text_cmp(&self, a: &[u8], b: &[u8]) -> Ordering {
        if self.binary {
            return a.cmp(b);
        }
        let c = |s: &[u8]| s.iter().position(|&b| b == 0).unwrap_or(s.len());
        a[..c(a)].cmp(&b[..c(b)])
    }

    fn compare(&self, (ea, wa): &(Vec<u8>, Weight), (eb, wb): &(Vec<u8>, Weight)) -> Ordering {
        let order = match (wa, wb) {
            (Weight::Score(a), Weight::Score(b)) => a
                .partial_cmp(b)
                .unwrap_or(Ordering::Equal)
                .then_with(|| ea.cmp(eb)),
            (Weight::Text(a), Weight::Text(b)) => match (a, b) {
                (Some(a), Some(b)) => self.text_cmp(a, b),
                (a, b) => a.is_some().cmp(&b.is_some()),
            },
            _ => self.text_cmp(ea, eb),
        };
        if self.desc {
            order.reverse()
        } else {
            order
        }
    }

    /// The elements in the order the plan gives.
    fn order(
        &self,
        st: &mut Store,
        kind: Kind,
        mut elements: Vec<Vec<u8>>,
    ) -> Result<Vec<Vec<u8>>, Error> {
        if self.nosort {
            if self.desc && kind != Kind::Set {
                elements.reverse();
            }
            return Ok(elements);
        }
        let mut weighted = Vec::with_capacity(elements.len());
        for e in elements {
            let w = self.weight(st, &e)?;
            weighted.push((e, w));
        }
        weighted.sort_by(|a, b| self.compare(a, b));
        Ok(weighted.into_iter().map(|(e, _)| e).collect())
    }
}

/// What the command gives: the reply's rows, or the count it stored.
enum Outcome {
    Rows(Vec<Option<Vec<u8>>>),
    Stored(i64),
}

/// The whole command over the store (run inside one atomic unit).
fn run(st: &mut Store, r: &Request<'_>) -> Result<Outcome, Error> {
    let (kind, elements) = source(st, r.key)?;
    let range = window(r.limit, elements.len());
    let ordered = Plan::of(r, kind).order(st, kind, elements)?;
    let mut rows = Vec::new();
    for element in &ordered[range] {
        if r.gets.is_empty() {
            rows.push(Some(element.clone()));
        }
        for pattern in &r.gets {
            rows.push(lookup(st, pattern, element)?);
        }
    }
    match r.store {
        None => Ok(Outcome::Rows(rows)),
        Some(destination) => store(st, destination, rows),
    }
}

/// STORE: the rows as a list (a missing GET value as an empty string)
/// in place of the destination and its time to live, or no key at all
/// when there are none.
fn store(st: &mut Store, destination: &[u8], rows: Vec<Option<Vec<u8>>>) -> Result<Outcome, Error> {
    let rows: Vec<Vec<u8>> = rows.into_iter().map(Option::unwrap_or_default).collect();
    let n = rows.len() as i64;
    st.delete(destination)?;
    let ek = st.engine_key(destination).into_owned();
    coll::write_whole(st, ek, &Whole::List(rows))?;
    Ok(Outcome::Stored(n))
}

fn sort_generic(s: &mut Session, a: &Args<'_>, read_only: bool) -> Result<(), Error> {
    let request = parse(a, read_only, crate::acl::reads_all_keys(&s.user))?;
    match s.store.atomic(|st| run(st, &request))? {
        Outcome::Stored(n) => s.out.int(n),
        Outcome::Rows(rows) => {
            s.out.array(rows.len());
            for row in rows {
                match row {
                    Some(value) => s.out.bulk(&value),
                    None => s.out.null(),
                }
            }
            s.output_over_limit();
        }
    }
    Ok(())
}

/// SORT key [BY pattern] [LIMIT offset count] [GET pattern ...] [ASC|DESC]
/// [ALPHA] [STORE destination]
pub fn sort(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    sort_generic(s, &a, false)
}

/// SORT_RO: SORT without STORE.
pub fn sort_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    sort_generic(s, &a, true)
}

/// The positions of a SORT or SORT_RO request's keys (`args[0]` is the
/// command name; the rows' key finder), as Redis finds them for COMMAND
/// GETKEYS: the source, and the
/// destination of the last STORE that has an argument after it (LIMIT,
/// GET and BY skip their arguments; anything else is one word).
pub fn sort_keys(args: &[&[u8]]) -> Option<Vec<usize>> {
    let mut store = None;
    let mut i = 2;
    while i < args.len() {
        let word = args[i];
        if is(word, "limit") {
            i += 2;
        } else if is(word, "get") || is(word, "by") {
            i += 1;
        } else if is(word, "store") && i + 1 < args.len() {
            store = Some(i + 1);
        }
        i += 1;
    }
    Some(std::iter::once(1).chain(store).collect())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_parse_as_strtod_does() {
        for (text, want) in [
            ("", Some(0.0)),
            ("\0junk", Some(0.0)),
            ("12\0junk", Some(12.0)),
            (" \t5", Some(5.0)),
            ("+3", Some(3.0)),
            (".5", Some(0.5)),
            ("5.", Some(5.0)),
            ("-1e3", Some(-1000.0)),
            ("inf", Some(f64::INFINITY)),
            ("-Infinity", Some(f64::NEG_INFINITY)),
            ("0x10", Some(16.0)),
            ("-0X1p3", Some(-8.0)),
            ("0x.8", Some(0.5)),
            ("0x1.8p-1", Some(0.75)),
            ("0e-999", Some(0.0)),
            ("2.2250738585072014e-308", Some(f64::MIN_POSITIVE)),
            ("5 ", None),
            (" ", None),
            ("-", None),
            ("+-1", None),
            ("1e", None),
            ("1_0", None),
            ("nan", None),
            ("1e400", None),
            ("1e-400", None),
            ("1e-310", None),
            ("0x", None),
            ("0x1p", None),
            ("0x1p99999", None),
            ("0x1p-1074", Some(2f64.powi(-1074))),
            ("0x1p-1023", Some(2f64.powi(-1023))),
            ("0x1.1p-1074", None),
            ("0x1p-1075", None),
            ("0x3p-1075", None),
            ("0x1.8p-1073", Some(3.0 * 2f64.powi(-1074))),
            ("0x1p1024", None),
            ("0x1.fffffffffffffp1023", Some(f64::MAX)),
            ("0x.p1", None),
            ("0x1P+2", Some(4.0)),
            (" +0x10", Some(16.0)),
            ("00x1", None),
            ("1e-320", None),
            ("abc", None),
        ] {
            assert_eq!(weight_score(text.as_bytes()), want, "{text:?}");
        }
        // Past 16 hex digits the rest still rounds.
        assert_eq!(
            weight_score(b"0x1000000000000000000001"),
            Some(2f64.powi(84))
        );
        // Halfway between two doubles: the dropped digits decide.
        let tie = format!("0x1{}8{}", "0".repeat(13), "0".repeat(10));
        assert_eq!(weight_score(tie.as_bytes()), Some(2f64.powi(96)));
        let above = format!("0x1{}8{}1", "0".repeat(13), "0".repeat(9));
        assert_eq!(
            weight_score(above.as_bytes()),
            Some(2f64.powi(96) + 2f64.powi(44))
        );
    }

    #[test]
    fn limit_windows_clamp_like_redis() {
        assert_eq!(window((0, -1), 3), 0..3);
        assert_eq!(window((1, -5), 3), 1..3);
        assert_eq!(window((-1, 2), 3), 0..2);
        assert_eq!(window((5, 1), 3), 0..0);
        assert_eq!(window((2, 10), 3), 2..3);
        assert_eq!(window((0, 0), 3), 0..0);
        assert_eq!(window((0, -1), 0), 0..0);
        assert_eq!(window((i64::MAX, i64::MAX), 3), 0..0);
        assert_eq!(window((i64::MIN, i64::MAX), 3), 0..3);
    }

    #[test]
    fn getkeys_finds_the_last_store() {
        let keys = |line: &str| {
            let args: Vec<&[u8]> = line.split(' ').map(str::as_bytes).collect();
            sort_keys(&args).unwrap()
        };
        assert_eq!(keys("sort abc store def"), vec![1, 3]);
        assert_eq!(
            keys("sort abc store invalid store stillbad store def"),
            vec![1, 7]
        );
        assert_eq!(keys("sort abc by store limit 0 1 get store"), vec![1]);
        assert_eq!(keys("sort abc store"), vec![1]);
        assert_eq!(keys("sort_ro abc"), vec![1]);
    }
}
