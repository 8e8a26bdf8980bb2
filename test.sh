#!/usr/bin/env bash
# Every test of the project, as the README promises: the Rust workspace
# (engine, CLI, server, benchmark, crash harness, and the C library's C test
# program, compiled and run by cargo test), then the Python package built
# into a fresh virtual environment and its pytest suite.
set -euo pipefail
cd "$(dirname "$0")"
cargo test --workspace
bash bindings/python/ci.sh
