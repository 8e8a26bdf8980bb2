//! Fuzzes the RESP request parser the way a connection drives it: the input
//! arrives in chunks (sizes taken from the first bytes), requests are
//! consumed as they complete, and the parser must never panic nor report a
//! request or an argument outside the bytes it was given.

#![no_main]

use libfuzzer_sys::fuzz_target;
use persimmon_resp::{ParseLimits, Progress, RequestParser};

fuzz_target!(|data: &[u8]| {
    let Some((&mode, rest)) = data.split_first() else {
        return;
    };
    let Some((&chunk, input)) = rest.split_first() else {
        return;
    };
    let limits = ParseLimits {
        max_bulk_bytes: if mode & 1 == 0 { 1 << 20 } else { 64 },
        max_args: if mode & 2 == 0 { 1 << 20 } else { 4 },
        unauthenticated: mode & 4 != 0,
    };
    let chunk = (chunk as usize).max(1);
    let mut parser = RequestParser::new();
    let mut buffer = Vec::new();
    let mut fed = 0;
    while fed < input.len() {
        let n = chunk.min(input.len() - fed);
        buffer.extend_from_slice(&input[fed..fed + n]);
        fed += n;
        loop {
            match parser.parse(&buffer, &limits) {
                Err(_) => return,
                Ok(Progress::Incomplete { need }) => {
                    if let Some(need) = need {
                        assert!(need > buffer.len());
                    }
                    break;
                }
                Ok(Progress::Complete { len }) => {
                    assert!(len > 0 && len <= buffer.len());
                    let args = parser.args(&buffer);
                    assert!(args.len() <= limits.max_args);
                    for arg in args.iter() {
                        assert!(arg.len() <= buffer.len().max(64 << 10));
                    }
                    parser.reset();
                    buffer.drain(..len);
                }
            }
        }
    }
});
