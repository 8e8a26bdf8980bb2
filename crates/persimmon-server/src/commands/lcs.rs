//! LCS key1 key2 [LEN] [IDX] [MINMATCHLEN n] [WITHMATCHLEN]: the longest
//! common subsequence of two strings, by the classic dynamic-programming
//! table (O(len1 × len2) time and 4-byte cells), as Redis 7 computes it.
//!
//! Invariants:
//! - Both values are read in one atomic unit: a pair that existed together.
//! - Errors come in Redis's order: a key of another type first, then the
//!   options; a missing key is an empty string.
//! - The table is refused past `proto-max-bulk-len` bytes, like Redis, and
//!   a failed allocation is an error reply, never an abort.
//! - The walk back through the table steps as Redis's does (on a tie, back
//!   in the second string), so the subsequence and the match ranges are the
//!   ones Redis replies, in its order (from the strings' ends).

use persimmon_resp::Args;
use persimmon_types::value::Stored;
use persimmon_types::Error;

use crate::session::{int_arg, is, syntax, Session};

#[derive(Default)]
struct Options {
    len: bool,
    idx: bool,
    with_match_len: bool,
    min_match_len: u64,
}

impl Options {
    fn parse(a: &Args<'_>) -> Result<Options, Error> {
        let mut o = Options::default();
        let mut i = 3;
        while i < a.len() {
            let opt = a.get(i);
            if is(opt, "IDX") {
                o.idx = true;
            } else if is(opt, "LEN") {
                o.len = true;
            } else if is(opt, "WITHMATCHLEN") {
                o.with_match_len = true;
            } else if is(opt, "MINMATCHLEN") && i + 1 < a.len() {
                o.min_match_len = int_arg(a.get(i + 1))?.max(0) as u64;
                i += 1;
            } else {
                return Err(syntax());
            }
            i += 1;
        }
        if o.len && o.idx {
            return Err(Error::new(
                "ERR If you want both the length and indexes, please just use IDX.",
            ));
        }
        Ok(o)
    }
}

/// The table: `cell(i, j)` is the LCS length of `a[..i]` and `b[..j]`.
struct Table<'a> {
    a: &'a [u8],
    b: &'a [u8],
    cells: Vec<u32>,
}

impl<'a> Table<'a> {
    fn build(a: &'a [u8], b: &'a [u8], max_bytes: usize) -> Result<Table<'a>, Error> {
        let cells = (a.len() as u128 + 1) * (b.len() as u128 + 1);
        if cells * 4 > max_bytes as u128 {
            return Err(Error::new(
                "ERR Insufficient memory, transient memory for LCS exceeds proto-max-bulk-len",
            ));
        }
        let mut t = Table {
            a,
            b,
            cells: Vec::new(),
        };
        t.cells.try_reserve_exact(cells as usize).map_err(|_| {
            Error::new("ERR Insufficient memory, failed allocating transient memory for LCS")
        })?;
        t.cells.resize(cells as usize, 0);
        let w = b.len() + 1;
        for i in 1..=a.len() {
            for j in 1..=b.len() {
                t.cells[i * w + j] = if a[i - 1] == b[j - 1] {
                    t.cells[(i - 1) * w + j - 1] + 1
                } else {
                    t.cells[(i - 1) * w + j].max(t.cells[i * w + j - 1])
                };
            }
        }
        Ok(t)
    }

    fn cell(&self, i: usize, j: usize) -> u32 {
        self.cells[i * (self.b.len() + 1) + j]
    }

    fn len(&self) -> u32 {
        self.cell(self.a.len(), self.b.len())
    }

    /// The subsequence, and its runs of adjacent matches as inclusive
    /// ranges (in `a`, in `b`), from the strings' ends back.
    fn walk(&self) -> (Vec<u8>, Vec<Match>) {
        let (mut i, mut j) = (self.a.len(), self.b.len());
        let mut seq = Vec::with_capacity(self.len() as usize);
        let mut runs = Vec::new();
        let mut run: Option<Match> = None;
        while i > 0 && j > 0 {
            if self.a[i - 1] == self.b[j - 1] {
                seq.push(self.a[i - 1]);
                // A match right after (in the walk: before) the run's
                // start extends it; the walk never meets another kind.
                let m = run.get_or_insert(Match {
                    a: (i - 1, i - 1),
                    b: (j - 1, j - 1),
                });
                (m.a.0, m.b.0) = (i - 1, j - 1);
                i -= 1;
                j -= 1;
                if i == 0 || j == 0 {
                    runs.extend(run.take());
                }
            } else {
                if self.cell(i - 1, j) > self.cell(i, j - 1) {
                    i -= 1;
                } else {
                    j -= 1;
                }
                runs.extend(run.take());
            }
        }
        seq.reverse();
        (seq, runs)
    }
}

/// A run of matching bytes: its inclusive ranges in the first and the
/// second string.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Match {
    a: (usize, usize),
    b: (usize, usize),
}

impl Match {
    fn len(&self) -> u64 {
        (self.a.1 - self.a.0 + 1) as u64
    }
}

/// The string at `key` (empty when missing), or `None` for another type.
fn string_of(st: &mut persimmon_types::store::Store, key: &[u8]) -> Result<Option<Vec<u8>>, Error> {
    let found = st.get(key, |v| match v {
        Stored::String(body) => Some(body.to_vec()),
        _ => None,
    })?;
    Ok(found.unwrap_or(Some(Vec::new())))
}

pub fn lcs(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let (x, y) = s
        .store
        .atomic(|st| Ok((string_of(st, a.get(1))?, string_of(st, a.get(2))?)))?;
    let (Some(x), Some(y)) = (x, y) else {
        return Err(Error::new(
            "ERR The specified keys must contain string values",
        ));
    };
    let o = Options::parse(&a)?;
    let table = Table::build(&x, &y, s.shared.settings.limits().proto_max_bulk_len)?;
    if o.len {
        s.out.int(table.len() as i64);
        return Ok(());
    }
    let (seq, runs) = table.walk();
    if !o.idx {
        s.out.bulk(&seq);
        return Ok(());
    }
    let shown: Vec<&Match> = runs.iter().filter(|m| m.len() >= o.min_match_len).collect();
    let out = &mut s.out;
    out.map(2);
    out.bulk(b"matches");
    out.array(shown.len());
    for m in shown {
        out.array(2 + o.with_match_len as usize);
        for (from, to) in [m.a, m.b] {
            out.array(2);
            out.int(from as i64);
            out.int(to as i64);
        }
        if o.with_match_len {
            out.int(m.len() as i64);
        }
    }
    out.bulk(b"len");
    out.int(table.len() as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn walk_finds_redis_runs() {
        // Redis: LCS ohmytext mynewtext → "mytext"; IDX matches
        // [[4,7],[5,8]] and [[2,3],[0,1]], len 6.
        let t = Table::build(b"ohmytext", b"mynewtext", 1 << 20).unwrap();
        let (seq, runs) = t.walk();
        assert_eq!(seq, b"mytext");
        assert_eq!(t.len(), 6);
        assert_eq!(
            runs,
            vec![
                Match {
                    a: (4, 7),
                    b: (5, 8)
                },
                Match {
                    a: (2, 3),
                    b: (0, 1)
                }
            ]
        );
        let empty = Table::build(b"", b"abc", 1 << 20).unwrap();
        assert_eq!(empty.walk(), (Vec::new(), Vec::new()));
        assert!(Table::build(&[0; 1000], &[0; 1000], 1 << 20).is_err());
    }
}
