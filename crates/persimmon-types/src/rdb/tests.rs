//! The codec against payloads redis-server 7.0.15 wrote (see `golden`),
//! round trips, and every way a payload can be malformed.

mod golden;

use super::{crc64::crc64, dump, restore, RdbError, RdbValue};
use golden::*;
use proptest::prelude::*;

const BAD: &str = "ERR Bad data format";
const CHECKSUM: &str = "ERR DUMP payload version or checksum are wrong";
const TEXT: &[u8] =
    b"The quick brown fox jumps over the lazy dog; pack my box with five dozen liquor jugs.";

/// `body` with a valid version 10 footer.
fn payload(body: &[u8]) -> Vec<u8> {
    with_version(body, 10)
}

fn with_version(body: &[u8], version: u16) -> Vec<u8> {
    let mut out = body.to_vec();
    out.extend_from_slice(&version.to_le_bytes());
    let crc = crc64(&out);
    out.extend_from_slice(&crc.to_le_bytes());
    out
}

/// A captured payload less its footer.
fn body(payload: &[u8]) -> &[u8] {
    &payload[..payload.len() - 10]
}

fn error(text: &str) -> Result<RdbValue, RdbError> {
    Err(RdbError(text.to_string()))
}

#[track_caller]
fn assert_bad(body: &[u8]) {
    assert_eq!(restore(&payload(body)), error(BAD), "body {body:x?}");
}

fn string(s: &[u8]) -> RdbValue {
    RdbValue::String(s.to_vec())
}

fn hash(pairs: &[(&[u8], &[u8])]) -> RdbValue {
    RdbValue::Hash(
        pairs
            .iter()
            .map(|(f, v)| (f.to_vec(), v.to_vec()))
            .collect(),
    )
}

fn zset(members: &[(f64, &[u8])]) -> RdbValue {
    RdbValue::ZSet(members.iter().map(|(s, m)| (*s, m.to_vec())).collect())
}

/// An RDB object of type `kind` holding a listpack of `entries` (each
/// given whole: encoding, data and backlen).
fn listpack(kind: u8, entries: &[&[u8]]) -> Vec<u8> {
    let inner = entries.concat();
    let total = 6 + inner.len() + 1;
    assert!(total < 64, "test listpacks stay short");
    let mut out = vec![kind, total as u8];
    out.extend_from_slice(&(total as u32).to_le_bytes());
    out.extend_from_slice(&(entries.len() as u16).to_le_bytes());
    out.extend_from_slice(&inner);
    out.push(0xff);
    out
}

#[track_caller]
fn assert_round_trip(value: &RdbValue) {
    let restored = restore(&dump(value)).expect("restores");
    assert_eq!(&restored, value);
    if let (RdbValue::ZSet(a), RdbValue::ZSet(b)) = (&restored, value) {
        let bits = |z: &Vec<(f64, Vec<u8>)>| z.iter().map(|(s, _)| s.to_bits()).collect::<Vec<_>>();
        assert_eq!(bits(a), bits(b), "scores keep their bits (negative zero)");
    }
}

// --- CRC64 ---

#[test]
fn crc64_is_redis_jones_crc() {
    // The check value Redis's crc64.c tests itself with.
    assert_eq!(crc64(b"123456789"), 0xe9c6_d914_c4b8_d9ca);
    assert_eq!(crc64(b""), 0);
}

#[test]
fn crc64_matches_every_captured_checksum() {
    let all = [
        STRING_SHORT,
        STRING_INT,
        STRING_NEG,
        STRING_LZF,
        STRING_LZF2,
        HASH_LISTPACK,
        HASH_PLAIN,
        HASH_LISTPACK_LZF,
        ZSET_LISTPACK,
        ZSET_SKIPLIST,
    ];
    for p in all {
        let (checked, crc) = p.split_at(p.len() - 8);
        assert_eq!(crc64(checked).to_le_bytes(), crc, "payload {p:x?}");
    }
}

// --- Payloads Redis 7.0.15 wrote ---

#[test]
fn restores_strings_redis_dumped() {
    assert_eq!(restore(STRING_SHORT), Ok(string(b"hello")));
    assert_eq!(restore(STRING_INT), Ok(string(b"12345")));
    assert_eq!(restore(STRING_NEG), Ok(string(b"-70000")));
    assert_eq!(restore(STRING_LZF), Ok(string(&[b'a'; 200])));
    let lzf2 = [
        b"hello world ".repeat(20),
        b"0123456789".repeat(10),
        b"end".to_vec(),
    ]
    .concat();
    assert_eq!(restore(STRING_LZF2), Ok(RdbValue::String(lzf2)));
}

#[test]
fn restores_hashes_redis_dumped() {
    assert_eq!(
        restore(HASH_LISTPACK),
        Ok(hash(&[(b"f1", b"v1"), (b"f2", b"2"), (b"count", b"-300")]))
    );
    assert_eq!(
        restore(HASH_PLAIN),
        Ok(hash(&[(b"name", TEXT), (b"n", b"7")]))
    );
    let pairs: Vec<(Vec<u8>, Vec<u8>)> = (0..40)
        .map(|i| {
            (
                format!("field:{i}").into_bytes(),
                format!("value:{}", i * 7).into_bytes(),
            )
        })
        .collect();
    assert_eq!(restore(HASH_LISTPACK_LZF), Ok(RdbValue::Hash(pairs)));
}

#[test]
fn restores_sorted_sets_redis_dumped() {
    let small = zset(&[(f64::NEG_INFINITY, b"c"), (1.0, b"a"), (2.5, b"b")]);
    assert_eq!(restore(ZSET_LISTPACK), Ok(small));
    let big = zset(&[
        (f64::NEG_INFINITY, b"x"),
        (0.0, b"z"),
        (1.5, TEXT),
        (f64::INFINITY, b"y"),
    ]);
    assert_eq!(restore(ZSET_SKIPLIST), Ok(big));
}

#[test]
fn dump_writes_the_bytes_redis_writes_where_encodings_agree() {
    // Raw and integer strings; a plain hash (in the order Redis's dict
    // happened to iterate); a skiplist sorted set (Redis writes it from the
    // highest member down, as dump does).
    assert_eq!(dump(&string(b"hello")), STRING_SHORT);
    assert_eq!(dump(&string(b"12345")), STRING_INT);
    assert_eq!(dump(&string(b"-70000")), STRING_NEG);
    assert_eq!(dump(&hash(&[(b"name", TEXT), (b"n", b"7")])), HASH_PLAIN);
    let big = zset(&[
        (f64::NEG_INFINITY, b"x"),
        (0.0, b"z"),
        (1.5, TEXT),
        (f64::INFINITY, b"y"),
    ]);
    assert_eq!(dump(&big), ZSET_SKIPLIST);
}

#[test]
fn restores_older_encodings_redis_accepts() {
    assert_eq!(
        restore(LEGACY_HASH_ZIPLIST),
        Ok(hash(&[
            (b"a", b"-5"),
            (b"b", b"-1000"),
            (b"c", b"-100000"),
            (b"d", b"2000000000"),
            (b"e", b"-9000000000000000000"),
            (b"0", b"12"),
            (b"xy", b"z"),
        ]))
    );
    assert_eq!(
        restore(LEGACY_ZSET_ZIPLIST),
        Ok(zset(&[(-3.0, b"m2"), (1.5, b"m1"), (f64::INFINITY, b"m3")]))
    );
    assert_eq!(
        restore(LEGACY_HASH_ZIPMAP),
        Ok(hash(&[(b"foo", b"bar"), (b"hello", b"world")]))
    );
    assert_eq!(
        restore(LEGACY_ZSET),
        Ok(zset(&[
            (f64::NEG_INFINITY, b"c"),
            (1.5, b"a"),
            (f64::INFINITY, b"b")
        ]))
    );
    assert_eq!(
        restore(LEGACY_HASH_LISTPACK),
        Ok(hash(&[
            (b"a", b"127"),
            (b"b", b"-1"),
            (b"c", b"-20000"),
            (b"d", b"-5000000"),
            (b"e", b"-2000000000"),
            (b"f", b"4611686018427387904"),
            (b"xy", b"pqr"),
        ]))
    );
    assert_eq!(
        restore(LEGACY_HASH_LISTPACK_LONG),
        Ok(hash(&[(b"k", &[b'v'; 100])]))
    );
}

// --- Round trips ---

#[test]
fn strings_round_trip() {
    let texts = [
        "",
        "0",
        "-0",
        "+1",
        "007",
        " 1",
        "1 ",
        "-1",
        "127",
        "128",
        "-128",
        "-129",
        "32767",
        "32768",
        "-32768",
        "-32769",
        "2147483647",
        "2147483648",
        "-2147483648",
        "-2147483649",
        "12345678901",
        "9223372036854775807",
        "1e3",
        "abc",
    ];
    for t in texts {
        assert_round_trip(&string(t.as_bytes()));
    }
    let binary: Vec<u8> = (0..=255u8).collect();
    assert_round_trip(&RdbValue::String(binary));
    assert_round_trip(&RdbValue::String(b"0123456789".repeat(10_000)));
}

#[test]
fn integer_strings_take_redis_integer_encodings() {
    assert_eq!(&dump(&string(b"-128"))[..3], b"\x00\xc0\x80");
    assert_eq!(&dump(&string(b"128"))[..4], b"\x00\xc1\x80\x00");
    assert_eq!(
        &dump(&string(b"2147483647"))[..6],
        b"\x00\xc2\xff\xff\xff\x7f"
    );
    assert_eq!(
        &dump(&string(b"2147483648"))[..2],
        b"\x00\x0a",
        "past 32 bits: text"
    );
    assert_eq!(
        &dump(&string(b"007"))[..2],
        b"\x00\x03",
        "not canonical: text"
    );
}

#[test]
fn lengths_take_every_width() {
    for len in [0, 63, 64, 16383, 16384, 70_000] {
        let value = RdbValue::String(vec![b'x'; len]);
        assert_round_trip(&value);
    }
    assert_eq!(
        &dump(&RdbValue::String(vec![b'x'; 64]))[..3],
        b"\x00\x40\x40"
    );
    assert_eq!(
        &dump(&RdbValue::String(vec![b'x'; 16384]))[..6],
        b"\x00\x80\x00\x00\x40\x00"
    );
}

#[test]
fn hashes_round_trip() {
    assert_round_trip(&hash(&[(b"f", b"v")]));
    assert_round_trip(&hash(&[
        (b"", b""),
        (b"1", b"-1"),
        (b"\x00\xff", &[7u8; 300]),
    ]));
    let big: Vec<(Vec<u8>, Vec<u8>)> = (0..1000)
        .map(|i| {
            (
                format!("field:{i}").into_bytes(),
                format!("{i}").into_bytes(),
            )
        })
        .collect();
    assert_round_trip(&RdbValue::Hash(big));
}

#[test]
fn sorted_sets_round_trip() {
    assert_round_trip(&zset(&[
        (f64::NEG_INFINITY, b"lowest"),
        (-1.5, b"neg"),
        (-0.0, b"negzero"),
        (0.0, b"zero"),
        (1e-300, b"tiny"),
        (f64::MAX, b"max"),
        (f64::INFINITY, b"highest"),
    ]));
    let big: Vec<(f64, Vec<u8>)> = (0..20_000)
        .map(|i| (f64::from(i) / 3.0, format!("m{i:05}").into_bytes()))
        .collect();
    assert_round_trip(&RdbValue::ZSet(big));
}

#[test]
fn restore_sorts_members_by_score_then_member() {
    let body = [
        b"\x05\x03\x01b".as_slice(),
        &1.0f64.to_le_bytes(),
        b"\x01a",
        &1.0f64.to_le_bytes(),
        b"\x01c",
        &0.5f64.to_le_bytes(),
    ]
    .concat();
    assert_eq!(
        restore(&payload(&body)),
        Ok(zset(&[(0.5, b"c"), (1.0, b"a"), (1.0, b"b")]))
    );
}

// --- The footer ---

#[test]
fn footer_errors_are_redis_checksum_error() {
    for len in 0..10 {
        assert_eq!(
            restore(&STRING_SHORT[..len]),
            error(CHECKSUM),
            "{len} bytes"
        );
    }
    assert_eq!(
        restore(&with_version(body(STRING_SHORT), 11)),
        error(CHECKSUM)
    );
    assert_eq!(
        restore(&with_version(body(STRING_SHORT), 0xffff)),
        error(CHECKSUM)
    );
    for i in 0..STRING_SHORT.len() {
        let mut p = STRING_SHORT.to_vec();
        p[i] ^= 0x01;
        assert_eq!(restore(&p), error(CHECKSUM), "byte {i} flipped");
    }
}

#[test]
fn older_rdb_versions_are_accepted() {
    assert_eq!(
        restore(&with_version(body(STRING_SHORT), 9)),
        Ok(string(b"hello"))
    );
    assert_eq!(
        restore(&with_version(body(STRING_SHORT), 0)),
        Ok(string(b"hello"))
    );
}

// --- Types persimmon does not store ---

#[test]
fn unsupported_types_say_what_they_hold() {
    let cases = [
        (6, "a module value", "module values"),
        (7, "a module value", "module values"),
    ];
    for (kind, what, plural) in cases {
        let text = format!("ERR DUMP payload holds {what}: persimmon does not store {plural} yet");
        assert_eq!(
            restore(&payload(&[kind, 1, b'x'])),
            error(&text),
            "type {kind}"
        );
    }
}

#[test]
fn a_malformed_stream_is_bad_data() {
    for kind in [15u8, 19] {
        assert_eq!(
            restore(&payload(&[kind, 1, b'x'])),
            error("ERR Bad data format"),
            "type {kind}"
        );
    }
}

fn list(elements: &[&[u8]]) -> RdbValue {
    RdbValue::List(elements.iter().map(|e| e.to_vec()).collect())
}

fn set(members: &[&[u8]]) -> RdbValue {
    RdbValue::Set(members.iter().map(|m| m.to_vec()).collect())
}

#[test]
fn restores_lists_redis_dumped() {
    assert_eq!(restore(LIST_SMALL), Ok(list(&[b"a", b"b", b"c"])));
    assert_eq!(
        restore(LIST_INTS),
        Ok(list(&[b"1", b"-2", b"hello", b"300000", b""]))
    );
    let five: Vec<Vec<u8>> = (1..=5)
        .map(|i| format!("element-number-{i}").into_bytes())
        .collect();
    assert_eq!(restore(LIST_LZF), Ok(RdbValue::List(five)));
    let many: Vec<Vec<u8>> = (1..=600)
        .map(|i| format!("element-padding-{i}").into_bytes())
        .collect();
    assert_eq!(restore(LIST_TWO_NODES), Ok(RdbValue::List(many)));
}

#[test]
fn restores_sets_redis_dumped() {
    assert_eq!(restore(SET_INTSET16), Ok(set(&[b"1", b"2", b"3"])));
    assert_eq!(restore(SET_PLAIN), Ok(set(&[b"c", b"b", b"a"])));
    assert_eq!(restore(SET_INTSET32), Ok(set(&[b"-5", b"70000"])));
    assert_eq!(restore(SET_INTSET64), Ok(set(&[b"-1", b"9000000000"])));
}

#[test]
fn dump_writes_lists_and_sets_as_redis_does() {
    // Small listpack nodes are not compressed: the very bytes.
    assert_eq!(dump(&list(&[b"a", b"b", b"c"])), LIST_SMALL);
    assert_eq!(
        dump(&list(&[b"1", b"-2", b"hello", b"300000", b""])),
        LIST_INTS
    );
    assert_eq!(dump(&set(&[b"c", b"b", b"a"])), SET_PLAIN);
    // Long lists are cut into 8 KiB nodes; every integer width reads back.
    let mut long: Vec<Vec<u8>> = (0..3000).map(|i| format!("e{i}").into_bytes()).collect();
    for v in [
        -1i64,
        127,
        128,
        -4096,
        4095,
        -4097,
        32767,
        -32769,
        8_388_607,
        -8_388_609,
        i32::MAX as i64,
        i32::MIN as i64 - 1,
        i64::MAX,
        i64::MIN,
    ] {
        long.push(v.to_string().into_bytes());
    }
    long.push(b"-0".to_vec());
    long.push(b"007".to_vec());
    long.push(vec![b'x'; 5000]);
    long.push(vec![b'y'; 20000]);
    let value = RdbValue::List(long);
    let bytes = dump(&value);
    assert_eq!(bytes[0], 18);
    assert!(bytes[1] > 2, "several nodes");
    assert_eq!(restore(&bytes), Ok(value));
}

#[test]
fn lists_and_sets_in_every_encoding_redis_accepts() {
    // Type 1: a count, then strings (an integer encoding too).
    assert_eq!(
        restore(&payload(&[1, 2, 1, b'a', 0xc0, 7])),
        Ok(list(&[b"a", b"7"]))
    );
    // Type 18 with a plain node and an empty listpack node (skipped).
    let mut body = vec![18, 3, 1, 2, b'p', b'q', 2, 7, 7, 0, 0, 0, 0, 0, 0xff];
    body.extend_from_slice(&[2, 10, 10, 0, 0, 0, 1, 0, 0x81, b'z', 2, 0xff]);
    assert_eq!(restore(&payload(&body)), Ok(list(&[b"pq", b"z"])));
    // Type 20: a listpack of members (Redis 7.2's).
    assert_eq!(
        restore(&payload(&listpack(20, &[b"\x81a\x02", b"\x05\x01"]))),
        Ok(set(&[b"a", b"5"]))
    );
    // Empty, duplicated or malformed collections are bad data.
    for body in [
        &[1u8, 0][..],
        &[2, 0],
        &[2, 2, 1, b'a', 1, b'a'],
        &[18, 1, 3, 1, b'x'],
        &[18, 1, 2, 7, 7, 0, 0, 0, 0, 0, 0xff],
        &[11, 8, 2, 0, 0, 0, 0, 0, 0, 0],
        &[11, 12, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0, 1, 0],
        &[11, 10, 3, 0, 0, 0, 1, 0, 0, 0, 1, 0],
        &[11, 10, 2, 0, 0, 0, 2, 0, 0, 0, 1, 0],
    ] {
        assert_bad(body);
    }
}

#[test]
fn unknown_types_are_bad_data() {
    for kind in [8, 20, 21, 100, 255] {
        assert_bad(&[kind, 1, b'x']);
    }
    assert_bad(&[]);
}

// --- Malformed objects ---

#[test]
fn trailing_bytes_are_bad_data() {
    assert_bad(b"\x00\x05helloX");
    assert_bad(&[body(HASH_PLAIN), b"\x00"].concat());
    assert_bad(&[body(ZSET_LISTPACK), b"\x00"].concat());
}

#[test]
fn truncated_objects_are_bad_data() {
    for p in [
        STRING_SHORT,
        STRING_INT,
        STRING_NEG,
        STRING_LZF,
        HASH_LISTPACK,
        HASH_PLAIN,
        ZSET_LISTPACK,
        ZSET_SKIPLIST,
        LEGACY_ZSET,
        LEGACY_HASH_ZIPMAP,
    ] {
        let b = body(p);
        for len in 1..b.len() {
            assert_bad(&b[..len]);
        }
    }
}

#[test]
fn lengths_past_the_end_are_bad_data() {
    assert_bad(b"\x00\x3fabc"); // 6-bit
    assert_bad(b"\x00\x7f\xffabc"); // 14-bit
    assert_bad(b"\x00\x80\xff\xff\xff\xffabc"); // 32-bit
    assert_bad(b"\x00\x81\xff\xff\xff\xff\xff\xff\xff\xffabc"); // 64-bit
    assert_bad(b"\x04\x80\x7f\xff\xff\xff\x01f\x01v"); // a hash of 2^31 pairs
    assert_bad(b"\x05\x81\xff\xff\xff\xff\xff\xff\xff\xff\x01m"); // zset count
    assert_bad(b"\x00\x82abc"); // no such length encoding
}

#[test]
fn bad_string_encodings_are_bad_data() {
    assert_bad(b"\x00\xc4\x00"); // encoding 4 does not exist
    assert_bad(b"\x00\xc0"); // INT8 without its byte
    assert_bad(b"\x00\xc1\x01"); // INT16 short
    assert_bad(b"\x00\xc2\x01\x02\x03"); // INT32 short
    assert_bad(b"\x04\xc1\x01f\x01v"); // an encoded value is no count
}

#[test]
fn bad_lzf_is_bad_data() {
    // Literal "ab" then "copy 3 from 2 back": "ababa".
    assert_eq!(
        restore(&payload(b"\x00\xc3\x05\x05\x01ab\x20\x01")),
        Ok(string(b"ababa"))
    );
    assert_bad(b"\x00\xc3\x05\x06\x01ab\x20\x01"); // declares one byte more
    assert_bad(b"\x00\xc3\x05\x04\x01ab\x20\x01"); // declares one byte less
    assert_bad(b"\x00\xc3\x05\x05\x01ab\x20\x02"); // references before the start
    assert_bad(b"\x00\xc3\x03\x05\x05ab"); // literal runs past the input
    assert_bad(b"\x00\xc3\x04\x05\x01ab\x20"); // back reference cut short
    assert_bad(b"\x00\xc3\x04\x0a\x01ab\xe0"); // long back reference cut short
    assert_bad(b"\x00\xc3\x01\x80\xff\xff\xff\xff\x00"); // 4 GiB from one byte
    assert_bad(b"\x00\xc3\x06\x05\x01ab"); // compressed length past the end
}

#[test]
fn empty_hashes_and_sorted_sets_are_bad_data() {
    assert_bad(b"\x04\x00");
    assert_bad(b"\x03\x00");
    assert_bad(b"\x05\x00");
    assert_bad(b"\x10\x07\x07\x00\x00\x00\x00\x00\xff"); // empty listpack
    assert_bad(b"\x11\x07\x07\x00\x00\x00\x00\x00\xff");
    assert_bad(b"\x0d\x0b\x0b\x00\x00\x00\x0a\x00\x00\x00\x00\x00\xff"); // empty ziplist
    assert_bad(b"\x09\x02\x00\xff"); // empty zipmap
}

#[test]
fn duplicate_hash_fields_are_bad_data() {
    assert_bad(b"\x04\x02\x01f\x01a\x01f\x01b");
    assert_bad(b"\x04\x02\xc0\x01\x01a\x011\x01b"); // INT8 1 and "1"
    assert_bad(&listpack(
        0x10,
        &[b"\x81f\x02", b"\x01\x01", b"\x81f\x02", b"\x02\x01"],
    ));
    assert_bad(b"\x09\x0c\x02\x01f\x01\x00a\x01f\x01\x00b\xff"); // zipmap
}

#[test]
fn duplicate_sorted_set_members_are_bad_data() {
    let one = 1.0f64.to_le_bytes();
    assert_bad(&[b"\x05\x02\x01m".as_slice(), &one, b"\x01m", &one].concat());
    assert_bad(b"\x03\x02\x01m\x011\x01m\x012");
    assert_bad(&listpack(
        0x11,
        &[b"\x81m\x02", b"\x01\x01", b"\x81m\x02", b"\x02\x01"],
    ));
}

#[test]
fn nan_scores_are_bad_data() {
    assert_bad(&[b"\x05\x01\x01m".as_slice(), &f64::NAN.to_le_bytes()].concat());
    assert_bad(b"\x03\x01\x01m\xfd"); // 253: NaN
    assert_bad(b"\x03\x01\x01m\x03nan");
    assert_bad(b"\x11\x0f\x0f\x00\x00\x00\x02\x00\x81m\x02\x83nan\x04\xff");
}

#[test]
fn scores_that_are_no_number_are_bad_data() {
    assert_bad(b"\x03\x01\x01m\x03abc");
    assert_bad(b"\x03\x01\x01m\x03\xff\xfe\xfd");
    assert_bad(b"\x11\x0f\x0f\x00\x00\x00\x02\x00\x81m\x02\x83x.5\x04\xff");
    assert_bad(b"\x03\x01\x01m\x05"); // text score past the end
}

#[test]
fn malformed_listpacks_are_bad_data() {
    // A valid one first: {"f": 1}.
    let good = listpack(0x10, &[b"\x81f\x02", b"\x01\x01"]);
    assert_eq!(
        good,
        b"\x10\x0c\x0c\x00\x00\x00\x02\x00\x81f\x02\x01\x01\xff"
    );
    assert_eq!(restore(&payload(&good)), Ok(hash(&[(b"f", b"1")])));
    let mutate = |at: usize, byte: u8| {
        let mut b = good.to_vec();
        b[at] = byte;
        b
    };
    assert_bad(&mutate(2, 0x0d)); // total bytes wrong
    assert_bad(&mutate(6, 0x03)); // count wrong
    assert_bad(&mutate(10, 0x03)); // backlen wrong
    assert_bad(&mutate(11, 0xf5)); // no such encoding
    assert_bad(&mutate(13, 0xfe)); // no terminator
    assert_bad(&mutate(11, 0xff)); // terminator before the last byte
    assert_bad(&mutate(11, 0x8f)); // string past the end
    assert_bad(&mutate(6, 0xff)); // count 255 of 2 entries
    let unknown = [&good[..6], b"\xff\xff", &good[8..]].concat();
    assert_eq!(
        restore(&payload(&unknown)),
        Ok(hash(&[(b"f", b"1")])),
        "count 65535: unknown"
    );
    assert_bad(&listpack(0x10, &[b"\x81f\x02"])); // a field without its value
    assert_bad(&listpack(0x10, &[b"\x81f\x02", b"\x81v\x03"])); // backlen one too many
    assert_bad(&listpack(0x10, &[b"\x81f\x02", b"\xc0\x01"])); // int13 without its backlen
}

#[test]
fn malformed_ziplists_are_bad_data() {
    // A valid one first: {"f": "v"}.
    let good = b"\x0d\x11\x11\x00\x00\x00\x0d\x00\x00\x00\x02\x00\x00\x01f\x03\x01v\xff";
    assert_eq!(restore(&payload(good)), Ok(hash(&[(b"f", b"v")])));
    let mutate = |at: usize, byte: u8| {
        let mut b = good.to_vec();
        b[at] = byte;
        b
    };
    assert_bad(&mutate(2, 0x12)); // total bytes wrong
    assert_bad(&mutate(6, 0x0c)); // tail offset wrong
    assert_bad(&mutate(6, 0x20)); // tail offset past the end
    assert_bad(&mutate(10, 0x03)); // count wrong
    assert_bad(&mutate(12, 0x01)); // first prevlen not 0
    assert_bad(&mutate(15, 0x02)); // second prevlen wrong
    assert_bad(&mutate(13, 0xc5)); // no such encoding
    assert_bad(&mutate(13, 0x05)); // string past the end
    assert_bad(&mutate(16, 0xff)); // terminator before the last byte
    assert_bad(&mutate(18, 0x00)); // no terminator at the end
    let unknown = [&good[..10], b"\xff\xff", &good[12..]].concat();
    assert_eq!(
        restore(&payload(&unknown)),
        Ok(hash(&[(b"f", b"v")])),
        "count 65535: unknown"
    );
}

#[test]
fn malformed_zipmaps_are_bad_data() {
    let good = b"\x09\x07\x01\x01f\x01\x00v\xff";
    assert_eq!(restore(&payload(good)), Ok(hash(&[(b"f", b"v")])));
    assert_bad(b"\x09\x07\x02\x01f\x01\x00v\xff"); // count wrong
    assert_bad(b"\x09\x07\x01\x01f\x01\x01v\xff"); // free bytes past the end
    assert_bad(b"\x09\x07\x01\x01f\xff\x00v\xff"); // value length 255
    assert_bad(b"\x09\x07\x01\x01f\x01\x00vv"); // no terminator
    assert_eq!(
        restore(&payload(b"\x09\x07\xfe\x01f\x01\x00v\xff")),
        Ok(hash(&[(b"f", b"v")])),
        "count 254: unknown"
    );
    assert_bad(b"\x09\x09\x01\x01f\x01\x00v\xff\xff"); // terminator twice
}

// --- Never a panic ---

fn seeds() -> Vec<Vec<u8>> {
    [
        STRING_SHORT,
        STRING_INT,
        STRING_LZF,
        STRING_LZF2,
        HASH_LISTPACK,
        HASH_PLAIN,
        HASH_LISTPACK_LZF,
        ZSET_LISTPACK,
        ZSET_SKIPLIST,
        LEGACY_HASH_ZIPLIST,
        LEGACY_ZSET_ZIPLIST,
        LEGACY_HASH_ZIPMAP,
        LEGACY_ZSET,
        LEGACY_HASH_LISTPACK,
        LEGACY_HASH_LISTPACK_LONG,
        LIST_INTS,
        LIST_TWO_NODES,
        SET_INTSET32,
        SET_PLAIN,
    ]
    .iter()
    .map(|p| body(p).to_vec())
    .collect()
}

proptest! {
    #[test]
    fn random_bytes_never_panic(bytes in proptest::collection::vec(any::<u8>(), 0..200)) {
        let _ = restore(&bytes);
        let _ = restore(&payload(&bytes));
    }

    #[test]
    fn mutated_payloads_never_panic(
        seed in 0usize..19,
        edits in proptest::collection::vec((any::<usize>(), any::<u8>(), 0u8..4), 1..6),
    ) {
        let mut b = seeds()[seed].clone();
        for (at, byte, how) in edits {
            let at = at % (b.len() + 1);
            match how {
                0 if at < b.len() => b[at] = byte,
                1 => b.insert(at, byte),
                2 if at < b.len() => { b.remove(at); }
                _ => b.truncate(at),
            }
        }
        if let Ok(value) = restore(&payload(&b)) {
            // Whatever it accepts, it can write back and read again.
            prop_assert_eq!(restore(&dump(&value)), Ok(value));
        }
    }

    #[test]
    fn any_value_round_trips(
        s in proptest::collection::vec(any::<u8>(), 0..300),
        fields in proptest::collection::btree_map(
            proptest::collection::vec(any::<u8>(), 0..20),
            proptest::collection::vec(any::<u8>(), 0..20),
            1..50,
        ),
        elements in proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..400),
        members in proptest::collection::btree_map(
            proptest::collection::vec(any::<u8>(), 0..20),
            any::<f64>().prop_filter("no NaN", |f| !f.is_nan()),
            1..50,
        ),
    ) {
        let value = RdbValue::String(s);
        prop_assert_eq!(restore(&dump(&value)), Ok(value));
        let value = RdbValue::Set(fields.keys().cloned().collect());
        prop_assert_eq!(restore(&dump(&value)), Ok(value));
        let value = RdbValue::Hash(fields.into_iter().collect());
        prop_assert_eq!(restore(&dump(&value)), Ok(value));
        let value = RdbValue::List(elements);
        prop_assert_eq!(restore(&dump(&value)), Ok(value));
        let mut members: Vec<(f64, Vec<u8>)> = members.into_iter().map(|(m, s)| (s, m)).collect();
        members.sort_by(|a, b| a.0.partial_cmp(&b.0).unwrap().then_with(|| a.1.cmp(&b.1)));
        let value = RdbValue::ZSet(members);
        prop_assert_eq!(restore(&dump(&value)), Ok(value));
    }
}
