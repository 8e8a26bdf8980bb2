//! The GEO commands through a real server, checked against the figures
//! redis-server 7.0.15 gives for the same requests: scores, positions,
//! geohash strings and distances to the last digit, the order of sorted
//! and unsorted search results, STORE / STOREDIST / GEOSEARCHSTORE
//! destinations, RESP3 reply types and Redis's error for each bad input;
//! and a randomized check that searches find every point inside the
//! shape and none outside.
//!
//! With `GEO_REFERENCE=host:port` the same tests run against that server
//! instead (flushed first; run them one at a time, `--test-threads=1`):
//! pointed at a redis-server 7.0.15, they check the figures themselves.
//! Then one more test sends random sets and searches to a persimmon
//! server and to that one side by side and wants the same bytes back.

mod common;

use common::{Raw, Resp, TestServer};
use rand::rngs::StdRng;
use rand::{Rng, SeedableRng};
use std::net::ToSocketAddrs;

/// A fresh persimmon server and a client of it, or (`GEO_REFERENCE`) a
/// client of the reference server, flushed.
fn server() -> (Option<TestServer>, Raw) {
    match std::env::var("GEO_REFERENCE") {
        Ok(addr) => {
            let addr = addr.to_socket_addrs().unwrap().next().unwrap();
            let mut raw = Raw::connect(addr);
            assert_eq!(q(&mut raw, "FLUSHALL"), "OK");
            (None, raw)
        }
        Err(_) => {
            let server = TestServer::start();
            let raw = server.raw();
            (Some(server), raw)
        }
    }
}

/// A reply as one line: bulk strings and integers as their text, nil as
/// `(nil)`, an error as its message, a nested array in brackets, the
/// elements of the outer array joined by `|`.
fn flat(r: &Resp) -> String {
    fn item(r: &Resp) -> String {
        match r {
            Resp::Array(items) => {
                format!("[{}]", items.iter().map(item).collect::<Vec<_>>().join("|"))
            }
            other => flat(other),
        }
    }
    match r {
        Resp::Bulk(b) => String::from_utf8_lossy(b).into_owned(),
        Resp::Int(n) => n.to_string(),
        Resp::Simple(s) | Resp::Error(s) => s.clone(),
        Resp::Null => "(nil)".into(),
        Resp::Array(items) => items.iter().map(item).collect::<Vec<_>>().join("|"),
        Resp::Other(s) => s.clone(),
        other => format!("{other:?}"),
    }
}

/// Runs one request (words split on spaces; `~` stands for a space inside
/// a word) and returns its reply as `flat` writes it.
fn q(raw: &mut Raw, request: &str) -> String {
    let words: Vec<String> = request.split(' ').map(|w| w.replace('~', " ")).collect();
    let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
    flat(&raw.command(&words))
}

/// Checks each `(request, reply)` in order.
fn check(raw: &mut Raw, script: &[(&str, &str)]) {
    for (request, want) in script {
        assert_eq!(q(raw, request), *want, "{request}");
    }
}

/// The test suite's New York set (members with spaces written with `~`).
fn nyc(raw: &mut Raw) {
    let add =
        "GEOADD nyc -73.9454966 40.747533 lic~market -73.9733487 40.7648057 central~park~n/q/r \
               -73.9903085 40.7362513 union~square -74.0131604 40.7126674 wtc~one \
               -73.7858139 40.6428986 jfk -73.9375699 40.7498929 q4 -73.9564142 40.7480973 4545";
    let add: String = add.split_whitespace().collect::<Vec<_>>().join(" ");
    assert_eq!(q(raw, &add), "7");
}

fn sicily(raw: &mut Raw) {
    assert_eq!(
        q(
            raw,
            "GEOADD sicily 13.361389 38.115556 Palermo 15.087269 37.502669 Catania"
        ),
        "2"
    );
}

#[test]
fn scores_positions_hashes_and_distances_are_redis_figures() {
    let (_server, mut raw) = server();
    nyc(&mut raw);
    sicily(&mut raw);
    check(
        &mut raw,
        &[
            (
                "ZRANGE nyc 0 -1 WITHSCORES",
                "wtc one|1791873972053020|union square|1791875485187452|central park n/q/r|1791875761332224|\
                 4545|1791875796750882|lic market|1791875804419201|q4|1791875830079666|jfk|1791895905559723",
            ),
            ("ZRANGE sicily 0 -1 WITHSCORES", "Palermo|3479099956230698|Catania|3479447370796909"),
            (
                "GEOPOS sicily Palermo nosuch Catania",
                "[13.36138933897018433|38.11555639549629859]|(nil)|[15.08726745843887329|37.50266842333162032]",
            ),
            ("GEOPOS nokey a", "(nil)"),
            ("GEOPOS sicily", ""),
            ("GEOHASH sicily Palermo Catania nosuch", "sqc8b49rny0|sqdtr74hyu0|(nil)"),
            ("GEOHASH nyc wtc~one jfk 4545", "dr5reg922r0|dr5x0yyf1c0|dr5rv1fwfe0"),
            ("GEODIST sicily Palermo Catania", "166274.1516"),
            ("GEODIST sicily Palermo Catania km", "166.2742"),
            ("GEODIST sicily Palermo Catania MI", "103.3182"),
            ("GEODIST sicily Palermo Catania ft", "545518.8700"),
            ("GEODIST sicily Palermo Palermo", "0.0000"),
            ("GEODIST sicily Palermo nosuch", "(nil)"),
            ("GEODIST nokey Palermo Catania", "(nil)"),
            ("GEODIST nyc jfk q4 km", "17.4758"),
            // The Wikipedia example, and the corners of the grid: a
            // coordinate at its range's top sets a bit past the 52 (as in
            // Redis), and positions read back clamped to the limits.
            ("GEOADD points -5.6 42.6 test", "1"),
            ("GEOHASH points test", "ezs42e44yx0"),
            ("GEOADD points 180 85.05112878 ne -180 -85.05112878 sw", "2"),
            ("ZMSCORE points ne sw", "13510798882111488|0"),
            (
                "GEOPOS points ne sw",
                "[180|85.0511287799999991]|[-179.99999731779098511|-85.05112751263942528]",
            ),
            ("GEOHASH points ne sw", "bp05b5048p0|00bh0hbj200"),
            ("GEODIST points ne sw km", "18919.8446"),
            // Any sorted set decodes, whatever its scores.
            ("ZADD weird -1 a 1e20 b 1.5 c inf e", "4"),
            (
                "GEOPOS weird a b c e",
                "[180|85.0511287799999991]|[-179.99999731779098511|-85.05112751263942528]|\
                 [-179.99999731779098511|-85.05112497791824921]|[-179.99999731779098511|-85.05112751263942528]",
            ),
        ],
    );
}

#[test]
fn geoadd_options_are_zadd_options() {
    let (_server, mut raw) = server();
    check(
        &mut raw,
        &[
            ("GEOADD nyc -73.9454966 40.747533 lic", "1"),
            ("GEOADD nyc -73.9454966 40.747533 lic", "0"),
            ("GEOADD nyc CH 40.747533 -73.9454966 lic", "1"),
            (
                "GEOPOS nyc lic",
                "[40.7475319504737854|-73.94549769039056741]",
            ),
            ("GEOADD nyc NX -73.9454966 40.747533 lic", "0"),
            ("GEOADD nyc XX -83.9454966 40.747533 lic", "0"),
            (
                "GEOPOS nyc lic",
                "[-83.94549518823623657|40.74753227099792952]",
            ),
            ("GEOADD nyc CH NX -73.9454966 40.747533 lic", "0"),
            ("GEOADD nyc CH XX -73.9454966 40.747533 lic", "1"),
            ("GEOADD nyc XX 0 0 new", "0"),
            ("GEOADD nyc xx ch 0 0 zz", "0"),
            ("ZCARD nyc", "1"),
            // Coordinates read as C's strtod reads them: hexadecimal and
            // subnormal figures too.
            ("GEOADD hex 0x10 -0x1.8p1 a 4.9e-324 1e-320 b", "2"),
            ("ZMSCORE hex a b", "2635477111334801|3377699720527872"),
        ],
    );
}

#[test]
fn radius_searches_keep_redis_orders_and_figures() {
    let (_server, mut raw) = server();
    nyc(&mut raw);
    let centre = "nyc -73.9798091 40.7598464";
    let script = [
        (format!("GEORADIUS {centre} 3 km asc"), "central park n/q/r|4545|union square"),
        (
            format!("GEORADIUS {centre} 3 km withdist asc"),
            "[central park n/q/r|0.7750]|[4545|2.3651]|[union square|2.7697]",
        ),
        // Unsorted: the order of the cells searched, and of the scores in
        // each.
        (
            format!("GEORADIUS {centre} 10 km WITHDIST WITHHASH WITHCOORD"),
            "[wtc one|5.9530|1791873972053020|[-74.01316255331039429|40.71266718145121644]]|\
             [union square|2.7697|1791875485187452|[-73.99031013250350952|40.73625022711770782]]|\
             [central park n/q/r|0.7750|1791875761332224|[-73.97334784269332886|40.76480639569881959]]|\
             [4545|2.3651|1791875796750882|[-73.95641237497329712|40.74809751381645384]]|\
             [lic market|3.1991|1791875804419201|[-73.94549578428268433|40.74753227099792952]]|\
             [q4|3.7269|1791875830079666|[-73.93757253885269165|40.74989209639726795]]",
        ),
        (format!("GEORADIUS {centre} 10 km COUNT 3"), "central park n/q/r|4545|union square"),
        (format!("GEORADIUS {centre} 10 km COUNT 3 ANY"), "wtc one|union square|central park n/q/r"),
        (format!("GEORADIUS {centre} 10 km COUNT 3 ANY ASC"), "central park n/q/r|union square|wtc one"),
        (format!("GEORADIUS {centre} 10 km COUNT 2 DESC withdist"), "[wtc one|5.9530]|[q4|3.7269]"),
        (format!("GEORADIUS_RO {centre} 3 km asc"), "central park n/q/r|4545|union square"),
        (
            "GEORADIUSBYMEMBER nyc wtc~one 7 km withdist".to_string(),
            "[wtc one|0.0000]|[union square|3.2544]|[central park n/q/r|6.7000]|[4545|6.1975]|[lic market|6.8969]",
        ),
        (
            "GEORADIUSBYMEMBER_RO nyc wtc~one 7 km".to_string(),
            "wtc one|union square|central park n/q/r|4545|lic market",
        ),
        (
            format!("GEOSEARCH {} byradius 5 mi desc withdist", centre.replace("nyc", "nyc fromlonlat")),
            "[wtc one|3.6991]|[q4|2.3158]|[lic market|1.9879]|[union square|1.7210]|[4545|1.4696]|[central park n/q/r|0.4816]",
        ),
        (
            format!("GEOSEARCH {} byradius 20000 ft asc withdist", centre.replace("nyc", "nyc fromlonlat")),
            "[central park n/q/r|2542.7046]|[4545|7759.5705]|[union square|9086.8293]|\
             [lic market|10495.8800]|[q4|12227.3566]|[wtc one|19530.9486]",
        ),
        (format!("GEORADIUS {centre} 1 m"), ""),
        ("GEORADIUS nokey 0 0 1 km".to_string(), ""),
    ];
    for (request, want) in &script {
        assert_eq!(q(&mut raw, request), *want, "{request}");
    }
    // The huge radius of Redis's issue #2767: each point once.
    check(
        &mut raw,
        &[
            (
                "GEOADD users -47.271613776683807 -54.534504198047678 user_000000",
                "1",
            ),
            ("GEORADIUS users 0 0 50000 km", "user_000000"),
            (
                "GEOADD points -122.407107 37.794300 1 -122.227336 37.794300 2",
                "2",
            ),
            (
                "GEORADIUS points -122.407107 37.794300 30 mi ASC WITHDIST",
                "[1|0.0001]|[2|9.8182]",
            ),
        ],
    );
}

#[test]
fn searches_near_the_poles_and_the_antimeridian_match_redis() {
    let (_server, mut raw) = server();
    check(
        &mut raw,
        &[
            // Neighbouring cells reached in an oblique direction.
            ("GEOADD k1 -0.15307903289794921875 85 n1 0.3515625 85.00019260486917005437 n2", "2"),
            ("GEORADIUSBYMEMBER k1 n1 4891.94 m", "n1|n2"),
            ("DEL k1", "1"),
            ("GEOADD k1 -4.95211958885192871094 85 n3 11.25 85.0511 n4", "2"),
            ("GEORADIUSBYMEMBER k1 n3 156544 m", "n3|n4"),
            ("DEL k1", "1"),
            ("GEOADD k1 -45 65.50900022111811438208 n5 90 85.0511 n6", "2"),
            ("GEORADIUSBYMEMBER k1 n5 5009431 m", "n5|n6"),
            ("DEL k1", "1"),
            // Across the pole.
            ("GEOADD k1 45 65 n1 -135 85.05 n2", "2"),
            ("GEORADIUSBYMEMBER k1 n1 5009431 m", "n1|n2"),
            // Boxes across ±180°.
            ("GEOADD pts 179.5 36 point1 -179.5 36 point2 0 85.05 north 180 -85 south", "4"),
            ("GEOSEARCH pts fromlonlat 179 37 bybox 400 400 km asc withdist", "[point1|119.8737]|[point2|174.2313]"),
            ("GEOSEARCH pts fromlonlat -179 37 byradius 400 km asc withdist", "[point2|119.8737]|[point1|174.2313]"),
            (
                "GEOSEARCH pts fromlonlat 90 84 byradius 1000 km withdist withcoord",
                "[north|864.5141|[0.00000268220901489|85.04999956172351006]]",
            ),
            ("GEOHASH pts point1 point2 north south", "xyrsu9egjn0|8n2kg3s54y0|up05b4bh0j0|00bh2n0p050"),
            // Redis's cells miss this point inside the box (the south
            // neighbour wraps to the north edge of the grid); so do ours.
            ("GEOSEARCH pts fromlonlat -170 -84.5 bybox 2000 200 km", ""),
            // Box corners: only the edges' middles are inside.
            (
                "GEOADD sicily 12.758489 38.788135 edge1 17.241510 38.788135 edge2 17.250000 35.202000 edge3 \
                 12.750000 35.202000 edge4 12.748489955781654 37 edge5 15 38.798135872540925 edge6 \
                 17.251510044218346 37 edge7 15 35.201864127459075 edge8 12.692799634687903 38.798135872540925 \
                 corner1 12.692799634687903 38.798135872540925 corner2 17.200560937451133 35.201864127459075 \
                 corner3 12.799439062548865 35.201864127459075 corner4",
                "12",
            ),
            ("GEOSEARCH sicily fromlonlat 15 37 bybox 400 400 km asc", "edge7|edge5|edge2|edge1"),
        ],
    );
}

#[test]
fn store_options_replace_the_destination_in_one_unit() {
    let (_server, mut raw) = server();
    sicily(&mut raw);
    check(
        &mut raw,
        &[
            ("GEORADIUS sicily 15 37 200 km storedist p2", "2"),
            (
                "ZRANGE p2 0 -1 WITHSCORES",
                "Catania|56.441257870158204|Palermo|190.44242984775784",
            ),
            ("GEORADIUSBYMEMBER sicily Palermo 200 mi store p3", "2"),
            (
                "ZRANGE p3 0 -1 WITHSCORES",
                "Palermo|3479099956230698|Catania|3479447370796909",
            ),
            (
                "GEOSEARCHSTORE p3 sicily fromlonlat 15 37 bybox 400 400 km storedist count 1 desc",
                "1",
            ),
            ("ZRANGE p3 0 -1 WITHSCORES", "Palermo|190.44242984775784"),
            (
                "GEORADIUS sicily 13.361389 38.115556 500 km storedist p2 asc count 1",
                "1",
            ),
            ("ZRANGE p2 0 -1", "Palermo"),
            // The destination's old value and time to live go.
            ("SET p4 x EX 100", "OK"),
            (
                "GEOSEARCHSTORE p4 sicily fromlonlat 15 37 byradius 300 km",
                "2",
            ),
            ("TTL p4", "-1"),
            ("TYPE p4", "zset"),
            (
                "GEOSEARCHSTORE p4{t} sicily frommember Catania bybox 1 1 km",
                "1",
            ),
            // An empty result, or a missing source, deletes it.
            ("GEOSEARCHSTORE p4 sicily fromlonlat 0 0 byradius 1 km", "0"),
            ("EXISTS p4", "0"),
            ("SET p5 x", "OK"),
            ("GEORADIUS nokey 0 0 1 km store p5", "0"),
            ("EXISTS p5", "0"),
            ("SET p5 x", "OK"),
            ("GEORADIUSBYMEMBER nokey nosuch 1 km store p5", "0"),
            ("EXISTS p5", "0"),
            // An error writes nothing.
            ("SET p6 x", "OK"),
            ("SET src x", "OK"),
            (
                "GEORADIUS src 0 0 1 km store p6",
                "WRONGTYPE Operation against a key holding the wrong kind of value",
            ),
            (
                "GEORADIUSBYMEMBER sicily nosuch 1 km store p6",
                "ERR could not decode requested zset member",
            ),
            (
                "GEORADIUS sicily 0 0 1 km store p6 count 0",
                "ERR COUNT must be > 0",
            ),
            ("GET p6", "x"),
        ],
    );
}

#[test]
fn resp3_coordinates_are_doubles_and_distances_strings() {
    let (_server, mut raw) = server();
    sicily(&mut raw);
    q(&mut raw, "HELLO 3");
    check(
        &mut raw,
        &[
            (
                "GEOPOS sicily Palermo nosuch",
                "[,13.36138933897018433|,38.11555639549629859]|(nil)",
            ),
            ("GEODIST sicily Palermo Catania km", "166.2742"),
            ("GEODIST sicily Palermo nosuch", "(nil)"),
            (
                "GEORADIUS sicily 15 37 200 km withdist withcoord withhash",
                "[Palermo|190.4424|3479099956230698|[,13.36138933897018433|,38.11555639549629859]]|\
                 [Catania|56.4413|3479447370796909|[,15.08726745843887329|,37.50266842333162032]]",
            ),
        ],
    );
}

#[test]
fn bad_input_gets_redis_errors() {
    let (_server, mut raw) = server();
    sicily(&mut raw);
    let wrongtype = "WRONGTYPE Operation against a key holding the wrong kind of value";
    let syntax = "ERR syntax error";
    let unit = "ERR unsupported unit provided. please use M, KM, FT, MI";
    q(&mut raw, "SET s 1");
    check(
        &mut raw,
        &[
            ("GEOADD k 200 100 a", "ERR invalid longitude,latitude pair 200.000000,100.000000"),
            ("GEOADD k 1 inf a", "ERR invalid longitude,latitude pair 1.000000,inf"),
            ("GEOADD k 0 85.06 a", "ERR invalid longitude,latitude pair 0.000000,85.060000"),
            ("GEOADD k foo bar a", "ERR value is not a valid float"),
            ("GEOADD k 1 nan a", "ERR value is not a valid float"),
            ("GEOADD k 1e400 0 a", "ERR value is not a valid float"),
            ("GEOADD k 1e-400 0 a", "ERR value is not a valid float"),
            ("GEOADD k 0x 0 a", "ERR value is not a valid float"),
            ("GEOADD k 1 2", "ERR wrong number of arguments for 'geoadd' command"),
            ("GEOADD k nx xx 1 2 a", syntax),
            ("GEOADD k ch xx foo 1 2 a", syntax),
            ("GEOADD k ch ch ch", syntax),
            ("GEOADD k 1 2 a 3", syntax),
            ("GEOADD s 0 0 a", wrongtype),
            ("GEOADD s 200 0 a", "ERR invalid longitude,latitude pair 200.000000,0.000000"),
            ("EXISTS k", "0"),
            ("GEODIST sicily Palermo Catania kmx", unit),
            ("GEODIST sicily Palermo Catania km x", syntax),
            ("GEODIST nokey a b xx", unit),
            ("GEODIST s a b", wrongtype),
            ("GEOPOS s a", wrongtype),
            ("GEOHASH s a", wrongtype),
            ("GEORADIUS sicily 0 0 -1 km", "ERR radius cannot be negative"),
            ("GEORADIUS sicily 0 0 x km", "ERR need numeric radius"),
            ("GEORADIUS sicily 0 0 1 kmm", unit),
            ("GEORADIUS sicily 200 0 1 km", "ERR invalid longitude,latitude pair 200.000000,0.000000"),
            ("GEORADIUS sicily x 0 1 km", "ERR value is not a valid float"),
            ("GEORADIUS s 200 0 1 km", wrongtype),
            ("GEORADIUS nokey 200 0 1 km", "ERR invalid longitude,latitude pair 200.000000,0.000000"),
            ("GEORADIUS sicily 0 0 1 km count 0", "ERR COUNT must be > 0"),
            ("GEORADIUS sicily 0 0 1 km count -1", "ERR COUNT must be > 0"),
            ("GEORADIUS sicily 0 0 1 km count x", "ERR value is not an integer or out of range"),
            ("GEORADIUS sicily 0 0 1 km count", syntax),
            ("GEORADIUS sicily 0 0 1 km count 1 count", syntax),
            ("GEORADIUS sicily 0 0 1 km any asc", "ERR the ANY argument requires COUNT argument"),
            ("GEORADIUS sicily 0 0 1 km store", syntax),
            ("GEORADIUS sicily 0 0 1 km foo", syntax),
            (
                "GEORADIUS sicily 0 0 1 km store d withdist",
                "ERR STORE option in GEORADIUS is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            ("GEORADIUS_RO sicily 0 0 1 km store d", syntax),
            ("GEORADIUSBYMEMBER_RO sicily Palermo 1 km storedist d", syntax),
            ("GEORADIUSBYMEMBER sicily nosuch 1 km", "ERR could not decode requested zset member"),
            ("GEORADIUSBYMEMBER sicily nosuch 1 kmx", "ERR could not decode requested zset member"),
            ("GEORADIUSBYMEMBER sicily Palermo 1 kmx", unit),
            // A missing source reads no member and no radius.
            ("GEORADIUSBYMEMBER nokey nosuch 1 kmx", ""),
            ("GEOSEARCH nokey frommember nosuch bybox 1 1 km", ""),
            ("GEOSEARCH sicily frommember nosuch bybox 1 1 km", "ERR could not decode requested zset member"),
            ("GEOSEARCH s frommember nosuch bybox 1 1 km", wrongtype),
            ("GEOSEARCH sicily fromlonlat 0 0 bybox -1 1 km", "ERR height or width cannot be negative"),
            ("GEOSEARCH sicily fromlonlat 0 0 bybox x 1 km", "ERR need numeric width"),
            ("GEOSEARCH sicily fromlonlat 0 0 bybox 1 x km", "ERR need numeric height"),
            ("GEOSEARCH sicily fromlonlat 0 0 bybox 1 1 kmx", unit),
            ("GEOSEARCH sicily fromlonlat 0 0", "ERR wrong number of arguments for 'geosearch' command"),
            ("GEOSEARCH sicily fromlonlat 0 0 frommember x bybox 1 1 km", syntax),
            ("GEOSEARCH sicily fromlonlat 0 0 byradius 3 km bybox 3 3 km", syntax),
            ("GEOSEARCH sicily fromlonlat 0 0 byradius 3 km storedist", syntax),
            ("GEOSEARCH sicily fromlonlat 0 0 byradius 3 km store d", syntax),
            (
                "GEOSEARCH sicily bybox 3 3 km asc desc withhash withdist withcoord",
                "ERR exactly one of FROMMEMBER or FROMLONLAT can be specified for GEOSEARCH",
            ),
            (
                "geosearch sicily fromlonlat 0 0 asc desc withhash withdist withcoord",
                "ERR exactly one of BYRADIUS and BYBOX can be specified for geosearch",
            ),
            (
                "GEOSEARCHSTORE d sicily fromlonlat 0 0 byradius 1 km withdist storedist",
                "ERR GEOSEARCHSTORE is not compatible with WITHDIST, WITHHASH and WITHCOORD options",
            ),
            ("GEOSEARCHSTORE d sicily fromlonlat 0 0 byradius 1 km store d", syntax),
            ("GEOSEARCHSTORE d sicily byradius 1 km", "ERR wrong number of arguments for 'geosearchstore' command"),
            ("EXISTS d", "0"),
        ],
    );
}

/// The great-circle distance in metres (haversine on Redis's sphere).
fn haversine(lon1: f64, lat1: f64, lon2: f64, lat2: f64) -> f64 {
    let r = 6372797.560856;
    let (lat1, lat2) = (lat1.to_radians(), lat2.to_radians());
    let u = ((lat2 - lat1) / 2.0).sin();
    let v = ((lon2 - lon1).to_radians() / 2.0).sin();
    2.0 * r * (u * u + lat1.cos() * lat2.cos() * v * v).sqrt().asin()
}

fn floats(r: &Resp) -> (f64, f64) {
    let Resp::Array(xy) = r else { panic!("{r:?}") };
    let f = |r: &Resp| flat(r).parse::<f64>().unwrap();
    (f(&xy[0]), f(&xy[1]))
}

fn members(r: Resp) -> Vec<String> {
    let Resp::Array(items) = r else {
        panic!("{r:?}")
    };
    let mut out: Vec<String> = items.iter().map(flat).collect();
    out.sort();
    out
}

#[test]
fn searches_find_every_point_inside_and_none_outside() {
    // As Redis's own fuzz test: latitudes within ±70, where the cells
    // always cover the shape; points within a millionth of the edge are
    // not judged (the decimal and binary figures may round either way).
    let (_server, mut raw) = server();
    let mut rng = StdRng::seed_from_u64(34);
    for round in 0..12 {
        q(&mut raw, "DEL pts");
        let n = 800;
        let mut words: Vec<String> = vec!["GEOADD".into(), "pts".into()];
        for i in 0..n {
            words.push(format!("{}", rng.gen_range(-180.0..180.0)));
            words.push(format!("{}", rng.gen_range(-70.0..70.0)));
            words.push(format!("p{i}"));
        }
        let refs: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
        assert_eq!(raw.command(&refs), Resp::Int(n));
        let mut pos_req: Vec<String> = vec!["GEOPOS".into(), "pts".into()];
        pos_req.extend((0..n).map(|i| format!("p{i}")));
        let refs: Vec<&[u8]> = pos_req.iter().map(|w| w.as_bytes()).collect();
        let Resp::Array(positions) = raw.command(&refs) else {
            panic!()
        };
        let positions: Vec<(f64, f64)> = positions.iter().map(floats).collect();
        for _ in 0..10 {
            let (lon, lat) = (rng.gen_range(-180.0..180.0), rng.gen_range(-70.0..70.0));
            let big = round % 4 == 0;
            let side = |rng: &mut StdRng| {
                if big {
                    rng.gen_range(10.0..5000.0)
                } else {
                    rng.gen_range(10.0..300.0)
                }
            };
            let (radius, width, height) = (side(&mut rng), side(&mut rng), side(&mut rng));
            let inside_circle = |&(x, y): &(f64, f64)| {
                let d = haversine(lon, lat, x, y) / (radius * 1000.0);
                (d < 1.0 - 1e-6)
                    .then_some(true)
                    .or((d > 1.0 + 1e-6).then_some(false))
            };
            let inside_box = |&(x, y): &(f64, f64)| {
                let dy = haversine(x, y, x, lat) / (height * 500.0);
                let dx = haversine(x, y, lon, y) / (width * 500.0);
                let (a, b) = (dx.max(dy), 1.0);
                (a < b - 1e-6)
                    .then_some(true)
                    .or((a > b + 1e-6).then_some(false))
            };
            for (by, inside) in [
                (
                    format!("byradius {radius} km"),
                    &inside_circle as &dyn Fn(&(f64, f64)) -> Option<bool>,
                ),
                (format!("bybox {width} {height} km"), &inside_box),
            ] {
                let request = format!("GEOSEARCH pts fromlonlat {lon} {lat} {by}");
                let words: Vec<&[u8]> = request.split(' ').map(str::as_bytes).collect();
                let got = members(raw.command(&words));
                for (i, p) in positions.iter().enumerate() {
                    let name = format!("p{i}");
                    if let Some(want) = inside(p) {
                        let found = got.binary_search(&name).is_ok();
                        assert_eq!(found, want, "{request}: {name} at {p:?}");
                    }
                }
            }
        }
    }
}

/// Random sets and random searches with every option, sent to a fresh
/// persimmon server and to the reference server side by side: the replies
/// must be the same, byte for byte (RESP2 and RESP3). Runs only with
/// `GEO_REFERENCE` set (it needs a redis-server).
#[test]
fn random_searches_reply_as_the_reference_server() {
    let Ok(addr) = std::env::var("GEO_REFERENCE") else {
        return;
    };
    let reference = addr.to_socket_addrs().unwrap().next().unwrap();
    let server = TestServer::start();
    let mut rng = StdRng::seed_from_u64(7);
    for resp3 in [false, true] {
        let mut ours = server.raw();
        let mut theirs = Raw::connect(reference);
        for raw in [&mut ours, &mut theirs] {
            raw.command(&[b"FLUSHALL"]);
            if resp3 {
                raw.command(&[b"HELLO", b"3"]);
            }
        }
        let mut both = |words: &[String]| {
            let words: Vec<&[u8]> = words.iter().map(|w| w.as_bytes()).collect();
            let (a, b) = (ours.command(&words), theirs.command(&words));
            assert_eq!(
                a,
                b,
                "{:?}",
                words
                    .iter()
                    .map(|w| String::from_utf8_lossy(w))
                    .collect::<Vec<_>>()
            );
        };
        let w = |text: &str| text.split(' ').map(String::from).collect::<Vec<_>>();
        for _ in 0..8 {
            both(&w("DEL g dst"));
            // Worldwide, near a pole, across ±180° or in a small region.
            let region = rng.gen_range(0..4);
            let point = |rng: &mut StdRng| -> (f64, f64) {
                match region {
                    0 => (rng.gen_range(-180.0..180.0), rng.gen_range(-85.05..85.05)),
                    1 => (
                        rng.gen_range(-180.0..180.0),
                        rng.gen_range(60.0..85.05112878),
                    ),
                    2 => (
                        rng.gen_range(170.0..180.0) * if rng.gen() { 1.0 } else { -1.0 },
                        rng.gen_range(-60.0..60.0),
                    ),
                    _ => (
                        13.0 + rng.gen_range(-1.0..1.0),
                        45.0 + rng.gen_range(-1.0..1.0),
                    ),
                }
            };
            let mut add = w("GEOADD g");
            for i in 0..300 {
                let (lon, lat) = point(&mut rng);
                add.extend([format!("{lon}"), format!("{lat}"), format!("m{i}")]);
            }
            both(&add);
            for _ in 0..25 {
                let (lon, lat) = point(&mut rng);
                let (unit, metres) = [("m", 1.0), ("km", 1000.0), ("ft", 0.3048), ("mi", 1609.34)]
                    [rng.gen_range(0..4)];
                let scale = [1e3, 1e4, 1e5, 1e6, 5e6][rng.gen_range(0..5)] / metres;
                let size = |rng: &mut StdRng| format!("{:.3}", rng.gen::<f64>() * scale);
                let mut options = Vec::new();
                for o in ["WITHDIST", "WITHCOORD", "WITHHASH"] {
                    if rng.gen_bool(0.4) {
                        options.push(o.to_string());
                    }
                }
                if rng.gen_bool(0.3) {
                    options.push(["ASC", "DESC"][rng.gen_range(0..2)].to_string());
                }
                if rng.gen_bool(0.3) {
                    options.extend(["COUNT".to_string(), rng.gen_range(1..20).to_string()]);
                    if rng.gen_bool(0.5) {
                        options.push("ANY".into());
                    }
                }
                let member = format!("m{}", rng.gen_range(0..10));
                let mut request = match rng.gen_range(0..4) {
                    0 => vec![
                        "GEORADIUS".into(),
                        "g".into(),
                        format!("{lon}"),
                        format!("{lat}"),
                        size(&mut rng),
                        unit.into(),
                    ],
                    1 => vec![
                        "GEORADIUSBYMEMBER".into(),
                        "g".into(),
                        member,
                        size(&mut rng),
                        unit.into(),
                    ],
                    2 => vec![
                        "GEOSEARCH".into(),
                        "g".into(),
                        "FROMLONLAT".into(),
                        format!("{lon}"),
                        format!("{lat}"),
                        "BYBOX".into(),
                        size(&mut rng),
                        size(&mut rng),
                        unit.into(),
                    ],
                    _ => vec![
                        "GEOSEARCH".into(),
                        "g".into(),
                        "FROMMEMBER".into(),
                        member,
                        "BYRADIUS".into(),
                        size(&mut rng),
                        unit.into(),
                    ],
                };
                request.extend(options);
                both(&request);
                if rng.gen_bool(0.3) {
                    let mut store: Vec<String> = request
                        .iter()
                        .filter(|o| !o.starts_with("WITH"))
                        .cloned()
                        .collect();
                    if store[0] == "GEOSEARCH" {
                        store[0] = "GEOSEARCHSTORE".into();
                        store.insert(1, "dst".into());
                        if rng.gen_bool(0.5) {
                            store.push("STOREDIST".into());
                        }
                    } else {
                        store.extend([
                            ["STORE", "STOREDIST"][rng.gen_range(0..2)].to_string(),
                            "dst".into(),
                        ]);
                    }
                    both(&store);
                    both(&w("ZRANGE dst 0 -1 WITHSCORES"));
                }
            }
            let mut pos = w("GEOPOS g");
            pos.extend((0..12).map(|i| format!("m{i}")));
            both(&pos);
            pos[0] = "GEOHASH".into();
            both(&pos);
            both(&w("GEODIST g m1 m2 km"));
        }
    }
}
