//! What Redis's serialization carries: a value ([`RdbValue`]) and the
//! reason a payload or file was refused ([`RdbError`], in Redis's words).

/// A value as `DUMP`/`RESTORE` carry it.
///
/// `restore` gives a hash's pairs and a set's members in payload order,
/// a list head first and a sorted set's members sorted by (score, member);
/// `dump` expects a sorted set in that order too (it writes the members
/// last to first, as Redis does).
#[derive(Clone, Debug, PartialEq)]
pub enum RdbValue {
    String(Vec<u8>),
    Hash(Vec<(Vec<u8>, Vec<u8>)>),
    ZSet(Vec<(f64, Vec<u8>)>),
    List(Vec<Vec<u8>>),
    Set(Vec<Vec<u8>>),
    /// Entries in id order, the counters, the groups (`rdb/stream.rs`).
    Stream(Box<super::stream::StreamDump>),
}

/// Why a payload was refused: the error text to reply, as Redis words it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RdbError(pub String);

impl RdbError {
    pub(super) fn checksum() -> RdbError {
        RdbError("ERR DUMP payload version or checksum are wrong".into())
    }

    pub(super) fn bad() -> RdbError {
        RdbError("ERR Bad data format".into())
    }

    pub(super) fn unsupported(what: &str, plural: &str) -> RdbError {
        RdbError(format!(
            "ERR DUMP payload holds {what}: persimmon does not store {plural} yet"
        ))
    }
}

impl std::fmt::Display for RdbError {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for RdbError {}
