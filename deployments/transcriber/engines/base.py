"""The one interface every Whisper engine implements."""

import time
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Protocol

import numpy as np

from deployments.transcriber.engines.batch_memory import BatchMemory
from deployments.types import ChunkOptions, ChunkTranscript, ComputeSeconds


class WhisperEngine(Protocol):
    """Blocking calls: the Transcriber runs them off its event loop."""

    memory: BatchMemory
    """How many chunks one of its batches may hold within the replica's memory budget."""

    @property
    def multilingual(self) -> bool:
        """Whether the model knows languages besides English: only such a model can translate."""
        ...

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        """Transcribe (or with `options.task` translate) chunks of at most 30 s in one batch, all with the same
        options; times are per chunk.

        With `options.language` None, each chunk's language is detected from the encoder output that also
        decodes it (no second encoder pass), and reported in its transcript.
        """
        ...


class Stopwatch:
    """A batch's engine seconds by stage (`ComputeSeconds`), each chunk's transcript carrying its share."""

    def __init__(self) -> None:
        self.seconds: dict[str, float] = {}

    @contextmanager
    def stage(self, name: str) -> Iterator[None]:
        started = time.perf_counter()
        try:
            yield
        finally:
            self.seconds[name] = self.seconds.get(name, 0.0) + time.perf_counter() - started

    def shared(self, transcripts: list[ChunkTranscript]) -> list[ChunkTranscript]:
        """The transcripts, each with an equal share of the batch's seconds added to what it carries."""
        share = ComputeSeconds(**self.seconds).share(max(1, len(transcripts)))
        return [t.model_copy(update={"compute": t.compute + share}) for t in transcripts]
