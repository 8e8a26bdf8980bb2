//! Benchmark workloads and peer adapters.
