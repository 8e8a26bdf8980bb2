//! The GEO commands over sorted sets: GEOADD (NX XX CH), GEODIST, GEOHASH,
//! GEOPOS, GEORADIUS, GEORADIUS_RO, GEORADIUSBYMEMBER,
//! GEORADIUSBYMEMBER_RO (WITHDIST WITHHASH WITHCOORD ASC DESC COUNT ANY,
//! STORE and STOREDIST on the writing two), GEOSEARCH (FROMMEMBER
//! FROMLONLAT BYRADIUS BYBOX and the options above) and GEOSEARCHSTORE
//! (STOREDIST).
//!
//! A position is a member whose score is its 52-bit geohash (`geohash.rs`
//! has the maths); GEOADD is ZADD of those scores (`zsets::zadd_apply`)
//! and any sorted set can be searched. A search visits the centre's cell
//! and its neighbours (`geohash::Shape::cells`), each a score range of the
//! set found in O(log n) (`zset_range::span`), and keeps the members
//! inside the shape: O(cells × log n + members visited).
//!
//! Invariants:
//! - Replies are redis-server 7.0.15's: the same members in the same
//!   order (the cells' order, and score order within a cell, unless ASC or
//!   DESC sorts by distance; COUNT without ANY sorts ASC), distances
//!   rounded to 4 decimals, coordinates with 17 decimals less trailing
//!   zeros, and the same errors checked in the same order (the key's type
//!   first, then the arguments left to right, then the combinations). One
//!   liberty: members at equal distances keep the search's order when
//!   sorted (a stable sort), where Redis's quicksort leaves it unspecified.
//! - A search reads the set in one atomic unit; STORE, STOREDIST and
//!   GEOSEARCHSTORE read and write in one atomic unit (as ZRANGESTORE), so
//!   the destination holds exactly the result (deleted when it is empty,
//!   its time to live gone), or nothing changed when an error is replied.
//! - Bad input gets Redis's error, never a panic: coordinates outside
//!   ±180 / ±85.05112878, a unit other than m, km, ft, mi (any case), a
//!   negative radius or box side, a COUNT that is not a positive integer,
//!   a missing member to search from, WRONGTYPE.

use persimmon_resp::Args;
use persimmon_types::coll::{split_score_key, Coll};
use persimmon_types::store::Store;
use persimmon_types::zset::{score_of, with_zset};
use persimmon_types::Error;

use super::geohash::{self, coordinate_text, distance_text, Extent, Shape};
use super::sort::hex_float;
use super::zset_range::{span, store_entries, By, ScoreBound};
use super::zsets::{member_scores, not_float, zadd_apply, ZaddOptions};
use crate::session::{int_arg, is, syntax, Session};

/// A float argument as Redis's `string2d` reads one: C's `strtod` over
/// all of it (decimal, `0x` hexadecimal, `inf`, `infinity`; no blank
/// before it), refused when it is NaN, overflows, or underflows to zero (a
/// subnormal is kept). `err` is the error to give otherwise.
fn float_arg(arg: &[u8], err: fn() -> Error) -> Result<f64, Error> {
    let (negative, body) = match arg.split_first() {
        Some((b'-', rest)) => (true, rest),
        Some((b'+', rest)) => (false, rest),
        _ => (false, arg),
    };
    let x = match body.strip_prefix(b"0x").or(body.strip_prefix(b"0X")) {
        Some(hex) => hex_float(hex),
        None => decimal_float(body),
    };
    x.map(|x| if negative { -x } else { x }).ok_or_else(err)
}

/// An unsigned decimal float, `inf` or `infinity`, all of `body`, within
/// a double's range.
fn decimal_float(body: &[u8]) -> Option<f64> {
    if matches!(body.first(), Some(b'+' | b'-')) {
        return None;
    }
    let x: f64 = std::str::from_utf8(body).ok()?.parse().ok()?;
    let spelled_infinite = is(body, "inf") || is(body, "infinity");
    let mantissa = body.split(|&b| b == b'e' || b == b'E').next()?;
    let underflow = x == 0.0 && mantissa.iter().any(|b| (b'1'..=b'9').contains(b));
    let bad = x.is_nan() || (x.is_infinite() && !spelled_infinite) || underflow;
    (!bad).then_some(x)
}

/// A longitude and a latitude argument, within the limits.
fn lon_lat_arg(lon: &[u8], lat: &[u8]) -> Result<(f64, f64), Error> {
    let lon = float_arg(lon, not_float)?;
    let lat = float_arg(lat, not_float)?;
    if !geohash::valid(lon, lat) {
        return Err(Error::new(format!(
            "ERR invalid longitude,latitude pair {lon:.6},{lat:.6}"
        )));
    }
    Ok((lon, lat))
}

/// The metres in a unit: m, km, ft or mi, in any case.
fn unit_arg(arg: &[u8]) -> Result<f64, Error> {
    match () {
        _ if is(arg, "m") => Ok(1.0),
        _ if is(arg, "km") => Ok(1000.0),
        _ if is(arg, "ft") => Ok(0.3048),
        _ if is(arg, "mi") => Ok(1609.34),
        _ => Err(Error::new(
            "ERR unsupported unit provided. please use M, KM, FT, MI",
        )),
    }
}

/// `radius unit`: the radius and the metres in its unit.
fn radius_arg(radius: &[u8], unit: &[u8]) -> Result<(Extent, f64), Error> {
    let r = float_arg(radius, || Error::new("ERR need numeric radius"))?;
    if r < 0.0 {
        return Err(Error::new("ERR radius cannot be negative"));
    }
    Ok((Extent::Radius(r), unit_arg(unit)?))
}

/// `width height unit`: the box and the metres in its unit.
fn box_arg(width: &[u8], height: &[u8], unit: &[u8]) -> Result<(Extent, f64), Error> {
    let width = float_arg(width, || Error::new("ERR need numeric width"))?;
    let height = float_arg(height, || Error::new("ERR need numeric height"))?;
    if height < 0.0 || width < 0.0 {
        return Err(Error::new("ERR height or width cannot be negative"));
    }
    Ok((Extent::Box { width, height }, unit_arg(unit)?))
}

fn not_a_member() -> Error {
    Error::new("ERR could not decode requested zset member")
}

/// GEOADD key [NX|XX] [CH] longitude latitude member [...]: ZADD of the
/// members' geohash scores.
pub fn geoadd(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let mut o = ZaddOptions::default();
    let mut i = 2;
    while i < a.len() {
        let opt = a.get(i);
        match () {
            _ if is(opt, "NX") => o.add.nx = true,
            _ if is(opt, "XX") => o.add.xx = true,
            _ if is(opt, "CH") => o.ch = true,
            _ => break,
        }
        i += 1;
    }
    let left = a.len() - i;
    if left == 0 || !left.is_multiple_of(3) || (o.add.nx && o.add.xx) {
        return Err(syntax());
    }
    let mut changes = Vec::with_capacity(left / 3);
    for at in (i..a.len()).step_by(3) {
        let (lon, lat) = lon_lat_arg(a.get(at), a.get(at + 1))?;
        let score = geohash::score(lon, lat).ok_or_else(syntax)?;
        changes.push((score, a.get(at + 2)));
    }
    zadd_apply(s, a.get(1), &changes, o)
}

/// GEOPOS key [member ...]: each member's position, or a null array.
pub fn geopos(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let scores = member_scores(s, &a)?;
    s.out.array(scores.len());
    for score in scores {
        match score {
            None => s.out.null_array(),
            Some(score) => {
                let (lon, lat) = geohash::position(score);
                coordinates_reply(s, lon, lat);
            }
        }
    }
    Ok(())
}

/// A position: longitude and latitude as doubles (bulk strings in RESP2).
fn coordinates_reply(s: &mut Session, lon: f64, lat: f64) {
    s.out.array(2);
    s.out.double(lon, &coordinate_text(lon));
    s.out.double(lat, &coordinate_text(lat));
}

/// GEOHASH key [member ...]: each member's 11-character geohash, or nil.
pub fn geohash(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let scores = member_scores(s, &a)?;
    s.out.array(scores.len());
    for score in scores {
        match score {
            None => s.out.null(),
            Some(score) => s.out.bulk(&geohash::hash_text(score)),
        }
    }
    Ok(())
}

/// GEODIST key member1 member2 [unit]: nil unless both are there.
pub fn geodist(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let to_meters = match a.len() {
        4 => 1.0,
        5 => unit_arg(a.get(4))?,
        _ => return Err(syntax()),
    };
    let pair = with_zset(&mut s.store, a.get(1), |st, c| {
        Ok((score_of(st, c, a.get(2))?, score_of(st, c, a.get(3))?))
    })?;
    match pair {
        Some((Some(x), Some(y))) => {
            let (p, q) = (geohash::position(x), geohash::position(y));
            let d = geohash::distance(p.0, p.1, q.0, q.1) / to_meters;
            s.out.bulk(distance_text(d).as_bytes());
        }
        _ => s.out.null(),
    }
    Ok(())
}

/// Which of the searching commands runs (what its arguments are).
#[derive(Clone, Copy, PartialEq, Eq)]
enum Form {
    /// GEORADIUS key longitude latitude radius unit [...]
    Radius,
    /// GEORADIUSBYMEMBER key member radius unit [...]
    ByMember,
    /// GEOSEARCH key FROM... BY... [...]
    Search,
    /// GEOSEARCHSTORE destination source FROM... BY... [STOREDIST] [...]
    SearchStore,
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Order {
    None,
    Asc,
    Desc,
}

/// A parsed search.
struct Query<'a> {
    /// `None` only when the source key is missing (nothing to search).
    shape: Option<Shape>,
    with_dist: bool,
    with_hash: bool,
    with_coord: bool,
    order: Order,
    /// At most this many results (0: all).
    count: u64,
    /// Stop at the first `count` found instead of the `count` nearest.
    any: bool,
    store: Option<&'a [u8]>,
    store_dist: bool,
}

/// Reads a member's position in the source (`None`: not there).
type Lookup<'l> = &'l mut dyn FnMut(&[u8]) -> Result<Option<f64>, Error>;

/// Parses a search as Redis's `georadiusGeneric` does, after the source's
/// type is checked: the fixed arguments, then the options left to right
/// (each error as it is met), then the combinations. `lookup` reads the
/// source; without one (a missing source) members are not looked up and
/// GEORADIUSBYMEMBER's radius is not read.
fn parse<'a>(
    a: &Args<'a>,
    form: Form,
    store_ok: bool,
    mut lookup: Option<Lookup<'_>>,
) -> Result<Query<'a>, Error> {
    let Fixed {
        mut centre,
        mut extent,
        store,
        options_at: base,
    } = fixed_args(a, form, &mut lookup)?;
    let searching = matches!(form, Form::Search | Form::SearchStore);
    let mut q = Query {
        shape: None,
        with_dist: false,
        with_hash: false,
        with_coord: false,
        order: Order::None,
        count: 0,
        any: false,
        store,
        store_dist: false,
    };
    let (mut from_member, mut from_lon_lat, mut by_radius, mut by_box) =
        (false, false, false, false);
    let mut j = base;
    while j < a.len() {
        let arg = a.get(j);
        let left = a.len() - j - 1;
        if is(arg, "withdist") {
            q.with_dist = true;
        } else if is(arg, "withhash") {
            q.with_hash = true;
        } else if is(arg, "withcoord") {
            q.with_coord = true;
        } else if is(arg, "any") {
            q.any = true;
        } else if is(arg, "asc") {
            q.order = Order::Asc;
        } else if is(arg, "desc") {
            q.order = Order::Desc;
        } else if is(arg, "count") && left >= 1 {
            let n = int_arg(a.get(j + 1))?;
            if n <= 0 {
                return Err(Error::new("ERR COUNT must be > 0"));
            }
            q.count = n as u64;
            j += 1;
        } else if (is(arg, "store") || is(arg, "storedist")) && left >= 1 && store_ok {
            q.store = Some(a.get(j + 1));
            q.store_dist = is(arg, "storedist");
            j += 1;
        } else if is(arg, "storedist") && form == Form::SearchStore {
            q.store_dist = true;
        } else if is(arg, "frommember") && left >= 1 && searching && !from_lon_lat {
            if let Some(lookup) = lookup.as_mut() {
                let score = lookup(a.get(j + 1))?.ok_or_else(not_a_member)?;
                centre = Some(geohash::position(score));
            }
            from_member = true;
            j += 1;
        } else if is(arg, "fromlonlat") && left >= 2 && searching && !from_member {
            centre = Some(lon_lat_arg(a.get(j + 1), a.get(j + 2))?);
            from_lon_lat = true;
            j += 2;
        } else if is(arg, "byradius") && left >= 2 && searching && !by_box {
            extent = Some(radius_arg(a.get(j + 1), a.get(j + 2))?);
            by_radius = true;
            j += 2;
        } else if is(arg, "bybox") && left >= 3 && searching && !by_radius {
            extent = Some(box_arg(a.get(j + 1), a.get(j + 2), a.get(j + 3))?);
            by_box = true;
            j += 3;
        } else {
            return Err(syntax());
        }
        j += 1;
    }
    let name = String::from_utf8_lossy(a.get(0));
    check_combination(&q, form)?;
    if searching && !(from_member || from_lon_lat) {
        return Err(Error::new(format!(
            "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for {name}"
        )));
    }
    if searching && !(by_radius || by_box) {
        return Err(Error::new(format!(
            "ERR exactly one of BYRADIUS and BYBOX can be specified for {name}"
        )));
    }
    if q.any && q.count == 0 {
        return Err(Error::new("ERR the ANY argument requires COUNT argument"));
    }
    // COUNT keeps the nearest ones unless ANY says any will do.
    if q.count != 0 && q.order == Order::None && !q.any {
        q.order = Order::Asc;
    }
    if let (Some((lon, lat)), Some((extent, to_meters))) = (centre, extent) {
        q.shape = Some(Shape {
            lon,
            lat,
            extent,
            to_meters,
        });
    }
    Ok(q)
}

/// What a search's fixed arguments give: the centre and extent (when the
/// form names them and, for a member, the source holds it), the store
/// target of GEOSEARCHSTORE, and where the options start.
struct Fixed<'a> {
    centre: Option<(f64, f64)>,
    extent: Option<(Extent, f64)>,
    store: Option<&'a [u8]>,
    options_at: usize,
}

/// Reads the arguments before a search's options, each error as it is met.
fn fixed_args<'a>(
    a: &Args<'a>,
    form: Form,
    lookup: &mut Option<Lookup<'_>>,
) -> Result<Fixed<'a>, Error> {
    let mut f = Fixed {
        centre: None,
        extent: None,
        store: None,
        options_at: 0,
    };
    f.options_at = match form {
        Form::Radius => {
            f.centre = Some(lon_lat_arg(a.get(2), a.get(3))?);
            f.extent = Some(radius_arg(a.get(4), a.get(5))?);
            6
        }
        Form::ByMember => {
            if let Some(lookup) = lookup.as_mut() {
                let score = lookup(a.get(2))?.ok_or_else(not_a_member)?;
                f.centre = Some(geohash::position(score));
                f.extent = Some(radius_arg(a.get(3), a.get(4))?);
            }
            5
        }
        Form::Search => 2,
        Form::SearchStore => {
            f.store = Some(a.get(1));
            3
        }
    };
    Ok(f)
}

/// Refuses a store target with the options that only shape a reply.
fn check_combination(q: &Query<'_>, form: Form) -> Result<(), Error> {
    if q.store.is_some() && (q.with_dist || q.with_hash || q.with_coord) {
        let what = match form {
            Form::SearchStore => "GEOSEARCHSTORE",
            _ => "STORE option in GEORADIUS",
        };
        return Err(Error::new(format!(
            "ERR {what} is not compatible with WITHDIST, WITHHASH and WITHCOORD options"
        )));
    }
    Ok(())
}

/// A member found by a search.
struct Found {
    member: Vec<u8>,
    /// From the centre, in metres.
    dist: f64,
    score: f64,
    lon: f64,
    lat: f64,
}

/// The members of `c` inside `shape`, cell by cell (each cell's members in
/// score order); with `limit` (ANY's count) it stops at that many.
fn search(st: &mut Store, c: &mut Coll, shape: &Shape, limit: u64) -> Result<Vec<Found>, Error> {
    let mut out: Vec<Found> = Vec::new();
    let full = |out: &Vec<Found>| limit > 0 && out.len() as u64 >= limit;
    for cell in shape.cells() {
        if full(&out) {
            break;
        }
        let (min, max) = cell.scores();
        let by = By::Score(ScoreBound(min, false), ScoreBound(max, true));
        let sp = span(st, c, by, false)?;
        let mut left = sp.hi - sp.lo;
        if left == 0 {
            continue;
        }
        c.walk(st, 1, sp.lo, false, |k, _| {
            let (score, member) = split_score_key(k);
            let (lon, lat) = geohash::position(score);
            if let Some(dist) = shape.distance_if_inside(lon, lat) {
                out.push(Found {
                    member: member.to_vec(),
                    dist,
                    score,
                    lon,
                    lat,
                });
            }
            left -= 1;
            Ok(left > 0 && !full(&out))
        })?;
    }
    Ok(out)
}

/// Sorts by distance as asked (stable: equal distances keep the search's
/// order) and keeps the first `count` (0: all).
fn order_and_cut(found: &mut Vec<Found>, order: Order, count: u64) {
    match order {
        Order::None => {}
        Order::Asc => found.sort_by(|x, y| x.dist.total_cmp(&y.dist)),
        Order::Desc => found.sort_by(|x, y| y.dist.total_cmp(&x.dist)),
    }
    if count > 0 && (found.len() as u64) > count {
        found.truncate(count as usize);
    }
}

/// What a search command gives: its results, or how many it stored.
enum Outcome<'a> {
    Found(Query<'a>, Vec<Found>),
    Stored(usize),
}

/// A search command over the store, in one atomic unit: parse (after the
/// source's type check), search, and write the destination if asked.
fn run<'a>(st: &mut Store, a: &Args<'a>, form: Form, store_ok: bool) -> Result<Outcome<'a>, Error> {
    let source = a.get(if form == Form::SearchStore { 2 } else { 1 });
    let found = with_zset(st, source, |st, c| {
        let q = {
            let mut look = |m: &[u8]| score_of(st, c, m);
            parse(a, form, store_ok, Some(&mut look))?
        };
        let mut found = match &q.shape {
            Some(shape) => search(st, c, shape, if q.any { q.count } else { 0 })?,
            None => Vec::new(),
        };
        order_and_cut(&mut found, q.order, q.count);
        Ok((q, found))
    })?;
    let (q, found) = match found {
        Some(x) => x,
        None => (parse(a, form, store_ok, None)?, Vec::new()),
    };
    let Some(dst) = q.store else {
        return Ok(Outcome::Found(q, found));
    };
    let to_meters = q.shape.map_or(1.0, |s| s.to_meters);
    let entries: Vec<(f64, Vec<u8>)> = found
        .into_iter()
        .map(|f| {
            let score = if q.store_dist {
                f.dist / to_meters
            } else {
                f.score
            };
            (score, f.member)
        })
        .collect();
    store_entries(st, dst, &entries)?;
    Ok(Outcome::Stored(entries.len()))
}

/// Replies a search's results: members, or per member an array of the
/// member and what was asked (distance, hash, coordinates, in that order).
fn found_reply(s: &mut Session, q: &Query<'_>, found: &[Found]) {
    let to_meters = q.shape.map_or(1.0, |s| s.to_meters);
    let extras = q.with_dist as usize + q.with_hash as usize + q.with_coord as usize;
    s.out.array(found.len());
    for f in found {
        if extras > 0 {
            s.out.array(extras + 1);
        }
        s.out.bulk(&f.member);
        if q.with_dist {
            s.out.bulk(distance_text(f.dist / to_meters).as_bytes());
        }
        if q.with_hash {
            // A C conversion of the score to a 64-bit integer.
            s.out.int(f.score as i64);
        }
        if q.with_coord {
            coordinates_reply(s, f.lon, f.lat);
        }
    }
    s.output_over_limit();
}

fn search_command(s: &mut Session, a: Args<'_>, form: Form, store_ok: bool) -> Result<(), Error> {
    match s.store.atomic(|st| run(st, &a, form, store_ok))? {
        Outcome::Found(q, found) => found_reply(s, &q, &found),
        Outcome::Stored(n) => s.out.int(n as i64),
    }
    Ok(())
}

/// GEORADIUS key longitude latitude radius m|km|ft|mi [WITHCOORD]
/// [WITHDIST] [WITHHASH] [COUNT count [ANY]] [ASC|DESC] [STORE key]
/// [STOREDIST key]
pub fn georadius(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    search_command(s, a, Form::Radius, true)
}

/// GEORADIUS without STORE and STOREDIST.
pub fn georadius_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    search_command(s, a, Form::Radius, false)
}

/// GEORADIUSBYMEMBER key member radius unit [options as GEORADIUS]
pub fn georadiusbymember(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    search_command(s, a, Form::ByMember, true)
}

/// GEORADIUSBYMEMBER without STORE and STOREDIST.
pub fn georadiusbymember_ro(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    search_command(s, a, Form::ByMember, false)
}

/// GEOSEARCH key FROMMEMBER member|FROMLONLAT longitude latitude
/// BYRADIUS radius unit|BYBOX width height unit [ASC|DESC]
/// [COUNT count [ANY]] [WITHCOORD] [WITHDIST] [WITHHASH]
pub fn geosearch(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    search_command(s, a, Form::Search, false)
}

/// GEOSEARCHSTORE destination source [GEOSEARCH's FROM, BY, ASC|DESC and
/// COUNT] [STOREDIST]
pub fn geosearchstore(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    search_command(s, a, Form::SearchStore, false)
}

/// The keys of GEORADIUS and GEORADIUSBYMEMBER (their rows' key finder):
/// the source, then the key after the first STORE and after the first
/// STOREDIST from the first option on (Redis 7's key specs).
pub fn radius_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    let first_option = if words.first().is_some_and(|w| is(w, "georadius")) {
        6
    } else {
        5
    };
    let mut keys = vec![1];
    for keyword in ["store", "storedist"] {
        let at = (first_option..words.len()).find(|&i| is(words[i], keyword));
        if let Some(at) = at.filter(|&at| at + 1 < words.len()) {
            keys.push(at + 1);
        }
    }
    (words.len() > 1).then_some(keys)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn words(text: &str) -> Vec<&[u8]> {
        text.split(' ').map(str::as_bytes).collect()
    }

    #[test]
    fn radius_keys_follow_the_key_specs() {
        let keys = |t: &str| radius_keys(&words(t));
        assert_eq!(keys("georadius k 0 0 1 km store d"), Some(vec![1, 7]));
        assert_eq!(keys("georadius k 0 0 store km"), Some(vec![1]));
        assert_eq!(
            keys("GEORADIUS k 0 0 1 km storedist e store d"),
            Some(vec![1, 9, 7])
        );
        assert_eq!(
            keys("georadius k 0 0 1 km store d store e"),
            Some(vec![1, 7])
        );
        assert_eq!(keys("georadiusbymember k m 1 km store d"), Some(vec![1, 6]));
        assert_eq!(keys("georadiusbymember k store x km"), Some(vec![1]));
        assert_eq!(keys("georadius k 0 0 1 km store"), Some(vec![1]));
    }

    #[test]
    fn floats_parse_as_redis_reads_them() {
        assert_eq!(float_arg(b"1.5", not_float).unwrap(), 1.5);
        assert_eq!(float_arg(b"-inf", not_float).unwrap(), f64::NEG_INFINITY);
        assert_eq!(float_arg(b"+Infinity", not_float).unwrap(), f64::INFINITY);
        assert!(float_arg(b"1e400", not_float).is_err());
        assert!(float_arg(b"nan", not_float).is_err());
        assert!(float_arg(b" 1", not_float).is_err());
        assert!(float_arg(b"", not_float).is_err());
        assert!(float_arg(b"1e-400", not_float).is_err());
        assert!(float_arg(b"++1", not_float).is_err());
        assert!(float_arg(b"1e", not_float).is_err());
        assert!(float_arg(b"0x", not_float).is_err());
        assert_eq!(float_arg(b"4.9e-324", not_float).unwrap(), 5e-324);
        assert_eq!(float_arg(b"0X1P3", not_float).unwrap(), 8.0);
        assert_eq!(float_arg(b"-0x10", not_float).unwrap(), -16.0);
        assert_eq!(float_arg(b".5", not_float).unwrap(), 0.5);
        assert_eq!(float_arg(b"5.", not_float).unwrap(), 5.0);
    }

    #[test]
    fn units_and_bad_coordinates() {
        assert_eq!(unit_arg(b"KM").unwrap(), 1000.0);
        assert_eq!(unit_arg(b"mi").unwrap(), 1609.34);
        assert!(unit_arg(b"kmx").is_err());
        let e = lon_lat_arg(b"200", b"100").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ERR invalid longitude,latitude pair 200.000000,100.000000"
        );
        let e = lon_lat_arg(b"1", b"inf").unwrap_err();
        assert_eq!(
            e.to_string(),
            "ERR invalid longitude,latitude pair 1.000000,inf"
        );
    }
}
