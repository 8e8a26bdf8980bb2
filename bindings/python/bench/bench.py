#!/usr/bin/env python3
"""GET and PUT throughput of the persimmon package against lmdb and rocksdict.

One run measures every store at 1 and 2 Python threads: N keys of 8 bytes
(big-endian integers), values of 64 bytes. PUT writes all N keys into an
empty store (the threads split the keys); GET then reads all N keys in a
random order (the threads split them). Keys and values are made before the
clock starts. Every store lives on /dev/shm (tmpfs: DRAM standing in for
persistent memory, where an fsync costs little).

Durability, per store (each write is acknowledged when its call returns):
  persimmon  durable on return of every put (flush + fence, the engine's
             protocol; defaults otherwise)
  lmdb       one write transaction per put, Environment(sync=True,
             metasync=True) (the defaults): durable on commit; one read
             transaction per get; map_size 4 GiB, writemap off
  rocksdict  raw_mode, WAL on (the default) with WriteOptions.sync=True:
             durable on return (--rocksdict-sync off: WAL without fsync,
             RocksDB's default, survives a process crash but not a power
             loss)

Usage:
  python bench.py                      # 10^6 keys, 1 and 2 threads, a table
  python bench.py --keys 100000 --json # smaller, JSON on stdout
Needs: pip install persimmon lmdb rocksdict (bindings/python's `bench` extra).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import random
import shutil
import struct
import sys
import tempfile
import threading
import time
from typing import Callable, Dict, List

VALUE = bytes(range(64))


# --- the stores: each gives put(k, v), get(k), close() ------------------


class PersimmonStore:
    name = "persimmon"

    def __init__(self, directory: str, args: argparse.Namespace):
        import persimmon

        self.db = persimmon.open(
            os.path.join(directory, "bench.pool"),
            pool_bytes_initial="256M",
            release_gil=args.release_gil,
        )
        self.put = self.db.put
        self.get = self.db.get

    def close(self) -> None:
        self.db.close()


class LmdbStore:
    name = "lmdb"

    def __init__(self, directory: str, args: argparse.Namespace):
        import lmdb

        self.env = lmdb.open(
            directory,
            map_size=4 << 30,
            sync=True,
            metasync=True,
            writemap=False,
            max_readers=64,
        )

    def put(self, k: bytes, v: bytes) -> None:
        with self.env.begin(write=True) as txn:
            txn.put(k, v)

    def get(self, k: bytes):
        with self.env.begin() as txn:
            return txn.get(k)

    def close(self) -> None:
        self.env.close()


class RocksdictStore:
    name = "rocksdict"

    def __init__(self, directory: str, args: argparse.Namespace):
        from rocksdict import Options, Rdict, WriteOptions

        self.db = Rdict(os.path.join(directory, "rocks"), Options(raw_mode=True))
        wo = WriteOptions()
        wo.sync = args.rocksdict_sync == "on"
        self.db.set_write_options(wo)
        self.put = self.db.put
        self.get = self.db.get

    def close(self) -> None:
        self.db.close()


STORES = {s.name: s for s in (PersimmonStore, LmdbStore, RocksdictStore)}


# --- measuring ----------------------------------------------------------


def timed_threads(n: int, work: Callable[[int], None]) -> float:
    """Seconds from the threads' common start until the last one ends."""
    barrier = threading.Barrier(n + 1)
    errors: List[BaseException] = []

    def run(i: int) -> None:
        barrier.wait()
        try:
            work(i)
        except BaseException as e:  # reported below
            errors.append(e)

    ts = [threading.Thread(target=run, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    barrier.wait()
    start = time.perf_counter()
    for t in ts:
        t.join()
    elapsed = time.perf_counter() - start
    if errors:
        raise errors[0]
    return elapsed


def measure(store_cls, threads: int, keys: List[bytes], order: List[bytes], args) -> Dict[str, float]:
    directory = tempfile.mkdtemp(prefix=f"pybench-{store_cls.name}-", dir=args.dir)
    try:
        store = store_cls(directory, args)
        try:
            put, get = store.put, store.get

            def writer(t: int) -> None:
                for k in keys[t::threads]:
                    put(k, VALUE)

            def reader(t: int) -> None:
                for k in order[t::threads]:
                    if get(k) is None:
                        raise AssertionError(f"{store_cls.name}: key {k!r} missing")

            put_s = timed_threads(threads, writer)
            get_s = timed_threads(threads, reader)
        finally:
            store.close()
    finally:
        shutil.rmtree(directory, ignore_errors=True)
    n = len(keys)
    return {"put_ops": n / put_s, "get_ops": n / get_s}


# --- output -------------------------------------------------------------


def table(results: Dict[str, Dict[int, Dict[str, float]]], threads: List[int]) -> str:
    names = list(results)
    header = ["op", "threads"] + [f"{n} ops/s" for n in names]
    peers = [n for n in names if n != "persimmon"] if "persimmon" in names else []
    header += [f"persimmon/{p}" for p in peers]
    rows = []
    for op in ("get", "put"):
        for t in threads:
            row = [op.upper(), str(t)]
            row += [f"{results[n][t][op + '_ops']:,.0f}" for n in names]
            for p in peers:
                ratio = results["persimmon"][t][op + "_ops"] / results[p][t][op + "_ops"]
                row.append(f"{ratio:.2f}x")
            rows.append(row)
    widths = [max(len(r[i]) for r in [header] + rows) for i in range(len(header))]
    fmt = lambda r: "  ".join(c.rjust(w) for c, w in zip(r, widths))  # noqa: E731
    return "\n".join([fmt(header), fmt(["-" * w for w in widths])] + [fmt(r) for r in rows])


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--keys", type=int, default=1_000_000, help="keys per run (default 10^6)")
    ap.add_argument("--threads", default="1,2", help="thread counts, comma-separated (default 1,2)")
    ap.add_argument("--stores", default="persimmon,lmdb,rocksdict", help="stores to run")
    ap.add_argument("--dir", default="/dev/shm", help="where the stores live (default /dev/shm)")
    ap.add_argument("--rocksdict-sync", choices=["on", "off"], default="on",
                    help="fsync rocksdict's WAL on every put (default on)")
    ap.add_argument("--release-gil", choices=["auto", "always"], default="auto",
                    help="persimmon's GIL policy (default auto: short point calls keep it)")
    ap.add_argument("--seed", type=int, default=42, help="seed of the GET order")
    ap.add_argument("--json", action="store_true", help="print JSON instead of the table")
    args = ap.parse_args()

    threads = [int(t) for t in args.threads.split(",")]
    names = [s.strip() for s in args.stores.split(",")]
    unknown = [n for n in names if n not in STORES]
    if unknown:
        ap.error(f"unknown stores {unknown}; known: {', '.join(STORES)}")

    keys = [struct.pack(">Q", i) for i in range(args.keys)]
    order = keys[:]
    random.Random(args.seed).shuffle(order)

    results: Dict[str, Dict[int, Dict[str, float]]] = {}
    for name in names:
        results[name] = {}
        for t in threads:
            r = measure(STORES[name], t, keys, order, args)
            results[name][t] = r
            print(f"# {name:9} threads={t}  put {r['put_ops']:>12,.0f} ops/s  get {r['get_ops']:>12,.0f} ops/s",
                  file=sys.stderr, flush=True)

    if args.json:
        from importlib import metadata

        versions = {}
        for dist in ("persimmon", "lmdb", "rocksdict"):
            try:
                versions[dist] = metadata.version(dist)
            except metadata.PackageNotFoundError:
                pass
        print(json.dumps({
            "keys": args.keys, "key_bytes": 8, "value_bytes": len(VALUE),
            "dir": args.dir, "rocksdict_sync": args.rocksdict_sync,
            "release_gil": args.release_gil,
            "python": platform.python_version(), "cpus": os.cpu_count(), "versions": versions,
            "results": {n: {str(t): r for t, r in per.items()} for n, per in results.items()},
        }, indent=2))
    else:
        print(f"{args.keys:,} keys, 8-byte keys, 64-byte values, stores in {args.dir}, "
              f"Python {platform.python_version()}, {os.cpu_count()} CPUs")
        print(table(results, threads))
    return 0


if __name__ == "__main__":
    sys.exit(main())
