//! What Redis's serialization carries: a value ([`RdbValue`]; a stream as
//! [`StreamDump`], its groups and consumers) and the reason a payload or
//! file was refused ([`RdbError`], in Redis's words).

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
    Stream(Box<StreamDump>),
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

// --- Streams (`stream.rs` reads and writes them) ---

/// An entry id (`ms-seq`), as the serialization writes it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, PartialOrd, Ord)]
pub struct StreamId {
    pub ms: u64,
    pub seq: u64,
}

impl StreamId {
    pub const ZERO: StreamId = StreamId { ms: 0, seq: 0 };

    pub fn new(ms: u64, seq: u64) -> StreamId {
        StreamId { ms, seq }
    }

    /// The id as 16 bytes big-endian (ms, then seq).
    pub(super) fn key(self) -> [u8; 16] {
        let mut k = [0u8; 16];
        k[..8].copy_from_slice(&self.ms.to_be_bytes());
        k[8..].copy_from_slice(&self.seq.to_be_bytes());
        k
    }
}

/// One entry: its id and fields.
pub type DumpEntry = (StreamId, Vec<(Vec<u8>, Vec<u8>)>);

/// A stream as the serialization carries it.
#[derive(Clone, Debug, PartialEq, Default)]
pub struct StreamDump {
    pub entries: Vec<DumpEntry>,
    pub last_id: StreamId,
    pub max_deleted: StreamId,
    pub entries_added: u64,
    pub groups: Vec<GroupDump>,
    /// A type 15 payload: no entries-read counters (each is -1), to be
    /// estimated as Redis's loader does.
    pub estimate_reads: bool,
}

/// A consumer group.
#[derive(Clone, Debug, PartialEq)]
pub struct GroupDump {
    pub name: Vec<u8>,
    pub last_id: StreamId,
    /// -1: unknown.
    pub entries_read: i64,
    /// Pending ids, their delivery time and count.
    pub pel: Vec<(StreamId, u64, u64)>,
    pub consumers: Vec<ConsumerDump>,
}

/// A consumer and the ids it owns in its group's PEL.
#[derive(Clone, Debug, PartialEq)]
pub struct ConsumerDump {
    pub name: Vec<u8>,
    pub seen_time: u64,
    pub pending: Vec<StreamId>,
}
