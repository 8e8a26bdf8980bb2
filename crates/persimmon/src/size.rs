//! Byte sizes as people write them (`64M`, `1.5G`, `1_000M`) and as reports
//! print them (`64.0 MiB`). The engine's options take bytes; the CLI, the
//! server's config file and the benchmark all parse sizes here, so every
//! front end accepts the same spellings.
//!
//! Invariants: units are powers of 1024; a parse never wraps (an overflow
//! is an error naming the text); `human_bytes` never prints a value of 1024
//! or more in a unit when a larger unit exists.

/// Parses a byte count: a number with an optional suffix K, M, G or T
/// (powers of 1024; `KiB`, `MiB`, ... and a trailing `B` are accepted too,
/// in any case). `_` may separate digits (`1_000M`); a fraction is allowed
/// (`1.5G`, rounded to the nearest byte).
pub fn parse_size(text: &str) -> Result<u64, String> {
    let t = text.trim();
    let split = t
        .find(|c: char| !(c.is_ascii_digit() || c == '.' || c == '_'))
        .unwrap_or(t.len());
    let (number, unit) = t.split_at(split);
    let number = number.replace('_', "");
    if number.is_empty() {
        return Err(format!(
            "{text:?} is not a size (expected a number of bytes such as 4096, 64M or 1G)"
        ));
    }
    let shift = match unit.trim().to_ascii_lowercase().as_str() {
        "" | "b" => 0,
        "k" | "kb" | "kib" => 10,
        "m" | "mb" | "mib" => 20,
        "g" | "gb" | "gib" => 30,
        "t" | "tb" | "tib" => 40,
        _ => {
            return Err(format!(
                "{text:?}: unknown size suffix {unit:?} (use K, M, G or T, powers of 1024)"
            ))
        }
    };
    let too_large = || format!("{text:?} is too large");
    if number.contains('.') {
        let x: f64 = number
            .parse()
            .map_err(|_| format!("{text:?} is not a size"))?;
        let bytes = (x * (1u64 << shift) as f64).round();
        if !bytes.is_finite() || bytes >= u64::MAX as f64 {
            return Err(too_large());
        }
        return Ok(bytes as u64);
    }
    let n: u64 = number.parse().map_err(|_| too_large())?;
    n.checked_mul(1u64 << shift).ok_or_else(too_large)
}

/// `bytes` in the largest binary unit that keeps it at least 1, e.g. `64.0 MiB`.
pub fn human_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["B", "KiB", "MiB", "GiB", "TiB", "PiB"];
    let mut value = bytes as f64;
    let mut unit = 0;
    while value >= 1024.0 && unit + 1 < UNITS.len() {
        value /= 1024.0;
        unit += 1;
    }
    if unit == 0 {
        format!("{bytes} B")
    } else {
        format!("{value:.1} {}", UNITS[unit])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_sizes() {
        assert_eq!(parse_size("4096"), Ok(4096));
        assert_eq!(parse_size(" 64M "), Ok(64 << 20));
        assert_eq!(parse_size("64mib"), Ok(64 << 20));
        assert_eq!(parse_size("4KiB"), Ok(4096));
        assert_eq!(parse_size("1G"), Ok(1 << 30));
        assert_eq!(parse_size("1.5G"), Ok(3 << 29));
        assert_eq!(parse_size("2T"), Ok(2 << 40));
        assert_eq!(parse_size("1_000"), Ok(1000));
        assert_eq!(parse_size("1_000M"), Ok(1000 << 20));
        assert!(parse_size("").is_err());
        assert!(parse_size("M").is_err());
        assert!(parse_size("12X").is_err());
        assert!(parse_size("-1").is_err());
        assert!(parse_size("99999999999T").is_err());
        assert!(parse_size("1.2.3G").is_err());
    }

    #[test]
    fn formats_sizes() {
        assert_eq!(human_bytes(0), "0 B");
        assert_eq!(human_bytes(1023), "1023 B");
        assert_eq!(human_bytes(64 << 20), "64.0 MiB");
        assert_eq!(human_bytes(3 << 29), "1.5 GiB");
        assert_eq!(human_bytes(u64::MAX), "16384.0 PiB");
    }
}
