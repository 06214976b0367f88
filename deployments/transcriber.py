"""Transcriber: the deployment that owns the Whisper model, one copy per replica."""

import asyncio

import numpy as np
from ray import serve

from deployments.engines import load_engine
from deployments.types import Transcript, TranscriptionOptions
from serve_app.config import WhisperModelConfig


@serve.deployment
class Transcriber:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.engine = load_engine(config)

    async def transcribe(self, audio: np.ndarray, options: TranscriptionOptions) -> Transcript:
        return await asyncio.to_thread(self.engine.transcribe, audio, options)
