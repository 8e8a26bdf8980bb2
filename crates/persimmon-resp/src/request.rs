//! The request side of RESP: a resumable parser for multibulk requests
//! (`*N\r\n$len\r\narg\r\n...`, what every client library sends) and inline
//! requests (`PING\r\n`, what a person types into telnet).
//!
//! RESP2 and RESP3 requests are the same bytes (RESP3 changes only replies),
//! so one parser serves both.
//!
//! Invariants:
//! - The parser never trusts a length before it has checked it against the
//!   limits it is given: a declared count or length can never make it
//!   allocate more than the bytes actually received (argument vectors grow
//!   by what is parsed, capacity is capped; payloads are never copied: an
//!   argument is a range of the caller's buffer).
//! - It never panics on any input (a property test feeds it random bytes, a
//!   cargo-fuzz target in `fuzz/` does the same for longer).
//! - Parsing resumes where it stopped: a multibulk request arriving in many
//!   reads is walked once, not from its start after every read (bulk headers
//!   of an incomplete argument are re-read, which is at most 23 bytes).
//! - Anything that is not well-formed RESP is a [`ProtocolError`]; the caller
//!   replies `-ERR Protocol error: ...` and closes the connection, because the
//!   stream can no longer be trusted to be in step.

use std::ops::Range;

/// Longest inline request, and longest `*N` / `$N` header line, as in Redis.
pub const MAX_INLINE_BYTES: usize = 64 << 10;

/// Most arguments in one request before authentication (as in Redis).
pub const UNAUTHENTICATED_MAX_ARGS: usize = 10;
/// Largest bulk argument before authentication (as in Redis).
pub const UNAUTHENTICATED_MAX_BULK_BYTES: usize = 16 << 10;

/// Request limits that depend on the connection's state.
#[derive(Clone, Copy, Debug)]
pub struct ParseLimits {
    /// Largest bulk argument, in bytes (`proto-max-bulk-len`).
    pub max_bulk_bytes: usize,
    /// Most arguments in one request.
    pub max_args: usize,
    /// The connection must still authenticate: the tighter
    /// `UNAUTHENTICATED_*` limits apply on top.
    pub unauthenticated: bool,
}

/// Input that is not valid RESP (or breaks a limit). The message follows
/// Redis's wording where Redis has one.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ProtocolError(pub String);

impl std::fmt::Display for ProtocolError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

fn error<T>(message: impl Into<String>) -> Result<T, ProtocolError> {
    Err(ProtocolError(message.into()))
}

/// What [`RequestParser::parse`] found.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Progress {
    /// More bytes are needed. `need` is the total buffer length the request
    /// needs at least, when known (so the caller can reserve it once).
    Incomplete { need: Option<usize> },
    /// A whole request of `len` bytes starts the buffer; its arguments are
    /// in [`RequestParser::args`] (zero arguments: an empty request, which
    /// Redis ignores).
    Complete { len: usize },
}

/// Where the arguments of the last complete request live.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Source {
    /// Ranges of the buffer passed to `parse`.
    Input,
    /// Ranges of the parser's own inline scratch (inline requests, whose
    /// quoting and escapes are decoded).
    Inline,
}

/// Resumable request parser; one per connection.
#[derive(Debug)]
pub struct RequestParser {
    /// Arguments parsed so far of the request in progress.
    args: Vec<Range<usize>>,
    /// Bytes of the request in progress already parsed.
    pos: usize,
    /// Arguments still to read of a multibulk request in progress; `None`
    /// when no request is in progress.
    remaining: Option<usize>,
    source: Source,
    inline: Vec<u8>,
}

impl Default for RequestParser {
    fn default() -> Self {
        RequestParser::new()
    }
}

impl RequestParser {
    pub fn new() -> RequestParser {
        RequestParser {
            args: Vec::with_capacity(8),
            pos: 0,
            remaining: None,
            source: Source::Input,
            inline: Vec::new(),
        }
    }

    /// Parses the request at the start of `buf`. After `Complete`, the
    /// caller uses [`args`](Self::args) and then calls [`reset`](Self::reset)
    /// and passes the bytes after the request next time. After
    /// `Incomplete`, the caller passes the same bytes again with more
    /// appended.
    pub fn parse(&mut self, buf: &[u8], limits: &ParseLimits) -> Result<Progress, ProtocolError> {
        if self.remaining.is_none() {
            debug_assert_eq!(self.pos, 0);
            let Some(&first) = buf.first() else {
                return Ok(Progress::Incomplete { need: None });
            };
            if first != b'*' {
                return self.parse_inline(buf, limits);
            }
            let Some((count, header_len)) = header_line(buf, 0)? else {
                if buf.len() > MAX_INLINE_BYTES {
                    return error("too big mbulk count string");
                }
                return Ok(Progress::Incomplete { need: None });
            };
            let count = match parse_i64(count) {
                Some(n) if n <= 0 => {
                    // `*0` and `*-1`: an empty request, ignored.
                    self.source = Source::Input;
                    return Ok(Progress::Complete { len: header_len });
                }
                Some(n) if (n as u64) <= limits.max_args as u64 => n as usize,
                _ => return error("invalid multibulk length"),
            };
            if limits.unauthenticated && count > UNAUTHENTICATED_MAX_ARGS {
                return error("unauthenticated multibulk length");
            }
            self.args.clear();
            // Grow by what arrives, never by what is announced.
            self.args.reserve(count.min(1024));
            self.source = Source::Input;
            self.pos = header_len;
            self.remaining = Some(count);
        }
        while let Some(remaining) = self.remaining.filter(|&r| r > 0) {
            let start = self.pos;
            let Some(&marker) = buf.get(start) else {
                return Ok(Progress::Incomplete { need: None });
            };
            if marker != b'$' {
                return error(format!("expected '$', got '{}'", shown_byte(marker)));
            }
            let Some((len, header_len)) = header_line(buf, start)? else {
                if buf.len() - start > MAX_INLINE_BYTES {
                    return error("too big bulk count string");
                }
                return Ok(Progress::Incomplete { need: None });
            };
            let len = match parse_i64(len) {
                Some(n) if n >= 0 && (n as u64) <= limits.max_bulk_bytes as u64 => n as usize,
                _ => return error("invalid bulk length"),
            };
            if limits.unauthenticated && len > UNAUTHENTICATED_MAX_BULK_BYTES {
                return error("unauthenticated bulk length");
            }
            let data = start + header_len;
            let end = data + len + 2;
            if buf.len() < end {
                return Ok(Progress::Incomplete { need: Some(end) });
            }
            if &buf[end - 2..end] != b"\r\n" {
                return error("expected CRLF after bulk argument");
            }
            self.args.push(data..data + len);
            self.pos = end;
            self.remaining = Some(remaining - 1);
        }
        let len = self.pos;
        self.pos = 0;
        self.remaining = None;
        Ok(Progress::Complete { len })
    }

    /// Forgets the request just completed.
    pub fn reset(&mut self) {
        self.args.clear();
        self.pos = 0;
        self.remaining = None;
        self.source = Source::Input;
    }

    /// Number of arguments parsed so far (for the query buffer limit).
    pub fn args_len(&self) -> usize {
        self.args.len()
    }

    /// Whether the request just completed was a multibulk request, whose
    /// arguments are ranges of the buffer passed to `parse` (an inline
    /// one's live in the parser, until the next request).
    pub fn from_input(&self) -> bool {
        matches!(self.source, Source::Input)
    }

    /// The arguments of the request just completed; `buf` is the buffer that
    /// was passed to `parse`.
    pub fn args<'a>(&'a self, buf: &'a [u8]) -> Args<'a> {
        let data = match self.source {
            Source::Input => buf,
            Source::Inline => &self.inline,
        };
        Args {
            data,
            ranges: &self.args,
        }
    }

    /// An inline request: one line, arguments split on blanks, with Redis's
    /// quoting rules (`"..."` with `\n`, `\xHH`, ... escapes; `'...'`).
    fn parse_inline(
        &mut self,
        buf: &[u8],
        limits: &ParseLimits,
    ) -> Result<Progress, ProtocolError> {
        let Some(newline) = buf.iter().position(|&b| b == b'\n') else {
            if buf.len() > MAX_INLINE_BYTES {
                return error("too big inline request");
            }
            return Ok(Progress::Incomplete { need: None });
        };
        if newline > MAX_INLINE_BYTES {
            return error("too big inline request");
        }
        let mut line = &buf[..newline];
        if let Some(stripped) = line.strip_suffix(b"\r") {
            line = stripped;
        }
        self.args.clear();
        self.inline.clear();
        split_inline(line, &mut self.inline, &mut self.args)?;
        if self.args.len() > limits.max_args {
            return error("invalid multibulk length");
        }
        if limits.unauthenticated && self.args.len() > UNAUTHENTICATED_MAX_ARGS {
            return error("unauthenticated multibulk length");
        }
        self.source = Source::Inline;
        Ok(Progress::Complete { len: newline + 1 })
    }
}

/// The arguments of one request, borrowed from the connection's buffer.
#[derive(Clone, Copy)]
pub struct Args<'a> {
    data: &'a [u8],
    ranges: &'a [Range<usize>],
}

impl<'a> Args<'a> {
    /// Arguments `data[r]` for each range `r` (every range within `data`).
    pub fn new(data: &'a [u8], ranges: &'a [Range<usize>]) -> Args<'a> {
        debug_assert!(ranges.iter().all(|r| r.end <= data.len()));
        Args { data, ranges }
    }

    /// Where argument `i` lies in the data the arguments were made from.
    pub fn range(&self, i: usize) -> Range<usize> {
        self.ranges[i].clone()
    }

    pub fn len(&self) -> usize {
        self.ranges.len()
    }

    pub fn is_empty(&self) -> bool {
        self.ranges.is_empty()
    }

    /// Argument `i` (0 is the command name). Panics when out of range: the
    /// command table checks arity before a handler runs.
    pub fn get(&self, i: usize) -> &'a [u8] {
        &self.data[self.ranges[i].clone()]
    }

    pub fn iter(&self) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let data = self.data;
        self.ranges.iter().map(move |r| &data[r.clone()])
    }

    /// Arguments from `i` on.
    pub fn from(&self, i: usize) -> impl ExactSizeIterator<Item = &'a [u8]> + 'a {
        let data = self.data;
        self.ranges[i.min(self.ranges.len())..]
            .iter()
            .map(move |r| &data[r.clone()])
    }
}

/// Finds the `\r\n`-terminated header line that starts at `start` (with its
/// one-byte type marker). Returns the number text and the header's length
/// including CRLF, or `None` when the line is not complete yet.
fn header_line(buf: &[u8], start: usize) -> Result<Option<(&[u8], usize)>, ProtocolError> {
    let search_end = buf.len().min(start + MAX_INLINE_BYTES + 2);
    let Some(cr) = buf[start..search_end].iter().position(|&b| b == b'\r') else {
        return Ok(None);
    };
    let cr = start + cr;
    match buf.get(cr + 1) {
        None => Ok(None),
        Some(b'\n') => Ok(Some((&buf[start + 1..cr], cr + 2 - start))),
        Some(_) => error(if buf[start] == b'*' {
            "invalid multibulk length"
        } else {
            "invalid bulk length"
        }),
    }
}

/// Redis's `string2ll`: optional `-`, digits, no leading zeros (except
/// `0` itself), no blanks, no `+`, within i64.
pub fn parse_i64(text: &[u8]) -> Option<i64> {
    let (negative, digits) = match text.split_first()? {
        (b'-', rest) => (true, rest),
        _ => (false, text),
    };
    if digits.is_empty() || digits.len() > 19 {
        return None;
    }
    if digits[0] == b'0' && (digits.len() > 1 || negative) {
        return None;
    }
    let mut value: u64 = 0;
    for &d in digits {
        if !d.is_ascii_digit() {
            return None;
        }
        value = value.checked_mul(10)?.checked_add((d - b'0') as u64)?;
    }
    if negative {
        if value > i64::MAX as u64 + 1 {
            return None;
        }
        Some((value as i64).wrapping_neg())
    } else {
        i64::try_from(value).ok()
    }
}

fn shown_byte(b: u8) -> String {
    if b.is_ascii_graphic() || b == b' ' {
        (b as char).to_string()
    } else {
        format!("\\x{b:02x}")
    }
}

/// A request that owns its bytes: the arguments in one buffer and each
/// one's range in it (a command queued by `MULTI`, or one the server makes
/// itself).
#[derive(Clone, Debug, Default)]
pub struct Request {
    data: Vec<u8>,
    ranges: Vec<Range<usize>>,
}

impl Request {
    /// A copy of `args`.
    pub fn of(args: &Args<'_>) -> Request {
        Request::from_words(args.iter())
    }

    /// The request made of `words` (the command name first).
    pub fn from_words<A: AsRef<[u8]>>(words: impl IntoIterator<Item = A>) -> Request {
        let mut r = Request::default();
        for word in words {
            let word = word.as_ref();
            r.ranges.push(r.data.len()..r.data.len() + word.len());
            r.data.extend_from_slice(word);
        }
        r
    }

    pub fn args(&self) -> Args<'_> {
        Args::new(&self.data, &self.ranges)
    }
}

/// `words` (the command name first) as a multibulk request, the form the
/// server sends commands in (replication's stream, a replica's handshake).
pub fn encode<A: AsRef<[u8]>>(words: &[A]) -> Vec<u8> {
    let body: usize = words.iter().map(|w| w.as_ref().len() + 16).sum();
    let mut out = Vec::with_capacity(16 + body);
    out.extend_from_slice(format!("*{}\r\n", words.len()).as_bytes());
    for word in words {
        let word = word.as_ref();
        out.extend_from_slice(format!("${}\r\n", word.len()).as_bytes());
        out.extend_from_slice(word);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// Redis's `sdssplitargs` as words: `line` split on blanks, quotes and
/// escapes decoded (a function library's `#!` line, an inline request).
/// Unbalanced quotes, or a closing quote not followed by a blank, are
/// errors.
pub fn split_args(line: &[u8]) -> Result<Vec<Vec<u8>>, ProtocolError> {
    let (mut out, mut ranges) = (Vec::new(), Vec::new());
    split_inline(line, &mut out, &mut ranges)?;
    Ok(ranges.into_iter().map(|r| out[r].to_vec()).collect())
}

/// Redis's `sdssplitargs`: splits `line` on blanks into `out` (decoded) and
/// `ranges`. Unbalanced quotes, or a closing quote not followed by a blank,
/// are errors.
fn split_inline(
    line: &[u8],
    out: &mut Vec<u8>,
    ranges: &mut Vec<Range<usize>>,
) -> Result<(), ProtocolError> {
    let mut i = 0;
    loop {
        while i < line.len() && line[i].is_ascii_whitespace() {
            i += 1;
        }
        if i == line.len() {
            return Ok(());
        }
        let start = out.len();
        let mut in_double = false;
        let mut in_single = false;
        loop {
            if in_double {
                let Some(&c) = line.get(i) else {
                    return error("unbalanced quotes in request");
                };
                if c == b'\\' && line.get(i + 1) == Some(&b'x') && i + 3 < line.len() {
                    if let (Some(h), Some(l)) = (hex(line[i + 2]), hex(line[i + 3])) {
                        out.push(h * 16 + l);
                        i += 4;
                        continue;
                    }
                }
                if c == b'\\' && i + 1 < line.len() {
                    out.push(match line[i + 1] {
                        b'n' => b'\n',
                        b'r' => b'\r',
                        b't' => b'\t',
                        b'b' => 8,
                        b'a' => 7,
                        other => other,
                    });
                    i += 2;
                    continue;
                }
                if c == b'"' {
                    // The closing quote must be followed by a blank or the end.
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return error("unbalanced quotes in request");
                    }
                    i += 1;
                    break;
                }
                out.push(c);
                i += 1;
            } else if in_single {
                let Some(&c) = line.get(i) else {
                    return error("unbalanced quotes in request");
                };
                if c == b'\\' && line.get(i + 1) == Some(&b'\'') {
                    out.push(b'\'');
                    i += 2;
                    continue;
                }
                if c == b'\'' {
                    if line.get(i + 1).is_some_and(|b| !b.is_ascii_whitespace()) {
                        return error("unbalanced quotes in request");
                    }
                    i += 1;
                    break;
                }
                out.push(c);
                i += 1;
            } else {
                match line.get(i) {
                    None => break,
                    Some(c) if c.is_ascii_whitespace() => break,
                    Some(b'"') => in_double = true,
                    Some(b'\'') => in_single = true,
                    Some(&c) => out.push(c),
                }
                i += 1;
            }
        }
        ranges.push(start..out.len());
    }
}

fn hex(c: u8) -> Option<u8> {
    (c as char).to_digit(16).map(|d| d as u8)
}

#[cfg(test)]
mod tests {
    use super::*;

    const OPEN: ParseLimits = ParseLimits {
        max_bulk_bytes: 512 << 20,
        max_args: i32::MAX as usize,
        unauthenticated: false,
    };

    /// Parses every request in `input` (given whole); returns the argument
    /// lists, or the first error.
    fn parse_all(input: &[u8], limits: &ParseLimits) -> Result<Vec<Vec<Vec<u8>>>, ProtocolError> {
        let mut p = RequestParser::new();
        let mut at = 0;
        let mut out = Vec::new();
        loop {
            match p.parse(&input[at..], limits)? {
                Progress::Incomplete { .. } => return Ok(out),
                Progress::Complete { len } => {
                    let args = p.args(&input[at..]);
                    out.push(args.iter().map(<[u8]>::to_vec).collect());
                    p.reset();
                    at += len;
                }
            }
        }
    }

    fn v(items: &[&str]) -> Vec<Vec<u8>> {
        items.iter().map(|s| s.as_bytes().to_vec()).collect()
    }

    #[test]
    fn multibulk_requests_parse_back_to_back() {
        let got = parse_all(
            b"*1\r\n$4\r\nPING\r\n*3\r\n$3\r\nSET\r\n$1\r\nk\r\n$0\r\n\r\n",
            &OPEN,
        )
        .unwrap();
        assert_eq!(got, vec![v(&["PING"]), v(&["SET", "k", ""])]);
    }

    #[test]
    fn a_request_split_at_every_byte_parses_the_same() {
        let input = b"*3\r\n$3\r\nSET\r\n$5\r\nkey:1\r\n$10\r\n0123456789\r\nPING\r\n";
        let whole = parse_all(input, &OPEN).unwrap();
        for cut in 0..input.len() {
            let mut p = RequestParser::new();
            let first = p.parse(&input[..cut], &OPEN).unwrap();
            let mut got = Vec::new();
            let mut at = 0;
            if let Progress::Complete { len } = first {
                got.push(
                    p.args(&input[..cut])
                        .iter()
                        .map(<[u8]>::to_vec)
                        .collect::<Vec<_>>(),
                );
                p.reset();
                at = len;
            }
            loop {
                match p.parse(&input[at..], &OPEN).unwrap() {
                    Progress::Incomplete { .. } => break,
                    Progress::Complete { len } => {
                        got.push(p.args(&input[at..]).iter().map(<[u8]>::to_vec).collect());
                        p.reset();
                        at += len;
                    }
                }
            }
            assert_eq!(got, whole, "cut at {cut}");
        }
    }

    #[test]
    fn inline_requests_follow_redis_quoting() {
        let got = parse_all(b"SET  k \"a b\\x41\\n\"\r\nGET 'it\\'s'\n\r\n", &OPEN).unwrap();
        assert_eq!(
            got,
            vec![v(&["SET", "k", "a bA\n"]), v(&["GET", "it's"]), v(&[])]
        );
        assert_eq!(
            parse_all(b"SET \"abc\r\n", &OPEN).unwrap_err().0,
            "unbalanced quotes in request"
        );
        assert_eq!(
            parse_all(b"SET \"abc\"d\r\n", &OPEN).unwrap_err().0,
            "unbalanced quotes in request"
        );
    }

    #[test]
    fn malformed_headers_are_protocol_errors() {
        let cases: &[(&[u8], &str)] = &[
            (b"*x\r\n", "invalid multibulk length"),
            (b"*2147483648000\r\n", "invalid multibulk length"),
            (b"*1\r\n+PING\r\n", "expected '$', got '+'"),
            (b"*1\r\n$-1\r\n", "invalid bulk length"),
            (b"*1\r\n$01\r\nab\r\n", "invalid bulk length"),
            (b"*1\r\n$4\r\nPINGxx", "expected CRLF after bulk argument"),
            (b"*1\rx", "invalid multibulk length"),
        ];
        for (input, message) in cases {
            assert_eq!(
                parse_all(input, &OPEN).unwrap_err().0,
                *message,
                "{input:?}"
            );
        }
    }

    #[test]
    fn limits_are_enforced_before_buffering() {
        let unauth = ParseLimits {
            unauthenticated: true,
            ..OPEN
        };
        assert_eq!(
            parse_all(b"*11\r\n", &unauth).unwrap_err().0,
            "unauthenticated multibulk length"
        );
        assert_eq!(
            parse_all(b"*1\r\n$16385\r\n", &unauth).unwrap_err().0,
            "unauthenticated bulk length"
        );
        let mut p = RequestParser::new();
        // A huge announced bulk is incomplete (not allocated), with its need.
        assert_eq!(
            p.parse(b"*1\r\n$1000000\r\n", &OPEN).unwrap(),
            Progress::Incomplete {
                need: Some(14 + 1_000_002)
            }
        );
        let long = vec![b'a'; MAX_INLINE_BYTES + 1];
        assert_eq!(
            parse_all(&long, &OPEN).unwrap_err().0,
            "too big inline request"
        );
    }

    #[test]
    fn empty_multibulk_is_an_empty_request() {
        assert_eq!(
            parse_all(b"*0\r\n*-1\r\n", &OPEN).unwrap(),
            vec![v(&[]), v(&[])]
        );
    }

    #[test]
    fn an_encoded_request_parses_back_to_its_words() {
        let words: [&[u8]; 3] = [b"SET", b"k\r\n", b""];
        let bytes = encode(&words);
        assert_eq!(bytes, b"*3\r\n$3\r\nSET\r\n$3\r\nk\r\n\r\n$0\r\n\r\n");
        let mut p = RequestParser::new();
        assert_eq!(
            p.parse(&bytes, &OPEN),
            Ok(Progress::Complete { len: bytes.len() })
        );
        let parsed: Vec<&[u8]> = p.args(&bytes).iter().collect();
        assert_eq!(parsed, words);
        let owned = Request::of(&p.args(&bytes));
        assert_eq!(owned.args().iter().collect::<Vec<_>>(), words);
        assert_eq!(Request::from_words(words).args().get(1), b"k\r\n");
    }

    #[test]
    fn parse_i64_matches_redis_string2ll() {
        for (text, want) in [
            ("0", Some(0)),
            ("-1", Some(-1)),
            ("9223372036854775807", Some(i64::MAX)),
            ("-9223372036854775808", Some(i64::MIN)),
            ("9223372036854775808", None),
            ("01", None),
            ("-0", None),
            ("+1", None),
            (" 1", None),
            ("", None),
            ("-", None),
            ("1a", None),
        ] {
            assert_eq!(parse_i64(text.as_bytes()), want, "{text:?}");
        }
    }
}
