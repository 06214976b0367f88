"""The spool's files of one request: its input (an upload, or where a URL is fetched to) and the decoded
16 kHz copies the pipeline writes beside it.

A decoded copy is named after its input, so whoever removes the input removes the copies with it: a run
cut off by a crash or a restart leaves its copy behind, and the job's next run, or its end, clears it.
"""

import uuid
from pathlib import Path

DECODED_SUFFIX = ".f32"


def decoded_copy_path(source_path: str | Path) -> Path:
    """A new place for one run's decoded copy of `source_path` (runs of the same input never share one)."""
    source = Path(source_path)
    return source.with_name(f"{source.name}.{uuid.uuid4().hex}{DECODED_SUFFIX}")


def remove_spooled(source_path: str | Path) -> None:
    """The input and every decoded copy of it, including those of runs that never finished."""
    source = Path(source_path)
    for copy in source.parent.glob(f"{source.name}.*{DECODED_SUFFIX}"):
        copy.unlink(missing_ok=True)
    source.unlink(missing_ok=True)
