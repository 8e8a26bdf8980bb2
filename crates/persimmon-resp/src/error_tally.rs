//! Error replies counted by their code, as the reply writer writes them
//! (`INFO errorstats` in the server): how many a connection ever wrote, to
//! tell whether a command failed, and those not yet handed on, by code.
//!
//! Invariants: every error reply the [`Reply`](crate::Reply) writer writes is
//! counted once, so no error path can be missed; a code is an error's first
//! word when that ends within its first 32 bytes, else `ERR` (Redis's rule).

/// Error replies written on one connection.
#[derive(Default, Debug, Clone)]
pub struct ErrorTally {
    seen: u64,
    unpublished: u64,
    by_code: Vec<(Box<str>, u64)>,
}

impl ErrorTally {
    /// Counts one error reply (`message` starts with its code).
    pub fn count(&mut self, message: &str) {
        self.seen += 1;
        self.unpublished += 1;
        let code = error_code(message);
        match self.by_code.iter_mut().find(|(c, _)| &**c == code) {
            Some((_, n)) => *n += 1,
            None => self.by_code.push((code.into(), 1)),
        }
    }

    /// Error replies written on this connection so far (a command failed
    /// if this grew while it ran).
    #[inline]
    pub fn seen(&self) -> u64 {
        self.seen
    }

    /// Error replies counted since they were last taken or cleared.
    pub fn unpublished(&self) -> u64 {
        self.unpublished
    }

    /// Takes the counts by code gathered since they were last taken or
    /// cleared, and starts counting afresh.
    pub fn take_codes(&mut self) -> Vec<(Box<str>, u64)> {
        self.unpublished = 0;
        std::mem::take(&mut self.by_code)
    }

    /// Forgets what was not taken (`seen` goes on).
    pub fn clear(&mut self) {
        self.unpublished = 0;
        self.by_code.clear();
    }
}

/// An error's code as Redis takes it: its first word when that ends within
/// the first 32 bytes, else `ERR`.
fn error_code(message: &str) -> &str {
    let head = &message.as_bytes()[..message.len().min(31)];
    match head.iter().position(|&b| b == b' ') {
        Some(end) if end > 0 => &message[..end],
        _ => "ERR",
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn error_codes_are_the_first_word() {
        assert_eq!(error_code("ERR syntax error"), "ERR");
        assert_eq!(error_code("WRONGTYPE Operation against"), "WRONGTYPE");
        assert_eq!(error_code("NOAUTH Authentication required."), "NOAUTH");
        assert_eq!(error_code("NOSPACEATALLINTHISMESSAGE"), "ERR");
        assert_eq!(error_code(" leading blank"), "ERR");
        assert_eq!(error_code(&format!("{} x", "A".repeat(40))), "ERR");
    }

    #[test]
    fn taking_codes_empties_them_and_keeps_seen() {
        let mut t = ErrorTally::default();
        t.count("ERR a");
        t.count("WRONGTYPE b");
        t.count("ERR c");
        assert_eq!(t.unpublished(), 3);
        assert_eq!(
            t.take_codes(),
            vec![("ERR".into(), 2), ("WRONGTYPE".into(), 1)]
        );
        assert_eq!((t.unpublished(), t.seen()), (0, 3));
        t.count("OOM d");
        t.clear();
        assert_eq!((t.unpublished(), t.seen()), (0, 4));
        assert!(t.take_codes().is_empty());
    }
}
