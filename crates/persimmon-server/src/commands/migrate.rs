//! MIGRATE host port key|"" destination-db timeout [COPY] [REPLACE]
//! [AUTH password] [AUTH2 username password] [KEYS key ...]: moves keys to
//! another server (Redis or Persimmon) as `DUMP` payloads sent in
//! `RESTORE` commands, then deletes them here (unless COPY).
//!
//! Invariants:
//! - The options are checked before anything happens; when none of the
//!   keys exists the reply is `NOKEY` and no connection is made.
//! - A key is deleted here only after the target acknowledged its
//!   `RESTORE`; the deletes propagate to replicas as one `DEL`.
//! - The connection is a plain blocking socket with the timeout on connect,
//!   read and write, used under `blocking` (so the worker's other clients
//!   run meanwhile), and closed after the command (Redis caches it; here
//!   each MIGRATE connects anew).

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpStream, ToSocketAddrs};
use std::time::Duration;

use persimmon::Ttl;
use persimmon_resp::Args;
use persimmon_types::rdb;
use persimmon_types::transfer::read_value;
use persimmon_types::Error;

use crate::session::{blocking, int_arg, is, syntax, Session};

/// What MIGRATE's arguments ask for.
struct Plan<'a> {
    host: &'a [u8],
    port: &'a [u8],
    db: i64,
    timeout: Duration,
    copy: bool,
    replace: bool,
    /// `AUTH` words to send first (`AUTH [user] password`), if any.
    auth: Vec<&'a [u8]>,
    keys: Vec<&'a [u8]>,
}

/// The key positions of a MIGRATE request (the table's key finder): the
/// key argument, or the words after `KEYS`.
pub fn migrate_keys(words: &[&[u8]]) -> Option<Vec<usize>> {
    let start = (6..words.len()).find(|&i| is(words[i], "KEYS"));
    match start {
        Some(i) if words.get(3).is_some_and(|k| k.is_empty()) => {
            Some((i + 1..words.len()).collect())
        }
        _ => Some(vec![3]),
    }
}

fn plan<'a>(a: &'a Args<'a>) -> Result<Plan<'a>, Error> {
    let mut p = Plan {
        host: a.get(1),
        port: a.get(2),
        db: int_arg(a.get(4))?,
        timeout: Duration::from_millis(1000),
        copy: false,
        replace: false,
        auth: Vec::new(),
        keys: vec![a.get(3)],
    };
    let ms = int_arg(a.get(5))?;
    if ms > 0 {
        p.timeout = Duration::from_millis(ms as u64);
    }
    let mut i = 6;
    while i < a.len() {
        let word = a.get(i);
        let left = a.len() - i - 1;
        if is(word, "COPY") {
            p.copy = true;
        } else if is(word, "REPLACE") {
            p.replace = true;
        } else if is(word, "AUTH") && left >= 1 {
            p.auth = vec![a.get(i + 1)];
            i += 1;
        } else if is(word, "AUTH2") && left >= 2 {
            p.auth = vec![a.get(i + 1), a.get(i + 2)];
            i += 2;
        } else if is(word, "KEYS") {
            if !a.get(3).is_empty() {
                return Err(Error::new(
                    "ERR When using MIGRATE KEYS option, the key argument must be set to the empty string",
                ));
            }
            p.keys = a.from(i + 1).collect();
            break;
        } else {
            return Err(syntax());
        }
        i += 1;
    }
    Ok(p)
}

/// One key to send: its name, remaining time to live in ms (0: none),
/// payload.
type Outgoing = (Vec<u8>, u64, Vec<u8>);

/// MIGRATE: `OK`, `NOKEY` when no key exists, or the error that stopped it.
pub fn migrate(s: &mut Session, a: Args<'_>) -> Result<(), Error> {
    let p = plan(&a)?;
    let mut outgoing: Vec<Outgoing> = Vec::new();
    for key in &p.keys {
        let value = s.store.atomic(|st| read_value(st, key))?;
        let Some(value) = value else { continue };
        let ttl = match s.store.ttl(key)? {
            Ttl::Expires { remaining_ms, .. } => remaining_ms.max(1),
            _ => 0,
        };
        outgoing.push((key.to_vec(), ttl, rdb::dump(&value)));
    }
    if outgoing.is_empty() {
        s.out.simple("NOKEY");
        return Ok(());
    }
    blocking(|| send(&p, &outgoing))?;
    if !p.copy {
        let mut words = vec![b"DEL".to_vec()];
        for (key, ..) in &outgoing {
            s.store.delete(key)?;
            words.push(key.clone());
        }
        s.repl.rewrite(s.store.db, words);
    } else {
        s.repl.nothing();
    }
    s.out.ok();
    Ok(())
}

/// Sends the keys (AUTH, SELECT, one RESTORE each) and checks every reply.
fn send(p: &Plan<'_>, outgoing: &[Outgoing]) -> Result<(), Error> {
    let ioerr = || Error::new("IOERR error or timeout connecting to the client");
    let host = String::from_utf8_lossy(p.host);
    let port: u16 = std::str::from_utf8(p.port)
        .ok()
        .and_then(|t| t.parse().ok())
        .ok_or_else(ioerr)?;
    let addr = (host.as_ref(), port)
        .to_socket_addrs()
        .ok()
        .and_then(|mut a| a.next())
        .ok_or_else(ioerr)?;
    let stream = TcpStream::connect_timeout(&addr, p.timeout).map_err(|_| ioerr())?;
    let _ = stream.set_read_timeout(Some(p.timeout));
    let _ = stream.set_write_timeout(Some(p.timeout));
    let mut commands: Vec<Vec<&[u8]>> = Vec::new();
    if !p.auth.is_empty() {
        let mut auth: Vec<&[u8]> = vec![b"AUTH"];
        auth.extend(&p.auth);
        commands.push(auth);
    }
    let db = p.db.to_string();
    commands.push(vec![b"SELECT", db.as_bytes()]);
    let ttls: Vec<String> = outgoing.iter().map(|o| o.1.to_string()).collect();
    for ((key, _, payload), ttl) in outgoing.iter().zip(&ttls) {
        let mut restore: Vec<&[u8]> = vec![b"RESTORE", key, ttl.as_bytes(), payload];
        if p.replace {
            restore.push(b"REPLACE");
        }
        commands.push(restore);
    }
    let mut request = Vec::new();
    for c in &commands {
        request.extend_from_slice(&persimmon_resp::encode(c));
    }
    let io = |_| Error::new("IOERR error or timeout writing to target instance");
    (&stream).write_all(&request).map_err(io)?;
    let mut reader = BufReader::new(&stream);
    for _ in &commands {
        let mut line = String::new();
        let read = reader.read_line(&mut line);
        if read.map_or(true, |n| n == 0) {
            return Err(Error::new(
                "IOERR error or timeout reading to target instance",
            ));
        }
        if let Some(text) = line.strip_prefix('-') {
            return Err(Error::new(format!(
                "ERR Target instance replied with error: {}",
                text.trim_end()
            )));
        }
    }
    Ok(())
}
