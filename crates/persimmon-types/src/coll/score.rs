//! How a sorted set orders its members: the score tree's keys, a score
//! in a form whose bytes sort as the numbers do, followed by the member;
//! and the member tree's values, the score as an `f64`.
//!
//! Invariants: `score_key` orders by score (−inf first, +inf last, −0 and
//! +0 as one), then by member bytes; `split_score_key` undoes it exactly.

/// The key of a sorted set's score tree: the score in an order-keeping
/// byte form, then the member.
pub fn score_key(score: f64, member: &[u8]) -> Vec<u8> {
    let bits = score.to_bits();
    let ordered = if bits >> 63 == 1 {
        !bits
    } else {
        bits | (1 << 63)
    };
    let mut k = Vec::with_capacity(8 + member.len());
    k.extend_from_slice(&ordered.to_be_bytes());
    k.extend_from_slice(member);
    k
}

/// The score and member of a score-tree key.
pub fn split_score_key(k: &[u8]) -> (f64, &[u8]) {
    let (head, member) = k.split_at(8.min(k.len()));
    let ordered = u64::from_be_bytes(head.try_into().unwrap_or([0; 8]));
    let bits = if ordered >> 63 == 1 {
        ordered & !(1 << 63)
    } else {
        !ordered
    };
    (f64::from_bits(bits), member)
}

/// A score as a sorted set stores it (-0 is 0, as Redis compares them).
pub fn norm(score: f64) -> f64 {
    if score == 0.0 {
        0.0
    } else {
        score
    }
}

/// The score stored in a sorted set's member tree.
pub fn decode_score(v: &[u8]) -> f64 {
    f64::from_le_bytes(v.try_into().unwrap_or([0; 8]))
}
