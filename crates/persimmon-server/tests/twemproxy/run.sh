#!/usr/bin/env bash
# A sharded cluster behind twemproxy, end to end: three `persimmon serve`
# shards on loopback ports (pools under a temporary directory), nutcracker
# in front (ketama over fnv1a_64, redis: true), redis-benchmark through
# the proxy, then verify.py: keys of every type written and read back
# through the proxy and read directly from the shard twemproxy's ketama
# ring puts each on (and absent from the others), and every command
# twemproxy forwards that Persimmon implements run once through the proxy.
#
#   run.sh [--short] [--compare]
#
#   --short    CI size (redis-benchmark -n 20000, 300 keys): well under a
#              minute. Default: -n 200000, 1200 keys.
#   --compare  then the same benchmark and verification through nutcracker
#              over three redis-server shards, and both figures side by side.
#
# Installs nothing: needs nutcracker, redis-benchmark, redis-cli and
# python3 on PATH (and redis-server for --compare); Debian:
# `apt-get install nutcracker redis-tools redis-server`. The persimmon
# binary is $PERSIMMON_BIN (default target/release/persimmon, built when
# missing). Ports: $BASE_PORT (default 27100) to BASE_PORT+19. Every process
# is stopped by its PID on exit (trap), and the temporary directory removed.
set -euo pipefail
cd "$(dirname "$0")/../../../.."

SHORT=0 COMPARE=0
for arg in "$@"; do
  case $arg in
    --short) SHORT=1 ;;
    --compare) COMPARE=1 ;;
    *) echo "usage: $0 [--short] [--compare]" >&2; exit 2 ;;
  esac
done
N=200000 KEYS=1200
[ "$SHORT" = 1 ] && N=20000 KEYS=300
BASE_PORT=${BASE_PORT:-27100}
BIN=${PERSIMMON_BIN:-${CARGO_TARGET_DIR:-target}/release/persimmon}

need() { command -v "$1" >/dev/null || { echo "twemproxy/run.sh: $1 is not on PATH ($2)" >&2; exit 1; }; }
need nutcracker "apt-get install nutcracker"
need redis-benchmark "apt-get install redis-tools"
need redis-cli "apt-get install redis-tools"
need python3 "apt-get install python3"
[ "$COMPARE" = 1 ] && need redis-server "apt-get install redis-server"
if [ ! -x "$BIN" ]; then
  cargo build --release --bin persimmon
fi

dir=$(mktemp -d /dev/shm/pubsub-twemproxy.XXXXXX 2>/dev/null || mktemp -d)
. crates/persimmon-server/tests/nodes.sh
nodes_init twemproxy/run.sh "$dir"

# Three Persimmon shards, each from its own config file (docs/deploy.md).
start_persimmon_shards() { # PORT1 PORT2 PORT3
  local i=0
  for port in "$@"; do
    i=$((i + 1))
    cat > "$dir/shard$i.toml" <<EOF
# Shard $i of the cluster behind twemproxy.
pool = "$dir/shard$i.pool"
pool-size = "256M"
bind = "127.0.0.1"
port = $port
worker-threads = 2
EOF
    "$BIN" serve --config "$dir/shard$i.toml" > "$dir/persimmon$i.log" 2>&1 &
    pid[persimmon$i]=$!
  done
  for port in "$@"; do wait_pong "$port" "persimmon serve"; done
}

start_redis_shards() { # PORT1 PORT2 PORT3
  local i=0
  for port in "$@"; do
    i=$((i + 1))
    mkdir -p "$dir/redis$i"
    redis-server --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
      --dir "$dir/redis$i" > "$dir/redis$i.log" 2>&1 &
    pid[redis$i]=$!
  done
  for port in "$@"; do wait_pong "$port" "redis-server"; done
}

# nutcracker.yml for a pool of three named shards.
write_nutcracker_conf() { # FILE LISTEN PORT1 PORT2 PORT3
  local file=$1 listen=$2
  cat > "$file" <<EOF
cluster:
  listen: 127.0.0.1:$listen
  hash: fnv1a_64
  distribution: ketama
  redis: true
  auto_eject_hosts: false
  preconnect: true
  timeout: 4000
  server_retry_timeout: 2000
  server_failure_limit: 3
  servers:
   - 127.0.0.1:$3:1 shard1
   - 127.0.0.1:$4:1 shard2
   - 127.0.0.1:$5:1 shard3
EOF
}

start_nutcracker() { # NAME LISTEN STATS PORT1 PORT2 PORT3
  local name=$1 listen=$2 stats=$3
  shift 3
  write_nutcracker_conf "$dir/$name.yml" "$listen" "$@"
  nutcracker --test-conf --conf-file "$dir/$name.yml" > "$dir/$name-test.log" 2>&1 || {
    cat "$dir/$name-test.log" >&2; exit 1; }
  nutcracker --conf-file "$dir/$name.yml" --stats-addr 127.0.0.1 --stats-port "$stats" \
    --output "$dir/$name.log" &
  pid[$name-nutcracker]=$!
  wait_pong "$listen" "nutcracker"
}

# Runs the benchmark through the proxy; prints its two result lines and
# keeps them in $dir/NAME.bench.
bench() { # NAME PROXY_PORT
  redis-benchmark -p "$2" -t set,get -P 16 -n "$N" -r 100000 -q 2>/dev/null \
    | tr '\r' '\n' | grep -E '^(SET|GET): [0-9.]+ requests per second' | tee "$dir/$1.bench"
  [ "$(wc -l < "$dir/$1.bench")" = 2 ] || { echo "twemproxy/run.sh: redis-benchmark failed" >&2; exit 1; }
}

verify() { # PROXY_PORT PORT1 PORT2 PORT3
  python3 crates/persimmon-server/tests/twemproxy/verify.py "$1" \
    shard1="$2" shard2="$3" shard3="$4" --keys "$KEYS"
}

P=$BASE_PORT
echo "== persimmon: 3 shards (ports $((P + 1))-$((P + 3))), nutcracker on $P"
start_persimmon_shards $((P + 1)) $((P + 2)) $((P + 3))
start_nutcracker persimmon "$P" $((P + 9)) $((P + 1)) $((P + 2)) $((P + 3))
echo "redis-benchmark -p $P -t set,get -P 16 -n $N -r 100000 -q"
bench persimmon "$P"
verify "$P" $((P + 1)) $((P + 2)) $((P + 3))
for i in 1 2 3; do
  printf 'shard%s keys: %s\n' "$i" "$(redis-cli -p $((P + i)) DBSIZE)"
done

if [ "$COMPARE" = 1 ]; then
  R=$((P + 10))
  echo "== redis-server: 3 shards (ports $((R + 1))-$((R + 3))), nutcracker on $R"
  start_redis_shards $((R + 1)) $((R + 2)) $((R + 3))
  start_nutcracker redis "$R" $((R + 9)) $((R + 1)) $((R + 2)) $((R + 3))
  bench redis "$R"
  verify "$R" $((R + 1)) $((R + 2)) $((R + 3))
  echo "== through twemproxy, redis-benchmark -t set,get -P 16 -n $N (requests per second)"
  printf '%-10s %14s %14s\n' "" persimmon redis-server
  for op in SET GET; do
    printf '%-10s %14s %14s\n' "$op" \
      "$(awk -v op="$op:" '$1 == op {print $2}' "$dir/persimmon.bench")" \
      "$(awk -v op="$op:" '$1 == op {print $2}' "$dir/redis.bench")"
  done
fi
echo "twemproxy/run.sh: ok"
