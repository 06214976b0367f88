"""The spool's files of one request: its input (an upload, or where a URL is fetched to), its known speakers'
reference clips, and the decoded 16 kHz copies the pipeline writes beside them.

A decoded copy is named after its input, so whoever removes the input removes the copies with it: a run
cut off by a crash or a restart leaves its copy behind, and the job's next run, or its end, clears it.
"""

import uuid
from pathlib import Path

DECODED_SUFFIX = ".f32"
REDACTED_SUFFIX = ".redacted"


def decoded_copy_path(source_path: str | Path) -> Path:
    """A new place for one run's decoded copy of `source_path` (runs of the same input never share one)."""
    source = Path(source_path)
    return source.with_name(f"{source.name}.{uuid.uuid4().hex}{DECODED_SUFFIX}")


def reference_path(source_path: str | Path, index: int) -> Path:
    """Where the request's `index`th known speaker's reference clip is spooled, beside its input."""
    source = Path(source_path)
    return source.with_name(f"{source.name}.ref{index}")


def redacted_audio_path(source_path: str | Path, audio_format: str) -> Path:
    """Where a run writes its input's redacted audio, beside it (the job keeps it once the job is done)."""
    source = Path(source_path)
    return source.with_name(f"{source.name}{REDACTED_SUFFIX}.{audio_format}")


def remove_spooled(source_path: str | Path) -> None:
    """The input, its known speakers' clips, every decoded copy (including those of runs that never finished) and
    redacted audio not kept."""
    source = Path(source_path)
    for redacted in source.parent.glob(f"{source.name}{REDACTED_SUFFIX}.*"):
        redacted.unlink(missing_ok=True)
    for clip in source.parent.glob(f"{source.name}.ref*"):
        clip.unlink(missing_ok=True)
    for copy in source.parent.glob(f"{source.name}.*{DECODED_SUFFIX}"):
        copy.unlink(missing_ok=True)
    source.unlink(missing_ok=True)
