//! BITFIELD and BITFIELD_RO against the results Redis's own tests expect
//! (`tests/unit/bitfield.tcl`), plus the argument errors with Redis's
//! texts, LOLWUT, and a field across a byte boundary read back with GET.

mod common;

use common::{cmd, err, TestServer};
use redis::Value;

fn ints(con: &mut redis::Connection, args: &[&str]) -> Vec<Option<i64>> {
    match cmd(con, args).unwrap() {
        Value::Array(items) => items
            .into_iter()
            .map(|v| match v {
                Value::Int(n) => Some(n),
                Value::Nil => None,
                other => panic!("{args:?}: {other:?}"),
            })
            .collect(),
        other => panic!("{args:?}: {other:?}"),
    }
}

#[test]
fn redis_expectations() {
    let server = TestServer::start();
    let mut c = server.client();
    let bf = |c: &mut redis::Connection, rest: &str| {
        let mut args = vec!["BITFIELD", "bits"];
        args.extend(rest.split(' '));
        ints(c, &args)
    };
    assert_eq!(bf(&mut c, "SET i8 0 -100"), [Some(0)]);
    assert_eq!(bf(&mut c, "SET i8 0 101"), [Some(-100)]);
    assert_eq!(bf(&mut c, "GET i8 0"), [Some(101)]);
    assert_eq!(bf(&mut c, "SET u8 0 255"), [Some(101)]);
    assert_eq!(bf(&mut c, "SET u8 0 100"), [Some(255)]);
    assert_eq!(bf(&mut c, "GET u8 0"), [Some(100)]);
    // The #<index> form.
    cmd(&mut c, &["DEL", "bits"]).unwrap();
    bf(&mut c, "SET u8 #0 65 SET u8 #1 66 SET u8 #2 67");
    assert_eq!(
        cmd(&mut c, &["GET", "bits"]).unwrap(),
        Value::BulkString(b"ABC".to_vec())
    );
    // INCRBY and chaining.
    cmd(&mut c, &["DEL", "bits"]).unwrap();
    assert_eq!(bf(&mut c, "SET u8 #0 10"), [Some(0)]);
    assert_eq!(
        bf(&mut c, "INCRBY u8 #0 100 INCRBY u8 #0 100"),
        [Some(110), Some(210)]
    );
    // Overflow policies.
    bf(&mut c, "SET u8 #0 100");
    assert_eq!(bf(&mut c, "OVERFLOW WRAP INCRBY u8 #0 257"), [Some(101)]);
    assert_eq!(bf(&mut c, "GET u8 0"), [Some(101)]);
    assert_eq!(bf(&mut c, "OVERFLOW WRAP INCRBY u8 #0 255"), [Some(100)]);
    bf(&mut c, "SET u8 #0 100");
    assert_eq!(bf(&mut c, "OVERFLOW SAT INCRBY u8 #0 257"), [Some(255)]);
    assert_eq!(bf(&mut c, "OVERFLOW SAT INCRBY u8 #0 -255"), [Some(0)]);
    bf(&mut c, "SET i8 #0 100");
    assert_eq!(bf(&mut c, "OVERFLOW WRAP INCRBY i8 #0 257"), [Some(101)]);
    assert_eq!(bf(&mut c, "OVERFLOW WRAP INCRBY i8 #0 255"), [Some(100)]);
    bf(&mut c, "SET u8 #0 100");
    assert_eq!(bf(&mut c, "OVERFLOW SAT INCRBY i8 #0 257"), [Some(127)]);
    assert_eq!(bf(&mut c, "OVERFLOW SAT INCRBY i8 #0 -255"), [Some(-128)]);
    assert_eq!(bf(&mut c, "OVERFLOW FAIL INCRBY i8 #0 -1"), [None]);
    assert_eq!(bf(&mut c, "GET i8 #0"), [Some(-128)], "FAIL wrote nothing");
    // #3221: a GET past the end of a short string.
    cmd(&mut c, &["SET", "short", "1"]).unwrap();
    assert_eq!(
        ints(&mut c, &["BITFIELD", "short", "GET", "u1", "0"]),
        [Some(0)]
    );
    // A field across bytes, read back as bytes; a missing key reads 0.
    assert_eq!(
        ints(&mut c, &["BITFIELD", "x", "SET", "u16", "4", "65535"]),
        [Some(0)]
    );
    assert_eq!(
        cmd(&mut c, &["GET", "x"]).unwrap(),
        Value::BulkString(vec![0x0f, 0xff, 0xf0])
    );
    assert_eq!(
        ints(&mut c, &["BITFIELD", "none", "GET", "i64", "100"]),
        [Some(0)]
    );
    assert_eq!(
        ints(&mut c, &["BITFIELD_RO", "x", "GET", "u4", "0"]),
        [Some(0)]
    );
    assert_eq!(
        ints(&mut c, &["BITFIELD_RO", "x"]),
        Vec::<Option<i64>>::new()
    );
    // Errors, and nothing written by a refused request.
    for (args, text) in [
        (
            vec!["BITFIELD_RO", "x", "SET", "u8", "0", "1"],
            "ERR BITFIELD_RO only supports the GET subcommand",
        ),
        (
            vec!["BITFIELD", "x", "GET", "u64", "0"],
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not \
             supported but i64 is.",
        ),
        (
            vec!["BITFIELD", "x", "GET", "i65", "0"],
            "ERR Invalid bitfield type. Use something like i16 u8. Note that u64 is not \
             supported but i64 is.",
        ),
        (
            vec!["BITFIELD", "x", "GET", "u8", "-1"],
            "ERR bit offset is not an integer or out of range",
        ),
        (
            vec!["BITFIELD", "x", "SET", "u8", "0", "1", "OVERFLOW", "NOPE"],
            "ERR Invalid OVERFLOW type specified",
        ),
        (
            vec!["BITFIELD", "x", "SET", "u8", "0", "a"],
            "ERR value is not an integer or out of range",
        ),
        (vec!["BITFIELD", "x", "GET", "u8"], "ERR syntax error"),
        (vec!["BITFIELD", "x", "FOO", "u8", "0"], "ERR syntax error"),
    ] {
        assert_eq!(err(&mut c, &args), text, "{args:?}");
    }
    cmd(&mut c, &["LPUSH", "list", "a"]).unwrap();
    assert!(err(&mut c, &["BITFIELD", "list", "GET", "u8", "0"]).starts_with("WRONGTYPE"));
    assert_eq!(
        cmd(&mut c, &["GET", "x"]).unwrap(),
        Value::BulkString(vec![0x0f, 0xff, 0xf0])
    );
    let Value::BulkString(lolwut) = cmd(&mut c, &["LOLWUT", "VERSION", "5"]).unwrap() else {
        panic!()
    };
    assert!(String::from_utf8(lolwut)
        .unwrap()
        .starts_with("Persimmon ver. "));
}
