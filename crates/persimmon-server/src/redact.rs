//! Which arguments of a command carry secrets, and are shown as
//! `(redacted)` wherever the server shows commands back (`MONITOR`, the
//! slow log), as Redis 7.0 redacts them: every argument of `AUTH`, the
//! user and password after `HELLO`'s `AUTH`, `MIGRATE`'s `AUTH` password
//! and `AUTH2` user and password, the values of `masterauth` and
//! `requirepass` in `CONFIG SET`, and everything after `ACL SETUSER`.
//!
//! Invariant: a pure function of the arguments; `None` (nothing hidden) for
//! every other command, decided by the first byte compare.

/// For each argument of `args` (the command name first), whether it is
/// hidden; `None` when none is.
pub fn redacted(args: &[&[u8]]) -> Option<Vec<bool>> {
    let is = |i: usize, name: &str| {
        args.get(i)
            .is_some_and(|a| a.eq_ignore_ascii_case(name.as_bytes()))
    };
    let mut hide = vec![false; args.len()];
    if is(0, "auth") {
        hide[1..].fill(true);
    } else if is(0, "hello") || is(0, "migrate") {
        let mut i = 1;
        while i < args.len() {
            let n = if is(i, "auth2") || (is(i, "auth") && is(0, "hello")) {
                2
            } else if is(i, "auth") {
                1
            } else {
                0
            };
            for h in hide.iter_mut().skip(i + 1).take(n) {
                *h = true;
            }
            i += 1 + n;
        }
    } else if is(0, "config") && is(1, "set") {
        let mut i = 2;
        while i + 1 < args.len() {
            hide[i + 1] = is(i, "masterauth") || is(i, "requirepass");
            i += 2;
        }
    } else if is(0, "acl") && is(1, "setuser") {
        hide[2..].fill(true);
    } else {
        return None;
    }
    hide.contains(&true).then_some(hide)
}

#[cfg(test)]
mod tests {
    use super::redacted;

    fn hidden(words: &str) -> Vec<bool> {
        let args: Vec<&[u8]> = words.split(' ').map(str::as_bytes).collect();
        redacted(&args).unwrap_or_else(|| vec![false; args.len()])
    }

    #[test]
    fn hides_secrets_only() {
        assert_eq!(hidden("auth a b"), [false, true, true]);
        assert_eq!(
            hidden("hello 2 AUTH u p SETNAME x"),
            [false, false, false, true, true, false, false]
        );
        assert_eq!(
            hidden("migrate h 1 k 9 5000 AUTH p"),
            [false, false, false, false, false, false, false, true]
        );
        assert_eq!(
            hidden("migrate h 1 k 9 5000 AUTH2 u p"),
            [false, false, false, false, false, false, false, true, true]
        );
        assert_eq!(
            hidden("config set masterauth x maxmemory 1"),
            [false, false, false, true, false, false]
        );
        assert_eq!(hidden("acl setuser u +get"), [false, false, true, true]);
        assert_eq!(redacted(&[b"set", b"auth", b"x"]), None);
        assert_eq!(redacted(&[b"config", b"set", b"maxmemory", b"1"]), None);
    }
}
