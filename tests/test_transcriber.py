"""The Transcriber's batching, with a fake engine and Serve's own `@serve.batch` (no cluster needed)."""

import asyncio
import time

import numpy as np
import pytest
from ray.serve.batching import _BatchQueue

from deployments import transcriber as transcriber_module
from deployments.config import WhisperModelConfig
from deployments.types import ChunkOptions, ChunkTranscript


class _SlowEngine:
    """Takes 0.3 s a batch, like a real engine that is busy for a while; records the batch sizes."""

    def __init__(self) -> None:
        self.batch_sizes: list[int] = []
        self.batch_lengths: list[list[int]] = []  # each batch's chunk lengths, to tell chunks apart

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        self.batch_sizes.append(len(chunks))
        self.batch_lengths.append([len(chunk) for chunk in chunks])
        time.sleep(0.3)
        return [ChunkTranscript(language="en", segments=[]) for _ in chunks]


@pytest.fixture(scope="module")
def replica_and_loop():
    """One replica and one event loop for the module: like a replica process, Serve keeps one batch queue
    per decorated method, bound to the loop it was first used on."""
    engine = _SlowEngine()
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(transcriber_module, "load_engine", lambda config: engine)
        # Serve's batch queue reads the replica's config for a warning; there is no replica here.
        patch.setattr(_BatchQueue, "_warn_if_max_batch_size_exceeds_max_ongoing_requests", lambda self: None)
        replica = transcriber_module.Transcriber.func_or_class(WhisperModelConfig())
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
        loop = asyncio.new_event_loop()
        yield replica, engine, loop
        loop.close()


@pytest.fixture
def transcriber(replica_and_loop):
    replica, engine, loop = replica_and_loop
    engine.batch_sizes.clear()
    engine.batch_lengths.clear()
    return replica, engine, loop


def test_chunks_arriving_while_the_engine_is_busy_form_full_batches(transcriber) -> None:
    """Nine chunks at once, then seven more during the first batch: two full batches, not 8 + 1 + 7."""
    replica, engine, loop = transcriber

    async def scenario() -> list[ChunkTranscript]:
        chunk = np.zeros(16_000, dtype=np.float32)
        first = [asyncio.create_task(replica.transcribe_chunk(chunk, ChunkOptions())) for _ in range(9)]
        await asyncio.sleep(0.15)  # the first batch is running now
        later = [asyncio.create_task(replica.transcribe_chunk(chunk, ChunkOptions())) for _ in range(7)]
        return await asyncio.gather(*first, *later)

    results = loop.run_until_complete(scenario())
    assert len(results) == 16
    assert engine.batch_sizes == [8, 8]
    assert replica.admitted == 0


def test_a_caller_that_gives_up_does_not_hold_its_place(transcriber) -> None:
    replica, engine, loop = transcriber

    async def scenario() -> None:
        chunk = np.zeros(16_000, dtype=np.float32)
        running = [asyncio.create_task(replica.transcribe_chunk(chunk, ChunkOptions())) for _ in range(8)]
        await asyncio.sleep(0.05)
        abandoned = asyncio.create_task(replica.transcribe_chunk(chunk, ChunkOptions()))
        await asyncio.sleep(0.05)
        abandoned.cancel()
        await asyncio.gather(*running)
        await asyncio.gather(*(replica.transcribe_chunk(chunk, ChunkOptions()) for _ in range(8)))

    loop.run_until_complete(scenario())
    assert engine.batch_sizes == [8, 8]
    assert replica.admitted == 0


def test_an_interactive_chunk_goes_ahead_of_a_queue_of_jobs_chunks(transcriber) -> None:
    """Sixteen job chunks wait while a batch runs; a synchronous request's chunk arriving after them is in
    the very next batch, not two batches later."""
    replica, engine, loop = transcriber
    job_chunk, interactive_chunk = np.zeros(16_000, dtype=np.float32), np.zeros(8_000, dtype=np.float32)

    async def scenario() -> None:
        running = [asyncio.create_task(replica.transcribe_chunk(job_chunk, ChunkOptions())) for _ in range(8)]
        await asyncio.sleep(0.1)  # a batch of jobs' chunks is being decoded
        queued = [asyncio.create_task(replica.transcribe_chunk(job_chunk, ChunkOptions())) for _ in range(16)]
        await asyncio.sleep(0.02)
        await asyncio.gather(*running, replica.transcribe_chunk(interactive_chunk, ChunkOptions(), True), *queued)

    loop.run_until_complete(scenario())
    assert engine.batch_sizes == [8, 8, 8, 1]
    assert [8_000 in lengths for lengths in engine.batch_lengths] == [False, True, False, False]
    assert replica.admitted == replica.admitted_jobs == replica.interactive_waiting == 0


def test_jobs_keep_their_share_of_every_batch_while_interactive_chunks_queue(transcriber) -> None:
    """With the default share of 1/4, a batch of 8 holds at least 2 job chunks when jobs wait too."""
    replica, engine, loop = transcriber
    job_chunk, interactive_chunk = np.zeros(16_000, dtype=np.float32), np.zeros(8_000, dtype=np.float32)

    async def scenario() -> None:
        running = [asyncio.create_task(replica.transcribe_chunk(job_chunk, ChunkOptions())) for _ in range(8)]
        await asyncio.sleep(0.1)
        jobs = [asyncio.create_task(replica.transcribe_chunk(job_chunk, ChunkOptions())) for _ in range(4)]
        users = [replica.transcribe_chunk(interactive_chunk, ChunkOptions(), True) for _ in range(12)]
        await asyncio.gather(*running, *jobs, *users)

    loop.run_until_complete(scenario())
    jobs_per_batch = [lengths.count(16_000) for lengths in engine.batch_lengths[1:]]
    assert engine.batch_sizes == [8, 8, 8] and jobs_per_batch == [2, 2]
