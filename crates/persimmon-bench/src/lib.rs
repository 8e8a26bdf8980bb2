//! `persimmon bench`: Persimmon against its Baseline, its ablation variants
//! and its peers (LMDB, RocksDB), in the same process and the same run, on
//! YCSB core workloads and the MPKV paper's experiments; plus a probe of
//! the machine's limits.
//!
//! Layers, top down (each module uses only modules below it):
//! - [`bench`](mod@bench): [`run`] picks the kind of run; the benchmark
//!   proper (every workload point on every engine, its rows and summary).
//! - The other kinds of run: [`pdv`], the persistent dancing variable
//!   microbenchmark (`--workload pdv`): single word against PDV shadows,
//!   per thread; [`restart`] (`--workload restart`), the reopen of a
//!   loaded store timed to its first served requests and to full speed;
//!   [`probe`], dependent-load latency and non-temporal write bandwidth
//!   (its mapping and streaming stores are in `raw`, the only module
//!   allowed `unsafe`).
//! - [`setup`]: what every run sets up the same way (scratch directory,
//!   pool sizes, preflight, load, phase length); [`output`]: stdout and
//!   the `--json`, `--markdown`, `--plot` files, and `--report`'s input.
//! - [`plot`] (SVG) over [`report`] (figures, Markdown tables with ratios).
//! - [`runner`]: the load phase and the timed phase (threads, warm-up,
//!   per-operation HDR histograms, per-thread PM counters).
//! - [`args`]: the command line (the CLI flattens [`BenchArgs`] into its
//!   `bench` subcommand).
//! - [`workload`] (operation mixes), [`distribution`] (uniform, zipfian,
//!   latest), [`keys`] (scrambled 8-byte keys, values).
//! - [`engines`]: one [`engines::Store`] trait; Persimmon variants always,
//!   LMDB and RocksDB behind the features `lmdb` and `rocksdb` (`peers`).
//! - At the bottom: [`record`] (the results and the constants that fix
//!   what their fields mean), [`error`], [`progress`] (the progress bars,
//!   also the `persimmon` command's), [`disk`] (file systems, the OS page
//!   cache, the process's storage I/O counters).
//!
//! Sizes on the command line (`--value-size 4K`) are parsed by
//! `persimmon::size`, as in the CLI and the server.

#![deny(unsafe_code)]

pub mod args;
pub mod bench;
pub mod disk;
pub mod distribution;
pub mod engines;
pub mod error;
pub mod keys;
pub mod output;
pub mod pdv;
pub mod plot;
pub mod probe;
pub mod progress;
mod raw;
pub mod record;
pub mod report;
pub mod restart;
pub mod runner;
pub mod setup;
pub mod workload;

pub use args::{BenchArgs, PoolSizes};
pub use bench::run;
pub use error::{Error, Result};
pub use record::{ProbeRecord, Record};
