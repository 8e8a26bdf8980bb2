#!/usr/bin/env bash
# redis-benchmark (SET, GET, INCR, MSET) and a MULTI/EXEC rate against
# `persimmon serve` and `redis-server` on the same machine in the same run:
#   persimmon serve     pool on /dev/shm (every write durable when acknowledged)
#   redis (no persist)  --save '' --appendonly no
#   redis (AOF always)  --appendonly yes --appendfsync always, dir on /dev/shm
# each with -P 1 and -P 16, 50 clients, then the MULTI/EXEC rate
# (examples/multi_exec_rate.rs: MULTI, INCR, SET, EXEC per round trip, 50
# clients, MULTI_SECONDS each). Prints every raw line and Markdown tables (for
# BENCHMARKS.md). The servers take turns for each -P,
# so drift in machine load hits all of them alike; REPEAT runs the whole
# round several times (the table shows the median).
#
#   bash crates/persimmon-server/bench-vs-redis.sh
# Environment: PERSIMMON_BIN (default target/release/persimmon, built when
# missing), N (requests per test, default 200000), REPEAT (default 3),
# TESTS (redis-benchmark -t, default set,get,incr,mset), MULTI_SECONDS (MULTI/EXEC
# run length, default 5; 0 skips it),
# KEYSPACE (redis-benchmark -r: random keys out of this many; default none,
# i.e. redis-benchmark's single key), PERSIMMON_BEFORE (a second persimmon
# binary, e.g. a build of an earlier commit: a fourth contender taking its
# turn with the others). Ratio rows give persimmon ÷ redis (no persistence).
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${PERSIMMON_BIN:-target/release/persimmon}
N=${N:-200000}
REPEAT=${REPEAT:-3}
KEYSPACE=${KEYSPACE:-}
TESTS=${TESTS:-set,get,incr,mset}
SECONDS_MULTI=${MULTI_SECONDS:-5}
random_keys=${KEYSPACE:+-r $KEYSPACE}
P_PERSIMMON=6479
P_REDIS=6380
P_REDIS_AOF=6381
P_BEFORE=6482
BEFORE=${PERSIMMON_BEFORE:-}
ports="$P_PERSIMMON${BEFORE:+ $P_BEFORE} $P_REDIS $P_REDIS_AOF"

if ! command -v redis-server >/dev/null || ! command -v redis-benchmark >/dev/null; then
  apt-get update -qq && apt-get install -y -qq redis-server redis-tools >/dev/null
fi
[ -x "$BIN" ] || cargo build --release --bin persimmon
MULTI_BIN=${CARGO_TARGET_DIR:-target}/release/examples/multi_exec_rate
if [ "$SECONDS_MULTI" != 0 ]; then
  cargo build --release -q -p persimmon-server --example multi_exec_rate
fi

dir=$(mktemp -d /dev/shm/persimmon-vs-redis.XXXXXX)
pids=()
cleanup() {
  for p in "${pids[@]}"; do kill -TERM "$p" 2>/dev/null || true; done
  sleep 0.5
  for p in "${pids[@]}"; do kill -KILL "$p" 2>/dev/null || true; done
  rm -rf "$dir"
}
trap cleanup EXIT

"$BIN" serve --pool "$dir/bench.pool" --port $P_PERSIMMON >"$dir/persimmon.log" 2>&1 &
pids+=($!)
if [ -n "$BEFORE" ]; then
  "$BEFORE" serve --pool "$dir/before.pool" --port $P_BEFORE >"$dir/before.log" 2>&1 &
  pids+=($!)
fi
mkdir -p "$dir/redis" "$dir/redis-aof"
redis-server --port $P_REDIS --save '' --appendonly no --dir "$dir/redis" \
  --daemonize no --logfile "$dir/redis.log" &
pids+=($!)
redis-server --port $P_REDIS_AOF --save '' --appendonly yes --appendfsync always \
  --dir "$dir/redis-aof" --daemonize no --logfile "$dir/redis-aof.log" &
pids+=($!)
for port in $ports; do
  for _ in $(seq 100); do redis-cli -p $port PING >/dev/null 2>&1 && break; sleep 0.1; done
  redis-cli -p $port PING >/dev/null || { echo "server on $port did not start"; exit 1; }
done
cat "$dir/persimmon.log"

name_of() {
  case $1 in
    $P_PERSIMMON) echo "persimmon serve (durable per write)" ;;
    $P_BEFORE) echo "persimmon serve, before ($BEFORE)" ;;
    $P_REDIS) echo "redis-server, no persistence" ;;
    $P_REDIS_AOF) echo "redis-server, appendfsync always" ;;
  esac
}

echo "machine: $(nproc) cores, $(uname -r); redis $(redis-server --version | awk '{print $3}')"
echo "load average before: $(cut -d' ' -f1-3 /proc/loadavg)"
results="$dir/results.tsv"
: >"$results"
for round in $(seq "$REPEAT"); do
  for P in 1 16; do
    for port in $ports; do
      cmd="redis-benchmark -p $port -t $TESTS -n $N -c 50 -P $P $random_keys -q"
      echo "# round $round: $(name_of $port): $cmd"
      $cmd 2>&1 | tr '\r' '\n' | grep "requests per second" | while read -r line; do
        echo "$line"
        test_name=${line%%:*}
        test_name=${test_name%% (*}
        rps=$(echo "${line#*: }" | awk '{print $1}')
        printf '%s\t%s\t%s\t%s\n' "$port" "$P" "$test_name" "$rps" >>"$results"
      done
    done
  done
  if [ "$SECONDS_MULTI" != 0 ]; then
    for port in $ports; do
      echo "# round $round: $(name_of $port): multi_exec_rate $port 50 $SECONDS_MULTI"
      line=$("$MULTI_BIN" "$port" 50 "$SECONDS_MULTI")
      echo "$line"
      printf '%s\t1\tMULTI/EXEC\t%s\n' "$port" "$(echo "$line" | awk '{print $2}')" >>"$results"
    done
  fi
done
echo "load average after: $(cut -d' ' -f1-3 /proc/loadavg)"

median() { sort -n | awk '{a[NR]=$1} END {if (NR==0) print "-"; else if (NR%2) print a[(NR+1)/2]; else print (a[NR/2]+a[NR/2+1])/2}'; }
rate() {
  awk -F'\t' -v p="$1" -v q="$2" -v t="$3" '$1==p && $2==q && $3==t {print $4}' "$results" | median
}
tests_upper=$(echo "$TESTS" | tr a-z A-Z | tr , ' ')
echo
header="| server | -P |"; rule="|---|---|"
for t in $tests_upper; do header="$header $t req/s |"; rule="$rule---|"; done
echo "$header"; echo "$rule"
for P in 1 16; do
  for port in $ports; do
    row="| $(name_of $port) | $P |"
    for t in $tests_upper; do
      row="$row $(printf "%.0f" "$(rate $port $P "$t")") |"
    done
    echo "$row"
  done
  for port in $P_PERSIMMON${BEFORE:+ $P_BEFORE}; do
    row="| $(name_of $port) ÷ redis-server, no persistence | $P |"
    for t in $tests_upper; do
      row="$row $(awk -v a="$(rate $port $P "$t")" -v b="$(rate $P_REDIS $P "$t")" 'BEGIN {printf "%.2f", a / b}') |"
    done
    echo "$row"
  done
done
if [ "$SECONDS_MULTI" != 0 ]; then
  echo
  echo "| server | MULTI/EXEC transactions/s (MULTI, INCR, SET, EXEC per round trip, 50 clients) |"
  echo "|---|---|"
  for port in $ports; do
    printf '| %s | %.0f |\n' "$(name_of $port)" "$(rate $port 1 MULTI/EXEC)"
  done
fi
redis-cli -p $P_PERSIMMON SHUTDOWN >/dev/null 2>&1 || true
[ -z "$BEFORE" ] || redis-cli -p $P_BEFORE SHUTDOWN >/dev/null 2>&1 || true
