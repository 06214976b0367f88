"""Diarizer: the deployment that runs the speaker-diarization pipeline on decoded audio.

pyannote.audio and torch are imported in the replica's constructor, not at module level: the process that
builds the application imports this module for the class alone, and would otherwise spend seconds on them
before any replica could start.
"""

import asyncio
import time

import numpy as np
from ray import serve

from deployments.config import DiarizationConfig
from deployments.metrics import DiarizerMetrics
from deployments.types import Diarization, DiarizationOptions, VoicePrint


@serve.deployment(max_ongoing_requests=8)
class Diarizer:
    def __init__(self, config: DiarizationConfig) -> None:
        from deployments.diarization._pyannote import DiarizationPipeline  # here, not at the top: see the docstring

        self.pipeline = DiarizationPipeline(config)
        self.lock = asyncio.Lock()  # one pipeline run at a time: pyannote pipelines are not re-entrant
        self.metrics = DiarizerMetrics()

    async def diarize_file(self, path: str, options: DiarizationOptions) -> Diarization:
        """Diarize the decoded 16 kHz float32 audio that the pipeline spooled at `path`: the samples are
        read here, once, rather than sent through other deployments."""
        async with self.lock:
            started = time.perf_counter()
            try:
                return await asyncio.to_thread(self._diarize_file, path, options)
            finally:
                self.metrics.seconds.observe(time.perf_counter() - started)

    async def embed_voices(self, windows: list[np.ndarray]) -> np.ndarray:
        """Speaker embeddings of short windows, for live sessions' speaker labels. Not behind the lock: the
        encoder's forward pass is re-entrant, and a live word must not wait for a whole file's diarization."""
        return await asyncio.to_thread(self.pipeline.embed_voices, windows)

    async def voice_print_file(self, path: str) -> VoicePrint:
        """The voice of an enrolment clip's speech, decoded 16 kHz float32 at `path` (read here, as files are)."""
        return await asyncio.to_thread(self._voice_print_file, path)

    def _voice_print_file(self, path: str) -> VoicePrint:
        return self.pipeline.voice_print(np.fromfile(path, dtype=np.float32))

    def _diarize_file(self, path: str, options: DiarizationOptions) -> Diarization:
        return self.pipeline.diarize(np.fromfile(path, dtype=np.float32), options)
