"""The exceptions of the persimmon package.

Every exception the package raises derives from :class:`Error`. Where a
builtin exception says the same thing, the class derives from it too, so
code written against the builtins keeps working: a key of the wrong type
raises :class:`InvalidTypeError` (also a :class:`TypeError`), ``db[missing]``
raises :class:`KeyNotFoundError` (also a :class:`KeyError`), an operating
system failure raises :class:`IoError` (also an :class:`OSError`).

The native module raises these classes by name (``persimmon._persimmon``
looks them up here), with the engine's own message.
"""

from __future__ import annotations


class Error(Exception):
    """Base class of every exception the persimmon package raises."""


# --- The binding's own errors -------------------------------------------


class ClosedError(Error):
    """The Db was closed (or the iterator, batch or transaction is over)."""


class InvalidTypeError(Error, TypeError):
    """A key, value or argument of a type the package does not take."""


class InvalidArgumentError(Error, ValueError):
    """An argument of the right type but a wrong value (a ttl <= 0, ...)."""


class KeyNotFoundError(Error, KeyError):
    """The key is absent (``db[key]``, ``del db[key]``, ``db.ttl(key)``)."""


class BusyError(Error, RuntimeError):
    """A call that would wait for itself forever (closing a Db from inside
    one of its own transactions)."""


class InternalError(Error):
    """The engine panicked; this is a bug in Persimmon, please report it."""


# --- The engine's errors (persimmon::Error, one class per variant) ------


class IoError(Error, OSError):
    """An operating-system call failed (``errno`` is set when known)."""


class PoolNotFoundError(Error, FileNotFoundError):
    """The pool file does not exist and ``create=False``."""


class LockedError(Error):
    """The pool is open already: in another process, or in another Db of
    this one (a pool file has one Db at a time)."""


class NotAPoolError(Error):
    """The file exists but is not a Persimmon pool (bad magic)."""


class UnsupportedVersionError(Error):
    """The pool was written by a newer or unknown format version."""


class CorruptionError(Error):
    """Damaged data was found on the media (CRC mismatch, bad offset)."""


class TruncatedError(CorruptionError):
    """The pool file is shorter than its superblock says."""


class CorruptSuperblockError(CorruptionError):
    """The superblock's checksum or one of its fields is wrong."""


class ExtentCorruptionError(CorruptionError):
    """A value's extent on the SSD tier is damaged (other keys are fine)."""


class PdvError(CorruptionError):
    """A persistent dancing variable's shadows are damaged."""


class KeyTooLargeError(Error, ValueError):
    """A key longer than the engine's limit (``persimmon.MAX_KEY_BYTES``)."""


class ValueTooLargeError(Error, ValueError):
    """A value longer than the engine's limit (``persimmon.MAX_VALUE_BYTES``)."""


class DeadlineTooFarError(Error, ValueError):
    """A key deadline after the end of year 9999."""


class BatchTooLargeError(Error, ValueError):
    """A batch over its limits (operations, or bytes of keys and values)."""


class PdvValueTooLargeError(Error, ValueError):
    """A value wider than a persistent dancing variable's 62 bits."""


class PoolFullError(Error):
    """The pool is at its ``pool_bytes_max`` and has no free space left."""


class IndexFullError(Error):
    """The point index cannot take another key."""


class TransactionConflictError(Error):
    """A transaction (or ``Db.update``) met conflicting writers on every
    attempt; nothing was written."""


class DataDirError(Error):
    """The SSD tier's data directory cannot be used."""


class DataDirFullError(Error, OSError):
    """The SSD tier's file system is full; the write was not applied."""


class InvalidOptionsError(Error, ValueError):
    """Options that cannot be used (an unknown name, a bad value)."""


class NoOrderedIndexError(Error):
    """An ordered read (range, prefix) on a pool created without
    ``ordered_index=True``."""


__all__ = [name for name, obj in list(globals().items()) if isinstance(obj, type) and issubclass(obj, Error)]

# Shown as persimmon.<Name> in tracebacks (the classes are re-exported there).
for _name in __all__:
    globals()[_name].__module__ = "persimmon"
del _name
