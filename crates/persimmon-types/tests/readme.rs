//! The top-level README's Rust examples, run.
//!
//! Each ```rust block of the README is copied below into a module of its
//! own, between a line `// README:` and a line `// end of README`, and run
//! by that module's tests on pools in a scratch directory.
//! `copies_are_the_readme` checks that the copies are the README's blocks,
//! in order — the same text, indented one level, with each pool path
//! `"/dev/shm/NAME"` written `pool("NAME")` — so what runs here is what the
//! README shows, and a change to either fails until both agree.

use std::cell::RefCell;
use std::path::PathBuf;

const README: &str = include_str!("../../../README.md");
const THIS_FILE: &str = include_str!("readme.rs");

thread_local! {
    /// The running test's scratch directory (each test runs on a thread
    /// of its own).
    static SCRATCH: RefCell<Option<PathBuf>> = const { RefCell::new(None) };
}

/// `name` in the running test's scratch directory: where the copies put
/// the pools the README puts in `/dev/shm`.
fn pool(name: &str) -> PathBuf {
    SCRATCH.with(|s| {
        s.borrow()
            .as_ref()
            .expect("the test runs the example in_scratch")
            .join(name)
    })
}

/// Runs `f` with a fresh scratch directory (on tmpfs when there is one,
/// as the README's pools are), removed afterwards.
fn in_scratch(f: impl FnOnce()) {
    let dir = tempfile::Builder::new()
        .prefix("persimmon-readme-")
        .tempdir_in("/dev/shm")
        .or_else(|_| tempfile::tempdir())
        .expect("a scratch directory");
    SCRATCH.with(|s| *s.borrow_mut() = Some(dir.path().to_path_buf()));
    f();
    SCRATCH.with(|s| *s.borrow_mut() = None);
}

/// The README's ```rust blocks, in order.
fn readme_blocks() -> Vec<&'static str> {
    README
        .split("```rust\n")
        .skip(1)
        .map(|rest| rest.split("```").next().expect("split yields a first part"))
        .collect()
}

/// The copies in this file, in order, one level of indentation taken off.
fn copies() -> Vec<String> {
    let mut copies = Vec::new();
    let mut copy: Option<String> = None;
    for line in THIS_FILE.lines() {
        match (line.trim(), copy.as_mut()) {
            ("// README:", None) => copy = Some(String::new()),
            ("// end of README", Some(_)) => copies.extend(copy.take()),
            (_, Some(text)) => {
                text.push_str(line.strip_prefix("    ").unwrap_or(line));
                text.push('\n');
            }
            _ => {}
        }
    }
    assert!(copy.is_none(), "a copy without its `// end of README` line");
    copies
}

/// A README block as the copies write it: `"/dev/shm/NAME"` is
/// `pool("NAME")`.
fn as_copied(block: &str) -> String {
    let mut out = String::new();
    let mut rest = block;
    while let Some(at) = rest.find("\"/dev/shm/") {
        out.push_str(&rest[..at]);
        let name_and_after = &rest[at + "\"/dev/shm/".len()..];
        let end = name_and_after.find('"').expect("a closed string literal");
        out.push_str(&format!("pool(\"{}\")", &name_and_after[..end]));
        rest = &name_and_after[end + 1..];
    }
    out.push_str(rest);
    out
}

#[test]
fn copies_are_the_readme() {
    let blocks = readme_blocks();
    let copies = copies();
    assert_eq!(
        blocks.len(),
        copies.len(),
        "the README has {} ```rust blocks and tests/readme.rs copies {}: \
         copy each into a module of its own",
        blocks.len(),
        copies.len()
    );
    for (i, (block, copy)) in blocks.iter().zip(&copies).enumerate() {
        assert_eq!(
            &as_copied(block),
            copy,
            "the README's ```rust block {} and its copy in tests/readme.rs differ: \
             make them agree",
            i + 1
        );
    }
}

/// The engine's example at the top of the README.
mod engine_example {
    use super::pool;

    // README:
    use persimmon::{Db, Options, Update};

    fn main() -> Result<(), persimmon::Error> {
        let db = Db::open(pool("app-rust.pool"), Options::default())?;
        db.put(b"user:1", b"Ada")?; // durable on return
        assert_eq!(db.get(b"user:1")?.as_deref(), Some(&b"Ada"[..]));
        // Atomic read-modify-write of a counter kept as 8 little-endian bytes.
        let hits = db.update(b"hits", |old| {
            let n = match old.map(<[u8; 8]>::try_from) {
                None => 0,
                Some(Ok(le)) => u64::from_le_bytes(le),
                Some(Err(_)) => return (Update::Keep, None), // not a counter: left alone
            };
            (Update::Put((n + 1).to_le_bytes().to_vec()), Some(n + 1))
        })?;
        println!("hits: {hits:?}");
        db.delete(b"user:1")?;
        Ok(())
    }
    // end of README

    /// Run twice on one pool, as someone trying it would: the counter
    /// counts both runs, and `user:1` is gone.
    #[test]
    fn runs_and_runs_again() {
        super::in_scratch(|| {
            main().expect("first run");
            main().expect("second run on the pool the first left");
            let db = Db::open(pool("app-rust.pool"), Options::default()).expect("reopen");
            assert_eq!(db.get(b"hits").unwrap(), Some(2u64.to_le_bytes().to_vec()));
            assert_eq!(db.get(b"user:1").unwrap(), None);
        });
    }

    /// A `hits` that is not an 8-byte counter (another program's, say) is
    /// left alone: no panic, no overwrite.
    #[test]
    fn leaves_a_hits_of_another_length_alone() {
        super::in_scratch(|| {
            {
                let db = Db::open(pool("app-rust.pool"), Options::default()).expect("create");
                db.put(b"hits", b"12").expect("a decimal hits");
            }
            main().expect("runs");
            let db = Db::open(pool("app-rust.pool"), Options::default()).expect("reopen");
            assert_eq!(db.get(b"hits").unwrap().as_deref(), Some(&b"12"[..]));
        });
    }
}

/// The in-process data types' example ("Redis's types in Rust, in-process").
mod types_example {
    use super::pool;

    // README:
    use persimmon_types::list::End;
    use persimmon_types::{hash, list, Keyspace, Store};

    fn main() -> Result<(), persimmon_types::Error> {
        let keyspace = Keyspace::open(pool("types.pool"), persimmon::Options::default())?;
        let mut st = Store::new(keyspace);
        hash::set(&mut st, b"user:1", &[(b"name", b"Ada")])?;
        list::push(&mut st, b"jobs", End::Tail, &[b"build", b"test"])?;
        for job in list::pop(&mut st, b"jobs", End::Head, 1)?.unwrap_or_default() {
            println!("job: {}", String::from_utf8_lossy(&job));
        }
        Ok(())
    }
    // end of README

    /// Run twice on one pool: the hash holds the name, and the list what
    /// two pushes of two jobs and two pops of one leave.
    #[test]
    fn runs_and_runs_again() {
        super::in_scratch(|| {
            main().expect("first run");
            main().expect("second run on the pool the first left");
            let keyspace =
                Keyspace::open(pool("types.pool"), persimmon::Options::default()).expect("reopen");
            let mut st = Store::new(keyspace);
            assert_eq!(
                hash::get(&mut st, b"user:1", b"name").unwrap().as_deref(),
                Some(&b"Ada"[..])
            );
            assert_eq!(
                list::range(&mut st, b"jobs", 0, -1).unwrap(),
                [b"build".to_vec(), b"test".to_vec()]
            );
        });
    }
}
