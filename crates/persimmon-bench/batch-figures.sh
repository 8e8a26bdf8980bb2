#!/usr/bin/env bash
# The figures of BENCHMARKS.md, "Batches, transactions and expiry (issue 14)":
# batch:N next to single puts, GET and PUT with and without key deadlines
# (alternating runs), pool bytes per key with and without deadlines, and the
# `persimmon load --batch N` sweep behind load's default. Writes JSON and
# Markdown into OUT (default docs/bench/batch) and logs into OUT/log.txt.
# Needs only Persimmon (no peers): cargo build --release -p persimmon-cli
# Environment: B (binary), KEYS, SECS, RUNS (runs FIRST..RUNS of each,
# alternating with and without deadlines), FIRST, OUT, DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-${CARGO_TARGET_DIR:-target}/release/persimmon}
KEYS=${KEYS:-1000000}
SECS=${SECS:-5}
RUNS=${RUNS:-3}
FIRST=${FIRST:-1}
OUT=${OUT:-docs/bench/batch}
DIR=${DIR:-/dev/shm}
mkdir -p "$OUT"
log() { echo "== $(date -u +%FT%TZ) load $(cut -d' ' -f1-3 /proc/loadavg): $*" | tee -a "$OUT/log.txt"; }
bench() { # name args...
  local name=$1; shift
  log "$name: bench $*"
  "$B" bench --keys "$KEYS" --duration-secs "$SECS" --pool-dir "$DIR" --json "$OUT/$name.json" "$@" \
    | tee -a "$OUT/log.txt"
}
for r in $(seq "$FIRST" "$RUNS"); do
  bench "batch-run$r" --workload batch:1,10,100,1000 --threads 1,2
done
for r in $(seq "$FIRST" "$RUNS"); do
  bench "getput-plain-run$r" --workload get-ratio:100,0 --threads 1,2
  bench "getput-deadlines-run$r" --workload get-ratio:100,0 --threads 1,2 --deadline-fraction 1
done
"$B" bench --report "$OUT/batch-run$FIRST.json" --markdown "$OUT/batch-run$FIRST.md"
# persimmon load: KEYS lines of a 13-byte key and a 64-byte value, per --batch.
input="$DIR/persimmon-load-input.$$.tsv"
seq 1 "$KEYS" | awk '{printf "user:%08d\tvalue-%08d-abcdefghijklmnopqrstuvwxyz0123456789abcdefghijklm\n",$1,$1}' >"$input"
for r in $(seq "$FIRST" "$RUNS"); do
  for n in 1 10 100 1000 10000; do
    pool="$DIR/persimmon-load.$$.pool"
    rm -f "$pool"
    log "load run $r --batch $n"
    "$B" load --pool "$pool" --pool-size 256M --batch "$n" "$input" 2>&1 | tee -a "$OUT/log.txt"
    rm -f "$pool"
  done
done
rm -f "$input"
log done
