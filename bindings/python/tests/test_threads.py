"""Threads share one Db: disjoint and shared keys, every value checked."""

from __future__ import annotations

import threading

import pytest

import persimmon


@pytest.fixture(params=["auto", "always"])
def db(pool_path, request):
    """Every test here runs under both GIL policies."""
    d = persimmon.open(pool_path, release_gil=request.param)
    assert d.release_gil == request.param
    yield d
    d.close()


def run_threads(n, target):
    errors = []

    def wrapped(i):
        try:
            target(i)
        except BaseException as e:  # report in the main thread
            errors.append(e)

    ts = [threading.Thread(target=wrapped, args=(i,)) for i in range(n)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert not errors, errors


def test_disjoint_keys_from_many_threads(db):
    threads, per = 8, 2000

    def writer(t):
        for i in range(per):
            db[b"t%d:%d" % (t, i)] = b"value-%d-%d" % (t, i)
            if i % 7 == 0:
                assert db[b"t%d:%d" % (t, i)] == b"value-%d-%d" % (t, i)

    run_threads(threads, writer)
    assert len(db) == threads * per
    for t in range(threads):
        got = db.get_many([b"t%d:%d" % (t, i) for i in range(per)])
        assert got == [b"value-%d-%d" % (t, i) for i in range(per)]


def test_shared_keys_hold_a_value_some_writer_wrote(db):
    threads, keys, rounds = 6, 50, 200

    def writer(t):
        for r in range(rounds):
            k = b"shared:%d" % (r % keys)
            db[k] = b"%d:%d" % (t, r)
            v = db.get(k)
            assert v is not None
            wt, wr = map(int, v.split(b":"))
            assert 0 <= wt < threads and wr % keys == r % keys

    run_threads(threads, writer)
    assert len(db) == keys
    for k in range(keys):
        wt, wr = map(int, db[b"shared:%d" % k].split(b":"))
        assert wr % keys == k


def test_readers_and_iterators_during_writes(db):
    for i in range(500):
        db[b"base:%d" % i] = b"b"
    stop = threading.Event()

    def writer(_):
        i = 0
        while not stop.is_set():
            db[b"w:%d" % (i % 300)] = b"x"
            i += 1

    def reader(_):
        for _ in range(5):
            keys = set(db)
            assert {b"base:%d" % i for i in range(500)} <= keys

    w = threading.Thread(target=writer, args=(0,))
    w.start()
    try:
        run_threads(2, reader)
    finally:
        stop.set()
        w.join()


def test_close_while_other_threads_work(pool_path):
    d = persimmon.open(pool_path)
    started = threading.Barrier(4)
    outcomes = []

    def worker(t):
        started.wait()
        try:
            for i in range(100_000):
                d[b"%d:%d" % (t, i)] = b"v"
        except persimmon.ClosedError:
            outcomes.append("closed")

    ts = [threading.Thread(target=worker, args=(t,)) for t in range(3)]
    for t in ts:
        t.start()
    started.wait()
    d.close()
    for t in ts:
        t.join()
    assert outcomes == ["closed"] * 3
    with persimmon.open(pool_path) as again:
        assert again.check()["ok"]


def test_close_while_other_threads_iterate(pool_path):
    d = persimmon.open(pool_path, ordered_index=True)
    for i in range(2000):
        d[b"%05d" % i] = b"v"
    started = threading.Barrier(5)
    outcomes = []

    def scanner(t):
        started.wait()
        try:
            while True:
                it = d.items() if t % 2 else d.range(reverse=True)
                n = sum(1 for _ in it)
                assert n == 2000
        except persimmon.ClosedError:
            outcomes.append("closed")

    ts = [threading.Thread(target=scanner, args=(t,)) for t in range(4)]
    for t in ts:
        t.start()
    started.wait()
    import time

    time.sleep(0.2)
    d.close()
    for t in ts:
        t.join()
    assert outcomes == ["closed"] * 4
    with persimmon.open(pool_path) as again:
        assert len(again) == 2000
        assert again.check()["ok"]
