"""The Transcriber's batching, with a fake engine and Serve's own `@serve.batch` (no cluster needed)."""

import asyncio
import threading
import time
from collections.abc import Coroutine
from typing import Any

import numpy as np
import pytest
from ray.serve.batching import _BatchQueue

from deployments.config import BatchingConfig, WhisperModelConfig
from deployments.transcriber import deployment as transcriber_module
from deployments.types import BatchHints, ChunkOptions, ChunkTranscript
from tests.fakes import replica_class

INTERACTIVE = BatchHints(interactive=True)
MORE_COMING = BatchHints(interactive=True, more_coming=True)


class _SlowEngine:
    """Takes 0.3 s a batch, like a real engine that is busy for a while; records the batch sizes."""

    def __init__(self) -> None:
        self.batch_sizes: list[int] = []
        self.batch_lengths: list[list[int]] = []  # each batch's chunk lengths, to tell chunks apart
        self.running = self.most_running = 0  # batches in the engine now, and at most at once
        self.lock = threading.Lock()

    def transcribe_batch(self, chunks: list[np.ndarray], options: ChunkOptions) -> list[ChunkTranscript]:
        with self.lock:
            self.batch_sizes.append(len(chunks))
            self.batch_lengths.append([len(chunk) for chunk in chunks])
            self.running += 1
            self.most_running = max(self.most_running, self.running)
        time.sleep(0.3)
        with self.lock:
            self.running -= 1
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
        replica = replica_class(transcriber_module.Transcriber)(WhisperModelConfig())
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
        loop = asyncio.new_event_loop()
        yield replica, engine, loop
        loop.close()


@pytest.fixture
def transcriber(replica_and_loop):
    replica, engine, loop = replica_and_loop
    engine.batch_sizes.clear()
    engine.batch_lengths.clear()
    engine.most_running = 0
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
    assert replica.jobs.admitted == 0


def test_a_lane_runs_lane_batches_batches_at_once(transcriber) -> None:
    """On a CPU the local config runs two one-thread batches per lane: 16 chunks as four batches of 4, two
    at a time, in two batches' time; never a third batch beside them."""
    replica, engine, loop = transcriber
    replica.reconfigure({"max_batch_size": 4, "batch_wait_timeout_s": 0.05, "lane_batches": 2})
    try:

        async def scenario() -> None:
            chunk = np.zeros(16_000, dtype=np.float32)
            await asyncio.gather(*(replica.transcribe_chunk(chunk, ChunkOptions(), INTERACTIVE) for _ in range(16)))

        started = time.perf_counter()
        loop.run_until_complete(scenario())
        waited = time.perf_counter() - started
    finally:
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
    assert engine.batch_sizes == [4, 4, 4, 4]
    assert engine.most_running == 2
    assert 2 * 0.3 <= waited < 4 * 0.3  # two at a time: under the 1.2 s of one batch after another
    assert replica.interactive.admitted == replica.interactive.running == replica.interactive.in_engine == 0


def test_interactive_chunks_in_step_are_read_side_by_side(transcriber) -> None:
    """Four live sessions read in step: their four readings as one one-thread batch left the other core idle
    (0.57 s where each took 0.14 s). With `interactive_batch_size: 2` they are two batches side by side; jobs'
    chunks still fill `max_batch_size`."""
    replica, engine, loop = transcriber
    replica.reconfigure(
        {"max_batch_size": 4, "batch_wait_timeout_s": 0.05, "lane_batches": 2, "interactive_batch_size": 2}
    )
    try:

        async def scenario(hints: BatchHints) -> None:
            chunk = np.zeros(16_000, dtype=np.float32)
            await asyncio.gather(*(replica.transcribe_chunk(chunk, ChunkOptions(), hints) for _ in range(4)))

        loop.run_until_complete(scenario(INTERACTIVE))
        assert engine.batch_sizes == [2, 2] and engine.most_running == 2
        engine.batch_sizes.clear()
        loop.run_until_complete(scenario(BatchHints()))
        assert engine.batch_sizes == [4]
    finally:
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
    assert replica.interactive.admitted == replica.interactive.running == replica.interactive.in_engine == 0


def test_live_second_readings_have_a_lane_of_their_own(transcriber) -> None:
    """Issue 50: a live utterance's second reading (beam search, 30 s window) in a batch with the sessions'
    streaming readings held them back until it was done. It has a lane of its own, where on a CPU each is decoded
    alone (`second_readings_batch_size: 1`; two 13.5 s readings took 1.9 s as one batch, 1.3 s side by side);
    without that setting they are batched together, as on a GPU."""
    replica, engine, loop = transcriber
    second = BatchHints(interactive=True, second_reading=True)

    async def scenario() -> None:
        streaming = [
            replica.transcribe_chunk(np.zeros(16_000, np.float32), ChunkOptions(), INTERACTIVE) for _ in range(4)
        ]
        rereads = [replica.transcribe_chunk(np.zeros(32_000, np.float32), ChunkOptions(), second) for _ in range(2)]
        await asyncio.gather(*streaming, *rereads)

    batching = {"max_batch_size": 4, "batch_wait_timeout_s": 0.05, "lane_batches": 2}
    try:
        replica.reconfigure({**batching, "second_readings_batch_size": 1})
        loop.run_until_complete(scenario())
        assert sorted(engine.batch_lengths) == [[16_000] * 4, [32_000], [32_000]]
        assert engine.most_running == 3  # the streaming batch did not wait for either second reading
        engine.batch_lengths.clear()
        replica.reconfigure(batching)
        loop.run_until_complete(scenario())
        assert sorted(engine.batch_lengths) == [[16_000] * 4, [32_000, 32_000]]
    finally:
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
    assert replica.second.admitted == replica.second.running == replica.second.in_engine == 0


def test_an_idle_engine_holds_a_burst_announced_as_on_its_way_for_a_full_batch(transcriber) -> None:
    """The first chunk of a burst arrives alone, the others a moment later (their files are still being
    decoded): one batch of 8, not a lone first batch and then 7."""
    replica, engine, loop = transcriber

    async def scenario() -> None:
        chunk = np.zeros(16_000, dtype=np.float32)
        calls = []
        for index in range(8):
            hints = BatchHints(interactive=True, more_coming=index < 7)
            calls.append(asyncio.create_task(replica.transcribe_chunk(chunk, ChunkOptions(), hints)))
            await asyncio.sleep(0.1)  # two batch wait timeouts apart
        await asyncio.gather(*calls)

    loop.run_until_complete(scenario())
    assert engine.batch_sizes == [8]


def one_chunk_with_gathering(transcriber, gather_s: float, hints: BatchHints) -> float:
    """Seconds one chunk sent with `hints` took, the replica gathering announced chunks for `gather_s`."""
    replica, _, loop = transcriber
    replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05, "gather_s": gather_s})
    try:
        chunk = np.zeros(16_000, dtype=np.float32)
        started = time.perf_counter()
        loop.run_until_complete(replica.transcribe_chunk(chunk, ChunkOptions(), hints))
        return time.perf_counter() - started
    finally:
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})


def test_a_chunk_with_nothing_announced_behind_it_goes_at_once(transcriber) -> None:
    _, engine, _ = transcriber
    waited = one_chunk_with_gathering(transcriber, 1.0, INTERACTIVE)
    assert waited < 0.3 + 0.5  # its batch (0.3 s), not the 1 s a chunk announced with more to come would gather
    assert engine.batch_sizes == [1]


def test_announced_chunks_that_never_come_hold_the_engine_only_for_the_gathering_time(transcriber) -> None:
    replica, engine, _ = transcriber
    waited = one_chunk_with_gathering(transcriber, 0.2, MORE_COMING)
    assert 0.2 + 0.3 <= waited < 0.2 + 0.3 + 0.3
    assert engine.batch_sizes == [1] and replica.interactive.admitted == 0 and not replica.interactive.held


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
    assert replica.jobs.admitted == 0


def test_senders_take_turns_so_a_short_request_does_not_wait_behind_a_long_file(transcriber) -> None:
    """A long file's 32 chunks wait at the gate; a short request's one chunk that arrives during the file's
    first batch goes into the next one, ahead of the file's later chunks: not into the last batch, behind
    all of them."""
    replica, engine, loop = transcriber
    long_file, short = np.zeros(16_000, dtype=np.float32), np.zeros(8_000, dtype=np.float32)

    async def scenario() -> None:
        hints, short_hints = (BatchHints(interactive=True, sender=name) for name in ("long file", "short"))
        calls = [asyncio.create_task(replica.transcribe_chunk(long_file, ChunkOptions(), hints)) for _ in range(32)]
        await asyncio.sleep(0.15)  # the file's first batch is running, its next one queued behind it
        calls.append(asyncio.create_task(replica.transcribe_chunk(short, ChunkOptions(), short_hints)))
        await asyncio.gather(*calls)

    loop.run_until_complete(scenario())
    short_batch = next(index for index, lengths in enumerate(engine.batch_lengths) if 8_000 in lengths)
    assert short_batch == 1, engine.batch_lengths  # first come, first in: batch 4, behind all of the file
    assert sum(engine.batch_sizes) == 33
    assert replica.interactive.admitted == 0 and not replica.interactive.sender_admitted


def test_turn_order_interleaves_senders_and_keeps_each_senders_arrival_order() -> None:
    lane = transcriber_module.Lane("interactive")
    lane.sender_admitted["a"] = 2  # two of a's chunks are in already
    tokens = {name: object() for name in ("a3", "a4", "b1", "b2", "c1")}
    for name in ("a3", "a4", "b1", "b2", "c1"):
        lane.held[tokens[name]] = name[0]
    order = [next(name for name, token in tokens.items() if token is held) for held in lane._turn_order()]
    assert order == ["b1", "c1", "b2", "a3", "a4"]


def _backfill_then_one_interactive_chunk(replica) -> Coroutine[Any, Any, float]:
    """Eight job chunks decoding, sixteen more queued; then one interactive chunk: how long it took."""

    async def scenario() -> float:
        job_chunk, interactive_chunk = np.zeros(16_000, dtype=np.float32), np.zeros(8_000, dtype=np.float32)
        running = [asyncio.create_task(replica.transcribe_chunk(job_chunk, ChunkOptions())) for _ in range(8)]
        await asyncio.sleep(0.1)
        queued = [asyncio.create_task(replica.transcribe_chunk(job_chunk, ChunkOptions())) for _ in range(16)]
        await asyncio.sleep(0.02)
        started = time.perf_counter()
        await replica.transcribe_chunk(interactive_chunk, ChunkOptions(), INTERACTIVE)
        waited = time.perf_counter() - started
        await asyncio.gather(*running, *queued)
        return waited

    return scenario()


def test_an_interactive_chunk_is_decoded_beside_a_backfill_not_behind_it(transcriber) -> None:
    replica, engine, loop = transcriber
    waited = loop.run_until_complete(_backfill_then_one_interactive_chunk(replica))
    assert waited < 0.5  # its own batch (0.3 s), beside the jobs' batch, not after two more of them
    assert sorted(engine.batch_sizes) == [1, 8, 8, 8] and [8_000] in engine.batch_lengths
    assert replica.jobs.admitted == replica.interactive.admitted == 0


def test_with_one_lane_an_interactive_chunk_waits_behind_the_backfill(transcriber) -> None:
    replica, _engine, loop = transcriber
    replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05, "interactive_lane": False})
    try:
        waited = loop.run_until_complete(_backfill_then_one_interactive_chunk(replica))
    finally:
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
    assert waited > 0.6  # behind the running batch and the queued ones
    assert replica.jobs.admitted == replica.interactive.admitted == 0


def test_a_lane_whose_chunks_stopped_moving_says_so() -> None:
    lane = transcriber_module.Lane("jobs")
    assert lane.stall(stall_s=0) is None  # nothing waits: an idle lane is not stalled
    lane.admitted = 2
    lane.last_moved -= 10
    assert lane.stall(stall_s=60) is None  # waiting, but not long
    report = lane.stall(stall_s=5)
    assert report is not None and "2 let in" in report and "0 running batches" in report
    lane.running = 1  # a batch is running: slow models get five times as long
    assert lane.stall(stall_s=5) is None and lane.stall(stall_s=1) is not None


class _CachedClockLoop(asyncio.SelectorEventLoop):
    """A loop that reads its clock once per iteration, as uvloop (Ray's loop) does: code that runs long
    within an iteration sees a stale `loop.time()`, and timers fire by that clock."""

    cached: float | None = None

    def time(self) -> float:
        return super().time() if self.cached is None else self.cached

    def _run_once(self) -> None:
        self.cached = None
        self.cached = self.time()
        super()._run_once()  # type: ignore[misc]  # asyncio's private loop step, not in typeshed


def test_chunks_held_for_a_fuller_batch_go_when_the_loops_timer_fires() -> None:
    """A chunk announced as followed by more, with nothing else happening: the gathering time's wake-up
    timer is the only thing that lets it in, so the gate must read the clock that timer fires by."""
    lane = transcriber_module.Lane("jobs")
    batching = BatchingConfig(max_batch_size=8, gather_s=0.25)

    async def enter_after_other_work() -> None:
        time.sleep(0.05)  # work earlier in this iteration: the loop's clock is 50 ms behind now
        await lane.enter(batching, more_coming=True, sender="a file")

    async def scenario() -> None:
        await asyncio.wait_for(enter_after_other_work(), timeout=2)
        await lane.leave("a file")

    loop = _CachedClockLoop()
    try:
        loop.run_until_complete(scenario())
    finally:
        loop.close()
    assert lane.admitted == 0 and not lane.held


def test_second_readings_give_way_to_streaming_readings(transcriber) -> None:
    """Issue 61: four sessions' streaming readings run as two batches on the two cores; a second reading started
    beside them made three threads on two cores, and every streamed word waited for it. With
    `second_readings_give_way` it starts when a core is free of streaming batches, or once it has waited
    `give_way_most_s`."""
    replica, engine, loop = transcriber
    second = BatchHints(interactive=True, second_reading=True)
    batching = {
        "max_batch_size": 4,
        "batch_wait_timeout_s": 0.0,
        "lane_batches": 2,
        "interactive_batch_size": 2,
        "second_readings_batch_size": 1,
        "second_readings_give_way": True,
    }

    async def scenario() -> float:
        streaming = [
            replica.transcribe_chunk(np.zeros(16_000, np.float32), ChunkOptions(), INTERACTIVE) for _ in range(4)
        ]
        started = time.perf_counter()

        async def reread() -> float:
            await asyncio.sleep(0.05)  # the streaming batches are in the engine
            await replica.transcribe_chunk(np.zeros(32_000, np.float32), ChunkOptions(), second)
            return time.perf_counter() - started

        *_, done = await asyncio.gather(*streaming, reread())
        return done

    try:
        replica.reconfigure(batching)
        done = loop.run_until_complete(scenario())
        assert engine.most_running == 2  # never a third thread beside the two streaming batches
        assert done >= 2 * 0.3  # it ran after them
        engine.most_running = 0
        replica.reconfigure({**batching, "give_way_most_s": 0.0})
        loop.run_until_complete(scenario())
        # waited long enough: it goes in beside them (a third thread; not timed, as a busy runner stretches it)
        assert engine.most_running == 3
    finally:
        replica.reconfigure({"max_batch_size": 8, "batch_wait_timeout_s": 0.05})
    assert replica.second.admitted == replica.second.running == replica.second.in_engine == 0
