"""The one interface every Whisper engine implements."""

from typing import Protocol

import numpy as np

from deployments.types import Transcript, TranscriptionOptions


class WhisperEngine(Protocol):
    def transcribe(self, audio: np.ndarray, options: TranscriptionOptions) -> Transcript:
        """Transcribe 16 kHz mono float32 audio. Blocking: callers run it off the event loop."""
        ...
