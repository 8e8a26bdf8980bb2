#!/usr/bin/env bash
# Reproduces the MPKV paper's Figures 4-7, YCSB A-F, the ordered index's
# scans and inserts, and the point-index placements (PM vs DRAM: point reads,
# restart) at this machine's scale, writing JSON, SVG and Markdown
# into OUT (default docs/bench).
# Needs a build with peers:
#   apt-get install -y libclang-dev
#   cargo build --release -p persimmon-cli --features peers
# Run it on an idle machine; every engine runs in the same process, one
# after the other. Environment: B (binary), KEYS, SECS, OUT, DIR.
set -euo pipefail
cd "$(dirname "$0")/../.."
B=${B:-${CARGO_TARGET_DIR:-target}/release/persimmon}
KEYS=${KEYS:-1000000}
SECS=${SECS:-10}
OUT=${OUT:-docs/bench}
DIR=${DIR:-/dev/shm}
ALL=persimmon,ablation,lmdb,rocksdb
PEERS=persimmon,baseline,lmdb,rocksdb
mkdir -p "$OUT"
run() { # name engines workload threads
  local name=$1 engines=$2 workload=$3 threads=$4
  echo "== $name: --engines $engines --workload $workload --threads $threads"
  "$B" bench --engines "$engines" --workload "$workload" --keys "$KEYS" \
    --threads "$threads" --duration-secs "$SECS" --pool-dir "$DIR" \
    --json "$OUT/$name.json" --plot "$OUT/$name.svg"
}
"$B" bench --probe --pool-dir "$DIR" --keys "$KEYS" --json "$OUT/probe.json"
run fig4 "$ALL" get-ratio:0,50,95,100 2
run fig4-1thread "$ALL" get-ratio:100 1
run fig5 "$PEERS" value-size:64,128,256,512,1K,2K,4K 2
run fig6 "$PEERS" get-ratio:50 1-64
run fig7 "$PEERS" get-ratio:95 1-64
run ycsb "$ALL" ycsb 2
run scan persimmon-ordered,persimmon-dram,lmdb,rocksdb ycsb-e,scan:10,100,1000 2
run insert persimmon,persimmon-ordered,persimmon-dram,lmdb,rocksdb insert 2
run placement persimmon,persimmon-ordered,persimmon-dram,lmdb,rocksdb get-ratio:100 1,2
echo "== restart"
"$B" bench --engines persimmon,persimmon-ordered,persimmon-dram,lmdb,rocksdb --workload restart \
  --keys "$KEYS" --pool-dir "$DIR" --json "$OUT/restart.json"
"$B" bench --report "$OUT/restart.json" --markdown "$OUT/restart.md"
for f in fig4 fig4-1thread fig5 fig6 fig7 ycsb scan insert placement; do
  "$B" bench --report "$OUT/$f.json,$OUT/probe.json" --markdown "$OUT/$f.md"
done
