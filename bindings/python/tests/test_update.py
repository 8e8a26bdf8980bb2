"""Db.update: atomic read-modify-write with a Python function."""

from __future__ import annotations

import threading

import pytest

import persimmon


def test_update_sees_old_value_and_stores_new(db):
    db[b"n"] = b"1"
    assert db.update(b"n", lambda old: b"%d" % (int(old) + 1)) == b"2"
    assert db[b"n"] == b"2"


def test_update_of_absent_key_gets_none(db):
    seen = []

    def f(old):
        seen.append(old)
        return b"first"

    assert db.update(b"new", f) == b"first"
    assert seen == [None]


def test_update_none_deletes(db):
    db[b"k"] = b"v"
    assert db.update(b"k", lambda old: None) is None
    assert b"k" not in db
    assert db.update(b"absent", lambda old: None) is None


def test_update_keep_leaves_key(db):
    db[b"k"] = b"v"
    assert db.update(b"k", lambda old: persimmon.KEEP) == b"v"
    assert db[b"k"] == b"v"
    assert repr(persimmon.KEEP) == "persimmon.KEEP"


def test_update_keeps_deadline(db):
    db.put(b"k", b"v", ttl=60)
    db.update(b"k", lambda old: old + b"!")
    assert db[b"k"] == b"v!"
    assert 50 < db.ttl(b"k") <= 60


def test_update_exception_propagates_and_writes_nothing(db):
    db[b"k"] = b"v"

    def f(old):
        raise RuntimeError("boom")

    with pytest.raises(RuntimeError, match="boom"):
        db.update(b"k", f)
    assert db[b"k"] == b"v"


def test_update_bad_return_type(db):
    with pytest.raises(persimmon.InvalidTypeError):
        db.update(b"k", lambda old: 42)
    with pytest.raises(persimmon.InvalidTypeError):
        db.update(b"k", "not callable")
    assert b"k" not in db


def test_update_function_may_use_the_db(db):
    db[b"other"] = b"x"
    assert db.update(b"k", lambda old: db[b"other"] * 2) == b"xx"


def test_concurrent_updates_lose_nothing(db):
    db[b"c"] = b"0"
    threads, per_thread = 4, 200

    def work():
        for _ in range(per_thread):
            db.update(b"c", lambda old: b"%d" % (int(old) + 1), attempts=100_000)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert int(db[b"c"]) == threads * per_thread
