//! The request parser against arbitrary bytes (the in-CI stand-in for the
//! cargo-fuzz target in `fuzz/`): it never panics, never reports a request
//! longer than its input or an argument outside it, and parses valid
//! requests back exactly however the bytes are split into reads. (The
//! server's own test, `garbage_connections.rs`, feeds a live server the
//! same kind of noise.)

use persimmon_resp::{encode, ParseLimits, Progress, RequestParser};
use proptest::prelude::*;

/// Feeds `input` to a parser in the given chunk sizes, as a connection
/// would; returns the requests parsed and whether it stopped on an error.
fn feed(input: &[u8], chunks: &[usize], limits: &ParseLimits) -> (Vec<Vec<Vec<u8>>>, bool) {
    let mut parser = RequestParser::new();
    let mut buffer: Vec<u8> = Vec::new();
    let mut requests = Vec::new();
    let mut fed = 0;
    let mut chunk_sizes = chunks.iter().cycle();
    while fed < input.len() {
        let n = (*chunk_sizes.next().unwrap()).clamp(1, input.len() - fed);
        buffer.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        loop {
            match parser.parse(&buffer, limits) {
                Err(_) => return (requests, true),
                Ok(Progress::Incomplete { need }) => {
                    if let Some(need) = need {
                        assert!(need > buffer.len(), "need {need} <= have {}", buffer.len());
                    }
                    break;
                }
                Ok(Progress::Complete { len }) => {
                    assert!(len > 0 && len <= buffer.len());
                    let args = parser.args(&buffer);
                    requests.push(args.iter().map(<[u8]>::to_vec).collect());
                    parser.reset();
                    buffer.drain(..len);
                }
            }
        }
    }
    (requests, false)
}

fn limits(unauthenticated: bool, max_bulk_bytes: usize) -> ParseLimits {
    ParseLimits {
        max_bulk_bytes,
        max_args: 1 << 20,
        unauthenticated,
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn arbitrary_bytes_never_panic(
        input in proptest::collection::vec(any::<u8>(), 0..2048),
        chunks in proptest::collection::vec(1usize..64, 1..8),
        unauthenticated in any::<bool>(),
        max_bulk in 0usize..100_000,
    ) {
        let _ = feed(&input, &chunks, &limits(unauthenticated, max_bulk));
    }

    /// Bytes that look like RESP (markers, digits, CRLF) reach deeper states
    /// than uniform noise.
    #[test]
    fn resp_shaped_noise_never_panics(
        tokens in proptest::collection::vec(
            prop_oneof![
                Just(b"*".to_vec()), Just(b"$".to_vec()), Just(b"\r\n".to_vec()),
                Just(b"\r".to_vec()), Just(b"\n".to_vec()), Just(b"-1".to_vec()),
                Just(b"0".to_vec()), Just(b"\"".to_vec()), Just(b"'".to_vec()),
                Just(b"\\x4".to_vec()), Just(b" ".to_vec()),
                (0u64..40).prop_map(|n| n.to_string().into_bytes()),
                proptest::collection::vec(any::<u8>(), 0..4),
            ],
            0..200,
        ),
        chunks in proptest::collection::vec(1usize..16, 1..8),
        unauthenticated in any::<bool>(),
    ) {
        let input: Vec<u8> = tokens.concat();
        let _ = feed(&input, &chunks, &limits(unauthenticated, 64));
    }

    #[test]
    fn valid_requests_parse_back_however_they_are_split(
        requests in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..40), 1..6),
            1..10,
        ),
        chunks in proptest::collection::vec(1usize..50, 1..8),
    ) {
        let input: Vec<u8> = requests.iter().flat_map(|r| encode(r)).collect();
        let (parsed, failed) = feed(&input, &chunks, &limits(false, 1 << 20));
        prop_assert!(!failed);
        prop_assert_eq!(parsed, requests);
    }

    #[test]
    fn corrupted_requests_never_panic(
        requests in proptest::collection::vec(
            proptest::collection::vec(proptest::collection::vec(any::<u8>(), 0..20), 1..5),
            1..5,
        ),
        flips in proptest::collection::vec((any::<usize>(), any::<u8>()), 1..6),
        chunks in proptest::collection::vec(1usize..30, 1..8),
    ) {
        let mut input: Vec<u8> = requests.iter().flat_map(|r| encode(r)).collect();
        for (at, byte) in flips {
            let i = at % input.len();
            input[i] = byte;
        }
        let _ = feed(&input, &chunks, &limits(false, 1 << 20));
    }
}
