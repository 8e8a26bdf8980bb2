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

# A venv normally gets its pip from ensurepip. Where ensurepip fails (it did
# once on a fresh CI machine, and venv hides why), show its own output and the
# free space, then make the venv without pip and let this Python's pip
# install into it (`pip --python`, pip >= 22.3).
make_venv() {
  if "$python" -m venv "$venv/env"; then
    pip=("$venv/env/bin/python" -m pip)
    "${pip[@]}" install --quiet --upgrade pip
    return
  fi
  echo "== python bindings: venv's ensurepip failed; its output, then df:" >&2
  "$venv/env/bin/python" -m ensurepip --default-pip >&2 || true
  df -h "$venv" >&2 || true
  rm -rf "$venv/env"
  "$python" -m venv --without-pip "$venv/env"
  pip=("$python" -m pip --python "$venv/env/bin/python")
  echo "== python bindings: venv without pip; installing with $("$python" -m pip --version)" >&2
}

echo "== python bindings: $("$python" --version) in $venv"
make_venv
"${pip[@]}" install --quiet "$here" pytest

echo "== python bindings: pytest"
cd "$here"
set +e
# -p no:cacheprovider: run from the source tree without writing into it.
"$venv/env/bin/python" -m pytest -p no:cacheprovider -q tests 2>&1 | tee "$log"
status=${PIPESTATUS[0]}
set -e
summary="$(tail -n 1 "$log")"
echo "python bindings: ${summary}"
exit "$status"
