//! The reply side of RESP: encodes replies straight into the connection's
//! output buffer, in RESP2 or RESP3 (chosen per connection by `HELLO`).
//!
//! Where the two differ: RESP3 has a null (`_`), maps (`%`) and verbatim
//! strings (`=`); in RESP2 a null is `$-1` (or `*-1` for a missing array), a
//! map is a flat array of key, value, ... and a verbatim string is a bulk
//! string. Error lines never contain CR or LF (they are replaced by blanks),
//! so a message built from client input cannot break the framing.
//!
//! Every error reply is counted here, by its code (`INFO errorstats`), so
//! no error path can be missed: a command failed exactly when the count
//! grew while it ran.

use crate::error_tally::ErrorTally;

/// An output buffer plus the protocol version replies are written in.
#[derive(Debug)]
pub struct Reply {
    pub buf: Vec<u8>,
    pub resp3: bool,
    /// The error replies written since the connection last published them.
    pub errors: ErrorTally,
}

impl Reply {
    pub fn new() -> Reply {
        Reply {
            buf: Vec::with_capacity(16 << 10),
            resp3: false,
            errors: ErrorTally::default(),
        }
    }

    /// Bytes queued.
    pub fn len(&self) -> usize {
        self.buf.len()
    }

    pub fn is_empty(&self) -> bool {
        self.buf.is_empty()
    }

    fn line(&mut self, marker: u8, text: &[u8]) {
        self.buf.push(marker);
        self.buf.extend(
            text.iter()
                .map(|&b| if b == b'\r' || b == b'\n' { b' ' } else { b }),
        );
        self.buf.extend_from_slice(b"\r\n");
    }

    fn number(&mut self, marker: u8, n: i64) {
        self.buf.push(marker);
        let mut digits = [0u8; 20];
        let mut at = digits.len();
        let negative = n < 0;
        let mut u = n.unsigned_abs();
        loop {
            at -= 1;
            digits[at] = b'0' + (u % 10) as u8;
            u /= 10;
            if u == 0 {
                break;
            }
        }
        if negative {
            self.buf.push(b'-');
        }
        self.buf.extend_from_slice(&digits[at..]);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// `+text`
    pub fn simple(&mut self, text: &str) {
        self.line(b'+', text.as_bytes());
    }

    /// An array of simple strings (a command's `HELP` text, one line each).
    pub fn simple_lines(&mut self, lines: &[&str]) {
        self.array(lines.len());
        for l in lines {
            self.simple(l);
        }
    }

    /// `+OK`
    pub fn ok(&mut self) {
        self.buf.extend_from_slice(b"+OK\r\n");
    }

    /// `-message`; the message starts with its code (`ERR`, `WRONGTYPE`, ...).
    pub fn error(&mut self, message: &str) {
        self.errors.count(message);
        self.line(b'-', message.as_bytes());
    }

    /// `:n`
    pub fn int(&mut self, n: i64) {
        self.number(b':', n);
    }

    /// `$len` and the bytes.
    pub fn bulk(&mut self, data: &[u8]) {
        self.bulk_header(data.len());
        self.buf.extend_from_slice(data);
        self.buf.extend_from_slice(b"\r\n");
    }

    /// The header of a bulk string whose `len` bytes and CRLF the caller
    /// appends to `buf` itself (so a value can be copied once, straight
    /// from the pool).
    pub fn bulk_header(&mut self, len: usize) {
        self.number(b'$', len as i64);
    }

    /// A missing value: `$-1` (RESP2) or `_` (RESP3).
    pub fn null(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"$-1\r\n");
        }
    }

    /// A missing array: `*-1` (RESP2) or `_` (RESP3).
    pub fn null_array(&mut self) {
        if self.resp3 {
            self.buf.extend_from_slice(b"_\r\n");
        } else {
            self.buf.extend_from_slice(b"*-1\r\n");
        }
    }

    /// An array of `n` elements follows.
    pub fn array(&mut self, n: usize) {
        self.number(b'*', n as i64);
    }

    /// An out-of-band message of `n` elements follows (pub/sub): a RESP3
    /// push, an array in RESP2.
    pub fn push(&mut self, n: usize) {
        self.number(if self.resp3 { b'>' } else { b'*' }, n as i64);
    }

    /// A map of `n` key-value pairs follows (RESP2: an array of 2n).
    pub fn map(&mut self, n: usize) {
        if self.resp3 {
            self.number(b'%', n as i64);
        } else {
            self.number(b'*', 2 * n as i64);
        }
    }

    /// A floating-point number (`text` is its decimal form): a RESP3
    /// double, a bulk string in RESP2.
    pub fn double(&mut self, _x: f64, text: &str) {
        if self.resp3 {
            self.line(b',', text.as_bytes());
        } else {
            self.bulk(text.as_bytes());
        }
    }

    /// A set of `n` elements follows (RESP2: an array).
    pub fn set(&mut self, n: usize) {
        self.number(if self.resp3 { b'~' } else { b'*' }, n as i64);
    }

    /// Human-readable text (INFO, CLIENT LIST): a verbatim `txt` string in
    /// RESP3, a bulk string in RESP2.
    pub fn verbatim(&mut self, text: &[u8]) {
        if self.resp3 {
            self.number(b'=', text.len() as i64 + 4);
            self.buf.extend_from_slice(b"txt:");
            self.buf.extend_from_slice(text);
            self.buf.extend_from_slice(b"\r\n");
        } else {
            self.bulk(text);
        }
    }
}

impl Default for Reply {
    fn default() -> Self {
        Reply::new()
    }
}

#[cfg(test)]
mod tests {
    use super::Reply;

    #[test]
    fn encodes_resp2_and_resp3() {
        let mut r = Reply::new();
        r.ok();
        r.int(-42);
        r.int(i64::MIN);
        r.bulk(b"a\r\nb");
        r.null();
        r.map(1);
        r.error("ERR bad\r\nthing");
        assert_eq!(
            r.buf,
            b"+OK\r\n:-42\r\n:-9223372036854775808\r\n$4\r\na\r\nb\r\n$-1\r\n*2\r\n-ERR bad  thing\r\n"
        );
        assert_eq!(r.errors.seen(), 1);
        let mut r = Reply::new();
        r.resp3 = true;
        r.null();
        r.map(2);
        r.verbatim(b"x");
        assert_eq!(r.buf, b"_\r\n%2\r\n=5\r\ntxt:x\r\n");
    }
}
