"""Persimmon: a crash-safe key-value store for persistent memory.

>>> import persimmon
>>> with persimmon.open("/dev/shm/example.pool") as db:
...     db[b"user:1"] = b"Ada"
...     db[b"user:1"]
b'Ada'

Every write is durable when its call returns. Keys and values are bytes
(``bytearray``, ``memoryview`` and ``str`` are accepted; a ``str`` is
stored as its UTF-8 encoding); reads return new ``bytes`` objects (a copy).
A Db may be shared by threads: calls release the GIL while the engine
runs (short point calls keep it; see ``release_gil`` in :func:`open`). A pool file can be open in one process (and one Db) at a time.
Every exception the package raises derives from :class:`persimmon.Error`.
"""

from __future__ import annotations

import os
from typing import Any, Union

from ._errors import *  # noqa: F401,F403  (the exception classes)
from ._errors import __all__ as _error_names
from ._persimmon import (
    KEEP,
    MAX_BATCH_BYTES,
    MAX_BATCH_OPS,
    MAX_KEY_BYTES,
    MAX_VALUE_BYTES,
    OPTION_NAMES,
    Batch,
    Db,
    Iterator,
    Transaction,
)

__version__ = "0.1.0"


def open(path: Union[str, "os.PathLike[str]"], **options: Any) -> Db:
    """Opens the pool at ``path``, creating it unless ``create=False``.

    ``options`` are the engine's options by name (``OPTION_NAMES`` lists
    them): ``create``, ``pool_bytes_initial``, ``pool_bytes_max``,
    ``segment_bytes``, ``lanes``, ``flush_mode`` ("flush" or "eadr"),
    ``verify_reads``, ``ordered_index``, ``point_index`` ("pm" or "dram"),
    ``ordered_layout`` ("leaves" or "skiplist"), ``cleaner``,
    ``cleaner_bytes_per_sec``, ``active_expiry``, ``data_dir``,
    ``tier_threshold``, ``cache_bytes``, ``cache_policy`` ("lru", "clock"
    or "s3-fifo"). Sizes take an int or a string such as ``"64M"``. An
    unknown name or a bad value raises :class:`InvalidOptionsError`.

    ``release_gil`` is the package's own option: ``"auto"`` (the default)
    keeps the GIL through a short point call (get, ``in``, put, delete with
    at most 4 KiB of key and value, on a pool without an SSD tier), where a
    GIL hand-off costs more than the engine's work; ``"always"`` releases it
    for every call. Batches, ``get_many``, scans, transactions, ``update``,
    ``check`` and ``stats`` release it under both.

    The returned :class:`Db` is a context manager that closes the pool on
    exit.
    """
    return Db(path, **options)


__all__ = [
    "open",
    "Db",
    "Batch",
    "Transaction",
    "Iterator",
    "KEEP",
    "MAX_KEY_BYTES",
    "MAX_VALUE_BYTES",
    "MAX_BATCH_OPS",
    "MAX_BATCH_BYTES",
    "OPTION_NAMES",
    *_error_names,
]
