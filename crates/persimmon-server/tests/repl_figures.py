#!/usr/bin/env python3
"""Data set and checks for repl_figures.sh (stdlib only, raw RESP).

  gen N            RESP commands for N keys on stdout (for redis-cli --pipe)
  verify PORT N    checks the N keys on PORT against what gen wrote

Key i (d:<i>) has type i % 5: 0 string, 1 hash, 2 list, 3 set, 4 zset.
Collections have 3 elements, every 1000th one 300 (so redis-server stores
both its small encodings, listpack/intset, and its large ones, hashtable/
quicklist/skiplist); half of the sets hold integers (intset). Every 7th key
has a TTL of 3600 s + i ms. verify checks TYPE, the whole value (GET,
HGETALL, LRANGE, SMEMBERS, ZRANGE WITHSCORES), and that keys with a TTL
have a PTTL in (0, 3600 s + i ms] and the others -1.
"""
import socket
import sys


def size(i):
    return 300 if i % 1000 == 0 else 3


def expected(i):
    t, n = i % 5, size(i)
    if t == 0:
        return "string", b"value-%d" % i
    if t == 1:
        return "hash", {b"f%d" % j: b"%d-%d" % (i, j) for j in range(n)}
    if t == 2:
        return "list", [b"e%d-%d" % (i, j) for j in range(n)]
    if t == 3:
        if i % 2:
            return "set", {b"%d" % (i * 1000 + j) for j in range(n)}
        return "set", {b"m%d-%d" % (i, j) for j in range(n)}
    return "zset", [(b"z%d" % j, float(j) + 0.5) for j in range(n)]


def ttl_ms(i):
    return 3600 * 1000 + i if i % 7 == 0 else None


def cmd(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        a = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(a), a))
    return b"".join(out)


def gen(n):
    w = sys.stdout.buffer
    for i in range(n):
        k = b"d:%d" % i
        t, v = expected(i)
        if t == "string":
            w.write(cmd(b"SET", k, v))
        elif t == "hash":
            args = [b"HSET", k]
            for f, x in v.items():
                args += [f, x]
            w.write(cmd(*args))
        elif t == "list":
            w.write(cmd(b"RPUSH", k, *v))
        elif t == "set":
            w.write(cmd(b"SADD", k, *sorted(v)))
        else:
            args = [b"ZADD", k]
            for m, s in v:
                args += [repr(s).encode(), m]
            w.write(cmd(*args))
        ms = ttl_ms(i)
        if ms is not None:
            w.write(cmd(b"PEXPIRE", k, ms))


class Reader:
    def __init__(self, sock):
        self.rf = sock.makefile("rb", buffering=1 << 20)

    def read(self):
        line = self.rf.readline()
        kind, rest = line[:1], line[1:-2]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return ("ERR", rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self.rf.read(n + 2)[:-2]
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.read() for _ in range(n)]
        raise ValueError("bad reply %r" % line)


def verify(port, n):
    s = socket.create_connection(("127.0.0.1", port))
    r = Reader(s)
    bad = []
    batch = 2000
    for start in range(0, n, batch):
        ids = range(start, min(n, start + batch))
        out = []
        for i in ids:
            k = b"d:%d" % i
            t, _ = expected(i)
            out.append(cmd(b"TYPE", k))
            out.append({"string": cmd(b"GET", k), "hash": cmd(b"HGETALL", k),
                        "list": cmd(b"LRANGE", k, 0, -1), "set": cmd(b"SMEMBERS", k),
                        "zset": cmd(b"ZRANGE", k, 0, -1, b"WITHSCORES")}[t])
            out.append(cmd(b"PTTL", k))
        s.sendall(b"".join(out))
        for i in ids:
            t, v = expected(i)
            typ, val, pttl = r.read(), r.read(), r.read()
            if t == "hash" and isinstance(val, list):
                val = dict(zip(val[0::2], val[1::2]))
            elif t == "set" and isinstance(val, list):
                val = set(val)
            elif t == "zset" and isinstance(val, list):
                val = [(m, float(x)) for m, x in zip(val[0::2], val[1::2])]
            ms = ttl_ms(i)
            ttl_ok = pttl == -1 if ms is None else isinstance(pttl, int) and 0 < pttl <= ms
            if typ != t or val != v or not ttl_ok:
                bad.append((i, typ, pttl))
    print("verified %d keys: %d wrong" % (n, len(bad)))
    for b in bad[:5]:
        print("  wrong: d:%d type %r pttl %r" % b)
    return len(bad)


if __name__ == "__main__":
    if sys.argv[1] == "gen":
        gen(int(sys.argv[2]))
    elif sys.argv[1] == "verify":
        sys.exit(1 if verify(int(sys.argv[2]), int(sys.argv[3])) else 0)
    else:
        sys.exit("usage: repl_figures.py gen N | verify PORT N")
