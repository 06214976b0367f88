"""The one interface every Whisper engine implements."""

from typing import Protocol

import numpy as np

from deployments.types import ChunkOptions, ChunkTranscript


class WhisperEngine(Protocol):
    """Blocking calls: the Transcriber runs them off its event loop."""

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
