"""Transcriber: the deployment that owns the Whisper model, one copy per replica.

Requests arrive one chunk (at most 30 s) each; `@serve.batch` gathers chunks from every request in flight,
long files and short ones alike, and the engine decodes each group with equal options as one batch.

Chunks that someone is waiting for now (synchronous requests, live sessions) go to a lane of their own:
the engine runs both lanes' batches at once, so such a chunk is decoded at once instead of behind a
backfill's batches, and jobs keep their lane and are never starved. A lane may itself run `lane_batches`
batches at once: on a CPU, two one-thread batches keep both cores busy where one two-thread batch has its
threads wait on each other. Live utterances' second readings (`BatchHints.second_reading`: long, beam
search) have a third lane, so that the sessions' streaming readings never wait for one in their batch, and on a
CPU each is decoded alone (`second_readings_batch_size: 1`), two side by side. Batch size, wait time and the
lanes are `user_config`, applied in `reconfigure` without restarting the replica.
"""

import asyncio
import logging
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Coroutine
from typing import Any, Protocol, cast

import numpy as np
from ray import serve

from deployments.config import MAX_LANE_BATCHES, BatchingConfig, WhisperModelConfig
from deployments.metrics import TranscriberMetrics
from deployments.transcriber.engines import load_engine
from deployments.types import SAMPLE_RATE, BatchHints, ChunkOptions, ChunkTranscript, ComputeSeconds

logger = logging.getLogger("ray.serve")


DEFAULT_BATCHING = BatchingConfig()
STALL_WARNING_S = 120  # far beyond any batch's time: chunks waiting this long are stuck
STALL_CHECK_S = 30
NO_HINTS = BatchHints()  # a job's chunk, with nothing said about others: it takes a turn of its own


class Lane:
    """At most `lane_batches` batches in the engine at a time, and a gate in front of Serve's batch queue.

    Serve forms the next batch from whatever is queued even while the engine is still busy with the last
    one, so under load batches would only be as large as arrival bursts, and a chunk that arrived one past
    a full batch would run alone. Chunks are therefore let into the queue only while the lane has room for
    another batch in the engine, at most one batch's worth at a time.

    A free engine would also start on the first chunk of a burst whose other chunks are a moment behind
    (still being decoded from their files). Senders therefore say when more chunks are on their way, and
    the gate then holds the chunks it has until a full batch is there, or until no such word came for
    `gather_s` (at most `max_gather_s` from the first chunk held).

    Senders (one file's run) take turns at the gate: a sender's n-th chunk waiting or let in goes after
    every other sender's chunks up to their n-th, in arrival order within a turn. A short request that
    arrives while a long file's chunks wait is then in the next batch, not behind the whole file."""

    def __init__(self, name: str) -> None:
        self.name = name
        self.batch_size: int | None = None  # else batching.max_batch_size
        self.admission = asyncio.Condition()
        self.running = 0  # this lane's batches in the engine
        self.in_engine = 0  # chunks in those batches
        self.admitted = 0  # chunks let into the batch queue whose callers have not had their result
        self.held: dict[object, object] = {}  # a token per chunk at the gate -> its sender, in arrival order
        self.sender_admitted: Counter[object] = Counter()  # chunks let in per sender, not yet left
        self.ranks: dict[object, int] | None = None  # held token -> place in the turn order; None: recompute
        self.gather_until = 0.0  # the loop's time until which chunks are held for a fuller batch
        self.holding_since: float | None = None
        self.last_moved = time.monotonic()  # when a chunk last went in, or a batch started or ended
        self.wake_ups: set[asyncio.Task[None]] = set()  # held until done: the loop keeps only weak references
        self.gives_way_to: Lane | None = None  # a lane whose running batches this one's count with
        self.giving_way: list[Lane] = []  # lanes that give way to this one: told when its batches end

    def stall(self, stall_s: float) -> str | None:
        """What the lane looks like when chunks have waited `stall_s` without anything moving (five times that
        while a batch runs: a large model on a CPU is slow), else None."""
        waited = time.monotonic() - self.last_moved
        if waited < (5 * stall_s if self.running else stall_s) or not (self.held or self.admitted):
            return None
        return (
            f"{self.name} lane: nothing moved for {waited:.0f} s with {len(self.held)} chunks at the gate and"
            f" {self.admitted} let in, {self.in_engine} in {self.running} running batches"
        )

    async def enter(self, batching: BatchingConfig, more_coming: bool, sender: object) -> None:
        """Wait until this chunk may go into the batch queue; `leave(sender)` when its caller is done."""
        token = object()
        loop = asyncio.get_running_loop()
        async with self.admission:
            now = loop.time()  # the loop's clock, the one its timers fire by (see `_may_enter`)
            if self.holding_since is None:
                self.holding_since = now
            if self.gives_way_to is not None and batching.second_readings_give_way:
                loop.call_at(now + batching.give_way_most_s, self._wake)
            if more_coming:
                latest = min(now + batching.gather_s, self.holding_since + batching.max_gather_s)
                self.gather_until = max(self.gather_until, latest)
                loop.call_at(self.gather_until, self._wake)
            self.held[token] = sender
            self.ranks = None
            self.admission.notify_all()  # a batch may be full now
            try:
                await self.admission.wait_for(lambda: self._may_enter(token, batching))
                self.admitted += 1
                self.sender_admitted[sender] += 1
            finally:
                del self.held[token]
                self.ranks = None
                if not self.held:
                    self.holding_since = None
                self.admission.notify_all()  # the chunks behind this one moved up
            self.last_moved = time.monotonic()

    def largest_batch(self, batching: BatchingConfig) -> int:
        return self.batch_size or batching.max_batch_size

    def _may_enter(self, token: object, batching: BatchingConfig) -> bool:
        queued = self.admitted - self.in_engine  # one batch at most
        room = self.largest_batch(batching) - queued
        if self.running >= batching.lane_batches or self._rank(token) >= room:
            return False
        if self._giving_way(batching):
            return False
        # By the loop's clock: uvloop's (Ray's loop) is cached per iteration in whole milliseconds, so by
        # time.monotonic() the wake-up timer can fire just before gather_until, and no later wake-up comes.
        return len(self.held) >= room or asyncio.get_running_loop().time() >= self.gather_until

    def _giving_way(self, batching: BatchingConfig) -> bool:
        """Whether the lane this one gives way to holds the cores (`second_readings_give_way`): its running
        batches and this lane's make lane_batches, and no chunk here has waited give_way_most_s."""
        other = self.gives_way_to
        if other is None or not batching.second_readings_give_way or self.holding_since is None:
            return False
        waited = asyncio.get_running_loop().time() - self.holding_since
        return other.running + self.running >= batching.lane_batches and waited < batching.give_way_most_s

    def _rank(self, token: object) -> int:
        """Computed once per change at the gate, not once per waiting chunk: a GPU's lane holds hundreds."""
        if self.ranks is None:
            self.ranks = {held: rank for rank, held in enumerate(self._turn_order())}
        return self.ranks[token]

    def _turn_order(self) -> list[object]:
        """The held chunks in the order they go in: by their sender's turn, then by arrival."""
        turns = Counter(self.sender_admitted)
        keyed = []
        for arrival, (token, sender) in enumerate(self.held.items()):
            keyed.append((turns[sender], arrival, token))
            turns[sender] += 1
        return [token for _, _, token in sorted(keyed, key=lambda key: key[:2])]

    def _wake(self) -> None:
        """The gathering time is over: the held chunks may go (a callback: it cannot take the lock itself)."""
        wake_up = asyncio.ensure_future(self._notify())
        self.wake_ups.add(wake_up)
        wake_up.add_done_callback(self.wake_ups.discard)

    async def _notify(self) -> None:
        async with self.admission:
            self.admission.notify_all()

    async def leave(self, sender: object) -> None:
        """Also when the caller gave up: a leaked admission would shrink every later batch."""
        async with self.admission:
            self.admitted -= 1
            self.sender_admitted[sender] -= 1
            if not self.sender_admitted[sender]:
                del self.sender_admitted[sender]
            self.ranks = None
            self.admission.notify_all()

    async def batch_started(self, size: int) -> None:
        async with self.admission:
            self.running, self.in_engine = self.running + 1, self.in_engine + size
            self.last_moved = time.monotonic()
            self.admission.notify_all()  # the queue is empty again: a next batch may gather for a free slot

    async def batch_ended(self, size: int) -> None:
        async with self.admission:
            self.running, self.in_engine = self.running - 1, self.in_engine - size
            self.last_moved = time.monotonic()
            self.admission.notify_all()
        for lane in self.giving_way:  # a core is free for them
            await lane._notify()


class LaneBatch(Protocol):
    """A lane's `@serve.batch` method as its callers see it: one chunk in, its transcript out, and Serve's
    setters for the batch's size and wait."""

    async def __call__(self, chunk: np.ndarray, options: ChunkOptions) -> ChunkTranscript: ...

    def set_max_batch_size(self, new_max_batch_size: int) -> None: ...

    def set_batch_wait_timeout_s(self, new_batch_wait_timeout_s: float) -> None: ...


def lane_batch(method: Callable[..., Coroutine[Any, Any, list[ChunkTranscript]]]) -> LaneBatch:
    """`@serve.batch` with the lanes' defaults. Typed here because Ray's own annotations know only batch
    methods of one argument, and these take two (chunks and their options)."""
    batched = serve.batch(
        max_batch_size=DEFAULT_BATCHING.max_batch_size,
        batch_wait_timeout_s=DEFAULT_BATCHING.batch_wait_timeout_s,
        max_concurrent_batches=MAX_LANE_BATCHES,  # the lane's gate keeps lane_batches
    )(method)
    return cast(LaneBatch, batched)


@serve.deployment(max_ongoing_requests=64, user_config=DEFAULT_BATCHING.model_dump())
class Transcriber:
    def __init__(self, config: WhisperModelConfig) -> None:
        self.engine = load_engine(config)
        self.batching = DEFAULT_BATCHING
        self.jobs, self.interactive = Lane("jobs"), Lane("interactive")
        self.second = Lane("second readings")
        self.second.gives_way_to = self.interactive
        self.interactive.giving_way.append(self.second)
        self.lanes = (self.second, self.interactive, self.jobs)
        self.received = 0  # chunks whose callers have not had their result, admitted or not
        self.metrics = TranscriberMetrics()
        self.watchdog: asyncio.Task[None] | None = None

    def reconfigure(self, user_config: dict[str, Any]) -> None:
        batching = self.batching = BatchingConfig.model_validate(user_config)
        self.second.batch_size = batching.second_readings_batch_size
        self.interactive.batch_size = batching.interactive_batch_size
        for lane, batch in (
            (self.jobs, self.transcribe_batch),
            (self.interactive, self.transcribe_interactive_batch),
            (self.second, self.transcribe_second_batch),
        ):
            batch.set_max_batch_size(lane.largest_batch(batching))
            batch.set_batch_wait_timeout_s(batching.batch_wait_timeout_s)

    async def multilingual(self) -> bool:
        """Whether this replica's model can translate: the pipeline asks before a translation's first chunk."""
        return self.engine.multilingual

    async def transcribe_chunk(
        self, chunk: np.ndarray, options: ChunkOptions, hints: BatchHints = NO_HINTS
    ) -> ChunkTranscript:
        """`hints` say which lane the chunk takes, whether its sender has more on their way and whose it is
        (see `BatchHints` and `Lane`); they change when it is decoded, never what it decodes to."""
        if hints.second_reading and self.batching.interactive_lane:
            lane, batch = self.second, self.transcribe_second_batch
        elif hints.interactive and self.batching.interactive_lane:
            lane, batch = self.interactive, self.transcribe_interactive_batch
        else:
            lane, batch = self.jobs, self.transcribe_batch
        if self.watchdog is None:
            self.watchdog = asyncio.ensure_future(self._watch_lanes())
        self._count_received(+1)
        turn_key: object = hints.sender if hints.sender is not None else object()
        try:
            await lane.enter(self.batching, hints.more_coming, turn_key)
            try:
                return await batch(chunk, options)
            finally:
                await lane.leave(turn_key)
        finally:
            self._count_received(-1)

    async def _watch_lanes(self) -> None:
        """A lane whose chunks stop moving is a bug that would hang requests and jobs without a word: say so."""
        while True:
            await asyncio.sleep(STALL_CHECK_S)
            for lane in self.lanes:
                if (stalled := lane.stall(STALL_WARNING_S)) is not None:
                    logger.warning("%s; %d chunks received, %d decoding", stalled, self.received, self.decoding)

    @property
    def decoding(self) -> int:
        """Chunks in the engine's current batches, every lane's."""
        return sum(lane.in_engine for lane in self.lanes)

    def _count_received(self, change: int) -> None:
        self.received += change
        self.metrics.chunks_queued.set(max(0, self.received - self.decoding))

    @lane_batch
    async def transcribe_batch(self, chunks: list[np.ndarray], options: list[ChunkOptions]) -> list[ChunkTranscript]:
        return await self._run_batch(self.jobs, chunks, options)

    @lane_batch
    async def transcribe_interactive_batch(
        self, chunks: list[np.ndarray], options: list[ChunkOptions]
    ) -> list[ChunkTranscript]:
        return await self._run_batch(self.interactive, chunks, options)

    @lane_batch
    async def transcribe_second_batch(
        self, chunks: list[np.ndarray], options: list[ChunkOptions]
    ) -> list[ChunkTranscript]:
        return await self._run_batch(self.second, chunks, options)

    async def _run_batch(
        self, lane: Lane, chunks: list[np.ndarray], options: list[ChunkOptions]
    ) -> list[ChunkTranscript]:
        await lane.batch_started(len(chunks))
        self._count_received(0)
        started, cpu_started = time.perf_counter(), time.process_time()
        try:
            transcripts = await asyncio.to_thread(self._decode_grouped, chunks, options)
            self._count_compute(lane, transcripts)
            return transcripts
        finally:
            seconds, audio_s = time.perf_counter() - started, sum(len(chunk) for chunk in chunks) / SAMPLE_RATE
            cpu_s = time.process_time() - cpu_started  # the whole replica's: below 2x wall on 2 cores = contention
            logger.info(
                "%s: decoded %d chunks (%.0f s of audio) in %.2f s, %.1f CPU-s",
                lane.name,
                len(chunks),
                audio_s,
                seconds,
                cpu_s,
            )
            self.metrics.batch_size.observe(len(chunks))
            self.metrics.batch_seconds.observe(seconds)
            await lane.batch_ended(len(chunks))

    def _count_compute(self, lane: Lane, transcripts: list[ChunkTranscript]) -> None:
        spent = sum((transcript.compute for transcript in transcripts), ComputeSeconds())
        for stage, seconds in spent.model_dump().items():
            if seconds:
                self.metrics.compute_seconds.inc(seconds, tags={"lane": lane.name, "stage": stage})

    def _decode_grouped(self, chunks: list[np.ndarray], options: list[ChunkOptions]) -> list[ChunkTranscript]:
        """One engine batch per distinct options (language, prompt, ...); results in the callers' order."""
        groups: defaultdict[ChunkOptions, list[int]] = defaultdict(list)  # ChunkOptions is frozen: hashable
        for index, chunk_options in enumerate(options):
            groups[chunk_options].append(index)
        results: dict[int, ChunkTranscript] = {}
        for chunk_options, indices in groups.items():
            decoded = self.engine.transcribe_batch([chunks[i] for i in indices], chunk_options)
            for index, transcript in zip(indices, decoded, strict=True):
                results[index] = transcript
        return [results[index] for index in range(len(chunks))]
