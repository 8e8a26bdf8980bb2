//! Key deadlines on the command line: `put --ttl SECS` turned into a
//! deadline, and the text `persimmon ttl` prints for a key's time to live.
//!
//! Invariants:
//! - A TTL is a whole number of seconds, at least 1; one whose deadline
//!   would pass the engine's latest (`MAX_DEADLINE_MS`, the end of year
//!   9999) is refused while parsing, before any pool is opened or created.
//! - Deadlines are milliseconds of Unix time by the engine's clock
//!   (`Db::now_ms`); the default clock is the system's, which the parser
//!   reads too, so what it accepts the engine accepts.
//! - Times print in UTC, `YYYY-MM-DDTHH:MM:SS.sssZ`, as the engine's own
//!   messages do.

use persimmon::{Clock, Ttl, MAX_DEADLINE_MS};

const MS_PER_DAY: u64 = 86_400_000;

/// The deadline `secs` seconds after `now_ms`, or `None` when it would be
/// past the latest one the engine accepts.
pub fn deadline_after(now_ms: u64, secs: u64) -> Option<u64> {
    secs.checked_mul(1000)
        .and_then(|ms| now_ms.checked_add(ms))
        .filter(|d| *d <= MAX_DEADLINE_MS)
}

/// `--ttl`: a whole number of seconds, at least 1, whose deadline the
/// engine accepts.
pub fn parse_ttl(text: &str) -> Result<u64, String> {
    let secs: u64 = text.trim().parse().map_err(|_| {
        format!("{text:?} is not a whole number of seconds (a TTL is at least 1 second)")
    })?;
    if secs == 0 {
        return Err("a TTL is at least 1 second (`persimmon del` deletes a key now)".into());
    }
    if deadline_after(Clock::System.now_ms(), secs).is_none() {
        return Err(format!(
            "{secs} seconds from now is past {}, the latest deadline the engine accepts",
            utc(MAX_DEADLINE_MS)
        ));
    }
    Ok(secs)
}

/// What `persimmon ttl` prints for a present key (`None`: the key is
/// absent).
pub fn ttl_line(ttl: Ttl) -> Option<String> {
    match ttl {
        Ttl::Missing => None,
        Ttl::Persistent => Some("no deadline\n".to_string()),
        Ttl::Expires {
            at_ms,
            remaining_ms,
        } => Some(format!(
            "{}.{:03} s left, expires at {}\n",
            remaining_ms / 1000,
            remaining_ms % 1000,
            utc(at_ms)
        )),
    }
}

/// `ms` of Unix time as `YYYY-MM-DDTHH:MM:SS.sssZ`.
pub fn utc(ms: u64) -> String {
    let (days, in_day) = (ms / MS_PER_DAY, ms % MS_PER_DAY);
    let (y, m, d) = civil_from_days(days);
    let secs = in_day / 1000;
    format!(
        "{y:04}-{m:02}-{d:02}T{:02}:{:02}:{:02}.{:03}Z",
        secs / 3600,
        secs / 60 % 60,
        secs % 60,
        in_day % 1000
    )
}

/// The proleptic Gregorian date `days` days after 1970-01-01 (Howard
/// Hinnant's `civil_from_days`, for days on or after the epoch).
fn civil_from_days(days: u64) -> (u64, u64, u64) {
    let z = days + 719_468;
    let era = z / 146_097;
    let doe = z % 146_097;
    let yoe = (doe - doe / 1460 + doe / 36_524 - doe / 146_096) / 365;
    let doy = doe - (365 * yoe + yoe / 4 - yoe / 100);
    let mp = (5 * doy + 2) / 153;
    let d = doy - (153 * mp + 2) / 5 + 1;
    let m = if mp < 10 { mp + 3 } else { mp - 9 };
    let y = yoe + era * 400 + u64::from(m <= 2);
    (y, m, d)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn utc_formats_known_instants() {
        assert_eq!(utc(0), "1970-01-01T00:00:00.000Z");
        assert_eq!(utc(951_782_400_000), "2000-02-29T00:00:00.000Z");
        assert_eq!(utc(1_700_000_000_123), "2023-11-14T22:13:20.123Z");
        assert_eq!(utc(MAX_DEADLINE_MS), "9999-12-31T23:59:59.999Z");
    }

    #[test]
    fn deadlines_stop_at_the_engines_latest() {
        assert_eq!(deadline_after(1_000, 5), Some(6_000));
        assert_eq!(
            deadline_after(MAX_DEADLINE_MS - 1000, 1),
            Some(MAX_DEADLINE_MS)
        );
        assert_eq!(deadline_after(MAX_DEADLINE_MS - 999, 1), None);
        assert_eq!(deadline_after(0, u64::MAX), None);
    }

    #[test]
    fn ttls_are_positive_whole_seconds_within_the_calendar() {
        assert_eq!(parse_ttl("60"), Ok(60));
        assert_eq!(parse_ttl(" 1 "), Ok(1));
        for bad in ["0", "-5", "1.5", "ten", "", "1s"] {
            assert!(parse_ttl(bad).is_err(), "{bad:?}");
        }
        assert!(parse_ttl("0").unwrap_err().contains("at least 1 second"));
        let far = parse_ttl(&(MAX_DEADLINE_MS / 1000).to_string()).unwrap_err();
        assert!(far.contains("9999-12-31T23:59:59.999Z"), "{far}");
        assert!(parse_ttl("18446744073709551615").is_err());
    }

    #[test]
    fn ttl_lines_say_what_is_left() {
        assert_eq!(ttl_line(Ttl::Missing), None);
        assert_eq!(ttl_line(Ttl::Persistent).unwrap(), "no deadline\n");
        let line = ttl_line(Ttl::Expires {
            at_ms: 1_700_000_000_123,
            remaining_ms: 59_998,
        })
        .unwrap();
        assert_eq!(line, "59.998 s left, expires at 2023-11-14T22:13:20.123Z\n");
    }
}
