//! Helpers shared by the kill -9 tests of `persimmon serve`
//! (`serve_kill9.rs`, `serve_kill9_combined.rs`): reproducible randomness,
//! the server as a child process, requests as bytes, the pool's last check.

#![allow(dead_code)]

use std::io::{BufRead, BufReader};
use std::net::SocketAddr;
use std::path::Path;
use std::process::{Child, Command, Stdio};

/// xorshift64*: reproducible randomness without a dependency.
pub struct Rng(pub u64);

impl Rng {
    pub fn next(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }

    pub fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A directory for a test's pool, on /dev/shm when there is one.
pub fn pool_dir() -> tempfile::TempDir {
    tempfile::tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .unwrap()
}

/// Starts `persimmon serve` on a free port; returns it with its address,
/// read from the "listening on" line.
pub fn start_server(pool: &Path) -> (Child, SocketAddr) {
    let mut child = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args([
            "serve",
            "--port",
            "0",
            "--pool-size",
            "16M",
            "--pool-max",
            "4G",
            "--pool",
        ])
        .arg(pool)
        .stdout(Stdio::piped())
        .stderr(Stdio::inherit())
        .spawn()
        .expect("spawn persimmon serve");
    let mut line = String::new();
    BufReader::new(child.stdout.take().unwrap())
        .read_line(&mut line)
        .expect("read the listening line");
    let rest = line
        .strip_prefix("persimmon: listening on ")
        .unwrap_or_else(|| panic!("unexpected first line {line:?}"));
    let addr = rest.split_whitespace().next().unwrap().parse().unwrap();
    assert!(line.contains("durability"), "{line}");
    (child, addr)
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

/// `persimmon check` on the pool passes.
pub fn check_pool(pool: &Path) {
    let check = Command::new(env!("CARGO_BIN_EXE_persimmon"))
        .args(["check", "--pool"])
        .arg(pool)
        .output()
        .unwrap();
    assert!(
        check.status.success(),
        "check after the rounds: {}",
        String::from_utf8_lossy(&check.stdout)
    );
}
