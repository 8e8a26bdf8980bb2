"""Transactions: serializable read-modify-write, retried on conflict."""

from __future__ import annotations

import threading

import pytest

import persimmon


def test_transaction_commits_and_returns(db):
    db[b"a"] = b"10"

    def move(txn):
        a = int(txn[b"a"])
        txn[b"a"] = str(a - 3)
        txn.put(b"b", b"3")
        assert txn.get(b"b") == b"3"  # reads its own writes
        assert db[b"a"] == b"10"  # others do not see them yet
        return "done"

    assert db.transaction(move) == "done"
    assert db[b"a"] == b"7" and db[b"b"] == b"3"


def test_exception_in_transaction_writes_nothing(db):
    db[b"a"] = b"1"

    def fail(txn):
        txn[b"a"] = b"2"
        txn.delete(b"a")
        raise ValueError("nope")

    with pytest.raises(ValueError, match="nope"):
        db.transaction(fail)
    assert db[b"a"] == b"1"


def test_txn_is_unusable_after_function_returns(db):
    kept = []
    db.transaction(lambda txn: kept.append(txn))
    with pytest.raises(persimmon.ClosedError):
        kept[0].get(b"a")
    with pytest.raises(persimmon.ClosedError):
        kept[0].put(b"a", b"1")
    assert b"a" not in db


def test_txn_contains_and_delete(db):
    db[b"x"] = b"1"

    def f(txn):
        assert b"x" in txn
        del txn[b"x"]
        assert b"x" not in txn
        assert txn.get(b"x", b"dflt") == b"dflt"
        with pytest.raises(KeyError):
            txn[b"x"]

    db.transaction(f)
    assert b"x" not in db


def test_conflicting_threads_are_serialized(db):
    db[b"counter"] = b"0"
    threads, per_thread = 4, 50

    def incr(txn):
        txn[b"counter"] = b"%d" % (int(txn[b"counter"]) + 1)

    def work():
        for _ in range(per_thread):
            db.transaction(incr, attempts=10_000)

    ts = [threading.Thread(target=work) for _ in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join()
    assert int(db[b"counter"]) == threads * per_thread


def test_conflict_is_retried(db):
    db[b"k"] = b"0"
    calls = []

    def f(txn):
        calls.append(1)
        v = txn[b"k"]
        if len(calls) == 1:
            db[b"k"] = b"changed behind its back"
        txn[b"k"] = v + b"!"

    db.transaction(f)
    assert len(calls) == 2
    assert db[b"k"] == b"changed behind its back!"


def test_conflict_on_every_attempt_raises(db):
    db[b"k"] = b"0"
    n = [0]

    def f(txn):
        txn[b"k"]
        n[0] += 1
        db[b"k"] = b"%d" % n[0]  # always changes what it read
        txn[b"k"] = b"mine"

    with pytest.raises(persimmon.TransactionConflictError):
        db.transaction(f, attempts=3)
    assert n[0] == 3
    assert db[b"k"] == b"3"


def test_close_inside_own_transaction_is_refused(db):
    def f(txn):
        txn[b"k"] = b"v"
        db.close()

    with pytest.raises(persimmon.BusyError) as e:
        db.transaction(f)
    assert isinstance(e.value, RuntimeError)
    assert not db.closed
    assert b"k" not in db  # the exception ended it with nothing written
    db.close()
    assert db.closed


def test_nested_use_of_db_inside_transaction(db):
    db[b"a"] = b"1"

    def f(txn):
        # Plain reads, iteration and another transaction on the same thread.
        assert db[b"a"] == b"1"
        assert list(db) == [b"a"]
        db.transaction(lambda inner: inner.put(b"inner", b"x"))
        txn[b"outer"] = txn[b"a"]

    db.transaction(f)
    assert db[b"outer"] == b"1" and db[b"inner"] == b"x"
