//! The error of every operation on the data model: the text of a Redis
//! error reply, code first (`ERR ...`, `WRONGTYPE ...`, `OOM ...`), so the
//! server sends it as it is and a Rust caller reads what a Redis client
//! would. The texts of the failures this layer decides live here, so every
//! caller words the same failure the same way.
//!
//! Invariants:
//! - A key longer than the engine's limit cannot exist: reads treat it as
//!   missing ([`may_exist`]) and a write refuses it with [`check_key`]
//!   before anything runs, in the engine's own words.
//! - An engine error keeps the engine's message; a full pool is `OOM`.

use std::borrow::Cow;

use persimmon::MAX_KEY_BYTES;

use crate::value::MAX_STRING_BYTES;

/// An error reply's text; it starts with its code (`ERR`, `WRONGTYPE`, ...).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Error(pub Cow<'static, str>);

impl Error {
    pub fn new(message: impl Into<Cow<'static, str>>) -> Error {
        Error(message.into())
    }
}

impl std::fmt::Display for Error {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for Error {}

impl From<persimmon::Error> for Error {
    fn from(e: persimmon::Error) -> Error {
        match e {
            persimmon::Error::KeyTooLarge { len, max } => key_too_large(len, max),
            persimmon::Error::ValueTooLarge { len, .. } => too_large(len.saturating_sub(1)),
            e @ persimmon::Error::PoolFull { .. } => Error::new(format!("OOM {e}")),
            e => Error::new(format!("ERR {e}")),
        }
    }
}

/// The key holds another type than the operation works on.
pub fn wrongtype() -> Error {
    Error::new("WRONGTYPE Operation against a key holding the wrong kind of value")
}

/// The error for a value longer than a key can hold.
pub fn too_large(len: usize) -> Error {
    Error::new(format!(
        "ERR value is {len} bytes; persimmon stores at most {MAX_STRING_BYTES} bytes per value \
         (its 64 MiB value limit less the 1-byte type tag)"
    ))
}

fn key_too_large(len: usize, max: usize) -> Error {
    Error::new(format!(
        "ERR key is {len} bytes; persimmon's key limit is {max} bytes"
    ))
}

/// Refuses a key longer than the engine's limit before a write is tried,
/// with the same text as the engine's refusal.
pub fn check_key(key: &[u8]) -> Result<(), Error> {
    if !may_exist(key) {
        return Err(key_too_large(key.len(), MAX_KEY_BYTES));
    }
    Ok(())
}

/// Whether `key` can exist: one longer than the engine's limit cannot, so
/// reads and deletes treat it as missing instead of failing.
pub fn may_exist(key: &[u8]) -> bool {
    key.len() <= MAX_KEY_BYTES
}
