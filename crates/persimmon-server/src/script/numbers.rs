//! How Lua numbers are written as text: Lua's own `%.14g` (`tostring`,
//! cjson) and the shortest round-trip form (RESP3 doubles).
//!
//! Invariants: every input, NaN and the infinities included, gives a text;
//! nothing here panics.

/// Lua's `%.14g` (how `tostring` and cjson write numbers).
pub fn number_text(x: f64) -> String {
    if x.is_nan() {
        return if x.is_sign_negative() { "-nan" } else { "nan" }.to_string();
    }
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x == 0.0 {
        return if x.is_sign_negative() { "-0" } else { "0" }.to_string();
    }
    let sci = format!("{:.13e}", x);
    let (mant, exp) = sci.split_once('e').expect("exponent form");
    let exp: i32 = exp.parse().unwrap_or(0);
    if (-5..14).contains(&exp) {
        let decimals = (13 - exp).max(0) as usize;
        let s = format!("{:.*}", decimals, x);
        let s = if s.contains('.') {
            s.trim_end_matches('0').trim_end_matches('.').to_string()
        } else {
            s
        };
        return s;
    }
    let mant = if mant.contains('.') {
        mant.trim_end_matches('0').trim_end_matches('.')
    } else {
        mant
    };
    let sign = if exp < 0 { '-' } else { '+' };
    format!("{mant}e{sign}{:02}", exp.abs())
}

/// A double as a RESP3 double (`%.17g`, shortest round trip).
pub fn double_text(x: f64) -> String {
    if x.is_infinite() {
        return if x > 0.0 { "inf" } else { "-inf" }.to_string();
    }
    if x.is_nan() {
        return "nan".to_string();
    }
    format!("{x}")
}
