//! Collection command rates against collection size, for any
//! Redis-protocol server: for each size (default 10, 10 000, 1 000 000)
//! one collection per type is filled to that size, then `CLIENTS`
//! connections each send pipelines of `DEPTH` commands for `SECONDS` per
//! workload, keeping the size constant:
//!
//! | workload | commands |
//! |---|---|
//! | hset | `HSET h f<random below size> v` (overwrites) |
//! | lpush-rpop | `LPUSH l x` then `RPOP l`, alternating |
//! | sadd | `SADD s m<random below size>` (already members) |
//! | zadd | `ZADD z <random score> m<random below size>` (moves a member) |
//! | zrank | `ZRANK z m<random below size>` |
//!
//!     cargo run --release -p persimmon-server --example collection_rates -- PORT [SIZES] [CLIENTS] [DEPTH] [SECONDS]
//!
//! e.g. `... -- 6379 10,10000,1000000 8 16 3`. Prints one line per
//! (size, workload): commands/s. Every reply is read and checked for its
//! type (an error reply stops the run).

use std::io::{BufRead, BufReader, Write};
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

/// Reads one reply (integer, bulk, nil or simple string); panics on an
/// error reply.
fn reply(r: &mut BufReader<TcpStream>) {
    let mut s = String::new();
    r.read_line(&mut s).expect("read");
    assert!(s.ends_with("\r\n"), "connection closed");
    match s.as_bytes()[0] {
        b':' | b'+' | b'_' => {}
        b'$' => {
            let n: i64 = s[1..s.len() - 2].parse().expect("bulk length");
            if n >= 0 {
                let mut body = vec![0; n as usize + 2];
                std::io::Read::read_exact(r, &mut body).expect("bulk body");
            }
        }
        _ => panic!("unexpected reply {s:?}"),
    }
}

struct Conn {
    w: TcpStream,
    r: BufReader<TcpStream>,
}

fn connect(port: u16) -> Conn {
    let stream = TcpStream::connect(("127.0.0.1", port)).expect("connect");
    stream.set_nodelay(true).expect("nodelay");
    Conn {
        w: stream.try_clone().expect("clone"),
        r: BufReader::new(stream),
    }
}

/// A small xorshift: the benchmark's own randomness, no crate needed.
struct Rng(u64);
impl Rng {
    fn below(&mut self, n: u64) -> u64 {
        self.0 ^= self.0 << 13;
        self.0 ^= self.0 >> 7;
        self.0 ^= self.0 << 17;
        self.0 % n.max(1)
    }
}

/// Sends `commands` in pipelines of 1000 and reads every reply.
fn run_all(c: &mut Conn, commands: impl Iterator<Item = Vec<Vec<u8>>>) {
    let mut buf = Vec::new();
    let mut pending = 0;
    for cmd in commands {
        let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
        encode(&args, &mut buf);
        pending += 1;
        if pending == 1000 {
            c.w.write_all(&buf).expect("write");
            buf.clear();
            for _ in 0..pending {
                reply(&mut c.r);
            }
            pending = 0;
        }
    }
    c.w.write_all(&buf).expect("write");
    for _ in 0..pending {
        reply(&mut c.r);
    }
}

fn fill(port: u16, size: u64) {
    let mut c = connect(port);
    run_all(
        &mut c,
        [b"h", b"l", b"s", b"z"]
            .iter()
            .map(|k| vec![b"DEL".to_vec(), k.to_vec()]),
    );
    let member = |p: &str, i: u64| format!("{p}{i}").into_bytes();
    run_all(
        &mut c,
        (0..size).map(|i| {
            vec![
                b"HSET".to_vec(),
                b"h".to_vec(),
                member("f", i),
                b"v".to_vec(),
            ]
        }),
    );
    run_all(
        &mut c,
        (0..size).map(|i| vec![b"RPUSH".to_vec(), b"l".to_vec(), member("e", i)]),
    );
    run_all(
        &mut c,
        (0..size).map(|i| vec![b"SADD".to_vec(), b"s".to_vec(), member("m", i)]),
    );
    run_all(
        &mut c,
        (0..size).map(|i| {
            vec![
                b"ZADD".to_vec(),
                b"z".to_vec(),
                i.to_string().into_bytes(),
                member("m", i),
            ]
        }),
    );
}

fn command(workload: &str, size: u64, i: u64, rng: &mut Rng) -> Vec<Vec<u8>> {
    let pick = |p: &str, rng: &mut Rng| format!("{p}{}", rng.below(size)).into_bytes();
    let v = |s: &str| s.as_bytes().to_vec();
    match workload {
        "hset" => vec![v("HSET"), v("h"), pick("f", rng), v("v")],
        "lpush-rpop" if i.is_multiple_of(2) => vec![v("LPUSH"), v("l"), v("x")],
        "lpush-rpop" => vec![v("RPOP"), v("l")],
        "sadd" => vec![v("SADD"), v("s"), pick("m", rng)],
        "zadd" => vec![
            v("ZADD"),
            v("z"),
            rng.below(1 << 30).to_string().into_bytes(),
            pick("m", rng),
        ],
        "zrank" => vec![v("ZRANK"), v("z"), pick("m", rng)],
        _ => unreachable!("known workloads"),
    }
}

fn client(port: u16, id: u64, workload: &str, size: u64, depth: usize, until: Instant) -> u64 {
    let mut c = connect(port);
    let mut rng = Rng(0x9E37_79B9_7F4A_7C15 ^ (id + 1).wrapping_mul(0x1234_5678_9ABC_DEF1));
    let (mut done, mut buf) = (0u64, Vec::new());
    while Instant::now() < until {
        buf.clear();
        for j in 0..depth {
            let cmd = command(workload, size, j as u64, &mut rng);
            let args: Vec<&[u8]> = cmd.iter().map(Vec::as_slice).collect();
            encode(&args, &mut buf);
        }
        c.w.write_all(&buf).expect("write");
        for _ in 0..depth {
            reply(&mut c.r);
        }
        done += depth as u64;
    }
    done
}

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let port: u16 = args.first().and_then(|p| p.parse().ok()).expect("PORT");
    let sizes: Vec<u64> = args
        .get(1)
        .map_or("10,10000,1000000", String::as_str)
        .split(',')
        .map(|s| s.parse().expect("a size"))
        .collect();
    let clients: u64 = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(8);
    let depth: usize = args.get(3).and_then(|s| s.parse().ok()).unwrap_or(16);
    let seconds: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(3.0);
    for &size in &sizes {
        let t = Instant::now();
        fill(port, size);
        eprintln!("size {size}: filled in {:.1} s", t.elapsed().as_secs_f64());
        for workload in ["hset", "lpush-rpop", "sadd", "zadd", "zrank"] {
            let until = Instant::now() + Duration::from_secs_f64(seconds);
            let start = Instant::now();
            let handles: Vec<_> = (0..clients)
                .map(|id| {
                    let w = workload.to_string();
                    std::thread::spawn(move || client(port, id, &w, size, depth, until))
                })
                .collect();
            let total: u64 = handles.into_iter().map(|h| h.join().expect("client")).sum();
            let rate = total as f64 / start.elapsed().as_secs_f64();
            println!("size {size:>8} {workload:<11} {rate:>12.0} commands/s");
        }
    }
}
