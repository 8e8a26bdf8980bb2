//! The libraries Redis gives scripts beyond Lua's own, written here in
//! Rust (no maintained crate provides them for mlua): `cjson` (encode,
//! decode, `null`, the depth and invalid-number settings), `cmsgpack`
//! (pack, unpack, unpack_one, unpack_limit) and `bit` (LuaBitOp's
//! functions on 32-bit integers). `struct` is not provided.
//!
//! Invariants:
//! - Encoding and decoding are bounded in depth (`encode_max_depth`,
//!   `decode_max_depth`, 1000 by default, as lua-cjson; cmsgpack packs
//!   tables deeper than 16 as nil and refuses input nested deeper than
//!   1000): deeper input is a Lua error, never a native stack overflow.
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
    out.extend_from_slice(super::numbers::number_text(x).as_bytes());
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
            // An array: keys 1..n, all of them (read in two passes, one pair
            // held at a time).
            let (count, max) = table_shape(t)?;
            if let Some(max) = max.filter(|&m| count > 0 && m <= count * 2 + 10) {
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
            if max.is_some() && count > 0 {
                return Err(err("Cannot serialise table: excessively sparse array"));
            }
            out.push(b'{');
            let mut n = 0;
            t.for_each(|k: Value, v: Value| {
                if n > 0 {
                    out.push(b',');
                }
                n += 1;
                match &k {
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
                encode(&v, out, depth + 1, cfg)
            })?;
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

    /// Refuses an object or array nested deeper than the decoder allows.
    fn check_depth(&self, depth: usize) -> mlua::Result<()> {
        if depth > self.max {
            return Err(err(format!(
                "Found too many nested data structures ({depth}) at character {}",
                self.at + 1
            )));
        }
        Ok(())
    }

    fn value(&mut self, lua: &Lua, depth: usize) -> mlua::Result<Value> {
        self.ws();
        match self.s.get(self.at) {
            Some(b'{') => {
                self.check_depth(depth)?;
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
                self.check_depth(depth)?;
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

/// Tables nested deeper than this are packed as nil (lua-cmsgpack's
/// limit, which is what makes a table that contains itself packable).
const MSGPACK_MAX_NESTING: usize = 16;

/// The `cmsgpack` table: `pack(...)`, `unpack(s)`, `unpack_one(s, offset)`
/// and `unpack_limit(s, limit, offset)`, as lua-cmsgpack encodes and
/// decodes.
pub fn cmsgpack(lua: &Lua) -> mlua::Result<Table> {
    let t = lua.create_table()?;
    t.set(
        "pack",
        lua.create_function(|_, a: MultiValue| {
            if a.is_empty() {
                return Err(err("MessagePack pack needs input."));
            }
            let mut out = Vec::new();
            for v in a.iter() {
                mp_encode(v, &mut out, 0)?;
            }
            Ok(mlua::BString::from(out))
        })?,
    )?;
    t.set(
        "unpack",
        lua.create_function(|lua, s: mlua::String| {
            let bytes = s.as_bytes().to_vec();
            let mut at = 0;
            let mut values = Vec::new();
            while at < bytes.len() {
                values.push(mp_decode(lua, &bytes, &mut at, 0)?);
            }
            Ok(MultiValue::from_iter(values))
        })?,
    )?;
    let limited = |lua: &Lua, s: mlua::String, limit: usize, offset: usize| {
        let bytes = s.as_bytes().to_vec();
        let mut at = offset;
        let mut values = Vec::new();
        while at < bytes.len() && (limit == 0 || values.len() < limit) {
            values.push(mp_decode(lua, &bytes, &mut at, 0)?);
        }
        let next = if at >= bytes.len() { -1 } else { at as i64 };
        let mut out = vec![Value::Number(next as f64)];
        out.extend(values);
        Ok(MultiValue::from_iter(out))
    };
    t.set(
        "unpack_one",
        lua.create_function(move |lua, (s, offset): (mlua::String, Option<usize>)| {
            limited(lua, s, 1, offset.unwrap_or(0))
        })?,
    )?;
    t.set(
        "unpack_limit",
        lua.create_function(
            move |lua, (s, limit, offset): (mlua::String, Option<usize>, Option<usize>)| {
                limited(lua, s, limit.unwrap_or(0), offset.unwrap_or(0))
            },
        )?,
    )?;
    t.set("_NAME", "cmsgpack")?;
    t.set("_VERSION", "lua-cmsgpack 0.4.0")?;
    Ok(t)
}

fn mp_int(n: i64, out: &mut Vec<u8>) {
    if n >= 0 {
        let u = n as u64;
        if u < 128 {
            out.push(u as u8);
        } else if u <= 0xff {
            out.extend_from_slice(&[0xcc, u as u8]);
        } else if u <= 0xffff {
            out.push(0xcd);
            out.extend_from_slice(&(u as u16).to_be_bytes());
        } else if u <= 0xffff_ffff {
            out.push(0xce);
            out.extend_from_slice(&(u as u32).to_be_bytes());
        } else {
            out.push(0xcf);
            out.extend_from_slice(&u.to_be_bytes());
        }
    } else if n >= -32 {
        out.push(n as i8 as u8);
    } else if n >= -128 {
        out.extend_from_slice(&[0xd0, n as i8 as u8]);
    } else if n >= -32768 {
        out.push(0xd1);
        out.extend_from_slice(&(n as i16).to_be_bytes());
    } else if n >= -2147483648 {
        out.push(0xd2);
        out.extend_from_slice(&(n as i32).to_be_bytes());
    } else {
        out.push(0xd3);
        out.extend_from_slice(&n.to_be_bytes());
    }
}

fn mp_len(len: usize, small: (u8, usize), codes: [u8; 3], out: &mut Vec<u8>) {
    if len < small.1 {
        out.push(small.0 | len as u8);
    } else if codes[0] != 0 && len <= 0xff {
        out.extend_from_slice(&[codes[0], len as u8]);
    } else if len <= 0xffff {
        out.push(codes[1]);
        out.extend_from_slice(&(len as u16).to_be_bytes());
    } else {
        out.push(codes[2]);
        out.extend_from_slice(&(len as u32).to_be_bytes());
    }
}

fn mp_encode(v: &Value, out: &mut Vec<u8>, level: usize) -> mlua::Result<()> {
    match v {
        Value::Nil => out.push(0xc0),
        Value::Boolean(b) => out.push(if *b { 0xc3 } else { 0xc2 }),
        Value::Integer(i) => mp_int(*i, out),
        Value::Number(x) => {
            if x.fract() == 0.0 && *x >= -9.2e18 && *x <= 9.2e18 {
                mp_int(*x as i64, out);
            } else if (*x as f32) as f64 == *x || x.is_nan() {
                out.push(0xca);
                out.extend_from_slice(&(*x as f32).to_be_bytes());
            } else {
                out.push(0xcb);
                out.extend_from_slice(&x.to_be_bytes());
            }
        }
        Value::String(s) => {
            let b = s.as_bytes();
            mp_len(b.len(), (0xa0, 32), [0xd9, 0xda, 0xdb], out);
            out.extend_from_slice(&b);
        }
        Value::Table(_) if level >= MSGPACK_MAX_NESTING => out.push(0xc0),
        Value::Table(t) => {
            // Two passes, holding no more than one pair at a time (a big
            // table's keys would not fit mlua's reference stack at once).
            let (count, max) = table_shape(t)?;
            if max == Some(count) {
                mp_len(count, (0x90, 16), [0, 0xdc, 0xdd], out);
                for i in 1..=count {
                    let v: Value = t.raw_get(i)?;
                    mp_encode(&v, out, level + 1)?;
                }
            } else {
                mp_len(count, (0x80, 16), [0, 0xde, 0xdf], out);
                t.for_each(|k: Value, v: Value| {
                    mp_encode(&k, out, level + 1)?;
                    mp_encode(&v, out, level + 1)
                })?;
            }
        }
        _ => out.push(0xc0),
    }
    Ok(())
}

fn mp_take<'a>(b: &'a [u8], at: &mut usize, n: usize) -> mlua::Result<&'a [u8]> {
    let s = b
        .get(*at..at.saturating_add(n))
        .ok_or_else(|| err("Missing bytes in input."))?;
    *at += n;
    Ok(s)
}

fn mp_uint(b: &[u8], at: &mut usize, n: usize) -> mlua::Result<u64> {
    Ok(mp_take(b, at, n)?
        .iter()
        .fold(0u64, |acc, &x| (acc << 8) | x as u64))
}

fn mp_decode(lua: &Lua, b: &[u8], at: &mut usize, depth: usize) -> mlua::Result<Value> {
    if depth > 1000 {
        return Err(err("Bad data format in input."));
    }
    let c = mp_take(b, at, 1)?[0];
    let num = |x: f64| Ok(Value::Number(x));
    match c {
        0x00..=0x7f => num(c as f64),
        0xe0..=0xff => num(c as i8 as f64),
        0x80..=0x8f => mp_map(lua, b, at, (c & 0x0f) as usize, depth),
        0x90..=0x9f => mp_array(lua, b, at, (c & 0x0f) as usize, depth),
        0xa0..=0xbf => mp_str(lua, b, at, (c & 0x1f) as usize),
        0xc0 => Ok(Value::Nil),
        0xc2 => Ok(Value::Boolean(false)),
        0xc3 => Ok(Value::Boolean(true)),
        0xca => {
            let x = f32::from_be_bytes(mp_take(b, at, 4)?.try_into().expect("4 bytes"));
            num(x as f64)
        }
        0xcb => num(f64::from_be_bytes(
            mp_take(b, at, 8)?.try_into().expect("8 bytes"),
        )),
        0xcc => num(mp_uint(b, at, 1)? as f64),
        0xcd => num(mp_uint(b, at, 2)? as f64),
        0xce => num(mp_uint(b, at, 4)? as f64),
        0xcf => num(mp_uint(b, at, 8)? as f64),
        0xd0 => num(mp_uint(b, at, 1)? as u8 as i8 as f64),
        0xd1 => num(mp_uint(b, at, 2)? as u16 as i16 as f64),
        0xd2 => num(mp_uint(b, at, 4)? as u32 as i32 as f64),
        0xd3 => num(mp_uint(b, at, 8)? as i64 as f64),
        0xc4 | 0xd9 => {
            let n = mp_uint(b, at, 1)? as usize;
            mp_str(lua, b, at, n)
        }
        0xc5 | 0xda => {
            let n = mp_uint(b, at, 2)? as usize;
            mp_str(lua, b, at, n)
        }
        0xc6 | 0xdb => {
            let n = mp_uint(b, at, 4)? as usize;
            mp_str(lua, b, at, n)
        }
        0xdc => {
            let n = mp_uint(b, at, 2)? as usize;
            mp_array(lua, b, at, n, depth)
        }
        0xdd => {
            let n = mp_uint(b, at, 4)? as usize;
            mp_array(lua, b, at, n, depth)
        }
        0xde => {
            let n = mp_uint(b, at, 2)? as usize;
            mp_map(lua, b, at, n, depth)
        }
        0xdf => {
            let n = mp_uint(b, at, 4)? as usize;
            mp_map(lua, b, at, n, depth)
        }
        _ => Err(err("Bad data format in input.")),
    }
}

fn mp_str(lua: &Lua, b: &[u8], at: &mut usize, n: usize) -> mlua::Result<Value> {
    Ok(Value::String(lua.create_string(mp_take(b, at, n)?)?))
}

fn mp_array(lua: &Lua, b: &[u8], at: &mut usize, n: usize, depth: usize) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for i in 1..=n {
        let v = mp_decode(lua, b, at, depth + 1)?;
        t.raw_set(i, v)?;
    }
    Ok(Value::Table(t))
}

fn mp_map(lua: &Lua, b: &[u8], at: &mut usize, n: usize, depth: usize) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    for _ in 0..n {
        let k = mp_decode(lua, b, at, depth + 1)?;
        let v = mp_decode(lua, b, at, depth + 1)?;
        if !k.is_nil() {
            t.raw_set(k, v)?;
        }
    }
    Ok(Value::Table(t))
}

/// A table's number of pairs, and its largest key when every key is a
/// positive integer (`None` otherwise).
fn table_shape(t: &Table) -> mlua::Result<(usize, Option<usize>)> {
    let mut count = 0usize;
    let mut max = Some(0usize);
    t.for_each(|k: Value, _: Value| {
        count += 1;
        let idx = match k {
            Value::Integer(i) if i >= 1 => Some(i as usize),
            Value::Number(x) if x >= 1.0 && x.fract() == 0.0 => Some(x as usize),
            _ => None,
        };
        max = match (max, idx) {
            (Some(m), Some(i)) => Some(m.max(i)),
            _ => None,
        };
        Ok(())
    })?;
    Ok((count, max))
}
