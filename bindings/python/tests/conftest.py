"""Shared fixtures: pool paths on /dev/shm (emulated persistent memory).

Every pool a test makes is named /dev/shm/pytest-<pid>-<n>-<test>.pool and
removed afterwards, with the side files the engine keeps beside it.
"""

from __future__ import annotations

import glob
import itertools
import os
import re

import pytest

import persimmon

SHM = "/dev/shm" if os.path.isdir("/dev/shm") else None
_counter = itertools.count()


def _remove_pool(path: str) -> None:
    for p in glob.glob(glob.escape(path) + "*"):
        try:
            os.remove(p)
        except IsADirectoryError:
            pass
        except FileNotFoundError:
            pass


@pytest.fixture
def pool_path(request, tmp_path):
    """A path for a new pool (the file does not exist yet)."""
    name = re.sub(r"[^A-Za-z0-9_]", "_", request.node.name)[:60]
    base = SHM if SHM else str(tmp_path)
    path = os.path.join(base, f"pytest-{os.getpid()}-{next(_counter)}-{name}.pool")
    _remove_pool(path)
    yield path
    _remove_pool(path)


@pytest.fixture
def db(pool_path):
    """An open Db on a fresh pool (hash index only); closed afterwards."""
    d = persimmon.open(pool_path)
    yield d
    d.close()


@pytest.fixture
def odb(pool_path):
    """An open Db on a fresh pool with the ordered index."""
    d = persimmon.open(pool_path, ordered_index=True)
    yield d
    d.close()
