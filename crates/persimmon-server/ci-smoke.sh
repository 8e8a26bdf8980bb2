#!/usr/bin/env bash
# Smoke test of `persimmon serve` with the real Redis tools: starts the
# release server on a /dev/shm pool, checks replies with redis-cli, runs
# redis-benchmark (which must report no error), stops the server with
# `redis-cli SHUTDOWN` and checks the pool. The pool is created with the
# ordered index, so KRANGE and KPREFIX are checked too. On the way it kills
# the server with SIGKILL in the middle of a stream of MULTI/EXEC transfers
# between two keys, restarts it and checks that no transfer is half-applied
# (EXEC is one crash-atomic batch). Fails on any error.
#
# Called from .ci/run:   bash crates/persimmon-server/ci-smoke.sh
# Environment: PERSIMMON_BIN (default target/release/persimmon, built when
# missing), PORT (default 6479), BENCH_N (default 100000).
set -euo pipefail
cd "$(dirname "$0")/../.."

BIN=${PERSIMMON_BIN:-target/release/persimmon}
PORT=${PORT:-6479}
BENCH_N=${BENCH_N:-100000}

if ! command -v redis-cli >/dev/null || ! command -v redis-benchmark >/dev/null; then
  apt-get update -qq && apt-get install -y -qq redis-tools >/dev/null
fi
if [ ! -x "$BIN" ]; then
  cargo build --release --bin persimmon
fi

dir=$(mktemp -d /dev/shm/persimmon-serve-ci.XXXXXX)
pid=
cleanup() {
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill -KILL "$pid" 2>/dev/null || true; fi
  rm -rf "$dir"
}
trap cleanup EXIT

start_server() {
  "$BIN" serve --pool "$dir/smoke.pool" --port "$PORT" --ordered-index >"$dir/serve.log" 2>&1 &
  pid=$!
  for _ in $(seq 300); do
    grep -q "listening on" "$dir/serve.log" && break
    kill -0 "$pid" 2>/dev/null || { cat "$dir/serve.log"; echo "ci-smoke: server exited"; exit 1; }
    sleep 0.1
  done
  grep "listening on" "$dir/serve.log" || { cat "$dir/serve.log"; echo "ci-smoke: no listening line"; exit 1; }
}
start_server

cli() { redis-cli -p "$PORT" "$@"; }
expect() { # expect WANT CMD...: the reply of redis-cli CMD must be WANT
  local want=$1; shift
  local got
  got=$(cli "$@")
  if [ "$got" != "$want" ]; then
    echo "ci-smoke: redis-cli $* replied '$got', expected '$want'"; exit 1
  fi
  echo "ok: $* -> $(echo "$got" | head -1)"
}

expect PONG PING
expect OK SET greeting "hello world"
expect "hello world" GET greeting
expect 1 INCR counter
expect 11 INCRBY counter 10
expect 2 HSET user:1 name Ada born 1815
expect Ada HGET user:1 name
expect hash TYPE user:1
expect "WRONGTYPE Operation against a key holding the wrong kind of value" GET user:1
expect "ERR unknown command 'NOSUCH', with args beginning with: 'x' " NOSUCH x
expect 3 DBSIZE
# The ordered key space (the pool was created with --ordered-index).
expect "$(printf 'counter\ngreeting\nuser:1')" KRANGE - +
expect user:1 KRANGE - + REV LIMIT 1
expect "$(printf 'greeting\nhello world')" KPREFIX gr WITHVALUES
expect "$(printf 'save\n')" CONFIG GET save
cli INFO persistence | grep -q "^durability:process-crash" || { echo "ci-smoke: INFO persistence lacks durability"; exit 1; }
echo "ok: INFO persistence -> durability:process-crash"
# RESP3 (redis-cli -3 sends HELLO 3; without a tty it prints a map as
# "key value" lines).
cli -3 HELLO 3 | grep -qx "proto 3" || { echo "ci-smoke: HELLO 3: $(cli -3 HELLO 3)"; exit 1; }
expect "$(printf 'born 1815\nname Ada')" -3 HGETALL user:1  # fields in byte order

# Expiry, databases, transactions.
expect OK SET session:1 token EX 100
expect 100 TTL session:1
expect OK SELECT 9
printf 'SELECT 9\nSET nine 9\nMULTI\nINCR nine\nEXEC\n' | cli >/dev/null
expect 10 -n 9 GET nine
expect OK SWAPDB 0 9
expect 10 GET nine
expect OK SWAPDB 0 9
expect "" GET nine
# SIGKILL in the middle of MULTI/EXEC transfers: afterwards every transfer
# is whole (a + b unchanged) and some were acknowledged.
expect OK MSET acct:a 1000000 acct:b 0
for _ in $(seq 20000); do printf 'MULTI\nDECRBY acct:a 5\nINCRBY acct:b 5\nEXEC\n'; done >"$dir/transfers.txt"
cli <"$dir/transfers.txt" >/dev/null 2>&1 &
writer=$!
sleep 1
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
wait "$writer" 2>/dev/null || true
start_server
a=$(cli GET acct:a); b=$(cli GET acct:b)
if [ $((a + b)) -ne 1000000 ] || [ $((b % 5)) -ne 0 ] || [ "$b" -le 0 ]; then
  echo "ci-smoke: after SIGKILL a=$a b=$b: a transfer was half-applied (or none acknowledged)"; exit 1
fi
echo "ok: SIGKILL during MULTI/EXEC transfers: a=$a b=$b, sum kept"
expect 10 -n 9 GET nine

# SIGKILL in the middle of collection commands (issue 17). Elements cycle
# between two lists of several pages (RPOPLPUSH), a sorted set and a hash
# count the same events (MULTI: ZINCRBY + HINCRBY), a large set is deleted
# and its name reused. Afterwards: every element is in exactly one list,
# the sorted set and the hash agree, the set is the new one.
N=3000
seq 1 "$N" | sed 's/^/RPUSH q e/' | cli >/dev/null
seq 1 5000 | sed 's/^/SADD big old/' | cli >/dev/null
for i in $(seq 8000); do
  m=$((i % 300))
  printf 'RPOPLPUSH q r\nRPOPLPUSH q r\nRPOPLPUSH r q\nMULTI\nZINCRBY z 1 m%d\nHINCRBY h m%d 1\nEXEC\n' "$m" "$m"
  if [ "$i" -eq 100 ]; then printf 'DEL big\nSADD big new1 new2 new3\n'; fi
done >"$dir/collections.txt"
cli <"$dir/collections.txt" >/dev/null 2>&1 &
writer=$!
sleep 1
kill -KILL "$pid"; wait "$pid" 2>/dev/null || true
wait "$writer" 2>/dev/null || true
start_server
lq=$(cli LLEN q); lr=$(cli LLEN r)
distinct=$( (cli LRANGE q 0 -1; cli LRANGE r 0 -1) | sort -u | wc -l)
if [ $((lq + lr)) -ne "$N" ] || [ "$distinct" -ne "$N" ] || [ "$lr" -eq 0 ]; then
  echo "ci-smoke: after SIGKILL the lists hold q=$lq r=$lr ($distinct distinct), expected $N in all"; exit 1
fi
zs=$(cli ZRANGE z 0 -1 WITHSCORES | paste - - | awk '{print $1, $2}' | sort)
hs=$(cli HGETALL h | paste - - | awk '{print $1, $2}' | sort)
if [ "$zs" != "$hs" ] || [ -z "$zs" ]; then
  echo "ci-smoke: after SIGKILL the sorted set and the hash disagree"; exit 1
fi
ordered=$(cli ZRANGE z 0 -1 WITHSCORES | paste - - | awk '{print $2}')
[ "$ordered" = "$(echo "$ordered" | sort -n)" ] || { echo "ci-smoke: ZRANGE not in score order after restart"; exit 1; }
expect "$(printf 'new1\nnew2\nnew3')" SORT big ALPHA
echo "ok: SIGKILL during collection commands: lists q=$lq r=$lr, $(echo "$zs" | wc -l) counters agree, the reused set is whole"

out=$(redis-benchmark -p "$PORT" -t set,get,incr,mset -n "$BENCH_N" -P 16 -q 2>&1 | tr '\r' '\n' | grep -v '^ *$' | grep -v 'rps=' || true)
echo "$out"
if echo "$out" | grep -qiE "error|denied|refused"; then
  echo "ci-smoke: redis-benchmark reported errors"; exit 1
fi
[ "$(echo "$out" | grep -c "requests per second")" -eq 4 ] || { echo "ci-smoke: redis-benchmark did not finish all 4 tests"; exit 1; }
expect "$BENCH_N" GET counter:__rand_int__

cli SHUTDOWN || true
for _ in $(seq 300); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "ci-smoke: server still running after SHUTDOWN"; exit 1; fi
wait "$pid" || { cat "$dir/serve.log"; echo "ci-smoke: server exited non-zero"; exit 1; }
pid=
cat "$dir/serve.log"
grep -q "pool $dir/smoke.pool closed" "$dir/serve.log" || { echo "ci-smoke: pool not closed cleanly"; exit 1; }
"$BIN" check --pool "$dir/smoke.pool"
echo "ci-smoke: ok"
