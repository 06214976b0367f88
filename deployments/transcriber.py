"""Transcriber: the deployment that owns the Whisper model, one copy per replica.

Requests arrive one chunk (at most 30 s) each; `@serve.batch` gathers chunks from every request in flight,
long files and short ones alike, and the engine decodes each group with equal options as one batch.
Batch size and wait time are `user_config`, applied in `reconfigure` without restarting the replica.
"""

import asyncio
from collections import defaultdict

import numpy as np
from pydantic import BaseModel, ConfigDict, Field
from ray import serve

from deployments.engines import load_engine
from deployments.types import ChunkOptions, ChunkTranscript
from serve_app.config import WhisperModelConfig


class BatchingConfig(BaseModel):
    """The Transcriber's `user_config`."""

    model_config = ConfigDict(extra="forbid")

    max_batch_size: int = Field(8, ge=1, le=256, description="Chunks decoded together; keep ≤ max_ongoing_requests.")
    batch_wait_timeout_s: float = Field(0.05, ge=0, description="How long a batch waits to fill before it runs.")


DEFAULT_BATCHING = BatchingConfig()


@serve.deployment(max_ongoing_requests=64, user_config=DEFAULT_BATCHING.model_dump())
class Transcriber:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.engine = load_engine(config)
        self.engine_idle = asyncio.Event()
        self.engine_idle.set()

    def reconfigure(self, user_config: dict) -> None:
        batching = BatchingConfig.model_validate(user_config)
        self.transcribe_batch.set_max_batch_size(batching.max_batch_size)
        self.transcribe_batch.set_batch_wait_timeout_s(batching.batch_wait_timeout_s)

    async def transcribe_chunk(self, chunk: np.ndarray, options: ChunkOptions) -> ChunkTranscript:
        # Serve forms the next batch from whatever has arrived even while the engine is still busy with the
        # last one, so under load batches would only be as large as arrival bursts. Chunks wait here until
        # the engine is idle, and then enter the batch queue together.
        await self.engine_idle.wait()
        return await self.transcribe_batch(chunk, options)

    @serve.batch(
        max_batch_size=DEFAULT_BATCHING.max_batch_size, batch_wait_timeout_s=DEFAULT_BATCHING.batch_wait_timeout_s
    )
    async def transcribe_batch(self, chunks: list[np.ndarray], options: list[ChunkOptions]) -> list[ChunkTranscript]:
        self.engine_idle.clear()
        try:
            return await asyncio.to_thread(self._decode_grouped, chunks, options)
        finally:
            self.engine_idle.set()

    def _decode_grouped(self, chunks: list[np.ndarray], options: list[ChunkOptions]) -> list[ChunkTranscript]:
        """One engine batch per distinct options (language, prompt, ...); results in the callers' order."""
        groups: defaultdict[ChunkOptions, list[int]] = defaultdict(list)  # ChunkOptions is frozen: hashable
        for index, chunk_options in enumerate(options):
            groups[chunk_options].append(index)
        results: list[ChunkTranscript | None] = [None] * len(chunks)
        for chunk_options, indices in groups.items():
            decoded = self.engine.transcribe_batch([chunks[i] for i in indices], chunk_options)
            for index, transcript in zip(indices, decoded, strict=True):
                results[index] = transcript
        return results
