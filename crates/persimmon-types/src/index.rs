//! Redis's indexes into a sequence (a list's elements, a sorted set's
//! ranks): negative ones count from the end, and a range is clamped to the
//! sequence, as LINDEX, LRANGE, LTRIM and ZRANGE take them.
//!
//! Invariant: the arithmetic is done in `i128`, so no index a client can
//! send (`i64::MIN` included) overflows.

/// The position of Redis index `index` (negative: from the tail) in a list
/// of `len`, if it is inside.
pub fn position(index: i64, len: u64) -> Option<u64> {
    let i = if index < 0 {
        len as i128 + index as i128
    } else {
        index as i128
    };
    u64::try_from(i).ok().filter(|&i| i < len)
}

/// The inclusive positions of Redis range `start..=end` in a list of
/// `len`; `None` when the range is empty.
pub fn positions(start: i64, end: i64, len: u64) -> Option<(u64, u64)> {
    let len = len as i128;
    let (start, end) = (start as i128, end as i128);
    let start = if start < 0 {
        (len + start).max(0)
    } else {
        start
    };
    let end = if end < 0 { len + end } else { end.min(len - 1) };
    if start > end || start >= len {
        return None;
    }
    Some((start as u64, end as u64))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_and_ranges_follow_redis() {
        assert_eq!(position(0, 3), Some(0));
        assert_eq!(position(-1, 3), Some(2));
        assert_eq!(position(-3, 3), Some(0));
        assert_eq!(position(-4, 3), None);
        assert_eq!(position(3, 3), None);
        assert_eq!(position(i64::MIN, 3), None);
        assert_eq!(position(i64::MAX, 3), None);
        assert_eq!(position(0, 0), None);
        assert_eq!(positions(0, -1, 3), Some((0, 2)));
        assert_eq!(positions(-100, 100, 3), Some((0, 2)));
        assert_eq!(positions(1, 0, 3), None);
        assert_eq!(positions(3, 5, 3), None);
        assert_eq!(positions(0, -4, 3), None);
        assert_eq!(positions(i64::MIN, i64::MAX, 3), Some((0, 2)));
        assert_eq!(positions(0, -1, 0), None);
    }
}
