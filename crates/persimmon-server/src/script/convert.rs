//! The conversions between Redis replies and Lua values, as Redis 7
//! documents them.
//!
//! Redis → Lua (a `redis.call` reply, read back from the RESP the command
//! wrote in the script's protocol, `redis.setresp`): integer → number,
//! bulk → string, nil bulk and nil array → `false`, array → table,
//! status → `{ok=...}`, error → `{err=...}`; in RESP3 also null → `nil`,
//! map → `{map={...}}`, set → `{set={k=true}}`, double → `{double=n}`,
//! boolean → boolean, big number → `{big_number=s}`, verbatim string →
//! `{verbatim_string={format=f, string=s}}`.
//!
//! Lua → Redis (a script's return value, written in the caller's
//! protocol): number → integer (truncated), string → bulk, `true` → 1,
//! `false` and `nil` → nil, a table with `err` → error, with `ok` →
//! status, with `double`/`map`/`set`/`big_number`/`verbatim_string` → those
//! types, any other table → the array of its elements up to the first nil.
//!
//! Invariants:
//! - Tables are read with raw accesses only: a metatable never runs while
//!   a reply is built (a script cannot run code, or commands, from there).
//! - Nesting is bounded ([`MAX_DEPTH`]): a table deeper than that (one
//!   that contains itself) ends in `ERR reached lua stack limit` inside the
//!   arrays already opened, as Redis replies, and the reply stays framed.
//! - A malformed reply (it cannot be: the server wrote it) becomes an error
//!   value rather than a panic.

use mlua::{Lua, Table, Value};
use persimmon_resp::Reply;

/// How deep a returned table may nest before the reply ends in an error.
pub const MAX_DEPTH: usize = 1000;

/// Parses one RESP reply from `buf` into a Lua value; `Err` for bytes
/// that are not a whole reply.
pub fn reply_to_lua(lua: &Lua, buf: &[u8]) -> mlua::Result<Value> {
    let mut at = 0;
    let v = parse(lua, buf, &mut at, 0)?;
    Ok(v)
}

fn bad() -> mlua::Error {
    mlua::Error::RuntimeError("ERR malformed reply from a command".into())
}

fn line<'a>(buf: &'a [u8], at: &mut usize) -> mlua::Result<&'a [u8]> {
    let start = *at;
    let rel = buf[start..]
        .windows(2)
        .position(|w| w == b"\r\n")
        .ok_or_else(bad)?;
    *at = start + rel + 2;
    Ok(&buf[start..start + rel])
}

fn int_of(text: &[u8]) -> mlua::Result<i64> {
    persimmon_resp::parse_i64(text).ok_or_else(bad)
}

fn tagged(lua: &Lua, tag: &str, v: Value) -> mlua::Result<Value> {
    let t = lua.create_table()?;
    t.raw_set(tag, v)?;
    Ok(Value::Table(t))
}

fn parse(lua: &Lua, buf: &[u8], at: &mut usize, depth: usize) -> mlua::Result<Value> {
    if *at >= buf.len() || depth > MAX_DEPTH {
        return Err(bad());
    }
    let marker = buf[*at];
    *at += 1;
    let text = line(buf, at)?;
    match marker {
        b'+' => tagged(lua, "ok", Value::String(lua.create_string(text)?)),
        b'-' => tagged(lua, "err", Value::String(lua.create_string(text)?)),
        b':' => Ok(Value::Number(int_of(text)? as f64)),
        b'$' | b'=' => {
            let n = int_of(text)?;
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            let n = n as usize;
            let body = buf.get(*at..*at + n).ok_or_else(bad)?;
            *at += n + 2;
            if marker == b'=' {
                let (format, rest) = body.split_at(body.len().min(4));
                let v = lua.create_table()?;
                v.raw_set("format", lua.create_string(&format[..format.len().min(3)])?)?;
                v.raw_set("string", lua.create_string(rest)?)?;
                return tagged(lua, "verbatim_string", Value::Table(v));
            }
            Ok(Value::String(lua.create_string(body)?))
        }
        b'*' | b'~' | b'>' => {
            let n = int_of(text)?;
            if n < 0 {
                return Ok(Value::Boolean(false));
            }
            let t = lua.create_table()?;
            for i in 0..n as usize {
                let v = parse(lua, buf, at, depth + 1)?;
                if marker == b'~' {
                    t.raw_set(v, true)?;
                } else {
                    t.raw_set(i + 1, v)?;
                }
            }
            match marker {
                b'~' => tagged(lua, "set", Value::Table(t)),
                _ => Ok(Value::Table(t)),
            }
        }
        b'%' => {
            let n = int_of(text)?;
            let t = lua.create_table()?;
            for _ in 0..n.max(0) {
                let k = parse(lua, buf, at, depth + 1)?;
                let v = parse(lua, buf, at, depth + 1)?;
                t.raw_set(k, v)?;
            }
            tagged(lua, "map", Value::Table(t))
        }
        b'_' => Ok(Value::Nil),
        b'#' => Ok(Value::Boolean(text == b"t")),
        b',' => {
            let s = std::str::from_utf8(text).map_err(|_| bad())?;
            let x: f64 = match s {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                "nan" => f64::NAN,
                _ => s.parse().map_err(|_| bad())?,
            };
            tagged(lua, "double", Value::Number(x))
        }
        b'(' => tagged(lua, "big_number", Value::String(lua.create_string(text)?)),
        _ => Err(bad()),
    }
}

/// A Lua number as Redis replies it: truncated toward zero.
pub fn number_to_int(x: f64) -> i64 {
    if x.is_nan() {
        return i64::MIN;
    }
    x as i64
}

/// Writes Lua value `v` (a script's return value) as a reply in `out`'s
/// protocol.
pub fn lua_to_reply(v: &Value, out: &mut Reply) {
    write(v, out, 0);
}

fn text_of(v: &Value) -> Option<Vec<u8>> {
    match v {
        Value::String(s) => Some(s.as_bytes().to_vec()),
        Value::Number(x) => Some(super::numbers::number_text(*x).into_bytes()),
        Value::Integer(i) => Some(i.to_string().into_bytes()),
        _ => None,
    }
}

fn write(v: &Value, out: &mut Reply, depth: usize) {
    match v {
        Value::Nil => out.null(),
        Value::Boolean(true) => {
            if out.resp3 {
                out.buf.extend_from_slice(b"#t\r\n");
            } else {
                out.int(1)
            }
        }
        Value::Boolean(false) => {
            if out.resp3 {
                out.buf.extend_from_slice(b"#f\r\n");
            } else {
                out.null()
            }
        }
        Value::Integer(i) => out.int(*i),
        Value::Number(x) => out.int(number_to_int(*x)),
        Value::String(s) => out.bulk(&s.as_bytes()),
        Value::Table(t) => write_table(t, out, depth),
        _ => out.null(),
    }
}

fn raw(t: &Table, key: &str) -> Value {
    t.raw_get(key).unwrap_or(Value::Nil)
}

fn write_table(t: &Table, out: &mut Reply, depth: usize) {
    if depth >= MAX_DEPTH {
        out.error("ERR reached lua stack limit");
        return;
    }
    if let Value::String(e) = raw(t, "err") {
        let text = String::from_utf8_lossy(&e.as_bytes()).into_owned();
        let text = text.trim_start_matches('-');
        out.error(if text.is_empty() { "ERR" } else { text });
        return;
    }
    if let Value::String(s) = raw(t, "ok") {
        let text = String::from_utf8_lossy(&s.as_bytes()).into_owned();
        out.simple(&text);
        return;
    }
    match raw(t, "double") {
        Value::Number(x) => {
            out.double(x, &super::numbers::double_text(x));
            return;
        }
        Value::Integer(i) => {
            out.double(i as f64, &i.to_string());
            return;
        }
        _ => {}
    }
    if let Value::String(s) = raw(t, "big_number") {
        let b = s.as_bytes().to_vec();
        if out.resp3 {
            out.buf.push(b'(');
            out.buf.extend_from_slice(&b);
            out.buf.extend_from_slice(b"\r\n");
        } else {
            out.bulk(&b);
        }
        return;
    }
    if let Value::Table(v) = raw(t, "verbatim_string") {
        if let (Some(f), Some(s)) = (text_of(&raw(&v, "format")), text_of(&raw(&v, "string"))) {
            if out.resp3 {
                let mut body = f;
                body.push(b':');
                body.extend_from_slice(&s);
                out.buf
                    .extend_from_slice(format!("={}\r\n", body.len()).as_bytes());
                out.buf.extend_from_slice(&body);
                out.buf.extend_from_slice(b"\r\n");
            } else {
                out.bulk(&s);
            }
            return;
        }
    }
    // Maps and sets are walked twice (count, then write), one pair held at
    // a time.
    let count = |m: &Table| {
        let mut n = 0usize;
        let _ = m.for_each(|_: Value, _: Value| {
            n += 1;
            Ok(())
        });
        n
    };
    if let Value::Table(m) = raw(t, "map") {
        out.map(count(&m));
        let _ = m.for_each(|k: Value, v: Value| {
            write(&k, out, depth + 1);
            write(&v, out, depth + 1);
            Ok(())
        });
        return;
    }
    if let Value::Table(m) = raw(t, "set") {
        out.set(count(&m));
        let _ = m.for_each(|k: Value, _: Value| {
            write(&k, out, depth + 1);
            Ok(())
        });
        return;
    }
    // The array's length first (up to the first nil), then its elements.
    let mut len = 0usize;
    while !t.raw_get::<Value>(len + 1).unwrap_or(Value::Nil).is_nil() {
        len += 1;
    }
    out.array(len);
    for i in 1..=len {
        let v: Value = t.raw_get(i).unwrap_or(Value::Nil);
        write(&v, out, depth + 1);
    }
}
