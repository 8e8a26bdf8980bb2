//! Opens an existing pool again and again (each time: open, one GET, wait
//! for the background work, clean close) and prints the open and first-GET
//! times: a driver for profiling the open (`perf record -g`).
//!
//! ```sh
//! cargo run --release -p persimmon --example open_loop -- POOL [OPENS] [dram]
//! ```

use std::time::Instant;

use persimmon::{Db, Options, PointIndex};

fn main() -> persimmon::Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let path = args.get(1).expect("a pool path");
    let opens: usize = args
        .get(2)
        .map(|s| s.parse().expect("a count"))
        .unwrap_or(20);
    let dram = args.get(3).is_some_and(|s| s == "dram");
    let options = Options {
        create: false,
        ordered_index: dram,
        point_index: if dram {
            PointIndex::Dram
        } else {
            PointIndex::Pm
        },
        ..Options::default()
    };
    let mut opens_ns = Vec::new();
    let mut firsts_ns = Vec::new();
    for _ in 0..opens {
        let t = Instant::now();
        let db = Db::open(path, options.clone())?;
        let open = t.elapsed();
        let _ = db.get(&7u64.to_be_bytes())?;
        let first = t.elapsed();
        opens_ns.push(open.as_nanos() as u64);
        firsts_ns.push(first.as_nanos() as u64);
        db.wait_for_rebuild();
        drop(db);
    }
    opens_ns.sort_unstable();
    firsts_ns.sort_unstable();
    let med = |v: &[u64]| v[v.len() / 2] as f64 / 1e6;
    println!(
        "{opens} opens: open median {:.3} ms (min {:.3}), first GET median {:.3} ms (min {:.3})",
        med(&opens_ns),
        opens_ns[0] as f64 / 1e6,
        med(&firsts_ns),
        firsts_ns[0] as f64 / 1e6
    );
    Ok(())
}
