//! Helpers shared by the server's integration tests: a server on a fresh
//! pool (a free port, no signal handlers) and a raw RESP client.

#![allow(dead_code)]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{SocketAddr, TcpStream};
use std::path::PathBuf;
use std::time::Duration;

use persimmon_server::{Config, ServerHandle};

/// A server on a pool in its own temporary directory.
pub struct TestServer {
    pub handle: Option<ServerHandle>,
    pub addr: SocketAddr,
    pub pool: PathBuf,
    _dir: tempfile::TempDir,
}

/// Where test pools go: tmpfs when there is one (fast, process-crash
/// durability), else the system temp dir (msync durability: slow).
fn pool_dir() -> tempfile::TempDir {
    let shm = std::path::Path::new("/dev/shm");
    if shm.is_dir() {
        if let Ok(d) = tempfile::Builder::new()
            .prefix("persimmon-server-test")
            .tempdir_in(shm)
        {
            return d;
        }
    }
    tempfile::tempdir().expect("temp dir")
}

impl TestServer {
    pub fn start() -> TestServer {
        TestServer::start_with(|_| {})
    }

    /// Starts a server after `tweak` adjusts its configuration.
    pub fn start_with(tweak: impl FnOnce(&mut Config)) -> TestServer {
        let dir = pool_dir();
        let pool = dir.path().join("test.pool");
        let mut config = Config {
            pool: pool.clone(),
            port: 0,
            pool_size: Some(16 << 20),
            ..Config::default()
        };
        tweak(&mut config);
        let handle = ServerHandle::start(config).expect("server starts");
        TestServer {
            addr: handle.addr,
            handle: Some(handle),
            pool,
            _dir: dir,
        }
    }

    pub fn url(&self) -> String {
        format!("redis://{}/", self.addr)
    }

    pub fn client(&self) -> redis::Connection {
        redis::Client::open(self.url())
            .expect("client")
            .get_connection()
            .expect("connection")
    }

    pub fn raw(&self) -> Raw {
        Raw::connect(self.addr)
    }

    /// Starts the server again on the same pool, with the default
    /// configuration (so the pool's own settings apply), after `stop` or a
    /// SHUTDOWN; returns a client of the new server.
    pub fn restart(&mut self) -> redis::Connection {
        let handle = ServerHandle::start(Config {
            pool: self.pool.clone(),
            port: 0,
            ..Config::default()
        })
        .expect("server restarts");
        self.addr = handle.addr;
        self.handle = Some(handle);
        self.client()
    }

    /// Stops the server and waits for the pool to close.
    pub fn stop(&mut self) {
        if let Some(h) = self.handle.take() {
            h.shutdown().expect("clean shutdown");
        }
    }
}

impl Drop for TestServer {
    fn drop(&mut self) {
        if let Some(h) = self.handle.take() {
            let _ = h.shutdown();
        }
    }
}

/// A RESP reply as the tests look at it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Resp {
    Simple(String),
    Error(String),
    Int(i64),
    Bulk(Vec<u8>),
    Null,
    Array(Vec<Resp>),
    Map(Vec<(Resp, Resp)>),
    /// A RESP3 push (`>`): pub/sub messages and confirmations.
    Push(Vec<Resp>),
    Other(String),
}

impl Resp {
    pub fn bulk(s: &str) -> Resp {
        Resp::Bulk(s.as_bytes().to_vec())
    }
}

/// A client speaking raw bytes, for malformed input and limits.
pub struct Raw {
    pub reader: BufReader<TcpStream>,
    pub writer: TcpStream,
}

impl Raw {
    pub fn connect(addr: SocketAddr) -> Raw {
        let stream = TcpStream::connect(addr).expect("connect");
        stream
            .set_read_timeout(Some(Duration::from_secs(20)))
            .unwrap();
        Raw {
            reader: BufReader::new(stream.try_clone().unwrap()),
            writer: stream,
        }
    }

    pub fn send(&mut self, bytes: &[u8]) -> std::io::Result<()> {
        self.writer.write_all(bytes)
    }

    /// Sends one request as a RESP array of bulk strings.
    pub fn command(&mut self, args: &[&[u8]]) -> Resp {
        self.send(&encode(args)).expect("send");
        self.read().expect("reply")
    }

    /// Reads one reply; `None` when the server closed the connection.
    pub fn read(&mut self) -> Option<Resp> {
        let mut line = Vec::new();
        match self.reader.read_until(b'\n', &mut line) {
            Ok(0) | Err(_) => return None,
            Ok(_) => {}
        }
        assert!(line.ends_with(b"\r\n"), "reply line without CRLF: {line:?}");
        let text = String::from_utf8_lossy(&line[1..line.len() - 2]).into_owned();
        Some(match line[0] {
            b'+' => Resp::Simple(text),
            b'-' => Resp::Error(text),
            b':' => Resp::Int(text.parse().unwrap()),
            b'_' => Resp::Null,
            b'$' | b'=' => {
                let len: i64 = text.parse().unwrap();
                if len < 0 {
                    return Some(Resp::Null);
                }
                let mut data = vec![0; len as usize + 2];
                self.reader.read_exact(&mut data).ok()?;
                data.truncate(len as usize);
                if line[0] == b'=' {
                    data.drain(..4);
                }
                Resp::Bulk(data)
            }
            b'*' | b'~' | b'>' => {
                let n: i64 = text.parse().unwrap();
                if n < 0 {
                    return Some(Resp::Null);
                }
                let mut items = Vec::new();
                for _ in 0..n {
                    items.push(self.read()?);
                }
                if line[0] == b'>' {
                    Resp::Push(items)
                } else {
                    Resp::Array(items)
                }
            }
            b'%' => {
                let n: usize = text.parse().unwrap();
                let mut items = Vec::new();
                for _ in 0..n {
                    let k = self.read()?;
                    let v = self.read()?;
                    items.push((k, v));
                }
                Resp::Map(items)
            }
            other => Resp::Other(format!("{}{}", other as char, text)),
        })
    }

    /// Whether the server has closed the connection (reads to EOF, within
    /// the read timeout, discarding anything else it sends).
    pub fn closed(&mut self) -> bool {
        let mut sink = [0u8; 64 << 10];
        loop {
            match self.reader.read(&mut sink) {
                Ok(0) => return true,
                Ok(_) => continue,
                Err(e)
                    if e.kind() == std::io::ErrorKind::ConnectionReset
                        || e.kind() == std::io::ErrorKind::BrokenPipe =>
                {
                    return true
                }
                Err(_) => return false,
            }
        }
    }
}

/// A request as a RESP array of bulk strings.
pub fn encode(args: &[&[u8]]) -> Vec<u8> {
    let mut out = format!("*{}\r\n", args.len()).into_bytes();
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
    out
}

/// One request (the command name first), as the bytes sent.
pub fn req(args: &[&str]) -> Vec<u8> {
    let args: Vec<&[u8]> = args.iter().map(|a| a.as_bytes()).collect();
    encode(&args)
}

/// Sends every request in one write (so it arrives in one read), then
/// reads every reply.
pub fn pipelined(raw: &mut Raw, script: &[Vec<u8>]) -> Vec<Resp> {
    let all: Vec<u8> = script.concat();
    raw.send(&all).unwrap();
    (0..script.len())
        .map(|i| {
            raw.read()
                .unwrap_or_else(|| panic!("reply {i}: the server closed the connection"))
        })
        .collect()
}

/// Sends each request after the previous reply.
pub fn one_by_one(raw: &mut Raw, script: &[Vec<u8>]) -> Vec<Resp> {
    script
        .iter()
        .map(|r| {
            raw.send(r).unwrap();
            raw.read().expect("reply")
        })
        .collect()
}

/// Field `name` of `INFO section`, a number.
pub fn info_field(raw: &mut Raw, section: &str, name: &str) -> u64 {
    let Resp::Bulk(text) = raw.command(&[b"INFO", section.as_bytes()]) else {
        panic!("INFO is a bulk string");
    };
    let text = String::from_utf8(text).unwrap();
    text.lines()
        .find_map(|l| l.strip_prefix(&format!("{name}:")))
        .unwrap_or_else(|| panic!("{name} in INFO {section}"))
        .trim()
        .parse()
        .unwrap()
}

/// The fields of `INFO section` on the lines whose name starts with
/// `prefix`, sorted, without the timings (`usec...`, which differ between
/// runs and servers).
pub fn info_counts(raw: &mut Raw, section: &str, prefix: &str) -> Vec<String> {
    let Resp::Bulk(text) = raw.command(&[b"INFO", section.as_bytes()]) else {
        panic!("INFO is a bulk string");
    };
    let text = String::from_utf8(text).unwrap();
    let mut lines: Vec<String> = text
        .lines()
        .filter(|l| l.starts_with(prefix))
        .map(|l| {
            l.split([',', ':'])
                .filter(|f| !f.starts_with("usec"))
                .collect::<Vec<_>>()
                .join(",")
        })
        .collect();
    lines.sort();
    lines
}

/// Sends `args` (the command name first) through the `redis` crate.
pub fn cmd(con: &mut redis::Connection, args: &[&str]) -> redis::RedisResult<redis::Value> {
    let mut c = redis::cmd(args[0]);
    for a in &args[1..] {
        c.arg(*a);
    }
    c.query(con)
}

/// The integer reply of a command that must give one.
pub fn int(con: &mut redis::Connection, args: &[&str]) -> i64 {
    match cmd(con, args).unwrap() {
        redis::Value::Int(n) => n,
        v => panic!("{args:?} gave {v:?}"),
    }
}

/// The error reply of a command that must fail, as Redis words it
/// (`CODE message`).
pub fn err(con: &mut redis::Connection, args: &[&str]) -> String {
    match cmd(con, args) {
        Err(e) => format!("{} {}", e.code().unwrap_or("?"), e.detail().unwrap_or("")),
        Ok(v) => panic!("{args:?} succeeded with {v:?}"),
    }
}
