#!/usr/bin/env bash
# Real Redis Sentinels watching a Persimmon server, without replication:
# checks everything Sentinel needs from a monitored server that is not
# replication (PING, INFO, CLIENT SETNAME on both links, SUBSCRIBE and
# PUBLISH on __sentinel__:hello). Three redis-sentinel processes monitor
# one `persimmon serve`; each must discover the other two *through the
# server's hello channel* (Sentinels find each other only that way), see
# the server as a master with no down flag, and the server must list the
# Sentinels' named connections, the pubsub ones with `sub=1`.
#
#   sentinel_hello.sh        (about 10 seconds)
#
# Installs nothing: needs redis-sentinel (Debian: apt-get install
# redis-sentinel) and redis-cli. The persimmon binary is $PERSIMMON_BIN
# (default target/release/persimmon, built when missing). Ports:
# $BASE_PORT (default 27300) to BASE_PORT+3. Every process is stopped by
# its PID on exit, and the temporary directory removed.
set -euo pipefail
cd "$(dirname "$0")/../../.."

BASE_PORT=${BASE_PORT:-27300}
BIN=${PERSIMMON_BIN:-${CARGO_TARGET_DIR:-target}/release/persimmon}
for tool in redis-sentinel redis-cli; do
  command -v "$tool" >/dev/null || { echo "sentinel_hello.sh: $tool is not on PATH" >&2; exit 1; }
done
[ -x "$BIN" ] || cargo build --release --bin persimmon

dir=$(mktemp -d /dev/shm/pubsub-sentinel.XXXXXX 2>/dev/null || mktemp -d)
. crates/persimmon-server/tests/nodes.sh
nodes_init sentinel_hello.sh "$dir"

M=$BASE_PORT
"$BIN" serve --pool "$dir/master.pool" --port "$M" > "$dir/persimmon.log" 2>&1 &
pid[persimmon]=$!
wait_pong "$M" "persimmon serve"

for i in 1 2 3; do
  cat > "$dir/sentinel$i.conf" <<EOF
port $((M + i))
bind 127.0.0.1
dir $dir
sentinel monitor pm 127.0.0.1 $M 2
sentinel down-after-milliseconds pm 3000
EOF
  redis-sentinel "$dir/sentinel$i.conf" > "$dir/sentinel$i.log" 2>&1 &
  pid[sentinel$i]=$!
done

# Hello messages go out every 2 s: all should know each other within 15 s.
deadline=$((SECONDS + 15))
while :; do
  known=0
  for i in 1 2 3; do
    [ "$(sentinel_field $((M + i)) num-other-sentinels)" = 2 ] && known=$((known + 1))
  done
  [ "$known" = 3 ] && break
  [ $SECONDS -lt $deadline ] || fail "Sentinels did not discover each other through the hello channel"
  sleep 0.5
done
for i in 1 2 3; do
  flags=$(sentinel_field $((M + i)) flags)
  [ "$flags" = master ] || fail "sentinel $i sees flags '$flags'"
  [ "$(sentinel_field $((M + i)) role-reported)" = master ] || fail "sentinel $i: role-reported"
done
clients=$(redis-cli -p "$M" CLIENT LIST)
[ "$(grep -c 'name=sentinel-[0-9a-f]*-cmd ' <<<"$clients")" = 3 ] || fail "cmd links: $clients"
[ "$(grep -c 'name=sentinel-[0-9a-f]*-pubsub .* sub=1 ' <<<"$clients")" = 3 ] || fail "pubsub links: $clients"
[ "$(redis-cli -p "$M" PUBSUB NUMSUB __sentinel__:hello | tail -1)" = 3 ] || fail "NUMSUB"
echo "sentinel_hello.sh: ok: 3 Sentinels found each other through persimmon's __sentinel__:hello; each sees a master"
