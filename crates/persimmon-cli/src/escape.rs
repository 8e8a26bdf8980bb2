//! The text format of `load` and `dump`: one record per line,
//! `key<TAB>value<LF>`, with backslash escapes inside keys and values.
//!
//! Escapes understood by [`unescape`]: `\t` (tab), `\n` (line feed), `\r`
//! (carriage return), `\\` (backslash) and `\xHH` (any byte, two hex digits
//! of either case). Every other byte stands for itself, so a hand-written
//! file may hold raw UTF-8, or even raw invalid UTF-8.
//!
//! [`escape_into`] writes the canonical form used by `dump`: tab, line feed
//! and backslash as `\t`, `\n`, `\\`; every byte that is not part of valid
//! UTF-8 as `\xHH` (lowercase); valid UTF-8 (non-ASCII included) as is. Its
//! output is therefore valid UTF-8 without tabs or line feeds, and
//! `unescape(escape(b)) == b` for every byte string `b`.

use std::fmt;

/// Appends the escaped form of `src` to `out`.
pub fn escape_into(src: &[u8], out: &mut Vec<u8>) {
    if src
        .iter()
        .all(|&b| b < 0x80 && b != b'\t' && b != b'\n' && b != b'\\')
    {
        out.extend_from_slice(src);
        return;
    }
    for chunk in src.utf8_chunks() {
        for &b in chunk.valid().as_bytes() {
            match b {
                b'\t' => out.extend_from_slice(b"\\t"),
                b'\n' => out.extend_from_slice(b"\\n"),
                b'\\' => out.extend_from_slice(b"\\\\"),
                _ => out.push(b),
            }
        }
        for &b in chunk.invalid() {
            push_hex_escape(out, b);
        }
    }
}

/// The escaped form of `src` (see [`escape_into`]).
pub fn escape(src: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(src.len());
    escape_into(src, &mut out);
    out
}

/// Replaces `line` with the line of one record as `dump` writes it: the
/// escaped key, a tab and the escaped value, a line feed; without a value
/// (`scan` of keys alone) the escaped key and the line feed.
pub fn record_line(key: &[u8], value: Option<&[u8]>, line: &mut Vec<u8>) {
    line.clear();
    escape_into(key, line);
    if let Some(value) = value {
        line.push(b'\t');
        escape_into(value, line);
    }
    line.push(b'\n');
}

fn push_hex_escape(out: &mut Vec<u8>, b: u8) {
    const HEX: &[u8; 16] = b"0123456789abcdef";
    out.extend_from_slice(&[b'\\', b'x', HEX[(b >> 4) as usize], HEX[(b & 15) as usize]]);
}

/// A backslash escape that cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EscapeError {
    /// Byte offset of the backslash in the escaped text.
    pub offset: usize,
    pub kind: EscapeErrorKind,
}

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EscapeErrorKind {
    /// The text ends with a lone backslash.
    Trailing,
    /// `\` followed by a character that starts no escape.
    Unknown(u8),
    /// `\x` not followed by two hex digits.
    BadHex,
}

impl fmt::Display for EscapeErrorKind {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            EscapeErrorKind::Trailing => {
                write!(f, "lone backslash at the end (write \\\\ for a backslash)")
            }
            EscapeErrorKind::Unknown(c) => write!(
                f,
                "unknown escape \\{} (valid: \\t \\n \\r \\\\ \\xHH)",
                c.escape_ascii()
            ),
            EscapeErrorKind::BadHex => write!(f, "\\x must be followed by two hex digits"),
        }
    }
}

impl fmt::Display for EscapeError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "byte {}: {}", self.offset, self.kind)
    }
}

impl std::error::Error for EscapeError {}

fn hex_value(c: u8) -> Option<u8> {
    match c {
        b'0'..=b'9' => Some(c - b'0'),
        b'a'..=b'f' => Some(c - b'a' + 10),
        b'A'..=b'F' => Some(c - b'A' + 10),
        _ => None,
    }
}

/// Decodes the escapes in `src`. Returns `src` itself when it holds no
/// backslash, else the decoded bytes, built in `scratch`.
pub fn unescape<'a>(src: &'a [u8], scratch: &'a mut Vec<u8>) -> Result<&'a [u8], EscapeError> {
    let Some(first) = src.iter().position(|&b| b == b'\\') else {
        return Ok(src);
    };
    scratch.clear();
    scratch.extend_from_slice(&src[..first]);
    let mut i = first;
    while i < src.len() {
        if src[i] != b'\\' {
            let run_end = src[i..]
                .iter()
                .position(|&b| b == b'\\')
                .map_or(src.len(), |p| i + p);
            scratch.extend_from_slice(&src[i..run_end]);
            i = run_end;
            continue;
        }
        let error = |kind| EscapeError { offset: i, kind };
        let decoded = match src.get(i + 1) {
            None => return Err(error(EscapeErrorKind::Trailing)),
            Some(b't') => b'\t',
            Some(b'n') => b'\n',
            Some(b'r') => b'\r',
            Some(b'\\') => b'\\',
            Some(b'x') => {
                let hi = src.get(i + 2).copied().and_then(hex_value);
                let lo = src.get(i + 3).copied().and_then(hex_value);
                match (hi, lo) {
                    (Some(hi), Some(lo)) => {
                        scratch.push(hi << 4 | lo);
                        i += 4;
                        continue;
                    }
                    _ => return Err(error(EscapeErrorKind::BadHex)),
                }
            }
            Some(&c) => return Err(error(EscapeErrorKind::Unknown(c))),
        };
        scratch.push(decoded);
        i += 2;
    }
    Ok(&scratch[..])
}

/// A line of a load file that is not a valid record.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum RecordError {
    /// The line has no tab, so no key/value boundary.
    NoTab,
    /// A raw tab after the one that ends the key (1-based column).
    ExtraTab { column: usize },
    /// A bad escape in the key or the value (1-based column of the backslash).
    Escape {
        field: &'static str,
        column: usize,
        kind: EscapeErrorKind,
    },
}

impl fmt::Display for RecordError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            RecordError::NoTab => {
                write!(f, "no tab between key and value (expected key<TAB>value)")
            }
            RecordError::ExtraTab { column } => write!(
                f,
                "column {column}: a second tab (write a tab inside a key or value as \\t)"
            ),
            RecordError::Escape {
                field,
                column,
                kind,
            } => write!(f, "column {column} (in the {field}): {kind}"),
        }
    }
}

/// Splits one line (without its line feed) into its decoded key and value;
/// `key_scratch` and `value_scratch` hold the decoded bytes when needed.
pub fn parse_record<'a>(
    line: &'a [u8],
    key_scratch: &'a mut Vec<u8>,
    value_scratch: &'a mut Vec<u8>,
) -> Result<(&'a [u8], &'a [u8]), RecordError> {
    let tab = line
        .iter()
        .position(|&b| b == b'\t')
        .ok_or(RecordError::NoTab)?;
    let (key, value) = (&line[..tab], &line[tab + 1..]);
    if let Some(p) = value.iter().position(|&b| b == b'\t') {
        return Err(RecordError::ExtraTab {
            column: tab + 1 + p + 1,
        });
    }
    let key = unescape(key, key_scratch).map_err(|e| RecordError::Escape {
        field: "key",
        column: e.offset + 1,
        kind: e.kind,
    })?;
    let value = unescape(value, value_scratch).map_err(|e| RecordError::Escape {
        field: "value",
        column: tab + 1 + e.offset + 1,
        kind: e.kind,
    })?;
    Ok((key, value))
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    fn unescaped(s: &[u8]) -> Result<Vec<u8>, EscapeError> {
        let mut scratch = Vec::new();
        unescape(s, &mut scratch).map(|b| b.to_vec())
    }

    #[test]
    fn escapes_specials_and_invalid_utf8_only() {
        assert_eq!(escape(b"plain key"), b"plain key");
        assert_eq!(escape(b"a\tb\nc\\d"), b"a\\tb\\nc\\\\d");
        assert_eq!(escape(b"\xff\x00\x80"), b"\\xff\x00\\x80");
        assert_eq!(
            escape("h\u{e9}llo \u{1f351}".as_bytes()),
            "h\u{e9}llo \u{1f351}".as_bytes()
        );
        // A truncated UTF-8 sequence is escaped byte by byte.
        assert_eq!(escape(b"\xe2\x82"), b"\\xe2\\x82");
        assert_eq!(escape(b"\r"), b"\r");
        assert_eq!(escape(b""), b"");
    }

    #[test]
    fn unescapes_every_form() {
        assert_eq!(unescaped(b"a\\tb\\nc\\rd\\\\e").unwrap(), b"a\tb\nc\rd\\e");
        assert_eq!(unescaped(b"\\xFF\\x00\\x7f").unwrap(), b"\xff\x00\x7f");
        assert_eq!(unescaped(b"no escapes").unwrap(), b"no escapes");
        assert_eq!(unescaped(b"raw \xff stays").unwrap(), b"raw \xff stays");
    }

    #[test]
    fn rejects_bad_escapes_with_their_offset() {
        let e = unescaped(b"abc\\").unwrap_err();
        assert_eq!((e.offset, e.kind), (3, EscapeErrorKind::Trailing));
        let e = unescaped(b"a\\q").unwrap_err();
        assert_eq!((e.offset, e.kind), (1, EscapeErrorKind::Unknown(b'q')));
        let e = unescaped(b"\\x4").unwrap_err();
        assert_eq!((e.offset, e.kind), (0, EscapeErrorKind::BadHex));
        let e = unescaped(b"ok\\\\\\xzz").unwrap_err();
        assert_eq!((e.offset, e.kind), (4, EscapeErrorKind::BadHex));
        assert!(e.to_string().contains("two hex digits"));
        let e = unescaped(b"\\\xff").unwrap_err();
        assert!(e.to_string().contains("\\xff"), "{e}");
    }

    #[test]
    fn parses_records() {
        let (mut k, mut v) = (Vec::new(), Vec::new());
        assert_eq!(
            parse_record(b"key\tvalue", &mut k, &mut v).unwrap(),
            (&b"key"[..], &b"value"[..])
        );
        assert_eq!(
            parse_record(b"\tvalue with \\t tab", &mut k, &mut v).unwrap(),
            (&b""[..], &b"value with \t tab"[..])
        );
        assert_eq!(
            parse_record(b"k\\x00\t", &mut k, &mut v).unwrap(),
            (&b"k\x00"[..], &b""[..])
        );
        assert_eq!(
            parse_record(b"no tab", &mut k, &mut v),
            Err(RecordError::NoTab)
        );
        assert_eq!(
            parse_record(b"k\tv\tw", &mut k, &mut v),
            Err(RecordError::ExtraTab { column: 4 })
        );
        assert_eq!(
            parse_record(b"k\tva\\lue", &mut k, &mut v),
            Err(RecordError::Escape {
                field: "value",
                column: 5,
                kind: EscapeErrorKind::Unknown(b'l')
            })
        );
    }

    proptest! {
        #[test]
        fn round_trips_any_bytes(b in proptest::collection::vec(any::<u8>(), 0..200)) {
            let e = escape(&b);
            prop_assert!(std::str::from_utf8(&e).is_ok());
            prop_assert!(!e.contains(&b'\t') && !e.contains(&b'\n'));
            prop_assert_eq!(unescaped(&e).unwrap(), b);
        }

        #[test]
        fn round_trips_text(s in "\\PC*[\t\n\\\\]?\\PC*") {
            let e = escape(s.as_bytes());
            prop_assert_eq!(unescaped(&e).unwrap(), s.as_bytes());
        }

        #[test]
        fn records_round_trip(k in proptest::collection::vec(any::<u8>(), 0..64),
                              v in proptest::collection::vec(any::<u8>(), 0..64)) {
            let mut line = escape(&k);
            line.push(b'\t');
            escape_into(&v, &mut line);
            let (mut ks, mut vs) = (Vec::new(), Vec::new());
            let (pk, pv) = parse_record(&line, &mut ks, &mut vs).unwrap();
            prop_assert_eq!(pk, &k[..]);
            prop_assert_eq!(pv, &v[..]);
        }

        #[test]
        fn unescape_never_panics(b in proptest::collection::vec(any::<u8>(), 0..64)) {
            let _ = unescaped(&b);
        }
    }
}
