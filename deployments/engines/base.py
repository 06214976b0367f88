"""The one interface every Whisper engine implements."""

from typing import Protocol

import numpy as np

from deployments.types import ChunkOptions, ChunkTranscript


class WhisperEngine(Protocol):
    """Blocking calls: the Transcriber runs them off its event loop."""

    def detect_language(self, audio: np.ndarray) -> str:
        """ISO-639-1 code of the language spoken in (up to 30 s of) 16 kHz mono audio."""
        ...

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        """Transcribe chunks of at most 30 s in one batch, all with the same options; times are per chunk."""
        ...
