"""Copy an upload to the spool directory in bounded chunks, enforcing a size limit while copying."""

from pathlib import Path
from typing import BinaryIO

CHUNK_BYTES = 1024 * 1024


class UploadTooLargeError(ValueError):
    """The upload crossed the size limit; nothing of it is kept."""


def spool_upload(upload: BinaryIO, target: Path, max_bytes: int) -> int:
    """Write `upload` to `target` (memory use: one chunk) and return its size; delete it if too large."""
    target.parent.mkdir(parents=True, exist_ok=True)
    written = 0
    try:
        with target.open("wb") as out:
            while chunk := upload.read(CHUNK_BYTES):
                written += len(chunk)
                if written > max_bytes:
                    raise UploadTooLargeError(max_bytes)
                out.write(chunk)
    except BaseException:
        target.unlink(missing_ok=True)
        raise
    return written
