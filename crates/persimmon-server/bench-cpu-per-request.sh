#!/usr/bin/env bash
# Server CPU time per request on large collections: for each binary (and
# `redis` for redis-server without persistence) and each workload, a fresh
# server (pool on /dev/shm), a prefill of 2 000 000 random writes over
# 1 000 000 members, then redis-benchmark's workload at -P 16 -c 50; the
# server's utime + stime (/proc/PID/stat) before and after the workload
# gives CPU µs per request. A load from other processes slows a run's rate
# far more than it moves this figure, so it compares builds on a busy
# machine; the binaries take turns per workload, ROUNDS times.
#
#   bash crates/persimmon-server/bench-cpu-per-request.sh BIN [BIN|redis ...]
# Environment: N (requests per workload, default 500000), ROUNDS (default 2).
# Workloads (prefill → measured):
#   sadd  SADD s m:<r>          → the same (existing members, mostly)
#   hset  HSET h f:<r> v:<r>    → the same (existing fields, new values)
#   zrank ZADD z <r> m:<r>      → ZRANK z m:<r>
#   zadd  ZADD z <r> m:<r>      → the same (existing members, new scores)
set -euo pipefail
[ $# -ge 1 ] || { sed -n 2,18p "$0"; exit 2; }
N=${N:-500000}
ROUNDS=${ROUNDS:-2}
PORT=7931
declare -A PREFILL=([sadd]="sadd s m:__rand_int__" [hset]="hset h f:__rand_int__ v:__rand_int__"
  [zrank]="zadd z __rand_int__ m:__rand_int__" [zadd]="zadd z __rand_int__ m:__rand_int__")
declare -A MEASURE=([sadd]="sadd s m:__rand_int__" [hset]="hset h f:__rand_int__ v:__rand_int__"
  [zrank]="zrank z m:__rand_int__" [zadd]="zadd z __rand_int__ m:__rand_int__")
ticks_per_s=$(getconf CLK_TCK)
dir=$(mktemp -d /dev/shm/persimmon-cpu.XXXXXX)
trap 'redis-cli -p $PORT shutdown nosave >/dev/null 2>&1 || true; rm -rf "$dir"' EXIT

cpu_ticks() { awk '{print $14 + $15}' "/proc/$1/stat"; }

one() { # one BIN WORKLOAD
  rm -rf "${dir:?}"/*
  if [ "$1" = redis ]; then
    redis-server --port $PORT --save '' --appendonly no --dir "$dir" --daemonize no \
      --logfile "$dir/redis.log" & 
  else
    "$1" serve --pool "$dir/p.pool" --port $PORT >"$dir/serve.log" 2>&1 &
  fi
  local pid=$!
  for _ in $(seq 100); do redis-cli -p $PORT PING >/dev/null 2>&1 && break; sleep 0.1; done
  # shellcheck disable=SC2086
  redis-benchmark -p $PORT -n 2000000 -r 1000000 -P 64 -c 20 ${PREFILL[$2]} >/dev/null
  local t0 rate t1
  t0=$(cpu_ticks $pid)
  # shellcheck disable=SC2086
  rate=$(redis-benchmark -p $PORT -n "$N" -r 1000000 -P 16 -c 50 --csv ${MEASURE[$2]} \
    | tail -1 | cut -d, -f2 | tr -d '"')
  t1=$(cpu_ticks $pid)
  awk -v b="$1" -v w="$2" -v r="$rate" -v t="$((t1 - t0))" -v hz="$ticks_per_s" -v n="$N" \
    'BEGIN { printf "%-40s %-6s %10.0f req/s %7.2f cpu_us/req\n", b, w, r, t * 1e6 / hz / n }'
  redis-cli -p $PORT SHUTDOWN NOSAVE >/dev/null 2>&1 || true
  wait $pid 2>/dev/null || true
}

for round in $(seq "$ROUNDS"); do
  echo "# round $round, load average $(cut -d' ' -f1-3 /proc/loadavg)"
  for w in sadd hset zrank zadd; do
    for b in "$@"; do one "$b" $w; done
  done
done
