//! Expired keys as `DEL`s in the stream. The engine expires keys silently
//! (a value past its deadline reads as absent, its space reclaimed in the
//! background), so the master remembers the deadlines its replicas were
//! given — by the snapshot and by the stream's `SET ... PXAT`,
//! `PEXPIREAT`, `RESTORE ... ABSTTL`, and the destinations of `RENAME`,
//! `COPY` and `MOVE` — and, once one has passed, looks at the key: gone,
//! it appends `DEL key` (as Redis does when it expires a key); still there
//! with a later deadline, it waits for that one; there without a deadline,
//! it forgets it.
//!
//! Invariant: a `DEL` is appended only holding the stream's lock and only
//! for a key absent on the master at that point of the stream, so it can
//! only make a replica's key match the master's (and is harmless when the
//! key was deleted another way). A redis-server replica needs these: it
//! hides an expired key from reads but frees it only on its master's
//! `DEL`. A Persimmon replica hides and frees it by itself.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use persimmon_types::store::Store;

/// Deadlines to look at: (when, database, key), soonest first.
#[derive(Default)]
pub struct Deadlines {
    heap: BinaryHeap<Reverse<(u64, usize, Vec<u8>)>>,
}

/// At most this many keys are looked at per pass (the rest wait for the
/// next pass, 100 ms later), so a pass holds writers back only briefly.
const PER_PASS: usize = 256;

impl Deadlines {
    pub fn add(&mut self, at: u64, db: usize, key: &[u8]) {
        self.heap.push(Reverse((at, db, key.to_vec())));
    }

    pub fn clear(&mut self) {
        self.heap.clear();
    }

    #[cfg(test)]
    pub fn len(&self) -> usize {
        self.heap.len()
    }

    /// Notes the deadline a propagated command gives (or may give) a key.
    pub fn note(&mut self, db: usize, args: &[Vec<u8>], now: u64) {
        let word = |i: usize| args.get(i).map(Vec::as_slice).unwrap_or(b"");
        let number = |i: usize| {
            std::str::from_utf8(word(i))
                .ok()
                .and_then(|t| t.parse::<u64>().ok())
        };
        let name = word(0).to_ascii_uppercase();
        match name.as_slice() {
            b"SET" if word(3).eq_ignore_ascii_case(b"PXAT") => {
                if let Some(at) = number(4) {
                    self.add(at, db, word(1));
                }
            }
            b"PEXPIREAT" => {
                if let Some(at) = number(2) {
                    self.add(at, db, word(1));
                }
            }
            b"RESTORE" if args.iter().any(|a| a.eq_ignore_ascii_case(b"ABSTTL")) => {
                if let Some(at) = number(2).filter(|&at| at > 0) {
                    self.add(at, db, word(1));
                }
            }
            // The destination keeps the source's deadline, unknown here:
            // looked at soon, then at its own deadline.
            b"RENAME" | b"RENAMENX" => self.add(now, db, word(2)),
            b"COPY" => {
                let to_db = args
                    .iter()
                    .position(|a| a.eq_ignore_ascii_case(b"DB"))
                    .and_then(|i| number(i + 1))
                    .map_or(db, |d| d as usize);
                self.add(now, to_db, word(2));
            }
            b"MOVE" => {
                if let Some(to_db) = number(2) {
                    self.add(now, to_db as usize, word(1));
                }
            }
            _ => {}
        }
    }

    /// The keys whose noted deadline has passed (at most [`PER_PASS`]).
    pub fn due(&mut self, now: u64) -> Vec<(usize, Vec<u8>)> {
        let mut out = Vec::new();
        while out.len() < PER_PASS {
            match self.heap.peek() {
                Some(Reverse((at, _, _))) if *at <= now => {
                    let Reverse((_, db, key)) = self.heap.pop().expect("peeked");
                    out.push((db, key));
                }
                _ => break,
            }
        }
        out
    }
}

/// What a due key is now on the master.
pub enum Now {
    Gone,
    ExpiresAt(u64),
    Persistent,
}

/// Looks at `key` of database `db` (a read, outside any unit).
pub fn look(store: &mut Store, db: usize, key: &[u8]) -> Now {
    if db >= store.keyspace().dbs.count() {
        return Now::Persistent;
    }
    let ttl = store.in_db(db, |st| st.ttl(key));
    match ttl {
        Ok(persimmon::Ttl::Missing) => Now::Gone,
        Ok(persimmon::Ttl::Expires { at_ms, .. }) => Now::ExpiresAt(at_ms),
        // Persistent, or a read error: nothing to propagate.
        _ => Now::Persistent,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn args(words: &[&str]) -> Vec<Vec<u8>> {
        words.iter().map(|w| w.as_bytes().to_vec()).collect()
    }

    #[test]
    fn notes_the_deadlines_of_the_rewritten_forms_and_hands_them_out_in_order() {
        let mut d = Deadlines::default();
        d.note(0, &args(&["SET", "a", "v", "PXAT", "300"]), 0);
        d.note(1, &args(&["PEXPIREAT", "b", "100"]), 0);
        d.note(0, &args(&["RESTORE", "c", "200", "payload", "ABSTTL"]), 0);
        d.note(0, &args(&["RESTORE", "x", "200", "payload"]), 0);
        d.note(0, &args(&["SET", "y", "v"]), 0);
        d.note(2, &args(&["MOVE", "m", "5"]), 50);
        d.note(0, &args(&["COPY", "s", "t", "DB", "3"]), 60);
        assert_eq!(d.len(), 5);
        let due: Vec<_> = d.due(250);
        let want: Vec<(usize, Vec<u8>)> = vec![
            (5, b"m".to_vec()),
            (3, b"t".to_vec()),
            (1, b"b".to_vec()),
            (0, b"c".to_vec()),
        ];
        assert_eq!(due, want);
        assert_eq!(d.due(299), vec![]);
        assert_eq!(d.due(300), vec![(0, b"a".to_vec())]);
    }
}
