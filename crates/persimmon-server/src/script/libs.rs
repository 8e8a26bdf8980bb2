//! The libraries Redis gives scripts beyond Lua's own, written here in
//! Rust (no maintained crate provides them for mlua): `cjson` (encode,
//! decode, `null`, the depth and invalid-number settings) and `bit`
//! (LuaBitOp's functions on 32-bit integers). `cmsgpack` and `struct` are
//! not provided.
//!
//! Invariants:
//! - Encoding and decoding are bounded in depth (`encode_max_depth`,
//!   `decode_max_depth`, 1000 by default, as lua-cjson): deeper input is a
//!   Lua error, never a native stack overflow.
//! - Every failure is a Lua error with lua-cjson's wording where the suite
//!   or clients look at it; nothing here panics on any input.

use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering::Relaxed};
use std::sync::Arc;

use mlua::{Lua, MultiValue, Table, Value};

fn err(text: impl Into<String>) -> mlua::Error {
    mlua::Error::RuntimeError(text.into())
}

struct JsonSettings {
    encode_depth: AtomicUsize,
    decode_depth: AtomicUsize,
    invalid_numbers: AtomicBool,
}

/// The `cjson` table.
pub fn cjson(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    let cfg = Arc::new(JsonSettings {
        encode_depth: AtomicUsize::new(1000),
        decode_depth: AtomicUsize::new(1000),
        invalid_numbers: AtomicBool::new(false),
    });
    let c = cfg.clone();
    t.set(
        "encode",
        lua.create_function(move |_, v: Value| {
            let mut out = Vec::new();
            encode(&v, &mut out, 1, &c)?;
            Ok(mlua::BString::from(out))
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "decode",
        lua.create_function(move |lua, s: mlua::String| {
            let bytes = s.as_bytes().to_vec();
            let mut p = Parser {
                s: &bytes,
                at: 0,
                max: c.decode_depth.load(Relaxed),
            };
            p.ws();
            let v = p.value(lua, 1)?;
            p.ws();
            if p.at != bytes.len() {
                return Err(p.fail("the end"));
            }
            Ok(v)
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "encode_max_depth",
        lua.create_function(move |_, n: Option<usize>| {
            if let Some(n) = n {
                c.encode_depth.store(n.max(1), Relaxed);
            }
            Ok(c.encode_depth.load(Relaxed))
        })?,
    )?;
    let c = cfg.clone();
    t.set(
        "decode_max_depth",
        lua.create_function(move |_, n: Option<usize>| {
            if let Some(n) = n {
                c.decode_depth.store(n.max(1), Relaxed);
            }
            Ok(c.decode_depth.load(Relaxed))
        })?,
    )?;
    let c = cfg;
    t.set(
        "encode_invalid_numbers",
        lua.create_function(move |_, on: Option<Value>| {
            if let Some(v) = on {
                let on = match v {
                    Value::Boolean(b) => b,
                    Value::String(s) => s.as_bytes().as_ref() == b"on",
                    _ => false,
                };
                c.invalid_numbers.store(on, Relaxed);
            }
            Ok(c.invalid_numbers.load(Relaxed))
        })?,
    )?;
    for name in [
        "encode_keep_buffer",
        "encode_sparse_array",
        "encode_number_precision",
        "decode_invalid_numbers",
    ] {
        t.set(
            name,
            lua.create_function(|_, _: MultiValue| Ok(Value::Boolean(true)))?,
        )?;
    }
    t.set("null", Value::NULL)?;
    t.set("_NAME", "cjson")?;
    t.set("_VERSION", "2.1.0")?;
    Ok(t)
}

fn json_string(s: &[u8], out: &mut Vec<u8>) {
    out.push(b'"');
    for &b in s {
        match b {
            b'"' => out.extend_from_slice(b"\\\""),
            b'\\' => out.extend_from_slice(b"\\\\"),
            b'/' => out.extend_from_slice(b"\\/"),
            b'\n' => out.extend_from_slice(b"\\n"),
            b'\r' => out.extend_from_slice(b"\\r"),
            b'\t' => out.extend_from_slice(b"\\t"),
            0x08 => out.extend_from_slice(b"\\b"),
            0x0c => out.extend_from_slice(b"\\f"),
            b if b < 0x20 || b == 0x7f => out.extend_from_slice(format!("\\u{b:04x}").as_bytes()),
            b => out.push(b),
        }
    }
    out.push(b'"');
}

fn json_number(x: f64, out: &mut Vec<u8>, cfg: &JsonSettings) -> mlua::Result<()> {
    if !x.is_finite() {
        if !cfg.invalid_numbers.load(Relaxed) {
            return Err(err("Cannot serialise number: must not be NaN or Infinity"));
        }
        let t = if x.is_nan() {
            "nan"
        } else if x > 0.0 {
            "inf"
        } else {
            "-inf"
        };
        out.extend_from_slice(t.as_bytes());
        return Ok(());
    }
    out.extend_from_slice(super::number_text(x).as_bytes());
    Ok(())
}

fn encode(v: &Value, out: &mut Vec<u8>, depth: usize, cfg: &JsonSettings) -> mlua::Result<()> {
    match v {
        Value::Nil => out.extend_from_slice(b"null"),
        Value::LightUserData(p) if p.0.is_null() => out.extend_from_slice(b"null"),
        Value::Boolean(b) => out.extend_from_slice(if *b { b"true" } else { b"false" }),
        Value::Integer(i) => out.extend_from_slice(i.to_string().as_bytes()),
        Value::Number(x) => json_number(*x, out, cfg)?,
        Value::String(s) => json_string(&s.as_bytes(), out),
        Value::Table(t) => {
            if depth > cfg.encode_depth.load(Relaxed) {
                return Err(err(format!(
                    "Cannot serialise, excessive nesting ({depth})"
                )));
            }
            let mut pairs = Vec::new();
            for p in t.clone().pairs::<Value, Value>() {
                pairs.push(p?);
            }
            // An array: keys 1..n, all of them.
            let mut max = 0usize;
            let mut array = true;
            for (k, _) in &pairs {
                let idx = match k {
                    Value::Integer(i) if *i >= 1 => Some(*i as usize),
                    Value::Number(x) if *x >= 1.0 && x.fract() == 0.0 => Some(*x as usize),
                    _ => None,
                };
                match idx {
                    Some(i) => max = max.max(i),
                    None => {
                        array = false;
                        break;
                    }
                }
            }
            if array && !pairs.is_empty() && max <= pairs.len() * 2 + 10 {
                out.push(b'[');
                for i in 1..=max {
                    if i > 1 {
                        out.push(b',');
                    }
                    let v: Value = t.raw_get(i)?;
                    encode(&v, out, depth + 1, cfg)?;
                }
                out.push(b']');
                return Ok(());
            }
            if array && !pairs.is_empty() {
                return Err(err("Cannot serialise table: excessively sparse array"));
            }
            out.push(b'{');
            for (n, (k, v)) in pairs.iter().enumerate() {
                if n > 0 {
                    out.push(b',');
                }
                match k {
                    Value::String(s) => json_string(&s.as_bytes(), out),
                    Value::Integer(i) => json_string(i.to_string().as_bytes(), out),
                    Value::Number(x) => {
                        let mut t = Vec::new();
                        json_number(*x, &mut t, cfg)?;
                        json_string(&t, out);
                    }
                    other => {
                        return Err(err(format!(
                            "Cannot serialise {}: table key must be a number or string",
                            other.type_name()
                        )))
                    }
                }
                out.push(b':');
                encode(v, out, depth + 1, cfg)?;
            }
            out.push(b'}');
        }
        other => {
            return Err(err(format!(
                "Cannot serialise {}: type not supported",
                other.type_name()
            )))
        }
    }
    Ok(())
}

struct Parser<'a> {
    s: &'a [u8],
    at: usize,
    max: usize,
}

impl Parser<'_> {
    fn ws(&mut self) {
        while self
            .s
            .get(self.at)
            .is_some_and(|b| matches!(b, b' ' | b'\t' | b'\n' | b'\r'))
        {
            self.at += 1;
        }
    }

    fn fail(&self, what: &str) -> mlua::Error {
        let found = match self.s.get(self.at) {
            None => "'end'".to_string(),
            Some(&b) => format!("invalid token '{}'", b as char),
        };
        err(format!(
            "Expected {what} but found {found} at character {}",
            self.at + 1
        ))
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        self.ws();
        match self.s.get(self.at) {
            Some(b'{') => {
                if depth > self.max {
                    return Err(err(format!(
                        "Found too many nested data structures ({depth}) at character {}",
                        self.at + 1
                    )));
                }
                self.at += 1;
                let t = lua.create_table()?;
                self.ws();
                if self.s.get(self.at) == Some(&b'}') {
                    self.at += 1;
                    return Ok(Value::Table(t));
                }
                loop {
                    self.ws();
                    if self.s.get(self.at) != Some(&b'"') {
                        return Err(self.fail("object key string"));
                    }
                    let k = self.string()?;
                    self.ws();
                    if self.s.get(self.at) != Some(&b':') {
                        return Err(self.fail("colon"));
                    }
                    self.at += 1;
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(lua.create_string(&k)?, v)?;
                    self.ws();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b'}') => {
                            self.at += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => return Err(self.fail("comma or object end")),
                    }
                }
            }
            Some(b'[') => {
                if depth > self.max {
                    return Err(err(format!(
                        "Found too many nested data structures ({depth}) at character {}",
                        self.at + 1
                    )));
                }
                self.at += 1;
                let t = lua.create_table()?;
                self.ws();
                if self.s.get(self.at) == Some(&b']') {
                    self.at += 1;
                    return Ok(Value::Table(t));
                }
                let mut i = 1;
                loop {
                    let v = self.value(lua, depth + 1)?;
                    t.raw_set(i, v)?;
                    i += 1;
                    self.ws();
                    match self.s.get(self.at) {
                        Some(b',') => self.at += 1,
                        Some(b']') => {
                            self.at += 1;
                            return Ok(Value::Table(t));
                        }
                        _ => return Err(self.fail("comma or array end")),
                    }
                }
            }
            Some(b'"') => Ok(Value::String(lua.create_string(self.string()?)?)),
            Some(b't') if self.s[self.at..].starts_with(b"true") => {
                self.at += 4;
                Ok(Value::Boolean(true))
            }
            Some(b'f') if self.s[self.at..].starts_with(b"false") => {
                self.at += 5;
                Ok(Value::Boolean(false))
            }
            Some(b'n') if self.s[self.at..].starts_with(b"null") => {
                self.at += 4;
                Ok(Value::NULL)
            }
            Some(b) if *b == b'-' || b.is_ascii_digit() => {
                let start = self.at;
                while self.s.get(self.at).is_some_and(|b| {
                    b.is_ascii_digit() || matches!(b, b'-' | b'+' | b'.' | b'e' | b'E')
                }) {
                    self.at += 1;
                }
                let text = std::str::from_utf8(&self.s[start..self.at]).unwrap_or("");
                match text.parse::<f64>() {
                    Ok(x) => Ok(Value::Number(x)),
                    Err(_) => {
                        self.at = start;
                        Err(self.fail("value"))
                    }
                }
            }
            _ => Err(self.fail("value")),
        }
    }

    fn hex4(&mut self) -> mlua::Result<u32> {
        let h = self
            .s
            .get(self.at..self.at + 4)
            .and_then(|h| std::str::from_utf8(h).ok())
            .and_then(|h| u32::from_str_radix(h, 16).ok())
            .ok_or_else(|| self.fail("unicode escape"))?;
        self.at += 4;
        Ok(h)
    }

    fn string(&mut self) -> mlua::Result<Vec<u8>> {
        self.at += 1;
        let mut out = Vec::new();
        loop {
            let Some(&b) = self.s.get(self.at) else {
                return Err(self.fail("string end"));
            };
            self.at += 1;
            match b {
                b'"' => return Ok(out),
                b'\\' => {
                    let Some(&e) = self.s.get(self.at) else {
                        return Err(self.fail("escape"));
                    };
                    self.at += 1;
                    match e {
                        b'"' | b'\\' | b'/' => out.push(e),
                        b'b' => out.push(8),
                        b'f' => out.push(12),
                        b'n' => out.push(b'\n'),
                        b'r' => out.push(b'\r'),
                        b't' => out.push(b'\t'),
                        b'u' => {
                            let mut c = self.hex4()?;
                            if (0xd800..0xdc00).contains(&c)
                                && self.s.get(self.at..self.at + 2) == Some(b"\\u")
                            {
                                self.at += 2;
                                let lo = self.hex4()?;
                                c = 0x10000
                                    + ((c - 0xd800) << 10)
                                    + (lo.wrapping_sub(0xdc00) & 0x3ff);
                            }
                            let ch = char::from_u32(c).unwrap_or('\u{fffd}');
                            let mut buf = [0u8; 4];
                            out.extend_from_slice(ch.encode_utf8(&mut buf).as_bytes());
                        }
                        _ => return Err(self.fail("valid escape")),
                    }
                }
                b => out.push(b),
            }
        }
    }
}

/// The `bit` table (LuaBitOp): 32-bit operations whose results are
/// signed 32-bit numbers.
pub fn bit(lua: &Lua) -> mlua::Result<Table> {
    fn tobit(v: f64) -> i32 {
        // LuaBitOp's normalisation: modulo 2^32, as a signed 32-bit value.
        let m = v.rem_euclid(4294967296.0);
        (m as u64 as u32) as i32
    }
    fn args(a: &MultiValue) -> mlua::Result<Vec<i32>> {
        a.iter()
            .map(|v| match v {
                Value::Integer(i) => Ok(tobit(*i as f64)),
                Value::Number(x) => Ok(tobit(*x)),
                Value::String(s) => s
                    .to_str()
                    .ok()
                    .and_then(|s| s.trim().parse::<f64>().ok())
                    .map(tobit)
                    .ok_or_else(|| err("bad argument (number expected)")),
                _ => Err(err("bad argument (number expected)")),
            })
            .collect()
    }
    let t = lua.create_table()?;
    let fold = |f: fn(i32, i32) -> i32| {
        move |_: &Lua, a: MultiValue| -> mlua::Result<f64> {
            let v = args(&a)?;
            let first = *v
                .first()
                .ok_or_else(|| err("bad argument #1 (number expected, got no value)"))?;
            Ok(v[1..].iter().fold(first, |acc, &x| f(acc, x)) as f64)
        }
    };
    t.set("tobit", lua.create_function(fold(|a, _| a))?)?;
    t.set("band", lua.create_function(fold(|a, b| a & b))?)?;
    t.set("bor", lua.create_function(fold(|a, b| a | b))?)?;
    t.set("bxor", lua.create_function(fold(|a, b| a ^ b))?)?;
    t.set("bnot", lua.create_function(fold(|a, _| !a))?)?;
    t.set("bswap", lua.create_function(fold(|a, _| a.swap_bytes()))?)?;
    let shift = |f: fn(i32, u32) -> i32| {
        move |_: &Lua, a: MultiValue| -> mlua::Result<f64> {
            let v = args(&a)?;
            if v.len() < 2 {
                return Err(err("bad argument #2 (number expected, got no value)"));
            }
            Ok(f(v[0], (v[1] & 31) as u32) as f64)
        }
    };
    t.set(
        "lshift",
        lua.create_function(shift(|a, n| ((a as u32) << n) as i32))?,
    )?;
    t.set(
        "rshift",
        lua.create_function(shift(|a, n| ((a as u32) >> n) as i32))?,
    )?;
    t.set("arshift", lua.create_function(shift(|a, n| a >> n))?)?;
    t.set(
        "rol",
        lua.create_function(shift(|a, n| (a as u32).rotate_left(n) as i32))?,
    )?;
    t.set(
        "ror",
        lua.create_function(shift(|a, n| (a as u32).rotate_right(n) as i32))?,
    )?;
    t.set(
        "tohex",
        lua.create_function(|_, a: MultiValue| {
            let v = args(&a)?;
            let x = *v
                .first()
                .ok_or_else(|| err("bad argument #1 (number expected, got no value)"))?;
            let n = v.get(1).copied().unwrap_or(8);
            let upper = n < 0;
            let n = n.unsigned_abs().clamp(1, 8) as usize;
            let s = if upper {
                format!("{:08X}", x as u32)
            } else {
                format!("{:08x}", x as u32)
            };
            Ok(s[8 - n..].to_string())
        })?,
    )?;
    Ok(t)
}
