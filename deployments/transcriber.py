"""Transcriber: the deployment that owns the Whisper model, one copy per replica.

Requests arrive one chunk (at most 30 s) each; `@serve.batch` gathers chunks from every request in flight,
long files and short ones alike, and the engine decodes each group with equal options as one batch.
Interactive chunks (synchronous requests, live sessions) are let into a batch ahead of jobs' chunks, up to
a share of each batch kept for jobs, so a backfill neither delays a waiting user nor starves.
Batch size, wait time and that share are `user_config`, applied in `reconfigure` without a restart.
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


@serve.deployment(max_ongoing_requests=64, user_config=DEFAULT_BATCHING.model_dump())
class Transcriber:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.engine = load_engine(config)
        self.max_batch_size = DEFAULT_BATCHING.max_batch_size
        self.job_slots = self._job_slots(DEFAULT_BATCHING)
        self.admission = asyncio.Condition()
        self.engine_idle = True
        self.admitted = 0  # chunks let into the batch queue whose callers have not had their result
        self.admitted_jobs = 0  # of those, jobs' chunks
        self.interactive_waiting = 0  # interactive chunks waiting to be let in
        self.received = 0  # chunks whose callers have not had their result, admitted or not
        self.decoding = 0  # chunks in the engine's current batch
        self.metrics = TranscriberMetrics()

    def reconfigure(self, user_config: dict) -> None:
        batching = BatchingConfig.model_validate(user_config)
        self.max_batch_size = batching.max_batch_size
        self.job_slots = self._job_slots(batching)
        self.transcribe_batch.set_max_batch_size(batching.max_batch_size)
        self.transcribe_batch.set_batch_wait_timeout_s(batching.batch_wait_timeout_s)

    async def transcribe_chunk(
        self, chunk: np.ndarray, options: ChunkOptions, interactive: bool = False
    ) -> ChunkTranscript:
        """`interactive`: someone is waiting for this chunk now (a synchronous request, a live session), as
        opposed to a job's chunk."""
        # Serve forms the next batch from whatever is queued even while the engine is still busy with the
        # last one, so under load batches would only be as large as arrival bursts, and a chunk that
        # arrived one past a full batch would run alone. Chunks are therefore let into the queue only
        # while the engine is idle, at most one batch's worth at a time.
        self._count_received(+1)
        try:
            async with self.admission:
                waiting = 1 if interactive else 0
                self.interactive_waiting += waiting
                try:
                    await self.admission.wait_for(lambda: self._may_enter(interactive))
                finally:
                    self.interactive_waiting -= waiting
                self.admitted += 1
                self.admitted_jobs += 1 - waiting
                self.admission.notify_all()  # an interactive chunk let in may open the way for a job's
            try:
                return await self.transcribe_batch(chunk, options)
            finally:  # also when the caller gave up: a leaked admission would shrink every later batch
                async with self.admission:
                    self.admitted -= 1
                    self.admitted_jobs -= 0 if interactive else 1
                    self.admission.notify_all()
        finally:
            self._count_received(-1)

    def _may_enter(self, interactive: bool) -> bool:
        """Room in the next batch: interactive chunks first; a job's chunk when none waits, or within the
        jobs' share of the batch."""
        if not self.engine_idle or self.admitted >= self.max_batch_size:
            return False
        return interactive or not self.interactive_waiting or self.admitted_jobs < self.job_slots

    @staticmethod
    def _job_slots(batching: BatchingConfig) -> int:
        return max(1, round(batching.max_batch_size * batching.job_share))

    def _count_received(self, change: int) -> None:
        self.received += change
        self.metrics.chunks_queued.set(max(0, self.received - self.decoding))

    @serve.batch(
        max_batch_size=DEFAULT_BATCHING.max_batch_size, batch_wait_timeout_s=DEFAULT_BATCHING.batch_wait_timeout_s
    )
    async def transcribe_batch(self, chunks: list[np.ndarray], options: list[ChunkOptions]) -> list[ChunkTranscript]:
        self.engine_idle = False
        self.decoding = len(chunks)
        self._count_received(0)
        started = time.perf_counter()
        try:
            return await asyncio.to_thread(self._decode_grouped, chunks, options)
        finally:
            seconds, audio_s = time.perf_counter() - started, sum(len(chunk) for chunk in chunks) / SAMPLE_RATE
            logger.info("decoded %d chunks (%.0f s of audio) in %.2f s", len(chunks), audio_s, seconds)
            self.metrics.batch_size.observe(len(chunks))
            self.metrics.batch_seconds.observe(seconds)
            self.decoding = 0
            async with self.admission:
                self.engine_idle = True
                self.admission.notify_all()

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
