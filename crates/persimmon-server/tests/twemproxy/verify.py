#!/usr/bin/env python3
"""Checks a sharded deployment behind twemproxy (nutcracker, ketama over
fnv1a_64, `redis: true`) from the outside, with no Redis client library:

1. Placement: keys of every type (string, string with a TTL, hash, list,
   set, sorted set) are written through the proxy, read back through the
   proxy, then read directly from the shard twemproxy's ketama ring puts
   each key on (computed here the way nc_ketama.c builds and searches its
   continuum), and must be absent from the other shards. Every shard must
   get some keys.
2. Coverage: every command twemproxy 0.5.0 forwards (its notes/redis.md)
   that the server implements is sent through the proxy once, and its
   reply checked.

usage: verify.py PROXY_PORT NAME=PORT NAME=PORT ... [--keys N]
Exit status 0 when everything matched; the first mismatch is printed.
"""

import hashlib
import socket
import sys


# --- a minimal RESP client ---------------------------------------------------

class Error(Exception):
    pass


class Conn:
    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port), timeout=20)
        self.buf = b""

    def _line(self):
        while b"\r\n" not in self.buf:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Error("connection closed")
            self.buf += chunk
        line, self.buf = self.buf.split(b"\r\n", 1)
        return line

    def _exact(self, n):
        while len(self.buf) < n + 2:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise Error("connection closed")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n + 2:]
        return data

    def reply(self):
        line = self._line()
        kind, rest = line[:1], line[1:]
        if kind == b"+":
            return rest.decode()
        if kind == b"-":
            return Error(rest.decode())
        if kind == b":":
            return int(rest)
        if kind == b"$":
            n = int(rest)
            return None if n < 0 else self._exact(n).decode("latin-1")
        if kind == b"*":
            n = int(rest)
            return None if n < 0 else [self.reply() for _ in range(n)]
        raise Error("unexpected reply %r" % line)

    def __call__(self, *args):
        out = b"*%d\r\n" % len(args)
        for a in args:
            a = str(a).encode("latin-1")
            out += b"$%d\r\n%s\r\n" % (len(a), a)
        self.sock.sendall(out)
        return self.reply()


# --- twemproxy's ketama ring (nc_ketama.c) ------------------------------------

POINTS_PER_SERVER = 160
POINTS_PER_HASH = 4


def fnv1a_64(key):
    """twemproxy's hash_fnv1a_64: FNV-1a in 32-bit arithmetic (the 64-bit
    offset basis and prime truncated), as its uint32_t code computes it."""
    h = 0xCBF29CE484222325 & 0xFFFFFFFF
    for byte in key:
        h ^= byte
        h = (h * (0x100000001B3 & 0xFFFFFFFF)) & 0xFFFFFFFF
    return h


def ketama_points(name, n):
    points = []
    for index in range(n // POINTS_PER_HASH):
        digest = hashlib.md5(("%s-%d" % (name, index)).encode()).digest()
        for a in range(POINTS_PER_HASH):
            d = digest[a * 4:a * 4 + 4]
            points.append(d[3] << 24 | d[2] << 16 | d[1] << 8 | d[0])
    return points


def ring(names):
    """The sorted continuum: (point, server index); equal weights."""
    per_server = int((1.0 / len(names)) * POINTS_PER_SERVER / 4 * len(names) + 1e-10) * 4
    continuum = []
    for i, name in enumerate(names):
        continuum += [(p, i) for p in ketama_points(name, per_server)]
    continuum.sort(key=lambda pair: pair[0])
    return continuum


def shard_of(continuum, key):
    h = fnv1a_64(key.encode())
    lo, hi = 0, len(continuum)
    while lo < hi:
        mid = (lo + hi) // 2
        if continuum[mid][0] < h:
            lo = mid + 1
        else:
            hi = mid
    return continuum[lo if lo < len(continuum) else 0][1]


# --- the checks ---------------------------------------------------------------

def fail(message):
    print("verify: FAILED: " + message)
    sys.exit(1)


def expect(got, want, what):
    if isinstance(got, Error) or got != want:
        fail("%s: got %r, expected %r" % (what, got, want))


def write_key(c, kind, key, i):
    if kind == "string":
        expect(c("SET", key, "v%d" % i), "OK", "SET " + key)
    elif kind == "ttl":
        expect(c("SET", key, "t%d" % i, "EX", 1000), "OK", "SET EX " + key)
    elif kind == "hash":
        expect(c("HSET", key, "f1", i, "f2", "x"), 2, "HSET " + key)
    elif kind == "list":
        expect(c("RPUSH", key, "a", i, "c"), 3, "RPUSH " + key)
    elif kind == "set":
        expect(c("SADD", key, "m1", "m%d" % i), 2, "SADD " + key)
    elif kind == "zset":
        expect(c("ZADD", key, 1, "one", i + 2, "two"), 2, "ZADD " + key)


def read_key(c, kind, key, i, where):
    what = "%s %s" % (where, key)
    if kind == "string":
        expect(c("GET", key), "v%d" % i, what)
    elif kind == "ttl":
        expect(c("GET", key), "t%d" % i, what)
        ttl = c("TTL", key)
        if not isinstance(ttl, int) or not 900 < ttl <= 1000:
            fail("%s: TTL %r" % (what, ttl))
    elif kind == "hash":
        expect(c("HGETALL", key), ["f1", str(i), "f2", "x"], what)
    elif kind == "list":
        expect(c("LRANGE", key, 0, -1), ["a", str(i), "c"], what)
    elif kind == "set":
        expect(sorted(c("SMEMBERS", key)), sorted(["m1", "m%d" % i]), what)
    elif kind == "zset":
        expect(c("ZRANGE", key, 0, -1, "WITHSCORES"), ["one", "1", "two", str(i + 2)], what)


KINDS = ["string", "ttl", "hash", "list", "set", "zset"]


def placement(proxy, shards, names, nkeys):
    continuum = ring(names)
    per_shard = [0] * len(shards)
    keys = []
    for i in range(nkeys):
        kind = KINDS[i % len(KINDS)]
        key = "verify:%s:%d" % (kind, i)
        keys.append((kind, key, i))
        write_key(proxy, kind, key, i)
    for kind, key, i in keys:
        read_key(proxy, kind, key, i, "through the proxy:")
        home = shard_of(continuum, key)
        per_shard[home] += 1
        read_key(shards[home], kind, key, i, "on %s directly:" % names[home])
        for j, shard in enumerate(shards):
            if j != home:
                expect(shard("EXISTS", key), 0, "%s must not hold %s" % (names[j], key))
    if min(per_shard) == 0:
        fail("a shard got no key: %r" % per_shard)
    print("verify: placement ok: %d keys of %d types, per shard %s"
          % (nkeys, len(KINDS), dict(zip(names, per_shard))))


def coverage(c):
    """Each forwarded command the server implements, once, through the
    proxy. Multi-key commands are either split by twemproxy itself (MGET,
    MSET, DEL, EXISTS) or given one key twice (LMOVE, RPOPLPUSH,
    ZRANGESTORE), since twemproxy needs all keys of those on one shard."""
    p = "cov:"
    checks = [
        # keys
        (["SET", p + "s", "hello"], "OK"),
        (["EXISTS", p + "s", p + "none"], 1),
        (["TYPE", p + "s"], "string"),
        (["EXPIRE", p + "s", 100], 1),
        (["PEXPIRE", p + "s", 100000], 1),
        (["EXPIREAT", p + "s", 4102444800], 1),
        (["PEXPIREAT", p + "s", 4102444800000], 1),
        (["PERSIST", p + "s"], 1),
        (["TTL", p + "s"], -1),
        (["PTTL", p + "s"], -1),
        # strings
        (["APPEND", p + "s", " world"], 11),
        (["STRLEN", p + "s"], 11),
        (["GETRANGE", p + "s", 0, 4], "hello"),
        (["SETRANGE", p + "s", 0, "J"], 11),
        (["GETSET", p + "s", "x"], "Jello world"),
        (["GETDEL", p + "s"], "x"),
        (["SETEX", p + "e", 100, "v"], "OK"),
        (["PSETEX", p + "pe", 100000, "v"], "OK"),
        (["GETEX", p + "e", "PERSIST"], "v"),
        (["SETNX", p + "e", "w"], 0),
        (["INCR", p + "n"], 1),
        (["INCRBY", p + "n", 9], 10),
        (["DECR", p + "n"], 9),
        (["DECRBY", p + "n", 4], 5),
        (["INCRBYFLOAT", p + "n", "0.5"], "5.5"),
        (["SETBIT", p + "b", 7, 1], 0),
        (["GETBIT", p + "b", 7], 1),
        (["BITCOUNT", p + "b"], 1),
        (["BITPOS", p + "b", 1], 7),
        (["BITFIELD", p + "bf", "SET", "u8", "#1", 200, "INCRBY", "u8", "#1", 100], [0, 44]),
        (["BITFIELD", p + "bf", "OVERFLOW", "FAIL", "INCRBY", "i8", 8, 127], [None]),
        (["MSET", p + "m1", "a", p + "m2", "b", p + "m3", "c"], "OK"),
        (["MGET", p + "m1", p + "m2", p + "m3", p + "none"], ["a", "b", "c", None]),
        (["DEL", p + "m1", p + "m2", p + "m3"], 3),
        # hashes
        (["HSET", p + "h", "a", 1, "b", 2], 2),
        (["HMSET", p + "h", "c", 3], "OK"),
        (["HSETNX", p + "h", "a", 9], 0),
        (["HGET", p + "h", "a"], "1"),
        (["HMGET", p + "h", "a", "z"], ["1", None]),
        (["HEXISTS", p + "h", "b"], 1),
        (["HLEN", p + "h"], 3),
        (["HINCRBY", p + "h", "a", 5], 6),
        (["HINCRBYFLOAT", p + "h", "b", "0.5"], "2.5"),
        (["HKEYS", p + "h"], ["a", "b", "c"]),
        (["HVALS", p + "h"], ["6", "2.5", "3"]),
        (["HSCAN", p + "h", 0, "MATCH", "a"], ["0", ["a", "6"]]),
        (["HDEL", p + "h", "c"], 1),
        (["HGETALL", p + "h"], ["a", "6", "b", "2.5"]),
        # lists
        (["RPUSH", p + "l", "a", "b", "c"], 3),
        (["LPUSH", p + "l", "z"], 4),
        (["LPUSHX", p + "l", "y"], 5),
        (["RPUSHX", p + "l", "d"], 6),
        (["LLEN", p + "l"], 6),
        (["LINDEX", p + "l", 0], "y"),
        (["LINSERT", p + "l", "BEFORE", "a", "x"], 7),
        (["LSET", p + "l", 0, "Y"], "OK"),
        (["LPOS", p + "l", "a"], 3),
        (["LREM", p + "l", 1, "x"], 1),
        (["LTRIM", p + "l", 0, 4], "OK"),
        (["LRANGE", p + "l", 0, -1], ["Y", "z", "a", "b", "c"]),
        (["LPOP", p + "l"], "Y"),
        (["RPOP", p + "l"], "c"),
        (["LMOVE", p + "l", p + "l", "LEFT", "RIGHT"], "z"),
        (["RPOPLPUSH", p + "l", p + "l"], "z"),
        # sets
        (["SADD", p + "t", "a", "b", "c"], 3),
        (["SCARD", p + "t"], 3),
        (["SISMEMBER", p + "t", "a"], 1),
        (["SMISMEMBER", p + "t", "a", "q"], [1, 0]),
        (["SREM", p + "t", "c"], 1),
        (["SSCAN", p + "t", 0, "MATCH", "a"], ["0", ["a"]]),
        (["SRANDMEMBER", p + "t", -1], None),  # any one member
        (["SPOP", p + "t", 5], None),  # both members, any order
        # sorted sets
        (["ZADD", p + "z", 1, "a", 2, "b", 3, "c"], 3),
        (["ZCARD", p + "z"], 3),
        (["ZSCORE", p + "z", "b"], "2"),
        (["ZMSCORE", p + "z", "a", "q"], ["1", None]),
        (["ZINCRBY", p + "z", 2, "a"], "3"),
        (["ZCOUNT", p + "z", 2, 3], 3),
        (["ZADD", p + "zl", 0, "a", 0, "b", 0, "c"], 3),
        (["ZLEXCOUNT", p + "zl", "-", "+"], 3),
        (["ZRANGEBYLEX", p + "zl", "[a", "[b"], ["a", "b"]),
        (["ZREVRANGEBYLEX", p + "zl", "+", "-"], ["c", "b", "a"]),
        (["ZREMRANGEBYLEX", p + "zl", "[x", "[y"], 0),
        (["ZRANK", p + "z", "b"], 0),
        (["ZREVRANK", p + "z", "b"], 2),
        (["ZRANGE", p + "z", 0, -1], ["b", "a", "c"]),
        (["ZREVRANGE", p + "z", 0, 0], ["c"]),
        (["ZRANGEBYSCORE", p + "z", 3, 3], ["a", "c"]),
        (["ZREVRANGEBYSCORE", p + "z", 3, 3], ["c", "a"]),
        (["ZSCAN", p + "z", 0, "MATCH", "b"], ["0", ["b", "2"]]),
        (["ZRANGESTORE", p + "z", p + "z", 0, -1], 3),
        (["ZRANDMEMBER", p + "z", 0], []),
        (["ZPOPMIN", p + "z"], ["b", "2"]),
        (["ZPOPMAX", p + "z"], ["c", "3"]),
        (["ZREMRANGEBYRANK", p + "z", 5, 6], 0),
        (["ZREMRANGEBYSCORE", p + "z", 100, 200], 0),
        (["ZREM", p + "z", "a"], 1),
        # keyspace
        (["SET", p + "d", "dumped"], "OK"),
        (["SORT", p + "t", "ALPHA"], []),
        (["PFADD", p + "hll", "a", "b", "c"], 1),
        (["PFCOUNT", p + "hll"], 3),
        (["PFMERGE", p + "hll", p + "hll"], "OK"),
        (["PING"], "PONG"),
        (["LOLWUT"], None),  # any text: it names the server's version
    ]
    for args, want in checks:
        got = c(*args)
        if isinstance(got, Error):
            fail("%s: %s" % (" ".join(map(str, args)), got))
        if want is not None and got != want:
            fail("%s: got %r, expected %r" % (" ".join(map(str, args)), got, want))
    dump = c("DUMP", p + "d")
    if isinstance(dump, Error) or dump is None:
        fail("DUMP: %r" % (dump,))
    expect(c("RESTORE", p + "r", 0, dump), "OK", "RESTORE of DUMP's payload")
    expect(c("GET", p + "r"), "dumped", "GET of the restored key")
    print("verify: coverage ok: %d forwarded commands through the proxy" % (len(checks) + 2))


def main(argv):
    nkeys = 600
    if "--keys" in argv:
        i = argv.index("--keys")
        nkeys = int(argv[i + 1])
        argv = argv[:i] + argv[i + 2:]
    proxy = Conn(int(argv[0]))
    names, shards = [], []
    for spec in argv[1:]:
        name, port = spec.split("=")
        names.append(name)
        shards.append(Conn(int(port)))
    placement(proxy, shards, names, nkeys)
    coverage(proxy)


if __name__ == "__main__":
    main(sys.argv[1:])
