//! MULTI/EXEC throughput of a Redis-protocol server: `CLIENTS` connections,
//! each sending `MULTI`, `INCR counter:<c>`, `SET key:<c>:<i> <16 bytes>`,
//! `EXEC` in one write and reading the four replies, for `SECONDS`.
//! redis-benchmark has no transaction test; this is the same measurement
//! for `persimmon serve` and `redis-server` alike.
//!
//!     cargo run --release -p persimmon-server --example multi_exec_rate -- PORT [CLIENTS] [SECONDS]
//!
//! Prints `transactions/s` and the mean round trip. Every EXEC reply is
//! checked: an array of 2 whose INCR count grows by one each time.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

fn encode(args: &[&[u8]], out: &mut Vec<u8>) {
    out.extend_from_slice(format!("*{}\r\n", args.len()).as_bytes());
    for a in args {
        out.extend_from_slice(format!("${}\r\n", a.len()).as_bytes());
        out.extend_from_slice(a);
        out.extend_from_slice(b"\r\n");
    }
}

fn line(r: &mut BufReader<TcpStream>) -> String {
    let mut s = String::new();
    r.read_line(&mut s).expect("read");
    assert!(s.ends_with("\r\n"), "connection closed");
    s.truncate(s.len() - 2);
    s
}

/// Reads one transaction's replies; returns the INCR result.
fn read_transaction(r: &mut BufReader<TcpStream>) -> i64 {
    assert_eq!(line(r), "+OK", "MULTI");
    assert_eq!(line(r), "+QUEUED");
    assert_eq!(line(r), "+QUEUED");
    assert_eq!(line(r), "*2", "EXEC did not run both commands");
    let n: i64 = line(r)
        .strip_prefix(':')
        .and_then(|n| n.parse().ok())
        .expect("INCR gives an integer");
    assert_eq!(line(r), "+OK", "SET");
    n
}

fn client(port: u16, id: usize, until: Instant) -> (u64, Duration) {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    let mut w = stream.try_clone().expect("clone");
    let mut r = BufReader::new(stream);
    let counter = format!("counter:{id}");
    let mut buf = Vec::new();
    encode(&[b"DEL", counter.as_bytes()], &mut buf);
    w.write_all(&buf).expect("write");
    let mut one = [0u8; 64];
    let _ = r.read(&mut one).expect("DEL reply");
    let (mut done, mut waited) = (0u64, Duration::ZERO);
    while Instant::now() < until {
        buf.clear();
        let key = format!("key:{id}:{done}");
        encode(&[b"MULTI"], &mut buf);
        encode(&[b"INCR", counter.as_bytes()], &mut buf);
        encode(&[b"SET", key.as_bytes(), b"0123456789abcdef"], &mut buf);
        encode(&[b"EXEC"], &mut buf);
        let t = Instant::now();
        w.write_all(&buf).expect("write");
        let n = read_transaction(&mut r);
        waited += t.elapsed();
        done += 1;
        assert_eq!(n as u64, done, "an EXEC was lost or ran twice");
    }
    (done, waited)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let port: u16 = args
        .get(1)
        .and_then(|p| p.parse().ok())
        .expect("usage: PORT [CLIENTS] [SECONDS]");
    let clients: usize = args.get(2).and_then(|c| c.parse().ok()).unwrap_or(50);
    let seconds: u64 = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(5);
    let until = Instant::now() + Duration::from_secs(seconds);
    let start = Instant::now();
    let handles: Vec<_> = (0..clients)
        .map(|id| std::thread::spawn(move || client(port, id, until)))
        .collect();
    let (mut total, mut waited) = (0u64, Duration::ZERO);
    for h in handles {
        let (n, w) = h.join().expect("client thread");
        total += n;
        waited += w;
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "MULTI/EXEC: {:.0} transactions/s ({total} in {elapsed:.2} s, {clients} clients), mean round trip {:.1} us",
        total as f64 / elapsed,
        waited.as_secs_f64() * 1e6 / total.max(1) as f64
    );
}
