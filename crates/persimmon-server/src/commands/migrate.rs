//! MIGRATE: moves keys to another server (Persimmon or redis-server) as
//! Redis does, by sending it `RESTORE` with each key's DUMP payload and
//! time to live, then deleting the keys here (unless COPY).
//!
//! MIGRATE host port key|"" db timeout [COPY] [REPLACE] [AUTH pw]
//! [AUTH2 user pw] [KEYS key ...]
//!
//! Invariants:
//! - The payloads and times to live are read in one atomic unit; the keys
//!   are deleted only after the target accepted them (each key the target
//!   refused stays here), so a key is never lost in transit.
//! - The network talk runs under `blocking` with the timeout on every
//!   connect, read and write, so it never stalls the worker's other
//!   clients; a failure replies Redis's `IOERR` and deletes nothing.

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use persimmon::Ttl;
use persimmon_resp::Args;
use persimmon_types::rdb;
use persimmon_types::transfer::read_value;
use persimmon_types::Error;

use crate::session::{blocking, int_arg, is, syntax, Session};

/// The parsed request.
struct Migrate<'a> {
    host: String,
    port: &'a [u8],
    db: i64,
    timeout_ms: u64,
    copy: bool,
    replace: bool,
    auth: Option<Vec<&'a [u8]>>,
    keys: Vec<&'a [u8]>,
}

/// The key positions of a MIGRATE request (the table's key finder): the
/// key argument, or with KEYS (and an empty key argument) the keys after
/// it; AUTH's and AUTH2's arguments are skipped.
pub fn migrate_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    let mut i = 6;
    while i < words.len() {
        let w = words[i];
        if is(w, "AUTH") {
            i += 2;
        } else if is(w, "AUTH2") {
            i += 3;
        } else if is(w, "KEYS") && words.get(3).is_some_and(|k| k.is_empty()) {
            return Some((i + 1..words.len()).collect());
        } else {
            i += 1;
        }
    }
    (words.len() > 3).then(|| vec![3])
}

fn parse<'a>(a: &Args<'a>) -> Result<Migrate<'a>, Error> {
    let mut m = Migrate {
        host: String::from_utf8_lossy(a.get(1)).into_owned(),
        port: a.get(2),
        db: int_arg(a.get(4))?,
        timeout_ms: int_arg(a.get(5))?.max(0) as u64,
        copy: false,
        replace: false,
        auth: None,
        keys: vec![a.get(3)],
    };
    if m.timeout_ms == 0 {
        m.timeout_ms = 1000;
    }
    let mut i = 6;
    while i < a.len() {
        let left = a.len() - i - 1;
        match a.get(i) {
            w if is(w, "COPY") => m.copy = true,
            w if is(w, "REPLACE") => m.replace = true,
            w if is(w, "AUTH") && left >= 1 => {
                m.auth = Some(vec![a.get(i + 1)]);
                i += 1;
            }
            w if is(w, "AUTH2") && left >= 2 => {
                m.auth = Some(vec![a.get(i + 1), a.get(i + 2)]);
                i += 2;
            }
            w if is(w, "KEYS") => {
                if !a.get(3).is_empty() {
                    return Err(Error::new(
                        "ERR When using MIGRATE KEYS option, the key argument must be set to \
                         the empty string",
                    ));
                }
                m.keys = a.from(i + 1).collect();
                break;
            }
            _ => return Err(syntax()),
        }
        i += 1;
    }
    Ok(m)
}

/// One key to send: its name, payload and time to live in ms (0: none).
type Outgoing = (Vec<u8>, Vec<u8>, u64);

pub fn migrate(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let m = parse(&a)?;
    let keys = m.keys.clone();
    let outgoing: Vec<Outgoing> = s.store.atomic(|st| {
        let mut out = Vec::new();
        for &key in &keys {
            let Some(v) = read_value(st, key)? else {
                continue;
            };
            let ttl = match st.ttl(key)? {
                Ttl::Expires { remaining_ms, .. } => remaining_ms.max(1),
                _ => 0,
            };
            out.push((key.to_vec(), rdb::dump(&v), ttl));
        }
        Ok(out)
    })?;
    if outgoing.is_empty() {
        s.out.simple("NOKEY");
        return Ok(());
    }
    let accepted = blocking(|| send(&m, &outgoing))?;
    if !m.copy {
        for key in &accepted {
            s.store.delete(key)?;
        }
        for key in &accepted {
            s.repl
                .rewrite(s.store.db, vec![b"DEL".to_vec(), key.clone()]);
        }
    }
    s.out.ok();
    Ok(())
}

/// Talks to the target: AUTH, SELECT, one RESTORE per key. The keys it
/// accepted, or the first error (Redis's words).
fn send(m: &Migrate<'_>, outgoing: &[Outgoing]) -> Result<Vec<Vec<u8>>, Error> {
    let io = |what: &str| Error::new(format!("IOERR error or timeout {what} target instance"));
    let timeout = Duration::from_millis(m.timeout_ms);
    let port = String::from_utf8_lossy(m.port).into_owned();
    let addr = (
        m.host.as_str(),
        port.parse::<u16>().map_err(|_| io("connecting to"))?,
    )
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(|| io("connecting to"))?;
    let stream = TcpStream::connect_timeout(&addr, timeout).map_err(|_| io("connecting to"))?;
    let _ = stream.set_read_timeout(Some(timeout));
    let _ = stream.set_write_timeout(Some(timeout));
    let mut out = Vec::new();
    let mut expected = 0;
    if let Some(auth) = &m.auth {
        let mut words: Vec<&[u8]> = vec![b"AUTH"];
        words.extend(auth);
        out.extend(encode(&words));
        expected += 1;
    }
    out.extend(encode(&[b"SELECT", m.db.to_string().as_bytes()]));
    for (key, payload, ttl) in outgoing {
        let ttl = ttl.to_string();
        let mut words: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
        if m.replace {
            words.push(b"REPLACE");
        }
        out.extend(encode(&words));
    }
    (&stream).write_all(&out).map_err(|_| io("writing to"))?;
    let mut reader = BufReader::new(&stream);
    let mut accepted = Vec::new();
    let mut first_error = None;
    for n in 0..expected + 1 + outgoing.len() {
        let line = read_line(&mut reader).map_err(|_| io("reading from"))?;
        if let Some(e) = line.strip_prefix('-') {
            first_error
                .get_or_insert_with(|| format!("ERR Target instance replied with error: {e}"));
            if n <= expected {
                break; // AUTH or SELECT refused: nothing was restored.
            }
        } else if n > expected {
            accepted.push(outgoing[n - expected - 1].0.clone());
        }
    }
    match first_error {
        Some(e) if accepted.is_empty() => Err(Error::new(e)),
        _ => Ok(accepted),
    }
}

fn read_line(r: &mut impl BufRead) -> std::io::Result<String> {
    let mut line = String::new();
    if r.read_line(&mut line)? == 0 {
        return Err(std::io::ErrorKind::UnexpectedEof.into());
    }
    Ok(line.trim_end().to_string())
}

fn encode(words: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", words.len()).into_bytes();
    for w in words {
        out.extend_from_slice(format!("${}\r\n", w.len()).as_bytes());
        out.extend_from_slice(w);
        out.extend_from_slice(b"\r\n");
    }
    out
}
