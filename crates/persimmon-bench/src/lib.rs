//! `persimmon bench`: Persimmon against its Baseline, its ablation variants
//! and its peers (LMDB, RocksDB), in the same process and the same run, on
//! YCSB core workloads and the MPKV paper's experiments; plus a probe of
//! the machine's limits.
//!
//! Layers, top down (each a module):
//! - [`args`]: the command line (the CLI flattens [`BenchArgs`] into its
//!   `bench` subcommand); [`bench`]: the run, its table, JSON, Markdown and
//!   SVG outputs.
//! - [`runner`]: the load phase and the timed phase (threads, warm-up,
//!   per-operation HDR histograms, per-thread PM counters).
//! - [`workload`] (operation mixes), [`distribution`] (uniform, zipfian,
//!   latest), [`keys`] (scrambled 8-byte keys, values).
//! - [`engines`]: one [`engines::Store`] trait; Persimmon variants always,
//!   LMDB and RocksDB behind the features `lmdb` and `rocksdb` (`peers`).
//! - [`report`], [`plot`]: figures as Markdown tables with ratios, as SVG.
//! - [`pdv`]: the persistent dancing variable microbenchmark
//!   (`--workload pdv`): single word against PDV shadows, per thread.
//! - [`restart`]: `--workload restart`, the reopen of a loaded store timed
//!   to its first served requests and to full speed.
//! - [`probe`]: dependent-load latency and non-temporal write bandwidth;
//!   its mapping and streaming stores are in `raw`, the only module
//!   allowed `unsafe`.

#![deny(unsafe_code)]

pub mod args;
pub mod bench;
pub mod distribution;
pub mod engines;
pub mod error;
pub mod keys;
pub mod pdv;
pub mod plot;
pub mod probe;
mod progress;
mod raw;
pub mod record;
pub mod report;
pub mod restart;
pub mod runner;
pub mod workload;

pub use args::{BenchArgs, PoolSizes};
pub use bench::run;
pub use error::{Error, Result};
pub use record::{ProbeRecord, Record};
