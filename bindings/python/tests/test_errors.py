"""Bad input and failures raise named exceptions derived from persimmon.Error."""

from __future__ import annotations

import os
import subprocess
import sys

import pytest

import persimmon


def test_every_exported_exception_derives_from_error():
    names = [n for n in persimmon.__all__ if n.endswith("Error")]
    assert len(names) >= 25
    for name in names:
        assert issubclass(getattr(persimmon, name), persimmon.Error), name


def test_int_key_is_a_type_error(db):
    with pytest.raises(persimmon.InvalidTypeError) as e:
        db[1] = b"v"
    assert isinstance(e.value, TypeError) and isinstance(e.value, persimmon.Error)
    assert "int" in str(e.value)
    for call in (lambda: db.get(1), lambda: 1 in db, lambda: db.delete(1.5)):
        with pytest.raises(TypeError):
            call()


def test_none_value_is_a_type_error(db):
    with pytest.raises(persimmon.InvalidTypeError, match="value"):
        db.put(b"k", None)
    assert b"k" not in db


def test_missing_key_is_a_key_error(db):
    with pytest.raises(persimmon.KeyNotFoundError) as e:
        db[b"nope"]
    assert isinstance(e.value, KeyError)
    assert e.value.args == (b"nope",)
    with pytest.raises(KeyError):
        del db[b"nope"]


def test_key_too_large(db):
    key = b"k" * (persimmon.MAX_KEY_BYTES + 1)
    with pytest.raises(persimmon.KeyTooLargeError) as e:
        db[key] = b"v"
    assert isinstance(e.value, ValueError)
    assert str(persimmon.MAX_KEY_BYTES) in str(e.value)
    db[key[:-1]] = b"v"  # at the limit: fine
    assert db[key[:-1]] == b"v"


def test_value_too_large(db):
    with pytest.raises(persimmon.ValueTooLargeError):
        db[b"k"] = b"x" * (persimmon.MAX_VALUE_BYTES + 1)


def test_closed_db_raises_closed_error(db):
    db[b"k"] = b"v"
    db.close()
    for call in (
        lambda: db[b"k"],
        lambda: db.put(b"k", b"v"),
        lambda: len(db),
        lambda: db.stats(),
        lambda: list(db.keys()),
        lambda: db.batch().commit(),
    ):
        with pytest.raises(persimmon.ClosedError):
            call()


def test_not_a_pool(pool_path):
    with open(pool_path, "wb") as f:
        f.write(b"this is not a pool" * 1000)
    with pytest.raises(persimmon.NotAPoolError) as e:
        persimmon.open(pool_path)
    assert pool_path in str(e.value)


def test_pool_not_found_without_create(pool_path):
    with pytest.raises(persimmon.PoolNotFoundError) as e:
        persimmon.open(pool_path, create=False)
    assert isinstance(e.value, FileNotFoundError)
    assert not os.path.exists(pool_path)


def test_second_open_in_same_process_is_locked(db, pool_path):
    with pytest.raises(persimmon.LockedError):
        persimmon.open(pool_path)
    db.close()
    with persimmon.open(pool_path) as again:  # released by close
        assert len(again) == 0


def test_open_in_another_process_is_locked(db, pool_path):
    code = (
        "import persimmon, sys\n"
        "try:\n"
        f"    persimmon.open({pool_path!r})\n"
        "except persimmon.LockedError:\n"
        "    sys.exit(7)\n"
    )
    r = subprocess.run([sys.executable, "-c", code], capture_output=True, timeout=60)
    assert r.returncode == 7, r.stderr.decode()


def test_io_error_is_an_os_error():
    with pytest.raises(persimmon.IoError) as e:
        persimmon.open("/proc/definitely/not/here.pool")
    assert isinstance(e.value, OSError)
    assert e.value.errno is not None


def test_unknown_option_is_named(pool_path):
    with pytest.raises(persimmon.InvalidOptionsError, match="no_such_option"):
        persimmon.open(pool_path, no_such_option=1)
    assert not os.path.exists(pool_path)


def test_bad_option_values(pool_path):
    with pytest.raises(persimmon.InvalidOptionsError, match="lanes"):
        persimmon.open(pool_path, lanes="four")
    with pytest.raises(persimmon.InvalidOptionsError, match="point_index"):
        persimmon.open(pool_path, point_index="ssd")
    with pytest.raises(persimmon.InvalidOptionsError, match="create"):
        persimmon.open(pool_path, create=1)
    with pytest.raises(persimmon.InvalidOptionsError, match="pool_bytes_max"):
        persimmon.open(pool_path, pool_bytes_max="lots")
    with pytest.raises(persimmon.InvalidOptionsError, match="release_gil"):
        persimmon.open(pool_path, release_gil="never")
    with pytest.raises(persimmon.InvalidOptionsError, match="release_gil"):
        persimmon.open(pool_path, release_gil=True)
    assert not os.path.exists(pool_path)


def test_engine_rejects_impossible_options(pool_path):
    # The DRAM point index needs the ordered index: the engine says so.
    with pytest.raises(persimmon.InvalidOptionsError):
        persimmon.open(pool_path, point_index="dram", ordered_index=False)


def test_size_options_take_strings(pool_path):
    with persimmon.open(pool_path, pool_bytes_initial="16M", pool_bytes_max="1G", lanes=2) as d:
        s = d.stats()
        assert s["pool_bytes_max"] == 1 << 30
        assert s["lanes"] == 2


def test_range_without_ordered_index(db):
    with pytest.raises(persimmon.NoOrderedIndexError):
        db.range()
    with pytest.raises(persimmon.NoOrderedIndexError):
        db.prefix(b"a")
    assert db.ordered is False


def test_bad_path_type():
    with pytest.raises(persimmon.InvalidTypeError):
        persimmon.open(42)


def test_pool_full(pool_path):
    with persimmon.open(pool_path, pool_bytes_initial="8M", pool_bytes_max="8M", lanes=1, segment_bytes="64K") as d:
        with pytest.raises(persimmon.PoolFullError):
            for i in range(100_000):
                d[b"%08d" % i] = b"v" * 1000
        assert len(d) > 100  # the keys written before it filled are there
