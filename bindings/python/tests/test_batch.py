"""Batches: atomic on a clean exit, discarded on an exception."""

from __future__ import annotations

import pytest

import persimmon


def test_batch_commits_on_exit(db):
    db[b"gone"] = b"x"
    with db.batch() as b:
        b.put(b"a", b"1")
        b.put("b", bytearray(b"2"))
        b.delete(b"gone")
        assert len(b) == 3
        assert b"a" not in db  # nothing visible before the commit
    assert db[b"a"] == b"1" and db[b"b"] == b"2"
    assert b"gone" not in db


def test_batch_discarded_on_exception(db):
    db[b"keep"] = b"old"

    class Boom(Exception):
        pass

    with pytest.raises(Boom):
        with db.batch() as b:
            b.put(b"keep", b"new")
            b.put(b"other", b"x")
            raise Boom()
    assert db[b"keep"] == b"old"
    assert b"other" not in db


def test_batch_later_op_replaces_earlier(db):
    with db.batch() as b:
        b.put(b"k", b"1")
        b.put(b"k", b"2")
        b.put(b"d", b"x")
        b.delete(b"d")
    assert db[b"k"] == b"2"
    assert b"d" not in db


def test_batch_is_unusable_after_commit(db):
    b = db.batch()
    b.put(b"k", b"v")
    b.commit()
    assert db[b"k"] == b"v"
    with pytest.raises(persimmon.ClosedError):
        b.put(b"k2", b"v")
    with pytest.raises(persimmon.ClosedError):
        b.commit()


def test_batch_discard(db):
    b = db.batch()
    b.put(b"k", b"v")
    b.discard()
    with pytest.raises(persimmon.ClosedError):
        len(b)
    assert b"k" not in db


def test_failed_batch_writes_nothing(db):
    with pytest.raises(persimmon.KeyTooLargeError):
        with db.batch() as b:
            b.put(b"fine", b"v")
            b.put(b"k" * (persimmon.MAX_KEY_BYTES + 1), b"v")
    assert b"fine" not in db


def test_batch_with_ttl(db):
    with db.batch() as b:
        b.put(b"t", b"v", ttl=30)
    assert 29 < db.ttl(b"t") <= 30


def test_batch_bad_key_type_raised_at_put(db):
    b = db.batch()
    with pytest.raises(persimmon.InvalidTypeError):
        b.put(None, b"v")
    assert len(b) == 0
