//! The classes of keyspace events (`notify-keyspace-events`'s letters,
//! parsed and written back as Redis writes them) and the notes a session
//! keeps until the dispatch publishes them (`notify`). A leaf: the
//! settings and the session read it, it reads nothing of theirs.

pub const GENERIC: u32 = 1 << 0;
pub const STRING: u32 = 1 << 1;
pub const LIST: u32 = 1 << 2;
pub const SET: u32 = 1 << 3;
pub const HASH: u32 = 1 << 4;
pub const ZSET: u32 = 1 << 5;
pub const EXPIRED: u32 = 1 << 6;
pub const EVICTED: u32 = 1 << 7;
pub const STREAM: u32 = 1 << 8;
pub const MODULE: u32 = 1 << 9;
pub const KEYSPACE: u32 = 1 << 10;
pub const KEYEVENT: u32 = 1 << 11;
pub const KEY_MISS: u32 = 1 << 12;
pub const NEW: u32 = 1 << 13;
/// `A`: every class but key misses and new keys.
pub const ALL: u32 =
    GENERIC | STRING | LIST | SET | HASH | ZSET | EXPIRED | EVICTED | STREAM | MODULE;

/// The letters of the classes, in the order Redis writes them back.
const CLASSES: [(u8, u32); 10] = [
    (b'g', GENERIC),
    (b'$', STRING),
    (b'l', LIST),
    (b's', SET),
    (b'h', HASH),
    (b'z', ZSET),
    (b'x', EXPIRED),
    (b'e', EVICTED),
    (b't', STREAM),
    (b'd', MODULE),
];

/// The flags of a `notify-keyspace-events` value; `None` for a letter
/// Redis does not know.
pub fn parse(value: &[u8]) -> Option<u32> {
    value.iter().try_fold(0, |flags, &c| {
        let flag = match c {
            b'A' => ALL,
            b'K' => KEYSPACE,
            b'E' => KEYEVENT,
            b'm' => KEY_MISS,
            b'n' => NEW,
            c => CLASSES.iter().find(|(l, _)| *l == c)?.1,
        };
        Some(flags | flag)
    })
}

/// `flags` as Redis writes them back (`CONFIG GET`): `A` or the classes,
/// then `K`, `E`, `m`, `n`.
pub fn format(flags: u32) -> String {
    let mut out = String::new();
    if flags & ALL == ALL {
        out.push('A');
    } else {
        for (letter, flag) in CLASSES {
            if flags & flag != 0 {
                out.push(letter as char);
            }
        }
    }
    for (letter, flag) in [
        ('K', KEYSPACE),
        ('E', KEYEVENT),
        ('m', KEY_MISS),
        ('n', NEW),
    ] {
        if flags & flag != 0 {
            out.push(letter);
        }
    }
    out
}

/// One event to publish: its database, name and key.
pub(crate) struct Note {
    db: usize,
    event: &'static str,
    key: Vec<u8>,
}

/// The events a session noted and has not published yet.
#[derive(Default)]
pub struct Notes(Vec<Note>);

impl Notes {
    pub fn len(&self) -> usize {
        self.0.len()
    }

    pub fn is_empty(&self) -> bool {
        self.0.is_empty()
    }

    /// Drops the notes after the first `len` (an attempt that runs again).
    pub fn truncate(&mut self, len: usize) {
        self.0.truncate(len);
    }

    pub(crate) fn push(&mut self, db: usize, event: &'static str, key: &[u8]) {
        self.0.push(Note {
            db,
            event,
            key: key.to_vec(),
        });
    }

    /// The notes, in order, as `(database, event, key)`; none are left.
    pub(crate) fn take(&mut self) -> impl Iterator<Item = (usize, &'static str, Vec<u8>)> {
        std::mem::take(&mut self.0)
            .into_iter()
            .map(|n| (n.db, n.event, n.key))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn classes_parse_and_format_as_redis_writes_them() {
        for (given, shown) in [
            ("gKE", "gKE"),
            ("$lshzxeKE", "$lshzxeKE"),
            ("KA", "AK"),
            ("EA", "AE"),
            ("", ""),
            ("nEm", "Emn"),
            ("Ex", "xE"),
        ] {
            let flags = parse(given.as_bytes()).unwrap();
            assert_eq!(format(flags), shown, "{given}");
        }
        assert_eq!(parse(b"Kq"), None);
        assert_eq!(parse(b"A").unwrap() & (KEY_MISS | NEW), 0);
    }
}
