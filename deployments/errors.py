"""Errors that say what is wrong with a client's input. The HTTP edge turns them into a 4xx `detail`; a job
ends in `error` with the same words.

They cross Ray process boundaries: Ray re-raises a replica's exception as a subclass of both `RayTaskError`
and the original class, with the original in `.cause`. `client_error` recovers it.
"""

import errno
import sqlite3
from collections.abc import Iterator
from contextlib import contextmanager


class InputRejectedError(ValueError):
    """The input cannot be processed; `str(error)` is the `detail` the client gets, `status` its HTTP status.

    Both travel in `args`, so the status survives pickling across processes.
    """

    def __init__(self, message: str, status: int = 400) -> None:
        super().__init__(message, status)

    @property
    def status(self) -> int:
        status: int = self.args[1]
        return status

    def __str__(self) -> str:
        message: str = self.args[0]
        return message


class AudioRejectedError(InputRejectedError):
    """The audio cannot be decoded, or is too short or too long."""


class UrlRejectedError(InputRejectedError):
    """A client's `url` cannot be fetched (or may not be: non-public addresses)."""


def client_error(error: BaseException) -> InputRejectedError | None:
    """The InputRejectedError behind `error`, also when Ray wrapped it; None if there is none."""
    cause = getattr(error, "cause", None)
    if isinstance(cause, InputRejectedError):
        return cause
    if isinstance(error, InputRejectedError) and cause is None:
        return error
    return None


def original_message(error: BaseException) -> str:
    """The original message of an exception that may have crossed a Ray process boundary."""
    cause = getattr(error, "cause", None)
    return str(cause if isinstance(cause, BaseException) else error)


class StorageError(OSError):
    """The service's own storage (`storage.state_dir`) refused a write: full, read-only, or an I/O error.
    Raised as OSError(errno, message); the HTTP edge answers 507 (full) or 503 with Retry-After."""


STORAGE_FULL = frozenset({errno.ENOSPC, errno.EDQUOT})
STORAGE_ERRNOS = STORAGE_FULL | {errno.EROFS, errno.EIO}
_SQLITE_ERRNO = {sqlite3.SQLITE_FULL: errno.ENOSPC, sqlite3.SQLITE_READONLY: errno.EROFS}


def storage_failure(error: BaseException) -> OSError | None:
    """The storage OSError behind `error` (also when Ray wrapped it), or None if it is something else."""
    cause = getattr(error, "cause", None)
    candidate = cause if isinstance(cause, BaseException) else error
    if isinstance(candidate, OSError) and candidate.errno in STORAGE_ERRNOS:
        return candidate
    return None


@contextmanager
def sqlite_storage(what: str) -> Iterator[None]:
    """SQLite's write failures (disk full, read-only, I/O error) as StorageError, which names the cause."""
    try:
        yield
    except sqlite3.OperationalError as error:
        storage = sqlite_storage_error(error, what)
        if storage is None:
            raise  # not a storage failure: a bug, let it show
        raise storage from error


def sqlite_storage_error(error: sqlite3.OperationalError, what: str) -> StorageError | None:
    """The StorageError that SQLite's `error` stands for (disk full, read-only, I/O error); None for the rest."""
    code = getattr(error, "sqlite_errorcode", 0) & 0xFF  # the primary code of an extended one
    number = _SQLITE_ERRNO.get(code, errno.EIO)
    if number == errno.EIO and code not in (sqlite3.SQLITE_IOERR, sqlite3.SQLITE_CANTOPEN):
        return None
    return StorageError(number, f"{what} could not be written ({error})")
