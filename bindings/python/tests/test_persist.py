"""Durability across close and reopen; stats and check."""

from __future__ import annotations

import persimmon


def test_reopen_keeps_everything(pool_path):
    with persimmon.open(pool_path) as d:
        for i in range(1000):
            d[b"k%d" % i] = b"v%d" % i
        del d[b"k7"]
        with d.batch() as b:
            b.put(b"batched", b"yes")
    with persimmon.open(pool_path, create=False) as d:
        assert len(d) == 1000
        assert d[b"k999"] == b"v999"
        assert b"k7" not in d
        assert d[b"batched"] == b"yes"


def test_reopen_keeps_deadlines(pool_path):
    with persimmon.open(pool_path) as d:
        d.put(b"t", b"v", ttl=100)
    with persimmon.open(pool_path) as d:
        assert 90 < d.ttl(b"t") <= 100


def test_ordered_index_is_a_creation_option(pool_path):
    with persimmon.open(pool_path, ordered_index=True) as d:
        d[b"b"] = b"2"
        d[b"a"] = b"1"
    with persimmon.open(pool_path) as d:  # the pool's own setting applies
        assert d.ordered
        assert [k for k, _ in d.range()] == [b"a", b"b"]


def test_stats_has_the_engine_names(db):
    db[b"a"] = b"1"
    assert len(db) == 1  # waits for the count after open; stats() may not
    s = db.stats()
    assert s["keys"] == 1
    for name in ("pool_bytes", "used_bytes", "live_bytes", "lanes", "durability",
                 "ordered_index", "point_index", "format_version", "pmem_fences"):
        assert name in s, name
    assert s["ordered_index"] is False
    assert s["point_index"] == "pm"
    assert s["data_dir"] is None
    assert isinstance(s["durability"], str)
    assert s["pmem_fences"] > 0


def test_check_reports_consistent_pool(db):
    for i in range(100):
        db[b"%d" % i] = b"x" * i
    r = db.check()
    assert r["ok"] is True
    assert r["errors"] == []
    assert r["keys"] == 100


def test_option_names_are_exported():
    assert "ordered_index" in persimmon.OPTION_NAMES
    assert "pool_bytes_max" in persimmon.OPTION_NAMES
