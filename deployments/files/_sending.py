"""A file's chunks on their way to the Transcriber, and the share of the file transcribed so far."""

import asyncio
import uuid
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np

from deployments.files._chunking import Chunk, Pieces, chunk_audio
from deployments.retry import retry_on_worker_loss
from deployments.types import BatchHints, ChunkOptions, ChunkTranscript, PipelineProgress

if TYPE_CHECKING:  # a type only: `stt batch`'s processes never import Ray Serve (1.1 s of imports each)
    from ray.serve.handle import DeploymentHandle


class FileProgress:
    """How far a file got: samples decoded (of those its header declares, when it does), and the share
    transcribed, reported each time a chunk comes back."""

    def __init__(self, on_progress: Callable[[PipelineProgress], None] | None) -> None:
        self.on_progress = on_progress
        self.expected_samples: int | None = None
        self.decoded_samples = 0
        self.reported = 0.0

    def report(self, pieces: list[Pieces], transcribed: list[bool]) -> None:
        """The share of the file up to the first chunk still being transcribed (or to the end of the last
        chunk, when all are back), of its declared length or of what is decoded so far; never backwards,
        and 1.0 only when the result is there."""
        if self.on_progress is None:
            return
        pending = [chunk[0][0] for chunk, done in zip(pieces, transcribed, strict=True) if not done]
        position = min(pending, default=pieces[-1][-1][1])  # all are back: up to the last one's end
        total = max(self.expected_samples or 0, self.decoded_samples, 1)
        self.reported = max(self.reported, round(min(position / total, 0.99), 4))  # never backwards
        self.on_progress(PipelineProgress(share=self.reported))


class ChunkSender:
    """Sends a file's chunks to the Transcriber as they are cut, at most `max_in_flight` at a time, and
    keeps each one's first transcript (a task, in chunk order) and where its speech lies in the file.

    Each chunk is held until the next one is cut, so that it goes saying whether more are on their way
    (`BatchHints.more_coming`). A streamed request starts with one chunk in flight and adds one each time
    a chunk comes back (a slow start: rounds of 1, 2, 4, ... chunks), so its first text comes after one
    chunk's decoding."""

    def __init__(
        self,
        transcriber: "DeploymentHandle[Any]",
        options: ChunkOptions,
        interactive: bool,
        max_in_flight: int,
        slow_start: bool,
        progress: FileProgress,
        decoded_path: Path | None,
    ) -> None:
        self.transcriber = transcriber
        self.options = options
        self.interactive = interactive
        self.sender = uuid.uuid4().hex  # the Transcriber lets senders take turns (`Lane`)
        self.max_in_flight = max_in_flight
        self.window = 1 if slow_start else max_in_flight
        self.in_flight = asyncio.Semaphore(self.window)
        self.progress = progress
        self.decoded_path = decoded_path  # the decoded spool that `resend` reads chunks back from
        self.held: Chunk | None = None  # cut, holding a place in flight, sent once it is known whether it is last
        self.pieces: list[Pieces] = []  # where each sent chunk's speech lies in the file
        self.transcripts: list[asyncio.Task[ChunkTranscript]] = []
        self.transcribed: list[bool] = []
        self.done = False  # no more chunks will be sent
        self.sent = asyncio.Event()  # set whenever a chunk was sent, or sending ended

    async def hold(self, chunk: Chunk) -> None:
        """A chunk waits until the next one is cut, so that it goes to the Transcriber saying whether more
        are on their way: the Transcriber then holds an idle engine for a fuller batch (`Lane`) instead of
        starting on the first chunk or two of a long file, or of a burst of requests. Waits for room in
        flight."""
        if self.held is not None:
            self._send(self.held, more_coming=True)
            self.held = None
        await self.in_flight.acquire()  # released when the Transcriber has answered
        self.held = chunk

    def send_held(self, more_coming: bool) -> None:
        """The file's last chunk, if any: `more_coming` when other files are on their way in this replica."""
        if self.held is not None:
            self._send(self.held, more_coming)

    def end(self) -> None:
        """No more chunks come (also when decoding failed): whoever waits for the next one stops waiting."""
        self.done = True
        self.sent.set()

    def cancel(self) -> None:
        for task in self.transcripts:
            task.cancel()

    async def resend(self, index: int, options: ChunkOptions) -> ChunkTranscript:
        """A chunk decoded a second time (in other options), read back from the decoded spool."""
        return await self.resend_pieces(self.pieces[index], options)

    async def resend_pieces(self, pieces: Pieces, options: ChunkOptions) -> ChunkTranscript:
        """Some of a chunk's speech (or all of it) decoded as a chunk of its own, read back from the decoded
        spool."""
        assert self.decoded_path is not None, "a chunk is decoded again only from the decoded spool"
        spool = np.memmap(self.decoded_path, dtype=np.float32, mode="r")
        samples = np.array(chunk_audio(spool, pieces))  # a copy: the spool is deleted when done
        async with self.in_flight:
            return await self._transcribe(samples, options)

    def _send(self, chunk: Chunk, more_coming: bool) -> None:
        self.pieces.append(chunk.pieces)
        self.transcribed.append(False)
        index = len(self.pieces) - 1
        self.transcripts.append(asyncio.ensure_future(self._first_pass(index, chunk.samples, more_coming)))
        self.sent.set()

    async def _first_pass(self, index: int, samples: np.ndarray, more_coming: bool) -> ChunkTranscript:
        try:
            transcript = await self._transcribe(samples, self.options, more_coming)
        finally:
            self.in_flight.release()
        if self.window < self.max_in_flight:  # a streamed request's window grows
            self.window += 1
            self.in_flight.release()
        self.transcribed[index] = True
        self.progress.report(self.pieces, self.transcribed)
        return transcript

    async def _transcribe(
        self, samples: np.ndarray, options: ChunkOptions, more_coming: bool = False
    ) -> ChunkTranscript:
        """One chunk on the Transcriber; sent again if the replica decoding it dies (Serve replaces it)."""
        transcriber = self.transcriber
        hints = BatchHints(interactive=self.interactive, more_coming=more_coming, sender=self.sender)
        call = lambda: transcriber.transcribe_chunk.remote(samples, options, hints)  # noqa: E731
        return await retry_on_worker_loss(call, "a chunk")
