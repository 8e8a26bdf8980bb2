#!/usr/bin/env bash
# Sentinel fail-over under load (issue 21, parts 3 and 5): a master and two
# replicas under three real redis-sentinels (quorum 2); a writing client
# (sentinel_failover.py) sends SET k<i> v<i> then WAIT 1 1000 to whatever
# master the Sentinels name and records each i whose WAIT returned >= 1 as
# acknowledged; mid-load the master is killed with SIGKILL. Checks that
#   - the Sentinels promote a replica (get-master-addr-by-name changes),
#   - every acknowledged key is on the new master with its value,
#   - the other replica follows the new master (ROLE),
#   - the old master, restarted on the same pool / config file, is turned
#     into a replica of the new master by the Sentinels and syncs
#     (ROLE connected, and it holds every acknowledged key too),
# and prints
#   failover: kill→first write Xs, acknowledged N, lost L, rejoined yes/no
# Exits non-zero when a key is lost, or fail-over or rejoin did not happen.
#
#   sentinel_failover.sh [--short] [--redis]
#     --short   CI run: 3 s of load before the kill, 2 s after (< 60 s)
#     --redis   the same with redis-server (no persistence) for comparison
#
# Builds nothing: the binary is $PERSIMMON_BIN (default
# ${CARGO_TARGET_DIR:-target}/release/persimmon). Needs redis-sentinel,
# redis-cli, python3 (and redis-server for --redis). Ports $BASE_PORT
# (default 27400): +0 master, +1 +2 replicas, +11..+13 Sentinels. Every
# process is stopped by its PID on exit; the temporary directory (on
# /dev/shm) is removed.
set -euo pipefail
cd "$(dirname "$0")/../../.."

short=0 kind=persimmon
for a in "$@"; do
  case $a in
    --short) short=1 ;;
    --redis) kind=redis ;;
    *) echo "usage: $0 [--short] [--redis]" >&2; exit 2 ;;
  esac
done
BASE_PORT=${BASE_PORT:-27400}
BIN=${PERSIMMON_BIN:-${CARGO_TARGET_DIR:-target}/release/persimmon}
tools="redis-sentinel redis-cli python3"
[ $kind = redis ] && tools="$tools redis-server"
for tool in $tools; do
  command -v "$tool" >/dev/null || { echo "sentinel_failover.sh: $tool is not on PATH" >&2; exit 1; }
done
[ $kind = redis ] || [ -x "$BIN" ] || { echo "sentinel_failover.sh: no $BIN (set PERSIMMON_BIN)" >&2; exit 1; }
if [ $short = 1 ]; then before=3 after=2; else before=15 after=10; fi
client=crates/persimmon-server/tests/sentinel_failover.py

dir=$(mktemp -d /dev/shm/sentinel-failover.XXXXXX)
. crates/persimmon-server/tests/nodes.sh
nodes_init "sentinel_failover.sh ($kind)" "$dir"
now() { date +%s.%N; }

M=$BASE_PORT
S=($((M + 11)) $((M + 12)) $((M + 13)))
SPORTS=$(IFS=,; echo "${S[*]}")

node_conf master $kind $M
node_conf replica1 $kind $((M + 1)) $M
node_conf replica2 $kind $((M + 2)) $M
start_node master $kind $M
start_node replica1 $kind $((M + 1))
start_node replica2 $kind $((M + 2))

deadline=$((SECONDS + 20))
until link_up $((M + 1)) && link_up $((M + 2)); do
  [ $SECONDS -lt $deadline ] || fail "replicas did not sync with the master"
  sleep 0.2
done

for i in 1 2 3; do
  cat > "$dir/sentinel$i.conf" <<SEOF
port ${S[$((i - 1))]}
bind 127.0.0.1
dir $dir
sentinel monitor pm 127.0.0.1 $M 2
sentinel down-after-milliseconds pm 1000
sentinel failover-timeout pm 5000
sentinel parallel-syncs pm 1
SEOF
  redis-sentinel "$dir/sentinel$i.conf" > "$dir/sentinel$i.log" 2>&1 &
  pid[sentinel$i]=$!
done
# Every Sentinel must know both replicas and the other two Sentinels.
deadline=$((SECONDS + 20))
while :; do
  ready=0
  for s in "${S[@]}"; do
    [ "$(sentinel_field "$s" num-slaves)" = 2 ] && [ "$(sentinel_field "$s" num-other-sentinels)" = 2 ] && ready=$((ready + 1))
  done
  [ $ready = 3 ] && break
  [ $SECONDS -lt $deadline ] || fail "Sentinels did not discover the replicas and each other"
  sleep 0.5
done
master_by() { redis-cli -p "$1" SENTINEL get-master-addr-by-name pm 2>/dev/null | tail -1; }

python3 "$client" load "$SPORTS" pm $M "$dir/stop" "$dir" > "$dir/client.log" 2>&1 &
pid[client]=$!
sleep $before
kill -0 "${pid[client]}" 2>/dev/null || fail "the client died"
pre_acked=$(wc -l < "$dir/acked")
[ "$pre_acked" -gt 0 ] || fail "no write was acknowledged before the kill"

exec 4>&2 2>/dev/null  # no "Killed" job report from bash
kill -9 "${pid[master]}"
t_kill=$(now)
wait "${pid[master]}" || true
exec 2>&4 4>&-
unset "pid[master]"

# Fail-over: all three Sentinels name a new master.
deadline=$((SECONDS + 40))
while :; do
  new=$(master_by "${S[0]}")
  [ -n "$new" ] && [ "$new" != $M ] && [ "$(master_by "${S[1]}")" = "$new" ] && [ "$(master_by "${S[2]}")" = "$new" ] && break
  [ $SECONDS -lt $deadline ] || fail "no fail-over within 40 s (Sentinels say ${new:-nothing})"
  sleep 0.2
done
t_promoted=$(now)
deadline=$((SECONDS + 20))
until [ -s "$dir/first_new_write" ]; do
  [ $SECONDS -lt $deadline ] || fail "the new master accepted no write within 20 s of its promotion"
  sleep 0.1
done
sleep $after
touch "$dir/stop"
for _ in $(seq 100); do kill -0 "${pid[client]}" 2>/dev/null || break; sleep 0.1; done
stop client
cat "$dir/client.log"
read -r t_first first_port < "$dir/first_new_write"
[ "$first_port" = "$new" ] || fail "first write after the kill went to $first_port, Sentinels name $new"
acked=$(wc -l < "$dir/acked")

result=$(python3 "$client" verify "$new" "$dir/acked")
echo "new master $new: $result"
lost=$(awk '/^checked/ {print $4}' <<<"$result")

# The other replica follows the new master.
other=$((M + 1)); [ "$new" = $other ] && other=$((M + 2))
role_of() { redis-cli -p "$1" ROLE 2>/dev/null | tr '\n' ' '; }
deadline=$((SECONDS + 20))
until [[ "$(role_of $other)" == "slave 127.0.0.1 $new connected "* ]]; do
  [ $SECONDS -lt $deadline ] || fail "replica $other does not follow $new: ROLE $(role_of $other)"
  sleep 0.2
done
echo "replica $other: ROLE $(role_of $other)"
if [ $kind = persimmon ]; then
  # Sentinel's CONFIG REWRITE (in the same EXEC as its REPLICAOF) wrote
  # each new role into the server's config file.
  name_of() { [ "$1" = $((M + 1)) ] && echo replica1 || echo replica2; }
  deadline=$((SECONDS + 10))
  until ! grep -q '^replicaof' "$dir/$(name_of "$new").toml" &&
    grep -q "^replicaof = \"127.0.0.1 $new\"" "$dir/$(name_of $other).toml"; do
    [ $SECONDS -lt $deadline ] || fail "config files after CONFIG REWRITE: $(grep -H replicaof "$dir"/*.toml)"
    sleep 0.2
  done
  echo "config files rewritten: $(name_of "$new").toml without replicaof, $(name_of $other).toml: $(grep '^replicaof' "$dir/$(name_of $other).toml")"
fi
[[ "$(role_of "$new")" == "master "* ]] || fail "new master $new: ROLE $(role_of "$new")"

# The old master comes back on the same pool and config file; the
# Sentinels must turn it into a replica of the new master.
start_node master $kind $M
t_restart=$(now)
rejoined=no
deadline=$((SECONDS + 40))
while [ $SECONDS -lt $deadline ]; do
  if [[ "$(role_of $M)" == "slave 127.0.0.1 $new connected "* ]]; then rejoined=yes; break; fi
  sleep 0.2
done
t_rejoin=$(now)
echo "old master $M after restart: ROLE $(role_of $M)"
if [ $rejoined = yes ]; then
  printf 'old master rejoined as a replica of %s %.1fs after its restart\n' "$new" "$(echo "$t_rejoin - $t_restart" | bc)"
  old_result=$(python3 "$client" verify $M "$dir/acked")
  echo "old master $M (now a replica): $old_result"
  [ "$(awk '/^checked/ {print $4}' <<<"$old_result")" = 0 ] || fail "the rejoined old master misses acknowledged keys"
fi

printf 'failover: kill→first write %.2fs, acknowledged %d, lost %d, rejoined %s (%s; kill→promotion %.2fs; %d acknowledged before the kill)\n' \
  "$(echo "$t_first - $t_kill" | bc)" "$acked" "$lost" "$rejoined" "$kind" "$(echo "$t_promoted - $t_kill" | bc)" "$pre_acked"
[ "$lost" = 0 ] || fail "$lost acknowledged writes lost"
[ $rejoined = yes ] || fail "the old master did not rejoin as a replica of $new"
echo "sentinel_failover.sh: ok ($kind)"
