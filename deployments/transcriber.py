"""Transcriber: the deployment that owns the Whisper model, one copy per replica.

Requests arrive one chunk (at most 30 s) each; `@serve.batch` gathers chunks from every request in flight,
long files and short ones alike, and the engine decodes each group with equal options as one batch.

Chunks that someone is waiting for now (synchronous requests, live sessions) go to a lane of their own:
the engine runs two batches at once (one per lane), so such a chunk is decoded at once instead of behind a
backfill's batches, and jobs keep their lane and are never starved. Batch size, wait time and the lanes
are `user_config`, applied in `reconfigure` without restarting the replica.
"""

import asyncio
import logging
import time
from collections import defaultdict

import numpy as np
from ray import serve

from deployments.config import BatchingConfig, WhisperModelConfig
from deployments.engines import load_engine
from deployments.metrics import TranscriberMetrics
from deployments.types import SAMPLE_RATE, ChunkOptions, ChunkTranscript

logger = logging.getLogger("ray.serve")


DEFAULT_BATCHING = BatchingConfig()


class Lane:
    """One batch in the engine at a time, and a gate in front of Serve's batch queue.

    Serve forms the next batch from whatever is queued even while the engine is still busy with the last
    one, so under load batches would only be as large as arrival bursts, and a chunk that arrived one past
    a full batch would run alone. Chunks are therefore let into the queue only while the lane's engine call
    is idle, at most one batch's worth at a time."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.admission = asyncio.Condition()
        self.engine_idle = True
        self.admitted = 0  # chunks let into the batch queue whose callers have not had their result

    async def enter(self, max_batch_size: int) -> None:
        async with self.admission:
            await self.admission.wait_for(lambda: self.engine_idle and self.admitted < max_batch_size)
            self.admitted += 1

    async def leave(self) -> None:
        """Also when the caller gave up: a leaked admission would shrink every later batch."""
        async with self.admission:
            self.admitted -= 1
            self.admission.notify_all()

    async def set_idle(self, idle: bool) -> None:
        async with self.admission:
            self.engine_idle = idle
            self.admission.notify_all()


@serve.deployment(max_ongoing_requests=64, user_config=DEFAULT_BATCHING.model_dump())
class Transcriber:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.engine = load_engine(config)
        self.max_batch_size = DEFAULT_BATCHING.max_batch_size
        self.interactive_lane = DEFAULT_BATCHING.interactive_lane
        self.jobs, self.interactive = Lane("jobs"), Lane("interactive")
        self.received = 0  # chunks whose callers have not had their result, admitted or not
        self.decoding = 0  # chunks in the engine's current batches
        self.metrics = TranscriberMetrics()

    def reconfigure(self, user_config: dict) -> None:
        batching = BatchingConfig.model_validate(user_config)
        self.max_batch_size = batching.max_batch_size
        self.interactive_lane = batching.interactive_lane
        for batch in (self.transcribe_batch, self.transcribe_interactive_batch):
            batch.set_max_batch_size(batching.max_batch_size)
            batch.set_batch_wait_timeout_s(batching.batch_wait_timeout_s)

    async def transcribe_chunk(
        self, chunk: np.ndarray, options: ChunkOptions, interactive: bool = False
    ) -> ChunkTranscript:
        """`interactive`: someone is waiting for this chunk now (a synchronous request, a live session), as
        opposed to a job's chunk."""
        if interactive and self.interactive_lane:
            lane, batch = self.interactive, self.transcribe_interactive_batch
        else:
            lane, batch = self.jobs, self.transcribe_batch
        self._count_received(+1)
        try:
            await lane.enter(self.max_batch_size)
            try:
                return await batch(chunk, options)
            finally:
                await lane.leave()
        finally:
            self._count_received(-1)

    def _count_received(self, change: int) -> None:
        self.received += change
        self.metrics.chunks_queued.set(max(0, self.received - self.decoding))

    @serve.batch(
        max_batch_size=DEFAULT_BATCHING.max_batch_size, batch_wait_timeout_s=DEFAULT_BATCHING.batch_wait_timeout_s
    )
    async def transcribe_batch(self, chunks: list[np.ndarray], options: list[ChunkOptions]) -> list[ChunkTranscript]:
        return await self._run_batch(self.jobs, chunks, options)

    @serve.batch(
        max_batch_size=DEFAULT_BATCHING.max_batch_size, batch_wait_timeout_s=DEFAULT_BATCHING.batch_wait_timeout_s
    )
    async def transcribe_interactive_batch(
        self, chunks: list[np.ndarray], options: list[ChunkOptions]
    ) -> list[ChunkTranscript]:
        return await self._run_batch(self.interactive, chunks, options)

    async def _run_batch(
        self, lane: Lane, chunks: list[np.ndarray], options: list[ChunkOptions]
    ) -> list[ChunkTranscript]:
        await lane.set_idle(False)
        self.decoding += len(chunks)
        self._count_received(0)
        started = time.perf_counter()
        try:
            return await asyncio.to_thread(self._decode_grouped, chunks, options)
        finally:
            seconds, audio_s = time.perf_counter() - started, sum(len(chunk) for chunk in chunks) / SAMPLE_RATE
            logger.info("%s: decoded %d chunks (%.0f s of audio) in %.2f s", lane.name, len(chunks), audio_s, seconds)
            self.metrics.batch_size.observe(len(chunks))
            self.metrics.batch_seconds.observe(seconds)
            self.decoding -= len(chunks)
            await lane.set_idle(True)

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
