//! A whole RDB file, as a full resynchronisation carries it: [`Writer`]
//! builds one (what a replica of this server loads), [`read_file`] parses
//! one (what a master — Persimmon or redis-server — sends).
//!
//! A file is `REDIS` + four version digits, then opcodes: AUX (two
//! strings), SELECTDB (a length), RESIZEDB (two lengths), EXPIRETIME_MS (8
//! bytes LE) or EXPIRETIME (4 bytes LE, seconds) before a key, IDLE (a
//! length) and FREQ (a byte) before a key, FUNCTION2 (a string: a library's
//! code), a key (its type byte, the key string, the object), and EOF
//! followed by the CRC64 of everything before it (8 bytes LE; 0 means "not
//! computed", as Redis writes with `rdbchecksum no`).
//!
//! Invariants: [`read_file`] never panics on any input and checks the
//! checksum before it hands out a single key, so a torn or corrupted
//! transfer loads nothing; an object is decoded by the same code as
//! `RESTORE` (`payload::decode`), with the same checks (unique members, no
//! NaN, no empty collection). [`Writer`] writes each object exactly as
//! `payload::dump` does, so anything `DUMP` can give Redis 7.0, a file can.

use super::crc64;
use super::payload::{self, RDB_VERSION};
use super::primitives::{self, Input};
use super::value::{RdbError, RdbValue};

/// The newest version [`read_file`] reads (Redis 7.2's is 11: same opcodes,
/// one new object type, listpack sets, which the decoder knows).
const NEWEST_READ: u16 = 11;

const OP_FUNCTION2: u8 = 0xF5;
const OP_FUNCTION: u8 = 0xF6;
const OP_MODULE_AUX: u8 = 0xF7;
const OP_IDLE: u8 = 0xF8;
const OP_FREQ: u8 = 0xF9;
const OP_AUX: u8 = 0xFA;
const OP_RESIZEDB: u8 = 0xFB;
const OP_EXPIRETIME_MS: u8 = 0xFC;
const OP_EXPIRETIME: u8 = 0xFD;
const OP_SELECTDB: u8 = 0xFE;
const OP_EOF: u8 = 0xFF;

/// Builds an RDB file in memory.
pub struct Writer {
    out: Vec<u8>,
}

impl Default for Writer {
    fn default() -> Self {
        Writer::new()
    }
}

impl Writer {
    /// A file with its header: the version `DUMP` writes (Redis 7.0's).
    pub fn new() -> Writer {
        let mut out = Vec::with_capacity(1 << 16);
        out.extend_from_slice(format!("REDIS{RDB_VERSION:04}").as_bytes());
        Writer { out }
    }

    /// An AUX field (`redis-ver`, `repl-id`...).
    pub fn aux(&mut self, name: &str, value: &[u8]) {
        self.out.push(OP_AUX);
        primitives::put_string(&mut self.out, name.as_bytes());
        primitives::put_string(&mut self.out, value);
    }

    /// Starts database `db`, which holds `keys` keys (`expires` of them
    /// with a deadline): SELECTDB and RESIZEDB.
    pub fn select(&mut self, db: usize, keys: u64, expires: u64) {
        self.out.push(OP_SELECTDB);
        primitives::put_len(&mut self.out, db as u64);
        self.out.push(OP_RESIZEDB);
        primitives::put_len(&mut self.out, keys);
        primitives::put_len(&mut self.out, expires);
    }

    /// One key: its deadline (ms of Unix time), type, name and object.
    pub fn key(&mut self, key: &[u8], value: &RdbValue, deadline: Option<u64>) {
        if let Some(at) = deadline {
            self.out.push(OP_EXPIRETIME_MS);
            self.out.extend_from_slice(&at.to_le_bytes());
        }
        let payload = payload::dump(value);
        // A payload is type byte, object, footer: the key goes between.
        let object_end = payload.len() - payload::FOOTER_BYTES;
        self.out.push(payload[0]);
        primitives::put_string(&mut self.out, key);
        self.out.extend_from_slice(&payload[1..object_end]);
    }

    /// EOF and the checksum: the finished file.
    pub fn finish(mut self) -> Vec<u8> {
        self.out.push(OP_EOF);
        let crc = crc64::crc64(&self.out);
        self.out.extend_from_slice(&crc.to_le_bytes());
        self.out
    }
}

/// What [`read_file`] hands out, in file order.
#[derive(Debug, PartialEq)]
pub enum Item {
    Aux(Vec<u8>, Vec<u8>),
    /// A database starts (SELECTDB).
    Select(usize),
    /// A key of the current database, with its deadline (ms Unix time).
    Key {
        key: Vec<u8>,
        value: RdbValue,
        deadline: Option<u64>,
    },
}

/// Parses a whole file, checking its checksum first, then calls `f` for
/// every item in order; stops at the first error (of the file or of `f`).
pub fn read_file<E: From<RdbError>>(
    bytes: &[u8],
    mut f: impl FnMut(Item) -> Result<(), E>,
) -> Result<(), E> {
    let version = check_header(bytes)?;
    check_checksum(bytes, version)?;
    let mut input = Input::new(&bytes[9..]);
    let mut deadline = None;
    loop {
        let op = input.byte()?;
        match op {
            OP_EOF => return Ok(()),
            OP_AUX => {
                let name = input.string()?.into_owned();
                let value = input.string()?.into_owned();
                f(Item::Aux(name, value))?;
            }
            OP_SELECTDB => {
                let db = usize::try_from(input.plain_len()?).map_err(|_| RdbError::bad())?;
                f(Item::Select(db))?;
            }
            OP_RESIZEDB => {
                input.plain_len()?;
                input.plain_len()?;
            }
            OP_EXPIRETIME_MS => {
                let raw: [u8; 8] = input.take(8)?.try_into().map_err(|_| RdbError::bad())?;
                deadline = Some(i64::from_le_bytes(raw).max(0) as u64);
            }
            OP_EXPIRETIME => {
                let raw: [u8; 4] = input.take(4)?.try_into().map_err(|_| RdbError::bad())?;
                deadline = Some(u64::from(u32::from_le_bytes(raw)) * 1000);
            }
            OP_IDLE => {
                input.plain_len()?;
            }
            OP_FREQ => {
                input.byte()?;
            }
            OP_FUNCTION2 | OP_FUNCTION => {
                // Function libraries: Persimmon runs no scripts; skipped.
                input.string()?;
            }
            OP_MODULE_AUX => {
                return Err(RdbError(
                    "ERR the RDB file holds module data: persimmon cannot load modules".into(),
                )
                .into());
            }
            kind => {
                let key = input.string()?.into_owned();
                let value = payload::decode(kind, &mut input).map_err(|e| {
                    RdbError(format!(
                        "{e} (key '{}' in the RDB file)",
                        String::from_utf8_lossy(&key[..key.len().min(64)])
                    ))
                })?;
                f(Item::Key {
                    key,
                    value,
                    deadline: deadline.take(),
                })?;
            }
        }
    }
}

/// The file's version, if it starts as an RDB file this reader knows.
fn check_header(bytes: &[u8]) -> Result<u16, RdbError> {
    let bad = || RdbError("ERR not an RDB file (no REDIS header)".into());
    if bytes.len() < 9 || &bytes[..5] != b"REDIS" {
        return Err(bad());
    }
    let digits = std::str::from_utf8(&bytes[5..9]).map_err(|_| bad())?;
    let version: u16 = digits.parse().map_err(|_| bad())?;
    if !(1..=NEWEST_READ).contains(&version) {
        return Err(RdbError(format!(
            "ERR RDB version {version} is newer than persimmon reads ({NEWEST_READ})"
        )));
    }
    Ok(version)
}

/// Checks the trailing CRC64 (version 5 and later; 0 means none).
fn check_checksum(bytes: &[u8], version: u16) -> Result<(), RdbError> {
    if version < 5 {
        return Ok(());
    }
    let body = bytes
        .len()
        .checked_sub(8)
        .ok_or_else(|| RdbError("ERR the RDB file is truncated".into()))?;
    let raw: [u8; 8] = bytes[body..].try_into().map_err(|_| RdbError::bad())?;
    let expected = u64::from_le_bytes(raw);
    if bytes.get(body.wrapping_sub(1)) != Some(&OP_EOF) {
        return Err(RdbError("ERR the RDB file is truncated (no EOF)".into()));
    }
    if expected != 0 && crc64::crc64(&bytes[..body]) != expected {
        return Err(RdbError("ERR the RDB file's checksum is wrong".into()));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_written_file_reads_back_item_for_item() {
        let mut w = Writer::new();
        w.aux("redis-ver", b"7.0.15");
        w.select(0, 2, 1);
        w.key(
            b"s",
            &RdbValue::String(b"12345".to_vec()),
            Some(1_900_000_000_000),
        );
        w.key(
            b"l",
            &RdbValue::List(vec![b"a".to_vec(), b"b".to_vec()]),
            None,
        );
        w.select(3, 1, 0);
        w.key(
            b"h",
            &RdbValue::Hash(vec![(b"f".to_vec(), b"v".to_vec())]),
            None,
        );
        let file = w.finish();
        let mut items = Vec::new();
        read_file::<RdbError>(&file, |i| {
            items.push(i);
            Ok(())
        })
        .unwrap();
        assert_eq!(items.len(), 6);
        assert_eq!(items[1], Item::Select(0));
        assert_eq!(
            items[2],
            Item::Key {
                key: b"s".to_vec(),
                value: RdbValue::String(b"12345".to_vec()),
                deadline: Some(1_900_000_000_000)
            }
        );
        assert_eq!(items[4], Item::Select(3));
    }

    #[test]
    fn a_damaged_file_hands_out_nothing() {
        let mut w = Writer::new();
        w.select(0, 1, 0);
        w.key(b"k", &RdbValue::String(b"v".to_vec()), None);
        let file = w.finish();
        for cut in 0..file.len() {
            let mut n = 0;
            let r = read_file::<RdbError>(&file[..cut], |_| {
                n += 1;
                Ok(())
            });
            assert!(r.is_err() && n == 0, "cut at {cut}");
        }
        let mut flipped = file.clone();
        flipped[12] ^= 0x40;
        assert!(read_file::<RdbError>(&flipped, |_| Ok(())).is_err());
    }
}
