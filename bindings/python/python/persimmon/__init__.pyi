"""Type stubs of the persimmon package (the native module's API)."""

import os
from typing import Any, Callable, Iterable, Iterator as _Iterator, TypeVar, Union, overload

from ._errors import (
    BatchTooLargeError as BatchTooLargeError,
    BusyError as BusyError,
    ClosedError as ClosedError,
    CorruptionError as CorruptionError,
    CorruptSuperblockError as CorruptSuperblockError,
    DataDirError as DataDirError,
    DataDirFullError as DataDirFullError,
    DeadlineTooFarError as DeadlineTooFarError,
    Error as Error,
    ExtentCorruptionError as ExtentCorruptionError,
    IndexFullError as IndexFullError,
    InternalError as InternalError,
    InvalidArgumentError as InvalidArgumentError,
    InvalidOptionsError as InvalidOptionsError,
    InvalidTypeError as InvalidTypeError,
    IoError as IoError,
    KeyNotFoundError as KeyNotFoundError,
    KeyTooLargeError as KeyTooLargeError,
    LockedError as LockedError,
    NoOrderedIndexError as NoOrderedIndexError,
    NotAPoolError as NotAPoolError,
    PdvError as PdvError,
    PdvValueTooLargeError as PdvValueTooLargeError,
    PoolFullError as PoolFullError,
    PoolNotFoundError as PoolNotFoundError,
    TransactionConflictError as TransactionConflictError,
    TruncatedError as TruncatedError,
    UnsupportedVersionError as UnsupportedVersionError,
    ValueTooLargeError as ValueTooLargeError,
)

__version__: str

#: A key or value argument: bytes-like, or str (stored as UTF-8).
BytesLike = Union[bytes, bytearray, memoryview, str]
#: A number of seconds.
Seconds = Union[int, float]
_T = TypeVar("_T")
_D = TypeVar("_D")

MAX_KEY_BYTES: int
MAX_VALUE_BYTES: int
MAX_BATCH_OPS: int
MAX_BATCH_BYTES: int
OPTION_NAMES: list[str]

class _Keep:
    """The type of :data:`KEEP`."""

#: Returned by a :meth:`Db.update` function: leave the key as it is.
KEEP: _Keep

def open(path: Union[str, os.PathLike[str]], **options: Any) -> Db:
    """Opens the pool at ``path`` (created unless ``create=False``)."""

class Iterator(_Iterator[_T]):
    """Keys, values or (key, value) pairs of a Db; keeps the pool open."""
    def __iter__(self) -> Iterator[_T]: ...
    def __next__(self) -> _T: ...
    def close(self) -> None:
        """Ends the iteration early."""

class Batch:
    """Puts and deletes applied atomically by :meth:`commit` or on a clean
    exit from its ``with`` block; an exception discards it."""
    def put(
        self,
        key: BytesLike,
        value: BytesLike,
        ttl: Seconds | None = None,
        expire_at: Seconds | None = None,
    ) -> None: ...
    def delete(self, key: BytesLike) -> None: ...
    def commit(self) -> None: ...
    def discard(self) -> None: ...
    def __len__(self) -> int: ...
    def __enter__(self) -> Batch: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...

class Transaction:
    """The transaction handed to the function of :meth:`Db.transaction`;
    unusable once the function returns."""
    @overload
    def get(self, key: BytesLike) -> bytes | None: ...
    @overload
    def get(self, key: BytesLike, default: _D) -> bytes | _D: ...
    def put(
        self,
        key: BytesLike,
        value: BytesLike,
        ttl: Seconds | None = None,
        expire_at: Seconds | None = None,
    ) -> None: ...
    def delete(self, key: BytesLike) -> None: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None: ...
    def __delitem__(self, key: BytesLike) -> None: ...
    def __contains__(self, key: BytesLike) -> bool: ...

class Db:
    """A Persimmon store on one pool file. Writes are durable on return;
    reads return new bytes; safe to share between threads."""
    def __init__(self, path: Union[str, os.PathLike[str]], **options: Any) -> None: ...
    def __getitem__(self, key: BytesLike) -> bytes: ...
    def __setitem__(self, key: BytesLike, value: BytesLike) -> None: ...
    def __delitem__(self, key: BytesLike) -> None: ...
    def __contains__(self, key: BytesLike) -> bool: ...
    def __len__(self) -> int: ...
    def __iter__(self) -> Iterator[bytes]: ...
    def __enter__(self) -> Db: ...
    def __exit__(self, exc_type: Any, exc: Any, tb: Any) -> bool: ...
    @overload
    def get(self, key: BytesLike) -> bytes | None: ...
    @overload
    def get(self, key: BytesLike, default: _D) -> bytes | _D: ...
    def put(
        self,
        key: BytesLike,
        value: BytesLike,
        ttl: Seconds | None = None,
        expire_at: Seconds | None = None,
    ) -> None: ...
    def delete(self, key: BytesLike) -> bool: ...
    def ttl(self, key: BytesLike) -> float | None: ...
    def expire(
        self, key: BytesLike, ttl: Seconds | None = None, expire_at: Seconds | None = None
    ) -> bool: ...
    def persist(self, key: BytesLike) -> bool: ...
    def get_many(self, keys: Iterable[BytesLike]) -> list[bytes | None]: ...
    def keys(self) -> Iterator[bytes]: ...
    def values(self) -> Iterator[bytes]: ...
    def items(self) -> Iterator[tuple[bytes, bytes]]: ...
    def range(
        self,
        start: BytesLike | None = None,
        end: BytesLike | None = None,
        reverse: bool = False,
    ) -> Iterator[tuple[bytes, bytes]]: ...
    def prefix(self, prefix: BytesLike, reverse: bool = False) -> Iterator[tuple[bytes, bytes]]: ...
    def update(
        self,
        key: BytesLike,
        fn: Callable[[bytes | None], BytesLike | None | _Keep],
        attempts: int = 64,
    ) -> bytes | None: ...
    def batch(self) -> Batch: ...
    def transaction(self, fn: Callable[[Transaction], _T], attempts: int = 64) -> _T: ...
    def stats(self) -> dict[str, int | bool | str | None]: ...
    def check(self) -> dict[str, Any]: ...
    def close(self) -> None: ...
    @property
    def closed(self) -> bool: ...
    @property
    def path(self) -> str: ...
    @property
    def ordered(self) -> bool: ...
    @property
    def release_gil(self) -> str:
        """The GIL policy the Db was opened with: "auto" or "always"."""
