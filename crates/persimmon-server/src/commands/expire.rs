//! Key expiry: EXPIRE, PEXPIRE, EXPIREAT, PEXPIREAT (with NX, XX, GT, LT),
//! TTL, PTTL, EXPIRETIME, PEXPIRETIME, PERSIST, and the deadline arithmetic
//! SET, SETEX, PSETEX and GETEX share.
//!
//! Deadlines are the engine's: milliseconds of Unix time stored in the
//! key's record, so they survive a restart; an expired key reads as absent
//! at once (lazy expiry) and the engine's background expiry deletes it
//! (active expiry).
//!
//! Invariants:
//! - Arguments are checked as Redis checks them, in Redis's order (options,
//!   then the number, then its overflow), with Redis's texts.
//! - A deadline past the engine's limit (9999-12-31, `MAX_DEADLINE_MS`) is
//!   stored as that limit: Redis accepts deadlines up to `i64::MAX` ms, and
//!   no key lives to see the difference.
//! - A deadline at or before now deletes the key, as Redis does.

use persimmon::{Ttl, Update, MAX_DEADLINE_MS};
use persimmon_resp::Args;
use persimmon_types::Error;

use crate::notify;
use crate::session::{int_arg, is, Session};

/// How a SET/GETEX time argument counts.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Unit {
    /// Seconds from now.
    Ex,
    /// Milliseconds from now.
    Px,
    /// Unix time in seconds.
    ExAt,
    /// Unix time in milliseconds.
    PxAt,
}

impl Unit {
    pub fn named(opt: &[u8]) -> Option<Unit> {
        [
            ("EX", Unit::Ex),
            ("PX", Unit::Px),
            ("EXAT", Unit::ExAt),
            ("PXAT", Unit::PxAt),
        ]
        .into_iter()
        .find(|(name, _)| is(opt, name))
        .map(|(_, u)| u)
    }

    fn seconds(self) -> bool {
        matches!(self, Unit::Ex | Unit::ExAt)
    }

    fn relative(self) -> bool {
        matches!(self, Unit::Ex | Unit::Px)
    }
}

/// `ERR invalid expire time in 'cmd' command`.
pub fn invalid_expire(command: &str) -> Error {
    Error::new(format!("ERR invalid expire time in '{command}' command"))
}

/// The deadline a SET/GETEX time argument names: a positive number, in
/// `unit`, from `now_ms` when relative.
pub fn deadline_of(arg: &[u8], unit: Unit, now_ms: u64, command: &str) -> Result<u64, Error> {
    let n = int_arg(arg)?;
    if n <= 0 || (unit.seconds() && n > i64::MAX / 1000) {
        return Err(invalid_expire(command));
    }
    let mut ms = if unit.seconds() { n * 1000 } else { n };
    if unit.relative() {
        ms = ms
            .checked_add(now_ms as i64)
            .ok_or_else(|| invalid_expire(command))?;
    }
    Ok(clamp(ms))
}

/// A positive deadline, within the engine's limit.
fn clamp(ms: i64) -> u64 {
    (ms.max(0) as u64).min(MAX_DEADLINE_MS)
}

/// EXPIRE & co.'s NX, XX, GT, LT.
#[derive(Default, Clone, Copy)]
struct Conditions {
    nx: bool,
    xx: bool,
    gt: bool,
    lt: bool,
}

impl Conditions {
    fn parse(a: &Args<'_>) -> Result<Conditions, Error> {
        let mut c = Conditions::default();
        for opt in a.from(3) {
            if is(opt, "NX") {
                c.nx = true;
            } else if is(opt, "XX") {
                c.xx = true;
            } else if is(opt, "GT") {
                c.gt = true;
            } else if is(opt, "LT") {
                c.lt = true;
            } else {
                return Err(Error::new(format!(
                    "ERR Unsupported option {}",
                    String::from_utf8_lossy(opt)
                )));
            }
        }
        if c.nx && (c.xx || c.gt || c.lt) {
            return Err(Error::new(
                "ERR NX and XX, GT or LT options at the same time are not compatible",
            ));
        }
        if c.gt && c.lt {
            return Err(Error::new(
                "ERR GT and LT options at the same time are not compatible",
            ));
        }
        Ok(c)
    }

    fn any(&self) -> bool {
        self.nx || self.xx || self.gt || self.lt
    }

    /// Whether a key whose deadline is `current` (`None`: none, an
    /// infinite time to live) takes the new deadline `when`.
    fn allow(&self, current: Option<u64>, when: i64) -> bool {
        let current = current.map(|c| c as i64);
        !(self.nx && current.is_some()
            || self.xx && current.is_none()
            || self.gt && current.is_none_or(|c| when <= c)
            || self.lt && current.is_some_and(|c| when >= c))
    }
}

/// The absolute deadline in ms an EXPIRE-family argument names (may be in
/// the past, or negative).
fn expire_when(a: &Args<'_>, seconds: bool, base: i64, command: &str) -> Result<i64, Error> {
    let mut when = int_arg(a.get(2))?;
    if seconds {
        if !(i64::MIN / 1000..=i64::MAX / 1000).contains(&when) {
            return Err(invalid_expire(command));
        }
        when *= 1000;
    }
    if when > i64::MAX - base {
        return Err(invalid_expire(command));
    }
    Ok(when + base)
}

fn expire_generic(
    s: &mut Session,
    a: &Args<'_>,
    seconds: bool,
    relative: bool,
    command: &str,
) -> Result<(), Error> {
    let cond = Conditions::parse(a)?;
    let now = s.store.now_ms() as i64;
    let when = expire_when(a, seconds, if relative { now } else { 0 }, command)?;
    let key = a.get(1);
    let changed = if !cond.any() {
        // A deadline already passed deletes the key.
        s.store.set_deadline(key, Some(clamp(when)))?
    } else {
        s.store.update_ttl(key, |old, current| match old {
            Some(v) if cond.allow(current, when) => {
                let deadline = Some(clamp(when));
                (
                    Update::PutExpiring {
                        value: v.encode(),
                        deadline,
                    },
                    true,
                )
            }
            _ => (Update::Keep, false),
        })?
    };
    // As Redis: an absolute PEXPIREAT (a replica applying it later sets
    // the same deadline), or DEL for a deadline already passed.
    let words = match (changed, when <= now) {
        (false, _) => None,
        (true, true) => Some(vec![b"DEL".to_vec(), key.to_vec()]),
        (true, false) => Some(vec![
            b"PEXPIREAT".to_vec(),
            key.to_vec(),
            clamp(when).to_string().into_bytes(),
        ]),
    };
    match words {
        Some(w) => s.repl.rewrite(s.store.db, w),
        None => s.repl.nothing(),
    }
    if changed {
        let event = if when <= now { "del" } else { "expire" };
        notify::event(s, notify::GENERIC, event, key);
    }
    s.out.int(changed as i64);
    Ok(())
}

pub fn expire(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    expire_generic(s, &a, true, true, "expire")
}

pub fn pexpire(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    expire_generic(s, &a, false, true, "pexpire")
}

pub fn expireat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    expire_generic(s, &a, true, false, "expireat")
}

pub fn pexpireat(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    expire_generic(s, &a, false, false, "pexpireat")
}

/// TTL, PTTL, EXPIRETIME, PEXPIRETIME: -2 missing, -1 no deadline, else
/// the time left (or the deadline), rounded to seconds as Redis rounds.
fn ttl_generic(s: &mut Session, a: &Args<'_>, ms: bool, absolute: bool) -> Result<(), Error> {
    let n = match s.store.ttl(a.get(1))? {
        Ttl::Missing => -2,
        Ttl::Persistent => -1,
        Ttl::Expires {
            at_ms,
            remaining_ms,
        } => {
            let t = if absolute { at_ms } else { remaining_ms } as i64;
            if ms {
                t
            } else {
                (t + 500) / 1000
            }
        }
    };
    s.out.int(n);
    Ok(())
}

pub fn ttl(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    ttl_generic(s, &a, false, false)
}

pub fn pttl(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    ttl_generic(s, &a, true, false)
}

pub fn expiretime(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    ttl_generic(s, &a, false, true)
}

pub fn pexpiretime(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    ttl_generic(s, &a, true, true)
}

pub fn persist(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let cleared = s.store.set_deadline(a.get(1), None)?;
    if cleared {
        notify::event(s, notify::GENERIC, "persist", a.get(1));
    }
    s.out.int(cleared as i64);
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn conditions_follow_redis() {
        let c = |nx, xx, gt, lt| Conditions { nx, xx, gt, lt };
        // NX: only keys without a deadline; XX: only keys with one.
        assert!(c(true, false, false, false).allow(None, 5));
        assert!(!c(true, false, false, false).allow(Some(1), 5));
        assert!(!c(false, true, false, false).allow(None, 5));
        // GT: never on a key without a deadline (infinite); LT: always.
        assert!(!c(false, false, true, false).allow(None, 5));
        assert!(c(false, false, true, false).allow(Some(4), 5));
        assert!(!c(false, false, true, false).allow(Some(5), 5));
        assert!(c(false, false, false, true).allow(None, 5));
        assert!(!c(false, false, false, true).allow(Some(5), 5));
    }

    #[test]
    fn deadlines_are_checked_and_clamped() {
        assert_eq!(deadline_of(b"10", Unit::Ex, 1_000, "set").unwrap(), 11_000);
        assert_eq!(deadline_of(b"10", Unit::PxAt, 1_000, "set").unwrap(), 10);
        assert!(deadline_of(b"0", Unit::Ex, 1_000, "set").is_err());
        assert!(deadline_of(b"10000000000000000", Unit::Ex, 1, "set").is_err());
        assert_eq!(
            deadline_of(b"9223372036854770000", Unit::PxAt, 1, "set").unwrap(),
            MAX_DEADLINE_MS
        );
    }
}
