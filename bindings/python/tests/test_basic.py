"""Round trips and the dict protocol."""

from __future__ import annotations

import pytest

import persimmon


def test_put_get_round_trip(db):
    db.put(b"k", b"v")
    assert db.get(b"k") == b"v"
    assert db[b"k"] == b"v"


def test_results_are_bytes(db):
    db[b"k"] = bytearray(b"abc")
    v = db[b"k"]
    assert type(v) is bytes and v == b"abc"


def test_dict_protocol(db):
    db[b"a"] = b"1"
    db[b"b"] = b"2"
    assert b"a" in db and b"zz" not in db
    assert len(db) == 2
    del db[b"a"]
    assert b"a" not in db
    assert len(db) == 1


def test_overwrite_replaces_value_and_keeps_count(db):
    db[b"k"] = b"old"
    db[b"k"] = b"new value, longer"
    assert db[b"k"] == b"new value, longer"
    assert len(db) == 1


def test_get_default(db):
    assert db.get(b"missing") is None
    sentinel = object()
    assert db.get(b"missing", sentinel) is sentinel
    assert db.get(b"missing", default=b"d") == b"d"


def test_delete_returns_whether_it_existed(db):
    db[b"k"] = b"v"
    assert db.delete(b"k") is True
    assert db.delete(b"k") is False


def test_str_keys_and_values_are_utf8(db):
    db["ключ"] = "значение"
    assert db["ключ".encode()] == "значение".encode()
    assert "ключ" in db


def test_bytes_like_arguments(db):
    db.put(memoryview(b"mv-key"), memoryview(b"mv-value"))
    db.put(bytearray(b"ba-key"), bytearray(b"ba-value"))
    assert db[b"mv-key"] == b"mv-value"
    assert db[bytearray(b"ba-key")] == b"ba-value"
    assert db.get(memoryview(b"ba-key")) == b"ba-value"


def test_bytearray_argument_is_copied(db):
    value = bytearray(b"before")
    db[b"k"] = value
    value[:] = b"AFTER!"
    assert db[b"k"] == b"before"


def test_empty_key_and_value(db):
    db[b""] = b""
    assert b"" in db
    assert db[b""] == b""


def test_binary_and_large_values(db):
    blob = bytes(range(256)) * 1024  # 256 KiB, every byte value
    db[b"\x00\xff"] = blob
    assert db[b"\x00\xff"] == blob


def test_get_many(db):
    db[b"a"] = b"1"
    db[b"c"] = b"3"
    assert db.get_many([b"a", b"b", "c"]) == [b"1", None, b"3"]
    assert db.get_many(k for k in [b"c"]) == [b"3"]
    assert db.get_many([]) == []


def test_context_manager_closes(pool_path):
    with persimmon.open(pool_path) as d:
        d[b"k"] = b"v"
        assert not d.closed
    assert d.closed


def test_path_and_repr(db, pool_path):
    assert db.path == pool_path
    assert pool_path in repr(db) and "open" in repr(db)


def test_open_accepts_pathlike(pool_path):
    import pathlib

    with persimmon.open(pathlib.Path(pool_path)) as d:
        d[b"k"] = b"v"
        assert d.path == pool_path


def test_close_twice_is_harmless(db):
    db.close()
    db.close()
    assert db.closed


@pytest.mark.parametrize("policy", ["auto", "always"])
def test_gil_policies_store_the_same(pool_path, policy):
    # Short calls keep the GIL under "auto"; a value over 4 KiB, get_many and
    # batches release it under both: every path must store and read alike.
    with persimmon.open(pool_path, release_gil=policy) as db:
        assert db.release_gil == policy
        big = bytes(range(256)) * 64  # 16 KiB: over the short-call limit
        db[b"small"] = b"s"
        db[b"big"] = big
        assert db[b"small"] == b"s" and db[b"big"] == big
        assert b"big" in db and len(db) == 2
        assert db.get_many([b"small", b"big", b"none"]) == [b"s", big, None]
        assert db.delete(b"big") and not db.delete(b"big")


def test_default_gil_policy_is_auto(db):
    assert db.release_gil == "auto"
