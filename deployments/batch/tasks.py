"""One input file as the batch carries it through Ray Data, and the outcome it leaves in `_manifest.jsonl`."""

from typing import Any, Literal

from pydantic import BaseModel, Field

from deployments.types import ChunkOptions, DiarizationOptions, TranscriptionOptions


class FileTask(BaseModel):
    """One input: where it is read from, where its outputs go and how it is transcribed."""

    source: str = Field(description="A local path, an object-store URI pyarrow reads (s3://, gs://) or an http(s) URL.")
    name: str = Field(description="Its outputs' path under OUTPUT, without an extension (also its manifest key).")
    options: TranscriptionOptions
    diarization: DiarizationOptions | None = None
    outputs: list[str] = Field(
        default_factory=list,
        description="The files it writes, relative to OUTPUT: a marker without one of them is"
        " not this run's work (a rerun that asks for another format).",
    )
    render: dict[str, Any] = Field(
        default_factory=dict, description="How the edge renders it (data the batch does not read, as a job's render)."
    )


class Outcome(BaseModel):
    """One line of `_manifest.jsonl`: `ok` with the audio's duration and language, or `error` with the reason."""

    name: str
    source: str
    status: Literal["ok", "error"]
    duration: float | None = None
    language: str | None = None
    error: str | None = None
    outputs: list[str] = Field(default_factory=list, description="The files written, relative to OUTPUT.")
    run: str | None = Field(None, description="The run that wrote it: a retried block finds its own run's work done.")

    def covers(self, task: "FileTask") -> bool:
        """Whether this outcome is `task` done: an error, or every output it asks for written."""
        return self.status == "error" or set(task.outputs) <= set(self.outputs)


def chunk_options(task: FileTask) -> ChunkOptions:
    """How each chunk of `task` is decoded, as the service's pipeline decodes it (words timed when speakers are
    asked: they are given to words)."""
    options = task.options
    if task.diarization is not None:
        options = options.model_copy(update={"word_timestamps": True})
    return ChunkOptions(**{**options.model_dump(), "prompt": options.prompt})
