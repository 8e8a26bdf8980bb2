//! Streams: a collection (`coll`, `Kind::Stream`) of four trees — the
//! entries by id (tree 0), the stream's own record and its groups (tree
//! 1), the groups' pending entries (tree 2), and their consumers with each
//! consumer's pending ids (tree 3). Every entry, group, pending entry and
//! consumer is one key of a counted B+ tree, so each costs O(log n) at any
//! length, and ranges cost O(log n + k). The byte tables are in
//! `entries.rs` (trees 0 and 1) and `groups.rs` (trees 1 to 3).
//!
//! The rooms: [`id`] (ids, their text and arithmetic), [`entries`] (XADD,
//! ranges, XDEL, trims, the stream's record), [`groups`] (groups, PELs,
//! consumers, entries-read and lag), [`consume`] (reading as a consumer,
//! claiming), [`whole`] (a stream read or written whole: DUMP, RESTORE).
//!
//! Every call runs inside the caller's atomic unit (the server opens one
//! per command with [`with_stream`] / [`with_new_stream`]): atomic,
//! crash-atomic, durable on return.
//!
//! Invariants: a stream keeps its key while empty (its record in tree 1
//! holds the last id and the counters); it goes only with DEL, an
//! overwrite, expiry or FLUSHDB; a key of another type is WRONGTYPE.

pub mod consume;
pub mod entries;
pub mod groups;
pub mod id;
pub mod whole;

use crate::coll::collection::{with, with_new};
use crate::coll::Coll;
use crate::error::Error;
use crate::store::Store;
use crate::value::Kind;

pub use entries::{Entry, Fields, Meta, NewId, NodeLimits, Trim, TrimSpec};
pub use id::StreamId;

/// Runs `f` on the stream at `key` in one unit; `None`: key missing.
pub fn with_stream<R>(
    st: &mut Store,
    key: &[u8],
    f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<Option<R>, Error> {
    with(st, key, Kind::Stream, f)
}

/// Runs `f` on the stream at `key`, created empty (with its record) when
/// missing, in one unit. An error leaves nothing written.
pub fn with_new_stream<R>(
    st: &mut Store,
    key: &[u8],
    mut f: impl FnMut(&mut Store, &mut Coll) -> Result<R, Error>,
) -> Result<R, Error> {
    crate::error::check_key(key)?;
    with_new(st, key, Kind::Stream, |st, c| {
        if c.is_empty() {
            entries::create_empty(st, c)?;
        }
        f(st, c)
    })
}

#[cfg(test)]
mod tests {
    use super::entries::{self, T_ENTRIES};
    use super::groups;
    use super::*;
    use crate::coll::collection::tests::store;

    fn add_n(st: &mut Store, key: &[u8], from: u64, n: u64) {
        with_new_stream(st, key, |st, c| {
            for i in from..from + n {
                let v = i.to_string();
                let fields: [(&[u8], &[u8]); 1] = [(b"n", v.as_bytes())];
                entries::add(
                    st,
                    c,
                    NewId::Given(StreamId::new(i, 0)),
                    &fields,
                    0,
                    NodeLimits::default(),
                )?;
            }
            Ok(())
        })
        .unwrap();
    }

    fn len(st: &mut Store, key: &[u8]) -> u64 {
        with_stream(st, key, |_, c| Ok(c.len())).unwrap().unwrap()
    }

    #[test]
    fn fifty_thousand_entries_range_trim_and_delete_across_pages() {
        let (mut st, _dir) = store();
        for chunk in 0..5 {
            add_n(&mut st, b"s", 1 + chunk * 10_000, 10_000);
        }
        assert_eq!(len(&mut st, b"s"), 50_000);
        let mid = with_stream(&mut st, b"s", |st, c| {
            entries::range(st, c, StreamId::new(25_000, 0), StreamId::MAX, 3, false)
        })
        .unwrap()
        .unwrap();
        let ids: Vec<u64> = mid.iter().map(|e| e.id.ms).collect();
        assert_eq!(ids, [25_000, 25_001, 25_002]);
        assert_eq!(mid[0].fields, vec![(b"n".to_vec(), b"25000".to_vec())]);
        // Exact trim across many pages, then deletes in the middle.
        let trimmed = with_stream(&mut st, b"s", |st, c| {
            let spec = TrimSpec {
                trim: Trim::MaxLen(20_000),
                approx: false,
                limit: 0,
            };
            entries::trim(st, c, spec)
        })
        .unwrap();
        assert_eq!(trimmed, Some(30_000));
        let ids: Vec<StreamId> = (35_000..36_000).map(|ms| StreamId::new(ms, 0)).collect();
        let deleted = with_stream(&mut st, b"s", |st, c| entries::delete(st, c, &ids)).unwrap();
        assert_eq!(deleted, Some(1000));
        assert_eq!(len(&mut st, b"s"), 19_000);
        let (first, last, meta) = with_stream(&mut st, b"s", |st, c| {
            let first = entries::first_id(st, c)?;
            let last = entries::at(st, c, c.len() - 1)?.unwrap().id;
            Ok((first, last, entries::meta(st, c)?))
        })
        .unwrap()
        .unwrap();
        assert_eq!(first, StreamId::new(30_001, 0));
        assert_eq!(last, StreamId::new(50_000, 0));
        assert_eq!(meta.entries_added, 50_000);
        assert_eq!(meta.max_deleted, StreamId::new(35_999, 0));
        // Backwards across the hole.
        let back = with_stream(&mut st, b"s", |st, c| {
            entries::range(st, c, StreamId::ZERO, StreamId::new(36_000, 0), 2, true)
        })
        .unwrap()
        .unwrap();
        let ids: Vec<u64> = back.iter().map(|e| e.id.ms).collect();
        assert_eq!(ids, [36_000, 34_999]);
    }

    #[test]
    fn an_emptied_stream_keeps_its_key_and_record() {
        let (mut st, _dir) = store();
        add_n(&mut st, b"s", 1, 10);
        let spec = TrimSpec {
            trim: Trim::MaxLen(0),
            approx: false,
            limit: 0,
        };
        with_stream(&mut st, b"s", |st, c| entries::trim(st, c, spec)).unwrap();
        assert_eq!(len(&mut st, b"s"), 0);
        let m = with_stream(&mut st, b"s", entries::meta).unwrap().unwrap();
        assert_eq!(m.last_id, StreamId::new(10, 0));
        assert_eq!(st.get(b"s", |v| v.type_name()).unwrap(), Some("stream"));
    }

    #[test]
    fn the_record_bytes_are_as_documented() {
        let m = Meta {
            last_id: StreamId::new(1, 2),
            entries_added: 3,
            max_deleted: StreamId::new(4, 5),
            tail_node: 6,
            tail_count: 7,
            tail_bytes: 8,
        };
        let b = m.encode();
        assert_eq!(b.len(), 64);
        assert_eq!(&b[..16], &[0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 2]);
        assert_eq!(&b[16..24], &3u64.to_le_bytes());
        assert_eq!(&b[24..40], &StreamId::new(4, 5).key());
        assert_eq!(
            &b[40..64],
            &[6u64.to_le_bytes(), 7u64.to_le_bytes(), 8u64.to_le_bytes()].concat()
        );
        assert_eq!(Meta::decode(&b).unwrap(), m);
        assert_eq!(crate::value::Kind::Stream.tag(), 0x0A);
    }

    #[test]
    fn a_destroyed_group_leaves_no_keys() {
        let (mut st, _dir) = store();
        add_n(&mut st, b"s", 1, 500);
        let counts = with_stream(&mut st, b"s", |st, c| {
            groups::create_group(st, c, b"g", StreamId::ZERO, groups::UNKNOWN)?;
            let g = groups::group(st, c, b"g")?.unwrap();
            let who = consume::Who {
                group: b"g",
                consumer: b"alice",
                now: 7,
            };
            let got = consume::read_new(st, c, who, g, 300, false)?;
            assert_eq!(got.len(), 300);
            groups::touch_consumer(st, c, b"g", b"alice", 7)?;
            let pending = groups::consumer_pending(st, c, b"g", b"alice")?;
            groups::destroy_group(st, c, b"g")?;
            Ok((pending, c.len_of(2), c.len_of(3), c.len_of(T_ENTRIES)))
        })
        .unwrap()
        .unwrap();
        assert_eq!(counts, (300, 0, 0, 500));
    }
}
