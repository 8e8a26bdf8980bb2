#!/usr/bin/env bash
# Replication figures for issue 21's closing note (not a CI test; minutes).
#
#  (b) throughput and lag: redis-benchmark -t set -P 16 -n $N -r $N -c 50
#      against a Persimmon master with a Persimmon replica, then against a
#      redis-server master with a redis-server replica (no persistence), in
#      the same run. Prints the benchmark's ops/s and the replica's lag
#      (master_repl_offset minus the offset the replica acknowledged, from
#      the master's INFO replication slave0 line) sampled once a second: the
#      largest, the one when the benchmark ended, and how long the replica
#      took to catch up (lag 0) after the benchmark ended.
#  (c) a Persimmon replica of a redis-server master holding $KEYS keys of
#      every type (repl_figures.py gen): time from the replica's start to
#      full sync (link up and DBSIZE equal), then every key checked on the
#      replica (TYPE, whole value, PTTL) against what was written.
#
#   repl_figures.sh [b] [c]      (both when neither is given)
#
# Environment: PERSIMMON_BIN (default ${CARGO_TARGET_DIR:-target}/release/
# persimmon), N (default 1000000), KEYS (default 1000000), BASE_PORT
# (default 27500; uses +0..+5). Builds nothing; every process is stopped by
# its PID; the temporary directory (/dev/shm/sentinel-figures.*) removed.
set -euo pipefail
cd "$(dirname "$0")/../../.."
BIN=${PERSIMMON_BIN:-${CARGO_TARGET_DIR:-target}/release/persimmon}
N=${N:-1000000}
KEYS=${KEYS:-1000000}
P=${BASE_PORT:-27500}
parts=${*:-b c}
py=crates/persimmon-server/tests/repl_figures.py
[ -x "$BIN" ] || { echo "repl_figures.sh: no $BIN" >&2; exit 1; }

dir=$(mktemp -d /dev/shm/sentinel-figures.XXXXXX)
. crates/persimmon-server/tests/nodes.sh
nodes_init repl_figures.sh "$dir"
pool_size=256M
now() { date +%s.%N; }
since() { echo "$(now) - $1" | bc; }

start() { # start NAME KIND PORT [MASTER_PORT]
  node_conf "$@"
  start_node "$1" "$2" "$3"
}
info() { redis-cli -p "$1" INFO replication 2>/dev/null | tr -d '\r'; }
lag() { # lag MASTER_PORT: master_repl_offset - slave0's acknowledged offset
  info "$1" | awk -F'[:,=]' '/^master_repl_offset:/ {m = $2} /^slave0:/ {for (i = 1; i < NF; i++) if ($i == "offset") s = $(i + 1)} END {if (m == "" || s == "") print "?"; else print m - s}'
}
wait_link() { # wait_link REPLICA_PORT SECONDS
  local deadline=$((SECONDS + $2))
  until link_up "$1"; do [ $SECONDS -lt $deadline ] || fail "replica $1: link not up"; sleep 0.1; done
}

part_b() { # part_b KIND MASTER_PORT
  local kind=$1 m=$2 r=$(($2 + 1))
  start "b-$kind-master" "$kind" "$m"
  start "b-$kind-replica" "$kind" "$r" "$m"
  wait_link "$r" 30
  ( while :; do echo "$(date +%s) $(lag "$m")"; sleep 1; done ) > "$dir/lag-$kind" &
  pid[sampler]=$!
  local out
  out=$(redis-benchmark -p "$m" -t set -P 16 -n "$N" -r "$N" -c 50 -q 2>&1 | tr '\r' '\n' | grep 'requests per second' | tail -1)
  local t_end; t_end=$(now)
  local end_lag; end_lag=$(lag "$m")
  local deadline=$((SECONDS + 300)) l
  while :; do
    l=$(lag "$m")
    [ "$l" = 0 ] && break
    [ $SECONDS -lt $deadline ] || fail "$kind replica did not catch up within 300 s (lag $l)"
    sleep 0.05
  done
  local catchup; catchup=$(since "$t_end")
  stop sampler
  local max; max=$(awk '$2 != "?" && $2 > m {m = $2} END {print m + 0}' "$dir/lag-$kind")
  local dbm dbr; dbm=$(redis-cli -p "$m" DBSIZE); dbr=$(redis-cli -p "$r" DBSIZE)
  printf 'b %-9s master→replica: %s; lag max %d B (1/s samples), at benchmark end %s B, caught up %.2fs after the end; DBSIZE master %s replica %s\n' \
    "$kind" "$out" "$max" "$end_lag" "$catchup" "$dbm" "$dbr"
  [ "$dbm" = "$dbr" ] || fail "$kind: DBSIZE differs after catch-up"
  stop "b-$kind-replica"; stop "b-$kind-master"
}

part_c() {
  local m=$((P + 4)) r=$((P + 5))
  start c-redis-master redis "$m"
  local t0; t0=$(now)
  python3 "$py" gen "$KEYS" | redis-cli -p "$m" --pipe > "$dir/pipe.log" 2>&1 || fail "redis-cli --pipe: $(tail -2 "$dir/pipe.log")"
  local dbm; dbm=$(redis-cli -p "$m" DBSIZE)
  printf 'c redis-server master filled: %s keys in %.1fs (%s)\n' "$dbm" "$(since "$t0")" "$(redis-cli -p "$m" INFO memory | tr -d '\r' | grep '^used_memory_human:')"
  [ "$dbm" = "$KEYS" ] || fail "master holds $dbm keys, not $KEYS"
  t0=$(now)
  start c-persimmon-replica persimmon "$r" "$m"
  wait_link "$r" 600
  local t_link; t_link=$(since "$t0")
  local deadline=$((SECONDS + 120))
  until [ "$(redis-cli -p "$r" DBSIZE)" = "$dbm" ]; do [ $SECONDS -lt $deadline ] || fail "replica DBSIZE $(redis-cli -p "$r" DBSIZE)"; sleep 0.1; done
  printf 'c persimmon replica of redis-server: full sync of %s keys in %.2fs (link up after %.2fs); DBSIZE master %s replica %s\n' \
    "$dbm" "$(since "$t0")" "$t_link" "$dbm" "$(redis-cli -p "$r" DBSIZE)"
  t0=$(now)
  python3 "$py" verify "$r" "$KEYS" | sed 's/^/c replica: /' || fail "replica holds wrong keys"
  printf 'c verification took %.1fs\n' "$(since "$t0")"
  stop c-persimmon-replica; stop c-redis-master
}

for part in $parts; do
  case $part in
    b) part_b persimmon "$P"; part_b redis $((P + 2)) ;;
    c) part_c ;;
    *) fail "unknown part $part" ;;
  esac
done
