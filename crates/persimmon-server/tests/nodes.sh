# Sourced (not run) by the test scripts that start servers on loopback:
# sentinel_hello.sh, sentinel_failover.sh, twemproxy/run.sh,
# repl_figures.sh. One job: the processes a script starts, from their
# config files to their end.
#
# Invariants: every process is kept in `pid` by a name and stopped by its
# PID only (never by a name pattern, so other servers on the machine are
# safe); on exit every process still kept is stopped and the script's
# temporary directory removed; a node's log is $dir/NAME.log, which `fail`
# shows.
#
#   nodes_init ME DIR     before anything else: the script's name for
#                         messages, its temporary directory; sets the trap
#   pid[NAME]=$!          keep a process the script started itself

declare -gA pid=()

nodes_init() { # nodes_init ME DIR
  me=$1 dir=$2
  trap nodes_cleanup EXIT
}

# stop NAME: SIGTERM, SIGKILL after 10 s, reaped; no-op for an unknown NAME.
stop() {
  local p=${pid[$1]:-}
  [ -n "$p" ] || return 0
  kill "$p" 2>/dev/null || true
  for _ in $(seq 100); do kill -0 "$p" 2>/dev/null || break; sleep 0.1; done
  kill -9 "$p" 2>/dev/null || true
  { wait "$p"; } 2>/dev/null || true
  unset "pid[$1]"
}

nodes_cleanup() {
  for n in "${!pid[@]}"; do stop "$n"; done
  rm -rf "$dir"
}

# fail MESSAGE: the message, the end of every log, exit 1.
fail() {
  echo "$me: FAILED: $*" >&2
  for f in "$dir"/*.log; do
    [ -e "$f" ] || continue
    echo "--- $f" >&2
    tail -8 "$f" >&2
  done
  exit 1
}

# wait_pong PORT WHAT: until PORT answers PING (10 s at most), else fail.
wait_pong() {
  for _ in $(seq 100); do
    redis-cli -p "$1" PING 2>/dev/null | grep -q PONG && return 0
    sleep 0.1
  done
  fail "$2 on port $1 did not answer PING"
}

# node_conf NAME KIND PORT [MASTER_PORT]: writes node NAME's config file,
# $dir/NAME.toml for KIND persimmon (pool $dir/NAME.pool, of $pool_size
# when the script sets it), $dir/NAME.conf for KIND redis (no persistence);
# a replica of MASTER_PORT when given.
node_conf() {
  local n=$1 kind=$2 port=$3 master=${4:-}
  if [ "$kind" = persimmon ]; then
    {
      echo "pool = \"$dir/$n.pool\""
      [ -z "${pool_size:-}" ] || echo "pool-size = \"$pool_size\""
      echo "port = $port"
      echo "worker-threads = 2"
      [ -z "$master" ] || echo "replicaof = \"127.0.0.1 $master\""
    } > "$dir/$n.toml"
  else
    {
      echo "port $port"
      echo "bind 127.0.0.1"
      echo "dir $dir"
      echo "dbfilename $n.rdb"
      echo 'save ""'
      echo "appendonly no"
      [ -z "$master" ] || echo "replicaof 127.0.0.1 $master"
    } > "$dir/$n.conf"
  fi
}

# start_node NAME KIND PORT: starts node NAME from the config file
# node_conf wrote (or a server rewrote since: a restart keeps it), keeps
# its PID, waits for PORT to answer. $BIN is the persimmon binary.
start_node() {
  if [ "$2" = persimmon ]; then
    "$BIN" serve --config "$dir/$1.toml" >> "$dir/$1.log" 2>&1 &
  else
    redis-server "$dir/$1.conf" >> "$dir/$1.log" 2>&1 &
  fi
  pid[$1]=$!
  wait_pong "$3" "$1"
}

# link_up PORT: whether the server on PORT is a replica with its link up.
link_up() {
  redis-cli -p "$1" INFO replication 2>/dev/null | tr -d '\r' | grep -q '^master_link_status:up'
}

# sentinel_field PORT NAME: field NAME of SENTINEL MASTER pm on the
# Sentinel at PORT (empty when it does not answer).
sentinel_field() {
  redis-cli -p "$1" SENTINEL MASTER pm 2>/dev/null | awk -v f="$2" 'prev == f {print; exit} {prev = $0}'
}
