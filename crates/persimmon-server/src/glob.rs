//! Redis glob patterns (`KEYS`, `SCAN MATCH`, `CONFIG GET`): `*` any run of
//! bytes, `?` one byte, `[abc]`, `[^a-z]` classes (a reversed range counts as
//! its swap), `\x` the byte `x` literally.
//!
//! Every token but `*` matches exactly one byte, so the classic single
//! backtrack point (the last `*` seen) is enough: matching is
//! O(pattern × subject) with no recursion, whatever the pattern (Redis had
//! to cap its recursive matcher's nesting for hostile patterns).

/// Whether `subject` matches `pattern`.
pub fn matches(pattern: &[u8], subject: &[u8]) -> bool {
    let (mut p, mut s) = (0, 0);
    // After the last `*`: the pattern index after it, and the subject index
    // it is currently taken to reach.
    let mut star: Option<(usize, usize)> = None;
    loop {
        if p < pattern.len() && pattern[p] == b'*' {
            while p < pattern.len() && pattern[p] == b'*' {
                p += 1;
            }
            if p == pattern.len() {
                return true;
            }
            star = Some((p, s));
            continue;
        }
        if s == subject.len() {
            return p == pattern.len();
        }
        if p < pattern.len() {
            let (ok, next) = token(pattern, p, subject[s]);
            if ok {
                p = next;
                s += 1;
                continue;
            }
        }
        // Mismatch: let the last star swallow one more byte.
        match star {
            Some((sp, ss)) if ss < subject.len() => {
                star = Some((sp, ss + 1));
                p = sp;
                s = ss + 1;
            }
            _ => return false,
        }
    }
}

/// Matches the single-byte token at `pattern[p]` (not `*`) against `c`;
/// returns whether it matched and the index after the token.
fn token(pattern: &[u8], p: usize, c: u8) -> (bool, usize) {
    match pattern[p] {
        b'?' => (true, p + 1),
        b'\\' if p + 1 < pattern.len() => (pattern[p + 1] == c, p + 2),
        b'[' => {
            let mut i = p + 1;
            let negate = pattern.get(i) == Some(&b'^');
            if negate {
                i += 1;
            }
            let mut hit = false;
            while i < pattern.len() && pattern[i] != b']' {
                if pattern[i] == b'\\' && i + 1 < pattern.len() {
                    hit |= pattern[i + 1] == c;
                    i += 2;
                } else if i + 2 < pattern.len() && pattern[i + 1] == b'-' && pattern[i + 2] != b']'
                {
                    let (a, b) = (pattern[i], pattern[i + 2]);
                    let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
                    hit |= (lo..=hi).contains(&c);
                    i += 3;
                } else {
                    hit |= pattern[i] == c;
                    i += 1;
                }
            }
            // Past the `]` (or at the end of an unclosed class).
            (hit != negate, (i + 1).min(pattern.len()))
        }
        other => (other == c, p + 1),
    }
}

#[cfg(test)]
mod tests {
    use super::matches;

    #[test]
    fn redis_glob_cases() {
        let cases: &[(&str, &str, bool)] = &[
            ("*", "", true),
            ("*", "anything", true),
            ("h?llo", "hello", true),
            ("h?llo", "hllo", false),
            ("h*llo", "hllo", true),
            ("h*llo", "heeeello", true),
            ("h[ae]llo", "hallo", true),
            ("h[ae]llo", "hillo", false),
            ("h[^e]llo", "hallo", true),
            ("h[^e]llo", "hello", false),
            ("h[a-b]llo", "hbllo", true),
            ("h[b-a]llo", "hallo", true),
            ("h\\*llo", "h*llo", true),
            ("h\\*llo", "hello", false),
            ("user:*", "user:1", true),
            ("user:*", "users:1", false),
            ("*:*:*", "a:b:c", true),
            ("*a*b", "xxaxxbxxb", true),
            ("*a*b", "xxaxxbxxc", false),
            ("", "", true),
            ("", "a", false),
            ("a[", "a", false),
            ("[]", "x", false),
        ];
        for (p, s, want) in cases {
            assert_eq!(matches(p.as_bytes(), s.as_bytes()), *want, "{p:?} ~ {s:?}");
        }
    }

    #[test]
    fn hostile_patterns_finish_quickly() {
        let pattern = "a*".repeat(2000) + "b";
        let subject = "a".repeat(5000);
        let t = std::time::Instant::now();
        assert!(!matches(pattern.as_bytes(), subject.as_bytes()));
        assert!(t.elapsed().as_secs() < 5);
    }
}
