"""Deadlines: ttl, expire_at, expire, persist."""

from __future__ import annotations

import time

import pytest

import persimmon


def test_key_without_deadline_has_no_ttl(db):
    db[b"k"] = b"v"
    assert db.ttl(b"k") is None


def test_ttl_counts_down(db):
    db.put(b"k", b"v", ttl=100)
    t = db.ttl(b"k")
    assert 99.0 < t <= 100.0


def test_float_ttl_expires(db):
    db.put(b"short", b"v", ttl=0.15)
    db.put(b"long", b"v", ttl=60)
    assert db[b"short"] == b"v"
    time.sleep(0.4)
    assert db.get(b"short") is None
    assert b"short" not in db
    with pytest.raises(persimmon.KeyNotFoundError):
        db.ttl(b"short")
    assert db[b"long"] == b"v"


def test_expire_at_in_the_past_deletes(db):
    db[b"k"] = b"v"
    db.put(b"k", b"v2", expire_at=time.time() - 10)
    assert b"k" not in db


def test_expire_at_in_the_future(db):
    db.put(b"k", b"v", expire_at=time.time() + 50)
    assert 40 < db.ttl(b"k") <= 50.01  # expire_at is rounded up to the ms


def test_plain_put_drops_deadline(db):
    db.put(b"k", b"v", ttl=10)
    db.put(b"k", b"v2")
    assert db.ttl(b"k") is None


def test_expire_and_persist(db):
    db[b"k"] = b"v"
    assert db.expire(b"k", ttl=30) is True
    assert 29 < db.ttl(b"k") <= 30
    assert db.persist(b"k") is True
    assert db.ttl(b"k") is None
    assert db.persist(b"k") is False
    assert db.expire(b"missing", ttl=5) is False


def test_bad_ttl_values(db):
    for bad in (0, -1, float("nan"), float("inf")):
        with pytest.raises(persimmon.InvalidArgumentError):
            db.put(b"k", b"v", ttl=bad)
    with pytest.raises(persimmon.InvalidTypeError):
        db.put(b"k", b"v", ttl="10")
    with pytest.raises(persimmon.InvalidArgumentError):
        db.put(b"k", b"v", ttl=1, expire_at=time.time() + 5)
    with pytest.raises(persimmon.InvalidArgumentError):
        db.expire(b"k")
    assert b"k" not in db


def test_deadline_too_far(db):
    with pytest.raises(persimmon.DeadlineTooFarError):
        db.put(b"k", b"v", expire_at=1e12)  # year ~33658
