//! Strings: one engine value per key, the string tag and the bytes
//! (`value.rs`). The calls a Rust program makes in-process; the server's
//! string commands read and write through the store the same way.
//!
//! Every call is one engine call (or part of the running unit): atomic,
//! durable on return.
//!
//! Invariants: a string is at most [`MAX_STRING_BYTES`] bytes (the engine's
//! value limit less the tag), refused with a clear error otherwise; a key
//! of another type is `WRONGTYPE` to a read, and replaced by a write (as
//! Redis's SET replaces any value).

use crate::error::{too_large, wrongtype, Error};
use crate::store::Store;
use crate::value::{self, Stored, MAX_STRING_BYTES};

/// The string at `key` (GET; `None` for a missing key).
pub fn get(st: &mut Store, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    st.get(key, |v| match v {
        Stored::String(body) => Ok(body.to_vec()),
        _ => Err(wrongtype()),
    })?
    .transpose()
}

/// Sets `key` to the string `body`, replacing any value and its deadline
/// (SET); with `deadline` (ms of Unix time) the key expires then.
pub fn set(st: &mut Store, key: &[u8], body: &[u8], deadline: Option<u64>) -> Result<(), Error> {
    if body.len() > MAX_STRING_BYTES {
        return Err(too_large(body.len()));
    }
    st.put(key, &value::string(body), deadline)
}
