//! Values of the kill -9 loop: a value id names a key's value
//! deterministically, so the parent can tell a key's old value from its
//! new one after a kill knowing only the two ids.
//!
//! - `Store::Pm` (a pool of PM only): every id names a fresh value of 16 to
//!   316 bytes, one in 211 of 150 000 bytes (a large record's run).
//! - `Store::Tiered` (a pool with an SSD tier, threshold 4 KiB): id 1 and
//!   six in ten later ids name a fresh value of 1 B to 20 KiB (below, at
//!   and just past the threshold, 4096·k, 4096·k + tail); the others name
//!   an edit of the value of the id before — an `append` of 1 to 200
//!   bytes, or a `write_range` of as many bytes inside the value (past its
//!   first 32 bytes, which name the key and the fresh id) or past its end
//!   (a zero-filled gap). On the tier those are patches on PM, merged by
//!   the tier's background thread.
//!
//! Invariants:
//! - `value_for(store, k, id)` is a pure function of its arguments: the
//!   value of an edit id is the value of the fresh id it descends from
//!   with every edit after it applied in order.
//! - `change(store, k, id, len)` is exactly the step from `id - 1` (of
//!   length `len`) to `id`: applying it to `value_for(k, id - 1)` gives
//!   `value_for(k, id)`.

use crate::sim::mix;

/// Which pool the loop runs on.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Store {
    Pm,
    Tiered,
}

impl Store {
    pub fn name(self) -> &'static str {
        match self {
            Store::Pm => "pm",
            Store::Tiered => "tiered",
        }
    }
}

/// The tier threshold of the tiered store.
pub const THRESHOLD: usize = 4096;

/// How a key's value with id `id - 1` becomes the one with id `id`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Change {
    /// A new value (put, or an update closure's decision).
    Fresh(Vec<u8>),
    Append(Vec<u8>),
    WriteRange(u64, Vec<u8>),
}

impl Change {
    /// Applies the change to `v`.
    fn apply(self, v: &mut Vec<u8>) {
        match self {
            Change::Fresh(f) => *v = f,
            Change::Append(b) => v.extend_from_slice(&b),
            Change::WriteRange(at, b) => {
                let at = at as usize;
                if v.len() < at + b.len() {
                    v.resize(at + b.len(), 0);
                }
                v[at..at + b.len()].copy_from_slice(&b);
            }
        }
    }
}

/// The value with id `id` of key `k` on `store` (`None` for id 0).
pub fn value_for(store: Store, k: u64, id: u64) -> Option<Vec<u8>> {
    if id == 0 {
        return None;
    }
    if store == Store::Pm {
        return Some(pm_value(k, id));
    }
    let mut from = id;
    while !fresh_id(k, from) {
        from -= 1;
    }
    let mut v = tiered_fresh(k, from);
    for i in from + 1..=id {
        let len = v.len();
        edit(k, i, len).apply(&mut v);
    }
    Some(v)
}

/// The step from the value with id `id - 1` (of `prev_len` bytes) to the
/// value with id `id` (`id >= 1`).
pub fn change(store: Store, k: u64, id: u64, prev_len: usize) -> Change {
    debug_assert!(id >= 1);
    match store {
        Store::Pm => Change::Fresh(pm_value(k, id)),
        Store::Tiered => edit(k, id, prev_len),
    }
}

fn pm_value(k: u64, id: u64) -> Vec<u8> {
    let h = mix(k, id);
    let len = if h.is_multiple_of(211) {
        150_000 // a large record: a segment run of its own
    } else {
        16 + (h % 300) as usize
    };
    let mut v = format!("k{k}-id{id}-").into_bytes();
    let fill = b'A' + (h % 26) as u8;
    v.resize(len, fill);
    v
}

/// Whether id `id` of key `k` names a fresh value on the tiered store.
fn fresh_id(k: u64, id: u64) -> bool {
    id <= 1 || edit_hash(k, id) % 10 <= 5
}

fn edit_hash(k: u64, id: u64) -> u64 {
    mix(k ^ 0x7A3D_0000, id)
}

/// A fresh tiered value: the key and id, then letters that change every
/// 512 bytes (a stale or misplaced sector reads differently).
fn tiered_fresh(k: u64, id: u64) -> Vec<u8> {
    let h = mix(k, id);
    let t = THRESHOLD;
    let len = match h % 10 {
        0 => 1 + (h >> 8) as usize % 200,
        1 => t - 1,
        2 => t,
        3 => t + 1,
        4 => t * (2 + (h >> 8) as usize % 4),
        5 | 6 => t * (1 + (h >> 8) as usize % 4) + 1 + (h >> 16) as usize % (t - 1),
        _ => 1 + (h >> 8) as usize % (20 << 10),
    };
    let mut v = format!("k{k}-id{id}-").into_bytes();
    v.truncate(len);
    while v.len() < len {
        let sector = (v.len() / 512) as u64;
        v.push(b'a' + ((h >> 32).wrapping_add(sector) % 26) as u8);
    }
    v
}

/// The tiered step to id `id` from a value of `len` bytes.
fn edit(k: u64, id: u64, len: usize) -> Change {
    if fresh_id(k, id) {
        return Change::Fresh(tiered_fresh(k, id));
    }
    let h = edit_hash(k, id);
    let n = 1 + (h >> 8) as usize % 200;
    let mut bytes = format!("e{id}:").into_bytes();
    bytes.resize(n.max(bytes.len()), b'A' + (h >> 40) as u8 % 26);
    bytes.truncate(n);
    let keep = len.min(32);
    match h % 10 {
        6 | 7 => Change::Append(bytes),
        8 => Change::WriteRange((len + (h >> 20) as usize % 100) as u64, bytes),
        _ => {
            let at = keep + (h >> 20) as usize % (len - keep + 1);
            Change::WriteRange(at as u64, bytes)
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_change_leads_from_one_value_to_the_next() {
        for k in 0..40 {
            let mut v: Vec<u8> = Vec::new();
            for id in 1..60 {
                change(Store::Tiered, k, id, v.len()).apply(&mut v);
                assert_eq!(Some(&v), value_for(Store::Tiered, k, id).as_ref());
            }
        }
    }

    #[test]
    fn tiered_values_cross_the_threshold_and_edits_happen() {
        let (mut small, mut large, mut edits) = (0, 0, 0);
        for k in 0..200 {
            for id in 1..20 {
                let v = value_for(Store::Tiered, k, id).unwrap();
                if v.len() >= THRESHOLD {
                    large += 1;
                } else {
                    small += 1;
                }
                edits += !fresh_id(k, id) as u32;
            }
        }
        assert!(
            small > 100 && large > 1000 && edits > 1000,
            "{small} {large} {edits}"
        );
    }

    #[test]
    fn pm_values_are_the_ones_the_loop_always_wrote() {
        let v = value_for(Store::Pm, 7, 3).unwrap();
        assert!(v.starts_with(b"k7-id3-") && (16..=316).contains(&v.len()));
        assert_eq!(change(Store::Pm, 7, 3, 0), Change::Fresh(v));
    }
}
