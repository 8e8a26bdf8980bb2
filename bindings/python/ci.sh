#!/usr/bin/env bash
# CI for the Python package: builds and installs it from source into a new
# virtual environment (pip runs maturin, which compiles the native module),
# then runs the pytest suite; first the native crate's fmt and clippy gate. Exits non-zero when the install or a test fails.
#
#   bash bindings/python/ci.sh            (from anywhere; PYTHON=python3.11 to pick one)
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
python="${PYTHON:-python3}"
venv="$(mktemp -d "${TMPDIR:-/tmp}/persimmon-pyci.XXXXXX")"
log="$venv/pytest.log"
trap 'rm -rf "$venv"' EXIT

# The crate is outside the root workspace: its own lint gate.
echo "== python bindings: cargo fmt --check, clippy -D warnings"
cargo fmt --manifest-path "$here/Cargo.toml" -- --check
cargo clippy --quiet --manifest-path "$here/Cargo.toml" --all-targets --locked -- -D warnings

echo "== python bindings: $("$python" --version) in $venv"
"$python" -m venv "$venv"
"$venv/bin/python" -m pip install --quiet --upgrade pip
"$venv/bin/python" -m pip install --quiet "$here" pytest

echo "== python bindings: pytest"
cd "$here"
set +e
# -p no:cacheprovider: run from the source tree without writing into it.
"$venv/bin/python" -m pytest -p no:cacheprovider -q tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary="$(tail -n 1 "$log")"
echo "python bindings: ${summary}"
exit "$status"
