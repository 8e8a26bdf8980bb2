"""Iteration: hash-order keys/items, ordered range/prefix, close while alive."""

from __future__ import annotations

import gc

import pytest

import persimmon


def fill(d, n=300):
    expected = {b"key:%05d" % i: b"value %d" % i for i in range(n)}
    for k, v in expected.items():
        d[k] = v
    return expected


def test_iter_yields_every_key_once(db):
    expected = fill(db)
    keys = list(db)
    assert len(keys) == len(expected)
    assert set(keys) == set(expected)
    assert set(db.keys()) == set(expected)


def test_items_and_values(db):
    expected = fill(db)
    assert dict(db.items()) == expected
    assert sorted(db.values()) == sorted(expected.values())


def test_empty_db_iterates_nothing(db):
    assert list(db) == []
    assert list(db.items()) == []


def test_exhausted_iterator_stays_exhausted(db):
    db[b"a"] = b"1"
    it = iter(db)
    assert next(it) == b"a"
    with pytest.raises(StopIteration):
        next(it)
    with pytest.raises(StopIteration):
        next(it)


def test_range_in_key_order(odb):
    expected = fill(odb)
    got = list(odb.range())
    assert got == sorted(expected.items())
    assert odb.ordered is True


def test_range_bounds_are_half_open(odb):
    fill(odb, 100)
    got = [k for k, _ in odb.range(b"key:00010", b"key:00020")]
    assert got == [b"key:%05d" % i for i in range(10, 20)]
    assert [k for k, _ in odb.range(start=b"key:00098")] == [b"key:00098", b"key:00099"]
    assert [k for k, _ in odb.range(end=b"key:00002")] == [b"key:00000", b"key:00001"]
    assert list(odb.range(b"z", b"zz")) == []


def test_range_reverse(odb):
    fill(odb, 50)
    got = [k for k, _ in odb.range(b"key:00040", reverse=True)]
    assert got == [b"key:%05d" % i for i in range(49, 39, -1)]


def test_prefix(odb):
    odb[b"user:1"] = b"a"
    odb[b"user:2"] = b"b"
    odb[b"usex"] = b"no"
    odb[b"user"] = b"root"
    odb["post:1"] = b"no"
    assert list(odb.prefix(b"user:")) == [(b"user:1", b"a"), (b"user:2", b"b")]
    assert [k for k, _ in odb.prefix("user")] == [b"user", b"user:1", b"user:2"]
    assert [k for k, _ in odb.prefix(b"user:", reverse=True)] == [b"user:2", b"user:1"]


def test_dram_point_index_pool(pool_path):
    with persimmon.open(pool_path, ordered_index=True, point_index="dram") as d:
        expected = fill(d, 50)
        assert d.stats()["point_index"] == "dram"
        assert list(d.range()) == sorted(expected.items())
        assert d[b"key:00007"] == b"value 7"


def test_close_while_iterating_raises_closed_and_releases_pool(pool_path):
    d = persimmon.open(pool_path, ordered_index=True)
    fill(d, 200)
    it = iter(d)
    rng = d.range()
    next(it)
    next(rng)
    d.close()
    with pytest.raises(persimmon.ClosedError):
        next(it)
    with pytest.raises(persimmon.ClosedError):
        next(rng)
    # The pool really closed: it opens again in this process.
    with persimmon.open(pool_path) as again:
        assert len(again) == 200


def test_iterator_keeps_pool_open_after_db_is_dropped(pool_path):
    d = persimmon.open(pool_path)
    fill(d, 20)
    it = d.items()
    del d
    gc.collect()
    assert len(list(it)) == 20
    with pytest.raises(persimmon.LockedError):
        persimmon.open(pool_path)  # the iterator still holds it
    del it
    gc.collect()
    with persimmon.open(pool_path) as again:
        assert len(again) == 20


def test_iterator_close_ends_it(db):
    fill(db, 10)
    it = iter(db)
    next(it)
    it.close()
    with pytest.raises(StopIteration):
        next(it)


def test_writes_during_iteration_do_not_fail(db):
    expected = fill(db, 200)
    seen = set()
    for i, k in enumerate(db):
        seen.add(k)
        db[b"new:%d" % i] = b"x"
    assert set(expected) <= seen


def test_many_live_iterators(db):
    fill(db, 10)
    its = [iter(db) for _ in range(100)]
    assert all(next(it) is not None for it in its)
    del its
    gc.collect()
    assert len(list(db)) == 10
