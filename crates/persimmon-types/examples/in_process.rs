//! Redis's data types in-process, over a pool, with no server: a hash and
//! a list written, the pool closed, reopened, and everything read back.
//!
//! ```sh
//! cargo run -p persimmon-types --example in_process [POOL]
//! ```
//!
//! POOL defaults to `in_process.pool` in the system's temporary directory
//! (`/dev/shm` when it exists, for memory speed); it is created if needed
//! and removed at the end unless it was given.

use std::path::PathBuf;

use persimmon::Options;
use persimmon_types::list::End;
use persimmon_types::{hash, list, Keyspace, Store};

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let given = std::env::args().nth(1).map(PathBuf::from);
    let pool = given.clone().unwrap_or_else(|| {
        let shm = std::path::Path::new("/dev/shm");
        let dir = if shm.is_dir() {
            shm.to_path_buf()
        } else {
            std::env::temp_dir()
        };
        dir.join("in_process.pool")
    });

    {
        let keyspace = Keyspace::open(&pool, Options::default())?;
        let mut st = Store::new(keyspace);
        // Each call is one atomic unit, crash-atomic and durable on return.
        let added = hash::set(&mut st, b"user:1", &[(b"name", b"Ada"), (b"lang", b"Rust")])?;
        let len = list::push(&mut st, b"jobs", End::Tail, &[b"build", b"test", b"ship"])?;
        let first = list::pop(&mut st, b"jobs", End::Head, 1)?.unwrap_or_default();
        println!(
            "wrote user:1 ({added} new fields) and jobs ({len} pushed, popped {:?})",
            first
                .iter()
                .map(|j| String::from_utf8_lossy(j))
                .collect::<Vec<_>>()
        );
    } // the last reference to the key space goes: the pool is closed cleanly

    let keyspace = Keyspace::open(&pool, Options::default())?;
    let mut st = Store::new(keyspace);
    let name = hash::get(&mut st, b"user:1", b"name")?;
    let fields = hash::len(&mut st, b"user:1")?;
    let jobs = list::range(&mut st, b"jobs", 0, -1)?;
    println!(
        "reopened {}: user:1 name = {:?}, {fields} fields; jobs = {:?}",
        pool.display(),
        name.as_deref().map(String::from_utf8_lossy),
        jobs.iter()
            .map(|j| String::from_utf8_lossy(j))
            .collect::<Vec<_>>()
    );
    assert_eq!(name.as_deref(), Some(&b"Ada"[..]));
    assert_eq!(fields, 2);
    assert_eq!(jobs, vec![b"test".to_vec(), b"ship".to_vec()]);
    drop(st);
    if given.is_none() {
        std::fs::remove_file(&pool)?;
    }
    Ok(())
}
