#!/usr/bin/env bash
# Collection command rates against collection size (issue 17), persimmon
# serve and redis-server (no persistence) in the same run: for each size
# (SIZES, default 10,10000,1000000) examples/collection_rates fills one
# hash, list, set and sorted set to that size on each server, then measures
# HSET, LPUSH+RPOP, SADD, ZADD and ZRANK at constant size (CLIENTS
# connections, pipelines of DEPTH, SECONDS per workload). The servers take
# turns per size. Then the pool bytes per element: persimmon's
# pool_live_bytes (INFO persistence) before and after filling a fresh pool
# with ELEMENTS elements per type, beside redis-server's used_memory.
#
#   bash crates/persimmon-server/bench-collections.sh
# Environment: PERSIMMON_BIN (default target/release/persimmon), SIZES,
# CLIENTS (default 8), DEPTH (default 16), SECONDS (default 3),
# ELEMENTS (default 1000000).
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${PERSIMMON_BIN:-target/release/persimmon}
SIZES=${SIZES:-10,10000,1000000}
CLIENTS=${CLIENTS:-8}
DEPTH=${DEPTH:-16}
SECS=${SECONDS_EACH:-3}
ELEMENTS=${ELEMENTS:-1000000}
P_PERSIMMON=6479
P_REDIS=6380

if ! command -v redis-server >/dev/null; then
  apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
fi
[ -x "$BIN" ] || cargo build --release --bin persimmon
cargo build --release -q -p persimmon-server --example collection_rates
RATES=${CARGO_TARGET_DIR:-target}/release/examples/collection_rates

dir=$(mktemp -d /dev/shm/persimmon-collections.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

start() { # start NAME: a fresh server of that name
  case $1 in
    persimmon) "$BIN" serve --pool "$dir/bench-$RANDOM.pool" --port $P_PERSIMMON >>"$dir/persimmon.log" 2>&1 & ;;
    redis) redis-server --port $P_REDIS --save '' --appendonly no --dir "$dir" --daemonize no \
             --logfile "$dir/redis.log" & ;;
  esac
  pids+=($!)
  local port=$([ "$1" = persimmon ] && echo $P_PERSIMMON || echo $P_REDIS)
  for _ in $(seq 100); do redis-cli -p "$port" PING >/dev/null 2>&1 && return; sleep 0.1; done
  echo "bench-collections: $1 did not start"; exit 1
}
stop() { redis-cli -p "$1" SHUTDOWN NOSAVE >/dev/null 2>&1 || true; sleep 0.5; }

for size in ${SIZES//,/ }; do
  for server in persimmon redis; do
    port=$([ $server = persimmon ] && echo $P_PERSIMMON || echo $P_REDIS)
    start $server
    "$RATES" "$port" "$size" "$CLIENTS" "$DEPTH" "$SECS" | sed "s/^/$server /"
    stop "$port"
  done
done

echo "# bytes per element ($ELEMENTS elements per type, members 'm<i>' / fields 'f<i>' of 7-8 bytes, values 'v')"
for server in persimmon redis; do
  port=$([ $server = persimmon ] && echo $P_PERSIMMON || echo $P_REDIS)
  for type in hash set list zset; do
    start $server
    field=$([ $server = persimmon ] && echo pool_live_bytes || echo used_memory)
    before=$(redis-cli -p "$port" INFO | tr -d '\r' | awk -F: -v f="$field" '$1 == f {print $2}')
    case $type in
      hash) seq 0 $((ELEMENTS - 1)) | awk '{printf "HSET h f%d v\n", $1}' ;;
      set) seq 0 $((ELEMENTS - 1)) | awk '{printf "SADD s m%d\n", $1}' ;;
      list) seq 0 $((ELEMENTS - 1)) | awk '{printf "RPUSH l m%d\n", $1}' ;;
      zset) seq 0 $((ELEMENTS - 1)) | awk '{printf "ZADD z %d m%d\n", $1, $1}' ;;
    esac | redis-cli -p "$port" --pipe >/dev/null
    sleep 1
    after=$(redis-cli -p "$port" INFO | tr -d '\r' | awk -F: -v f="$field" '$1 == f {print $2}')
    echo "$server $type $(( (after - before) / ELEMENTS )) bytes/element ($field $before -> $after)"
    stop "$port"
  done
done
