#!/usr/bin/env python3
"""Writing client and checks for sentinel_failover.sh (stdlib only, raw RESP).

  load   SENTINEL_PORTS NAME OLD_MASTER_PORT STOP_FILE OUT_DIR
      Writes SET k<i> v<i> then WAIT 1 1000 to whatever master the Sentinels
      name, re-asking them after any error. Every i whose WAIT returned >= 1
      goes to OUT_DIR/acked; the wall-clock time of the first SET a master
      other than OLD_MASTER_PORT accepted goes to OUT_DIR/first_new_write.
      Stops when STOP_FILE exists.
  verify PORT ACKED_FILE
      GETs every acknowledged key from PORT; prints "checked N lost L" and
      the first few lost keys.
"""
import os
import socket
import sys
import time


class Conn:
    def __init__(self, port, timeout=3.0):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
        self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.rf = self.sock.makefile("rb")

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass

    def send(self, *cmds):
        out = bytearray()
        for args in cmds:
            out += b"*%d\r\n" % len(args)
            for a in args:
                a = a if isinstance(a, bytes) else str(a).encode()
                out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)

    def read(self):
        line = self.rf.readline()
        if not line:
            raise ConnectionError("connection closed")
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return RespError(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            if n < 0:
                return None
            data = self.rf.read(n + 2)
            return data[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ConnectionError("bad reply %r" % line)

    def call(self, *args):
        self.send(args)
        return self.read()


class RespError(str):
    pass


def master_port(sentinel_ports, name):
    """The master port most Sentinels name (None when none answers)."""
    votes = {}
    for p in sentinel_ports:
        try:
            c = Conn(p, timeout=0.5)
            r = c.call("SENTINEL", "get-master-addr-by-name", name)
            c.close()
            if isinstance(r, list) and len(r) == 2:
                port = int(r[1])
                votes[port] = votes.get(port, 0) + 1
        except (OSError, ConnectionError, ValueError):
            pass
    return max(votes, key=votes.get) if votes else None


def load(sentinel_ports, name, old_port, stop_file, out_dir):
    acked = open(os.path.join(out_dir, "acked"), "w")
    first_new = None
    i = sets_ok = errors = 0
    conn, port = None, None
    while not os.path.exists(stop_file):
        if conn is None:
            port = master_port(sentinel_ports, name)
            if port is None:
                time.sleep(0.05)
                continue
            try:
                conn = Conn(port, timeout=2.0)
            except OSError:
                conn = None
                time.sleep(0.05)
                continue
        i += 1
        try:
            r = conn.call("SET", "k%d" % i, "v%d" % i)
            if r != "OK":  # READONLY from a demoted master, or anything else
                raise ConnectionError("SET: %r" % r)
            sets_ok += 1
            if first_new is None and port != old_port:
                first_new = time.time()
                with open(os.path.join(out_dir, "first_new_write"), "w") as f:
                    f.write("%.6f %d\n" % (first_new, port))
            w = conn.call("WAIT", 1, 1000)
            if isinstance(w, int) and w >= 1:
                acked.write("%d\n" % i)
                acked.flush()
        except (OSError, ConnectionError) as e:
            errors += 1
            if conn is not None:
                conn.close()
            conn = None
            time.sleep(0.05)
    acked.close()
    print("load: %d SETs sent, %d accepted, %d errors/reconnects" % (i, sets_ok, errors))


def verify(port, acked_file):
    keys = [int(x) for x in open(acked_file).read().split()]
    c = Conn(port, timeout=10.0)
    lost = []
    for start in range(0, len(keys), 500):
        batch = keys[start:start + 500]
        c.send(*[("GET", "k%d" % k) for k in batch])
        for k in batch:
            v = c.read()
            if v != b"v%d" % k:
                lost.append((k, v))
    c.close()
    print("checked %d lost %d" % (len(keys), len(lost)))
    for k, v in lost[:5]:
        print("  lost k%d: %r" % (k, v))


if __name__ == "__main__":
    if sys.argv[1] == "load":
        load([int(p) for p in sys.argv[2].split(",")], sys.argv[3], int(sys.argv[4]),
             sys.argv[5], sys.argv[6])
    elif sys.argv[1] == "verify":
        verify(int(sys.argv[2]), sys.argv[3])
    else:
        sys.exit("usage: sentinel_failover.py load|verify ...")
