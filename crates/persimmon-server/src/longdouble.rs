//! The number INCRBYFLOAT and HINCRBYFLOAT compute in: Redis adds in C's
//! `long double`, which on its reference platform (x86-64 Linux) is the x87
//! 80-bit extended format — a 64-bit mantissa, so `0.1 + 0.2` is "0.3" and
//! `1.23 + 0.77` is "2", where a 64-bit `f64` would show its rounding
//! error. Rust has no such type, so this room computes it exactly with big
//! integers and rounds as the hardware does.
//!
//! Invariants:
//! - [`LongDouble::parse`] accepts what Redis's `string2ld` accepts (glibc
//!   `strtold` over the whole text: decimal or `0x` hexadecimal, `inf`,
//!   `infinity`; no blank at the start, nothing after the number, not NaN,
//!   no overflow, no nonzero text that rounds to zero, under 5120 bytes),
//!   and gives its value correctly rounded (to nearest, ties to even).
//! - [`LongDouble::add`] is the exact sum rounded once, like the FPU; NaN
//!   (infinities of both signs) is `None`.
//! - [`LongDouble::human`] is Redis's `ld2string(LD_STR_HUMAN)`: printf's
//!   `%.17Lf` (exact decimal expansion, rounded half to even), trailing
//!   zeros and a bare point removed, "-0" written "0".

use num_bigint::BigUint;

/// Mantissa bits of the x87 extended format (the integer bit included).
const MANT_BITS: u64 = 64;
/// Exponent of the mantissa's lowest bit for the smallest numbers
/// (subnormals and the least normal one, 2^-16382 = 2^63 × 2^-16445).
const MIN_EXP: i64 = -16445;
/// Exponent of the mantissa's lowest bit for the largest finite numbers
/// (just under 2^16384).
const MAX_EXP: i64 = 16383 - 63;
/// Redis's `MAX_LONG_DOUBLE_CHARS`: a longer text is not a number to it.
const MAX_CHARS: usize = 5 * 1024;
/// Decimal digits printed after the point (`%.17Lf`).
const HUMAN_DIGITS: u32 = 17;

/// An x87 extended-precision value (never NaN).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum LongDouble {
    /// `(-1)^neg × mant × 2^exp`, `MIN_EXP <= exp <= MAX_EXP`.
    Finite {
        neg: bool,
        mant: u64,
        exp: i64,
    },
    Infinite {
        neg: bool,
    },
}

impl LongDouble {
    pub const ZERO: LongDouble = LongDouble::Finite {
        neg: false,
        mant: 0,
        exp: 0,
    };

    pub fn is_finite(self) -> bool {
        matches!(self, LongDouble::Finite { .. })
    }

    /// The number `text` is, by Redis's rules (see the module header).
    pub fn parse(text: &[u8]) -> Option<LongDouble> {
        if text.is_empty() || text.len() >= MAX_CHARS || is_c_space(text[0]) {
            return None;
        }
        let (neg, rest) = match text[0] {
            b'-' => (true, &text[1..]),
            b'+' => (false, &text[1..]),
            _ => (false, text),
        };
        if rest.eq_ignore_ascii_case(b"inf") || rest.eq_ignore_ascii_case(b"infinity") {
            return Some(LongDouble::Infinite { neg });
        }
        let hex = rest.len() > 2
            && rest[0] == b'0'
            && (rest[1] | 0x20) == b'x'
            && (rest[2].is_ascii_hexdigit()
                || (rest[2] == b'.' && rest.get(3).is_some_and(u8::is_ascii_hexdigit)));
        if hex {
            parse_hex(neg, &rest[2..])
        } else {
            parse_decimal(neg, rest)
        }
    }

    /// The sum, rounded once; `None` for NaN (inf + -inf).
    pub fn add(self, other: LongDouble) -> Option<LongDouble> {
        use LongDouble::{Finite, Infinite};
        match (self, other) {
            (Infinite { neg: a }, Infinite { neg: b }) if a != b => None,
            (Infinite { .. }, _) => Some(self),
            (_, Infinite { .. }) => Some(other),
            (
                Finite {
                    neg: na,
                    mant: ma,
                    exp: ea,
                },
                Finite {
                    neg: nb,
                    mant: mb,
                    exp: eb,
                },
            ) => Some(match (ma, mb) {
                (0, 0) => Finite {
                    neg: na && nb,
                    mant: 0,
                    exp: 0,
                },
                (0, _) => other,
                (_, 0) => self,
                _ => add_finite((na, ma, ea), (nb, mb, eb)),
            }),
        }
    }

    /// Redis's human-friendly text of a finite value (see the module
    /// header). Infinities are written "inf" and "-inf", as Redis does.
    pub fn human(self) -> String {
        let (neg, mant, exp) = match self {
            LongDouble::Infinite { neg } => return if neg { "-inf" } else { "inf" }.into(),
            LongDouble::Finite { neg, mant, exp } => (neg, mant, exp),
        };
        // The value × 10^17, rounded half to even to an integer.
        let scaled = BigUint::from(mant) * BigUint::from(10u32).pow(HUMAN_DIGITS);
        let fixed = if exp >= 0 {
            scaled << exp as u64
        } else {
            let drop = exp.unsigned_abs();
            let (kept, up) = shift_round(&scaled, drop, false);
            if up {
                kept + 1u32
            } else {
                kept
            }
        };
        let digits = format!(
            "{:0>width$}",
            fixed.to_string(),
            width = HUMAN_DIGITS as usize + 1
        );
        let (int, frac) = digits.split_at(digits.len() - HUMAN_DIGITS as usize);
        let frac = frac.trim_end_matches('0');
        let mut text = String::with_capacity(digits.len() + 2);
        if neg {
            text.push('-');
        }
        text.push_str(int);
        if !frac.is_empty() {
            text.push('.');
            text.push_str(frac);
        }
        if text == "-0" {
            text.remove(0);
        }
        text
    }
}

/// C's `isspace` in the "C" locale.
fn is_c_space(b: u8) -> bool {
    matches!(b, b' ' | b'\t' | b'\n' | 0x0b | 0x0c | b'\r')
}

/// Digits (in `radix`), an optional point and more digits: the digits
/// without the point, how many came after it, and the rest of the text.
/// `None` without any digit.
fn mantissa_digits(text: &[u8], radix: u32) -> Option<(Vec<u8>, i64, &[u8])> {
    let is_digit = |b: &u8| (*b as char).is_digit(radix);
    let int_len = text.iter().take_while(|b| is_digit(b)).count();
    let mut digits = text[..int_len].to_vec();
    let mut rest = &text[int_len..];
    let mut frac = 0i64;
    if rest.first() == Some(&b'.') {
        let n = rest[1..].iter().take_while(|b| is_digit(b)).count();
        digits.extend_from_slice(&rest[1..1 + n]);
        frac = n as i64;
        rest = &rest[1 + n..];
    }
    if digits.is_empty() {
        return None;
    }
    Some((digits, frac, rest))
}

/// An exponent part (`e`/`p` already matched): sign and decimal digits,
/// the whole rest of the text; saturated far past any exponent that
/// matters.
fn exponent(text: &[u8]) -> Option<i64> {
    let (neg, digits) = match text.first() {
        Some(b'-') => (true, &text[1..]),
        Some(b'+') => (false, &text[1..]),
        _ => (false, text),
    };
    if digits.is_empty() || !digits.iter().all(u8::is_ascii_digit) {
        return None;
    }
    let n = digits
        .iter()
        .fold(0i64, |n, d| (n * 10 + (d - b'0') as i64).min(1 << 40));
    Some(if neg { -n } else { n })
}

/// The optional exponent after the mantissa: `marker` then digits, or
/// nothing at all.
fn exponent_part(rest: &[u8], marker: u8) -> Option<i64> {
    match rest.split_first() {
        None => Some(0),
        Some((&m, tail)) if (m | 0x20) == marker => exponent(tail),
        Some(_) => None,
    }
}

fn parse_decimal(neg: bool, text: &[u8]) -> Option<LongDouble> {
    let (digits, frac, rest) = mantissa_digits(text, 10)?;
    let exp10 = exponent_part(rest, b'e')? - frac;
    let digits = match digits.iter().position(|&d| d != b'0') {
        Some(first) => &digits[first..],
        None => return Some(signed_zero(neg)),
    };
    // The value is below 10^magnitude: far out of range either way is
    // refused before any big arithmetic.
    let magnitude = digits.len() as i64 + exp10;
    if !(-4960..=4940).contains(&magnitude) {
        return None;
    }
    let n = BigUint::parse_bytes(digits, 10)?;
    if exp10 >= 0 {
        let n = n * BigUint::from(10u32).pow(exp10 as u32);
        return in_range(round(neg, &n, 0, false));
    }
    // n / 10^-exp10, with at least 66 bits of quotient so that rounding
    // sees the half bit and a sticky remainder.
    let den = BigUint::from(10u32).pow(exp10.unsigned_abs() as u32);
    let k = (66 + den.bits() as i64 - n.bits() as i64).max(0) as u64;
    let num = n << k;
    let q = &num / &den;
    let sticky = &q * &den != num;
    in_range(round(neg, &q, -(k as i64), sticky))
}

fn parse_hex(neg: bool, text: &[u8]) -> Option<LongDouble> {
    let (digits, frac, rest) = mantissa_digits(text, 16)?;
    let exp2 = exponent_part(rest, b'p')? - 4 * frac;
    let n = BigUint::parse_bytes(&digits, 16)?;
    if n.bits() == 0 {
        return Some(signed_zero(neg));
    }
    let top = n.bits() as i64 + exp2; // the value is below 2^top
    if !(MIN_EXP - 2..=16384 + 2).contains(&top) {
        return None;
    }
    in_range(round(neg, &n, exp2, false))
}

/// A nonzero number's rounded value, unless it overflowed to infinity or
/// underflowed to zero (strtold's ERANGE, which Redis refuses).
fn in_range(v: LongDouble) -> Option<LongDouble> {
    match v {
        LongDouble::Finite { mant, .. } if mant != 0 => Some(v),
        _ => None,
    }
}

fn signed_zero(neg: bool) -> LongDouble {
    LongDouble::Finite {
        neg,
        mant: 0,
        exp: 0,
    }
}

/// The sum of two nonzero finite values, exact, then rounded.
fn add_finite(a: (bool, u64, i64), b: (bool, u64, i64)) -> LongDouble {
    let base = a.2.min(b.2);
    let big = |m: u64, e: i64| BigUint::from(m) << (e - base) as u64;
    let (x, y) = (big(a.1, a.2), big(b.1, b.2));
    if a.0 == b.0 {
        return round(a.0, &(x + y), base, false);
    }
    match x.cmp(&y) {
        std::cmp::Ordering::Equal => LongDouble::ZERO,
        std::cmp::Ordering::Greater => round(a.0, &(x - y), base, false),
        std::cmp::Ordering::Less => round(b.0, &(y - x), base, false),
    }
}

/// `n >> drop` and whether rounding to nearest, ties to even, goes up;
/// `sticky`: the true value is a little above `n` (a nonzero remainder
/// below its lowest bit).
fn shift_round(n: &BigUint, drop: u64, sticky: bool) -> (BigUint, bool) {
    if drop == 0 {
        return (n.clone(), false);
    }
    let kept = n >> drop;
    let half = n.bit(drop - 1);
    let below = sticky || n.trailing_zeros().is_some_and(|z| z < drop - 1);
    let odd = kept.bit(0);
    (kept, half && (below || odd))
}

/// `(-1)^neg × n × 2^exp` (plus a sticky bit of less) rounded to the
/// extended format: 64 mantissa bits, fewer for subnormals, infinity past
/// the largest finite value.
fn round(neg: bool, n: &BigUint, exp: i64, sticky: bool) -> LongDouble {
    let bits = n.bits() as i64;
    let drop = (bits - MANT_BITS as i64).max(MIN_EXP - exp);
    let (mut mant, mut exp) = if drop <= 0 {
        (u128_of(&(n << drop.unsigned_abs())), exp + drop)
    } else {
        let (kept, up) = shift_round(n, drop as u64, sticky);
        (u128_of(&kept) + up as u128, exp + drop)
    };
    if mant >> MANT_BITS != 0 {
        mant >>= 1; // rounding carried into a 65th bit: 2^64 → 2^63 × 2
        exp += 1;
    }
    if mant == 0 {
        return signed_zero(neg);
    }
    if exp > MAX_EXP {
        return LongDouble::Infinite { neg };
    }
    LongDouble::Finite {
        neg,
        mant: mant as u64,
        exp,
    }
}

/// A `BigUint` known to hold at most 65 bits.
fn u128_of(n: &BigUint) -> u128 {
    n.iter_u64_digits()
        .take(2)
        .enumerate()
        .fold(0u128, |acc, (i, d)| acc | (d as u128) << (64 * i))
}

#[cfg(test)]
mod tests {
    use super::LongDouble;

    fn sum(a: &str, b: &str) -> String {
        let a = LongDouble::parse(a.as_bytes()).unwrap();
        let b = LongDouble::parse(b.as_bytes()).unwrap();
        a.add(b).unwrap().human()
    }

    #[test]
    fn sums_print_like_redis_on_x86_64() {
        // Each expected text is what Redis 7.0.15 (x86-64) replied.
        assert_eq!(sum("0", "10.5"), "10.5");
        assert_eq!(sum("0", "3.0e3"), "3000");
        assert_eq!(sum("0.2", "0.1"), "0.3");
        assert_eq!(sum("3000", "0.3"), "3000.30000000000000004");
        assert_eq!(sum("1.23", "0.77"), "2");
        assert_eq!(sum("2", "-0.1"), "1.9");
        assert_eq!(sum("1.5", "-1.1"), "0.4");
        assert_eq!(sum("1", "-1.1"), "-0.1");
        assert_eq!(sum("17179869184", "1.5"), "17179869185.5");
        assert_eq!(sum("0x10", "0x1p-3"), "16.125");
        assert_eq!(sum(".5", "5."), "5.5");
        assert_eq!(sum("-.5e1", "+1"), "-4");
        assert_eq!(sum("0.024390243902439025", "-0.024390243902439025"), "0");
        assert_eq!(sum("-1e-30", "0"), "0");
        assert_eq!(sum("1e-4950", "0"), "0");
    }

    #[test]
    fn parse_refuses_what_redis_refuses() {
        for bad in [
            "",
            " 1",
            "1 ",
            "abc",
            "1e",
            "1e+",
            "0x",
            "nan",
            "-nan",
            "1e5000",
            "-1e5000",
            "1e-5000",
            "0x1p99999",
            "1\u{0}2",
            "..5",
            "+",
            "--1",
            "1.2.3",
        ] {
            assert_eq!(LongDouble::parse(bad.as_bytes()), None, "{bad:?}");
        }
        assert_eq!(LongDouble::parse("9".repeat(5120).as_bytes()), None);
        assert!(LongDouble::parse("9".repeat(5119).as_bytes()).is_none()); // overflow
        assert!(LongDouble::parse(b"0e-99999").is_some());
        assert!(LongDouble::parse(b"inf").is_some_and(|v| !v.is_finite()));
        assert!(LongDouble::parse(b"-Infinity").is_some_and(|v| !v.is_finite()));
        let inf = LongDouble::parse(b"inf").unwrap();
        let minus_inf = LongDouble::parse(b"-inf").unwrap();
        assert_eq!(inf.add(minus_inf), None);
    }

    #[test]
    fn large_and_tiny_values_round_trip_through_the_format() {
        let big = LongDouble::parse(b"1e4000").unwrap();
        let text = big.human();
        assert_eq!(text.len(), 4000);
        assert!(text.starts_with("99999999999999999999654638"));
        assert_eq!(LongDouble::parse(text.as_bytes()), Some(big));
        // The largest finite value, and one past it.
        assert!(LongDouble::parse(b"1.18973149535723176502e4932").is_some());
        assert!(LongDouble::parse(b"1.18973149535723176509e4932").is_none());
        // The least subnormal (about 3.6e-4951) and below half of it.
        assert!(LongDouble::parse(b"4e-4951").is_some());
        assert!(LongDouble::parse(b"1e-4951").is_none());
    }
}
